/* corun-dynamic-io: the user-level dynamic I/O-aware batch scheduler of
 * paper 000 (section 3), and the variants built on it.
 *
 * Every TIMESLICE it reads the I/O counters of each job the runner started
 * (from /proc/<pid>/io), and runs the decision-making module (decide.c,
 * Procedure 4) on the per-job rates: above IO_BOUND_INTERVAL it holds jobs,
 * below it releases one held job per CMP. Holding is SIGSTOP of the job's
 * process group (policy suspend) or a cgroup I/O limit (policy throttle).
 *
 * Jobs come from the runner's job event log (JSON lines, --job-events): a
 * "start" event names the job's pid and its start time (field 22 of
 * /proc/<pid>/stat); a pid whose start time differs is another process and is
 * never signalled. The leader is held through a pidfd, so a signal cannot
 * reach a process that reused its pid.
 *
 * Safety: SIGTERM, SIGINT, SIGHUP, the runner's death (PR_SET_PDEATHSIG) and
 * every error path go through one teardown that releases every job this
 * daemon holds. If the daemon is killed with SIGKILL, the runner resumes the
 * jobs (corun/runner.py). Parameters are checked before anything is touched.
 *
 * Output, in --state-dir: decisions.jsonl (one line per quantum),
 * status.json (heartbeat, rewritten every quantum) and summary.json (at exit).
 *
 * Other modes: --check DIR (is a daemon alive and on time), --decide-table
 * FILE (one decision on a hand-made table), --bench-decide N (decision time).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "corun_kernel.h"
#include "decide.h"
#include "flatjson.h"
#include "modes.h"

#define VERSION "1.0"
#define MAX_DESC 4096 /* descendants followed per job */

static const char USAGE[] =
	"usage: " PROG " --job-events FILE --state-dir DIR [options]\n"
	"       " PROG " --check DIR [--max-age-s S]\n"
	"       " PROG " --decide-table FILE\n"
	"       " PROG " --bench-decide N [--rounds R] [--cmps C]\n"
	"\n"
	"The dynamic I/O-aware scheduler of paper 000 (Procedure 4).\n"
	"  --job-events FILE        the runner's job event log (JSON lines), followed\n"
	"  --state-dir DIR          writes decisions.jsonl, status.json, summary.json\n"
	"  --timeslice-s S          quantum, seconds (default 1; 0.05 to 60)\n"
	"  --io-bound-mbps X        IO_BOUND_INTERVAL, MB/s, MB = 10^6 bytes (default 40)\n"
	"  --counter C              storage (read_bytes + write_bytes, default), read_bytes,\n"
	"                           write_bytes or rchar_wchar\n"
	"  --descendants 0|1        add the I/O of the job's child processes (default 1)\n"
	"  --cmp-share 0|1          hold only jobs on CMPs above bound/CMPs (default 1)\n"
	"  --policy P               suspend (SIGSTOP/SIGCONT, default) or throttle (cgroup v1\n"
	"                           blkio limits; needs --cgroup and --device)\n"
	"  --max-suspend-s S        release any job held this long, then protect it as long\n"
	"                           (0: never, default)\n"
	"  --psi-file FILE          adapt the bound from this PSI file's 'some' stall share\n"
	"  --psi-target F           stall share to hold the bound at (default 0.3; 0 to 1)\n"
	"  --psi-decrease F         bound *= F above the target (default 0.8)\n"
	"  --psi-increase-mbps X    bound += X below the target (default 1)\n"
	"  --bound-min-mbps X       lowest adapted bound (default 0.5)\n"
	"  --bound-max-mbps X       highest adapted bound (default 1000)\n"
	"  --cgroup DIR             the run's blkio cgroup (policy throttle)\n"
	"  --device MAJ:MIN         the device under test (policy throttle)\n"
	"  --throttle-floor-mbps X  lowest per-job limit (default 1)\n"
	"  --max-jobs N             most jobs followed at once (default 65536)\n"
	"  --max-age-s S            --check: the heartbeat may be this old\n"
	"                           (default 3 timeslices + 2 s)\n"
	"  -h, --help  -V, --version\n"
	"Exit: 0 ok (also when stopped by SIGTERM/SIGINT), 1 runtime error, 2 usage,\n"
	"4 a needed feature is missing (PSI file, cgroup v1 blkio).\n";

enum counter { C_STORAGE, C_READ, C_WRITE, C_RCHAR_WCHAR };
enum policy { P_SUSPEND, P_THROTTLE };

struct opts {
	const char *events, *state_dir, *psi_file, *cgroup, *device;
	double timeslice_s, bound_mbps, max_suspend_s;
	double psi_target, psi_decrease, psi_increase, bound_min, bound_max, floor_mbps;
	enum counter counter;
	enum policy policy;
	bool descendants, cmp_share;
	long max_jobs;
};

struct job {
	char id[128];
	pid_t pid;
	unsigned long long starttime;
	int cmp;
	int pidfd, io_fd;
	bool group; /* the job leads its own process group: signal the group */
	bool gone;
	unsigned long long last_bytes;
	bool have_last;
	double cur_mbps, key_mbps;
	enum dio_state state;
	double held_since, held_total, held_max, protect_until;
	unsigned holds;
	/* throttle */
	char cg[PATH_MAX];
	unsigned long long limit_bps;
};

struct done_job { /* kept for summary.json */
	char id[128];
	double held_total, held_max;
	unsigned holds;
	bool throttle;
};

