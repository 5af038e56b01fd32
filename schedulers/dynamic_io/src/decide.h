/* The decision-making module of paper 000 (section 3.3, Procedure 4), kept
 * pure: it reads a table of jobs and writes one action per job; it does no
 * I/O and sends no signal, so it is tested on hand-made tables
 * (corun-dynamic-io --decide-table) and timed alone (--bench-decide).
 *
 * Each quantum:
 *  - Overall_IO is the sum of every job's measured I/O rate (MB/s).
 *  - Optional (fair variant): a job held for max_held_s or longer is released
 *    now (FORCE_RELEASE) whatever the I/O, and cannot be held this quantum;
 *    its rate when it was held is added to Overall_IO, as it will do I/O again.
 *  - If Overall_IO > bound: jobs are held (suspended, or throttled) CMP by
 *    CMP, round robin over the CMPs in index order, on each CMP the running
 *    job with the highest I/O first, until Overall_IO <= bound. Only jobs
 *    with non-zero I/O are candidates (section 3.2's candidate queue). With
 *    cmp_share, only CMPs whose I/O exceeds their share (bound / CMPs with
 *    jobs) are candidates: "the dynamic module only cares jobs on the CMP
 *    that exceeds its portion" (section 3.3). With keep_io_running N > 0
 *    (not in the paper), no job is held that would leave fewer than N jobs
 *    doing I/O running: the paper's loop may hold every job when one job's
 *    rate alone is above the bound, and the device then idles.
 *  - Else: on every CMP the held job with the highest I/O (its rate when it
 *    was held) is released: one job per CMP per quantum.
 */
#ifndef DIO_DECIDE_H
#define DIO_DECIDE_H

#include <stdbool.h>
#include <stddef.h>

enum dio_state { DIO_RUNNING = 0, DIO_HELD = 1 };

enum dio_action {
	DIO_NONE = 0,
	DIO_HOLD = 1,          /* suspend (or throttle) */
	DIO_RELEASE = 2,       /* resume (or lift the throttle) */
	DIO_FORCE_RELEASE = 3, /* released because held for max_held_s */
};

struct dio_job {
	int cmp; /* CMP index, 0 <= cmp < ncmp */
	enum dio_state state;
	double cur_mbps;        /* measured I/O rate in the last quantum */
	double key_mbps;        /* sort key: cur_mbps when running, the rate when held */
	double held_s;          /* seconds held so far (held jobs) */
	bool protect;           /* may not be held this quantum */
	enum dio_action action; /* output */
};

struct dio_params {
	double bound_mbps;   /* IO_BOUND_INTERVAL */
	bool cmp_share;      /* only CMPs over their share are candidates */
	double max_held_s;   /* > 0: release jobs held this long; 0: never */
	int keep_io_running; /* > 0: never hold below this many jobs doing I/O */
};

/* Scratch space, sized for up to cap_jobs jobs and cap_cmps CMPs. */
struct dio_work {
	size_t cap_jobs;
	int cap_cmps;
	size_t *order;     /* job indices sorted by (cmp, key desc, index) */
	size_t *cmp_start; /* cap_cmps + 1 offsets into order */
	size_t *head;      /* cap_cmps */
	double *cmp_io;    /* cap_cmps */
	bool *eligible;    /* cap_cmps */
	size_t *seq;       /* indices of the jobs acted on, in decision order */
	size_t nseq;
	double overall_before, overall_after;
};

int dio_work_init(struct dio_work *w, size_t cap_jobs, int cap_cmps);
void dio_work_free(struct dio_work *w);

/* Decide for N jobs on NCMP CMPs (ncmp <= w->cap_cmps, n <= w->cap_jobs).
 * Sets jobs[i].action; the jobs acted on are w->seq[0..w->nseq). Returns the
 * number of actions. */
size_t dio_decide(struct dio_job *jobs, size_t n, int ncmp, const struct dio_params *p,
		  struct dio_work *w);

const char *dio_action_name(enum dio_action a);

#endif /* DIO_DECIDE_H */
