"""The MPL sweep's model: calibrate the discrete-event model (experiments.mpl_sweep.des) on the measured
runs, report how well it predicts them, then project the paper's 16 nodes and a larger cluster.

Calibration, from the collected runs themselves (jobs.csv: the mpi_stencil stand-in's result
fields; no value typed in):
  alone jobs       the BATCH runs' jobs (one job per node: no contention); without BATCH runs,
                   the fastest job of each benchmark (said in the fit's note).
  compute_s        per benchmark: mean over its alone jobs of result_runtime_s x
                   (1 - result_comm_share) / iters: CPU time per rank and iteration.
  lat_s            per benchmark: the alone jobs' communication time (result_runtime_s x
                   result_comm_share) over their exchange steps (a halo counts 1, an all-reduce
                   ceil(log2 P), an all-to-all P - 1).
  startup_s        mean over the alone jobs of runtime_s - result_runtime_s: mpirun's launch,
                   MPI_Init and teardown around the timed loop.
  fitted           startup_cpu_frac (the part of the startup that is CPU work on the nodes),
                   ctx_switch_us and quantum_ms: the grid point of `model.fit` (coordinate
                   descent, in that order, twice) with the least mean absolute relative error
                   of the runs' mean response time, over every measured run.

Held out: the model is calibrated and fitted on the first `model.fit_reps` reps (default 2; all
but the last when fewer ran) and checked on every later rep's runs, which it has not seen (with
one rep there is nothing to check it on, and it is not checked). The fit is kept in a cache
folder under the hash of what it was fitted on (the runs' job streams and results, the plan's
settings, this module and the simulator): an unchanged campaign is not fitted twice, and the
looks of a sequential design, which add reps only, reuse the first look's fit and check it on
more runs. One coordinate's candidates are simulated side by side, one process per CPU.

Prediction: each measured run is simulated with its own job stream (submit times, benchmarks
and rank counts of its jobs.csv), scheme, MPL, hosts and CPUs per host; per (workload, load,
scheme, MPL) the model's and the measured response time, execution time, BCR and MD, and the
error of each (model / measured - 1, %; for BCR, a ratio near 0 on small clusters, the
difference model - measured). Check: the model predicts the held-out runs when every held-out
point's response-time error lies within +-`model.tolerance_pct`; otherwise it is not projected.

Projection ("model" values, never measurements), only when the check passed: the calibrated
benchmarks on `nodes` nodes
(one CPU each, one rank per node as the paper), at each of `mpl_levels`, for each scheme, a
seeded stream of `jobs` jobs of the workload's benchmarks with `ranks` (scaled by nodes / 16
above 16 nodes) arriving with exponential gaps of mean loads[load] x the calibrated job's length
alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import multiprocessing
import os
import random
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd

from corun.run import schedulers
from experiments.mpl_sweep import des

MODEL_PARAMS = ("spin_us", "pb_period_us", "boost_max_us", "gang_slice_ms", "bcr_min_pending", "cost_switch_us")


def manifest_defaults() -> dict:
    """The schemes' parameters the model uses, at the defaults of schedulers/mpi_cosched's manifest
    (one place for a default: the manifest)."""
    params = schedulers.manifest("mpi_cosched")["params"]
    return {k: params[k]["default"] for k in MODEL_PARAMS}


METRICS = [("response_s", "s"), ("exec_s", "s"), ("bcr", ""), ("md_us", "us")]
FIT_ORDER = ["startup_cpu_frac", "ctx_switch_us", "quantum_ms"]
RESULT_COLUMNS = ["result_runtime_s", "result_comm_share", "result_iters"]


class ModelInputError(Exception):
    """The runs cannot calibrate the model (the reason is the message)."""


def shapes(stand_in: dict) -> dict[str, dict]:
    """Each benchmark's exchange steps from the stand-in's options."""
    return {
        b: {
            "halo": int(o["halo_bytes"]) > 0,
            "allreduce_every": int(o["allreduce_every"]),
            "alltoall_every": int(o["alltoall_every"]),
        }
        for b, o in stand_in.items()
    }


def step_units(shape: dict, iters: int, ranks: int) -> float:
    """Latency units of one job's exchange steps (see the module docstring)."""
    b = des.Bench(iters=iters, compute_s=0.0, lat_s=1.0, **shape)
    return b.alone_s(ranks)


