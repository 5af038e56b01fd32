"""The NAS Parallel Benchmarks (MPI) as corun jobs: binaries and output (roles/npb).

NPB 3.3.1 builds one binary per benchmark, class and process count, bin/<bench>.<CLASS>.<NPROCS>
(named so in the upstream manifest's `programs`), run as `mpirun -np NPROCS BINARY` with no
arguments; 3.4 builds bin/<bench>.<CLASS>.x for any count. Each prints a summary block:
" BT Benchmark Completed.", " Time in seconds =", " Mop/s total =", " Verification =
SUCCESSFUL" ... `parse_output` reads it into names that carry their unit.
"""

from __future__ import annotations

import re

from corun.errors import ConfigError

COMPLETED = re.compile(r"^\s*(\w+) Benchmark Completed\.?\s*$", re.M)
FIELD = re.compile(r"^\s*([A-Za-z/ ]+?)\s*=\s*(.*?)\s*$")
# NPB's summary keys -> corun's names and types.
FIELDS = {
    "Class": ("class", str),
    "Size": ("size", str),
    "Iterations": ("iterations", int),
    "Time in seconds": ("time_s", float),
    "Total processes": ("processes", int),
    "Compiled procs": ("compiled_processes", int),
    "Mop/s total": ("mops_total", float),
    "Mop/s/process": ("mops_per_process", float),
    "Operation type": ("operation_type", str),
    "Verification": ("verification", str),
    "Version": ("version", str),
}
EXPECTED = "NPB's summary (a 'Benchmark Completed.' line, then 'Time in seconds =', 'Verification =' ...)"


def program_name(bench: str, klass: str, nprocs: int | None) -> str:
    """The key of a binary in the manifest's programs: bt.A.4 (3.3.1) or bt.A.x (3.4)."""
    return f"{bench}.{klass.upper()}.{nprocs if nprocs is not None else 'x'}"


def parse_output(text: str, source: str = "NPB output") -> dict:
    """benchmark, class, size, iterations, time_s, processes, mops_total, mops_per_process,
    operation_type, verification, verified (bool), version. A ConfigError when the summary
    is missing or incomplete."""
    m = COMPLETED.search(text)
    if not m:
        raise ConfigError(source, "Benchmark Completed", "missing", EXPECTED)
    out: dict = {"benchmark": m.group(1).lower()}
    for line in text[m.end() :].splitlines():
        f = FIELD.match(line)
        if not f or f.group(1) not in FIELDS:
            continue
        name, kind = FIELDS[f.group(1)]
        try:
            out.setdefault(name, kind(f.group(2)))
        except ValueError:
            raise ConfigError(source, f.group(1), f.group(2), f"a {kind.__name__}") from None
    for key in ("time_s", "verification"):
        if key not in out:
            raise ConfigError(source, key, "missing", EXPECTED)
    out["verified"] = out["verification"] == "SUCCESSFUL"
    return out
