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
#include "graph_bfs/graph_bfs.h"

static const char *const storage_mode_names[] = {
	[STORAGE_FILE] = "file",
	[STORAGE_ANON] = "anon",
};

/* clang-format off */
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
	CORUN_USAGE_HELP_VERSION("              ")
	"\n"
	"Testing:\n"
	"  --dump-graph FILE      write the edge list, one \"u v\" line per edge\n"
	"  --dump-levels FILE     write the first root, then the BFS level of\n"
	"                         every vertex (-1: not reached), one per line\n"
	"\n"
	CORUN_USAGE_EXIT_STATUS("validation") ".\n";
/* clang-format on */

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
	/* '+': do not permute argv, which is echoed as "cmdline". */
	while ((c = corun_getopt(argc, argv, "+:hs:e:", long_options)) != -1) {
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
			o->storage_mode = (enum storage_mode)CORUN_PARSE_CHOICE(
				PROG, "storage-mode", storage_mode_names);
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

	corun_json_result_begin(&j, PROG, GRAPH_BFS_VERSION, argc, argv, start_epoch_s);
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
	corun_json_result_end(&j);
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

CORUN_KERNEL_MAIN(parse_options, run)
