/* The per-node shared-memory segment between the PMPI interposition library
 * (libcorun_cosched.so, preloaded into every MPI rank) and the node daemon
 * (corun-cosched).
 *
 * Each rank claims one slot at MPI_Init (compare-and-swap of pid from 0) and
 * publishes its waiting state and counters there; the daemon reads the slots,
 * stamps message arrivals it detects on the rank's sockets, wakes blocked
 * ranks through the futex word `wake`, and records its boosts. Every field
 * shared between processes is accessed with C11 atomics. A segment is
 * created zero-filled: a zero magic means "not initialised yet".
 *
 * Times are CLOCK_MONOTONIC nanoseconds, which every process on the node
 * shares.
 */
#ifndef COSCHED_SHM_H
#define COSCHED_SHM_H

#include <stdatomic.h>
#include <stdint.h>

#define CS_MAGIC 0x48435343u /* "CSCH" */
#define CS_VERSION 1u
#define CS_SLOTS 64
#define CS_JOBLEN 48

/* Waiting modes (the library's message waiting action). */
enum cs_wait { CS_SPIN = 0, CS_BLOCK = 1, CS_SPINBLOCK = 2 };

/* Bits of cs_slot.state. */
#define CS_ST_WAITING 1u /* inside a wrapped blocking call, not yet complete */
#define CS_ST_BLOCKED 2u /* sleeping on the futex word (block phase) */
#define CS_ST_IN_COLL 4u /* inside a wrapped collective */
#define CS_ST_FINAL 8u   /* MPI_Finalize passed: the slot is being released */

struct cs_slot {
	_Atomic int32_t pid; /* 0: free; -pid: being filled by that rank; pid: published */
	int32_t rank;
	uint64_t starttime; /* field 22 of /proc/<pid>/stat, against PID reuse */
	char job[CS_JOBLEN];
	uint32_t wait_mode, send_mode;
	_Atomic uint32_t wake;          /* futex word: the daemon increments it and wakes */
	_Atomic uint32_t state;         /* CS_ST_* */
	_Atomic uint64_t wait_since_ns; /* start of the current wait, 0 when none */
	_Atomic uint64_t arrival_ns;    /* daemon: first arrival not yet consumed, 0 none */
	/* counters written by the rank */
	_Atomic uint64_t waits;      /* completed blocking calls (consumption events) */
	_Atomic uint64_t msgs;       /* requests completed in them */
	_Atomic uint64_t wait_ns;    /* time spent inside them */
	_Atomic uint64_t md_ns;      /* sum over requests of (completion - wait start) */
	_Atomic uint64_t arr_md_n;   /* completions with an arrival stamped by the daemon */
	_Atomic uint64_t arr_md_ns;  /* sum of (completion - arrival stamp) */
	_Atomic uint64_t blocks;     /* futex sleeps */
	_Atomic uint64_t block_ns;   /* time asleep */
	_Atomic uint64_t coll_calls; /* wrapped collectives */
	/* counters written by the daemon */
	_Atomic uint64_t arrivals;   /* arrival events detected on the rank's sockets */
	_Atomic uint64_t wakeups;    /* futex wakes sent */
	_Atomic uint64_t boosts;     /* boosts given */
	_Atomic uint32_t boost_prio; /* current boost (SCHED_FIFO priority), 0 none */
	uint32_t pad;
	_Atomic uint64_t boost_since_ns; /* daemon: when the current boost began */
	_Atomic uint64_t boost_max_ns;   /* daemon: how long a boost may last */
};

struct cs_shm {
	_Atomic uint32_t magic;
	uint32_t version;
	uint32_t nslots;
	uint32_t slot_size;
	_Atomic int32_t daemon_pid; /* 0 when no daemon serves the segment */
	uint32_t pad;
	struct cs_slot slot[CS_SLOTS];
};

#endif /* COSCHED_SHM_H */
