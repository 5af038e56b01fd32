/* sais-mark-ctl: attach, read back and detach the sais_mark BPF programs
 * (sais_mark.bpf.c) on one interface, in a network namespace or here.
 *
 *   sais-mark-ctl client --obj F --iface IF [--netns NS] --server ADDR [--server ADDR...]
 *                                                          XDP steer + tc egress stamp,
 *                                                          CPU map filled for every online CPU,
 *                                                          only packets from the servers' IPv4
 *                                                          addresses steered
 *   sais-mark-ctl server --obj F --iface IF [--netns NS]   tc ingress record + egress reflect
 *   sais-mark-ctl status --iface IF [--netns NS]           one JSON line: program ids, the
 *                                                          number of server addresses and the
 *                                                          programs' counters (stats: stamped,
 *                                                          recorded, reflected, steered, foreign;
 *                                                          null when none is attached)
 *   sais-mark-ctl detach --iface IF [--netns NS] [--remove-clsact]
 *                                                          removes what client/server attached
 *
 * client and server print {"clsact_created": BOOL}: whether they made the clsact qdisc, which
 * detach --remove-clsact then deletes as well.
 * The tc programs sit on the interface's clsact qdisc under handle 0x5a15, priority 1;
 * detach removes only those filters and the XDP program (and the qdisc with
 * --remove-clsact), so a clsact qdisc that was there before keeps its other filters.  Exit: 0 ok, 1 runtime error, 2 usage, 4 skipped (the kernel refused
 * a step, the reason on one line).
 */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <sched.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG "sais-mark-ctl"
#define TC_HANDLE 0x5a15
#define TC_PRIO 1
#define MARK_CPUS 63
#define MAX_SERVERS 1024 /* sais_servers' max_entries */

static __u32 servers[MAX_SERVERS];
static int n_servers;

static int skipped(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int skipped(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "skipped: feature missing: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 4;
}

static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

static int enter_netns(const char *ns)
{
	char path[512];
	int fd;

	if (ns == NULL || strcmp(ns, "-") == 0)
		return 0;
	snprintf(path, sizeof(path), "/var/run/netns/%s", ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
		fprintf(stderr, PROG ": network namespace %s: %s\n", ns, strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

/* Set when this run created the interface's clsact qdisc (printed for the caller). */
static bool clsact_created;

static int tc_attach(int ifindex, enum bpf_tc_attach_point where, int prog_fd, const char *name)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = where);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = TC_HANDLE, .priority = TC_PRIO,
			    .prog_fd = prog_fd, .flags = BPF_TC_F_REPLACE);
	int err = bpf_tc_hook_create(&hook);

	if (err && err != -EEXIST)
		return skipped("clsact qdisc: %s", strerror(-err));
	if (err == 0)
		clsact_created = true;
	err = bpf_tc_attach(&hook, &opts);
	if (err)
		return skipped("tc %s program %s: %s",
			       where == BPF_TC_EGRESS ? "egress" : "ingress", name, strerror(-err));
	return 0;
}

static int tc_query(int ifindex, enum bpf_tc_attach_point where)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = where);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = TC_HANDLE, .priority = TC_PRIO);

	return bpf_tc_query(&hook, &opts) == 0 ? (int)opts.prog_id : 0;
}

static void tc_detach(int ifindex, enum bpf_tc_attach_point where)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = where);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = TC_HANDLE, .priority = TC_PRIO);

	bpf_tc_detach(&hook, &opts);
}

static int prog_fd(struct bpf_object *obj, const char *name)
{
	struct bpf_program *p = bpf_object__find_program_by_name(obj, name);

	return p ? bpf_program__fd(p) : -1;
}

