"""The parsec role: PARSEC 3.0's programs built by parsecmgmt from the pinned archive, and run.

The checks of the pins run anywhere: a wrong sha256 of the source or of an input archive is one
line and nothing is installed; without a source the stand-in is recorded. The build tests need
the repository's mirror (../shared/mirror) and root: one builds swaptions alone (no library, the
cheapest build) from a fresh folder and provisions again expecting no change; the others take
the build that `make provision` made (/opt/corun/parsec-3.0, the default install folder: CI
provisions before it tests), check that a second run of the role changes nothing, and run each
program built on its simdev (or, for swaptions, its simdev command line) input with its own
output check.
"""

import json
import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
import yaml
from test_provision import REPO, output
from test_roles_pinned import MIRROR, needs_mirror
from test_roles_upstream import (
    UNREACHABLE,
    fake_tarball,
    final_failure,
    recap,
    role_play,
    run_playbook,
    source_vars,
)

from corun.run import parsec as parsec_runs
from corun.run.workloads import JobTemplate

DEFAULTS = yaml.safe_load((REPO / "roles" / "parsec" / "defaults" / "main.yml").read_text())
PIN = DEFAULTS["parsec_source_pins"]["3.0"][0]
INPUTS = DEFAULTS["parsec_inputs"][0]
INSTALLED = Path("/opt/corun/parsec-3.0")
MANIFEST = Path("/var/lib/corun/upstream.d/parsec.json")


def paths(tmp_path):
    install = tmp_path / "parsec_install_dir"
    return [
        install,
        Path(f"{install}.staging"),
        tmp_path / "parsec_inputs_dir",
        tmp_path / "upstream.d" / "parsec.json",
    ]


