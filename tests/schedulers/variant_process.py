"""A scheduler variant started in a process of its own, to be killed: what `corun recover` must
then undo from the journal."""

import subprocess
import sys
import textwrap

RUNNER = textwrap.dedent("""
    import sys, time
    from corun.run import schedulers
    from corun.machine.state import Journal
    name, params, state_dir, journal, must_verify = sys.argv[1:]
    params = eval(params)
    j = Journal(journal)
    v = schedulers.Variant.load(name, params, need_built=False)
    v.start(j, {"state_dir": state_dir})
    ok = v.verify()
    assert ok or must_verify != "1"
    print("applied", flush=True)
    time.sleep(600)
""")


def start_variant(name, params, state_dir, journal, env, cwd, must_verify=True):
    """(the process, None) once variant NAME with PARAMS is applied (and verified where
    MUST_VERIFY), its state in STATE_DIR, its journal named JOURNAL; or (the process, its stderr)
    when it stopped before."""
    proc = subprocess.Popen(
        [sys.executable, "-c", RUNNER, name, repr(params), str(state_dir), journal, "1" if must_verify else "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=cwd,
    )
    if proc.stdout.readline().strip() == "applied":
        return proc, None
    proc.kill()
    return proc, proc.communicate()[1]
