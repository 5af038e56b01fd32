/* kmeans: the "Kmeans clustering" (KM) real user application of paper 000
 * (Table 1: "A key algorithm from data mining which partitions n
 * observations into k clusters", 8-threaded, explicit I/O).
 *
 * The paper's program is private; this kernel does the same kind of work:
 * Lloyd's algorithm over a file of points (--data: raw little-endian
 * float32, --dims values per point) with --threads threads.  Each thread
 * owns a contiguous share of the points and reads it with pread() in blocks
 * of about --block-size bytes.  In stream mode (the default) the points are
 * read from the device again in every iteration, as an out-of-core
 * data-mining job does, with the file's cached pages dropped first; in load
 * mode they are read once into memory.  The initial centers are the first
 * --clusters points.  Prints one JSON object on one line.
 *
 * Self-check: every point is assigned in every iteration, every byte of the
 * file is read as planned, and the sum of squared distances (SSE) never
 * rises from one iteration to the next (Lloyd's algorithm guarantees it).
 */
#define _GNU_SOURCE

#include "corun_kernel.h"

#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <sys/stat.h>

#define PROG "kmeans"
#define KMEANS_VERSION "1.0.0"

#define THREADS_MAX 256
#define DIMS_MAX 1024
#define CLUSTERS_MAX 4096
#define ITERATIONS_MAX 100000
#define BLOCK_SIZE_MAX (INT64_C(1) << 30)
#define SSE_TOLERANCE 1e-9 /* relative: float rounding of the sums */

enum mode { MODE_STREAM, MODE_LOAD };

static const char *const mode_names[] = {
	[MODE_STREAM] = "stream",
	[MODE_LOAD] = "load",
};

struct options {
	const char *data;
	int64_t dims;
	int64_t clusters;
	int64_t threads;
	int64_t iterations;
	int64_t block_size;
	enum mode mode;
};

struct shared {
	const struct options *o;
	int fd;
	int64_t points;
	double *centers; /* clusters x dims, read-only during a pass */
};

/* One thread's share of the points and its partial sums of a pass. */
struct part {
	struct shared *s;
	int64_t first, count; /* points [first, first + count) */
	float *buf;           /* block buffer, or all its points (load) */
	int64_t buf_points;   /* points the buffer holds */
	double *sums;         /* clusters x dims */
	int64_t *members;     /* clusters */
	double sse;
	int64_t bytes_read;
	double read_s;
	int error;
	bool loaded;
};

/* clang-format off */
static const char usage_text[] =
	"Usage: " PROG " --data PATH --dims D --clusters K [OPTION]...\n"
	"Cluster the float32 points of PATH (D values each) into K clusters with\n"
	"Lloyd's algorithm and --threads threads, reading the points from the\n"
	"device in every iteration (stream mode); prints one JSON object on one\n"
	"line (the Kmeans application of paper 000, Table 1).\n"
	"\n"
	"  --data PATH         points: raw little-endian float32, D per point;\n"
	"                      its size must be a multiple of 4 x D (required)\n"
	"  --dims D            values per point, 1 to 1024 (required)\n"
	"  --clusters K        clusters, 1 to 4096, at most the points (required)\n"
	"  --threads N         threads, 1 to 256 (default 8, as in the paper)\n"
	"  --iterations N      Lloyd iterations, 1 to 100000 (default 10)\n"
	"  --block-size BYTES  bytes per pread(), rounded down to whole points,\n"
	"                      at least one point; 1 to 1G, K/M/G = KiB/MiB/GiB\n"
	"                      (default 1M)\n"
	"  --mode MODE         stream (default): drop the file's cached pages and\n"
	"                      read every point again in every iteration;\n"
	"                      load: read the points once into memory\n"
	CORUN_USAGE_TAIL("           ", "self-check") ".\n";
/* clang-format on */

