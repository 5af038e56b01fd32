"""Provisioning from scratch on an emulated bare-metal testbed (scripts/bare-testbed).

Two fresh Debian 12 nodes (namespaces of this machine, each with a disk of its own, an ext4 image on
a loop device made from the debootstrap template, built once per machine and reused): they start
bare, their root on that block device; node_check names a node without ssh, with another release or
without space in one line while the other node goes on; site.yml provisions both at once from
nothing over ssh (packages through the testbed's apt proxy, corun's tree, kernels, schedulers, MPI,
the upstream benchmarks from the mirror served over HTTP), a run after it changes nothing; the
testbed profile then runs mpl_sweep across both nodes, and sais and aioli with the client on one
and a data server on the other, the policies' server parts (sais_mark's servers' half, aioli's
translator policy) applied on the server from here, from here (results, report and archive made
here), and survives node 2 killed
mid-campaign and node 2 cut off for 30 s (only its runs fail, naming it; nothing is left on either
node; the next call measures only those); teardown leaves no namespace, mount, loop device or
process. Marked root and bare (select with -m bare); it takes many minutes (the figures are
printed), the first time longer (the template, the apt proxy's cache)."""

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from test_bare_testbed_cli import bt
from test_provision import ansible_env, output, run_tool

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "bare-testbed"
PY = sys.executable
PREFIX = "corunbt"
SUBNET = "10.79.1.0/24"
NODES = [f"{PREFIX}-n1", f"{PREFIX}-n2"]
RECAP = re.compile(r"^(\S+)\s*:.*\bchanged=(\d+).*\bunreachable=(\d+)\s+failed=(\d+)", re.MULTILINE)
FIGURES = {}
HOST_LOOPS = set()  # the loop devices this machine had before the testbed (a node sees them all)

pytestmark = [pytest.mark.root, pytest.mark.bare]


def bare_testbed(state_dir, *args, timeout=600):
    return subprocess.run(
        [PY, str(SCRIPT), "--state-dir", str(state_dir), *args], capture_output=True, text=True, timeout=timeout
    )


def up(state_dir, inventory):
    return bare_testbed(state_dir, "up", "2", "--prefix", PREFIX, "--subnet", SUBNET, "--inventory", str(inventory))


def leftovers(state_dir) -> list[str]:
    """What of the testbed is still there: namespaces, mounts, loop devices, processes."""
    out = []
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    out += [f"netns {line.split()[0]}" for line in netns.splitlines() if line.startswith(PREFIX)]
    mounts = subprocess.run(["findmnt", "-rn", "-o", "TARGET"], capture_output=True, text=True).stdout
    out += [f"mount {m}" for m in mounts.split() if m.startswith(str(state_dir))]
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    out += [f"loop {line}" for line in loops.splitlines() if str(state_dir) in line]
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            root = os.readlink(f"/proc/{pid}/root")
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if root.startswith(str(state_dir)) or str(state_dir) in cmd:
            out.append(f"process {pid} {cmd.strip()[:80]}")
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    out += [f"link {m}" for m in re.findall(rf"\d+: ({PREFIX}-\w+)", links)]
    return out


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    """Two bare nodes: (state dir, inventory); torn down after the module, checked for leftovers."""
    if not bt.DEFAULT_MIRROR_DIR.is_dir():  # bare-testbed's default --mirror-dir, served to the nodes
        pytest.skip(
            f"no source mirror beside the repository ({bt.DEFAULT_MIRROR_DIR}): the nodes build the upstream "
            "benchmarks from it"
        )
    state = tmp_path_factory.mktemp("bare") / "state"
    inventory = REPO / "inventory" / f"bare-test-{os.getpid()}.yml"
    HOST_LOOPS.update(subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout.splitlines())
    t0 = time.monotonic()
    proc = up(state, inventory)
    FIGURES["up_s"] = round(time.monotonic() - t0, 1)
    if proc.returncode == 4:
        bare_testbed(state, "down")
        pytest.skip(f"no bare testbed here: {proc.stderr.strip()}")
    try:
        assert proc.returncode == 0, proc.stderr
        yield state, inventory
    finally:
        down = bare_testbed(state, "down")
        assert down.returncode == 0, down.stderr
        assert not inventory.exists() and not state.exists()
        assert leftovers(state) == []
        print(f"\nbare testbed figures: {json.dumps(FIGURES)}")