def calibrate_benches(jobs: pd.DataFrame, stand_in: dict) -> tuple[dict[str, des.Bench], float, str]:
    """(benches, startup_s, note) from the alone jobs of the collected jobs table."""
    missing = [c for c in RESULT_COLUMNS + ["bench", "runtime_s", "ranks", "scheme"] if c not in jobs]
    if missing:
        raise ModelInputError(
            f"jobs.csv has no {', '.join(missing)} (the model needs mpi_stencil's result fields: "
            "NPB runs report no per-iteration times)"
        )
    ok = jobs[(jobs["exit_code"] == 0) & jobs["result_runtime_s"].notna()]
    if ok.empty:
        raise ModelInputError("no job exited 0 with a result_runtime_s")
    without = sorted(set(jobs["bench"].astype(str)) - set(ok["bench"].astype(str)))
    if without:  # NPB's jobs: the model calibrates on mpi_stencil's per-iteration fields only
        raise ModelInputError(
            f"no job of {', '.join(without)} exited 0 with mpi_stencil's result fields "
            "(NPB prints no per-iteration times): the model calibrates on the stand-in's runs only"
        )
    alone = ok[ok["scheme"] == "batch"]
    if alone.empty:
        note = "no BATCH run: the fastest job of each benchmark stands for the job alone"
        alone = ok.loc[ok.groupby("bench")["runtime_s"].idxmin()]
    else:
        note = f"{len(alone)} BATCH jobs (one job per node) give the jobs alone"
    sh = shapes(stand_in)
    benches = {}
    for b, g in alone.groupby("bench"):
        if b not in sh:
            raise ModelInputError(f"benchmark {b!r} has no stand_in entry")
        iters = int(g["result_iters"].iloc[0])
        comp = (g["result_runtime_s"] * (1 - g["result_comm_share"]) / iters).mean()
        units = [step_units(sh[b], iters, int(p)) for p in g["ranks"]]
        comm = (g["result_runtime_s"] * g["result_comm_share"]).to_numpy()
        lat = float(sum(c / u for c, u in zip(comm, units) if u > 0) / max(1, sum(1 for u in units if u > 0)))
        benches[str(b)] = des.Bench(iters=iters, compute_s=float(comp), lat_s=lat, **sh[b])
    for b in sorted(set(ok["bench"]) - set(benches)):
        raise ModelInputError(f"benchmark {b!r} has no alone job to calibrate on")
    startup = float((alone["runtime_s"] - alone["result_runtime_s"]).mean())
    return benches, max(0.0, startup), note


def params_for(plan: dict, startup_s: float, fit: dict) -> des.Params:
    sp = {**manifest_defaults(), **(plan.get("scheduler_params") or {})}
    return des.Params(
        cores=int(plan.get("cores_per_node") or 1),
        quantum_s=fit["quantum_ms"] / 1e3,
        ctx_switch_s=fit["ctx_switch_us"] / 1e6,
        spin_s=sp["spin_us"] / 1e6,
        pb_period_s=sp["pb_period_us"] / 1e6,
        boost_max_s=sp["boost_max_us"] / 1e6,
        gang_slice_s=sp["gang_slice_ms"] / 1e3,
        startup_s=startup_s,
        startup_cpu_frac=fit["startup_cpu_frac"],
        bcr_min_pending=int(sp["bcr_min_pending"]),
        cost_switch_s=sp["cost_switch_us"] / 1e6,
    )


def run_streams(jobs: pd.DataFrame) -> dict[str, list[des.JobIn]]:
    """Each run's job stream, in submit order."""
    out = {}
    for rid, g in jobs.groupby("run_id", sort=True):
        g = g.sort_values(["submit_s", "name"])
        out[str(rid)] = [
            des.JobIn(str(r["name"]), str(r["bench"]), int(r["ranks"]), float(r["submit_s"])) for _, r in g.iterrows()
        ]
    return out