static void parse_options(int argc, char *argv[], struct options *o)
{
	static const struct option long_options[] = {
		{ "data", required_argument, NULL, 'd' },
		{ "dims", required_argument, NULL, 'D' },
		{ "clusters", required_argument, NULL, 'k' },
		{ "threads", required_argument, NULL, 't' },
		{ "iterations", required_argument, NULL, 'i' },
		{ "block-size", required_argument, NULL, 'b' },
		{ "mode", required_argument, NULL, 'm' },
		CORUN_COMMON_LONG_OPTIONS,
	};
	int c;

	*o = (struct options){
		.data = NULL,
		.dims = 0,
		.clusters = 0,
		.threads = 8,
		.iterations = 10,
		.block_size = INT64_C(1) << 20,
		.mode = MODE_STREAM,
	};
	while ((c = corun_getopt(argc, argv, "+:h", long_options)) != -1) {
		switch (c) {
		case 'd': o->data = optarg; break;
		case 'D':
			o->dims = corun_parse_int(PROG, "dims", optarg, 1, DIMS_MAX, false);
			break;
		case 'k':
			o->clusters =
				corun_parse_int(PROG, "clusters", optarg, 1, CLUSTERS_MAX, false);
			break;
		case 't':
			o->threads =
				corun_parse_int(PROG, "threads", optarg, 1, THREADS_MAX, false);
			break;
		case 'i':
			o->iterations = corun_parse_int(PROG, "iterations", optarg, 1,
							ITERATIONS_MAX, false);
			break;
		case 'b':
			o->block_size = corun_parse_int(PROG, "block-size", optarg, 1,
							BLOCK_SIZE_MAX, true);
			break;
		case 'm': o->mode = (enum mode)CORUN_PARSE_CHOICE(PROG, "mode", mode_names); break;
		default: corun_default_option(PROG, KMEANS_VERSION, usage_text, c, argv);
		}
	}
	corun_no_operands(PROG, argc, argv);
	if (o->data == NULL)
		corun_usage_error(PROG, "--data PATH is required (see --help)");
	if (o->dims == 0)
		corun_usage_error(PROG, "--dims D is required (see --help)");
	if (o->clusters == 0)
		corun_usage_error(PROG, "--clusters K is required (see --help)");
}

