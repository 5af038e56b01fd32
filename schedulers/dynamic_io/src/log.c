/* The daemon's JSON output, in --state-dir: notes in decisions.jsonl, the heartbeat
 * status.json (rewritten every quantum) and summary.json (at exit). */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "corun_kernel.h"
#include "daemon.h"

void log_note(const char *what, const char *job_id, pid_t pid, const char *reason)
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

void write_status(double now)
{
	struct sd_file sf;
	FILE *f = sd_file_begin(&sf, D.o.state_dir, "status.json");
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
	(void)sd_file_commit(&sf);
}

void write_summary(void)
{
	FILE *f = sd_fopen_in(D.o.state_dir, "summary.json", "w");
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
	corun_json_double(&j, "cpu_user_s",
			  (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6);
	corun_json_double(&j, "cpu_sys_s",
			  (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
	corun_json_double(&j, "wall_s", now_mono() - D.start_mono);
	corun_json_end(&j);
	fclose(f);
}