def ssh(state, node, command):
    return bare_testbed(state, "ssh", node, command, timeout=60)


def playbook(inventory, *args, timeout=3000):
    t0 = time.monotonic()
    # JSON results: each failure's message on the line of its fatal: [...] (YAML folds long ones)
    env = ansible_env(ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_CALLBACKS_ENABLED="task_times")
    proc = run_tool("ansible-playbook", "-i", str(inventory), "site.yml", *args, timeout=timeout, env=env)
    recap = {host: tuple(map(int, rest)) for host, *rest in RECAP.findall(proc.stdout)}
    return proc, recap, round(time.monotonic() - t0, 1)


def node_check_lines(stdout: str) -> list[str]:
    return re.findall(r'"msg": "(node_check: [^"]*)"', stdout)


def _comm(pid: str) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except FileNotFoundError:  # it ended between the listing and the read
        return None


@pytest.mark.timeout(900)
def test_nodes_start_bare_with_only_sshd(bare):
    state, _ = bare
    for name in NODES:
        # unshare waits outside the node's PID namespace; inside it, sshd is PID 1 and alone. The
        # readiness probe of `up` leaves a per-connection sshd behind for a moment (one was seen
        # 0 s after up on a busy machine), so a second sshd may show for up to 10 s, never longer
        deadline = time.monotonic() + 10
        while True:
            pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True).stdout.split()
            comms = [_comm(p) for p in pids]
            comms = [c for c in comms if c is not None]
            alone = set(comms) <= {"unshare", "sshd"} and comms.count("sshd") == 1
            if alone or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert alone, f"{name} runs {comms}"
    st = json.loads(bare_testbed(state, "status", "--json").stdout)
    assert st["up"] and [n["name"] for n in st["nodes"]] == NODES
    for name in NODES:
        probe = f"hostname; test -e /usr/bin/gcc && echo gcc; test -e {REPO} && echo corun; dpkg-query -W | wc -l"
        proc = ssh(state, name, probe)
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.split()
        assert lines[0] == name and "gcc" not in lines and "corun" not in lines, proc.stdout
        assert int(lines[-1]) < 200, f"{name} holds {lines[-1]} packages, more than the minbase template"
        # its root is an ext4 on a block device of its own, which its /dev holds, with elevators
        probe = (
            "findmnt -n -o SOURCE,FSTYPE /; d=$(findmnt -n -o SOURCE /); "
            "test -b $d && cat /sys/block/${d#/dev/}/queue/scheduler"
        )
        proc = ssh(state, name, probe)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        source, fstype, *elevators = proc.stdout.split()
        assert re.fullmatch(r"/dev/loop\d+", source) and fstype == "ext4", proc.stdout
        assert {"none", "mq-deadline"} <= {e.strip("[]") for e in elevators}, proc.stdout


