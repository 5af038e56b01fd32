/* The MPI calls libcorun_cosched.so waits in (cosched_lib.c says how): blocking calls become
 * their nonblocking form and the scheme's waiting loop; both MPI_X and PMPI_X are defined, so
 * Open MPI's Fortran bindings (which call PMPI_X) wait the same way; the real calls are reached
 * through dlsym(RTLD_NEXT). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

#include "cosched_lib.h"

/* ------------------------------------------------------------------ the real calls */

#define REAL(fn, ...)                                                     \
	static int (*real_##fn)(__VA_ARGS__);                             \
	static int call_##fn##_lookup(void)                               \
	{                                                                 \
		if (!real_##fn)                                           \
			*(void **)&real_##fn = dlsym(RTLD_NEXT, "P" #fn); \
		return real_##fn ? 0 : -1;                                \
	}

REAL(MPI_Init, int *, char ***)
REAL(MPI_Init_thread, int *, char ***, int, int *)
REAL(MPI_Finalize, void)
REAL(MPI_Barrier, MPI_Comm)
REAL(MPI_Bcast, void *, int, MPI_Datatype, int, MPI_Comm)
REAL(MPI_Reduce, const void *, void *, int, MPI_Datatype, MPI_Op, int, MPI_Comm)
REAL(MPI_Allreduce, const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm)
REAL(MPI_Alltoall, const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm)
REAL(MPI_Alltoallv, const void *, const int *, const int *, MPI_Datatype, void *, const int *,
     const int *, MPI_Datatype, MPI_Comm)

#define NEED(fn)                                                                      \
	do {                                                                          \
		if (call_##fn##_lookup() < 0) {                                       \
			fprintf(stderr, LIB ": P" #fn " not found: %s\n", dlerror()); \
			_exit(1);                                                     \
		}                                                                     \
	} while (0)

/* ------------------------------------------------------------------ init, finalize */

int MPI_Init(int *argc, char ***argv)
{
	NEED(MPI_Init);
	int rc = real_MPI_Init(argc, argv);
	if (rc == MPI_SUCCESS)
		setup();
	return rc;
}
int PMPI_Init(int *argc, char ***argv) __attribute__((alias("MPI_Init")));

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	NEED(MPI_Init_thread);
	int rc = real_MPI_Init_thread(argc, argv, required, provided);
	if (rc == MPI_SUCCESS)
		setup();
	return rc;
}
int PMPI_Init_thread(int *argc, char ***argv, int required, int *provided)
	__attribute__((alias("MPI_Init_thread")));

int MPI_Finalize(void)
{
	NEED(MPI_Finalize);
	if (G.ready)
		atomic_fetch_or(&G.s->state, CS_ST_FINAL); /* the daemon frees the slot at exit */
	return real_MPI_Finalize();
}
int PMPI_Finalize(void) __attribute__((alias("MPI_Finalize")));

/* Before MPI_Init (or with an unusable library state) calls pass through
 * unchanged: blocking point-to-point calls fall back to their nonblocking
 * form with a spin, which is what Open MPI itself does. */
static void ensure(void)
{
	if (!G.ready) {
		G.s = &G.private_slot;
		G.ready = true;
	}
}

/* ------------------------------------------------------------------ point to point */

int MPI_Recv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
	     MPI_Status *status)
{
	ensure();
	MPI_Request req;
	int rc = PMPI_Irecv(buf, count, dt, src, tag, comm, &req);
	if (rc != MPI_SUCCESS)
		return rc;
	return wait_req(&req, status, G.wait, false);
}
int PMPI_Recv(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *)
	__attribute__((alias("MPI_Recv")));

int MPI_Send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
	ensure();
	MPI_Request req;
	int rc = PMPI_Isend(buf, count, dt, dest, tag, comm, &req);
	if (rc != MPI_SUCCESS)
		return rc;
	struct one o = { &req, MPI_STATUS_IGNORE };
	int flag = 0;
	/* a send that completes at once (eager) is not a wait */
	rc = PMPI_Test(&req, &flag, MPI_STATUS_IGNORE);
	if (rc != MPI_SUCCESS || flag)
		return rc;
	return cs_wait(test_one, &o, 0, G.send, false);
}
int PMPI_Send(const void *, int, MPI_Datatype, int, int, MPI_Comm)
	__attribute__((alias("MPI_Send")));

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype sdt, int dest, int stag, void *rbuf,
		 int rcount, MPI_Datatype rdt, int src, int rtag, MPI_Comm comm, MPI_Status *status)
{
	ensure();
	MPI_Request reqs[2];
	MPI_Status sts[2];
	int rc = PMPI_Irecv(rbuf, rcount, rdt, src, rtag, comm, &reqs[0]);
	if (rc != MPI_SUCCESS)
		return rc;
	rc = PMPI_Isend(sbuf, scount, sdt, dest, stag, comm, &reqs[1]);
	if (rc != MPI_SUCCESS)
		return rc;
	struct all a = { 2, reqs, sts };
	rc = cs_wait(test_all, &a, 1, G.wait, false);
	if (status != MPI_STATUS_IGNORE)
		*status = sts[0];
	return rc;
}
int PMPI_Sendrecv(const void *, int, MPI_Datatype, int, int, void *, int, MPI_Datatype, int, int,
		  MPI_Comm, MPI_Status *) __attribute__((alias("MPI_Sendrecv")));

