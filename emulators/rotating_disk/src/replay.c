/* Replay: a trace through the model alone, per-request timing as JSON. */
#include "replay.h"

#include "corun_kernel.h"
#include "report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct trace {
	struct rd_req *reqs;
	size_t n, cap;
};

static int read_trace(const char *path, struct trace *t)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	char line[256];
	int lineno = 0;

	if (!f) {
		corun_err(RD_PROG, "--replay: '%s': %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char op;
		unsigned long long off, len;
		double arr = 0;
		int got;
		struct rd_req *r;

		lineno++;
		if (line[strspn(line, " \t\r\n")] == '\0' || line[strspn(line, " \t")] == '#')
			continue;
		got = sscanf(line, " %c %llu %llu %lf", &op, &off, &len, &arr);
		if (got < 3 || (op != 'R' && op != 'W') || len == 0 || arr < 0) {
			corun_err(RD_PROG, "%s:%d: expected R|W OFFSET LENGTH [ARRIVAL_MS]", path,
				  lineno);
			goto bad;
		}
		if (t->n == t->cap) {
			size_t cap = t->cap ? 2 * t->cap : 1024;
			struct rd_req *nr = realloc(t->reqs, cap * sizeof(*nr));

			if (!nr) {
				corun_err(RD_PROG, "out of memory");
				goto bad;
			}
			t->reqs = nr;
			t->cap = cap;
		}
		r = &t->reqs[t->n++];
		memset(r, 0, sizeof(*r));
		r->write = op == 'W';
		r->offset = off;
		r->length = len;
		r->arrival_ms = arr;
	}
	if (f != stdin)
		fclose(f);
	return 0;
bad:
	if (f != stdin)
		fclose(f);
	return -1;
}

static const char *how_name(enum rd_how h)
{
	return h == RD_CACHE_HIT ? "cache_hit" : h == RD_STREAM ? "stream" : "mechanical";
}

