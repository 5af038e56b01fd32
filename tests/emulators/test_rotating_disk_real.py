"""bench/rotating_disk_calibration.py on a real block device (--device, --dir): the same fio suite,
raw reads of the device and files in a folder on it, judged against the preset and compared
side by side with another result; a loop device holding ext4 stands in for a testbed's HDD."""

import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("calibration", REPO / "bench" / "rotating_disk_calibration.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


@pytest.fixture
def real_disk(tmp_path):
    if os.geteuid() != 0 or shutil.which("fio") is None:
        pytest.skip("needs root and fio")
    img = tmp_path / "disk.img"
    with open(img, "wb") as fh:
        fh.truncate(512 << 20)
    loop = subprocess.run(["losetup", "-f", "--show", str(img)], capture_output=True, text=True, check=True)
    dev = loop.stdout.strip()
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    try:
        subprocess.run(["mkfs.ext4", "-q", dev], check=True)
        subprocess.run(["mount", dev, str(mnt)], check=True)
        yield dev, mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)
        subprocess.run(["losetup", "-d", dev], capture_output=True)


@pytest.mark.root
def test_the_suite_runs_on_a_real_device_and_compares(real_disk, tmp_path, capsys):
    dev, mnt = real_disk
    out = tmp_path / "real.json"
    assert bench.main(["--quick", "--readers", "1,2", "--device", dev, "--dir", str(mnt), "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["device"]["kind"] == "block" and doc["device"]["path"] == dev
    assert doc["device"]["model"]["params"]["rpm"] == 7200  # the preset it is judged against
    m = doc["measured"]
    assert m["qd1_random_4k"]["ios"] > 0 and m["qd1_random_4k"]["daemon"] is None
    assert m["sequential_read"]["mb_s"] > 0 and m["verify"]["fio_exit"] == 0
    assert set(m["readers"]) == {"1", "2"}
    checks = {r["check"]: r for r in doc["checks"]}
    assert "qd1 random 4k latency" in checks and "completion lateness p99" not in checks
    assert sorted(p.name for p in mnt.iterdir()) == ["lost+found"]  # its files are gone
    capsys.readouterr()
    assert bench.main(["--compare", str(out), str(out)]) == 0
    text = capsys.readouterr().out
    assert f"B: block {dev}" in text and "qd1 random 4k latency" in text and " 1.00 " in text


@pytest.mark.parametrize(
    "args, message",
    [
        (["--device", "/dev/null", "--dir", "."], "--device: '/dev/null' (expected a block device"),
        (["--device", "/dev/loop0"], "--device: given alone (expected --device and --dir together)"),
        (["--compare", "no.json", "no.json"], "--compare: 'no.json' (expected this bench's JSON"),
    ],
)
def test_bad_real_device_options_are_one_line(args, message, capsys):
    if os.geteuid() != 0 and "--compare" not in args:
        pytest.skip("needs root")
    assert bench.main(args) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
