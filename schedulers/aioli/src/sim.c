/* aioli_sim: replays a request stream through the scheduling core (policy.c) in virtual time
 * and prints every dispatch as a JSON line, then one line of counters.
 *
 *   aioli_sim [--policy P] [--set KEY=VALUE]... [--trace FILE] [--service-us N]
 *             [--service-us-per-mib N] [STREAM]
 *
 * STREAM (default stdin) has one request per line, "t_us file r|w offset size" ('#' starts a
 * comment), in arrival order; the same format as the translator's recorded trace. A dispatch
 * occupies the child for service-us + size x service-us-per-mib. The last line is {"summary":
 * the policy, params and counters as in the status file}. Exit 0 ok, 1 runtime error,
 * 2 usage. */
#include "policy.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

struct arrival {
	uint64_t t_ns;
	char file[64];
	struct aioli_req req;
};

struct token {
	uint64_t id;
	char name[64];
};

static struct token *tokens;
static size_t ntokens;

static const char *token_name(uint64_t id)
{
	for (size_t i = 0; i < ntokens; i++)
		if (tokens[i].id == id)
			return tokens[i].name;
	return "?";
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: aioli_sim [--policy P] [--set KEY=VALUE]... [--trace FILE] [--service-us N (100)]\n"
		"                 [--service-us-per-mib N (0)] [STREAM]\n"
		"  policies: fifo aioli aioli_no_wait aioli_no_agg time_order_agg app_aware\n"
		"  keys: quantum_step_kib max_agg_kib wait_us shift_window_kib starvation_ms\n"
		"        max_outstanding app_req_cost_us app_wait_max_us\n");
}

