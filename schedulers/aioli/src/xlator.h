/* What the two files of the corun/aioli translator share (xlator.c: winding, the scheduling
 * thread, fops, init and fini; xlator_control.c: the status file, the control file and the
 * trace, called with the lock held). Hidden from the translator's exported names. */
#ifndef AIOLI_XLATOR_H
#define AIOLI_XLATOR_H

#include <glusterfs/defaults.h>
#include <glusterfs/iobuf.h>
#include <glusterfs/logging.h>
#include <glusterfs/stack.h>
#include <glusterfs/xlator.h>

#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "policy.h"

/* The layout GlusterFS was built with: lock-free atomics (no mutex inside gf_atomic_t). */
_Static_assert(sizeof(gf_atomic_t) == sizeof(int64_t),
	       "gf_atomic_t: build with HAVE_ATOMIC_BUILTINS");

#define CONTROL_CHECK_NS 100000000ull
#define STATUS_EVERY_NS 1000000000ull
#define PATH_LEN 1024

struct member {
	struct aioli_req req;
	call_frame_t *frame;
	fd_t *fd;
	size_t size;
	off_t offset;
	uint32_t flags;
	dict_t *xdata;
	struct iovec *vec;     /* writes: a copy of the fop's vector */
	struct member *failed; /* the list of members whose dispatch could not be allocated */
	int count;
	struct iobref *iobref;
};

struct agg {
	int op;
	size_t n;
	off_t offset;
	size_t size;
	struct iovec *vec;
	struct iobref *iobref;
	struct member *m[];
};

typedef struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	int started, stop;
	struct aioli_core *core;
	struct aioli_params defaults;
	char control_file[PATH_LEN], status_file[PATH_LEN];
	char trace[PATH_LEN], trace_record[PATH_LEN], trace_default[PATH_LEN],
		trace_record_default[PATH_LEN];
	char generation[128], control_error[PATH_LEN + 512], trace_error[PATH_LEN + 512];
	struct timespec control_mtime;
	int control_seen;
	uint64_t control_loads, control_checked_ns, status_written_ns, t0_ns;
	FILE *trace_fp;
} aioli_priv_t;

#pragma GCC visibility push(hidden)

uint64_t mono_ns(void);
void write_status(xlator_t *this, aioli_priv_t *priv);
void set_trace_record(xlator_t *this, aioli_priv_t *priv, const char *path);
void set_trace(aioli_priv_t *priv, const char *path);
void load_control(xlator_t *this, aioli_priv_t *priv);
void check_control(xlator_t *this, aioli_priv_t *priv);

#pragma GCC visibility pop

#endif /* AIOLI_XLATOR_H */
