/* What the parts of the FUSE front end share (serve.c: set-up, the receive loop
 * and teardown; ops.c: the FUSE operations; image.c: the image and its map of
 * chunks; queue.c: the request queue and the dispatcher thread; state.c: the
 * state file). */
#ifndef RD_SERVER_H
#define RD_SERVER_H

#define FUSE_USE_VERSION 34

#include "model.h"
#include "options.h"

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define ROOT_INO 1
#define FILE_INO 2
#define LATE_BIN_US 10
#define CHUNK_SHIFT 20   /* the chunks of struct server's map: 1 MiB */
#define LATE_BINS 200000 /* 10 us bins up to 2 s; beyond, the last bin */

struct sreq {
	struct rd_req r;
	fuse_req_t freq; /* NULL for the destage of an acknowledged write */
};

struct server {
	const struct rd_config *c;
	struct rd_model m;
	unsigned char *image;
	/* One bit per CHUNK_BYTES of the image: it may hold data (written since the start, or
	 * data in the --load file).  SEEK_DATA and SEEK_HOLE answer from it, so a copy of the
	 * image reads only these chunks. */
	uint64_t *chunks;
	struct fuse_session *se;
	pthread_t dispatcher;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct sreq **pending; /* oldest first */
	size_t npend, cap;
	bool stop;
	uint64_t dirty;
	double t0_mono_s;
	double start_epoch_s;
	/* counters, under mu */
	uint64_t reads, writes, bytes_read, bytes_written, seeks, hits, streamed, acked;
	uint64_t errors;
	double busy_ms;
	uint64_t *late_hist;
	uint64_t late_n;
	double late_max_ms;
	int rt_priority; /* in effect: 0 normal scheduling */
	bool untimed;    /* --untimed-start, until SIGUSR2 */
	uint64_t untimed_requests, untimed_bytes;
	char rt_error[128]; /* why the requested priority was refused */
};

/* Milliseconds on the virtual clock (CLOCK_MONOTONIC since start). */
double now_ms(const struct server *s);
/* Queue Q for the dispatcher; -1 when stopping or out of memory. */
int enqueue(struct server *s, struct sreq *q);
/* The dispatcher thread: serves the queued requests in the model's order. */
void *dispatch(void *arg);
/* Write the state file (atomically: a temporary file renamed). */
void write_state(struct server *s, const char *status, int argc, char *argv[]);

/* The FUSE operations (ops.c). */
extern const struct fuse_lowlevel_ops rd_ops;
/* The number of chunks of the image (image.c). */
uint64_t nchunks(const struct server *s);
/* Whether chunk I may hold data (every chunk, without a map). */
bool chunk_marked(const struct server *s, uint64_t i);
/* Mark the chunks a write of BUF at OFF puts non-zero bytes in. */
void mark_written(struct server *s, const char *buf, uint64_t off, uint64_t len);
/* The --load file PATH of SIZE bytes mapped copy-on-write, its data chunks
 * marked; NULL on error (said). */
unsigned char *map_image(struct server *s, uint64_t size, const char *path);

#endif /* RD_SERVER_H */