struct daemon {
	struct opts o;
	struct job *jobs;
	size_t njobs;
	struct done_job *done;
	size_t ndone, cap_done;
	struct dio_job *table;
	struct dio_work work;
	int ev_fd;
	char evbuf[65536];
	size_t evlen;
	FILE *log;
	int psi_fd;
	unsigned long long psi_total_us;
	bool psi_have;
	double bound;
	double t_offset; /* run time base: t_s = mono - t_offset */
	bool have_offset;
	double start_mono, last_mono;
	unsigned long long q;
	unsigned long long n_hold, n_release, n_force, n_refused;
	double decide_sum_us, decide_max_us, collect_sum_us, collect_max_us;
	/* throttle: the parent's caps (0: none) and what is carved out of them */
	unsigned long long cap_read, cap_write, carved;
	const char *exit_reason;
};

static struct daemon D;

/* ------------------------------------------------------------------ time, files */

double now_mono(void)
{
	return corun_monotonic_s();
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t len = strlen(text);
	ssize_t w = write(fd, text, len);
	int err = errno;
	close(fd);
	errno = err;
	return w == (ssize_t)len ? 0 : -1;
}

ssize_t read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/* Start time (clock ticks since boot, field 22) and process group (field 5). */
static int proc_stat(pid_t pid, unsigned long long *starttime, pid_t *pgrp)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (read_small(path, buf, sizeof buf) < 0)
		return -1;
	char *p = strrchr(buf, ')');
	if (!p)
		return -1;
	p += 2; /* field 3, the state */
	unsigned long long v = 0;
	for (int field = 3; field <= 22; field++) {
		char *end;
		if (field == 3) {
			p = strchr(p, ' ');
			if (!p)
				return -1;
			p++;
			continue;
		}
		v = strtoull(p, &end, 10);
		if (end == p)
			return -1;
		if (field == 5 && pgrp)
			*pgrp = (pid_t)v;
		p = end + 1;
	}
	*starttime = v;
	return 0;
}

static int pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int pidfd_signal(int pidfd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

/* ------------------------------------------------------------------ I/O counters */

static int parse_io(const char *buf, enum counter c, unsigned long long *out)
{
	unsigned long long rchar = 0, wchar = 0, rb = 0, wb = 0;
	int seen = 0;
	for (const char *line = buf; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		unsigned long long v;
		if (sscanf(line, "rchar: %llu", &v) == 1) { rchar = v; seen |= 1; }
		else if (sscanf(line, "wchar: %llu", &v) == 1) { wchar = v; seen |= 2; }
		else if (sscanf(line, "read_bytes: %llu", &v) == 1) { rb = v; seen |= 4; }
		else if (sscanf(line, "write_bytes: %llu", &v) == 1) { wb = v; seen |= 8; }
	}
	if (seen != 15)
		return -1;
	switch (c) {
	case C_STORAGE: *out = rb + wb; break;
	case C_READ: *out = rb; break;
	case C_WRITE: *out = wb; break;
	case C_RCHAR_WCHAR: *out = rchar + wchar; break;
	}
	return 0;
}

/* Children of PID's main thread (the runner's jobs fork from it). */
static size_t children_of(pid_t pid, pid_t *out, size_t cap)
{
	char path[96], buf[8192];
	snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
	if (read_small(path, buf, sizeof buf) < 0)
		return 0;
	size_t n = 0;
	for (char *p = buf; *p && n < cap;) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p)
			break;
		out[n++] = (pid_t)v;
		p = end;
	}
	return n;
}

/* The job's descendants, breadth first, at most cap. */
static size_t descendants(pid_t leader, pid_t *out, size_t cap)
{
	size_t n = children_of(leader, out, cap);
	for (size_t i = 0; i < n && n < cap; i++)
		n += children_of(out[i], out + n, cap - n);
	return n;
}

static pid_t desc_buf[MAX_DESC];

/* The job's counter: its leader (which includes reaped children) plus, with
 * --descendants, every live descendant. Returns -1 when the leader is gone. */
