"""CLI table and functional tests for kernels/kmeans.c (the Kmeans application).

Every test runs against the normal build and the ASan/UBSan build. The clustering is checked
against Lloyd's algorithm in numpy on the same file.
"""

import numpy as np
import pytest
from kernel_helpers import assert_help_lists, assert_one_line_error, json_result, run_kernel

KERNEL = "kmeans"


def run(binary, args, timeout=60):
    return run_kernel(binary, args, timeout)


def points(path, n=3000, dims=4, k=3, seed=1):
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 20, (k, dims))
    x = (centers[rng.integers(0, k, n)] + rng.normal(0, 1, (n, dims))).astype("<f4")
    x.tofile(path)
    return path, x


def lloyd(x, k, iterations):
    c = x[:k].astype(np.float64)
    sse = []
    for _ in range(iterations):
        d = ((x[:, None, :].astype(np.float64) - c[None]) ** 2).sum(axis=2)
        a = d.argmin(axis=1)
        sse.append(float(d.min(axis=1).sum()))
        for j in range(k):
            if (a == j).any():
                c[j] = x[a == j].astype(np.float64).mean(axis=0)
    return sse, np.bincount(a, minlength=k)


CLI_CASES = [
    ("no-args", [], 2, "--data PATH is required"),
    ("no-dims", ["--data", "{file}", "--clusters", "2"], 2, "--dims D is required"),
    ("no-clusters", ["--data", "{file}", "--dims", "4"], 2, "--clusters K is required"),
    (
        "dims-zero",
        ["--data", "{file}", "--dims", "0", "--clusters", "2"],
        2,
        "--dims: '0' (expected an integer from 1 to 1024)",
    ),
    ("threads-big", ["--data", "{file}", "--dims", "4", "--clusters", "2", "--threads", "257"], 2, "--threads: '257'"),
    (
        "iterations-zero",
        ["--data", "{file}", "--dims", "4", "--clusters", "2", "--iterations", "0"],
        2,
        "--iterations: '0'",
    ),
    (
        "mode-unknown",
        ["--data", "{file}", "--dims", "4", "--clusters", "2", "--mode", "mmap"],
        2,
        "--mode: 'mmap' (expected stream or load)",
    ),
    ("unknown-long", ["--data", "{file}", "--bogus"], 2, "'--bogus'"),
    ("missing-file", ["--data", "{missing}", "--dims", "4", "--clusters", "2"], 1, "No such file"),
    ("ragged-file", ["--data", "{file}", "--dims", "7", "--clusters", "2"], 1, "not a multiple of 28"),
    ("too-many-clusters", ["--data", "{file}", "--dims", "4", "--clusters", "4000"], 1, "holds only 3000 points"),
]


@pytest.mark.parametrize("args, code, message", [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_cli_errors(binary, tmp_path, args, code, message):
    f, _ = points(tmp_path / "p.bin")
    fill = {"file": f, "missing": tmp_path / "absent"}
    assert_one_line_error(KERNEL, run(binary, [a.format(**fill) for a in args]), code, message)


def test_help_lists_units_and_defaults(binary):
    assert_help_lists(
        run(binary, ["--help"]), ("--data PATH", "--dims D", "--clusters K", "default 8", "default 10", "default 1M")
    )


@pytest.mark.parametrize("mode, threads", [("stream", 8), ("stream", 1), ("load", 3)])
def test_matches_lloyd_and_reads_as_planned(binary, tmp_path, mode, threads):
    f, x = points(tmp_path / "p.bin")
    code, out, err = run(
        binary,
        [
            "--data",
            f,
            "--dims",
            4,
            "--clusters",
            3,
            "--iterations",
            4,
            "--threads",
            threads,
            "--mode",
            mode,
            "--block-size",
            "1K",
        ],
    )
    assert code == 0, err
    r = json_result(out)
    sse, sizes = lloyd(x, 3, 4)
    assert r["sse"] == pytest.approx(sse, rel=1e-6)
    assert r["cluster_sizes"] == sizes.tolist() and sum(r["cluster_sizes"]) == 3000
    size = f.stat().st_size
    assert r["bytes_read"] == size * (4 if mode == "stream" else 1) + 3 * 16
    assert r["params"]["threads"] == threads and r["points"] == 3000
    assert all(b <= a * (1 + 1e-9) for a, b in zip(r["sse"], r["sse"][1:]))


def test_more_threads_than_points(binary, tmp_path):
    f, _ = points(tmp_path / "p.bin", n=5, k=2)
    code, out, err = run(binary, ["--data", f, "--dims", 4, "--clusters", 2, "--threads", 16])
    assert code == 0, err
    assert sum(json_result(out)["cluster_sizes"]) == 5
