/* What the two files of libcorun_cosched.so share (cosched_lib.c: the environment, the
 * node's segment and the waiting loop; cosched_calls.c: the MPI calls that wait in it). Every
 * name here is hidden: the library is preloaded into programs whose own names it must not
 * take. */
#ifndef COSCHED_LIB_H
#define COSCHED_LIB_H

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

#include "cosched_shm.h"

#define LIB "libcorun_cosched"

#pragma GCC visibility push(hidden)

struct cs_lib {
	enum cs_wait wait, send;
	uint64_t spin_ns, block_min_ns, block_max_ns;
	bool coll_native;
	int orig_policy; /* restored by the rank itself when a boost's wait ends */
	struct cs_slot *s;
	struct cs_shm *shm;
	struct cs_slot private_slot;
	bool ready;
};
extern struct cs_lib G;

/* After MPI_Init: the environment read and checked, the rank's slot claimed. */
void setup(void);

typedef int (*test_fn)(void *ctx, int *flag);
/* Waits until TEST says done, the way MODE says; NREQ requests complete. */
int cs_wait(test_fn test, void *ctx, int nreq, enum cs_wait mode, bool coll);
int wait_req(MPI_Request *req, MPI_Status *st, enum cs_wait mode, bool coll);

struct one {
	MPI_Request *req;
	MPI_Status *st;
};
int test_one(void *ctx, int *flag);

struct all {
	int n;
	MPI_Request *reqs;
	MPI_Status *sts;
};
int test_all(void *ctx, int *flag);

struct any {
	int n;
	MPI_Request *reqs;
	int *index;
	MPI_Status *st;
};
int test_any(void *ctx, int *flag);

struct some {
	int n;
	MPI_Request *reqs;
	int *outcount;
	int *indices;
	MPI_Status *sts;
};
int test_some(void *ctx, int *flag);

#pragma GCC visibility pop

#endif /* COSCHED_LIB_H */