int rd_replay(const struct rd_config *c, int argc, char *argv[])
{
	struct trace t = { 0 };
	struct rd_model m;
	struct rd_req **pending = NULL;
	size_t npend = 0, next = 0;
	int inflight = 0, rc = CORUN_EXIT_RUNTIME;
	uint64_t dirty = 0, bytes = 0;
	double clock = 0, first = -1, last = 0, lat_sum = 0, start_s = corun_epoch_s();
	int64_t seeks = 0, hits = 0, streams = 0;
	char err[256];
	struct corun_json j;

	if (read_trace(c->replay, &t))
		goto out;
	for (size_t i = 0; i < t.n; i++) {
		if (t.reqs[i].offset + t.reqs[i].length > c->p.size_bytes) {
			corun_err(RD_PROG,
				  "%s: request %zu ends at %llu, past the image (%llu bytes)",
				  c->replay, i + 1,
				  (unsigned long long)(t.reqs[i].offset + t.reqs[i].length),
				  (unsigned long long)c->p.size_bytes);
			goto out;
		}
		if (!c->replay_qd && i > 0 && t.reqs[i].arrival_ms < t.reqs[i - 1].arrival_ms) {
			corun_err(RD_PROG, "%s: request %zu arrives before the one above it",
				  c->replay, i + 1);
			goto out;
		}
	}
	if (rd_model_init(&m, &c->p, err, sizeof(err))) {
		corun_err(RD_PROG, "model: %s", err);
		rc = CORUN_EXIT_USAGE;
		goto out;
	}
	pending = calloc(t.n + 1, sizeof(*pending));
	if (!pending) {
		corun_err(RD_PROG, "out of memory");
		goto free_model;
	}

	for (;;) {
		/* Admit what has arrived by `clock`. */
		double issue = clock;

		while (next < t.n) {
			struct rd_req *r = &t.reqs[next];

			if (c->replay_qd) {
				if (inflight >= c->replay_qd)
					break;
				r->arrival_ms = issue;
			} else if (r->arrival_ms > clock) {
				break;
			}
			next++;
			pending[npend++] = r;
			inflight++;
			if (r->write && c->p.write_back &&
			    dirty + r->length <= c->p.write_cache_bytes) {
				dirty += r->length;
				r->acked = true;
				r->complete_ms = r->arrival_ms + rd_ack_ms(&c->p, r->length);
				inflight--;
				issue = r->complete_ms;
			}
		}
		if (npend == 0) {
			if (next >= t.n)
				break;
			clock = t.reqs[next].arrival_ms; /* idle until the next arrival */
			continue;
		}
		{
			size_t i = rd_model_pick(&m, pending, npend, clock);
			struct rd_req *r = pending[i];

			memmove(&pending[i], &pending[i + 1], (npend - i - 1) * sizeof(*pending));
			npend--;
			clock = rd_model_service(&m, r, clock);
			if (r->acked)
				dirty -= r->length;
			else {
				r->complete_ms = r->done_ms;
				inflight--;
			}
		}
	}

	corun_json_begin(&j, stdout);
	corun_json_header(&j, "rotating_disk_replay", RD_VERSION, argc, argv, start_s);
	rd_json_model(&j, c, &m);
	corun_json_int(&j, "replay_qd", c->replay_qd);
	corun_json_array_begin(&j, "requests");
	for (size_t i = 0; i < t.n; i++) {
		struct rd_req *r = &t.reqs[i];

		corun_json_object_begin(&j, NULL);
		corun_json_int(&j, "i", (int64_t)i);
		corun_json_str(&j, "op", r->write ? "W" : "R");
		corun_json_int(&j, "offset", (int64_t)r->offset);
		corun_json_int(&j, "length", (int64_t)r->length);
		corun_json_double(&j, "arrival_ms", r->arrival_ms);
		corun_json_double(&j, "start_ms", r->start_ms);
		corun_json_double(&j, "done_ms", r->done_ms);
		corun_json_double(&j, "complete_ms", r->complete_ms);
		corun_json_double(&j, "latency_ms", r->complete_ms - r->arrival_ms);
		corun_json_double(&j, "service_ms", r->done_ms - r->start_ms);
		corun_json_double(&j, "seek_ms", r->seek_ms);
		corun_json_double(&j, "rot_ms", r->rot_ms);
		corun_json_double(&j, "xfer_ms", r->xfer_ms);
		corun_json_int(&j, "distance_cyl", r->distance);
		corun_json_str(&j, "how", how_name(r->how));
		corun_json_int(&j, "bypassed", r->bypassed);
		corun_json_object_end(&j);
		if (first < 0 || r->arrival_ms < first)
			first = r->arrival_ms;
		if (r->complete_ms > last)
			last = r->complete_ms;
		if (r->done_ms > last)
			last = r->done_ms;
		lat_sum += r->complete_ms - r->arrival_ms;
		bytes += r->length;
		seeks += r->how == RD_MECHANICAL && r->distance > 0;
		hits += r->how == RD_CACHE_HIT;
		streams += r->how == RD_STREAM;
	}
	corun_json_array_end(&j);
	corun_json_object_begin(&j, "summary");
	corun_json_int(&j, "requests", (int64_t)t.n);
	corun_json_double(&j, "elapsed_ms", t.n ? last - first : 0);
	corun_json_double(&j, "iops",
			  t.n && last > first ? (double)t.n / ((last - first) / 1e3) : 0);
	corun_json_double(&j, "mb_s",
			  t.n && last > first ? (double)bytes / ((last - first) * 1e3) : 0);
	corun_json_double(&j, "mean_latency_ms", t.n ? lat_sum / (double)t.n : 0);
	corun_json_int(&j, "seeks", seeks);
	corun_json_int(&j, "cache_hits", hits);
	corun_json_int(&j, "streamed", streams);
	corun_json_object_end(&j);
	corun_json_end(&j);
	rc = corun_flush_result(RD_PROG) ? CORUN_EXIT_RUNTIME : CORUN_EXIT_OK;
	free(pending);
free_model:
	rd_model_free(&m);
out:
	free(t.reqs);
	return rc;
}