@pytest.mark.timeout(900)
def test_node_check_names_the_node_and_what_is_missing_in_one_line(bare):
    state, inventory = bare
    # a node down (killed): no ssh, one line; the other node goes on
    assert bare_testbed(state, "kill", NODES[1]).returncode == 0
    try:
        proc, recap, _ = playbook(inventory, "--tags", "node_check", timeout=300)
    finally:
        assert up(state, inventory).returncode == 0
    lines = node_check_lines(proc.stdout)
    assert len(lines) == 1 and lines[0].startswith(f"node_check: {NODES[1]}: no ssh at 10.79.1.12"), output(proc)
    assert recap[NODES[0]][1:] == (0, 0), output(proc)

    root2 = state / "nodes" / NODES[1] / "root"
    os_release = root2 / "usr" / "lib" / "os-release"
    original = os_release.read_text()
    os_release.write_text(original.replace('VERSION_ID="12"', 'VERSION_ID="11"'))
    try:
        proc, recap, _ = playbook(inventory, "--tags", "node_check", timeout=300)
    finally:
        os_release.write_text(original)
    assert node_check_lines(proc.stdout) == [
        f"node_check: {NODES[1]}: debian 11 (expected debian 12: deploy the node with that release, e.g. debian12-min)"
    ], output(proc)
    assert recap[NODES[0]][1:] == (0, 0) and recap[NODES[1]][2] == 1, output(proc)

    # beside the other inventories, so inventory/group_vars applies to it too
    small = inventory.with_name(inventory.stem + "-small.yml")
    small.write_text(
        inventory.read_text().replace(
            f"        {NODES[0]}:\n", f"        {NODES[0]}:\n          node_check_min_free_mib: 100000000\n"
        )
    )
    try:
        proc, recap, _ = playbook(small, "--tags", "node_check", timeout=300)
    finally:
        small.unlink()
    lines = node_check_lines(proc.stdout)
    assert len(lines) == 1 and re.fullmatch(
        rf"node_check: {NODES[0]}: \d+ MiB free on / \(expected at least node_check_min_free_mib 100000000 MiB\)",
        lines[0],
    ), output(proc)
    assert recap[NODES[1]][1:] == (0, 0), output(proc)


# NPB built for what the runs below take (wl6's benchmarks at class S, testbed.yaml's class), not
# roles/npb's default three classes of eight: the same build, a fifth of its binaries (CI's time);
# and the upstream benchmarks those runs take (PARSEC serves paper 000's experiments, which this
# test runs on this machine, not on the nodes: tests/test_roles_parsec.py builds it)
NPB_VARS = json.dumps(
    {
        "npb_benchmarks": ["bt", "cg", "ft", "is", "sp"],
        "npb_classes": ["S"],
        "corun_upstream_benchmarks": ["graph500", "npb", "ior"],
    }
)


@pytest.mark.timeout(5400)
def test_site_provisions_bare_nodes_and_a_second_run_changes_nothing(bare):
    """Both nodes from nothing at once, as on a testbed; then a run that changes nothing."""
    state, inventory = bare
    proc, recap, FIGURES["provision_s"] = playbook(inventory, "-e", NPB_VARS)
    print("\n" + proc.stdout[proc.stdout.find("task_times:") :])  # where the time went, per role
    assert proc.returncode == 0, output(proc)
    assert all(recap[n][0] > 0 for n in NODES), output(proc)
    # every host of the play unreachable nowhere and failed nowhere: the nodes, and this machine as
    # the inventory's Slurm controller (its play does nothing without corun_slurm)
    assert all(r[1:] == (0, 0) for r in recap.values()), output(proc)
    # the upstream benchmarks built from the mirror served over HTTP, not their stand-ins
    upstream = " ".join(f"/var/lib/corun/upstream.d/{b}.json" for b in ("graph500", "npb", "ior"))
    probes = (
        "command -v mpirun",
        f'test $(cat {upstream} | grep -c \'"status": "built"\') = 3',
        "ls /opt/corun/ior-*/bin/ior",
        f"ls {REPO}/kernels/build | grep -q .",
    )
    for name in NODES:
        for probe in probes:
            got = ssh(state, name, probe)
            assert got.returncode == 0, f"{name}: {probe}: {got.stdout}{got.stderr}"

    proc, recap, FIGURES["second_run_s"] = playbook(inventory, "-e", NPB_VARS)
    assert proc.returncode == 0, output(proc)
    assert set(NODES) <= set(recap) and recap == dict.fromkeys(recap, (0, 0, 0)), (
        f"a second run changed something:\n{output(proc)}"
    )


