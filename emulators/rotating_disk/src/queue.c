/* The request queue and the dispatcher thread of the FUSE front end (serve.c). */
#define _GNU_SOURCE
#include "server.h"

#include "corun_kernel.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double now_ms(const struct server *s)
{
	return (corun_monotonic_s() - s->t0_mono_s) * 1e3;
}

static void sleep_until_ms(const struct server *s, double t_ms)
{
	double abs_s = s->t0_mono_s + t_ms / 1e3;
	struct timespec ts;

	if (abs_s <= 0)
		return;
	ts.tv_sec = (time_t)abs_s;
	ts.tv_nsec = (long)((abs_s - (double)ts.tv_sec) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* ---- the queue ---------------------------------------------------------- */

int enqueue(struct server *s, struct sreq *q)
{
	pthread_mutex_lock(&s->mu);
	if (s->stop) {
		pthread_mutex_unlock(&s->mu);
		return -1;
	}
	if (s->npend == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct sreq **np = realloc(s->pending, cap * sizeof(*np));

		if (!np) {
			pthread_mutex_unlock(&s->mu);
			return -1;
		}
		s->pending = np;
		s->cap = cap;
	}
	q->r.arrival_ms = now_ms(s);
	s->pending[s->npend++] = q;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

static void record_late(struct server *s, double late_ms)
{
	size_t bin;

	if (late_ms < 0)
		late_ms = 0;
	bin = (size_t)(late_ms * 1e3 / LATE_BIN_US);
	if (bin >= LATE_BINS)
		bin = LATE_BINS - 1;
	s->late_hist[bin]++;
	s->late_n++;
	if (late_ms > s->late_max_ms)
		s->late_max_ms = late_ms;
}

static void reply(struct server *s, struct sreq *q)
{
	if (!q->freq)
		return;
	if (q->r.write)
		fuse_reply_write(q->freq, q->r.length);
	else
		fuse_reply_buf(q->freq, (const char *)s->image + q->r.offset, q->r.length);
}

void *dispatch(void *arg)
{
	struct server *s = arg;
	struct rd_req **view = NULL;
	size_t view_cap = 0;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		struct sreq *q;
		size_t n, i;
		double t;

		while (s->npend == 0 && !s->stop)
			pthread_cond_wait(&s->cv, &s->mu);
		if (s->stop)
			break;
		t = s->m.busy_until;
		if (s->pending[0]->r.arrival_ms > t)
			t = s->pending[0]->r.arrival_ms;
		if (view_cap < s->npend) {
			struct rd_req **nv = realloc(view, s->cap * sizeof(*nv));

			if (!nv) {
				s->errors++;
				break;
			}
			view = nv;
			view_cap = s->cap;
		}
		for (n = 0; n < s->npend && s->pending[n]->r.arrival_ms <= t; n++)
			view[n] = &s->pending[n]->r;
		i = rd_model_pick(&s->m, view, n, t);
		q = s->pending[i];
		memmove(&s->pending[i], &s->pending[i + 1],
			(s->npend - i - 1) * sizeof(*s->pending));
		s->npend--;
		rd_model_service(&s->m, &q->r, t);
		s->busy_ms += q->r.done_ms - q->r.start_ms;
		s->seeks += q->r.how == RD_MECHANICAL && q->r.distance > 0;
		s->hits += q->r.how == RD_CACHE_HIT;
		s->streamed += q->r.how == RD_STREAM;
		pthread_mutex_unlock(&s->mu);

		/* The actuator is busy until done_ms, acknowledged or not. */
		sleep_until_ms(s, q->r.done_ms);
		reply(s, q);
		{
			double late = now_ms(s) - q->r.done_ms;

			pthread_mutex_lock(&s->mu);
			if (q->freq)
				record_late(s, late);
			if (q->r.acked)
				s->dirty -= q->r.length;
		}
		free(q);
	}
	/* Stopping: whatever is still queued fails. */
	while (s->npend) {
		struct sreq *q = s->pending[--s->npend];

		if (q->freq)
			fuse_reply_err(q->freq, EIO);
		free(q);
	}
	pthread_mutex_unlock(&s->mu);
	free(view);
	return NULL;
}
