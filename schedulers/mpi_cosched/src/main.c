/* corun-cosched: the per-node daemon of the MPI coscheduling variants of
 * paper 001 (the message handling action), and gang scheduling.
 *
 * Ranks preloaded with libcorun_cosched.so publish their state in the node's
 * shared-memory segment (cosched_shm.h). Every tick the daemon registers new
 * ranks (pidfd + start time against PID reuse), takes a duplicate of each
 * rank's sockets (pidfd_getfd) into its epoll set, and so learns of every
 * message arrival on the node, as the paper's NIC firmware did. Then, by
 * scheme:
 *   local, batch  nothing (arrivals and conflicts are only counted)
 *   dcs           boost the destination on arrival
 *   pb            every --pb-period-us, boost one rank with pending messages,
 *                 round robin
 *   ib, sb        wake the blocked destination on arrival, and boost it
 *   hybrid        wake on arrival; boost a rank while it is in a collective
 *   cc_s          as pb, but the rank with the highest W_c + W_r (decide.c)
 *   cc_b          wake on arrival; on every decision with two or more ranks
 *                 with pending messages, order them by W_c + W_r through
 *                 distinct SCHED_FIFO priorities
 *   gang          synchronised time slices (CLOCK_REALTIME, the same on
 *                 every node): the ranks of one job run, the others are
 *                 stopped (SIGSTOP/SIGCONT)
 * A boost is SCHED_FIFO for the rank's main thread, at most --boost-max-us
 * and only while it has pending messages (hybrid: while in the collective);
 * the daemon itself runs at a higher SCHED_FIFO priority so it can always
 * take a boost back. Node daemons exchange their ERL (eq. 1) over UDP.
 *
 * Safety: signals arrive through a signalfd (no work in handlers); SIGTERM,
 * SIGINT, SIGHUP, SIGQUIT, errors, the death of the process that started
 * it (PR_SET_PDEATHSIG) and, with --lifeline-s, the runner falling silent on
 * stdin (a node cut off from it: its ssh session never ends here) all end in
 * one teardown that restores every rank's
 * policy and nice value and resumes every rank it stopped. Before it first
 * changes a process it appends the process's pid, start time, policy,
 * priority and nice value to STATE/touched.tsv, so that `--restore STATE`
 * can undo everything after a kill -9.
 *
 * Every option a manifest sets has no default here: the manifest's is the one default
 * (schedulers/mpi_cosched/manifest.yaml), and a run passes them all. This file holds the
 * options; cosched.h says where the rest is.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cosched.h"

#define VERSION "1.0"

static const char USAGE[] =
	"usage: " PROG " --scheme S --state-dir DIR --shm NAME --spin-us US --block-min-us US\n"
	"       " PROG "   --block-max-us US --coll C --tick-us US --pb-period-us US\n"
	"       " PROG "   --boost-max-us US --boost-prio P --mpl N --cost-switch-us X\n"
	"       " PROG "   --erl-period-us US --enp-alpha F --wr-reduce R --bcr-min-pending N\n"
	"       " PROG "   --gang-slice-ms MS [--node-id N --listen IP:PORT --peer N=IP:PORT...]\n"
	"       " PROG "   [--lifeline-s S]\n"
	"       " PROG " --restore DIR        undo what a killed daemon left (touched.tsv)\n"
	"       " PROG " --check DIR [--max-age-s S]\n"
	"       " PROG " --decide-table FILE  one CC decision on a hand-made table (eqs. 1-4)\n"
	"       " PROG " --dump-shm NAME      the segment's slots as JSON\n"
	"       " PROG " --limits             the options' types and bounds as JSON\n"
	"\n"
	"The handling action of the MPI coscheduling schemes of paper 001. The options the\n"
	"manifest sets have no default here: each is required (the manifest holds the defaults).\n"
	"  --scheme S            local, batch, dcs, pb, ib, sb, hybrid, cc_s, cc_b or gang\n"
	"  --state-dir DIR       writes status.json, summary.json, touched.tsv (existing dir)\n"
	"  --shm NAME            the node's shared-memory segment, such as /corun-cosched\n"
	"  --spin-us US          sb: the ranks' spin time before blocking, microseconds\n"
	"                        (0 to 1000000); written to rank_env.json, as the next three\n"
	"  --block-min-us US     first futex sleep of a blocked rank, microseconds (1 to 1000000)\n"
	"  --block-max-us US     longest futex sleep of a blocked rank between two tests,\n"
	"                        microseconds (50 to 1000000, >= --block-min-us)\n"
	"  --coll C              collectives: nonblocking (the scheme's waiting loop) or native\n"
	"  --tick-us US          housekeeping period, microseconds (100 to 100000)\n"
	"  --pb-period-us US     pb, cc_s: boost period, microseconds (1000 to 1000000)\n"
	"  --boost-max-us US     longest boost, microseconds (100 to 1000000)\n"
	"  --boost-prio P        SCHED_FIFO priority of a boost (1 to 20); cc_b orders\n"
	"                        conflicts on P .. P+63, the daemon runs at P+65\n"
	"  --mpl N               multi-programming level: ERL_max = N * 41 ms (1 to 64)\n"
	"  --cost-switch-us X    Cost_switch of eq. 1, microseconds (0 to 10000)\n"
	"  --erl-period-us US    ERL update and exchange period, microseconds (1000 to 1000000)\n"
	"  --enp-alpha F         weight of the newest sample in the ENP mean (> 0 to 1)\n"
	"  --wr-reduce R         eq. 4 over a rank's pending messages: min (the formula) or max\n"
	"                        (the soonest correspondent counts)\n"
	"  --bcr-min-pending N   a conflict: N or more ranks with pending messages (2 to 64)\n"
	"  --gang-slice-ms MS    gang: time slice, milliseconds (10 to 60000)\n"
	"  --node-id N           this node's id in a cluster (0 to 255; default 0, one node)\n"
	"  --listen IP:PORT      receive the ERL of other nodes (UDP, IPv4)\n"
	"  --peer N=IP:PORT      another node's daemon (repeat; its IP names its ranks' traffic)\n"
	"  --lifeline-s S        stdin is the runner's lifeline: the daemon ends (teardown) at\n"
	"                        its end of file, or when no byte came for S seconds (0.5 to\n"
	"                        3600; default 0: stdin is not read)\n"
	"  --max-age-s S         --check: the heartbeat may be this old (default 2)\n"
	"  -h, --help  -V, --version\n"
	"Exit: 0 ok (also when stopped by SIGTERM/SIGINT), 1 runtime error, 2 usage,\n"
	"4 a needed feature is missing (SCHED_FIFO, pidfd_getfd).\n";

static double max_age = 2; /* --check: not a parameter of any variant */

