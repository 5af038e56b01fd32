/* The FUSE front end: one image file in memory, every request completed at
 * the time the model gives it.
 *
 * Threads: the main thread receives FUSE requests (ppoll on the session's
 * file descriptor, so that signals, which only set flags, are never lost)
 * and queues reads and writes; the dispatcher thread asks the model which
 * queued request the actuator serves next, sleeps until its completion time
 * on the virtual clock (CLOCK_MONOTONIC since start, absolute sleeps) and
 * replies, recording how late the reply was against the model.
 */
#define _GNU_SOURCE
#define FUSE_USE_VERSION 34
#include "serve.h"

#include "corun_kernel.h"
#include "report.h"

#include <errno.h>
#include <fuse_lowlevel.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ROOT_INO 1
#define FILE_INO 2
#define LATE_BIN_US 10
#define LATE_BINS 200000 /* 10 us bins up to 2 s; beyond, the last bin */

struct sreq {
	struct rd_req r;
	fuse_req_t freq; /* NULL for the destage of an acknowledged write */
};

struct server {
	const struct rd_config *c;
	struct rd_model m;
	unsigned char *image;
	struct fuse_session *se;
	pthread_t dispatcher;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct sreq **pending; /* oldest first */
	size_t npend, cap;
	bool stop;
	uint64_t dirty;
	double t0_mono_s;
	double start_epoch_s;
	/* counters, under mu */
	uint64_t reads, writes, bytes_read, bytes_written, seeks, hits, streamed, acked;
	uint64_t errors;
	double busy_ms;
	uint64_t *late_hist;
	uint64_t late_n;
	double late_max_ms;
	int rt_priority; /* in effect: 0 normal scheduling */
	bool untimed;    /* --untimed-start, until SIGUSR2 */
	uint64_t untimed_requests, untimed_bytes;
	char rt_error[128]; /* why the requested priority was refused */
};

static volatile sig_atomic_t g_stop_signal;
static volatile sig_atomic_t g_dump;
static volatile sig_atomic_t g_timed;

static void on_stop(int sig)
{
	g_stop_signal = sig;
}

static void on_dump(int sig)
{
	(void)sig;
	g_dump = 1;
}

static void on_timed(int sig)
{
	(void)sig;
	g_timed = 1;
}

static double now_ms(const struct server *s)
{
	return (corun_monotonic_s() - s->t0_mono_s) * 1e3;
}

