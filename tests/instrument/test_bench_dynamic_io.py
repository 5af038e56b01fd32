"""bench/dynamic_io_throughput.py: argument handling only (the benchmark itself measures)."""

import importlib.util
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("dynamic_io_throughput", ROOT / "bench" / "dynamic_io_throughput.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--workload", "w07"], "--workload: 'w07' (expected a D-TYPE explicit-I/O workload"),
        (["--reps", "1"], "--reps: 1 (expected an integer >= 2"),
        (["--throttle-mbps", "-1"], "--throttle-mbps: -1.0 (expected a number >= 0 (0: no cap))"),
        (["--disk", "floppy"], "dynamic_io.device.rotating_disk.preset: 'floppy' (expected a preset name"),
        (["--set", "apps.km.threads"], "--set: 'apps.km.threads' (expected KEY=VALUE"),
        (["--set", "apps.km.thread=1"], "dynamic_io.apps.km.thread: 'unknown key' (expected one of"),
        (["--io-bound-mbps", "nan"], "--io-bound-mbps: nan"),
        (["--variant", "linux"], "--variant: 'linux' (expected a variant other than the baseline"),
        (["--results", "/tmp/x"], "--results: '/tmp/x' (expected a folder relative to the repository"),
        (["--timeslice-s", "100"], "dynamic_io.timeslice_s: 100.0 (expected a number <= 60)"),
        (["--scale", "2"], "dynamic_io.scale: 2.0 (expected a number <= 1)"),
    ],
)
def test_bad_options_are_one_line_and_run_nothing(args, message, capsys):
    assert bench.main([*args, "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dynamic_io_throughput: ") and message in err and err.count("\n") == 1, err


def test_dry_run_prints_the_config_and_command(capsys):
    assert bench.main(["--workload", "w04", "--reps", "3", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "workloads:\n  - w04" in out and "read_bps: 8000000" in out and "reps: 3" in out
    assert "--profile workflows/profiles/local" in out
    assert "results/bench-dynamic_io/dynamic_io/analysis/section.json" in out


def test_disk_options_reach_the_config(capsys):
    args = ["--workload", "w06", "--disk", "sas_15k_2010", "--keep-io-running", "1"]
    assert bench.main([*args, "--set", "device.rotating_disk.queue_window=1", "--dry-run"]) == 0
    cfg = yaml.safe_load(capsys.readouterr().out.rsplit("\n", 2)[0])
    sec = cfg["dynamic_io"]
    assert sec["throttle"] is None  # no cap by default on the disk
    assert sec["device"] == {"kind": "rotating_disk", "rotating_disk": {"preset": "sas_15k_2010", "queue_window": 1}}
    assert sec["variant_params"] == {"dynamic_io": {"keep_io_running": 1}}


def test_unknown_option_is_a_usage_error():
    with pytest.raises(SystemExit) as ei:
        bench.main(["--bogus"])
    assert ei.value.code == 2


def test_without_disk_options_nothing_of_local_yaml_disk_campaign_remains():
    """The bench's section is merged over local.yaml, whose dynamic_io runs on the emulated disk
    with its own sizes and keep_io_running: the bench's defaults undo all of it."""
    from snakemake.utils import update_config

    from experiments.config import profile_config, validate_config

    a = bench.parse(["--workload", "w06"])
    bench.check(a)
    merged = profile_config(ROOT / "workflows" / "config" / "local.yaml")
    update_config(merged, bench.bench_config(a))
    sec = validate_config(merged, "merged")["dynamic_io"]
    assert sec["device"]["kind"] == "throttle" and sec["throttle"] == {"read_bps": 8000000}
    assert sec["variant_params"]["dynamic_io"] == {"keep_io_running": 0}
    assert (sec["apps"]["km"]["threads"], sec["apps"]["km"]["points"], sec["apps"]["x264"]["frames"]) == (
        8,
        2000000,
        128,
    )
    assert sec["variants"] == ["linux", "dynamic_io"]
