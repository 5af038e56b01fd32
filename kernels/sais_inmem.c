/* sais_inmem: the in-memory study of paper 004 (SAIs), section 6, Figs. 13-14.
 *
 * One application reads strips of --strip-size bytes round-robin from
 * --files files in memory (tmpfs stands in for the paper's RAM disk), as a
 * parallel file system's servers would return them, and assembles them into
 * requests of --request-size bytes.  A reader and an assembler share a ring
 * of strip slots in shared memory (POSIX semaphores hand the slots over):
 *
 *   --mode thread   Si-SAIs: the reader and the assembler are two threads of
 *                   one process, pinned to one CPU (--pin auto), so a strip
 *                   is consumed where it was read;
 *   --mode process  Si-Irqbalance: the same work in two processes, free to
 *                   run on different CPUs, so a strip usually moves between
 *                   the caches of two cores.
 *
 * --apps N runs N such applications at once (the paper sweeps them to the
 * core count).  Each assembled request is checked word by word against the
 * pattern the files were written with, so the kernel checks its own data.
 * Prints one JSON object on one line.
 */
#include "sais_inmem/sais_inmem.h"

static const char *const mode_names[] = { "thread", "process" };
static const char *const pin_names[] = { "auto", "same", "none" };

/* clang-format off */
static const char usage_text[] =
	"Usage: " PROG " [OPTION]...\n"
	"The in-memory study of paper 004 (section 6): strips read round-robin\n"
	"from files in memory are assembled into requests by a reader and an\n"
	"assembler, as two threads of one process on one CPU (Si-SAIs) or as two\n"
	"processes free to run anywhere (Si-Irqbalance).  Prints one JSON object.\n"
	"\n"
	"  --mode MODE          thread (Si-SAIs, default) or process (Si-Irqbalance)\n"
	"  --pin PIN            auto (default: same for thread, none for process),\n"
	"                       same (both workers of an application on CPU\n"
	"                       app mod online CPUs) or none\n"
	"  --apps N             concurrent applications, 1 to 256 (default 1)\n"
	"  --files N            files the strips come from (the servers), 1 to 256\n"
	"                       (default 8)\n"
	"  --strip-size BYTES   bytes per strip, 4K to 16M, a multiple of 8;\n"
	"                       K/M/G = KiB/MiB/GiB (default 64K, as in the paper)\n"
	"  --request-size BYTES bytes per request, a multiple of the strip size, up\n"
	"                       to 1G (default 1M, as in the paper)\n"
	"  --file-size BYTES    bytes per file, a multiple of the strip size\n"
	"                       (default 4M)\n"
	"  --slots N            strip slots between reader and assembler, 1 to\n"
	"                       1024 (default: strips per request)\n"
	"  --duration-s S       measured seconds per application, > 0 to 3600\n"
	"                       (default 2)\n"
	"  --warmup-s S         seconds run and discarded first, 0 to 3600\n"
	"                       (default 0.2)\n"
	"  --dir PATH           where the files are made; tmpfs stands in for the\n"
	"                       RAM disk (default /dev/shm)\n"
	"  --keep-files         leave the files (default: removed at the end)\n"
	CORUN_USAGE_HELP_VERSION("            ")
	"\n"
	"Bandwidth is in MB (10^6 bytes) per second, as in the paper.  Cache misses\n"
	"come from perf_event_open where the PMU exists, else they are null with\n"
	"the reason.\n"
	CORUN_USAGE_EXIT_STATUS("self-check") ".\n";
/* clang-format on */

