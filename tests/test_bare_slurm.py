"""Slurm over the emulated bare testbed (scripts/bare-testbed, roles/slurm): three fresh nodes
sharing the repository (with its .venv) and the results with this machine (up --share, the
emulation of a site's NFS home), this machine their controller. The slurm role (and the monitors
a run needs) provisions them, a second run changes nothing and sinfo shows them idle; the
testbed-slurm profile measures a small sensitivity_ranking campaign over them, each repetition on
its node (metadata.json's host.hostname); one node's Slurm killed mid-campaign (slurmd and its
running job): only the run it held fails, Slurm marks the node down, and once its slurmd is back
the next call measures only that run; down leaves no node, daemon, journal or mount. Marked root
and bare; the figures (provisioning time, runs per hour, submit-to-start latency) are printed."""

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import pytest
from test_bare_testbed import RECAP, bare_testbed, leftovers
from test_provision import ansible_env, run_tool

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
PREFIX = "corunbt"  # test_bare_testbed's: its module's nodes are down before these come up
SUBNET = "10.79.1.0/24"
NODES = [f"{PREFIX}-n{i}" for i in (1, 2, 3)]
FIGURES = {}

pytestmark = [pytest.mark.root, pytest.mark.bare]


def slurm_daemons_here() -> list[str]:
    """This machine's own munged, mariadbd and Slurm daemons (the nodes' are in their namespaces)."""
    ps = subprocess.run(["ps", "-eo", "pid=,comm="], capture_output=True, text=True).stdout.split("\n")
    out = []
    for line in ps:
        f = line.split()
        if len(f) == 2 and re.fullmatch(r"munged|mariadbd|slurm\w*", f[1]):
            out.append(f"process {f[0]} {f[1]}")
    return out


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    """The bare nodes sharing the repository: (state dir, inventory); after the module, down
    leaves nothing of them nor of the cluster this machine controlled."""
    if shutil.which("start-stop-daemon") is None:
        pytest.skip("no start-stop-daemon here (dpkg): not a Debian machine")
    state = tmp_path_factory.mktemp("bare-slurm") / "state"
    inventory = REPO / "inventory" / f"bare-slurm-test-{os.getpid()}.yml"
    proc = bare_testbed(state, "up", str(len(NODES)), "--prefix", PREFIX, "--subnet", SUBNET,
                        "--inventory", str(inventory), "--share", str(REPO))  # fmt: skip
    if proc.returncode == 4:
        bare_testbed(state, "down")
        pytest.skip(f"no bare testbed here: {proc.stderr.strip()}")
    try:
        assert proc.returncode == 0, proc.stderr
        yield state, inventory
    finally:
        t0 = time.monotonic()
        down = bare_testbed(state, "down")
        FIGURES["down_s"] = round(time.monotonic() - t0, 1)
        assert down.returncode == 0, down.stderr
        assert not inventory.exists() and not state.exists()
        assert leftovers(state) == [] and slurm_daemons_here() == []
        assert not list(Path("/run/corun").glob("testbed-slurm-*.journal.json"))
        print(f"\nbare slurm figures: {json.dumps(FIGURES)}")


def provision(inventory):
    t0 = time.monotonic()
    env = ansible_env(ANSIBLE_CALLBACK_RESULT_FORMAT="json")
    proc = run_tool("ansible-playbook", "-i", str(inventory), "site.yml", "--tags", "slurm,monitors",
                    "-e", "corun_slurm=true", timeout=1500, env=env)  # fmt: skip
    recap = {host: tuple(map(int, rest)) for host, *rest in RECAP.findall(proc.stdout)}
    return proc, recap, round(time.monotonic() - t0, 1)


def sinfo() -> dict[str, str]:
    out = subprocess.run(["sinfo", "--noheader", "--Node", "--format=%N %t"], capture_output=True, text=True).stdout
    return dict(line.split() for line in out.splitlines() if line.strip())


@pytest.fixture(scope="module")
def cluster(nodes):
    state, inventory = nodes
    proc, recap, FIGURES["slurm_provision_s"] = provision(inventory)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert set(recap) == {"localhost", *NODES} and all(r[1:] == (0, 0) for r in recap.values()), recap
    return state, inventory


