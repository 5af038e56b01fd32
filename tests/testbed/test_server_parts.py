"""Server parts (corun.testbed.server_parts): a policy's part on the data servers of an inventory,
applied by the controller around each run of a group (corun.testbed.pfs_runs), journalled,
checked at the start and at the end, restored whatever happens, recorded in the run's
metadata.json; after a SIGKILL of the controller, `corun recover` restores it."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from corun.errors import CorunError
from corun.machine.recovery import recover_stale
from corun.machine.state import Journal
from corun.testbed import pfs_runs, server_parts
from corun.testbed.inventory import Host
from corun.util import repo_root

CLIENT = Host(name="c0", address="10.0.0.1")


def part(state: Path, what: str = "policy on the servers") -> dict:
    """A controller part whose apply leaves `applied` in its state folder (with the apply count),
    verify checks it, restore removes it and leaves `restored`."""
    return {
        "what": what,
        "host": None,
        "state_dir": str(state),
        "apply": ["sh", "-c", 'echo x >> "$0/count" && touch "$0/applied"', "{state_dir}"],
        "verify": ["test", "-e", "{state_dir}/applied"],
        "restore": ["sh", "-c", 'rm -f "$0/applied" && touch "$0/restored"', "{state_dir}"],
        "fetch": ["count"],
    }


def group(tmp_path: Path, runs: list[str]) -> dict:
    return {"runs": runs, "server_parts": {r: [part(tmp_path / "parts" / r)] for r in runs}}


def fake_run(parts: Path, seen: list, by_controller: bool = False, fail: bool = False, unapply: bool = False):
    """run_on_host standing in for the client's corun run: it sees whether the part (in
    PARTS/<run>) is applied."""

    def run_on_host(host, spec, out, push, timeout=None, fresh=False):
        state = parts / out.name
        seen.append((out.name, (state / "applied").exists()))
        if unapply:  # the servers lost the policy during the run
            (state / "applied").unlink()
        if fail:
            raise CorunError(f"{host.name}: corun run failed (exit 1)")
        out.mkdir(parents=True)
        sched = {"name": "p", "applied_by": "controller" if by_controller else "run"}
        sched["verified"] = sched["verified_at_end"] = not by_controller
        meta = {"scheduler": sched, "variant_verified_at_start": True, "variant_verified_at_end": True}
        if by_controller:
            meta = {"scheduler": sched}
        (out / "metadata.json").write_text(json.dumps(meta))
        return out

    return run_on_host


def runs_of(tmp_path, g, journal, monkeypatch, **kw):
    seen: list = []
    monkeypatch.setattr(pfs_runs.hostmod, "run_on_host", fake_run(tmp_path / "parts", seen, **kw))
    (tmp_path / "specs").mkdir(exist_ok=True)
    done = pfs_runs._runs(g, tmp_path / "specs", tmp_path / "runs", CLIENT, None, None, journal)
    return seen, done


@pytest.fixture
def journal(tmp_path):
    (tmp_path / "state").mkdir()
    j = Journal("controller-test", directory=tmp_path / "state")
    yield j
    j.unwind()


@pytest.mark.parametrize("by_controller", [False, True])
def test_parts_are_applied_around_each_run_and_recorded(tmp_path, journal, monkeypatch, by_controller):
    g = group(tmp_path, ["a", "b"])
    seen, done = runs_of(tmp_path, g, journal, monkeypatch, by_controller=by_controller)
    assert seen == [("a", True), ("b", True)] and done == ["a", "b"]  # in effect while each run ran
    for r in ("a", "b"):
        state = tmp_path / "parts" / r
        assert not (state / "applied").exists() and (state / "restored").exists()
        meta = json.loads((tmp_path / "runs" / r / "metadata.json").read_text())
        (rec,) = meta["server_parts"]
        assert all(rec.pop(k) >= 0 for k in ("apply_s", "verify_end_s", "restore_s")), rec  # what they cost
        assert rec == {
            "what": "policy on the servers",
            "host": "controller",
            "verified_at_start": True,
            "verified_at_end": True,
            "restored": True,
        }
        assert meta["variant_verified_at_start"] is meta["variant_verified_at_end"] is True
        assert meta["scheduler"]["verified"] is meta["scheduler"]["verified_at_end"] is True
        fetched = tmp_path / "runs" / r / "server_parts" / "controller" / "count"
        assert fetched.read_text() == "x\n"
    assert journal.actions == []  # every restore done and forgotten
    # finished and recorded: kept; finished without the record (the controller died before it): again
    meta_b = tmp_path / "runs" / "b" / "metadata.json"
    doc = json.loads(meta_b.read_text())
    del doc["server_parts"]
    meta_b.write_text(json.dumps(doc))
    seen, done = runs_of(tmp_path, g, journal, monkeypatch, by_controller=by_controller)
    assert seen == [("b", True)] and done == ["a", "b"]
    assert (tmp_path / "parts" / "b" / "count").read_text() == "x\nx\n"


def test_a_part_lost_during_the_run_fails_it_and_is_restored(tmp_path, journal, monkeypatch):
    g = group(tmp_path, ["a"])
    with pytest.raises(CorunError, match=r"pfs_runs: policy on the servers: not in effect: "):
        runs_of(tmp_path, g, journal, monkeypatch, unapply=True)
    assert not (tmp_path / "runs" / "a").exists()  # not evidence of the policy: measured again
    assert (tmp_path / "parts" / "a" / "restored").exists() and journal.actions == []


def test_a_failing_run_leaves_its_parts_restored(tmp_path, journal, monkeypatch):
    g = group(tmp_path, ["a"])
    with pytest.raises(CorunError, match="c0: corun run failed"):
        runs_of(tmp_path, g, journal, monkeypatch, fail=True)
    state = tmp_path / "parts" / "a"
    assert not (state / "applied").exists() and (state / "restored").exists() and journal.actions == []


def test_a_part_that_cannot_be_applied_is_one_line_and_nothing_runs(tmp_path, journal, monkeypatch):
    g = group(tmp_path, ["a"])
    g["server_parts"]["a"][0]["apply"] = ["sh", "-c", "echo 'no translator on server 0' >&2; exit 3"]
    with pytest.raises(CorunError) as exc:
        runs_of(tmp_path, g, journal, monkeypatch)
    assert str(exc.value) == "pfs_runs: policy on the servers: apply failed (exit 3): no translator on server 0"
    assert (tmp_path / "parts" / "a" / "restored").exists() and not (tmp_path / "runs" / "a").exists()


def test_a_part_on_a_host_runs_there_with_its_python(tmp_path):
    host = Host(name="s1", address="10.0.0.2", vars={"corun_python": "/opt/corun/bin/python"})
    p = server_parts.Part(
        "x", host, "/srv/state", ["{python}", "steer.py", "--state", "{state_dir}/s.json"], [], [], []
    )
    argv = p.argv("apply")
    assert argv[:2] == ["ssh", "-o"] and argv[-2] == "10.0.0.2"
    script = argv[-1]
    assert script.startswith(f"cd {shlex.quote(str(repo_root()))} && exec sh -c ")
    assert (
        "mkdir -p /srv/state && PYTHONPATH=" in script
        and "/opt/corun/bin/python steer.py --state /srv/state/s.json" in script
    )


def test_an_unknown_host_is_one_line(tmp_path):
    inv = tmp_path / "inv.yml"
    inv.write_text("testbed:\n  hosts:\n    c1: {ansible_host: 10.0.0.1}\n")
    g = {"pfs": {"inventory": str(inv)}, "server_parts": {"a": [{**part(tmp_path), "host": "s9"}]}}
    with pytest.raises(CorunError, match=r"^pfs_runs: server part 'policy on the servers': host 's9' is not in"):
        server_parts.parts_of(g, "a")


def test_after_a_sigkill_of_the_controller_recover_restores_the_parts(tmp_path):
    """The restore is journalled before apply: a controller killed during the run leaves it to
    `corun recover` (here its function, on the journal's folder)."""
    state, jdir = tmp_path / "parts" / "a", tmp_path / "state"
    jdir.mkdir()
    code = (
        "import json, os, signal, sys\n"
        "from corun.machine.state import Journal\n"
        "from corun.testbed import server_parts\n"
        f"p = json.loads({json.dumps(json.dumps(part(state)))})\n"
        f"j = Journal('controller-killed', directory=__import__('pathlib').Path({str(jdir)!r}))\n"
        "a = server_parts.Applied([server_parts.Part(p['what'], None, p['state_dir'], p['apply'], p['verify'],"
        " p['restore'], [])], j)\n"
        "a.start()\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(repo_root())}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=repo_root())
    assert res.returncode == -9, res.stderr
    assert (state / "applied").exists() and not (state / "restored").exists()
    lines = recover_stale(jdir)
    assert any("controller-killed" in line for line in lines), lines
    assert not (state / "applied").exists() and (state / "restored").exists()
    assert not list(jdir.glob("*.journal.json"))


def test_the_parts_of_several_hosts_go_at_once_and_one_failing_restores_all(tmp_path, journal, monkeypatch):
    """Each apply waits until the three have started (sequential applies would time out), and a
    part that cannot be applied fails the run, naming it, with the others restored."""
    meet = 'touch "$0/../started-$(basename "$0")"; i=0; '
    meet += (
        'while [ "$(ls "$0/.." | grep -c started)" -lt 3 ]; do sleep 0.05; i=$((i+1)); [ $i -lt 100 ] || exit 1; done'
    )
    g = {"runs": ["a"], "server_parts": {"a": []}}
    for h in ("s1", "s2", "s3"):
        p = part(tmp_path / "parts" / "a" / h, what=f"half on {h}")
        p["apply"], p["fetch"] = ["sh", "-c", meet + '; touch "$0/applied"', "{state_dir}"], []
        g["server_parts"]["a"].append(p)
    seen, done = runs_of(tmp_path, g, journal, monkeypatch)
    assert seen == [("a", False)] and done == ["a"]  # (the fake run looks for one part's marker)
    meta = json.loads((tmp_path / "runs" / "a" / "metadata.json").read_text())
    assert [r["verified_at_start"] and r["verified_at_end"] and r["restored"] for r in meta["server_parts"]] == [
        True
    ] * 3
    g["runs"], g["server_parts"]["b"] = (
        ["b"],
        [part(tmp_path / "parts" / "b" / h, f"half on {h}") for h in ("s1", "s2")],
    )
    g["server_parts"]["b"][1]["apply"] = ["sh", "-c", "echo 'no such interface' >&2; exit 2"]
    with pytest.raises(CorunError, match=r"^pfs_runs: half on s2: apply failed \(exit 2\): no such interface$"):
        runs_of(tmp_path, g, journal, monkeypatch)
    for h in ("s1", "s2"):
        assert (tmp_path / "parts" / "b" / h / "restored").exists()
    assert not (tmp_path / "parts" / "b" / "s1" / "applied").exists() and journal.actions == []


def test_a_group_run_is_measured_now_even_where_the_host_holds_a_finished_one(tmp_path, monkeypatch):
    """pfs_runs measures around each run (counters, server parts): the client host's run folder of
    an earlier attempt (kept there when the controller dropped its copy) is removed, not fetched."""
    from corun.testbed import hosts

    calls = []

    def fake(argv, timeout=None):
        calls.append(argv)
        if argv[0] == "rsync" and argv[-1].endswith(".fetching/"):  # the copy back
            Path(argv[-1]).mkdir(parents=True)
            (Path(argv[-1]) / "metadata.json").write_text("{}")
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(hosts, "_run", fake)
    spec = tmp_path / "r.yaml"
    spec.write_text("name: r\n")
    for fresh, out in ((True, tmp_path / "a"), (False, tmp_path / "b")):
        calls.clear()
        hosts.run_on_host(CLIENT, spec, out, push=[], fresh=fresh)
        (script,) = [c[-1] for c in calls if c[0] == "ssh"]
        q = shlex.quote(str(out.resolve()))
        if fresh:
            assert f"rm -rf {q} {q}.incomplete && exec " in script and "already measured" not in script, script
        else:
            assert f"if [ -f {q}/metadata.json ]; then echo already measured;" in script, script
        assert (out / "metadata.json").exists()
    # and pfs_runs asks for it
    asked = []

    def run(host, spec, out, push, timeout=None, fresh=False):
        asked.append(fresh)
        out.mkdir(parents=True)
        (out / "metadata.json").write_text("{}")

    monkeypatch.setattr(pfs_runs.hostmod, "run_on_host", run)
    (tmp_path / "j").mkdir()
    pfs_runs._runs(
        group(tmp_path, ["c"]), tmp_path, tmp_path / "runs", CLIENT, None, None, Journal("j", tmp_path / "j")
    )
    assert asked == [True]
