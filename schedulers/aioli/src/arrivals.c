/* The aggregations the arrivals allowed (paper 002's "possible"), counted whatever the policy
 * decides (under fifo too): per queue, a request that arrives within app_wait_max_us of a run's
 * latest member and extends it (at its end or its start), the run staying within max_agg_bytes,
 * joins it; one that extends two runs joins them. A run closes when nothing joined it for
 * app_wait_max_us. docs/schedulers/aioli.md (agg_possible_arrivals). */
#include "policy_core.h"

#include <string.h>

static void arrivals_close(struct aioli_core *c, struct aioli_queue *q, size_t i)
{
	c->k.agg_arrivals[bucket_of(q->ar[i].n)]++;
	q->ar[i] = q->ar[--q->nar];
}

void aioli_arrivals_note(struct aioli_core *c, struct aioli_queue *q, const struct aioli_req *r,
			 uint64_t now)
{
	uint64_t window = c->p.app_wait_max_us * NS_PER_US, end = r->offset + r->size;
	for (size_t i = 0; i < q->nar;) {
		if (now > q->ar[i].last_ns + window)
			arrivals_close(c, q, i);
		else
			i++;
	}
	size_t below = q->nar,
	       above = q->nar; /* the runs ending where r starts, starting where it ends */
	for (size_t i = 0; i < q->nar; i++) {
		uint64_t size = q->ar[i].end - q->ar[i].start + r->size;
		if (q->ar[i].end == r->offset && below == q->nar && size <= c->p.max_agg_bytes)
			below = i;
		else if (q->ar[i].start == end && above == q->nar && size <= c->p.max_agg_bytes)
			above = i;
	}
	if (below < q->nar && above < q->nar &&
	    q->ar[above].end - q->ar[below].start <= c->p.max_agg_bytes) {
		q->ar[below].end = q->ar[above].end;
		q->ar[below].n += 1 + q->ar[above].n;
		if (now > q->ar[below].last_ns)
			q->ar[below].last_ns = now;
		q->ar[above] = q->ar[--q->nar];
		return;
	}
	size_t i = below < q->nar ? below : above;
	if (i < q->nar) {
		if (i == below)
			q->ar[i].end = end;
		else
			q->ar[i].start = r->offset;
		q->ar[i].n++;
		if (now > q->ar[i].last_ns)
			q->ar[i].last_ns = now;
		return;
	}
	if (q->nar == ARRIVAL_RUNS) {
		size_t oldest = 0;
		for (size_t j = 1; j < q->nar; j++)
			if (q->ar[j].last_ns < q->ar[oldest].last_ns)
				oldest = j;
		arrivals_close(c, q, oldest);
	}
	q->ar[q->nar++] = (struct arrival_run){ r->offset, end, now, 1 };
}

void aioli_arrivals_reset(struct aioli_core *c)
{
	for (unsigned b = 0; b < HASH_BUCKETS; b++)
		for (struct aioli_queue *q = c->buckets[b]; q; q = q->hnext)
			q->nar = 0;
}

void aioli_arrivals_hist(const struct aioli_core *c, uint64_t out[AIOLI_HIST])
{
	memcpy(out, c->k.agg_arrivals, AIOLI_HIST * sizeof(*out));
	for (unsigned b = 0; b < HASH_BUCKETS; b++)
		for (const struct aioli_queue *q = c->buckets[b]; q; q = q->hnext)
			for (size_t i = 0; i < q->nar; i++)
				out[bucket_of(q->ar[i].n)]++;
}
