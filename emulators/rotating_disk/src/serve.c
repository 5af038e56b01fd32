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
#include "serve.h"
#include "server.h"

#include "corun_kernel.h"

#include <errno.h>
#include <fcntl.h>
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

static volatile sig_atomic_t g_stop_signal;
static volatile sig_atomic_t g_dump;
static volatile sig_atomic_t g_timed;
static volatile sig_atomic_t g_untimed;

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

static void on_untimed(int sig)
{
	(void)sig;
	g_untimed = 1;
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

/* ---- the map of chunks that may hold data --------------------------------- */

static uint64_t nchunks(const struct server *s)
{
	return (s->c->p.size_bytes + (1ULL << CHUNK_SHIFT) - 1) >> CHUNK_SHIFT;
}

static void mark_chunks(struct server *s, uint64_t off, uint64_t len)
{
	uint64_t i, last;

	if (!s->chunks || len == 0)
		return;
	last = (off + len - 1) >> CHUNK_SHIFT;
	for (i = off >> CHUNK_SHIFT; i <= last; i++)
		__atomic_fetch_or(&s->chunks[i / 64], 1ULL << (i % 64), __ATOMIC_RELAXED);
}

static bool chunk_marked(const struct server *s, uint64_t i)
{
	return !s->chunks ||
	       (__atomic_load_n(&s->chunks[i / 64], __ATOMIC_RELAXED) >> (i % 64) & 1);
}

static bool all_zero(const char *buf, size_t len)
{
	return len == 0 || (buf[0] == 0 && !memcmp(buf, buf + 1, len - 1));
}

/* A write marks the chunks it puts non-zero bytes in: zeros written over a chunk not yet
 * marked leave it as it was, all zeros (mkfs's zeroed inode tables, spread over the disk). */
static void mark_written(struct server *s, const char *buf, uint64_t off, uint64_t len)
{
	uint64_t i, last, start, end;

	if (!s->chunks || len == 0)
		return;
	last = (off + len - 1) >> CHUNK_SHIFT;
	for (i = off >> CHUNK_SHIFT; i <= last; i++) {
		if (chunk_marked(s, i))
			continue;
		start = i << CHUNK_SHIFT > off ? i << CHUNK_SHIFT : off;
		end = (i + 1) << CHUNK_SHIFT < off + len ? (i + 1) << CHUNK_SHIFT : off + len;
		if (!all_zero(buf + (start - off), (size_t)(end - start)))
			mark_chunks(s, start, end - start);
	}
}

/* SEEK_DATA and SEEK_HOLE from the map (lseek(2)'s rules: ENXIO at or past the end, or when
 * no data follows OFF); the kernel answers the other whences itself. */
static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	struct server *s = srv(req);
	uint64_t size = s->c->p.size_bytes, n = nchunks(s), i;

	(void)fi;
	if (ino != FILE_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if (whence != SEEK_DATA && whence != SEEK_HOLE) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (off < 0 || (uint64_t)off >= size) {
		fuse_reply_err(req, ENXIO);
		return;
	}
	for (i = (uint64_t)off >> CHUNK_SHIFT; i < n; i++)
		if (chunk_marked(s, i) == (whence == SEEK_DATA))
			break;
	if (i == n) {
		if (whence == SEEK_DATA)
			fuse_reply_err(req, ENXIO);
		else
			fuse_reply_lseek(req, (off_t)size);
		return;
	}
	i <<= CHUNK_SHIFT;
	fuse_reply_lseek(req, (off_t)(i > (uint64_t)off ? i : (uint64_t)off));
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
	mark_written(s, buf, o, size);
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

/* Mark the chunks of the --load file that hold data (its holes read as zeros); a file system
 * without SEEK_DATA answers that all of it is data, and so it is marked. */
static void mark_file_data(struct server *s, int fd, uint64_t size)
{
	off_t data = 0, hole;

	while ((uint64_t)data < size) {
		data = lseek(fd, data, SEEK_DATA);
		if (data < 0) {
			if (errno != ENXIO) /* no map: every chunk may hold data */
				mark_chunks(s, 0, size);
			return;
		}
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0 || (uint64_t)hole > size)
			hole = (off_t)size;
		mark_chunks(s, (uint64_t)data, (uint64_t)(hole - data));
		data = hole;
	}
}

/* The image file mapped copy-on-write as the disk (MAP_PRIVATE: the file never changes, the
 * run's writes stay in the mapping), so a run's start reads nothing ahead: the pages the run
 * touches come from the page cache as it touches them.  A file of another size than the disk is
 * refused: it is another disk's image.  NULL on error (said). */
static unsigned char *map_image(struct server *s, uint64_t size, const char *path)
{
	struct stat st;
	void *image = MAP_FAILED;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st)) {
		corun_err(RD_PROG, "--load: %s: %s (expected a readable image file)", path,
			  strerror(errno));
	} else if ((uint64_t)st.st_size != size) {
		corun_err(RD_PROG, "--load: %s: %lld bytes (expected %llu, the --size)", path,
			  (long long)st.st_size, (unsigned long long)size);
	} else {
		image = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd,
			     0);
		if (image == MAP_FAILED)
			corun_err(RD_PROG, "--load: %s: cannot map it: %s", path, strerror(errno));
		else
			mark_file_data(s, fd, size);
	}
	if (fd >= 0)
		close(fd);
	return image == MAP_FAILED ? NULL : image;
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
	.lseek = op_lseek,
};

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
	if (!s.late_hist) {
		corun_err(RD_PROG, "cannot allocate the lateness histogram");
		goto teardown;
	}
	s.chunks = calloc((nchunks(&s) + 63) / 64, sizeof(*s.chunks));
	if (!s.chunks) {
		corun_err(RD_PROG, "cannot allocate the image's chunk map");
		goto teardown;
	}
	if (c->load) {
		s.image = map_image(&s, c->p.size_bytes, c->load);
		if (!s.image)
			goto teardown;
	} else {
		s.image = mmap(NULL, c->p.size_bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (s.image == MAP_FAILED) {
			corun_err(RD_PROG, "cannot allocate the %llu-byte image: %s",
				  (unsigned long long)c->p.size_bytes, strerror(errno));
			s.image = NULL;
			goto teardown;
		}
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
	sigaddset(&block, SIGRTMIN);
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
	sa.sa_handler = on_untimed;
	sigaction(SIGRTMIN, &sa, NULL);
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
		if (g_untimed) { /* the run is over: its teardown's writes are not timed */
			g_untimed = 0;
			pthread_mutex_lock(&s.mu);
			s.untimed = true;
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
	free(s.chunks);
	free(s.pending);
	if (stage >= 1)
		rd_model_free(&s.m);
	fuse_opt_free_args(&args);
	return rc;
}
