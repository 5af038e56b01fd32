/* mpi_stencil: an NPB-like MPI kernel with a configurable computation to
 * communication ratio, the stand-in for NPB when it is not provisioned.
 *
 * P ranks hold a ring of P * --cells values (1-D periodic diffusion). Each
 * iteration a rank computes --sweeps Jacobi sweeps over its cells (the
 * computation grain), exchanges halos of --halo-bytes with both neighbours
 * (MPI_Isend/MPI_Irecv/MPI_Waitall, the nearest-neighbour pattern of BT, SP
 * and CG), and every --allreduce-every iterations joins an MPI_Allreduce of
 * the global sum, and every --alltoall-every iterations an MPI_Alltoall of
 * --alltoall-bytes per pair (the all-to-all pattern of FT and IS). Rank 0
 * can compute --imbalance times as long, so the others wait.
 *
 * Self-check: diffusion on a ring conserves the sum; the final global sum
 * must equal the first within 1e-9 relative.
 *
 * Rank 0 prints one JSON line: the standard header, the parameters, the
 * runtime and the share of time spent in MPI calls (the communication
 * intensity, the mean over ranks).
 */
#define _GNU_SOURCE
#include <math.h>
#include <mpi.h>
#include <stdio.h>

#include "corun_kernel.h"

#define PROG "mpi_stencil"
#define MPI_STENCIL_VERSION "1.0"

static const char USAGE[] =
	"usage: mpirun -np P " PROG " [options]\n"
	"An NPB-like MPI kernel (1-D diffusion on a ring): compute, halo exchange,\n"
	"collectives; the stand-in for NPB (kernels/README.md).\n"
	"  --iters N             iterations (default 200; 1 to 10^8)\n"
	"  --cells N             cells per rank (default 65536; 16 to 2^28, K/M suffix)\n"
	"  --sweeps N            Jacobi sweeps per iteration: the computation grain\n"
	"                        (default 4; 1 to 10^6)\n"
	"  --halo-bytes BYTES    halo message to each neighbour, bytes (default 8192;\n"
	"                        0 to 64M, K/M suffix; rounded down to whole doubles;\n"
	"                        0: no exchange, the collectives only)\n"
	"  --allreduce-every N   an MPI_Allreduce every N iterations (default 10; 0: never)\n"
	"  --alltoall-every N    an MPI_Alltoall every N iterations (default 0: never)\n"
	"  --alltoall-bytes B    bytes per pair in the all-to-all (default 4096; 8 to 16M)\n"
	"  --imbalance F         rank 0 computes F times as long (default 1; 1 to 100)\n"
	"  -h, --help  -V, --version\n"
	"Rank 0 prints one JSON line. Exit: 0 ok, 1 runtime error or failed self-check,\n"
	"2 usage.\n";

struct opts {
	int64_t iters, cells, sweeps, halo, ar_every, a2a_every, a2a_bytes;
	double imbalance;
};

static double total_sum(const double *u, int64_t n)
{
	double s = 0;
	for (int64_t i = 1; i <= n; i++)
		s += u[i];
	return s;
}

