"""IOR's JSON summary (`-O summaryFormat=JSON -O summaryFile=FILE`), read into corun's names.

IOR 4 writes one JSON document: a header (Version, Began, Command line, Machine), `tests`
(per-repetition results) and `summary`, one entry per test and operation with bwMaxMIB,
bwMinMIB, bwMeanMIB, bwStdMIB, OPsMax, OPsMin, OPsMean, OPsSD, MeanTime and the test's
parameters. `parse_summary` returns the summary entries with units in their names, in the
same terms as kernels/pfs_read's result (read_bw_mean_mib_s, ...), so either can feed the
same analysis.

On corun's striped file system (docs/pfs.md), IOR's POSIX calls on a path prefix are served by
pfs_client's LD_PRELOAD library (pfs_client/README.md), which stripes them in 64 KiB strips over
the data servers through gfapi, as the paper's PVFS2 client did: `client_env` is the
environment that does it, `mpirun_exports` passes it to the ranks only.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from corun.errors import ConfigError, MissingTool
from corun.util import repo_root

# The path prefix the striped client serves by default: IOR's -o names a file under it.
PFS_PREFIX = "/corun-pfs"

# IOR's summary key -> corun's name (units in the name).
FIELDS = {
    "bwMaxMIB": "bw_max_mib_s",
    "bwMinMIB": "bw_min_mib_s",
    "bwMeanMIB": "bw_mean_mib_s",
    "bwStdMIB": "bw_std_mib_s",
    "OPsMax": "ops_max_per_s",
    "OPsMin": "ops_min_per_s",
    "OPsMean": "ops_mean_per_s",
    "OPsSD": "ops_std_per_s",
    "MeanTime": "time_mean_s",
    "blockSize": "block_size_bytes",
    "transferSize": "transfer_size_bytes",
    "segmentCount": "segments",
    "numTasks": "tasks",
    "repetitions": "repetitions",
    "filePerProc": "file_per_process",
    "API": "api",
    "TestID": "test_id",
}
REQUIRED = ("operation", "bwMeanMIB", "OPsMean", "MeanTime")
EXPECTED = "IOR's JSON output (ior -O summaryFormat=JSON) with a summary list"


def ior_argv(
    ior: str,
    mountpoint: str,
    summary_file: str,
    *,
    api: str = "POSIX",
    transfer_size: int = 1 << 20,
    block_size: int = 16 << 20,
    segments: int = 1,
    file_per_process: bool = False,
    write: bool = False,
    read: bool = True,
    repetitions: int = 1,
    file_name: str = "ior.dat",
) -> list[str]:
    """IOR's command line for the same pattern as pfs_read, on the FUSE mount (docs/pfs.md).

    -k keeps the file so a read-only run can follow a write; -e fsyncs writes; the summary is
    written as JSON to summary_file (parse_file reads it). MPI launches it with one rank per task.
    """
    if api not in ("POSIX", "MPIIO"):
        raise ValueError(f"api: {api!r} (expected POSIX or MPIIO)")
    if block_size % transfer_size:
        raise ValueError(f"block_size: {block_size} (expected a multiple of transfer_size {transfer_size})")
    argv = [
        ior,
        "-a",
        api,
        "-t",
        str(transfer_size),
        "-b",
        str(block_size),
        "-s",
        str(segments),
        "-i",
        str(repetitions),
        "-k",
        "-e",
        "-O",
        "summaryFormat=JSON",
        "-O",
        f"summaryFile={summary_file}",
        "-o",
        f"{mountpoint.rstrip('/')}/{file_name}",
    ]
    if file_per_process:
        argv.append("-F")
    if write:
        argv.append("-w")
    if read:
        argv.append("-r")
    return argv


def client_library() -> str:
    """pfs_client's LD_PRELOAD library, built by the corun_kernels role."""
    lib = repo_root() / "pfs_client" / "build" / "libcorun_pfs.so"
    if not lib.is_file():
        raise MissingTool("pfs_client/build/libcorun_pfs.so", "corun_kernels", "IOR on the striped file system")
    return str(lib)


def client_env(
    layout: dict, library: str, prefix: str = PFS_PREFIX, host: str | None = None, direct: bool = False
) -> dict[str, str]:
    """The environment that serves IOR's POSIX calls on PREFIX through the striped client: the
    file system's client volfiles (HOST's own copies when given) and strip size from its
    layout.json (corun/testbed/pfs.py), O_DIRECT datafiles for bricks with o-direct."""
    volfiles = layout["client_volfiles"][host] if host is not None else layout["volfiles"]
    env = {
        "LD_PRELOAD": library,
        "CORUN_PFS_PREFIX": prefix,
        "CORUN_PFS_VOLFILES": ":".join(volfiles),
        "CORUN_PFS_STRIP_SIZE": str(layout["strip_size_bytes"]),
    }
    if direct:
        env["CORUN_PFS_DIRECT"] = "1"
    return env


def mpirun_exports(env: dict[str, str]) -> list[str]:
    """Open MPI's -x options that set ENV in the ranks only (not in mpirun and its daemons)."""
    return [x for k, v in env.items() for x in ("-x", f"{k}={v}")]


def _document(text: str, source: str) -> dict:
    start = text.find("{")  # IOR may print lines before the document on stdout
    if start < 0:
        raise ConfigError(source, "", "no JSON object", EXPECTED)
    try:
        doc, _ = json.JSONDecoder().raw_decode(text[start:])
    except ValueError as exc:
        raise ConfigError(source, "", f"invalid JSON ({exc.msg} at character {start + exc.pos})", EXPECTED) from None
    if not isinstance(doc, dict):
        raise ConfigError(source, "", type(doc).__name__, EXPECTED)
    return doc


def parse_summary(text: str, source: str = "IOR output") -> list[dict]:
    """One dict per summary entry: operation, api, bw_mean_mib_s, ops_mean_per_s, time_mean_s ..."""
    doc = _document(text, source)
    summary = doc.get("summary")
    if not isinstance(summary, list) or not summary:
        raise ConfigError(
            source,
            "summary",
            summary if summary is not None else "missing",
            "a non-empty list (run ior with -O summaryFormat=JSON)",
        )
    out = []
    for i, entry in enumerate(summary):
        if not isinstance(entry, dict):
            raise ConfigError(source, f"summary[{i}]", entry, "an object")
        for key in REQUIRED:
            if key not in entry:
                raise ConfigError(source, f"summary[{i}].{key}", "missing", "a value")
        op = entry["operation"]
        if op not in ("read", "write"):
            raise ConfigError(source, f"summary[{i}].operation", op, "read or write")
        row = {"operation": op}
        for key, name in FIELDS.items():
            if key in entry:
                row[name] = entry[key]
        for key in ("bwMeanMIB", "OPsMean", "MeanTime"):
            v = entry[key]
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
                raise ConfigError(source, f"summary[{i}].{key}", v, "a finite number >= 0")
        out.append(row)
    return out


def parse_file(path: str | Path) -> list[dict]:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ConfigError(str(p), "", str(p), f"a readable IOR summary file: {exc.strerror}") from None
    return parse_summary(text, str(p))


def result_fields(rows: list[dict]) -> dict:
    """Flat fields like pfs_read's: <operation>_bw_mean_mib_s, ... (the first test of each op)."""
    out: dict = {}
    for r in rows:
        for k in ("bw_mean_mib_s", "bw_max_mib_s", "bw_min_mib_s", "ops_mean_per_s", "time_mean_s"):
            key = f"{r['operation']}_{k}"
            if key not in out and k in r:
                out[key] = r[k]
    return out
