/* What corun's scheduler daemons share (corun-dynamic-io, corun-cosched): the identity of the
 * processes they act on (a pid with its start time, held through a pidfd), their signals
 * (a signalfd, no work in handlers, SIGTERM at the starter's death), the journal of what they
 * change (appended and synced before the change), their JSON state files (written whole, then
 * renamed), the heartbeat that `--check` reads, and their options: one table per daemon of the
 * options with their bounds, parsed through kernels/common's number parser, printed by
 * `--limits` for the tests that compare them with the manifests, and each one required: a
 * daemon has no default of its own for an option a manifest sets.
 *
 * Functions return -1 with errno set on a system error unless they say otherwise; usage errors
 * are one line on stderr and exit CORUN_EXIT_USAGE (kernels/common/corun_kernel.h).
 */
#ifndef SCHED_DAEMON_H
#define SCHED_DAEMON_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* ------------------------------------------------------------------ processes */

/* Reads a small file into BUF (NUL-terminated); the bytes read, or -1. */
ssize_t sd_read_small(const char *path, char *buf, size_t cap);
/* Writes TEXT to the existing file PATH in one write. */
int sd_write_file(const char *path, const char *text);
/* Field 22 of /proc/PID/stat (start time in clock ticks since boot) and, if PGRP is not NULL,
 * field 5 (the process group). */
int sd_proc_stat(pid_t pid, unsigned long long *starttime, pid_t *pgrp);
int sd_pidfd_open(pid_t pid);
int sd_pidfd_signal(int pidfd, int sig);
/* A duplicate of the process's file descriptor FD (pidfd_getfd). */
int sd_pidfd_getfd(int pidfd, int fd);

/* A process a daemon acts on: its pid, start time and a pidfd. */
struct sd_proc {
	pid_t pid;
	unsigned long long starttime;
	int pidfd;
	pid_t pgrp;
};

enum sd_open { SD_OPEN_OK, SD_OPEN_GONE, SD_OPEN_REUSED };

/* Opens a pidfd for PID, then reads its start time: with the pidfd first, a matching start
 * time means the pidfd refers to that process whatever later happens to the pid. STARTTIME 0:
 * any start time is taken. SD_OPEN_OK fills P (close it with sd_proc_close); otherwise P's
 * pidfd is -1 and nothing stays open. */
enum sd_open sd_proc_open(struct sd_proc *p, pid_t pid, unsigned long long starttime);
/* True while the process (or its zombie) exists. */
bool sd_proc_alive(const struct sd_proc *p);
/* A signal through the pidfd: never to a process that reused the pid. */
int sd_proc_signal(const struct sd_proc *p, int sig);
void sd_proc_close(struct sd_proc *p);

/* ------------------------------------------------------------------ time */

uint64_t sd_mono_ns(void);
uint64_t sd_real_ns(void);

/* ------------------------------------------------------------------ signals */

/* Blocks SIGTERM, SIGINT, SIGHUP and SIGQUIT and returns a signalfd that reads them; ignores
 * SIGPIPE; asks for SIGTERM when the starting process dies (PR_SET_PDEATHSIG). Returns -2
 * when that process has already exited (the daemon should not start), -1 on error. */
int sd_signals_open(void);
/* The name of the signal read from SFD, or NULL if none could be read. */
const char *sd_signal_read(int sfd);

/* ------------------------------------------------------------------ journal and state files */

