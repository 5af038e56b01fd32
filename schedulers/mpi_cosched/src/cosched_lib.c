/* libcorun_cosched.so: the message waiting action of the MPI coscheduling
 * schemes of paper 001, as a PMPI interposition library preloaded into every
 * MPI rank (LD_PRELOAD).
 *
 * The blocking calls NPB uses (MPI_Recv, MPI_Send, MPI_Sendrecv, MPI_Wait,
 * MPI_Waitall, MPI_Waitany, MPI_Waitsome and the collectives MPI_Barrier,
 * MPI_Bcast, MPI_Reduce, MPI_Allreduce, MPI_Alltoall, MPI_Alltoallv) are
 * turned into their nonblocking form and a waiting loop of our own:
 *   spin       test again and again (each test runs Open MPI's progress);
 *   block      test, then sleep on a futex word in shared memory until the
 *              node daemon wakes the rank (it saw data arrive on one of the
 *              rank's sockets) or a backoff timeout passes (the progress of
 *              sends and the absence of a daemon); test again;
 *   spinblock  spin for CORUN_COSCHED_SPIN_US, then block.
 * Both MPI_X and PMPI_X are defined, so Open MPI's Fortran bindings (which
 * call PMPI_X) are waited on the same way; the real calls are reached
 * through dlsym(RTLD_NEXT).
 *
 * Each rank publishes its state (waiting since, blocked, in a collective) and
 * counters in a slot of the node's shared-memory segment (cosched_shm.h).
 * When a wait completes while the daemon has boosted the rank (SCHED_FIFO),
 * the rank returns its main thread to its own policy at once.
 *
 * Environment (all optional):
 *   CORUN_COSCHED_WAIT        spin | block | spinblock (default spin)
 *   CORUN_COSCHED_SEND_WAIT   spin | block (default spin): MPI_Send
 *   CORUN_COSCHED_SPIN_US     spin time before blocking, us (default 150)
 *   CORUN_COSCHED_BLOCK_MIN_US, CORUN_COSCHED_BLOCK_MAX_US
 *                             the futex timeout starts at MIN and doubles up
 *                             to MAX while nothing completes (default 50, 1000)
 *   CORUN_COSCHED_COLL        nonblocking (default): collectives wait in our
 *                             loop; native: Open MPI's own blocking collective,
 *                             only flagged as "in collective"
 *   CORUN_COSCHED_SHM         the segment's name (default: none, a private slot)
 *   CORUN_COSCHED_JOB         the job's id (default CORUN_JOB_ID, else "-")
 * A bad value stops the rank at MPI_Init with one line on stderr and exit 2.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cosched_shm.h"

#define LIB "libcorun_cosched"

static struct {
	enum cs_wait wait, send;
	uint64_t spin_ns, block_min_ns, block_max_ns;
	bool coll_native;
	int orig_policy; /* restored by the rank itself when a boost's wait ends */
	struct cs_slot *s;
	struct cs_shm *shm;
	struct cs_slot private_slot;
	bool ready;
} G = { .wait = CS_SPIN,
	.send = CS_SPIN,
	.spin_ns = 150000,
	.block_min_ns = 50000,
	.block_max_ns = 1000000,
	.s = NULL };

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die_usage(const char *var, const char *val, const char *expected)
{
	fprintf(stderr, LIB ": %s: '%s' (expected %s)\n", var, val, expected);
	fflush(stderr);
	_exit(2);
}

static uint64_t env_us(const char *var, uint64_t def, uint64_t min, uint64_t max)
{
	const char *v = getenv(var);
	if (!v)
		return def * 1000u;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (!*v || *v == '-' || *end || errno || x < min || x > max) {
		char exp[96];
		snprintf(exp, sizeof exp, "an integer from %llu to %llu, microseconds",
			 (unsigned long long)min, (unsigned long long)max);
		die_usage(var, v, exp);
	}
	return (uint64_t)x * 1000u;
}

static enum cs_wait env_mode(const char *var, enum cs_wait def, bool allow_spinblock)
{
	const char *v = getenv(var);
	if (!v)
		return def;
	if (!strcmp(v, "spin"))
		return CS_SPIN;
	if (!strcmp(v, "block"))
		return CS_BLOCK;
	if (allow_spinblock && !strcmp(v, "spinblock"))
		return CS_SPINBLOCK;
	die_usage(var, v, allow_spinblock ? "spin, block or spinblock" : "spin or block");
	return def;
}

