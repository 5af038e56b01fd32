/* graph_bfs's parts (kernels/graph_bfs.c is the driver): the graph's storage,
 * generation and CSR construction (graph.c), the BFS and its validation
 * (bfs.c). */
#ifndef GRAPH_BFS_H
#define GRAPH_BFS_H

#define _GNU_SOURCE /* fallocate */

#include "corun_kernel.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>

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

/* ---- Random numbers: xoshiro256** seeded through splitmix64 ---- */

struct rng {
	uint64_t s[4];
};

/* Independent streams of one seed: generator, permutation, roots. */
enum rng_stream { STREAM_EDGES = 1, STREAM_PERM, STREAM_ROOTS };

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

struct graph {
	int64_t nv;              /* 2^SCALE vertices */
	int64_t nedges;          /* EDGEFACTOR * 2^SCALE input edges */
	struct big_array edges;  /* int64 pairs (u, v), nedges of them */
	struct big_array xadj;   /* int64, nv + 1 offsets into adjncy */
	struct big_array adjncy; /* int64 neighbours */
	int64_t self_loops;      /* input edges (v, v), not in the CSR */
	int64_t csr_entries;     /* xadj[nv]: 2 x distinct non-loop edges */
};

/* graph.c */
int big_alloc(struct storage *st, struct big_array *a, size_t len, const char *what);
void big_free(struct big_array *a);
void *xmalloc(size_t n);
int generate_edges(const struct options *o, struct storage *st, struct graph *g);
int build_csr(struct storage *st, struct graph *g);
void rng_init(struct rng *r, uint64_t seed, enum rng_stream stream);
double rng_double(struct rng *r);

/* bfs.c */
int64_t sample_roots(const struct options *o, const struct graph *g, int64_t n, int64_t *roots);
int64_t bfs(const struct graph *g, int64_t root, int64_t *parent, int64_t *queue);
int64_t validate(const struct graph *g, int64_t root, const int64_t *parent, int64_t *level,
		 int64_t *stack, unsigned char *has_edge_to_parent);

#endif /* GRAPH_BFS_H */