def simulate_runs(by_run: pd.DataFrame, streams: dict, benches: dict, params: des.Params, hosts: int,
                  rpn: int) -> pd.DataFrame:  # fmt: skip
    """The model's value of every metric for every measured run."""
    rows = []
    for _, r in by_run.iterrows():
        res = des.simulate(str(r["scheme"]), int(r["mpl"]), hosts, params, benches, streams[r["run_id"]], rpn)
        js = res["jobs"]
        rows.append(
            {
                "run_id": r["run_id"],
                "response_s": sum(j["response_s"] for j in js) / len(js),
                "exec_s": sum(j["exec_s"] for j in js) / len(js),
                "wait_s": sum(j["wait_s"] for j in js) / len(js),
                "bcr": res["bcr"],
                "md_us": res["md_us"],
            }
        )
    return pd.DataFrame(rows)


def response_error(by_run: pd.DataFrame, model: pd.DataFrame) -> float:
    m = by_run.set_index("run_id")["response_s"]
    p = model.set_index("run_id")["response_s"].reindex(m.index)
    e = ((p - m).abs() / m).dropna()
    return float(e.mean()) if len(e) else math.nan


def fit(by_run, streams, benches, plan, startup_s, hosts, rpn, grid: dict) -> tuple[dict, float, int]:
    """Coordinate descent over the grid (FIT_ORDER, twice): (best values, error, evaluations)."""

    def key(vals: dict) -> tuple:
        return tuple(vals[k] for k in FIT_ORDER)

    global _FIT_ARGS
    _FIT_ARGS = (by_run, streams, benches, plan, startup_s, hosts, rpn)
    best = {k: grid[k][len(grid[k]) // 2] for k in FIT_ORDER}
    cache: dict[tuple, float] = {key(best): _fit_error(best)}
    best_err = cache[key(best)]
    workers = min(len(os.sched_getaffinity(0)), 4)
    ctx = multiprocessing.get_context("fork")
    try:
        with ProcessPoolExecutor(workers, mp_context=ctx) if workers > 1 else contextlib.nullcontext() as pool:
            for _ in range(2):
                for k in FIT_ORDER:
                    # every candidate of one coordinate differs from `best` in that coordinate only,
                    # so they are evaluated side by side and then taken in grid order, as one by one
                    cands = [{**best, k: v} for v in grid[k]]
                    todo = [c for c in cands if key(c) not in cache]
                    evaluate = pool.map if pool is not None and len(todo) > 1 else map
                    cache.update(zip(map(key, todo), evaluate(_fit_error, todo)))
                    for cand in cands:
                        if cache[key(cand)] < best_err - 1e-12:
                            best, best_err = cand, cache[key(cand)]
    finally:
        _FIT_ARGS = None
    return best, best_err, len(cache)


# what the fit's worker processes read (inherited by fork, not pickled per candidate)
_FIT_ARGS: tuple | None = None


def _fit_error(vals: dict) -> float:
    by_run, streams, benches, plan, startup_s, hosts, rpn = _FIT_ARGS
    model = simulate_runs(by_run, streams, benches, params_for(plan, startup_s, vals), hosts, rpn)
    return response_error(by_run, model)


def error_pct(model: float, measured: float) -> float:
    if not (math.isfinite(model) and math.isfinite(measured)) or measured == 0:
        return math.nan
    return 100.0 * (model / measured - 1)


def compare_table(by_run: pd.DataFrame, model: pd.DataFrame) -> pd.DataFrame:
    """Per (workload, load, scheme, mpl): measured, model and error % of each metric."""
    keys = ["workload", "load", "scheme", "mpl"]
    j = by_run.merge(model, on="run_id", suffixes=("", "_model"))
    rows = []
    for key, g in j.groupby(keys, sort=True):
        row = dict(zip(keys, key))
        row["n_runs"] = len(g)
        for m, _unit in METRICS:
            meas = float(g[m].mean())
            pred = float(g[f"{m}_model"].mean())
            row[f"measured_{m}"] = meas
            row[f"model_{m}"] = pred
            if m == "bcr":  # a ratio near 0 here: its difference, not a relative error
                row["error_bcr_abs"] = pred - meas
            else:
                row[f"error_{m}_pct"] = error_pct(pred, meas)
        rows.append(row)
    return pd.DataFrame(rows)


def projection_stream(benches: dict, apps: list[str], ranks: list[int], jobs: int, gap_s: float,
                      rng: random.Random) -> list[des.JobIn]:  # fmt: skip
    choices = [(b, p) for b in apps if b in benches for p in ranks]
    if not choices:
        raise ModelInputError(f"projection: none of {', '.join(apps)} was calibrated")
    out, t = [], 0.0
    for i in range(jobs):
        b, p = rng.choice(choices)
        if i > 0:
            t += rng.expovariate(1.0 / gap_s)
        out.append(des.JobIn(f"{b}{p}-{i:03d}", b, p, round(t, 6)))
    return out


def project(plan: dict, benches: dict, params: des.Params, schemes: list[str]) -> pd.DataFrame:
    """The model at the projection's cluster sizes and MPLs (one CPU per node)."""
    pr = plan["model"]["projection"]
    wl = plan["workloads"][pr["workload"]]
    params = des.Params(**{**params.__dict__, "cores": 1})
    rows = []
    for nodes in pr["nodes"]:
        scale = max(1, nodes // 16)
        ranks = [min(nodes, p * scale) for p in pr["ranks"]]
        alone = [params.startup_s + benches[b].alone_s(p) for b in wl["apps"] if b in benches for p in ranks]
        gap = plan["loads"][pr["load"]] * (sum(alone) / len(alone) if alone else 1.0)
        rng = random.Random(f"{pr['seed']}:{nodes}")
        stream = projection_stream(benches, wl["apps"], ranks, pr["jobs"], gap, rng)
        for mpl in pr["mpl_levels"]:
            for s in schemes:
                m = 1 if s == "batch" else mpl
                res = des.simulate(s, m, nodes, params, benches, stream, 1)
                js = res["jobs"]
                rows.append(
                    {
                        "nodes": nodes,
                        "mpl": m,
                        "scheme": s,
                        "workload": pr["workload"],
                        "load": pr["load"],
                        "jobs": len(js),
                        "model_response_s": sum(j["response_s"] for j in js) / len(js),
                        "model_exec_s": sum(j["exec_s"] for j in js) / len(js),
                        "model_wait_s": sum(j["wait_s"] for j in js) / len(js),
                        "model_bcr": res["bcr"],
                        "model_md_us": res["md_us"],
                    }
                )
    out = pd.DataFrame(rows)
    return out.drop_duplicates(subset=["nodes", "mpl", "scheme"]).reset_index(drop=True)


def projected_ratio(proj: pd.DataFrame, nodes: int, mpl: int, head: str, base: str) -> float:
    sel = proj[(proj["nodes"] == nodes) & (proj["mpl"] == mpl)].set_index("scheme")["model_response_s"]
    if head not in sel or base not in sel:
        return math.nan
    return float(sel[head] / sel[base])


def host_count(plan: dict, jobs: pd.DataFrame) -> int:
    if plan.get("hosts"):
        return int(plan["hosts"])
    seen = set()
    for h in jobs.get("hosts", pd.Series(dtype=str)).dropna():
        seen |= {x.split(":")[0] for x in str(h).split()}
    return max(1, len(seen))


def _fit_key(jobs: pd.DataFrame, by_run: pd.DataFrame, plan: dict, hosts: int, rpn: int) -> str:
    """The hash of everything the fit depends on: the fitted runs and their jobs, the plan's
    settings, and the model's and simulator's code."""
    cols = [c for c in ["run_id", "name", "bench", "ranks", "submit_s", "runtime_s", "exit_code", *RESULT_COLUMNS,
                        "scheme"] if c in jobs]  # fmt: skip
    h = hashlib.sha256()
    h.update(jobs[jobs["run_id"].isin(by_run["run_id"])][cols].sort_values(cols[:2]).to_csv(index=False).encode())
    h.update(by_run[["run_id", "scheme", "mpl", "response_s"]].sort_values("run_id").to_csv(index=False).encode())
    keep = {k: plan.get(k) for k in ("stand_in", "scheduler_params", "cores_per_node", "model")}
    h.update(json.dumps([keep, hosts, rpn], sort_keys=True, default=str).encode())
    for f in (Path(__file__), *sorted(Path(des.__file__).parent.glob("des*.py"))):
        h.update(f.read_bytes())
    return h.hexdigest()[:20]


def cached_fit(key: str, cache_dir: str | Path | None, compute) -> tuple[dict, float, int, bool]:
    """(best, error, evaluations, from the cache) of the fit with this key."""
    path = Path(cache_dir) / f"fit-{key}.json" if cache_dir else None
    if path is not None and path.is_file():
        try:
            doc = json.loads(path.read_text())
            return doc["best"], doc["error"], doc["evaluations"], True
        except (OSError, ValueError, KeyError):
            pass
    best, err, n = compute()
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"best": best, "error": err, "evaluations": n}))
        tmp.replace(path)
    return best, err, n, False