static unsigned long long self_starttime(void)
{
	char buf[1024];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	p += 2; /* field 3 */
	for (int field = 3; field < 22 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	return p ? strtoull(p, NULL, 10) : 0;
}

static struct cs_shm *attach(const char *name)
{
	int fd = shm_open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	struct stat st;
	if (fstat(fd, &st) < 0 || ((size_t)st.st_size < sizeof(struct cs_shm) &&
				   ftruncate(fd, (off_t)sizeof(struct cs_shm)) < 0)) {
		close(fd);
		return NULL;
	}
	void *p = mmap(NULL, sizeof(struct cs_shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return NULL;
	struct cs_shm *shm = p;
	uint32_t zero = 0;
	if (atomic_load(&shm->magic) == 0) { /* every initialiser writes the same values */
		shm->version = CS_VERSION;
		shm->nslots = CS_SLOTS;
		shm->slot_size = (uint32_t)sizeof(struct cs_slot);
		atomic_compare_exchange_strong(&shm->magic, &zero, CS_MAGIC);
	}
	if (atomic_load(&shm->magic) != CS_MAGIC || shm->version != CS_VERSION ||
	    shm->slot_size != sizeof(struct cs_slot)) {
		munmap(p, sizeof(struct cs_shm));
		return NULL;
	}
	return shm;
}

/* A free slot, or one left by a finished rank that has exited. */
static struct cs_slot *claim(struct cs_shm *shm, int32_t me)
{
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < CS_SLOTS; i++) {
			struct cs_slot *s = &shm->slot[i];
			int32_t cur = atomic_load(&s->pid);
			if (pass == 0 && cur != 0)
				continue;
			if (pass == 1 && (cur == 0 || kill(cur, 0) == 0 || errno != ESRCH))
				continue;
			if (atomic_compare_exchange_strong(&s->pid, &cur, me))
				return s;
		}
	}
	return NULL;
}

static void setup(void)
{
	G.wait = env_mode("CORUN_COSCHED_WAIT", CS_SPIN, true);
	G.send = env_mode("CORUN_COSCHED_SEND_WAIT", CS_SPIN, false);
	G.spin_ns = env_us("CORUN_COSCHED_SPIN_US", 150, 0, 1000000);
	G.block_min_ns = env_us("CORUN_COSCHED_BLOCK_MIN_US", 50, 1, 1000000);
	G.block_max_ns = env_us("CORUN_COSCHED_BLOCK_MAX_US", 1000, 1, 1000000);
	if (G.block_max_ns < G.block_min_ns) {
		char v[32];
		snprintf(v, sizeof v, "%llu", (unsigned long long)(G.block_max_ns / 1000));
		die_usage("CORUN_COSCHED_BLOCK_MAX_US", v, "a value >= CORUN_COSCHED_BLOCK_MIN_US");
	}
	const char *coll = getenv("CORUN_COSCHED_COLL");
	if (coll && strcmp(coll, "nonblocking") && strcmp(coll, "native"))
		die_usage("CORUN_COSCHED_COLL", coll, "nonblocking or native");
	G.coll_native = coll && !strcmp(coll, "native");
	const char *name = getenv("CORUN_COSCHED_SHM");
	if (name && (name[0] != '/' || strchr(name + 1, '/') || strlen(name) > NAME_MAX - 1))
		die_usage("CORUN_COSCHED_SHM", name,
			  "a shared-memory name such as /corun-cosched-0");
	struct cs_slot *s = NULL;
	if (name) {
		G.shm = attach(name);
		if (G.shm)
			s = claim(G.shm, (int32_t)getpid());
		if (!s)
			fprintf(stderr,
				LIB ": CORUN_COSCHED_SHM: '%s': no slot (segment unusable "
				    "or all %d slots taken); this rank is not published\n",
				name, CS_SLOTS);
	}
	if (!s) {
		s = &G.private_slot;
		atomic_store(&s->pid, (int32_t)getpid());
	}
	int rank = 0;
	PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
	const char *job = getenv("CORUN_COSCHED_JOB");
	if (!job)
		job = getenv("CORUN_JOB_ID");
	if (!job)
		job = "-";
	s->rank = rank;
	s->starttime = self_starttime();
	snprintf(s->job, sizeof s->job, "%s", job);
	s->wait_mode = (uint32_t)G.wait;
	s->send_mode = (uint32_t)G.send;
	atomic_store(&s->state, 0);
	atomic_store(&s->wait_since_ns, 0);
	atomic_store(&s->arrival_ns, 0);
	atomic_store(&s->waits, 0);
	atomic_store(&s->msgs, 0);
	atomic_store(&s->wait_ns, 0);
	atomic_store(&s->md_ns, 0);
	atomic_store(&s->arr_md_n, 0);
	atomic_store(&s->arr_md_ns, 0);
	atomic_store(&s->blocks, 0);
	atomic_store(&s->block_ns, 0);
	atomic_store(&s->coll_calls, 0);
	atomic_store(&s->arrivals, 0);
	atomic_store(&s->wakeups, 0);
	atomic_store(&s->boosts, 0);
	atomic_store(&s->boost_prio, 0);
	G.orig_policy = sched_getscheduler(getpid());
	G.s = s;
	G.ready = true;
}

/* ------------------------------------------------------------------ the wait loop */

typedef int (*test_fn)(void *ctx, int *flag);

static void futex_sleep(_Atomic uint32_t *word, uint32_t seen, uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u),
			       .tv_nsec = (long)(ns % 1000000000u) };
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, seen, &ts, NULL, 0);
}

/* A boost ends with the wait it was given for: the rank lowers its main
 * thread back itself (lowering needs no privilege), at once, as the paper's
 * boosted goodness() is used up by running. The daemon sees boost_prio 0. */
