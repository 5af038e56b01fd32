/* The daemon's other modes: --restore (undo what a killed daemon left), --check (is a daemon
 * alive, on time and the ranks waiting as the scheme says), --dump-shm (the segment's slots)
 * and --decide-table (one CC decision on a hand-made table). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cosched.h"
/* --restore DIR: every process of DIR/touched.tsv that is still the one journalled (same
 * start time) gets its policy, priority and nice value back, and SIGCONT. */
int run_restore(const char *dir)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/touched.tsv", dir);
	FILE *f = fopen(path, "r");
	if (!f) {
		if (errno == ENOENT) { /* the daemon never touched a process */
			printf("{\"restored\":0,\"gone\":0}\n");
			return CORUN_EXIT_OK;
		}
		corun_err(PROG, "--restore: '%s': %s", path, strerror(errno));
		return CORUN_EXIT_RUNTIME;
	}
	int pid, policy, prio, nice;
	unsigned long long st;
	long restored = 0, gone = 0, failed = 0;
	while (fscanf(f, "%d %llu %d %d %d", &pid, &st, &policy, &prio, &nice) == 5) {
		struct sd_proc p;
		if (st == 0 || sd_proc_open(&p, pid, st) != SD_OPEN_OK) { /* exited, or reused */
			gone++;
			continue;
		}
		struct sched_param sp = { .sched_priority = prio };
		int rc = sched_setscheduler(pid, policy, &sp);
		rc |= setpriority(PRIO_PROCESS, (id_t)pid, nice);
		rc |= sd_proc_signal(&p, SIGCONT);
		sd_proc_close(&p);
		if (rc == 0)
			restored++;
		else
			failed++;
	}
	fclose(f);
	printf("{\"restored\":%ld,\"gone\":%ld,\"failed\":%ld}\n", restored, gone, failed);
	return failed ? CORUN_EXIT_RUNTIME : CORUN_EXIT_OK;
}

/* --check DIR: the daemon is alive, on time, and no rank waits otherwise than its scheme says. */
int run_check(const char *dir, double max_age)
{
	char buf[1024];
	double age;
	int rc = sd_check_heartbeat(PROG, dir, max_age, "heartbeat", buf, sizeof buf, &age);
	if (rc != CORUN_EXIT_OK)
		return rc;
	long mismatch = 0;
	char *m = strstr(buf, "\"wait_mode_mismatches\":");
	if (m && sscanf(m, "\"wait_mode_mismatches\":%ld", &mismatch) == 1 && mismatch > 0) {
		corun_err(PROG,
			  "not in effect: %ld ranks wait otherwise than the scheme says "
			  "(their environment is not the one in rank_env.json)",
			  mismatch);
		return CORUN_EXIT_RUNTIME;
	}
	printf("running: heartbeat %.2f s ago\n", age);
	return CORUN_EXIT_OK;
}

