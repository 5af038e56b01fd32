/* The rotating-disk model; see model.h. */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* splitmix64: a seeded hash for the platter phase and the track skews. */
static uint64_t mix64(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

static double unit_hash(uint64_t seed, uint64_t k)
{
	return (double)(mix64(seed ^ mix64(k)) >> 11) / 9007199254740992.0;
}

static double frac(double x)
{
	return x - floor(x);
}

static double zone_rate(const struct rd_params *p, double x)
{
	int z;

	if (p->zones <= 1)
		return p->rate_outer_mb_s;
	z = (int)(x * p->zones);
	if (z >= p->zones)
		z = p->zones - 1;
	if (z < 0)
		z = 0;
	return p->rate_outer_mb_s + (p->rate_inner_mb_s - p->rate_outer_mb_s) * z / (p->zones - 1);
}

/* The seek curve with slope B of the sqrt part. */
static double seek_with(const struct rd_model *m, double b, double d)
{
	double c = (double)m->p.cylinders, dk = m->seek_knee_cyl, sk;

	if (d <= 0.0)
		return 0.0;
	if (d < 1.0)
		d = 1.0;
	sk = m->p.seek_track_ms + b * (sqrt(dk) - 1.0);
	if (d <= dk)
		return m->p.seek_track_ms + b * (sqrt(d) - 1.0);
	return sk + (m->p.seek_full_ms - sk) * (d - dk) / (c - dk);
}

/* Mean seek over random pairs of cylinders: distance u*C with density 2(1-u). */
static double mean_seek_with(const struct rd_model *m, double b)
{
	const int n = 20000;
	double c = (double)m->p.cylinders, sum = 0.0;

	for (int i = 0; i < n; i++) {
		double u = (i + 0.5) / n;
		sum += seek_with(m, b, u * c) * 2.0 * (1.0 - u) / n;
	}
	return sum;
}

double rd_seek_ms(const struct rd_model *m, double d)
{
	return seek_with(m, m->seek_b, d);
}

static int fail(char *err, size_t errlen, const char *msg)
{
	snprintf(err, errlen, "%s", msg);
	return -1;
}

int rd_model_init(struct rd_model *m, const struct rd_params *p, char *err, size_t errlen)
{
	double m0, m1, stroke_bytes_est, sum;
	size_t n;

	memset(m, 0, sizeof(*m));
	m->p = *p;
	if (!(p->rpm > 0) || !(p->stroke > 0 && p->stroke <= 1) || p->cylinders < 2 ||
	    p->size_bytes < RD_SECTOR || p->zones < 1 || p->cache_segments < 1 ||
	    p->queue_window < 1 || p->queue_window > RD_MAX_WINDOW)
		return fail(err, errlen, "parameters out of range");
	if (!(p->seek_track_ms > 0 && p->seek_track_ms < p->seek_avg_ms &&
	      p->seek_avg_ms < p->seek_full_ms))
		return fail(err, errlen,
			    "seek times must rise: single-track < average < full-stroke");
	if (!(p->seek_knee > 0 && p->seek_knee < 1))
		return fail(err, errlen, "the seek knee must lie in (0, 1)");
	m->rev_ms = 60000.0 / p->rpm;
	m->seek_knee_cyl = p->seek_knee * (double)p->cylinders;
	if (m->seek_knee_cyl < 2.0)
		m->seek_knee_cyl = 2.0;
	m0 = mean_seek_with(m, 0.0);
	m1 = mean_seek_with(m, 1.0);
	m->seek_b = (p->seek_avg_ms - m0) / (m1 - m0);
	m->seek_a = p->seek_track_ms - m->seek_b;
	{
		double sk = seek_with(m, m->seek_b, m->seek_knee_cyl);

		if (!(m->seek_b > 0) || sk > p->seek_full_ms)
			return fail(
				err, errlen,
				"no seek curve a + b*sqrt(d), then linear, fits these single-track, average and full-stroke times (try another knee)");
		m->seek_lin_e = (p->seek_full_ms - sk) / ((double)p->cylinders - m->seek_knee_cyl);
		m->seek_lin_c = sk - m->seek_lin_e * m->seek_knee_cyl;
	}

	/* How many tracks the image needs: start from the mean rate over the
	 * stroke, then grow until they hold the image. */
	stroke_bytes_est = 0.5 * (zone_rate(p, 0.0) + zone_rate(p, p->stroke)) * 1e3 * m->rev_ms;
	n = (size_t)((double)p->size_bytes / stroke_bytes_est) + 1;
	for (;;) {
		sum = 0.0;
		for (size_t k = 0; k < n; k++) {
			double x = p->stroke * ((double)k + 0.5) / (double)n;
			sum += floor(zone_rate(p, x) * 1e3 * m->rev_ms / RD_SECTOR) * RD_SECTOR;
		}
		if (sum >= (double)p->size_bytes)
			break;
		n = (size_t)((double)n * (double)p->size_bytes / sum) + 1;
	}
	m->ntracks = n;
	m->track_start = calloc(n + 1, sizeof(*m->track_start));
	m->track_cyl = calloc(n, sizeof(*m->track_cyl));
	m->track_rate = calloc(n, sizeof(*m->track_rate));
	m->track_skew = calloc(n, sizeof(*m->track_skew));
	m->segs = calloc((size_t)p->cache_segments, sizeof(*m->segs));
	if (!m->track_start || !m->track_cyl || !m->track_rate || !m->track_skew || !m->segs) {
		rd_model_free(m);
		return fail(err, errlen, "out of memory");
	}
	{
		uint64_t addr = 0;

		for (size_t k = 0; k < n; k++) {
			double x = p->stroke * ((double)k + 0.5) / (double)n;
			double rate = zone_rate(p, x);
			uint64_t bytes = (uint64_t)(rate * 1e3 * m->rev_ms / RD_SECTOR) * RD_SECTOR;

			m->track_start[k] = addr;
			m->track_cyl[k] = x * (double)p->cylinders;
			m->track_rate[k] = rate * 1e3; /* MB/s -> bytes per ms */
			m->track_skew[k] = unit_hash(p->seed, k);
			addr += bytes;
		}
		m->track_start[n] = addr;
	}
	m->phase0 = unit_hash(p->seed, UINT64_MAX);
	m->active_seg = -1;
	m->streaming = false;
	m->head_addr = 0;
	return 0;
}

void rd_model_free(struct rd_model *m)
{
	free(m->track_start);
	free(m->track_cyl);
	free(m->track_rate);
	free(m->track_skew);
	free(m->segs);
	m->track_start = NULL;
	m->track_cyl = m->track_rate = m->track_skew = NULL;
	m->segs = NULL;
}

static size_t track_of(const struct rd_model *m, uint64_t addr)
{
	size_t lo = 0, hi = m->ntracks; /* track_start[lo] <= addr < track_start[hi] */

	if (addr >= m->track_start[m->ntracks])
		return m->ntracks - 1;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->track_start[mid] <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

double rd_rate_mb_s(const struct rd_model *m, uint64_t addr)
{
	return m->track_rate[track_of(m, addr)] / 1e3;
}

/* The address under the head at T. */
static uint64_t head_at(const struct rd_model *m, double t)
{
	double moved;
	uint64_t h;

	if (!m->streaming)
		return m->head_addr;
	moved = (t - m->stream_t0) * m->stream_rate;
	if (moved < 0)
		moved = 0;
	h = m->stream_start + (uint64_t)moved;
	return h < m->stream_limit ? h : m->stream_limit;
}

/* The rotational wait (ms) at T for the sector holding ADDR. */
static double rot_wait(const struct rd_model *m, uint64_t addr, double t)
{
	size_t k = track_of(m, addr);
	double bytes = (double)(m->track_start[k + 1] - m->track_start[k]);
	double full = m->track_rate[k] * m->rev_ms;
	double target, platter;

	if (bytes > full || k + 1 < m->ntracks)
		bytes = full;
	target = frac((double)(addr - m->track_start[k]) / bytes + m->track_skew[k]);
	platter = frac(t / m->rev_ms + m->phase0);
	return frac(target - platter) * m->rev_ms;
}

/* Does a segment hold [a, a+len) at T? */
static bool cached(const struct rd_model *m, uint64_t a, uint64_t len, double t)
{
	for (int i = 0; i < m->p.cache_segments; i++) {
		const struct rd_segment *s = &m->segs[i];
		uint64_t start, end;

		if (!s->valid)
			continue;
		start = s->start;
		end = (i == m->active_seg && m->streaming) ? head_at(m, t) : s->end;
		if (end - start > m->p.segment_bytes)
			start = end - m->p.segment_bytes;
		if (a >= start && a + len <= end)
			return true;
	}
	return false;
}

/* Is [a, a+len) on its way under the streaming head (read-ahead in progress)? */
static bool in_stream(const struct rd_model *m, uint64_t a, uint64_t len, double t)
{
	if (!m->streaming || a < m->stream_start || a >= m->stream_limit)
		return false;
	/* Once the read-ahead stopped at its limit, data past it needs a new
	 * rotation: a mechanical access on the same track. */
	if (head_at(m, t) >= m->stream_limit && a + len > m->stream_limit)
		return false;
	return true;
}

static double mech_positioning(const struct rd_model *m, const struct rd_req *r, double t,
			       double *seek, double *rot, int64_t *dist)
{
	size_t from = track_of(m, head_at(m, t)), to = track_of(m, r->offset);
	double d = fabs(m->track_cyl[to] - m->track_cyl[from]);
	double t1;

	*dist = (int64_t)llround(d);
	*seek = from == to ? 0.0 : rd_seek_ms(m, d);
	t1 = t + m->p.overhead_ms + *seek;
	*rot = rot_wait(m, r->offset, t1);
	return m->p.overhead_ms + *seek + *rot;
}

double rd_positioning_ms(const struct rd_model *m, const struct rd_req *r, double t)
{
	double seek, rot;
	int64_t dist;

	if (!r->write) {
		if (cached(m, r->offset, r->length, t))
			return 0.0;
		if (in_stream(m, r->offset, r->length, t)) {
			double arrive = m->stream_t0 +
					(double)(r->offset - m->stream_start) / m->stream_rate;

			return arrive > t ? arrive - t : 0.0;
		}
	}
	return mech_positioning(m, r, t, &seek, &rot, &dist);
}

size_t rd_model_pick(struct rd_model *m, struct rd_req **pending, size_t n, double t)
{
	size_t w = n < (size_t)m->p.queue_window ? n : (size_t)m->p.queue_window;
	size_t best = 0;
	double best_cost;

	if (n == 0)
		return 0;
	if (w <= 1 || pending[0]->bypassed >= m->p.starvation_limit)
		return 0;
	best_cost = rd_positioning_ms(m, pending[0], t);
	for (size_t i = 1; i < w; i++) {
		double c = rd_positioning_ms(m, pending[i], t);

		if (c < best_cost) {
			best_cost = c;
			best = i;
		}
	}
	for (size_t i = 0; i < best; i++)
		pending[i]->bypassed++;
	return best;
}

/* Stop the read-ahead at T: the active segment keeps what was read. */
static void stop_stream(struct rd_model *m, double t)
{
	if (!m->streaming)
		return;
	m->head_addr = head_at(m, t);
	if (m->active_seg >= 0)
		m->segs[m->active_seg].end = m->head_addr;
	m->streaming = false;
	m->active_seg = -1;
}

static void invalidate(struct rd_model *m, uint64_t a, uint64_t len)
{
	for (int i = 0; i < m->p.cache_segments; i++) {
		struct rd_segment *s = &m->segs[i];

		if (s->valid && a < s->end && a + len > s->start)
			s->valid = false;
	}
}

double rd_model_service(struct rd_model *m, struct rd_req *r, double t)
{
	double seek = 0, rot = 0, xfer, pos;
	int64_t dist = 0;

	if (t < r->arrival_ms)
		t = r->arrival_ms;
	r->start_ms = t;
	if (!r->write && cached(m, r->offset, r->length, t)) {
		r->how = RD_CACHE_HIT;
		xfer = (double)r->length / (m->p.bus_mb_s * 1e3);
		r->done_ms = t + m->p.overhead_ms + xfer;
		r->seek_ms = r->rot_ms = 0;
		r->xfer_ms = xfer;
		r->distance = 0;
		goto done;
	}
	if (!r->write && in_stream(m, r->offset, r->length, t)) {
		double end = m->stream_t0 +
			     (double)(r->offset + r->length - m->stream_start) / m->stream_rate;
		double begin = t + m->p.overhead_ms;

		r->how = RD_STREAM;
		r->seek_ms = 0;
		r->distance = 0;
		r->done_ms = end > begin ? end : begin;
		r->rot_ms = 0;
		r->xfer_ms = r->done_ms - t;
		if (end >= begin) {
			/* Re-anchor at the end of this request, in the rate of the zone
			 * the head reached. */
			m->stream_start = r->offset + r->length;
			m->stream_t0 = end;
			m->stream_rate = m->track_rate[track_of(m, m->stream_start)];
		}
		if (r->offset + r->length + m->p.segment_bytes > m->stream_limit)
			m->stream_limit = r->offset + r->length + m->p.segment_bytes;
		if (m->stream_limit > m->p.size_bytes)
			m->stream_limit = m->p.size_bytes;
		goto done;
	}
	r->how = RD_MECHANICAL;
	pos = mech_positioning(m, r, t, &seek, &rot, &dist);
	stop_stream(m, t);
	xfer = (double)r->length / m->track_rate[track_of(m, r->offset)];
	r->seek_ms = seek;
	r->rot_ms = rot;
	r->xfer_ms = xfer;
	r->distance = dist;
	r->done_ms = t + pos + xfer;
	if (r->write) {
		invalidate(m, r->offset, r->length);
		m->head_addr = r->offset + r->length;
	} else {
		struct rd_segment *s;

		m->active_seg = m->next_victim;
		m->next_victim = (m->next_victim + 1) % m->p.cache_segments;
		s = &m->segs[m->active_seg];
		s->valid = true;
		s->start = r->offset;
		s->end = r->offset;
		m->streaming = true;
		m->stream_start = r->offset;
		m->stream_t0 = t + pos;
		m->stream_rate = m->track_rate[track_of(m, r->offset)];
		m->stream_limit = r->offset + r->length + m->p.segment_bytes;
		if (m->stream_limit > m->p.size_bytes)
			m->stream_limit = m->p.size_bytes;
	}
done:
	m->busy_until = r->done_ms;
	return r->done_ms;
}
