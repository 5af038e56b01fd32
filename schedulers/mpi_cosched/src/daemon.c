/* corun-cosched: the per-node daemon of the MPI coscheduling variants of
 * paper 001 (the message handling action), and gang scheduling.
 *
 * Ranks preloaded with libcorun_cosched.so publish their state in the node's
 * shared-memory segment (cosched_shm.h). Every tick the daemon registers new
 * ranks (pidfd + start time against PID reuse), takes a duplicate of each
 * rank's sockets (pidfd_getfd) into its epoll set, and so learns of every
 * message arrival on the node, as the paper's NIC firmware did. Then, by
 * scheme:
 *   local, batch  nothing (arrivals and conflicts are only counted)
 *   dcs           boost the destination on arrival
 *   pb            every --pb-period-us, boost one rank with pending messages,
 *                 round robin
 *   ib, sb        wake the blocked destination on arrival, and boost it
 *   hybrid        wake on arrival; boost a rank while it is in a collective
 *   cc_s          as pb, but the rank with the highest W_c + W_r (decide.c)
 *   cc_b          wake on arrival; on every decision with two or more ranks
 *                 with pending messages, order them by W_c + W_r through
 *                 distinct SCHED_FIFO priorities
 *   gang          synchronised time slices (CLOCK_REALTIME, the same on
 *                 every node): the ranks of one job run, the others are
 *                 stopped (SIGSTOP/SIGCONT)
 * A boost is SCHED_FIFO for the rank's main thread, at most --boost-max-us
 * and only while it has pending messages (hybrid: while in the collective);
 * the daemon itself runs at a higher SCHED_FIFO priority so it can always
 * take a boost back. Node daemons exchange their ERL (eq. 1) over UDP.
 *
 * Safety: signals arrive through a signalfd (no work in handlers); SIGTERM,
 * SIGINT, SIGHUP, SIGQUIT, errors and the death of the process that started
 * it (PR_SET_PDEATHSIG) all end in one teardown that restores every rank's
 * policy and nice value and resumes every rank it stopped. Before it first
 * changes a process it appends the process's pid, start time, policy,
 * priority and nice value to STATE/touched.tsv, so that `--restore STATE`
 * can undo everything after a kill -9.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <math.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "corun_kernel.h"
#include "cosched_shm.h"
#include "decide.h"

#define PROG "corun-cosched"
#define VERSION "1.0"
#define MAX_SOCK 64
#define MAX_PEND 32
#define MAX_NODES 256
#define MAX_DONE 4096
#define ERL_MAGIC 0x45524c31u /* "ERL1" */

static const char USAGE[] =
	"usage: " PROG " --scheme S --state-dir DIR [options]\n"
	"       " PROG " --restore DIR        undo what a killed daemon left (touched.tsv)\n"
	"       " PROG " --check DIR [--max-age-s S]\n"
	"       " PROG " --decide-table FILE  one CC decision on a hand-made table (eqs. 1-4)\n"
	"       " PROG " --dump-shm NAME      the segment's slots as JSON\n"
	"\n"
	"The handling action of the MPI coscheduling schemes of paper 001.\n"
	"  --scheme S            local, batch, dcs, pb, ib, sb, hybrid, cc_s, cc_b or gang\n"
	"  --state-dir DIR       writes status.json, summary.json, touched.tsv (existing dir)\n"
	"  --shm NAME            the node's shared-memory segment (default /corun-cosched)\n"
	"  --spin-us US          sb: the ranks' spin time before blocking, microseconds\n"
	"                        (default 150; 0 to 1000000); written to rank_env.json\n"
	"  --block-max-us US     longest futex sleep of a blocked rank between two tests,\n"
	"                        microseconds (default 1000; 50 to 1000000)\n"
	"  --tick-us US          housekeeping period, microseconds (default 1000; 100 to 100000)\n"
	"  --pb-period-us US     pb, cc_s: boost period, microseconds (default 10000;\n"
	"                        1000 to 1000000)\n"
	"  --boost-max-us US     longest boost, microseconds (default 10000; 100 to 1000000)\n"
	"  --boost-prio P        SCHED_FIFO priority of a boost (default 1; 1 to 20); cc_b\n"
	"                        orders conflicts on P .. P+63, the daemon runs at P+65\n"
	"  --mpl N               multi-programming level: ERL_max = N * 41 ms (default 5; 1 to 64)\n"
	"  --cost-switch-us X    Cost_switch of eq. 1, microseconds (default 6; 0 to 10000)\n"
	"  --erl-period-us US    ERL update and exchange period, microseconds (default 10000;\n"
	"                        1000 to 1000000)\n"
	"  --enp-alpha F         weight of the newest sample in the ENP mean (default 0.5; 0 to 1)\n"
	"  --wr-reduce R         eq. 4 over a rank's pending messages: min (the formula,\n"
	"                        default) or max (the soonest correspondent counts)\n"
	"  --bcr-min-pending N   a conflict: N or more ranks with pending messages (default 2;\n"
	"                        2 to 64)\n"
	"  --gang-slice-ms MS    gang: time slice, milliseconds (default 100; 10 to 60000)\n"
	"  --node-id N           this node's id (default 0; 0 to 255)\n"
	"  --listen IP:PORT      receive the ERL of other nodes (UDP, IPv4)\n"
	"  --peer N=IP:PORT      another node's daemon (repeat; its IP names its ranks' traffic)\n"
	"  --max-age-s S         --check: the heartbeat may be this old (default 2)\n"
	"  -h, --help  -V, --version\n"
	"Exit: 0 ok (also when stopped by SIGTERM/SIGINT), 1 runtime error, 2 usage,\n"
	"4 a needed feature is missing (SCHED_FIFO, pidfd_getfd).\n";

enum scheme { S_LOCAL, S_BATCH, S_DCS, S_PB, S_IB, S_SB, S_HYBRID, S_CC_S, S_CC_B, S_GANG };
static const char *const SCHEMES[] = { "local", "batch",  "dcs",  "pb",   "ib",
				       "sb",    "hybrid", "cc_s", "cc_b", "gang" };

