"""The irq_policy variants of paper 004 (schedulers/irq_steering/steer.py) for real, on a veth pair
between two network namespaces made here (root), where the per-CPU softnet and NET_RX counters
must show receive processing where each policy puts it. Restore after SIGKILL of the applying
runner goes through the journal and `corun recover`. The synthetic tree's tests are in
test_irq_steering.py."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from corun.run import schedulers
from tests.schedulers.steer_helpers import REPO, run_steer, steer
from tests.schedulers.variant_process import start_variant

XFER = Path(__file__).resolve().parent / "net_transfer.py"

# ---- for real: a veth pair between two namespaces --------------------------------------------

NS_A, NS_B = "sais-ta", "sais-tb"  # client / sender side, server / receiver side
IF_A, IF_B = "sais-tv0", "sais-tv1"
ADDR_A, ADDR_B = "10.78.0.1", "10.78.0.2"
ADDR_B_LATE = "10.78.0.3"  # added to B's interface by a test, after a policy was applied
IFACES = f"{NS_A}/{IF_A},{NS_B}/{IF_B}"


def sh(*argv, check=True):
    return subprocess.run(list(map(str, argv)), capture_output=True, text=True, check=check, timeout=60)


@pytest.fixture
def veth():
    if shutil.which("ip") is None or shutil.which("taskset") is None:
        pytest.skip("needs iproute2 and taskset")
    if os.cpu_count() < 2:
        pytest.skip("needs 2 CPUs to see processing move")
    for ns in (NS_A, NS_B):
        sh("ip", "netns", "del", ns, check=False)
    try:
        sh("ip", "netns", "add", NS_A)
        sh("ip", "netns", "add", NS_B)
        sh("ip", "link", "add", IF_A, "netns", NS_A, "type", "veth", "peer", "name", IF_B, "netns", NS_B)
        sh("ip", "-n", NS_A, "addr", "add", f"{ADDR_A}/24", "dev", IF_A)
        sh("ip", "-n", NS_B, "addr", "add", f"{ADDR_B}/24", "dev", IF_B)
        for ns, dev in ((NS_A, IF_A), (NS_B, IF_B), (NS_A, "lo"), (NS_B, "lo")):
            sh("ip", "-n", ns, "link", "set", dev, "up")
    except subprocess.CalledProcessError as exc:
        for ns in (NS_A, NS_B):
            sh("ip", "netns", "del", ns, check=False)
        pytest.skip(f"cannot make network namespaces here: {exc.stderr.strip()}")
    yield
    for ns in (NS_A, NS_B):
        sh("ip", "netns", "del", ns, check=False)


def in_ns(ns, cpu, *args):
    return ["ip", "netns", "exec", ns, "taskset", "-c", str(cpu), sys.executable, str(XFER), *map(str, args)]


def measure(listener, client) -> dict:
    """Start the listener, wait for it, snapshot, run the client, snapshot: where()."""
    srv = subprocess.Popen(listener, stdout=subprocess.PIPE, text=True)
    try:
        assert srv.stdout.readline().strip() == "ready"
        before = steer.snapshot()
        subprocess.run(client, check=True, timeout=120)
        after = steer.snapshot()
    finally:
        srv.terminate()
        srv.wait(timeout=10)
    return steer.where(before, after)


def bulk(receiver_cpu=0, sender_cpu=0, flows=1, nbytes=150_000_000):
    """Sender in A to receiver in B: B's receive path does the processing."""
    return measure(
        in_ns(NS_B, receiver_cpu, "sink", ADDR_B, flows),
        in_ns(NS_A, sender_cpu, "source", ADDR_B, flows, nbytes // flows),
    )


def fetch(client_cpu=1, server_cpu=0, requests=150, reply=1 << 20, addr=ADDR_B):
    """Client in A asks, server in B replies: A's receive path does the processing."""
    return measure(
        in_ns(NS_B, server_cpu, "serve", addr, reply), in_ns(NS_A, client_cpu, "fetch", addr, requests, reply)
    )


def share(w, cpu):
    return w["softnet_processed"]["share"][cpu]


def rps_of(ns, dev):
    return steer.parse_mask(sh("ip", "netns", "exec", ns, "cat", f"/sys/class/net/{dev}/queues/rx-0/rps_cpus").stdout)


def apply(policy, state, *extra, ifaces=IFACES):
    res = run_steer("apply", "--policy", policy, "--interfaces", ifaces, "--state", state, *extra)
    if res.returncode == 4:
        pytest.skip(res.stderr.strip())
    assert res.returncode == 0, res.stderr
    res = run_steer("verify", "--policy", policy, "--interfaces", ifaces, "--state", state, *extra)
    assert res.returncode == 0, res.stderr


def restore(state):
    res = run_steer("restore", "--state", state)
    assert res.returncode == 0, res.stderr


@pytest.mark.root
def test_veth_baseline_runs_on_the_senders_cpu(veth):
    w = bulk(receiver_cpu=0, sender_cpu=0)
    assert share(w, 0) > 0.7, w
    # sender on 0, receiver on 1: the data is processed on 0, the ACKs on 1
    w = bulk(receiver_cpu=1, sender_cpu=0)
    assert share(w, 0) > 0.1, w


@pytest.mark.root
def test_veth_dedicated_moves_processing(veth, tmp_path):
    apply("dedicated", tmp_path / "s.json", "--cpu", "1")
    assert rps_of(NS_B, IF_B) == 2
    w = bulk(receiver_cpu=0, sender_cpu=0)
    restore(tmp_path / "s.json")
    assert share(w, 1) > 0.7, w
    assert w["net_rx"]["per_cpu"][1] > 0
    assert rps_of(NS_B, IF_B) == 0


@pytest.mark.root
def test_veth_spread_uses_every_cpu(veth, tmp_path):
    apply("spread", tmp_path / "s.json")
    w = bulk(receiver_cpu=0, sender_cpu=0, flows=16)
    restore(tmp_path / "s.json")
    assert min(share(w, 0), share(w, 1)) > 0.05, w


@pytest.mark.root
def test_veth_source_aware_follows_the_consumer(veth, tmp_path):
    flows_before = Path("/proc/sys/net/core/rps_sock_flow_entries").read_text()
    # RFS on the data's receiving end only: the data follows the consumer to CPU 1, where the
    # ACKs it sends back are processed anyway (the baseline test shows the data on CPU 0)
    entries = schedulers.manifest("source_aware")["params"]["flow_entries"]["default"]  # the one default
    apply("source_aware", tmp_path / "s.json", "--flow-entries", entries, ifaces=f"{NS_B}/{IF_B}")
    w = bulk(receiver_cpu=1, sender_cpu=0)
    restore(tmp_path / "s.json")
    assert share(w, 1) > 0.9, w
    assert Path("/proc/sys/net/core/rps_sock_flow_entries").read_text() == flows_before


@pytest.mark.root
def test_veth_irqbalance_runs_the_daemon(veth, tmp_path):
    if shutil.which("irqbalance") is None:
        pytest.skip("irqbalance not installed (role irq_steering)")
    if steer.own_irqbalance(steer.Fs("/")):
        pytest.skip("an irqbalance daemon already runs on this machine")
    irqs_before = {p.parent.name: p.read_text() for p in Path("/proc/irq").glob("*/smp_affinity_list")}
    apply("irqbalance", tmp_path / "s.json")
    daemon = json.loads((tmp_path / "s.json").read_text())["daemon"]
    pid, st = daemon["pid"], daemon["starttime"]
    w = bulk(receiver_cpu=0, sender_cpu=0)  # veth has no IRQ: the daemon cannot move it
    restore(tmp_path / "s.json")
    assert share(w, 0) > 0.7, w
    assert steer.proc_ended(pid, st)  # gone, or exited and waiting for init to reap it
    assert not steer.own_irqbalance(steer.Fs("/"))  # the next run's apply is not refused
    irqs_after = {p.parent.name: p.read_text() for p in Path("/proc/irq").glob("*/smp_affinity_list")}
    assert irqs_after == irqs_before


def mark_args(
    action: str, state, servers: str = f"{NS_B}/{IF_B}", client: str = f"{NS_A}/{IF_A}", addresses: str = ""
) -> list:
    """steer.py arguments for sais_mark with `client` (A's end) as the client and `servers` (B's
    end); a half alone: client or servers "", and the client half then names the servers'
    `addresses`."""
    return [action, "--policy", "sais_mark", "--interfaces", client, "--server-interfaces", servers,
            "--server-addresses", addresses, "--state", state]  # fmt: skip


def mark_status(ns, dev) -> dict:
    return json.loads(
        sh(REPO / "schedulers/irq_steering/build/sais-mark-ctl", "status", "--iface", dev, "--netns", ns).stdout
    )


NOTHING_ATTACHED = {"xdp": 0, "tc_egress": 0, "tc_ingress": 0, "servers": 0, "stats": None}


@pytest.mark.root
def test_veth_sais_mark_steers_replies_to_the_requester(veth, tmp_path):
    before = fetch(client_cpu=1, server_cpu=0)
    res = run_steer(*mark_args("apply", tmp_path / "s.json"))
    if res.returncode == 4:
        pytest.skip(res.stderr.strip())
    assert res.returncode == 0, res.stderr
    assert run_steer(*mark_args("verify", tmp_path / "s.json")).returncode == 0
    ctl = REPO / "schedulers/irq_steering/build/sais-mark-ctl"
    try:
        w = fetch(client_cpu=1, server_cpu=0)
        st = json.loads(sh(ctl, "status", "--iface", IF_A, "--netns", NS_A).stdout)
        assert st["servers"] == 1
        # the client's programs count the requests they stamped and the replies they steered
        assert st["stats"]["stamped"] >= 150 and st["stats"]["steered"] > 0, st
        server = json.loads(sh(ctl, "status", "--iface", IF_B, "--netns", NS_B).stdout)["stats"]
        assert server["recorded"] >= 150 and server["reflected"] > 0, server
        # verify after traffic reads the counters and finds the replies steered
        assert run_steer(*mark_args("verify", tmp_path / "s.json")).returncode == 0
        # an address the server interface gained after apply is not a server's: its replies
        # carry marks (the server reflects them) but pass unsteered
        sh("ip", "-n", NS_B, "addr", "add", f"{ADDR_B_LATE}/24", "dev", IF_B)
        other = fetch(client_cpu=1, server_cpu=0, addr=ADDR_B_LATE)
        # and the client stamps only requests to a server: traffic to another address (the ssh
        # sessions a netns cluster keeps open) would read as requests nobody answers
        after = json.loads(sh(ctl, "status", "--iface", IF_A, "--netns", NS_A).stdout)["stats"]
        assert after["stamped"] == st["stats"]["stamped"], (st, after)
    finally:
        restore(tmp_path / "s.json")
    # without the marks the replies are processed on the server's CPU and the client's acks on
    # its own (about half each, or more on the server's: it depends on how acks coalesce)
    assert share(before, 1) < 0.7, before
    assert share(w, 1) > 0.9 and share(w, 1) > share(before, 1) + 0.2, (before, w)
    assert share(other, 1) < 0.7 and share(other, 1) < share(w, 1) - 0.2, (other, w)
    status = sh(ctl, "status", "--iface", IF_A, "--netns", NS_A)
    assert json.loads(status.stdout) == {"xdp": 0, "tc_egress": 0, "tc_ingress": 0, "servers": 0, "stats": None}
    # restore read the counters first and left them beside the state file (the run's sched/state/)
    counters = json.loads((tmp_path / "sais_mark_counters.json").read_text())
    assert counters["totals"]["steered"] > 0 and counters["totals"]["stamped"] >= 150, counters
    assert {r["role"] for r in counters["interfaces"]} == {"client", "server"}
    for ns, dev in ((NS_A, IF_A), (NS_B, IF_B)):  # the clsact qdiscs it made are gone too
        assert "clsact" not in sh("tc", "-n", ns, "qdisc", "show", "dev", dev).stdout
    assert "tx-checksumming: on" in sh("ip", "netns", "exec", NS_B, "ethtool", "-k", IF_B).stdout


@pytest.mark.root
def test_veth_sais_mark_refuses_a_server_interface_without_an_address(veth, tmp_path):
    # a second pair inside B, with no address
    sh("ip", "-n", NS_B, "link", "add", "sais-tdum", "type", "veth", "peer", "name", "sais-tdum1")
    res = run_steer(*mark_args("apply", tmp_path / "s.json", servers=f"{NS_B}/{IF_B},{NS_B}/sais-tdum"))
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1 and (
        f"params.server_interfaces: '{NS_B}/sais-tdum' (expected an interface with an IPv4 address)" in res.stderr
    ), res.stderr
    assert not (tmp_path / "s.json").exists()
    status = sh(REPO / "schedulers/irq_steering/build/sais-mark-ctl", "status", "--iface", IF_A, "--netns", NS_A)
    assert json.loads(status.stdout)["xdp"] == 0
    assert "tx-checksumming: on" in sh("ip", "netns", "exec", NS_B, "ethtool", "-k", IF_B).stdout


@pytest.mark.root
def test_veth_sais_mark_halves_applied_apart(veth, tmp_path):
    """On a testbed whose servers are other machines, the server half is applied on each server
    (by the controller, steer.py over ssh) and the client half on the client node with the
    servers' addresses: two processes, two state files, each half verified and restored alone."""
    server_state, client_state = tmp_path / "server" / "s.json", tmp_path / "client" / "c.json"
    server_state.parent.mkdir()
    client_state.parent.mkdir()
    server = {"client": "", "servers": f"{NS_B}/{IF_B}"}
    client = {"client": f"{NS_A}/{IF_A}", "servers": "", "addresses": ADDR_B}
    res = run_steer(*mark_args("apply", server_state, **server))
    if res.returncode == 4:
        pytest.skip(res.stderr.strip())
    try:
        assert res.returncode == 0, res.stderr
        res = run_steer(*mark_args("apply", client_state, **client))
        assert res.returncode == 0, res.stderr
        for state, half in ((server_state, server), (client_state, client)):
            res = run_steer(*mark_args("verify", state, **half))
            assert res.returncode == 0, res.stderr
        # each state holds its half: the client's the servers' addresses, the server's the checksumming
        c, s = json.loads(client_state.read_text()), json.loads(server_state.read_text())
        assert [a["role"] for a in c["attached"]] == ["client"] and c["server_addresses"] == [ADDR_B]
        assert (
            c["ethtool"] == []
            and "tx-checksumming: on" in sh("ip", "netns", "exec", NS_A, "ethtool", "-k", IF_A).stdout
        )
        assert [a["role"] for a in s["attached"]] == ["server"] and s["server_addresses"] == []
        assert "tx-checksumming: off" in sh("ip", "netns", "exec", NS_B, "ethtool", "-k", IF_B).stdout
        assert mark_status(NS_A, IF_A)["tc_ingress"] == 0 and mark_status(NS_B, IF_B)["xdp"] == 0
        w = fetch(client_cpu=1, server_cpu=0)
        st = mark_status(NS_A, IF_A)
        assert st["servers"] == 1 and st["stats"]["stamped"] >= 150 and st["stats"]["steered"] > 0, st
        srv = mark_status(NS_B, IF_B)["stats"]
        assert srv["recorded"] > 0 and srv["reflected"] > 0, srv
        for state, half in ((server_state, server), (client_state, client)):
            res = run_steer(*mark_args("verify", state, **half))
            assert res.returncode == 0, res.stderr
        assert share(w, 1) > 0.9, w
        # the client's restore leaves the server's half in place, and the other way round
        restore(client_state)
        assert mark_status(NS_A, IF_A) == NOTHING_ATTACHED and mark_status(NS_B, IF_B)["tc_ingress"] > 0
    finally:
        run_steer("restore", "--state", client_state)
        restore(server_state)
    for ns, dev in ((NS_A, IF_A), (NS_B, IF_B)):
        assert mark_status(ns, dev) == NOTHING_ATTACHED
        assert "clsact" not in sh("tc", "-n", ns, "qdisc", "show", "dev", dev).stdout
    assert "tx-checksumming: on" in sh("ip", "netns", "exec", NS_B, "ethtool", "-k", IF_B).stdout
    assert not client_state.exists() and not server_state.exists()
    # each half's counters beside its own state (a run's sched/state/, a server part's state_dir)
    counters = json.loads((client_state.parent / "sais_mark_counters.json").read_text())
    assert {r["role"] for r in counters["interfaces"]} == {"client"}
    assert counters["totals"]["stamped"] >= 150 and counters["totals"]["steered"] > 0, counters
    counters = json.loads((server_state.parent / "sais_mark_counters.json").read_text())
    assert {r["role"] for r in counters["interfaces"]} == {"server"}
    assert counters["totals"]["recorded"] > 0 and counters["totals"]["reflected"] > 0, counters
    assert counters["totals"]["stamped"] == 0 and counters["totals"]["steered"] == 0, counters


@pytest.mark.root
@pytest.mark.parametrize(
    "name, params",
    [
        ("dedicated", {"cpu": 1}),
        ("source_aware", {}),
        ("irqbalance", {}),
        ("sais_mark", {}),
        ("sais_mark", {"interfaces": f"{NS_A}/{IF_A}", "server_interfaces": "", "server_addresses": ADDR_B}),
    ],
    ids=["dedicated", "source_aware", "irqbalance", "sais_mark", "sais_mark_client_half"],
)
def test_restore_after_sigkill_via_recover(veth, tmp_path, name, params):
    if name == "irqbalance" and (shutil.which("irqbalance") is None or steer.own_irqbalance(steer.Fs("/"))):
        pytest.skip("irqbalance missing or already running")
    params = {"interfaces": IFACES, **params}
    if name == "sais_mark":  # both halves, or the client half alone (its servers elsewhere)
        params = {"interfaces": f"{NS_A}/{IF_A}", "server_interfaces": f"{NS_B}/{IF_B}", **params}
    env = dict(os.environ, CORUN_STATE_DIR=str(tmp_path / "run"), PYTHONPATH=str(REPO))
    before_rps = rps_of(NS_B, IF_B)
    flows_before = Path("/proc/sys/net/core/rps_sock_flow_entries").read_text()
    proc, err = start_variant(name, params, tmp_path / "sched", "sais-kill-test", env, REPO, must_verify=False)
    if err is not None:
        if "exit 4" in err or "skipped: feature missing" in err:
            pytest.skip(err.strip().splitlines()[-1])
        pytest.fail(err)
    state = json.loads((tmp_path / "sched" / "irq_steering.json").read_text())
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    journal = list((tmp_path / "run").glob("*.journal.json"))
    assert len(journal) == 1 and "restore" in journal[0].read_text()
    res = subprocess.run(
        [sys.executable, "-m", "corun", "recover"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    assert "recovered run sais-kill-test" in res.stdout and "error" not in res.stdout, res.stdout
    assert not (tmp_path / "sched" / "irq_steering.json").exists()
    assert rps_of(NS_B, IF_B) == before_rps
    assert Path("/proc/sys/net/core/rps_sock_flow_entries").read_text() == flows_before
    if state.get("daemon"):
        deadline = time.monotonic() + 5
        while steer.proc_starttime(state["daemon"]["pid"]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert steer.proc_starttime(state["daemon"]["pid"]) is None
    if name == "sais_mark":
        assert mark_status(NS_A, IF_A) == NOTHING_ATTACHED and mark_status(NS_B, IF_B) == NOTHING_ATTACHED
        assert "tx-checksumming: on" in sh("ip", "netns", "exec", NS_B, "ethtool", "-k", IF_B).stdout