int main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "iters", required_argument, NULL, 'i' },
		{ "cells", required_argument, NULL, 'c' },
		{ "sweeps", required_argument, NULL, 's' },
		{ "halo-bytes", required_argument, NULL, 'b' },
		{ "allreduce-every", required_argument, NULL, 'r' },
		{ "alltoall-every", required_argument, NULL, 'a' },
		{ "alltoall-bytes", required_argument, NULL, 'A' },
		{ "imbalance", required_argument, NULL, 'm' },
		CORUN_COMMON_LONG_OPTIONS
	};
	struct opts o = { 200, 65536, 4, 8192, 10, 0, 4096, 1.0 };
	char **argv0 = malloc(((size_t)argc + 1) * sizeof *argv0);
	if (!argv0)
		return CORUN_EXIT_RUNTIME;
	memcpy(argv0, argv, ((size_t)argc + 1) * sizeof *argv0); /* getopt permutes */
	double start_epoch = corun_epoch_s();
	int c;
	while ((c = corun_getopt(argc, argv, "+:hV", longopts)) != -1) {
		switch (c) {
		case 'i':
			o.iters = corun_parse_int(PROG, "iters", optarg, 1, 100000000, false);
			break;
		case 'c':
			o.cells =
				corun_parse_int(PROG, "cells", optarg, 16, INT64_C(1) << 28, true);
			break;
		case 's':
			o.sweeps = corun_parse_int(PROG, "sweeps", optarg, 1, 1000000, false);
			break;
		case 'b':
			o.halo = corun_parse_int(PROG, "halo-bytes", optarg, 0, 64 << 20, true);
			break;
		case 'r':
			o.ar_every = corun_parse_int(PROG, "allreduce-every", optarg, 0, 100000000,
						     false);
			break;
		case 'a':
			o.a2a_every = corun_parse_int(PROG, "alltoall-every", optarg, 0, 100000000,
						      false);
			break;
		case 'A':
			o.a2a_bytes =
				corun_parse_int(PROG, "alltoall-bytes", optarg, 8, 16 << 20, true);
			break;
		case 'm':
			o.imbalance = corun_parse_double(PROG, "imbalance", optarg, 1, 100, false);
			break;
		default: corun_default_option(PROG, MPI_STENCIL_VERSION, USAGE, c, argv);
		}
	}
	corun_no_operands(PROG, argc, argv);
	int64_t halo = o.halo / 8; /* doubles */
	if (halo > o.cells)
		corun_usage_error(PROG,
				  "--halo-bytes: '%lld' (expected at most --cells * 8 = %lld)",
				  (long long)o.halo, (long long)(o.cells * 8));
	MPI_Init(&argc, &argv);
	int rank, np;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &np);
	int64_t n = o.cells;
	/* u[0 .. halo-1] left ghost, u[halo .. halo+n-1] own, then the right ghost;
	 * indices below are shifted so that own cells are 1..n with ghosts around */
	double *mem = calloc((size_t)(n + 2 * halo + 2), sizeof *mem);
	double *nxt = calloc((size_t)(n + 2 * halo + 2), sizeof *nxt);
	size_t a2a_n = (size_t)(o.a2a_bytes / 8) * (size_t)np;
	double *a2a_s = o.a2a_every ? calloc(a2a_n, sizeof *a2a_s) : NULL;
	double *a2a_r = o.a2a_every ? calloc(a2a_n, sizeof *a2a_r) : NULL;
	if (!mem || !nxt || (o.a2a_every && (!a2a_s || !a2a_r))) {
		corun_err(PROG, "out of memory for %lld cells", (long long)n);
		MPI_Abort(MPI_COMM_WORLD, CORUN_EXIT_RUNTIME);
	}
	/* u[1..n] own; without an exchange, u[0] and u[n+1] are a spare cell
	 * each side, kept equal to the edges so the update conserves the sum */
	int64_t pad = halo > 0 ? halo : 1;
	double *u = mem + pad - 1, *v = nxt + pad - 1;
	for (int64_t i = 1; i <= n; i++)
		u[i] = 1.0 + (double)((rank * n + i) % 97) / 97.0;
	double local = total_sum(u, n), sum0 = 0;
	MPI_Allreduce(&local, &sum0, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	int left = (rank + np - 1) % np, right = (rank + 1) % np;
	int hc = (int)halo;
	int64_t sweeps = rank == 0 ? (int64_t)llround((double)o.sweeps * o.imbalance) : o.sweeps;
	double t0 = MPI_Wtime(), comm = 0, check = sum0;
	for (int64_t it = 0; it < o.iters; it++) {
		/* computation: --sweeps Jacobi sweeps whose result is discarded (the
		 * grain); the barrier to the compiler keeps every one of them */
		for (int64_t s = 0; s < sweeps; s++) {
			for (int64_t i = 1; i <= n; i++)
				v[i] = u[i] + 0.25 * (u[i - 1] - 2 * u[i] + u[i + 1]);
			__asm__ __volatile__("" : : "r"(v) : "memory");
		}
		double c0 = MPI_Wtime();
		/* exchange: the last halo cells to the right, the first to the left */
		if (hc > 0) {
			MPI_Request req[4];
			MPI_Irecv(mem, hc, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[0]);
			MPI_Irecv(mem + halo + n, hc, MPI_DOUBLE, right, 0, MPI_COMM_WORLD,
				  &req[1]);
			MPI_Isend(mem + halo, hc, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &req[2]);
			MPI_Isend(mem + n, hc, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[3]);
			MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
		} else { /* no exchange: zero flux at the rank's edges */
			u[0] = u[1];
			u[n + 1] = u[n];
		}
		comm += MPI_Wtime() - c0;
		/* the update proper, from the ghosts just received: it conserves the
		 * global sum (the fluxes across each edge cancel) */
		for (int64_t i = 1; i <= n; i++)
			v[i] = u[i] + 0.25 * (u[i - 1] - 2 * u[i] + u[i + 1]);
		double *t = u;
		u = v;
		v = t;
		t = mem;
		mem = nxt;
		nxt = t;
		c0 = MPI_Wtime();
		if (o.ar_every && (it + 1) % o.ar_every == 0) {
			local = total_sum(u, n);
			MPI_Allreduce(&local, &check, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		}
		if (o.a2a_every && (it + 1) % o.a2a_every == 0) {
			int cnt = (int)(o.a2a_bytes / 8);
			a2a_s[0] = (double)it;
			MPI_Alltoall(a2a_s, cnt, MPI_DOUBLE, a2a_r, cnt, MPI_DOUBLE,
				     MPI_COMM_WORLD);
		}
		comm += MPI_Wtime() - c0;
	}
	double runtime = MPI_Wtime() - t0;
	local = total_sum(u, n);
	MPI_Allreduce(&local, &check, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	double share = runtime > 0 ? comm / runtime : 0, share_sum = 0, runtime_max = 0;
	MPI_Reduce(&share, &share_sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Reduce(&runtime, &runtime_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	double rel = fabs(check - sum0) / fabs(sum0);
	int ok = rel < 1e-9;
	if (rank == 0) {
		struct corun_json j;
		corun_json_result_begin(&j, PROG, MPI_STENCIL_VERSION, argc, argv0, start_epoch);
		corun_json_str(&j, "stands_in_for",
			       "NPB (nearest-neighbour and all-to-all patterns)");
		corun_json_int(&j, "ranks", np);
		corun_json_int(&j, "iters", o.iters);
		corun_json_int(&j, "cells_per_rank", o.cells);
		corun_json_int(&j, "sweeps", o.sweeps);
		corun_json_int(&j, "halo_bytes", halo * 8);
		corun_json_int(&j, "allreduce_every", o.ar_every);
		corun_json_int(&j, "alltoall_every", o.a2a_every);
		corun_json_int(&j, "alltoall_bytes", o.a2a_every ? o.a2a_bytes : 0);
		corun_json_double(&j, "imbalance", o.imbalance);
		corun_json_double(&j, "runtime_s", runtime_max);
		corun_json_double(&j, "comm_share", share_sum / np);
		corun_json_double(&j, "sum_rel_error", rel);
		corun_json_bool(&j, "verified", ok);
		corun_json_end(&j);
		fflush(stdout);
		if (!ok)
			corun_err(PROG,
				  "self-check failed: the global sum changed by %g (relative)",
				  rel);
	}
	free(mem);
	free(nxt);
	free(a2a_s);
	free(a2a_r);
	free(argv0);
	MPI_Finalize();
	return ok ? CORUN_EXIT_OK : CORUN_EXIT_RUNTIME;
}
