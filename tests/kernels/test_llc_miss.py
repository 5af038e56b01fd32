"""CLI table and functional tests for kernels/llc_miss.c.

Every test runs against the normal build and the ASan/UBSan build.
"""

import subprocess
import time

import pytest
from kernel_helpers import (
    MIB,
    assert_help_lists,
    assert_one_line_error,
    assert_run_recorded,
    assert_version,
    kernel_runs,
)

KERNEL = "llc_miss"


def check_accesses(result):
    """Every row is read once per iteration."""
    assert result["accesses"] == result["rows"] * result["params"]["iterations"]


# run_ok skips where the machine does not tell its cache line size
run, run_ok = kernel_runs(KERNEL, 20, check_accesses, quiet=True)


# (id, args, exit code, stderr substring)
CLI_CASES = [
    ("unknown-long", ["--bogus"], 2, "invalid option '--bogus'"),
    ("unknown-short", ["-x"], 2, "invalid option '-x'"),
    ("value-on-flag", ["--version=1"], 2, "'--version=1'"),
    ("extra-argument", ["extra"], 2, "unexpected argument 'extra'"),
    ("mem-size-without-value", ["--mem-size"], 2, "--mem-size: missing value"),
    ("mem-size-zero", ["--mem-size", "0"], 2, "--mem-size: '0' (expected an integer from 1 to"),
    ("mem-size-junk", ["--mem-size", "64X"], 2, "--mem-size: '64X'"),
    ("mem-size-empty", ["--mem-size", ""], 2, "--mem-size: ''"),
    ("mem-size-negative", ["--mem-size", "-1M"], 2, "--mem-size: '-1M'"),
    ("mem-size-above-1t", ["--mem-size", "1025G"], 2, "--mem-size: '1025G'"),
    ("mem-size-below-line", ["--mem-size", "32"], 2, "--mem-size: '32' (expected at least the line size, 64 bytes)"),
    (
        "mem-size-below-given-line",
        ["--mem-size", "1K", "--line-size", "4096"],
        2,
        "--mem-size: '1K' (expected at least the line size, 4096 bytes)",
    ),
    (
        "line-size-not-power-of-two",
        ["--line-size", "48"],
        2,
        "--line-size: '48' (expected 0 or a power of two from 4 to 65536)",
    ),
    ("line-size-too-small", ["--line-size", "2"], 2, "--line-size: '2'"),
    ("line-size-too-large", ["--line-size", "131072"], 2, "--line-size: '131072'"),
    ("line-size-negative", ["--line-size", "-64"], 2, "--line-size: '-64'"),
    ("line-size-no-suffix", ["--line-size", "1K"], 2, "--line-size: '1K'"),
    ("nops-negative", ["--nops", "-1"], 2, "--nops: '-1' (expected an integer >= 0)"),
    ("nops-fraction", ["--nops", "0.5"], 2, "--nops: '0.5'"),
    ("iterations-zero", ["--iterations", "0"], 2, "--iterations: '0' (expected an integer from 1 to 1000000000)"),
    ("iterations-junk", ["--iterations", "ten"], 2, "--iterations: 'ten'"),
    ("warmup-negative", ["--warmup-iterations", "-1"], 2, "--warmup-iterations: '-1' (expected an integer from 0 to"),
    # Checked before anything is allocated.
    (
        "accesses-overflow",
        ["--mem-size", "1024G", "--line-size", "4", "--iterations", "1000000000"],
        2,
        "--iterations: '1000000000' (expected at most",
    ),
]

# what --help must name: every option, its unit and its default
HELP = (
    "--mem-size BYTES", "default 64M",
    "--line-size BYTES", "(default 64)",
    "--nops N", "(default 0)",
    "--iterations N", "(default 10)",
    "--warmup-iterations N", "(default 1)",
    "--version",
)  # fmt: skip


@pytest.mark.parametrize("args, code, message", [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_cli_errors(binary, args, code, message):
    assert_one_line_error(KERNEL, run(binary, args), code, message)


def test_help_lists_units_and_defaults(binary):
    assert_help_lists(run(binary, ["--help"]), HELP)


def test_version_option_prints_the_kernel_name(binary):
    assert_version(KERNEL, run(binary, ["--version"]))


def test_result_fields(binary):
    args = ["--mem-size", "1M", "--iterations", "3", "--nops", "2", "--warmup-iterations", "0"]
    before = time.time()
    result = run_ok(binary, args)
    after = time.time()

    assert result["params"] == {"mem_size": MIB, "line_size": 64, "nops": 2, "iterations": 3, "warmup_iterations": 0}
    assert result["line_size_source"] == "option"
    assert result["rows"] == MIB // 64
    assert result["accesses"] == 3 * MIB // 64
    assert result["elapsed_s"] > 0
    assert result["accesses_per_s"] == pytest.approx(result["accesses"] / result["elapsed_s"])
    assert result["ns_per_access"] == pytest.approx(result["elapsed_s"] * 1e9 / result["accesses"])

    assert_run_recorded(KERNEL, result, binary, args, before, after)


def test_defaults_without_options(binary):
    result = run_ok(binary, [])
    assert result["params"] == {
        "mem_size": 64 * MIB,
        "line_size": 64,
        "nops": 0,
        "iterations": 10,
        "warmup_iterations": 1,
    }
    assert result["rows"] == MIB
    assert result["accesses"] == 10 * MIB


@pytest.mark.parametrize(
    "mem_arg, line, rows",
    [
        ("1000", 64, 15),  # a partial last row is not used
        ("64", 64, 1),  # a single row
        ("256K", 4, 65536),  # one int per row: every int copied
        ("1M", 4096, 256),  # one row per page
    ],
)
def test_rows_follow_mem_size_and_line_size(binary, mem_arg, line, rows):
    result = run_ok(binary, ["--mem-size", mem_arg, "--line-size", str(line), "--iterations", "2"])
    assert result["params"]["line_size"] == line
    assert result["rows"] == rows
    assert result["accesses"] == 2 * rows


def glibc_line_size():
    """sysconf(_SC_LEVEL1_DCACHE_LINESIZE) as getconf reports it (Python's
    os.sysconf does not know the name); 0 if unknown."""
    try:
        proc = subprocess.run(["getconf", "LEVEL1_DCACHE_LINESIZE"], capture_output=True, text=True)
    except FileNotFoundError:
        return 0
    try:
        return int(proc.stdout.strip()) if proc.returncode == 0 else 0
    except ValueError:
        return 0


def test_line_size_detected(binary):
    result = run_ok(binary, ["--line-size", "0", "--mem-size", "64K", "--iterations", "1"])
    assert result["line_size_source"] in ("sysconf", "sysfs")
    line = result["params"]["line_size"]
    assert line >= 4 and line & (line - 1) == 0
    expected = glibc_line_size()
    if expected > 0:
        assert (line, result["line_size_source"]) == (expected, "sysconf")
    assert result["rows"] == 64 * 1024 // line


def test_more_nops_fewer_accesses_per_second(binary):
    common = ["--mem-size", "256K", "--iterations", "2"]
    fast = run_ok(binary, [*common, "--nops", "0"])
    slow = run_ok(binary, [*common, "--nops", "2000"])  # 8192 x 2000 nops
    assert fast["accesses"] == slow["accesses"] == 8192
    assert slow["elapsed_s"] > fast["elapsed_s"]
    assert slow["accesses_per_s"] < fast["accesses_per_s"]
    assert slow["ns_per_access"] > fast["ns_per_access"]