def test_slurm_is_provisioned_on_the_nodes_and_a_second_run_changes_nothing(cluster):
    _, inventory = cluster
    assert sinfo() == {n: "idle" for n in NODES}
    proc, recap, FIGURES["slurm_second_run_s"] = provision(inventory)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert {h: r[0] for h, r in recap.items()} == {"localhost": 0, **{n: 0 for n in NODES}}, recap
    assert sinfo() == {n: "idle" for n in NODES}


@pytest.fixture
def scratch():
    base = REPO / "results" / "test-scratch"  # under the repository: shared with the nodes
    base.mkdir(parents=True, exist_ok=True)
    d = Path(tempfile.mkdtemp(dir=base))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def campaign_config(base: Path, demands: list[float], reps: int = len(NODES)) -> Path:
    cfg = {
        "results_dir": str(base / "results"),
        "data_dir": str(base / "data"),
        "experiments": ["sensitivity_ranking"],
        "remeasure": {"max_foreign_pct": None},  # the nodes share this machine's CPUs
        "sensitivity_ranking": {"demands_mb_s": demands, "k_max": 1, "reps": reps},
    }
    path = base / "testbed.yaml"
    path.write_text(json.dumps(cfg))
    return path


def snakemake_argv(config: Path) -> list[str]:
    return [str(Path(PY).parent / "snakemake"), "all", "--keep-going", "--profile", "workflows/profiles/testbed-slurm",
            "--configfile", "workflows/config/testbed.yaml", str(config)]  # fmt: skip


def hosts_of_runs(runs: Path) -> dict[str, str]:
    return {m.parent.name: json.loads(m.read_text())["host"]["hostname"] for m in sorted(runs.glob("*/metadata.json"))}


def sacct_jobs(since: str) -> list[dict]:
    out = subprocess.run(["sacct", "-X", "-n", "-P", "-S", since, "-o", "JobID,NodeList,State,Submit,Start,End"],
                         capture_output=True, text=True).stdout  # fmt: skip
    keys = ("id", "node", "state", "submit", "start", "end")
    return [dict(zip(keys, line.split("|"))) for line in out.splitlines() if line.strip()]


def ts(s: str) -> float:
    return datetime.fromisoformat(s).timestamp()


@pytest.mark.timeout(1800)
def test_the_testbed_slurm_profile_measures_each_repetition_on_its_node(cluster, scratch):
    since = time.strftime("%Y-%m-%dT%H:%M:%S")
    t0 = time.monotonic()
    proc = subprocess.run(snakemake_argv(campaign_config(scratch, [1.5, 12.82])), capture_output=True, text=True,
                          cwd=REPO, timeout=1500)  # fmt: skip
    took = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr[-4000:]
    hosts = hosts_of_runs(scratch / "results" / "sensitivity_ranking" / "runs")
    assert len(hosts) == 2 * len(NODES) and set(hosts.values()) == set(NODES), hosts
    # repetition r on the r-th node of the partition (corun.testbed.slurm_placement)
    assert all(h == NODES[int(r[-1])] for r, h in hosts.items()), hosts
    jobs = [j for j in sacct_jobs(since) if j["state"] == "COMPLETED"]
    assert len(jobs) == 2 * len(NODES), jobs
    first_on_node = [min((j for j in jobs if j["node"] == n), key=lambda j: ts(j["start"])) for n in NODES]
    FIGURES["campaign_s"] = round(took, 1)
    FIGURES["runs_per_hour"] = round(len(jobs) * 3600 / took, 1)
    span = max(ts(j["end"]) for j in jobs) - min(ts(j["start"]) for j in jobs)
    FIGURES["runs_per_hour_in_slurm"] = round(len(jobs) * 3600 / span, 1)
    FIGURES["submit_to_start_s"] = statistics.median(ts(j["start"]) - ts(j["submit"]) for j in first_on_node)
    FIGURES["run_job_s"] = round(statistics.median(ts(j["end"]) - ts(j["start"]) for j in jobs), 1)


def node_sh(state, node, command) -> subprocess.CompletedProcess:
    return bare_testbed(state, "ssh", node, command, timeout=60)


# everything of Slurm's on the node but munged: slurmd and the running job (its slurmstepd and
# the run under it), as a crash of the node's Slurm leaves it; sshd and this probe aside
KILL_SLURM = (
    'for p in $(ps -eo pid=,ppid=,comm= | awk -v me=$$ \'$1 != me && $2 != me && $3 != "sshd" '
    '&& $3 != "munged" {print $1}\'); do kill -9 $p 2>/dev/null; done; true'
)
START_SLURMD = "start-stop-daemon --start --quiet --pidfile /run/slurmd.pid --user root --startas /usr/sbin/slurmd"


