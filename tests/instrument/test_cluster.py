"""The MPL-slot queue of MPI jobs across hosts (corun/run/cluster.py) and the run spec's checks."""

import json
import shlex
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from corun.errors import ConfigError, CorunError
from corun.machine.state import Journal
from corun.run import cluster as clu
from corun.run.runner import Runner, load_spec
from corun.run.schedulers import Variant
from corun.testbed.inventory import Host


def test_one_slot_per_node_per_job_and_mpl_bounds_the_jobs_of_a_node():
    p = clu.ClusterPlacer(n_nodes=4, mpl=2)
    a = p.place(4)
    assert a.nodes == [(0, 1), (1, 1), (2, 1), (3, 1)] and p.used == [1, 1, 1, 1]
    b = p.place(2)
    assert b.nodes == [(0, 1), (1, 1)]
    c = p.place(2)
    assert c.nodes == [(2, 1), (3, 1)]  # the least loaded nodes first
    assert p.place(1) is None  # every node holds mpl = 2 jobs
    p.release(b)
    assert p.place(3) is None and p.place(2).nodes == [(0, 1), (1, 1)]


def test_ranks_per_node_spreads_a_job_evenly():
    p = clu.ClusterPlacer(n_nodes=2, mpl=1, ranks_per_node=4)
    a = p.place(5)
    assert a.nodes == [(0, 3), (1, 2)] and a.ranks == 5
    assert not p.fits_anywhere(9) and p.fits_anywhere(8)
    assert p.nodes_needed(4) == 1


class J:
    def __init__(self, name, ranks, submit):
        self.name, self.ranks, self.submit = name, ranks, submit


def starts(pending, now, placer):
    return [j.name for j, _ in clu.fifo_starts(pending, now, placer, lambda j: j.ranks, lambda j: j.submit)]


def test_fifo_head_blocks_and_only_submitted_jobs_start():
    p = clu.ClusterPlacer(n_nodes=2, mpl=1)
    pending = [J("a", 2, 0.0), J("b", 2, 1.0), J("c", 1, 1.5), J("d", 1, 9.0)]
    assert starts(pending, 0.0, p) == ["a"]
    assert starts(pending, 2.0, p) == []  # b waits for a; c, which would fit nowhere either, waits behind b
    assert clu.next_submit_in(pending, 2.0, lambda j: j.submit) == pytest.approx(7.0)
    p.release(clu.Allocation([(0, 1), (1, 1)]))
    assert starts(pending, 2.0, p) == ["b"]
    p.release(clu.Allocation([(0, 1), (1, 1)]))
    assert starts(pending, 2.0, p) == ["c"]  # d is not submitted yet
    assert starts(pending, 9.0, p) == ["d"] and pending == []


def test_no_backfilling_behind_a_big_head():
    p = clu.ClusterPlacer(n_nodes=2, mpl=1)
    pending = [J("small", 1, 0.0), J("big", 2, 0.0), J("small2", 1, 0.0)]
    assert starts(pending, 0.0, p) == ["small"]  # small2 would fit on node 1, but big is ahead
    assert [j.name for j in pending] == ["big", "small2"]


def test_appfile_gives_each_node_its_ranks_and_environment():
    hosts = [Host("n1", "10.0.0.1"), Host("n2", "10.0.0.2")]
    text = clu.appfile_text(
        clu.Allocation([(1, 2), (0, 1)]), hosts, ["/bin/prog", "--x", "a b"], [{"S": "/s-0"}, {"S": "/s-1"}]
    )
    assert text.splitlines() == [
        "-np 2 --host 10.0.0.2:2 -x S=/s-1 /bin/prog --x 'a b'",
        "-np 1 --host 10.0.0.1:1 -x S=/s-0 /bin/prog --x 'a b'",
    ]
    argv = clu.mpirun_argv(hosts, "/tmp/app", "10.0.0.0/24")
    assert argv[-2:] == ["--app", "/tmp/app"] and "tcp,self" in argv and "10.0.0.0/24" in argv
    assert "orte_tmpdir_base" not in argv
    argv = clu.mpirun_argv(hosts, "/tmp/app", None, "/tmp/corun-ompi-x/j000")
    i = argv.index("orte_tmpdir_base")  # a session folder of its own for each mpirun
    assert argv[i - 1] == "--mca" and argv[i + 1] == "/tmp/corun-ompi-x/j000"
    assert clu.shm_of("/corun-cosched", 3) == "/corun-cosched-3"


