/* A daemon's option table: parsing with bounds, required options, and --limits. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "corun_kernel.h"
#include "sched_daemon.h"

static void sd_options_longopts(const struct sd_option *t, size_t n, int base, struct option *out)
{
	for (size_t i = 0; i < n; i++)
		out[i] = (struct option){ t[i].name, required_argument, NULL, base + (int)i };
}

static bool parse_bool(const char *prog, const char *opt, const char *v)
{
	if (!strcmp(v, "1") || !strcasecmp(v, "true"))
		return true;
	if (!strcmp(v, "0") || !strcasecmp(v, "false"))
		return false;
	corun_usage_error(prog, "--%s: '%s' (expected 0, 1, true or false)", opt, v);
}

/* If C is one of T's values (BASE + index), parses ARG into its DEST and returns true. */
static bool sd_option_parse(const char *prog, struct sd_option *t, size_t n, int base, int c,
			    const char *arg)
{
	if (c < base || c >= base + (int)n)
		return false;
	struct sd_option *o = &t[c - base];
	switch (o->type) {
	case SD_NUMBER:
		*(double *)o->dest =
			corun_parse_double(prog, o->name, arg, o->min, o->max, o->min_exclusive);
		break;
	case SD_INTEGER:
		*(long *)o->dest = (long)corun_parse_int(prog, o->name, arg, (int64_t)o->min,
							 (int64_t)o->max, false);
		break;
	case SD_INT:
		*(int *)o->dest = (int)corun_parse_int(prog, o->name, arg, (int64_t)o->min,
						       (int64_t)o->max, false);
		break;
	case SD_WORD:
		*(int *)o->dest = corun_parse_choice(prog, o->name, arg, o->words, o->nwords);
		break;
	case SD_BOOL: *(bool *)o->dest = parse_bool(prog, o->name, arg); break;
	case SD_TEXT: *(const char **)o->dest = arg; break;
	}
	o->given = true;
	return true;
}

int sd_options_next(const char *prog, struct sd_option *t, size_t n, int base,
		    const struct option *other, size_t n_other, struct sd_modes *modes, int argc,
		    char *argv[])
{
	static struct option *longopts; /* T's entries, then OTHER; kept until the end */
	int c;

	if (!longopts) {
		longopts = calloc(n + n_other, sizeof *longopts);
		if (!longopts) {
			corun_err(prog, "out of memory");
			exit(CORUN_EXIT_RUNTIME);
		}
		sd_options_longopts(t, n, base, longopts);
		memcpy(longopts + n, other, n_other * sizeof *other);
	}
	while ((c = corun_getopt(argc, argv, "+:hV", longopts)) != -1) {
		if (sd_option_parse(prog, t, n, base, c, optarg))
			continue;
		switch (c) {
		case SD_O_CHECK: modes->check = optarg; break;
		case SD_O_TABLE: modes->table = optarg; break;
		case SD_O_LIMITS: modes->limits = true; break;
		default: return c;
		}
	}
	free(longopts);
	longopts = NULL;
	return -1;
}

struct sd_option *sd_option_named(struct sd_option *t, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(t[i].name, name))
			return &t[i];
	corun_err("sched_daemon", "no option --%s in the table", name);
	abort();
}

void sd_options_require(const char *prog, struct sd_option *t, size_t n, const char *const *names,
			const char *why)
{
	for (const char *const *name = names; *name; name++)
		if (!sd_option_named(t, n, *name)->given)
			corun_usage_error(prog, "--%s: missing (expected %s)", *name, why);
}

int sd_options_print_limits(const char *prog, const struct sd_option *t, size_t n)
{
	struct corun_json j;
	corun_json_begin(&j, stdout);
	for (size_t i = 0; i < n; i++) {
		const struct sd_option *o = &t[i];
		corun_json_object_begin(&j, o->name);
		switch (o->type) {
		case SD_NUMBER:
		case SD_INTEGER:
		case SD_INT:
			corun_json_str(&j, "type", o->type == SD_NUMBER ? "number" : "integer");
			corun_json_double(&j, o->min_exclusive ? "exclusiveMinimum" : "minimum",
					  o->min);
			corun_json_double(&j, "maximum", o->max);
			break;
		case SD_WORD:
			corun_json_str(&j, "type", "string");
			corun_json_array_begin(&j, "enum");
			for (size_t k = 0; k < o->nwords; k++)
				corun_json_str(&j, NULL, o->words[k]);
			corun_json_array_end(&j);
			break;
		case SD_BOOL: corun_json_str(&j, "type", "boolean"); break;
		case SD_TEXT: corun_json_str(&j, "type", "string"); break;
		}
		corun_json_object_end(&j);
	}
	corun_json_end(&j);
	return corun_flush_result(prog) < 0 ? CORUN_EXIT_RUNTIME : CORUN_EXIT_OK;
}
