"""The roles of the noisy_neighbour experiment (paper 003): pmem and spec_cpu.

This machine has no persistent memory and no SPEC CPU: pmem must skip with its message (in
check mode and for real, changing nothing), spec_cpu must stop with one line naming the
variable to set, and site.yml must leave both out unless switched on.
"""

import hashlib
from pathlib import Path

import pytest
from test_provision import output, run_tool
from test_roles_upstream import final_failure, recap, role_play, run_playbook


def no_pmem_here():
    return not list(Path("/sys/bus/nd/devices").glob("region*"))


pytestmark = pytest.mark.timeout(300)


@pytest.mark.skipif(not no_pmem_here(), reason="this host has persistent-memory regions")
@pytest.mark.parametrize("check", [True, False], ids=["check", "real"])
def test_pmem_skips_without_persistent_memory(tmp_path, check):
    play = role_play(tmp_path / "pmem.yml", "pmem",
                     {"pmem_upstream_manifest": str(tmp_path / "pmem.json"),
                      "pmem_create_namespaces": True})
    proc = run_playbook(play, *(["--check"] if check else []))
    assert proc.returncode == 0, output(proc)
    assert "pmem: skipped: no persistent-memory region on this host" in proc.stdout
    assert recap(proc) == (0, 0)
    assert not (tmp_path / "pmem.json").exists()


@pytest.mark.parametrize("variable, value", [
    ("pmem_regions", "region0"),
    ("pmem_regions", ["disk0"]),
    ("pmem_create_namespaces", "yes"),
    ("pmem_filesystem", "btrfs"),
    ("pmem_mount_root", "mnt/pmem"),
    ("pmem_packages", "ndctl"),
])
def test_pmem_wrong_value_is_named(tmp_path, variable, value):
    proc = run_playbook(role_play(tmp_path / "p.yml", "pmem", {variable: value}), "--check")
    msg = final_failure(proc)
    assert msg.startswith(f"pmem: {variable}: ") and "(expected" in msg, msg


@pytest.mark.skipif(not no_pmem_here(), reason="this host has persistent-memory regions")
def test_pmem_region_must_exist(tmp_path):
    proc = run_playbook(role_play(tmp_path / "p.yml", "pmem", {"pmem_regions": ["region0"]}), "--check")
    assert final_failure(proc) == 'pmem: pmem_regions: ["region0"] (expected regions of this host: none)'


def spec_vars(tmp_path, **extra):
    return {"spec_cpu_media_dir": str(tmp_path / "media"), "spec_cpu_install_dir": str(tmp_path / "spec"),
            "spec_cpu_upstream_manifest": str(tmp_path / "spec_cpu.json"), **extra}


def test_spec_cpu_without_a_source_names_the_variable(tmp_path):
    proc = run_playbook(role_play(tmp_path / "s.yml", "spec_cpu", spec_vars(tmp_path)))
    msg = final_failure(proc)
    assert msg.startswith('spec_cpu: spec_cpu_source: "" (expected the absolute path on the node of your '
                          'SPEC CPU 2017 ISO or tarball'), msg
    assert "never downloaded" in msg and "\n" not in msg
    assert not (tmp_path / "media").exists()


def test_spec_cpu_without_a_checksum_names_the_variable(tmp_path):
    proc = run_playbook(role_play(tmp_path / "s.yml", "spec_cpu",
                                  spec_vars(tmp_path, spec_cpu_source=str(tmp_path / "cpu2017.iso"))))
    assert final_failure(proc).startswith('spec_cpu: spec_cpu_source_sha256: "" (expected the 64 hex digits')


def test_spec_cpu_missing_file_and_wrong_checksum(tmp_path):
    iso = tmp_path / "cpu2017.iso"
    proc = run_playbook(role_play(tmp_path / "s.yml", "spec_cpu",
                                  spec_vars(tmp_path, spec_cpu_source=str(iso), spec_cpu_source_sha256="0" * 64)))
    assert "spec_cpu: spec_cpu_source:" in final_failure(proc) and "expected an existing file" in final_failure(proc)
    iso.write_bytes(b"not an ISO")
    proc = run_playbook(role_play(tmp_path / "s2.yml", "spec_cpu",
                                  spec_vars(tmp_path, spec_cpu_source=str(iso), spec_cpu_source_sha256="0" * 64)))
    msg = final_failure(proc)
    assert msg.startswith("spec_cpu: spec_cpu_source_sha256:"), msg
    assert hashlib.sha256(b"not an ISO").hexdigest() in msg
    assert not (tmp_path / "media").exists() and not (tmp_path / "spec_cpu.json").exists()


@pytest.mark.parametrize("variable, value", [
    ("spec_cpu_benchmarks", "511.povray_r"),
    ("spec_cpu_benchmarks", ["povray"]),
    ("spec_cpu_config", "corun"),
    ("spec_cpu_install_dir", "opt/spec"),
])
def test_spec_cpu_wrong_value_is_named(tmp_path, variable, value):
    proc = run_playbook(role_play(tmp_path / "s.yml", "spec_cpu", spec_vars(
        tmp_path, spec_cpu_source="/srv/cpu2017.iso", spec_cpu_source_sha256="a" * 64, **{variable: value})))
    msg = final_failure(proc)
    assert msg.startswith(f"spec_cpu: {variable}: "), msg


def test_site_leaves_both_out_unless_switched_on():
    proc = run_tool("ansible-playbook", "site.yml", "--check", "--tags", "noisy_neighbour")
    assert proc.returncode == 0, output(proc)
    assert "pmem : " not in proc.stdout and "spec_cpu : " not in proc.stdout
    if no_pmem_here():
        proc = run_tool("ansible-playbook", "site.yml", "--check", "--tags", "pmem", "-e", "corun_pmem=true")
        assert proc.returncode == 0, output(proc)
        assert "pmem: skipped: no persistent-memory region" in proc.stdout