def spec_file(tmp_path, inventory, jobs, scheduler=None, **cluster):
    spec = {
        "name": "t",
        "cluster": {"inventory": str(inventory), **cluster},
        "scheduler": scheduler or {"name": "linux"},
        "monitors": {"enabled": []},
        "device": {"path": str(tmp_path)},
        "jobs": jobs,
    }
    f = tmp_path / "spec.yaml"
    f.write_text(yaml.safe_dump(spec))
    return f


@pytest.fixture
def inventory(tmp_path):
    f = tmp_path / "inv.yml"
    f.write_text(
        "all:\n  children:\n    testbed:\n      hosts:\n"
        "        h1: {ansible_host: 10.9.9.1}\n        h2: {ansible_host: 10.9.9.2}\n"
    )
    return f


def prepare_error(f: Path) -> str:
    with pytest.raises(ConfigError) as e:
        Runner(load_spec(f), f.parent / "out", source="spec.yaml").prepare()
    return str(e.value)


def test_spec_checks_are_one_line(tmp_path, inventory):
    job = {"name": "a", "kind": "mpi", "ranks": 3, "cmd": ["/bin/true"]}
    msg = prepare_error(spec_file(tmp_path, inventory, [job]))
    assert msg == "spec.yaml: jobs[0].ranks: 3 (expected an integer <= 2 (2 hosts x 1 ranks per node))"
    msg = prepare_error(spec_file(tmp_path, inventory, [{**job, "ranks": 2}], {"name": "cc_b", "params": {"mpl": 3}}))
    assert msg == "spec.yaml: scheduler.params.mpl: 3 (expected cluster.mpl (1))"
    msg = prepare_error(spec_file(tmp_path, inventory, [{"name": "p", "cmd": ["/bin/true"]}]))
    assert "jobs[0].kind: 'process' (expected mpi" in msg
    f = spec_file(tmp_path, inventory, [job])
    spec = yaml.safe_load(f.read_text())
    del spec["cluster"]
    f.write_text(yaml.safe_dump(spec))
    assert "jobs[0].kind: 'mpi' (expected process, or a run with a cluster section)" in prepare_error(f)
    for m in (msg,):
        assert "\n" not in m


def test_node_daemons_verify_every_host_at_once_and_name_the_first_that_fails(tmp_path):
    # a barrier: each verify marks its arrival and waits (at most 20 s) for all four; one host
    # after another, the first would wait in vain. Then nodes 2 and 3 fail: h2 is named.
    script = (
        "import pathlib, sys, time\n"
        "d = pathlib.Path(sys.argv[2]); (d / sys.argv[1]).touch()\n"
        "end = time.monotonic() + 20\n"
        "while len(list(d.iterdir())) < 4:\n"
        "    if time.monotonic() > end: sys.exit(9)\n"
        "    time.sleep(0.01)\n"
        "sys.exit(1 if sys.argv[1] in '23' else 0)\n"
    )
    (tmp_path / "arrived").mkdir()
    manifest = {
        "daemon": True,
        "start": ["true"],
        "verify": ["{python}", "-c", script, "{node_id}", str(tmp_path / "arrived")],
    }
    variant = Variant("probe", manifest, tmp_path, {})
    hosts = [Host(name=f"h{i}", address="127.0.0.1", local=True) for i in range(4)]
    nd = clu.NodeDaemons(variant, hosts, tmp_path / "state", 7000)
    with pytest.raises(CorunError, match="scheduler probe: not in effect on h2"):
        nd.verify()


