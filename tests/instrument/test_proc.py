"""corun.util's process checks: a process is named by (pid, start time), and one that has exited
counts as ended while it is still a zombie nobody has reaped."""

import subprocess
import time

from corun.util import proc_ended, proc_starttime, proc_state


def wait_for_state(pid, starttime, want, timeout_s=10.0):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if proc_state(pid, starttime) == want:
            return True
        time.sleep(0.01)
    return False


def test_a_zombie_has_ended_and_a_sleeper_has_not():
    sleeper = subprocess.Popen(["sleep", "30"])
    quitter = subprocess.Popen(["true"])
    try:
        st = proc_starttime(sleeper.pid)
        # just started, it may still be paging in its binary (D) on a busy disk: any live state
        assert proc_state(sleeper.pid, st) in ("S", "R", "D") and not proc_ended(sleeper.pid, st)
        qst = proc_starttime(quitter.pid)
        assert wait_for_state(quitter.pid, qst, "Z")  # exited, not reaped: its parent is this test
        assert proc_ended(quitter.pid, qst)
        assert not proc_ended(sleeper.pid, st)
        assert proc_ended(sleeper.pid, st + 1)  # another start time: another process, not this one
    finally:
        sleeper.kill()
        sleeper.wait()
        quitter.wait()
    assert proc_state(quitter.pid, qst) is None and proc_ended(quitter.pid, qst)
    assert proc_ended(None, None)