/* The options with values the daemon checks. Each one the manifest sets has the same bounds
 * there (schedulers/mpi_cosched/manifest.yaml): --limits prints this table and
 * tests/schedulers/test_variant_limits.py compares them and tries every bound. */
static const char *const COLLS[] = { "nonblocking", "native" };
static const char *const REDUCES[] = { "min", "max" }; /* enum cc_wr_reduce */

static struct sd_option OPTS[] = {
	SD_OPTION_WORD("scheme", &D.o.scheme, SCHEMES),
	SD_OPTION_TEXT("state-dir", &D.o.state_dir),
	SD_OPTION_TEXT("shm", &D.o.shm),
	SD_OPTION_INTEGER("spin-us", &D.o.spin_us, 0, 1000000),
	SD_OPTION_INTEGER("block-min-us", &D.o.block_min_us, 1, 1000000),
	SD_OPTION_INTEGER("block-max-us", &D.o.block_max_us, 50, 1000000),
	SD_OPTION_WORD("coll", &D.o.coll, COLLS),
	SD_OPTION_INTEGER("tick-us", &D.o.tick_us, 100, 100000),
	SD_OPTION_INTEGER("pb-period-us", &D.o.pb_period_us, 1000, 1000000),
	SD_OPTION_INTEGER("boost-max-us", &D.o.boost_max_us, 100, 1000000),
	SD_OPTION_INT("boost-prio", &D.o.boost_prio, 1, 20),
	SD_OPTION_INT("mpl", &D.o.mpl, 1, 64),
	SD_OPTION_NUMBER("cost-switch-us", &D.o.cost_switch_us, 0, 10000, false),
	SD_OPTION_INTEGER("erl-period-us", &D.o.erl_period_us, 1000, 1000000),
	SD_OPTION_NUMBER("enp-alpha", &D.o.enp_alpha, 0, 1, true),
	SD_OPTION_WORD("wr-reduce", &D.o.reduce, REDUCES),
	SD_OPTION_INT("bcr-min-pending", &D.o.bcr_min, 2, CS_SLOTS),
	SD_OPTION_INTEGER("gang-slice-ms", &D.o.gang_slice_ms, 10, 60000),
	SD_OPTION_INT("node-id", &D.o.node_id, 0, MAX_NODES - 1),
	SD_OPTION_TEXT("listen", &D.o.listen),
	SD_OPTION_NUMBER("max-age-s", &max_age, 0, 86400, true),
	SD_OPTION_NUMBER("lifeline-s", &D.o.lifeline_s, 0.5, 3600, false),
};
#define N_OPTS CORUN_COUNT(OPTS)
#define O_TABLE_BASE 512