# the stop's SIGTERM follows the lifeline's end at once: each file is written whole
# (corun.util.atomic_write_json), so the signal never leaves one half-written
LIFELINE_PROBE = (
    "import os, pathlib, sys, time\n"
    "from corun.util import atomic_write_json\n"
    "state = pathlib.Path(sys.argv[1]); words = []\n"
    "atomic_write_json(state / 'argv.json', sys.argv[2:])\n"
    "atomic_write_json(state / 'summary.json', {})\n"
    "atomic_write_json(state / 'rank_env.json', {})\n"
    "if not sys.argv[2:]:\n"
    "    atomic_write_json(state / 'words.json', [os.read(0, 64).decode()])\n"
    "    time.sleep(60)\n"
    "while True:\n"
    "    words.append(os.read(0, 64).decode())\n"
    "    atomic_write_json(state / 'words.json', words)\n"
    "    if not words[-1]: break\n"
)


@pytest.mark.parametrize("local", [False, True], ids=["remote", "local"])
def test_a_daemon_on_another_host_hears_from_the_runner_on_its_stdin_until_the_stop(tmp_path, monkeypatch, local):
    """The manifest's lifeline_args go to daemons on other hosts only; the runner writes to
    their stdin every LIFELINE_BEAT_S and closes it at stop; a daemon here reads nothing."""
    # another host, reached here without ssh: its command runs through a shell as over ssh
    monkeypatch.setattr(
        Host,
        "command",
        lambda self, argv, cwd=None, own_connection=False: list(argv) if self.local else ["sh", "-c", shlex.join(argv)],
    )
    probe = tmp_path / "probe.py"
    probe.write_text(LIFELINE_PROBE)
    manifest = {
        "daemon": True,
        "start": ["{python}", str(probe), "{state_dir}"],
        "lifeline_args": ["--lifeline-s", "{lifeline_s}"],
    }
    variant = Variant("probe", manifest, tmp_path, {})
    nd = clu.NodeDaemons(variant, [Host(name="h0", address="127.0.0.1", local=local)], tmp_path / "state", 7000, 4.5)
    (tmp_path / "journals").mkdir()
    journal = Journal("lifeline-test", directory=tmp_path / "journals")
    nd.start(journal)
    time.sleep(2.5 * clu.LIFELINE_BEAT_S)
    assert nd.alive() == []
    assert nd.stop(journal) == []
    state = tmp_path / "state" / "h0"
    argv = json.loads((state / "argv.json").read_text())
    words = json.loads((state / "words.json").read_text())
    if local:
        assert argv == [] and words == [""]  # stdin: nothing to read, its end at once
    else:
        assert argv == ["--lifeline-s", "4.5"] and "".join(words) in ("\n" * k for k in range(2, 5)), words


def test_a_netns_hosts_verify_and_stop_run_here_and_its_daemon_over_ssh(tmp_path, monkeypatch):
    """A host of a netns cluster (corun_shared_machine: this machine's files and PIDs) has its
    variant's verify and stop run here, no ssh round trip each, and its daemon's files read
    here; its daemon still starts over ssh, across its link. A host of a testbed gets all three over ssh."""
    manifest = {"daemon": True, "start": ["daemon-cmd"], "verify": ["true"], "stop": ["stop-cmd", "{state_dir}"]}
    variant = Variant("probe", manifest, tmp_path, {})
    shared = Host(name="n1", address="10.77.0.11", vars={"corun_shared_machine": True})
    remote = Host(name="t1", address="10.0.0.5", vars={"corun_shared_machine": False})
    nd = clu.NodeDaemons(variant, [shared, remote], tmp_path / "state", 7000)
    here, there = nd.nodes
    assert nd._on(here, "stop") == ["stop-cmd", str((tmp_path / "state" / "n1").absolute())]
    assert nd._on(here, "verify") == ["true"]
    assert nd._on(there, "verify")[0] == "ssh" and nd._on(there, "stop")[0] == "ssh"
    clu.NodeDaemons(variant, [shared], tmp_path / "state", 7000).verify()  # over ssh it could not succeed here
    # its daemon's files are read here only: no ssh round trip polls for one not written yet
    read_there = []
    monkeypatch.setattr(clu.NodeDaemons, "_read_on_host", staticmethod(lambda nd, f: read_there.append(f)))
    here.process = subprocess.Popen(["sleep", "5"])
    try:
        with pytest.raises(CorunError, match="the daemon on n1 wrote no rank_env.json"):
            nd._wait_rank_env(here, timeout_s=1.0)
    finally:
        here.process.kill()
        here.process.wait()
    assert read_there == []
