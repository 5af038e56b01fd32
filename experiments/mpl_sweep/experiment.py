"""Paper 001: MPI coscheduling schemes x multi-programming level x workload (the MPL sweep).

Every run is one (workload, load, scheme, MPL, rep) point: a stream of MPI jobs (Table 3's
WL1-WL6, experiments.mpl_sweep.workloads) submitted to the hosts of a cluster at their submission
times, allocated first in, first out into MPL job slots per host, under one scheme variant
(schedulers/<scheme>, one daemon per host). The job stream of a (workload, load, rep) is the
same for every scheme and MPL, so schemes compare paired. BATCH runs at MPL 1 only. With
`figures` (the paper profile) the points are those of the paper's figures (corun.plan.figures).
Points are shuffled within each repetition (seeded), repetitions outermost.

Locally the hosts are a netns cluster (`cluster.netns.hosts`, each host on CPUs of its own):
the runs of a look are one group (groups.json) that `corun.testbed.pfs_runs` runs one after
another on one cluster, brought up before the first and removed after the last; each run starts
and stops its own node daemons. At paper scale `cluster.inventory` names the 16 nodes and every
run is a step of its own.
"""

from __future__ import annotations

import random
from pathlib import Path

import yaml

from corun.errors import ConfigError
from corun.plan import figures
from corun.plan.base import RUN_OVERHEAD_S, Experiment
from corun.testbed import inventory as inv
from corun.util import atomic_write_json, atomic_write_text, lazy_module, repo_root
from experiments.mpl_sweep import workloads as mw

# pandas and SciPy: loaded by the analyze step only (the data and specs steps need neither)

NAME = "mpl_sweep"
PLAN_FILE = "plan.json"
GROUPS_FILE = "groups.json"
GROUP = "cluster"  # the one group of the netns cluster's runs (its later looks: cluster-look<l>)


def section(cfg: dict) -> dict:
    return cfg[NAME]


def netns_dir(cfg: dict) -> Path:
    """State folder of the netns cluster; its inventory is inventory.yml inside."""
    return (repo_root() / cfg["results_dir"] / NAME / "netns").resolve()


def inventory_path(cfg: dict) -> Path:
    c = section(cfg)["cluster"]
    if c["netns"]["hosts"] > 0:
        return netns_dir(cfg) / "inventory.yml"
    p = Path(c["inventory"])
    return p if p.is_absolute() else (repo_root() / p).resolve()


def n_hosts(cfg: dict, source: str = "config") -> int:
    c = section(cfg)["cluster"]
    if c["netns"]["hosts"] > 0:
        return c["netns"]["hosts"]
    return len(inv.load(inventory_path(cfg), c["group"], f"{source}: {NAME}.cluster.inventory"))


def streams(sec: dict) -> list[tuple[str, str]]:
    """(workload, load) of every job stream: burst workloads once, exponential ones per load."""
    out = []
    for w in sec["use_workloads"]:
        if sec["workloads"][w]["arrival"] == "burst":
            out.append((w, "burst"))
        else:
            out += [(w, load) for load in sec["use_loads"]]
    return out


def full_matrix(sec: dict) -> list[dict]:
    """Every (workload, load, scheme, mpl) of the section's axes: BATCH at MPL 1 only."""
    out = []
    for w, load in streams(sec):
        for s in sec["schemes"]:
            for m in [1] if s == "batch" else sec["mpl_levels"]:
                out.append({"workload": w, "load": load, "scheme": s, "mpl": m})
    return out


def matrix(sec: dict) -> list[dict]:
    """The points a repetition runs: those some figure of `figures` shows, else every one."""
    return figures.select(full_matrix(sec), sec["figures"])


def points(cfg: dict) -> list[dict]:
    """Every run: (workload, load, scheme, mpl, rep); shuffled within a rep, reps outermost."""
    sec = section(cfg)
    base = matrix(sec)
    rng = random.Random(sec["seed"])
    out = []
    for rep in range(sec["reps"]):
        order = list(base)
        rng.shuffle(order)
        out += [{**p, "rep": rep} for p in order]
    return out


