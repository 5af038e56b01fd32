/* pfs_read: the barrier of clients started apart, the tasks' pipes and one
 * task's life. */
#include "pfs_read.h"

#define BARRIER_FRESH_S 60
#define BARRIER_TIMEOUT_S 120

/* Make DIR and its missing parents. */
static int mkdir_p(const char *dir)
{
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s", dir);
	for (char *q = tmp + 1; *q; q++) {
		if (*q != '/')
			continue;
		*q = '\0';
		if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
			return -1;
		*q = '/';
	}
	return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* Files in DIR changed at most BARRIER_FRESH_S before SINCE (epoch s). */
static int64_t barrier_arrived(const char *dir, double since)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int64_t n = 0;
	struct dirent *e;
	char path[4400];
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		struct stat st;
		if (stat(path, &st) == 0 && (double)st.st_mtime >= since - BARRIER_FRESH_S)
			n++;
	}
	closedir(d);
	return n;
}

/* Meet the application's other clients at O->barrier; 0, or -1 with ERROR set. */
int barrier_wait(const struct options *o, char *error, size_t len)
{
	char path[4400];
	if (mkdir_p(o->barrier) != 0) {
		snprintf(error, len, "--barrier: cannot make %.120s: %s", o->barrier,
			 strerror(errno));
		return -1;
	}
	snprintf(path, sizeof path, "%s/app%" PRId64 "-rank%" PRId64, o->barrier, o->app, o->rank);
	FILE *f = fopen(path, "w");
	if (!f || fclose(f) != 0) {
		snprintf(error, len, "--barrier: cannot write %.150s", path);
		return -1;
	}
	double now = corun_epoch_s(), end = corun_monotonic_s() + BARRIER_TIMEOUT_S;
	struct timespec nap = { .tv_sec = 0, .tv_nsec = 1000000 };
	int64_t n;
	while ((n = barrier_arrived(o->barrier, now)) < o->barrier_count) {
		if (corun_monotonic_s() > end) {
			snprintf(error, len,
				 "--barrier: %" PRId64 " of %" PRId64
				 " clients arrived within %d s",
				 n, o->barrier_count, BARRIER_TIMEOUT_S);
			return -1;
		}
		nanosleep(&nap, NULL);
	}
	return 0;
}

/* Move N bytes between FD and BUF (write(2) with TO_FD, else read(2)), again
 * after a signal or a short transfer; 0, or -1 on an error or end of file. */
static int transfer_all(int fd, char *buf, size_t n, bool to_fd)
{
	while (n) {
		ssize_t k = to_fd ? write(fd, buf, n) : read(fd, buf, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		buf += k;
		n -= (size_t)k;
	}
	return 0;
}

int write_all(int fd, const void *p, size_t n)
{
	return transfer_all(fd, (char *)(uintptr_t)p, n, true);
}

int read_all(int fd, void *p, size_t n)
{
	return transfer_all(fd, p, n, false);
}

/* A task: open, then per phase: say ready, wait for go, run, send the result. */
int task_main(const struct options *o, int64_t task, int go_fd, int res_fd,
	      const enum phase *phases, int n_phases)
{
	struct client c;
	memset(&c, 0, sizeof c);
	struct task_result r;
	memset(&r, 0, sizeof r);
	char name[4096];
	if (o->file_per_process)
		snprintf(name, sizeof name, "%s.%08" PRId64, o->file, o->rank + task);
	else
		snprintf(name, sizeof name, "%s", o->file);
	unsigned char *buf = aligned_alloc(4096, (size_t)((o->transfer + 4095) / 4096 * 4096));
	if (!buf)
		fail(&r, ENOMEM, "%s", "out of memory");
	bool opened_for_write = false;
	if (!r.error)
		client_init(&c, o, &r);
	for (int p = 0; p < n_phases; p++) {
		bool want_write = phases[p] == PHASE_WRITE;
		if (!r.error && (p == 0 || want_write != opened_for_write)) {
			client_open(&c, o, name, want_write, &r);
			opened_for_write = want_write;
		}
		struct task_result ready = r;
		char go;
		if (write_all(res_fd, &ready, sizeof ready) != 0 || read_all(go_fd, &go, 1) != 0)
			break;
		struct task_result pr;
		memset(&pr, 0, sizeof pr);
		if (r.error)
			pr = r;
		else
			run_phase(&c, o, phases[p], task, buf, &pr);
		if (write_all(res_fd, &pr, sizeof pr) != 0)
			break;
		if (pr.error)
			r = pr;
	}
	client_close(&c);
	free(buf);
	return r.error ? CORUN_EXIT_RUNTIME : CORUN_EXIT_OK;
}
