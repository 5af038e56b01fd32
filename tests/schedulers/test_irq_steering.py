"""The irq_policy variants of paper 004 (schedulers/irq_steering/steer.py) on a synthetic /proc
and /sys tree: apply, verify by reading back, restore; the parameters' checks, each a line and
nothing changed; snapshot and where; the manifests. For real, on a veth pair, in
test_irq_steering_veth.py."""

import json
from pathlib import Path

import pytest

from corun.errors import ConfigError
from corun.run import schedulers
from tests.schedulers.steer_helpers import VARIANTS, run_steer, steer

# ---- a synthetic tree ------------------------------------------------------------------------


def put(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text + "\n")


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "root"
    put(root, "sys/devices/system/cpu/online", "0-3")
    for q in ("rx-0", "rx-1"):
        put(root, f"sys/class/net/nic0/queues/{q}/rps_cpus", "0")
        put(root, f"sys/class/net/nic0/queues/{q}/rps_flow_cnt", "0")
    put(root, "sys/class/net/nic0/queues/tx-0/xps_cpus", "0")
    for irq in ("40", "41"):
        put(root, f"sys/class/net/nic0/device/msi_irqs/{irq}", "msix")
        put(root, f"proc/irq/{irq}/smp_affinity_list", "0-3")
    put(root, "netns/h1/sys/class/net/eth0/queues/rx-0/rps_cpus", "00000000")
    put(root, "netns/h1/sys/class/net/eth0/queues/rx-0/rps_flow_cnt", "0")
    put(root, "proc/sys/net/core/rps_sock_flow_entries", "0")
    put(
        root,
        "proc/softirqs",
        "                    CPU0       CPU1       CPU2       CPU3\n"
        "          HI:          0          0          0          0\n"
        "      NET_RX:        100        200         10          0",
    )
    put(
        root,
        "proc/net/softnet_stat",
        "00000010 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 "
        "00000000 00000000 00000000\n"
        "00000020 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 "
        "00000000 00000000 00000001\n"
        "00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 "
        "00000000 00000000 00000002\n"
        "00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 "
        "00000000 00000000 00000003",
    )
    return root


def values(root: Path) -> dict:
    files = sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and ("queues/rx" in str(p) or "/irq/" in str(p) or p.name == "rps_sock_flow_entries")
    )
    return {str(p.relative_to(root)): p.read_text().strip() for p in files}


SYNTH_CASES = {
    "spread": (
        [],
        {
            "sys/class/net/nic0/queues/rx-0/rps_cpus": "0000000f",
            "netns/h1/sys/class/net/eth0/queues/rx-0/rps_cpus": "0000000f",
            "proc/irq/40/smp_affinity_list": "0,1,2,3",
        },
    ),
    "dedicated": (
        ["--cpu", "2"],
        {
            "sys/class/net/nic0/queues/rx-1/rps_cpus": "00000004",
            "proc/irq/41/smp_affinity_list": "2",
            "netns/h1/sys/class/net/eth0/queues/rx-0/rps_cpus": "00000004",
        },
    ),
    "source_aware": (
        ["--flow-entries", "4096"],
        {
            "proc/sys/net/core/rps_sock_flow_entries": "4096",
            "sys/class/net/nic0/queues/rx-0/rps_flow_cnt": "2048",
            "netns/h1/sys/class/net/eth0/queues/rx-0/rps_flow_cnt": "4096",
            "sys/class/net/nic0/queues/rx-0/rps_cpus": "0000000f",
            "proc/irq/40/smp_affinity_list": "0-3",
        },
    ),
}


@pytest.mark.parametrize("policy", list(SYNTH_CASES))
def test_synthetic_apply_verify_restore(tree, tmp_path, policy):
    extra, expect = SYNTH_CASES[policy]
    common = [
        "--policy",
        policy,
        "--interfaces",
        "nic0,h1/eth0",
        "--root",
        tree,
        "--state",
        tmp_path / "state.json",
        *extra,
    ]
    before = values(tree)
    res = run_steer("apply", *common)
    assert res.returncode == 0, res.stderr
    after = values(tree)
    for rel, v in expect.items():
        assert after[rel] == v, rel
    assert run_steer("verify", *common).returncode == 0
    # a change behind the policy's back is caught by the read-back
    (tree / "sys/class/net/nic0/queues/rx-1/rps_cpus").write_text("00000008\n")
    res = run_steer("verify", *common)
    assert res.returncode == 1 and "not in effect" in res.stderr and "rx-1/rps_cpus" in res.stderr
    res = run_steer("restore", "--state", tmp_path / "state.json")
    assert res.returncode == 0, res.stderr
    assert values(tree) == before
    assert not (tmp_path / "state.json").exists()
    assert run_steer("restore", "--state", tmp_path / "state.json").returncode == 0  # idempotent