static int parse_num(const char *s, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static void print_dispatch(const struct aioli_dispatch *d, uint64_t now)
{
	static const char *const outcome[] = { NULL, "aggregated", "timed_out" };
	printf("{\"t_us\": %.3f, \"file\": ", (double)now / 1e3);
	aioli_json_string(stdout, token_name(d->file));
	printf(", \"op\": \"%s\", \"offset\": %llu, \"size\": %llu, \"n\": %zu, \"possible\": %zu, \"step\": %llu, "
	       "\"requests\": [",
	       d->op == AIOLI_WRITE ? "write" : "read", (unsigned long long)d->offset,
	       (unsigned long long)d->size, d->n, d->possible, (unsigned long long)d->step);
	for (size_t i = 0; i < d->n; i++)
		printf("%s{\"offset\": %llu, \"size\": %llu, \"arrival_us\": %.3f, \"wait_us\": %.3f}",
		       i ? ", " : "", (unsigned long long)d->reqs[i]->offset,
		       (unsigned long long)d->reqs[i]->size, (double)d->reqs[i]->arrival_ns / 1e3,
		       (double)(now - d->reqs[i]->arrival_ns) / 1e3);
	printf("], \"wait\": ");
	if (d->wait_outcome)
		printf("\"%s\", \"waited_us\": %.3f}\n", outcome[d->wait_outcome],
		       (double)d->waited_ns / 1e3);
	else
		printf("null}\n");
}

int main(int argc, char **argv)
{
	struct aioli_params p;
	aioli_params_default(&p);
	p.policy = AIOLI_AIOLI;
	const char *trace = NULL;
	double service_us = 100, per_mib_us = 0;
	static const struct option opts[] = {
		{ "policy", required_argument, 0, 'p' },
		{ "set", required_argument, 0, 's' },
		{ "trace", required_argument, 0, 't' },
		{ "service-us", required_argument, 0, 'u' },
		{ "service-us-per-mib", required_argument, 0, 'm' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int o;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'p':
			if (aioli_params_set(&p, "policy", optarg)) {
				fprintf(stderr,
					"aioli_sim: --policy: %s (expected one of fifo aioli aioli_no_wait aioli_no_agg "
					"time_order_agg app_aware)\n",
					optarg);
				return 2;
			}
			break;
		case 's': {
			char *eq = strchr(optarg, '=');
			if (!eq) {
				fprintf(stderr, "aioli_sim: --set: %s (expected KEY=VALUE)\n",
					optarg);
				return 2;
			}
			*eq = 0;
			int rc = aioli_params_set(&p, optarg, eq + 1);
			if (rc) {
				fprintf(stderr, "aioli_sim: --set: %s=%s (%s)\n", optarg, eq + 1,
					rc == -1 ? "unknown key" : "value out of range");
				return 2;
			}
			break;
		}
		case 't': trace = optarg; break;
		case 'u':
		case 'm':
			if (parse_num(optarg, 0, 1e9, o == 'u' ? &service_us : &per_mib_us)) {
				fprintf(stderr,
					"aioli_sim: %s: %s (expected a number of microseconds >= 0)\n",
					o == 'u' ? "--service-us" : "--service-us-per-mib", optarg);
				return 2;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (argc - optind > 1) {
		usage(stderr);
		return 2;
	}
	FILE *in = stdin;
	const char *src = "stdin";
	if (optind < argc) {
		src = argv[optind];
		in = fopen(src, "r");
		if (!in) {
			fprintf(stderr, "aioli_sim: %s: %s\n", src, strerror(errno));
			return 1;
		}
	}
	struct arrival *a = NULL;
	size_t n = 0, cap = 0, lineno = 0;
	char line[512];
	while (fgets(line, sizeof(line), in)) {
		lineno++;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		char file[64], op[8];
		double t_us;
		unsigned long long off, size;
		int got = sscanf(line, "%lf %63s %7s %llu %llu", &t_us, file, op, &off, &size);
		if (got <= 0)
			continue;
		if (got != 5 || t_us < 0 || (strcmp(op, "r") && strcmp(op, "w")) || size == 0 ||
		    (n && (uint64_t)(t_us * 1e3) < a[n - 1].t_ns)) {
			fprintf(stderr,
				"aioli_sim: %s:%zu: expected \"t_us file r|w offset size\" in arrival order\n",
				src, lineno);
			return 1;
		}
		if (n == cap && !(a = realloc(a, (cap = cap ? 2 * cap : 256) * sizeof(*a)))) {
			fprintf(stderr, "aioli_sim: out of memory\n");
			return 1;
		}
		struct arrival *x = &a[n++];
		memset(x, 0, sizeof(*x));
		x->t_ns = (uint64_t)(t_us * 1e3);
		snprintf(x->file, sizeof(x->file), "%s", file);
		x->req.file = aioli_file_id(file);
		x->req.offset = off;
		x->req.size = size;
		x->req.op = op[0] == 'w' ? AIOLI_WRITE : AIOLI_READ;
		int known = 0;
		for (size_t i = 0; i < ntokens; i++)
			known |= tokens[i].id == x->req.file;
		if (!known) {
			tokens = realloc(tokens, (ntokens + 1) * sizeof(*tokens));
			if (!tokens)
				return 1;
			tokens[ntokens].id = x->req.file;
			snprintf(tokens[ntokens++].name, sizeof(tokens->name), "%s", file);
		}
	}
	if (in != stdin)
		fclose(in);
	struct aioli_core *c = aioli_new(&p);
	if (!c)
		return 1;
	if (trace) {
		char err[256];
		if (aioli_load_trace(c, trace, err, sizeof(err))) {
			fprintf(stderr, "aioli_sim: --trace: %s\n", err);
			return 1;
		}
	}
	/* completions: times of the dispatches in flight */
	uint64_t *done = calloc(1025, sizeof(*done));
	size_t ndone = 0, next = 0;
	uint64_t now = 0, wake = 0;
	if (!done)
		return 1;
	for (;;) {
		for (size_t i = 0; i < ndone;) {
			if (done[i] <= now) {
				aioli_complete(c);
				done[i] = done[--ndone];
			} else
				i++;
		}
		while (next < n && a[next].t_ns <= now) {
			if (aioli_submit(c, &a[next].req, a[next].t_ns)) {
				struct aioli_req *one = &a[next].req;
				struct aioli_dispatch d = { one->file, one->op, one->offset,
							    one->size, 1,       1,
							    &one,      0,       0,
							    0 };
				print_dispatch(&d, now);
			}
			next++;
		}
		struct aioli_dispatch d;
		while (aioli_next(c, now, &d, &wake)) {
			print_dispatch(&d, now);
			if (ndone < 1024)
				done[ndone++] =
					now + (uint64_t)((service_us +
							  per_mib_us * (double)d.size / 1048576.0) *
							 1e3);
		}
		uint64_t t = UINT64_MAX;
		if (next < n)
			t = a[next].t_ns;
		for (size_t i = 0; i < ndone; i++)
			if (done[i] < t)
				t = done[i];
		if (wake && wake < t)
			t = wake;
		if (t == UINT64_MAX)
			break;
		now = t > now ? t : now;
	}
	printf("{\"summary\": {");
	aioli_write_json(c, stdout);
	printf("}}\n");
	int left = aioli_queued(c) != 0;
	aioli_free(c);
	free(done);
	free(a);
	free(tokens);
	if (left) {
		fprintf(stderr, "aioli_sim: requests left in the queue\n");
		return 1;
	}
	return 0;
}
