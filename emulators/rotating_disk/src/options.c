/* Command line and preset files; see options.h. */
#include "options.h"

#include "corun_kernel.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
	"Usage: " RD_PROG " [--preset FILE] [model options] --mount DIR --state FILE\n"
	"       " RD_PROG " [--preset FILE] [model options] --replay TRACE [--replay-qd N]\n"
	"\n"
	"An emulated rotating disk: serves one in-memory image file through FUSE and\n"
	"completes every request at the time a one-actuator disk model gives it.\n"
	"With --replay, runs the model alone on a trace and prints per-request timing\n"
	"as JSON.  Options override the preset; a preset holds `option = value` lines.\n"
	"\n"
	"Model (defaults: a 2010 7200 rpm SATA disk):\n"
	"  --preset FILE              preset file of option = value lines (none)\n"
	"  --rpm N                    spindle speed, revolutions/min (7200)\n"
	"  --seek-track-ms MS         single-track seek, ms (1.0)\n"
	"  --seek-avg-ms MS           average seek over random distances, ms (8.5)\n"
	"  --seek-full-ms MS          full-stroke seek, ms (18.0)\n"
	"  --seek-knee F              knee between sqrt and linear seek, fraction of\n"
	"                             the cylinders (0.2)\n"
	"  --cylinders N              cylinders of the whole platter (100000)\n"
	"  --rate-outer-mb-s R        media rate of the outer zone, MB/s = 10^6 B/s (125)\n"
	"  --rate-inner-mb-s R        media rate of the inner zone, MB/s (65)\n"
	"  --zones N                  zones from outer to inner (16)\n"
	"  --stroke F                 fraction of the platter the image spans, (0, 1] (1.0)\n"
	"  --size BYTES               image size, K/M/G suffixes for KiB/MiB/GiB (1G)\n"
	"  --queue-window N           command queue reordering window, 1 = FIFO .. 32 (32)\n"
	"  --starvation-limit N       times a queued request may be passed over (32)\n"
	"  --cache-segments N         read-ahead cache segments (16)\n"
	"  --segment-bytes BYTES      segment size and read-ahead per stream (2M)\n"
	"  --write-cache MODE         through or back (through)\n"
	"  --write-cache-bytes BYTES  dirty data a write-back cache holds (16M)\n"
	"  --overhead-ms MS           controller overhead per command, ms (0.1)\n"
	"  --bus-mb-s R               interface rate for cache hits, MB/s (300)\n"
	"  --seed N                   seed of the platter phase and track skews (1)\n"
	"\n"
	"Serving:\n"
	"  --mount DIR                FUSE mount point (an empty folder)\n"
	"  --state FILE               counters as JSON, written once mounted, on SIGUSR1\n"
	"                             and at exit (atomically)\n"
	"  --name NAME                name of the served file (disk.img)\n"
	"  --rt-priority N            SCHED_FIFO priority 1..99 for the daemon, so that busy CPUs\n"
	"                             delay completions less; 0: normal scheduling (0)\n"
	"  --untimed-start            serve at memory speed (no model) until SIGUSR2, to fill\n"
	"                             the disk before a measurement (off)\n"
	"  --load FILE                start from this image (--size bytes, may be sparse: its\n"
	"                             holes are zeros) instead of an empty disk\n"
	"\n"
	"Replay:\n"
	"  --replay TRACE             lines `R|W OFFSET LENGTH [ARRIVAL_MS]` (- for stdin)\n"
	"  --replay-qd N              keep N requests in flight, ignoring arrivals (0:\n"
	"                             use the trace's arrival times)\n"
	"\n"
	"  -h, --help                 this text\n"
	"  -V, --version              the version\n"
	"\n"
	"Exit: 0 ok, 1 runtime error, 2 usage error, 4 FUSE missing (no /dev/fuse).\n"
	"SIGTERM, SIGINT or an unmount end the daemon; SIGUSR1 writes the state file;\n"
	"SIGUSR2 ends --untimed-start: from then on every request is timed by the model;\n"
	"SIGRTMIN serves at memory speed again (a run's teardown: the unmount's writes).\n"
	"The served file answers SEEK_DATA and SEEK_HOLE in 1 MiB chunks: data is what was\n"
	"written non-zero, or data in the --load file; a copy of the image reads only that.\n";