def test_synthetic_irqbalance_daemon(tree, tmp_path):
    fake = tmp_path / "irqbalance"
    fake.write_text("#!/bin/sh\nexec sleep 300\n")
    fake.chmod(0o755)
    common = [
        "--policy",
        "irqbalance",
        "--interfaces",
        "nic0",
        "--root",
        tree,
        "--irqbalance-bin",
        fake,
        "--state",
        tmp_path / "state.json",
    ]
    (tree / "sys/class/net/nic0/queues/rx-0/rps_cpus").write_text("3\n")
    assert run_steer("apply", *common).returncode == 0
    st = json.loads((tmp_path / "state.json").read_text())
    pid = st["daemon"]["pid"]
    assert steer.proc_starttime(pid) == st["daemon"]["starttime"]
    assert (tree / "sys/class/net/nic0/queues/rx-0/rps_cpus").read_text().strip() == "00000000"
    assert run_steer("verify", *common).returncode == 0
    assert run_steer("restore", "--state", tmp_path / "state.json").returncode == 0
    assert steer.proc_starttime(pid) is None or Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    assert (tree / "sys/class/net/nic0/queues/rx-0/rps_cpus").read_text().strip() == "3"


@pytest.mark.parametrize(
    "client, servers, addresses",
    [
        ("nic0", "h1/eth0", ""),  # both halves here
        ("nic0", "", "10.0.0.2,localhost"),  # the client half, its servers elsewhere
        ("", "h1/eth0", ""),  # a server half
    ],
    ids=["both", "client", "server"],
)
def test_synthetic_sais_mark_is_skipped(tree, tmp_path, client, servers, addresses):
    """Each form of sais_mark passes the parameter checks and stops where BPF is needed."""
    res = run_steer(
        "apply", "--policy", "sais_mark", "--interfaces", client, "--server-interfaces", servers,
        "--server-addresses", addresses, "--root", tree, "--state", tmp_path / "s.json",
    )  # fmt: skip
    assert res.returncode == 4 and res.stderr.startswith("skipped: feature missing: "), res.stderr
    assert res.stderr.count("\n") == 1


def test_server_addresses_are_resolved_to_ipv4():
    args = steer.build_parser().parse_args(["apply", "--policy", "sais_mark", "--state", "s.json"])
    assert steer.parse_addresses(args, "10.0.0.3, localhost,10.0.0.3") == ["10.0.0.3", "127.0.0.1"]
    with pytest.raises(steer.UsageError, match=r"params.server_addresses: 'nohost.invalid' \(expected IPv4"):
        steer.parse_addresses(args, "10.0.0.2,nohost.invalid")


def test_synthetic_source_aware_without_the_flow_table_is_skipped_before_any_change(tree, tmp_path):
    """In a network namespace other than the initial one (an emulated testbed's node) the kernel
    hides rps_sock_flow_entries: source_aware says so in one line and changes nothing."""
    (tree / "proc/sys/net/core/rps_sock_flow_entries").unlink()
    before = values(tree)
    res = run_steer(
        "apply", "--policy", "source_aware", "--interfaces", "nic0", "--flow-entries", "4096",
        "--root", tree, "--state", tmp_path / "s.json",
    )  # fmt: skip
    assert res.returncode == 4 and res.stderr.count("\n") == 1, res.stderr
    assert res.stderr.startswith("skipped: feature missing: RFS's flow table /proc/sys/net/core/rps_sock_flow_entries")
    assert values(tree) == before and not (tmp_path / "s.json").exists()


