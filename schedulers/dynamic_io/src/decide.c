/* Procedure 4 of paper 000; see decide.h for the rules. */
#define _GNU_SOURCE
#include "decide.h"

#include <stdlib.h>

int dio_work_init(struct dio_work *w, size_t cap_jobs, int cap_cmps)
{
	size_t nc = (size_t)cap_cmps;
	w->cap_jobs = cap_jobs;
	w->cap_cmps = cap_cmps;
	w->order = calloc(cap_jobs ? cap_jobs : 1, sizeof *w->order);
	w->seq = calloc(cap_jobs ? cap_jobs : 1, sizeof *w->seq);
	w->cmp_start = calloc(nc + 1, sizeof *w->cmp_start);
	w->head = calloc(nc ? nc : 1, sizeof *w->head);
	w->cmp_io = calloc(nc ? nc : 1, sizeof *w->cmp_io);
	w->eligible = calloc(nc ? nc : 1, sizeof *w->eligible);
	w->nseq = 0;
	if (!w->order || !w->seq || !w->cmp_start || !w->head || !w->cmp_io || !w->eligible) {
		dio_work_free(w);
		return -1;
	}
	return 0;
}

void dio_work_free(struct dio_work *w)
{
	free(w->order);
	free(w->seq);
	free(w->cmp_start);
	free(w->head);
	free(w->cmp_io);
	free(w->eligible);
	w->order = w->seq = w->cmp_start = w->head = NULL;
	w->cmp_io = NULL;
	w->eligible = NULL;
}

const char *dio_action_name(enum dio_action a)
{
	switch (a) {
	case DIO_HOLD: return "hold";
	case DIO_RELEASE: return "release";
	case DIO_FORCE_RELEASE: return "force_release";
	case DIO_NONE: break;
	}
	return "none";
}

static int by_key_desc(const void *a, const void *b, void *ctx)
{
	const struct dio_job *jobs = ctx;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	if (jobs[i].key_mbps > jobs[j].key_mbps)
		return -1;
	if (jobs[i].key_mbps < jobs[j].key_mbps)
		return 1;
	return (i > j) - (i < j); /* stable: submit order breaks ties */
}

/* Running now and may be held: running, not protected, not acted on. */
static bool holdable(const struct dio_job *j)
{
	return j->state == DIO_RUNNING && j->action == DIO_NONE && !j->protect && j->cur_mbps > 0;
}

static void act(struct dio_job *jobs, size_t i, enum dio_action a, struct dio_work *w)
{
	jobs[i].action = a;
	w->seq[w->nseq++] = i;
}

size_t dio_decide(struct dio_job *jobs, size_t n, int ncmp, const struct dio_params *p,
		  struct dio_work *w)
{
	size_t nc = (size_t)ncmp;
	double overall = 0;
	int active_cmps = 0;

	w->nseq = 0;
	/* Sorting_Jobs_on_Each_CMP: a counting sort by CMP, then by I/O, descending. */
	for (size_t c = 0; c <= nc; c++)
		w->cmp_start[c] = 0;
	for (size_t c = 0; c < nc; c++)
		w->cmp_io[c] = 0;
	for (size_t i = 0; i < n; i++) {
		jobs[i].action = DIO_NONE;
		w->cmp_start[(size_t)jobs[i].cmp + 1]++;
		w->cmp_io[jobs[i].cmp] += jobs[i].cur_mbps;
		overall += jobs[i].cur_mbps;
	}
	for (size_t c = 0; c < nc; c++) {
		if (w->cmp_start[c + 1] > 0)
			active_cmps++;
		w->cmp_start[c + 1] += w->cmp_start[c];
		w->head[c] = w->cmp_start[c];
	}
	for (size_t i = 0; i < n; i++)
		w->order[w->head[jobs[i].cmp]++] = i;
	for (size_t c = 0; c < nc; c++) {
		size_t len = w->cmp_start[c + 1] - w->cmp_start[c];
		if (len > 1)
			qsort_r(w->order + w->cmp_start[c], len, sizeof *w->order, by_key_desc,
				jobs);
		w->head[c] = w->cmp_start[c];
	}
	w->overall_before = overall;

	/* Fairness bound (dynamic_io_fair): nobody stays held longer than max_held_s. */
	if (p->max_held_s > 0) {
		for (size_t k = 0; k < n; k++) {
			size_t i = w->order[k];
			if (jobs[i].state == DIO_HELD && jobs[i].held_s >= p->max_held_s) {
				act(jobs, i, DIO_FORCE_RELEASE, w);
				overall += jobs[i].key_mbps;
				w->cmp_io[jobs[i].cmp] += jobs[i].key_mbps;
			}
		}
	}

	if (overall > p->bound_mbps) {
		double share = p->bound_mbps / (active_cmps > 0 ? active_cmps : 1);
		for (size_t c = 0; c < nc; c++)
			w->eligible[c] = !p->cmp_share || w->cmp_io[c] > share;
		/* jobs that will do I/O this quantum unless held: running with I/O, and
		 * those released by force above */
		int io_running = 0;
		for (size_t i = 0; i < n; i++)
			io_running += (jobs[i].state == DIO_RUNNING && jobs[i].cur_mbps > 0) ||
				      jobs[i].action == DIO_FORCE_RELEASE;
		bool progress = true;
		while (overall > p->bound_mbps && progress) {
			progress = false;
			for (size_t c = 0; c < nc && overall > p->bound_mbps; c++) {
				if (p->keep_io_running > 0 && io_running <= p->keep_io_running)
					break;
				if (!w->eligible[c])
					continue;
				size_t h = w->head[c], end = w->cmp_start[c + 1];
				while (h < end && !holdable(&jobs[w->order[h]]))
					h++;
				if (h < end) {
					size_t i = w->order[h++];
					act(jobs, i, DIO_HOLD, w);
					overall -= jobs[i].cur_mbps;
					io_running--;
					progress = true;
				}
				w->head[c] = h;
			}
		}
	} else {
		for (size_t c = 0; c < nc; c++) {
			for (size_t h = w->cmp_start[c]; h < w->cmp_start[c + 1]; h++) {
				size_t i = w->order[h];
				if (jobs[i].state == DIO_HELD && jobs[i].action == DIO_NONE) {
					act(jobs, i, DIO_RELEASE, w);
					overall += jobs[i].key_mbps;
					break;
				}
			}
		}
	}
	w->overall_after = overall;
	return w->nseq;
}
