/* pfs_read: IOR-like reads and writes of a file striped over the data servers
 * of corun's parallel file system (docs/pfs.md), through GlusterFS's
 * in-process client library (gfapi), so the sockets that receive the data
 * belong to this process.
 *
 * The file is laid out like PVFS2's simple stripe: strip k of --strip-size
 * bytes lives on server k mod N, packed in that server's datafile at
 * (k div N) * strip.  One request (--transfer-size bytes) becomes at most
 * one contiguous read per server, issued to all servers at once
 * (glfs_preadv_async) and scattered straight into the request buffer.  After
 * each request a compute step (--compute-passes passes of a 64-bit
 * multiply-xor mix over the request) stands in for the paper's encryption.
 *
 * Access pattern as IOR's: --tasks processes, each reading --segments
 * segments of one --block-size block in --transfer-size requests, into one
 * shared file or one file per task (--file-per-process).  In the shared file,
 * --pattern strided is IOR's segmented layout (task t's block of segment s at
 * (s * tasks + t) * block) and --pattern contiguous gives each task one
 * contiguous region (its block of segment s at (t * segments + s) * block).
 * With --rank R --ranks N this process is tasks R.. of an application of N
 * clients started apart (MPI-IO Test's N processes, one per client), each
 * with its own pfs_read; --app ID tells applications apart in the data
 * pattern.  Prints one JSON object on one line.
 */
#include "pfs_read/pfs_read.h"

static const char *const pattern_names[] = { "strided", "contiguous" };

/* clang-format off */
static const char usage_text[] =
	"Usage: pfs_read --volfile PATH [--volfile PATH ...] [options]\n"
	"IOR-like parallel reads (and writes) of a file striped over the data\n"
	"servers of corun's parallel file system through gfapi (in-process).\n"
	"\n"
	"  --volfile PATH         client volfile of one data server; repeat once per\n"
	"                         server, in stripe order (1 to 64; required)\n"
	"  --file NAME            file name in the file system (default /pfs_read.dat)\n"
	"  --strip-size BYTES     strip size, like PVFS2's strip_size (default 64K)\n"
	"  --transfer-size BYTES  bytes per request, IOR -t (default 1M; a multiple of 8)\n"
	"  --request-size BYTES   the same as --transfer-size\n"
	"  --block-size BYTES     bytes per task per segment, IOR -b (default 16M;\n"
	"                         a multiple of the transfer size)\n"
	"  --segments N           segments, IOR -s (default 1)\n"
	"  --tasks N              processes, like IOR's tasks (default 1, at most 256)\n"
	"  --pattern P            strided (IOR's segmented layout: block s*N+t) or\n"
	"                         contiguous (task t's segments in one region,\n"
	"                         block t*segments+s) in the shared file (default\n"
	"                         strided)\n"
	"  --rank R               index of this process's first task in the\n"
	"                         application (default 0; needs --ranks)\n"
	"  --ranks N              tasks of the application, over all clients\n"
	"                         (default: --tasks; R + tasks <= N, at most 65536)\n"
	"  --app ID               application id, part of the data pattern\n"
	"                         (default 0; give each application its own --file)\n"
	"  --file-per-process     one file per task (NAME.<task>), IOR -F\n"
	"  --write                write the file(s) first, IOR -w\n"
	"  --read                 read the file(s), IOR -r (the default when neither\n"
	"                         --write nor --read is given)\n"
	"  --repetitions N        repetitions of the phases, IOR -i (default 1)\n"
	"  --compute-passes N     per request, N passes of a 64-bit multiply-xor mix\n"
	"                         over the request's bytes, standing in for the\n"
	"                         paper's encryption (default 0)\n"
	"  --check                verify every byte read against the written pattern\n"
	"  --barrier DIR          start the first phase only once --barrier-count\n"
	"                         clients (pfs_read processes, this one included)\n"
	"                         are connected: each leaves a file in DIR (made if\n"
	"                         absent; files older than 60 s do not count) and\n"
	"                         waits for the others, at most 120 s\n"
	"  --barrier-count K      clients that meet at --barrier\n"
	"  --direct               open the datafiles with O_DIRECT: the data servers\n"
	"                         read and write their bricks with it, past their\n"
	"                         page cache (sizes and offsets multiples of 4K)\n"
	"  --seed N               seed of the data pattern (default 1)\n"
	"  --log PATH             gfapi's log file (default /dev/null)\n"
	"  --help, --version\n"
	"\n"
	"Sizes take a K, M or G suffix (KiB, MiB, GiB).\n"
	CORUN_USAGE_EXIT_STATUS("check") ".\n";
