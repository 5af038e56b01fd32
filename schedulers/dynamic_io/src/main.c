/* corun-dynamic-io: the user-level dynamic I/O-aware batch scheduler of
 * paper 000 (section 3), and the variants built on it.
 *
 * Every TIMESLICE it reads the I/O counters of each job the runner started
 * (from /proc/<pid>/io), and runs the decision-making module (decide.c,
 * Procedure 4) on the per-job rates: above IO_BOUND_INTERVAL it holds jobs,
 * below it releases one held job per CMP. Holding is SIGSTOP of the job's
 * process group (policy suspend) or a cgroup I/O limit (policy throttle).
 *
 * Jobs come from the runner's job event log (JSON lines, --job-events): a
 * "start" event names the job's pid and its start time (field 22 of
 * /proc/<pid>/stat); a pid whose start time differs is another process and is
 * never signalled. The leader is held through a pidfd, so a signal cannot
 * reach a process that reused its pid.
 *
 * Safety: SIGTERM, SIGINT, SIGHUP, the runner's death (PR_SET_PDEATHSIG) and
 * every error path go through one teardown that releases every job this
 * daemon holds. If the daemon is killed with SIGKILL, the runner resumes the
 * jobs (corun/runner.py). Parameters are checked before anything is touched.
 *
 * Output, in --state-dir: decisions.jsonl (one line per quantum),
 * status.json (heartbeat, rewritten every quantum) and summary.json (at exit).
 *
 * Other modes: --check DIR (is a daemon alive and on time), --decide-table
 * FILE (one decision on a hand-made table), --bench-decide N (decision time).
 *
 * This file holds the options; daemon.h says where the rest is.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "corun_kernel.h"
#include "daemon.h"

#define VERSION "1.0"

static const char USAGE[] =
	"usage: " PROG " --job-events FILE --state-dir DIR [options]\n"
	"       " PROG " --check DIR [--max-age-s S]\n"
	"       " PROG " --decide-table FILE\n"
	"       " PROG " --bench-decide N [--rounds R] [--cmps C]\n"
	"\n"
	"The dynamic I/O-aware scheduler of paper 000 (Procedure 4).\n"
	"  --job-events FILE        the runner's job event log (JSON lines), followed\n"
	"  --state-dir DIR          writes decisions.jsonl, status.json, summary.json\n"
	"  --timeslice-s S          quantum, seconds (default 1; 0.05 to 60)\n"
	"  --io-bound-mbps X        IO_BOUND_INTERVAL, MB/s, MB = 10^6 bytes (default 40)\n"
	"  --counter C              storage (read_bytes + write_bytes, default), read_bytes,\n"
	"                           write_bytes or rchar_wchar\n"
	"  --descendants 0|1        add the I/O of the job's child processes (default 1)\n"
	"  --cmp-share 0|1          hold only jobs on CMPs above bound/CMPs (default 1)\n"
	"  --policy P               suspend (SIGSTOP/SIGCONT, default) or throttle (cgroup v1\n"
	"                           blkio limits; needs --cgroup and --device)\n"
	"  --max-suspend-s S        release any job held this long, then protect it as long\n"
	"                           (default: never)\n"
	"  --psi-file FILE          adapt the bound from this PSI file's 'some' stall share\n"
	"  --psi-target F           stall share to hold the bound at (default 0.3; 0 to 1)\n"
	"  --psi-decrease F         bound *= F above the target (default 0.8)\n"
	"  --psi-increase-mbps X    bound += X below the target (default 1)\n"
	"  --bound-min-mbps X       lowest adapted bound (default 0.5)\n"
	"  --bound-max-mbps X       highest adapted bound (default 1000)\n"
	"  --cgroup DIR             the run's blkio cgroup (policy throttle)\n"
	"  --device MAJ:MIN         the device under test (policy throttle)\n"
	"  --throttle-floor-mbps X  lowest per-job limit (default 1)\n"
	"  --keep-io-running N      never hold a job that leaves fewer than N jobs\n"
	"                           doing I/O running (default 0: the paper's rule)\n"
	"  --max-jobs N             most jobs followed at once (default 65536)\n"
	"  --max-age-s S            --check: the heartbeat may be this old\n"
	"                           (default 3 timeslices + 2 s)\n"
	"  --limits                 print the bounds of the options above as JSON and exit\n"
	"  -h, --help  -V, --version\n"
	"Exit: 0 ok (also when stopped by SIGTERM/SIGINT), 1 runtime error, 2 usage,\n"
	"4 a needed feature is missing (PSI file, cgroup v1 blkio).\n";

/* The bounded numeric options. Each one the manifests set has the same numbers there
 * (the params of schedulers/dynamic_io and its variants: minimum, exclusiveMinimum, maximum):
 * --limits prints this table and tests/schedulers/test_dynamic_io_limits.py compares. */
struct limit {
	const char *opt;
	double *dest;
	double min, max;
	bool min_exclusive;
	bool integer; /* a whole number, parsed as one */
};