static void parse_options(int argc, char *argv[], struct options *o)
{
	static const struct option long_options[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "pin", required_argument, NULL, 'p' },
		{ "apps", required_argument, NULL, 'a' },
		{ "files", required_argument, NULL, 'f' },
		{ "strip-size", required_argument, NULL, 's' },
		{ "request-size", required_argument, NULL, 'r' },
		{ "file-size", required_argument, NULL, 'z' },
		{ "slots", required_argument, NULL, 'l' },
		{ "duration-s", required_argument, NULL, 'd' },
		{ "warmup-s", required_argument, NULL, 'w' },
		{ "dir", required_argument, NULL, 'D' },
		{ "keep-files", no_argument, NULL, 'k' },
		CORUN_COMMON_LONG_OPTIONS,
	};
	int c;

	*o = (struct options){
		.mode = MODE_THREAD,
		.pin = PIN_AUTO,
		.apps = 1,
		.files = 8,
		.strip = 65536,
		.request = 1048576,
		.file_size = 4194304,
		.slots = 0,
		.duration_s = 2.0,
		.warmup_s = 0.2,
		.dir = "/dev/shm",
		.keep_files = false,
	};
	while ((c = corun_getopt(argc, argv, "+:h", long_options)) != -1) {
		switch (c) {
		case 'm':
			if (strcmp(optarg, "thread") == 0)
				o->mode = MODE_THREAD;
			else if (strcmp(optarg, "process") == 0)
				o->mode = MODE_PROCESS;
			else
				corun_usage_error(PROG,
						  "--mode: '%s' (expected "
						  "thread or process)",
						  optarg);
			break;
		case 'p':
			if (strcmp(optarg, "auto") == 0)
				o->pin = PIN_AUTO;
			else if (strcmp(optarg, "same") == 0)
				o->pin = PIN_SAME;
			else if (strcmp(optarg, "none") == 0)
				o->pin = PIN_NONE;
			else
				corun_usage_error(PROG,
						  "--pin: '%s' (expected "
						  "auto, same or none)",
						  optarg);
			break;
		case 'a':
			o->apps = corun_parse_int(PROG, "apps", optarg, 1, APPS_MAX, false);
			break;
		case 'f':
			o->files = corun_parse_int(PROG, "files", optarg, 1, FILES_MAX, false);
			break;
		case 's':
			o->strip = corun_parse_int(PROG, "strip-size", optarg, STRIP_MIN, STRIP_MAX,
						   true);
			if (o->strip % 8)
				corun_usage_error(PROG,
						  "--strip-size: '%s' "
						  "(expected a multiple of 8)",
						  optarg);
			break;
		case 'r':
			o->request = corun_parse_int(PROG, "request-size", optarg, STRIP_MIN,
						     REQUEST_MAX, true);
			break;
		case 'z':
			o->file_size = corun_parse_int(PROG, "file-size", optarg, STRIP_MIN,
						       FILE_SIZE_MAX, true);
			break;
		case 'l':
			o->slots = corun_parse_int(PROG, "slots", optarg, 1, SLOTS_MAX, false);
			break;
		case 'd':
			o->duration_s =
				corun_parse_double(PROG, "duration-s", optarg, 0.0, 3600.0, true);
			break;
		case 'w':
			o->warmup_s =
				corun_parse_double(PROG, "warmup-s", optarg, 0.0, 3600.0, false);
			break;
		case 'D': o->dir = optarg; break;
		case 'k': o->keep_files = true; break;
		default: corun_default_option(PROG, SAIS_INMEM_VERSION, usage_text, c, argv);
		}
	}
	corun_no_operands(PROG, argc, argv);
	if (o->request % o->strip)
		corun_usage_error(PROG,
				  "--request-size: '%" PRId64 "' (expected "
				  "a multiple of --strip-size %" PRId64 ")",
				  o->request, o->strip);
	if (o->file_size % o->strip)
		corun_usage_error(PROG,
				  "--file-size: '%" PRId64 "' (expected "
				  "a multiple of --strip-size %" PRId64 ")",
				  o->file_size, o->strip);
	if (o->slots == 0) {
		int64_t s = o->request / o->strip;

		o->slots = s < SLOTS_MAX ? s : SLOTS_MAX;
	}
	if (o->pin == PIN_AUTO)
		o->pin = o->mode == MODE_THREAD ? PIN_SAME : PIN_NONE;
}

/* Cache misses of this process and its descendants (inherit), or -1 with
 * the reason in WHY. */
static int open_cache_misses(char *why, size_t n)
{
	struct perf_event_attr pe;
	long fd;

	memset(&pe, 0, sizeof(pe));
	pe.type = PERF_TYPE_HARDWARE;
	pe.size = sizeof(pe);
	pe.config = PERF_COUNT_HW_CACHE_MISSES;
	pe.disabled = 1;
	pe.inherit = 1;
	pe.exclude_hv = 1;
	fd = syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0);
	if (fd < 0) {
		snprintf(why, n,
			 "perf_event_open(PERF_COUNT_HW_CACHE_MISSES): "
			 "%s%s",
			 strerror(errno),
			 errno == ENOENT || errno == EOPNOTSUPP
				 ? " (no hardware PMU, e.g. a VM without a virtual PMU)"
				 : "");
		return -1;
	}
	return (int)fd;
}

