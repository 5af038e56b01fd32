"""CLI table and functional tests for kernels/sais_inmem.c (the in-memory study of paper 004).

Every test runs against the normal build and the ASan/UBSan build.
"""

import subprocess
import time

import pytest
from kernel_helpers import ENV, assert_one_line_error, json_result, run_kernel

KERNEL = "sais_inmem"
SMALL = ["--file-size", "1M", "--duration-s", "0.2", "--warmup-s", "0.05"]


def run(binary, args, timeout=60):
    return run_kernel(binary, args, timeout)


CLI_CASES = [
    ("mode-unknown", ["--mode", "fiber"], "--mode: 'fiber' (expected thread or process)"),
    ("pin-unknown", ["--pin", "cpu0"], "--pin: 'cpu0' (expected auto, same or none)"),
    ("apps-zero", ["--apps", "0"], "--apps: '0' (expected an integer from 1 to 256)"),
    ("files-junk", ["--files", "8x"], "--files: '8x'"),
    ("strip-too-small", ["--strip-size", "1K"], "--strip-size: '1K'"),
    ("strip-not-words", ["--strip-size", "4100"], "--strip-size: '4100' (expected a multiple of 8)"),
    (
        "request-not-strips",
        ["--request-size", "100000"],
        "--request-size: '100000' (expected a multiple of --strip-size 65536)",
    ),
    ("file-not-strips", ["--file-size", "100000"], "--file-size: '100000' (expected a multiple"),
    ("duration-zero", ["--duration-s", "0"], "--duration-s: '0'"),
    ("warmup-negative", ["--warmup-s", "-1"], "--warmup-s: '-1'"),
    ("unknown-long", ["--bogus"], "'--bogus'"),
    ("operand", ["extra"], "'extra'"),
]


@pytest.mark.parametrize("args, message", [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_cli_errors(binary, args, message):
    assert_one_line_error(KERNEL, run(binary, args), 2, message)


def test_missing_dir_is_a_runtime_error(binary, tmp_path):
    code, out, err = run(binary, ["--dir", tmp_path / "absent", *SMALL])
    assert (code, out) == (1, b"")
    assert "cannot create" in err and err.count("\n") == 1


@pytest.mark.parametrize("mode, stands_for, pin", [("thread", "Si-SAIs", "same"), ("process", "Si-Irqbalance", "none")])
def test_result_fields(binary, tmp_path, mode, stands_for, pin):
    code, out, err = run(binary, ["--mode", mode, "--apps", "2", "--dir", tmp_path, *SMALL])
    assert code == 0, err
    r = json_result(out)
    assert (r["kernel"], r["mode"], r["stands_for"], r["pin"]) == ("sais_inmem", mode, stands_for, pin)
    assert r["apps"] == 2 and len(r["per_app"]) == 2
    assert r["strip_size_bytes"] == 65536 and r["request_size_bytes"] == 1048576
    assert r["bw_mb_s"] > 0 and r["requests"] > 0
    assert r["bytes"] == r["requests"] * 1048576
    assert r["strips"] == r["requests"] * 16
    assert 0 <= r["same_cpu_share"] <= 1
    for key in ("cpu_util_user_pct", "cpu_util_sys_pct", "kernel_release", "host", "cmdline"):
        assert key in r
    for app in r["per_app"]:
        for w in ("reader", "assembler"):
            assert set(app[w]) >= {"user_s", "sys_s", "cpu_util_pct", "strips", "strips_per_cpu"}
            assert sum(app[w]["strips_per_cpu"].values()) == app[w]["strips"]
    if mode == "thread":  # both workers of an application pinned to one CPU
        assert [a["cpu"] for a in r["per_app"]] == [0, 1 % r["online_cpus"]]
        assert r["same_cpu_share"] == 1
    # a counter the machine cannot read is null with perf's reason, never 0
    if r["cache_misses"] is None:
        assert r["cache_misses_missing"].startswith("perf_event_open")
    assert r["l2_misses"] is None and r["l2_misses_missing"]
    assert list(tmp_path.iterdir()) == []  # the files are removed


def test_corrupted_strip_fails_the_self_check(binary, tmp_path):
    """Overwrite a word of one file while the kernel runs: it must notice."""
    proc = subprocess.Popen(
        [
            str(binary),
            "--dir",
            str(tmp_path),
            "--files",
            "2",
            "--file-size",
            "256K",
            "--duration-s",
            "20",
            "--warmup-s",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
    )
    try:
        deadline = time.monotonic() + 10
        files = []
        while time.monotonic() < deadline and len(files) < 2:
            files = sorted(tmp_path.glob("sais_inmem.*"))
            time.sleep(0.05)
        time.sleep(0.3)  # let the files be written in full
        with open(files[1], "r+b") as f:
            f.seek(8 * 1000)
            f.write(b"\xff" * 8)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1 and out == b"", err
    assert "self-check failed: assembled data differs at logical byte" in err.decode()
    assert list(tmp_path.iterdir()) == []
