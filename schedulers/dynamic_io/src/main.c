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
 * Every option a manifest sets has no default here: the manifest's is the one default, and
 * a run passes them all (schedulers/dynamic_io/manifest.yaml).
 *
 * This file holds the options; daemon.h says where the rest is.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corun_kernel.h"
#include "daemon.h"

#define VERSION "1.0"

static const char USAGE[] =
	"usage: " PROG " --job-events FILE --state-dir DIR --policy P --timeslice-s S\n"
	"       " PROG "   --io-bound-mbps X --counter C --descendants 0|1 --cmp-share 0|1\n"
	"       " PROG "   --keep-io-running N [options]\n"
	"       " PROG " --check DIR [--max-age-s S | --timeslice-s S]\n"
	"       " PROG " --decide-table FILE\n"
	"       " PROG " --bench-decide N [--rounds R] [--cmps C]\n"
	"       " PROG " --limits\n"
	"\n"
	"The dynamic I/O-aware scheduler of paper 000 (Procedure 4). The options a variant's\n"
	"manifest sets have no default here: each is required (the manifests hold the defaults).\n"
	"  --job-events FILE        the runner's job event log (JSON lines), followed\n"
	"  --state-dir DIR          writes decisions.jsonl, status.json, summary.json\n"
	"  --policy P               suspend (SIGSTOP/SIGCONT) or throttle (cgroup v1 blkio\n"
	"                           limits; needs --cgroup, --device, --throttle-floor-mbps)\n"
	"  --timeslice-s S          quantum, seconds (0.05 to 60)\n"
	"  --io-bound-mbps X        IO_BOUND_INTERVAL, MB/s, MB = 10^6 bytes\n"
	"  --counter C              storage (read_bytes + write_bytes), read_bytes,\n"
	"                           write_bytes or rchar_wchar\n"
	"  --descendants 0|1        add the I/O of the job's child processes\n"
	"  --cmp-share 0|1          hold only jobs on CMPs above bound/CMPs\n"
	"  --keep-io-running N      never hold a job that leaves fewer than N jobs\n"
	"                           doing I/O running (0: the paper's rule)\n"
	"  --max-suspend-s S        release any job held this long, then protect it as long\n"
	"                           (absent: never)\n"
	"  --psi-file FILE          adapt the bound from this PSI file's 'some' stall share;\n"
	"                           then also:\n"
	"  --psi-target F           stall share to hold the bound at (0 to 1)\n"
	"  --psi-decrease F         bound *= F above the target\n"
	"  --psi-increase-mbps X    bound += X below the target\n"
	"  --bound-min-mbps X       lowest adapted bound\n"
	"  --bound-max-mbps X       highest adapted bound\n"
	"  --cgroup DIR             the run's blkio cgroup (policy throttle)\n"
	"  --device MAJ:MIN         the device under test (policy throttle)\n"
	"  --throttle-floor-mbps X  lowest per-job limit (policy throttle)\n"
	"  --max-jobs N             most jobs followed at once (default 65536)\n"
	"  --max-age-s S            --check: the heartbeat may be this old\n"
	"                           (default 3 timeslices + 2 s with --timeslice-s)\n"
	"  --limits                 print the options' types and bounds as JSON and exit\n"
	"  -h, --help  -V, --version\n"
	"Exit: 0 ok (also when stopped by SIGTERM/SIGINT), 1 runtime error, 2 usage,\n"
	"4 a needed feature is missing (PSI file, cgroup v1 blkio).\n";

static double max_age_s; /* --check */

/* The options with values the daemon checks. Each one a manifest sets has the same bounds
 * there (the params of schedulers/dynamic_io and its variants): --limits prints this table and
 * tests/schedulers/test_variant_limits.py compares them and tries every bound. */
static const char *const COUNTER_WORDS[] = { "storage", "read_bytes", "write_bytes",
					     "rchar_wchar" };
static const char *const POLICY_WORDS[] = { "suspend", "throttle" };