# The testbed profile (workflows/config/testbed.yaml) on the two provisioned nodes, run from this
# machine as on Grid'5000: only the inventory differs, and the sizes two nodes hold (jobs of 2
# ranks). mpl_sweep's runs span the nodes: corun run here, its ranks and node daemons there.
def profile_config(base: Path, inventory: Path, schemes: list[str]) -> Path:
    return experiment_config(
        base,
        "mpl_sweep",
        {
            "schemes": schemes,
            "workloads": {"wl6": {"ranks": [2], "jobs": 6}},
            "model": {"projection": {"nodes": [2, 4], "ranks": [2]}},
            "cluster": {"inventory": str(inventory)},
        },
    )


def experiment_config(base: Path, experiment: str, section: dict) -> Path:
    cfg = {
        "results_dir": str(base / "results"),
        "data_dir": str(base / "data"),
        "experiments": [experiment],
        # the emulated nodes share this machine's CPUs: their part of a run (ranks, servers) is
        # foreign to the controller's measurement of it, so no run is measured again for it
        "remeasure": {"max_foreign_pct": None},
        experiment: section,
    }
    path = base / "testbed.yaml"
    path.write_text(json.dumps(cfg))
    return path


def run_experiment(base: Path, experiment: str, section: dict) -> tuple[Path, dict[str, dict]]:
    """The testbed profile's EXPERIMENT with SECTION over it, run to the end (its time in
    FIGURES): the results folder and each run's metadata.json by run name."""
    proc, FIGURES[f"{experiment}_run_s"] = snakemake(experiment_config(base, experiment, section))
    results = base / "results"
    assert proc.returncode == 0, run_logs(results) + proc.stderr[-4000:]
    metas = {f.parent.name: json.loads(f.read_text()) for f in (results / experiment / "runs").glob("*/metadata.json")}
    return results, metas


def snakemake_argv(config: Path) -> list[str]:
    return [
        str(Path(PY).parent / "snakemake"),
        "all",
        "--keep-going",
        "--profile",
        "workflows/profiles/testbed",
        "--configfile",
        "workflows/config/testbed.yaml",
        str(config),
    ]


def snakemake(config: Path, timeout=1800) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    proc = subprocess.run(snakemake_argv(config), capture_output=True, text=True, cwd=REPO, timeout=timeout)
    return proc, round(time.monotonic() - t0, 1)


def node_state(state, nodes=NODES) -> dict[str, list[str]]:
    """What a run may leave on each node: a process besides sshd (a rank, a node daemon), one
    stopped or in a real-time class (boosted), a mount of corun's or a loop device."""
    probe = (
        # the probe's own shell ($$) and its children (ps, awk) aside
        "ps -eo pid=,ppid=,stat=,cls=,comm= | awk -v me=$$ "
        '\'$1 != me && $2 != me && ($5 != "sshd" || $3 ~ /T/ || $4 != "TS")\'; '
        "findmnt -rn -o TARGET | grep -e corun -e pfs; losetup -a"
    )
    out = {}
    for name in nodes:
        proc = ssh(state, name, probe)
        assert proc.returncode in (0, 1), f"{name}: {proc.stderr}"
        # a node sees every loop device of the machine: the testbed's disks and those there before are not a run's
        out[name] = [x for x in proc.stdout.splitlines() if x not in HOST_LOOPS and str(state) not in x]
    return out


def run_logs(results: Path) -> str:
    return "".join(f"{f}: {f.read_text()[-1500:]}\n" for f in sorted(results.glob("**/logs/run_*.log")))