static int job_bytes(struct job *j, unsigned long long *bytes)
{
	char buf[512];
	ssize_t n = pread(j->io_fd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (parse_io(buf, D.o.counter, bytes) < 0)
		return -1;
	if (D.o.descendants) {
		size_t nd = descendants(j->pid, desc_buf, MAX_DESC);
		for (size_t i = 0; i < nd; i++) {
			char path[64];
			unsigned long long v;
			snprintf(path, sizeof path, "/proc/%d/io", (int)desc_buf[i]);
			if (read_small(path, buf, sizeof buf) > 0 && parse_io(buf, D.o.counter, &v) == 0)
				*bytes += v;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ holding jobs */

/* Signal the whole job: its process group when it leads one, else the leader.
 * The pidfd check first: the leader (or its zombie) still exists, so its pid,
 * and the process group named after it, are still this job's. */
static int signal_job(struct job *j, int sig)
{
	if (j->gone || pidfd_signal(j->pidfd, 0) < 0) {
		j->gone = true;
		return -1;
	}
	if (j->group)
		return kill(-j->pid, sig);
	return pidfd_signal(j->pidfd, sig);
}

static int cg_write_cap(const char *dir, const char *file, unsigned long long bps)
{
	char path[PATH_MAX + 64], text[96];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	snprintf(text, sizeof text, "%s %llu", D.o.device, bps);
	return write_file(path, text);
}

static int cg_move(const char *dir, struct job *j)
{
	char path[PATH_MAX + 64], text[32];
	snprintf(path, sizeof path, "%s/cgroup.procs", dir);
	snprintf(text, sizeof text, "%d", (int)j->pid);
	int rc = write_file(path, text);
	size_t nd = descendants(j->pid, desc_buf, MAX_DESC);
	for (size_t i = 0; i < nd; i++) {
		snprintf(text, sizeof text, "%d", (int)desc_buf[i]);
		(void)write_file(path, text); /* a descendant may have exited */
	}
	return rc;
}

/* The parent's caps with what is carved out for throttled jobs, so that the
 * jobs of a run never share more than the emulated device's capacity: on
 * cgroup v1, blkio throttling is not hierarchical. */
static void cg_set_parent_caps(void)
{
	if (D.cap_read)
		(void)cg_write_cap(D.o.cgroup, "blkio.throttle.read_bps_device", D.cap_read - D.carved);
	if (D.cap_write)
		(void)cg_write_cap(D.o.cgroup, "blkio.throttle.write_bps_device", D.cap_write - D.carved);
}

static int throttle_job(struct job *j, double limit_mbps)
{
	unsigned long long floor = (unsigned long long)(D.o.floor_mbps * 1e6);
	unsigned long long limit = (unsigned long long)(limit_mbps * 1e6);
	unsigned long long cap = 0;
	if (D.cap_read && D.cap_write)
		cap = D.cap_read < D.cap_write ? D.cap_read : D.cap_write;
	else
		cap = D.cap_read ? D.cap_read : D.cap_write;
	if (limit < floor)
		limit = floor;
	if (cap) { /* keep at least the floor for the jobs left in the parent */
		if (cap < D.carved + 2 * floor)
			return -1;
		unsigned long long room = cap - D.carved - floor;
		if (limit > room)
			limit = room;
	}
	char name[160];
	size_t k = 0;
	for (const char *s = j->id; *s && k < sizeof name - 8; s++)
		name[k++] = (char)((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
				   (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' ? *s : '_');
	name[k] = '\0';
	snprintf(j->cg, sizeof j->cg, "%s/dio-%s", D.o.cgroup, name);
	if (mkdir(j->cg, 0755) < 0 && errno != EEXIST)
		return -1;
	if (cg_write_cap(j->cg, "blkio.throttle.read_bps_device", limit) < 0 ||
	    cg_write_cap(j->cg, "blkio.throttle.write_bps_device", limit) < 0) {
		rmdir(j->cg);
		j->cg[0] = '\0';
		return -1;
	}
	D.carved += cap ? limit : 0;
	cg_set_parent_caps(); /* lower the parent first: the sum never exceeds the cap */
	if (signal_job(j, 0) < 0 || cg_move(j->cg, j) < 0) {
		D.carved -= cap ? limit : 0;
		cg_set_parent_caps();
		rmdir(j->cg);
		j->cg[0] = '\0';
		return -1;
	}
	j->limit_bps = cap ? limit : 0;
	return 0;
}

static void unthrottle_job(struct job *j)
{
	if (!j->cg[0])
		return;
	if (!j->gone)
		(void)cg_move(D.o.cgroup, j);
	D.carved -= j->limit_bps; /* move back first, then give the capacity back */
	cg_set_parent_caps();
	for (int tries = 0; tries < 50 && rmdir(j->cg) < 0 && errno == EBUSY; tries++)
		usleep(10000);
	j->cg[0] = '\0';
	j->limit_bps = 0;
}

static int hold(struct job *j, double now, double limit_mbps)
{
	int rc = D.o.policy == P_SUSPEND ? signal_job(j, SIGSTOP) : throttle_job(j, limit_mbps);
	if (rc < 0)
		return -1;
	j->state = DIO_HELD;
	j->held_since = now;
	j->key_mbps = j->cur_mbps;
	j->holds++;
	return 0;
}

static void release(struct job *j, double now)
{
	if (j->state != DIO_HELD)
		return;
	if (D.o.policy == P_SUSPEND)
		(void)signal_job(j, SIGCONT);
	else
		unthrottle_job(j);
	double held = now - j->held_since;
	j->held_total += held;
	if (held > j->held_max)
		j->held_max = held;
	j->state = DIO_RUNNING;
}

/* ------------------------------------------------------------------ job events */

struct event {
	char type[16], id[128];
	double pid, starttime, cmp, t_s, mono_s;
	int seen;
};

static void event_member(const char *key, const struct fj_value *v, void *ctx)
{
	struct event *e = ctx;
	if (v->type == FJ_STRING && !strcmp(key, "event")) {
		snprintf(e->type, sizeof e->type, "%s", v->str);
		e->seen |= 1;
	} else if (v->type == FJ_STRING && !strcmp(key, "job_id")) {
		snprintf(e->id, sizeof e->id, "%s", v->str);
		e->seen |= 2;
	} else if (v->type == FJ_NUMBER) {
		if (!strcmp(key, "pid")) { e->pid = v->num; e->seen |= 4; }
		else if (!strcmp(key, "starttime")) { e->starttime = v->num; e->seen |= 8; }
		else if (!strcmp(key, "cmp")) { e->cmp = v->num; e->seen |= 16; }
		else if (!strcmp(key, "t_s")) { e->t_s = v->num; e->seen |= 32; }
		else if (!strcmp(key, "mono_s")) { e->mono_s = v->num; e->seen |= 64; }
	}
}

static void log_note(const char *what, const char *job_id, pid_t pid, const char *reason)
{
	struct corun_json j;
	corun_json_begin(&j, D.log);
	corun_json_str(&j, "note", what);
	corun_json_str(&j, "job_id", job_id);
	corun_json_int(&j, "pid", pid);
	corun_json_str(&j, "reason", reason);
	corun_json_double(&j, "mono_s", now_mono());
	corun_json_end(&j);
	fflush(D.log);
}

static void keep_done(const struct job *j)
{
	if (D.ndone == D.cap_done) {
		size_t cap = D.cap_done ? 2 * D.cap_done : 256;
		struct done_job *p = realloc(D.done, cap * sizeof *p);
		if (!p)
			return; /* the summary loses this job's line; the decisions log has it */
		D.done = p;
		D.cap_done = cap;
	}
	struct done_job *d = &D.done[D.ndone++];
	snprintf(d->id, sizeof d->id, "%s", j->id);
	d->held_total = j->held_total;
	d->held_max = j->held_max;
	d->holds = j->holds;
	d->throttle = D.o.policy == P_THROTTLE;
}

static void drop_job(size_t i, double now)
{
	struct job *j = &D.jobs[i];
	release(j, now);
	keep_done(j);
	if (j->pidfd >= 0)
		close(j->pidfd);
	if (j->io_fd >= 0)
		close(j->io_fd);
	D.jobs[i] = D.jobs[--D.njobs];
}

static void job_start(const struct event *e)
{
	pid_t pid = (pid_t)e->pid, pgrp = 0;
	unsigned long long st = 0;
	if (e->pid < 1 || e->pid > INT_MAX || e->cmp < 0 || e->cmp >= MAX_CMPS) {
		log_note("refused", e->id, pid, "pid or cmp out of range");
		D.n_refused++;
		return;
	}
	if ((long)D.njobs >= D.o.max_jobs) {
		log_note("refused", e->id, pid, "more jobs than --max-jobs");
		D.n_refused++;
		return;
	}
	int pidfd = pidfd_open_(pid);
	/* identity after the pidfd exists: if the start time matches now, the
	 * pidfd refers to the job's process, whatever happens to the pid later */
	if (pidfd < 0 || proc_stat(pid, &st, &pgrp) < 0 || st != (unsigned long long)e->starttime) {
		log_note("refused", e->id, pid, pidfd < 0 || st == 0 ? "process gone" :
			 "pid reused: start time differs from the job event");
		if (pidfd >= 0)
			close(pidfd);
		D.n_refused++;
		return;
	}
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/io", (int)pid);
	int io_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (io_fd < 0) {
		log_note("refused", e->id, pid, "cannot read its /proc/<pid>/io");
		close(pidfd);
		D.n_refused++;
		return;
	}
	struct job *j = &D.jobs[D.njobs++];
	memset(j, 0, sizeof *j);
	snprintf(j->id, sizeof j->id, "%s", e->id);
	j->pid = pid;
	j->starttime = st;
	j->cmp = (int)e->cmp;
	j->pidfd = pidfd;
	j->io_fd = io_fd;
	j->group = pgrp == pid;
	j->state = DIO_RUNNING;
	unsigned long long b;
	if (job_bytes(j, &b) == 0) {
		j->last_bytes = b;
		j->have_last = true;
	}
}

static void job_end(const struct event *e, double now)
{
	for (size_t i = 0; i < D.njobs; i++) {
		if (D.jobs[i].pid == (pid_t)e->pid && !strcmp(D.jobs[i].id, e->id)) {
			D.jobs[i].gone = true;
			drop_job(i, now);
			return;
		}
	}
}

/* Reads the complete lines appended to the event log since the last call. */
static int read_events(double now)
{
	for (;;) {
		ssize_t n = read(D.ev_fd, D.evbuf + D.evlen, sizeof D.evbuf - 1 - D.evlen);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			break;
		D.evlen += (size_t)n;
		D.evbuf[D.evlen] = '\0';
		char *line = D.evbuf, *nl;
		while ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			struct event e;
			memset(&e, 0, sizeof e);
			if (fj_parse(line, event_member, &e) == 0 && (e.seen & 15) == 15) {
				if ((e.seen & 96) == 96 && !D.have_offset) {
					D.t_offset = e.mono_s - e.t_s;
					D.have_offset = true;
				}
				if (!strcmp(e.type, "start") && (e.seen & 16))
					job_start(&e);
				else if (!strcmp(e.type, "end"))
					job_end(&e, now);
			} else if (line[0]) {
				log_note("bad_event", "", 0, "a job event line that is not a job event");
			}
			line = nl + 1;
		}
		size_t rest = D.evlen - (size_t)(line - D.evbuf);
		if (rest == sizeof D.evbuf - 1) /* one line longer than the buffer: drop it */
			rest = 0;
		memmove(D.evbuf, line, rest);
		D.evlen = rest;
	}
	return 0;
}

/* ------------------------------------------------------------------ PSI */

static int psi_read(unsigned long long *total_us)
{
	char buf[512];
	ssize_t n = pread(D.psi_fd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	char *p = strstr(buf, "some ");
	if (!p || !(p = strstr(p, "total=")))
		return -1;
	*total_us = strtoull(p + 6, NULL, 10);
	return 0;
}

/* ------------------------------------------------------------------ the quantum */

static double usec_since(double t0)
{
	return (now_mono() - t0) * 1e6;
}

static void write_status(double now)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	snprintf(path, sizeof path, "%s/status.json", D.o.state_dir);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return;
	struct corun_json j;
	corun_json_begin(&j, f);
	corun_json_int(&j, "pid", getpid());
	corun_json_int(&j, "q", (int64_t)D.q);
	corun_json_double(&j, "mono_s", now);
	corun_json_double(&j, "bound_mbps", D.bound);
	corun_json_str(&j, "policy", D.o.policy == P_SUSPEND ? "suspend" : "throttle");
	corun_json_end(&j);
	if (fclose(f) == 0)
		rename(tmp, path);
}

static const char *action_word(enum dio_action a)
{
	bool s = D.o.policy == P_SUSPEND;
	switch (a) {
	case DIO_HOLD: return s ? "suspend" : "throttle";
	case DIO_RELEASE: return s ? "resume" : "unthrottle";
	case DIO_FORCE_RELEASE: return s ? "force_resume" : "force_unthrottle";
	case DIO_NONE: break;
	}
	return "none";
}

static int quantum(void)
{
	double now = now_mono(), t0 = now;
	double dt = now - D.last_mono;
	D.last_mono = now;
	D.q++;
	if (read_events(now) < 0)
		return -1;
	/* I/O Information Collector (Procedure 3) */
	double overall = 0;
	for (size_t i = 0; i < D.njobs;) {
		struct job *j = &D.jobs[i];
		unsigned long long b;
		if (j->gone || job_bytes(j, &b) < 0) {
			if (pidfd_signal(j->pidfd, 0) < 0) { /* exited: its end event follows */
				j->gone = true;
				drop_job(i, now);
				continue;
			}
			b = j->last_bytes;
		}
		double rate = 0;
		if (j->have_last && b >= j->last_bytes && dt > 0)
			rate = (double)(b - j->last_bytes) / dt / 1e6;
		j->last_bytes = b;
		j->have_last = true;
		j->cur_mbps = rate;
		if (j->state == DIO_RUNNING)
			j->key_mbps = rate;
		overall += rate;
		i++;
	}
	double psi_some = NAN;
	if (D.psi_fd >= 0) {
		unsigned long long total;
		if (psi_read(&total) == 0) {
			if (D.psi_have && dt > 0 && total >= D.psi_total_us) {
				psi_some = (double)(total - D.psi_total_us) / (dt * 1e6);
				if (psi_some > 1)
					psi_some = 1;
				if (psi_some > D.o.psi_target) {
					double b = (overall < D.bound ? overall : D.bound) * D.o.psi_decrease;
					D.bound = b < D.o.bound_min ? D.o.bound_min : b;
				} else if (psi_some < D.o.psi_target) {
					double b = D.bound + D.o.psi_increase;
					D.bound = b > D.o.bound_max ? D.o.bound_max : b;
				}
			}
			D.psi_total_us = total;
			D.psi_have = true;
		}
	}
	double collect_us = usec_since(t0);

	/* Decision_Making_Module (Procedure 4) */
	double t1 = now_mono();
	int ncmp = 0;
	size_t io_jobs = 0;
	for (size_t i = 0; i < D.njobs; i++) {
		struct job *j = &D.jobs[i];
		D.table[i] = (struct dio_job){
			.cmp = j->cmp, .state = j->state, .cur_mbps = j->cur_mbps,
			.key_mbps = j->key_mbps,
			.held_s = j->state == DIO_HELD ? now - j->held_since : 0,
			.protect = j->protect_until > now, .action = DIO_NONE,
		};
		if (j->cmp + 1 > ncmp)
			ncmp = j->cmp + 1;
		if (j->cur_mbps > 0 || j->state == DIO_HELD)
			io_jobs++;
	}
	struct dio_params p = { .bound_mbps = D.bound, .cmp_share = D.o.cmp_share,
				.max_held_s = D.o.max_suspend_s };
	dio_decide(D.table, D.njobs, ncmp, &p, &D.work);
	double decide_us = usec_since(t1);

	/* apply, then log */
	double limit = D.bound / (double)(io_jobs ? io_jobs : 1);
	struct corun_json lj;
	corun_json_begin(&lj, D.log);
	corun_json_int(&lj, "q", (int64_t)D.q);
	if (D.have_offset)
		corun_json_double(&lj, "t_s", now - D.t_offset);
	else
		corun_json_null(&lj, "t_s");
	corun_json_double(&lj, "mono_s", now);
	corun_json_double(&lj, "dt_s", dt);
	corun_json_double(&lj, "overall_mbps", overall);
	corun_json_double(&lj, "bound_mbps", D.bound);
	corun_json_double(&lj, "psi_some", psi_some);
	corun_json_array_begin(&lj, "actions");
	for (size_t k = 0; k < D.work.nseq; k++) {
		size_t i = D.work.seq[k];
		struct job *j = &D.jobs[i];
		enum dio_action a = D.table[i].action;
		int rc = 0;
		if (a == DIO_HOLD) {
			rc = hold(j, now, limit);
			if (rc == 0)
				D.n_hold++;
		} else {
			release(j, now);
			if (a == DIO_FORCE_RELEASE) {
				j->protect_until = now + D.o.max_suspend_s;
				D.n_force++;
			} else {
				D.n_release++;
			}
		}
		corun_json_object_begin(&lj, NULL);
		corun_json_str(&lj, "job_id", j->id);
		corun_json_int(&lj, "pid", j->pid);
		corun_json_int(&lj, "cmp", j->cmp);
		corun_json_str(&lj, "action", rc == 0 ? action_word(a) : "failed");
		corun_json_double(&lj, "io_mbps", j->cur_mbps);
		if (a == DIO_HOLD && D.o.policy == P_THROTTLE && rc == 0)
			corun_json_double(&lj, "limit_mbps", (double)j->limit_bps / 1e6);
		corun_json_object_end(&lj);
	}
	corun_json_array_end(&lj);
	size_t held = 0;
	for (size_t i = 0; i < D.njobs; i++)
		held += D.jobs[i].state == DIO_HELD;
	corun_json_int(&lj, "running", (int64_t)(D.njobs - held));
	corun_json_int(&lj, "suspended", D.o.policy == P_SUSPEND ? (int64_t)held : 0);
	corun_json_int(&lj, "throttled", D.o.policy == P_THROTTLE ? (int64_t)held : 0);
	corun_json_double(&lj, "collect_us", collect_us);
	corun_json_double(&lj, "decide_us", decide_us);
	corun_json_end(&lj);
	fflush(D.log);
	D.decide_sum_us += decide_us;
	if (decide_us > D.decide_max_us)
		D.decide_max_us = decide_us;
	D.collect_sum_us += collect_us;
	if (collect_us > D.collect_max_us)
		D.collect_max_us = collect_us;
	write_status(now);
	return 0;
}

/* ------------------------------------------------------------------ teardown */

static void write_summary(void)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/summary.json", D.o.state_dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	struct corun_json j;
	corun_json_begin(&j, f);
	corun_json_str(&j, "policy", D.o.policy == P_SUSPEND ? "suspend" : "throttle");
	corun_json_str(&j, "exit_reason", D.exit_reason);
	corun_json_int(&j, "quanta", (int64_t)D.q);
	bool s = D.o.policy == P_SUSPEND;
	corun_json_int(&j, "suspends", s ? (int64_t)D.n_hold : 0);
	corun_json_int(&j, "resumes", s ? (int64_t)D.n_release : 0);
	corun_json_int(&j, "forced_resumes", s ? (int64_t)D.n_force : 0);
	corun_json_int(&j, "throttles", s ? 0 : (int64_t)D.n_hold);
	corun_json_int(&j, "unthrottles", s ? 0 : (int64_t)(D.n_release + D.n_force));
	corun_json_int(&j, "refused_jobs", (int64_t)D.n_refused);
	corun_json_object_begin(&j, "jobs");
	for (size_t i = 0; i < D.ndone; i++) {
		struct done_job *d = &D.done[i];
		corun_json_object_begin(&j, d->id);
		corun_json_double(&j, "suspended_s", d->throttle ? 0 : d->held_total);
		corun_json_double(&j, "max_suspended_s", d->throttle ? 0 : d->held_max);
		corun_json_int(&j, "suspends", d->throttle ? 0 : d->holds);
		corun_json_double(&j, "throttled_s", d->throttle ? d->held_total : 0);
		corun_json_object_end(&j);
	}
	corun_json_object_end(&j);
	double nq = D.q ? (double)D.q : 1;
	corun_json_object_begin(&j, "decide_us");
	corun_json_double(&j, "mean", D.decide_sum_us / nq);
	corun_json_double(&j, "max", D.decide_max_us);
	corun_json_object_end(&j);
	corun_json_object_begin(&j, "collect_us");
	corun_json_double(&j, "mean", D.collect_sum_us / nq);
	corun_json_double(&j, "max", D.collect_max_us);
	corun_json_object_end(&j);
	corun_json_double(&j, "cpu_user_s", (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6);
	corun_json_double(&j, "cpu_sys_s", (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
	corun_json_double(&j, "wall_s", now_mono() - D.start_mono);
	corun_json_end(&j);
	fclose(f);
}

/* The one way out once jobs may be held: release every job, restore caps. */
static void teardown(void)
{
	double now = now_mono();
	while (D.njobs)
		drop_job(D.njobs - 1, now);
	if (D.o.policy == P_THROTTLE && D.o.cgroup) {
		D.carved = 0;
		cg_set_parent_caps();
	}
	if (D.log) {
		log_note("exit", "", getpid(), D.exit_reason);
		write_summary();
		fclose(D.log);
		D.log = NULL;
	}
}

/* ------------------------------------------------------------------ modes */

static unsigned long long read_cap(const char *file)
{
	char path[PATH_MAX + 64], buf[4096];
	snprintf(path, sizeof path, "%s/%s", D.o.cgroup, file);
	if (read_small(path, buf, sizeof buf) < 0)
		return 0;
	size_t dl = strlen(D.o.device);
	for (char *line = buf; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
		if (!strncmp(line, D.o.device, dl) && line[dl] == ' ')
			return strtoull(line + dl + 1, NULL, 10);
	return 0;
}

static int run_daemon(void)
{
	struct opts *o = &D.o;
	D.bound = o->bound_mbps;
	D.psi_fd = -1;
	D.ev_fd = -1;
	D.exit_reason = "error";
	/* everything that can be wrong is found before any job is touched */
	if (o->policy == P_THROTTLE) {
		char probe[PATH_MAX + 64];
		if (!o->cgroup || !o->device)
			corun_usage_error(PROG, "--policy: 'throttle' (expected --cgroup DIR and --device MAJ:MIN too)");
		snprintf(probe, sizeof probe, "%s/blkio.throttle.read_bps_device", o->cgroup);
		if (access(probe, W_OK) < 0) {
			corun_err(PROG, "--cgroup: '%s' (expected a writable cgroup v1 blkio group; "
				  "per-job limits under cgroup v2 need per-job leaf groups, not done)", o->cgroup);
			return CORUN_EXIT_SKIPPED;
		}
		D.cap_read = read_cap("blkio.throttle.read_bps_device");
		D.cap_write = read_cap("blkio.throttle.write_bps_device");
	}
	if (o->psi_file) {
		D.psi_fd = open(o->psi_file, O_RDONLY | O_CLOEXEC);
		unsigned long long t;
		if (D.psi_fd < 0 || psi_read(&t) < 0) {
			corun_err(PROG, "--psi-file: '%s' (expected a readable PSI file with a 'some' line: "
				  "a kernel with CONFIG_PSI and psi enabled)", o->psi_file);
			return CORUN_EXIT_SKIPPED;
		}
	}
	D.ev_fd = open(o->events, O_RDONLY | O_CLOEXEC);
	if (D.ev_fd < 0) {
		corun_usage_error(PROG, "--job-events: '%s' (expected a readable file: %s)", o->events, strerror(errno));
	}
	struct stat sb;
	if (stat(o->state_dir, &sb) < 0 || !S_ISDIR(sb.st_mode))
		corun_usage_error(PROG, "--state-dir: '%s' (expected an existing directory)", o->state_dir);
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	size_t cap = (size_t)o->max_jobs;
	D.jobs = calloc(cap, sizeof *D.jobs);
	D.table = calloc(cap, sizeof *D.table);
	if (!D.jobs || !D.table || dio_work_init(&D.work, cap, MAX_CMPS) < 0) {
		corun_err(PROG, "out of memory for %zu jobs", cap);
		return CORUN_EXIT_RUNTIME;
	}
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/decisions.jsonl", o->state_dir);
	D.log = fopen(path, "a");
	if (!D.log) {
		corun_err(PROG, "cannot write %s: %s", path, strerror(errno));
		return CORUN_EXIT_RUNTIME;
	}
	/* signals arrive through a signalfd: no work in handlers */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC);
	pid_t parent = getppid();
	prctl(PR_SET_PDEATHSIG, SIGTERM); /* the runner dies: resume everything, exit */
	if (getppid() != parent) {
		corun_err(PROG, "the process that started it has already exited");
		teardown();
		return CORUN_EXIT_RUNTIME;
	}
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (sfd < 0 || tfd < 0) {
		corun_err(PROG, "signalfd/timerfd: %s", strerror(errno));
		teardown();
		return CORUN_EXIT_RUNTIME;
	}
	struct itimerspec its;
	its.it_interval.tv_sec = (time_t)o->timeslice_s;
	its.it_interval.tv_nsec = (long)((o->timeslice_s - (double)its.it_interval.tv_sec) * 1e9);
	its.it_value = its.it_interval;
	D.start_mono = D.last_mono = now_mono();
	if (read_events(D.start_mono) < 0 || timerfd_settime(tfd, 0, &its, NULL) < 0) {
		corun_err(PROG, "cannot start: %s", strerror(errno));
		teardown();
		return CORUN_EXIT_RUNTIME;
	}
	write_status(D.start_mono);
	int rc = CORUN_EXIT_OK;
	for (;;) {
		struct pollfd pf[2] = { { .fd = sfd, .events = POLLIN }, { .fd = tfd, .events = POLLIN } };
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			rc = CORUN_EXIT_RUNTIME;
			break;
		}
		if (pf[0].revents & POLLIN) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
				D.exit_reason = strsignal((int)si.ssi_signo);
				break;
			}
		}
		if (pf[1].revents & POLLIN) {
			uint64_t expirations;
			if (read(tfd, &expirations, sizeof expirations) != (ssize_t)sizeof expirations)
				continue;
			if (quantum() < 0) {
				corun_err(PROG, "reading the job events failed: %s", strerror(errno));
				rc = CORUN_EXIT_RUNTIME;
				break;
			}
		}
	}
	teardown();
	return rc;
}

/* ------------------------------------------------------------------ options */

enum {
	O_EVENTS = 256, O_STATE, O_TIMESLICE, O_BOUND, O_COUNTER, O_DESC, O_SHARE, O_POLICY,
	O_MAXSUSP, O_PSI, O_PSI_TARGET, O_PSI_DEC, O_PSI_INC, O_BMIN, O_BMAX, O_CGROUP,
	O_DEVICE, O_FLOOR, O_MAXJOBS, O_CHECK, O_MAXAGE, O_TABLE, O_BENCH, O_ROUNDS, O_CMPS,
};

static bool parse_bool(const char *opt, const char *v)
{
	if (!strcmp(v, "1") || !strcasecmp(v, "true"))
		return true;
	if (!strcmp(v, "0") || !strcasecmp(v, "false"))
		return false;
	corun_usage_error(PROG, "--%s: '%s' (expected 0, 1, true or false)", opt, v);
}

int main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "job-events", required_argument, NULL, O_EVENTS },
		{ "state-dir", required_argument, NULL, O_STATE },
		{ "timeslice-s", required_argument, NULL, O_TIMESLICE },
		{ "io-bound-mbps", required_argument, NULL, O_BOUND },
		{ "counter", required_argument, NULL, O_COUNTER },
		{ "descendants", required_argument, NULL, O_DESC },
		{ "cmp-share", required_argument, NULL, O_SHARE },
		{ "policy", required_argument, NULL, O_POLICY },
		{ "max-suspend-s", required_argument, NULL, O_MAXSUSP },
		{ "psi-file", required_argument, NULL, O_PSI },
		{ "psi-target", required_argument, NULL, O_PSI_TARGET },
		{ "psi-decrease", required_argument, NULL, O_PSI_DEC },
		{ "psi-increase-mbps", required_argument, NULL, O_PSI_INC },
		{ "bound-min-mbps", required_argument, NULL, O_BMIN },
		{ "bound-max-mbps", required_argument, NULL, O_BMAX },
		{ "cgroup", required_argument, NULL, O_CGROUP },
		{ "device", required_argument, NULL, O_DEVICE },
		{ "throttle-floor-mbps", required_argument, NULL, O_FLOOR },
		{ "max-jobs", required_argument, NULL, O_MAXJOBS },
		{ "check", required_argument, NULL, O_CHECK },
		{ "max-age-s", required_argument, NULL, O_MAXAGE },
		{ "decide-table", required_argument, NULL, O_TABLE },
		{ "bench-decide", required_argument, NULL, O_BENCH },
		{ "rounds", required_argument, NULL, O_ROUNDS },
		{ "cmps", required_argument, NULL, O_CMPS },
		CORUN_COMMON_LONG_OPTIONS
	};
	struct opts *o = &D.o;
	*o = (struct opts){ .timeslice_s = 1, .bound_mbps = 40, .counter = C_STORAGE,
			    .policy = P_SUSPEND, .descendants = true, .cmp_share = true,
			    .psi_target = 0.3, .psi_decrease = 0.8, .psi_increase = 1,
			    .bound_min = 0.5, .bound_max = 1000, .floor_mbps = 1, .max_jobs = 65536 };
	const char *check = NULL, *table = NULL;
	long bench = 0, rounds = 1000;
	int cmps = 8;
	double max_age = 0;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:hV", longopts, NULL)) != -1) {
		switch (c) {
		case O_EVENTS: o->events = optarg; break;
		case O_STATE: o->state_dir = optarg; break;
		case O_TIMESLICE: o->timeslice_s = corun_parse_double(PROG, "timeslice-s", optarg, 0.05, 60, false); break;
		case O_BOUND: o->bound_mbps = corun_parse_double(PROG, "io-bound-mbps", optarg, 0, 1e9, true); break;
		case O_COUNTER:
			if (!strcmp(optarg, "storage")) o->counter = C_STORAGE;
			else if (!strcmp(optarg, "read_bytes")) o->counter = C_READ;
			else if (!strcmp(optarg, "write_bytes")) o->counter = C_WRITE;
			else if (!strcmp(optarg, "rchar_wchar")) o->counter = C_RCHAR_WCHAR;
			else corun_usage_error(PROG, "--counter: '%s' (expected storage, read_bytes, write_bytes or rchar_wchar)", optarg);
			break;
		case O_DESC: o->descendants = parse_bool("descendants", optarg); break;
		case O_SHARE: o->cmp_share = parse_bool("cmp-share", optarg); break;
		case O_POLICY:
			if (!strcmp(optarg, "suspend")) o->policy = P_SUSPEND;
			else if (!strcmp(optarg, "throttle")) o->policy = P_THROTTLE;
			else corun_usage_error(PROG, "--policy: '%s' (expected suspend or throttle)", optarg);
			break;
		case O_MAXSUSP: o->max_suspend_s = corun_parse_double(PROG, "max-suspend-s", optarg, 0, 86400, false); break;
		case O_PSI: o->psi_file = optarg; break;
		case O_PSI_TARGET: o->psi_target = corun_parse_double(PROG, "psi-target", optarg, 0, 0.999, true); break;
		case O_PSI_DEC: o->psi_decrease = corun_parse_double(PROG, "psi-decrease", optarg, 0, 0.999, true); break;
		case O_PSI_INC: o->psi_increase = corun_parse_double(PROG, "psi-increase-mbps", optarg, 0, 1e6, true); break;
		case O_BMIN: o->bound_min = corun_parse_double(PROG, "bound-min-mbps", optarg, 0, 1e9, true); break;
		case O_BMAX: o->bound_max = corun_parse_double(PROG, "bound-max-mbps", optarg, 0, 1e9, true); break;
		case O_CGROUP: o->cgroup = optarg; break;
		case O_DEVICE: {
			unsigned maj, min;
			char end;
			if (sscanf(optarg, "%u:%u%c", &maj, &min, &end) != 2)
				corun_usage_error(PROG, "--device: '%s' (expected MAJOR:MINOR such as 8:0)", optarg);
			o->device = optarg;
			break;
		}
		case O_FLOOR: o->floor_mbps = corun_parse_double(PROG, "throttle-floor-mbps", optarg, 0, 1e6, true); break;
		case O_MAXJOBS: o->max_jobs = (long)corun_parse_int(PROG, "max-jobs", optarg, 1, 1 << 20, false); break;
		case O_CHECK: check = optarg; break;
		case O_MAXAGE: max_age = corun_parse_double(PROG, "max-age-s", optarg, 0, 86400, true); break;
		case O_TABLE: table = optarg; break;
		case O_BENCH: bench = (long)corun_parse_int(PROG, "bench-decide", optarg, 1, 10000000, false); break;
		case O_ROUNDS: rounds = (long)corun_parse_int(PROG, "rounds", optarg, 1, 10000000, false); break;
		case O_CMPS: cmps = (int)corun_parse_int(PROG, "cmps", optarg, 1, MAX_CMPS, false); break;
		default: corun_default_option(PROG, VERSION, USAGE, c, argv);
		}
	}
	corun_no_operands(PROG, argc, argv);
	if (check) /* by default: three quanta late, plus start-up */
		return run_check(check, max_age > 0 ? max_age : 3 * o->timeslice_s + 2);
	if (table)
		return run_table(table);
	if (bench)
		return run_bench(bench, rounds, cmps);
	if (!o->events)
		corun_usage_error(PROG, "--job-events: missing (expected the runner's job event log)");
	if (!o->state_dir)
		corun_usage_error(PROG, "--state-dir: missing (expected a directory for the decision log)");
	if (o->bound_min > o->bound_max)
		corun_usage_error(PROG, "--bound-min-mbps: '%g' (expected <= --bound-max-mbps %g)", o->bound_min, o->bound_max);
	if (o->psi_file && (o->bound_mbps < o->bound_min || o->bound_mbps > o->bound_max))
		corun_usage_error(PROG, "--io-bound-mbps: '%g' (expected from --bound-min-mbps %g to --bound-max-mbps %g)",
				  o->bound_mbps, o->bound_min, o->bound_max);
	return run_daemon();
}