/* DIR/NAME opened with fopen()'s MODE (ENAMETOOLONG past 4095 bytes). */
FILE *sd_fopen_in(const char *dir, const char *name, const char *mode);
/* DIR/NAME opened for appending: one line per change, written before the change. */
FILE *sd_journal_open(const char *dir, const char *name);
/* One line, flushed and synced to the disk before it returns. */
int sd_journal_line(FILE *journal, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A state file written whole, then renamed over DIR/NAME: a reader never sees half of it. */
struct sd_file {
	char path[4096], tmp[4104];
	FILE *f;
};
/* Opens the temporary file; NULL on error. */
FILE *sd_file_begin(struct sd_file *s, const char *dir, const char *name);
/* Closes and renames it. */
int sd_file_commit(struct sd_file *s);

/* --check DIR: DIR/status.json (waited for up to 5 s) names a live pid, and its mono_s is at
 * most MAX_AGE seconds old. Returns CORUN_EXIT_OK with the status in BUF (for the caller's own
 * checks) and its age in *AGE, or prints one line and returns CORUN_EXIT_RUNTIME. WHAT names
 * the heartbeat in messages ("quantum", "heartbeat"). */
int sd_check_heartbeat(const char *prog, const char *dir, double max_age, const char *what,
		       char *buf, size_t cap, double *age);

/* ------------------------------------------------------------------ options */

enum sd_type {
	SD_NUMBER,  /* double: a finite number in [min, max] or (min, max] */
	SD_INTEGER, /* long: a whole number in [min, max] */
	SD_INT,     /* int: a whole number in [min, max], both within int */
	SD_WORD,    /* int: the index of one of WORDS */
	SD_BOOL,    /* bool: 0, 1, true or false */
	SD_TEXT,    /* const char *: any text */
};

/* One option of a daemon's table: --NAME VALUE into DEST. */
struct sd_option {
	const char *name;
	enum sd_type type;
	void *dest;
	double min, max;
	bool min_exclusive;
	const char *const *words;
	size_t nwords;
	bool given; /* set by sd_options_next */
};

#define SD_OPTION_NUMBER(n, d, lo, hi, excl)                  \
	{                                                     \
		n, SD_NUMBER, d, lo, hi, excl, NULL, 0, false \
	}
#define SD_OPTION_INTEGER(n, d, lo, hi)                         \
	{                                                       \
		n, SD_INTEGER, d, lo, hi, false, NULL, 0, false \
	}
#define SD_OPTION_INT(n, d, lo, hi)                         \
	{                                                   \
		n, SD_INT, d, lo, hi, false, NULL, 0, false \
	}
#define SD_OPTION_WORD(n, d, w)                                               \
	{                                                                     \
		n, SD_WORD, d, 0, 0, false, w, sizeof(w) / sizeof *(w), false \
	}
#define SD_OPTION_BOOL(n, d)                               \
	{                                                  \
		n, SD_BOOL, d, 0, 0, false, NULL, 0, false \
	}
#define SD_OPTION_TEXT(n, d)                               \
	{                                                  \
		n, SD_TEXT, d, 0, 0, false, NULL, 0, false \
	}

/* The modes every daemon has besides running: --check DIR (its heartbeat), --decide-table FILE
 * (its decision function on a table of inputs) and --limits (its table's bounds). */
struct sd_modes {
	const char *check;
	const char *table;
	bool limits;
};
enum { SD_O_CHECK = 200, SD_O_TABLE, SD_O_LIMITS };
/* The last entries of a daemon's other options: the modes, --help, --version, the end mark. */
/* clang-format off */
#define SD_COMMON_LONG_OPTIONS \
	{ "check", required_argument, NULL, SD_O_CHECK }, \
	{ "decide-table", required_argument, NULL, SD_O_TABLE }, \
	{ "limits", no_argument, NULL, SD_O_LIMITS }, \
	CORUN_COMMON_LONG_OPTIONS
/* clang-format on */

/* getopt_long() ("+:hV", errors left to the caller) over the N options of T, with values
 * BASE + index, and the N_OTHER options of OTHER (the daemon's others, ending with
 * SD_COMMON_LONG_OPTIONS). An option of T is parsed into its DEST here, a mode into MODES;
 * returns the next other option (or error) for the caller's switch, or -1 at the end. */
int sd_options_next(const char *prog, struct sd_option *t, size_t n, int base,
		    const struct option *other, size_t n_other, struct sd_modes *modes, int argc,
		    char *argv[]);
/* The option of T named NAME (a program error if there is none). */
struct sd_option *sd_option_named(struct sd_option *t, size_t n, const char *name);
/* Each of the options of T named in NAMES (NULL-terminated) must have been given: else one line
 * "--NAME: missing (expected WHY)" and exit CORUN_EXIT_USAGE. */
void sd_options_require(const char *prog, struct sd_option *t, size_t n, const char *const *names,
			const char *why);
/* --limits: every option of T with its type and bounds, in JSON schema words, one line. */
int sd_options_print_limits(const char *prog, const struct sd_option *t, size_t n);

#endif /* SCHED_DAEMON_H */
