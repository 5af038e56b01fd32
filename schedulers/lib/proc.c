/* The processes a daemon acts on: /proc reads, pidfds, a pid with its start time. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sched_daemon.h"

ssize_t sd_read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, cap - 1);
	int err = errno;
	close(fd);
	errno = err;
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

int sd_write_file(const char *path, const char *text)
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

int sd_proc_stat(pid_t pid, unsigned long long *starttime, pid_t *pgrp)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (sd_read_small(path, buf, sizeof buf) < 0)
		return -1;
	char *p = strrchr(buf, ')'); /* the command may hold spaces and parentheses */
	if (!p || p[1] != ' ')
		return -1;
	p += 2; /* field 3, the state */
	p = strchr(p, ' ');
	if (!p)
		return -1;
	p++;
	unsigned long long v = 0;
	for (int field = 4; field <= 22; field++) {
		char *end;
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

int sd_pidfd_open(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

int sd_pidfd_signal(int pidfd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

int sd_pidfd_getfd(int pidfd, int fd)
{
	return (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
}

enum sd_open sd_proc_open(struct sd_proc *p, pid_t pid, unsigned long long starttime)
{
	memset(p, 0, sizeof *p);
	p->pid = pid;
	p->pidfd = pid > 0 ? sd_pidfd_open(pid) : -1;
	if (p->pidfd < 0)
		return SD_OPEN_GONE;
	if (sd_proc_stat(pid, &p->starttime, &p->pgrp) < 0) {
		sd_proc_close(p);
		return SD_OPEN_GONE;
	}
	if (starttime != 0 && p->starttime != starttime) {
		sd_proc_close(p);
		return SD_OPEN_REUSED;
	}
	return SD_OPEN_OK;
}

bool sd_proc_alive(const struct sd_proc *p)
{
	return p->pidfd >= 0 && sd_pidfd_signal(p->pidfd, 0) == 0;
}

int sd_proc_signal(const struct sd_proc *p, int sig)
{
	return sd_pidfd_signal(p->pidfd, sig);
}

void sd_proc_close(struct sd_proc *p)
{
	if (p->pidfd >= 0)
		close(p->pidfd);
	p->pidfd = -1;
}

static uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t sd_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t sd_real_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}