static void end_boost(struct cs_slot *s)
{
	if (atomic_load(&s->boost_prio) == 0 || atomic_exchange(&s->boost_prio, 0) == 0)
		return;
	if (G.orig_policy == SCHED_OTHER || G.orig_policy == SCHED_BATCH ||
	    G.orig_policy == SCHED_IDLE) {
		struct sched_param sp = { .sched_priority = 0 };
		(void)sched_setscheduler(getpid(), G.orig_policy, &sp);
	}
}

static void consumed(struct cs_slot *s, uint64_t t0, uint64_t t1, int nreq)
{
	uint64_t n = nreq > 0 ? (uint64_t)nreq : 0;
	atomic_fetch_add(&s->waits, 1);
	atomic_fetch_add(&s->msgs, n);
	atomic_fetch_add(&s->wait_ns, t1 - t0);
	atomic_fetch_add(&s->md_ns, (t1 - t0) * n);
	uint64_t arr = atomic_exchange(&s->arrival_ns, 0);
	if (arr && arr <= t1) {
		atomic_fetch_add(&s->arr_md_n, 1);
		atomic_fetch_add(&s->arr_md_ns, t1 - arr);
	}
	end_boost(s);
}

/* Waits until TEST says done, the way MODE says; NREQ requests complete. */
static int cs_wait(test_fn test, void *ctx, int nreq, enum cs_wait mode, bool coll)
{
	struct cs_slot *s = G.s;
	int flag = 0;
	uint64_t t0 = now_ns();
	int rc = test(ctx, &flag);
	if (rc != MPI_SUCCESS || flag) {
		consumed(s, t0, t0, nreq);
		return rc;
	}
	atomic_store(&s->wait_since_ns, t0);
	atomic_fetch_or(&s->state, CS_ST_WAITING | (coll ? CS_ST_IN_COLL : 0u));
	uint64_t spin_until = mode == CS_SPIN        ? UINT64_MAX
			      : mode == CS_SPINBLOCK ? t0 + G.spin_ns
						     : t0;
	uint64_t backoff = G.block_min_ns;
	for (;;) {
		uint64_t t = now_ns();
		if (t < spin_until) {
			rc = test(ctx, &flag);
			/* a spinning rank bounds its own boost: the daemon may not get the
			 * CPU to end it while boosted ranks spin on every CPU */
			if (atomic_load(&s->boost_prio) &&
			    t - atomic_load(&s->boost_since_ns) > atomic_load(&s->boost_max_ns))
				end_boost(s);
		} else {
			uint32_t seen = atomic_load(&s->wake);
			rc = test(ctx, &flag);
			if (rc == MPI_SUCCESS && !flag) {
				atomic_fetch_or(&s->state, CS_ST_BLOCKED);
				futex_sleep(&s->wake, seen, backoff);
				atomic_fetch_and(&s->state, ~CS_ST_BLOCKED);
				uint64_t t2 = now_ns();
				atomic_fetch_add(&s->blocks, 1);
				atomic_fetch_add(&s->block_ns, t2 - t);
				/* woken by the daemon: a message is here, start short again */
				if (atomic_load(&s->wake) != seen)
					backoff = G.block_min_ns;
				else if (backoff < G.block_max_ns)
					backoff = backoff * 2 > G.block_max_ns ? G.block_max_ns
									       : backoff * 2;
				continue;
			}
		}
		if (rc != MPI_SUCCESS || flag)
			break;
	}
	uint64_t t1 = now_ns();
	atomic_fetch_and(&s->state, ~(CS_ST_WAITING | CS_ST_IN_COLL));
	atomic_store(&s->wait_since_ns, 0);
	consumed(s, t0, t1, nreq);
	return rc;
}

struct one {
	MPI_Request *req;
	MPI_Status *st;
};
static int test_one(void *ctx, int *flag)
{
	struct one *o = ctx;
	return PMPI_Test(o->req, flag, o->st);
}

struct all {
	int n;
	MPI_Request *reqs;
	MPI_Status *sts;
};
static int test_all(void *ctx, int *flag)
{
	struct all *a = ctx;
	return PMPI_Testall(a->n, a->reqs, flag, a->sts);
}

struct any {
	int n;
	MPI_Request *reqs;
	int *index;
	MPI_Status *st;
};
static int test_any(void *ctx, int *flag)
{
	struct any *a = ctx;
	return PMPI_Testany(a->n, a->reqs, a->index, flag, a->st);
}

struct some {
	int n;
	MPI_Request *reqs;
	int *outcount;
	int *indices;
	MPI_Status *sts;
};
static int test_some(void *ctx, int *flag)
{
	struct some *a = ctx;
	int rc = PMPI_Testsome(a->n, a->reqs, a->outcount, a->indices, a->sts);
	*flag = *a->outcount != 0; /* MPI_UNDEFINED (no active request) also ends the wait */
	return rc;
}

static int wait_req(MPI_Request *req, MPI_Status *st, enum cs_wait mode, bool coll)
{
	struct one o = { req, st };
	return cs_wait(test_one, &o, 1, mode, coll);
}

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
