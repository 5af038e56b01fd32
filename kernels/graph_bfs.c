/* graph_bfs: a Graph500-style breadth-first search kernel, sequential CSR
 * (the paper's "graph" jobs, section 2.2.1, run as "-s SCALE -e EDGEFACTOR").
 *
 * Generates a Kronecker (R-MAT) edge list with initiator A, B, C, D = 0.57,
 * 0.19, 0.19, 0.05 and randomly permuted vertex labels, builds a compressed
 * sparse row (CSR) graph without self-loops and duplicate edges, then runs a
 * top-down BFS from --roots sampled roots, validates every BFS tree against
 * the edge list and reports traversed edges per second (TEPS).
 *
 * The edge list and the CSR arrays live in MAP_SHARED mappings of unlinked
 * temporary files in --storage, as the reference code does when built with
 * USE_MMAP_LARGE_EXT: under memory pressure the kernel writes these pages
 * back to the file and reads them in again, which is the paper's "implicit
 * I/O".  Prints one JSON object on one line.
 */
#define _GNU_SOURCE /* fallocate */

#include "corun_kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define PROG "graph_bfs"
#define GRAPH_BFS_VERSION "1.0.0"

#define SCALE_MAX 30
#define EDGEFACTOR_MAX 64
#define ROOTS_MAX 64 /* Graph500 runs 64 */

/* Kronecker initiator, as in Graph500 (D = 1 - A - B - C). */
#define INIT_A 0.57
#define INIT_B 0.19
#define INIT_C 0.19
#define INIT_D 0.05

enum storage_mode { STORAGE_FILE, STORAGE_ANON };

static const char *const storage_mode_names[] = {
	[STORAGE_FILE] = "file",
	[STORAGE_ANON] = "anon",
};

struct options {
	int64_t scale;
	int64_t edgefactor;
	int64_t roots;
	uint64_t seed;
	const char *storage; /* directory for the temporary files */
	enum storage_mode storage_mode;
	const char *dump_graph;  /* testing: edge list as text */
	const char *dump_levels; /* testing: BFS levels of the first root */
};

static const char usage_text[] =
	"Usage: " PROG " -s SCALE -e EDGEFACTOR --storage DIR [OPTION]...\n"
	"Generate a Kronecker graph of 2^SCALE vertices and EDGEFACTOR * 2^SCALE\n"
	"edges, build a CSR graph in file-backed shared mappings under DIR, run a\n"
	"validated BFS from --roots vertices and report TEPS (Graph500 style,\n"
	"sequential CSR).  Prints one JSON object on one line to stdout.\n"
	"\n"
	"  -s, --scale SCALE      log2 of the number of vertices, 1 to 30\n"
	"                         (required)\n"
	"  -e, --edgefactor N     edges per vertex, 1 to 64 (required)\n"
	"  --roots N              BFS roots, sampled among vertices with a\n"
	"                         neighbour, 1 to 64 (default 8)\n"
	"  --seed N               seed of the generator and root sampler, >= 0\n"
	"                         (default 1)\n"
	"  --storage DIR          directory for the unlinked temporary files that\n"
	"                         hold the edge list and the CSR arrays; put it on\n"
	"                         the device under test (required in file mode)\n"
	"  --storage-mode MODE    file  MAP_SHARED mappings of files in DIR\n"
	"                               (default)\n"
	"                         anon  MAP_PRIVATE|MAP_ANONYMOUS memory, for\n"
	"                               comparison (DIR not used)\n"
	"  --help                 print this text and exit\n"
	"  --version              print the version and exit\n"
	"\n"
	"Testing:\n"
	"  --dump-graph FILE      write the edge list, one \"u v\" line per edge\n"
	"  --dump-levels FILE     write the first root, then the BFS level of\n"
	"                         every vertex (-1: not reached), one per line\n"
	"\n"
	"Exit status: 0 ok, 1 runtime error or failed validation, 2 usage error.\n";