static void sleep_until_ms(const struct server *s, double t_ms)
{
	double abs_s = s->t0_mono_s + t_ms / 1e3;
	struct timespec ts;

	if (abs_s <= 0)
		return;
	ts.tv_sec = (time_t)abs_s;
	ts.tv_nsec = (long)((abs_s - (double)ts.tv_sec) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* ---- the queue ---------------------------------------------------------- */

static int enqueue(struct server *s, struct sreq *q)
{
	pthread_mutex_lock(&s->mu);
	if (s->stop) {
		pthread_mutex_unlock(&s->mu);
		return -1;
	}
	if (s->npend == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct sreq **np = realloc(s->pending, cap * sizeof(*np));

		if (!np) {
			pthread_mutex_unlock(&s->mu);
			return -1;
		}
		s->pending = np;
		s->cap = cap;
	}
	q->r.arrival_ms = now_ms(s);
	s->pending[s->npend++] = q;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

static void record_late(struct server *s, double late_ms)
{
	size_t bin;

	if (late_ms < 0)
		late_ms = 0;
	bin = (size_t)(late_ms * 1e3 / LATE_BIN_US);
	if (bin >= LATE_BINS)
		bin = LATE_BINS - 1;
	s->late_hist[bin]++;
	s->late_n++;
	if (late_ms > s->late_max_ms)
		s->late_max_ms = late_ms;
}

static void reply(struct server *s, struct sreq *q)
{
	if (!q->freq)
		return;
	if (q->r.write)
		fuse_reply_write(q->freq, q->r.length);
	else
		fuse_reply_buf(q->freq, (const char *)s->image + q->r.offset, q->r.length);
}

static void *dispatch(void *arg)
{
	struct server *s = arg;
	struct rd_req **view = NULL;
	size_t view_cap = 0;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		struct sreq *q;
		size_t n, i;
		double t;

		while (s->npend == 0 && !s->stop)
			pthread_cond_wait(&s->cv, &s->mu);
		if (s->stop)
			break;
		t = s->m.busy_until;
		if (s->pending[0]->r.arrival_ms > t)
			t = s->pending[0]->r.arrival_ms;
		if (view_cap < s->npend) {
			struct rd_req **nv = realloc(view, s->cap * sizeof(*nv));

			if (!nv) {
				s->errors++;
				break;
			}
			view = nv;
			view_cap = s->cap;
		}
		for (n = 0; n < s->npend && s->pending[n]->r.arrival_ms <= t; n++)
			view[n] = &s->pending[n]->r;
		i = rd_model_pick(&s->m, view, n, t);
		q = s->pending[i];
		memmove(&s->pending[i], &s->pending[i + 1],
			(s->npend - i - 1) * sizeof(*s->pending));
		s->npend--;
		rd_model_service(&s->m, &q->r, t);
		s->busy_ms += q->r.done_ms - q->r.start_ms;
		s->seeks += q->r.how == RD_MECHANICAL && q->r.distance > 0;
		s->hits += q->r.how == RD_CACHE_HIT;
		s->streamed += q->r.how == RD_STREAM;
		pthread_mutex_unlock(&s->mu);

		/* The actuator is busy until done_ms, acknowledged or not. */
		sleep_until_ms(s, q->r.done_ms);
		reply(s, q);
		{
			double late = now_ms(s) - q->r.done_ms;

			pthread_mutex_lock(&s->mu);
			if (q->freq)
				record_late(s, late);
			if (q->r.acked)
				s->dirty -= q->r.length;
		}
		free(q);
	}
	/* Stopping: whatever is still queued fails. */
	while (s->npend) {
		struct sreq *q = s->pending[--s->npend];

		if (q->freq)
			fuse_reply_err(q->freq, EIO);
		free(q);
	}
	pthread_mutex_unlock(&s->mu);
	free(view);
	return NULL;
}

/* ---- FUSE operations ------------------------------------------------------ */

static struct server *srv(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void fill_attr(const struct server *s, fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	if (ino == ROOT_INO) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0600;
		st->st_nlink = 1;
		st->st_size = (off_t)s->c->p.size_bytes;
		st->st_blksize = RD_SECTOR;
		st->st_blocks = (blkcnt_t)(s->c->p.size_bytes / 512);
	}
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->max_background = 64;
	conn->congestion_threshold = 48;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct server *s = srv(req);
	struct fuse_entry_param e;

	if (parent != ROOT_INO || strcmp(name, s->c->name)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = FILE_INO;
	e.attr_timeout = 3600;
	e.entry_timeout = 3600;
	fill_attr(s, FILE_INO, &e.attr);
	fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (ino != ROOT_INO && ino != FILE_INO) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(srv(req), ino, &st);
	fuse_reply_attr(req, &st, 3600);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct server *s = srv(req);
	struct stat st;

	(void)fi;
	if (ino != FILE_INO) {
		fuse_reply_err(req, EPERM);
		return;
	}
	/* The image has a fixed size; other attributes are accepted and ignored. */
	if ((to_set & FUSE_SET_ATTR_SIZE) && (uint64_t)attr->st_size != s->c->p.size_bytes) {
		fuse_reply_err(req, EPERM);
		return;
	}
	fill_attr(s, ino, &st);
	fuse_reply_attr(req, &st, 3600);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != FILE_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	fi->direct_io = 1;
	fi->keep_cache = 0;
	fuse_reply_open(req, fi);
}

static struct sreq *new_req(fuse_req_t freq, uint64_t off, uint64_t len, bool write)
{
	struct sreq *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->freq = freq;
	q->r.offset = off;
	q->r.length = len;
	q->r.write = write;
	return q;
}

/* In untimed mode, count the request and return true: it is answered at once. */
static bool untimed_count(struct server *s, uint64_t len)
{
	bool untimed;

	pthread_mutex_lock(&s->mu);
	untimed = s->untimed;
	if (untimed) {
		s->untimed_requests++;
		s->untimed_bytes += len;
	}
	pthread_mutex_unlock(&s->mu);
	return untimed;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct server *s = srv(req);
	uint64_t o = (uint64_t)off, len = size;
	struct sreq *q;

	(void)fi;
	if (ino != FILE_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if (o >= s->c->p.size_bytes || len == 0) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (len > s->c->p.size_bytes - o)
		len = s->c->p.size_bytes - o;
	if (untimed_count(s, len)) {
		fuse_reply_buf(req, (const char *)s->image + o, len);
		return;
	}
	q = new_req(req, o, len, false);
	if (!q || enqueue(s, q)) {
		free(q);
		fuse_reply_err(req, EIO);
		return;
	}
	pthread_mutex_lock(&s->mu);
	s->reads++;
	s->bytes_read += len;
	pthread_mutex_unlock(&s->mu);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct server *s = srv(req);
	uint64_t o = (uint64_t)off;
	struct sreq *q;
	bool ack;

	(void)fi;
	if (ino != FILE_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if (o > s->c->p.size_bytes || size > s->c->p.size_bytes - o) {
		fuse_reply_err(req, ENOSPC);
		return;
	}
	if (size == 0) {
		fuse_reply_write(req, 0);
		return;
	}
	/* The receive buffer is reused: the data goes to the image now, the
	 * reply waits for the model. */
	memcpy(s->image + o, buf, size);
	if (untimed_count(s, size)) {
		fuse_reply_write(req, size);
		return;
	}
	pthread_mutex_lock(&s->mu);
	s->writes++;
	s->bytes_written += size;
	ack = s->c->p.write_back && s->dirty + size <= s->c->p.write_cache_bytes;
	if (ack) {
		s->dirty += size;
		s->acked++;
	}
	pthread_mutex_unlock(&s->mu);
	q = new_req(ack ? NULL : req, o, size, true);
	if (!q || enqueue(s, q)) {
		free(q);
		if (ack) {
			pthread_mutex_lock(&s->mu);
			s->dirty -= size;
			pthread_mutex_unlock(&s->mu);
		}
		fuse_reply_err(req, EIO);
		return;
	}
	q->r.acked = ack;
	if (ack)
		fuse_reply_write(req, size);
}

static void op_ok(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	op_ok(req, ino, fi);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct server *s = srv(req);
	const char *names[3] = { ".", "..", s->c->name };
	fuse_ino_t inos[3] = { ROOT_INO, ROOT_INO, FILE_INO };
	char buf[1024];
	size_t used = 0;

	(void)fi;
	if (ino != ROOT_INO) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	for (off_t i = off; i < 3; i++) {
		struct stat st;
		size_t need;

		memset(&st, 0, sizeof(st));
		st.st_ino = inos[i];
		st.st_mode = i < 2 ? S_IFDIR : S_IFREG;
		need = fuse_add_direntry(req, buf + used, sizeof(buf) - used, names[i], &st, i + 1);
		if (used + need > size || used + need > sizeof(buf))
			break;
		used += need;
	}
	fuse_reply_buf(req, buf, used);
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_ok,
	.release = op_ok,
	.fsync = op_fsync,
	.readdir = op_readdir,
};

/* ---- the state file ------------------------------------------------------ */

static double late_pct(const struct server *s, double q)
{
	uint64_t want, seen = 0;

	if (s->late_n == 0)
		return 0;
	want = (uint64_t)((double)s->late_n * q);
	if (want >= s->late_n)
		want = s->late_n - 1;
	for (size_t i = 0; i < LATE_BINS; i++) {
		seen += s->late_hist[i];
		if (seen > want) {
			double upper = (double)(i + 1) * LATE_BIN_US / 1e3;

			return upper < s->late_max_ms ? upper : s->late_max_ms;
		}
	}
	return s->late_max_ms;
}

static void write_state(struct server *s, const char *status, int argc, char *argv[])
{
	const char *path = s->c->state;
	size_t len = strlen(path) + 32;
	char *tmp = malloc(len);
	struct rusage ru;
	struct corun_json j;
	uint64_t nreq;
	double cpu_user, cpu_sys;
	FILE *f;

	if (!tmp)
		return;
	snprintf(tmp, len, "%s.tmp.%ld", path, (long)getpid());
	f = fopen(tmp, "w");
	if (!f) {
		corun_err(RD_PROG, "cannot write %s: %s", tmp, strerror(errno));
		free(tmp);
		return;
	}
	getrusage(RUSAGE_SELF, &ru);
	cpu_user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
	cpu_sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	pthread_mutex_lock(&s->mu);
	nreq = s->reads + s->writes;
	corun_json_begin(&j, f);
	corun_json_header(&j, "rotating_disk", RD_VERSION, argc, argv, s->start_epoch_s);
	corun_json_str(&j, "status", status);
	corun_json_int(&j, "pid", (int64_t)getpid());
	corun_json_str(&j, "mount", s->c->mount);
	corun_json_str(&j, "file", s->c->name);
	corun_json_double(&j, "now_epoch_s", corun_epoch_s());
	corun_json_double(&j, "uptime_s", now_ms(s) / 1e3);
	corun_json_int(&j, "rt_priority", s->rt_priority);
	corun_json_bool(&j, "timed", !s->untimed);
	if (s->rt_error[0])
		corun_json_str(&j, "rt_priority_error", s->rt_error);
	rd_json_model(&j, s->c, &s->m);
	corun_json_object_begin(&j, "counters");
	corun_json_int(&j, "requests", (int64_t)nreq);
	corun_json_int(&j, "reads", (int64_t)s->reads);
	corun_json_int(&j, "writes", (int64_t)s->writes);
	corun_json_int(&j, "writes_acknowledged_early", (int64_t)s->acked);
	corun_json_int(&j, "bytes_read", (int64_t)s->bytes_read);
	corun_json_int(&j, "bytes_written", (int64_t)s->bytes_written);
	corun_json_int(&j, "seeks", (int64_t)s->seeks);
	corun_json_int(&j, "cache_hits", (int64_t)s->hits);
	corun_json_int(&j, "streamed", (int64_t)s->streamed);
	corun_json_int(&j, "queued", (int64_t)s->npend);
	corun_json_double(&j, "busy_ms", s->busy_ms);
	corun_json_double(&j, "model_clock_ms", s->m.busy_until);
	corun_json_int(&j, "lateness_samples", (int64_t)s->late_n);
	corun_json_double(&j, "lateness_p50_ms", late_pct(s, 0.50));
	corun_json_double(&j, "lateness_p99_ms", late_pct(s, 0.99));
	corun_json_double(&j, "lateness_max_ms", s->late_max_ms);
	corun_json_double(&j, "cpu_user_s", cpu_user);
	corun_json_double(&j, "cpu_sys_s", cpu_sys);
	if (nreq)
		corun_json_double(&j, "cpu_us_per_request",
				  (cpu_user + cpu_sys) * 1e6 / (double)nreq);
	else
		corun_json_null(&j, "cpu_us_per_request");
	corun_json_int(&j, "errors", (int64_t)s->errors);
	corun_json_int(&j, "untimed_requests", (int64_t)s->untimed_requests);
	corun_json_int(&j, "untimed_bytes", (int64_t)s->untimed_bytes);
	corun_json_object_end(&j);
	pthread_mutex_unlock(&s->mu);
	corun_json_end(&j);
	if (fflush(f) || fsync(fileno(f))) {
		corun_err(RD_PROG, "cannot write %s: %s", tmp, strerror(errno));
		fclose(f);
		unlink(tmp);
	} else if (fclose(f) || rename(tmp, path)) {
		corun_err(RD_PROG, "cannot write %s: %s", path, strerror(errno));
		unlink(tmp);
	}
	free(tmp);
}

/* ---- set-up, the receive loop, teardown ---------------------------------- */

int rd_serve(const struct rd_config *c, int argc, char *argv[])
{
	struct server s;
	char err[256];
	char *fargv[] = { argv[0], "-o", "fsname=corun_rotating_disk,subtype=corun_rotating_disk",
			  NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	struct fuse_buf fbuf = { .mem = NULL };
	struct sigaction sa;
	sigset_t block, empty;
	int rc = CORUN_EXIT_RUNTIME, stage = 0;

	if (access("/dev/fuse", R_OK | W_OK)) {
		corun_err(RD_PROG, "skipped: /dev/fuse: %s (FUSE is missing or not permitted)",
			  strerror(errno));
		return CORUN_EXIT_SKIPPED;
	}
	memset(&s, 0, sizeof(s));
	s.c = c;
	s.t0_mono_s = corun_monotonic_s();
	s.start_epoch_s = corun_epoch_s();
	if (rd_model_init(&s.m, &c->p, err, sizeof(err))) {
		corun_err(RD_PROG, "model: %s", err);
		return CORUN_EXIT_USAGE;
	}
	stage = 1;
	s.late_hist = calloc(LATE_BINS, sizeof(*s.late_hist));
	s.image = mmap(NULL, c->p.size_bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (!s.late_hist || s.image == MAP_FAILED) {
		corun_err(RD_PROG, "cannot allocate the %llu-byte image: %s",
			  (unsigned long long)c->p.size_bytes, strerror(errno));
		s.image = NULL;
		goto teardown;
	}
	stage = 2;
	pthread_mutex_init(&s.mu, NULL);
	pthread_cond_init(&s.cv, NULL);

	/* Real-time scheduling before the threads start, so both inherit it. */
	if (c->rt_priority > 0) {
		struct sched_param sp = { .sched_priority = c->rt_priority };

		if (sched_setscheduler(0, SCHED_FIFO, &sp) == 0) {
			s.rt_priority = c->rt_priority;
		} else {
			snprintf(s.rt_error, sizeof(s.rt_error), "SCHED_FIFO %d refused: %s",
				 c->rt_priority, strerror(errno));
			corun_err(RD_PROG, "%s (normal scheduling)", s.rt_error);
		}
	}

	/* Signals: blocked everywhere except inside ppoll() of the main thread;
	 * the handlers only set flags. */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &block, NULL);
	sigemptyset(&empty);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = on_dump;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_timed;
	sigaction(SIGUSR2, &sa, NULL);
	s.untimed = c->untimed_start;

	s.se = fuse_session_new(&args, &ops, sizeof(ops), &s);
	if (!s.se) {
		corun_err(RD_PROG, "cannot create the FUSE session");
		goto teardown;
	}
	stage = 3;
	if (fuse_session_mount(s.se, c->mount)) {
		corun_err(RD_PROG, "cannot mount on %s", c->mount);
		goto teardown;
	}
	stage = 4;
	if (pthread_create(&s.dispatcher, NULL, dispatch, &s)) {
		corun_err(RD_PROG, "cannot start the dispatcher thread");
		goto teardown;
	}
	stage = 5;
	write_state(&s, "running", argc, argv);

	rc = CORUN_EXIT_OK;
	while (!g_stop_signal) {
		struct pollfd pfd = { .fd = fuse_session_fd(s.se), .events = POLLIN };
		int res = ppoll(&pfd, 1, NULL, &empty);

		if (g_timed) {
			g_timed = 0;
			pthread_mutex_lock(&s.mu);
			s.untimed = false;
			pthread_mutex_unlock(&s.mu);
			g_dump = 1;
		}
		if (g_dump) {
			g_dump = 0;
			write_state(&s, "running", argc, argv);
		}
		if (res < 0) {
			if (errno == EINTR)
				continue;
			corun_err(RD_PROG, "poll: %s", strerror(errno));
			rc = CORUN_EXIT_RUNTIME;
			break;
		}
		res = fuse_session_receive_buf(s.se, &fbuf);
		if (res == -EINTR || res == -EAGAIN)
			continue;
		if (res <= 0) {
			if (res < 0) {
				corun_err(RD_PROG, "reading /dev/fuse: %s", strerror(-res));
				rc = CORUN_EXIT_RUNTIME;
			}
			break; /* 0: unmounted */
		}
		fuse_session_process_buf(s.se, &fbuf);
		if (fuse_session_exited(s.se))
			break;
	}

teardown:
	/* One path, in reverse order of set-up. */
	if (stage >= 5) {
		pthread_mutex_lock(&s.mu);
		s.stop = true;
		pthread_cond_broadcast(&s.cv);
		pthread_mutex_unlock(&s.mu);
		pthread_join(s.dispatcher, NULL);
	}
	if (stage >= 4)
		fuse_session_unmount(s.se);
	if (stage >= 5)
		write_state(&s, rc == CORUN_EXIT_OK ? "exited" : "failed", argc, argv);
	if (stage >= 3)
		fuse_session_destroy(s.se);
	free(fbuf.mem);
	if (stage >= 2) {
		pthread_cond_destroy(&s.cv);
		pthread_mutex_destroy(&s.mu);
	}
	if (s.image)
		munmap(s.image, c->p.size_bytes);
	free(s.late_hist);
	free(s.pending);
	if (stage >= 1)
		rd_model_free(&s.m);
	fuse_opt_free_args(&args);
	return rc;
}
