"""IOR is aIOLi's reader and writer when the ior role built it: one IOR of `clients` tasks per
application, MPI-IO Test's layouts in IOR's own options, through pfs_client's LD_PRELOAD
library (scripts/ior-job); without IOR, pfs_read's clients stand in, labelled."""

import json

import yaml

from experiments.aioli import experiment as aioli
from experiments.aioli.tests.test_experiment import SMALL, cfg_with

PIN = {"name": "upstream", "file": "ior-4.0.0.tar.gz", "sha256": "cb17f6b0"}


def ior_part(cmd: list[str]) -> list[str]:
    return cmd[cmd.index("--") + 1 :]


def test_one_ior_per_application_in_iors_own_options(tmp_path, upstream_manifest):
    exe = tmp_path / "ior"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    upstream_manifest({"ior": {"status": "built", "version": "4.0.0", "source": PIN, "programs": {"ior": str(exe)}}})
    aioli.EXPERIMENT.specs(cfg_with(SMALL), {}, tmp_path / "data", tmp_path / "specs")
    spec = yaml.safe_load((tmp_path / "specs" / "s2_aioli_strided_read_t64k_c3_a2_r0.yaml").read_text())
    assert [j["name"] for j in spec["jobs"]] == ["app0-ior", "app1-ior"]
    job = spec["jobs"][1]
    cmd = job["cmd"]
    assert cmd[:4] == ["ip", "netns", "exec", "aioli-n1"] and cmd[4].endswith("scripts/ior-job")
    assert cmd[cmd.index("--tasks") + 1] == "3" and "--direct" in cmd  # O_DIRECT bricks
    assert cmd.count("--volfile") == 2 and cmd[cmd.index("--strip-size") + 1] == "65536"
    # strided: IOR's segmented layout, one request per block, client_mib / request segments
    assert ior_part(cmd) == ["-a", "POSIX", "-t", "65536", "-b", "65536", "-s", "16", "-r", "-k",
                             "-o", "/corun-pfs/aioli-r-app1.dat"]  # fmt: skip
    assert job["labels"]["reader"] == "ior" and job["labels"]["source_sha256"] == "cb17f6b0"
    assert job["labels"]["binary"] == "IOR 4.0.0" and job["result"] == "json"
    cont = yaml.safe_load((tmp_path / "specs" / "s2_pfs_fifo_contiguous_write_t64k_c3_a2_r0.yaml").read_text())
    assert ior_part(cont["jobs"][0]["cmd"]) == ["-a", "POSIX", "-t", "65536", "-b", str(1 << 20), "-s", "1",
                                                "-w", "-e", "-k", "-o", "/corun-pfs/aioli-w-app0.dat"]  # fmt: skip
    (g,) = json.loads((tmp_path / "specs" / "groups.json").read_text())["groups"]
    files = [ior_part(c)[-1] for c in g["write_cmds"]]
    assert files == [f"/corun-pfs/aioli-{o}-app{a}.dat" for o in "rw" for a in (0, 1)]
    assert ior_part(g["write_cmds"][0])[:10] == ["-a", "POSIX", "-t", str(1 << 20), "-b", str(3 << 20), "-s", "1",
                                                 "-w", "-e"]  # fmt: skip


def test_pfs_read_stands_in_when_ior_is_absent_or_not_chosen(tmp_path, upstream_manifest):
    aioli.EXPERIMENT.specs(cfg_with(SMALL), {}, tmp_path / "data", tmp_path / "specs")
    spec = yaml.safe_load((tmp_path / "specs" / "s2_aioli_strided_read_t64k_c3_a2_r0.yaml").read_text())
    labels = spec["jobs"][0]["labels"]
    assert labels["binary"] == "corun pfs_read" and labels["stands_in_for"].startswith("IOR 4.0.0")
    assert labels["stand_in_reason"] == "ior not provisioned (no upstream manifest entry)"
    exe = tmp_path / "ior"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    upstream_manifest({"ior": {"status": "built", "version": "4.0.0", "source": PIN, "programs": {"ior": str(exe)}}})
    aioli.EXPERIMENT.specs(cfg_with({**SMALL, "reader": "pfs_read"}), {}, tmp_path / "d2", tmp_path / "s2")
    spec = yaml.safe_load((tmp_path / "s2" / "s2_aioli_strided_read_t64k_c3_a2_r0.yaml").read_text())
    assert spec["jobs"][0]["labels"]["stand_in_reason"] == "reader: pfs_read (the configuration's choice)"
