/* corun-cosched's state and what its files share. Where things are:
 *   main.c     usage, the option table (--limits), main()
 *   daemon.c   set-up, the epoll loop, the one teardown; rank_env.json, status.json, summary.json
 *   ranks.c    the ranks: registration, sockets, boosts, stops, wake-ups and their release
 *   schemes.c  the tick and each scheme's handling action; ERL (eq. 1) and its exchange
 *   modes.c    --restore, --check, --dump-shm, --decide-table
 *   decide.c   the CC decision (eqs. 1-4), pure
 * What it shares with corun's other daemons (process identity, signals, the journal, state
 * files, the heartbeat check, the option table) is in schedulers/lib (sched_daemon.h).
 */
#ifndef COSCHED_H
#define COSCHED_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "corun_kernel.h"
#include "cosched_shm.h"
#include "decide.h"
#include "sched_daemon.h"

#define PROG "corun-cosched"
#define MAX_SOCK 64
#define MAX_PEND 32
#define MAX_NODES 256
#define MAX_DONE 4096
#define ERL_MAGIC 0x45524c31u /* "ERL1" */

enum scheme { S_LOCAL, S_BATCH, S_DCS, S_PB, S_IB, S_SB, S_HYBRID, S_CC_S, S_CC_B, S_GANG };
#define N_SCHEMES 10
extern const char *const SCHEMES[N_SCHEMES];
/* the waiting modes, in the order of enum cs_wait */
extern const char *const WAITS[3];

/* The options, all given on the command line (the manifest holds their defaults). */
struct opts {
	int scheme; /* enum scheme */
	const char *state_dir, *shm, *listen;
	long spin_us, block_min_us, block_max_us;
	long tick_us, pb_period_us, boost_max_us, erl_period_us, gang_slice_ms;
	int boost_prio, mpl, bcr_min, node_id;
	double cost_switch_us, enp_alpha;
	int reduce;        /* enum cc_wr_reduce */
	int coll;          /* 0 nonblocking, 1 native: the ranks' CORUN_COSCHED_COLL */
	double lifeline_s; /* > 0: stdin is the runner's lifeline (see daemon.c) */
};

struct pmsg {
	int node;
	double erl_us;
	uint64_t t_ns;
	uint64_t waits_at; /* the rank's completions when it arrived */
};
struct proc {
	bool used, refused;
	pid_t pid;
	unsigned long long starttime;
	int pidfd, sched_fd;
	char job[CS_JOBLEN];
	int rank;
	int orig_policy, orig_prio, orig_nice;
	bool touched; /* journalled */
	int prio;     /* current boost, 0 none */
	uint64_t boost_t0, boost_coll;
	bool stopped;
	int nsock;
	int sockfd[MAX_SOCK];
	unsigned long ino[MAX_SOCK];
	int sock_node[MAX_SOCK];
	uint64_t last_scan_ns;
	struct pmsg pend[MAX_PEND];
	int npend;
	unsigned long long cpu_ns, slices;
	bool have_sched;
};

struct done_rank {
	char job[CS_JOBLEN];
	int rank;
	pid_t pid;
	uint64_t waits, msgs, wait_ns, md_ns, arr_md_n, arr_md_ns, blocks, coll_calls, arrivals,
		wakeups, boosts;
};

struct peer {
	int node;
	struct sockaddr_in addr;
};

struct daemon {
	struct opts o;
	struct cs_shm *shm;
	struct proc p[CS_SLOTS];
	struct done_rank *done;
	size_t ndone;
	int ep, sfd, tfd, ufd;
	FILE *journal;
	struct peer peers[MAX_NODES];
	int npeers;
	double erl_node[MAX_NODES];
	bool erl_known[MAX_NODES];
	double erl_us, ed_us, enp;
	uint64_t start_ns, last_erl_ns, last_pb_ns, last_status_ns, ticks;
	int pb_next;
	int64_t gang_slot;
	uint64_t n_arrivals, n_wakeups, n_boosts, n_decisions, n_conflicts, n_reordered;
	uint64_t cs_total, cs_conflict, erl_sent, erl_recv, n_mismatch, n_late;
	double erl_sum;
	uint64_t erl_n;
	const char *exit_reason;
	uint64_t last_word_ns; /* the runner's last byte on stdin (--lifeline-s) */
	int daemon_prio;
	const char *daemon_policy;
};

/* The one daemon of this process. */
extern struct daemon D;

/* schemes.c */
const char *scheme_name(int scheme);
/* The waiting action of each scheme (the paper's Table 1): the receiver's and the sender's. */
enum cs_wait recv_wait(int scheme);
enum cs_wait send_wait(int scheme);
bool pending(struct proc *p);
void on_arrival(int i, int k, uint64_t now);
void update_erl(uint64_t now);
void recv_erl(void);
void tick(uint64_t now);

/* ranks.c */
bool alive(struct proc *p);
/* The rank ends a boost itself when its wait completes (cosched_lib.c). */
void sync_boost(struct proc *p);
void boost(struct proc *p, int prio, uint64_t now);
void unboost(struct proc *p);
void stop_proc(struct proc *p, bool stop);
void wake(struct proc *p);
/* Restore the rank, forget it; free its slot once the process has exited. */
void release(int i, bool free_slot);
void register_rank(int i, pid_t pid, uint64_t now);
/* New sockets of the rank (Open MPI's TCP connections are made lazily). */
void scan_socks(int i);

/* daemon.c */
void write_status(uint64_t now);
void json_counters(struct corun_json *j, const struct done_rank *d);
int run_daemon(void);

/* modes.c */
int run_restore(const char *dir);
int run_check(const char *dir, double max_age);
int run_dump(const char *name);
int run_table(const char *file);

#endif /* COSCHED_H */