/* What a daemon must be given: every option the manifest sets. */
static const char *const DAEMON_NEEDS[] = {
	"scheme",          "state-dir",     "shm",        "spin-us",
	"block-min-us",    "block-max-us",  "coll",       "tick-us",
	"pb-period-us",    "boost-max-us",  "boost-prio", "mpl",
	"cost-switch-us",  "erl-period-us", "enp-alpha",  "wr-reduce",
	"bcr-min-pending", "gang-slice-ms", NULL
};

enum { O_PEER = 256, O_RESTORE, O_DUMP };

static void add_peer(const char *v)
{
	int node, port;
	char ip[64], end;
	struct sockaddr_in a = { .sin_family = AF_INET };
	if (D.npeers == MAX_NODES || sscanf(v, "%d=%63[0-9.]:%d%c", &node, ip, &port, &end) != 3 ||
	    node < 0 || node >= MAX_NODES || port < 1 || port > 65535 ||
	    inet_pton(AF_INET, ip, &a.sin_addr) != 1)
		corun_usage_error(PROG,
				  "--peer: '%s' (expected NODE=IPv4:PORT, NODE from 0 to 255)", v);
	a.sin_port = htons((uint16_t)port);
	D.peers[D.npeers++] = (struct peer){ node, a };
}

int main(int argc, char *argv[])
{
	static const struct option other_options[] = {
		{ "peer", required_argument, NULL, O_PEER },
		{ "restore", required_argument, NULL, O_RESTORE },
		{ "dump-shm", required_argument, NULL, O_DUMP },
		SD_COMMON_LONG_OPTIONS
	};
	struct opts *o = &D.o;
	const char *restore = NULL, *dump = NULL;
	struct sd_modes modes = { 0 };
	int c;
	while ((c = sd_options_next(PROG, OPTS, N_OPTS, O_TABLE_BASE, other_options,
				    CORUN_COUNT(other_options), &modes, argc, argv)) != -1) {
		switch (c) {
		case O_PEER: add_peer(optarg); break;
		case O_RESTORE: restore = optarg; break;
		case O_DUMP: dump = optarg; break;
		default: corun_default_option(PROG, VERSION, USAGE, c, argv);
		}
	}
	corun_no_operands(PROG, argc, argv);
	if (modes.limits)
		return sd_options_print_limits(PROG, OPTS, N_OPTS);
	if (restore)
		return run_restore(restore);
	if (modes.check)
		return run_check(modes.check, max_age);
	if (modes.table)
		return run_table(modes.table);
	if (dump)
		return run_dump(dump);
	sd_options_require(PROG, OPTS, N_OPTS, DAEMON_NEEDS, "a value: the manifest's");
	if (o->shm[0] != '/' || strchr(o->shm + 1, '/') || strlen(o->shm) > NAME_MAX - 1)
		corun_usage_error(PROG, "--shm: '%s' (expected a name such as /corun-cosched-0)",
				  o->shm);
	if (o->block_max_us < o->block_min_us)
		corun_usage_error(PROG, "--block-max-us: '%ld' (expected >= --block-min-us %ld)",
				  o->block_max_us, o->block_min_us);
	return run_daemon();
}
