/* aioli_bench: the scheduling core's cost per request with N requests queued.
 *
 *   aioli_bench [--policy P] [--queued N] [--files F] [--requests R] [--quantum-step-kib Q]
 *
 * Keeps N requests queued (random 64 KiB-aligned offsets over F files, so few are contiguous):
 * each iteration submits one request, takes one decision and completes it. Prints one JSON line
 * with ns per request (submit + decision + complete). A small quantum step makes new requests
 * need many steps, so decisions scan further. Exit 0 ok, 2 usage. */
#include "policy.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int parse(const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);
	if (end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	struct aioli_params p;
	aioli_params_default(&p);
	p.policy = AIOLI_AIOLI;
	p.wait_us = 0; /* decisions only: a wait would stop the loop */
	unsigned long queued = 32, files = 4, requests = 200000;
	static const struct option opts[] = { { "policy", required_argument, 0, 'p' },
					      { "queued", required_argument, 0, 'q' },
					      { "files", required_argument, 0, 'f' },
					      { "requests", required_argument, 0, 'r' },
					      { "quantum-step-kib", required_argument, 0, 'k' },
					      { 0, 0, 0, 0 } };
	int o;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		int bad = 0;
		if (o == 'p')
			bad = aioli_params_set(&p, "policy", optarg) != 0 || p.policy == AIOLI_FIFO;
		else if (o == 'q')
			bad = parse(optarg, 1, 1u << 20, &queued);
		else if (o == 'f')
			bad = parse(optarg, 1, 1u << 20, &files);
		else if (o == 'k')
			bad = aioli_params_set(&p, "quantum_step_kib", optarg) != 0;
		else if (o == 'r')
			bad = parse(optarg, 1, 1ul << 32, &requests);
		else
			bad = 1;
		if (bad) {
			fprintf(stderr,
				"usage: aioli_bench [--policy P (not fifo)] [--queued N] [--files F] [--requests R]\n"
				"                   [--quantum-step-kib Q]\n");
			return 2;
		}
	}
	p.starvation_us = 600000000ull; /* no starvation path in a tight loop */
	struct aioli_core *c = aioli_new(&p);
	size_t pool = queued + 1;
	struct aioli_req *r = calloc(pool, sizeof(*r));
	struct aioli_req **free_list = calloc(pool, sizeof(*free_list));
	if (!c || !r || !free_list)
		return 1;
	size_t nfree = 0;
	for (size_t i = 0; i < pool; i++)
		free_list[nfree++] = &r[i];
	uint64_t seed = 88172645463325252ull, t = 0;
	struct aioli_dispatch d;
	uint64_t wake;
#define NEXT_RAND() (seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17, seed)
#define SUBMIT()                                                \
	do {                                                    \
		struct aioli_req *x = free_list[--nfree];       \
		memset(x, 0, sizeof(*x));                       \
		x->file = NEXT_RAND() % files;                  \
		x->offset = (NEXT_RAND() % (1u << 20)) * 65536; \
		x->size = 65536;                                \
		aioli_submit(c, x, t++);                        \
	} while (0)
	for (size_t i = 0; i < queued; i++)
		SUBMIT();
	uint64_t start = now_ns();
	for (unsigned long i = 0; i < requests; i++) {
		SUBMIT();
		if (!aioli_next(c, t, &d, &wake))
			return 1;
		for (size_t j = 0; j < d.n; j++)
			free_list[nfree++] = d.reqs[j];
		aioli_complete(c);
		while (aioli_queued(c) < queued) /* an aggregation took several: top up */
			SUBMIT();
	}
	uint64_t ns = now_ns() - start;
	const struct aioli_counters *k = aioli_counters(c);
	uint64_t submitted = k->requests[0] + k->requests[1] - queued;
	printf("{\"policy\": \"%s\", \"quantum_step_kib\": %llu, \"queued\": %lu, \"files\": %lu, \"iterations\": %lu, \"requests\": %llu, "
	       "\"dispatches\": %llu, \"ns_per_request\": %.1f}\n",
	       aioli_policy_name(p.policy), (unsigned long long)(p.quantum_step_bytes / 1024),
	       queued, files, requests, (unsigned long long)submitted,
	       (unsigned long long)k->dispatches, (double)ns / (double)submitted);
	aioli_free(c);
	free(r);
	free(free_list);
	return 0;
}
