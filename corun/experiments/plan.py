"""A rough duration estimate of a configuration's runs, printed with `snakemake -n`.

Per-job times are coarse models calibrated on a 2-core VM (x264 with PARSEC's options
at about 4 Mpixel/s, graph jobs at about 0.6 us per edge plus BFS, the LLC-miss kernel
at about 3 ns per access plus 0.25 ns per nop; for dynamic_io also the paper_similar and
kmeans kernels and the file-reading stand-ins at their configured time alone) plus a fixed
per-run cost of the instrument. They assume no contention: runs that contend take longer,
which is what the experiments measure, so the estimate is a lower bound.
"""

from __future__ import annotations

RUN_OVERHEAD_S = 3.0


def _x264_s(wl: dict) -> float:
    w, h = {"simlarge": (640, 360), "native": (1920, 1080)}[wl["input"]]
    return w * h * wl["frames"] / 4e6


def _graph_s(scale: int, ef: int, roots: int) -> float:
    edges = ef * 2 ** scale
    return edges * (0.6e-6 + roots * 0.02e-6)


def job_s(cfg: dict, exp: str, group: dict) -> float:
    e = cfg[exp]
    if exp == "sensitivity_ranking":
        return e["runtime_target_s"]
    if exp == "cmp_stacking":
        wl = cfg["workloads"][group["workload"]]
        return _x264_s(wl) if wl["kind"] == "x264" else _graph_s(wl["scale"], wl["edgefactor"], wl.get("roots", 8))
    if exp == "llc_miss":
        rows = e["mem_size_bytes"] // 64
        return rows * (e["iterations"] + 1) * (3e-9 + group["nops"] * 0.25e-9)
    if exp == "implicit_io":
        return _graph_s(group["scale"], group["edgefactor"], e["roots"])
    return 0.0


def dynamic_io_app_s(app: dict) -> float:
    """One job of a dynamic_io application alone (corun.experiments.dynamic_io.scaled_app)."""
    kind = app["kind"]
    if kind == "x264":
        return _x264_s(app)
    if kind == "graph":
        return _graph_s(app["scale"], app["edgefactor"], app.get("roots", 8))
    if kind == "paper_similar":  # reading and hashing at about 100 MB/s
        return (app["others"] + 1) * app["paper_bytes"] / 100e6
    if kind == "kmeans":  # re-reads the file each iteration at about 200 MB/s, 2 ns per distance term
        size = app["points"] * app["dims"] * 4
        return app["iterations"] * (size / 200e6 + app["points"] * app["dims"] * app["clusters"] * 2e-9)
    return app["alone_s"]


def _dynamic_io(cfg: dict) -> tuple[int, float]:
    """(runs, seconds): a workload's jobs spread over the cores it may use, plus each alone run."""
    from corun.experiments import dynamic_io as dio
    e = cfg["dynamic_io"]
    runs = dio.campaign(cfg)
    secs = 0.0
    for entry in runs:
        if entry["kind"] == "alone":
            secs += dynamic_io_app_s(dio.scaled_app(e, entry["app"])) + RUN_OVERHEAD_S
            continue
        apps = dio.workload_apps(cfg, entry["workload"])
        work = sum(dynamic_io_app_s(dio.scaled_app(e, a)) for a in apps)
        secs += work / max(1, min(len(apps), dio.full_load(cfg, entry["workload"]))) + RUN_OVERHEAD_S
    return len(runs), secs


def estimate(cfg: dict) -> list[dict]:
    from corun.experiments import sensitivity_ranking as sr
    from corun.experiments import stacking as st
    out = []
    for exp in cfg["experiments"]:
        if exp == "io_latency_split":
            continue  # analyses the cmp_stacking runs
        if exp == "dynamic_io":
            n, secs = _dynamic_io(cfg)
            out.append({"experiment": exp, "runs": n, "seconds": secs, "k_dropped": []})
            continue
        if exp == "sensitivity_ranking":
            runs = sr.matrix(cfg)
            secs = len(runs) * (job_s(cfg, exp, {}) + RUN_OVERHEAD_S)
        else:
            gs = st.groups(cfg, exp)
            runs = st.matrix(cfg, exp)
            secs = sum(job_s(cfg, exp, gs[g]) + RUN_OVERHEAD_S for g, _, _ in runs)
        dropped = [] if exp == "sensitivity_ranking" else st.layout(cfg, exp)["k_dropped"]
        out.append({"experiment": exp, "runs": len(runs), "seconds": secs, "k_dropped": dropped})
    return out


def describe(cfg: dict) -> str:
    rows = estimate(cfg)
    total = sum(r["seconds"] for r in rows)
    parts = ", ".join(f"{r['experiment']} {r['runs']} runs ~{_fmt(r['seconds'])}"
                      + (f" (k = {', '.join(map(str, r['k_dropped']))} dropped: more CMPs than this machine has;"
                         " plan for another with --config plan_for=NxC)"
                         if r["k_dropped"] else "") for r in rows)
    return (f"corun plan: {sum(r['runs'] for r in rows)} runs, at least {_fmt(total)} of measuring "
            f"without contention ({parts})")


def _fmt(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"