static const struct option long_options[] = { { "preset", required_argument, NULL, 0 },
					      { "rpm", required_argument, NULL, 0 },
					      { "seek-track-ms", required_argument, NULL, 0 },
					      { "seek-avg-ms", required_argument, NULL, 0 },
					      { "seek-full-ms", required_argument, NULL, 0 },
					      { "seek-knee", required_argument, NULL, 0 },
					      { "cylinders", required_argument, NULL, 0 },
					      { "rate-outer-mb-s", required_argument, NULL, 0 },
					      { "rate-inner-mb-s", required_argument, NULL, 0 },
					      { "zones", required_argument, NULL, 0 },
					      { "stroke", required_argument, NULL, 0 },
					      { "size", required_argument, NULL, 0 },
					      { "queue-window", required_argument, NULL, 0 },
					      { "starvation-limit", required_argument, NULL, 0 },
					      { "cache-segments", required_argument, NULL, 0 },
					      { "segment-bytes", required_argument, NULL, 0 },
					      { "write-cache", required_argument, NULL, 0 },
					      { "write-cache-bytes", required_argument, NULL, 0 },
					      { "overhead-ms", required_argument, NULL, 0 },
					      { "bus-mb-s", required_argument, NULL, 0 },
					      { "seed", required_argument, NULL, 0 },
					      { "mount", required_argument, NULL, 0 },
					      { "state", required_argument, NULL, 0 },
					      { "name", required_argument, NULL, 0 },
					      { "replay", required_argument, NULL, 0 },
					      { "replay-qd", required_argument, NULL, 0 },
					      { "rt-priority", required_argument, NULL, 0 },
					      { "untimed-start", no_argument, NULL, 0 },
					      { "load", required_argument, NULL, 0 },
					      CORUN_COMMON_LONG_OPTIONS };

static double dbl(const char *opt, const char *v, double min, double max, bool excl)
{
	return corun_parse_double(RD_PROG, opt, v, min, max, excl);
}

static int64_t num(const char *opt, const char *v, int64_t min, int64_t max, bool suffix)
{
	return corun_parse_int(RD_PROG, opt, v, min, max, suffix);
}

