"""Graph500's reference programs as corun jobs: command line and output (roles/graph500).

2.1.4's seq-csr and omp-csr take `-s SCALE -e EDGEFACTOR`, keep their CSR arrays in a shared
mmap of an unlinked file under $TMPDIR (USE_MMAP_LARGE_EXT: paper 000's implicit I/O), run
64 BFS, validate each and print `key: value` lines. 3.0.0's MPI programs take `SCALE
EDGEFACTOR` as operands and prefix their per-kernel lines with `bfs` or `sssp`. `parse_output`
reads either into names that carry their unit (`bfs_harmonic_mean_teps`,
`bfs_median_time_s`, `construction_time_s`, ...).
"""

from __future__ import annotations

import re

from corun.errors import ConfigError

LINE = re.compile(
    r"^\s*(?:(bfs|sssp)\s+)?([A-Za-z_]+):\s*!?\s*([-+]?[0-9.]+(?:[eE][-+]?[0-9]+)?|[-+]?inf|nan)(?:\s*s)?\s*$"
)
STATS = ("min", "firstquartile", "median", "thirdquartile", "max", "mean", "stddev", "harmonic_mean", "harmonic_stddev")
# Plain keys -> corun's names (units in the names).
PLAIN = {
    "SCALE": "scale",
    "nvtx": "vertices",
    "edgefactor": "edgefactor",
    "terasize": "terasize",
    "A": "rmat_a",
    "B": "rmat_b",
    "C": "rmat_c",
    "D": "rmat_d",
    "nbfs": "bfs_roots",
    "num_mpi_processes": "mpi_processes",
    "generation_time": "generation_time_s",
    "graph_generation": "generation_time_s",
    "construction_time": "construction_time_s",
}
INTEGERS = {"scale", "vertices", "edgefactor", "bfs_roots", "mpi_processes"}
EXPECTED = "Graph500's output: key: value lines with harmonic_mean_TEPS"


def argv(program: str, version: str, scale: int, edgefactor: int) -> list[str]:
    """The command line of one run: 2.1.4 takes options, 3.0.0 operands (run under mpirun)."""
    if version.startswith("2."):
        return [program, "-s", str(scale), "-e", str(edgefactor)]
    return [program, str(scale), str(edgefactor)]


def env(storage_dir: str) -> dict[str, str]:
    """2.1.4's large arrays are an mmap'd file in TMPDIR: put it on the device under test."""
    return {"TMPDIR": storage_dir}


def _name(kernel: str | None, key: str) -> str | None:
    if key in PLAIN:
        return PLAIN[key]
    stat, _, what = key.rpartition("_")
    if stat not in STATS:
        return None
    k = kernel or "bfs"  # 2.1.4 runs only BFS and names no kernel
    if what == "time":
        return f"{k}_{stat}_time_s"
    if what == "TEPS":
        return f"{k}_{stat}_teps"
    if what == "validate":
        return f"{k}_{stat}_validate_s"
    if what == "nedge":
        return f"{stat}_nedge"
    return None


def parse_output(text: str, source: str = "Graph500 output") -> dict:
    """The run's figures by corun's names; a ConfigError when harmonic_mean_TEPS is missing
    (the program stopped before its statistics, e.g. a failed validation)."""
    out: dict = {}
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        name = _name(m.group(1), m.group(2))
        if name is None:
            continue
        value = float(m.group(3))
        out[name] = int(value) if name in INTEGERS else value
    if "bfs_harmonic_mean_teps" not in out:
        raise ConfigError(source, "harmonic_mean_TEPS", "missing", EXPECTED)
    return out
