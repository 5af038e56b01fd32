#define _GNU_SOURCE
#include "modes.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <limits.h>

#include "corun_kernel.h"
#include "decide.h"
#include "flatjson.h"

/* --check DIR: a daemon wrote DIR/status.json, is alive and on time. */
struct status {
	double pid, mono_s;
	int seen;
};

static void status_member(const char *key, const struct fj_value *v, void *ctx)
{
	struct status *s = ctx;
	if (v->type != FJ_NUMBER)
		return;
	if (!strcmp(key, "pid")) {
		s->pid = v->num;
		s->seen |= 1;
	}
	if (!strcmp(key, "mono_s")) {
		s->mono_s = v->num;
		s->seen |= 2;
	}
}

int run_check(const char *dir, double max_age)
{
	char path[PATH_MAX], buf[1024];
	snprintf(path, sizeof path, "%s/status.json", dir);
	double until = now_mono() + 5;
	while (read_small(path, buf, sizeof buf) < 0) {
		if (now_mono() > until) {
			corun_err(PROG, "not running: no heartbeat %s", path);
			return CORUN_EXIT_RUNTIME;
		}
		usleep(20000);
	}
	struct status s = { 0, 0, 0 };
	if (fj_parse(buf, status_member, &s) < 0 || s.seen != 3) {
		corun_err(PROG, "%s: not a heartbeat", path);
		return CORUN_EXIT_RUNTIME;
	}
	if (kill((pid_t)s.pid, 0) < 0 && errno == ESRCH) {
		corun_err(PROG, "not running: pid %.0f has exited", s.pid);
		return CORUN_EXIT_RUNTIME;
	}
	double age = now_mono() - s.mono_s;
	if (age > max_age) {
		corun_err(PROG, "not in effect: last quantum %.1f s ago (more than %.1f s)", age,
			  max_age);
		return CORUN_EXIT_RUNTIME;
	}
	printf("running: pid %.0f, last quantum %.2f s ago\n", s.pid, age);
	return CORUN_EXIT_OK;
}

/* --decide-table FILE: lines "bound X", "cmp_share 0|1", "max_held_s X",
 * "keep_io_running N" and
 * jobs "NAME CMP run|held CUR_MBPS KEY_MBPS HELD_S PROTECT"; '#' comments. */
