"""The workflow's steps of one experiment: data, calibrate, specs (see corun.experiments)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from corun.errors import ConfigError, one_line_errors
from corun.experiments import get
from corun.experiments.workflow_config import load_workflow_config
from corun.util import atomic_write_json


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m corun.experiments", description=__doc__)
    sub = ap.add_subparsers(dest="step", required=True)
    d = sub.add_parser("data", help="write the experiment's input files")
    c = sub.add_parser("calibrate", help="measure what its specs need on this machine")
    c.add_argument("--out", required=True, type=Path)
    s = sub.add_parser("specs", help="write every run spec of the experiment")
    s.add_argument("--out-dir", required=True, type=Path)
    s.add_argument("--calibration", type=Path, help="calibration.json of the calibrate step, if it has one")
    for p in (d, c, s):
        p.add_argument("experiment")
        p.add_argument("--config", required=True)
        p.add_argument("--data-dir", required=True, type=Path)
    return ap


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    cfg = load_workflow_config(a.config)
    exp = get(a.experiment)
    if a.step == "data":
        print(exp.data(cfg, a.data_dir), file=sys.stderr)
    elif a.step == "calibrate":
        atomic_write_json(a.out, exp.calibrate(cfg, a.data_dir))
    else:
        try:
            cal = json.loads(a.calibration.read_text()) if a.calibration else {"needed": False}
        except (OSError, ValueError) as exc:
            raise ConfigError(
                "command line", "--calibration", str(a.calibration), f"a calibration.json ({exc})"
            ) from None
        n = exp.specs(cfg, cal, a.data_dir, a.out_dir)
        print(f"{n} run spec(s) written in {a.out_dir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