int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
	ensure();
	return wait_req(req, status, G.wait, false);
}
int PMPI_Wait(MPI_Request *, MPI_Status *) __attribute__((alias("MPI_Wait")));

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status sts[])
{
	ensure();
	struct all a = { n, reqs, sts };
	return cs_wait(test_all, &a, n, G.wait, false);
}
int PMPI_Waitall(int, MPI_Request[], MPI_Status[]) __attribute__((alias("MPI_Waitall")));

int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status)
{
	ensure();
	struct any a = { n, reqs, index, status };
	return cs_wait(test_any, &a, 1, G.wait, false);
}
int PMPI_Waitany(int, MPI_Request[], int *, MPI_Status *) __attribute__((alias("MPI_Waitany")));

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status sts[])
{
	ensure();
	struct some a = { n, reqs, outcount, indices, sts };
	return cs_wait(test_some, &a, 1, G.wait, false);
}
int PMPI_Waitsome(int, MPI_Request[], int *, int[], MPI_Status[])
	__attribute__((alias("MPI_Waitsome")));

/* ------------------------------------------------------------------ collectives */

/* Intercommunicators and CORUN_COSCHED_COLL=native take the real blocking
 * collective, flagged as "in collective" for the daemon (HYBRID). */
static bool native(MPI_Comm comm)
{
	int inter = 0;
	if (G.coll_native)
		return true;
	PMPI_Comm_test_inter(comm, &inter);
	return inter != 0;
}

#define COLL_BEGIN()                           \
	ensure();                              \
	atomic_fetch_add(&G.s->coll_calls, 1); \
	MPI_Request req;                       \
	int rc

#define COLL_NATIVE(call)                                      \
	do {                                                   \
		atomic_fetch_or(&G.s->state, CS_ST_IN_COLL);   \
		rc = call;                                     \
		atomic_fetch_and(&G.s->state, ~CS_ST_IN_COLL); \
		return rc;                                     \
	} while (0)

#define COLL_WAIT()            \
	if (rc != MPI_SUCCESS) \
		return rc;     \
	return wait_req(&req, MPI_STATUS_IGNORE, G.wait, true)

int MPI_Barrier(MPI_Comm comm)
{
	COLL_BEGIN();
	if (native(comm)) {
		NEED(MPI_Barrier);
		COLL_NATIVE(real_MPI_Barrier(comm));
	}
	rc = PMPI_Ibarrier(comm, &req);
	COLL_WAIT();
}
int PMPI_Barrier(MPI_Comm) __attribute__((alias("MPI_Barrier")));

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
	COLL_BEGIN();
	if (native(comm)) {
		NEED(MPI_Bcast);
		COLL_NATIVE(real_MPI_Bcast(buf, count, dt, root, comm));
	}
	rc = PMPI_Ibcast(buf, count, dt, root, comm, &req);
	COLL_WAIT();
}
int PMPI_Bcast(void *, int, MPI_Datatype, int, MPI_Comm) __attribute__((alias("MPI_Bcast")));

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
	       MPI_Comm comm)
{
	COLL_BEGIN();
	if (native(comm)) {
		NEED(MPI_Reduce);
		COLL_NATIVE(real_MPI_Reduce(sbuf, rbuf, count, dt, op, root, comm));
	}
	rc = PMPI_Ireduce(sbuf, rbuf, count, dt, op, root, comm, &req);
	COLL_WAIT();
}
int PMPI_Reduce(const void *, void *, int, MPI_Datatype, MPI_Op, int, MPI_Comm)
	__attribute__((alias("MPI_Reduce")));

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
		  MPI_Comm comm)
{
	COLL_BEGIN();
	if (native(comm)) {
		NEED(MPI_Allreduce);
		COLL_NATIVE(real_MPI_Allreduce(sbuf, rbuf, count, dt, op, comm));
	}
	rc = PMPI_Iallreduce(sbuf, rbuf, count, dt, op, comm, &req);
	COLL_WAIT();
}
int PMPI_Allreduce(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm)
	__attribute__((alias("MPI_Allreduce")));

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
		 MPI_Datatype rdt, MPI_Comm comm)
{
	COLL_BEGIN();
	if (native(comm)) {
		NEED(MPI_Alltoall);
		COLL_NATIVE(real_MPI_Alltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm));
	}
	rc = PMPI_Ialltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm, &req);
	COLL_WAIT();
}
int PMPI_Alltoall(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm)
	__attribute__((alias("MPI_Alltoall")));

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype sdt,
		  void *rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rdt,
		  MPI_Comm comm)
{
	COLL_BEGIN();
	if (native(comm)) {
		NEED(MPI_Alltoallv);
		COLL_NATIVE(real_MPI_Alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls,
					       rdt, comm));
	}
	rc = PMPI_Ialltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm, &req);
	COLL_WAIT();
}
int PMPI_Alltoallv(const void *, const int[], const int[], MPI_Datatype, void *, const int[],
		   const int[], MPI_Datatype, MPI_Comm) __attribute__((alias("MPI_Alltoallv")));
