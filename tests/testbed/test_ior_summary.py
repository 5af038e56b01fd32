"""IOR's JSON summary read into corun's names (corun/testbed/ior.py)."""

from pathlib import Path

import pytest

from corun.errors import ConfigError
from corun.testbed import ior

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "ior" / "summary.json"


def test_summary_fixture_is_read_with_units_in_the_names():
    rows = ior.parse_file(FIXTURE)
    assert [r["operation"] for r in rows] == ["write", "read"]
    read = rows[1]
    assert read["bw_mean_mib_s"] == pytest.approx(113.5)
    assert read["ops_mean_per_s"] == pytest.approx(113.5)
    assert read["time_mean_s"] == pytest.approx(0.5639)
    assert read["transfer_size_bytes"] == 1048576
    assert read["block_size_bytes"] == 16777216
    assert read["tasks"] == 2 and read["segments"] == 2 and read["file_per_process"] is True
    assert read["api"] == "POSIX"
    flat = ior.result_fields(rows)
    assert flat["read_bw_mean_mib_s"] == pytest.approx(113.5)
    assert flat["write_time_mean_s"] == pytest.approx(0.6375)


def test_lines_before_the_document_are_skipped():
    rows = ior.parse_summary("IOR-4.0.0: MPI Coordinated Test of Parallel I/O\n" + FIXTURE.read_text())
    assert len(rows) == 2


@pytest.mark.parametrize(
    "text, needle",
    [
        ("", "no JSON object"),
        ('{"summary": [', "invalid JSON"),
        ('{"tests": []}', "summary: 'missing' (expected a non-empty list"),
        ('{"summary": [{"operation": "read", "OPsMean": 1, "MeanTime": 1}]}', "summary[0].bwMeanMIB: 'missing'"),
        (
            '{"summary": [{"operation": "stat", "bwMeanMIB": 1, "OPsMean": 1, "MeanTime": 1}]}',
            "summary[0].operation: 'stat' (expected read or write)",
        ),
        (
            '{"summary": [{"operation": "read", "bwMeanMIB": -1, "OPsMean": 1, "MeanTime": 1}]}',
            "summary[0].bwMeanMIB: -1 (expected a finite number >= 0)",
        ),
    ],
)
def test_bad_summaries_are_one_line_errors(text, needle):
    with pytest.raises(ConfigError) as exc:
        ior.parse_summary(text, "out.json")
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("out.json: ") and needle in msg


def test_ior_command_line_on_the_fuse_mount():
    argv = ior.ior_argv(
        "/opt/ior/bin/ior",
        "/mnt/pfs/",
        "/tmp/s.json",
        api="MPIIO",
        transfer_size=1 << 20,
        block_size=4 << 20,
        segments=2,
        file_per_process=True,
        write=True,
    )
    assert argv[:3] == ["/opt/ior/bin/ior", "-a", "MPIIO"]
    assert "/mnt/pfs/ior.dat" in argv and "summaryFormat=JSON" in argv and "summaryFile=/tmp/s.json" in argv
    assert {"-F", "-w", "-r", "-k"} <= set(argv)
    with pytest.raises(ValueError):
        ior.ior_argv("ior", "/m", "/s", transfer_size=3 << 20, block_size=4 << 20)


LAYOUT = {
    "volfiles": ["/r/c/client/stripe-0.vol", "/r/c/client/stripe-1.vol"],
    "client_volfiles": {"c2": ["/r/c2/client/stripe-0.vol", "/r/c2/client/stripe-1.vol"]},
    "strip_size_bytes": 65536,
}


def test_the_striped_client_environment_comes_from_the_layout():
    env = ior.client_env(LAYOUT, "/lib.so")
    assert env == {
        "LD_PRELOAD": "/lib.so",
        "CORUN_PFS_PREFIX": "/corun-pfs",
        "CORUN_PFS_VOLFILES": "/r/c/client/stripe-0.vol:/r/c/client/stripe-1.vol",
        "CORUN_PFS_STRIP_SIZE": "65536",
    }
    other = ior.client_env(LAYOUT, "/lib.so", prefix="/pfs", host="c2", direct=True)
    assert other["CORUN_PFS_VOLFILES"].startswith("/r/c2/") and other["CORUN_PFS_DIRECT"] == "1"
    assert ior.mpirun_exports({"A": "1", "B": "x y"}) == ["-x", "A=1", "-x", "B=x y"]
