"""What the tests of scripts/ci_compare.py share: the options of a tiny real comparison and the
check of its gate."""

import json
import subprocess
from pathlib import Path

# Tiny sizes and a threshold no two runs can cross: the real flow, quickly.
TINY_RUN_OPTIONS = ["--size-mib", "2", "--read-bps", "8000000", "--seed", "1", "--fail-if-worse", "900%"]


def gates_of_tiny_run(res: subprocess.CompletedProcess, out: Path) -> tuple[dict, set[str]]:
    """(the comparison, its rows' gates) of a ci_compare.py run RES with TINY_RUN_OPTIONS into OUT.
    Two reps decide little: the gate passes (0) only when every interval lies on the better side
    of +900 %, and says it cannot decide (5) otherwise; it never fails (1) at that threshold."""
    written = out / "compare" / "comparison.json"
    assert written.is_file(), f"exit {res.returncode}, no {written.name}; stderr:\n{res.stderr[-4000:]}"
    result = json.loads(written.read_text())
    gates = {r["gate"] for r in result["rows"] if r.get("gate")}
    assert res.returncode == (5 if "undecided" in gates else 0), res.stderr
    assert gates <= {"passed", "undecided"}
    return result, gates
