/* Reading /proc: a job's I/O counters and descendants, PSI. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "corun_kernel.h"
#include "daemon.h"

double now_mono(void)
{
	return corun_monotonic_s();
}

/* ------------------------------------------------------------------ I/O counters */

static int parse_io(const char *buf, enum counter c, unsigned long long *out)
{
	unsigned long long rchar = 0, wchar = 0, rb = 0, wb = 0;
	int seen = 0;
	for (const char *line = buf; line && *line;
	     line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		unsigned long long v;
		if (sscanf(line, "rchar: %llu", &v) == 1) {
			rchar = v;
			seen |= 1;
		} else if (sscanf(line, "wchar: %llu", &v) == 1) {
			wchar = v;
			seen |= 2;
		} else if (sscanf(line, "read_bytes: %llu", &v) == 1) {
			rb = v;
			seen |= 4;
		} else if (sscanf(line, "write_bytes: %llu", &v) == 1) {
			wb = v;
			seen |= 8;
		}
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
	if (sd_read_small(path, buf, sizeof buf) < 0)
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

const pid_t *job_descendants(pid_t leader, size_t *n)
{
	*n = descendants(leader, desc_buf, MAX_DESC);
	return desc_buf;
}

int job_bytes(struct job *j, unsigned long long *bytes)
{
	char buf[512];
	ssize_t n = pread(j->io_fd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (parse_io(buf, D.o.counter, bytes) < 0)
		return -1;
	if (D.o.descendants) {
		size_t nd;
		const pid_t *desc = job_descendants(j->p.pid, &nd);
		for (size_t i = 0; i < nd; i++) {
			char path[64];
			unsigned long long v;
			snprintf(path, sizeof path, "/proc/%d/io", (int)desc[i]);
			if (sd_read_small(path, buf, sizeof buf) > 0 &&
			    parse_io(buf, D.o.counter, &v) == 0)
				*bytes += v;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ PSI */

int psi_read(unsigned long long *total_us)
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
