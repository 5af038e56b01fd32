"""A job's output read by its result kind (corun/run/job_result.py) into result_* fields, and
scripts/ior-job's result from IOR's JSON summary (corun/testbed/ior_job.py)."""

import argparse
import json
from pathlib import Path

import pytest

from corun.run import job_result
from corun.testbed import ior, ior_job

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def out_file(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "job.out"
    p.write_text(text)
    return p


def test_graph500_output_becomes_results_with_its_check(tmp_path):
    text = (FIXTURES / "upstream" / "graph500-2.1.4-seq-csr-s8-e8.txt").read_text()
    res, err = job_result.parse(out_file(tmp_path, text), "graph500")
    assert err is None and res["check"] == "ok" and res["bfs_roots"] == 64
    assert res["bfs_harmonic_mean_teps"] > 0 and res["construction_time_s"] > 0
    # a run that stopped before its statistics (a failed validation aborts) has no result
    res, err = job_result.parse(out_file(tmp_path, text.split("min_time")[0]), "graph500")
    assert res == {} and "harmonic_mean_TEPS: 'missing'" in err


def test_npb_output_becomes_results_with_its_verification(tmp_path):
    text = (FIXTURES / "upstream" / "npb-3.3.1-bt.S.4.txt").read_text()
    res, err = job_result.parse(out_file(tmp_path, text), "npb")
    assert err is None and res["check"] == "ok" and res["benchmark"] == "bt" and res["time_s"] > 0
    bad = text.replace("=               SUCCESSFUL", "=  UNSUCCESSFUL")
    res, _ = job_result.parse(out_file(tmp_path, bad), "npb")
    assert res["check"] == "failed verification"
    assert job_result.parse(out_file(tmp_path, ""), "npb") == ({}, "no output")


def test_json_kind_reads_the_last_line(tmp_path):
    assert job_result.parse(out_file(tmp_path, 'noise\n{"a": 1}\n'), "json") == ({"a": 1}, None)
    assert job_result.parse(out_file(tmp_path, "[1]\n"), "json") == ({}, "last line is not a JSON object")
    assert job_result.parse(tmp_path / "none.out", "json")[1].startswith("[Errno 2]")


def test_every_kind_is_in_the_run_spec_schema():
    from corun.util import repo_root

    schema = json.loads((repo_root() / "corun" / "schemas" / "run_spec.schema.json").read_text())
    kinds = schema["properties"]["jobs"]["items"]["properties"]["result"]["enum"]
    assert tuple(kinds) == job_result.KINDS


def test_ior_job_result_in_pfs_read_names():
    rows = ior.parse_file(FIXTURES / "ior" / "summary.json")
    a = argparse.Namespace(ior_options=["-a", "POSIX", "-r"], strip_size=65536, tasks=2)
    out = ior_job.result(rows, a, 100.0, 101.5)
    assert out["read_bw_mean_mib_s"] == 113.5 and out["read_time_mean_s"] == 0.5639
    assert out["write_bw_mean_mib_s"] == 100.4
    assert out["read_bytes"] == 16777216 * 2 * 2 == out["write_bytes"]  # block x segments x tasks
    assert (out["start_epoch_s"], out["end_epoch_s"], out["strip_size_bytes"]) == (100.0, 101.5, 65536)
    assert out["program"] == "IOR" and out["ior_options"] == "-a POSIX -r"


def test_ior_job_command_exports_the_striped_client_to_the_ranks(tmp_path, monkeypatch):
    monkeypatch.setattr(ior, "client_library", lambda: "/lib/libcorun_pfs.so")
    a = ior_job.parse_args(["--ior", "/i/ior", "--tasks", "3", "--volfile", "/v0", "--volfile", "/v1", "--direct",
                            "--", "-a", "POSIX", "-r", "-o", "/corun-pfs/f"])  # fmt: skip
    cmd = ior_job.command(a, "/tmp/s.json")
    assert cmd[:7] == ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", "3"]
    assert "CORUN_PFS_VOLFILES=/v0:/v1" in cmd and "CORUN_PFS_DIRECT=1" in cmd
    assert "LD_PRELOAD=/lib/libcorun_pfs.so" in cmd and "CORUN_PFS_STRIP_SIZE=65536" in cmd
    i = cmd.index("/i/ior")
    assert cmd[i:] == ["/i/ior", "-a", "POSIX", "-r", "-o", "/corun-pfs/f", "-O", "summaryFormat=JSON",
                       "-O", "summaryFile=/tmp/s.json"]  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--ior", "/i", "--volfile", "/v"], "IOR's options after -- are required"),
        (["--ior", "/i", "--", "-r"], "--volfile: none given"),
        (["--ior", "/i", "--volfile", "/v", "--tasks", "0", "--", "-r"], "--tasks: 0 (expected an integer >= 1)"),
    ],
)
def test_ior_job_usage_errors_are_one_line(argv, needle, capsys):
    with pytest.raises(SystemExit) as e:
        ior_job.parse_args(argv)
    assert e.value.code == 2 and needle in capsys.readouterr().err
