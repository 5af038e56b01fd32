/* sais_inmem: the strip files, and one application's reader threads and
 * assembler. */
#include "sais_inmem.h"

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
int make_files(const struct options *o, int *fds)
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

void remove_files(const struct options *o, int *fds)
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
int run_app(struct ctx *c)
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
