/* JSON output shared by the replay mode and the daemon; see report.h. */
#include "report.h"

double rd_ack_ms(const struct rd_params *p, uint64_t len)
{
	return p->overhead_ms + (double)len / (p->bus_mb_s * 1e3);
}

void rd_json_model(struct corun_json *j, const struct rd_config *c, const struct rd_model *m)
{
	const struct rd_params *p = &c->p;
	double full = (double)m->p.cylinders;

	if (c->preset)
		corun_json_str(j, "preset", c->preset);
	else
		corun_json_null(j, "preset");
	corun_json_object_begin(j, "params");
	corun_json_double(j, "rpm", p->rpm);
	corun_json_double(j, "seek_track_ms", p->seek_track_ms);
	corun_json_double(j, "seek_avg_ms", p->seek_avg_ms);
	corun_json_double(j, "seek_full_ms", p->seek_full_ms);
	corun_json_double(j, "seek_knee", p->seek_knee);
	corun_json_int(j, "cylinders", p->cylinders);
	corun_json_double(j, "rate_outer_mb_s", p->rate_outer_mb_s);
	corun_json_double(j, "rate_inner_mb_s", p->rate_inner_mb_s);
	corun_json_int(j, "zones", p->zones);
	corun_json_double(j, "stroke", p->stroke);
	corun_json_int(j, "size_bytes", (int64_t)p->size_bytes);
	corun_json_int(j, "queue_window", p->queue_window);
	corun_json_int(j, "starvation_limit", p->starvation_limit);
	corun_json_int(j, "cache_segments", p->cache_segments);
	corun_json_int(j, "segment_bytes", (int64_t)p->segment_bytes);
	corun_json_str(j, "write_cache", p->write_back ? "back" : "through");
	corun_json_int(j, "write_cache_bytes", (int64_t)p->write_cache_bytes);
	corun_json_double(j, "overhead_ms", p->overhead_ms);
	corun_json_double(j, "bus_mb_s", p->bus_mb_s);
	corun_json_int(j, "seed", (int64_t)p->seed);
	corun_json_object_end(j);
	corun_json_object_begin(j, "derived");
	corun_json_double(j, "revolution_ms", m->rev_ms);
	corun_json_double(j, "avg_rotational_latency_ms", m->rev_ms / 2);
	corun_json_double(j, "seek_a_ms", m->seek_a);
	corun_json_double(j, "seek_b_ms_per_sqrt_cyl", m->seek_b);
	corun_json_double(j, "seek_knee_cyl", m->seek_knee_cyl);
	corun_json_double(j, "seek_linear_c_ms", m->seek_lin_c);
	corun_json_double(j, "seek_linear_e_ms_per_cyl", m->seek_lin_e);
	corun_json_double(j, "seek_third_stroke_ms", rd_seek_ms(m, full / 3));
	corun_json_double(j, "seek_full_check_ms", rd_seek_ms(m, full));
	corun_json_int(j, "image_tracks", (int64_t)m->ntracks);
	corun_json_double(j, "image_cylinders", m->track_cyl[m->ntracks - 1] - m->track_cyl[0]);
	corun_json_double(j, "rate_first_mb_s", m->track_rate[0] / 1e3);
	corun_json_double(j, "rate_last_mb_s", m->track_rate[m->ntracks - 1] / 1e3);
	corun_json_object_end(j);
}
