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
#include "sched_daemon.h"

/* --check DIR: a daemon wrote DIR/status.json, is alive and on time. */
int run_check(const char *dir, double max_age)
{
	char buf[1024];
	double age;
	int rc = sd_check_heartbeat(PROG, dir, max_age, "quantum", buf, sizeof buf, &age);
	if (rc == CORUN_EXIT_OK)
		printf("running: last quantum %.2f s ago\n", age);
	return rc;
}

/* --decide-table FILE: lines "bound X", "cmp_share 0|1", "keep_io_running N" (each
 * required), "max_held_s X" (optional) and
 * jobs "NAME CMP run|held CUR_MBPS KEY_MBPS HELD_S PROTECT"; '#' comments. */
int run_table(const char *file)
{
	FILE *f = fopen(file, "r");
	if (!f)
		corun_usage_error(PROG, "--decide-table: '%s' (expected a readable file: %s)", file,
				  strerror(errno));
	/* the parameters a daemon gets from its manifest, stated by the table (max_held_s: only
	 * the fair variant's, 0 when absent) */
	struct dio_params p = { .max_held_s = 0 };
	int given = 0; /* 1 bound, 2 cmp_share, 4 keep_io_running */
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
			given |= 1;
			continue;
		}
		if (sscanf(line, " cmp_share %lf", &x) == 1) {
			p.cmp_share = x != 0;
			given |= 2;
			continue;
		}
		if (sscanf(line, " max_held_s %lf", &x) == 1) {
			p.max_held_s = x;
			continue;
		}
		if (sscanf(line, " keep_io_running %lf", &x) == 1) {
			p.keep_io_running = (int)x;
			given |= 4;
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
	if (given != 7) {
		corun_err(PROG,
			  "%s: %s missing (expected the lines bound X, cmp_share 0|1 and "
			  "keep_io_running N)",
			  file,
			  !(given & 1)   ? "bound"
			  : !(given & 2) ? "cmp_share"
					 : "keep_io_running");
		free(jobs);
		free(names);
		return CORUN_EXIT_USAGE;
	}
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