@pytest.fixture
def scratch():
    scratch = REPO / "results" / "test-scratch"  # on a real disk, like conftest's disk_tmp
    scratch.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(dir=scratch))
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.timeout(1800)
def test_the_testbed_profile_runs_mpl_sweep_across_the_nodes_and_gathers_the_results_here(bare, scratch):
    state, inventory = bare
    proc, FIGURES["mpl_sweep_run_s"] = snakemake(profile_config(scratch, inventory, ["sb", "cc_b"]))
    results = scratch / "results"
    assert proc.returncode == 0, run_logs(results) + proc.stderr[-4000:]
    runs = sorted((results / "mpl_sweep" / "runs").iterdir())
    assert [r.name for r in runs] == ["wl6_heavy_cc_b_mpl2_r0", "wl6_heavy_sb_mpl2_r0"]
    for run in runs:
        meta = json.loads((run / "metadata.json").read_text())
        assert sorted(d["host"] for d in meta["cluster"]["daemons"]) == NODES, run
        with (run / "jobs.csv").open() as f:
            rows = list(csv.DictReader(f))
        assert rows and all(r["exit_code"] == "0" for r in rows), run
        # every job's 2 ranks on the 2 nodes, one each
        assert {r["hosts"] for r in rows} == {f"{NODES[0]}:1 {NODES[1]}:1"}, run
    assert (results / "mpl_sweep" / "jobs.csv").exists() and (results / "report.html").exists()
    archive = subprocess.run(
        [PY, "-m", "corun", "archive", str(results), "--out", str(scratch / "results.tar.gz")],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )
    assert archive.returncode == 0, archive.stderr
    assert node_state(state) == {n: [] for n in NODES}


@pytest.mark.timeout(1800)
def test_the_testbed_profile_runs_sais_with_the_client_on_one_node_and_a_data_server_on_the_other(bare, scratch):
    """sais as on Grid'5000 with two nodes: the first the client (corun run there, IOR built
    from its pinned source), the second a data server; the baseline and RPS; each node's root
    on a block device of its own, so the run finds its device under test."""
    state, inventory = bare
    # testbed.yaml's sais section, at the sizes two nodes hold; spread for source_aware, whose
    # kernel-wide RFS flow table a node sharing this machine's kernel cannot set (steer.py says so)
    section = {
        "policies": ["irqbalance", "spread", "sais_mark"],
        "servers": [1],
        "client_links": [1],
        "transfer_sizes_bytes": [1048576],
        "clients": [1],
        "file_mib": 16,
        "reps": 1,
        "max_reps": 1,
        "compute_passes": 0,
        "cluster": {"kind": "inventory", "inventory": str(inventory), "pfs_root": "/tmp/corun-pfs"},
    }
    results, metas = run_experiment(scratch, "sais", section)
    reads = [m for m in metas.values() if m["labels"]["kind"] == "read"]
    assert sorted(m["labels"]["policy"] for m in reads) == ["irqbalance", "sais_mark", "spread"], list(metas)
    for m in reads:  # measured on the client node, IOR itself reading through the servers
        assert m["status"] == "ok" and m["host"]["hostname"] == NODES[0], m["labels"]
        assert m["labels"]["reader"] == "ior" and "stands_in_for" not in m["labels"], m["labels"]
    # sais_mark: the client's half by the run on the client node, the server's half on the server
    # node by the controller (corun.testbed.server_parts), both in effect from start to end
    (mark,) = [m for m in reads if m["labels"]["policy"] == "sais_mark"]
    assert mark["scheduler"]["params"]["server_interfaces"] == "" and mark["scheduler"]["verified_at_end"] is True
    (part,) = mark["server_parts"]
    assert part["host"] == NODES[1] and part["verified_at_start"] and part["verified_at_end"] and part["restored"]
    run = results / "sais" / "runs" / "s1_l1_sais_mark_t1024k_c1_r0"
    client = json.loads((run / "sched" / "state" / "sais_mark_counters.json").read_text())["totals"]
    server = json.loads((run / "server_parts" / NODES[1] / "sais_mark_counters.json").read_text())["totals"]
    assert client["stamped"] > 0 and client["steered"] > 0 and server["recorded"] > 0 and server["reflected"] > 0
    with (results / "sais" / "analysis" / "sais_mark.csv").open() as f:
        (row,) = list(csv.DictReader(f))
    assert row["failed"] == "False" and float(row["mark_recorded"]) == server["recorded"], row
    assert (results / "report.html").exists()
    assert node_state(state) == {n: [] for n in NODES}


