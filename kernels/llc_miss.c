/* llc_miss: the LLC-miss kernel (paper section 2.3.2, Fig. 3).
 *
 * Two arrays a and b of --mem-size bytes each are viewed as rows of one
 * cache line.  Every iteration copies the first int of each row,
 * b[i][0] = a[i][0], over all rows, spinning on --nops nop instructions
 * after each copy to set the density of cache misses.  With arrays much
 * larger than the last-level cache, each copy is one read miss and one
 * write miss.  Prints one JSON object on one line.
 */
#include "corun_kernel.h"

#include <sys/mman.h>

#define PROG "llc_miss"
#define LLC_MISS_VERSION "1.0.0"

#define MEM_SIZE_MAX (INT64_C(1) << 40)
#define LINE_SIZE_MAX 65536
#define ITERATIONS_MAX INT64_C(1000000000)
#define SYSFS_LINE_SIZE "/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size"

/* a[i][0]: distinct for neighbouring rows, deterministic for the check. */
#define ROW_VALUE(i) ((unsigned int)(2654435761u * (uint64_t)(i)))

struct options {
	int64_t mem_size;
	const char *mem_size_arg; /* as typed, for error messages */
	int64_t line_size;        /* 0: detect */
	int64_t nops;
	int64_t iterations;
	int64_t warmup_iterations;
};

/* clang-format off */
static const char usage_text[] =
	"Usage: " PROG " [OPTION]...\n"
	"Copy b[i][0] = a[i][0] for every cache-line row i of two arrays of\n"
	"--mem-size bytes each, --iterations times, running --nops nop\n"
	"instructions after each copy (LLC-miss kernel).  Prints one JSON object\n"
	"on one line to stdout.\n"
	"\n"
	"  --mem-size BYTES          size of each of the two arrays, K/M/G =\n"
	"                            KiB/MiB/GiB (default 64M; at least the line\n"
	"                            size, at most 1T)\n"
	"  --line-size BYTES         row stride: a power of two from 4 to 65536,\n"
	"                            or 0 to read the L1 data cache line size from\n"
	"                            sysconf (then sysfs) (default 64)\n"
	"  --nops N                  nop instructions after each copy, >= 0\n"
	"                            (default 0)\n"
	"  --iterations N            timed passes over all rows, 1 to 10^9\n"
	"                            (default 10)\n"
	"  --warmup-iterations N     untimed passes before them, 0 to 10^9\n"
	"                            (default 1)\n"
	CORUN_USAGE_TAIL("                 ", "self-check") ",\n"
	"4 skipped (--line-size 0 and the cache line size is unknown).\n";
/* clang-format on */

static void parse_options(int argc, char *argv[], struct options *o)
{
	static const struct option long_options[] = {
		{ "mem-size", required_argument, NULL, 'm' },
		{ "line-size", required_argument, NULL, 'l' },
		{ "nops", required_argument, NULL, 'n' },
		{ "iterations", required_argument, NULL, 'i' },
		{ "warmup-iterations", required_argument, NULL, 'w' },
		CORUN_COMMON_LONG_OPTIONS,
	};
	int c;

	*o = (struct options){
		.mem_size = INT64_C(64) << 20,
		.mem_size_arg = "64M",
		.line_size = 64,
		.nops = 0,
		.iterations = 10,
		.warmup_iterations = 1,
	};
	/* '+': do not permute argv, which is echoed as "cmdline". */
	while ((c = corun_getopt(argc, argv, "+:h", long_options)) != -1) {
		switch (c) {
		case 'm':
			o->mem_size =
				corun_parse_int(PROG, "mem-size", optarg, 1, MEM_SIZE_MAX, true);
			o->mem_size_arg = optarg;
			break;
		case 'l':
			o->line_size =
				corun_parse_int(PROG, "line-size", optarg, 0, LINE_SIZE_MAX, false);
			if (o->line_size != 0 &&
			    (o->line_size < 4 || (o->line_size & (o->line_size - 1)) != 0))
				corun_usage_error(PROG,
						  "--line-size: '%s' "
						  "(expected 0 or a power of two "
						  "from 4 to %d)",
						  optarg, LINE_SIZE_MAX);
			break;
		case 'n':
			o->nops = corun_parse_int(PROG, "nops", optarg, 0, INT64_MAX, false);
			break;
		case 'i':
			o->iterations = corun_parse_int(PROG, "iterations", optarg, 1,
							ITERATIONS_MAX, false);
			break;
		case 'w':
			o->warmup_iterations = corun_parse_int(PROG, "warmup-iterations", optarg, 0,
							       ITERATIONS_MAX, false);
			break;
		default: corun_default_option(PROG, LLC_MISS_VERSION, usage_text, c, argv);
		}
	}
	corun_no_operands(PROG, argc, argv);
}

static bool valid_line_size(long n)
{
	return n >= 4 && n <= LINE_SIZE_MAX && (n & (n - 1)) == 0;
}

/* The L1 data cache line size from sysconf, else from sysfs (sysconf gives
 * 0 where glibc cannot tell, e.g. on some virtual machines and non-x86
 * systems).  Returns 0 if neither knows. */
