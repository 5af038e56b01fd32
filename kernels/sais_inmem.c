/* sais_inmem: the in-memory study of paper 004 (SAIs), section 6, Figs. 13-14.
 *
 * One application reads strips of --strip-size bytes round-robin from
 * --files files in memory (tmpfs stands in for the paper's RAM disk), as a
 * parallel file system's servers would return them, and assembles them into
 * requests of --request-size bytes.  A reader and an assembler share a ring
 * of strip slots in shared memory (POSIX semaphores hand the slots over):
 *
 *   --mode thread   Si-SAIs: the reader and the assembler are two threads of
 *                   one process, pinned to one CPU (--pin auto), so a strip
 *                   is consumed where it was read;
 *   --mode process  Si-Irqbalance: the same work in two processes, free to
 *                   run on different CPUs, so a strip usually moves between
 *                   the caches of two cores.
 *
 * --apps N runs N such applications at once (the paper sweeps them to the
 * core count).  Each assembled request is checked word by word against the
 * pattern the files were written with, so the kernel checks its own data.
 * Prints one JSON object on one line.
 */
#define _GNU_SOURCE

#include "corun_kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROG "sais_inmem"
#define SAIS_INMEM_VERSION "1.0.0"

#define APPS_MAX 256
#define FILES_MAX 256
#define SLOTS_MAX 1024
#define CPU_MAX 64
#define STRIP_MIN 4096
#define STRIP_MAX (INT64_C(16) << 20)
#define REQUEST_MAX (INT64_C(1) << 30)
#define FILE_SIZE_MAX (INT64_C(1) << 34)
#define PATTERN_MUL UINT64_C(0x9e3779b97f4a7c15)
#define PATTERN_XOR UINT64_C(0x5a1500000000c0de)

enum mode { MODE_THREAD, MODE_PROCESS };
enum pin { PIN_AUTO, PIN_SAME, PIN_NONE };

static const char *const mode_names[] = { "thread", "process" };
static const char *const pin_names[] = { "auto", "same", "none" };

struct options {
	enum mode mode;
	enum pin pin;
	int64_t apps;
	int64_t files;
	int64_t strip;
	int64_t request;
	int64_t file_size;
	int64_t slots;
	double duration_s;
	double warmup_s;
	const char *dir;
	bool keep_files;
};

/* What one worker (reader or assembler) did while the measurement ran. */
struct worker_stats {
	double user_s;
	double sys_s;
	int64_t strips;
	int64_t on_cpu[CPU_MAX]; /* strips handled per CPU (sched_getcpu) */
	int64_t on_cpu_other;    /* CPUs >= CPU_MAX */
};

/* One application's shared region (MAP_SHARED, so a forked reader sees it);
 * the slot data follows the header. */
struct app {
	sem_t empty;
	sem_t full;
	atomic_int stop;
	atomic_int measuring;
	int cpu;          /* pinned CPU, or -1 */
	int64_t bytes;    /* assembled while measuring */
	int64_t requests; /* assembled while measuring */
	int64_t same_cpu; /* strips consumed on the CPU that read them */
	double measured_s;
	struct worker_stats reader;
	struct worker_stats assembler;
	int failed; /* 0 ok, else CORUN_EXIT_RUNTIME */
	char error[256];
	/* per slot: logical strip index and reading CPU, then data */
};

struct slot_head {
	int64_t strip;
	int32_t cpu;
	int32_t pad;
};

struct ctx {
	const struct options *o;
	struct app *a;
	int fds[FILES_MAX];
	size_t slot_bytes;
};

