/* Set-up, the loop and the one teardown: everything that can be wrong is found before
 * any job is touched; signals arrive through a signalfd and quanta through a timerfd, so no
 * work happens in a signal handler; every way out releases every held job. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "corun_kernel.h"
#include "daemon.h"

struct daemon D;

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

int run_daemon(void)
{
	struct opts *o = &D.o;
	D.bound = o->bound_mbps;
	D.psi_fd = -1;
	D.ev_fd = -1;
	D.exit_reason = "error";
	/* everything that can be wrong is found before any job is touched */
	if (o->policy == P_THROTTLE) {
		char probe[PATH_MAX + 64];
		snprintf(probe, sizeof probe, "%s/blkio.throttle.read_bps_device", o->cgroup);
		if (access(probe, W_OK) < 0) {
			corun_err(
				PROG,
				"--cgroup: '%s' (expected a writable cgroup v1 blkio group; "
				"per-job limits under cgroup v2 need per-job leaf groups, not done)",
				o->cgroup);
			return CORUN_EXIT_SKIPPED;
		}
		D.cap_read = read_cap("blkio.throttle.read_bps_device");
		D.cap_write = read_cap("blkio.throttle.write_bps_device");
	}
	if (o->psi_file) {
		D.psi_fd = open(o->psi_file, O_RDONLY | O_CLOEXEC);
		unsigned long long t;
		if (D.psi_fd < 0 || psi_read(&t) < 0) {
			corun_err(
				PROG,
				"--psi-file: '%s' (expected a readable PSI file with a 'some' line: "
				"a kernel with CONFIG_PSI and psi enabled)",
				o->psi_file);
			return CORUN_EXIT_SKIPPED;
		}
	}
	D.ev_fd = open(o->events, O_RDONLY | O_CLOEXEC);
	if (D.ev_fd < 0) {
		corun_usage_error(PROG, "--job-events: '%s' (expected a readable file: %s)",
				  o->events, strerror(errno));
	}
	struct stat sb;
	if (stat(o->state_dir, &sb) < 0 || !S_ISDIR(sb.st_mode))
		corun_usage_error(PROG, "--state-dir: '%s' (expected an existing directory)",
				  o->state_dir);
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
	/* signals arrive through a signalfd: no work in handlers; the runner dies: resume
	 * everything, exit */
	int sfd = sd_signals_open();
	if (sfd == -2) {
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
		struct pollfd pf[2] = { { .fd = sfd, .events = POLLIN },
					{ .fd = tfd, .events = POLLIN } };
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			rc = CORUN_EXIT_RUNTIME;
			break;
		}
		if (pf[0].revents & POLLIN) {
			const char *sig = sd_signal_read(sfd);
			if (sig) {
				D.exit_reason = sig;
				break;
			}
		}
		if (pf[1].revents & POLLIN) {
			uint64_t expirations;
			if (read(tfd, &expirations, sizeof expirations) !=
			    (ssize_t)sizeof expirations)
				continue;
			if (quantum() < 0) {
				corun_err(PROG, "reading the job events failed: %s",
					  strerror(errno));
				rc = CORUN_EXIT_RUNTIME;
				break;
			}
		}
	}
	teardown();
	return rc;
}