int run_dump(const char *name)
{
	int fd = shm_open(name, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0) {
		corun_err(PROG, "--dump-shm: '%s': %s", name, strerror(errno));
		return CORUN_EXIT_RUNTIME;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(struct cs_shm)) {
		corun_err(PROG, "--dump-shm: '%s': not a corun-cosched segment", name);
		close(fd);
		return CORUN_EXIT_RUNTIME;
	}
	struct cs_shm *shm = mmap(NULL, sizeof *shm, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (shm == MAP_FAILED || shm->magic != CS_MAGIC ||
	    shm->slot_size != sizeof(struct cs_slot)) {
		corun_err(PROG, "--dump-shm: '%s': not a corun-cosched segment of this version",
			  name);
		return CORUN_EXIT_RUNTIME;
	}
	struct corun_json j;
	corun_json_begin(&j, stdout);
	corun_json_int(&j, "daemon_pid", shm->daemon_pid);
	corun_json_array_begin(&j, "slots");
	for (int i = 0; i < CS_SLOTS; i++) {
		const struct cs_slot *s = &shm->slot[i];
		if (s->pid == 0)
			continue;
		struct done_rank d = { .rank = s->rank,
				       .pid = s->pid,
				       .waits = s->waits,
				       .msgs = s->msgs,
				       .wait_ns = s->wait_ns,
				       .md_ns = s->md_ns,
				       .arr_md_n = s->arr_md_n,
				       .arr_md_ns = s->arr_md_ns,
				       .blocks = s->blocks,
				       .coll_calls = s->coll_calls,
				       .arrivals = s->arrivals,
				       .wakeups = s->wakeups,
				       .boosts = s->boosts };
		snprintf(d.job, sizeof d.job, "%.*s", CS_JOBLEN - 1, s->job);
		corun_json_object_begin(&j, NULL);
		corun_json_int(&j, "slot", i);
		json_counters(&j, &d);
		corun_json_str(&j, "wait_mode", s->wait_mode < 3 ? WAITS[s->wait_mode] : "?");
		corun_json_str(&j, "send_mode", s->send_mode < 3 ? WAITS[s->send_mode] : "?");
		corun_json_int(&j, "state", s->state);
		corun_json_double(&j, "block_s", (double)s->block_ns / 1e9);
		corun_json_int(&j, "boost_prio", s->boost_prio);
		corun_json_object_end(&j);
	}
	corun_json_array_end(&j);
	corun_json_end(&j);
	return CORUN_EXIT_OK;
}

/* --decide-table FILE: lines "mpl N", "wr_reduce min|max" and, before a node
 * given by ed_us, "cost_switch_us X" (the manifest's parameters: each stated,
 * none assumed), then nodes "node NAME erl_us X" or "node NAME ed_us X enp Y"
 * (eq. 1 with the cost given above), then candidates
 * "proc NAME [msg NODE AGE_US]...", in that order; '#' starts a comment. */
#define T_MAX 64

static int table_error(const char *file, int line, const char *what)
{
	corun_err(PROG, "%s:%d: %s", file, line, what);
	return CORUN_EXIT_USAGE;
}

static bool num(const char *s, double *out)
{
	char *end;
	if (!s)
		return false;
	errno = 0;
	*out = strtod(s, &end);
	return end != s && !*end && !errno && isfinite(*out);
}

int run_table(const char *file)
{
	FILE *f = fopen(file, "r");
	if (!f) {
		corun_err(PROG, "--decide-table: '%s': %s", file, strerror(errno));
		return CORUN_EXIT_USAGE;
	}
	struct cc_params par = { .erl_max_us = 0, .reduce = CC_WR_MIN };
	double cost = 0, mpl = 0;
	bool have_cost = false, have_reduce = false;
	static char nname[T_MAX][32], pname[T_MAX][32];
	static double nerl[T_MAX];
	static struct cc_msg msgs[T_MAX][MAX_PEND];
	static struct cc_cand c[T_MAX];
	size_t nn = 0, np = 0, ord[T_MAX];
	char line[1024];
	int ln = 0, rc = CORUN_EXIT_OK;
	while (rc == CORUN_EXIT_OK && fgets(line, sizeof line, f)) {
		ln++;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *tok[2 + 3 * MAX_PEND + 1];
		int nt = 0;
		for (char *t = strtok(line, " \t\r\n"); t && nt < (int)(sizeof tok / sizeof tok[0]);
		     t = strtok(NULL, " \t\r\n"))
			tok[nt++] = t;
		if (nt == 0)
			continue;
		double x, y;
		bool params_late = nn > 0 || np > 0;
		if (!strcmp(tok[0], "mpl")) {
			if (params_late || nt != 2 || !num(tok[1], &mpl) || mpl < 1 || mpl > 64 ||
			    mpl != floor(mpl))
				rc = table_error(
					file, ln,
					"mpl: expected an integer from 1 to 64, before nodes");
			par.erl_max_us = mpl * CC_ERL_PER_MPL_US;
		} else if (!strcmp(tok[0], "cost_switch_us")) {
			if (params_late || nt != 2 || !num(tok[1], &cost) || cost < 0)
				rc = table_error(
					file, ln,
					"cost_switch_us: expected a number >= 0, before nodes");
			have_cost = true;
		} else if (!strcmp(tok[0], "wr_reduce")) {
			if (nt == 2 && !strcmp(tok[1], "min"))
				par.reduce = CC_WR_MIN;
			else if (nt == 2 && !strcmp(tok[1], "max"))
				par.reduce = CC_WR_MAX;
			else
				rc = table_error(file, ln, "wr_reduce: expected min or max");
			have_reduce = true;
		} else if (!strcmp(tok[0], "node")) {
			if (np > 0 || nn == T_MAX)
				rc = table_error(file, ln,
						 "node: expected before procs, 64 at most");
			else if (nt == 4 && !strcmp(tok[2], "erl_us") && num(tok[3], &x))
				nerl[nn] = x;
			else if (nt == 6 && !strcmp(tok[2], "ed_us") && !have_cost)
				rc = table_error(file, ln,
						 "a node by ed_us: expected cost_switch_us before");
			else if (nt == 6 && !strcmp(tok[2], "ed_us") && num(tok[3], &x) && x >= 0 &&
				 !strcmp(tok[4], "enp") && num(tok[5], &y) && y >= 0)
				nerl[nn] = cc_erl_us(x, y, cost);
			else
				rc = table_error(file, ln,
						 "expected 'node NAME erl_us X' or "
						 "'node NAME ed_us X enp Y'");
			if (rc == CORUN_EXIT_OK)
				snprintf(nname[nn++], sizeof nname[0], "%s", tok[1]);
		} else if (!strcmp(tok[0], "proc")) {
			if (np == T_MAX || nt < 2 || (nt - 2) % 3 != 0 || (nt - 2) / 3 > MAX_PEND) {
				rc = table_error(file, ln,
						 "expected 'proc NAME [msg NODE AGE_US]...' "
						 "(64 procs, 32 messages at most)");
				break;
			}
			c[np] = (struct cc_cand){ 0 };
			for (int t = 2; t < nt && rc == CORUN_EXIT_OK; t += 3) {
				size_t k = 0;
				while (k < nn && strcmp(nname[k], tok[t + 1]))
					k++;
				if (strcmp(tok[t], "msg") || k == nn || !num(tok[t + 2], &x) ||
				    x < 0) {
					rc = table_error(file, ln,
							 "expected 'msg NODE AGE_US' with a node "
							 "named before and an age >= 0");
					break;
				}
				msgs[np][c[np].nmsg++] = (struct cc_msg){ nerl[k], x };
				if (x > c[np].first_age_us)
					c[np].first_age_us = x;
			}
			c[np].msgs = msgs[np];
			snprintf(pname[np++], sizeof pname[0], "%s", tok[1]);
		} else {
			rc = table_error(file, ln,
					 "expected mpl, cost_switch_us, wr_reduce, node or proc");
		}
	}
	fclose(f);
	if (rc != CORUN_EXIT_OK)
		return rc;
	if (mpl == 0 || !have_reduce) {
		corun_err(PROG, "%s: %s missing (expected the lines mpl N and wr_reduce min|max)",
			  file, mpl == 0 ? "mpl" : "wr_reduce");
		return CORUN_EXIT_USAGE;
	}
	size_t k = cc_order(c, np, &par, ord);
	struct corun_json j;
	corun_json_begin(&j, stdout);
	corun_json_double(&j, "erl_max_us", par.erl_max_us);
	corun_json_str(&j, "wr_reduce", par.reduce == CC_WR_MIN ? "min" : "max");
	corun_json_object_begin(&j, "erl_us");
	for (size_t i = 0; i < nn; i++)
		corun_json_double(&j, nname[i], nerl[i]);
	corun_json_object_end(&j);
	corun_json_array_begin(&j, "procs");
	for (size_t i = 0; i < np; i++) {
		corun_json_object_begin(&j, NULL);
		corun_json_str(&j, "name", pname[i]);
		corun_json_bool(&j, "pending", c[i].nmsg > 0);
		corun_json_double(&j, "wc", c[i].wc);
		corun_json_double(&j, "wr", c[i].wr);
		corun_json_double(&j, "w", c[i].w);
		corun_json_object_end(&j);
	}
	corun_json_array_end(&j);
	corun_json_bool(&j, "conflict", k >= 2);
	corun_json_array_begin(&j, "order");
	for (size_t r = 0; r < k; r++)
		corun_json_str(&j, NULL, pname[ord[r]]);
	corun_json_array_end(&j);
	if (k)
		corun_json_str(&j, "choice", pname[ord[0]]);
	else
		corun_json_null(&j, "choice");
	corun_json_end(&j);
	return CORUN_EXIT_OK;
}
