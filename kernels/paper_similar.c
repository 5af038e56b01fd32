/* paper_similar: the "Paper Similar" (PS) real user application of paper 000
 * (Table 1: "A program which compares a paper with the other K papers
 * concurrently, while K is 2 in our work", 2-threaded, explicit I/O).
 *
 * The paper's program is private; this kernel does the same kind of work.
 * It reads the paper (--paper) and the K other papers (--other, repeated)
 * with read() in blocks of --block-size bytes, each file once, with
 * --threads worker threads taking the documents in turn.  Every document is
 * turned into a vector of word-bigram counts (FNV-1a hashes folded into
 * 2^16 buckets) and the paper is compared with each other paper by the
 * cosine similarity of their vectors.  The page cache is kept out by
 * evicting each file's pages before it is read (--cache-mode evict), so
 * the documents come from the device.  Prints one JSON object on one line.
 */
#define _GNU_SOURCE

#include "corun_kernel.h"

#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sys/stat.h>

#define PROG "paper_similar"
#define PAPER_SIMILAR_VERSION "1.0.0"

#define OTHERS_MAX 64
#define THREADS_MAX 256
#define BLOCK_SIZE_MAX (INT64_C(1) << 30)
#define BUCKET_BITS 16
#define BUCKETS (1u << BUCKET_BITS)
#define FNV_OFFSET UINT64_C(14695981039346656037)
#define FNV_PRIME UINT64_C(1099511628211)
#define SELF_TOLERANCE 1e-9

enum cache_mode { CACHE_EVICT, CACHE_KEEP };

static const char *const cache_mode_names[] = {
	[CACHE_EVICT] = "evict",
	[CACHE_KEEP] = "keep",
};

struct options {
	const char *paper;
	const char *others[OTHERS_MAX];
	int n_others;
	int64_t threads;
	int64_t block_size;
	enum cache_mode cache_mode;
};

/* One document: its file, its counts, what reading it took. */
struct document {
	const char *path;
	uint32_t *counts; /* BUCKETS word-bigram counts */
	int64_t bytes_read;
	int64_t file_size;
	int64_t words;
	double read_s;
	int error; /* 0, or CORUN_EXIT_RUNTIME with a message printed */
};

struct work {
	const struct options *o;
	struct document *docs;
	int n_docs;
	int next; /* next document to take, under lock */
	pthread_mutex_t lock;
};

/* clang-format off */
static const char usage_text[] =
	"Usage: " PROG " --paper PATH --other PATH [--other PATH]... [OPTION]...\n"
	"Compare a paper with K other papers (K = number of --other), reading\n"
	"every document once from the device with --threads threads, and print\n"
	"the cosine similarity of their word-bigram vectors as one JSON object on\n"
	"one line (the Paper Similar application of paper 000, Table 1).\n"
	"\n"
	"  --paper PATH        the paper to compare (required)\n"
	"  --other PATH        another paper; give it K times, 1 to 64 (the paper\n"
	"                      uses K = 2)\n"
	"  --threads N         worker threads, 1 to 256 (default 2, as in the paper)\n"
	"  --block-size BYTES  bytes per read(), 1 to 1G; K/M/G = KiB/MiB/GiB\n"
	"                      (default 65536)\n"
	"  --cache-mode MODE   evict (default): fdatasync + POSIX_FADV_DONTNEED on\n"
	"                      each file before reading it, so it comes from the\n"
	"                      device; keep: read through the page cache as is\n"
	CORUN_USAGE_TAIL("           ", "self-check") ".\n";
/* clang-format on */

static void parse_options(int argc, char *argv[], struct options *o)
{
	static const struct option long_options[] = {
		{ "paper", required_argument, NULL, 'p' },
		{ "other", required_argument, NULL, 'o' },
		{ "threads", required_argument, NULL, 't' },
		{ "block-size", required_argument, NULL, 'b' },
		{ "cache-mode", required_argument, NULL, 'm' },
		CORUN_COMMON_LONG_OPTIONS,
	};
	int c;

	*o = (struct options){
		.paper = NULL,
		.n_others = 0,
		.threads = 2,
		.block_size = 65536,
		.cache_mode = CACHE_EVICT,
	};
	while ((c = corun_getopt(argc, argv, "+:h", long_options)) != -1) {
		switch (c) {
		case 'p': o->paper = optarg; break;
		case 'o':
			if (o->n_others == OTHERS_MAX)
				corun_usage_error(PROG,
						  "--other: '%s' (expected "
						  "at most %d other papers)",
						  optarg, OTHERS_MAX);
			o->others[o->n_others++] = optarg;
			break;
		case 't':
			o->threads =
				corun_parse_int(PROG, "threads", optarg, 1, THREADS_MAX, false);
			break;
		case 'b':
			o->block_size = corun_parse_int(PROG, "block-size", optarg, 1,
							BLOCK_SIZE_MAX, true);
			break;
		case 'm':
			o->cache_mode = (enum cache_mode)CORUN_PARSE_CHOICE(PROG, "cache-mode",
									    cache_mode_names);
			break;
		default: corun_default_option(PROG, PAPER_SIMILAR_VERSION, usage_text, c, argv);
		}
	}
	corun_no_operands(PROG, argc, argv);
	if (o->paper == NULL)
		corun_usage_error(PROG, "--paper PATH is required (see --help)");
	if (o->n_others == 0)
		corun_usage_error(PROG, "--other PATH is required at least "
					"once (see --help)");
}

