"""CLI table and functional tests for kernels/sensitivity_ranking.c.

Every test runs against the normal build and the ASan/UBSan build.
"""

import math
import os
import subprocess
import tempfile
import time

import pytest
from kernel_helpers import (
    KERNELS,
    MIB,
    assert_help_lists,
    assert_one_line_error,
    assert_run_recorded,
    assert_version,
    builds,
    disk_backed_dir,
    kernel_runs,
    per_test_dir,
)

KERNEL = "sensitivity_ranking"


def check_whole_file_read(result):
    """The kernel read the whole file."""
    assert result["bytes_read"] == result["file_size_bytes"]


# run_ok skips where the file system cannot serve the measurement
run, run_ok = kernel_runs(KERNEL, 10, check_whole_file_read)


def write_file(path, size):
    path.write_bytes(os.urandom(size))
    return path


def probe_direct(directory):
    probe = write_file(directory / "probe.bin", 4096)
    try:
        code, _, _ = run(builds(KERNEL)["normal"], ["--file", str(probe), "--nops", "0"])
    finally:
        probe.unlink()
    return code == 0


@pytest.fixture(scope="session")
def disk_dir(built, tmp_path_factory):
    """A directory on a disk-backed file system with O_DIRECT: the pytest
    temporary directory if it qualifies (not tmpfs), else a scratch folder
    under results/.  If neither does, the pytest one, and tests skip."""
    with disk_backed_dir(tmp_path_factory.mktemp("kernels"), probe_direct) as path:
        yield path


@pytest.fixture
def data_dir(disk_dir, request):
    with per_test_dir(disk_dir, request) as path:
        yield path


# (id, args, exit code, stderr substring); {file} is an existing file,
# {dir} a directory, {missing} a path that does not exist.
CLI_CASES = [
    ("no-args", [], 2, "--file PATH is required"),
    ("file-without-value", ["--file"], 2, "--file: missing value"),
    ("unknown-long", ["--file", "{file}", "--bogus"], 2, "'--bogus'"),
    ("unknown-short", ["--file", "{file}", "-x"], 2, "'-x'"),
    ("value-on-flag", ["--file", "{file}", "--help=1"], 2, "'--help=1'"),
    ("extra-argument", ["--file", "{file}", "extra"], 2, "'extra'"),
    ("block-size-zero", ["--file", "{file}", "--block-size", "0"], 2, "--block-size: '0' (expected"),
    ("block-size-junk", ["--file", "{file}", "--block-size", "12x"], 2, "--block-size: '12x'"),
    ("block-size-empty", ["--file", "{file}", "--block-size", ""], 2, "--block-size: ''"),
    ("block-size-blank", ["--file", "{file}", "--block-size", " 4096"], 2, "--block-size: ' 4096'"),
    ("block-size-two-suffixes", ["--file", "{file}", "--block-size", "4KK"], 2, "--block-size: '4KK'"),
    ("block-size-above-1g", ["--file", "{file}", "--block-size", "2G"], 2, "--block-size: '2G'"),
    ("block-size-overflow", ["--file", "{file}", "--block-size", "99999999999999999999"], 2, "--block-size"),
    ("block-size-suffix-overflow", ["--file", "{file}", "--block-size", "9999999999999999G"], 2, "--block-size"),
    ("block-size-negative", ["--file", "{file}", "--block-size", "-4096"], 2, "--block-size: '-4096'"),
    (
        "direct-block-size-unaligned",
        ["--file", "{file}", "--block-size", "1000"],
        2,
        "--block-size: '1000' (expected a multiple of 4096",
    ),
    (
        "direct-block-size-unaligned-suffix",
        ["--file", "{file}", "--block-size", "5K", "--cache-mode", "direct"],
        2,
        "--block-size: '5K'",
    ),
    ("nops-negative", ["--file", "{file}", "--nops", "-1"], 2, "--nops: '-1' (expected an integer >= 0)"),
    ("nops-fraction", ["--file", "{file}", "--nops", "1.5"], 2, "--nops: '1.5'"),
    ("nops-no-suffix", ["--file", "{file}", "--nops", "5K"], 2, "--nops: '5K'"),
    (
        "cache-mode-unknown",
        ["--file", "{file}", "--cache-mode", "foo"],
        2,
        "--cache-mode: 'foo' (expected direct or evict)",
    ),
    ("missing-file", ["--file", "{missing}"], 1, "No such file"),
    ("directory", ["--file", "{dir}", "--cache-mode", "evict"], 1, "not a regular file"),
    ("directory-direct", ["--file", "{dir}"], 1, "not a regular file"),
]

# what --help must name: every option, its unit and its default
HELP = (
    "--file PATH",
    "--block-size BYTES", "default 65536",
    "--nops N", "default 5000",
    "--cache-mode MODE", "default direct",
    "--version",
)  # fmt: skip