/* Read COUNT points starting at point FIRST into BUF with pread(). */
static int read_points(struct part *p, float *buf, int64_t first, int64_t count)
{
	size_t point_bytes = (size_t)p->s->o->dims * sizeof(float);
	size_t want = (size_t)count * point_bytes;
	off_t off = (off_t)((size_t)first * point_bytes);
	size_t got = 0;
	double t0 = corun_monotonic_s();

	while (got < want) {
		ssize_t n = pread(p->s->fd, (char *)buf + got, want - got, off + (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			corun_err(PROG, "pread '%s' at byte %jd: %s", p->s->o->data,
				  (intmax_t)(off + (off_t)got),
				  n < 0 ? strerror(errno) : "unexpected end of file");
			return -1;
		}
		got += (size_t)n;
	}
	p->read_s += corun_monotonic_s() - t0;
	p->bytes_read += (int64_t)want;
	return 0;
}

static void assign(struct part *p, const float *pts, int64_t count)
{
	const struct options *o = p->s->o;
	const double *centers = p->s->centers;
	int64_t d = o->dims;

	for (int64_t i = 0; i < count; i++) {
		const float *x = pts + i * d;
		double best = DBL_MAX;
		int64_t best_k = 0;

		for (int64_t k = 0; k < o->clusters; k++) {
			const double *c = centers + k * d;
			double dist = 0;

			for (int64_t j = 0; j < d; j++) {
				double diff = (double)x[j] - c[j];

				dist += diff * diff;
			}
			if (dist < best) {
				best = dist;
				best_k = k;
			}
		}
		p->sse += best;
		p->members[best_k]++;
		for (int64_t j = 0; j < d; j++)
			p->sums[best_k * d + j] += (double)x[j];
	}
}

/* One pass of one thread over its points: assign each to its nearest
 * center and sum them per cluster. */
static void *pass(void *arg)
{
	struct part *p = arg;
	const struct options *o = p->s->o;

	p->sse = 0;
	memset(p->sums, 0, (size_t)(o->clusters * o->dims) * sizeof(double));
	memset(p->members, 0, (size_t)o->clusters * sizeof(int64_t));
	if (o->mode == MODE_LOAD) {
		if (!p->loaded) {
			if (read_points(p, p->buf, p->first, p->count) != 0) {
				p->error = CORUN_EXIT_RUNTIME;
				return NULL;
			}
			p->loaded = true;
		}
		assign(p, p->buf, p->count);
		return NULL;
	}
	for (int64_t done = 0; done < p->count;) {
		int64_t n = p->count - done < p->buf_points ? p->count - done : p->buf_points;

		if (read_points(p, p->buf, p->first + done, n) != 0) {
			p->error = CORUN_EXIT_RUNTIME;
			return NULL;
		}
		assign(p, p->buf, n);
		done += n;
	}
	return NULL;
}

static int run_pass(struct part *parts, int64_t threads)
{
	pthread_t tids[THREADS_MAX];
	int64_t started = 0;
	int rc = 0;

	for (; started < threads; started++) {
		int err = pthread_create(&tids[started], NULL, pass, &parts[started]);

		if (err != 0) {
			corun_err(PROG, "pthread_create: %s", strerror(err));
			rc = -1;
			break;
		}
	}
	for (int64_t i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	for (int64_t i = 0; i < started; i++)
		if (parts[i].error != 0)
			rc = -1;
	return rc;
}

static int drop_cache(const struct options *o, int fd)
{
	int err;

	if (fdatasync(fd) != 0) {
		corun_err(PROG, "fdatasync '%s': %s", o->data, strerror(errno));
		return -1;
	}
	err = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (err != 0) {
		corun_err(PROG, "posix_fadvise '%s': %s", o->data, strerror(err));
		return -1;
	}
	return 0;
}

static void print_result(const struct options *o, int64_t points, int64_t file_size,
			 const double *sse, int64_t bytes_read, double read_s, double elapsed_s,
			 const int64_t *members, int argc, char *argv[], double start_epoch_s)
{
	struct corun_json j;

	corun_json_result_begin(&j, PROG, KMEANS_VERSION, argc, argv, start_epoch_s);
	corun_json_object_begin(&j, "params");
	corun_json_str(&j, "data", o->data);
	corun_json_int(&j, "dims", o->dims);
	corun_json_int(&j, "clusters", o->clusters);
	corun_json_int(&j, "threads", o->threads);
	corun_json_int(&j, "iterations", o->iterations);
	corun_json_int(&j, "block_size", o->block_size);
	corun_json_str(&j, "mode", mode_names[o->mode]);
	corun_json_object_end(&j);
	corun_json_int(&j, "points", points);
	corun_json_int(&j, "file_size_bytes", file_size);
	corun_json_array_begin(&j, "sse");
	for (int64_t i = 0; i < o->iterations; i++)
		corun_json_double(&j, NULL, sse[i]);
	corun_json_array_end(&j);
	corun_json_double(&j, "sse_first", sse[0]);
	corun_json_double(&j, "sse_last", sse[o->iterations - 1]);
	corun_json_array_begin(&j, "cluster_sizes");
	for (int64_t k = 0; k < o->clusters; k++)
		corun_json_int(&j, NULL, members[k]);
	corun_json_array_end(&j);
	corun_json_int(&j, "bytes_read", bytes_read);
	corun_json_double(&j, "read_s", read_s);
	corun_json_double(&j, "elapsed_s", elapsed_s);
	/* MB = 10^6 bytes, as in the paper; null if too fast to time. */
	corun_json_double(&j, "bw_mb_s", (double)bytes_read / 1e6 / elapsed_s);
	corun_json_result_end(&j);
}

int main(int argc, char *argv[])
{
	double start_epoch_s = corun_epoch_s();
	struct options o;
	struct shared s = { 0 };
	struct part *parts = NULL;
	double *sse = NULL, *new_centers = NULL;
	int64_t *members = NULL;
	int64_t bytes_read = 0, planned, per_point;
	double read_s = 0, t0;
	struct stat st;
	int rc = CORUN_EXIT_RUNTIME;

	parse_options(argc, argv, &o);
	s.o = &o;
	s.fd = open(o.data, O_RDONLY | O_CLOEXEC);
	if (s.fd < 0) {
		corun_err(PROG, "--data: cannot open '%s': %s", o.data, strerror(errno));
		return CORUN_EXIT_RUNTIME;
	}
	if (fstat(s.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		corun_err(PROG, "--data: '%s' is not a regular file", o.data);
		goto out;
	}
	per_point = o.dims * (int64_t)sizeof(float);
	if (st.st_size % per_point != 0) {
		corun_err(PROG,
			  "--data: '%s' has %jd bytes, not a multiple of "
			  "%" PRId64 " (4 x --dims)",
			  o.data, (intmax_t)st.st_size, per_point);
		goto out;
	}
	s.points = (int64_t)st.st_size / per_point;
	if (s.points < o.clusters) {
		corun_err(PROG, "--clusters: %" PRId64 " but '%s' holds only %" PRId64 " points",
			  o.clusters, o.data, s.points);
		goto out;
	}
	if (o.threads > s.points)
		o.threads = s.points; /* a thread without points does nothing */

	sse = calloc((size_t)o.iterations, sizeof(double));
	members = calloc((size_t)o.clusters, sizeof(int64_t));
	s.centers = calloc((size_t)(o.clusters * o.dims), sizeof(double));
	new_centers = calloc((size_t)(o.clusters * o.dims), sizeof(double));
	parts = calloc((size_t)o.threads, sizeof(struct part));
	if (!sse || !members || !s.centers || !new_centers || !parts) {
		corun_err(PROG, "cannot allocate the cluster state");
		goto out;
	}
	for (int64_t t = 0; t < o.threads; t++) {
		struct part *p = &parts[t];
		int64_t block_points = o.block_size / per_point;

		p->s = &s;
		p->first = s.points * t / o.threads;
		p->count = s.points * (t + 1) / o.threads - p->first;
		if (block_points < 1)
			block_points = 1;
		p->buf_points = o.mode == MODE_LOAD
					? p->count
					: (block_points < p->count ? block_points : p->count);
		p->buf = malloc((size_t)(p->buf_points * per_point));
		p->sums = calloc((size_t)(o.clusters * o.dims), sizeof(double));
		p->members = calloc((size_t)o.clusters, sizeof(int64_t));
		if (!p->buf || !p->sums || !p->members) {
			corun_err(PROG,
				  "cannot allocate %" PRId64 " bytes of "
				  "points",
				  p->buf_points * per_point);
			goto out;
		}
	}

	t0 = corun_monotonic_s();
	if (drop_cache(&o, s.fd) != 0)
		goto out;
	{ /* the first K points are the initial centers */
		float *first = malloc((size_t)(o.clusters * per_point));

		if (first == NULL) {
			corun_err(PROG, "cannot allocate the initial centers");
			goto out;
		}
		if (read_points(&parts[0], first, 0, o.clusters) != 0) {
			free(first);
			goto out;
		}
		for (int64_t i = 0; i < o.clusters * o.dims; i++)
			s.centers[i] = (double)first[i];
		free(first);
	}
	for (int64_t it = 0; it < o.iterations; it++) {
		int64_t assigned = 0;

		if (o.mode == MODE_STREAM && it > 0 && drop_cache(&o, s.fd) != 0)
			goto out;
		if (run_pass(parts, o.threads) != 0)
			goto out;
		memset(new_centers, 0, (size_t)(o.clusters * o.dims) * sizeof(double));
		memset(members, 0, (size_t)o.clusters * sizeof(int64_t));
		for (int64_t t = 0; t < o.threads; t++) {
			sse[it] += parts[t].sse;
			for (int64_t k = 0; k < o.clusters; k++)
				members[k] += parts[t].members[k];
			for (int64_t i = 0; i < o.clusters * o.dims; i++)
				new_centers[i] += parts[t].sums[i];
		}
		for (int64_t k = 0; k < o.clusters; k++) {
			assigned += members[k];
			if (members[k] == 0)
				continue; /* an empty cluster keeps its center */
			for (int64_t j = 0; j < o.dims; j++)
				s.centers[k * o.dims + j] =
					new_centers[k * o.dims + j] / (double)members[k];
		}
		if (assigned != s.points) {
			corun_err(PROG,
				  "self-check failed: iteration %" PRId64 " assigned %" PRId64
				  " of %" PRId64 " points",
				  it, assigned, s.points);
			goto out;
		}
		if (it > 0 && sse[it] > sse[it - 1] * (1 + SSE_TOLERANCE)) {
			corun_err(PROG,
				  "self-check failed: SSE rose from %.17g "
				  "to %.17g in iteration %" PRId64,
				  sse[it - 1], sse[it], it);
			goto out;
		}
	}
	t0 = corun_monotonic_s() - t0;
	for (int64_t t = 0; t < o.threads; t++) {
		bytes_read += parts[t].bytes_read;
		read_s += parts[t].read_s;
	}
	planned = (int64_t)st.st_size * (o.mode == MODE_STREAM ? o.iterations : 1) +
		  o.clusters * per_point;
	if (bytes_read != planned) {
		corun_err(PROG,
			  "self-check failed: read %" PRId64 " bytes, "
			  "planned %" PRId64,
			  bytes_read, planned);
		goto out;
	}
	print_result(&o, s.points, (int64_t)st.st_size, sse, bytes_read, read_s, t0, members, argc,
		     argv, start_epoch_s);
	rc = corun_flush_result(PROG) == 0 ? CORUN_EXIT_OK : CORUN_EXIT_RUNTIME;
out:
	if (parts != NULL) {
		for (int64_t t = 0; t < o.threads; t++) {
			free(parts[t].buf);
			free(parts[t].sums);
			free(parts[t].members);
		}
	}
	free(parts);
	free(sse);
	free(members);
	free(s.centers);
	free(new_centers);
	close(s.fd);
	return rc;
}