def npb_benches(sec: dict) -> dict[str, bool]:
    """Per benchmark of the workloads used: whether NPB runs it (else the stand-in)."""
    out: dict[str, bool] = {}
    for w in sec["use_workloads"]:
        wl = sec["workloads"][w]
        for b, real in mw.npb_benches(wl["apps"], sec["npb_class"], wl["ranks"]).items():
            out[b] = out.get(b, False) or real
    return out


def run_name(p: dict) -> str:
    return f"{p['workload']}_{p['load']}_{p['scheme']}_mpl{p['mpl']}_r{p['rep']}"


def jobs_of(sec: dict, workload: str, load: str, rep: int) -> list[dict]:
    """The job stream of (workload, load, rep): seeded by those alone, so paired across schemes."""
    wl = sec["workloads"][workload]
    rng = random.Random(f"{sec['seed']}:{workload}:{load}:{rep}")
    gap = sec["loads"][load] * sec["job_s"] if wl["arrival"] == "exponential" else 0.0
    return mw.job_stream(wl, wl["jobs"], wl["arrival"], gap, rng, sec["npb_class"])


def make_spec(cfg: dict, p: dict) -> dict:
    sec = section(cfg)
    c = sec["cluster"]
    jobs = []
    for i, j in enumerate(jobs_of(sec, p["workload"], p["load"], p["rep"])):
        t = mw.job_template(j["bench"], sec["npb_class"], j["ranks"], sec["stand_in"])
        job = {
            "name": f"{j['bench']}{j['ranks']}-{i:03d}",
            "kind": "mpi",
            "ranks": j["ranks"],
            "submit_s": j["submit_s"],
            "cmd": t["cmd"],
            "result": t["result"],
            "labels": t["labels"],
        }
        if sec["job_timeout_s"] is not None:
            job["timeout_s"] = sec["job_timeout_s"]
        jobs.append(job)
    params = dict(sec["scheduler_params"])
    if p["scheme"] != "batch":
        params["mpl"] = p["mpl"]
    return {
        "name": f"{NAME}-{run_name(p)}",
        "labels": {"experiment": NAME, **p},
        "cluster": {
            "inventory": str(inventory_path(cfg)),
            "group": c["group"],
            "mpl": p["mpl"],
            "ranks_per_node": c["ranks_per_node"],
            "daemon_port": c["daemon_port"],
        },
        "jobs": jobs,
        "device": {"path": str(repo_root() / cfg["results_dir"])},
        "scheduler": {"name": p["scheme"], "params": params},
        "monitors": {"enabled": []},
    }