/* clang-format off */
static const char usage_text[] =
	"Usage: " PROG " [OPTION]...\n"
	"The in-memory study of paper 004 (section 6): strips read round-robin\n"
	"from files in memory are assembled into requests by a reader and an\n"
	"assembler, as two threads of one process on one CPU (Si-SAIs) or as two\n"
	"processes free to run anywhere (Si-Irqbalance).  Prints one JSON object.\n"
	"\n"
	"  --mode MODE          thread (Si-SAIs, default) or process (Si-Irqbalance)\n"
	"  --pin PIN            auto (default: same for thread, none for process),\n"
	"                       same (both workers of an application on CPU\n"
	"                       app mod online CPUs) or none\n"
	"  --apps N             concurrent applications, 1 to 256 (default 1)\n"
	"  --files N            files the strips come from (the servers), 1 to 256\n"
	"                       (default 8)\n"
	"  --strip-size BYTES   bytes per strip, 4K to 16M, a multiple of 8;\n"
	"                       K/M/G = KiB/MiB/GiB (default 64K, as in the paper)\n"
	"  --request-size BYTES bytes per request, a multiple of the strip size, up\n"
	"                       to 1G (default 1M, as in the paper)\n"
	"  --file-size BYTES    bytes per file, a multiple of the strip size\n"
	"                       (default 4M)\n"
	"  --slots N            strip slots between reader and assembler, 1 to\n"
	"                       1024 (default: strips per request)\n"
	"  --duration-s S       measured seconds per application, > 0 to 3600\n"
	"                       (default 2)\n"
	"  --warmup-s S         seconds run and discarded first, 0 to 3600\n"
	"                       (default 0.2)\n"
	"  --dir PATH           where the files are made; tmpfs stands in for the\n"
	"                       RAM disk (default /dev/shm)\n"
	"  --keep-files         leave the files (default: removed at the end)\n"
	CORUN_USAGE_HELP_VERSION("            ")
	"\n"
	"Bandwidth is in MB (10^6 bytes) per second, as in the paper.  Cache misses\n"
	"come from perf_event_open where the PMU exists, else they are null with\n"
	"the reason.\n"
	CORUN_USAGE_EXIT_STATUS("self-check") ".\n";
/* clang-format on */

static void parse_options(int argc, char *argv[], struct options *o)
{
	static const struct option long_options[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "pin", required_argument, NULL, 'p' },
		{ "apps", required_argument, NULL, 'a' },
		{ "files", required_argument, NULL, 'f' },
		{ "strip-size", required_argument, NULL, 's' },
		{ "request-size", required_argument, NULL, 'r' },
		{ "file-size", required_argument, NULL, 'z' },
		{ "slots", required_argument, NULL, 'l' },
		{ "duration-s", required_argument, NULL, 'd' },
		{ "warmup-s", required_argument, NULL, 'w' },
		{ "dir", required_argument, NULL, 'D' },
		{ "keep-files", no_argument, NULL, 'k' },
		CORUN_COMMON_LONG_OPTIONS,
	};
	int c;

	*o = (struct options){
		.mode = MODE_THREAD,
		.pin = PIN_AUTO,
		.apps = 1,
		.files = 8,
		.strip = 65536,
		.request = 1048576,
		.file_size = 4194304,
		.slots = 0,
		.duration_s = 2.0,
		.warmup_s = 0.2,
		.dir = "/dev/shm",
		.keep_files = false,
	};
	while ((c = corun_getopt(argc, argv, "+:h", long_options)) != -1) {
		switch (c) {
		case 'm':
			if (strcmp(optarg, "thread") == 0)
				o->mode = MODE_THREAD;
			else if (strcmp(optarg, "process") == 0)
				o->mode = MODE_PROCESS;
			else
				corun_usage_error(PROG,
						  "--mode: '%s' (expected "
						  "thread or process)",
						  optarg);
			break;
		case 'p':
			if (strcmp(optarg, "auto") == 0)
				o->pin = PIN_AUTO;
			else if (strcmp(optarg, "same") == 0)
				o->pin = PIN_SAME;
			else if (strcmp(optarg, "none") == 0)
				o->pin = PIN_NONE;
			else
				corun_usage_error(PROG,
						  "--pin: '%s' (expected "
						  "auto, same or none)",
						  optarg);
			break;
		case 'a':
			o->apps = corun_parse_int(PROG, "apps", optarg, 1, APPS_MAX, false);
			break;
		case 'f':
			o->files = corun_parse_int(PROG, "files", optarg, 1, FILES_MAX, false);
			break;
		case 's':
			o->strip = corun_parse_int(PROG, "strip-size", optarg, STRIP_MIN, STRIP_MAX,
						   true);
			if (o->strip % 8)
				corun_usage_error(PROG,
						  "--strip-size: '%s' "
						  "(expected a multiple of 8)",
						  optarg);
			break;
		case 'r':
			o->request = corun_parse_int(PROG, "request-size", optarg, STRIP_MIN,
						     REQUEST_MAX, true);
			break;
		case 'z':
			o->file_size = corun_parse_int(PROG, "file-size", optarg, STRIP_MIN,
						       FILE_SIZE_MAX, true);
			break;
		case 'l':
			o->slots = corun_parse_int(PROG, "slots", optarg, 1, SLOTS_MAX, false);
			break;
		case 'd':
			o->duration_s =
				corun_parse_double(PROG, "duration-s", optarg, 0.0, 3600.0, true);
			break;
		case 'w':
			o->warmup_s =
				corun_parse_double(PROG, "warmup-s", optarg, 0.0, 3600.0, false);
			break;
		case 'D': o->dir = optarg; break;
		case 'k': o->keep_files = true; break;
		default: corun_default_option(PROG, SAIS_INMEM_VERSION, usage_text, c, argv);
		}
	}
	corun_no_operands(PROG, argc, argv);
	if (o->request % o->strip)
		corun_usage_error(PROG,
				  "--request-size: '%" PRId64 "' (expected "
				  "a multiple of --strip-size %" PRId64 ")",
				  o->request, o->strip);
	if (o->file_size % o->strip)
		corun_usage_error(PROG,
				  "--file-size: '%" PRId64 "' (expected "
				  "a multiple of --strip-size %" PRId64 ")",
				  o->file_size, o->strip);
	if (o->slots == 0) {
		int64_t s = o->request / o->strip;

		o->slots = s < SLOTS_MAX ? s : SLOTS_MAX;
	}
	if (o->pin == PIN_AUTO)
		o->pin = o->mode == MODE_THREAD ? PIN_SAME : PIN_NONE;
}

