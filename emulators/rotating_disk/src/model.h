/* The rotating-disk model: one actuator serving requests on a virtual clock.
 *
 * Pure computation (no I/O, no threads, no clock): the FUSE front end and the
 * replay mode both feed it requests with arrival times in milliseconds and ask
 * it which pending request to serve next and when that request completes.
 *
 * Geometry.  The image is laid out on `stroke` (0 < stroke <= 1) of the
 * platter, from the outer edge inwards, on tracks spread evenly over those
 * cylinders.  A track holds what passes under the head in one revolution at
 * its zone's media rate; zones step linearly from the outer to the inner rate.
 *
 * Timing of one request (Ruemmler & Wilkes, IEEE Computer 1994):
 *   controller overhead + seek(distance in cylinders)
 *   + rotational latency (the target sector's angle, from its address and a
 *     seeded per-track skew, against the platter's angle at that time)
 *   + transfer at the zone's media rate;
 *   seek(d) = a + b*sqrt(d) up to a knee, linear beyond it, with a + b the
 *   single-track time, the full-stroke time at the last cylinder, and b set
 *   so that the mean over random seeks equals the average seek time.
 * A read leaves the head streaming: the drive keeps reading ahead into a
 * cache segment, so the next read inside that segment costs no positioning,
 * and a read of data already in a segment costs only the interface transfer.
 * Writes are write-through (complete when on the platter) or write-back
 * (the front end acknowledges them at once and queues the destage).
 * Queued requests are picked shortest-positioning-time-first among the
 * `queue_window` oldest; a request passed over `starvation_limit` times is
 * served next.  A window of 1 is FIFO.
 */
#ifndef RD_MODEL_H
#define RD_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RD_SECTOR 512u
#define RD_MAX_WINDOW 32

struct rd_params {
	double rpm;
	double seek_track_ms;   /* single-track seek */
	double seek_avg_ms;     /* mean over random seeks */
	double seek_full_ms;    /* full-stroke seek */
	double seek_knee;       /* knee of the seek curve, fraction of all cylinders */
	int64_t cylinders;      /* cylinders of the whole platter */
	double rate_outer_mb_s; /* media rate of the outer zone, MB/s (10^6 B/s) */
	double rate_inner_mb_s; /* media rate of the inner zone */
	int zones;
	double stroke;        /* fraction of the platter the image spans */
	uint64_t size_bytes;  /* image size */
	int queue_window;     /* 1 (FIFO) .. RD_MAX_WINDOW */
	int starvation_limit; /* times a request may be passed over */
	int cache_segments;
	uint64_t segment_bytes; /* read-ahead and segment size */
	bool write_back;
	uint64_t write_cache_bytes; /* dirty data a write-back cache holds */
	double overhead_ms;         /* controller overhead per command */
	double bus_mb_s;            /* interface rate for cache transfers */
	uint64_t seed;              /* rotational phase and track skews */
};

enum rd_how { RD_MECHANICAL = 0, RD_STREAM = 1, RD_CACHE_HIT = 2 };

struct rd_req {
	uint64_t offset;
	uint64_t length;
	bool write;
	double arrival_ms;
	int bypassed;
	void *ctx; /* the front end's handle */
	/* set by rd_model_service() */
	double start_ms; /* the actuator took it */
	double done_ms;  /* the actuator is free again */
	double seek_ms, rot_ms, xfer_ms;
	int64_t distance; /* cylinders moved */
	enum rd_how how;
	/* set by the front end */
	double complete_ms; /* completion the host sees */
	bool acked;         /* a write-back write acknowledged on arrival */
};

struct rd_segment {
	uint64_t start, end; /* cached bytes [start, end) */
	bool valid;
};

struct rd_model {
	struct rd_params p;
	double rev_ms;
	/* seek curve */
	double seek_a, seek_b, seek_knee_cyl, seek_lin_c, seek_lin_e;
	/* image tracks */
	size_t ntracks;
	uint64_t *track_start; /* ntracks + 1 entries */
	double *track_cyl;
	double *track_rate; /* bytes per ms */
	double *track_skew; /* [0, 1) */
	double phase0;      /* platter angle at t = 0, [0, 1) */
	/* head and read-ahead */
	bool streaming;
	uint64_t stream_start; /* address under the head at stream_t0 */
	double stream_t0;
	uint64_t stream_limit; /* read-ahead stops here */
	double stream_rate;
	uint64_t head_addr; /* when not streaming */
	struct rd_segment *segs;
	int active_seg; /* the segment being filled, or -1 */
	int next_victim;
	double busy_until;
};

/* Check the parameters and build the geometry.  Returns 0, or -1 with a
 * one-line reason in ERR. */
int rd_model_init(struct rd_model *m, const struct rd_params *p, char *err, size_t errlen);
void rd_model_free(struct rd_model *m);

/* Seek time (ms) over D cylinders. */
double rd_seek_ms(const struct rd_model *m, double d);

/* Media rate (MB/s) at ADDR. */
double rd_rate_mb_s(const struct rd_model *m, uint64_t addr);

/* The positioning time (ms) request R would need if started at T. */
double rd_positioning_ms(const struct rd_model *m, const struct rd_req *r, double t);

/* Index, in PENDING[0..N) (oldest first, all arrived by T), of the request to
 * serve at T; marks the older ones it passes over. */
size_t rd_model_pick(struct rd_model *m, struct rd_req **pending, size_t n, double t);

/* Serve R starting at T (>= its arrival): sets its timing fields and moves
 * the head.  Returns R->done_ms. */
double rd_model_service(struct rd_model *m, struct rd_req *r, double t);

#endif /* RD_MODEL_H */