static void parse_options(int argc, char *argv[], struct options *o)
{
	static const struct option long_options[] = {
		{ "scale", required_argument, NULL, 's' },
		{ "edgefactor", required_argument, NULL, 'e' },
		{ "roots", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 'S' },
		{ "storage", required_argument, NULL, 'd' },
		{ "storage-mode", required_argument, NULL, 'm' },
		{ "dump-graph", required_argument, NULL, 'g' },
		{ "dump-levels", required_argument, NULL, 'l' },
		CORUN_COMMON_LONG_OPTIONS,
	};
	int c;

	*o = (struct options){
		.scale = 0,
		.edgefactor = 0,
		.roots = 8,
		.seed = 1,
		.storage = NULL,
		.storage_mode = STORAGE_FILE,
	};
	opterr = 0; /* report errors ourselves, in one line */
	/* '+': do not permute argv, which is echoed as "cmdline". */
	while ((c = getopt_long(argc, argv, "+:hs:e:", long_options, NULL)) != -1) {
		switch (c) {
		case 's':
			o->scale = corun_parse_int(PROG, "scale", optarg, 1, SCALE_MAX, false);
			break;
		case 'e':
			o->edgefactor = corun_parse_int(PROG, "edgefactor", optarg, 1,
							EDGEFACTOR_MAX, false);
			break;
		case 'r':
			o->roots = corun_parse_int(PROG, "roots", optarg, 1, ROOTS_MAX, false);
			break;
		case 'S':
			o->seed = (uint64_t)corun_parse_int(PROG, "seed", optarg, 0, INT64_MAX,
							    false);
			break;
		case 'd': o->storage = optarg; break;
		case 'm':
			o->storage_mode = (enum storage_mode)corun_parse_choice(
				PROG, "storage-mode", optarg, storage_mode_names,
				CORUN_COUNT(storage_mode_names));
			break;
		case 'g': o->dump_graph = optarg; break;
		case 'l': o->dump_levels = optarg; break;
		default: corun_default_option(PROG, GRAPH_BFS_VERSION, usage_text, c, argv);
		}
	}
	corun_no_operands(PROG, argc, argv);
	if (o->scale == 0)
		corun_usage_error(PROG, "-s/--scale SCALE is required "
					"(see --help)");
	if (o->edgefactor == 0)
		corun_usage_error(PROG, "-e/--edgefactor N is required "
					"(see --help)");
	if (o->storage_mode == STORAGE_FILE && o->storage == NULL)
		corun_usage_error(PROG, "--storage DIR is required with "
					"--storage-mode file (see --help)");
}

/* ---- Random numbers: xoshiro256** seeded through splitmix64 ---- */

struct rng {
	uint64_t s[4];
};

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* Independent streams of one seed: generator, permutation, roots. */
enum rng_stream { STREAM_EDGES = 1, STREAM_PERM, STREAM_ROOTS };