@pytest.mark.timeout(1800)
def test_a_node_whose_slurm_is_killed_fails_only_its_run_and_the_next_call_measures_only_that(cluster, scratch):
    state, _ = cluster
    config = campaign_config(scratch, [1.5, 12.82, 26.4])
    runs = scratch / "results" / "sensitivity_ranking" / "runs"
    campaign = subprocess.Popen(snakemake_argv(config), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                cwd=REPO)  # fmt: skip
    victim = NODES[1]
    try:
        # once a run is done and the victim holds a running job whose run is not yet written (the
        # executor's comment names the job's wildcards: rule_run_wildcards_<exp>_<run>)
        deadline, held = time.monotonic() + 600, []
        while time.monotonic() < deadline and campaign.poll() is None:
            comments = subprocess.run(["squeue", "-h", "-t", "R", "-w", victim, "-o", "%k"], capture_output=True,
                                      text=True).stdout.split()  # fmt: skip
            held = [m.group(1) for c in comments if (m := re.search(r"_(g\d+_k\d+_r\d+)$", c))]
            if any(runs.glob("*/metadata.json")) and held and not (runs / held[0] / "metadata.json").exists():
                break
            time.sleep(0.5)
        assert campaign.poll() is None and held, "no job ran on the victim"
        assert node_sh(state, victim, KILL_SLURM).returncode == 0
        t_kill = time.monotonic()
        while sinfo().get(victim, "").rstrip("*") != "down" and time.monotonic() < t_kill + 180:
            time.sleep(1)
        FIGURES["slurm_marks_down_s"] = round(time.monotonic() - t_kill, 1)
        assert sinfo()[victim].rstrip("*") == "down", sinfo()
        # its slurmd back: the runs pinned to it that were waiting go on (ReturnToService=2)
        assert node_sh(state, victim, START_SLURMD).returncode == 0
        out, _ = campaign.communicate(timeout=1200)
    finally:
        if campaign.poll() is None:
            campaign.kill()
            campaign.wait()
    assert campaign.returncode != 0, out[-3000:]
    # the failed job is not requeued behind Snakemake (--no-requeue): nothing left in the queue
    assert subprocess.run(["squeue", "-h"], capture_output=True, text=True).stdout.strip() == ""
    hosts = hosts_of_runs(runs)
    failed = sorted({f"g0{g}_k1_r{r}" for g in range(3) for r in range(len(NODES))} - set(hosts))
    assert failed == held, (failed, held, out[-3000:])
    assert f"run={failed[0]}" in out, out[-3000:]  # Snakemake's error names the run
    assert "NODE_FAIL" in out, out[-3000:]
    FIGURES["node_fail_campaign"] = {"measured": len(hosts), "failed": failed}

    # the next call: only the failed run, on its node, the others untouched
    assert sinfo() == {n: "idle" for n in NODES}
    before = {r: (runs / r / "metadata.json").stat().st_mtime_ns for r in hosts}
    t0 = time.monotonic()
    proc = subprocess.run(snakemake_argv(config), capture_output=True, text=True, cwd=REPO, timeout=1500)
    FIGURES["rerun_s"] = round(time.monotonic() - t0, 1)
    assert proc.returncode == 0, proc.stderr[-4000:]
    measured = re.findall(r"wildcards: (?:\w+=[^,\s]+, )*run=([^,\s]+)", proc.stdout + proc.stderr)
    assert sorted(set(measured)) == failed, measured
    assert {r: (runs / r / "metadata.json").stat().st_mtime_ns for r in before} == before
    assert hosts_of_runs(runs)[failed[0]] == victim


def test_the_bare_testbed_names_the_shared_folders(nodes):
    """The inventory of a testbed sharing the repository copies nothing of corun to the nodes."""
    state, inventory = nodes
    assert re.search(r"^ +corun_source_copy: false$", inventory.read_text(), re.M)
    proc = node_sh(state, NODES[0], f"findmnt -n -o TARGET {REPO} && test -x {REPO}/.venv/bin/python")
    assert proc.returncode == 0 and proc.stdout.split() == [str(REPO)], proc.stdout + proc.stderr