/* The value of the 8-byte word at logical byte offset OFF. */
static inline uint64_t pattern(uint64_t off)
{
	return (off * PATTERN_MUL) ^ PATTERN_XOR;
}

static void file_path(char *buf, size_t n, const char *dir, int i)
{
	snprintf(buf, n, "%s/" PROG ".%ld.%d", dir, (long)getpid(), i);
}

/* Write the files: logical strip s lives in file s mod F at offset
 * (s / F) * strip, as a striped file on F servers. */
static int make_files(const struct options *o, int *fds)
{
	size_t strip = (size_t)o->strip;
	uint64_t *buf = malloc(strip);
	int64_t per_file = o->file_size / o->strip;
	char path[4096];

	if (buf == NULL) {
		corun_err(PROG, "cannot allocate a strip buffer");
		return -1;
	}
	for (int f = 0; f < (int)o->files; f++)
		fds[f] = -1;
	for (int f = 0; f < (int)o->files; f++) {
		file_path(path, sizeof(path), o->dir, f);
		fds[f] = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fds[f] < 0) {
			corun_err(PROG, "cannot create '%s': %s", path, strerror(errno));
			free(buf);
			return -1;
		}
		for (int64_t k = 0; k < per_file; k++) {
			uint64_t s = (uint64_t)(k * o->files + f);
			uint64_t base = s * (uint64_t)strip;
			ssize_t w;

			for (size_t i = 0; i < strip / 8; i++)
				buf[i] = pattern(base + 8 * i);
			w = pwrite(fds[f], buf, strip, (off_t)(k * o->strip));
			if (w != (ssize_t)strip) {
				corun_err(PROG, "cannot write '%s': %s", path,
					  w < 0 ? strerror(errno)
						: "short write (is the file system full?)");
				free(buf);
				return -1;
			}
		}
	}
	free(buf);
	return 0;
}

static void remove_files(const struct options *o, int *fds)
{
	char path[4096];

	for (int f = 0; f < (int)o->files; f++) {
		if (fds[f] >= 0)
			close(fds[f]);
		if (!o->keep_files) {
			file_path(path, sizeof(path), o->dir, f);
			unlink(path);
		}
	}
}

