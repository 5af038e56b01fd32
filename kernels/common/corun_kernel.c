/* Shared helpers for corun's C micro-benchmark kernels; see corun_kernel.h. */
#include "corun_kernel.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

static void verr(const char *prog, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void corun_err(const char *prog, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verr(prog, fmt, ap);
	va_end(ap);
}

void corun_usage_error(const char *prog, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verr(prog, fmt, ap);
	va_end(ap);
	exit(CORUN_EXIT_USAGE);
}

int corun_parse_choice(const char *prog, const char *opt, const char *value,
		       const char *const *words, size_t n)
{
	char expected[256] = "";
	size_t len = 0;

	for (size_t i = 0; i < n; i++) {
		if (strcmp(value, words[i]) == 0)
			return (int)i;
		const char *sep = ", ";
		if (i == 0)
			sep = "";
		else if (i + 1 == n)
			sep = " or ";
		len += (size_t)snprintf(expected + len, sizeof expected - len, "%s%s", sep,
					words[i]);
		if (len >= sizeof expected)
			len = sizeof expected - 1;
	}
	corun_usage_error(prog, "--%s: '%s' (expected %s)", opt, value, expected);
}

#define SUFFIX_HINT ", with an optional K, M or G suffix for KiB, MiB, GiB"

double corun_parse_double(const char *prog, const char *opt, const char *value, double min,
			  double max, bool min_exclusive)
{
	double x;
	char *end;

	if (value[0] == '\0' || isspace((unsigned char)value[0]))
		goto bad;
	errno = 0;
	x = strtod(value, &end);
	if (end == value || *end != '\0' || errno == ERANGE || !isfinite(x))
		goto bad;
	if ((min_exclusive ? x <= min : x < min) || x > max)
		goto bad;
	return x;

bad:
	corun_usage_error(prog, "--%s: '%s' (expected a number %s %g and <= %g)", opt, value,
			  min_exclusive ? ">" : ">=", min, max);
}

int64_t corun_parse_int(const char *prog, const char *opt, const char *value, int64_t min,
			int64_t max, bool allow_suffix)
{
	long long n;
	int64_t mult = 1;
	char *end;

	/* strtoll() would skip leading blanks and accept an empty string. */
	if (value[0] == '\0' || isspace((unsigned char)value[0]))
		goto bad;
	errno = 0;
	n = strtoll(value, &end, 10);
	if (end == value || errno == ERANGE)
		goto bad;
	if (allow_suffix && *end != '\0') {
		switch (*end) {
		case 'k':
		case 'K': mult = INT64_C(1) << 10; break;
		case 'm':
		case 'M': mult = INT64_C(1) << 20; break;
		case 'g':
		case 'G': mult = INT64_C(1) << 30; break;
		default: goto bad;
		}
		end++;
	}
	if (*end != '\0')
		goto bad;
	if (n > INT64_MAX / mult || n < INT64_MIN / mult)
		goto bad;
	n *= mult;
	if (n < min || n > max)
		goto bad;
	return n;

bad:
	if (max == INT64_MAX)
		corun_usage_error(prog, "--%s: '%s' (expected an integer >= %" PRId64 "%s)", opt,
				  value, min, allow_suffix ? SUFFIX_HINT : "");
	corun_usage_error(prog,
			  "--%s: '%s' (expected an integer from %" PRId64 " to %" PRId64 "%s)", opt,
			  value, min, max, allow_suffix ? SUFFIX_HINT : "");
}

void corun_option_error(const char *prog, int c, char *const argv[])
{
	if (c == ':')
		corun_usage_error(prog, "%s: missing value (see --help)", argv[optind - 1]);
	/* A bad short option is only known by optopt. */
	if (optopt != 0 && strncmp(argv[optind - 1], "--", 2) != 0)
		corun_usage_error(prog, "invalid option '-%c' (see --help)", optopt);
	corun_usage_error(prog, "invalid option '%s' (see --help)", argv[optind - 1]);
}

void corun_default_option(const char *prog, const char *version, const char *usage_text, int c,
			  char *const argv[])
{
	switch (c) {
	case 'h': fputs(usage_text, stdout); exit(CORUN_EXIT_OK);
	case 'V': printf("%s %s\n", prog, version); exit(CORUN_EXIT_OK);
	default: corun_option_error(prog, c, argv);
	}
}

int corun_getopt(int argc, char *const argv[], const char *optstring,
		 const struct option *long_options)
{
	opterr = 0;
	return getopt_long(argc, argv, optstring, long_options, NULL);
}

void corun_no_operands(const char *prog, int argc, char *const argv[])
{
	if (optind < argc)
		corun_usage_error(prog, "unexpected argument '%s' (see --help)", argv[optind]);
}

int corun_flush_result(const char *prog)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		corun_err(prog, "cannot write the result to stdout: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static double clock_s(clockid_t clock)
{
	struct timespec ts;

	/* Cannot fail for the clocks used here. */
	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double corun_monotonic_s(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

double corun_epoch_s(void)
{
	return clock_s(CLOCK_REALTIME);
}

static bool utf8_cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

/* Length of the well-formed UTF-8 sequence at S (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0 if there is none.
 * The terminating NUL is never a continuation byte, so this never reads
 * past the end of the string. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return utf8_cont(s[1]) ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		if (!utf8_cont(s[1]) || !utf8_cont(s[2]))
			return 0;
		if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f))
			return 0;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if (!utf8_cont(s[1]) || !utf8_cont(s[2]) || !utf8_cont(s[3]))
			return 0;
		if ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f))
			return 0;
		return 4;
	}
	return 0;
}

void corun_json_escape(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', out);
	while (*p != '\0') {
		size_t len = utf8_len(p);

		if (len == 0) {
			fputs("\\ufffd", out);
			p++;
			continue;
		}
		if (len > 1) {
			fwrite(p, 1, len, out);
			p += len;
			continue;
		}
		switch (*p) {
		case '"': fputs("\\\"", out); break;
		case '\\': fputs("\\\\", out); break;
		case '\b': fputs("\\b", out); break;
		case '\f': fputs("\\f", out); break;
		case '\n': fputs("\\n", out); break;
		case '\r': fputs("\\r", out); break;
		case '\t': fputs("\\t", out); break;
		default:
			if (*p < 0x20)
				fprintf(out, "\\u%04x", (unsigned int)*p);
			else
				fputc(*p, out);
		}
		p++;
	}
	fputc('"', out);
}

/* Separator and key before a value; KEY is NULL inside arrays. */
static void json_key(struct corun_json *j, const char *key)
{
	if (j->has_items[j->depth])
		fputc(',', j->out);
	j->has_items[j->depth] = true;
	if (key != NULL) {
		corun_json_escape(j->out, key);
		fputc(':', j->out);
	}
}

static void json_open(struct corun_json *j, const char *key, char bracket)
{
	json_key(j, key);
	if (j->depth + 1 >= CORUN_JSON_MAX_DEPTH)
		abort(); /* a kernel bug, not a user error */
	fputc(bracket, j->out);
	j->depth++;
	j->has_items[j->depth] = false;
}

static void json_close(struct corun_json *j, char bracket)
{
	if (j->depth == 0)
		abort(); /* a kernel bug, not a user error */
	fputc(bracket, j->out);
	j->depth--;
}

void corun_json_begin(struct corun_json *j, FILE *out)
{
	j->out = out;
	j->depth = 0;
	j->has_items[0] = false;
	fputc('{', out);
}

void corun_json_end(struct corun_json *j)
{
	if (j->depth != 0)
		abort(); /* a kernel bug, not a user error */
	fputs("}\n", j->out);
}

void corun_json_object_begin(struct corun_json *j, const char *key)
{
	json_open(j, key, '{');
}

void corun_json_object_end(struct corun_json *j)
{
	json_close(j, '}');
}

void corun_json_array_begin(struct corun_json *j, const char *key)
{
	json_open(j, key, '[');
}

void corun_json_array_end(struct corun_json *j)
{
	json_close(j, ']');
}

void corun_json_str(struct corun_json *j, const char *key, const char *value)
{
	json_key(j, key);
	corun_json_escape(j->out, value);
}

void corun_json_int(struct corun_json *j, const char *key, int64_t value)
{
	json_key(j, key);
	fprintf(j->out, "%" PRId64, value);
}

void corun_json_double(struct corun_json *j, const char *key, double value)
{
	json_key(j, key);
	if (isfinite(value))
		fprintf(j->out, "%.17g", value); /* round-trips exactly */
	else
		fputs("null", j->out);
}

void corun_json_bool(struct corun_json *j, const char *key, bool value)
{
	json_key(j, key);
	fputs(value ? "true" : "false", j->out);
}

void corun_json_null(struct corun_json *j, const char *key)
{
	json_key(j, key);
	fputs("null", j->out);
}

void corun_json_header(struct corun_json *j, const char *kernel, const char *kernel_version,
		       int argc, char *const argv[], double start_epoch_s)
{
	struct utsname uts;
	bool have_uts = uname(&uts) == 0;

	corun_json_str(j, "kernel", kernel);
	corun_json_str(j, "kernel_version", kernel_version);
	if (have_uts) {
		corun_json_str(j, "host", uts.nodename);
		corun_json_str(j, "kernel_release", uts.release);
	} else {
		corun_json_null(j, "host");
		corun_json_null(j, "kernel_release");
	}
	corun_json_array_begin(j, "cmdline");
	for (int i = 0; i < argc; i++)
		corun_json_str(j, NULL, argv[i]);
	corun_json_array_end(j);
	corun_json_double(j, "start_epoch_s", start_epoch_s);
}

void corun_json_result_begin(struct corun_json *j, const char *kernel, const char *kernel_version,
			     int argc, char *const argv[], double start_epoch_s)
{
	corun_json_begin(j, stdout);
	corun_json_header(j, kernel, kernel_version, argc, argv, start_epoch_s);
}

void corun_json_result_end(struct corun_json *j)
{
	corun_json_str(j, "check", "ok");
	corun_json_end(j);
}