@pytest.mark.parametrize("args, code, message", [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_cli_errors(binary, tmp_path, args, code, message):
    existing = write_file(tmp_path / "data.bin", 8192)
    fill = {"file": existing, "dir": tmp_path, "missing": tmp_path / "does-not-exist"}
    args = [a.format(**fill) for a in args]
    assert_one_line_error(KERNEL, run(binary, args), code, message)


def test_help_lists_units_and_defaults(binary):
    assert_help_lists(run(binary, ["--help"]), HELP)


def test_version_option_prints_the_kernel_name(binary):
    assert_version(KERNEL, run(binary, ["--version"]))


@pytest.mark.parametrize("block_arg, block_size", [("65536", 65536), ("4K", 4096), ("1M", MIB)])
def test_direct_reads_file_once(binary, data_dir, block_arg, block_size):
    size = MIB + 123  # not a block multiple: the last read is short
    path = write_file(data_dir / "data.bin", size)
    args = ["--file", str(path), "--block-size", block_arg, "--nops", "10"]
    before = time.time()
    result = run_ok(binary, args)
    after = time.time()

    assert result["params"] == {"file": str(path), "block_size": block_size, "nops": 10, "cache_mode": "direct"}
    assert result["file_size_bytes"] == result["bytes_read"] == size
    assert result["reads"] == math.ceil(size / block_size)
    assert result["file_pages"] == math.ceil(size / os.sysconf("SC_PAGESIZE"))
    assert 0 <= result["resident_pages_at_start"] <= result["file_pages"]
    assert result["elapsed_s"] > 0
    assert result["bw_mb_s"] == pytest.approx(size / 1e6 / result["elapsed_s"])
    assert result["bw_mb_s"] > 0

    assert_run_recorded(KERNEL, result, binary, args, before, after)


def test_defaults_without_options(binary, data_dir):
    path = write_file(data_dir / "data.bin", MIB + 123)
    result = run_ok(binary, ["--file", str(path)])
    assert result["params"] == {"file": str(path), "block_size": 65536, "nops": 5000, "cache_mode": "direct"}
    assert result["reads"] == 17


@pytest.mark.parametrize("block_size", [32, 1000])
def test_evict_drops_cached_pages(binary, data_dir, block_size):
    # Just written, so cached: the kernel has to evict the pages itself.
    size = 64 * 1024 + 7
    path = write_file(data_dir / "data.bin", size)
    result = run_ok(
        binary, ["--file", str(path), "--cache-mode", "evict", "--block-size", str(block_size), "--nops", "10"]
    )
    assert result["params"]["cache_mode"] == "evict"
    assert result["resident_pages_at_start"] == 0
    assert result["bytes_read"] == size
    assert result["reads"] == math.ceil(size / block_size)
    assert result["bw_mb_s"] > 0


@pytest.mark.parametrize("mode", ["direct", "evict"])
def test_empty_file(binary, data_dir, mode):
    path = data_dir / "empty.bin"
    path.touch()
    result = run_ok(binary, ["--file", str(path), "--cache-mode", mode])
    assert (result["bytes_read"], result["reads"], result["file_pages"]) == (0, 0, 0)
    assert result["resident_pages_at_start"] == 0


def test_nops_increase_runtime(binary, data_dir):
    path = write_file(data_dir / "data.bin", 64 * 1024)
    common = ["--file", str(path), "--cache-mode", "evict", "--block-size", "4096"]
    fast = run_ok(binary, [*common, "--nops", "0"])
    slow = run_ok(binary, [*common, "--nops", "5000000"])  # 16 reads x 5e6
    assert fast["reads"] == slow["reads"] == 16
    assert slow["elapsed_s"] > fast["elapsed_s"]
    assert slow["bw_mb_s"] < fast["bw_mb_s"]


def test_json_escapes_file_name(binary, data_dir):
    # Quote, backslash, control characters, non-ASCII, and a byte that is
    # not UTF-8 (written as U+FFFD so the output stays valid JSON).
    name = 'we"ird\\na\tme\n\x01-\u00e9-\udcff.bin'
    path = data_dir / name
    write_file(path, 5000)
    raw = os.fsencode(path)
    result = run_ok(binary, [b"--file", raw, b"--cache-mode", b"evict", b"--block-size", b"1K", b"--nops", b"0"])
    shown = str(path).replace("\udcff", "\ufffd")
    assert result["params"]["file"] == shown
    assert result["cmdline"][1:3] == ["--file", shown]
    assert result["reads"] == 5


def tmpfs_mounts():
    with open("/proc/self/mounts", encoding="utf-8") as mounts:
        return {line.split()[1] for line in mounts if line.split()[2] in ("tmpfs", "ramfs")}


@pytest.mark.parametrize("mode", ["direct", "evict"])
def test_tmpfs_is_skipped(binary, mode):
    if "/dev/shm" not in tmpfs_mounts() or not os.access("/dev/shm", os.W_OK):
        pytest.skip("no writable tmpfs at /dev/shm")
    with tempfile.NamedTemporaryFile(dir="/dev/shm") as data:
        data.write(b"x" * 8192)
        data.flush()
        code, out, err = run(binary, ["--file", data.name, "--cache-mode", mode])
    assert (code, out) == (4, b""), err
    assert f"skipped: {data.name} is on tmpfs or ramfs" in err


@pytest.mark.parametrize("target", ["all", "asan"])
def test_make_is_idempotent(built, target):
    # make -q exits 0 only when nothing would be rebuilt.
    proc = subprocess.run(["make", "-q", "-C", str(KERNELS), target], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