static struct slot_head *slot_at(const struct ctx *c, int64_t n)
{
	char *base = (char *)(c->a + 1);

	return (struct slot_head *)(base + (size_t)(n % c->o->slots) * c->slot_bytes);
}

static void note_cpu(struct worker_stats *w, int cpu)
{
	if (cpu >= 0 && cpu < CPU_MAX)
		w->on_cpu[cpu]++;
	else
		w->on_cpu_other++;
}

static void rusage_thread(double *user_s, double *sys_s)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	*user_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
	*sys_s = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void pin_self(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET((size_t)cpu, &set);
	sched_setaffinity(0, sizeof(set), &set); /* this thread only */
}

static void sem_wait_intr(sem_t *s)
{
	while (sem_wait(s) != 0 && errno == EINTR)
		;
}

static void fail(struct app *a, const char *fmt, const char *arg)
{
	if (!a->failed) {
		a->failed = CORUN_EXIT_RUNTIME;
		snprintf(a->error, sizeof(a->error), fmt, arg);
	}
	atomic_store(&a->stop, 1);
}

/* The reader: the servers' data arriving, strip after strip. */
static void *reader(void *arg)
{
	struct ctx *c = arg;
	const struct options *o = c->o;
	struct app *a = c->a;
	int64_t logical = o->files * (o->file_size / o->strip);
	double u0 = 0, s0 = 0, u1, s1;
	bool counting = false;

	pin_self(a->cpu);
	for (int64_t n = 0;; n++) {
		struct slot_head *h;
		int64_t s = n % logical;
		ssize_t r;
		int cpu;

		sem_wait_intr(&a->empty);
		if (atomic_load(&a->stop))
			break;
		if (!counting && atomic_load(&a->measuring)) {
			counting = true;
			rusage_thread(&u0, &s0);
		}
		h = slot_at(c, n);
		r = pread(c->fds[s % o->files], h + 1, (size_t)o->strip,
			  (off_t)((s / o->files) * o->strip));
		if (r != (ssize_t)o->strip) {
			fail(a, "read of a strip failed: %s",
			     r < 0 ? strerror(errno) : "short read");
			sem_post(&a->full);
			break;
		}
		cpu = sched_getcpu();
		h->strip = s;
		h->cpu = cpu;
		if (counting) {
			a->reader.strips++;
			note_cpu(&a->reader, cpu);
		}
		sem_post(&a->full);
	}
	rusage_thread(&u1, &s1);
	if (counting) {
		a->reader.user_s = u1 - u0;
		a->reader.sys_s = s1 - s0;
	}
	return NULL;
}

/* Check one assembled request word by word; the first strip is FIRST. */
static int64_t check_request(const uint64_t *req, int64_t first, int64_t per_req, int64_t logical,
			     size_t strip)
{
	for (int64_t k = 0; k < per_req; k++) {
		uint64_t s = (uint64_t)((first + k) % logical);
		const uint64_t *w = req + (size_t)k * strip / 8;
		uint64_t base = s * strip;

		for (size_t i = 0; i < strip / 8; i++)
			if (w[i] != pattern(base + 8 * i))
				return (int64_t)(base + 8 * i);
	}
	return -1;
}

