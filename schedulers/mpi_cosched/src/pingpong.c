/* cosched-pingpong: two MPI ranks exchange one message back and forth, for
 * the tests and the overhead benchmark of libcorun_cosched.so.
 *
 * Rank 0 works (a busy loop) for --work-us before each send, so rank 1
 * waits in MPI_Recv for about that long: its CPU time shows the waiting
 * action (spin: about all of the wait; block: little). Each rank prints one
 * JSON line: its wall and CPU time, and the round-trip latency (rank 0: mean,
 * median, 99th percentile).
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "corun_kernel.h"

#define PROG "cosched-pingpong"

static const char USAGE[] =
	"usage: mpirun -np 2 " PROG " [--iters N] [--warmup N] [--size BYTES] [--work-us US]\n"
	"  --iters N     measured round trips (default 1000; 1 to 10^8)\n"
	"  --warmup N    round trips discarded first (default 100)\n"
	"  --size BYTES  message size, bytes (default 8; up to 64M, K/M suffix)\n"
	"  --work-us US  rank 0 busy-works this long before each send, microseconds\n"
	"                (default 0; up to 10^6)\n"
	"Prints one JSON line per rank. Exit: 0 ok, 1 runtime error, 2 usage.\n";

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static void work(double us)
{
	double until = corun_monotonic_s() + us * 1e-6;
	while (corun_monotonic_s() < until)
		;
}

int main(int argc, char *argv[])
{
	static const struct option longopts[] = { { "iters", required_argument, NULL, 'i' },
						  { "warmup", required_argument, NULL, 'w' },
						  { "size", required_argument, NULL, 's' },
						  { "work-us", required_argument, NULL, 'u' },
						  CORUN_COMMON_LONG_OPTIONS };
	int64_t iters = 1000, warmup = 100, size = 8, work_us = 0;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			iters = corun_parse_int(PROG, "iters", optarg, 1, 100000000, false);
			break;
		case 'w':
			warmup = corun_parse_int(PROG, "warmup", optarg, 0, 100000000, false);
			break;
		case 's': size = corun_parse_int(PROG, "size", optarg, 1, 64 << 20, true); break;
		case 'u':
			work_us = corun_parse_int(PROG, "work-us", optarg, 0, 1000000, false);
			break;
		default: corun_default_option(PROG, "1.0", USAGE, c, argv);
		}
	}
	corun_no_operands(PROG, argc, argv);
	MPI_Init(&argc, &argv);
	int rank, np;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &np);
	if (np != 2) {
		if (rank == 0)
			corun_err(PROG, "needs exactly 2 ranks, got %d", np);
		MPI_Finalize();
		return CORUN_EXIT_USAGE;
	}
	char *buf = calloc((size_t)size, 1);
	double *rtts = calloc((size_t)iters, sizeof *rtts);
	if (!buf || !rtts) {
		corun_err(PROG, "out of memory for %lld bytes", (long long)size);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	int peer = 1 - rank, n = (int)size;
	double t0 = 0, c0 = 0, rtt_sum = 0, rtt_sq = 0;
	for (int64_t i = 0; i < warmup + iters; i++) {
		if (i == warmup) {
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = corun_monotonic_s();
			c0 = cpu_s();
		}
		if (rank == 0) {
			work((double)work_us);
			double s = corun_monotonic_s();
			buf[0] = (char)i;
			MPI_Send(buf, n, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
			MPI_Recv(buf, n, MPI_CHAR, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			double rtt = corun_monotonic_s() - s;
			if (i >= warmup) {
				rtt_sum += rtt;
				rtt_sq += rtt * rtt;
				rtts[i - warmup] = rtt;
			}
			if (buf[0] != (char)(i + 1)) {
				corun_err(PROG, "round trip %lld: wrong reply", (long long)i);
				MPI_Abort(MPI_COMM_WORLD, 1);
			}
		} else {
			MPI_Recv(buf, n, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			buf[0] = (char)(buf[0] + 1);
			MPI_Send(buf, n, MPI_CHAR, peer, 2, MPI_COMM_WORLD);
		}
	}
	double wall = corun_monotonic_s() - t0, cpu = cpu_s() - c0;
	MPI_Barrier(MPI_COMM_WORLD);
	struct corun_json j;
	corun_json_begin(&j, stdout);
	corun_json_str(&j, "kernel", PROG);
	corun_json_int(&j, "rank", rank);
	corun_json_int(&j, "iters", iters);
	corun_json_int(&j, "size_bytes", size);
	corun_json_int(&j, "work_us", work_us);
	corun_json_double(&j, "wall_s", wall);
	corun_json_double(&j, "cpu_s", cpu);
	corun_json_double(&j, "cpu_share", wall > 0 ? cpu / wall : 0);
	if (rank == 0) {
		double mean = rtt_sum / (double)iters;
		double var = rtt_sq / (double)iters - mean * mean;
		corun_json_double(&j, "rtt_mean_us", mean * 1e6);
		corun_json_double(&j, "rtt_sd_us", var > 0 ? __builtin_sqrt(var) * 1e6 : 0);
		corun_json_double(&j, "half_rtt_us", mean * 0.5e6);
		/* the median and the 99th percentile: a rank descheduled by other
		 * load makes a few round trips long, and the mean follows them */
		qsort(rtts, (size_t)iters, sizeof *rtts, cmp_double);
		corun_json_double(&j, "rtt_median_us", rtts[iters / 2] * 1e6);
		corun_json_double(&j, "rtt_p99_us", rtts[(iters * 99) / 100] * 1e6);
		corun_json_double(&j, "half_rtt_median_us", rtts[iters / 2] * 0.5e6);
	}
	corun_json_end(&j);
	fflush(stdout);
	free(buf);
	free(rtts);
	MPI_Finalize();
	return CORUN_EXIT_OK;
}
