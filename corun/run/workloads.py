"""Named workloads of the papers and the binaries that run them here.

A workload name (x264_simlarge, graph_s22_e16, ...) means the same job on every
machine; which program runs it depends on what was provisioned. The upstream
benchmark (PARSEC's x264, Graph500's seq-csr) is used when its role installed it
and recorded it in the upstream manifest (its `programs`, corun.upstream.programs):
/var/lib/corun/upstream.json and every
/var/lib/corun/upstream.d/<role>.json (one file per provisioning role, merged), or the
file named by CORUN_UPSTREAM; otherwise a stand-in runs: Debian's real x264 on a
generated clip of the same frame size, or corun's own graph_bfs kernel. Every job
carries labels `binary` and `stands_in_for` (empty when the upstream program ran), so each run
says what stood in for what; an upstream program's job also carries its version and source pin
(`program_version`, `source_name`, `source_file`, `source_sha256`), a stand-in's job the reason
(`stand_in_reason`).
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path

from corun import upstream as upstream_manifest
from corun.errors import ConfigError, MissingTool
from corun.run import graph500
from corun.run import parsec as parsec_runs
from corun.run.inputs import PRESETS
from corun.util import repo_root, tool_version

UPSTREAM_MANIFEST = upstream_manifest.MANIFEST
UPSTREAM_DIR = upstream_manifest.MANIFEST_DIR

# PARSEC 3.0 x264 run configuration (simlarge and native use the same options).
X264_PARSEC_ARGS = [
    "--quiet",
    "--qp",
    "20",
    "--partitions",
    "b8x8,i4x4",
    "--ref",
    "5",
    "--direct",
    "auto",
    "--b-pyramid",
    "normal",
    "--weightb",
    "--mixed-refs",
    "--no-fast-pskip",
    "--me",
    "umh",
    "--subme",
    "7",
    "--analyse",
    "b8x8,i4x4",
]
PARSEC_FRAMES = {"simlarge": 128, "native": 512}


@dataclass
class JobTemplate:
    cmd: list[str]
    labels: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)
    result: str = "none"


@lru_cache(maxsize=1)
def upstream() -> dict:
    """The merged upstream manifest (corun.upstream); {} when nothing was provisioned. A broken
    file is an error."""
    return upstream_manifest.read(upstream_manifest.manifest_files(UPSTREAM_MANIFEST, UPSTREAM_DIR))


def kernel(name: str) -> str:
    p = repo_root() / "kernels" / "build" / name
    if not os.access(p, os.X_OK):
        raise MissingTool(f"kernels/build/{name}", "corun_kernels", f"the {name} kernel")
    return str(p)


@cache
def _version(argv: tuple[str, ...], pattern: str) -> str:
    m = re.search(pattern, tool_version(list(argv)) or "")
    return m.group(1) if m else "unknown"


def x264(input_name: str, input_path: Path, out_path: Path, threads: int = 1) -> JobTemplate:
    """PARSEC's x264 with its own <input>.runconf command line (its output and input replaced by
    out_path and input_path) when the parsec role built it; Debian's x264 with the same options
    (in its newer syntax) when PARSEC is absent. The job records its clip (clip_labels)."""
    if input_name not in PRESETS:
        raise ConfigError("config", "input", input_name, "one of " + ", ".join(PRESETS))
    parsec = upstream().get("parsec", {})
    built = parsec.get("x264") if parsec.get("status", "built") == "built" else ""
    clip = clip_labels(input_name, input_path)
    if built and os.access(built, os.X_OK):
        pkg_dir = Path(built).parents[3]  # pkgs/apps/x264
        argv = parsec_runs.runconf(pkg_dir, input_name, threads)[1:]
        out = argv.index("-o") if "-o" in argv else None
        if out is not None:
            del argv[out : out + 2]
        return JobTemplate(
            [built, *argv[:-1], "-o", str(out_path), str(input_path)],
            {
                "binary": f"PARSEC {parsec.get('version', '?')} x264",
                "stands_in_for": f"PARSEC x264 {input_name}",
                **clip,
                **source_labels(parsec),
            },
        )
    args = X264_PARSEC_ARGS + ["--threads", str(threads), "-o", str(out_path), str(input_path)]
    if shutil.which("x264") is None:
        raise MissingTool("x264", "x264", "the x264 workloads (or provision PARSEC with the parsec role)")
    ver = _version(("x264", "--version"), r"x264 (\S+)")
    return JobTemplate(
        ["x264", *args],
        {
            "binary": f"debian x264 {ver}",
            "stands_in_for": f"PARSEC x264 {input_name}",
            "stand_in_reason": parsec_stand_in_reason("x264"),
            **clip,
        },
    )


def clip_labels(input_name: str, path: Path) -> dict:
    """What an x264 job records of its clip: PARSEC's own (real) or corun's generated one, its
    frame size and count read from the file, and the input it stands in for."""
    real = parsec_input(input_name)
    if real is not None and Path(path).resolve() == real.resolve():
        return {"input_provenance": "real", "input_stands_in_for": ""}
    try:
        with open(path, "rb") as fh:
            head = fh.readline().decode("ascii", "replace")
        size = os.path.getsize(path)
    except OSError:
        head, size = "", 0
    m = re.search(r"W(\d+) H(\d+)", head)
    w, h = (int(m.group(1)), int(m.group(2))) if m else PRESETS[input_name]
    frames = (size - len(head)) // (len(b"FRAME\n") + w * h * 3 // 2) if size else 0
    name = f"eledream_{w}x{h}_{PARSEC_FRAMES.get(input_name, frames)}.y4m"
    return {
        "input_provenance": f"generated: a seeded 4:2:0 {w}x{h} y4m of {frames} frames",
        "input_stands_in_for": f"PARSEC x264 {input_name} ({name})",
    }


def parsec_input(input_name: str) -> Path | None:
    """PARSEC's own x264 clip of the input set, when an input archive of the parsec role held it
    (its manifest's x264_clips), else None: corun's generated clip stands in."""
    p = (upstream().get("parsec", {}).get("x264_clips") or {}).get(input_name)
    return Path(p) if p and Path(p).exists() else None


ParsecProgram = parsec_runs.ParsecProgram


def parsec_program(pkg: str, input_name: str, threads: int = 1) -> ParsecProgram | None:
    """PARSEC's own `pkg` for `input_name` when the parsec role built it and recorded it in the
    upstream manifest, with the input this machine has for it (corun.run.parsec); None
    otherwise, and the caller runs its stand-in."""
    entry = upstream().get("parsec") or {}
    if entry.get("status", "built") != "built":
        return None
    prog = parsec_runs.program(entry, pkg, input_name, threads, JobTemplate)
    if prog is not None:
        prog.template.labels.update(source_labels(entry))
    return prog


def parsec_stand_in_reason(pkg: str) -> str:
    """Why PARSEC's `pkg` did not run here, for its stand-in's record."""
    entry = upstream().get("parsec") or {}
    if not entry:
        return "parsec not provisioned (no upstream manifest entry)"
    if entry.get("status", "built") != "built":
        return f"parsec: {entry.get('status')}: {entry.get('reason', 'no reason recorded')}"
    return f"parsec {entry.get('version', '?')} built no {pkg} (parsec_packages)"


def upstream_program(role: str, name: str) -> tuple[str | None, dict, str]:
    """The program NAME that ROLE built (its absolute path), the role's manifest entry and, when
    there is no such program, why (for the stand-in's record)."""
    entry = upstream().get(role) or {}
    path = upstream_manifest.programs(role, upstream()).get(name)
    if path and os.access(path, os.X_OK):
        return path, entry, ""
    if not entry:
        why = f"{role} not provisioned (no upstream manifest entry)"
    elif entry.get("status") != "built":
        why = f"{role}: {entry.get('status', 'no status')}: {entry.get('reason', 'no reason recorded')}"
    elif path:
        why = f"{role}'s {name} is not an executable file: {path}"
    else:
        why = f"{role} {entry.get('version', '?')} built no {name}"
    return None, entry, why


def source_labels(entry: dict) -> dict:
    """What a job records of the upstream program it ran: its version and source pin."""
    src = entry.get("source") or {}
    return {
        "program_version": entry.get("version", ""),
        "source_name": src.get("name", ""),
        "source_file": src.get("file", ""),
        "source_sha256": src.get("sha256", ""),
    }


def graph(scale: int, edgefactor: int, storage_dir: Path, roots: int = 8, threads: int = 1) -> JobTemplate:
    """Graph500 2.1.4's seq-csr (omp-csr with threads > 1), its CSR arrays in a shared mmap of
    an unlinked file under TMPDIR = storage_dir (USE_MMAP_LARGE_EXT: paper 000's implicit I/O),
    64 BFS roots each validated; its output parsed (result "graph500": TEPS, times). Corun's
    graph_bfs kernel (`roots` roots) stands in only when the graph500 role built no such
    program, and the job records why."""
    name = "omp-csr" if threads > 1 else "seq-csr"
    path, entry, why = upstream_program("graph500", name)
    if path is not None:
        env = graph500.env(str(storage_dir))
        if threads > 1:
            env["OMP_NUM_THREADS"] = str(threads)
        return JobTemplate(
            graph500.argv(path, str(entry.get("version", "2.1.4")), scale, edgefactor),
            {"binary": f"Graph500 {entry.get('version', '?')} {name}", "stands_in_for": "", **source_labels(entry)},
            env=env,
            result="graph500",
        )
    return JobTemplate(
        [
            kernel("graph_bfs"),
            "-s",
            str(scale),
            "-e",
            str(edgefactor),
            "--roots",
            str(roots),
            "--storage",
            str(storage_dir),
        ],
        {
            "binary": "corun graph_bfs",
            "stands_in_for": f"Graph500 2.1.4 {name} -s {scale} -e {edgefactor}",
            "stand_in_reason": why,
        },
        result="json",
    )


def llc_miss(mem_size: int, nops: int, iterations: int) -> JobTemplate:
    return JobTemplate(
        [kernel("llc_miss"), "--mem-size", str(mem_size), "--nops", str(nops), "--iterations", str(iterations)],
        {"binary": "corun llc_miss", "stands_in_for": "paper 000 Fig. 3 LLC-miss kernel"},
        result="json",
    )
