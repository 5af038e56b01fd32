/* graph_bfs: the roots, kernel 2 (BFS) and the validation of its trees. */
#include "graph_bfs.h"

/* ---- Roots, kernel 2 (BFS) and validation ---- */

/* Sample N distinct roots with a neighbour other than themselves, in
 * increasing order (selection sampling, like Graph500).  Returns how many
 * there are, at most N. */
int64_t sample_roots(const struct options *o, const struct graph *g, int64_t n, int64_t *roots)
{
	const int64_t *xadj = g->xadj.p;
	int64_t candidates = 0, seen = 0, m = 0;
	struct rng rng;

	for (int64_t v = 0; v < g->nv; v++)
		candidates += xadj[v + 1] > xadj[v];
	if (n > candidates)
		n = candidates;
	rng_init(&rng, o->seed, STREAM_ROOTS);
	for (int64_t v = 0; v < g->nv && m < n; v++) {
		if (xadj[v + 1] == xadj[v])
			continue;
		if ((double)(candidates - seen) * rng_double(&rng) < (double)(n - m))
			roots[m++] = v;
		seen++;
	}
	return m;
}

/* Top-down BFS from ROOT: parent[v] = -1 if not reached.  Returns the
 * number of reached vertices. */
int64_t bfs(const struct graph *g, int64_t root, int64_t *parent, int64_t *queue)
{
	const int64_t *xadj = g->xadj.p, *adj = g->adjncy.p;
	int64_t head = 0, tail = 0;

	for (int64_t v = 0; v < g->nv; v++)
		parent[v] = -1;
	parent[root] = root;
	queue[tail++] = root;
	while (head < tail) {
		int64_t v = queue[head++];

		for (int64_t k = xadj[v]; k < xadj[v + 1]; k++) {
			int64_t w = adj[k];

			if (parent[w] == -1) {
				parent[w] = v;
				queue[tail++] = w;
			}
		}
	}
	return tail;
}

/* Levels from the parent pointers alone, independently of the search:
 * level[root] = 0, level[v] = level[parent[v]] + 1.  STACK holds nv
 * entries.  Returns 0, or -1 after reporting a broken tree. */
static int tree_levels(const struct graph *g, int64_t root, const int64_t *parent, int64_t *level,
		       int64_t *stack)
{
	for (int64_t v = 0; v < g->nv; v++) {
		if (parent[v] < -1 || parent[v] >= g->nv) {
			corun_err(PROG,
				  "validation failed (root %" PRId64 "): "
				  "parent of %" PRId64 " is %" PRId64 ", not a "
				  "vertex",
				  root, v, parent[v]);
			return -1;
		}
		if (parent[v] == v && v != root) {
			corun_err(PROG,
				  "validation failed (root %" PRId64 "): "
				  "%" PRId64 " is its own parent",
				  root, v);
			return -1;
		}
		level[v] = -1;
	}
	if (parent[root] != root) {
		corun_err(PROG,
			  "validation failed (root %" PRId64 "): the "
			  "root's parent is %" PRId64,
			  root, parent[root]);
		return -1;
	}
	level[root] = 0;
	for (int64_t v = 0; v < g->nv; v++) {
		int64_t depth = 0, x = v, lvl;

		if (parent[v] < 0 || level[v] >= 0)
			continue;
		/* Climb to a vertex with a level; nv steps mean a cycle. */
		while (level[x] < 0) {
			if (parent[x] < 0 || depth == g->nv) {
				corun_err(PROG,
					  "validation failed (root %" PRId64
					  "): the parent chain of %" PRId64 " %s",
					  root, v,
					  parent[x] < 0 ? "leaves the tree" : "has a cycle");
				return -1;
			}
			stack[depth++] = x;
			x = parent[x];
		}
		lvl = level[x];
		while (depth > 0)
			level[stack[--depth]] = ++lvl;
	}
	return 0;
}

/* Graph500's validation of one BFS tree against the input edge list:
 *  - the root is its own parent, parent chains end at the root (no cycle);
 *  - along every tree edge the levels differ by exactly 1;
 *  - every edge has both or neither end reached (so the root's whole
 *    connected component is reached), and the levels of its ends differ by
 *    at most 1;
 *  - every reached vertex's parent is a neighbour (an input edge joins
 *    them).
 * Returns the number of input edges with both ends reached (self-loops and
 * repeats included, as in Graph500): the edges of the TEPS figure; or -1
 * after reporting the first failure. */
int64_t validate(const struct graph *g, int64_t root, const int64_t *parent, int64_t *level,
		 int64_t *stack, unsigned char *has_edge_to_parent)
{
	const int64_t *e = g->edges.p;
	int64_t traversed = 0;

	if (tree_levels(g, root, parent, level, stack) != 0)
		return -1;
	for (int64_t v = 0; v < g->nv; v++) {
		has_edge_to_parent[v] = 0;
		if (v != root && parent[v] >= 0 && level[v] != level[parent[v]] + 1) {
			corun_err(PROG,
				  "validation failed (root %" PRId64 "): "
				  "tree edge %" PRId64 "-%" PRId64 " joins "
				  "levels %" PRId64 " and %" PRId64,
				  root, v, parent[v], level[v], level[parent[v]]);
			return -1;
		}
	}
	for (int64_t k = 0; k < g->nedges; k++) {
		int64_t u = e[2 * k], v = e[2 * k + 1];
		int64_t diff;

		if ((parent[u] >= 0) != (parent[v] >= 0)) {
			corun_err(PROG,
				  "validation failed (root %" PRId64 "): "
				  "edge %" PRId64 "-%" PRId64 " has one end "
				  "not reached",
				  root, u, v);
			return -1;
		}
		if (parent[u] < 0)
			continue;
		traversed++;
		if (u == v)
			continue;
		if (parent[u] == v)
			has_edge_to_parent[u] = 1;
		if (parent[v] == u)
			has_edge_to_parent[v] = 1;
		diff = level[u] - level[v];
		if (diff > 1 || diff < -1) {
			corun_err(PROG,
				  "validation failed (root %" PRId64 "): "
				  "edge %" PRId64 "-%" PRId64 " joins levels %" PRId64
				  " and %" PRId64,
				  root, u, v, level[u], level[v]);
			return -1;
		}
	}
	for (int64_t v = 0; v < g->nv; v++) {
		if (v != root && parent[v] >= 0 && !has_edge_to_parent[v]) {
			corun_err(PROG,
				  "validation failed (root %" PRId64 "): "
				  "parent %" PRId64 " of %" PRId64 " is not a "
				  "neighbour",
				  root, parent[v], v);
			return -1;
		}
	}
	return traversed;
}