static double max_age_s; /* --check */

static const struct limit LIMITS[] = {
	{ "timeslice-s", &D.o.timeslice_s, 0.05, 60, false, false },
	{ "io-bound-mbps", &D.o.bound_mbps, 0, 1e9, true, false },
	{ "max-suspend-s", &D.o.max_suspend_s, 0, 86400, true, false },
	{ "psi-target", &D.o.psi_target, 0, 0.999, true, false },
	{ "psi-decrease", &D.o.psi_decrease, 0, 0.999, true, false },
	{ "psi-increase-mbps", &D.o.psi_increase, 0, 1e6, true, false },
	{ "bound-min-mbps", &D.o.bound_min, 0, 1e9, true, false },
	{ "bound-max-mbps", &D.o.bound_max, 0, 1e9, true, false },
	{ "throttle-floor-mbps", &D.o.floor_mbps, 0, 1e6, true, false },
	{ "keep-io-running", &D.o.keep_io_running, 0, 65536, false, true },
	{ "max-age-s", &max_age_s, 0, 86400, true, false },
};
#define N_LIMITS (sizeof LIMITS / sizeof *LIMITS)

/* The options that take one word of a list, in the order of their enums. */
static const char *const COUNTER_WORDS[] = { "storage", "read_bytes", "write_bytes",
					     "rchar_wchar" };
static const char *const POLICY_WORDS[] = { "suspend", "throttle" };

/* The boolean options: 0, 1, true or false. */
static const char *const BOOL_OPTIONS[] = { "descendants", "cmp-share" };

enum {
	O_EVENTS = 256,
	O_STATE,
	O_COUNTER,
	O_DESC,
	O_SHARE,
	O_POLICY,
	O_PSI,
	O_CGROUP,
	O_DEVICE,
	O_MAXJOBS,
	O_CHECK,
	O_TABLE,
	O_BENCH,
	O_ROUNDS,
	O_CMPS,
	O_LIMITS,
	O_LIMITED = 512, /* + the index in LIMITS */
};

static bool parse_bool(const char *opt, const char *v)
{
	if (!strcmp(v, "1") || !strcasecmp(v, "true"))
		return true;
	if (!strcmp(v, "0") || !strcasecmp(v, "false"))
		return false;
	corun_usage_error(PROG, "--%s: '%s' (expected 0, 1, true or false)", opt, v);
}

static void print_words(struct corun_json *j, const char *opt, const char *const *words, size_t n)
{
	corun_json_object_begin(j, opt);
	corun_json_str(j, "type", "string");
	corun_json_array_begin(j, "enum");
	for (size_t i = 0; i < n; i++)
		corun_json_str(j, NULL, words[i]);
	corun_json_array_end(j);
	corun_json_object_end(j);
}

/* --limits: every checked option with its bounds, in JSON schema words, on one line. */
static int print_limits(void)
{
	struct corun_json j;
	corun_json_begin(&j, stdout);
	for (size_t i = 0; i < N_LIMITS; i++) {
		const struct limit *l = &LIMITS[i];
		corun_json_object_begin(&j, l->opt);
		corun_json_str(&j, "type", l->integer ? "integer" : "number");
		corun_json_double(&j, l->min_exclusive ? "exclusiveMinimum" : "minimum", l->min);
		corun_json_double(&j, "maximum", l->max);
		corun_json_object_end(&j);
	}
	print_words(&j, "counter", COUNTER_WORDS, CORUN_COUNT(COUNTER_WORDS));
	print_words(&j, "policy", POLICY_WORDS, CORUN_COUNT(POLICY_WORDS));
	for (size_t i = 0; i < CORUN_COUNT(BOOL_OPTIONS); i++) {
		corun_json_object_begin(&j, BOOL_OPTIONS[i]);
		corun_json_str(&j, "type", "boolean");
		corun_json_object_end(&j);
	}
	corun_json_end(&j);
	return corun_flush_result(PROG) < 0 ? CORUN_EXIT_RUNTIME : CORUN_EXIT_OK;
}

