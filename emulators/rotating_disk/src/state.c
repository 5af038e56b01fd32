/* The state file of the FUSE front end (serve.c): status, model and counters as
 * one JSON object. */
#define _GNU_SOURCE
#include "server.h"

#include "corun_kernel.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "report.h"

/* ---- the state file ------------------------------------------------------ */

static double late_pct(const struct server *s, double q)
{
	uint64_t want, seen = 0;

	if (s->late_n == 0)
		return 0;
	want = (uint64_t)((double)s->late_n * q);
	if (want >= s->late_n)
		want = s->late_n - 1;
	for (size_t i = 0; i < LATE_BINS; i++) {
		seen += s->late_hist[i];
		if (seen > want) {
			double upper = (double)(i + 1) * LATE_BIN_US / 1e3;

			return upper < s->late_max_ms ? upper : s->late_max_ms;
		}
	}
	return s->late_max_ms;
}

void write_state(struct server *s, const char *status, int argc, char *argv[])
{
	const char *path = s->c->state;
	size_t len = strlen(path) + 32;
	char *tmp = malloc(len);
	struct rusage ru;
	struct corun_json j;
	uint64_t nreq;
	double cpu_user, cpu_sys;
	FILE *f;

	if (!tmp)
		return;
	snprintf(tmp, len, "%s.tmp.%ld", path, (long)getpid());
	f = fopen(tmp, "w");
	if (!f) {
		corun_err(RD_PROG, "cannot write %s: %s", tmp, strerror(errno));
		free(tmp);
		return;
	}
	getrusage(RUSAGE_SELF, &ru);
	cpu_user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
	cpu_sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	pthread_mutex_lock(&s->mu);
	nreq = s->reads + s->writes;
	corun_json_begin(&j, f);
	corun_json_header(&j, "rotating_disk", RD_VERSION, argc, argv, s->start_epoch_s);
	corun_json_str(&j, "status", status);
	corun_json_int(&j, "pid", (int64_t)getpid());
	corun_json_str(&j, "mount", s->c->mount);
	corun_json_str(&j, "file", s->c->name);
	corun_json_double(&j, "now_epoch_s", corun_epoch_s());
	corun_json_double(&j, "uptime_s", now_ms(s) / 1e3);
	corun_json_int(&j, "rt_priority", s->rt_priority);
	corun_json_bool(&j, "timed", !s->untimed);
	if (s->rt_error[0])
		corun_json_str(&j, "rt_priority_error", s->rt_error);
	rd_json_model(&j, s->c, &s->m);
	corun_json_object_begin(&j, "counters");
	corun_json_int(&j, "requests", (int64_t)nreq);
	corun_json_int(&j, "reads", (int64_t)s->reads);
	corun_json_int(&j, "writes", (int64_t)s->writes);
	corun_json_int(&j, "writes_acknowledged_early", (int64_t)s->acked);
	corun_json_int(&j, "bytes_read", (int64_t)s->bytes_read);
	corun_json_int(&j, "bytes_written", (int64_t)s->bytes_written);
	corun_json_int(&j, "seeks", (int64_t)s->seeks);
	corun_json_int(&j, "cache_hits", (int64_t)s->hits);
	corun_json_int(&j, "streamed", (int64_t)s->streamed);
	corun_json_int(&j, "queued", (int64_t)s->npend);
	corun_json_double(&j, "busy_ms", s->busy_ms);
	corun_json_double(&j, "model_clock_ms", s->m.busy_until);
	corun_json_int(&j, "lateness_samples", (int64_t)s->late_n);
	corun_json_double(&j, "lateness_p50_ms", late_pct(s, 0.50));
	corun_json_double(&j, "lateness_p99_ms", late_pct(s, 0.99));
	corun_json_double(&j, "lateness_max_ms", s->late_max_ms);
	corun_json_double(&j, "cpu_user_s", cpu_user);
	corun_json_double(&j, "cpu_sys_s", cpu_sys);
	if (nreq)
		corun_json_double(&j, "cpu_us_per_request",
				  (cpu_user + cpu_sys) * 1e6 / (double)nreq);
	else
		corun_json_null(&j, "cpu_us_per_request");
	corun_json_int(&j, "errors", (int64_t)s->errors);
	corun_json_int(&j, "untimed_requests", (int64_t)s->untimed_requests);
	corun_json_int(&j, "untimed_bytes", (int64_t)s->untimed_bytes);
	corun_json_object_end(&j);
	pthread_mutex_unlock(&s->mu);
	corun_json_end(&j);
	if (fflush(f) || fsync(fileno(f))) {
		corun_err(RD_PROG, "cannot write %s: %s", tmp, strerror(errno));
		fclose(f);
		unlink(tmp);
	} else if (fclose(f) || rename(tmp, path)) {
		corun_err(RD_PROG, "cannot write %s: %s", path, strerror(errno));
		unlink(tmp);
	}
	free(tmp);
}
