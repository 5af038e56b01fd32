/* Set-up, the loop and the one teardown: every option is checked and every feature probed
 * before anything is created or touched; signals arrive through a signalfd, ticks through a
 * timerfd and arrivals through epoll, so no work happens in a signal handler; every way out
 * restores every rank. Also the files it writes: rank_env.json, status.json, summary.json. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "cosched.h"

struct daemon D;

/* STATE/rank_env.json: what every rank of the run needs in its environment
 * (the runner passes it to mpirun with -x). */
static int write_rank_env(void)
{
	char exe[PATH_MAX], num[32];
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
	struct sd_file sf;
	FILE *f = sd_file_begin(&sf, D.o.state_dir, "rank_env.json");
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
	snprintf(num, sizeof num, "%ld", D.o.block_min_us);
	corun_json_str(&j, "CORUN_COSCHED_BLOCK_MIN_US", num);
	snprintf(num, sizeof num, "%ld", D.o.block_max_us);
	corun_json_str(&j, "CORUN_COSCHED_BLOCK_MAX_US", num);
	corun_json_str(&j, "CORUN_COSCHED_COLL", D.o.coll ? "native" : "nonblocking");
	/* every message through TCP sockets, also between ranks of one node:
	 * the daemon sees arrivals on sockets (the NIC of the paper) */
	corun_json_str(&j, "OMPI_MCA_btl", "tcp,self");
	corun_json_end(&j);
	return sd_file_commit(&sf);
}

void write_status(uint64_t now)
{
	struct sd_file sf;
	FILE *f = sd_file_begin(&sf, D.o.state_dir, "status.json");
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
	(void)sd_file_commit(&sf);
	D.last_status_ns = now;
}

/* ------------------------------------------------------------------ teardown */

void json_counters(struct corun_json *j, const struct done_rank *d)
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
	corun_json_int(j, "arrival_md_n", (int64_t)d->arr_md_n);
	corun_json_int(j, "blocks", (int64_t)d->blocks);
	corun_json_int(j, "coll_calls", (int64_t)d->coll_calls);
	corun_json_int(j, "arrivals", (int64_t)d->arrivals);
	corun_json_int(j, "wakeups", (int64_t)d->wakeups);
	corun_json_int(j, "boosts", (int64_t)d->boosts);
}

static void write_summary(void)
{
	FILE *f = sd_fopen_in(D.o.state_dir, "summary.json", "w");
	if (!f)
		return;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double wall = (double)(sd_mono_ns() - D.start_ns) / 1e9;
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

/* ------------------------------------------------------------------ the daemon */

/* --lifeline-s: the runner writes a byte to the daemon's stdin every second or so. Its end
 * of file (the ssh session closed) or S seconds without a byte (the node cut off from the
 * runner: a session the link lost never ends on this side, exit 1) end the daemon, which
 * restores its ranks as on SIGTERM. Returns the reason to stop, or NULL. */
static const char *lifeline_read(uint64_t now)
{
	char buf[256];
	for (;;) {
		ssize_t n = read(0, buf, sizeof buf);
		if (n > 0) {
			D.last_word_ns = now;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return NULL;
		return "the runner's lifeline closed (stdin)";
	}
}

static const char *lifeline_lost(uint64_t now)
{
	if (D.o.lifeline_s <= 0 || (double)(now - D.last_word_ns) < D.o.lifeline_s * 1e9)
		return NULL;
	return "no word from the runner within --lifeline-s (its connection is lost)";
}

static int setup_fail(const char *what)
{
	corun_err(PROG, "%s: %s", what, strerror(errno));
	return CORUN_EXIT_RUNTIME;
}

int run_daemon(void)
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
	int probe = sd_pidfd_open(getpid());
	if (probe < 0) {
		corun_err(PROG, "pidfd_open: %s (expected Linux >= 5.6)", strerror(errno));
		return CORUN_EXIT_SKIPPED;
	}
	int dup_probe = sd_pidfd_getfd(probe, 0);
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
	D.journal = sd_journal_open(o->state_dir, "touched.tsv");
	if (!D.journal)
		return setup_fail("touched.tsv");
	D.sfd = sd_signals_open(); /* and SIGTERM when the starter dies */
	D.start_ns = sd_mono_ns();
	int rc = CORUN_EXIT_OK;
	if (D.sfd == -2) {
		D.sfd = -1;
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
	D.last_word_ns = D.start_ns;
	if (D.sfd < 0 || D.tfd < 0 || D.ep < 0 || timerfd_settime(D.tfd, 0, &its, NULL) < 0 ||
	    (ev.data.u64 = 1, epoll_ctl(D.ep, EPOLL_CTL_ADD, D.sfd, &ev)) < 0 ||
	    (ev.data.u64 = 2, epoll_ctl(D.ep, EPOLL_CTL_ADD, D.tfd, &ev)) < 0 ||
	    (D.ufd >= 0 && (ev.data.u64 = 3, epoll_ctl(D.ep, EPOLL_CTL_ADD, D.ufd, &ev)) < 0) ||
	    (o->lifeline_s > 0 &&
	     (fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK) < 0 ||
	      (ev.data.u64 = 4, epoll_ctl(D.ep, EPOLL_CTL_ADD, 0, &ev)) < 0))) {
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
		uint64_t now = sd_mono_ns();
		bool stop = false;
		for (int e = 0; e < n; e++) {
			uint64_t tag = evs[e].data.u64;
			if (tag == 1) {
				const char *sig = sd_signal_read(D.sfd);
				if (sig) {
					D.exit_reason = sig;
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
				const char *lost = lifeline_lost(now);
				if (lost) {
					D.exit_reason = lost;
					rc = CORUN_EXIT_RUNTIME;
					stop = true;
				}
			} else if (tag == 3) {
				recv_erl();
			} else if (tag == 4) {
				const char *closed = lifeline_read(now);
				if (closed) { /* the runner's session ended: a stop like SIGTERM */
					D.exit_reason = closed;
					stop = true;
				}
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
