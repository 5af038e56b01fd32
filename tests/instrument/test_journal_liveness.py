"""A journal's runner counts as alive while it holds the journal's lock, even when its pid means
nothing here (another pid namespace sharing the state directory); once it is gone the next
command recovers the journal, lock file included. A journal without a lock file falls back to
the pid and its start time."""

import json
import subprocess
import sys
from pathlib import Path

from corun.machine.recovery import recover_stale
from corun.machine.state import Journal

REPO = Path(__file__).resolve().parents[2]

HOLDER = """
import sys, time
from pathlib import Path
from corun.machine.state import Journal
Journal("held", Path(sys.argv[1]))
print("ready", flush=True)
time.sleep(60)
"""


def test_a_held_lock_keeps_the_journal_whatever_its_pid_says(tmp_path):
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        journal = tmp_path / "held.journal.json"
        data = json.loads(journal.read_text())
        data.update(pid=999999999, starttime=1)  # a pid from another namespace: not alive here
        journal.write_text(json.dumps(data))
        assert recover_stale(tmp_path) == []
        assert journal.exists() and (tmp_path / "held.lock").exists()
    finally:
        p.kill()
        p.wait()
    assert recover_stale(tmp_path) == ["recovered run held: undid 0 change(s)"]
    assert list(tmp_path.iterdir()) == []


def test_a_journal_without_lock_file_falls_back_to_the_pid(tmp_path):
    (tmp_path / "old.journal.json").write_text(
        json.dumps({"run_id": "old", "pid": 999999999, "starttime": 1, "actions": []})
    )
    assert recover_stale(tmp_path) == ["recovered run old: undid 0 change(s)"]
    assert list(tmp_path.iterdir()) == []


def test_a_journal_counts_the_seconds_of_its_undos_per_kind(tmp_path):
    j = Journal("timed", tmp_path)
    j.push({"kind": "command", "argv": ["sleep", "0.2"], "what": "a slow undo"})
    j.push({"kind": "command", "argv": ["true"], "what": "a quick one"})
    assert j.unwind() == []
    assert set(j.undo_s) == {"command"} and 0.2 <= j.undo_s["command"] < 5


def test_undo_together_undoes_each_once_forgets_them_and_keeps_the_rest(tmp_path):
    """A cluster's restores run at once: each action undone once, forgotten from the journal on
    disk, the errors in the given order, the others left for unwind; their seconds all counted."""
    j = Journal("together", tmp_path)
    marks = [tmp_path / f"m{i}" for i in range(3)]
    kept = j.push({"kind": "command", "argv": ["touch", str(tmp_path / "kept")], "what": "kept"})
    acts = [j.push({"kind": "command", "argv": ["sh", "-c", f"echo x >> {m}"], "what": m.name}) for m in marks]
    bad = j.push({"kind": "command", "argv": ["sh", "-c", "echo no >&2; exit 3"], "what": "bad"})
    errors = j.undo_together([acts[0], None, bad, acts[1], acts[2]])
    assert len(errors) == 1 and "exited 3: no" in errors[0]
    assert [m.read_text() for m in marks] == ["x\n"] * 3
    assert j.actions == [kept]
    on_disk = json.loads(j.path.read_text())
    assert [a["what"] for a in on_disk["actions"]] == ["kept"]
    assert j.undo_s["command"] > 0
    assert j.unwind() == [] and (tmp_path / "kept").exists()
    assert [m.read_text() for m in marks] == ["x\n"] * 3  # not undone twice