/* Apply one option; VALUE is kept (argv or a preset line that lives on). */
static void apply(struct rd_config *c, const char *opt, const char *v)
{
	struct rd_params *p = &c->p;

	if (!strcmp(opt, "rpm"))
		p->rpm = dbl(opt, v, 1000, 30000, false);
	else if (!strcmp(opt, "seek-track-ms"))
		p->seek_track_ms = dbl(opt, v, 0, 100, true);
	else if (!strcmp(opt, "seek-avg-ms"))
		p->seek_avg_ms = dbl(opt, v, 0, 200, true);
	else if (!strcmp(opt, "seek-full-ms"))
		p->seek_full_ms = dbl(opt, v, 0, 500, true);
	else if (!strcmp(opt, "seek-knee"))
		p->seek_knee = dbl(opt, v, 0, 0.99, true);
	else if (!strcmp(opt, "cylinders"))
		p->cylinders = num(opt, v, 2, INT64_C(10000000), false);
	else if (!strcmp(opt, "rate-outer-mb-s"))
		p->rate_outer_mb_s = dbl(opt, v, 0, 10000, true);
	else if (!strcmp(opt, "rate-inner-mb-s"))
		p->rate_inner_mb_s = dbl(opt, v, 0, 10000, true);
	else if (!strcmp(opt, "zones"))
		p->zones = (int)num(opt, v, 1, 1000, false);
	else if (!strcmp(opt, "stroke"))
		p->stroke = dbl(opt, v, 0, 1, true);
	else if (!strcmp(opt, "size"))
		p->size_bytes = (uint64_t)num(opt, v, 1 << 20, INT64_C(1) << 40, true);
	else if (!strcmp(opt, "queue-window"))
		p->queue_window = (int)num(opt, v, 1, RD_MAX_WINDOW, false);
	else if (!strcmp(opt, "starvation-limit"))
		p->starvation_limit = (int)num(opt, v, 0, 1000000, false);
	else if (!strcmp(opt, "cache-segments"))
		p->cache_segments = (int)num(opt, v, 1, 1024, false);
	else if (!strcmp(opt, "segment-bytes"))
		p->segment_bytes = (uint64_t)num(opt, v, 0, INT64_C(1) << 30, true);
	else if (!strcmp(opt, "write-cache")) {
		if (!strcmp(v, "back"))
			p->write_back = true;
		else if (!strcmp(v, "through"))
			p->write_back = false;
		else
			corun_usage_error(RD_PROG, "--write-cache: '%s' (expected through or back)",
					  v);
	} else if (!strcmp(opt, "write-cache-bytes"))
		p->write_cache_bytes = (uint64_t)num(opt, v, 0, INT64_C(1) << 34, true);
	else if (!strcmp(opt, "overhead-ms"))
		p->overhead_ms = dbl(opt, v, 0, 100, false);
	else if (!strcmp(opt, "bus-mb-s"))
		p->bus_mb_s = dbl(opt, v, 0, 100000, true);
	else if (!strcmp(opt, "seed"))
		p->seed = (uint64_t)num(opt, v, 0, INT64_MAX, false);
	else if (!strcmp(opt, "mount"))
		c->mount = v;
	else if (!strcmp(opt, "state"))
		c->state = v;
	else if (!strcmp(opt, "name")) {
		if (!v[0] || strchr(v, '/') || !strcmp(v, ".") || !strcmp(v, ".."))
			corun_usage_error(RD_PROG, "--name: '%s' (expected a file name without /)",
					  v);
		c->name = v;
	} else if (!strcmp(opt, "replay"))
		c->replay = v;
	else if (!strcmp(opt, "replay-qd"))
		c->replay_qd = (int)num(opt, v, 0, 1024, false);
	else if (!strcmp(opt, "untimed-start"))
		c->untimed_start = true;
	else if (!strcmp(opt, "load"))
		c->load = v;
	else if (!strcmp(opt, "rt-priority"))
		c->rt_priority = (int)num(opt, v, 0, 99, false);
	else
		corun_usage_error(RD_PROG, "--%s: not a model option", opt);
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* A preset: `option = value` lines, # comments.  Its lines are kept for the
 * life of the process (the values are referenced). */
static void load_preset(struct rd_config *c, const char *path)
{
	static const char *const allowed[] = {
		"rpm",
		"seek-track-ms",
		"seek-avg-ms",
		"seek-full-ms",
		"seek-knee",
		"cylinders",
		"rate-outer-mb-s",
		"rate-inner-mb-s",
		"zones",
		"stroke",
		"size",
		"queue-window",
		"starvation-limit",
		"cache-segments",
		"segment-bytes",
		"write-cache",
		"write-cache-bytes",
		"overhead-ms",
		"bus-mb-s",
		"seed",
		NULL,
	};
	static char kept_lines[64][256]; /* the values stay referenced */
	size_t nkept = 0;
	FILE *f = fopen(path, "r");
	char line[512];
	int lineno = 0;

	if (!f)
		corun_usage_error(RD_PROG, "--preset: '%s': %s (expected a readable preset file)",
				  path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *hash = strchr(line, '#'), *eq, *key, *val, *kept;
		bool ok = false;

		lineno++;
		if (hash)
			*hash = '\0';
		key = trim(line);
		if (!*key)
			continue;
		eq = strchr(key, '=');
		if (!eq) {
			fclose(f);
			corun_usage_error(RD_PROG, "%s:%d: '%s' (expected option = value)", path,
					  lineno, key);
		}
		*eq = '\0';
		key = trim(key);
		val = trim(eq + 1);
		for (int i = 0; allowed[i]; i++)
			ok = ok || !strcmp(allowed[i], key);
		if (!ok) {
			fclose(f);
			corun_usage_error(
				RD_PROG, "%s:%d: %s (expected a model option, such as seek-avg-ms)",
				path, lineno, key);
		}
		if (nkept == sizeof(kept_lines) / sizeof(kept_lines[0]) ||
		    strlen(key) + strlen(val) + 2 > sizeof(kept_lines[0])) {
			fclose(f);
			corun_usage_error(RD_PROG,
					  "%s:%d: too many or too long lines (expected a preset)",
					  path, lineno);
		}
		kept = kept_lines[nkept++];
		strcpy(kept, key);
		strcpy(kept + strlen(key) + 1, val);
		apply(c, kept, kept + strlen(key) + 1);
	}
	fclose(f);
}

void rd_parse_options(struct rd_config *c, int argc, char *argv[])
{
	int idx, ch;

	memset(c, 0, sizeof(*c));
	c->p = (struct rd_params){
		.rpm = 7200,
		.seek_track_ms = 1.0,
		.seek_avg_ms = 8.5,
		.seek_full_ms = 18.0,
		.seek_knee = 0.2,
		.cylinders = 100000,
		.rate_outer_mb_s = 125,
		.rate_inner_mb_s = 65,
		.zones = 16,
		.stroke = 1.0,
		.size_bytes = UINT64_C(1) << 30,
		.queue_window = 32,
		.starvation_limit = 32,
		.cache_segments = 16,
		.segment_bytes = UINT64_C(2) << 20,
		.write_back = false,
		.write_cache_bytes = UINT64_C(16) << 20,
		.overhead_ms = 0.1,
		.bus_mb_s = 300,
		.seed = 1,
	};
	c->name = "disk.img";
	opterr = 0;
	/* First the preset, so that the options override it. */
	while ((ch = getopt_long(argc, argv, "+:hV", long_options, &idx)) != -1) {
		if (ch == 0 && !strcmp(long_options[idx].name, "preset")) {
			if (c->preset)
				corun_usage_error(RD_PROG,
						  "--preset: given twice (expected one preset)");
			c->preset = optarg;
		} else if (ch != 0) {
			corun_default_option(RD_PROG, RD_VERSION, usage_text, ch, argv);
		}
	}
	if (c->preset)
		load_preset(c, c->preset);
	optind = 0;
	while ((ch = getopt_long(argc, argv, "+:hV", long_options, &idx)) != -1) {
		if (ch != 0)
			corun_default_option(RD_PROG, RD_VERSION, usage_text, ch, argv);
		if (strcmp(long_options[idx].name, "preset"))
			apply(c, long_options[idx].name, optarg ? optarg : "");
	}
	corun_no_operands(RD_PROG, argc, argv);
	if (c->p.size_bytes % RD_SECTOR)
		corun_usage_error(RD_PROG, "--size: %llu (expected a multiple of 512)",
				  (unsigned long long)c->p.size_bytes);
	if (c->replay) {
		if (c->mount || c->state)
			corun_usage_error(
				RD_PROG,
				"--replay: given with --mount or --state (expected one of the two modes)");
	} else {
		if (!c->mount)
			corun_usage_error(
				RD_PROG,
				"--mount: missing (expected a mount point, or --replay TRACE)");
		if (!c->state)
			corun_usage_error(RD_PROG,
					  "--state: missing (expected a path for the counters)");
		if (c->replay_qd)
			corun_usage_error(RD_PROG, "--replay-qd: given without --replay");
	}
	if (c->replay && c->load)
		corun_usage_error(RD_PROG, "--load: given with --replay (expected --mount)");
}