BAD = [
    (
        ["--policy", "dedicated", "--cpu", "7"],
        "corun: schedulers/dedicated/manifest.yaml: params.cpu: 7 (expected an online CPU (0,1,2,3))",
    ),
    (["--policy", "spread", "--interfaces", "nope0"], "params.interfaces: 'nope0' (expected an existing network"),
    (["--policy", "spread", "--interfaces", "h2/eth0"], "in network namespace h2"),
    (["--policy", "spread", "--interfaces", ""], "params.interfaces: '' (expected one or more"),
    (["--policy", "spread", "--interfaces", "a/b/c d"], "params.interfaces: 'a/b/c d'"),
    (["--policy", "source_aware", "--flow-entries", "0"], "params.flow_entries: 0 (expected an integer"),
    (["--policy", "round_robin"], "params.policy: 'round_robin' (expected one of irqbalance"),
    (
        ["--policy", "sais_mark", "--server-interfaces", "", "--server-addresses", ""],
        "params.server_interfaces: '' (expected the servers' interfaces, [NETNS/]IFACE, comma-separated, or for a "
        "client whose servers are other machines their addresses in server_addresses)",
    ),
    (
        ["--policy", "sais_mark", "--interfaces", "", "--server-interfaces", "", "--server-addresses", ""],
        "corun: schedulers/sais_mark/manifest.yaml: params.interfaces: '' (expected the client's interfaces",
    ),
    (
        ["--policy", "sais_mark", "--interfaces", "", "--server-interfaces", "", "--server-addresses", "10.0.0.2"],
        "params.interfaces: '' (expected the client's interfaces, [NETNS/]IFACE, comma-separated; empty only "
        "for a server half, with server_interfaces set)",
    ),
    (
        ["--policy", "sais_mark", "--server-interfaces", "h1/eth0", "--server-addresses", "10.0.0.2"],
        "corun: schedulers/sais_mark/manifest.yaml: params.server_addresses: '10.0.0.2' (expected '' with "
        "server_interfaces set: server_addresses is only for a client whose server interfaces are elsewhere)",
    ),
    (
        ["--policy", "sais_mark", "--interfaces", "", "--server-interfaces", "h1/eth0", "--server-addresses", "h"],
        "params.server_addresses: 'h' (expected '' with server_interfaces set",
    ),
    (
        ["--policy", "sais_mark", "--server-interfaces", "", "--server-addresses", "10.0.0.2,nohost.invalid"],
        "corun: schedulers/sais_mark/manifest.yaml: params.server_addresses: 'nohost.invalid' (expected IPv4 "
        "addresses or host names that resolve to one, comma-separated)",
    ),
    (
        ["--policy", "sais_mark", "--server-interfaces", "", "--server-addresses", "10.0.0.2,,10.0.0.3"],
        "params.server_addresses: '10.0.0.2,,10.0.0.3' (expected IPv4 addresses",
    ),
    (
        ["--policy", "sais_mark", "--server-interfaces", "", "--server-addresses", "10.0.0.2,"],
        "params.server_addresses: '10.0.0.2,' (expected IPv4 addresses",
    ),
    (
        ["--policy", "sais_mark", "--server-interfaces", "", "--server-addresses", "10.1"],
        "params.server_addresses: '10.1' (expected IPv4 addresses",
    ),
    (
        ["--policy", "sais_mark", "--server-interfaces", "", "--server-addresses", "fd00::2"],
        "params.server_addresses: 'fd00::2' (expected IPv4 addresses",
    ),
    (
        ["--policy", "sais_mark", "--interfaces", "", "--server-interfaces", "nope0", "--server-addresses", ""],
        "params.server_interfaces: 'nope0' (expected an existing network interface)",
    ),
    (
        ["--policy", "sais_mark", "--interfaces", "nope0", "--server-interfaces", "", "--server-addresses", "h"],
        "params.interfaces: 'nope0' (expected an existing network interface)",
    ),
]


