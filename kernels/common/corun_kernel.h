/* Shared helpers for corun's C micro-benchmark kernels.
 *
 * Every kernel parses numbers through corun_parse_int(), reports errors
 * through corun_err(), and writes exactly one JSON object on one line to
 * stdout through the corun_json_* writer, starting with corun_json_header().
 */
#ifndef CORUN_KERNEL_H
#define CORUN_KERNEL_H

/* The C library headers every kernel uses, so that a kernel need not repeat them. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Exit codes shared by all kernels (documented in kernels/README.md). */
enum corun_exit {
	CORUN_EXIT_OK = 0,      /* measurement done, self-check passed */
	CORUN_EXIT_RUNTIME = 1, /* runtime error or failed self-check */
	CORUN_EXIT_USAGE = 2,   /* bad command line */
	CORUN_EXIT_SKIPPED = 4, /* a feature the kernel needs is missing */
};

/* One line "<prog>: <message>" on stderr. */
void corun_err(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* corun_err(), then exit CORUN_EXIT_USAGE. */
void corun_usage_error(const char *prog, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

/* Parse VALUE of option --OPT as a decimal integer in [MIN, MAX].  With
 * ALLOW_SUFFIX, a single K, M or G suffix (case-insensitive) multiplies by
 * 2^10, 2^20 or 2^30.  On any error prints one line
 * "<prog>: --<opt>: '<value>' (expected ...)" and exits CORUN_EXIT_USAGE. */
int64_t corun_parse_int(const char *prog, const char *opt, const char *value, int64_t min,
			int64_t max, bool allow_suffix);

/* Parse VALUE of option --OPT as a finite decimal number in [MIN, MAX] (or
 * (MIN, MAX] with MIN_EXCLUSIVE).  On any error prints one line
 * "<prog>: --<opt>: '<value>' (expected a number ...)" and exits
 * CORUN_EXIT_USAGE. */
double corun_parse_double(const char *prog, const char *opt, const char *value, double min,
			  double max, bool min_exclusive);

/* Parse VALUE of option --OPT as one of the N words of WORDS and return its index (so an
 * enum listed in the same order can take it).  On any other value prints one line
 * "<prog>: --<opt>: '<value>' (expected a, b or c)" and exits CORUN_EXIT_USAGE. */
int corun_parse_choice(const char *prog, const char *opt, const char *value,
		       const char *const *words, size_t n);

/* The number of elements of array A. */
#define CORUN_COUNT(a) (sizeof(a) / sizeof *(a))

/* corun_parse_choice() of optarg among the words of the array WORDS. */
#define CORUN_PARSE_CHOICE(prog, opt, words) \
	corun_parse_choice(prog, opt, optarg, words, CORUN_COUNT(words))

/* Report the option error getopt_long() signalled by returning C (':' for a
 * missing value, anything else for an unknown option or a value given to a
 * flag) in one line, then exit CORUN_EXIT_USAGE.  Call it with opterr = 0
 * and an optstring starting with "+:". */
void corun_option_error(const char *prog, int c, char *const argv[]) __attribute__((noreturn));

/* The last entries of every kernel's long options: --help ('h') and
 * --version ('V'), which corun_default_option() handles, and the end mark. */
/* One entry a line, as in the kernels' own tables. */
/* clang-format off */
#define CORUN_COMMON_LONG_OPTIONS \
	{ "help", no_argument, NULL, 'h' }, \
	{ "version", no_argument, NULL, 'V' }, \
	{ NULL, 0, NULL, 0 }
/* clang-format on */

/* The default: of every kernel's getopt_long() loop, for what all kernels
 * share: 'h' (--help) prints USAGE_TEXT to stdout and 'V' (--version)
 * prints "<prog> <version>", both exiting CORUN_EXIT_OK; any other C is an
 * option error (corun_option_error()). */
void corun_default_option(const char *prog, const char *version, const char *usage_text, int c,
			  char *const argv[]) __attribute__((noreturn));

/* getopt_long() with opterr = 0, so that corun_option_error() reports a bad option
 * in one line.  OPTSTRING starts with "+:" ('+': argv is not permuted, it is echoed
 * as "cmdline"). */
int corun_getopt(int argc, char *const argv[], const char *optstring,
		 const struct option *long_options);

/* The usage text's --help and --version lines, their descriptions PAD after
 * "--version" (as the kernel's other options are aligned).  A usage text built
 * with these macros stands between clang-format off and on comments: clang-format
 * 14 misreads a macro among string literals. */
#define CORUN_USAGE_HELP_VERSION(pad)                  \
	"  --help   " pad "print this text and exit\n" \
	"  --version" pad "print the version and exit\n"

/* The usage text's exit status line, up to the punctuation that ends it:
 * FAILED names what fails ("self-check", "validation", ...). */
#define CORUN_USAGE_EXIT_STATUS(failed) \
	"Exit status: 0 ok, 1 runtime error or failed " failed ", 2 usage error"

/* The usage text's last lines when nothing stands between the two above. */
#define CORUN_USAGE_TAIL(pad, failed) \
	CORUN_USAGE_HELP_VERSION(pad) "\n" CORUN_USAGE_EXIT_STATUS(failed)

/* After the getopt_long() loop: a leftover argument (no kernel takes
 * operands) is a usage error. */
void corun_no_operands(const char *prog, int argc, char *const argv[]);

/* Flush the result on stdout; on failure print "<prog>: cannot write the
 * result to stdout: <reason>" and return -1, else return 0. */
int corun_flush_result(const char *prog);

/* Spin on N nop instructions; the asm volatile loop is never optimised away.
 * Inline, so the cost per call is the loop alone. */
static inline void corun_spin_nops(int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		__asm__ __volatile__("nop");
}

/* Seconds from CLOCK_MONOTONIC, for intervals. */
double corun_monotonic_s(void);

/* Seconds since the Unix epoch from CLOCK_REALTIME, for timestamps. */
double corun_epoch_s(void);

/* Write S as a JSON string literal (with quotes).  Invalid UTF-8 bytes are
 * replaced by U+FFFD so the output is always valid JSON. */
void corun_json_escape(FILE *out, const char *s);

#define CORUN_JSON_MAX_DEPTH 8

/* A streaming writer for one JSON object.  Inside objects every value has a
 * key; inside arrays KEY must be NULL. */
struct corun_json {
	FILE *out;
	int depth;
	bool has_items[CORUN_JSON_MAX_DEPTH];
};

void corun_json_begin(struct corun_json *j, FILE *out);
/* Closes the top-level object and ends the line. */
void corun_json_end(struct corun_json *j);
void corun_json_object_begin(struct corun_json *j, const char *key);
void corun_json_object_end(struct corun_json *j);
void corun_json_array_begin(struct corun_json *j, const char *key);
void corun_json_array_end(struct corun_json *j);
void corun_json_str(struct corun_json *j, const char *key, const char *value);
void corun_json_int(struct corun_json *j, const char *key, int64_t value);
/* Non-finite values are written as null. */
void corun_json_double(struct corun_json *j, const char *key, double value);
void corun_json_bool(struct corun_json *j, const char *key, bool value);
void corun_json_null(struct corun_json *j, const char *key);

/* The fields every kernel result starts with: kernel, kernel_version, host,
 * kernel_release, cmdline, start_epoch_s.  ARGV must be the unpermuted
 * command line (getopt_long reorders argv). */
void corun_json_header(struct corun_json *j, const char *kernel, const char *kernel_version,
		       int argc, char *const argv[], double start_epoch_s);

/* corun_json_begin() on stdout, then corun_json_header(): the start of every
 * kernel's result. */
void corun_json_result_begin(struct corun_json *j, const char *kernel, const char *kernel_version,
			     int argc, char *const argv[], double start_epoch_s);

/* The end of a result whose self-check passed: "check": "ok", then
 * corun_json_end(). */
void corun_json_result_end(struct corun_json *j);

/* The main() of a kernel made of PARSE(argc, argv, &options), which exits on a
 * usage error, and RUN(&options, argc, argv, start_epoch_s), which returns the
 * exit code; the start time is taken first. */
#define CORUN_KERNEL_MAIN(parse, run)                      \
	int main(int argc, char *argv[])                   \
	{                                                  \
		double start_epoch_s = corun_epoch_s();    \
		struct options o;                          \
		parse(argc, argv, &o);                     \
		return run(&o, argc, argv, start_epoch_s); \
	}

#endif /* CORUN_KERNEL_H */