int run_table(const char *file)
{
	FILE *f = fopen(file, "r");
	if (!f)
		corun_usage_error(PROG, "--decide-table: '%s' (expected a readable file: %s)", file,
				  strerror(errno));
	struct dio_params p = { .bound_mbps = 40, .cmp_share = true, .max_held_s = 0 };
	size_t cap = 1024, n = 0;
	struct dio_job *jobs = calloc(cap, sizeof *jobs);
	char(*names)[64] = calloc(cap, sizeof *names);
	char line[512];
	int lineno = 0, ncmp = 0;
	while (fgets(line, sizeof line, f)) {
		lineno++;
		char *h = strchr(line, '#');
		if (h)
			*h = '\0';
		char name[64], st[16];
		double x;
		int cmp, prot;
		double cur, key, held;
		if (sscanf(line, " %63s", name) != 1)
			continue;
		if (sscanf(line, " bound %lf", &x) == 1) {
			p.bound_mbps = x;
			continue;
		}
		if (sscanf(line, " cmp_share %lf", &x) == 1) {
			p.cmp_share = x != 0;
			continue;
		}
		if (sscanf(line, " max_held_s %lf", &x) == 1) {
			p.max_held_s = x;
			continue;
		}
		if (sscanf(line, " keep_io_running %lf", &x) == 1) {
			p.keep_io_running = (int)x;
			continue;
		}
		if (n == cap ||
		    sscanf(line, " %63s %d %15s %lf %lf %lf %d", name, &cmp, st, &cur, &key, &held,
			   &prot) != 7 ||
		    cmp < 0 || cmp >= MAX_CMPS || (strcmp(st, "run") && strcmp(st, "held"))) {
			corun_err(
				PROG,
				"%s:%d: expected 'NAME CMP run|held CUR_MBPS KEY_MBPS HELD_S PROTECT'",
				file, lineno);
			fclose(f);
			free(jobs);
			free(names);
			return CORUN_EXIT_USAGE;
		}
		snprintf(names[n], sizeof names[n], "%s", name);
		jobs[n] = (struct dio_job){ .cmp = cmp,
					    .state = strcmp(st, "run") ? DIO_HELD : DIO_RUNNING,
					    .cur_mbps = cur,
					    .key_mbps = key,
					    .held_s = held,
					    .protect = prot != 0 };
		if (cmp + 1 > ncmp)
			ncmp = cmp + 1;
		n++;
	}
	fclose(f);
	struct dio_work w;
	if (dio_work_init(&w, n, ncmp) < 0)
		return CORUN_EXIT_RUNTIME;
	dio_decide(jobs, n, ncmp, &p, &w);
	struct corun_json j;
	corun_json_begin(&j, stdout);
	corun_json_double(&j, "overall_before_mbps", w.overall_before);
	corun_json_double(&j, "overall_after_mbps", w.overall_after);
	corun_json_array_begin(&j, "actions");
	for (size_t k = 0; k < w.nseq; k++) {
		corun_json_object_begin(&j, NULL);
		corun_json_str(&j, "job", names[w.seq[k]]);
		corun_json_str(&j, "action", dio_action_name(jobs[w.seq[k]].action));
		corun_json_object_end(&j);
	}
	corun_json_array_end(&j);
	corun_json_end(&j);
	dio_work_free(&w);
	free(jobs);
	free(names);
	return corun_flush_result(PROG) < 0 ? CORUN_EXIT_RUNTIME : CORUN_EXIT_OK;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* --bench-decide N: the decision alone on N jobs with random rates, state
 * carried from round to round as in a run. */
int run_bench(long n, long rounds, int ncmp)
{
	size_t nn = (size_t)n;
	struct dio_job *jobs = calloc(nn, sizeof *jobs);
	double *us = calloc((size_t)rounds, sizeof *us);
	struct dio_work w;
	if (!jobs || !us || dio_work_init(&w, nn, ncmp) < 0)
		return CORUN_EXIT_RUNTIME;
	unsigned seed = 42;
	for (size_t i = 0; i < nn; i++)
		jobs[i].cmp = (int)(i % (size_t)ncmp);
	/* bound: about half the offered load, so both branches run */
	struct dio_params p = { .bound_mbps = (double)n * 2.5, .cmp_share = true, .max_held_s = 0 };
	for (long r = 0; r < rounds; r++) {
		for (size_t i = 0; i < nn; i++) {
			double rate = (double)(rand_r(&seed) % 1000) / 100.0;
			jobs[i].cur_mbps = jobs[i].state == DIO_HELD ? 0 : rate;
			if (jobs[i].state == DIO_RUNNING)
				jobs[i].key_mbps = rate;
		}
		double t0 = now_mono();
		dio_decide(jobs, nn, ncmp, &p, &w);
		us[r] = (now_mono() - t0) * 1e6;
		for (size_t k = 0; k < w.nseq; k++) {
			struct dio_job *j = &jobs[w.seq[k]];
			j->state = j->action == DIO_HOLD ? DIO_HELD : DIO_RUNNING;
		}
	}
	double sum = 0;
	for (long r = 0; r < rounds; r++)
		sum += us[r];
	qsort(us, (size_t)rounds, sizeof *us, cmp_double);
	struct corun_json j;
	corun_json_begin(&j, stdout);
	corun_json_int(&j, "jobs", n);
	corun_json_int(&j, "cmps", ncmp);
	corun_json_int(&j, "rounds", rounds);
	corun_json_double(&j, "mean_us", sum / (double)rounds);
	corun_json_double(&j, "p50_us", us[rounds / 2]);
	corun_json_double(&j, "p99_us", us[(rounds * 99) / 100]);
	corun_json_double(&j, "max_us", us[rounds - 1]);
	corun_json_end(&j);
	dio_work_free(&w);
	free(jobs);
	free(us);
	return corun_flush_result(PROG) < 0 ? CORUN_EXIT_RUNTIME : CORUN_EXIT_OK;
}