/* The assembler: the consuming application. */
static void assembler(struct ctx *c)
{
	const struct options *o = c->o;
	struct app *a = c->a;
	int64_t per_req = o->request / o->strip;
	int64_t logical = o->files * (o->file_size / o->strip);
	uint64_t *req = aligned_alloc(64, (size_t)o->request);
	double t0, t_meas = 0, u0 = 0, s0 = 0, u1, s1;
	bool measuring = false;

	pin_self(a->cpu);
	if (req == NULL) {
		fail(a, "%s", "cannot allocate the request buffer");
		sem_post(&a->empty);
		return;
	}
	t0 = corun_monotonic_s();
	for (int64_t n = 0;; n++) {
		struct slot_head *h;
		int64_t k = n % per_req;
		int cpu;

		sem_wait_intr(&a->full);
		if (atomic_load(&a->stop))
			break;
		h = slot_at(c, n);
		memcpy((char *)req + (size_t)(k * o->strip), h + 1, (size_t)o->strip);
		cpu = sched_getcpu();
		if (measuring) {
			a->assembler.strips++;
			note_cpu(&a->assembler, cpu);
			if (cpu == h->cpu)
				a->same_cpu++;
		}
		if (h->strip != (n % logical)) {
			fail(a, "%s", "self-check failed: a strip arrived out of order");
			break;
		}
		sem_post(&a->empty);
		if (k == per_req - 1) {
			int64_t bad = check_request(req, n - k, per_req, logical, (size_t)o->strip);
			double now;

			if (bad >= 0) {
				char where[64];

				snprintf(where, sizeof(where), "%" PRId64, bad);
				fail(a,
				     "self-check failed: assembled data differs "
				     "at logical byte %s",
				     where);
				break;
			}
			now = corun_monotonic_s();
			if (measuring) {
				a->requests++;
				a->bytes += o->request;
				if (now - t_meas >= o->duration_s) {
					a->measured_s = now - t_meas;
					break;
				}
			} else if (now - t0 >= o->warmup_s) {
				measuring = true;
				t_meas = now;
				rusage_thread(&u0, &s0);
				atomic_store(&a->measuring, 1);
			}
		}
	}
	rusage_thread(&u1, &s1);
	a->assembler.user_s = u1 - u0;
	a->assembler.sys_s = s1 - s0;
	atomic_store(&a->stop, 1);
	sem_post(&a->empty); /* wake the reader so it sees stop */
	free(req);
}

/* One application, in its own process: returns its exit code. */
static int run_app(struct ctx *c)
{
	if (c->o->mode == MODE_THREAD) {
		pthread_t t;
		int err = pthread_create(&t, NULL, reader, c);

		if (err != 0) {
			fail(c->a, "pthread_create: %s", strerror(err));
			return CORUN_EXIT_RUNTIME;
		}
		assembler(c);
		pthread_join(t, NULL);
	} else {
		pid_t pid = fork();
		int st;

		if (pid < 0) {
			fail(c->a, "fork: %s", strerror(errno));
			return CORUN_EXIT_RUNTIME;
		}
		if (pid == 0) {
			reader(c);
			_exit(0);
		}
		assembler(c);
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			fail(c->a, "%s", "the reader process failed");
	}
	return c->a->failed ? CORUN_EXIT_RUNTIME : CORUN_EXIT_OK;
}

/* Cache misses of this process and its descendants (inherit), or -1 with
 * the reason in WHY. */
static int open_cache_misses(char *why, size_t n)
{
	struct perf_event_attr pe;
	long fd;

	memset(&pe, 0, sizeof(pe));
	pe.type = PERF_TYPE_HARDWARE;
	pe.size = sizeof(pe);
	pe.config = PERF_COUNT_HW_CACHE_MISSES;
	pe.disabled = 1;
	pe.inherit = 1;
	pe.exclude_hv = 1;
	fd = syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0);
	if (fd < 0) {
		snprintf(why, n,
			 "perf_event_open(PERF_COUNT_HW_CACHE_MISSES): "
			 "%s%s",
			 strerror(errno),
			 errno == ENOENT || errno == EOPNOTSUPP
				 ? " (no hardware PMU, e.g. a VM without a virtual PMU)"
				 : "");
		return -1;
	}
	return (int)fd;
}

static void worker_json(struct corun_json *j, const char *key, const struct worker_stats *w,
			double measured_s)
{
	corun_json_object_begin(j, key);
	corun_json_double(j, "user_s", w->user_s);
	corun_json_double(j, "sys_s", w->sys_s);
	corun_json_double(j, "cpu_util_pct",
			  measured_s > 0 ? (w->user_s + w->sys_s) / measured_s * 100 : 0);
	corun_json_int(j, "strips", w->strips);
	corun_json_object_begin(j, "strips_per_cpu");
	for (int i = 0; i < CPU_MAX; i++) {
		char k[16];

		if (w->on_cpu[i] == 0)
			continue;
		snprintf(k, sizeof(k), "%d", i);
		corun_json_int(j, k, w->on_cpu[i]);
	}
	if (w->on_cpu_other)
		corun_json_int(j, "other", w->on_cpu_other);
	corun_json_object_end(j);
	corun_json_object_end(j);
}

