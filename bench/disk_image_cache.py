#!/usr/bin/env python3
"""What the emulated disk's image cache saves per run: set-up with a new mkfs and copy, against
set-up from the cached image.

Writes INPUT_MIB of inputs (random bytes, in files of 16 MiB) into a data folder, then runs
`corun run` on a spec whose device is the emulated rotating disk mounted over that folder
(overlay, the local profile's 2 GiB disk) and whose one job reads nothing (`true`), REPS times
with `image_cache: false` and REPS times with it on, alternately, so that both see the same
load; the first two runs with the cache on build the image (the second keeps it: a content is
kept once it recurs) and are reported apart. Prints
the median set-up (`phases_s.setup_s`), the disk's set-up steps and teardown of each, and their
ratio. Needs root. Prints figures; not a pass/fail test.

    .venv/bin/python bench/disk_image_cache.py [--reps 5] [--input-mib 234]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def one_run(work: Path, data: Path, state: Path, i: int, cache: bool) -> dict:
    spec = {
        "name": f"cache{i}",
        "device": {
            "path": str(data),
            "kind": "rotating_disk",
            "rotating_disk": {"overlay": True, "image_cache": cache},
            "populate": [{"src": str(data / "inputs")}],
        },
        "jobs": [{"name": "a", "cmd": ["true"]}],
    }
    path = work / f"spec{i}.yaml"
    path.write_text(yaml.safe_dump(spec))
    out = work / f"out{i}"
    res = subprocess.run(
        [sys.executable, "-m", "corun", "run", str(path), "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "CORUN_STATE_DIR": str(state)},
        timeout=600,
    )
    if res.returncode != 0:
        raise SystemExit(f"bench: run {i} failed: {res.stderr.strip().splitlines()[-1:]}")
    meta = json.loads((out / "metadata.json").read_text())
    shutil.rmtree(out, ignore_errors=True)
    ds = meta["device_setup"]
    return {
        "setup_s": meta["phases_s"]["setup_s"],
        "teardown_s": meta["phases_s"]["teardown_s"],
        "steps": ds["setup_steps_s"],
        "state": ds["image_cache"]["state"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5, help="runs each way (default 5)")
    ap.add_argument("--input-mib", type=int, default=234, help="inputs on the disk (default 234, cmp_stacking's)")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("bench: needs root (the emulated disk)", file=sys.stderr)
        return 4
    work = Path(tempfile.mkdtemp(prefix="corun-image-cache-"))
    try:
        data, state = work / "data", work / "state"
        (data / "inputs").mkdir(parents=True)
        left = a.input_mib
        k = 0
        while left > 0:
            n = min(16, left)
            (data / "inputs" / f"in{k:03d}.bin").write_bytes(os.urandom(n << 20))
            left, k = left - n, k + 1
        first = one_run(work, data, state, -1, True)
        built = one_run(work, data, state, 0, True)
        rows: dict[bool, list[dict]] = {False: [], True: []}
        for i in range(a.reps):
            for cache in (False, True):
                rows[cache].append(one_run(work, data, state, 1 + 2 * i + cache, cache))
        assert all(r["state"] == "loaded" for r in rows[True]), [r["state"] for r in rows[True]]
        med = {c: {k: statistics.median(r[k] for r in rs) for k in ("setup_s", "teardown_s")} for c, rs in rows.items()}
        steps = sorted({s for rs in rows.values() for r in rs for s in r["steps"]})
        print(f"{a.input_mib} MiB of inputs on a 2 GiB emulated disk, {a.reps} runs each way, medians (s)")
        print(f"{'':<26}" + "".join(f"{s:>11}" for s in steps) + f"{'set-up':>9}{'teardown':>10}")
        for cache, label in ((False, "mkfs and copy every run"), (True, "from the cached image")):
            cells = "".join(f"{statistics.median(r['steps'].get(s, 0.0) for r in rows[cache]):>11.3f}" for s in steps)
            print(f"{label:<26}{cells}{med[cache]['setup_s']:>9.3f}{med[cache]['teardown_s']:>10.3f}")
        save = built["steps"].get("save_image", 0.0)
        print(f"first run, building the image (not kept): set-up {first['setup_s']:.3f} s")
        print(f"second run, building and keeping it: set-up {built['setup_s']:.3f} s (save_image {save:.3f} s)")
        saved, ratio = med[False]["setup_s"] - med[True]["setup_s"], med[True]["setup_s"] / med[False]["setup_s"]
        print(f"set-up saved per run: {saved:.3f} s (cached / fresh = {ratio:.2f})")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