def run_model(jobs: pd.DataFrame, by_run: pd.DataFrame, plan: dict, cache_dir: str | Path | None = None) -> dict:
    """Calibrate and fit on the first `fit_reps` reps (all but the last when fewer ran), check on
    every later rep, project when the check passed. Raises ModelInputError with the reason."""
    cfg = plan.get("model")
    if not cfg:
        raise ModelInputError("plan.json has no model settings (specs written before mpl_sweep.model existed)")
    if not cfg.get("enabled", False):
        raise ModelInputError("not computed: mpl_sweep.model.enabled is false")
    if by_run.empty:
        raise ModelInputError("no measured run")
    measured = by_run[by_run["response_s"].notna() & ~by_run.get("failed", pd.Series(False, index=by_run.index))]
    reps = sorted(set(measured["rep"]))
    if not reps:
        raise ModelInputError("no run with a response time")
    # one fit per configuration: the first fit_reps reps (all but the last when fewer were run),
    # checked on every later one; a later look adds held-out reps and reuses the cached fit
    n_fit = min(int(cfg.get("fit_reps", 2)), len(reps) - 1) if len(reps) > 1 else 1
    held = reps[n_fit:]
    fit_runs = measured[~measured["rep"].isin(held)]
    test_runs = measured[measured["rep"].isin(held)]
    fit_jobs = jobs[jobs["run_id"].isin(fit_runs["run_id"])]
    benches, startup_s, source = calibrate_benches(fit_jobs, plan["stand_in"])
    hosts = host_count(plan, jobs)
    rpn = int(plan.get("ranks_per_node") or 1)
    streams = run_streams(jobs)
    key = _fit_key(jobs, fit_runs, plan, hosts, rpn)
    best, err, n_eval, hit = cached_fit(
        key, cache_dir, lambda: fit(fit_runs, streams, benches, plan, startup_s, hosts, rpn, cfg["fit"])
    )
    params = params_for(plan, startup_s, best)
    # a held-out run whose job stream has a benchmark the fitted reps never ran alone cannot be
    # simulated from what the fit saw: it is left out of the check (said in the validation)
    known = set(benches)
    simulable = [rid for rid in measured["run_id"] if {j.bench for j in streams[rid]} <= known]
    left_out = sorted(set(test_runs["run_id"]) - set(simulable))
    measured = measured[measured["run_id"].isin(simulable)]
    test_runs = test_runs[test_runs["run_id"].isin(simulable)]
    model_runs = simulate_runs(measured, streams, benches, params, hosts, rpn)
    table = compare_table(measured, model_runs)
    table["held_out"] = False
    tol = float(cfg["tolerance_pct"])
    if len(test_runs):
        test_table = compare_table(test_runs, model_runs[model_runs["run_id"].isin(test_runs["run_id"])])
        worst = float(test_table["error_response_s_pct"].abs().max()) if len(test_table) else math.nan
        within = bool(math.isfinite(worst) and worst <= tol)
        test_table["held_out"] = True
        table = pd.concat([table.assign(held_out=False), test_table], ignore_index=True)
        why = ""
    else:
        worst, within = math.nan, False
        why = (
            "one rep: no run left to check the model on"
            if not held
            else f"the held-out runs ran benchmarks the fitted reps never ran alone ({len(left_out)} left out)"
        )
    schemes = cfg["projection"].get("schemes") or sorted(set(measured["scheme"]), key=des.SCHEMES.index)
    proj = project(plan, benches, params, schemes) if within else None
    return {
        "benches": benches,
        "startup_s": startup_s,
        "source": source,
        "fit": best,
        "fit_error_pct": 100 * err,
        "evaluations": n_eval,
        "cached": hit,
        "hosts": hosts,
        "table": table,
        "tolerance_pct": tol,
        "worst_response_error_pct": worst,
        "within": within,
        "validation": {
            "fitted": len(fit_runs),
            "fit_reps": "reps " + ", ".join(map(str, sorted(set(fit_runs["rep"])))),
            "held_out": len(test_runs),
            "held_out_reps": "rep " + ", ".join(map(str, held)) if held else "none",
            "worst_pct": worst,
            "within": within,
            "why": why,
            "left_out": left_out,
        },
        "projection": proj,
    }