/* clang-format on */

static void parse_options(int argc, char *argv[], struct options *o)
{
	static const struct option long_options[] = {
		{ "volfile", required_argument, NULL, 'v' },
		{ "file", required_argument, NULL, 'f' },
		{ "strip-size", required_argument, NULL, 'S' },
		{ "transfer-size", required_argument, NULL, 't' },
		{ "request-size", required_argument, NULL, 't' },
		{ "pattern", required_argument, NULL, 'P' },
		{ "rank", required_argument, NULL, 'R' },
		{ "ranks", required_argument, NULL, 'N' },
		{ "app", required_argument, NULL, 'a' },
		{ "block-size", required_argument, NULL, 'b' },
		{ "segments", required_argument, NULL, 's' },
		{ "tasks", required_argument, NULL, 'n' },
		{ "file-per-process", no_argument, NULL, 'F' },
		{ "write", no_argument, NULL, 'w' },
		{ "read", no_argument, NULL, 'r' },
		{ "repetitions", required_argument, NULL, 'i' },
		{ "compute-passes", required_argument, NULL, 'c' },
		{ "check", no_argument, NULL, 'C' },
		{ "direct", no_argument, NULL, 'D' },
		{ "barrier", required_argument, NULL, 'B' },
		{ "barrier-count", required_argument, NULL, 'K' },
		{ "seed", required_argument, NULL, 'e' },
		{ "log", required_argument, NULL, 'l' },
		CORUN_COMMON_LONG_OPTIONS
	};
	*o = (struct options){
		.file = "/pfs_read.dat",
		.strip = 65536,
		.transfer = 1 << 20,
		.block = 16 << 20,
		.segments = 1,
		.tasks = 1,
		.reps = 1,
		.compute_passes = 0,
		.seed = 1,
		.log = "/dev/null",
	};
	bool rank_given = false;
	int c;
	while ((c = corun_getopt(argc, argv, "+:h", long_options)) != -1) {
		switch (c) {
		case 'v':
			if (o->n_servers == SERVERS_MAX)
				corun_usage_error(PROG,
						  "--volfile: '%s' (expected at most %d servers)",
						  optarg, SERVERS_MAX);
			o->volfiles[o->n_servers++] = optarg;
			break;
		case 'f':
			if (optarg[0] != '/' || strlen(optarg) > 4000)
				corun_usage_error(PROG,
						  "--file: '%s' (expected an absolute name "
						  "inside the file system, such as /ior.dat)",
						  optarg);
			o->file = optarg;
			break;
		case 'S':
			o->strip = corun_parse_int(PROG, "strip-size", optarg, 8, 1 << 30, true);
			break;
		case 't':
			o->transfer =
				corun_parse_int(PROG, "transfer-size", optarg, 8, 1 << 30, true);
			break;
		case 'b':
			o->block =
				corun_parse_int(PROG, "block-size", optarg, 8, SIZE_MAX_OPT, true);
			break;
		case 's':
			o->segments = corun_parse_int(PROG, "segments", optarg, 1, INT64_C(1) << 30,
						      false);
			break;
		case 'n':
			o->tasks = corun_parse_int(PROG, "tasks", optarg, 1, TASKS_MAX, false);
			break;
		case 'P':
			o->pattern =
				(enum pattern)CORUN_PARSE_CHOICE(PROG, "pattern", pattern_names);
			break;
		case 'R':
			o->rank = corun_parse_int(PROG, "rank", optarg, 0, RANKS_MAX - 1, false);
			rank_given = true;
			break;
		case 'N':
			o->ranks = corun_parse_int(PROG, "ranks", optarg, 1, RANKS_MAX, false);
			break;
		case 'a': o->app = corun_parse_int(PROG, "app", optarg, 0, 65535, false); break;
		case 'F': o->file_per_process = true; break;
		case 'w': o->do_write = true; break;
		case 'r': o->do_read = true; break;
		case 'i':
			o->reps = corun_parse_int(PROG, "repetitions", optarg, 1, 100000, false);
			break;
		case 'c':
			o->compute_passes =
				corun_parse_int(PROG, "compute-passes", optarg, 0, 1000000, false);
			break;
		case 'C': o->check = true; break;
		case 'D': o->direct = true; break;
		case 'B':
			if (optarg[0] != '/' || strlen(optarg) > 3000)
				corun_usage_error(PROG,
						  "--barrier: '%s' (expected an absolute folder)",
						  optarg);
			o->barrier = optarg;
			break;
		case 'K':
			o->barrier_count = corun_parse_int(PROG, "barrier-count", optarg, 1,
							   RANKS_MAX * 4, false);
			break;
		case 'e':
			o->seed = (uint64_t)corun_parse_int(PROG, "seed", optarg, 0, INT64_MAX,
							    false);
			break;
		case 'l': o->log = optarg; break;
		default: corun_default_option(PROG, PFS_READ_VERSION, usage_text, c, argv);
		}
	}
	corun_no_operands(PROG, argc, argv);
	if (o->n_servers == 0)
		corun_usage_error(PROG,
				  "--volfile PATH is required, once per data server (see --help)");
	if (o->transfer % 8 != 0)
		corun_usage_error(PROG,
				  "--transfer-size: '%" PRId64 "' (expected a multiple of 8 bytes)",
				  o->transfer);
	if (o->block % o->transfer != 0)
		corun_usage_error(PROG,
				  "--block-size: '%" PRId64 "' (expected a multiple of "
				  "--transfer-size %" PRId64 ")",
				  o->block, o->transfer);
	if (rank_given && o->ranks == 0)
		corun_usage_error(PROG, "--rank: '%" PRId64 "' (expected together with --ranks)",
				  o->rank);
	if (o->ranks == 0)
		o->ranks = o->tasks;
	if (o->rank + o->tasks > o->ranks)
		corun_usage_error(PROG,
				  "--ranks: '%" PRId64 "' (expected at least --rank %" PRId64
				  " + --tasks %" PRId64 ")",
				  o->ranks, o->rank, o->tasks);
	if ((o->barrier != NULL) != (o->barrier_count > 0))
		corun_usage_error(PROG, "--barrier: (expected together with --barrier-count)");
	if (!o->do_write && !o->do_read)
		o->do_read = true;
	if (o->check && !o->do_read)
		corun_usage_error(PROG, "--check: (expected together with --read)");
}

