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
    play = role_play(
        tmp_path / "pmem.yml",
        "pmem",
        {"pmem_upstream_manifest": str(tmp_path / "pmem.json"), "pmem_create_namespaces": True},
    )
    proc = run_playbook(play, *(["--check"] if check else []))
    assert proc.returncode == 0, output(proc)
    assert "pmem: skipped: no persistent-memory region on this host" in proc.stdout
    assert recap(proc) == (0, 0)
    assert not (tmp_path / "pmem.json").exists()


@pytest.mark.parametrize(
    "variable, value",
    [
        ("pmem_regions", "region0"),
        ("pmem_regions", ["disk0"]),
        ("pmem_create_namespaces", "yes"),
        ("pmem_filesystem", "btrfs"),
        ("pmem_mount_root", "mnt/pmem"),
        ("pmem_packages", "ndctl"),
    ],
)
def test_pmem_wrong_value_is_named(tmp_path, variable, value):
    proc = run_playbook(role_play(tmp_path / "p.yml", "pmem", {variable: value}), "--check")
    msg = final_failure(proc)
    assert msg.startswith(f"pmem: {variable}: ") and "(expected" in msg, msg


@pytest.mark.skipif(not no_pmem_here(), reason="this host has persistent-memory regions")
def test_pmem_region_must_exist(tmp_path):
    proc = run_playbook(role_play(tmp_path / "p.yml", "pmem", {"pmem_regions": ["region0"]}), "--check")
    assert final_failure(proc) == 'pmem: pmem_regions: ["region0"] (expected regions of this host: none)'


def spec_vars(tmp_path, **extra):
    return {
        "spec_cpu_media_dir": str(tmp_path / "media"),
        "spec_cpu_install_dir": str(tmp_path / "spec"),
        "spec_cpu_upstream_manifest": str(tmp_path / "spec_cpu.json"),
        **extra,
    }


def test_spec_cpu_without_a_source_names_the_variable(tmp_path):
    proc = run_playbook(role_play(tmp_path / "s.yml", "spec_cpu", spec_vars(tmp_path)))
    msg = final_failure(proc)
    assert msg.startswith(
        'spec_cpu: spec_cpu_source: "" (expected the absolute path on the node of your SPEC CPU 2017 ISO or tarball'
    ), msg
    assert "never downloaded" in msg and "\n" not in msg
    assert not (tmp_path / "media").exists()


def test_spec_cpu_without_a_checksum_names_the_variable(tmp_path):
    proc = run_playbook(
        role_play(tmp_path / "s.yml", "spec_cpu", spec_vars(tmp_path, spec_cpu_source=str(tmp_path / "cpu2017.iso")))
    )
    assert final_failure(proc).startswith('spec_cpu: spec_cpu_source_sha256: "" (expected the 64 hex digits')


def test_spec_cpu_missing_file_and_wrong_checksum(tmp_path):
    iso = tmp_path / "cpu2017.iso"
    proc = run_playbook(
        role_play(
            tmp_path / "s.yml",
            "spec_cpu",
            spec_vars(tmp_path, spec_cpu_source=str(iso), spec_cpu_source_sha256="0" * 64),
        )
    )
    assert "spec_cpu: spec_cpu_source:" in final_failure(proc) and "expected an existing file" in final_failure(proc)
    iso.write_bytes(b"not an ISO")
    proc = run_playbook(
        role_play(
            tmp_path / "s2.yml",
            "spec_cpu",
            spec_vars(tmp_path, spec_cpu_source=str(iso), spec_cpu_source_sha256="0" * 64),
        )
    )
    msg = final_failure(proc)
    assert msg.startswith("spec_cpu: spec_cpu_source_sha256:"), msg
    assert hashlib.sha256(b"not an ISO").hexdigest() in msg
    assert not (tmp_path / "media").exists() and not (tmp_path / "spec_cpu.json").exists()


@pytest.mark.parametrize(
    "variable, value",
    [
        ("spec_cpu_benchmarks", "511.povray_r"),
        ("spec_cpu_benchmarks", ["povray"]),
        ("spec_cpu_config", "corun"),
        ("spec_cpu_install_dir", "opt/spec"),
    ],
)
def test_spec_cpu_wrong_value_is_named(tmp_path, variable, value):
    proc = run_playbook(
        role_play(
            tmp_path / "s.yml",
            "spec_cpu",
            spec_vars(
                tmp_path, spec_cpu_source="/srv/cpu2017.iso", spec_cpu_source_sha256="a" * 64, **{variable: value}
            ),
        )
    )
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


FAKE_NDCTL = """#!/bin/sh
# ndctl list --namespaces --region R, as on a host with three App Direct regions
case "$*" in
  *create-namespace*) echo "fake ndctl: create-namespace must not run in check mode" >&2; exit 1;;
  *region0*) echo '[{"dev":"namespace0.0","mode":"fsdax","blockdev":"pmem0"},'
             echo '{"dev":"namespace0.1","mode":"devdax","chardev":"dax0.1"}]';;
  *region1*) echo '{"dev":"namespace1.0","mode":"fsdax","blockdev":"pmem1"}';;
  *) echo "";;
esac
"""


@pytest.mark.parametrize("create", [True, False])
def test_pmem_plan_on_a_host_with_regions(tmp_path, create):
    """Check mode on a fake host (regions in a fake sysfs, a fake ndctl): only a listed region
    without an fsdax namespace would get one, and only when asked; every fsdax device of the
    listed regions would be mounted with DAX and recorded."""
    import os

    nd = tmp_path / "nd"
    for r in ("region0", "region1", "region2", "region3"):
        (nd / r).mkdir(parents=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ndctl").write_text(FAKE_NDCTL)
    (bin_dir / "ndctl").chmod(0o755)
    play = role_play(
        tmp_path / "p.yml",
        "pmem",
        {
            "pmem_regions": ["region0", "region1", "region2"],
            "pmem_create_namespaces": create,
            "pmem_packages": [],  # the fake ndctl stands in
            "pmem_mount_root": str(tmp_path / "mnt"),
            "pmem_upstream_manifest": str(tmp_path / "pmem.json"),
        },
    )
    from test_provision import REPO, ansible_env

    proc = run_tool(
        "ansible-playbook",
        "-i",
        str(REPO / "inventory" / "local"),
        "--check",
        "--diff",
        "-v",
        "-e",
        f"__pmem_nd_dir={nd}",
        str(play),
        env=ansible_env(PATH=f"{bin_dir}:{os.environ['PATH']}", ANSIBLE_CALLBACK_RESULT_FORMAT="json"),
    )
    assert proc.returncode == 0, output(proc)
    section = proc.stdout.split("Create an fsdax namespace", 1)[1].split("TASK [", 1)[0]
    would_create = [line for line in section.splitlines() if '"create-namespace"' in line]
    if create:
        assert len(would_create) == 1 and "(item=region2)" in would_create[0], section
    else:
        assert not would_create, section
    assert "region3" not in section
    assert f'"{tmp_path}/mnt/pmem0",' in proc.stdout and f'"{tmp_path}/mnt/pmem1"' in proc.stdout
    assert "dax0.1" not in proc.stdout.split("Record the DAX mounts", 1)[1]
    assert not (tmp_path / "pmem.json").exists() and not (tmp_path / "mnt").exists()
