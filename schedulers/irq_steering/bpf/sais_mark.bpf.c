// SPDX-License-Identifier: GPL-2.0
/* sais_mark: the SAIs mark of paper 004 (section 4.2) carried in the IPv4 DSCP field.
 *
 *   client tc egress   stamp_egress    DSCP = sending CPU + 1 (the paper's aff_core_id),
 *                                      on segments to a server (an address in
 *                                      sais_servers) that carry data (the requests)
 *   server tc ingress  record_ingress  flow (client addr/port -> server addr/port) -> mark
 *   server tc egress   reflect_egress  replies of a recorded flow carry its mark
 *   client XDP         steer_xdp       a marked packet from a server (an address in
 *                                      sais_servers) goes to the CPU map entry of its mark,
 *                                      so the stack processes it on that CPU
 *
 * The paper used an IP option; DSCP keeps the header size (no MTU or offload changes) and
 * gives 6 bits: marks 1..63 name CPUs 0..62, 0 means unmarked.  ECN bits are kept.
 * Other senders set DSCP too (ssh's default IPQoS throughput is DSCP 2), so the client steers
 * only packets whose source is one of the servers the loader named.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/tcp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define MARK_CPUS 63
#define IP_CSUM_OFF (ETH_HLEN + __builtin_offsetof(struct iphdr, check))
#define IP_TOS_OFF (ETH_HLEN + __builtin_offsetof(struct iphdr, tos))

struct flow {
	__u32 client_addr;
	__u32 server_addr;
	__u16 client_port;
	__u16 server_port;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct flow);
	__type(value, __u8);
} sais_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_CPUMAP);
	__uint(max_entries, MARK_CPUS);
	__type(key, __u32);
	__type(value, struct bpf_cpumap_val);
} sais_cpus SEC(".maps");

/* The servers' IPv4 addresses (network order), filled by the loader: only their packets are
 * steered. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} sais_servers SEC(".maps");

/* Counters for the read-back: 0 stamped, 1 recorded, 2 reflected, 3 steered,
 * 4 marked but not from a server (passed on unsteered). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 5);
	__type(key, __u32);
	__type(value, __u64);
} sais_stats SEC(".maps");

static __always_inline void count(__u32 k)
{
	__u64 *v = bpf_map_lookup_elem(&sais_stats, &k);

	if (v)
		*v += 1;
}

/* The IPv4 header and TCP ports of a TCP packet, or NULL. */
static __always_inline struct iphdr *tcp4(void *data, void *end, struct tcphdr **tcp)
{
	struct ethhdr *eth = data;
	struct iphdr *ip;

	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return 0;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->ihl < 5 || ip->protocol != IPPROTO_TCP)
		return 0;
	*tcp = (void *)ip + ip->ihl * 4;
	if ((void *)(*tcp + 1) > end)
		return 0;
	return ip;
}

static __always_inline int set_mark(struct __sk_buff *skb, __u8 tos, __u8 mark)
{
	__u8 new_tos = (__u8)((mark << 2) | (tos & 3));
	__u16 old_w = bpf_htons((__u16)tos), new_w = bpf_htons((__u16)new_tos);

	if (new_tos == tos)
		return 0;
	/* tos is the low byte of the header's first 16-bit word */
	if (bpf_l3_csum_replace(skb, IP_CSUM_OFF, old_w, new_w, 2))
		return -1;
	return bpf_skb_store_bytes(skb, IP_TOS_OFF, &new_tos, 1, 0);
}

SEC("tc")
int stamp_egress(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct tcphdr *tcp;
	struct iphdr *ip = tcp4(data, end, &tcp);
	__u32 cpu = bpf_get_smp_processor_id(), dst;

	if (!ip || cpu >= MARK_CPUS)
		return TC_ACT_OK;
	/* Only requests to the servers: the client's other traffic (ssh sessions into its
	 * namespace, say) has nobody to reflect a mark and is left alone. */
	dst = ip->daddr;
	if (!bpf_map_lookup_elem(&sais_servers, &dst))
		return TC_ACT_OK;
	/* Only segments with data: requests leave from the application's CPU; pure ACKs
	 * leave from wherever receive processing ran and would feed the steering back. */
	if (bpf_ntohs(ip->tot_len) <= ip->ihl * 4 + tcp->doff * 4)
		return TC_ACT_OK;
	if (set_mark(skb, ip->tos, (__u8)(cpu + 1)) == 0)
		count(0);
	return TC_ACT_OK;
}

SEC("tc")
int record_ingress(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct tcphdr *tcp;
	struct iphdr *ip = tcp4(data, end, &tcp);
	struct flow f;
	__u8 mark;

	if (!ip)
		return TC_ACT_OK;
	mark = ip->tos >> 2;
	if (!mark)
		return TC_ACT_OK;
	f.client_addr = ip->saddr;
	f.server_addr = ip->daddr;
	f.client_port = tcp->source;
	f.server_port = tcp->dest;
	bpf_map_update_elem(&sais_flows, &f, &mark, BPF_ANY);
	count(1);
	return TC_ACT_OK;
}

SEC("tc")
int reflect_egress(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct tcphdr *tcp;
	struct iphdr *ip = tcp4(data, end, &tcp);
	struct flow f;
	__u8 *mark;

	if (!ip)
		return TC_ACT_OK;
	f.client_addr = ip->daddr;
	f.server_addr = ip->saddr;
	f.client_port = tcp->dest;
	f.server_port = tcp->source;
	mark = bpf_map_lookup_elem(&sais_flows, &f);
	if (mark && set_mark(skb, ip->tos, *mark) == 0)
		count(2);
	return TC_ACT_OK;
}

SEC("xdp")
int steer_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct tcphdr *tcp;
	struct iphdr *ip = tcp4(data, end, &tcp);
	__u32 mark, src;

	if (!ip)
		return XDP_PASS;
	mark = ip->tos >> 2;
	if (!mark)
		return XDP_PASS;
	src = ip->saddr;
	if (!bpf_map_lookup_elem(&sais_servers, &src)) {
		count(4);
		return XDP_PASS;
	}
	count(3);
	return (int)bpf_redirect_map(&sais_cpus, mark - 1, XDP_PASS);
}

char LICENSE[] SEC("license") = "GPL";
