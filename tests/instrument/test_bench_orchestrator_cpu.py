"""bench/orchestrator_cpu.py: the runs' foreign CPU read back, and a watched command's shares."""

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("orchestrator_cpu", ROOT / "bench" / "orchestrator_cpu.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def test_the_runs_records_are_summed_up(tmp_path):
    for i, (foreign, corun) in enumerate([(3.0, 0.5), (5.0, 1.5)]):
        run = tmp_path / "exp" / "runs" / f"r{i}"
        run.mkdir(parents=True)
        cpu = {"foreign_pct": foreign, "corun_pct": corun, "orchestrator_pct": 0.0, "steal_pct": None}
        (run / "metadata.json").write_text(json.dumps({"machine_cpu": cpu}))
    old = tmp_path / "exp" / "runs" / "old"  # a run from before foreign CPU was recorded
    old.mkdir()
    (old / "metadata.json").write_text(json.dumps({"machine_cpu": {"steal_pct": 1.0}}))
    out = bench.from_metadata(tmp_path)
    assert out["runs"] == 2
    assert out["summary"]["foreign_pct"] == {"mean": 4.0, "max": 5.0}
    assert out["summary"]["corun_pct"] == {"mean": 1.0, "max": 1.5}
    assert out["summary"]["steal_pct"] == {"mean": None, "max": None}


def test_a_command_without_runs_is_watched_to_its_end():
    out, rc = bench.watch([sys.executable, "-c", "import time; time.sleep(0.5)"], 0.1)
    assert rc == 0 and out["runs"] == {} and out["max_threads"] >= 1


def test_the_shares_of_all_runs_together():
    runs = {
        "a": {"wall_ticks": 100, "total": 200, "snakemake": 1, "orch": 2, "corun": 0, "foreign": 20},
        "b": {"wall_ticks": 300, "total": 600, "snakemake": 3, "orch": 2, "corun": 4, "foreign": 100},
    }
    out = bench.summarise(runs, 5)
    assert out["runs"]["a"]["snakemake_pct_cpu"] == 1.0 and out["runs"]["b"]["foreign_pct_machine"] == 16.67
    assert out["summary"]["all_runs"]["snakemake_pct_cpu"] == 1.0
    assert out["summary"]["all_runs"]["orchestration_pct_cpu"] == 1.0
    assert out["summary"]["all_runs"]["foreign_pct_machine"] == 15.0
    assert out["summary"]["corun_pct_cpu"] == {"mean": 0.67, "max": 1.33}
