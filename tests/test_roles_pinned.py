"""The roles that build upstream benchmarks from pinned source archives: graph500, npb and ior.

Each takes the first of its pinned sources found in the local mirror (corun_mirror), else
downloads the upstream one, checks its sha256, builds in a staging folder beside the
installation, puts the finished build in place at once, and records the source in its upstream
manifest; without a source it records its stand-in. The build tests build each role from the
repository's mirror (../shared/mirror; skipped where there is none) into a fresh folder, run
the programs and parse their output, and provision a second time expecting no change; they
install build tools with apt, so they need root. The others drive the roles to their errors
with fake archives, an unreachable URL and a small HTTP server, and check that nothing was
installed.
"""

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from test_provision import REPO, output
from test_roles_upstream import (
    UNREACHABLE,
    fake_tarball,
    final_failure,
    recap,
    role_play,
    run_playbook,
    source_vars,
    web_root,  # noqa: F401 - a fixture
)

from corun.run import graph500, npb
from corun.testbed import ior

MIRROR = REPO.parent / "shared" / "mirror"
ROLES = ("graph500", "npb", "ior")
# What each role stands in with when it has no source.
STAND_INS = {
    "graph500": "corun graph_bfs (kernels/graph_bfs)",
    "npb": "corun mpi_stencil (kernels/mpi_stencil.c)",
    "ior": "corun pfs_read (kernels/pfs_read)",
}

needs_mirror = pytest.mark.skipif(not MIRROR.is_dir(), reason=f"no source mirror at {MIRROR}")


def defaults(role):
    return yaml.safe_load((REPO / "roles" / role / "defaults" / "main.yml").read_text())


def default_pins(role):
    d = defaults(role)
    return d[f"{role}_source_pins"][d[f"{role}_version"]]


def paths(tmp_path, role):
    """The installation, its staging folder and the manifest of a role run by source_vars."""
    install = tmp_path / f"{role}_install_dir"
    return install, Path(f"{install}.staging"), tmp_path / "upstream.d" / f"{role}.json"


def manifest(tmp_path, role):
    return json.loads(paths(tmp_path, role)[2].read_text())[role]


def unreachable_source():
    return {"name": "upstream", "file": "x.tar.gz", "sha256": "0" * 64, "url": UNREACHABLE}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("role", ROLES)
def test_a_wrong_sha256_in_the_mirror_is_one_line_and_nothing_is_installed(tmp_path, role):
    pin = default_pins(role)[0]
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    actual = fake_tarball(mirror / pin["file"])
    playbook = role_play(tmp_path / "play.yml", role, source_vars(tmp_path, role, corun_mirror=str(mirror)))
    message = final_failure(run_playbook(playbook))
    assert message == (
        f"{role}: {pin['file']} in {mirror} has sha256 {actual}, expected {pin['sha256']} "
        "(pinned source 'upstream'); remove it or fix the pin"
    )
    assert not any(p.exists() for p in paths(tmp_path, role))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("role", ROLES)
def test_a_download_with_a_wrong_sha256_is_one_line_and_removed(tmp_path, web_root, role):  # noqa: F811
    root, base = web_root
    fake_tarball(root / "x.tar.gz")
    actual = hashlib.sha256((root / "x.tar.gz").read_bytes()).hexdigest()
    url = f"{base}/x.tar.gz"
    source = {**unreachable_source(), "url": url}
    playbook = role_play(tmp_path / "play.yml", role, source_vars(tmp_path, role, **{f"{role}_sources": [source]}))
    message = final_failure(run_playbook(playbook))
    assert message == (
        f"{role}: x.tar.gz fetched from {url} has sha256 {actual}, expected {'0' * 64} "
        "(pinned source 'upstream'); remove it or fix the pin"
    )
    assert list((tmp_path / f"{role}_download_dir").iterdir()) == []
    assert not any(p.exists() for p in paths(tmp_path, role))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("role", ROLES)
def test_no_source_stops_in_one_line_when_required(tmp_path, role):
    variables = source_vars(tmp_path, role, **{f"{role}_sources": [unreachable_source()], f"{role}_required": True})
    message = final_failure(run_playbook(role_play(tmp_path / "play.yml", role, variables)))
    assert "\n" not in message
    assert message.startswith(f"{role}: no source archive: x.tar.gz (sha256 {'0' * 64}); corun_mirror is empty; "), (
        message
    )
    assert f"{UNREACHABLE} cannot be fetched (" in message
    assert message.endswith("; set corun_mirror to a folder holding one of them"), message
    assert not any(p.exists() for p in paths(tmp_path, role))