static void rng_init(struct rng *r, uint64_t seed, enum rng_stream stream)
{
	uint64_t x = seed ^ ((uint64_t)stream * UINT64_C(0xd1b54a32d192ed03));

	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t out = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

/* Uniform in [0, 1) with 53 random bits. */
static double rng_double(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* ---- Large arrays: file-backed shared mappings or anonymous memory ---- */

struct big_array {
	void *p;
	size_t len;
};

struct storage {
	enum storage_mode mode;
	const char *dir;
	size_t file_bytes;   /* in file-backed mappings */
	size_t mapped_bytes; /* in all large mappings */
};

/* Map LEN bytes for WHAT: in file mode a MAP_SHARED mapping of a new,
 * unlinked file in the storage directory with its blocks reserved, so that
 * a full disk is an error here and not a SIGBUS later. */
static int big_alloc(struct storage *st, struct big_array *a, size_t len, const char *what)
{
	int flags = MAP_POPULATE;
	char *path = NULL;
	int fd = -1;
	void *p;

	a->p = NULL;
	a->len = len > 0 ? len : sizeof(int64_t); /* mmap refuses 0 */
	if (st->mode == STORAGE_FILE) {
		size_t n = strlen(st->dir) + sizeof("/corun-graph-XXXXXX");

		path = malloc(n);
		if (path == NULL) {
			corun_err(PROG, "cannot allocate %zu bytes", n);
			return -1;
		}
		snprintf(path, n, "%s/corun-graph-XXXXXX", st->dir);
		fd = mkstemp(path);
		if (fd < 0) {
			corun_err(PROG,
				  "--storage: cannot create a file in "
				  "'%s': %s",
				  st->dir, strerror(errno));
			free(path);
			return -1;
		}
		unlink(path); /* freed on close and exit, even on a crash */
		free(path);
		if (fallocate(fd, 0, 0, (off_t)a->len) != 0 &&
		    (errno != EOPNOTSUPP || ftruncate(fd, (off_t)a->len) != 0)) {
			corun_err(PROG,
				  "cannot reserve %zu bytes for the %s in "
				  "'%s': %s",
				  a->len, what, st->dir, strerror(errno));
			close(fd);
			return -1;
		}
		flags |= MAP_SHARED;
	} else {
		flags |= MAP_PRIVATE | MAP_ANONYMOUS;
	}
	p = mmap(NULL, a->len, PROT_READ | PROT_WRITE, flags, fd, 0);
	if (fd >= 0)
		close(fd); /* the mapping keeps the file */
	if (p == MAP_FAILED) {
		corun_err(PROG, "cannot map %zu bytes for the %s: %s", a->len, what,
			  strerror(errno));
		return -1;
	}
	a->p = p;
	st->mapped_bytes += a->len;
	if (st->mode == STORAGE_FILE)
		st->file_bytes += a->len;
	return 0;
}

static void big_free(struct big_array *a)
{
	if (a->p != NULL)
		munmap(a->p, a->len);
	a->p = NULL;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n > 0 ? n : 1);

	if (p == NULL)
		corun_err(PROG, "cannot allocate %zu bytes", n);
	return p;
}

/* ---- Kernel 0: Kronecker edge list ---- */

struct graph {
	int64_t nv;              /* 2^SCALE vertices */
	int64_t nedges;          /* EDGEFACTOR * 2^SCALE input edges */
	struct big_array edges;  /* int64 pairs (u, v), nedges of them */
	struct big_array xadj;   /* int64, nv + 1 offsets into adjncy */
	struct big_array adjncy; /* int64 neighbours */
	int64_t self_loops;      /* input edges (v, v), not in the CSR */
	int64_t csr_entries;     /* xadj[nv]: 2 x distinct non-loop edges */
};

/* One R-MAT edge: at each of SCALE levels pick a quadrant of the adjacency
 * matrix with probability A, B, C, D and append its row and column bits.
 * Two levels per 64-bit draw; comparisons, not branches, pick the bits, as
 * the quadrant is random and would mispredict. */
static void rmat_edge(struct rng *r, int scale, const uint32_t thr[3], int64_t *u, int64_t *v)
{
	uint64_t bits = 0, i = 0, j = 0;

	for (int level = 0; level < scale; level++) {
		uint32_t x;

		if ((level & 1) == 0)
			bits = rng_next(r);
		x = (uint32_t)bits;
		bits >>= 32;
		/* A: (0, 0), B: (0, 1), C: (1, 0), D: (1, 1) */
		i = (i << 1) | (x >= thr[1]);
		j = (j << 1) | ((x >= thr[0]) & (x < thr[1])) | (x >= thr[2]);
	}
	*u = (int64_t)i;
	*v = (int64_t)j;
}

/* A keyed bijection of [0, 2^SCALE): rounds of adding a key, multiplying
 * by an odd key (bijective modulo 2^SCALE, mixes low bits into high ones)
 * and xor-shifting right (bijective, mixes high bits into low ones).  Like
 * the scramble() of the Graph500 generator, and unlike a shuffled table, it
 * costs no memory and no cache misses at any SCALE. */
#define LABEL_ROUNDS 4

struct label_perm {
	uint64_t mask;
	int shift;
	uint64_t add[LABEL_ROUNDS];
	uint64_t mul[LABEL_ROUNDS];
};

static void label_perm_init(struct label_perm *p, int scale, struct rng *r)
{
	p->mask = (UINT64_C(1) << scale) - 1;
	p->shift = (scale + 1) / 2;
	for (int k = 0; k < LABEL_ROUNDS; k++) {
		p->add[k] = rng_next(r) & p->mask;
		p->mul[k] = (rng_next(r) | 1) & p->mask;
	}
}

static int64_t label_perm_apply(const struct label_perm *p, int64_t v)
{
	uint64_t x = (uint64_t)v;

	for (int k = 0; k < LABEL_ROUNDS; k++) {
		x = ((x + p->add[k]) * p->mul[k]) & p->mask;
		x ^= x >> p->shift;
	}
	return (int64_t)x;
}

/* Fills the edge list.  Vertex labels go through a random permutation, as in
 * Graph500, so that a vertex's degree says nothing about its number.  Edges
 * come out in random order already: each one is drawn independently. */
static int generate_edges(const struct options *o, struct storage *st, struct graph *g)
{
	const double to32 = 4294967296.0;
	const uint32_t thr[3] = {
		(uint32_t)(INIT_A * to32),
		(uint32_t)((INIT_A + INIT_B) * to32),
		(uint32_t)((INIT_A + INIT_B + INIT_C) * to32),
	};
	struct label_perm perm;
	struct rng rng;
	int64_t *e;

	if (big_alloc(st, &g->edges, (size_t)g->nedges * 2 * sizeof(int64_t), "edge list") != 0)
		return -1;
	rng_init(&rng, o->seed, STREAM_PERM);
	label_perm_init(&perm, (int)o->scale, &rng);
	rng_init(&rng, o->seed, STREAM_EDGES);
	e = g->edges.p;
	for (int64_t k = 0; k < g->nedges; k++) {
		int64_t u, v;

		rmat_edge(&rng, (int)o->scale, thr, &u, &v);
		e[2 * k] = label_perm_apply(&perm, u);
		e[2 * k + 1] = label_perm_apply(&perm, v);
	}
	return 0;
}

/* ---- Kernel 1: CSR construction ---- */

static int cmp_int64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Most lists are short: insertion sort them, qsort() the long ones. */
static void sort_int64(int64_t *a, int64_t n)
{
	if (n > 32) {
		qsort(a, (size_t)n, sizeof(*a), cmp_int64);
		return;
	}
	for (int64_t i = 1; i < n; i++) {
		int64_t x = a[i], k = i;

		for (; k > 0 && a[k - 1] > x; k--)
			a[k] = a[k - 1];
		a[k] = x;
	}
}

/* Undirected CSR: every input edge (u, v) with u != v appears as v in u's
 * list and u in v's.  Self-loops are skipped and each list is sorted with
 * duplicates removed, as in the reference seq-csr; both stay in the edge
 * list, which validation and TEPS use. */
static int build_csr(struct storage *st, struct graph *g)
{
	const int64_t *e = g->edges.p;
	int64_t *xadj, *adj;
	int64_t total, out, start;

	if (big_alloc(st, &g->xadj, ((size_t)g->nv + 1) * sizeof(int64_t), "CSR offsets") != 0)
		return -1;
	xadj = g->xadj.p;
	/* The degree of v goes to xadj[v + 2]; a running sum then leaves the
	 * start of v's list in xadj[v + 1], the cursor of the scatter below,
	 * which in turn leaves the start in xadj[v]. */
	g->self_loops = 0;
	for (int64_t k = 0; k < g->nedges; k++) {
		int64_t u = e[2 * k], v = e[2 * k + 1];

		if (u == v) {
			g->self_loops++;
			continue;
		}
		if (u + 2 <= g->nv)
			xadj[u + 2]++;
		if (v + 2 <= g->nv)
			xadj[v + 2]++;
	}
	for (int64_t v = 1; v <= g->nv; v++)
		xadj[v] += xadj[v - 1];
	total = 2 * (g->nedges - g->self_loops);
	if (big_alloc(st, &g->adjncy, (size_t)total * sizeof(int64_t), "CSR adjacency") != 0)
		return -1;
	adj = g->adjncy.p;
	for (int64_t k = 0; k < g->nedges; k++) {
		int64_t u = e[2 * k], v = e[2 * k + 1];

		if (u == v)
			continue;
		adj[xadj[u + 1]++] = v;
		adj[xadj[v + 1]++] = u;
	}
	/* Sort each list and drop repeats, compacting in place. */
	out = 0;
	start = 0;
	for (int64_t v = 0; v < g->nv; v++) {
		int64_t end = xadj[v + 1];

		sort_int64(adj + start, end - start);
		xadj[v] = out;
		for (int64_t k = start; k < end; k++)
			if (k == start || adj[k] != adj[k - 1])
				adj[out++] = adj[k];
		start = end;
	}
	xadj[g->nv] = out;
	g->csr_entries = out;
	return 0;
}

/* ---- Roots, kernel 2 (BFS) and validation ---- */

/* Sample N distinct roots with a neighbour other than themselves, in
 * increasing order (selection sampling, like Graph500).  Returns how many
 * there are, at most N. */
static int64_t sample_roots(const struct options *o, const struct graph *g, int64_t n,
			    int64_t *roots)
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
static int64_t bfs(const struct graph *g, int64_t root, int64_t *parent, int64_t *queue)
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
static int64_t validate(const struct graph *g, int64_t root, const int64_t *parent, int64_t *level,
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

/* ---- Output ---- */

static FILE *open_dump(const char *opt, const char *path)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		corun_err(PROG, "--%s: cannot open '%s': %s", opt, path, strerror(errno));
	return f;
}

static int close_dump(const char *opt, const char *path, FILE *f)
{
	bool bad = ferror(f) != 0;

	if (fclose(f) != 0 || bad) {
		corun_err(PROG, "--%s: cannot write '%s': %s", opt, path, strerror(errno));
		return -1;
	}
	return 0;
}

static int dump_graph(const char *path, const struct graph *g)
{
	const int64_t *e = g->edges.p;
	FILE *f = open_dump("dump-graph", path);

	if (f == NULL)
		return -1;
	for (int64_t k = 0; k < g->nedges; k++)
		fprintf(f, "%" PRId64 " %" PRId64 "\n", e[2 * k], e[2 * k + 1]);
	return close_dump("dump-graph", path, f);
}

static int dump_levels(const char *path, const struct graph *g, int64_t root, const int64_t *level)
{
	FILE *f = open_dump("dump-levels", path);

	if (f == NULL)
		return -1;
	fprintf(f, "%" PRId64 "\n", root);
	for (int64_t v = 0; v < g->nv; v++)
		fprintf(f, "%" PRId64 "\n", level[v]);
	return close_dump("dump-levels", path, f);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct result {
	bool storage_on_memory_fs;
	double generation_time_s;
	double construction_time_s;
	double validation_time_s;
	int64_t nroots;
	int64_t root[ROOTS_MAX];
	double bfs_time_s[ROOTS_MAX];
	int64_t reached[ROOTS_MAX];
	int64_t traversed[ROOTS_MAX];
	double teps[ROOTS_MAX];
};

static void json_int_array(struct corun_json *j, const char *key, const int64_t *v, int64_t n)
{
	corun_json_array_begin(j, key);
	for (int64_t i = 0; i < n; i++)
		corun_json_int(j, NULL, v[i]);
	corun_json_array_end(j);
}

static void json_double_array(struct corun_json *j, const char *key, const double *v, int64_t n)
{
	corun_json_array_begin(j, key);
	for (int64_t i = 0; i < n; i++)
		corun_json_double(j, NULL, v[i]);
	corun_json_array_end(j);
}

static void print_result(const struct options *o, const struct storage *st, const struct graph *g,
			 const struct result *r, int argc, char *argv[], double start_epoch_s)
{
	int64_t n = r->nroots;
	double sorted[ROOTS_MAX], inv = 0.0, median;
	struct rusage ru;
	struct corun_json j;

	/* Harmonic mean as in Graph500: an infinite rate (a search too fast
	 * to time) adds nothing to the sum of inverses. */
	for (int64_t i = 0; i < n; i++) {
		sorted[i] = r->teps[i];
		inv += r->teps[i] > 0.0 ? 1.0 / r->teps[i] : 0.0;
	}
	qsort(sorted, (size_t)n, sizeof(*sorted), cmp_double);
	median = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		memset(&ru, 0, sizeof(ru)); /* cannot fail for RUSAGE_SELF */

	corun_json_begin(&j, stdout);
	corun_json_header(&j, PROG, GRAPH_BFS_VERSION, argc, argv, start_epoch_s);
	corun_json_object_begin(&j, "params");
	corun_json_int(&j, "scale", o->scale);
	corun_json_int(&j, "edgefactor", o->edgefactor);
	corun_json_int(&j, "roots", o->roots);
	corun_json_int(&j, "seed", (int64_t)o->seed);
	if (o->storage != NULL)
		corun_json_str(&j, "storage", o->storage);
	else
		corun_json_null(&j, "storage");
	corun_json_str(&j, "storage_mode", storage_mode_names[o->storage_mode]);
	corun_json_object_end(&j);
	corun_json_object_begin(&j, "initiator");
	corun_json_double(&j, "a", INIT_A);
	corun_json_double(&j, "b", INIT_B);
	corun_json_double(&j, "c", INIT_C);
	corun_json_double(&j, "d", INIT_D);
	corun_json_object_end(&j);
	corun_json_int(&j, "scale", o->scale);
	corun_json_int(&j, "edgefactor", o->edgefactor);
	corun_json_int(&j, "nvertices", g->nv);
	corun_json_int(&j, "nedges", g->nedges);
	corun_json_int(&j, "self_loops", g->self_loops);
	corun_json_int(&j, "csr_entries", g->csr_entries);
	corun_json_int(&j, "storage_bytes", (int64_t)st->file_bytes);
	corun_json_int(&j, "mapped_bytes", (int64_t)st->mapped_bytes);
	if (st->mode == STORAGE_FILE)
		corun_json_bool(&j, "storage_on_memory_fs", r->storage_on_memory_fs);
	else
		corun_json_null(&j, "storage_on_memory_fs");
	corun_json_double(&j, "generation_time_s", r->generation_time_s);
	corun_json_double(&j, "construction_time_s", r->construction_time_s);
	corun_json_int(&j, "roots", n);
	json_int_array(&j, "root_vertices", r->root, n);
	json_double_array(&j, "bfs_time_s", r->bfs_time_s, n);
	json_int_array(&j, "reached_vertices", r->reached, n);
	json_int_array(&j, "traversed_edges", r->traversed, n);
	json_double_array(&j, "teps", r->teps, n);
	corun_json_double(&j, "min_teps", sorted[0]);
	corun_json_double(&j, "median_teps", median);
	corun_json_double(&j, "max_teps", sorted[n - 1]);
	corun_json_double(&j, "harmonic_mean_teps", (double)n / inv);
	corun_json_double(&j, "validation_time_s", r->validation_time_s);
	corun_json_int(&j, "major_page_faults", (int64_t)ru.ru_majflt);
	corun_json_int(&j, "minor_page_faults", (int64_t)ru.ru_minflt);
	corun_json_str(&j, "check", "ok");
	corun_json_end(&j);
}

/* ---- Driver ---- */

/* Check the storage directory; tell whether it is on tmpfs or ramfs, where
 * the "file" pages go to swap, not to a device. */
static int check_storage_dir(const char *dir, bool *on_memory)
{
	struct statfs sfs;
	struct stat sb;

	if (stat(dir, &sb) != 0) {
		corun_err(PROG, "--storage: cannot use '%s': %s", dir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(sb.st_mode)) {
		corun_err(PROG, "--storage: '%s' is not a directory", dir);
		return -1;
	}
	if (statfs(dir, &sfs) != 0) {
		corun_err(PROG, "statfs '%s': %s", dir, strerror(errno));
		return -1;
	}
	*on_memory = sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC;
	if (*on_memory)
		corun_err(PROG,
			  "warning: --storage '%s' is on tmpfs or ramfs: "
			  "its pages are swapped, not written back to a "
			  "device",
			  dir);
	return 0;
}

static int run(const struct options *o, int argc, char *argv[], double start_epoch_s)
{
	struct storage st = { .mode = o->storage_mode, .dir = o->storage };
	struct graph g = {
		.nv = INT64_C(1) << o->scale,
		.nedges = o->edgefactor << o->scale,
	};
	struct result *r = NULL;
	int64_t *parent = NULL, *queue = NULL, *level = NULL;
	unsigned char *mark = NULL;
	int rc = CORUN_EXIT_RUNTIME;
	double t0;

	r = xmalloc(sizeof(*r));
	if (r == NULL)
		return CORUN_EXIT_RUNTIME;
	memset(r, 0, sizeof(*r));
	if (st.mode == STORAGE_FILE && check_storage_dir(st.dir, &r->storage_on_memory_fs) != 0)
		goto out;

	t0 = corun_monotonic_s();
	if (generate_edges(o, &st, &g) != 0)
		goto out;
	r->generation_time_s = corun_monotonic_s() - t0;
	if (o->dump_graph != NULL && dump_graph(o->dump_graph, &g) != 0)
		goto out;

	t0 = corun_monotonic_s();
	if (build_csr(&st, &g) != 0)
		goto out;
	r->construction_time_s = corun_monotonic_s() - t0;

	r->nroots = sample_roots(o, &g, o->roots, r->root);
	if (r->nroots == 0) {
		corun_err(PROG,
			  "no vertex has a neighbour other than itself "
			  "(scale %" PRId64 ", edgefactor %" PRId64 ", seed %" PRIu64
			  "): nothing to search",
			  o->scale, o->edgefactor, o->seed);
		goto out;
	}
	if (r->nroots < o->roots)
		corun_err(PROG,
			  "warning: only %" PRId64 " vertices have a "
			  "neighbour; using %" PRId64 " roots, not %" PRId64,
			  r->nroots, r->nroots, o->roots);

	parent = xmalloc((size_t)g.nv * sizeof(*parent));
	queue = xmalloc((size_t)g.nv * sizeof(*queue));
	level = xmalloc((size_t)g.nv * sizeof(*level));
	mark = xmalloc((size_t)g.nv);
	if (parent == NULL || queue == NULL || level == NULL || mark == NULL)
		goto out;
	for (int64_t i = 0; i < r->nroots; i++) {
		double t1;

		t0 = corun_monotonic_s();
		r->reached[i] = bfs(&g, r->root[i], parent, queue);
		t1 = corun_monotonic_s();
		r->bfs_time_s[i] = t1 - t0;
		r->traversed[i] = validate(&g, r->root[i], parent, level, queue, mark);
		r->validation_time_s += corun_monotonic_s() - t1;
		if (r->traversed[i] < 0)
			goto out;
		/* Not finite (null) if too fast to time. */
		r->teps[i] = (double)r->traversed[i] / r->bfs_time_s[i];
		if (i == 0 && o->dump_levels != NULL &&
		    dump_levels(o->dump_levels, &g, r->root[0], level) != 0)
			goto out;
	}

	print_result(o, &st, &g, r, argc, argv, start_epoch_s);
	if (corun_flush_result(PROG) != 0)
		goto out;
	rc = CORUN_EXIT_OK;
out:
	free(mark);
	free(level);
	free(queue);
	free(parent);
	big_free(&g.adjncy);
	big_free(&g.xadj);
	big_free(&g.edges);
	free(r);
	return rc;
}

int main(int argc, char *argv[])
{
	double start_epoch_s = corun_epoch_s();
	struct options o;

	parse_options(argc, argv, &o);
	return run(&o, argc, argv, start_epoch_s);
}
