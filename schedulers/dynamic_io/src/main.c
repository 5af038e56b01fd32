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
	"                           (0: never, default)\n"
	"  --psi-file FILE          adapt the bound from this PSI file's 'some' stall share\n"
	"  --psi-target F           stall share to hold the bound at (default 0.3; 0 to 1)\n"
	"  --psi-decrease F         bound *= F above the target (default 0.8)\n"
	"  --psi-increase-mbps X    bound += X below the target (default 1)\n"
	"  --bound-min-mbps X       lowest adapted bound (default 0.5)\n"
	"  --bound-max-mbps X       highest adapted bound (default 1000)\n"
	"  --cgroup DIR             the run's blkio cgroup (policy throttle)\n"
	"  --device MAJ:MIN         the device under test (policy throttle)\n"
	"  --throttle-floor-mbps X  lowest per-job limit (default 1)\n"
	"  --max-jobs N             most jobs followed at once (default 65536)\n"
	"  --max-age-s S            --check: the heartbeat may be this old\n"
	"                           (default 3 timeslices + 2 s)\n"
	"  -h, --help  -V, --version\n"
	"Exit: 0 ok (also when stopped by SIGTERM/SIGINT), 1 runtime error, 2 usage,\n"
	"4 a needed feature is missing (PSI file, cgroup v1 blkio).\n";

enum {
	O_EVENTS = 256, O_STATE, O_TIMESLICE, O_BOUND, O_COUNTER, O_DESC, O_SHARE, O_POLICY,
	O_MAXSUSP, O_PSI, O_PSI_TARGET, O_PSI_DEC, O_PSI_INC, O_BMIN, O_BMAX, O_CGROUP,
	O_DEVICE, O_FLOOR, O_MAXJOBS, O_CHECK, O_MAXAGE, O_TABLE, O_BENCH, O_ROUNDS, O_CMPS,
};

static bool parse_bool(const char *opt, const char *v)
{
	if (!strcmp(v, "1") || !strcasecmp(v, "true"))
		return true;
	if (!strcmp(v, "0") || !strcasecmp(v, "false"))
		return false;
	corun_usage_error(PROG, "--%s: '%s' (expected 0, 1, true or false)", opt, v);
}

