"""Workload names resolve to the upstream binary when provisioned, else to a named stand-in."""

import json

import pytest

from corun.errors import ConfigError
from corun.run import workloads


@pytest.fixture
def manifest(tmp_path, monkeypatch):
    def write(data):
        p = tmp_path / "upstream.json"
        p.write_text(json.dumps(data))
        monkeypatch.setattr(workloads, "UPSTREAM_MANIFEST", p)
        monkeypatch.setattr(workloads, "UPSTREAM_DIR", tmp_path / "upstream.d")
        workloads.upstream.cache_clear()
        return p

    yield write
    workloads.upstream.cache_clear()


def test_stand_ins_when_nothing_is_provisioned(manifest, tmp_path, kernels_built):
    manifest({})
    g = workloads.graph(12, 16, tmp_path)
    assert g.cmd[0].endswith("kernels/build/graph_bfs") and g.result == "json"
    assert g.labels == {
        "binary": "corun graph_bfs",
        "stands_in_for": "Graph500 2.1.4 seq-csr -s 12 -e 16",
        "stand_in_reason": "graph500 not provisioned (no upstream manifest entry)",
    }
    x = workloads.x264("simlarge", tmp_path / "in.y4m", tmp_path / "out.264")
    assert x.cmd[0] == "x264" and x.labels["binary"].startswith("debian x264")
    assert x.labels["stands_in_for"] == "PARSEC x264 simlarge"
    assert workloads.parsec_input("simlarge") is None


def test_upstream_binaries_win(manifest, tmp_path):
    clip = tmp_path / "eledream_640x360_128.y4m"
    clip.write_bytes(b"YUV4MPEG2")
    seq, omp = tmp_path / "seq-csr", tmp_path / "omp-csr"
    for p in (seq, omp):
        p.write_text("#!/bin/sh\n")
        p.chmod(0o755)
    # PARSEC's x264 in a tree of PARSEC's shape, its simlarge.runconf giving the command line
    x264 = tmp_path / "pkgs" / "apps" / "x264" / "inst" / "amd64-linux.corun" / "bin" / "x264"
    x264.parent.mkdir(parents=True)
    x264.write_text("#!/bin/sh\n")
    x264.chmod(0o755)
    (tmp_path / "pkgs" / "apps" / "x264" / "parsec").mkdir()
    (tmp_path / "pkgs" / "apps" / "x264" / "parsec" / "simlarge.runconf").write_text(
        'run_exec="bin/x264"\n'
        'run_args="--quiet --b-pyramid --threads ${NTHREADS} -o eledream.264 eledream_640x360_128.y4m"\n'
    )
    manifest(
        {
            "parsec": {"status": "built", "version": "3.0", "x264": str(x264), "x264_clips": {"simlarge": str(clip)}},
            "graph500": {
                "status": "built",
                "version": "2.1.4",
                "source": {"name": "upstream", "file": "graph500-graph500-2.1.4.tar.gz", "sha256": "f9ab"},
                "programs": {"seq-csr": str(seq), "omp-csr": str(omp)},
            },
        }
    )
    g = workloads.graph(22, 16, tmp_path)
    assert g.cmd == [str(seq), "-s", "22", "-e", "16"] and g.result == "graph500"
    assert g.env == {"TMPDIR": str(tmp_path)}  # file-backed mmap storage on the device under test
    assert g.labels == {
        "binary": "Graph500 2.1.4 seq-csr",
        "stands_in_for": "",
        "program_version": "2.1.4",
        "source_name": "upstream",
        "source_file": "graph500-graph500-2.1.4.tar.gz",
        "source_sha256": "f9ab",
    }
    g2 = workloads.graph(22, 16, tmp_path, threads=2)
    assert g2.cmd[0] == str(omp) and g2.env["OMP_NUM_THREADS"] == "2"
    x = workloads.x264("simlarge", clip, tmp_path / "o.264")
    assert x.cmd == [str(x264), "--quiet", "--b-pyramid", "--threads", "1", "-o", str(tmp_path / "o.264"), str(clip)]
    assert x.labels["binary"] == "PARSEC 3.0 x264" and x.labels["input_provenance"] == "real"
    assert workloads.parsec_input("simlarge") == clip


def test_graph500_keys_outside_programs_or_not_built_run_the_stand_in(manifest, tmp_path, kernels_built):
    # the manifest's old top-level keys are not read: only `programs` of a built entry
    manifest({"graph500": {"status": "built", "version": "2.1.4", "seq-csr": "/opt/graph500/seq-csr"}})
    g = workloads.graph(12, 16, tmp_path)
    assert g.labels["binary"] == "corun graph_bfs"
    assert g.labels["stand_in_reason"] == "graph500 2.1.4 built no seq-csr"
    manifest({"graph500": {"status": "stand-in", "version": "2.1.4", "reason": "no source archive"}})
    g = workloads.graph(12, 16, tmp_path)
    assert g.labels["stand_in_reason"] == "graph500: stand-in: no source archive"
    manifest({"graph500": {"status": "built", "version": "3.0.0", "programs": {"graph500_reference_bfs": "/x"}}})
    assert workloads.graph(12, 16, tmp_path).labels["stand_in_reason"] == "graph500 3.0.0 built no seq-csr"


def test_x264_uses_parsec_run_options(manifest, tmp_path):
    manifest({})
    x = workloads.x264("native", tmp_path / "in.y4m", tmp_path / "out.264", threads=2)
    for opt in ("--qp", "20", "--ref", "5", "--me", "umh", "--subme", "7", "--threads", "2"):
        assert opt in x.cmd


def test_one_file_per_role_is_merged(manifest, tmp_path):
    manifest({})
    d = tmp_path / "upstream.d"
    d.mkdir()
    (d / "graph500.json").write_text(json.dumps({"graph500": {"version": "2.1.4", "programs": {"seq-csr": "/g/s"}}}))
    (d / "parsec.json").write_text(json.dumps({"parsec": {"version": "3.0", "x264": "/p/x264"}}))
    workloads.upstream.cache_clear()
    assert set(workloads.upstream()) == {"graph500", "parsec"}


def test_broken_manifest_is_a_one_line_error(manifest, tmp_path):
    p = manifest({})
    p.write_text("{not json")
    workloads.upstream.cache_clear()
    with pytest.raises(ConfigError, match="a JSON object written by a provisioning role"):
        workloads.upstream()