class MplSweep(Experiment):
    name = NAME
    variant_kinds = ("daemon",)
    data_file = PLAN_FILE
    spec_files = (PLAN_FILE, GROUPS_FILE)

    def hosts_held(self, cfg: dict) -> int:
        """One rank per node up to ranks_per_node: the hosts its largest job spans (1 on the netns
        cluster, which is one machine)."""
        sec = section(cfg)
        c = sec["cluster"]
        if c["netns"]["hosts"]:
            return 1
        ranks = max(max(sec["workloads"][w]["ranks"]) for w in sec["use_workloads"])
        return -(-ranks // c["ranks_per_node"])

    def inventory_hosts(self, cfg: dict) -> int:
        c = section(cfg)["cluster"]
        if c["netns"]["hosts"] or not c.get("inventory") or not inventory_path(cfg).exists():
            return 0
        return n_hosts(cfg)

    def group_runs(self, cfg: dict) -> dict[str, list[str]]:
        """On a netns cluster, every run in one group: the cluster comes up once for them."""
        if section(cfg)["cluster"]["netns"]["hosts"] == 0:
            return {}
        return {GROUP: self.run_names(cfg)}

    def run_command(self, cfg: dict, state_dir: str) -> str:
        """corun run; inside a netns cluster of its own (brought up for the run and removed after
        it) for a spec run outside its group."""
        n = section(cfg)["cluster"]["netns"]
        if n["hosts"] == 0:
            return super().run_command(cfg, state_dir)
        return (
            f"-m corun.testbed.cluster_run --hosts {n['hosts']} --cpus-per-host {n['cpus_per_host']}"
            f" --prefix {n['prefix']} --subnet {n['subnet']} --state-dir {state_dir} --"
        )

    def analysis_inputs(self, cfg: dict, results: str) -> dict:
        return {**super().analysis_inputs(cfg, results), "specs": f"{results}/{NAME}/specs"}  # its plan.json

    host_runs = False  # its runs are multi-host by themselves

    def prepare_config(self, raw: dict, section_schema: dict) -> dict:
        """`workloads` and `stand_in` given in part keep the schema's other entries (Table 3)."""
        sec = raw.get(NAME)
        if not isinstance(sec, dict):
            return raw
        sec = dict(sec)
        for key in ("workloads", "stand_in"):
            given = sec.get(key)
            if isinstance(given, dict):
                sec[key] = {**section_schema["properties"][key]["default"], **given}
        return {**raw, NAME: sec}

    def check(self, cfg: dict, source: str) -> None:
        sec = section(cfg)
        c = sec["cluster"]
        if c["netns"]["hosts"] == 0 and c["inventory"] is None:
            raise ConfigError(
                source, f"{NAME}.cluster.inventory", None, "an inventory file, or cluster.netns.hosts >= 1"
            )
        for i, w in enumerate(sec["use_workloads"]):
            if w not in sec["workloads"]:
                raise ConfigError(source, f"{NAME}.use_workloads[{i}]", w, f"one of {', '.join(sec['workloads'])}")
        for i, load in enumerate(sec["use_loads"]):
            if load not in sec["loads"]:
                raise ConfigError(source, f"{NAME}.use_loads[{i}]", load, f"one of {', '.join(sec['loads'])}")
        pr = sec["model"]["projection"]
        if pr["workload"] not in sec["workloads"]:
            raise ConfigError(
                source, f"{NAME}.model.projection.workload", pr["workload"], f"one of {', '.join(sec['workloads'])}"
            )
        if pr["load"] not in sec["loads"]:
            raise ConfigError(source, f"{NAME}.model.projection.load", pr["load"], f"one of {', '.join(sec['loads'])}")
        figures.check(full_matrix(sec), sec["figures"], source, NAME)
        if "mpl" in sec["scheduler_params"]:
            raise ConfigError(
                source, f"{NAME}.scheduler_params.mpl", sec["scheduler_params"]["mpl"], "no value (set by mpl_levels)"
            )
        # a testbed's inventory is written once its nodes are reserved (inventory/grid5000): its
        # host count is checked here when it exists, and by the runner before every run
        known = c["netns"]["hosts"] > 0 or inventory_path(cfg).is_file()
        most = n_hosts(cfg, source) * c["ranks_per_node"] if known else None
        for w in sec["use_workloads"]:
            wl = sec["workloads"][w]
            if most is not None and max(wl["ranks"]) > most:
                raise ConfigError(
                    source,
                    f"{NAME}.workloads.{w}.ranks",
                    wl["ranks"],
                    f"counts <= {most} ({most // c['ranks_per_node']} hosts x {c['ranks_per_node']} ranks per node)",
                )

    def variant_params(self, cfg: dict, source: str) -> list[tuple[str, str, str | None, object]]:
        sec = section(cfg)
        out = []
        for i, s in enumerate(sec["schemes"]):
            out.append((f"{NAME}.schemes[{i}]", s, None, None))
            for k, v in sec["scheduler_params"].items():
                out.append((f"{NAME}.scheduler_params.{k}", s, k, v))
            if s != "batch":
                for j, m in enumerate(sec["mpl_levels"]):
                    out.append((f"{NAME}.mpl_levels[{j}]", s, "mpl", m))
        return out

    def data(self, cfg: dict, data_dir: Path) -> str:
        """The job streams (written for the record) and which program runs each benchmark."""
        sec = section(cfg)
        data_dir.mkdir(parents=True, exist_ok=True)
        plan = {
            "npb": mw.npb_present(sec["npb_class"]),
            "npb_benches": npb_benches(sec),
            "streams": {
                f"{w}_{load}_r{r}": jobs_of(sec, w, load, r) for w, load in streams(sec) for r in range(sec["reps"])
            },
        }
        atomic_write_json(data_dir / PLAN_FILE, plan)
        real = sorted(b for b, r in plan["npb_benches"].items() if r)
        stand = sorted(b for b, r in plan["npb_benches"].items() if not r)
        who = f"NPB {sec['npb_class']}: {', '.join(real) or 'none'}"
        if stand:
            who += f"; the mpi_stencil stand-in: {', '.join(stand)}"
        return f"{len(plan['streams'])} job streams; benchmarks run as {who}"

    def specs(self, cfg: dict, calibration: dict, data_dir: Path, out_dir: Path) -> int:
        out_dir.mkdir(parents=True, exist_ok=True)
        pts = points(cfg)
        for p in pts:
            atomic_write_text(out_dir / f"{run_name(p)}.yaml", yaml.safe_dump(make_spec(cfg, p), sort_keys=False))
        sec = section(cfg)
        c = sec["cluster"]
        known = c["netns"]["hosts"] > 0 or inventory_path(cfg).is_file()
        atomic_write_json(
            out_dir / PLAN_FILE,
            {
                "npb": mw.npb_present(sec["npb_class"]),
                "npb_benches": npb_benches(sec),
                "bcr_min_pending": sec["scheduler_params"].get("bcr_min_pending", 2),
                "loads": sec["loads"],
                "job_s": sec["job_s"],
                # what the model (experiments.mpl_sweep.model) needs besides the collected runs
                "hosts": n_hosts(cfg) if known else None,
                "cores_per_node": c["netns"]["cpus_per_host"] if c["netns"]["hosts"] > 0 else 1,
                "ranks_per_node": c["ranks_per_node"],
                "scheduler_params": sec["scheduler_params"],
                "workloads": sec["workloads"],
                "stand_in": sec["stand_in"],
                "model": sec["model"],
                "runs": [{**p, "run": run_name(p)} for p in pts],
            },
        )
        n = c["netns"]
        groups = []
        if n["hosts"] > 0:
            groups.append(
                {
                    "name": GROUP,
                    "runs": [run_name(p) for p in pts],
                    "cluster": {
                        "kind": "netns",
                        "prefix": n["prefix"],
                        "subnet": n["subnet"],
                        "hosts": n["hosts"],
                        "cpus_per_host": n["cpus_per_host"],
                        "inventory": str(inventory_path(cfg)),  # the path the specs name
                    },
                    "pfs": None,
                }
            )
        atomic_write_json(out_dir / GROUPS_FILE, {"experiment": NAME, "groups": groups})
        return len(pts)

    def run_names(self, cfg: dict) -> list[str]:
        return [run_name(p) for p in points(cfg)]

    def run_figures(self, cfg: dict) -> dict[str, list[str]]:
        return {run_name(p): figures.served(p, section(cfg)["figures"]) for p in points(cfg)}

    def estimate(self, cfg: dict) -> dict:
        """Each run: its jobs' work spread over the cluster's slots, or the arrivals' span."""
        sec = section(cfg)
        total = 0.0
        for p in points(cfg):
            wl = sec["workloads"][p["workload"]]
            span = (wl["jobs"] - 1) * sec["loads"][p["load"]] * sec["job_s"] if wl["arrival"] == "exponential" else 0
            total += max(span, wl["jobs"] * sec["job_s"] / max(1, p["mpl"])) + RUN_OVERHEAD_S
        return {"runs": len(points(cfg)), "seconds": total, "k_dropped": []}

    # ----------------------------------------------------------------- its analysis (analysis.py)
    # analyse(inputs), JOB_TEXT, RUN_TEXT: pandas and SciPy, loaded by the analyze step only
    analysis = lazy_module("experiments.mpl_sweep.analysis")


EXPERIMENT = MplSweep()