static void worker_json(struct corun_json *j, const char *key, const struct worker_stats *w,
			double measured_s)
{
	corun_json_object_begin(j, key);
	corun_json_double(j, "user_s", w->user_s);
	corun_json_double(j, "sys_s", w->sys_s);
	corun_json_double(j, "cpu_util_pct",
			  measured_s > 0 ? (w->user_s + w->sys_s) / measured_s * 100 : 0);
	corun_json_int(j, "strips", w->strips);
	corun_json_object_begin(j, "strips_per_cpu");
	for (int i = 0; i < CPU_MAX; i++) {
		char k[16];

		if (w->on_cpu[i] == 0)
			continue;
		snprintf(k, sizeof(k), "%d", i);
		corun_json_int(j, k, w->on_cpu[i]);
	}
	if (w->on_cpu_other)
		corun_json_int(j, "other", w->on_cpu_other);
	corun_json_object_end(j);
	corun_json_object_end(j);
}

int main(int argc, char *argv[])
{
	double start_epoch_s = corun_epoch_s();
	struct options o;
	int fds[FILES_MAX];
	struct app *apps[APPS_MAX] = { 0 };
	pid_t pids[APPS_MAX];
	size_t slot_bytes, region;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int rc = CORUN_EXIT_RUNTIME;
	int perf_fd;
	char perf_why[256] = "";
	int64_t started = 0;
	uint64_t misses = 0;
	bool have_misses = false;
	double bw = 0, user = 0, sys = 0, measured = 0;
	int64_t bytes = 0, requests = 0, strips = 0, same = 0;
	int64_t cpus_ran[CPU_MAX] = { 0 };
	struct corun_json j;

	parse_options(argc, argv, &o);
	if (ncpu < 1)
		ncpu = 1;
	if (make_files(&o, fds) != 0) {
		remove_files(&o, fds);
		return CORUN_EXIT_RUNTIME;
	}
	slot_bytes = sizeof(struct slot_head) + (size_t)o.strip;
	slot_bytes = (slot_bytes + 63) & ~(size_t)63;
	region = sizeof(struct app) + 64 + (size_t)o.slots * slot_bytes;
	for (int64_t i = 0; i < o.apps; i++) {
		void *p = mmap(NULL, region, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
			       0);

		if (p == MAP_FAILED) {
			corun_err(PROG, "mmap of %zu bytes: %s", region, strerror(errno));
			goto out;
		}
		apps[i] = p;
		memset(p, 0, sizeof(struct app));
		if (sem_init(&apps[i]->empty, 1, (unsigned)o.slots) != 0 ||
		    sem_init(&apps[i]->full, 1, 0) != 0) {
			corun_err(PROG, "sem_init: %s", strerror(errno));
			goto out;
		}
		apps[i]->cpu = o.pin == PIN_SAME ? (int)(i % ncpu) : -1;
	}
	perf_fd = open_cache_misses(perf_why, sizeof(perf_why));
	if (perf_fd >= 0)
		ioctl(perf_fd, PERF_EVENT_IOC_ENABLE, 0);
	fflush(NULL);
	for (; started < o.apps; started++) {
		pid_t pid = fork();

		if (pid < 0) {
			corun_err(PROG, "fork: %s", strerror(errno));
			break;
		}
		if (pid == 0) {
			struct ctx c = { .o = &o, .a = apps[started], .slot_bytes = slot_bytes };

			memcpy(c.fds, fds, sizeof(fds));
			_exit(run_app(&c));
		}
		pids[started] = pid;
	}
	rc = started == o.apps ? CORUN_EXIT_OK : CORUN_EXIT_RUNTIME;
	for (int64_t i = 0; i < started; i++) {
		int st;

		while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			corun_err(PROG, "application %" PRId64 ": %s", i,
				  apps[i]->error[0] ? apps[i]->error : "ended abnormally");
			rc = CORUN_EXIT_RUNTIME;
		}
	}
	if (perf_fd >= 0) {
		ioctl(perf_fd, PERF_EVENT_IOC_DISABLE, 0);
		have_misses = read(perf_fd, &misses, sizeof(misses)) == (ssize_t)sizeof(misses);
		if (!have_misses)
			snprintf(perf_why, sizeof(perf_why),
				 "reading the "
				 "counter failed: %s",
				 strerror(errno));
		close(perf_fd);
	}
	if (rc != CORUN_EXIT_OK)
		goto out;

	for (int64_t i = 0; i < o.apps; i++) {
		const struct app *a = apps[i];

		if (a->measured_s <= 0 || a->requests == 0) {
			corun_err(PROG,
				  "application %" PRId64 " assembled no "
				  "request in the measured time",
				  i);
			rc = CORUN_EXIT_RUNTIME;
			goto out;
		}
		bw += (double)a->bytes / 1e6 / a->measured_s;
		bytes += a->bytes;
		requests += a->requests;
		strips += a->assembler.strips;
		same += a->same_cpu;
		measured += a->measured_s / (double)o.apps;
		user += a->reader.user_s + a->assembler.user_s;
		sys += a->reader.sys_s + a->assembler.sys_s;
		for (int c = 0; c < CPU_MAX; c++)
			cpus_ran[c] += a->reader.on_cpu[c] + a->assembler.on_cpu[c];
	}

	corun_json_result_begin(&j, PROG, SAIS_INMEM_VERSION, argc, argv, start_epoch_s);
	corun_json_str(&j, "mode", mode_names[o.mode]);
	corun_json_str(&j, "stands_for", o.mode == MODE_THREAD ? "Si-SAIs" : "Si-Irqbalance");
	corun_json_str(&j, "pin", pin_names[o.pin]);
	corun_json_int(&j, "apps", o.apps);
	corun_json_int(&j, "files", o.files);
	corun_json_int(&j, "strip_size_bytes", o.strip);
	corun_json_int(&j, "request_size_bytes", o.request);
	corun_json_int(&j, "file_size_bytes", o.file_size);
	corun_json_int(&j, "slots", o.slots);
	corun_json_str(&j, "dir", o.dir);
	corun_json_double(&j, "duration_s", o.duration_s);
	corun_json_double(&j, "warmup_s", o.warmup_s);
	corun_json_int(&j, "online_cpus", ncpu);
	corun_json_double(&j, "measured_s", measured);
	corun_json_int(&j, "bytes", bytes);
	corun_json_int(&j, "requests", requests);
	corun_json_int(&j, "strips", strips);
	corun_json_double(&j, "bw_mb_s", bw);
	corun_json_double(&j, "cpu_util_user_pct", user / (measured * (double)ncpu) * 100);
	corun_json_double(&j, "cpu_util_sys_pct", sys / (measured * (double)ncpu) * 100);
	corun_json_double(&j, "same_cpu_share", strips ? (double)same / (double)strips : 0);
	corun_json_object_begin(&j, "strips_per_cpu");
	for (int c = 0; c < CPU_MAX; c++) {
		char k[16];

		if (cpus_ran[c] == 0)
			continue;
		snprintf(k, sizeof(k), "%d", c);
		corun_json_int(&j, k, cpus_ran[c]);
	}
	corun_json_object_end(&j);
	if (have_misses)
		corun_json_int(&j, "cache_misses", (int64_t)misses);
	else
		corun_json_null(&j, "cache_misses");
	corun_json_str(&j, "cache_misses_missing", have_misses ? "" : perf_why);
	corun_json_null(&j, "l2_misses");
	corun_json_str(&j, "l2_misses_missing",
		       have_misses ? "perf_event_open has no generic L2 event; count the "
				     "CPU's own (l2_rqsts.miss, l2_cache_req_stat) with perf stat"
				   : perf_why);
	corun_json_array_begin(&j, "per_app");
	for (int64_t i = 0; i < o.apps; i++) {
		const struct app *a = apps[i];

		corun_json_object_begin(&j, NULL);
		corun_json_int(&j, "cpu", a->cpu);
		corun_json_double(&j, "bw_mb_s", (double)a->bytes / 1e6 / a->measured_s);
		corun_json_double(&j, "measured_s", a->measured_s);
		corun_json_int(&j, "requests", a->requests);
		corun_json_double(&j, "same_cpu_share",
				  a->assembler.strips
					  ? (double)a->same_cpu / (double)a->assembler.strips
					  : 0);
		worker_json(&j, "reader", &a->reader, a->measured_s);
		worker_json(&j, "assembler", &a->assembler, a->measured_s);
		corun_json_object_end(&j);
	}
	corun_json_array_end(&j);
	corun_json_result_end(&j);
	rc = corun_flush_result(PROG) == 0 ? CORUN_EXIT_OK : CORUN_EXIT_RUNTIME;
out:
	for (int64_t i = 0; i < o.apps; i++)
		if (apps[i] != NULL)
			munmap(apps[i], region);
	remove_files(&o, fds);
	return rc;
}