@pytest.mark.timeout(1800)
def test_the_testbed_profile_runs_aioli_with_the_policy_applied_on_the_server_node_from_here(bare, scratch):
    """aioli as on Grid'5000 with two nodes: the client's readers on the first, the data server
    with the corun/aioli translator on the second; the policy is applied from the controller,
    which holds the file system's layout (corun.testbed.server_parts), around each run."""
    state, inventory = bare
    section = {
        "policies": ["pfs_fifo", "aioli"],
        "servers": 1,
        "clients": [2],
        "client_mib": 2,
        "reps": 1,
        "cluster": {"kind": "inventory", "inventory": str(inventory), "pfs_root": "/tmp/corun-pfs"},
    }
    results, metas = run_experiment(scratch, "aioli", section)
    assert sorted(m["labels"]["policy"] for m in metas.values()) == ["aioli", "pfs_fifo"], list(metas)
    for name, m in metas.items():
        assert m["status"] == "ok" and m["host"]["hostname"] == NODES[0], name
        assert m["scheduler"]["applied_by"] == "controller" and m["variant_verified_at_end"] is True, name
        (part,) = m["server_parts"]
        assert part["host"] == "controller" and part["verified_at_end"] and part["restored"], part
        # the translator's counters on the server after the run (apply reset them): the policy ran there
        after = json.loads((results / "aioli" / "runs" / name / "pfs_counters.json").read_text())["after"]
        (server,) = after["servers"]
        assert server["name"] == NODES[1] and server["sched"] is not None, server
        c = server["sched"]["counters"]
        assert c["requests"]["read"] > 0, c
        if m["labels"]["policy"] == "aioli":
            assert c["dispatches"] > 0 and c["passed_through"] == 0, c
        else:
            assert c["dispatches"] == 0 and c["passed_through"] > 0, c
    assert (results / "report.html").exists()
    assert node_state(state) == {n: [] for n in NODES}


def three_runs(scratch: Path, inventory: Path) -> tuple[Path, Path, Path]:
    """The config of a campaign of three mpl_sweep runs, its results folder and its runs folder."""
    config = profile_config(scratch, inventory, ["batch", "sb", "cc_b"])
    return config, scratch / "results", scratch / "results" / "mpl_sweep" / "runs"


def campaign_with_a_fault(config: Path, runs: Path, fault) -> tuple[int, str, dict[str, int], float]:
    """The campaign of CONFIG, FAULT() called once its first run finished: its exit code, its
    output, the runs finished before the fault (name: mtime of their metadata.json) and its time."""
    t0 = time.monotonic()
    campaign = subprocess.Popen(
        snakemake_argv(config), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO
    )
    try:
        while not any(runs.glob("*/metadata.json")) and campaign.poll() is None:
            time.sleep(0.2)
        assert campaign.poll() is None, campaign.stdout.read()
        before = finished_runs(runs)
        fault()
        out, _ = campaign.communicate(timeout=1200)
    finally:
        if campaign.poll() is None:
            campaign.kill()
            campaign.wait()
    return campaign.returncode, out, before, round(time.monotonic() - t0, 1)


def finished_runs(runs: Path) -> dict[str, int]:
    return {m.parent.name: m.stat().st_mtime_ns for m in runs.glob("*/metadata.json")}


def failed_runs_naming(results: Path, finished: dict[str, int], node: str) -> list[str]:
    """The runs that did not finish, each checked to name NODE in its last corun line."""
    logs = [
        f for f in sorted((results / "mpl_sweep" / "logs").glob("run_*.log")) if not f.name.startswith("run_groups")
    ]
    failed = [f for f in logs if f.name[len("run_") : -4] not in finished]
    for log in failed:  # the run's own error, its last line from corun, names the node
        errors = [line for line in log.read_text().splitlines() if line.startswith("corun: ")]
        assert errors and node in errors[-1], log.read_text()[-2000:]
    return [f.name[len("run_") : -4] for f in failed]


