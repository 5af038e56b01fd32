"""Multi-host control paths on a cluster of network namespaces (scripts/netns-cluster).

Two test hosts with their own sshd: provisioning with site.yml (ending with a run that
changes nothing), a 2-host MPI job, `corun doctor` over ssh, a multi-host Snakemake campaign that
survives one host dropping out, and teardown. The whole site.yml runs (about 2.5 minutes per run
on 2 vCPUs: the hosts share one machine, so roles run one host at a time), because the point is
that every role works over ssh on several hosts. Skipped, with the reason, where the machine
cannot make namespaces or has no sshd; the cluster is always torn down.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from test_provision import ansible_env, output, run_tool

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "netns-cluster"
PY = sys.executable
PREFIX = "corunt"
SUBNET = "10.77.1.0/24"
HOSTS = [f"{PREFIX}-n1", f"{PREFIX}-n2"]

pytestmark = pytest.mark.root


def cluster(state_dir, *args, timeout=120):
    return subprocess.run(
        [PY, str(SCRIPT), "--state-dir", str(state_dir), *args], capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def netns(tmp_path_factory):
    """A 2-host cluster: (state dir, inventory path); torn down after the module, even on failure."""
    state = tmp_path_factory.mktemp("netns") / "state"
    inventory = REPO / "inventory" / f"netns-test-{os.getpid()}.yml"
    up = cluster(state, "up", "2", "--prefix", PREFIX, "--subnet", SUBNET, "--inventory", str(inventory))
    if up.returncode == 4:
        cluster(state, "down")
        pytest.skip(f"no netns test cluster here: {up.stderr.strip()}")
    try:
        assert up.returncode == 0, up.stderr
        yield state, inventory
    finally:
        down = cluster(state, "down")
        assert down.returncode == 0, down.stderr
        assert not inventory.exists()


def status(state):
    return json.loads(cluster(state, "status", "--json").stdout)


def test_hosts_answer_over_ssh_with_their_own_names(netns):
    state, _ = netns
    st = status(state)
    assert st["up"] and [h["name"] for h in st["hosts"]] == HOSTS
    for name in HOSTS:
        proc = cluster(state, "ssh", name, "hostname")
        assert (proc.returncode, proc.stdout.strip()) == (0, name), proc.stderr


RECAP = re.compile(r"^(\S+)\s*:.*\bchanged=(\d+).*\bunreachable=(\d+)\s+failed=(\d+)", re.MULTILINE)


@pytest.mark.timeout(900)
def test_site_provisions_both_hosts_and_a_run_after_it_changes_nothing(netns):
    """site.yml over ssh on both hosts ends with a run that changes nothing.

    The namespace hosts share this machine's file system, so where `make provision` ran first
    (as in `make test`) the run on the hosts is already the run after provisioning: if it
    changes nothing, a second one would only repeat it (about 2.5 minutes on 2 vCPUs). If it
    changes anything, a second run must change nothing.
    """
    _, inventory = netns
    for attempt in ("first", "second"):
        proc = run_tool("ansible-playbook", "-i", str(inventory), "site.yml", timeout=800, env=ansible_env())
        assert proc.returncode == 0, f"{attempt} run:\n{output(proc)}"
        recap = {host: tuple(map(int, rest)) for host, *rest in RECAP.findall(proc.stdout)}
        assert set(recap) == set(HOSTS), output(proc)
        if recap == {h: (0, 0, 0) for h in HOSTS}:
            break
    assert recap == {h: (0, 0, 0) for h in HOSTS}, f"{attempt} run changed something:\n{output(proc)}"


@pytest.fixture(scope="module")
def mpi_program(netns, tmp_path_factory):
    if shutil.which("mpicc") is None:
        pytest.skip("mpicc not found: ansible-playbook site.yml --tags openmpi")
    exe = tmp_path_factory.mktemp("mpi") / "mpi_hosts"
    subprocess.run(
        [
            "mpicc",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-O2",
            "-o",
            str(exe),
            str(REPO / "tests" / "fixtures" / "mpi" / "mpi_hosts.c"),
        ],
        check=True,
        timeout=120,
    )
    return exe


@pytest.mark.timeout(180)
def test_mpi_job_runs_across_the_two_hosts(netns, mpi_program, tmp_path):
    _, inventory = netns
    out = tmp_path / "mpi.json"
    proc = subprocess.run(
        [
            PY,
            "-m",
            "corun.testbed.hosts",
            "--inventory",
            str(inventory),
            "mpirun",
            "--np",
            "2",
            "--out",
            str(out),
            "--",
            str(mpi_program),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=150,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text()) == {"ranks": 2, "sum": 1, "hosts": HOSTS}
    assert (tmp_path / "mpi.json.hostfile").read_text() == "10.77.1.11 slots=1\n10.77.1.12 slots=1\n"


@pytest.mark.timeout(180)
def test_doctor_checks_the_hosts_over_ssh(netns):
    _, inventory = netns
    proc = subprocess.run(
        [PY, "-m", "corun", "doctor", "--inventory", str(inventory), "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=150,
    )
    report = json.loads(proc.stdout)
    assert [h["host"] for h in report["hosts"]] == HOSTS
    for h in report["hosts"]:
        assert h["findings"][0] == {"check": "ssh", "status": "ok", "value": h["findings"][0]["value"], "advice": None}
        assert {"tool perf", "corun kernels", "governor", "elevator", "free disk"} <= {
            f["check"] for f in h["findings"]
        }
    assert proc.returncode == (0 if report["ready"] else 1), proc.stderr


def run_logs(hosts_dir):
    return "".join(f"{f}: {f.read_text()}\n" for f in sorted(hosts_dir.glob("*/*/logs/*.log")))


def campaign_config(base, inventory, mpi_program):
    cfg = {
        "results_dir": str(base / "results"),
        "data_dir": str(base / "data"),
        "experiments": ["llc_miss"],
        "llc_miss": {"nops": [0], "mem_size_bytes": 1048576, "iterations": 2, "reps": 1},
        "hosts": {"from_inventory": str(inventory)},
        "multi_host": {"mpi_jobs": {"ring": {"cmd": [str(mpi_program)], "np": 2}}},
    }
    path = base / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def snakemake(config):
    return subprocess.run(
        [str(Path(PY).parent / "snakemake"), "--configfile", str(config), "--cores", "2", "--keep-going", "all_hosts"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )


@pytest.mark.timeout(900)
def test_campaign_survives_a_host_dropping_out(netns, mpi_program):
    state, inventory = netns
    scratch = REPO / "results" / "test-scratch"  # on a real disk, like conftest's disk_tmp
    scratch.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(dir=scratch))
    try:
        config = campaign_config(base, inventory, mpi_program)
        # Host 2's sshd goes away before the campaign, with its open connections (the ssh masters
        # earlier tests left): its runs (and the MPI job) fail, host 1's finish.
        pids = subprocess.run(["ip", "netns", "pids", HOSTS[1]], capture_output=True, text=True, check=True)
        for pid in map(int, pids.stdout.split()):
            os.kill(pid, signal.SIGTERM)
        for _ in range(50):
            if not status(state)["up"]:
                break
            time.sleep(0.1)
        first = snakemake(config)
        assert first.returncode != 0, first.stderr
        hosts_dir = base / "results" / "hosts"
        runs1 = sorted((hosts_dir / HOSTS[0] / "llc_miss" / "runs").iterdir())
        assert [r.name for r in runs1] == ["g00_k1_r0", "g00_k2_r0"]
        assert not (hosts_dir / HOSTS[1] / "llc_miss" / "runs").exists() or not any(
            (hosts_dir / HOSTS[1] / "llc_miss" / "runs").iterdir()
        )
        log = (hosts_dir / HOSTS[1] / "llc_miss" / "logs" / "run_g00_k1_r0.log").read_text()
        assert "host unreachable" in log and log.count("\n") == 1, log
        # corun doctor says which host is not ready, and why.
        doc = subprocess.run(
            [PY, "-m", "corun", "doctor", "--inventory", str(inventory), HOSTS[1]],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=60,
        )
        assert doc.returncode == 1 and f"not ready: {HOSTS[1]} (ssh)" in doc.stderr, doc.stderr
        finished = {r.name: (r / "metadata.json").stat().st_mtime_ns for r in runs1}

        # The host is back: the rerun measures only its runs and the MPI job.
        assert (
            cluster(state, "up", "2", "--prefix", PREFIX, "--subnet", SUBNET, "--inventory", str(inventory)).returncode
            == 0
        )
        second = snakemake(config)
        assert second.returncode == 0, run_logs(hosts_dir) + second.stderr[-3000:]
        reasons = "\n".join(line for line in second.stderr.splitlines() if "reason:" in line or "wildcards:" in line)
        assert {r.name: (r / "metadata.json").stat().st_mtime_ns for r in runs1} == finished, reasons
        assert "run_on_host" in second.stderr and f"host={HOSTS[0]}" not in second.stderr
        for run in ("g00_k1_r0", "g00_k2_r0"):
            meta = json.loads((hosts_dir / HOSTS[1] / "llc_miss" / "runs" / run / "metadata.json").read_text())
            assert meta["host"]["hostname"] == HOSTS[1]
            assert meta["doctor"]["host"] == HOSTS[1]
        assert json.loads((hosts_dir / "mpi" / "ring" / "stdout.txt").read_text())["hosts"] == HOSTS
        assert (hosts_dir / HOSTS[1] / "llc_miss" / "jobs.csv").exists()
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.timeout(120)
def test_down_removes_namespaces_veths_bridge_and_state(tmp_path):
    state = tmp_path / "state"
    inventory = REPO / "inventory" / f"netns-down-{os.getpid()}.yml"
    up = cluster(state, "up", "1", "--prefix", "corund", "--subnet", "10.77.2.0/24", "--inventory", str(inventory))
    if up.returncode == 4:
        pytest.skip(f"no netns test cluster here: {up.stderr.strip()}")
    try:
        assert up.returncode == 0, up.stderr
        pid = status(state)["hosts"][0]["sshd_pid"]
        again = cluster(state, "up", "2", "--prefix", "corund", "--subnet", "10.77.2.0/24")
        assert again.returncode == 1 and "already holds a cluster of 1 hosts" in again.stderr
        other = cluster(tmp_path / "other", "up", "1", "--prefix", "corund", "--subnet", "10.77.2.0/24")
        assert other.returncode == 1 and other.stderr.count("\n") == 1, other.stderr
        assert f"corund-n1 already exists but is not in {tmp_path / 'other'}: it belongs to {state}" in other.stderr
        assert f"(scripts/netns-cluster --state-dir {state} down removes it)" in other.stderr
    finally:
        down = cluster(state, "down")
    assert down.returncode == 0, down.stderr
    assert not state.exists() and not inventory.exists()
    assert "corund-n1" not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout
    assert "corund-" not in links
    assert process_state(pid) in (None, "Z")  # gone, or dead and waiting for init to reap it


def process_state(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["up", "0"], 2, "N: 0 (expected an integer from 1 to 200)"),
        (["up", "2", "--prefix", "Bad-Prefix"], 2, "--prefix: 'Bad-Prefix' (expected 1 to 8 lower-case"),
        (["up", "2", "--subnet", "10.77.0.0/30"], 2, "--subnet: '10.77.0.0/30' (expected room for 2 hosts"),
        (["up", "2", "--subnet", "nonsense"], 2, "--subnet: 'nonsense' (expected an IPv4 network"),
        (["up", "2", "--cpus-per-host", "0"], 2, "--cpus-per-host: 0 (expected an integer >= 1)"),
        (["up", "2", "--cpus-per-host", "4096"], 2, "--cpus-per-host: 4096 (expected N x K <= "),
    ],
)
def test_cluster_usage_errors(tmp_path, args, code, needle):
    proc = cluster(tmp_path / "state", *args)
    assert proc.returncode == code and proc.stderr.count("\n") == 1 and needle in proc.stderr, proc.stderr
    assert not (tmp_path / "state").exists()


@pytest.mark.timeout(120)
def test_a_killed_sessions_cluster_is_taken_down_when_the_next_starts(tmp_path, pytestconfig):
    """A session killed half-way leaves its cluster up, its state in pytest's temporary root; the next
    session's start (conftest) takes it down, so its own `up` of the prefix does not fail."""
    # the repository's own conftest.py, as pytest loaded it (`import conftest` may find another)
    mine = (REPO / "conftest.py").resolve()
    root = next(
        p
        for p in pytestconfig.pluginmanager.get_plugins()
        if getattr(p, "__file__", None) and Path(p.__file__).resolve() == mine
    )
    take_down_killed_sessions_clusters = root.take_down_killed_sessions_clusters

    state = tmp_path / "pytest-1" / "killed"  # in a session's folder of the temporary root
    up = cluster(
        state, "up", "1", "--prefix", "corunk", "--subnet", "10.77.12.0/24", "--inventory", str(tmp_path / "i.yml")
    )
    if up.returncode == 4:
        pytest.skip(f"no netns test cluster here: {up.stderr.strip()}")
    try:
        assert up.returncode == 0, up.stderr
        # while the session that made it runs (pytest's .lock in its folder names a live process), it stays
        (tmp_path / "pytest-1" / ".lock").write_text(str(os.getpid()))
        assert take_down_killed_sessions_clusters(tmp_path) == []
        assert "corunk-br" in subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout
        ended = subprocess.Popen(["true"])  # once it has ended, as a killed session's process
        ended.wait()
        (tmp_path / "pytest-1" / ".lock").write_text(str(ended.pid))
        said = take_down_killed_sessions_clusters(tmp_path)  # only this test's: the module's cluster is up
        assert any(f"corunk-br was left by a killed session in {state}: removed 1 hosts" in line for line in said), said
        assert "corunk-" not in subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout
        assert not state.exists()
    finally:
        cluster(state, "down")