@pytest.mark.timeout(180)
@pytest.mark.parametrize("role", ROLES)
def test_no_source_records_the_stand_in(tmp_path, role):
    variables = source_vars(tmp_path, role, **{f"{role}_sources": [unreachable_source()]})
    playbook = role_play(tmp_path / "play.yml", role, variables, gather_facts=True)
    first = run_playbook(playbook)
    assert first.returncode == 0, output(first)
    entry = manifest(tmp_path, role)
    assert entry["status"] == "stand-in" and entry["stand_in"] == STAND_INS[role]
    assert entry["reason"].startswith(f"{role}: no source archive: x.tar.gz"), entry
    install, staging, _ = paths(tmp_path, role)
    assert not install.exists() and not staging.exists()
    second = run_playbook(playbook)
    assert second.returncode == 0, output(second)
    assert recap(second) == (0, 0), output(second)


@pytest.mark.root
@pytest.mark.timeout(120)
def test_a_mirror_file_that_is_no_archive_is_one_line_and_nothing_is_installed(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    page = mirror / "graph500-2.1.4.tar.gz"
    page.write_bytes(b"<html>404</html>\n")
    source = {"name": "upstream", "file": page.name, "sha256": hashlib.sha256(page.read_bytes()).hexdigest()}
    variables = source_vars(tmp_path, "graph500", corun_mirror=str(mirror), graph500_sources=[source])
    message = final_failure(run_playbook(role_play(tmp_path / "play.yml", "graph500", variables, gather_facts=True)))
    install, staging, manifest_file = paths(tmp_path, "graph500")
    assert message.startswith(f"graph500: cannot unpack {page} into {staging} ("), message
    assert not install.exists() and not manifest_file.exists()


def provision(tmp_path, role, timeout=900, **extra):
    """Run ROLE with the repository's mirror, its folders in TMP_PATH; returns (playbook, proc)."""
    variables = source_vars(tmp_path, role, corun_mirror=str(MIRROR), **extra)
    playbook = tmp_path / f"play-{len(list(tmp_path.glob('play-*.yml')))}.yml"
    role_play(playbook, role, variables, gather_facts=True)
    return playbook, run_playbook(playbook, timeout=timeout)


def check_recorded_source(tmp_path, role, pin, origin="mirror", path=None):
    entry = manifest(tmp_path, role)
    install, staging, _ = paths(tmp_path, role)
    assert entry["status"] == "built" and entry["install_dir"] == str(install)
    source = entry["source"]
    assert {k: source[k] for k in ("name", "file", "sha256")} == {k: pin[k] for k in ("name", "file", "sha256")}
    assert (source["origin"], source["path"]) == (origin, str(path or MIRROR / pin["file"]))
    record = json.loads((install / "corun-build.json").read_text())
    assert record["source"]["sha256"] == pin["sha256"] and record["settings"] == entry["settings"]
    assert not staging.exists()
    for program in entry["programs"].values():
        assert os.access(program, os.X_OK), program
    return entry


def again_changes_nothing(playbook):
    proc = run_playbook(playbook)
    assert proc.returncode == 0, output(proc)
    assert recap(proc) == (0, 0), output(proc)
    assert "TASK [source_tarball : Put the new build in place]" not in proc.stdout


@needs_mirror
@pytest.mark.root
@pytest.mark.timeout(600)
@pytest.mark.parametrize("version", ["2.1.4", "3.0.0"])
def test_graph500_builds_from_the_mirror(tmp_path, version):
    pin = defaults("graph500")["graph500_source_pins"][version][0]
    playbook, proc = provision(tmp_path, "graph500", graph500_version=version)
    assert proc.returncode == 0, output(proc)
    entry = check_recorded_source(tmp_path, "graph500", pin)
    assert entry["version"] == version
    if version == "3.0.0":
        assert set(entry["programs"]) == {"graph500_reference_bfs", "graph500_reference_bfs_sssp"}
        run = subprocess.run(
            ["mpirun", "--allow-run-as-root", "-np", "2", entry["programs"]["graph500_reference_bfs"], "8", "8"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, run.stderr
        assert graph500.parse_output(run.stdout)["mpi_processes"] == 2
    else:
        assert set(entry["programs"]) == {"seq-csr", "omp-csr"}
        assert entry["settings"]["cppflags"] == "-DUSE_MMAP_LARGE_EXT"
        tmpdir = tmp_path / "tmpdir"
        tmpdir.mkdir()
        for name in ("seq-csr", "omp-csr"):
            argv = graph500.argv(entry["programs"][name], version, 8, 8)
            run = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=graph500.env(str(tmpdir)))
            assert run.returncode == 0, run.stderr
            out = graph500.parse_output(run.stdout)
            assert (out["scale"], out["edgefactor"], out["bfs_roots"]) == (8, 8, 64)
            assert out["bfs_harmonic_mean_teps"] > 0
        # The CSR arrays live in a file under $TMPDIR: without a folder there, no run.
        run = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=graph500.env(str(tmp_path / "no")))
        assert run.returncode != 0 and "xmalloc_large_ext failed to make a file" in run.stderr
    again_changes_nothing(playbook)


@needs_mirror
@pytest.mark.root
@pytest.mark.timeout(600)
def test_a_failed_rebuild_leaves_the_installed_build(tmp_path):
    playbook, proc = provision(tmp_path, "graph500")
    assert proc.returncode == 0, output(proc)
    install, staging, manifest_file = paths(tmp_path, "graph500")
    record, listed = (install / "corun-build.json").read_text(), manifest_file.read_text()
    _, broken = provision(tmp_path, "graph500", graph500_cflags="-g -std=c99 --no-such-flag")
    message = final_failure(broken)
    assert message.startswith(f"graph500: make failed in {staging} ("), message
    assert message.endswith("; the installed build is unchanged"), message
    assert staging.is_dir()  # the half-built tree stays where it was built, never installed
    assert (install / "corun-build.json").read_text() == record and manifest_file.read_text() == listed
    assert os.access(install / "seq-csr" / "seq-csr", os.X_OK)
    again_changes_nothing(playbook)


@needs_mirror
@pytest.mark.root
@pytest.mark.timeout(600)
def test_graph500_downloads_its_upstream_archive_without_a_mirror(tmp_path, web_root):  # noqa: F811
    pin = default_pins("graph500")[0]
    root, base = web_root
    shutil.copy(MIRROR / pin["file"], root / "served.tar.gz")
    source = {**pin, "url": f"{base}/served.tar.gz"}
    variables = source_vars(tmp_path, "graph500", graph500_sources=[source])
    playbook = role_play(tmp_path / "play.yml", "graph500", variables, gather_facts=True)
    proc = run_playbook(playbook, timeout=600)
    assert proc.returncode == 0, output(proc)
    kept = tmp_path / "graph500_download_dir" / pin["file"]
    check_recorded_source(tmp_path, "graph500", pin, origin="download", path=kept)
    again_changes_nothing(playbook)


@needs_mirror
@pytest.mark.root
@pytest.mark.timeout(900)
def test_npb_builds_from_the_git_import_in_the_mirror(tmp_path):
    pins = default_pins("npb")
    assert [p["name"] for p in pins] == ["upstream", "git-import"]
    # The mirror has no NASA archive: the git import of its MPI part is taken, and named so.
    assert not (MIRROR / pins[0]["file"]).exists()
    playbook, proc = provision(tmp_path, "npb", npb_benchmarks=["ep", "is"], npb_classes=["S"], npb_nprocs=[1, 2])
    assert proc.returncode == 0, output(proc)
    entry = check_recorded_source(tmp_path, "npb", pins[1])
    assert sorted(entry["programs"]) == ["ep.S.1", "ep.S.2", "is.S.1", "is.S.2"]
    assert (entry["classes"], entry["nprocs"]) == (["S"], [1, 2])
    for name in ("ep.S.2", "is.S.2"):
        run = subprocess.run(
            ["mpirun", "--allow-run-as-root", "-np", "2", entry["programs"][name]],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        out = npb.parse_output(run.stdout)
        assert out["verified"] and out["processes"] == 2 and out["benchmark"] == name[:2]
        assert out["class"] == "S" and out["time_s"] >= 0
    again_changes_nothing(playbook)


@needs_mirror
@pytest.mark.root
@pytest.mark.timeout(900)
def test_ior_builds_from_the_mirror_and_its_summary_is_read(tmp_path):
    pin = default_pins("ior")[0]
    playbook, proc = provision(tmp_path, "ior")
    assert proc.returncode == 0, output(proc)
    entry = check_recorded_source(tmp_path, "ior", pin)
    assert set(entry["programs"]) == {"ior", "mdtest"}
    summary = tmp_path / "ior.json"
    argv = ior.ior_argv(
        entry["programs"]["ior"],
        str(tmp_path),
        str(summary),
        transfer_size=64 << 10,
        block_size=1 << 20,
        write=True,
        read=True,
    )
    run = subprocess.run(
        ["mpirun", "--allow-run-as-root", "-np", "2", *argv], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stdout + run.stderr
    rows = ior.parse_file(summary)
    assert sorted(r["operation"] for r in rows) == ["read", "write"]
    for r in rows:
        assert r["bw_mean_mib_s"] > 0 and r["tasks"] == 2 and r["api"] == "POSIX"
        assert (r["transfer_size_bytes"], r["block_size_bytes"]) == (64 << 10, 1 << 20)
    again_changes_nothing(playbook)
