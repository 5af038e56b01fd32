/* The aIOLi request scheduling core (paper 002): per-file queues, aggregation, quanta, waits.
 * It knows nothing of GlusterFS: requests are (file id, op, offset, size, arrival time), the
 * clock is passed in (nanoseconds, any origin), and decisions come back as dispatches. Not
 * thread-safe: the caller serialises every call. docs/schedulers/aioli.md describes it. */
#ifndef AIOLI_POLICY_H
#define AIOLI_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum aioli_policy {
	AIOLI_FIFO = 0,
	AIOLI_AIOLI,
	AIOLI_NO_WAIT,
	AIOLI_NO_AGG,
	AIOLI_TIME_ORDER_AGG,
	AIOLI_APP_AWARE,
	AIOLI_NPOLICIES
};

enum aioli_op { AIOLI_READ = 0, AIOLI_WRITE = 1 };

#define AIOLI_HIST 17      /* requests per dispatch: 1..16, and 17+ */
#define AIOLI_WAIT_HIST 24 /* waiting time: bucket k holds [2^(k-1), 2^k) us, 0 holds < 1 us */

struct aioli_params {
	enum aioli_policy policy;
	uint64_t quantum_step_bytes; /* quantum added to every queued request per step */
	uint64_t max_agg_bytes;      /* largest aggregated request wound to the child */
	uint64_t wait_us;            /* a wait for a larger aggregation lasts at most this */
	uint64_t
		shift_window_bytes; /* a gap this large or less ahead of the last dispatch is a shift */
	uint64_t starvation_us;     /* a request queued this long goes next, no wait */
	uint32_t max_outstanding; /* dispatched requests in flight to the child */
	uint64_t app_req_cost_us; /* app_aware: benchmarked time one more request costs */
	uint64_t app_wait_max_us; /* app_aware: longest predicted wait taken */
};

struct aioli_req {
	uint64_t file;
	uint64_t offset;
	uint64_t size;
	enum aioli_op op;
	uint64_t arrival_ns;
	void *cookie; /* the caller's */
	/* private */
	uint64_t step_in;
	uint64_t seq;
	struct aioli_req *gprev, *gnext; /* all queued requests, arrival order */
	struct aioli_queue *queue;
};

#define AIOLI_WAIT_NONE 0
#define AIOLI_WAIT_AGGREGATED 1
#define AIOLI_WAIT_TIMED_OUT 2

struct aioli_dispatch {
	uint64_t file;
	enum aioli_op op;
	uint64_t offset;
	uint64_t size;
	size_t n;                /* requests aggregated */
	size_t possible;         /* contiguous requests queued around it at dispatch time (>= n) */
	struct aioli_req **reqs; /* offset order; valid until the next aioli_next call */
	int wait_outcome;        /* AIOLI_WAIT_*: the wait taken before this dispatch, if any */
	uint64_t waited_ns;      /* how long that wait lasted */
	uint64_t step;           /* the scheduling step of the decision */
};

struct aioli_counters {
	uint64_t requests[2], bytes[2], passed_through;
	uint64_t dispatches, aggregations, aggregated_requests;
	uint64_t agg_performed[AIOLI_HIST], agg_possible[AIOLI_HIST];
	/* the aggregations the arrivals allowed, whatever the policy: contiguous requests of one
	 * (file, op) each arriving within app_wait_max_us of the run's latest one, within
	 * max_agg_bytes; the runs closed (the status adds the open ones) */
	uint64_t agg_arrivals[AIOLI_HIST];
	uint64_t queue_max, queue_samples, queue_sum;
	uint64_t waits, waits_aggregated, waits_timed_out, starved;
	uint64_t wait_ns_sum, wait_count, wait_ns_max, wait_hist[AIOLI_WAIT_HIST];
};

struct aioli_core;

const char *aioli_policy_name(enum aioli_policy p);
int aioli_policy_parse(const char *name, enum aioli_policy *out);
void aioli_params_default(struct aioli_params *p);
/* key=value (the control file's and the options' names, - or _); 0 ok, -1 unknown key,
 * -2 bad value. */
int aioli_params_set(struct aioli_params *p, const char *key, const char *value);
uint64_t aioli_file_id(const char *token);

struct aioli_core *aioli_new(const struct aioli_params *p);
void aioli_free(struct aioli_core *c);
void aioli_set_params(struct aioli_core *c, const struct aioli_params *p);
const struct aioli_params *aioli_params(const struct aioli_core *c);
/* app_aware's trace: lines "t_us file op offset size" (op r or w); path NULL or "": none.
 * 0 ok, -1 with err filled (the previous trace is kept). */
int aioli_load_trace(struct aioli_core *c, const char *path, char *err, size_t errlen);
size_t aioli_trace_entries(const struct aioli_core *c);

/* A request arrives. fifo: returns 1, the caller winds it at once (counted as passed through);
 * otherwise it is queued and 0 is returned. */
int aioli_submit(struct aioli_core *c, struct aioli_req *r, uint64_t now_ns);
/* The next decision: 1 and *d filled (the caller winds it and calls aioli_complete when it
 * returns), or 0 with *wake_ns the time to ask again (0: nothing queued or no free slot). */
int aioli_next(struct aioli_core *c, uint64_t now_ns, struct aioli_dispatch *d, uint64_t *wake_ns);
void aioli_complete(struct aioli_core *c);
size_t aioli_queued(const struct aioli_core *c);
size_t aioli_outstanding(const struct aioli_core *c);
const struct aioli_counters *aioli_counters(const struct aioli_core *c);
void aioli_reset(struct aioli_core *c);
/* The status document's policy, params and counters members (no braces), JSON. */
void aioli_write_json(const struct aioli_core *c, FILE *f);
void aioli_json_string(FILE *f, const char *s);

#endif