/* The phase's per-repetition figures and their means, as top-level fields
 * <phase>_bw_mib_s [...], <phase>_bw_mean_mib_s, ... (scalars are what corun
 * records per job as result_*). */
static void json_phase(struct corun_json *j, const char *phase, const double *bw, const double *ops,
		       const double *t, const double *t0, int64_t reps, int64_t bytes)
{
	double sbw = 0, sops = 0, st = 0, maxbw = bw[0], minbw = bw[0];
	char key[64];
	snprintf(key, sizeof key, "%s_bw_mib_s", phase);
	corun_json_array_begin(j, key);
	for (int64_t i = 0; i < reps; i++) {
		corun_json_double(j, NULL, bw[i]);
		sbw += bw[i];
		sops += ops[i];
		st += t[i];
		maxbw = bw[i] > maxbw ? bw[i] : maxbw;
		minbw = bw[i] < minbw ? bw[i] : minbw;
	}
	corun_json_array_end(j);
	snprintf(key, sizeof key, "%s_time_s", phase);
	corun_json_array_begin(j, key);
	for (int64_t i = 0; i < reps; i++)
		corun_json_double(j, NULL, t[i]);
	corun_json_array_end(j);
	/* When each repetition started (epoch): clients of one application
	 * started apart are put on one time line with these. */
	snprintf(key, sizeof key, "%s_start_epoch_s", phase);
	corun_json_array_begin(j, key);
	for (int64_t i = 0; i < reps; i++)
		corun_json_double(j, NULL, t0[i]);
	corun_json_array_end(j);
	snprintf(key, sizeof key, "%s_bytes", phase);
	corun_json_int(j, key, bytes);
	snprintf(key, sizeof key, "%s_bw_mean_mib_s", phase);
	corun_json_double(j, key, sbw / (double)reps);
	snprintf(key, sizeof key, "%s_bw_max_mib_s", phase);
	corun_json_double(j, key, maxbw);
	snprintf(key, sizeof key, "%s_bw_min_mib_s", phase);
	corun_json_double(j, key, minbw);
	snprintf(key, sizeof key, "%s_ops_mean_per_s", phase);
	corun_json_double(j, key, sops / (double)reps);
	snprintf(key, sizeof key, "%s_time_mean_s", phase);
	corun_json_double(j, key, st / (double)reps);
}

