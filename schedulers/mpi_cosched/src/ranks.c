/* The ranks on this node: registration against PID reuse, their sockets, boosts, stops and
 * wake-ups, each journalled before it is first made, and their release. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cosched.h"

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
	if (sd_journal_line(D.journal, "%d %llu %d %d %d", (int)p->pid, p->starttime,
			    p->orig_policy, p->orig_prio, p->orig_nice) < 0)
		return -1;
	p->touched = true;
	return 0;
}

bool alive(struct proc *p)
{
	return sd_pidfd_signal(p->pidfd, 0) == 0;
}

void sync_boost(struct proc *p)
{
	if (p->prio && atomic_load(&D.shm->slot[p - D.p].boost_prio) == 0)
		p->prio = 0;
}

void boost(struct proc *p, int prio, uint64_t now)
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

void unboost(struct proc *p)
{
	sync_boost(p);
	if (!p->prio)
		return;
	if (alive(p))
		restore_sched(p->pid, p->orig_policy, p->orig_prio, p->orig_nice);
	p->prio = 0;
	atomic_store(&D.shm->slot[p - D.p].boost_prio, 0);
}

void stop_proc(struct proc *p, bool stop)
{
	if (p->stopped == stop || !alive(p) || touch(p) < 0)
		return;
	if (sd_pidfd_signal(p->pidfd, stop ? SIGSTOP : SIGCONT) == 0)
		p->stopped = stop;
}

void wake(struct proc *p)
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

void release(int i, bool free_slot)
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

void register_rank(int i, pid_t pid, uint64_t now)
{
	struct cs_slot *s = &D.shm->slot[i];
	if (s->starttime == 0)
		return; /* the rank is still filling its slot */
	struct proc *p = &D.p[i];
	memset(p, 0, sizeof *p);
	p->sched_fd = -1;
	/* the pidfd first, then the identity: a match means the pidfd refers to this rank */
	struct sd_proc id;
	enum sd_open got = sd_proc_open(&id, pid, s->starttime);
	if (got == SD_OPEN_REUSED) /* another process has this pid: followed, never touched */
		got = sd_proc_open(&id, pid, 0) == SD_OPEN_OK ? SD_OPEN_REUSED : SD_OPEN_GONE;
	if (got == SD_OPEN_GONE) { /* gone before we saw it: free the slot */
		int32_t cur = (int32_t)pid;
		atomic_compare_exchange_strong(&s->pid, &cur, 0);
		return;
	}
	p->used = true;
	p->pid = pid;
	p->pidfd = id.pidfd;
	p->starttime = id.starttime;
	if (got == SD_OPEN_REUSED) {
		p->refused = true;
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

void scan_socks(int i)
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
		int fd = sd_pidfd_getfd(p->pidfd, atoi(e->d_name));
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