static struct sd_option OPTS[] = {
	SD_OPTION_TEXT("job-events", &D.o.events),
	SD_OPTION_TEXT("state-dir", &D.o.state_dir),
	SD_OPTION_WORD("policy", &D.o.policy, POLICY_WORDS),
	SD_OPTION_NUMBER("timeslice-s", &D.o.timeslice_s, 0.05, 60, false),
	SD_OPTION_NUMBER("io-bound-mbps", &D.o.bound_mbps, 0, 1e9, true),
	SD_OPTION_WORD("counter", &D.o.counter, COUNTER_WORDS),
	SD_OPTION_BOOL("descendants", &D.o.descendants),
	SD_OPTION_BOOL("cmp-share", &D.o.cmp_share),
	SD_OPTION_INTEGER("keep-io-running", &D.o.keep_io_running, 0, 65536),
	SD_OPTION_NUMBER("max-suspend-s", &D.o.max_suspend_s, 0, 86400, true),
	SD_OPTION_TEXT("psi-file", &D.o.psi_file),
	SD_OPTION_NUMBER("psi-target", &D.o.psi_target, 0, 0.999, true),
	SD_OPTION_NUMBER("psi-decrease", &D.o.psi_decrease, 0, 0.999, true),
	SD_OPTION_NUMBER("psi-increase-mbps", &D.o.psi_increase, 0, 1e6, true),
	SD_OPTION_NUMBER("bound-min-mbps", &D.o.bound_min, 0, 1e9, true),
	SD_OPTION_NUMBER("bound-max-mbps", &D.o.bound_max, 0, 1e9, true),
	SD_OPTION_TEXT("cgroup", &D.o.cgroup),
	SD_OPTION_TEXT("device", &D.o.device),
	SD_OPTION_NUMBER("throttle-floor-mbps", &D.o.floor_mbps, 0, 1e6, true),
	SD_OPTION_INTEGER("max-jobs", &D.o.max_jobs, 1, 1 << 20),
	SD_OPTION_NUMBER("max-age-s", &max_age_s, 0, 86400, true),
};
#define N_OPTS CORUN_COUNT(OPTS)
#define O_TABLE_BASE 512

/* What a run must give: every option the manifests set. */
static const char *const DAEMON_NEEDS[] = { "job-events",  "state-dir",     "policy",
					    "timeslice-s", "io-bound-mbps", "counter",
					    "descendants", "cmp-share",     "keep-io-running",
					    NULL };
static const char *const PSI_NEEDS[] = { "psi-target",     "psi-decrease",   "psi-increase-mbps",
					 "bound-min-mbps", "bound-max-mbps", NULL };
static const char *const THROTTLE_NEEDS[] = { "cgroup", "device", "throttle-floor-mbps", NULL };

enum { O_BENCH = 256, O_ROUNDS, O_CMPS };

int main(int argc, char *argv[])
{
	static const struct option other_options[] = {
		{ "bench-decide", required_argument, NULL, O_BENCH },
		{ "rounds", required_argument, NULL, O_ROUNDS },
		{ "cmps", required_argument, NULL, O_CMPS },
		SD_COMMON_LONG_OPTIONS
	};
	struct opts *o = &D.o;
	o->max_jobs = 65536; /* a capacity, not a parameter of any variant */
	struct sd_modes modes = { 0 };
	long bench = 0, rounds = 1000;
	int cmps = 8;
	int c;
	while ((c = sd_options_next(PROG, OPTS, N_OPTS, O_TABLE_BASE, other_options,
				    CORUN_COUNT(other_options), &modes, argc, argv)) != -1) {
		switch (c) {
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
		default: corun_default_option(PROG, VERSION, USAGE, c, argv);
		}
	}
	corun_no_operands(PROG, argc, argv);
	if (modes.limits)
		return sd_options_print_limits(PROG, OPTS, N_OPTS);
	if (modes.check) {
		if (max_age_s > 0) /* else three quanta late, plus start-up */
			return run_check(modes.check, max_age_s);
		sd_options_require(PROG, OPTS, N_OPTS, (const char *const[]){ "timeslice-s", NULL },
				   "the quantum, or --max-age-s, with --check");
		return run_check(modes.check, 3 * o->timeslice_s + 2);
	}
	if (modes.table)
		return run_table(modes.table);
	if (bench)
		return run_bench(bench, rounds, cmps);
	sd_options_require(PROG, OPTS, N_OPTS, DAEMON_NEEDS, "a value: the manifest's");
	if (o->psi_file)
		sd_options_require(PROG, OPTS, N_OPTS, PSI_NEEDS, "a value with --psi-file");
	if (o->policy == P_THROTTLE)
		sd_options_require(PROG, OPTS, N_OPTS, THROTTLE_NEEDS,
				   "a value with --policy throttle");
	if (o->device) {
		unsigned maj, min;
		char end;
		if (sscanf(o->device, "%u:%u%c", &maj, &min, &end) != 2)
			corun_usage_error(PROG, "--device: '%s' (expected MAJOR:MINOR such as 8:0)",
					  o->device);
	}
	if (o->psi_file && o->bound_min > o->bound_max)
		corun_usage_error(PROG, "--bound-min-mbps: '%g' (expected <= --bound-max-mbps %g)",
				  o->bound_min, o->bound_max);
	if (o->psi_file && (o->bound_mbps < o->bound_min || o->bound_mbps > o->bound_max))
		corun_usage_error(
			PROG,
			"--io-bound-mbps: '%g' (expected from --bound-min-mbps %g to --bound-max-mbps %g)",
			o->bound_mbps, o->bound_min, o->bound_max);
	return run_daemon();
}
