/* The daemon's state and the functions its files share. Where things are:
 *   main.c     usage, options and their limits (--limits), main()
 *   daemon.c   set-up, the signalfd/timerfd loop, the one teardown
 *   quantum.c  one quantum: collect the I/O (Procedure 3), decide (decide.c), act, log
 *   jobs.c     the job table, filled from the runner's job event log
 *   hold.c     holding and releasing a job: SIGSTOP/SIGCONT or a cgroup v1 blkio limit
 *   proc.c     reading /proc: I/O counters, descendants, PSI
 *   log.c      the JSON output: notes in decisions.jsonl, status.json, summary.json
 *   decide.c   the decision-making module (Procedure 4), pure
 *   modes.c    --check, --decide-table, --bench-decide
 * What the daemon shares with corun's other daemons (process identity, signals, state files,
 * the heartbeat check, the option table) is in schedulers/lib (sched_daemon.h).
 */
#ifndef DIO_DAEMON_H
#define DIO_DAEMON_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "decide.h"
#include "modes.h"
#include "sched_daemon.h"

#define MAX_DESC 4096 /* descendants followed per job */

enum counter { C_STORAGE, C_READ, C_WRITE, C_RCHAR_WCHAR };
enum policy { P_SUSPEND, P_THROTTLE };

struct opts {
	const char *events, *state_dir, *psi_file, *cgroup, *device;
	double timeslice_s, bound_mbps, max_suspend_s;
	double psi_target, psi_decrease, psi_increase, bound_min, bound_max, floor_mbps;
	long keep_io_running, max_jobs;
	int counter, policy; /* enum counter, enum policy */
	bool descendants, cmp_share;
};

struct job {
	char id[128];
	struct sd_proc p; /* the leader: pid, start time, pidfd */
	int cmp;
	int io_fd;
	bool group; /* the job leads its own process group: signal the group */
	bool gone;
	unsigned long long last_bytes;
	bool have_last;
	double cur_mbps, key_mbps;
	enum dio_state state;
	double held_since, held_total, held_max, protect_until;
	unsigned holds;
	/* throttle */
	char cg[PATH_MAX];
	unsigned long long limit_bps;
};

struct done_job { /* kept for summary.json */
	char id[128];
	double held_total, held_max;
	unsigned holds;
	bool throttle;
};

struct daemon {
	struct opts o;
	struct job *jobs;
	size_t njobs;
	struct done_job *done;
	size_t ndone, cap_done;
	struct dio_job *table;
	struct dio_work work;
	int ev_fd;
	char evbuf[65536];
	size_t evlen;
	FILE *log;
	int psi_fd;
	unsigned long long psi_total_us;
	bool psi_have;
	double bound;
	double t_offset; /* run time base: t_s = mono - t_offset */
	bool have_offset;
	double start_mono, last_mono;
	unsigned long long q;
	unsigned long long n_hold, n_release, n_force, n_refused;
	double decide_sum_us, decide_max_us, collect_sum_us, collect_max_us;
	/* throttle: the parent's caps (0: none) and what is carved out of them */
	unsigned long long cap_read, cap_write, carved;
	const char *exit_reason;
};

/* The one daemon of this process. */
extern struct daemon D;

/* proc.c */
/* The live descendants of LEADER, breadth first, at most MAX_DESC, in a buffer that the
 * next call overwrites. */
const pid_t *job_descendants(pid_t leader, size_t *n);
/* The job's counter: its leader (which includes reaped children) plus, with
 * --descendants, every live descendant. Returns -1 when the leader is gone. */
int job_bytes(struct job *j, unsigned long long *bytes);
/* The 'some' total of the PSI file D.psi_fd, in microseconds. */
int psi_read(unsigned long long *total_us);

/* hold.c */
/* Signal the whole job (its process group when it leads one); -1 once it is gone. */
int signal_job(struct job *j, int sig);
/* The cap of the run's cgroup for D.o.device in blkio FILE (0: none). */
unsigned long long read_cap(const char *file);
/* Writes the parent's caps minus what throttled jobs carry. */
void cg_set_parent_caps(void);
int hold(struct job *j, double now, double limit_mbps);
void release(struct job *j, double now);

/* jobs.c */
/* Releases job I, keeps its totals for the summary, removes it from the table. */
void drop_job(size_t i, double now);
/* Reads the complete lines appended to the event log since the last call. */
int read_events(double now);

/* log.c */
void log_note(const char *what, const char *job_id, pid_t pid, const char *reason);
void write_status(double now);
void write_summary(void);

/* quantum.c */
int quantum(void);

/* daemon.c */
int run_daemon(void);

#endif /* DIO_DAEMON_H */
