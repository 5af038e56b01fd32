/* graph_bfs: random numbers, the large arrays, kernel 0 (the Kronecker edge
 * list) and kernel 1 (CSR construction). */
#include "graph_bfs.h"

/* ---- Random numbers: xoshiro256** seeded through splitmix64 ---- */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

void rng_init(struct rng *r, uint64_t seed, enum rng_stream stream)
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
double rng_double(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* ---- Large arrays: file-backed shared mappings or anonymous memory ---- */

/* Map LEN bytes for WHAT: in file mode a MAP_SHARED mapping of a new,
 * unlinked file in the storage directory with its blocks reserved, so that
 * a full disk is an error here and not a SIGBUS later. */
int big_alloc(struct storage *st, struct big_array *a, size_t len, const char *what)
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

void big_free(struct big_array *a)
{
	if (a->p != NULL)
		munmap(a->p, a->len);
	a->p = NULL;
}

void *xmalloc(size_t n)
{
	void *p = malloc(n > 0 ? n : 1);

	if (p == NULL)
		corun_err(PROG, "cannot allocate %zu bytes", n);
	return p;
}

/* ---- Kernel 0: Kronecker edge list ---- */

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
int generate_edges(const struct options *o, struct storage *st, struct graph *g)
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
int build_csr(struct storage *st, struct graph *g)
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
