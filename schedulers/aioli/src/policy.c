/* The aIOLi request scheduling core (paper 002); see policy.h and docs/schedulers/aioli.md.
 *
 * One queue per (file, op), sorted by offset. Queues with requests form a FIFO list: a new
 * queue joins the tail, a queue that was served and still holds requests goes back to the
 * tail. Each decision is one scheduling step: every queued request's quantum grows by
 * quantum_step (kept as the step it arrived at, so the growth costs nothing). A queue's
 * contiguous requests form aggregates (runs) of at most max_agg bytes; a run's quantum is the
 * sum of its members'. A run may go when its quantum covers its size; the run that gets there
 * in the fewest further steps goes, ties broken by queue order (FIFO across files) and then
 * offset. Before it goes, aioli may wait a short time for a larger run (a shift, or a smaller
 * run than the queue's last one); app_aware waits for the requests its trace predicts. A
 * request queued longer than starvation_us goes next, without a wait. */
#include "policy_core.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const policy_names[AIOLI_NPOLICIES] = {
	"fifo", "aioli", "aioli_no_wait", "aioli_no_agg", "time_order_agg", "app_aware",
};

const char *aioli_policy_name(enum aioli_policy p)
{
	return (unsigned)p < AIOLI_NPOLICIES ? policy_names[p] : "?";
}

int aioli_policy_parse(const char *name, enum aioli_policy *out)
{
	for (int i = 0; i < AIOLI_NPOLICIES; i++)
		if (strcmp(name, policy_names[i]) == 0) {
			*out = (enum aioli_policy)i;
			return 0;
		}
	return -1;
}

void aioli_params_default(struct aioli_params *p)
{
	memset(p, 0, sizeof(*p));
	p->policy = AIOLI_FIFO;
	p->quantum_step_bytes = 32 * 1024;
	p->max_agg_bytes = 1024 * 1024;
	p->wait_us = 500;
	p->shift_window_bytes = 256 * 1024;
	p->starvation_us = 100000;
	p->max_outstanding = 1;
	p->app_req_cost_us = 1000;
	p->app_wait_max_us = 2000;
}

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int key_is(const char *key, const char *name)
{
	for (; *key && *name; key++, name++) {
		char a = *key == '-' ? '_' : *key;
		if (a != *name)
			return 0;
	}
	return *key == 0 && *name == 0;
}

int aioli_params_set(struct aioli_params *p, const char *key, const char *value)
{
	uint64_t v;
	if (key_is(key, "policy")) {
		enum aioli_policy pol;
		if (aioli_policy_parse(value, &pol))
			return -2;
		p->policy = pol;
		return 0;
	}
	struct {
		const char *name;
		uint64_t *dst;
		uint64_t lo, hi, scale;
	} nums[] = {
		{ "quantum_step_kib", &p->quantum_step_bytes, 1, 1u << 20, 1024 },
		{ "max_agg_kib", &p->max_agg_bytes, 4, 1u << 20, 1024 },
		{ "wait_us", &p->wait_us, 0, 10000000, 1 },
		{ "shift_window_kib", &p->shift_window_bytes, 0, 1u << 20, 1024 },
		{ "starvation_ms", &p->starvation_us, 1, 600000, 1000 },
		{ "app_req_cost_us", &p->app_req_cost_us, 0, 10000000, 1 },
		{ "app_wait_max_us", &p->app_wait_max_us, 0, 10000000, 1 },
	};
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		if (!key_is(key, nums[i].name))
			continue;
		if (parse_u64(value, nums[i].lo, nums[i].hi, &v))
			return -2;
		*nums[i].dst = v * nums[i].scale;
		return 0;
	}
	if (key_is(key, "max_outstanding")) {
		if (parse_u64(value, 1, 1024, &v))
			return -2;
		p->max_outstanding = (uint32_t)v;
		return 0;
	}
	return -1;
}

uint64_t aioli_file_id(const char *token)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (const unsigned char *s = (const unsigned char *)token; *s; s++) {
		h ^= *s;
		h *= 1099511628211ull;
	}
	return h;
}

struct aioli_core *aioli_new(const struct aioli_params *p)
{
	struct aioli_core *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->p = *p;
	if (c->p.max_outstanding < 1)
		c->p.max_outstanding = 1;
	return c;
}

void aioli_free(struct aioli_core *c)
{
	if (!c)
		return;
	for (unsigned b = 0; b < HASH_BUCKETS; b++) {
		struct aioli_queue *q = c->buckets[b];
		while (q) {
			struct aioli_queue *nx = q->hnext;
			free(q->v);
			free(q);
			q = nx;
		}
	}
	free(c->out);
	free(c->trace);
	free(c);
}

