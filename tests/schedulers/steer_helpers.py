"""What the irq steering tests share (test_irq_steering.py on a synthetic tree,
test_irq_steering_veth.py on a veth pair): steer.py's path, a runner for it, the variants' names,
and the module itself (imported from schedulers/irq_steering)."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STEER = REPO / "schedulers" / "irq_steering" / "steer.py"
sys.path.insert(0, str(STEER.parent))
import steer  # noqa: E402, F401 - for the tests' use

VARIANTS = ["irqbalance", "spread", "dedicated", "source_aware", "sais_mark"]


def run_steer(*args, env=None):
    return subprocess.run(
        [sys.executable, str(STEER), *map(str, args)], capture_output=True, text=True, timeout=120, env=env, check=False
    )
