"""The Snakemake workflow: lint, one-line config errors, and a real smoke run of every experiment."""

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import upstream_jobs

BIN = Path(sys.executable).parent
SMK = str(BIN / "snakemake")


def smk(repo_root, *args, **kw):
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run([SMK, *args], cwd=repo_root, capture_output=True, text=True, env=env, **kw)


def test_lint_has_only_the_environment_lint(repo_root):
    """Rules use the pinned .venv and Ansible-provisioned tools, not conda or containers."""
    res = smk(repo_root, "--lint")
    lints = [ln.strip() for ln in res.stdout.splitlines() + res.stderr.splitlines() if ln.strip().startswith("* ")]
    assert lints, res.stdout + res.stderr  # the linter ran
    others = [ln for ln in lints if "conda environment or container" not in ln]
    assert others == [], others


def test_snakefmt_clean(repo_root):
    res = subprocess.run(
        [str(BIN / "snakefmt"), "--check", "Snakefile", "workflows/rules"],
        cwd=repo_root,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr


def test_bad_config_is_one_line_and_runs_nothing(repo_root, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("results_dir: results/test-bad\nsensitivity_ranking:\n  reps: 0\n")
    res = smk(repo_root, "all", "--profile", "workflows/profiles/smoke", "--configfile", str(bad))
    assert res.returncode != 0
    line = [ln for ln in res.stderr.splitlines() if ln.startswith("corun: ")]
    assert len(line) == 1 and "sensitivity_ranking.reps: 0 (expected an integer >= 1)" in line[0]
    assert str(bad) in line[0]
    assert not (repo_root / "results" / "test-bad").exists()


def test_paper_profile_plans_on_a_clone_never_provisioned(repo_root, tmp_path):
    """The README's dry run needs no build: the kernels a clone lacks are planned as jobs."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=repo_root, capture_output=True, check=True).stdout
    clone = tmp_path / "clone"
    for name in files.decode().split("\0"):
        if name and (repo_root / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(repo_root / name, clone / name)
    assert not (clone / "kernels" / "build").exists()
    res = smk(clone, "--profile", "workflows/profiles/paper", "-n", "all")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "rule build_kernel:" in res.stdout and "kernels/build/sensitivity_ranking" in res.stdout
    assert "rule run:" in res.stdout and "exp=sensitivity_ranking" in res.stdout


def test_every_experiment_plans_on_other_hosts(repo_root):
    """all_hosts repeats every experiment's runs on each host; each needs its own data step's file."""
    res = smk(repo_root, "-n", "all_hosts", "--config", 'hosts=["localhost"]')
    assert res.returncode == 0, res.stderr[-2000:]
    for exp in ("sensitivity_ranking", "dynamic_io", "noisy_neighbour"):
        assert f"hosts/localhost/{exp}/runs/" in res.stdout, exp
    assert "hosts/localhost/mpl_sweep" not in res.stdout  # its runs span hosts by themselves


@pytest.mark.root
@pytest.mark.timeout(1800)  # the smoke campaign, runs sized in time: about 9 min alone here
def test_smoke_run_end_to_end_then_nothing_to_redo(repo_root):
    out = repo_root / "results" / "test-smoke"
    shutil.rmtree(out, ignore_errors=True)
    cfg = ["--config", f"results_dir={out.relative_to(repo_root)}", f"data_dir={out.relative_to(repo_root)}/data"]
    res = smk(repo_root, "all", "--profile", "workflows/profiles/smoke", *cfg)
    assert res.returncode == 0, res.stderr[-3000:]
    report = (out / "report.html").read_text()
    assert "data:image/png;base64," in report
    assert "5.63" in report  # the paper's threshold beside ours
    assert "missing" in report.lower()
    section = json.loads((out / "sensitivity_ranking" / "analysis" / "section.json").read_text())
    assert {r["claim"] for r in section["claims"]} == {
        "degradation_rises_with_demand", "onset_falls_with_demand", "low_demand_not_degraded",
        "highest_demand_degrades_at_2c", "compute_only_not_degraded"}  # fmt: skip
    dio = json.loads((out / "dynamic_io" / "analysis" / "section.json").read_text())
    assert {"d_explicit_throughput", "m_throughput"} <= {r["claim"] for r in dio["claims"]}  # section 4, judged
    campaign = json.loads((out / "dynamic_io" / "specs" / "campaign.json").read_text())["order"]
    assert all((out / "dynamic_io" / "runs" / e["name"] / "metadata.json").exists() for e in campaign)
    nn = json.loads((out / "noisy_neighbour" / "analysis" / "section.json").read_text())
    rows = {r["claim"]: r for r in nn["claims"]}  # paper 003's claims, judged by the engine
    assert {"smt_mixed_over_same_type", "numa_spread_over_concentrate", "cfs_pairs_same_types"} <= set(rows)
    numa = rows["numa_spread_over_concentrate"]
    assert numa["outcome"] == "not measurable here" or numa["n"] > 0
    mpl = json.loads((out / "mpl_sweep" / "analysis" / "section.json").read_text())
    rows = {r["claim"]: r for r in mpl["claims"]}  # paper 001's claims, judged by the engine
    assert rows["cc_b_over_sb_response"]["paper_value"].startswith("-36.6 %")
    assert rows["cc_b_over_sb_response"]["n"] > 0
    for run in (out / "mpl_sweep" / "runs").iterdir():  # one daemon per host, each with its summary
        meta = json.loads((run / "metadata.json").read_text())
        assert [d["host"] for d in meta["cluster"]["daemons"]] == ["cormpls-n1", "cormpls-n2"]
        assert all("missing" not in d and d["wait_mode_mismatches"] == 0 for d in meta["cluster"]["daemons"])
    assert not (out / "mpl_sweep" / "netns").exists()  # each run's netns cluster was removed
    assert "cormpls" not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    sa = json.loads((out / "sais" / "analysis" / "section.json").read_text())
    rows = {r["claim"]: r for r in sa["claims"]}  # paper 004's claims, judged by the engine
    assert "comparison" not in sa and rows["speedup_1gbe_rfs"]["paper_value"].startswith("6.05 %")
    # the netns cluster's veth links have no NIC interrupts to steer: sec. 5's claims say so
    for cid in ("gain_in_all_cases_rfs", "unhalted_larger_1gbe_rfs"):
        assert rows[cid]["outcome"] == "not measurable here" and "physical NICs" in rows[cid]["why"], rows[cid]
    assert rows["inmem_speedup"]["n"] == 2  # sec. 6's in-memory study needs no NIC: its pm runs, judged
    pts = (out / "sais" / "analysis" / "points.csv").read_text()
    assert "irqbalance" in pts and "source_aware" in pts
    assert "softirq_pct" in (out / "sais" / "analysis" / "per_cpu.csv").read_text()
    assert "eq9_difference_lower_s" in (out / "sais" / "analysis" / "model.csv").read_text()
    metas = list((out / "sais" / "runs").glob("s2_l1_h2_*/metadata.json"))  # two client hosts at once
    assert len(metas) == 6 and all(json.loads(m.read_text())["scheduler"]["verified"] for m in metas)
    marks = list((out / "sais" / "runs").glob("s2_l1_h2_sais_mark_*/sched/state/sais_mark_counters.json"))
    assert len(marks) == 2  # sais_mark ran on the netns file system, and its replies were steered
    assert all(json.loads(m.read_text())["totals"]["steered"] > 0 for m in marks)
    with open(out / "sais" / "jobs.csv", newline="") as f:
        reads = [r for r in csv.DictReader(f) if r["kind"] == "read"]
    assert {float(r["client_host"]) for r in reads} == {0, 1}  # a reader on each client host
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert "sais-n" not in ns  # the workflow's cluster is gone
    assert not list((out / "sais" / "work").glob("*/pfs/pfs.journal.json"))  # and the file system
    ai = json.loads((out / "aioli" / "analysis" / "section.json").read_text())
    rows = {r["claim"]: r for r in ai["claims"]}  # paper 002's claims, judged by the engine
    assert rows["aioli_aggregates_reads"]["paper_value"].startswith("2.8 ")
    assert "pfs_fifo,strided,read" in (out / "aioli" / "analysis" / "points.csv").read_text()
    assert len(list((out / "aioli" / "runs").glob("s2_*/pfs_counters.json"))) == 4
    assert "aioli-n" not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not list((out / "aioli" / "work").glob("*/pfs/pfs.journal.json"))
    aioli_run = next((out / "aioli" / "runs").glob("s2_aioli_strided_read_*"))
    counters = json.loads((aioli_run / "pfs_counters.json").read_text())
    after = counters["after"]["servers"]
    assert len(after) == 2 and all(s["disk"]["timed"] for s in after)  # bricks on emulated disks
    read = sum(s["disk"]["counters"]["bytes_read"] for s in after)
    read -= sum(s["disk"]["counters"]["bytes_read"] for s in counters["before"]["servers"])
    assert read >= 4 << 20  # O_DIRECT bricks: the clients' reads reached the disks
    sched = json.loads((aioli_run / "metadata.json").read_text())["scheduler"]
    assert sched["verified"] and sched["verified_at_end"], sched  # the policy held from start to end
    # read after the variant's stop restored fifo, which keeps the counters
    assert all(s["sched"]["counters"]["dispatches"] > 0 for s in after), [s["sched"] for s in after]
    assert not any("translator" in m["reason"] for m in ai["missing"]), ai["missing"]
    # the slides' aggregation is judged at their 32 clients, which the smoke profile does not run;
    # a claim on the points it runs is judged on its 2 reps
    assert rows["aioli_aggregates_reads"]["outcome"] == "not run in this profile", rows["aioli_aggregates_reads"]
    assert rows["aggregation_below_possible"]["n"] == 2 and rows["aggregation_below_possible"]["estimate"] > 0
    gluster = subprocess.run(["pgrep", "-af", "glusterfs|corun-rotating-disk"], capture_output=True, text=True)
    assert str(out) not in gluster.stdout  # no server or emulator of the run is left
    assert str(out) not in Path("/proc/mounts").read_text()
    assert str(out) not in subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    # the graph rows on Graph500, mpl_sweep on NPB, sais and aioli on IOR, each with its pin
    # where its role built it (a labelled stand-in otherwise): tests/upstream_jobs.py
    for experiment in upstream_jobs.CHECKS:
        print(upstream_jobs.check(out, experiment))
    runs = sorted((out / "sensitivity_ranking" / "runs").iterdir())
    assert runs and all((r / "metadata.json").exists() for r in runs)
    assert not list((out / "sensitivity_ranking" / "runs").glob("*.incomplete"))
    stamp = {r: (r / "metadata.json").stat().st_mtime for r in runs}
    res = smk(repo_root, "all", "--profile", "workflows/profiles/smoke", *cfg)
    assert res.returncode == 0
    assert "Nothing to be done" in res.stdout + res.stderr
    assert stamp == {r: (r / "metadata.json").stat().st_mtime for r in runs}
    shutil.rmtree(out, ignore_errors=True)


def test_a_run_takes_the_manifests_of_its_variants_as_inputs(repo_root, tmp_path):
    """An edited manifest is an input that changed: the runs of that variant are measured again,
    the others not (corun.plan.base.Experiment.run_variants)."""
    extra = tmp_path / "extra.yaml"
    extra.write_text(f"results_dir: {tmp_path}/r\ndata_dir: {tmp_path}/d\nexperiments: [mpl_sweep, aioli]\n")
    res = subprocess.run(
        [
            str(repo_root / ".venv/bin/snakemake"),
            "-n",
            "all",
            "--profile",
            "workflows/profiles/smoke",
            "--configfile",
            "workflows/config/smoke.yaml",
            str(extra),
        ],
        cwd=repo_root,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    jobs = re.split(r"\n(?=rule )", res.stdout)  # one chunk per job, whichever logger printed them
    # mpl_sweep's runs on the smoke profile's netns cluster are one group: its step takes every
    # variant's manifests, and the group's runner measures again only the runs older than their
    # own (run_inputs in groups.json: tests/testbed/test_pfs_companion_runs.py)
    mpl = next(j for j in jobs if "rule run_groups:" in j and "exp=mpl_sweep" in j)
    assert "schedulers/mpi_cosched/manifest.yaml" in mpl
    group = next(j for j in jobs if "rule run_groups:" in j and "exp=aioli" in j)
    assert "schedulers/aioli/manifest.yaml" in group and "mpi_cosched" not in group
