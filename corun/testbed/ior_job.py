"""One IOR run as a corun job on the striped file system: `scripts/ior-job`.

    scripts/ior-job --ior PATH [--tasks N] --volfile V [--volfile V ...] [--strip-size BYTES]
        [--direct] [--prefix /corun-pfs] [--mpirun mpirun] -- IOR-OPTIONS...

runs `mpirun -np N ior IOR-OPTIONS -O summaryFormat=JSON -O summaryFile=F` with pfs_client's
LD_PRELOAD library set in the ranks only (corun.testbed.ior.client_env: IOR's POSIX calls on
the prefix are striped over the data servers through gfapi, as the paper's PVFS2 client did),
parses IOR's JSON summary and prints one JSON line, the job's result, in the same names as
kernels/pfs_read's (read_bw_mean_mib_s, read_time_mean_s, read_bytes, bytes_per_phase,
strip_size_bytes, start_epoch_s, ...), plus `program` and the IOR options. IOR's own options
stay as IOR takes them (-a -t -b -s -F -C -e -w -r -k -i -o ...): `-o` names a file under the
prefix. Exit status: IOR's (mpirun's); 1 when its summary cannot be read; 2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from corun.errors import ConfigError, MissingTool
from corun.testbed import ior

PER_OP = ("bw_mean_mib_s", "bw_max_mib_s", "bw_min_mib_s", "bw_std_mib_s", "ops_mean_per_s", "time_mean_s")


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="ior-job", description=__doc__.split("\n\n")[0])
    ap.add_argument("--ior", required=True, help="IOR's binary (the ior role's manifest: programs.ior)")
    ap.add_argument("--tasks", type=int, default=1, help="IOR's MPI tasks on this host (default 1)")
    ap.add_argument("--volfile", action="append", default=[], help="a data server's client volfile, in stripe order")
    ap.add_argument("--strip-size", type=int, default=65536, help="strip size in bytes (default 65536)")
    ap.add_argument("--direct", action="store_true", help="O_DIRECT datafiles (bricks with o_direct)")
    ap.add_argument("--prefix", default=ior.PFS_PREFIX, help=f"path prefix served (default {ior.PFS_PREFIX})")
    ap.add_argument("--mpirun", default="mpirun", help="Open MPI's mpirun (default: on PATH)")
    ap.add_argument("ior_options", nargs=argparse.REMAINDER, help="-- then IOR's own options")
    a = ap.parse_args(argv)
    if a.ior_options[:1] == ["--"]:
        a.ior_options = a.ior_options[1:]
    if not a.ior_options:
        ap.error("IOR's options after -- are required")
    if a.tasks < 1:
        ap.error(f"--tasks: {a.tasks} (expected an integer >= 1)")
    if not a.volfile:
        ap.error("--volfile: none given (expected the data servers' client volfiles)")
    return a


def command(a: argparse.Namespace, summary: str) -> list[str]:
    """mpirun's command line: the striped client's settings exported to the ranks only."""
    layout = {"volfiles": a.volfile, "strip_size_bytes": a.strip_size}
    env = ior.client_env(layout, ior.client_library(), a.prefix, direct=a.direct)
    mpi = [a.mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", str(a.tasks)]
    return [*mpi, *ior.mpirun_exports(env), a.ior, *a.ior_options, "-O", "summaryFormat=JSON",
            "-O", f"summaryFile={summary}"]  # fmt: skip


def result(rows: list[dict], a: argparse.Namespace, start: float, end: float) -> dict:
    """pfs_read's names for IOR's summary: per operation its bandwidth, time and bytes (the
    first test of each), and the run's shape."""
    out: dict = {"program": "IOR", "ior_options": " ".join(a.ior_options), "start_epoch_s": start}
    out["end_epoch_s"] = end
    out["strip_size_bytes"] = a.strip_size
    out["tasks"] = a.tasks
    for r in rows:
        op = r["operation"]
        if f"{op}_bw_mean_mib_s" in out:
            continue
        for k in PER_OP:
            if k in r:
                out[f"{op}_{k}"] = r[k]
        shape = [r.get(k) for k in ("block_size_bytes", "segments", "tasks")]
        if all(isinstance(v, int) for v in shape):
            out[f"{op}_bytes"] = shape[0] * shape[1] * shape[2]
            out["bytes_per_phase"] = out[f"{op}_bytes"]
        for k in ("transfer_size_bytes", "block_size_bytes", "segments", "api", "file_per_process"):
            if k in r:
                out[k] = r[k]
    return out


def main(argv: list[str] | None = None) -> int:
    a = parse_args(sys.argv[1:] if argv is None else argv)
    if not os.access(a.ior, os.X_OK):
        print(f"ior-job: --ior: {a.ior!r} (expected IOR's executable, built by the ior role)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="ior-job-") as tmp:
        summary = str(Path(tmp) / "summary.json")
        try:
            cmd = command(a, summary)
        except MissingTool as exc:  # the client library is not built
            print(f"ior-job: {exc}", file=sys.stderr)
            return 2
        start = time.time()
        rc = subprocess.run(cmd, stdout=sys.stderr).returncode  # IOR's text: the job's stderr
        end = time.time()
        if rc != 0:
            print(f"ior-job: IOR exited {rc}: {' '.join(cmd)}", file=sys.stderr)
            return rc
        try:
            rows = ior.parse_file(summary)
        except ConfigError as exc:
            print(f"ior-job: {exc}", file=sys.stderr)
            return 1
    print(json.dumps(result(rows, a, start, end)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