@pytest.mark.parametrize("args, message", BAD, ids=[b[0][1] + str(i) for i, b in enumerate(BAD)])
def test_bad_params_one_line_nothing_changed(tree, tmp_path, args, message):
    before = values(tree)
    full = ["--interfaces", "nic0"] + args if "--interfaces" not in args else args
    variant = args[1] if args[1] in VARIANTS else ""
    for action in ("apply", "verify"):
        res = run_steer(
            action, *full, "--root", tree, "--state", tmp_path / "s.json", *(["--variant", variant] if variant else [])
        )
        assert res.returncode == 2, res.stderr
        assert message in res.stderr and res.stderr.count("\n") == 1, res.stderr
        assert values(tree) == before and not (tmp_path / "s.json").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--policy", "dedicated"], "--cpu: missing (expected a value with policy dedicated)"),
        (["--policy", "source_aware"], "--flow-entries: missing (expected a value with policy source_aware)"),
        (["--policy", "sais_mark"], "--server-interfaces: missing (expected a value with policy sais_mark)"),
        (
            ["--policy", "sais_mark", "--server-interfaces", "h1/eth0"],
            "--server-addresses: missing (expected a value with policy sais_mark)",
        ),
        (["--policy", "spread", "--server-addresses", "10.0.0.2"], "--server-addresses: '10.0.0.2' (expected only"),
        (["--policy", "spread", "--cpu", "1"], "--cpu: 1 (expected only with policy dedicated)"),
        (["--policy", "dedicated", "--cpu", "1", "--flow-entries", "8"], "--flow-entries: 8 (expected only with"),
    ],
)
def test_each_policy_takes_its_options_and_no_other(tree, tmp_path, args, message):
    """steer.py has no default of its own for a variant's param: the policy's options are
    required, and another policy's are refused (a variant passing them would be a mistake)."""
    res = run_steer("apply", "--interfaces", "nic0", *args, "--root", tree, "--state", tmp_path / "s.json")
    assert res.returncode == 2 and message in res.stderr and res.stderr.count("\n") == 1, res.stderr
    assert not (tmp_path / "s.json").exists()
    res = run_steer("apply", *args, "--root", tree, "--state", tmp_path / "s.json")
    assert res.returncode == 2 and "--interfaces: missing (expected a value: the manifest's)" in res.stderr


def test_unrestored_state_refused(tree, tmp_path):
    (tmp_path / "s.json").write_text("{}")
    res = run_steer(
        "apply", "--policy", "spread", "--interfaces", "nic0", "--root", tree, "--state", tmp_path / "s.json"
    )
    assert res.returncode == 2 and "run restore first" in res.stderr and res.stderr.count("\n") == 1


def test_snapshot_and_where(tree):
    before = steer.snapshot(str(tree))
    assert before["net_rx"] == [100, 200, 10, 0] and before["softnet_processed"] == [16, 32, 0, 0]
    put(tree, "proc/softirqs", "   CPU0 CPU1 CPU2 CPU3\n      NET_RX:        110        900         10          0")
    after = steer.snapshot(str(tree))
    w = steer.where(before, after)
    assert w["net_rx"]["per_cpu"] == [10, 700, 0, 0] and w["net_rx"]["top_cpu"] == 1
    assert w["net_rx"]["share"][1] == pytest.approx(700 / 710)
    assert w["softnet_processed"]["total"] == 0 and w["softnet_processed"]["top_cpu"] is None


def test_masks():
    assert steer.mask_text(0xF) == "0000000f"
    assert steer.mask_text(1 << 40) == "00000100,00000000"
    assert steer.parse_mask("00000100,00000000") == 1 << 40
    assert steer.parse_cpulist("0-2,5") == [0, 1, 2, 5]


@pytest.mark.parametrize("name", VARIANTS)
def test_manifests_load(name):
    v = schedulers.Variant.load(name, {}, need_built=False)
    assert v.kind == "irq_policy" and "interfaces" in v.params and v.params["policy"] == name
    assert (
        "steer.py" in " ".join(v.manifest["start"])
        and v.manifest["stop"][-3:-1] == ["restore", "--state"]
        or v.manifest["stop"][3] == "restore"
    )


def test_manifest_param_errors():
    with pytest.raises(ConfigError) as exc:
        schedulers.Variant.load("dedicated", {"cpu": -1}, need_built=False)
    assert "scheduler.params.cpu: -1" in str(exc.value)
    with pytest.raises(ConfigError):
        schedulers.Variant.load("source_aware", {"flow_entries": 0}, need_built=False)
