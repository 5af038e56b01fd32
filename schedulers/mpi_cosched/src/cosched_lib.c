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
 * Environment, as the node daemon writes it in rank_env.json from the
 * variant's parameters (the manifest holds their defaults; none is assumed
 * here, so each of the first six is required):
 *   CORUN_COSCHED_WAIT        spin | block | spinblock
 *   CORUN_COSCHED_SEND_WAIT   spin | block: MPI_Send
 *   CORUN_COSCHED_SPIN_US     spin time before blocking, us (0 to 1000000)
 *   CORUN_COSCHED_BLOCK_MIN_US, CORUN_COSCHED_BLOCK_MAX_US
 *                             the futex timeout starts at MIN and doubles up
 *                             to MAX while nothing completes (1 and 50 to 1000000)
 *   CORUN_COSCHED_COLL        nonblocking: collectives wait in our loop;
 *                             native: Open MPI's own blocking collective, only
 *                             flagged as "in collective"
 *   CORUN_COSCHED_SHM         the segment's name (unset: a private slot, and
 *                             no daemon sees the rank)
 *   CORUN_COSCHED_JOB         the job's id (unset: CORUN_JOB_ID, else "-")
 * A missing or bad value stops the rank at MPI_Init with one line on stderr
 * and exit 2.
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

#include "cosched_lib.h"

struct cs_lib G = { .s = NULL };

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noreturn)) static void die(const char *var, const char *shown, const char *expected)
{
	fprintf(stderr, LIB ": %s: %s (expected %s)\n", var, shown, expected);
	fflush(stderr);
	_exit(2);
}

__attribute__((noreturn)) static void die_usage(const char *var, const char *val,
						const char *expected)
{
	char shown[160];
	snprintf(shown, sizeof shown, "'%s'", val);
	die(var, shown, expected);
}

/* The value of VAR, which the daemon's rank_env.json sets. */
static const char *env_required(const char *var, const char *expected)
{
	const char *v = getenv(var);
	if (!v)
		die(var, "missing", expected);
	return v;
}

static uint64_t env_us(const char *var, uint64_t min, uint64_t max)
{
	char exp[96];
	snprintf(exp, sizeof exp, "an integer from %llu to %llu, microseconds",
		 (unsigned long long)min, (unsigned long long)max);
	const char *v = env_required(var, exp);
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (!*v || *v == '-' || *end || errno || x < min || x > max)
		die_usage(var, v, exp);
	return (uint64_t)x * 1000u;
}

static enum cs_wait env_mode(const char *var, bool allow_spinblock)
{
	const char *expected = allow_spinblock ? "spin, block or spinblock" : "spin or block";
	const char *v = env_required(var, expected);
	if (!strcmp(v, "spin"))
		return CS_SPIN;
	if (!strcmp(v, "block"))
		return CS_BLOCK;
	if (allow_spinblock && !strcmp(v, "spinblock"))
		return CS_SPINBLOCK;
	die_usage(var, v, expected);
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

/* A free slot, or one left by a finished rank that has exited, claimed as -ME: the daemon
 * follows a slot only once its pid is positive, which setup() stores after every field is
 * written (publish), so it never reads a half-filled slot or the previous rank's fields. */
static struct cs_slot *claim(struct cs_shm *shm, int32_t me)
{
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < CS_SLOTS; i++) {
			struct cs_slot *s = &shm->slot[i];
			int32_t cur = atomic_load(&s->pid);
			int32_t owner = cur < 0 ? -cur : cur; /* negative: being filled */
			if (pass == 0 && cur != 0)
				continue;
			if (pass == 1 && (cur == 0 || kill(owner, 0) == 0 || errno != ESRCH))
				continue;
			if (atomic_compare_exchange_strong(&s->pid, &cur, -me))
				return s;
		}
	}
	return NULL;
}

void setup(void)
{
	G.wait = env_mode("CORUN_COSCHED_WAIT", true);
	G.send = env_mode("CORUN_COSCHED_SEND_WAIT", false);
	G.spin_ns = env_us("CORUN_COSCHED_SPIN_US", 0, 1000000);
	G.block_min_ns = env_us("CORUN_COSCHED_BLOCK_MIN_US", 1, 1000000);
	G.block_max_ns = env_us("CORUN_COSCHED_BLOCK_MAX_US", 50, 1000000);
	if (G.block_max_ns < G.block_min_ns) {
		char v[32];
		snprintf(v, sizeof v, "%llu", (unsigned long long)(G.block_max_ns / 1000));
		die_usage("CORUN_COSCHED_BLOCK_MAX_US", v, "a value >= CORUN_COSCHED_BLOCK_MIN_US");
	}
	const char *coll = env_required("CORUN_COSCHED_COLL", "nonblocking or native");
	if (strcmp(coll, "nonblocking") && strcmp(coll, "native"))
		die_usage("CORUN_COSCHED_COLL", coll, "nonblocking or native");
	G.coll_native = !strcmp(coll, "native");
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
	/* publish: the daemon reads the fields above only after it sees this pid (seq_cst) */
	atomic_store(&s->pid, (int32_t)getpid());
	G.orig_policy = sched_getscheduler(getpid());
	G.s = s;
	G.ready = true;
}

/* ------------------------------------------------------------------ the wait loop */

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

int cs_wait(test_fn test, void *ctx, int nreq, enum cs_wait mode, bool coll)
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

int test_one(void *ctx, int *flag)
{
	struct one *o = ctx;
	return PMPI_Test(o->req, flag, o->st);
}

int test_all(void *ctx, int *flag)
{
	struct all *a = ctx;
	return PMPI_Testall(a->n, a->reqs, flag, a->sts);
}

int test_any(void *ctx, int *flag)
{
	struct any *a = ctx;
	return PMPI_Testany(a->n, a->reqs, a->index, flag, a->st);
}

int test_some(void *ctx, int *flag)
{
	struct some *a = ctx;
	int rc = PMPI_Testsome(a->n, a->reqs, a->outcount, a->indices, a->sts);
	*flag = *a->outcount != 0; /* MPI_UNDEFINED (no active request) also ends the wait */
	return rc;
}

int wait_req(MPI_Request *req, MPI_Status *st, enum cs_wait mode, bool coll)
{
	struct one o = { req, st };
	return cs_wait(test_one, &o, 1, mode, coll);
}