static void wait_clear(struct aioli_core *c)
{
	c->wq = NULL;
	c->wanchor = NULL;
}

void aioli_set_params(struct aioli_core *c, const struct aioli_params *p)
{
	c->p = *p;
	if (c->p.max_outstanding < 1)
		c->p.max_outstanding = 1;
	wait_clear(c);
}

const struct aioli_params *aioli_params(const struct aioli_core *c)
{
	return &c->p;
}
size_t aioli_queued(const struct aioli_core *c)
{
	return c->queued;
}
size_t aioli_outstanding(const struct aioli_core *c)
{
	return c->outstanding;
}
const struct aioli_counters *aioli_counters(const struct aioli_core *c)
{
	return &c->k;
}
void aioli_reset(struct aioli_core *c)
{
	memset(&c->k, 0, sizeof(c->k));
	aioli_arrivals_reset(c); /* open runs of arrivals belong to the counts reset */
}
void aioli_complete(struct aioli_core *c)
{
	if (c->outstanding)
		c->outstanding--;
}

/* ---- queues -------------------------------------------------------------------------- */

static struct aioli_queue *queue_of(struct aioli_core *c, uint64_t file, enum aioli_op op)
{
	unsigned b = (unsigned)((file ^ (uint64_t)op * 0x9e3779b97f4a7c15ull) % HASH_BUCKETS);
	for (struct aioli_queue *q = c->buckets[b]; q; q = q->hnext)
		if (q->file == file && q->op == op)
			return q;
	struct aioli_queue *q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->file = file;
	q->op = op;
	q->hnext = c->buckets[b];
	c->buckets[b] = q;
	return q;
}

static void list_append(struct aioli_core *c, struct aioli_queue *q)
{
	q->qprev = c->qtail;
	q->qnext = NULL;
	if (c->qtail)
		c->qtail->qnext = q;
	else
		c->qhead = q;
	c->qtail = q;
	q->listed = 1;
}

static void list_remove(struct aioli_core *c, struct aioli_queue *q)
{
	if (q->qprev)
		q->qprev->qnext = q->qnext;
	else
		c->qhead = q->qnext;
	if (q->qnext)
		q->qnext->qprev = q->qprev;
	else
		c->qtail = q->qprev;
	q->qprev = q->qnext = NULL;
	q->listed = 0;
}

