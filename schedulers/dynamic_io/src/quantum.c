/* One quantum: the I/O Information Collector (Procedure 3), the PSI bound, the
 * Decision_Making_Module (decide.c, Procedure 4), then the actions and their log line. */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>

#include "corun_kernel.h"
#include "daemon.h"

static double usec_since(double t0)
{
	return (now_mono() - t0) * 1e6;
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

int quantum(void)
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
			if (!sd_proc_alive(&j->p)) { /* exited: its end event follows */
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
					double b = (overall < D.bound ? overall : D.bound) *
						   D.o.psi_decrease;
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
			.cmp = j->cmp,
			.state = j->state,
			.cur_mbps = j->cur_mbps,
			.key_mbps = j->key_mbps,
			.held_s = j->state == DIO_HELD ? now - j->held_since : 0,
			.protect = j->protect_until > now,
			.action = DIO_NONE,
		};
		if (j->cmp + 1 > ncmp)
			ncmp = j->cmp + 1;
		if (j->cur_mbps > 0 || j->state == DIO_HELD)
			io_jobs++;
	}
	struct dio_params p = { .bound_mbps = D.bound,
				.cmp_share = D.o.cmp_share,
				.max_held_s = D.o.max_suspend_s,
				.keep_io_running = (int)D.o.keep_io_running };
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
		corun_json_int(&lj, "pid", j->p.pid);
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