def rerun_measures_only(config: Path, results: Path, failed: list[str], finished: dict[str, int]) -> float:
    """The next call: it measures the failed runs and no other; its time."""
    proc, took = snakemake(config)
    assert proc.returncode == 0, run_logs(results) + proc.stderr[-4000:]
    # which jobs it ran: from Snakemake's own log (the corun logger keeps it in its file)
    (log,) = re.findall(r"Complete log\(s\): (\S+\.snakemake\.log)", proc.stderr)
    measured = re.findall(r"wildcards: (?:\w+=[^,\s]+, )*run=([^,\s]+)", Path(log).read_text())
    assert sorted(measured) == sorted(failed), proc.stderr[-3000:]
    runs = results / "mpl_sweep" / "runs"
    assert {r: (runs / r / "metadata.json").stat().st_mtime_ns for r in finished} == finished
    assert len(list(runs.glob("*/metadata.json"))) == 3
    return took


@pytest.mark.timeout(1800)
def test_a_node_killed_mid_campaign_fails_the_runs_it_held_and_the_next_call_measures_only_those(bare, scratch):
    """Node 2 SIGKILLed once the first of three runs finished: the others fail naming the node,
    node 1 is left with nothing running, boosted or stopped; after `up` the next call measures
    only the runs that failed."""
    state, inventory = bare
    config, results, runs = three_runs(scratch, inventory)

    def kill():
        assert bare_testbed(state, "kill", NODES[1]).returncode == 0

    code, out, _, FIGURES["node_kill_run_s"] = campaign_with_a_fault(config, runs, kill)
    assert code != 0, out[-3000:]
    finished = finished_runs(runs)
    assert len(finished) == 1, sorted(p.name for p in runs.iterdir())
    failed = failed_runs_naming(results, finished, NODES[1])
    assert len(failed) == 2, failed
    assert node_state(state, NODES[:1]) == {NODES[0]: []}

    assert up(state, inventory).returncode == 0
    FIGURES["node_kill_rerun_s"] = rerun_measures_only(config, results, failed, finished)
    assert node_state(state) == {n: [] for n in NODES}


def wait_nothing_left(state, within_s: float) -> tuple[dict[str, list[str]], float]:
    """Poll the nodes until none holds anything of a run (or WITHIN_S passes): what is left, and when."""
    t0 = time.monotonic()
    while True:
        left = node_state(state)
        if left == {n: [] for n in NODES} or time.monotonic() > t0 + within_s:
            return left, round(time.monotonic() - t0, 1)
        time.sleep(2)


@pytest.mark.timeout(1800)
def test_a_node_cut_off_for_30_s_fails_the_runs_it_held_and_the_next_call_measures_only_those(bare, scratch):
    """Node 2's link down for 30 s once the first of three runs finished (a partition: its
    processes go on): the runs that needed it meanwhile fail naming it, one started after the
    link is back may pass; once it is back neither node keeps a rank, a node daemon, a process
    stopped or boosted, a mount or a loop device; the next call measures only the runs that failed."""
    state, inventory = bare
    config, results, runs = three_runs(scratch, inventory)

    def cut_off_for_30_s():
        assert bare_testbed(state, "link", NODES[1], "down").returncode == 0
        try:
            status = json.loads(bare_testbed(state, "status", "--json").stdout)
            assert [n["link_up"] for n in status["nodes"]] == [True, False], status
            time.sleep(30)
        finally:
            assert bare_testbed(state, "link", NODES[1], "up").returncode == 0

    code, out, before, FIGURES["partition_run_s"] = campaign_with_a_fault(config, runs, cut_off_for_30_s)
    assert code != 0, out[-3000:]
    finished = finished_runs(runs)
    assert before.items() <= finished.items(), (before, finished)
    failed = failed_runs_naming(results, finished, NODES[1])
    assert 1 <= len(failed) <= 2, failed
    left, FIGURES["partition_settled_s"] = wait_nothing_left(state, 90)
    assert left == {n: [] for n in NODES}

    FIGURES["partition_rerun_s"] = rerun_measures_only(config, results, failed, finished)
    assert node_state(state) == {n: [] for n in NODES}
