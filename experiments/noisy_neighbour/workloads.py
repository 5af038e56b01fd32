"""The workloads and the plan of the noisy_neighbour experiment (paper 003).

The configuration (experiments/noisy_neighbour/catalog.yaml, schema in
experiments/noisy_neighbour/config.schema.json) names CPU-bound programs of graded
cache sensitivity and one fio random-write workload. Here each becomes a job template:

- a CPU workload runs SPEC CPU's benchmark when the spec_cpu role installed SPEC CPU from the
  user's copy and recorded it in the upstream manifest (`spec_cpu`: version, runcpu, config);
  otherwise its stand-in: a PARSEC program when the parsec role built it, else corun's
  llc_miss kernel with arrays of `llc_fraction` x this machine's last-level cache;
- the I/O workload is fio random writes by loads and stores: libpmem on a DAX mount of
  persistent memory (task i on mount i mod n, so with one region per socket the tasks' files
  are spread over both, the nearest software form of the paper's PM interleaved across nodes),
  or mmap on memory where there is none (recorded as a stand-in).

`plan` lists every (domain, policy, workload) point with the tasks of its run, or the reason it
is not measurable on this machine (the experiment records it as a missing row).
"""

from __future__ import annotations

import copy
from pathlib import Path

from corun import config
from corun.errors import ConfigError
from corun.machine.placement_domains import POLICIES, Domains, NotMeasurable, Task, place
from corun.monitors.pelt import dax_mounts
from corun.run import workloads

SCHEMA = Path(__file__).resolve().parent / "config.schema.json"
CONFIG = Path(__file__).resolve().parent / "catalog.yaml"
# variant name -> policy of corun/machine/placement_domains.py
VARIANT_POLICY = {
    "cfs": "cfs",
    "smt_same_type": "same_type",
    "smt_mixed": "mixed",
    "llc_same_type": "llc_same_type",
    "llc_mixed": "llc_mixed",
    "numa_concentrate": "concentrate",
    "numa_spread": "spread",
}
assert set(VARIANT_POLICY.values()) == set(POLICIES)
LINE = 64


def section_schema() -> dict:
    """The section's schema as a document of its own: {noisy_neighbour: SECTION}."""
    sec = copy.deepcopy(config.load_schema(SCHEMA))
    defs = sec.pop("$defs", {})
    for key in ("$schema", "$comment", "title"):
        sec.pop(key, None)
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["noisy_neighbour"],
        "properties": {"noisy_neighbour": sec},
        "$defs": defs,
    }


def load(path: str | Path = CONFIG) -> dict:
    """The validated section, defaults filled in."""
    doc = config.validate(config.read_document(path), section_schema(), str(path))
    return fill_defaults(doc["noisy_neighbour"])


def fill_defaults(section: dict) -> dict:
    """Defaults under oneOf and nullable objects, which the validator does not fill, from the schema."""
    wdef = config.load_schema(SCHEMA)["$defs"]["nn_cpu_workload"]["properties"]
    for w in section["cpu_workloads"]:
        if w["spec"] is not None:
            _defaults(w["spec"], wdef["spec"])
        for branch in wdef["stand_in"]["oneOf"]:
            if branch["properties"]["kind"]["const"] == w["stand_in"]["kind"]:
                _defaults(w["stand_in"], branch)
    return section


def _defaults(obj: dict, schema: dict) -> None:
    for key, sub in schema.get("properties", {}).items():
        if key not in obj and "default" in sub:
            obj[key] = sub["default"]


def _size(text: str) -> int:
    text = text.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * mult


def llc_size_bytes(root: str | Path = "/") -> int | None:
    """Size of CPU 0's last-level (highest data or unified) cache, from sysfs; None if unknown."""
    best = None
    for idx in sorted((Path(root) / "sys/devices/system/cpu/cpu0/cache").glob("index[0-9]*")):
        try:
            if (idx / "type").read_text().strip() == "Instruction":
                continue
            level = int((idx / "level").read_text())
            size = _size((idx / "size").read_text())
        except (OSError, ValueError):
            continue
        if best is None or level > best[0]:
            best = (level, size)
    return best[1] if best else None


