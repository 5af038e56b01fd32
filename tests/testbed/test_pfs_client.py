"""pfs_client's LD_PRELOAD library: POSIX calls, IOR and kernels/pfs_read on one striped file system.

The module brings up a 3-host netns cluster (scripts/netns-cluster: a client, two data
servers) and corun's file system on it (directory bricks, 64 KiB strips, links shaped to
1 GbE), then, on the client host: the library serves a Python program's POSIX calls on a
path prefix (every call checked, also its ASan/UBSan build), writes a file pfs_read verifies
and reads one pfs_read wrote, both striped over the two bricks as PVFS2's simple stripe
places them; IOR (from the ior role) writes, reads back with its own data check and reads
pfs_read's file, through the library, and its JSON summary is read with corun/testbed/ior.py;
a wrong setting and an unreachable server are one line each. Root; wrap it in the machine's
lock (netns, tc).
"""

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from corun import upstream
from corun.testbed import ior, pfs

REPO = Path(__file__).resolve().parent.parent.parent
CLUSTER = REPO / "scripts" / "netns-cluster"
PFS = [sys.executable, "-m", "corun.testbed.pfs"]
CALLS = Path(__file__).resolve().parent / "pfs_client_calls.py"
PREFIX = "pfsc"
SUBNET = "10.77.8.0/24"
MOUNT = "/corun-pfs"  # the path prefix the library serves; nothing exists there
PYTHON = "/usr/bin/python3"  # the system's: the test's own venv is not needed on the host

pytestmark = pytest.mark.root


def run(argv, timeout=300, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=REPO, **kw)


@pytest.fixture(scope="module")
def library():
    res = run(["make", "-s", "-C", str(REPO / "pfs_client"), "all", "asan"])
    assert res.returncode == 0, res.stdout + res.stderr
    lib = REPO / "pfs_client" / "build" / "libcorun_pfs.so"
    if not lib.exists():
        pytest.skip(f"pfs_client not built: {res.stdout.strip()}")
    return lib


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, library, kernels_built):
    base = tmp_path_factory.mktemp("pfsc")
    state, inventory = base / "netns", base / "inventory.yml"
    up = run(
        [sys.executable, str(CLUSTER), "--state-dir", str(state), "up", "3", "--prefix", PREFIX]
        + ["--subnet", SUBNET, "--inventory", str(inventory)]
    )
    if up.returncode == 4:
        run([sys.executable, str(CLUSTER), "--state-dir", str(state), "down"])
        pytest.skip(f"no netns test cluster here: {up.stderr.strip()}")
    cfg = base / "pfs.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "inventory": str(inventory),
                "servers": 2,
                "root": str(base / "root"),
                "netns_state": str(state),
                "state_dir": str(base / "pfs-state"),
                "link": {"rate_mbit": 1000},
            }
        )
    )
    try:
        assert up.returncode == 0, up.stderr
        fs_up = run([*PFS, "--config", str(cfg), "up"])
        assert fs_up.returncode == 0, fs_up.stderr
        layout = json.loads((base / "pfs-state" / "layout.json").read_text())
        yield {"state": state, "layout": layout, "lib": library, "kernels": kernels_built, "base": base}
    finally:
        down = run([*PFS, "--config", str(cfg), "down"])
        run([sys.executable, str(CLUSTER), "--state-dir", str(state), "down"])
        assert down.returncode == 0, down.stderr


def on_client(c, command, timeout=300):
    host = c["layout"]["client"]["name"]
    return run(["ssh", "-F", str(c["state"] / "ssh_config"), host, command], timeout=timeout)


def settings(c, lib=None, **extra):
    """The library's environment for the client host (corun/testbed/ior.py's client_env)."""
    return {**ior.client_env(c["layout"], str(lib or c["lib"]), prefix=MOUNT), **extra}


def client_env(c, lib=None, **extra):
    return " ".join(f"{k}={shlex.quote(v)}" for k, v in settings(c, lib, **extra).items())


def calls(c, *args, lib=None, env_prefix=""):
    cmd = f"{env_prefix}{client_env(c, lib)} {PYTHON} {CALLS} {MOUNT} {' '.join(map(str, args))}"
    return on_client(c, cmd)


def brick_sizes(c, name):
    sizes = []
    for s in c["layout"]["servers"]:
        res = run(["ssh", "-F", str(c["state"] / "ssh_config"), s["name"], f"stat -c %s {s['brick']}/{name}"])
        assert res.returncode == 0, res.stderr
        sizes.append(int(res.stdout))
    return sizes


def pfs_read(c, *args):
    cmd = " ".join([str(c["kernels"] / "pfs_read"), *pfs.kernel_args(c["layout"]), *args])
    res = on_client(c, cmd)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_posix_calls_are_served_striped(cluster):
    res = calls(cluster, "calls")
    assert res.returncode == 0, res.stdout + res.stderr
    out = json.loads(res.stdout)
    # PVFS2's simple stripe: strips 0, 2, 4 on the first server, 1, 3 and the tail of 5 on the second.
    assert brick_sizes(cluster, "kept.dat") == out["kept_sizes"]


def test_the_asan_build_serves_the_same_calls(cluster):
    asan = cluster["lib"].parent / "asan" / "libcorun_pfs.so"
    libasan = run(["gcc", "-print-file-name=libasan.so"]).stdout.strip()  # first in the list, as ASan needs
    res = calls(cluster, "calls", lib=f"{libasan}:{asan}", env_prefix="ASAN_OPTIONS=detect_leaks=0 ")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "runtime error" not in res.stderr and "AddressSanitizer" not in res.stderr


