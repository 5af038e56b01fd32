/* The tick and the handling action of each scheme: boosts on arrival, periodic and
 * contention-aware (CC) boosts, gang slices; the ERL of this node (eq. 1) and its exchange
 * with the other nodes' daemons. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cosched.h"

const char *const SCHEMES[N_SCHEMES] = { "local", "batch",  "dcs",  "pb",   "ib",
					 "sb",    "hybrid", "cc_s", "cc_b", "gang" };
const char *const WAITS[3] = { "spin", "block", "spinblock" };

const char *scheme_name(int scheme)
{
	return SCHEMES[scheme];
}

enum cs_wait recv_wait(int scheme)
{
	switch (scheme) {
	case S_IB:
	case S_HYBRID:
	case S_CC_B: return CS_BLOCK;
	case S_SB: return CS_SPINBLOCK;
	default: return CS_SPIN;
	}
}

enum cs_wait send_wait(int scheme)
{
	return scheme == S_HYBRID || scheme == S_CC_B ? CS_BLOCK : CS_SPIN;
}

/* ------------------------------------------------------------------ decisions */

static double msg_erl(int node)
{
	if (node == D.o.node_id || node < 0 || node >= MAX_NODES || !D.erl_known[node])
		return D.erl_us;
	return D.erl_node[node];
}

bool pending(struct proc *p)
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

void on_arrival(int i, int k, uint64_t now)
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
	int64_t slot = (int64_t)(sd_real_ns() / slice);
	const char *run = jobs[slot % nj];
	D.gang_slot = slot;
	for (int i = 0; i < CS_SLOTS; i++) {
		struct proc *p = &D.p[i];
		if (p->used && !p->refused)
			stop_proc(p, strcmp(p->job, run) != 0 && nj > 1);
	}
}

/* ------------------------------------------------------------------ ERL */

void update_erl(uint64_t now)
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

void recv_erl(void)
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

void tick(uint64_t now)
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
