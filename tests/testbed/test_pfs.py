"""corun's parallel file system (corun/testbed/pfs.py, kernels/pfs_read) on a 2-host netns cluster.

The module brings up a cluster (scripts/netns-cluster), then the file system with both hosts as
data servers (colocate_client), loop-mounted ext4 bricks, a FUSE mount and links shaped to
200 Mbit/s; it writes and reads back a striped file through gfapi, measures the shaped link,
takes the file system down, and checks that no process, mount, loop device, qdisc or file is
left (test_pfs_teardown.py: after SIGKILL of `up`).
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent.parent
CLUSTER = REPO / "scripts" / "netns-cluster"
PFS = [sys.executable, "-m", "corun.testbed.pfs"]
PREFIX = "pfst"
SUBNET = "10.77.3.0/24"
RATE_MBIT = 200


def run(argv, timeout=180, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=REPO, **kw)


def pfs(cfg_path, *args, timeout=180):
    return run([*PFS, "--config", str(cfg_path), *args], timeout=timeout)


def netns_cluster(tmp_path_factory, prefix, subnet):
    base = tmp_path_factory.mktemp(f"{prefix}-netns")
    state, inventory = base / "state", base / "inventory.yml"
    up = run(
        [
            sys.executable,
            str(CLUSTER),
            "--state-dir",
            str(state),
            "up",
            "2",
            "--prefix",
            prefix,
            "--subnet",
            subnet,
            "--inventory",
            str(inventory),
        ]
    )
    if up.returncode == 4:
        run([sys.executable, str(CLUSTER), "--state-dir", str(state), "down"])
        pytest.skip(f"no netns test cluster here: {up.stderr.strip()}")
    try:
        assert up.returncode == 0, up.stderr
        yield state, inventory
    finally:
        down = run([sys.executable, str(CLUSTER), "--state-dir", str(state), "down"])
        assert down.returncode == 0, down.stderr
        names = run(["ip", "netns", "list"]).stdout
        assert f"{prefix}-n" not in names


@pytest.fixture(scope="module")
def netns(tmp_path_factory):
    yield from netns_cluster(tmp_path_factory, PREFIX, SUBNET)


def write_config(path, netns, root, **extra):
    state, inventory = netns
    cfg = {
        "inventory": str(inventory),
        "servers": 2,
        "colocate_client": True,
        "root": str(root),
        "netns_state": str(state),
        "state_dir": str(path.parent / "pfs-state"),
        "brick": {"backend": "loop", "size_mib": 128},
        "link": {"rate_mbit": RATE_MBIT},
        "fuse": {"mount": True},
        # A pass-through translator where the request scheduler will go.
        "server_xlators": [{"name": "sched-stand-in", "type": "debug/io-stats"}],
    }
    cfg.update(extra)
    path.write_text(yaml.safe_dump(cfg))
    return path


def ssh(netns, host, command):
    state, _ = netns
    return run(["ssh", "-F", str(state / "ssh_config"), host, command])


def leftovers(netns, root, prefix=PREFIX, qdiscs=True):
    """Everything of the file system still on the machine (empty when clean)."""
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            cmd = (p / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            cmd
            and Path(cmd[0].decode(errors="replace")).name in ("glusterfsd", "glusterfs")
            and any(str(root).encode() in a for a in cmd)
        ):
            out.append(f"process {p.name}: {b' '.join(cmd).decode(errors='replace')}")
    loops = run(["losetup", "-a"]).stdout
    out += [f"loop {line}" for line in loops.splitlines() if str(root) in line]
    for i in (1, 2):
        mounts = ssh(netns, f"{prefix}-n{i}", "cat /proc/mounts").stdout
        out += [f"mount on n{i}: {line}" for line in mounts.splitlines() if str(root) in line]
        if not qdiscs:
            continue
        q = run(["tc", "-n", f"{prefix}-n{i}", "qdisc", "show", "dev", "eth0"]).stdout
        out += [f"qdisc n{i} eth0: {q.strip()}"] if "tbf" in q else []
        q = run(["tc", "qdisc", "show", "dev", f"{prefix}-v{i}"]).stdout
        out += [f"qdisc v{i}: {q.strip()}"] if "tbf" in q else []
    if root.exists():
        out.append(f"files: {sorted(str(p) for p in root.rglob('*'))[:5]}")
    return out


@pytest.fixture(scope="module")
def fs(netns, tmp_path_factory):
    base = tmp_path_factory.mktemp("pfs")
    root = base / "root"
    cfg = write_config(base / "pfs.yaml", netns, root)
    up = pfs(cfg, "up")
    try:
        assert up.returncode == 0, up.stderr
        yield cfg, root, json.loads((base / "pfs-state" / "layout.json").read_text())
    finally:
        down = pfs(cfg, "down")
        assert down.returncode == 0, down.stderr
        assert leftovers(netns, root) == []


def pfs_read(netns, kernels_built, *args):
    cmd = " ".join([str(kernels_built / "pfs_read"), *args])
    res = ssh(netns, f"{PREFIX}-n1", cmd)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


pytestmark = pytest.mark.root


def test_status_reports_servers_links_and_mount(netns, fs):
    cfg, root, layout = fs
    st = pfs(cfg, "status", "--json")
    assert st.returncode == 0, st.stdout + st.stderr
    data = json.loads(st.stdout)
    assert data["up"] and len(data["servers"]) == 2
    assert all(s["pids"] and s["listening"] and s["brick_mounted"] for s in data["servers"])
    assert {q["rate_mbit"] for q in data["links"]} == {RATE_MBIT}
    assert data["fuse"]["mounted"]
    assert layout["strip_size_bytes"] == 65536 and len(layout["volfiles"]) == 2
    vol = ssh(netns, layout["servers"][0]["name"], f"cat {root}/{layout['servers'][0]['name']}/server.vol").stdout
    assert "volume sched-stand-in" in vol and "subvolumes sched-stand-in" in vol
    args = pfs(cfg, "args")
    assert args.returncode == 0 and args.stdout.split() == [
        "--volfile",
        layout["volfiles"][0],
        "--volfile",
        layout["volfiles"][1],
        "--strip-size",
        "65536",
    ]


def test_striped_file_written_and_read_back_through_gfapi(netns, fs, kernels_built):
    _, _, layout = fs
    vol = " ".join(f"--volfile {v}" for v in layout["volfiles"])
    out = pfs_read(
        netns,
        kernels_built,
        vol,
        "--file /striped.dat --write --read --check --tasks 2",
        "--block-size 3M --transfer-size 192K --segments 2 --compute-passes 1",
    )
    assert out["checked"] and out["mismatched_words"] == 0
    assert out["read_bw_mean_mib_s"] > 0 and out["servers"] == 2
    # 12 MiB in 64 KiB strips, round robin: half on each data server's brick (loop-mounted in
    # the host's own mount namespace, so looked at from there).
    sizes = [(Path(s["brick"]) / "striped.dat").stat().st_size for s in layout["servers"]]
    assert sizes == [6 << 20, 6 << 20]
    fpp = pfs_read(
        netns,
        kernels_built,
        vol,
        "--file /fpp.dat --write --read --check --tasks 2",
        "--file-per-process --block-size 1M --transfer-size 1M",
    )
    assert fpp["mismatched_words"] == 0
    # A reader with another strip size is refused, not fed wrong data.
    res = ssh(
        netns,
        f"{PREFIX}-n1",
        f"{kernels_built / 'pfs_read'} {vol} --file /striped.dat "
        "--strip-size 128K --block-size 3M --transfer-size 192K",
    )
    assert res.returncode == 1 and "was not written with this strip size" in res.stderr


def test_ranks_of_one_application_write_their_parts_of_one_file(netns, fs, kernels_built):
    """MPI-IO Test's layouts: clients started apart (--rank R --ranks N) write their parts of one
    shared file. Ranks 0 and 1 of 3 write; their parts read back under the same layout and
    application, while rank 2's part (holes), the other layout or another application's
    pattern do not."""
    _, _, layout = fs
    vol = " ".join(f"--volfile {v}" for v in layout["volfiles"])
    size = "--block-size 256K --request-size 64K --segments 3"
    for pattern in ("strided", "contiguous"):
        f = f"/mpiio-{pattern}.dat"
        for rank in (0, 1):
            w = pfs_read(
                netns,
                kernels_built,
                vol,
                f"--file {f} --write --pattern {pattern} --rank {rank} --ranks 3 --app 2",
                size,
            )
            assert (w["rank"], w["ranks"], w["pattern"], w["app"]) == (rank, 3, pattern, 2)
            assert w["write_bytes"] == 3 * (256 << 10) and len(w["write_start_epoch_s"]) == 1
        r = pfs_read(
            netns,
            kernels_built,
            vol,
            f"--file {f} --read --check --pattern {pattern} --tasks 2 --ranks 3 --app 2",
            size,
        )
        assert r["checked"] and r["mismatched_words"] == 0 and r["read_bytes"] == 6 * (256 << 10)
        other = "contiguous" if pattern == "strided" else "strided"
        for wrong in (
            f"--pattern {pattern} --app 2 --rank 2 --ranks 3",
            f"--pattern {other} --app 2 --tasks 2 --ranks 3",
            f"--pattern {pattern} --app 1 --tasks 2 --ranks 3",
        ):
            res = ssh(
                netns, f"{PREFIX}-n1", f"{kernels_built / 'pfs_read'} {vol} --file {f} --read --check {wrong} {size}"
            )
            assert res.returncode == 1, (wrong, res.stdout)


def test_fuse_mount_serves_files(netns, fs):
    _, root, layout = fs
    m = root / f"{PREFIX}-n1" / "mnt"
    # the FUSE mount, like the bricks, is in the host's own mount namespace (the hosts are entered
    # by their network namespace only), not in the one of an ssh session's sshd: used from there
    res = subprocess.run(
        ["sh", "-c", f"head -c 6291456 /dev/urandom | tee {m}/f | sha256sum && sha256sum < {m}/f"],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    a, b = res.stdout.split("\n")[:2]
    assert a == b
    # 6 MiB in 4 MiB shards: the file's first shard and one more in .shard, on the bricks.
    shards = " ".join(
        p.name
        for s in layout["servers"]
        if (Path(s["brick"]) / ".shard").is_dir()
        for p in (Path(s["brick"]) / ".shard").iterdir()
    )
    assert len(shards.split()) == 1, shards


def test_shaped_link_caps_the_rate(netns, fs, kernels_built):
    _, _, layout = fs
    remote = [v for v, s in zip(layout["volfiles"], layout["servers"]) if s["name"] != f"{PREFIX}-n1"]
    vol = f"--volfile {remote[0]}"
    pfs_read(netns, kernels_built, vol, "--file /rate.dat --write --block-size 24M")
    out = pfs_read(netns, kernels_built, vol, "--file /rate.dat --read --block-size 24M --repetitions 2")
    cap_mib_s = RATE_MBIT * 1e6 / 8 / 2**20
    assert 0.5 * cap_mib_s < out["read_bw_mean_mib_s"] < 1.1 * cap_mib_s, out["read_bw_mib_s"]