static bool is_word_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c >= 0x80;
}

/* Tokenizer state carried across blocks: the word being hashed and the
 * hash of the previous word (0 before the first). */
struct tokens {
	uint64_t word;
	bool in_word;
	uint64_t prev;
};

static void end_word(struct tokens *t, struct document *d)
{
	uint64_t pair;

	if (!t->in_word)
		return;
	/* A bigram: the previous word's hash mixed with this one's. */
	pair = (t->prev * FNV_PRIME) ^ t->word;
	pair ^= pair >> 29;
	d->counts[(uint32_t)(pair * UINT64_C(0x9e3779b97f4a7c15) >> (64 - BUCKET_BITS))]++;
	d->words++;
	t->prev = t->word;
	t->in_word = false;
}

static void scan(struct tokens *t, struct document *d, const unsigned char *buf, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = buf[i];

		if (is_word_byte(c)) {
			if (!t->in_word) {
				t->word = FNV_OFFSET;
				t->in_word = true;
			}
			if (c >= 'A' && c <= 'Z')
				c = (unsigned char)(c - 'A' + 'a');
			t->word = (t->word ^ c) * FNV_PRIME;
		} else {
			end_word(t, d);
		}
	}
}

static void read_document(const struct options *o, struct document *d, unsigned char *buf)
{
	struct tokens t = { 0 };
	struct stat st;
	double t0;
	int fd;

	d->error = CORUN_EXIT_RUNTIME;
	fd = open(d->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		corun_err(PROG, "cannot open '%s': %s", d->path, strerror(errno));
		return;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		corun_err(PROG, "'%s' is not a regular file", d->path);
		goto out;
	}
	d->file_size = (int64_t)st.st_size;
	if (o->cache_mode == CACHE_EVICT) {
		int err;

		if (fdatasync(fd) != 0) {
			corun_err(PROG, "fdatasync '%s': %s", d->path, strerror(errno));
			goto out;
		}
		err = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		if (err != 0) {
			corun_err(PROG, "posix_fadvise '%s': %s", d->path, strerror(err));
			goto out;
		}
	}
	for (;;) {
		ssize_t n;

		t0 = corun_monotonic_s();
		n = read(fd, buf, (size_t)o->block_size);
		d->read_s += corun_monotonic_s() - t0;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			corun_err(PROG, "read '%s' at byte %" PRId64 ": %s", d->path, d->bytes_read,
				  strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		d->bytes_read += n;
		scan(&t, d, buf, (size_t)n);
	}
	end_word(&t, d);
	if (d->bytes_read != d->file_size) {
		corun_err(PROG,
			  "self-check failed: read %" PRId64 " bytes of "
			  "'%s' but fstat reported %" PRId64,
			  d->bytes_read, d->path, d->file_size);
		goto out;
	}
	d->error = 0;
out:
	close(fd);
}

static void *worker(void *arg)
{
	struct work *w = arg;
	unsigned char *buf = malloc((size_t)w->o->block_size);

	if (buf == NULL) {
		corun_err(PROG, "cannot allocate %" PRId64 " bytes", w->o->block_size);
		pthread_mutex_lock(&w->lock);
		for (int i = w->next; i < w->n_docs; i++)
			w->docs[i].error = CORUN_EXIT_RUNTIME;
		w->next = w->n_docs;
		pthread_mutex_unlock(&w->lock);
		return NULL;
	}
	for (;;) {
		int i;

		pthread_mutex_lock(&w->lock);
		i = w->next < w->n_docs ? w->next++ : -1;
		pthread_mutex_unlock(&w->lock);
		if (i < 0)
			break;
		read_document(w->o, &w->docs[i], buf);
	}
	free(buf);
	return NULL;
}

static double cosine(const uint32_t *a, const uint32_t *b)
{
	double dot = 0, na = 0, nb = 0;

	for (uint32_t i = 0; i < BUCKETS; i++) {
		dot += (double)a[i] * (double)b[i];
		na += (double)a[i] * (double)a[i];
		nb += (double)b[i] * (double)b[i];
	}
	if (na == 0 || nb == 0)
		return 0.0;
	return dot / (sqrt(na) * sqrt(nb));
}

static void print_result(const struct options *o, const struct document *docs, int n_docs,
			 const double *sim, double self_sim, double elapsed_s, int argc,
			 char *argv[], double start_epoch_s)
{
	struct corun_json j;
	int64_t bytes = 0;
	double sum = 0, read_s = 0;

	for (int i = 0; i < n_docs; i++) {
		bytes += docs[i].bytes_read;
		read_s += docs[i].read_s;
	}
	corun_json_result_begin(&j, PROG, PAPER_SIMILAR_VERSION, argc, argv, start_epoch_s);
	corun_json_object_begin(&j, "params");
	corun_json_str(&j, "paper", o->paper);
	corun_json_array_begin(&j, "others");
	for (int i = 0; i < o->n_others; i++)
		corun_json_str(&j, NULL, o->others[i]);
	corun_json_array_end(&j);
	corun_json_int(&j, "threads", o->threads);
	corun_json_int(&j, "block_size", o->block_size);
	corun_json_str(&j, "cache_mode", cache_mode_names[o->cache_mode]);
	corun_json_object_end(&j);
	corun_json_int(&j, "others", o->n_others);
	corun_json_array_begin(&j, "words");
	for (int i = 0; i < n_docs; i++)
		corun_json_int(&j, NULL, docs[i].words);
	corun_json_array_end(&j);
	corun_json_array_begin(&j, "similarity");
	for (int i = 0; i < o->n_others; i++) {
		corun_json_double(&j, NULL, sim[i]);
		sum += sim[i];
	}
	corun_json_array_end(&j);
	corun_json_double(&j, "mean_similarity", sum / o->n_others);
	corun_json_double(&j, "self_similarity", self_sim);
	corun_json_int(&j, "bytes_read", bytes);
	corun_json_double(&j, "read_s", read_s);
	corun_json_double(&j, "elapsed_s", elapsed_s);
	/* MB = 10^6 bytes, as in the paper; null if too fast to time. */
	corun_json_double(&j, "bw_mb_s", (double)bytes / 1e6 / elapsed_s);
	corun_json_result_end(&j);
}

int main(int argc, char *argv[])
{
	double start_epoch_s = corun_epoch_s();
	struct options o;
	struct work w = { 0 };
	struct document docs[OTHERS_MAX + 1];
	double sim[OTHERS_MAX];
	pthread_t tids[THREADS_MAX];
	int64_t started = 0;
	double t0, self_sim;
	int rc = CORUN_EXIT_RUNTIME;
	int n_docs;

	parse_options(argc, argv, &o);
	n_docs = o.n_others + 1;
	memset(docs, 0, sizeof(docs));
	for (int i = 0; i < n_docs; i++) {
		docs[i].path = i == 0 ? o.paper : o.others[i - 1];
		docs[i].counts = calloc(BUCKETS, sizeof(uint32_t));
		if (docs[i].counts == NULL) {
			corun_err(PROG, "cannot allocate the word vectors");
			goto out;
		}
	}
	w.o = &o;
	w.docs = docs;
	w.n_docs = n_docs;
	pthread_mutex_init(&w.lock, NULL);

	t0 = corun_monotonic_s();
	for (; started < o.threads; started++) {
		int err = pthread_create(&tids[started], NULL, worker, &w);

		if (err != 0) {
			corun_err(PROG, "pthread_create: %s", strerror(err));
			break;
		}
	}
	for (int64_t i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	pthread_mutex_destroy(&w.lock);
	if (started < o.threads)
		goto out;
	for (int i = 0; i < n_docs; i++)
		if (docs[i].error != 0)
			goto out;
	for (int i = 0; i < o.n_others; i++)
		sim[i] = cosine(docs[0].counts, docs[i + 1].counts);
	self_sim = cosine(docs[0].counts, docs[0].counts);
	t0 = corun_monotonic_s() - t0;

	/* Self-check: a paper with words is identical to itself, and every
	 * similarity of count vectors lies in [0, 1]. */
	if (docs[0].words > 0 && fabs(self_sim - 1.0) > SELF_TOLERANCE) {
		corun_err(PROG,
			  "self-check failed: similarity of '%s' with "
			  "itself is %.17g, not 1",
			  o.paper, self_sim);
		goto out;
	}
	for (int i = 0; i < o.n_others; i++) {
		if (!(sim[i] >= 0.0 && sim[i] <= 1.0 + SELF_TOLERANCE)) {
			corun_err(PROG,
				  "self-check failed: similarity %.17g "
				  "with '%s' is outside [0, 1]",
				  sim[i], o.others[i]);
			goto out;
		}
	}
	print_result(&o, docs, n_docs, sim, self_sim, t0, argc, argv, start_epoch_s);
	rc = corun_flush_result(PROG) == 0 ? CORUN_EXIT_OK : CORUN_EXIT_RUNTIME;
out:
	for (int i = 0; i < n_docs; i++)
		free(docs[i].counts);
	return rc;
}
