"""CLI table and functional tests for kernels/paper_similar.c (the Paper Similar application).

Every test runs against the normal build and the ASan/UBSan build.
"""

import math
import os

import pytest
from kernel_helpers import assert_help_lists, assert_one_line_error, assert_version, json_result, run_kernel

KERNEL = "paper_similar"
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]


def run(binary, args, timeout=30):
    return run_kernel(binary, args, timeout)


def text(path, seed, n_words=20000, words=WORDS):
    """A document of n_words words drawn with a fixed linear congruential sequence."""
    x, out = seed, []
    for _ in range(n_words):
        x = (x * 1103515245 + 12345) % 2**31
        out.append(words[x % len(words)])
    path.write_text(" ".join(out) + "\n")
    return path


CLI_CASES = [
    ("no-args", [], 2, "--paper PATH is required"),
    ("no-other", ["--paper", "{file}"], 2, "--other PATH is required"),
    ("paper-without-value", ["--paper"], 2, "--paper: missing value"),
    ("unknown-long", ["--paper", "{file}", "--other", "{file}", "--bogus"], 2, "'--bogus'"),
    ("extra-argument", ["--paper", "{file}", "--other", "{file}", "extra"], 2, "'extra'"),
    (
        "threads-zero",
        ["--paper", "{file}", "--other", "{file}", "--threads", "0"],
        2,
        "--threads: '0' (expected an integer from 1 to 256)",
    ),
    ("threads-junk", ["--paper", "{file}", "--other", "{file}", "--threads", "2x"], 2, "--threads: '2x'"),
    ("block-size-zero", ["--paper", "{file}", "--other", "{file}", "--block-size", "0"], 2, "--block-size: '0'"),
    (
        "cache-mode-unknown",
        ["--paper", "{file}", "--other", "{file}", "--cache-mode", "direct"],
        2,
        "--cache-mode: 'direct' (expected evict or keep)",
    ),
    ("missing-file", ["--paper", "{missing}", "--other", "{file}"], 1, "No such file"),
    ("directory", ["--paper", "{file}", "--other", "{dir}"], 1, "not a regular file"),
]


@pytest.mark.parametrize("args, code, message", [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_cli_errors(binary, tmp_path, args, code, message):
    existing = text(tmp_path / "paper.txt", 1, 100)
    fill = {"file": existing, "dir": tmp_path, "missing": tmp_path / "absent"}
    assert_one_line_error(KERNEL, run(binary, [a.format(**fill) for a in args]), code, message)


def test_too_many_others_is_a_usage_error(binary, tmp_path):
    f = text(tmp_path / "p.txt", 1, 10)
    args = ["--paper", f] + ["--other", f] * 65
    got, out, err = run(binary, args)
    assert got == 2 and "at most 64 other papers" in err


def test_help_lists_units_and_defaults(binary):
    assert_help_lists(
        run(binary, ["--help"]), ("--paper PATH", "--other PATH", "default 2", "default 65536", "--cache-mode MODE")
    )


def test_version_option_prints_the_kernel_name(binary):
    assert_version(KERNEL, run(binary, ["--version"]))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_compares_and_checks_itself(binary, tmp_path, threads):
    paper = text(tmp_path / "paper.txt", 7)
    same = tmp_path / "copy.txt"
    same.write_bytes(paper.read_bytes())
    other = text(tmp_path / "other.txt", 7, words=["one", "two", "three", "four"])
    code, out, err = run(
        binary, ["--paper", paper, "--other", same, "--other", other, "--threads", threads, "--block-size", "1000"]
    )
    assert code == 0, err
    r = json_result(out)
    assert r["params"]["threads"] == threads and r["params"]["cache_mode"] == "evict"
    assert r["others"] == 2
    assert r["words"] == [20000, 20000, 20000]
    assert r["similarity"][0] == pytest.approx(1.0)  # an identical copy
    assert r["similarity"][1] < 0.05  # no word in common; hash collisions only
    assert r["self_similarity"] == pytest.approx(1.0)
    size = paper.stat().st_size
    assert r["bytes_read"] == 2 * size + other.stat().st_size
    assert r["bw_mb_s"] == pytest.approx(r["bytes_read"] / 1e6 / r["elapsed_s"])
    assert r["host"] == os.uname().nodename


def test_word_order_changes_bigrams(binary, tmp_path):
    a = tmp_path / "a.txt"
    b = tmp_path / "b.txt"
    a.write_text("alpha beta gamma delta " * 500)
    b.write_text("delta gamma beta alpha " * 500)
    code, out, err = run(binary, ["--paper", a, "--other", b, "--cache-mode", "keep"])
    assert code == 0, err
    sim = json_result(out)["similarity"][0]
    assert 0 <= sim < 1 and math.isfinite(sim)


def test_empty_documents(binary, tmp_path):
    a = tmp_path / "empty.txt"
    a.touch()
    code, out, err = run(binary, ["--paper", a, "--other", a])
    assert code == 0, err
    r = json_result(out)
    assert r["words"] == [0, 0] and r["similarity"] == [0.0] and r["bytes_read"] == 0