int aioli_submit(struct aioli_core *c, struct aioli_req *r, uint64_t now_ns)
{
	int op = r->op == AIOLI_WRITE;
	c->k.requests[op]++;
	c->k.bytes[op] += r->size;
	r->arrival_ns = now_ns;
	r->seq = ++c->seq;
	struct aioli_queue *aq = queue_of(c, r->file, r->op);
	if (aq) /* what the arrivals allow, whatever the policy */
		aioli_arrivals_note(c, aq, r, now_ns);
	if (c->p.policy == AIOLI_FIFO) {
		c->k.passed_through++;
		return 1;
	}
	struct aioli_queue *q = queue_of(c, r->file, r->op);
	if (!q || (q->n == q->cap &&
		   !(q->v = realloc(q->v, (q->cap = q->cap ? 2 * q->cap : 16) * sizeof(*q->v))))) {
		c->k.passed_through++; /* out of memory: the request is not held back */
		return 1;
	}
	size_t lo = 0, hi = q->n; /* first element with a larger offset */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (q->v[mid]->offset <= r->offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	memmove(q->v + lo + 1, q->v + lo, (q->n - lo) * sizeof(*q->v));
	q->v[lo] = r;
	q->n++;
	r->queue = q;
	r->step_in = c->step;
	r->gnext = NULL;
	r->gprev = c->gtail;
	if (c->gtail)
		c->gtail->gnext = r;
	else
		c->ghead = r;
	c->gtail = r;
	if (!q->listed)
		list_append(c, q);
	c->queued++;
	if (c->queued > c->k.queue_max)
		c->k.queue_max = c->queued;
	c->k.queue_samples++;
	c->k.queue_sum += c->queued;
	return 0;
}

/* ---- runs ------------------------------------------------------------------------------ */

static int aggregates(const struct aioli_core *c)
{
	return c->p.policy != AIOLI_NO_AGG && c->p.policy != AIOLI_FIFO;
}

/* The run that starts at index i of q: contiguous requests, at most max_agg bytes. */
static struct run run_at(const struct aioli_core *c, struct aioli_queue *q, size_t i)
{
	struct run r = { q, i, 1, q->v[i]->offset, q->v[i]->size };
	if (!aggregates(c))
		return r;
	for (size_t j = i + 1; j < q->n; j++) {
		struct aioli_req *x = q->v[j];
		if (x->offset != r.offset + r.size || r.size + x->size > c->p.max_agg_bytes)
			break;
		r.size += x->size;
		r.n++;
	}
	return r;
}

static size_t index_of(const struct aioli_queue *q, const struct aioli_req *r)
{
	for (size_t i = 0; i < q->n; i++)
		if (q->v[i] == r)
			return i;
	return 0;
}

/* The greedy run of q (runs cut from the lowest offset up) that holds request x. */
static struct run run_holding(const struct aioli_core *c, struct aioli_queue *q,
			      const struct aioli_req *x)
{
	size_t want = index_of(q, x);
	size_t i = 0;
	struct run r = run_at(c, q, 0);
	while (i + r.n <= want) {
		i += r.n;
		r = run_at(c, q, i);
	}
	return r;
}

/* Contiguous requests around index i, without the size bound: the possible aggregation. */
static size_t chain_len(const struct aioli_queue *q, size_t i)
{
	size_t a = i, b = i;
	while (a > 0 && q->v[a - 1]->offset + q->v[a - 1]->size == q->v[a]->offset)
		a--;
	while (b + 1 < q->n && q->v[b]->offset + q->v[b]->size == q->v[b + 1]->offset)
		b++;
	return b - a + 1;
}

static uint64_t steps_needed(const struct aioli_core *c, const struct run *r)
{
	uint64_t quantum = 0;
	for (size_t j = 0; j < r->n; j++)
		quantum += (c->step - r->q->v[r->first + j]->step_in) * c->p.quantum_step_bytes;
	if (quantum >= r->size)
		return 0;
	uint64_t per = (uint64_t)r->n * c->p.quantum_step_bytes;
	return (r->size - quantum + per - 1) / per;
}

/* time_order_agg: the oldest request and the contiguous queued requests around it. */
static struct run run_around(const struct aioli_core *c, struct aioli_req *x)
{
	struct aioli_queue *q = x->queue;
	size_t i = index_of(q, x);
	struct run r = { q, i, 1, x->offset, x->size };
	size_t b = i;
	while (b + 1 < q->n && q->v[b + 1]->offset == r.offset + r.size &&
	       r.size + q->v[b + 1]->size <= c->p.max_agg_bytes) {
		b++;
		r.size += q->v[b]->size;
		r.n++;
	}
	while (r.first > 0 && q->v[r.first - 1]->offset + q->v[r.first - 1]->size == r.offset &&
	       r.size + q->v[r.first - 1]->size <= c->p.max_agg_bytes) {
		r.first--;
		r.offset = q->v[r.first]->offset;
		r.size += q->v[r.first]->size;
		r.n++;
	}
	return r;
}

/* ---- decisions --------------------------------------------------------------------------- */

static uint64_t wait_bucket(uint64_t ns)
{
	uint64_t us = ns / NS_PER_US, k = 0;
	while (us && k < AIOLI_WAIT_HIST - 1) {
		us >>= 1;
		k++;
	}
	return k;
}

static int emit(struct aioli_core *c, const struct run *r, uint64_t now, int outcome,
		uint64_t waited, struct aioli_dispatch *d)
{
	struct aioli_queue *q = r->q;
	if (r->n > c->outcap) {
		size_t cap = r->n < 64 ? 64 : r->n;
		struct aioli_req **o = realloc(c->out, cap * sizeof(*o));
		if (!o)
			return 0;
		c->out = o;
		c->outcap = cap;
	}
	size_t possible = chain_len(q, r->first);
	memcpy(c->out, q->v + r->first, r->n * sizeof(*c->out));
	memmove(q->v + r->first, q->v + r->first + r->n, (q->n - r->first - r->n) * sizeof(*q->v));
	q->n -= r->n;
	for (size_t j = 0; j < r->n; j++) {
		struct aioli_req *x = c->out[j];
		if (x->gprev)
			x->gprev->gnext = x->gnext;
		else
			c->ghead = x->gnext;
		if (x->gnext)
			x->gnext->gprev = x->gprev;
		else
			c->gtail = x->gprev;
		x->gprev = x->gnext = NULL;
		x->queue = NULL;
		uint64_t w = now >= x->arrival_ns ? now - x->arrival_ns : 0;
		c->k.wait_ns_sum += w;
		c->k.wait_count++;
		if (w > c->k.wait_ns_max)
			c->k.wait_ns_max = w;
		c->k.wait_hist[wait_bucket(w)]++;
	}
	c->queued -= r->n;
	q->last_end = r->offset + r->size;
	q->last_agg = r->n;
	q->has_last = 1;
	list_remove(c, q);
	if (q->n)
		list_append(c, q); /* FIFO across files: a served queue goes to the tail */
	c->outstanding++;
	c->k.dispatches++;
	c->k.agg_performed[bucket_of(r->n)]++;
	c->k.agg_possible[bucket_of(possible)]++;
	if (r->n > 1) {
		c->k.aggregations++;
		c->k.aggregated_requests += r->n;
	}
	if (outcome == AIOLI_WAIT_AGGREGATED)
		c->k.waits_aggregated++;
	else if (outcome == AIOLI_WAIT_TIMED_OUT)
		c->k.waits_timed_out++;
	*d = (struct aioli_dispatch){ q->file,  q->op,  r->offset, r->size, r->n,
				      possible, c->out, outcome,   waited,  c->step };
	return 1;
}

/* The wait in progress: has it got what it waited for? */
static int wait_done(const struct aioli_core *c, const struct run *r)
{
	if (r->size + 1 > c->p.max_agg_bytes)
		return 1;
	if (c->wshift)
		return r->offset <= r->q->last_end;
	return r->n >= c->wtarget;
}

int aioli_next(struct aioli_core *c, uint64_t now, struct aioli_dispatch *d, uint64_t *wake_ns)
{
	*wake_ns = 0;
	if (!c->queued)
		return 0;
	if (c->p.policy == AIOLI_FIFO) { /* switched to fifo with requests queued: drain them */
		struct aioli_req *x = c->ghead;
		struct run r = { x->queue, index_of(x->queue, x), 1, x->offset, x->size };
		return emit(c, &r, now, AIOLI_WAIT_NONE, 0, d);
	}
	if (c->outstanding >= c->p.max_outstanding)
		return 0;
	if (c->wq) { /* a wait in progress */
		struct run r = run_holding(c, c->wq, c->wanchor);
		int done = wait_done(c, &r);
		if (done || now >= c->wdeadline) {
			int outcome = r.n > c->wn0 ? AIOLI_WAIT_AGGREGATED : AIOLI_WAIT_TIMED_OUT;
			uint64_t waited = now - c->wstart;
			wait_clear(c);
			return emit(c, &r, now, outcome, waited, d);
		}
		*wake_ns = c->wdeadline;
		return 0;
	}
	c->step++;
	struct aioli_req *oldest = c->ghead;
	if (now >= oldest->arrival_ns &&
	    now - oldest->arrival_ns >= c->p.starvation_us * NS_PER_US) {
		c->k.starved++;
		struct run r = c->p.policy == AIOLI_TIME_ORDER_AGG
				       ? run_around(c, oldest)
				       : run_holding(c, oldest->queue, oldest);
		return emit(c, &r, now, AIOLI_WAIT_NONE, 0, d);
	}
	if (c->p.policy == AIOLI_TIME_ORDER_AGG) {
		struct run r = run_around(c, oldest);
		return emit(c, &r, now, AIOLI_WAIT_NONE, 0, d);
	}
	struct run best = { 0 };
	uint64_t best_steps = UINT64_MAX;
	for (struct aioli_queue *q = c->qhead; q && best_steps; q = q->qnext) {
		for (size_t i = 0; i < q->n;) {
			struct run r = run_at(c, q, i);
			uint64_t s = steps_needed(c, &r);
			if (s < best_steps) {
				best = r;
				best_steps = s;
				if (!s)
					break;
			}
			i += r.n;
		}
	}
	c->step += best_steps;
	struct aioli_queue *q = best.q;
	if (c->p.policy == AIOLI_AIOLI && c->p.wait_us && best.size < c->p.max_agg_bytes &&
	    q->has_last) {
		int shift = best.offset > q->last_end &&
			    best.offset - q->last_end <= c->p.shift_window_bytes;
		if (shift || q->last_agg > best.n) {
			c->wq = q;
			c->wanchor = q->v[best.first];
			c->wstart = now;
			c->wdeadline = now + c->p.wait_us * NS_PER_US;
			c->wn0 = best.n;
			c->wtarget = q->last_agg;
			c->wshift = shift;
			c->k.waits++;
			*wake_ns = c->wdeadline;
			return 0;
		}
	} else if (c->p.policy == AIOLI_APP_AWARE && best.size < c->p.max_agg_bytes) {
		uint64_t until = 0;
		size_t more = app_predict(c, &best, &until);
		uint64_t deadline = until + c->p.wait_us * NS_PER_US;
		if (deadline > now + c->p.app_wait_max_us * NS_PER_US)
			deadline = now + c->p.app_wait_max_us * NS_PER_US;
		if (more && deadline > now) {
			c->wq = q;
			c->wanchor = q->v[best.first];
			c->wstart = now;
			c->wdeadline = deadline;
			c->wn0 = best.n;
			c->wtarget = best.n + more;
			c->wshift = 0;
			c->k.waits++;
			*wake_ns = deadline;
			return 0;
		}
	}
	return emit(c, &best, now, AIOLI_WAIT_NONE, 0, d);
}
