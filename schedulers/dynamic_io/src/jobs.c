/* The job table, filled from the runner's job event log. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "flatjson.h"

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
		if (!strcmp(key, "pid")) {
			e->pid = v->num;
			e->seen |= 4;
		} else if (!strcmp(key, "starttime")) {
			e->starttime = v->num;
			e->seen |= 8;
		} else if (!strcmp(key, "cmp")) {
			e->cmp = v->num;
			e->seen |= 16;
		} else if (!strcmp(key, "t_s")) {
			e->t_s = v->num;
			e->seen |= 32;
		} else if (!strcmp(key, "mono_s")) {
			e->mono_s = v->num;
			e->seen |= 64;
		}
	}
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

void drop_job(size_t i, double now)
{
	struct job *j = &D.jobs[i];
	release(j, now);
	keep_done(j);
	sd_proc_close(&j->p);
	if (j->io_fd >= 0)
		close(j->io_fd);
	D.jobs[i] = D.jobs[--D.njobs];
}

static void job_start(const struct event *e)
{
	pid_t pid = (pid_t)e->pid;
	if (e->pid < 1 || e->pid > INT_MAX || e->cmp < 0 || e->cmp >= MAX_CMPS ||
	    e->starttime < 1) {
		log_note("refused", e->id, pid, "pid, start time or cmp out of range");
		D.n_refused++;
		return;
	}
	if ((long)D.njobs >= D.o.max_jobs) {
		log_note("refused", e->id, pid, "more jobs than --max-jobs");
		D.n_refused++;
		return;
	}
	struct sd_proc p;
	enum sd_open got = sd_proc_open(&p, pid, (unsigned long long)e->starttime);
	if (got != SD_OPEN_OK) {
		log_note("refused", e->id, pid,
			 got == SD_OPEN_GONE ? "process gone"
					     : "pid reused: start time differs from the job event");
		D.n_refused++;
		return;
	}
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/io", (int)pid);
	int io_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (io_fd < 0) {
		log_note("refused", e->id, pid, "cannot read its /proc/<pid>/io");
		sd_proc_close(&p);
		D.n_refused++;
		return;
	}
	struct job *j = &D.jobs[D.njobs++];
	memset(j, 0, sizeof *j);
	snprintf(j->id, sizeof j->id, "%s", e->id);
	j->p = p;
	j->cmp = (int)e->cmp;
	j->io_fd = io_fd;
	j->group = p.pgrp == pid;
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
		if (D.jobs[i].p.pid == (pid_t)e->pid && !strcmp(D.jobs[i].id, e->id)) {
			D.jobs[i].gone = true;
			drop_job(i, now);
			return;
		}
	}
}

int read_events(double now)
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
				log_note("bad_event", "", 0,
					 "a job event line that is not a job event");
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
