/* Holding a job and releasing it: SIGSTOP/SIGCONT of its process group (policy suspend),
 * or its own cgroup v1 blkio group with a limit carved out of the run's cap (policy throttle). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"

/* Signal the whole job: its process group when it leads one, else the leader.
 * The pidfd check first: the leader (or its zombie) still exists, so its pid,
 * and the process group named after it, are still this job's. */
int signal_job(struct job *j, int sig)
{
	if (j->gone || !sd_proc_alive(&j->p)) {
		j->gone = true;
		return -1;
	}
	if (j->group)
		return kill(-j->p.pid, sig);
	return sd_proc_signal(&j->p, sig);
}

static int cg_write_cap(const char *dir, const char *file, unsigned long long bps)
{
	char path[PATH_MAX + 64], text[96];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	snprintf(text, sizeof text, "%s %llu", D.o.device, bps);
	return sd_write_file(path, text);
}

static int cg_move(const char *dir, struct job *j)
{
	char path[PATH_MAX + 64], text[32];
	snprintf(path, sizeof path, "%s/cgroup.procs", dir);
	snprintf(text, sizeof text, "%d", (int)j->p.pid);
	int rc = sd_write_file(path, text);
	size_t nd;
	const pid_t *desc = job_descendants(j->p.pid, &nd);
	for (size_t i = 0; i < nd; i++) {
		snprintf(text, sizeof text, "%d", (int)desc[i]);
		(void)sd_write_file(path, text); /* a descendant may have exited */
	}
	return rc;
}

/* The parent's caps with what is carved out for throttled jobs, so that the
 * jobs of a run never share more than the emulated device's capacity: on
 * cgroup v1, blkio throttling is not hierarchical. */
void cg_set_parent_caps(void)
{
	if (D.cap_read)
		(void)cg_write_cap(D.o.cgroup, "blkio.throttle.read_bps_device",
				   D.cap_read - D.carved);
	if (D.cap_write)
		(void)cg_write_cap(D.o.cgroup, "blkio.throttle.write_bps_device",
				   D.cap_write - D.carved);
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
		name[k++] =
			(char)((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
					       (*s >= '0' && *s <= '9') || *s == '-' || *s == '_'
				       ? *s
				       : '_');
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

int hold(struct job *j, double now, double limit_mbps)
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

void release(struct job *j, double now)
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

unsigned long long read_cap(const char *file)
{
	char path[PATH_MAX + 64], buf[4096];
	snprintf(path, sizeof path, "%s/%s", D.o.cgroup, file);
	if (sd_read_small(path, buf, sizeof buf) < 0)
		return 0;
	size_t dl = strlen(D.o.device);
	for (char *line = buf; line && *line;
	     line = strchr(line, '\n'), line = line ? line + 1 : NULL)
		if (!strncmp(line, D.o.device, dl) && line[dl] == ' ')
			return strtoull(line + dl + 1, NULL, 10);
	return 0;
}