int main(int argc, char *argv[])
{
	static const struct option other_options[] = {
		{ "job-events", required_argument, NULL, O_EVENTS },
		{ "state-dir", required_argument, NULL, O_STATE },
		{ "counter", required_argument, NULL, O_COUNTER },
		{ "descendants", required_argument, NULL, O_DESC },
		{ "cmp-share", required_argument, NULL, O_SHARE },
		{ "policy", required_argument, NULL, O_POLICY },
		{ "psi-file", required_argument, NULL, O_PSI },
		{ "cgroup", required_argument, NULL, O_CGROUP },
		{ "device", required_argument, NULL, O_DEVICE },
		{ "max-jobs", required_argument, NULL, O_MAXJOBS },
		{ "check", required_argument, NULL, O_CHECK },
		{ "decide-table", required_argument, NULL, O_TABLE },
		{ "bench-decide", required_argument, NULL, O_BENCH },
		{ "rounds", required_argument, NULL, O_ROUNDS },
		{ "cmps", required_argument, NULL, O_CMPS },
		{ "limits", no_argument, NULL, O_LIMITS },
		CORUN_COMMON_LONG_OPTIONS
	};
	struct option longopts[N_LIMITS + CORUN_COUNT(other_options)];
	for (size_t i = 0; i < N_LIMITS; i++)
		longopts[i] = (struct option){ LIMITS[i].opt, required_argument, NULL,
					       O_LIMITED + (int)i };
	memcpy(longopts + N_LIMITS, other_options, sizeof other_options);
	struct opts *o = &D.o;
	*o = (struct opts){ .timeslice_s = 1,
			    .bound_mbps = 40,
			    .counter = C_STORAGE,
			    .policy = P_SUSPEND,
			    .descendants = true,
			    .cmp_share = true,
			    .psi_target = 0.3,
			    .psi_decrease = 0.8,
			    .psi_increase = 1,
			    .bound_min = 0.5,
			    .bound_max = 1000,
			    .floor_mbps = 1,
			    .max_jobs = 65536 };
	const char *check = NULL, *table = NULL;
	long bench = 0, rounds = 1000;
	int cmps = 8;
	bool limits = false;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:hV", longopts, NULL)) != -1) {
		if (c >= O_LIMITED && c < O_LIMITED + (int)N_LIMITS) {
			const struct limit *l = &LIMITS[c - O_LIMITED];
			*l->dest = l->integer ? (double)corun_parse_int(PROG, l->opt, optarg,
									(int64_t)l->min,
									(int64_t)l->max, false)
					      : corun_parse_double(PROG, l->opt, optarg, l->min,
								   l->max, l->min_exclusive);
			continue;
		}
		switch (c) {
		case O_EVENTS: o->events = optarg; break;
		case O_STATE: o->state_dir = optarg; break;
		case O_COUNTER:
			o->counter = (enum counter)corun_parse_choice(
				PROG, "counter", optarg, COUNTER_WORDS, CORUN_COUNT(COUNTER_WORDS));
			break;
		case O_DESC: o->descendants = parse_bool("descendants", optarg); break;
		case O_SHARE: o->cmp_share = parse_bool("cmp-share", optarg); break;
		case O_POLICY:
			o->policy = (enum policy)corun_parse_choice(
				PROG, "policy", optarg, POLICY_WORDS, CORUN_COUNT(POLICY_WORDS));
			break;
		case O_PSI: o->psi_file = optarg; break;
		case O_CGROUP: o->cgroup = optarg; break;
		case O_DEVICE: {
			unsigned maj, min;
			char end;
			if (sscanf(optarg, "%u:%u%c", &maj, &min, &end) != 2)
				corun_usage_error(
					PROG, "--device: '%s' (expected MAJOR:MINOR such as 8:0)",
					optarg);
			o->device = optarg;
			break;
		}
		case O_MAXJOBS:
			o->max_jobs =
				(long)corun_parse_int(PROG, "max-jobs", optarg, 1, 1 << 20, false);
			break;
		case O_CHECK: check = optarg; break;
		case O_TABLE: table = optarg; break;
		case O_BENCH:
			bench = (long)corun_parse_int(PROG, "bench-decide", optarg, 1, 10000000,
						      false);
			break;
		case O_ROUNDS:
			rounds = (long)corun_parse_int(PROG, "rounds", optarg, 1, 10000000, false);
			break;
		case O_CMPS:
			cmps = (int)corun_parse_int(PROG, "cmps", optarg, 1, MAX_CMPS, false);
			break;
		case O_LIMITS: limits = true; break;
		default: corun_default_option(PROG, VERSION, USAGE, c, argv);
		}
	}
	corun_no_operands(PROG, argc, argv);
	if (limits)
		return print_limits();
	if (check) /* by default: three quanta late, plus start-up */
		return run_check(check, max_age_s > 0 ? max_age_s : 3 * o->timeslice_s + 2);
	if (table)
		return run_table(table);
	if (bench)
		return run_bench(bench, rounds, cmps);
	if (!o->events)
		corun_usage_error(PROG,
				  "--job-events: missing (expected the runner's job event log)");
	if (!o->state_dir)
		corun_usage_error(
			PROG, "--state-dir: missing (expected a directory for the decision log)");
	if (o->bound_min > o->bound_max)
		corun_usage_error(PROG, "--bound-min-mbps: '%g' (expected <= --bound-max-mbps %g)",
				  o->bound_min, o->bound_max);
	if (o->psi_file && (o->bound_mbps < o->bound_min || o->bound_mbps > o->bound_max))
		corun_usage_error(
			PROG,
			"--io-bound-mbps: '%g' (expected from --bound-min-mbps %g to --bound-max-mbps %g)",
			o->bound_mbps, o->bound_min, o->bound_max);
	return run_daemon();
}
