/* What the files of the aIOLi scheduling core share (policy.c: parameters, queues, runs and
 * decisions; trace.c: app_aware's trace; status.c: the JSON status). Not part of the core's
 * interface (policy.h); hidden from the translator's exported names. */
#ifndef AIOLI_POLICY_CORE_H
#define AIOLI_POLICY_CORE_H

#include "policy.h"

#define NS_PER_US 1000ull
#define HASH_BUCKETS 1024u
#define TRACE_WINDOW_NS 1000000000ull /* a trace follower is looked for within 1 s */
#define GAP_NONE UINT64_MAX
#define ARRIVAL_RUNS 32 /* open runs of arrivals kept per queue; when full the oldest closes */

/* A run of contiguous arrivals: one aggregation the arrivals allowed. */
struct arrival_run {
	uint64_t start, end; /* bytes [start, end) */
	uint64_t last_ns;    /* the latest member's arrival */
	uint64_t n;          /* requests */
};

struct aioli_queue {
	uint64_t file;
	enum aioli_op op;
	struct aioli_req **v; /* sorted by offset, then arrival */
	size_t n, cap;
	uint64_t last_end;
	size_t last_agg;
	int has_last;
	int listed;
	struct aioli_queue *hnext, *qprev, *qnext;
	struct arrival_run ar[ARRIVAL_RUNS]; /* open runs of its recent arrivals */
	size_t nar;
};

struct trace_entry {
	uint64_t file;
	uint64_t off, size;
	uint64_t t_ns, gap_ns;
	int op;
};

struct run {
	struct aioli_queue *q;
	size_t first, n;
	uint64_t offset, size;
};

struct aioli_core {
	struct aioli_params p;
	struct aioli_queue *buckets[HASH_BUCKETS];
	struct aioli_queue *qhead, *qtail;
	struct aioli_req *ghead, *gtail;
	size_t queued, outstanding;
	uint64_t step, seq;
	struct aioli_counters k;
	/* the wait in progress, if any */
	struct aioli_queue *wq;
	struct aioli_req *wanchor;
	uint64_t wstart, wdeadline;
	size_t wn0, wtarget;
	int wshift;
	/* the last dispatch's members */
	struct aioli_req **out;
	size_t outcap;
	struct trace_entry *trace;
	size_t ntrace;
};

/* Histogram bucket of n requests: 1..16, and 17+ in the last. */
static inline size_t bucket_of(uint64_t n)
{
	return n >= AIOLI_HIST ? AIOLI_HIST - 1 : (size_t)(n ? n - 1 : 0);
}

#pragma GCC visibility push(hidden)

/* app_aware: how many more requests the trace predicts after run r within the bounds, and
 * when the last of them should arrive (trace.c). */
size_t app_predict(const struct aioli_core *c, const struct run *r, uint64_t *until_ns);
/* The aggregations the arrivals allowed (arrivals.c): note an arrival on its queue; drop the
 * open runs (a reset); the histogram of the closed runs and the open ones. */
void aioli_arrivals_note(struct aioli_core *c, struct aioli_queue *q, const struct aioli_req *r,
			 uint64_t now);
void aioli_arrivals_reset(struct aioli_core *c);
void aioli_arrivals_hist(const struct aioli_core *c, uint64_t out[AIOLI_HIST]);

#pragma GCC visibility pop

#endif /* AIOLI_POLICY_CORE_H */