@pytest.mark.timeout(120)
def test_a_wrong_sha256_of_the_source_is_one_line_and_nothing_is_installed(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    actual = fake_tarball(mirror / PIN["file"])
    variables = source_vars(tmp_path, "parsec", corun_mirror=str(mirror), parsec_inputs=[INPUTS])
    message = final_failure(run_playbook(role_play(tmp_path / "play.yml", "parsec", variables)))
    assert message == (
        f"parsec: {PIN['file']} in {mirror} has sha256 {actual}, expected {PIN['sha256']} "
        "(pinned source 'git-import'); remove it or fix the pin"
    )
    assert not any(p.exists() for p in paths(tmp_path))


@needs_mirror
@pytest.mark.timeout(120)
def test_a_wrong_sha256_of_an_input_archive_is_one_line_and_nothing_is_installed(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / PIN["file"]).symlink_to(MIRROR / PIN["file"])
    actual = fake_tarball(mirror / INPUTS["file"])
    variables = source_vars(tmp_path, "parsec", corun_mirror=str(mirror), parsec_inputs=[INPUTS])
    message = final_failure(run_playbook(role_play(tmp_path / "play.yml", "parsec", variables)))
    assert message == (
        f"parsec: {INPUTS['file']} in {mirror} has sha256 {actual}, expected {INPUTS['sha256']} "
        f"(pinned input archive '{INPUTS['name']}' of parsec_inputs); remove it or fix the pin"
    )
    assert not any(p.exists() for p in paths(tmp_path))


@pytest.mark.timeout(180)
def test_no_source_records_the_stand_in_and_changes_nothing_again(tmp_path):
    source = {"name": "upstream", "file": "x.tar.gz", "sha256": "0" * 64, "url": UNREACHABLE}
    variables = source_vars(tmp_path, "parsec", parsec_sources=[source], parsec_inputs=[INPUTS])
    playbook = role_play(tmp_path / "play.yml", "parsec", variables, gather_facts=True)
    first = run_playbook(playbook)
    assert first.returncode == 0, output(first)
    entry = json.loads(paths(tmp_path)[3].read_text())["parsec"]
    assert entry["status"] == "stand-in" and "Debian's x264" in entry["stand_in"], entry
    assert entry["reason"].startswith("parsec: no source archive: x.tar.gz"), entry
    assert not any(p.exists() for p in paths(tmp_path)[:3])
    second = run_playbook(playbook)
    assert second.returncode == 0, output(second)
    assert recap(second) == (0, 0), output(second)


@needs_mirror
@pytest.mark.root
@pytest.mark.timeout(900)
def test_swaptions_builds_from_the_mirror_and_a_second_run_changes_nothing(tmp_path):
    variables = source_vars(tmp_path, "parsec", corun_mirror=str(MIRROR), parsec_packages=["swaptions"])
    playbook = role_play(tmp_path / "play.yml", "parsec", variables, gather_facts=True)
    proc = run_playbook(playbook, timeout=900)
    assert proc.returncode == 0, output(proc)
    install, staging, _, manifest_file = paths(tmp_path)
    entry = json.loads(manifest_file.read_text())["parsec"]
    assert entry["status"] == "built" and entry["release"] == "3.0-beta-20150206"
    assert {k: entry["source"][k] for k in ("name", "file", "sha256")} == {
        k: PIN[k] for k in ("name", "file", "sha256")
    }
    assert entry["source"]["origin"] == "mirror" and not staging.exists()
    program = Path(entry["programs"]["swaptions"])
    assert program == install / "pkgs/apps/swaptions/inst/amd64-linux.corun/bin/swaptions"
    # corun's configuration is files of its own beside PARSEC's, which are unchanged
    assert (install / "config" / "corun.bldconf").is_file()
    assert "gcc-pthreads.bldconf" in (install / "pkgs/apps/swaptions/parsec/corun.bldconf").read_text()
    run = subprocess.run([program, "-ns", "2", "-sm", "100", "-nt", "1"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and len(swaption_prices(run.stdout + run.stderr)) == 2, run.stdout + run.stderr
    again = run_playbook(playbook)
    assert again.returncode == 0, output(again)
    assert recap(again) == (0, 0), output(again)
    assert "TASK [source_tarball : Put the new build in place]" not in again.stdout


def swaption_prices(out: str) -> list[float]:
    """The prices swaptions prints, one line per swaption."""
    return [float(m) for m in re.findall(r"SwaptionPrice:\s*([0-9.eE+-]+)", out)]


def installed() -> dict:
    if not MANIFEST.is_file():
        pytest.skip(f"no PARSEC build provisioned ({MANIFEST})")
    entry = json.loads(MANIFEST.read_text())["parsec"]
    if entry.get("status") != "built":
        pytest.skip(f"parsec is a stand-in here: {entry.get('reason')}")
    return entry


@needs_mirror
@pytest.mark.root
@pytest.mark.timeout(300)
def test_the_provisioned_build_is_pinned_and_a_second_run_changes_nothing(tmp_path):
    entry = installed()
    assert entry["source"]["sha256"] == PIN["sha256"] and entry["install_dir"] == str(INSTALLED)
    record = json.loads((INSTALLED / "corun-build.json").read_text())
    assert record["settings"] == entry["settings"] and record["settings"]["configuration"] == "corun"
    for program in entry["programs"].values():
        assert os.access(program, os.X_OK), program
    # the role as make provision runs it (its defaults, the inventory's mirror), once more
    playbook = role_play(
        tmp_path / "play.yml", "parsec", {"parsec_packages": sorted(entry["programs"])}, gather_facts=True
    )
    proc = run_playbook(playbook, timeout=300)
    assert proc.returncode == 0, output(proc)
    assert recap(proc) == (0, 0), output(proc)


def simdev(entry: dict, pkg: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess, Path]:
    """Run PARSEC's `pkg` on its simdev input as its simdev.runconf says, in a fresh folder."""
    prog = parsec_runs.program(entry, pkg, "simdev", 1, JobTemplate)
    assert prog is not None and prog.input_labels["input_provenance"] in ("real", "exact"), prog
    run_dir = tmp_path / pkg
    run_dir.mkdir()
    if prog.input_tar is not None:
        shutil.unpack_archive(prog.input_tar, run_dir)
    run = subprocess.run(prog.template.cmd, cwd=run_dir, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"{prog.template.cmd}: {run.stdout[-2000:]}{run.stderr[-2000:]}"
    return run, run_dir


@pytest.mark.root
@pytest.mark.timeout(900)
@pytest.mark.parametrize("pkg", ["swaptions", "x264", "vips", "freqmine", "bodytrack", "raytrace"])
def test_each_program_built_runs_its_simdev_input(tmp_path, pkg):
    entry = installed()
    if pkg not in entry["programs"]:
        pytest.skip(f"{pkg} is not among parsec_packages here")
    run, run_dir = simdev(entry, pkg, tmp_path)
    if pkg == "swaptions":  # -ns 3: three prices, each positive
        prices = swaption_prices(run.stdout + run.stderr)  # swaptions prints them on stderr
        assert len(prices) == 3 and all(p > 0 for p in prices), run.stdout
    elif pkg == "x264":  # eledream_64x36_3.y4m: 3 frames, one slice NAL unit each (IDR or not)
        assert re.search(r"encoded 3 frames", run.stdout + run.stderr), run.stdout + run.stderr
        data = (run_dir / "eledream.264").read_bytes()
        assert len(re.findall(rb"\x00\x00\x01[\x01\x05\x21\x25\x41\x45\x61\x65]", data)) == 3
    elif pkg == "vips":  # output.v: the benchmark's pipeline output, a VIPS image of its own size
        head = (run_dir / "output.v").read_bytes()[:64]
        width, height, bands = struct.unpack("<iii", head[4:16])
        assert head[:4] == b"\xb6\xa6\xf2\x08" and (width, height) == VIPS_SIMDEV_OUTPUT, (width, height, bands)
    elif pkg == "freqmine":
        assert run.stdout.strip(), run.stdout
    elif pkg == "bodytrack":  # sequenceB_1: one frame, one pose of 31 numbers, and its picture
        poses = (run_dir / "sequenceB_1" / "poses.txt").read_text().split("\n")
        assert len(poses[0].split()) == 31 and not "".join(poses[1:]).strip(), poses
        assert (run_dir / "sequenceB_1" / "Result0000.bmp").stat().st_size == 54 + 640 * 480 * 3
    elif pkg == "raytrace":  # bunny.obj: the Stanford bunny's 68,941 triangles, one frame
        assert "adding 68941 triangles" in run.stdout and "Rendering 1 frames" in run.stdout, run.stdout
    # vips and raytrace build against Debian's libraries, and the manifest says so
    bundled = {"vips": "pkgs/libs/glib", "raytrace": "pkgs/libs/mesa"}
    if pkg in bundled:
        assert "Debian 12's" in entry["debian_libraries"][pkg], entry["debian_libraries"]
        assert not (Path(entry["install_dir"]) / bundled[pkg] / "inst").exists()


# im_benchmark crops, shrinks and expands the image back (im_benchmarkn), and writes it as sRGB:
# simdev's barbados_256x288.v gives a 256x288 image (measured on the provisioned build).
VIPS_SIMDEV_OUTPUT = (256, 288)


def test_generated_inputs_have_simlarge_formats(tmp_path):
    img = parsec_runs.make_vips_labq(tmp_path / "x.v", 20, 10)
    data = img.read_bytes()
    assert len(data) == 64 + 20 * 10 * 4
    assert data[:4] == b"\xb6\xa6\xf2\x08" and struct.unpack("<iiiiiii", data[4:32]) == (20, 10, 4, 8, 0, 2, 13)
    assert parsec_runs.generated_bytes("vips") == 64 + 2662 * 5500 * 4  # bigben_2662x5500.v, about 58.6 MB
    # eledream_640x360_128.y4m is 44,237,628 bytes; the generated clip differs in its header only
    assert 0 < 44_237_628 - parsec_runs.generated_bytes("x264") < 64
    mesh = parsec_runs.make_obj_mesh(tmp_path / "m.obj", 1000)
    lines = mesh.read_text().splitlines()
    assert sum(line.startswith("f ") for line in lines) == 1000
    again = parsec_runs.make_vips_labq(tmp_path / "y.v", 20, 10)
    assert again.read_bytes() == data  # seeded