def describe(res: dict) -> tuple[list[str], list[str]]:
    """(summary sentences, notes) of the model for the report section."""
    f = res["fit"]
    b = ", ".join(
        f"{k} {1e6 * v.compute_s:.0f} us compute + {1e6 * v.lat_s:.0f} us per exchange step x {v.iters}"
        for k, v in sorted(res["benches"].items())
    )
    t = res["table"]
    t = t[t["held_out"]] if t["held_out"].any() else t
    mean_err = {m: float(t[f"error_{m}_pct"].abs().mean()) for m, _ in METRICS if m != "bcr"}
    bcr_err = float(t["error_bcr_abs"].abs().mean())
    v = res["validation"]
    if v["held_out"]:
        said = (
            f"{'predicts' if res['within'] else 'does not predict'} the {v['held_out']} held-out run(s) within "
            f"+-{res['tolerance_pct']:g}% of the mean response time (worst point {res['worst_response_error_pct']:.1f}%"
        )
    else:
        said = f"not checked ({v['why']}; fit on the same runs"
    summary = [
        f"Model (discrete-event, experiments/mpl_sweep/des.py): {said}; mean absolute error: response "
        f"{mean_err['response_s']:.1f}%, execution {mean_err['exec_s']:.1f}%, MD "
        f"{mean_err['md_us']:.1f}%; BCR: mean absolute difference {bcr_err:.4f})."
        + ("" if res["within"] else " No projection: the model is shown beside the runs only when it predicts "
           "runs it was not fitted on."),
    ]  # fmt: skip
    notes = [
        f"Model calibration: {res['source']}; startup {res['startup_s']:.3f} s per job; {b}. "
        f"Fitted on the runs' mean response time of {v['fit_reps']} ({res['evaluations']} grid points"
        f"{', kept from an earlier fit of the same runs' if res['cached'] else ''}): startup_cpu_frac "
        f"{f['startup_cpu_frac']:g}, ctx_switch_us {f['ctx_switch_us']:g}, quantum_ms {f['quantum_ms']:g}; "
        f"mean absolute error of the fit {res['fit_error_pct']:.1f}%.",
        "Model projection values are the model's, not measurements: the calibrated stand-in "
        "benchmarks on more nodes (one CPU each, one rank per node), rank counts scaled by nodes / 16 "
        "above 16 nodes; they show the schemes' order under the model's assumptions, not the paper's "
        "seconds.",
    ]
    proj = res["projection"]
    if proj is None:
        return summary, notes[:1]
    for nodes in sorted(set(proj["nodes"])):
        mpl = int(proj[proj["nodes"] == nodes]["mpl"].max())
        parts = []
        for head, base in (("cc_b", "sb"), ("cc_b", "hybrid"), ("cc_s", "pb")):
            r = projected_ratio(proj, nodes, mpl, head, base)
            if math.isfinite(r):
                parts.append(f"{head}/{base} {r:.3f}")
        if parts:
            notes.append(f"Model projection, {nodes} nodes, MPL {mpl}: response-time ratios " + ", ".join(parts) + ".")
    return summary, notes