struct opts {
	enum scheme scheme;
	const char *state_dir, *shm, *listen;
	long spin_us, block_max_us;
	long tick_us, pb_period_us, boost_max_us, erl_period_us, gang_slice_ms;
	int boost_prio, mpl, bcr_min, node_id;
	double cost_switch_us, enp_alpha;
	enum cc_wr_reduce reduce;
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

static struct {
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
	int daemon_prio;
	const char *daemon_policy;
} D;

/* ------------------------------------------------------------------ small helpers */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int pidfd_signal(int pidfd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

static int pidfd_getfd_(int pidfd, int fd)
{
	return (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
}

static ssize_t read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/* Field 22 of /proc/<pid>/stat: the start time in clock ticks since boot. */
static unsigned long long proc_starttime(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (read_small(path, buf, sizeof buf) < 0)
		return 0;
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	p += 2;
	for (int field = 3; field < 22 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	return p ? strtoull(p, NULL, 10) : 0;
}

static const char *scheme_name(enum scheme s)
{
	return SCHEMES[s];
}

/* The waiting action of each scheme (the paper's Table 1): the receiver's
 * and the sender's. */
static enum cs_wait recv_wait(enum scheme s)
{
	switch (s) {
	case S_IB:
	case S_HYBRID:
	case S_CC_B: return CS_BLOCK;
	case S_SB: return CS_SPINBLOCK;
	default: return CS_SPIN;
	}
}

static enum cs_wait send_wait(enum scheme s)
{
	return s == S_HYBRID || s == S_CC_B ? CS_BLOCK : CS_SPIN;
}

static const char *const WAITS[] = { "spin", "block", "spinblock" };

/* STATE/rank_env.json: what every rank of the run needs in its environment
 * (the runner passes it to mpirun with -x). */
static int write_rank_env(void)
{
	char exe[PATH_MAX], path[PATH_MAX], tmp[PATH_MAX + 8], num[32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return -1;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	/* build/corun-cosched and build/asan/corun-cosched: the library is in build/ */
	size_t len = strlen(exe);
	if (len >= 5 && !strcmp(exe + len - 5, "/asan"))
		exe[len - 5] = '\0';
	snprintf(path, sizeof path, "%s/rank_env.json", D.o.state_dir);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return -1;
	char lib[PATH_MAX + 32];
	snprintf(lib, sizeof lib, "%s/libcorun_cosched.so", exe);
	struct corun_json j;
	corun_json_begin(&j, f);
	corun_json_str(&j, "LD_PRELOAD", lib);
	corun_json_str(&j, "CORUN_COSCHED_SHM", D.o.shm);
	corun_json_str(&j, "CORUN_COSCHED_WAIT", WAITS[recv_wait(D.o.scheme)]);
	corun_json_str(&j, "CORUN_COSCHED_SEND_WAIT", WAITS[send_wait(D.o.scheme)]);
	snprintf(num, sizeof num, "%ld", D.o.spin_us);
	corun_json_str(&j, "CORUN_COSCHED_SPIN_US", num);
	snprintf(num, sizeof num, "%ld", D.o.block_max_us);
	corun_json_str(&j, "CORUN_COSCHED_BLOCK_MAX_US", num);
	/* every message through TCP sockets, also between ranks of one node:
	 * the daemon sees arrivals on sockets (the NIC of the paper) */
	corun_json_str(&j, "OMPI_MCA_btl", "tcp,self");
	corun_json_end(&j);
	if (fclose(f) != 0)
		return -1;
	return rename(tmp, path);
}

/* ------------------------------------------------------------------ priorities */

/* Append the process's original scheduling to the journal before it is first
 * changed: --restore and the teardown put it back. */
static int touch(struct proc *p)
{
	if (p->touched)
		return 0;
	struct sched_param sp;
	p->orig_policy = sched_getscheduler(p->pid);
	if (p->orig_policy < 0 || sched_getparam(p->pid, &sp) < 0)
		return -1;
	p->orig_prio = sp.sched_priority;
	errno = 0;
	p->orig_nice = getpriority(PRIO_PROCESS, (id_t)p->pid);
	if (errno)
		return -1;
	fprintf(D.journal, "%d %llu %d %d %d\n", (int)p->pid, p->starttime, p->orig_policy,
		p->orig_prio, p->orig_nice);
	if (fflush(D.journal) != 0 || fdatasync(fileno(D.journal)) != 0)
		return -1;
	p->touched = true;
	return 0;
}

static bool alive(struct proc *p)
{
	return pidfd_signal(p->pidfd, 0) == 0;
}

/* The rank ends a boost itself when its wait completes (cosched_lib.c). */
static void sync_boost(struct proc *p)
{
	if (p->prio && atomic_load(&D.shm->slot[p - D.p].boost_prio) == 0)
		p->prio = 0;
}

static void boost(struct proc *p, int prio, uint64_t now)
{
	sync_boost(p);
	if (p->prio == prio || !alive(p) || touch(p) < 0)
		return;
	struct sched_param sp = { .sched_priority = prio };
	if (sched_setscheduler(p->pid, SCHED_FIFO, &sp) < 0)
		return;
	struct cs_slot *s = &D.shm->slot[p - D.p];
	if (!p->prio) {
		p->boost_t0 = now;
		D.n_boosts++;
		atomic_fetch_add(&s->boosts, 1);
		atomic_store(&s->boost_since_ns, now);
		atomic_store(&s->boost_max_ns, (uint64_t)D.o.boost_max_us * 1000u);
	}
	p->prio = prio;
	atomic_store(&s->boost_prio, (uint32_t)prio);
}

static void restore_sched(pid_t pid, int policy, int prio, int nice)
{
	struct sched_param sp = { .sched_priority = prio };
	(void)sched_setscheduler(pid, policy, &sp);
	(void)setpriority(PRIO_PROCESS, (id_t)pid, nice);
}

static void unboost(struct proc *p)
{
	sync_boost(p);
	if (!p->prio)
		return;
	if (alive(p))
		restore_sched(p->pid, p->orig_policy, p->orig_prio, p->orig_nice);
	p->prio = 0;
	atomic_store(&D.shm->slot[p - D.p].boost_prio, 0);
}

static void stop_proc(struct proc *p, bool stop)
{
	if (p->stopped == stop || !alive(p) || touch(p) < 0)
		return;
	if (pidfd_signal(p->pidfd, stop ? SIGSTOP : SIGCONT) == 0)
		p->stopped = stop;
}

static void wake(struct proc *p)
{
	struct cs_slot *s = &D.shm->slot[p - D.p];
	atomic_fetch_add(&s->wake, 1);
	syscall(SYS_futex, (uint32_t *)&s->wake, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	atomic_fetch_add(&s->wakeups, 1);
	D.n_wakeups++;
}

/* ------------------------------------------------------------------ ranks */

static void keep_done(struct proc *p)
{
	if (D.ndone >= MAX_DONE || !D.done)
		return;
	struct cs_slot *s = &D.shm->slot[p - D.p];
	struct done_rank *d = &D.done[D.ndone++];
	snprintf(d->job, sizeof d->job, "%s", p->job);
	d->rank = p->rank;
	d->pid = p->pid;
	d->waits = atomic_load(&s->waits);
	d->msgs = atomic_load(&s->msgs);
	d->wait_ns = atomic_load(&s->wait_ns);
	d->md_ns = atomic_load(&s->md_ns);
	d->arr_md_n = atomic_load(&s->arr_md_n);
	d->arr_md_ns = atomic_load(&s->arr_md_ns);
	d->blocks = atomic_load(&s->blocks);
	d->coll_calls = atomic_load(&s->coll_calls);
	d->arrivals = atomic_load(&s->arrivals);
	d->wakeups = atomic_load(&s->wakeups);
	d->boosts = atomic_load(&s->boosts);
}

static void drop_socks(struct proc *p)
{
	for (int k = 0; k < p->nsock; k++)
		if (p->sockfd[k] >= 0)
			close(p->sockfd[k]); /* closing removes it from the epoll set */
	p->nsock = 0;
}

/* Restore the rank, forget it; free its slot once the process has exited. */
static void release(int i, bool free_slot)
{
	struct proc *p = &D.p[i];
	if (!p->used)
		return;
	unboost(p);
	if (p->stopped)
		stop_proc(p, false);
	if (!p->refused)
		keep_done(p);
	drop_socks(p);
	if (p->sched_fd >= 0)
		close(p->sched_fd);
	bool gone = !alive(p);
	close(p->pidfd);
	int32_t pid = (int32_t)p->pid;
	if (free_slot && gone)
		atomic_compare_exchange_strong(&D.shm->slot[i].pid, &pid, 0);
	memset(p, 0, sizeof *p);
	p->sched_fd = -1;
}

static void register_rank(int i, pid_t pid, uint64_t now)
{
	struct cs_slot *s = &D.shm->slot[i];
	if (s->starttime == 0)
		return; /* the rank is still filling its slot */
	struct proc *p = &D.p[i];
	memset(p, 0, sizeof *p);
	p->sched_fd = -1;
	p->pid = pid;
	p->pidfd = pidfd_open_(pid);
	if (p->pidfd < 0) { /* gone before we saw it: free the slot */
		int32_t cur = (int32_t)pid;
		atomic_compare_exchange_strong(&s->pid, &cur, 0);
		return;
	}
	p->used = true;
	/* identity after the pidfd exists: the pidfd then refers to this rank */
	p->starttime = proc_starttime(pid);
	if (p->starttime == 0 || p->starttime != s->starttime) {
		p->refused = true; /* another process has this pid; never touched */
		return;
	}
	snprintf(p->job, sizeof p->job, "%.*s", CS_JOBLEN - 1, s->job);
	p->rank = s->rank;
	if (s->wait_mode != (uint32_t)recv_wait(D.o.scheme) ||
	    s->send_mode != (uint32_t)send_wait(D.o.scheme))
		D.n_mismatch++; /* the rank waits otherwise than the scheme says */
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/schedstat", (int)pid);
	p->sched_fd = open(path, O_RDONLY | O_CLOEXEC);
	p->last_scan_ns = 0;
	(void)now;
}

static int node_of(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	if (getpeername(fd, (struct sockaddr *)&ss, &len) < 0 || ss.ss_family != AF_INET)
		return D.o.node_id;
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;
	for (int k = 0; k < D.npeers; k++)
		if (D.peers[k].addr.sin_addr.s_addr == in->sin_addr.s_addr)
			return D.peers[k].node;
	return D.o.node_id;
}

/* New sockets of the rank (Open MPI's TCP connections are made lazily). */
static void scan_socks(int i)
{
	struct proc *p = &D.p[i];
	char dir[64];
	snprintf(dir, sizeof dir, "/proc/%d/fd", (int)p->pid);
	DIR *d = opendir(dir);
	if (!d)
		return;
	unsigned long seen[4 * MAX_SOCK];
	size_t nseen = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char link[PATH_MAX + 80], target[128];
		snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
		ssize_t n = readlink(link, target, sizeof target - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		unsigned long ino;
		if (sscanf(target, "socket:[%lu]", &ino) != 1)
			continue;
		if (nseen < sizeof seen / sizeof seen[0])
			seen[nseen++] = ino;
		if (p->nsock == MAX_SOCK)
			continue;
		bool known = false;
		for (int k = 0; k < p->nsock && !known; k++)
			known = p->ino[k] == ino;
		if (known)
			continue;
		int fd = pidfd_getfd_(p->pidfd, atoi(e->d_name));
		if (fd < 0)
			continue;
		int type = 0;
		socklen_t tl = sizeof type;
		struct sockaddr_storage ss;
		socklen_t sl = sizeof ss;
		/* connected stream sockets only: the BTL's connections (also the
		 * out-of-band channel to the local launcher, which is quiet) */
		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_STREAM ||
		    getpeername(fd, (struct sockaddr *)&ss, &sl) < 0 ||
		    (ss.ss_family != AF_INET && ss.ss_family != AF_INET6)) {
			close(fd);
			/* remember it, so it is not duplicated again */
			p->ino[p->nsock] = ino;
			p->sockfd[p->nsock] = -1;
			p->sock_node[p->nsock++] = -1;
			continue;
		}
		struct epoll_event ev = { .events = EPOLLIN | EPOLLET,
					  .data.u64 =
						  ((uint64_t)(i + 1) << 32) | (uint32_t)p->nsock };
		if (epoll_ctl(D.ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
			close(fd);
			continue;
		}
		p->ino[p->nsock] = ino;
		p->sockfd[p->nsock] = fd;
		p->sock_node[p->nsock++] = node_of(fd);
	}
	closedir(d);
	/* a socket the rank has closed: drop our duplicate, which would keep the
	 * connection open (entries keep their place: epoll data holds the index) */
	if (nseen == sizeof seen / sizeof seen[0])
		return; /* too many to tell */
	for (int k = 0; k < p->nsock; k++) {
		bool open_in_rank = false;
		for (size_t m = 0; m < nseen && !open_in_rank; m++)
			open_in_rank = seen[m] == p->ino[k];
		if (!open_in_rank && p->sockfd[k] >= 0) {
			close(p->sockfd[k]);
			p->sockfd[k] = -1;
			p->ino[k] = 0;
		}
	}
}

/* ------------------------------------------------------------------ decisions */

static double msg_erl(int node)
{
	if (node == D.o.node_id || node < 0 || node >= MAX_NODES || !D.erl_known[node])
		return D.erl_us;
	return D.erl_node[node];
}

static bool pending(struct proc *p)
{
	return p->used && !p->refused && p->npend > 0;
}

/* Drop the messages the rank has consumed since they arrived. */
static void purge(struct proc *p)
{
	uint64_t waits = atomic_load(&D.shm->slot[p - D.p].waits);
	int k = 0;
	for (int m = 0; m < p->npend; m++)
		if (p->pend[m].waits_at >= waits)
			p->pend[k++] = p->pend[m];
	p->npend = k;
}

static struct cc_cand cand[CS_SLOTS];
static struct cc_msg cmsg[CS_SLOTS][MAX_PEND];
static size_t order[CS_SLOTS];

/* The CC weights of every rank with pending messages; returns how many. */
static size_t cc_rank(uint64_t now)
{
	struct cc_params par = { .erl_max_us = D.o.mpl * CC_ERL_PER_MPL_US, .reduce = D.o.reduce };
	for (int i = 0; i < CS_SLOTS; i++) {
		struct proc *p = &D.p[i];
		cand[i] = (struct cc_cand){ 0 };
		if (!pending(p))
			continue;
		for (int m = 0; m < p->npend; m++)
			cmsg[i][m] = (struct cc_msg){ p->pend[m].erl_us,
						      (double)(now - p->pend[m].t_ns) / 1e3 };
		cand[i].nmsg = (size_t)p->npend;
		cand[i].msgs = cmsg[i];
		cand[i].first_age_us = cmsg[i][0].age_us;
	}
	return cc_order(cand, CS_SLOTS, &par, order);
}

/* cc_b: the ranks with pending messages get distinct priorities in the
 * order of their weights (the highest first). */
static void cc_b_decide(uint64_t now)
{
	size_t n = cc_rank(now);
	if (n == 0)
		return;
	bool reordered = false;
	for (size_t r = 0; r < n; r++) {
		struct proc *p = &D.p[order[r]];
		if (n > 1 && r > 0 && p->npend > 0 &&
		    p->pend[0].t_ns < D.p[order[r - 1]].pend[0].t_ns)
			reordered = true; /* an earlier arrival is put behind a later one */
		boost(p, D.o.boost_prio + (int)(n - 1 - r), now);
	}
	if (reordered)
		D.n_reordered++;
}

/* Ranks with pending messages, as of the last tick or decision. */
static int npending_cached;

static void on_arrival(int i, int k, uint64_t now)
{
	struct proc *p = &D.p[i];
	if (!p->used || p->refused)
		return;
	struct cs_slot *s = &D.shm->slot[i];
	D.n_arrivals++;
	atomic_fetch_add(&s->arrivals, 1);
	uint64_t zero = 0;
	atomic_compare_exchange_strong(&s->arrival_ns, &zero, now);
	purge(p);
	if (p->npend < MAX_PEND)
		p->pend[p->npend++] = (struct pmsg){ p->sock_node[k], msg_erl(p->sock_node[k]), now,
						     atomic_load(&s->waits) };
	switch (D.o.scheme) {
	case S_DCS: boost(p, D.o.boost_prio, now); break;
	case S_IB:
	case S_SB:
		wake(p);
		boost(p, D.o.boost_prio, now);
		break;
	case S_HYBRID: wake(p); break;
	case S_CC_B:
		wake(p);
		if (p->npend == 1 && npending_cached >= 1)
			cc_b_decide(now); /* a second rank has pending messages: order them */
		else if (!p->prio)
			boost(p, D.o.boost_prio, now);
		break;
	default: break;
	}
}

static void periodic_boost(uint64_t now)
{
	int n = 0;
	for (int i = 0; i < CS_SLOTS; i++)
		n += pending(&D.p[i]);
	if (n == 0)
		return;
	int pick = -1;
	if (D.o.scheme == S_PB) {
		for (int k = 0; k < CS_SLOTS && pick < 0; k++) {
			int i = (D.pb_next + k) % CS_SLOTS;
			if (pending(&D.p[i]))
				pick = i;
		}
		D.pb_next = (pick + 1) % CS_SLOTS;
	} else {
		size_t m = cc_rank(now);
		if (m > 0) {
			pick = (int)order[0];
			/* the round-robin choice would have been another rank */
			int rr = -1;
			for (int k = 0; k < CS_SLOTS && rr < 0; k++)
				if (pending(&D.p[(D.pb_next + k) % CS_SLOTS]))
					rr = (D.pb_next + k) % CS_SLOTS;
			if (m > 1 && rr != pick)
				D.n_reordered++;
			D.pb_next = (pick + 1) % CS_SLOTS;
		}
	}
	if (pick >= 0)
		boost(&D.p[pick], D.o.boost_prio, now);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void gang(uint64_t now)
{
	(void)now;
	const char *jobs[CS_SLOTS];
	int nj = 0;
	for (int i = 0; i < CS_SLOTS; i++) {
		struct proc *p = &D.p[i];
		if (!p->used || p->refused)
			continue;
		bool seen = false;
		for (int k = 0; k < nj && !seen; k++)
			seen = !strcmp(jobs[k], p->job);
		if (!seen)
			jobs[nj++] = p->job;
	}
	if (nj == 0)
		return;
	qsort(jobs, (size_t)nj, sizeof jobs[0], cmp_str);
	uint64_t slice = (uint64_t)D.o.gang_slice_ms * 1000000u;
	int64_t slot = (int64_t)(real_ns() / slice);
	const char *run = jobs[slot % nj];
	D.gang_slot = slot;
	for (int i = 0; i < CS_SLOTS; i++) {
		struct proc *p = &D.p[i];
		if (p->used && !p->refused)
			stop_proc(p, strcmp(p->job, run) != 0 && nj > 1);
	}
}

/* ------------------------------------------------------------------ ERL */

static void update_erl(uint64_t now)
{
	unsigned long long dcpu = 0, dsl = 0;
	int npend = 0;
	for (int i = 0; i < CS_SLOTS; i++) {
		struct proc *p = &D.p[i];
		if (!p->used || p->refused || p->sched_fd < 0)
			continue;
		npend += pending(p);
		char buf[128];
		ssize_t n = pread(p->sched_fd, buf, sizeof buf - 1, 0);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		unsigned long long cpu, waitns, sl;
		if (sscanf(buf, "%llu %llu %llu", &cpu, &waitns, &sl) != 3)
			continue;
		if (p->have_sched && cpu >= p->cpu_ns && sl >= p->slices) {
			dcpu += cpu - p->cpu_ns;
			dsl += sl - p->slices;
		}
		p->cpu_ns = cpu;
		p->slices = sl;
		p->have_sched = true;
	}
	/* ED: mean CPU time per scheduling of the registered ranks */
	if (dsl > 0)
		D.ed_us = (double)dcpu / (double)dsl / 1e3;
	D.enp = D.o.enp_alpha * npend + (1 - D.o.enp_alpha) * D.enp;
	D.erl_us = cc_erl_us(D.ed_us, D.enp, D.o.cost_switch_us);
	D.erl_sum += D.erl_us;
	D.erl_n++;
	D.last_erl_ns = now;
	if (D.ufd >= 0) {
		struct {
			uint32_t magic;
			int32_t node;
			double erl_us;
		} msg = { ERL_MAGIC, D.o.node_id, D.erl_us };
		for (int k = 0; k < D.npeers; k++)
			if (sendto(D.ufd, &msg, sizeof msg, MSG_DONTWAIT,
				   (struct sockaddr *)&D.peers[k].addr,
				   sizeof D.peers[k].addr) == (ssize_t)sizeof msg)
				D.erl_sent++;
	}
}

static void recv_erl(void)
{
	struct {
		uint32_t magic;
		int32_t node;
		double erl_us;
	} msg;
	for (;;) {
		ssize_t n = recv(D.ufd, &msg, sizeof msg, MSG_DONTWAIT);
		if (n < 0)
			return;
		if (n != (ssize_t)sizeof msg || msg.magic != ERL_MAGIC || msg.node < 0 ||
		    msg.node >= MAX_NODES || !isfinite(msg.erl_us))
			continue;
		D.erl_node[msg.node] = msg.erl_us;
		D.erl_known[msg.node] = true;
		D.erl_recv++;
	}
}

/* ------------------------------------------------------------------ the tick */

static void write_status(uint64_t now)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	snprintf(path, sizeof path, "%s/status.json", D.o.state_dir);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return;
	int ranks = 0, boosted = 0, stopped = 0;
	for (int i = 0; i < CS_SLOTS; i++) {
		ranks += D.p[i].used && !D.p[i].refused;
		boosted += D.p[i].prio != 0;
		stopped += D.p[i].stopped;
	}
	struct corun_json j;
	corun_json_begin(&j, f);
	corun_json_int(&j, "pid", getpid());
	corun_json_str(&j, "scheme", scheme_name(D.o.scheme));
	corun_json_double(&j, "mono_s", (double)now / 1e9);
	corun_json_int(&j, "wait_mode_mismatches", (int64_t)D.n_mismatch);
	corun_json_int(&j, "ticks", (int64_t)D.ticks);
	corun_json_int(&j, "ranks", ranks);
	corun_json_int(&j, "boosted", boosted);
	corun_json_int(&j, "stopped", stopped);
	corun_json_double(&j, "erl_us", D.erl_us);
	corun_json_end(&j);
	if (fclose(f) == 0)
		rename(tmp, path);
	D.last_status_ns = now;
}

static void tick(uint64_t now)
{
	D.ticks++;
	int npend = 0;
	unsigned long long cs = 0;
	for (int i = 0; i < CS_SLOTS; i++) {
		struct cs_slot *s = &D.shm->slot[i];
		struct proc *p = &D.p[i];
		pid_t pid = (pid_t)atomic_load(&s->pid);
		if (p->used && (pid != p->pid || !alive(p))) {
			release(i, true);
			continue;
		}
		if (!p->used && pid > 0)
			register_rank(i, pid, now);
		if (!p->used || p->refused)
			continue;
		if (now - p->last_scan_ns > 20000000u) { /* 20 ms */
			scan_socks(i);
			p->last_scan_ns = now;
		}
		purge(p);
		npend += p->npend > 0;
		/* a boost ends with its wait (the rank restores itself), its pending
		 * messages, its collective, or its time */
		sync_boost(p);
		if (p->prio) {
			bool over = now - p->boost_t0 > (uint64_t)D.o.boost_max_us * 1000u;
			bool keep = D.o.scheme == S_HYBRID
					    ? (atomic_load(&s->state) & CS_ST_IN_COLL) != 0
					    : p->npend > 0;
			if (over || !keep)
				unboost(p);
		}
		if (D.o.scheme == S_HYBRID && !p->prio &&
		    (atomic_load(&s->state) & CS_ST_IN_COLL)) {
			uint64_t calls = atomic_load(&s->coll_calls);
			if (calls != p->boost_coll) { /* one boost per collective */
				p->boost_coll = calls;
				boost(p, D.o.boost_prio, now);
			}
		}
		/* context switches of the ranks since the last tick: the BCR's base */
		if (p->sched_fd >= 0) {
			char buf[128];
			ssize_t n = pread(p->sched_fd, buf, sizeof buf - 1, 0);
			unsigned long long a, b, sl;
			if (n > 0) {
				buf[n] = '\0';
				if (sscanf(buf, "%llu %llu %llu", &a, &b, &sl) == 3) {
					if (p->have_sched && sl >= p->slices)
						cs += sl - p->slices;
					if (!p->have_sched) {
						p->cpu_ns = a;
						p->have_sched = true;
					}
					p->slices = sl;
				}
			}
		}
	}
	D.cs_total += cs;
	npending_cached = npend;
	/* decision points, the same for every scheme: ticks with pending messages,
	 * and among them the conflicts (bcr_min or more ranks with pending messages) */
	if (npend >= 1)
		D.n_decisions++;
	if (npend >= D.o.bcr_min) {
		D.n_conflicts++;
		D.cs_conflict += cs;
	}
	switch (D.o.scheme) {
	case S_PB:
	case S_CC_S:
		if (now - D.last_pb_ns >= (uint64_t)D.o.pb_period_us * 1000u) {
			periodic_boost(now);
			D.last_pb_ns = now;
		}
		break;
	case S_CC_B:
		cc_b_decide(now); /* weights age (eq. 3): the order may change */
		break;
	case S_GANG: gang(now); break;
	default: break;
	}
	if (now - D.last_erl_ns >= (uint64_t)D.o.erl_period_us * 1000u)
		update_erl(now);
	if (now - D.last_status_ns >= 100000000u)
		write_status(now);
}

/* ------------------------------------------------------------------ teardown */

static void json_counters(struct corun_json *j, const struct done_rank *d)
{
	corun_json_str(j, "job", d->job);
	corun_json_int(j, "rank", d->rank);
	corun_json_int(j, "pid", d->pid);
	corun_json_int(j, "waits", (int64_t)d->waits);
	corun_json_int(j, "msgs", (int64_t)d->msgs);
	corun_json_double(j, "wait_s", (double)d->wait_ns / 1e9);
	corun_json_double(j, "md_mean_us",
			  d->msgs ? (double)d->md_ns / (double)d->msgs / 1e3 : NAN);
	corun_json_double(j, "arrival_md_mean_us",
			  d->arr_md_n ? (double)d->arr_md_ns / (double)d->arr_md_n / 1e3 : NAN);
	corun_json_int(j, "blocks", (int64_t)d->blocks);
	corun_json_int(j, "coll_calls", (int64_t)d->coll_calls);
	corun_json_int(j, "arrivals", (int64_t)d->arrivals);
	corun_json_int(j, "wakeups", (int64_t)d->wakeups);
	corun_json_int(j, "boosts", (int64_t)d->boosts);
}

static void write_summary(void)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/summary.json", D.o.state_dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double wall = (double)(now_ns() - D.start_ns) / 1e9;
	double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	struct corun_json j;
	corun_json_begin(&j, f);
	corun_json_str(&j, "scheme", scheme_name(D.o.scheme));
	corun_json_str(&j, "exit_reason", D.exit_reason);
	corun_json_int(&j, "node_id", D.o.node_id);
	corun_json_str(&j, "daemon_policy", D.daemon_policy);
	corun_json_int(&j, "ticks", (int64_t)D.ticks);
	corun_json_int(&j, "missed_ticks", (int64_t)D.n_late);
	corun_json_int(&j, "wait_mode_mismatches", (int64_t)D.n_mismatch);
	corun_json_int(&j, "arrivals", (int64_t)D.n_arrivals);
	corun_json_int(&j, "wakeups", (int64_t)D.n_wakeups);
	corun_json_int(&j, "boosts", (int64_t)D.n_boosts);
	corun_json_int(&j, "decisions", (int64_t)D.n_decisions);
	corun_json_int(&j, "conflicts", (int64_t)D.n_conflicts);
	corun_json_int(&j, "reordered", (int64_t)D.n_reordered);
	corun_json_int(&j, "context_switches", (int64_t)D.cs_total);
	corun_json_int(&j, "conflict_context_switches", (int64_t)D.cs_conflict);
	corun_json_double(&j, "bcr", D.cs_total ? (double)D.cs_conflict / (double)D.cs_total : NAN);
	corun_json_int(&j, "bcr_min_pending", D.o.bcr_min);
	corun_json_double(&j, "erl_mean_us", D.erl_n ? D.erl_sum / (double)D.erl_n : NAN);
	corun_json_int(&j, "erl_sent", (int64_t)D.erl_sent);
	corun_json_int(&j, "erl_received", (int64_t)D.erl_recv);
	corun_json_array_begin(&j, "ranks");
	for (size_t i = 0; i < D.ndone; i++) {
		corun_json_object_begin(&j, NULL);
		json_counters(&j, &D.done[i]);
		corun_json_object_end(&j);
	}
	corun_json_array_end(&j);
	corun_json_double(&j, "cpu_s", cpu);
	corun_json_double(&j, "wall_s", wall);
	corun_json_double(&j, "cpu_share", wall > 0 ? cpu / wall : NAN);
	corun_json_end(&j);
	fclose(f);
}

/* The one way out: every rank's policy and nice value back, every stopped
 * rank resumed, then the summary. */
static void teardown(void)
{
	for (int i = 0; i < CS_SLOTS; i++)
		release(i, false);
	if (D.shm) {
		int32_t me = (int32_t)getpid();
		atomic_compare_exchange_strong(&D.shm->daemon_pid, &me, 0);
	}
	if (D.journal) {
		write_summary();
		fclose(D.journal);
		D.journal = NULL;
	}
	struct sched_param sp = { .sched_priority = 0 }; /* ordinary again for the exit */
	(void)sched_setscheduler(0, SCHED_OTHER, &sp);
}

/* ------------------------------------------------------------------ modes */

static int run_restore(const char *dir)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/touched.tsv", dir);
	FILE *f = fopen(path, "r");
	if (!f) {
		if (errno == ENOENT) { /* the daemon never touched a process */
			printf("{\"restored\":0,\"gone\":0}\n");
			return CORUN_EXIT_OK;
		}
		corun_err(PROG, "--restore: '%s': %s", path, strerror(errno));
		return CORUN_EXIT_RUNTIME;
	}
	int pid, policy, prio, nice;
	unsigned long long st;
	long restored = 0, gone = 0, failed = 0;
	while (fscanf(f, "%d %llu %d %d %d", &pid, &st, &policy, &prio, &nice) == 5) {
		int pfd = pid > 0 ? pidfd_open_(pid) : -1;
		if (pfd < 0 || proc_starttime(pid) != st) { /* exited, or the pid was reused */
			gone++;
			if (pfd >= 0)
				close(pfd);
			continue;
		}
		struct sched_param sp = { .sched_priority = prio };
		int rc = sched_setscheduler(pid, policy, &sp);
		rc |= setpriority(PRIO_PROCESS, (id_t)pid, nice);
		rc |= pidfd_signal(pfd, SIGCONT);
		close(pfd);
		if (rc == 0)
			restored++;
		else
			failed++;
	}
	fclose(f);
	printf("{\"restored\":%ld,\"gone\":%ld,\"failed\":%ld}\n", restored, gone, failed);
	return failed ? CORUN_EXIT_RUNTIME : CORUN_EXIT_OK;
}

static int run_check(const char *dir, double max_age)
{
	char path[PATH_MAX], buf[1024];
	snprintf(path, sizeof path, "%s/status.json", dir);
	uint64_t until = now_ns() + 5000000000u;
	while (read_small(path, buf, sizeof buf) < 0) {
		if (now_ns() > until) {
			corun_err(PROG, "not running: no heartbeat %s", path);
			return CORUN_EXIT_RUNTIME;
		}
		usleep(20000);
	}
	long pid = 0;
	double mono = 0;
	char *p = strstr(buf, "\"pid\":"), *q = strstr(buf, "\"mono_s\":");
	if (!p || !q || sscanf(p, "\"pid\":%ld", &pid) != 1 ||
	    sscanf(q, "\"mono_s\":%lf", &mono) != 1) {
		corun_err(PROG, "%s: not a heartbeat", path);
		return CORUN_EXIT_RUNTIME;
	}
	if (kill((pid_t)pid, 0) < 0 && errno == ESRCH) {
		corun_err(PROG, "not running: pid %ld has exited", pid);
		return CORUN_EXIT_RUNTIME;
	}
	double age = (double)now_ns() / 1e9 - mono;
	if (age > max_age) {
		corun_err(PROG, "not in effect: last heartbeat %.1f s ago (more than %.1f s)", age,
			  max_age);
		return CORUN_EXIT_RUNTIME;
	}
	long mismatch = 0;
	char *m = strstr(buf, "\"wait_mode_mismatches\":");
	if (m && sscanf(m, "\"wait_mode_mismatches\":%ld", &mismatch) == 1 && mismatch > 0) {
		corun_err(PROG,
			  "not in effect: %ld ranks wait otherwise than the scheme says "
			  "(their environment is not the one in rank_env.json)",
			  mismatch);
		return CORUN_EXIT_RUNTIME;
	}
	printf("running: pid %ld, heartbeat %.2f s ago\n", pid, age);
	return CORUN_EXIT_OK;
}

static int run_dump(const char *name)
{
	int fd = shm_open(name, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0) {
		corun_err(PROG, "--dump-shm: '%s': %s", name, strerror(errno));
		return CORUN_EXIT_RUNTIME;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(struct cs_shm)) {
		corun_err(PROG, "--dump-shm: '%s': not a corun-cosched segment", name);
		close(fd);
		return CORUN_EXIT_RUNTIME;
	}
	struct cs_shm *shm = mmap(NULL, sizeof *shm, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (shm == MAP_FAILED || shm->magic != CS_MAGIC ||
	    shm->slot_size != sizeof(struct cs_slot)) {
		corun_err(PROG, "--dump-shm: '%s': not a corun-cosched segment of this version",
			  name);
		return CORUN_EXIT_RUNTIME;
	}
	struct corun_json j;
	corun_json_begin(&j, stdout);
	corun_json_int(&j, "daemon_pid", shm->daemon_pid);
	corun_json_array_begin(&j, "slots");
	for (int i = 0; i < CS_SLOTS; i++) {
		const struct cs_slot *s = &shm->slot[i];
		if (s->pid == 0)
			continue;
		struct done_rank d = { .rank = s->rank,
				       .pid = s->pid,
				       .waits = s->waits,
				       .msgs = s->msgs,
				       .wait_ns = s->wait_ns,
				       .md_ns = s->md_ns,
				       .arr_md_n = s->arr_md_n,
				       .arr_md_ns = s->arr_md_ns,
				       .blocks = s->blocks,
				       .coll_calls = s->coll_calls,
				       .arrivals = s->arrivals,
				       .wakeups = s->wakeups,
				       .boosts = s->boosts };
		snprintf(d.job, sizeof d.job, "%.*s", CS_JOBLEN - 1, s->job);
		corun_json_object_begin(&j, NULL);
		corun_json_int(&j, "slot", i);
		json_counters(&j, &d);
		corun_json_str(&j, "wait_mode", s->wait_mode < 3 ? WAITS[s->wait_mode] : "?");
		corun_json_str(&j, "send_mode", s->send_mode < 3 ? WAITS[s->send_mode] : "?");
		corun_json_int(&j, "state", s->state);
		corun_json_double(&j, "block_s", (double)s->block_ns / 1e9);
		corun_json_int(&j, "boost_prio", s->boost_prio);
		corun_json_object_end(&j);
	}
	corun_json_array_end(&j);
	corun_json_end(&j);
	return CORUN_EXIT_OK;
}

/* --decide-table FILE: lines "mpl N", "cost_switch_us X", "wr_reduce min|max",
 * then nodes "node NAME erl_us X" or "node NAME ed_us X enp Y" (eq. 1 with
 * the cost given above), then candidates "proc NAME [msg NODE AGE_US]...",
 * in that order; '#' starts a comment. */
#define T_MAX 64

static int table_error(const char *file, int line, const char *what)
{
	corun_err(PROG, "%s:%d: %s", file, line, what);
	return CORUN_EXIT_USAGE;
}

static bool num(const char *s, double *out)
{
	char *end;
	if (!s)
		return false;
	errno = 0;
	*out = strtod(s, &end);
	return end != s && !*end && !errno && isfinite(*out);
}

static int run_table(const char *file)
{
	FILE *f = fopen(file, "r");
	if (!f) {
		corun_err(PROG, "--decide-table: '%s': %s", file, strerror(errno));
		return CORUN_EXIT_USAGE;
	}
	struct cc_params par = { .erl_max_us = 5 * CC_ERL_PER_MPL_US, .reduce = CC_WR_MIN };
	double cost = 6, mpl = 5;
	static char nname[T_MAX][32], pname[T_MAX][32];
	static double nerl[T_MAX];
	static struct cc_msg msgs[T_MAX][MAX_PEND];
	static struct cc_cand c[T_MAX];
	size_t nn = 0, np = 0, ord[T_MAX];
	char line[1024];
	int ln = 0, rc = CORUN_EXIT_OK;
	while (rc == CORUN_EXIT_OK && fgets(line, sizeof line, f)) {
		ln++;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *tok[2 + 3 * MAX_PEND + 1];
		int nt = 0;
		for (char *t = strtok(line, " \t\r\n"); t && nt < (int)(sizeof tok / sizeof tok[0]);
		     t = strtok(NULL, " \t\r\n"))
			tok[nt++] = t;
		if (nt == 0)
			continue;
		double x, y;
		bool params_late = nn > 0 || np > 0;
		if (!strcmp(tok[0], "mpl")) {
			if (params_late || nt != 2 || !num(tok[1], &mpl) || mpl < 1 || mpl > 64 ||
			    mpl != floor(mpl))
				rc = table_error(
					file, ln,
					"mpl: expected an integer from 1 to 64, before nodes");
			par.erl_max_us = mpl * CC_ERL_PER_MPL_US;
		} else if (!strcmp(tok[0], "cost_switch_us")) {
			if (params_late || nt != 2 || !num(tok[1], &cost) || cost < 0)
				rc = table_error(
					file, ln,
					"cost_switch_us: expected a number >= 0, before nodes");
		} else if (!strcmp(tok[0], "wr_reduce")) {
			if (nt == 2 && !strcmp(tok[1], "min"))
				par.reduce = CC_WR_MIN;
			else if (nt == 2 && !strcmp(tok[1], "max"))
				par.reduce = CC_WR_MAX;
			else
				rc = table_error(file, ln, "wr_reduce: expected min or max");
		} else if (!strcmp(tok[0], "node")) {
			if (np > 0 || nn == T_MAX)
				rc = table_error(file, ln,
						 "node: expected before procs, 64 at most");
			else if (nt == 4 && !strcmp(tok[2], "erl_us") && num(tok[3], &x))
				nerl[nn] = x;
			else if (nt == 6 && !strcmp(tok[2], "ed_us") && num(tok[3], &x) && x >= 0 &&
				 !strcmp(tok[4], "enp") && num(tok[5], &y) && y >= 0)
				nerl[nn] = cc_erl_us(x, y, cost);
			else
				rc = table_error(file, ln,
						 "expected 'node NAME erl_us X' or "
						 "'node NAME ed_us X enp Y'");
			if (rc == CORUN_EXIT_OK)
				snprintf(nname[nn++], sizeof nname[0], "%s", tok[1]);
		} else if (!strcmp(tok[0], "proc")) {
			if (np == T_MAX || nt < 2 || (nt - 2) % 3 != 0 || (nt - 2) / 3 > MAX_PEND) {
				rc = table_error(file, ln,
						 "expected 'proc NAME [msg NODE AGE_US]...' "
						 "(64 procs, 32 messages at most)");
				break;
			}
			c[np] = (struct cc_cand){ 0 };
			for (int t = 2; t < nt && rc == CORUN_EXIT_OK; t += 3) {
				size_t k = 0;
				while (k < nn && strcmp(nname[k], tok[t + 1]))
					k++;
				if (strcmp(tok[t], "msg") || k == nn || !num(tok[t + 2], &x) ||
				    x < 0) {
					rc = table_error(file, ln,
							 "expected 'msg NODE AGE_US' with a node "
							 "named before and an age >= 0");
					break;
				}
				msgs[np][c[np].nmsg++] = (struct cc_msg){ nerl[k], x };
				if (x > c[np].first_age_us)
					c[np].first_age_us = x;
			}
			c[np].msgs = msgs[np];
			snprintf(pname[np++], sizeof pname[0], "%s", tok[1]);
		} else {
			rc = table_error(file, ln,
					 "expected mpl, cost_switch_us, wr_reduce, node or proc");
		}
	}
	fclose(f);
	if (rc != CORUN_EXIT_OK)
		return rc;
	size_t k = cc_order(c, np, &par, ord);
	struct corun_json j;
	corun_json_begin(&j, stdout);
	corun_json_double(&j, "erl_max_us", par.erl_max_us);
	corun_json_str(&j, "wr_reduce", par.reduce == CC_WR_MIN ? "min" : "max");
	corun_json_object_begin(&j, "erl_us");
	for (size_t i = 0; i < nn; i++)
		corun_json_double(&j, nname[i], nerl[i]);
	corun_json_object_end(&j);
	corun_json_array_begin(&j, "procs");
	for (size_t i = 0; i < np; i++) {
		corun_json_object_begin(&j, NULL);
		corun_json_str(&j, "name", pname[i]);
		corun_json_bool(&j, "pending", c[i].nmsg > 0);
		corun_json_double(&j, "wc", c[i].wc);
		corun_json_double(&j, "wr", c[i].wr);
		corun_json_double(&j, "w", c[i].w);
		corun_json_object_end(&j);
	}
	corun_json_array_end(&j);
	corun_json_bool(&j, "conflict", k >= 2);
	corun_json_array_begin(&j, "order");
	for (size_t r = 0; r < k; r++)
		corun_json_str(&j, NULL, pname[ord[r]]);
	corun_json_array_end(&j);
	if (k)
		corun_json_str(&j, "choice", pname[ord[0]]);
	else
		corun_json_null(&j, "choice");
	corun_json_end(&j);
	return CORUN_EXIT_OK;
}

/* ------------------------------------------------------------------ the daemon */

static int setup_fail(const char *what)
{
	corun_err(PROG, "%s: %s", what, strerror(errno));
	return CORUN_EXIT_RUNTIME;
}

static int run_daemon(void)
{
	struct opts *o = &D.o;
	D.sfd = D.tfd = D.ufd = D.ep = -1;
	D.exit_reason = "error";
	struct stat sb;
	if (stat(o->state_dir, &sb) < 0 || !S_ISDIR(sb.st_mode))
		corun_usage_error(PROG, "--state-dir: '%s' (expected an existing directory)",
				  o->state_dir);
	/* features first: nothing is created or touched before they are known.
	 * The daemon runs under SCHED_DEADLINE (half of every tick guaranteed):
	 * it preempts boosted SCHED_FIFO ranks and is not held back when they
	 * use up the real-time share (RT throttling). Else SCHED_FIFO above
	 * every boost. */
	D.daemon_prio = o->boost_prio + CS_SLOTS + 1;
	struct {
		uint32_t size, policy;
		uint64_t flags;
		int32_t nice;
		uint32_t prio;
		uint64_t runtime, deadline, period;
	} attr = { sizeof attr,
		   6 /* SCHED_DEADLINE */,
		   1 /* SCHED_FLAG_RESET_ON_FORK */,
		   0,
		   0,
		   (uint64_t)o->tick_us * 500u,
		   (uint64_t)o->tick_us * 1000u,
		   (uint64_t)o->tick_us * 1000u };
	if (syscall(SYS_sched_setattr, 0, &attr, 0) == 0) {
		D.daemon_policy = "SCHED_DEADLINE";
	} else {
		struct sched_param sp = { .sched_priority = D.daemon_prio };
		if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0) {
			corun_err(PROG,
				  "SCHED_FIFO for the daemon: %s (expected root or CAP_SYS_NICE)",
				  strerror(errno));
			return CORUN_EXIT_SKIPPED;
		}
		D.daemon_policy = "SCHED_FIFO";
	}
	int probe = pidfd_open_(getpid());
	if (probe < 0) {
		corun_err(PROG, "pidfd_open: %s (expected Linux >= 5.6)", strerror(errno));
		return CORUN_EXIT_SKIPPED;
	}
	int dup_probe = pidfd_getfd_(probe, 0);
	close(probe);
	if (dup_probe < 0 && errno == ENOSYS) {
		corun_err(PROG, "pidfd_getfd: %s (expected Linux >= 5.6)", strerror(errno));
		return CORUN_EXIT_SKIPPED;
	}
	if (dup_probe >= 0)
		close(dup_probe);
	if (o->listen) {
		char ip[64];
		int port;
		const char *colon = strrchr(o->listen, ':');
		struct sockaddr_in a = { .sin_family = AF_INET };
		if (!colon || (size_t)(colon - o->listen) >= sizeof ip)
			corun_usage_error(PROG, "--listen: '%s' (expected IPv4:PORT)", o->listen);
		snprintf(ip, sizeof ip, "%.*s", (int)(colon - o->listen), o->listen);
		port = (int)corun_parse_int(PROG, "listen", colon + 1, 1, 65535, false);
		if (inet_pton(AF_INET, ip, &a.sin_addr) != 1)
			corun_usage_error(PROG, "--listen: '%s' (expected IPv4:PORT)", o->listen);
		a.sin_port = htons((uint16_t)port);
		D.ufd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (D.ufd < 0 || bind(D.ufd, (struct sockaddr *)&a, sizeof a) < 0)
			return setup_fail("--listen");
	} else if (D.npeers) {
		D.ufd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (D.ufd < 0)
			return setup_fail("socket");
	}
	D.done = calloc(MAX_DONE, sizeof *D.done);
	for (int i = 0; i < CS_SLOTS; i++)
		D.p[i].sched_fd = -1;
	int fd = shm_open(o->shm, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return setup_fail("--shm");
	if (fstat(fd, &sb) < 0 || ((size_t)sb.st_size < sizeof(struct cs_shm) &&
				   ftruncate(fd, (off_t)sizeof(struct cs_shm)) < 0)) {
		close(fd);
		return setup_fail("--shm");
	}
	void *m = mmap(NULL, sizeof(struct cs_shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return setup_fail("--shm");
	D.shm = m;
	uint32_t zero = 0;
	if (atomic_load(&D.shm->magic) == 0) {
		D.shm->version = CS_VERSION;
		D.shm->nslots = CS_SLOTS;
		D.shm->slot_size = (uint32_t)sizeof(struct cs_slot);
		atomic_compare_exchange_strong(&D.shm->magic, &zero, CS_MAGIC);
	}
	if (D.shm->magic != CS_MAGIC || D.shm->version != CS_VERSION ||
	    D.shm->slot_size != sizeof(struct cs_slot)) {
		corun_err(PROG, "--shm: '%s' (expected a corun-cosched segment of version %u)",
			  o->shm, CS_VERSION);
		return CORUN_EXIT_RUNTIME;
	}
	int32_t none = 0;
	if (!atomic_compare_exchange_strong(&D.shm->daemon_pid, &none, (int32_t)getpid()) &&
	    kill(none, 0) == 0) {
		corun_err(PROG, "--shm: '%s' is served by the daemon with pid %d", o->shm,
			  (int)none);
		return CORUN_EXIT_RUNTIME;
	}
	atomic_store(&D.shm->daemon_pid, (int32_t)getpid());
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/touched.tsv", o->state_dir);
	D.journal = fopen(path, "a");
	if (!D.journal)
		return setup_fail(path);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	D.sfd = signalfd(-1, &set, SFD_CLOEXEC);
	pid_t parent = getppid();
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	D.start_ns = now_ns();
	int rc = CORUN_EXIT_OK;
	if (getppid() != parent) {
		corun_err(PROG, "the process that started it has already exited");
		teardown();
		return CORUN_EXIT_RUNTIME;
	}
	D.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	D.ep = epoll_create1(EPOLL_CLOEXEC);
	struct itimerspec its = { .it_interval = { o->tick_us / 1000000,
						   (o->tick_us % 1000000) * 1000 } };
	its.it_value = its.it_interval;
	struct epoll_event ev = { .events = EPOLLIN };
	if (D.sfd < 0 || D.tfd < 0 || D.ep < 0 || timerfd_settime(D.tfd, 0, &its, NULL) < 0 ||
	    (ev.data.u64 = 1, epoll_ctl(D.ep, EPOLL_CTL_ADD, D.sfd, &ev)) < 0 ||
	    (ev.data.u64 = 2, epoll_ctl(D.ep, EPOLL_CTL_ADD, D.tfd, &ev)) < 0 ||
	    (D.ufd >= 0 && (ev.data.u64 = 3, epoll_ctl(D.ep, EPOLL_CTL_ADD, D.ufd, &ev)) < 0)) {
		corun_err(PROG, "cannot start: %s", strerror(errno));
		teardown();
		return CORUN_EXIT_RUNTIME;
	}
	D.erl_us = cc_erl_us(0, 0, o->cost_switch_us);
	if (write_rank_env() < 0) {
		corun_err(PROG, "cannot write %s/rank_env.json: %s", o->state_dir, strerror(errno));
		teardown();
		return CORUN_EXIT_RUNTIME;
	}
	write_status(D.start_ns);
	for (;;) {
		struct epoll_event evs[64];
		int n = epoll_wait(D.ep, evs, 64, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = CORUN_EXIT_RUNTIME;
			D.exit_reason = "epoll_wait failed";
			break;
		}
		uint64_t now = now_ns();
		bool stop = false;
		for (int e = 0; e < n; e++) {
			uint64_t tag = evs[e].data.u64;
			if (tag == 1) {
				struct signalfd_siginfo si;
				if (read(D.sfd, &si, sizeof si) == (ssize_t)sizeof si) {
					D.exit_reason = strsignal((int)si.ssi_signo);
					stop = true;
				}
			} else if (tag == 2) {
				uint64_t exp;
				if (read(D.tfd, &exp, sizeof exp) == (ssize_t)sizeof exp) {
					D.n_late +=
						exp -
						1; /* the daemon ran late (RT throttling, load) */
					tick(now);
				}
			} else if (tag == 3) {
				recv_erl();
			} else {
				int i = (int)(tag >> 32) - 1, k = (int)(uint32_t)tag;
				if (i >= 0 && i < CS_SLOTS && k < D.p[i].nsock &&
				    D.p[i].sockfd[k] >= 0)
					on_arrival(i, k, now);
			}
		}
		if (stop)
			break;
	}
	teardown();
	return rc;
}

/* ------------------------------------------------------------------ options */

enum {
	O_SCHEME = 256,
	O_STATE,
	O_SHM,
	O_TICK,
	O_PB,
	O_BMAX,
	O_BPRIO,
	O_MPL,
	O_COST,
	O_ERLP,
	O_ALPHA,
	O_REDUCE,
	O_BCR,
	O_GANG,
	O_NODE,
	O_LISTEN,
	O_PEER,
	O_RESTORE,
	O_CHECK,
	O_MAXAGE,
	O_TABLE,
	O_DUMP,
	O_SPIN,
	O_BLOCKMAX,
};

static void add_peer(const char *v)
{
	int node, port;
	char ip[64], end;
	struct sockaddr_in a = { .sin_family = AF_INET };
	if (D.npeers == MAX_NODES || sscanf(v, "%d=%63[0-9.]:%d%c", &node, ip, &port, &end) != 3 ||
	    node < 0 || node >= MAX_NODES || port < 1 || port > 65535 ||
	    inet_pton(AF_INET, ip, &a.sin_addr) != 1)
		corun_usage_error(PROG,
				  "--peer: '%s' (expected NODE=IPv4:PORT, NODE from 0 to 255)", v);
	a.sin_port = htons((uint16_t)port);
	D.peers[D.npeers++] = (struct peer){ node, a };
}

int main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "scheme", required_argument, NULL, O_SCHEME },
		{ "state-dir", required_argument, NULL, O_STATE },
		{ "shm", required_argument, NULL, O_SHM },
		{ "tick-us", required_argument, NULL, O_TICK },
		{ "spin-us", required_argument, NULL, O_SPIN },
		{ "block-max-us", required_argument, NULL, O_BLOCKMAX },
		{ "pb-period-us", required_argument, NULL, O_PB },
		{ "boost-max-us", required_argument, NULL, O_BMAX },
		{ "boost-prio", required_argument, NULL, O_BPRIO },
		{ "mpl", required_argument, NULL, O_MPL },
		{ "cost-switch-us", required_argument, NULL, O_COST },
		{ "erl-period-us", required_argument, NULL, O_ERLP },
		{ "enp-alpha", required_argument, NULL, O_ALPHA },
		{ "wr-reduce", required_argument, NULL, O_REDUCE },
		{ "bcr-min-pending", required_argument, NULL, O_BCR },
		{ "gang-slice-ms", required_argument, NULL, O_GANG },
		{ "node-id", required_argument, NULL, O_NODE },
		{ "listen", required_argument, NULL, O_LISTEN },
		{ "peer", required_argument, NULL, O_PEER },
		{ "restore", required_argument, NULL, O_RESTORE },
		{ "check", required_argument, NULL, O_CHECK },
		{ "max-age-s", required_argument, NULL, O_MAXAGE },
		{ "decide-table", required_argument, NULL, O_TABLE },
		{ "dump-shm", required_argument, NULL, O_DUMP },
		CORUN_COMMON_LONG_OPTIONS
	};
	struct opts *o = &D.o;
	*o = (struct opts){ .scheme = S_LOCAL,
			    .shm = "/corun-cosched",
			    .tick_us = 1000,
			    .spin_us = 150,
			    .block_max_us = 1000,
			    .pb_period_us = 10000,
			    .boost_max_us = 10000,
			    .erl_period_us = 10000,
			    .gang_slice_ms = 100,
			    .boost_prio = 1,
			    .mpl = 5,
			    .bcr_min = 2,
			    .cost_switch_us = 6,
			    .enp_alpha = 0.5,
			    .reduce = CC_WR_MIN };
	const char *restore = NULL, *check = NULL, *table = NULL, *dump = NULL;
	bool have_scheme = false;
	double max_age = 2;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:hV", longopts, NULL)) != -1) {
		switch (c) {
		case O_SCHEME: {
			size_t k = 0;
			while (k < sizeof SCHEMES / sizeof SCHEMES[0] && strcmp(SCHEMES[k], optarg))
				k++;
			if (k == sizeof SCHEMES / sizeof SCHEMES[0])
				corun_usage_error(
					PROG,
					"--scheme: '%s' (expected local, batch, dcs, pb, ib, sb, "
					"hybrid, cc_s, cc_b or gang)",
					optarg);
			o->scheme = (enum scheme)k;
			have_scheme = true;
			break;
		}
		case O_STATE: o->state_dir = optarg; break;
		case O_SHM:
			if (optarg[0] != '/' || strchr(optarg + 1, '/') ||
			    strlen(optarg) > NAME_MAX - 1)
				corun_usage_error(
					PROG,
					"--shm: '%s' (expected a name such as /corun-cosched-0)",
					optarg);
			o->shm = optarg;
			break;
		case O_SPIN:
			o->spin_us =
				(long)corun_parse_int(PROG, "spin-us", optarg, 0, 1000000, false);
			break;
		case O_BLOCKMAX:
			o->block_max_us = (long)corun_parse_int(PROG, "block-max-us", optarg, 50,
								1000000, false);
			break;
		case O_TICK:
			o->tick_us =
				(long)corun_parse_int(PROG, "tick-us", optarg, 100, 100000, false);
			break;
		case O_PB:
			o->pb_period_us = (long)corun_parse_int(PROG, "pb-period-us", optarg, 1000,
								1000000, false);
			break;
		case O_BMAX:
			o->boost_max_us = (long)corun_parse_int(PROG, "boost-max-us", optarg, 100,
								1000000, false);
			break;
		case O_BPRIO:
			o->boost_prio =
				(int)corun_parse_int(PROG, "boost-prio", optarg, 1, 20, false);
			break;
		case O_MPL: o->mpl = (int)corun_parse_int(PROG, "mpl", optarg, 1, 64, false); break;
		case O_COST:
			o->cost_switch_us =
				corun_parse_double(PROG, "cost-switch-us", optarg, 0, 10000, false);
			break;
		case O_ERLP:
			o->erl_period_us = (long)corun_parse_int(PROG, "erl-period-us", optarg,
								 1000, 1000000, false);
			break;
		case O_ALPHA:
			o->enp_alpha = corun_parse_double(PROG, "enp-alpha", optarg, 0, 1, true);
			break;
		case O_REDUCE:
			if (!strcmp(optarg, "min"))
				o->reduce = CC_WR_MIN;
			else if (!strcmp(optarg, "max"))
				o->reduce = CC_WR_MAX;
			else
				corun_usage_error(PROG, "--wr-reduce: '%s' (expected min or max)",
						  optarg);
			break;
		case O_BCR:
			o->bcr_min = (int)corun_parse_int(PROG, "bcr-min-pending", optarg, 2,
							  CS_SLOTS, false);
			break;
		case O_GANG:
			o->gang_slice_ms = (long)corun_parse_int(PROG, "gang-slice-ms", optarg, 10,
								 60000, false);
			break;
		case O_NODE:
			o->node_id = (int)corun_parse_int(PROG, "node-id", optarg, 0, MAX_NODES - 1,
							  false);
			break;
		case O_LISTEN: o->listen = optarg; break;
		case O_PEER: add_peer(optarg); break;
		case O_RESTORE: restore = optarg; break;
		case O_CHECK: check = optarg; break;
		case O_MAXAGE:
			max_age = corun_parse_double(PROG, "max-age-s", optarg, 0, 86400, true);
			break;
		case O_TABLE: table = optarg; break;
		case O_DUMP: dump = optarg; break;
		default: corun_default_option(PROG, VERSION, USAGE, c, argv);
		}
	}
	corun_no_operands(PROG, argc, argv);
	if (restore)
		return run_restore(restore);
	if (check)
		return run_check(check, max_age);
	if (table)
		return run_table(table);
	if (dump)
		return run_dump(dump);
	if (!have_scheme)
		corun_usage_error(
			PROG, "--scheme: missing (expected local, batch, dcs, pb, ib, sb, hybrid, "
			      "cc_s, cc_b or gang)");
	if (!o->state_dir)
		corun_usage_error(
			PROG, "--state-dir: missing (expected a directory for status and summary)");
	return run_daemon();
}