def test_pfs_read_and_the_library_read_each_others_files(cluster):
    size = 6 << 20
    res = calls(cluster, "pattern", "/by-library.dat", size)
    assert res.returncode == 0, res.stderr
    out = pfs_read(cluster, "--file /by-library.dat --read --check --block-size 6M --transfer-size 192K")
    assert out["checked"] and out["mismatched_words"] == 0 and out["read_bytes"] == size
    assert brick_sizes(cluster, "by-library.dat") == [size // 2, size // 2]
    pfs_read(cluster, "--file /by-pfs-read.dat --write --block-size 6M --transfer-size 1M")
    res = calls(cluster, "check-pattern", "/by-pfs-read.dat", size)
    assert res.returncode == 0, res.stdout + res.stderr


def test_processes_creating_one_file_at_once_all_open_it(cluster):
    """IOR's ranks open their shared file with O_CREAT together: a create that loses the race to
    another client's is an open of the file that client made, never EEXIST without O_EXCL."""
    procs, count = 12, 40
    start = float(on_client(cluster, "date +%s.%N").stdout) + 3  # past every process's connect
    one = f"{client_env(cluster)} {PYTHON} {CALLS} {MOUNT} create-race /race {count} {start}"
    every = f"for i in $(seq {procs}); do ({one}) & done; fail=0"
    res = on_client(cluster, f"{every}; for j in $(jobs -p); do wait $j || fail=1; done; exit $fail")
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count(f'"opened": {count}') == procs, res.stdout


def ior_program():
    progs = upstream.programs("ior")
    if not progs:
        pytest.skip("IOR is not provisioned here (the ior role recorded its stand-in)")
    return progs["ior"]


def run_ior(c, args, tasks=2, timeout=300):
    summary = c["base"] / f"ior-{len(list(c['base'].glob('ior-*.json')))}.json"
    argv = args(str(summary))
    mpi = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(tasks), *ior.mpirun_exports(settings(c))]
    cmd = shlex.join(mpi + argv)
    res = on_client(c, cmd, timeout=timeout)
    assert res.returncode == 0, res.stdout + res.stderr
    return res, ior.parse_file(summary)


@pytest.mark.parametrize("file_per_process", [False, True])
def test_ior_writes_and_reads_back_through_the_library(cluster, file_per_process):
    program = ior_program()

    def args(summary):
        argv = ior.ior_argv(
            program,
            MOUNT,
            summary,
            transfer_size=192 << 10,
            block_size=3 << 20,
            segments=2,
            write=True,
            read=True,
            file_per_process=file_per_process,
            file_name="ior-wr.dat",
        )
        return argv + ["-R", "-W"]  # IOR checks the data it wrote and read back

    res, rows = run_ior(cluster, args)
    assert "incorrect data" not in (res.stdout + res.stderr).lower(), res.stdout
    assert sorted(r["operation"] for r in rows) == ["read", "write"]
    for r in rows:
        assert r["api"] == "POSIX" and r["tasks"] == 2 and r["bw_mean_mib_s"] > 0
    if not file_per_process:  # 12 MiB in 64 KiB strips: half on each brick
        assert brick_sizes(cluster, "ior-wr.dat") == [6 << 20, 6 << 20]


def test_ior_reads_the_file_pfs_read_wrote(cluster):
    program = ior_program()
    pfs_read(cluster, "--file /shared.dat --write --block-size 8M --transfer-size 1M --tasks 2")

    def args(summary):
        return ior.ior_argv(program, MOUNT, summary, transfer_size=1 << 20, block_size=8 << 20, file_name="shared.dat")

    _, rows = run_ior(cluster, args)
    assert [r["operation"] for r in rows] == ["read"] and rows[0]["bw_mean_mib_s"] > 0


def test_a_wrong_setting_is_one_line(cluster):
    cmd = f"{client_env(cluster, CORUN_PFS_STRIP_SIZE='64X')} {PYTHON} {CALLS} {MOUNT} calls"
    res = on_client(cluster, cmd)
    assert res.returncode == 1
    lines = [x for x in res.stderr.splitlines() if x.startswith("corun_pfs:")]
    assert lines == ["corun_pfs: CORUN_PFS_STRIP_SIZE: '64X' (expected a size of 8 bytes to 1G, such as 64K)"]
    assert "Invalid argument" in res.stderr  # the call on the prefix failed with EINVAL


def test_an_unreachable_server_is_one_line(cluster):
    vol = (
        Path(cluster["layout"]["volfiles"][1])
        .read_text()
        .replace(f"remote-port {cluster['layout']['servers'][1]['port']}", "remote-port 9")
    )
    bad = cluster["base"] / "unreachable.vol"
    bad.write_text(vol)
    volfiles = f"{cluster['layout']['volfiles'][0]}:{bad}"
    cmd = f"{client_env(cluster, CORUN_PFS_VOLFILES=volfiles)} {PYTHON} {CALLS} {MOUNT} calls"
    res = on_client(cluster, cmd, timeout=120)
    assert res.returncode == 1
    lines = [x for x in res.stderr.splitlines() if x.startswith("corun_pfs:")]
    assert len(lines) == 1 and lines[0].startswith(f"corun_pfs: cannot reach the data server of {bad}: "), res.stderr
    assert "Input/output error" in res.stderr  # the call on the prefix failed with EIO