static int attach(const char *role, const char *objpath, int ifindex)
{
	struct bpf_object *obj = bpf_object__open_file(objpath, NULL);
	int err, rc = 0;

	if (obj == NULL || libbpf_get_error(obj)) {
		fprintf(stderr, PROG ": cannot open %s: %s\n", objpath, strerror(errno));
		return 1;
	}
	err = bpf_object__load(obj);
	if (err) {
		rc = skipped("loading the BPF programs: %s", strerror(-err));
		goto out;
	}
	if (strcmp(role, "client") == 0) {
		struct bpf_map *m = bpf_object__find_map_by_name(obj, "sais_cpus");
		int n = libbpf_num_possible_cpus();

		for (int cpu = 0; m != NULL && cpu < n && cpu < MARK_CPUS; cpu++) {
			struct bpf_cpumap_val v = { .qsize = 2048 };
			__u32 k = (__u32)cpu;

			err = bpf_map_update_elem(bpf_map__fd(m), &k, &v, 0);
			if (err && errno != ENODEV && errno != EINVAL) {
				rc = skipped("CPU map entry for CPU %d: %s", cpu, strerror(errno));
				goto out;
			}
		}
		m = bpf_object__find_map_by_name(obj, "sais_servers");
		for (int i = 0; i < n_servers; i++) {
			__u8 one = 1;

			if (m == NULL ||
			    bpf_map_update_elem(bpf_map__fd(m), &servers[i], &one, 0)) {
				fprintf(stderr, PROG ": server address map: %s\n",
					m == NULL ? "missing in the object" : strerror(errno));
				rc = 1;
				goto out;
			}
		}
		err = bpf_xdp_attach(ifindex, prog_fd(obj, "steer_xdp"), XDP_FLAGS_DRV_MODE, NULL);
		if (err) {
			rc = skipped("native XDP on the interface: %s", strerror(-err));
			goto out;
		}
		rc = tc_attach(ifindex, BPF_TC_EGRESS, prog_fd(obj, "stamp_egress"),
			       "stamp_egress");
	} else {
		rc = tc_attach(ifindex, BPF_TC_INGRESS, prog_fd(obj, "record_ingress"),
			       "record_ingress");
		if (rc == 0)
			rc = tc_attach(ifindex, BPF_TC_EGRESS, prog_fd(obj, "reflect_egress"),
				       "reflect_egress");
	}
out:
	bpf_object__close(obj); /* the attached programs keep themselves and their maps */
	return rc;
}

/* An fd of the map called `name` among the maps of the program with id prog_id, or -1. */
static int map_of(__u32 prog_id, const char *name)
{
	__u32 map_ids[16] = { 0 };
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);
	int fd = prog_id ? bpf_prog_get_fd_by_id(prog_id) : -1, found = -1;

	if (fd < 0)
		return -1;
	info.nr_map_ids = 16;
	info.map_ids = (__u64)(unsigned long)map_ids;
	if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0) {
		for (__u32 i = 0; i < info.nr_map_ids && i < 16 && found < 0; i++) {
			struct bpf_map_info mi = { 0 };
			__u32 mlen = sizeof(mi);
			int mfd = bpf_map_get_fd_by_id(map_ids[i]);

			if (mfd < 0)
				continue;
			if (bpf_obj_get_info_by_fd(mfd, &mi, &mlen) == 0 &&
			    strcmp(mi.name, name) == 0)
				found = mfd;
			else
				close(mfd);
		}
	}
	close(fd);
	return found;
}

/* Entries in the sais_servers map of the XDP program with id prog_id (0 when none). */
static int servers_of(__u32 prog_id)
{
	int mfd = map_of(prog_id, "sais_servers"), n = 0;
	__u32 key, next;
	void *prev = NULL;

	if (mfd < 0)
		return 0;
	while (bpf_map_get_next_key(mfd, prev, &next) == 0) {
		n++;
		key = next;
		prev = &key;
	}
	close(mfd);
	return n;
}

#define N_STATS 5 /* sais_stats' entries: stamped, recorded, reflected, steered, foreign */

/* sais_stats of the program with id prog_id, summed over CPUs; false when it has none. */
static bool stats_of(__u32 prog_id, unsigned long long out[N_STATS])
{
	int mfd = map_of(prog_id, "sais_stats"), ncpu = libbpf_num_possible_cpus();
	__u64 *per_cpu;
	bool ok = true;

	memset(out, 0, N_STATS * sizeof(out[0]));
	if (mfd < 0 || ncpu <= 0) {
		if (mfd >= 0)
			close(mfd);
		return false;
	}
	per_cpu = calloc((size_t)ncpu, sizeof(*per_cpu));
	if (per_cpu == NULL)
		ok = false;
	for (__u32 k = 0; ok && k < N_STATS; k++) {
		if (bpf_map_lookup_elem(mfd, &k, per_cpu) != 0) {
			ok = false;
			break;
		}
		for (int c = 0; c < ncpu; c++)
			out[k] += per_cpu[c];
	}
	free(per_cpu);
	close(mfd);
	return ok;
}