/* Free the per-phase figures of main(). */
static void free_figures(double *bw[2], double *ops[2], double *tm[2], double *t0[2])
{
	for (int k = 0; k < 2; k++) {
		free(bw[k]);
		free(ops[k]);
		free(tm[k]);
		free(t0[k]);
	}
}

int main(int argc, char *argv[])
{
	double start_epoch_s = corun_epoch_s();
	struct options o;
	parse_options(argc, argv, &o);

	int per_rep = 0;
	enum phase one[2];
	if (o.do_write)
		one[per_rep++] = PHASE_WRITE;
	if (o.do_read)
		one[per_rep++] = PHASE_READ;
	int64_t n_phases64 = per_rep * o.reps;
	enum phase *all = calloc((size_t)n_phases64, sizeof(enum phase));
	if (!all) {
		corun_err(PROG, "out of memory");
		return CORUN_EXIT_RUNTIME;
	}
	for (int64_t i = 0; i < n_phases64; i++)
		all[i] = one[i % per_rep];
	int n_phases = (int)n_phases64;

	signal(SIGPIPE, SIG_IGN);
	pid_t pids[TASKS_MAX];
	int go_w[TASKS_MAX], res_r[TASKS_MAX];
	for (int64_t t = 0; t < o.tasks; t++) {
		int go[2], res[2];
		if (pipe(go) != 0 || pipe(res) != 0) {
			corun_err(PROG, "cannot create pipes: %s", strerror(errno));
			return CORUN_EXIT_RUNTIME;
		}
		pid_t pid = fork();
		if (pid < 0) {
			corun_err(PROG, "cannot fork task %" PRId64 ": %s", t, strerror(errno));
			return CORUN_EXIT_RUNTIME;
		}
		if (pid == 0) {
			close(go[1]);
			close(res[0]);
			for (int64_t u = 0; u < t; u++) {
				close(go_w[u]);
				close(res_r[u]);
			}
			_exit(task_main(&o, t, go[0], res[1], all, n_phases));
		}
		close(go[0]);
		close(res[1]);
		pids[t] = pid;
		go_w[t] = go[1];
		res_r[t] = res[0];
	}

	double *bw[2], *ops[2], *tm[2], *t0[2];
	double epoch_offset_s = corun_epoch_s() - corun_monotonic_s();
	for (int k = 0; k < 2; k++) {
		bw[k] = calloc((size_t)o.reps, sizeof(double));
		ops[k] = calloc((size_t)o.reps, sizeof(double));
		tm[k] = calloc((size_t)o.reps, sizeof(double));
		t0[k] = calloc((size_t)o.reps, sizeof(double));
		if (!bw[k] || !ops[k] || !tm[k] || !t0[k]) {
			corun_err(PROG, "out of memory");
			return CORUN_EXIT_RUNTIME;
		}
	}
	int64_t mismatches = 0, total_bytes = 0;
	uint64_t checksum = 0;
	char error[200] = "";
	for (int p = 0; p < n_phases && !error[0]; p++) {
		struct task_result r;
		for (int64_t t = 0; t < o.tasks; t++) { /* everyone ready */
			if (read_all(res_r[t], &r, sizeof r) != 0) {
				snprintf(error, sizeof error, "task %" PRId64 " ended early", t);
				break;
			}
			if (r.error && !error[0])
				snprintf(error, sizeof error, "task %" PRId64 ": %s: %s", t, r.what,
					 strerror(r.error));
		}
		if (error[0])
			break;
		if (p == 0 && o.barrier && barrier_wait(&o, error, sizeof error) != 0)
			break;
		for (int64_t t = 0; t < o.tasks; t++)
			if (write_all(go_w[t], "g", 1) != 0)
				snprintf(error, sizeof error, "task %" PRId64 " ended early", t);
		double first = 0, last = 0;
		int64_t bytes = 0, reqs = 0;
		for (int64_t t = 0; t < o.tasks; t++) {
			if (read_all(res_r[t], &r, sizeof r) != 0) {
				if (!error[0])
					snprintf(error, sizeof error,
						 "task %" PRId64 " ended early", t);
				continue;
			}
			if (r.error && !error[0])
				snprintf(error, sizeof error, "task %" PRId64 ": %s: %s", t, r.what,
					 strerror(r.error));
			if (t == 0 || r.start_s < first)
				first = r.start_s;
			if (t == 0 || r.end_s > last)
				last = r.end_s;
			bytes += r.bytes;
			reqs += r.requests;
			mismatches += r.mismatches;
			checksum ^= r.checksum;
		}
		total_bytes += bytes;
		int k = all[p] == PHASE_READ ? 1 : 0;
		int64_t rep = p / per_rep;
		double secs = last - first;
		tm[k][rep] = secs;
		t0[k][rep] = first + epoch_offset_s;
		bw[k][rep] = secs > 0 ? (double)bytes / secs / 1048576.0 : 0.0;
		ops[k][rep] = secs > 0 ? (double)reqs / secs : 0.0;
	}
	for (int64_t t = 0; t < o.tasks; t++) {
		close(go_w[t]);
		close(res_r[t]);
	}
	for (int64_t t = 0; t < o.tasks; t++) {
		int st;
		while (waitpid(pids[t], &st, 0) < 0 && errno == EINTR)
			;
	}
	if (error[0]) {
		corun_err(PROG, "%s", error);
		free_figures(bw, ops, tm, t0);
		free(all);
		return CORUN_EXIT_RUNTIME;
	}

	struct corun_json j;
	corun_json_result_begin(&j, PROG, PFS_READ_VERSION, argc, argv, start_epoch_s);
	corun_json_str(&j, "api", "gfapi");
	corun_json_int(&j, "servers", o.n_servers);
	corun_json_int(&j, "strip_size_bytes", o.strip);
	corun_json_int(&j, "transfer_size_bytes", o.transfer);
	corun_json_int(&j, "block_size_bytes", o.block);
	corun_json_int(&j, "segments", o.segments);
	corun_json_int(&j, "tasks", o.tasks);
	corun_json_str(&j, "pattern", pattern_names[o.pattern]);
	corun_json_int(&j, "rank", o.rank);
	corun_json_int(&j, "ranks", o.ranks);
	corun_json_int(&j, "app", o.app);
	corun_json_bool(&j, "file_per_process", o.file_per_process);
	corun_json_int(&j, "repetitions", o.reps);
	corun_json_int(&j, "compute_passes", o.compute_passes);
	corun_json_int(&j, "bytes_per_phase", o.block * o.segments * o.tasks);
	corun_json_int(&j, "bytes_total", total_bytes);
	if (o.do_write)
		json_phase(&j, "write", bw[0], ops[0], tm[0], t0[0], o.reps,
			   o.block * o.segments * o.tasks);
	if (o.do_read)
		json_phase(&j, "read", bw[1], ops[1], tm[1], t0[1], o.reps,
			   o.block * o.segments * o.tasks);
	char hex[17];
	snprintf(hex, sizeof hex, "%016" PRIx64, checksum);
	corun_json_str(&j, "compute_checksum", hex);
	corun_json_bool(&j, "checked", o.check);
	corun_json_int(&j, "mismatched_words", mismatches);
	corun_json_end(&j);
	free_figures(bw, ops, tm, t0);
	free(all);
	if (corun_flush_result(PROG) != 0)
		return CORUN_EXIT_RUNTIME;
	if (mismatches) {
		corun_err(PROG, "%" PRId64 " words read differ from the written pattern",
			  mismatches);
		return CORUN_EXIT_RUNTIME;
	}
	return CORUN_EXIT_OK;
}