int main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "job-events", required_argument, NULL, O_EVENTS },
		{ "state-dir", required_argument, NULL, O_STATE },
		{ "timeslice-s", required_argument, NULL, O_TIMESLICE },
		{ "io-bound-mbps", required_argument, NULL, O_BOUND },
		{ "counter", required_argument, NULL, O_COUNTER },
		{ "descendants", required_argument, NULL, O_DESC },
		{ "cmp-share", required_argument, NULL, O_SHARE },
		{ "policy", required_argument, NULL, O_POLICY },
		{ "max-suspend-s", required_argument, NULL, O_MAXSUSP },
		{ "psi-file", required_argument, NULL, O_PSI },
		{ "psi-target", required_argument, NULL, O_PSI_TARGET },
		{ "psi-decrease", required_argument, NULL, O_PSI_DEC },
		{ "psi-increase-mbps", required_argument, NULL, O_PSI_INC },
		{ "bound-min-mbps", required_argument, NULL, O_BMIN },
		{ "bound-max-mbps", required_argument, NULL, O_BMAX },
		{ "cgroup", required_argument, NULL, O_CGROUP },
		{ "device", required_argument, NULL, O_DEVICE },
		{ "throttle-floor-mbps", required_argument, NULL, O_FLOOR },
		{ "max-jobs", required_argument, NULL, O_MAXJOBS },
		{ "check", required_argument, NULL, O_CHECK },
		{ "max-age-s", required_argument, NULL, O_MAXAGE },
		{ "decide-table", required_argument, NULL, O_TABLE },
		{ "bench-decide", required_argument, NULL, O_BENCH },
		{ "rounds", required_argument, NULL, O_ROUNDS },
		{ "cmps", required_argument, NULL, O_CMPS },
		CORUN_COMMON_LONG_OPTIONS
	};
	struct opts *o = &D.o;
	*o = (struct opts){ .timeslice_s = 1, .bound_mbps = 40, .counter = C_STORAGE,
			    .policy = P_SUSPEND, .descendants = true, .cmp_share = true,
			    .psi_target = 0.3, .psi_decrease = 0.8, .psi_increase = 1,
			    .bound_min = 0.5, .bound_max = 1000, .floor_mbps = 1, .max_jobs = 65536 };
	const char *check = NULL, *table = NULL;
	long bench = 0, rounds = 1000;
	int cmps = 8;
	double max_age = 0;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:hV", longopts, NULL)) != -1) {
		switch (c) {
		case O_EVENTS: o->events = optarg; break;
		case O_STATE: o->state_dir = optarg; break;
		case O_TIMESLICE: o->timeslice_s = corun_parse_double(PROG, "timeslice-s", optarg, 0.05, 60, false); break;
		case O_BOUND: o->bound_mbps = corun_parse_double(PROG, "io-bound-mbps", optarg, 0, 1e9, true); break;
		case O_COUNTER:
			if (!strcmp(optarg, "storage")) o->counter = C_STORAGE;
			else if (!strcmp(optarg, "read_bytes")) o->counter = C_READ;
			else if (!strcmp(optarg, "write_bytes")) o->counter = C_WRITE;
			else if (!strcmp(optarg, "rchar_wchar")) o->counter = C_RCHAR_WCHAR;
			else corun_usage_error(PROG, "--counter: '%s' (expected storage, read_bytes, write_bytes or rchar_wchar)", optarg);
			break;
		case O_DESC: o->descendants = parse_bool("descendants", optarg); break;
		case O_SHARE: o->cmp_share = parse_bool("cmp-share", optarg); break;
		case O_POLICY:
			if (!strcmp(optarg, "suspend")) o->policy = P_SUSPEND;
			else if (!strcmp(optarg, "throttle")) o->policy = P_THROTTLE;
			else corun_usage_error(PROG, "--policy: '%s' (expected suspend or throttle)", optarg);
			break;
		case O_MAXSUSP: o->max_suspend_s = corun_parse_double(PROG, "max-suspend-s", optarg, 0, 86400, false); break;
		case O_PSI: o->psi_file = optarg; break;
		case O_PSI_TARGET: o->psi_target = corun_parse_double(PROG, "psi-target", optarg, 0, 0.999, true); break;
		case O_PSI_DEC: o->psi_decrease = corun_parse_double(PROG, "psi-decrease", optarg, 0, 0.999, true); break;
		case O_PSI_INC: o->psi_increase = corun_parse_double(PROG, "psi-increase-mbps", optarg, 0, 1e6, true); break;
		case O_BMIN: o->bound_min = corun_parse_double(PROG, "bound-min-mbps", optarg, 0, 1e9, true); break;
		case O_BMAX: o->bound_max = corun_parse_double(PROG, "bound-max-mbps", optarg, 0, 1e9, true); break;
		case O_CGROUP: o->cgroup = optarg; break;
		case O_DEVICE: {
			unsigned maj, min;
			char end;
			if (sscanf(optarg, "%u:%u%c", &maj, &min, &end) != 2)
				corun_usage_error(PROG, "--device: '%s' (expected MAJOR:MINOR such as 8:0)", optarg);
			o->device = optarg;
			break;
		}
		case O_FLOOR: o->floor_mbps = corun_parse_double(PROG, "throttle-floor-mbps", optarg, 0, 1e6, true); break;
		case O_MAXJOBS: o->max_jobs = (long)corun_parse_int(PROG, "max-jobs", optarg, 1, 1 << 20, false); break;
		case O_CHECK: check = optarg; break;
		case O_MAXAGE: max_age = corun_parse_double(PROG, "max-age-s", optarg, 0, 86400, true); break;
		case O_TABLE: table = optarg; break;
		case O_BENCH: bench = (long)corun_parse_int(PROG, "bench-decide", optarg, 1, 10000000, false); break;
		case O_ROUNDS: rounds = (long)corun_parse_int(PROG, "rounds", optarg, 1, 10000000, false); break;
		case O_CMPS: cmps = (int)corun_parse_int(PROG, "cmps", optarg, 1, MAX_CMPS, false); break;
		default: corun_default_option(PROG, VERSION, USAGE, c, argv);
		}
	}
	corun_no_operands(PROG, argc, argv);
	if (check) /* by default: three quanta late, plus start-up */
		return run_check(check, max_age > 0 ? max_age : 3 * o->timeslice_s + 2);
	if (table)
		return run_table(table);
	if (bench)
		return run_bench(bench, rounds, cmps);
	if (!o->events)
		corun_usage_error(PROG, "--job-events: missing (expected the runner's job event log)");
	if (!o->state_dir)
		corun_usage_error(PROG, "--state-dir: missing (expected a directory for the decision log)");
	if (o->bound_min > o->bound_max)
		corun_usage_error(PROG, "--bound-min-mbps: '%g' (expected <= --bound-max-mbps %g)", o->bound_min, o->bound_max);
	if (o->psi_file && (o->bound_mbps < o->bound_min || o->bound_mbps > o->bound_max))
		corun_usage_error(PROG, "--io-bound-mbps: '%g' (expected from --bound-min-mbps %g to --bound-max-mbps %g)",
				  o->bound_mbps, o->bound_min, o->bound_max);
	return run_daemon();
}

