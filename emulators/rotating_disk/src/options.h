/* Command line and preset files of corun-rotating-disk. */
#ifndef RD_OPTIONS_H
#define RD_OPTIONS_H

#include "model.h"

#define RD_PROG "corun-rotating-disk"
#define RD_VERSION "1.0"

struct rd_config {
	struct rd_params p;
	const char *preset; /* the preset file read, or NULL */
	const char *mount;  /* FUSE mount point */
	const char *state;  /* counters as JSON */
	const char *name;   /* the served file's name */
	const char *replay; /* trace file ("-": stdin) */
	int replay_qd;      /* 0: arrivals from the trace; N: N in flight */
	int rt_priority;    /* SCHED_FIFO priority of the daemon, 0: normal scheduling */
	bool untimed_start; /* serve at memory speed until SIGUSR2 */
	const char *load;   /* an image file (--size bytes, may be sparse) to start from */
};

/* Parse the command line (a --preset file first, then the options, which
 * override it).  Usage errors print one line and exit 2. */
void rd_parse_options(struct rd_config *c, int argc, char *argv[]);

#endif /* RD_OPTIONS_H */
