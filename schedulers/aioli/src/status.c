/* The core's status as JSON: parameters, counters and the waiting-time histogram. */
#include "policy_core.h"

/* ---- status -------------------------------------------------------------------------------- */

void aioli_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static void json_array(FILE *f, const uint64_t *v, size_t n)
{
	fputc('[', f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%llu", i ? ", " : "", (unsigned long long)v[i]);
	fputc(']', f);
}

/* The smallest bucket bound (us) under which a fraction q of the waits lie. */
static uint64_t wait_quantile_us(const struct aioli_counters *k, double q)
{
	uint64_t total = 0, acc = 0;
	for (size_t i = 0; i < AIOLI_WAIT_HIST; i++)
		total += k->wait_hist[i];
	if (!total)
		return 0;
	for (size_t i = 0; i < AIOLI_WAIT_HIST; i++) {
		acc += k->wait_hist[i];
		if ((double)acc >= q * (double)total)
			return i ? 1ull << i : 1;
	}
	return 1ull << (AIOLI_WAIT_HIST - 1);
}

void aioli_write_json(const struct aioli_core *c, FILE *f)
{
	const struct aioli_params *p = &c->p;
	const struct aioli_counters *k = &c->k;
	typedef unsigned long long ull;
	fprintf(f, "\"policy\": ");
	aioli_json_string(f, aioli_policy_name(p->policy));
	fprintf(f,
		", \"params\": {\"quantum_step_kib\": %llu, \"max_agg_kib\": %llu, \"wait_us\": %llu, "
		"\"shift_window_kib\": %llu, \"starvation_ms\": %llu, \"max_outstanding\": %u, "
		"\"app_req_cost_us\": %llu, \"app_wait_max_us\": %llu}",
		(ull)(p->quantum_step_bytes / 1024), (ull)(p->max_agg_bytes / 1024),
		(ull)p->wait_us, (ull)(p->shift_window_bytes / 1024),
		(ull)(p->starvation_us / 1000), p->max_outstanding, (ull)p->app_req_cost_us,
		(ull)p->app_wait_max_us);
	fprintf(f, ", \"trace_entries\": %zu", c->ntrace);
	fprintf(f,
		", \"counters\": {\"requests\": {\"read\": %llu, \"write\": %llu}, \"bytes\": {\"read\": %llu, "
		"\"write\": %llu}, \"passed_through\": %llu, \"dispatches\": %llu, \"aggregations\": %llu, "
		"\"aggregated_requests\": %llu, ",
		(ull)k->requests[0], (ull)k->requests[1], (ull)k->bytes[0], (ull)k->bytes[1],
		(ull)k->passed_through, (ull)k->dispatches, (ull)k->aggregations,
		(ull)k->aggregated_requests);
	fprintf(f,
		"\"agg_hist_buckets\": \"requests per dispatch 1..16, last 17+\", \"agg_performed\": ");
	json_array(f, k->agg_performed, AIOLI_HIST);
	fprintf(f, ", \"agg_possible\": ");
	json_array(f, k->agg_possible, AIOLI_HIST);
	uint64_t arrivals[AIOLI_HIST];
	aioli_arrivals_hist(c, arrivals);
	fprintf(f, ", \"agg_possible_arrivals\": ");
	json_array(f, arrivals, AIOLI_HIST);
	fprintf(f,
		", \"queue\": {\"now\": %zu, \"max\": %llu, \"mean\": %.3f, \"samples\": %llu}, \"outstanding\": %zu, ",
		c->queued, (ull)k->queue_max,
		k->queue_samples ? (double)k->queue_sum / (double)k->queue_samples : 0.0,
		(ull)k->queue_samples, c->outstanding);
	fprintf(f,
		"\"waits\": {\"taken\": %llu, \"aggregated\": %llu, \"timed_out\": %llu}, \"starved\": %llu, ",
		(ull)k->waits, (ull)k->waits_aggregated, (ull)k->waits_timed_out, (ull)k->starved);
	fprintf(f,
		"\"request_wait\": {\"sum_us\": %.3f, \"count\": %llu, \"max_us\": %.3f, \"p50_us_le\": %llu, "
		"\"p99_us_le\": %llu, \"hist_log2_us\": ",
		(double)k->wait_ns_sum / 1e3, (ull)k->wait_count, (double)k->wait_ns_max / 1e3,
		(ull)wait_quantile_us(k, 0.5), (ull)wait_quantile_us(k, 0.99));
	json_array(f, k->wait_hist, AIOLI_WAIT_HIST);
	fprintf(f, "}}");
}
