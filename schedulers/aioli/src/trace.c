/* app_aware's trace: the arrivals of an earlier run, by offset, and the requests it predicts
 * after a run (see policy.c and docs/schedulers/aioli.md). */
#include "policy_core.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- app_aware's trace ----------------------------------------------------------------- */

static int cmp_time(const void *a, const void *b)
{
	const struct trace_entry *x = a, *y = b;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	if (x->op != y->op)
		return x->op - y->op;
	return x->t_ns < y->t_ns ? -1 : x->t_ns > y->t_ns;
}

static int cmp_offset(const void *a, const void *b)
{
	const struct trace_entry *x = a, *y = b;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	if (x->op != y->op)
		return x->op - y->op;
	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return x->gap_ns < y->gap_ns ? -1 : x->gap_ns > y->gap_ns;
}

int aioli_load_trace(struct aioli_core *c, const char *path, char *err, size_t errlen)
{
	if (!path || !*path) { /* no trace */
		free(c->trace);
		c->trace = NULL;
		c->ntrace = 0;
		return 0;
	}
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	struct trace_entry *v = NULL;
	size_t n = 0, cap = 0, lineno = 0;
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		char file[128], op[8];
		double t_us;
		unsigned long long off, size;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%lf %127s %7s %llu %llu", &t_us, file, op, &off, &size) != 5 ||
		    t_us < 0 || (op[0] != 'r' && op[0] != 'w') || size == 0) {
			snprintf(err, errlen, "%s:%zu: expected \"t_us file r|w offset size\"",
				 path, lineno);
			free(v);
			fclose(f);
			return -1;
		}
		if (n == cap) {
			struct trace_entry *nv =
				realloc(v, (cap = cap ? 2 * cap : 1024) * sizeof(*v));
			if (!nv) {
				snprintf(err, errlen, "%s: out of memory", path);
				free(v);
				fclose(f);
				return -1;
			}
			v = nv;
		}
		v[n++] = (struct trace_entry){ aioli_file_id(file),       off,      size,
					       (uint64_t)(t_us * 1000.0), GAP_NONE, op[0] == 'w' };
	}
	fclose(f);
	if (n)
		qsort(v, n, sizeof(*v), cmp_time);
	for (size_t i = 0; i < n; i++) /* the first later request that starts where this one ends */
		for (size_t j = i + 1; j < n && v[j].file == v[i].file && v[j].op == v[i].op &&
				       v[j].t_ns - v[i].t_ns <= TRACE_WINDOW_NS;
		     j++)
			if (v[j].off == v[i].off + v[i].size) {
				v[i].gap_ns = v[j].t_ns - v[i].t_ns;
				break;
			}
	if (n)
		qsort(v, n, sizeof(*v), cmp_offset);
	free(c->trace);
	c->trace = v;
	c->ntrace = n;
	return 0;
}

size_t aioli_trace_entries(const struct aioli_core *c)
{
	return c->ntrace;
}

/* The trace's time from a request at (file, op, off) to the one that follows it contiguously:
 * the median over the trace's requests at that offset; GAP_NONE if none or unknown. */
static uint64_t trace_gap(const struct aioli_core *c, uint64_t file, int op, uint64_t off,
			  uint64_t *size)
{
	struct trace_entry key = { file, off, 0, 0, 0, op };
	size_t lo = 0, hi = c->ntrace;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (cmp_offset(&c->trace[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t b = lo;
	while (b < c->ntrace && c->trace[b].file == file && c->trace[b].op == op &&
	       c->trace[b].off == off)
		b++;
	if (b == lo)
		return GAP_NONE;
	*size = c->trace[lo].size;
	return c->trace[lo + (b - lo - 1) / 2].gap_ns;
}

size_t app_predict(const struct aioli_core *c, const struct run *r, uint64_t *until_ns)
{
	struct aioli_req *last = r->q->v[r->first + r->n - 1];
	uint64_t off = last->offset, t = last->arrival_ns, total = r->size, size = last->size;
	size_t more = 0;
	for (;;) {
		uint64_t here = size;
		uint64_t gap = trace_gap(c, r->q->file, r->q->op, off, &here);
		if (gap == GAP_NONE || gap > c->p.app_req_cost_us * NS_PER_US)
			break;
		uint64_t nsz = here; /* the follower's size if the trace has it, else this one's */
		(void)trace_gap(c, r->q->file, r->q->op, off + here, &nsz);
		if (total + nsz > c->p.max_agg_bytes ||
		    t + gap - last->arrival_ns > c->p.app_wait_max_us * NS_PER_US)
			break;
		off += here;
		size = nsz;
		total += nsz;
		t += gap;
		more++;
	}
	*until_ns = t;
	return more;
}
