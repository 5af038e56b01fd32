"""pfs_read's command line (the file system itself is exercised in tests/testbed/test_pfs.py)."""

import subprocess

import pytest
from kernel_helpers import ENV, assert_help_lists, assert_one_line_error

KERNEL = "pfs_read"

pytestmark = pytest.mark.skipif(
    subprocess.run(["pkg-config", "--exists", "glusterfs-api"]).returncode != 0,
    reason="gfapi (libglusterfs-dev) not installed: pfs_read is not built",
)


def run(binary, args):
    proc = subprocess.run([str(binary), *args], capture_output=True, timeout=60, env=ENV)
    return proc.returncode, proc.stdout, proc.stderr.decode()


V = ["--volfile", "{vol}"]
CLI_CASES = [
    ("no-args", [], 2, "--volfile PATH is required"),
    ("transfer-not-8", V + ["--transfer-size", "1001"], 2, "--transfer-size: '1001' (expected a multiple of 8"),
    (
        "block-not-multiple",
        V + ["--transfer-size", "192K", "--block-size", "1M"],
        2,
        "--block-size: '1048576' (expected a multiple of --transfer-size 196608)",
    ),
    ("strip-zero", V + ["--strip-size", "0"], 2, "--strip-size: '0'"),
    ("tasks-big", V + ["--tasks", "257"], 2, "--tasks: '257'"),
    ("relative-file", V + ["--file", "x.dat"], 2, "--file: 'x.dat' (expected an absolute name"),
    ("check-without-read", V + ["--write", "--check"], 2, "--check: (expected together with --read)"),
    ("operand", V + ["extra"], 2, "'extra'"),
    ("unknown-long", V + ["--bogus"], 2, "'--bogus'"),
    ("missing-volfile", ["--volfile", "{missing}"], 1, "cannot"),
    ("pattern-bad", V + ["--pattern", "random"], 2, "--pattern: 'random' (expected strided or contiguous)"),
    ("rank-without-ranks", V + ["--rank", "1"], 2, "--rank: '1' (expected together with --ranks)"),
    ("rank-past-ranks", V + ["--rank", "3", "--ranks", "4", "--tasks", "2"], 2, "--ranks: '4' (expected at least"),
    ("ranks-zero", V + ["--ranks", "0"], 2, "--ranks: '0'"),
    ("app-negative", V + ["--app", "-1"], 2, "--app: '-1'"),
    ("barrier-alone", V + ["--barrier", "/tmp/b"], 2, "--barrier: (expected together with --barrier-count)"),
    ("barrier-relative", V + ["--barrier", "b", "--barrier-count", "2"], 2, "--barrier: 'b' (expected an absolute"),
    ("request-size-not-8", V + ["--request-size", "1001"], 2, "--transfer-size: '1001' (expected a multiple of 8"),
]


@pytest.mark.parametrize("args, code, message", [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_cli_errors(binary, tmp_path, args, code, message):
    vol = tmp_path / "s.vol"
    vol.write_text("volume s\n    type protocol/client\nend-volume\n")
    fill = {"vol": vol, "missing": tmp_path / "absent.vol"}
    assert_one_line_error(KERNEL, run(binary, [a.format(**fill) for a in args]), code, message)


def test_help_lists_units_and_defaults(binary):
    assert_help_lists(
        run(binary, ["--help"]),
        (
            "--strip-size BYTES",
            "default 64K",
            "--transfer-size BYTES",
            "default 1M",
            "default 16M",
            "--compute-passes N",
            "--file-per-process",
            "--pattern P",
            "--rank R",
            "--ranks N",
            "--request-size BYTES",
            "--app ID",
            "--barrier DIR",
            "--direct",
        ),
    )