def _llc_miss(name: str, fraction: float, nops: int, accesses: float, llc: int | None, why: str) -> dict:
    if llc is None:
        raise ConfigError(
            "sysfs", "cache/index*/size", "missing", f"this machine's LLC size, to size the llc_miss stand-in of {name}"
        )
    mem = max(LINE, int(fraction * llc) // LINE * LINE)
    iterations = max(1, round(accesses / (mem // LINE)))
    t = workloads.llc_miss(mem, nops, iterations)
    t.labels.update(
        {
            "stands_in_for": name,
            "scale_note": f"llc_miss, arrays of {fraction} x LLC ({mem} B of {llc} B), {iterations} passes; {why}",
        }
    )
    return {"cmd": t.cmd, "labels": t.labels, "env": t.env, "result": t.result}


def cpu_job(w: dict, llc: int | None, upstream: dict | None = None) -> dict:
    """The command and labels of one CPU workload on this machine."""
    up = workloads.upstream() if upstream is None else upstream
    base = {"task_type": "cpu", "workload": w["name"], "cache_sensitivity": w["cache_sensitivity"]}
    spec = up.get("spec_cpu") or {}
    if w["spec"] and spec.get("runcpu") and spec.get("config"):
        bench = w["spec"]["benchmark"]
        cmd = [
            spec["runcpu"],
            f"--config={spec['config']}",
            "--action=onlyrun",
            f"--size={w['spec']['size']}",
            "--iterations=1",
            "--copies=1",
            "--noreportable",
            bench,
        ]
        return {
            "cmd": cmd,
            "env": {"SPEC": spec.get("install_dir", "")},
            "result": "none",
            "labels": {
                **base,
                "binary": f"SPEC CPU {spec.get('version', '?')} {bench}",
                "stands_in_for": bench,
                "scale_note": f"size {w['spec']['size']}",
            },
        }
    why = "SPEC CPU is not installed (spec_cpu role)" if w["spec"] else "no SPEC CPU program given"
    si = w["stand_in"]
    if si["kind"] == "parsec":
        prog = workloads.parsec_program(si["package"], si["input"], 1)
        if prog is not None:
            t = prog.template
            return {
                "cmd": t.cmd,
                "env": t.env,
                "result": t.result,
                "labels": {
                    **base,
                    **t.labels,
                    "stands_in_for": w["name"],
                    "stand_in_reason": why,
                    "scale_note": f"PARSEC {si['package']} {si['input']}; {why}",
                },
                "input_tar": str(prog.input_tar) if prog.input_tar is not None else None,
            }
        out = _llc_miss(
            w["name"], si["fallback_llc_fraction"], 0, 2e9, llc, f"{why}; PARSEC {si['package']} is not built either"
        )
    else:
        out = _llc_miss(w["name"], si["llc_fraction"], si["nops"], si["accesses"], llc, why)
    out["labels"] = {**base, **out["labels"]}
    return out


def io_job(io: dict, data_dir: str | Path, index: int = 0, mounts_text: str | None = None) -> dict:
    """fio random writes of one I/O task: libpmem on DAX persistent memory, else mmap on memory."""
    if mounts_text is None:
        mounts_text = Path("/proc/mounts").read_text()
    dax = dax_mounts(mounts_text)
    engine, folder = io["engine"], None
    if engine in ("auto", "libpmem"):
        if io["pmem_dir"]:
            folder = io["pmem_dir"]
            if folder not in {m for _, m in dax}:
                raise ConfigError(
                    "noisy_neighbour",
                    "io_workload.pmem_dir",
                    folder,
                    "a mount point of a /dev/pmem device mounted with -o dax",
                )
            engine = "libpmem"
        elif dax:  # task i on mount i mod n: the tasks' files spread over every region
            engine, folder = "libpmem", dax[index % len(dax)][1]
        elif engine == "libpmem":
            raise ConfigError(
                "noisy_neighbour",
                "io_workload.engine",
                "libpmem",
                "a DAX mount of persistent memory on this machine (none in /proc/mounts)",
            )
        else:
            engine, folder = "mmap", io["mem_dir"]
    elif engine == "mmap":
        folder = io["mem_dir"]
    else:
        folder = io["disk_dir"] or str(data_dir)
    fname = Path(folder) / f"corun-{io['name']}-{index}"
    cmd = [
        "fio",
        f"--name={io['name']}",
        f"--ioengine={engine}",
        f"--filename={fname}",
        "--rw=randwrite",
        f"--bs={io['block_size']}",
        f"--size={io['file_size_mib']}m",
        "--time_based",
        f"--runtime={io['runtime_s']}",
        "--thread",
        "--output-format=json",
        "--randrepeat=0",
    ]
    cmd += {"libpmem": ["--direct=0"], "psync": ["--direct=1"]}.get(engine, [])
    where = {"libpmem": "persistent memory with DAX", "mmap": f"memory ({folder})", "psync": f"a disk ({folder})"}[
        engine
    ]
    labels = {
        "task_type": "io",
        "workload": io["name"],
        "binary": f"fio {engine}",
        "stands_in_for": "fio random write on persistent memory (DAX)",
        "io_medium": where,
        "scale_note": ""
        if engine == "libpmem"
        else f"no persistent memory here: loads and stores go to {where}"
        if engine == "mmap"
        else "the conventional I/O path (pwrite, O_DIRECT), not the paper's",
    }
    return {"cmd": cmd, "labels": labels, "env": {}, "result": "none", "file": str(fname)}


def plan(section: dict, domains: Domains) -> list[dict]:
    """Every (domain, policy, workload) point: its tasks and CPUs, or why not measurable here."""
    rows = []
    for dom, d in section["domains"].items():
        for variant in d["policies"]:
            for w in section["cpu_workloads"]:
                names = (
                    [f"{w['name']}-{i}" for i in range(d["cpu_tasks"])],
                    [f"{section['io_workload']['name']}-{i}" for i in range(d["io_tasks"])],
                )
                tasks = [Task(n, "cpu") for n in names[0]] + [Task(n, "io") for n in names[1]]
                row = {
                    "domain": dom,
                    "variant": variant,
                    "workload": w["name"],
                    "tasks": ",".join(f"{t.type}:{t.name}" for t in tasks),
                    "cpus": None,
                    "not_measurable": None,
                    "note": (
                        f"{len(tasks)} tasks on {len(domains.cpus)} CPUs: they time-share"
                        if len(tasks) > len(domains.cpus)
                        else ""
                    ),
                }
                try:
                    row["cpus"] = place(VARIANT_POLICY[variant], domains, tasks)
                except NotMeasurable as exc:
                    row["not_measurable"] = exc.reason
                rows.append(row)
    return rows