static long detect_line_size(const char **source)
{
	long n = sysconf(_SC_LEVEL1_DCACHE_LINESIZE);
	FILE *f;

	if (valid_line_size(n)) {
		*source = "sysconf";
		return n;
	}
	f = fopen(SYSFS_LINE_SIZE, "r");
	if (f == NULL)
		return 0;
	if (fscanf(f, "%ld", &n) != 1)
		n = 0;
	fclose(f);
	if (!valid_line_size(n))
		return 0;
	*source = "sysfs";
	return n;
}

/* One pass over all rows.  Through volatile pointers every load and store
 * happens, in order, once per row. */
static void copy_rows(volatile unsigned int *b, const volatile unsigned int *a, size_t rows,
		      size_t stride, int64_t nops)
{
	if (nops == 0) {
		for (size_t i = 0; i < rows; i++)
			b[i * stride] = a[i * stride];
		return;
	}
	for (size_t i = 0; i < rows; i++) {
		b[i * stride] = a[i * stride];
		corun_spin_nops(nops);
	}
}

struct result {
	int64_t line_size;
	const char *line_size_source;
	int64_t rows;
	int64_t accesses;
	double elapsed_s;
};

static void print_result(const struct options *o, const struct result *r, int argc, char *argv[],
			 double start_epoch_s)
{
	struct corun_json j;

	corun_json_result_begin(&j, PROG, LLC_MISS_VERSION, argc, argv, start_epoch_s);
	corun_json_object_begin(&j, "params");
	corun_json_int(&j, "mem_size", o->mem_size);
	corun_json_int(&j, "line_size", r->line_size);
	corun_json_int(&j, "nops", o->nops);
	corun_json_int(&j, "iterations", o->iterations);
	corun_json_int(&j, "warmup_iterations", o->warmup_iterations);
	corun_json_object_end(&j);
	corun_json_str(&j, "line_size_source", r->line_size_source);
	corun_json_int(&j, "rows", r->rows);
	corun_json_int(&j, "accesses", r->accesses);
	corun_json_double(&j, "elapsed_s", r->elapsed_s);
	/* Non-finite (null) if too fast to time. */
	corun_json_double(&j, "accesses_per_s", (double)r->accesses / r->elapsed_s);
	corun_json_double(&j, "ns_per_access", r->elapsed_s * 1e9 / (double)r->accesses);
	corun_json_result_end(&j);
}

static void *map_array(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		corun_err(PROG, "cannot map %zu bytes: %s", len, strerror(errno));
		return NULL;
	}
	return p;
}

static int run(const struct options *o, int argc, char *argv[], double start_epoch_s)
{
	size_t len = (size_t)o->mem_size;
	struct result r = { .line_size_source = "option" };
	unsigned int *a = NULL, *b = NULL;
	size_t rows, stride;
	int rc = CORUN_EXIT_RUNTIME;
	double t0;

	r.line_size = o->line_size;
	if (r.line_size == 0) {
		r.line_size = detect_line_size(&r.line_size_source);
		if (r.line_size == 0) {
			corun_err(PROG,
				  "skipped: cache line size unknown "
				  "(sysconf and %s); give --line-size",
				  SYSFS_LINE_SIZE);
			return CORUN_EXIT_SKIPPED;
		}
	}
	if (o->mem_size < r.line_size)
		corun_usage_error(PROG,
				  "--mem-size: '%s' (expected at least "
				  "the line size, %" PRId64 " bytes)",
				  o->mem_size_arg, r.line_size);
	r.rows = o->mem_size / r.line_size;
	if (r.rows > INT64_MAX / o->iterations)
		corun_usage_error(PROG,
				  "--iterations: '%" PRId64 "' (expected "
				  "at most %" PRId64 " with %" PRId64 " rows)",
				  o->iterations, INT64_MAX / r.rows, r.rows);
	r.accesses = r.rows * o->iterations;
	rows = (size_t)r.rows;
	stride = (size_t)r.line_size / sizeof(unsigned int);

	a = map_array(len);
	if (a == NULL)
		goto out;
	b = map_array(len);
	if (b == NULL)
		goto out;
	/* Touch every page of both arrays, then set the row heads: b differs
	 * from a everywhere, so the check sees rows that were not copied. */
	memset(a, 0x5a, len);
	memset(b, 0xa5, len);
	for (size_t i = 0; i < rows; i++) {
		a[i * stride] = ROW_VALUE(i);
		b[i * stride] = ~ROW_VALUE(i);
	}

	for (int64_t it = 0; it < o->warmup_iterations; it++)
		copy_rows(b, a, rows, stride, o->nops);
	t0 = corun_monotonic_s();
	for (int64_t it = 0; it < o->iterations; it++)
		copy_rows(b, a, rows, stride, o->nops);
	r.elapsed_s = corun_monotonic_s() - t0;

	for (size_t i = 0; i < rows; i++) {
		if (a[i * stride] != ROW_VALUE(i) || b[i * stride] != a[i * stride]) {
			corun_err(PROG,
				  "self-check failed: row %zu: a = %u, "
				  "b = %u (expected both %u)",
				  i, a[i * stride], b[i * stride], ROW_VALUE(i));
			goto out;
		}
	}

	print_result(o, &r, argc, argv, start_epoch_s);
	if (corun_flush_result(PROG) != 0)
		goto out;
	rc = CORUN_EXIT_OK;
out:
	if (b != NULL)
		munmap(b, len);
	if (a != NULL)
		munmap(a, len);
	return rc;
}

CORUN_KERNEL_MAIN(parse_options, run)