int main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "obj", required_argument, NULL, 'o' },
		{ "iface", required_argument, NULL, 'i' },
		{ "netns", required_argument, NULL, 'n' },
		{ "remove-clsact", no_argument, NULL, 'r' },
		{ "server", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	const char *obj = NULL, *iface = NULL, *ns = NULL, *cmd;
	bool remove_clsact = false;
	unsigned ifindex;
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': obj = optarg; break;
		case 'i': iface = optarg; break;
		case 'n': ns = optarg; break;
		case 'r': remove_clsact = true; break;
		case 's':
			if (n_servers == MAX_SERVERS ||
			    inet_pton(AF_INET, optarg, &servers[n_servers]) != 1) {
				fprintf(stderr,
					PROG
					": --server '%s' (expected an IPv4 address, at most %d)\n",
					optarg, MAX_SERVERS);
				return 2;
			}
			n_servers++;
			break;
		default:
			fprintf(stderr, PROG ": unknown option or missing value: '%s'\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (optind != argc - 1 || iface == NULL) {
		fprintf(stderr, PROG ": usage: " PROG " client|server|status|detach --iface IF "
				     "[--netns NS] [--obj F] [--server ADDR...]\n");
		return 2;
	}
	cmd = argv[optind];
	libbpf_set_print(quiet);
	if (enter_netns(ns) != 0)
		return 1;
	ifindex = if_nametoindex(iface);
	if (ifindex == 0) {
		fprintf(stderr, PROG ": interface %s: %s\n", iface, strerror(errno));
		return 1;
	}
	if (strcmp(cmd, "client") == 0 || strcmp(cmd, "server") == 0) {
		if (obj == NULL) {
			fprintf(stderr, PROG ": --obj F is required for %s\n", cmd);
			return 2;
		}
		if (strcmp(cmd, "client") == 0 && n_servers == 0) {
			fprintf(stderr,
				PROG ": --server ADDR is required for client (the servers whose "
				     "packets are steered)\n");
			return 2;
		}
		int rc = attach(cmd, obj, (int)ifindex);

		printf("{\"clsact_created\": %s}\n", clsact_created ? "true" : "false");
		return rc;
	}
	if (strcmp(cmd, "status") == 0) {
		__u32 xdp_id = 0;
		int ingress = tc_query((int)ifindex, BPF_TC_INGRESS);
		unsigned long long st[N_STATS];
		bool have;

		bpf_xdp_query_id((int)ifindex, XDP_FLAGS_DRV_MODE, &xdp_id);
		/* the client's programs share one object (XDP's maps), the server's another (tc ingress's) */
		have = stats_of(xdp_id ? xdp_id : (__u32)ingress, st);
		printf("{\"xdp\": %u, \"tc_egress\": %d, \"tc_ingress\": %d, \"servers\": %d",
		       xdp_id, tc_query((int)ifindex, BPF_TC_EGRESS), ingress, servers_of(xdp_id));
		if (have)
			printf(", \"stats\": {\"stamped\": %llu, \"recorded\": %llu, \"reflected\": %llu, "
			       "\"steered\": %llu, \"foreign\": %llu}",
			       st[0], st[1], st[2], st[3], st[4]);
		else
			printf(", \"stats\": null");
		printf("}\n");
		return 0;
	}
	if (strcmp(cmd, "detach") == 0) {
		bpf_xdp_detach((int)ifindex, XDP_FLAGS_DRV_MODE, NULL);
		tc_detach((int)ifindex, BPF_TC_EGRESS);
		tc_detach((int)ifindex, BPF_TC_INGRESS);
		if (remove_clsact) {
			DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = (int)ifindex,
					    .attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS);

			bpf_tc_hook_destroy(&hook);
		}
		return 0;
	}
	fprintf(stderr, PROG ": '%s' (expected client, server, status or detach)\n", cmd);
	return 2;
}
