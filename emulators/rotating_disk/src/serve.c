/* The FUSE front end: one image file in memory, every request completed at
 * the time the model gives it.
 *
 * Threads: the main thread receives FUSE requests (ppoll on the session's
 * file descriptor, so that signals, which only set flags, are never lost)
 * and queues reads and writes; the dispatcher thread asks the model which
 * queued request the actuator serves next, sleeps until its completion time
 * on the virtual clock (CLOCK_MONOTONIC since start, absolute sleeps) and
 * replies, recording how late the reply was against the model.
 *
 * This file holds the set-up, the receive loop and the teardown; the FUSE
 * operations are in ops.c, the image and its map of chunks in image.c.
 */
#define _GNU_SOURCE
#include "serve.h"
#include "server.h"

#include "corun_kernel.h"

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

	s.se = fuse_session_new(&args, &rd_ops, sizeof(rd_ops), &s);
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
