"""IOR reads and writes sais's striped file when the ior role built it (scripts/ior-job
through pfs_client's LD_PRELOAD library); pfs_read stands in, labelled, for the per-request
compute step IOR has no equivalent of, or when IOR is not provisioned."""

import yaml

from experiments.sais import experiment as sais
from experiments.sais.tests.test_experiment import cfg_with

PIN = {"name": "upstream", "file": "ior-4.0.0.tar.gz", "sha256": "cb17f6b0"}


def provide_ior(tmp_path, upstream_manifest) -> str:
    exe = tmp_path / "ior"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    upstream_manifest({"ior": {"status": "built", "version": "4.0.0", "source": PIN, "programs": {"ior": str(exe)}}})
    return str(exe)


def spec_and_group(tmp_path, section):
    cfg = cfg_with({"servers": [2], "transfer_sizes_bytes": [131072], "clients": [1], "reps": 1, **section})
    sais.EXPERIMENT.specs(cfg, {}, tmp_path / "data", tmp_path / "specs")
    spec = yaml.safe_load((tmp_path / "specs" / "s2_l1_irqbalance_t128k_c1_r0.yaml").read_text())
    (g,) = yaml.safe_load((tmp_path / "specs" / "groups.json").read_text())["groups"]
    return spec, g


def test_ior_reads_without_a_compute_step_and_records_its_pin(tmp_path, upstream_manifest):
    exe = provide_ior(tmp_path, upstream_manifest)
    spec, g = spec_and_group(tmp_path, {"policies": ["irqbalance"], "compute_passes": 0, "file_mib": 8})
    cmd = spec["jobs"][0]["cmd"]
    assert cmd[:4] == ["ip", "netns", "exec", "sais-n1"] and cmd[4].endswith("scripts/ior-job")
    assert cmd[cmd.index("--ior") + 1] == exe and cmd[cmd.index("--tasks") + 1] == "1"
    ior = cmd[cmd.index("--") + 1 :]
    reps = str(spec["labels"]["read_repetitions"])
    assert reps == "15"  # 8 MiB at the 1 GbE cap: 0.067 s a read; 15 of them last two intervals of 0.5 s
    assert ior == ["-a", "POSIX", "-t", "131072", "-b", str(8 << 20), "-s", "1", "-r", "-k", "-i", reps,
                   "-o", "/corun-pfs/sais.dat"]  # fmt: skip
    labels = spec["labels"]
    assert labels["reader"] == "ior" and labels["binary"] == "IOR 4.0.0"
    assert (labels["source_file"], labels["source_sha256"]) == ("ior-4.0.0.tar.gz", "cb17f6b0")
    w = g["write_cmd"]
    assert w[w.index("--ior") + 1] == exe
    assert w[w.index("--") + 1 :] == ["-a", "POSIX", "-t", str(1 << 20), "-b", str(8 << 20), "-s", "1", "-w", "-e",
                                      "-k", "-o", "/corun-pfs/sais.dat"]  # fmt: skip


def test_pfs_read_stands_in_for_the_compute_step_and_says_why(tmp_path, upstream_manifest):
    exe = provide_ior(tmp_path, upstream_manifest)
    spec, g = spec_and_group(tmp_path, {"policies": ["irqbalance"], "compute_passes": 2})
    assert spec["jobs"][0]["cmd"][4].endswith("kernels/build/pfs_read")
    labels = spec["labels"]
    assert labels["reader"] == "pfs_read" and labels["stands_in_for"].startswith("IOR 4.0.0 -a POSIX -r")
    assert labels["stand_in_reason"] == "compute_passes: 2 (IOR has no per-request compute step)"
    assert g["write_cmd"][g["write_cmd"].index("--ior") + 1] == exe  # IOR still writes the file


def test_without_ior_pfs_read_reads_and_writes(tmp_path):
    spec, g = spec_and_group(tmp_path, {"policies": ["irqbalance"], "compute_passes": 0})
    assert spec["labels"]["stand_in_reason"] == "ior not provisioned (no upstream manifest entry)"
    assert g["write_cmd"][4].endswith("kernels/build/pfs_read") and "--write" in g["write_cmd"]
