/* A daemon's signals, its journal of changes, its state files and the heartbeat --check reads. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "corun_kernel.h"
#include "flatjson.h"
#include "sched_daemon.h"

int sd_signals_open(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -1;
	signal(SIGPIPE, SIG_IGN);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0)
		return -1;
	pid_t parent = getppid();
	prctl(PR_SET_PDEATHSIG, SIGTERM); /* the starter dies: the one teardown, then exit */
	if (getppid() != parent) {        /* it died before the request */
		close(sfd);
		return -2;
	}
	return sfd;
}

const char *sd_signal_read(int sfd)
{
	struct signalfd_siginfo si;
	if (read(sfd, &si, sizeof si) != (ssize_t)sizeof si)
		return NULL;
	return strsignal((int)si.ssi_signo);
}

FILE *sd_fopen_in(const char *dir, const char *name, const char *mode)
{
	char path[4096];
	if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	return fopen(path, mode);
}

FILE *sd_journal_open(const char *dir, const char *name)
{
	return sd_fopen_in(dir, name, "a");
}

int sd_journal_line(FILE *journal, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = vfprintf(journal, fmt, ap);
	va_end(ap);
	if (rc < 0 || fputc('\n', journal) == EOF || fflush(journal) != 0 ||
	    fdatasync(fileno(journal)) != 0)
		return -1;
	return 0;
}

FILE *sd_file_begin(struct sd_file *s, const char *dir, const char *name)
{
	s->f = NULL;
	if (snprintf(s->path, sizeof s->path, "%s/%s", dir, name) >= (int)sizeof s->path) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	snprintf(s->tmp, sizeof s->tmp, "%s.tmp", s->path);
	s->f = fopen(s->tmp, "w");
	return s->f;
}

int sd_file_commit(struct sd_file *s)
{
	if (!s->f)
		return -1;
	int rc = fclose(s->f);
	s->f = NULL;
	if (rc != 0)
		return -1;
	return rename(s->tmp, s->path);
}

struct heartbeat {
	double pid, mono_s;
	int seen;
};

static void heartbeat_member(const char *key, const struct fj_value *v, void *ctx)
{
	struct heartbeat *h = ctx;
	if (v->type != FJ_NUMBER)
		return;
	if (!strcmp(key, "pid")) {
		h->pid = v->num;
		h->seen |= 1;
	} else if (!strcmp(key, "mono_s")) {
		h->mono_s = v->num;
		h->seen |= 2;
	}
}

int sd_check_heartbeat(const char *prog, const char *dir, double max_age, const char *what,
		       char *buf, size_t cap, double *age)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/status.json", dir);
	uint64_t until = sd_mono_ns() + 5000000000u; /* the daemon may still be starting */
	while (sd_read_small(path, buf, cap) < 0) {
		if (sd_mono_ns() > until) {
			corun_err(prog, "not running: no heartbeat %s", path);
			return CORUN_EXIT_RUNTIME;
		}
		usleep(20000);
	}
	struct heartbeat h = { 0, 0, 0 };
	if (fj_parse(buf, heartbeat_member, &h) < 0 || h.seen != 3) {
		corun_err(prog, "%s: not a heartbeat", path);
		return CORUN_EXIT_RUNTIME;
	}
	if (kill((pid_t)h.pid, 0) < 0 && errno == ESRCH) {
		corun_err(prog, "not running: pid %.0f has exited", h.pid);
		return CORUN_EXIT_RUNTIME;
	}
	*age = (double)sd_mono_ns() / 1e9 - h.mono_s;
	if (*age > max_age) {
		corun_err(prog, "not in effect: last %s %.1f s ago (more than %.1f s)", what, *age,
			  max_age);
		return CORUN_EXIT_RUNTIME;
	}
	return CORUN_EXIT_OK;
}