int main(int argc, char *argv[])
{
	double start_epoch_s = corun_epoch_s();
	struct options o;
	int fds[FILES_MAX];
	struct app *apps[APPS_MAX] = { 0 };
	pid_t pids[APPS_MAX];
	size_t slot_bytes, region;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int rc = CORUN_EXIT_RUNTIME;
	int perf_fd;
	char perf_why[256] = "";
	int64_t started = 0;
	uint64_t misses = 0;
	bool have_misses = false;
	double bw = 0, user = 0, sys = 0, measured = 0;
	int64_t bytes = 0, requests = 0, strips = 0, same = 0;
	int64_t cpus_ran[CPU_MAX] = { 0 };
	struct corun_json j;

	parse_options(argc, argv, &o);
	if (ncpu < 1)
		ncpu = 1;
	if (make_files(&o, fds) != 0) {
		remove_files(&o, fds);
		return CORUN_EXIT_RUNTIME;
	}
	slot_bytes = sizeof(struct slot_head) + (size_t)o.strip;
	slot_bytes = (slot_bytes + 63) & ~(size_t)63;
	region = sizeof(struct app) + 64 + (size_t)o.slots * slot_bytes;
	for (int64_t i = 0; i < o.apps; i++) {
		void *p = mmap(NULL, region, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
			       0);

		if (p == MAP_FAILED) {
			corun_err(PROG, "mmap of %zu bytes: %s", region, strerror(errno));
			goto out;
		}
		apps[i] = p;
		memset(p, 0, sizeof(struct app));
		if (sem_init(&apps[i]->empty, 1, (unsigned)o.slots) != 0 ||
		    sem_init(&apps[i]->full, 1, 0) != 0) {
			corun_err(PROG, "sem_init: %s", strerror(errno));
			goto out;
		}
		apps[i]->cpu = o.pin == PIN_SAME ? (int)(i % ncpu) : -1;
	}
	perf_fd = open_cache_misses(perf_why, sizeof(perf_why));
	if (perf_fd >= 0)
		ioctl(perf_fd, PERF_EVENT_IOC_ENABLE, 0);
	fflush(NULL);
	for (; started < o.apps; started++) {
		pid_t pid = fork();

		if (pid < 0) {
			corun_err(PROG, "fork: %s", strerror(errno));
			break;
		}
		if (pid == 0) {
			struct ctx c = { .o = &o, .a = apps[started], .slot_bytes = slot_bytes };

			memcpy(c.fds, fds, sizeof(fds));
			_exit(run_app(&c));
		}
		pids[started] = pid;
	}
	rc = started == o.apps ? CORUN_EXIT_OK : CORUN_EXIT_RUNTIME;
	for (int64_t i = 0; i < started; i++) {
		int st;

		while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			corun_err(PROG, "application %" PRId64 ": %s", i,
				  apps[i]->error[0] ? apps[i]->error : "ended abnormally");
			rc = CORUN_EXIT_RUNTIME;
		}
	}
	if (perf_fd >= 0) {
		ioctl(perf_fd, PERF_EVENT_IOC_DISABLE, 0);
		have_misses = read(perf_fd, &misses, sizeof(misses)) == (ssize_t)sizeof(misses);
		if (!have_misses)
			snprintf(perf_why, sizeof(perf_why),
				 "reading the "
				 "counter failed: %s",
				 strerror(errno));
		close(perf_fd);
	}
	if (rc != CORUN_EXIT_OK)
		goto out;

	for (int64_t i = 0; i < o.apps; i++) {
		const struct app *a = apps[i];

		if (a->measured_s <= 0 || a->requests == 0) {
			corun_err(PROG,
				  "application %" PRId64 " assembled no "
				  "request in the measured time",
				  i);
			rc = CORUN_EXIT_RUNTIME;
			goto out;
		}
		bw += (double)a->bytes / 1e6 / a->measured_s;
		bytes += a->bytes;
		requests += a->requests;
		strips += a->assembler.strips;
		same += a->same_cpu;
		measured += a->measured_s / (double)o.apps;
		user += a->reader.user_s + a->assembler.user_s;
		sys += a->reader.sys_s + a->assembler.sys_s;
		for (int c = 0; c < CPU_MAX; c++)
			cpus_ran[c] += a->reader.on_cpu[c] + a->assembler.on_cpu[c];
	}

	corun_json_begin(&j, stdout);
	corun_json_header(&j, PROG, SAIS_INMEM_VERSION, argc, argv, start_epoch_s);
	corun_json_str(&j, "mode", mode_names[o.mode]);
	corun_json_str(&j, "stands_for", o.mode == MODE_THREAD ? "Si-SAIs" : "Si-Irqbalance");
	corun_json_str(&j, "pin", pin_names[o.pin]);
	corun_json_int(&j, "apps", o.apps);
	corun_json_int(&j, "files", o.files);
	corun_json_int(&j, "strip_size_bytes", o.strip);
	corun_json_int(&j, "request_size_bytes", o.request);
	corun_json_int(&j, "file_size_bytes", o.file_size);
	corun_json_int(&j, "slots", o.slots);
	corun_json_str(&j, "dir", o.dir);
	corun_json_double(&j, "duration_s", o.duration_s);
	corun_json_double(&j, "warmup_s", o.warmup_s);
	corun_json_int(&j, "online_cpus", ncpu);
	corun_json_double(&j, "measured_s", measured);
	corun_json_int(&j, "bytes", bytes);
	corun_json_int(&j, "requests", requests);
	corun_json_int(&j, "strips", strips);
	corun_json_double(&j, "bw_mb_s", bw);
	corun_json_double(&j, "cpu_util_user_pct", user / (measured * (double)ncpu) * 100);
	corun_json_double(&j, "cpu_util_sys_pct", sys / (measured * (double)ncpu) * 100);
	corun_json_double(&j, "same_cpu_share", strips ? (double)same / (double)strips : 0);
	corun_json_object_begin(&j, "strips_per_cpu");
	for (int c = 0; c < CPU_MAX; c++) {
		char k[16];

		if (cpus_ran[c] == 0)
			continue;
		snprintf(k, sizeof(k), "%d", c);
		corun_json_int(&j, k, cpus_ran[c]);
	}
	corun_json_object_end(&j);
	if (have_misses)
		corun_json_int(&j, "cache_misses", (int64_t)misses);
	else
		corun_json_null(&j, "cache_misses");
	corun_json_str(&j, "cache_misses_missing", have_misses ? "" : perf_why);
	corun_json_null(&j, "l2_misses");
	corun_json_str(&j, "l2_misses_missing",
		       have_misses ? "perf_event_open has no generic L2 event; count the "
				     "CPU's own (l2_rqsts.miss, l2_cache_req_stat) with perf stat"
				   : perf_why);
	corun_json_array_begin(&j, "per_app");
	for (int64_t i = 0; i < o.apps; i++) {
		const struct app *a = apps[i];

		corun_json_object_begin(&j, NULL);
		corun_json_int(&j, "cpu", a->cpu);
		corun_json_double(&j, "bw_mb_s", (double)a->bytes / 1e6 / a->measured_s);
		corun_json_double(&j, "measured_s", a->measured_s);
		corun_json_int(&j, "requests", a->requests);
		corun_json_double(&j, "same_cpu_share",
				  a->assembler.strips
					  ? (double)a->same_cpu / (double)a->assembler.strips
					  : 0);
		worker_json(&j, "reader", &a->reader, a->measured_s);
		worker_json(&j, "assembler", &a->assembler, a->measured_s);
		corun_json_object_end(&j);
	}
	corun_json_array_end(&j);
	corun_json_str(&j, "check", "ok");
	corun_json_end(&j);
	rc = corun_flush_result(PROG) == 0 ? CORUN_EXIT_OK : CORUN_EXIT_RUNTIME;
out:
	for (int64_t i = 0; i < o.apps; i++)
		if (apps[i] != NULL)
			munmap(apps[i], region);
	remove_files(&o, fds);
	return rc;
}
