"""The upstream manifest as corun reads it (corun/upstream.py), what every run's metadata.json
records of it, and the parsers of the upstream programs' output (corun/run/graph500.py,
corun/run/npb.py) on output of real runs (tests/fixtures/upstream/)."""

import json
from pathlib import Path

import pytest

from corun import upstream
from corun.errors import ConfigError
from corun.run import graph500, metadata, npb

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "upstream"

NPB_SOURCE = {
    "name": "git-import",
    "file": "NPB3.3.1-MPI-git-b066d24.tar.gz",
    "sha256": "41165163bfcc7a6df12a6cbcd00d6f3912b51337efc2672b43ae3acc18747d9b",
    "url": "",
    "description": "not NASA's file",
    "origin": "mirror",
    "path": "/srv/mirror/NPB3.3.1-MPI-git-b066d24.tar.gz",
}


@pytest.fixture
def manifests(tmp_path):
    """Manifest files as the roles write them: a build, a stand-in, and parsec's older format."""
    d = tmp_path / "upstream.d"
    d.mkdir()
    entries = {
        "npb": {
            "status": "built",
            "program": "NAS Parallel Benchmarks (MPI)",
            "version": "3.3.1",
            "source": NPB_SOURCE,
            "install_dir": "/opt/corun/NPB3.3.1",
            "programs": {"bt.A.4": "/opt/corun/NPB3.3.1/NPB3.3-MPI/bin/bt.A.4"},
        },
        "ior": {
            "status": "stand-in",
            "program": "IOR",
            "version": "4.0.0",
            "reason": "ior: no source archive: ior-4.0.0.tar.gz (sha256 cb17...); corun_mirror is empty",
            "stand_in": "corun pfs_read (kernels/pfs_read)",
        },
        "parsec": {"version": "3.0-beta-20150206", "x264": "/p/x264", "binaries": {"x264": "/p/x264"}},
    }
    for role, entry in entries.items():
        (d / f"{role}.json").write_text(json.dumps({role: entry}))
    return [tmp_path / "upstream.json"] + sorted(d.glob("*.json"))


def test_provenance_names_each_build_its_source_or_its_stand_in(manifests):
    rec = upstream.provenance(manifests)
    assert rec["npb"] == {
        "status": "built",
        "program": "NAS Parallel Benchmarks (MPI)",
        "version": "3.3.1",
        "source": {k: NPB_SOURCE[k] for k in ("name", "file", "sha256", "url", "origin")},
    }
    assert rec["ior"]["status"] == "stand-in" and rec["ior"]["reason"].startswith("ior: no source archive")
    assert rec["parsec"] == {"status": "built", "version": "3.0-beta-20150206"}


def test_programs_only_of_a_build(manifests):
    merged = upstream.read(manifests)
    assert upstream.programs("npb", merged) == {"bt.A.4": "/opt/corun/NPB3.3.1/NPB3.3-MPI/bin/bt.A.4"}
    assert upstream.programs("ior", merged) == {} and upstream.programs("graph500", merged) == {}


def test_a_broken_manifest_is_recorded_not_raised(tmp_path):
    broken = tmp_path / "npb.json"
    broken.write_text("{not json")
    with pytest.raises(ConfigError, match="a JSON object written by a provisioning role"):
        upstream.read([broken])
    assert upstream.provenance([broken])["error"].startswith(f"{broken}: (top level): 'unreadable'")


def test_run_metadata_carries_the_upstream_provenance(monkeypatch, manifests):
    monkeypatch.setattr(upstream, "manifest_files", lambda *a: manifests)
    meta = metadata.collect()
    assert meta["upstream"]["npb"]["source"]["sha256"] == NPB_SOURCE["sha256"]
    assert meta["upstream"]["ior"]["status"] == "stand-in"


def test_graph500_2_1_4_output():
    out = graph500.parse_output((FIXTURES / "graph500-2.1.4-seq-csr-s8-e8.txt").read_text())
    assert (out["scale"], out["edgefactor"], out["vertices"], out["bfs_roots"]) == (8, 8, 256, 64)
    assert out["bfs_harmonic_mean_teps"] > 0 and out["construction_time_s"] > 0
    assert out["bfs_min_time_s"] <= out["bfs_median_time_s"] <= out["bfs_max_time_s"]
    assert "sssp_harmonic_mean_teps" not in out


def test_graph500_3_0_0_output_has_both_kernels():
    out = graph500.parse_output((FIXTURES / "graph500-3.0.0-bfs-sssp-s8-e8-np2.txt").read_text())
    assert (out["scale"], out["mpi_processes"]) == (8, 2)
    assert out["bfs_harmonic_mean_teps"] > 0 and out["sssp_harmonic_mean_teps"] > 0
    assert out["sssp_median_validate_s"] > 0


def test_graph500_output_without_its_statistics_is_refused():
    text = (FIXTURES / "graph500-2.1.4-seq-csr-s8-e8.txt").read_text().split("min_time")[0]
    with pytest.raises(ConfigError, match="harmonic_mean_TEPS: 'missing'"):
        graph500.parse_output(text, "job.out")


def test_graph500_command_lines():
    assert graph500.argv("/g/seq-csr", "2.1.4", 22, 16) == ["/g/seq-csr", "-s", "22", "-e", "16"]
    assert graph500.argv("/g/bfs", "3.0.0", 22, 16) == ["/g/bfs", "22", "16"]
    assert graph500.env("/data") == {"TMPDIR": "/data"}


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        ("npb-3.3.1-bt.S.4.txt", {"benchmark": "bt", "class": "S", "iterations": 60, "processes": 4}),
        ("npb-3.3.1-is.W.4.txt", {"benchmark": "is", "class": "W", "iterations": 10, "processes": 4}),
    ],
)
def test_npb_output(fixture, expected):
    out = npb.parse_output((FIXTURES / fixture).read_text())
    assert {k: out[k] for k in expected} == expected
    assert out["verified"] and out["version"] == "3.3.1"
    assert out["time_s"] > 0 and out["mops_total"] > 0


def test_npb_unsuccessful_verification_is_reported():
    text = (FIXTURES / "npb-3.3.1-bt.S.4.txt").read_text().replace("=               SUCCESSFUL", "=  UNSUCCESSFUL")
    out = npb.parse_output(text)
    assert out["verification"] == "UNSUCCESSFUL" and not out["verified"]


def test_npb_output_without_a_summary_is_refused():
    with pytest.raises(ConfigError, match="Benchmark Completed: 'missing'"):
        npb.parse_output("mpirun noticed that process rank 0 exited on signal 9\n", "job.out")


def test_npb_program_names():
    assert npb.program_name("bt", "a", 4) == "bt.A.4"
    assert npb.program_name("bt", "A", None) == "bt.A.x"
