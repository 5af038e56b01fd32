"""The emulated rotating disk as a block device: FUSE daemon, loop device (direct I/O), ext4,
host queue settings read back; teardown through the undo journal, also after a SIGKILL of the
runner or of the daemon. Root only."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from corun.emulators import ROTATING_DISK
from corun.errors import ConfigError, CorunError
from corun.machine import rotating_disk as rd
from corun.machine import run_device
from corun.machine.recovery import recover_stale
from corun.machine.state import Journal
from tests.emulators.disk_helpers import loop_device

pytestmark = pytest.mark.root
REPO = Path(__file__).resolve().parents[2]
SMALL = {"size_bytes": 256 << 20}


@pytest.fixture(scope="module", autouse=True)
def built():
    subprocess.run(["make", "-s", "-C", str(REPO / "emulators/rotating_disk")], check=True)


@pytest.fixture
def state(tmp_path, monkeypatch):
    d = tmp_path / "state"
    d.mkdir()
    monkeypatch.setenv("CORUN_STATE_DIR", str(d))
    return d


def mounted(target) -> bool:
    return rd._mount_entry(str(target)) is not None


def loops_on(image) -> list[str]:
    return rd._loops_of(str(image))


def assert_clean(disk_or_paths):
    target, fuse_dir, image = disk_or_paths
    assert not mounted(target), f"{target} still mounted"
    assert not mounted(fuse_dir), f"{fuse_dir} still mounted"
    assert not loops_on(image), f"loop devices left on {image}"


def test_resolve_fills_defaults_and_rejects_bad_values():
    c = rd.resolve({}, ROTATING_DISK)
    assert c["host"]["read_ahead_kb"] == 128 and c["host"]["elevator"] == "mq-deadline"
    assert Path(c["preset_file"]).name == "sata_7200_2010.conf"
    for bad, key in [
        ({"preset": "floppy"}, "preset"),
        ({"stroke": 0}, "stroke"),
        ({"queue_window": 64}, "queue_window"),
        ({"size_bytes": 1000}, "size_bytes"),
        ({"host": {"read_ahead": 1}}, "host.read_ahead"),
        ({"host": {"elevator": "cfq"}}, "host.elevator"),
    ]:
        with pytest.raises(ConfigError, match=f"device.rotating_disk.{key}"):
            rd.resolve(bad, ROTATING_DISK, "s.yaml")


def test_setup_verifies_settings_and_teardown_leaves_nothing(state, tmp_path):
    j = Journal("t-setup")
    disk = rd.RotatingDisk(
        rd.resolve({**SMALL, "host": {"nr_requests": 64}}, ROTATING_DISK), j, tmp_path / "data", "t-setup"
    )
    paths = (disk.target, disk.fuse_dir, disk.image)
    try:
        disk.start()
        name = Path(disk.loop).name
        assert Path(f"/sys/block/{name}/loop/dio").read_text().strip() == "1"
        assert disk.host.after_mount == {
            "rotational": 1,
            "elevator": "mq-deadline",
            "nr_requests": 64,
            "max_sectors_kb": 128,
            "read_ahead_kb": 128,
        }
        (tmp_path / "data" / "f").write_bytes(os.urandom(4 << 20))
        os.sync()
        disk.check()
        disk.record_end()
        assert disk.final_state["counters"]["writes"] > 0
    finally:
        errs = j.unwind()
    assert errs == []
    assert_clean(paths)
    disk.after_teardown()
    d = disk.describe()
    assert d["daemon_status"] == "exited" and d["counters"]["bytes_written"] >= 4 << 20
    assert d["model"]["params"]["rpm"] == 7200 and d["host_settings"]["after_mount"]["read_ahead_kb"] == 128
    assert not j.path.exists()


@contextmanager
def started_disk(tmp_path, name, fill):
    """A started small disk on TMP_PATH/data holding the file f of FILL bytes; afterwards its
    journal is unwound within 60 s and nothing of it is left."""
    j = Journal(name)
    disk = rd.RotatingDisk(rd.resolve(SMALL, ROTATING_DISK), j, tmp_path / "data", name)
    paths = (disk.target, disk.fuse_dir, disk.image)
    try:
        disk.start()
        (tmp_path / "data" / "f").write_bytes(fill)
        yield disk
    finally:
        t0 = time.monotonic()
        j.unwind()
        assert time.monotonic() - t0 < 60
    assert_clean(paths)


def test_daemon_killed_mid_run_fails_clearly_and_tears_down(state, tmp_path):
    with started_disk(tmp_path, "t-kill-daemon", b"x" * 65536) as disk:
        os.sync()
        disk.proc.send_signal(signal.SIGKILL)
        disk.proc.wait(timeout=10)
        with pytest.raises(CorunError, match="rotating_disk emulator .* killed by signal 9"):
            disk.check()
        # a reader on the dead disk gets an error, it does not hang
        reader = subprocess.run(
            ["dd", f"if={disk.loop}", "of=/dev/null", "bs=4k", "count=1", "skip=9999", "iflag=direct"],
            capture_output=True,
            timeout=30,
        )
        assert reader.returncode != 0


def test_stopped_daemon_does_not_hang_teardown(state, tmp_path):
    with started_disk(tmp_path, "t-stop-daemon", b"y" * 65536) as disk:
        disk.proc.send_signal(signal.SIGSTOP)


RUNNER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, sys.argv[1])
    from corun.emulators import ROTATING_DISK
    from corun.machine import rotating_disk as rd
    from corun.machine.state import Journal
    j = Journal("t-kill-runner")
    disk = rd.RotatingDisk(rd.resolve({"size_bytes": 256 << 20}, ROTATING_DISK), j, sys.argv[2], "t-kill-runner")
    disk.start()
    open(sys.argv[2] + "/busy", "wb").write(b"z" * 1048576)
    print(disk.fuse_dir, disk.image, disk.loop, disk.proc.pid, flush=True)
    time.sleep(600)
""")


def test_sigkill_of_the_runner_then_recover_leaves_nothing(state, tmp_path):
    script = tmp_path / "runner.py"
    script.write_text(RUNNER)
    data = tmp_path / "data"
    p = subprocess.Popen(
        [sys.executable, str(script), str(REPO), str(data)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "CORUN_STATE_DIR": str(state)},
    )
    line = p.stdout.readline().split()
    assert len(line) == 4, "the runner did not set up the disk"
    fuse_dir, image, loop, dpid = line
    assert mounted(data)
    p.kill()
    p.wait()
    assert mounted(data)  # left behind by the killed runner ...
    done = recover_stale(state)  # ... until the next corun command
    assert any("t-kill-runner" in x for x in done), done
    assert not any("errors" in x for x in done), done
    assert_clean((str(data), fuse_dir, image))
    assert not Path(f"/proc/{dpid}").exists() or Path(f"/proc/{dpid}/stat").read_text().split()[2] == "Z"


def test_refuses_to_format_a_device_holding_a_file_system(tmp_path):
    img = tmp_path / "fs.img"
    with loop_device(img, ext4=True) as loop:
        before = img.read_bytes()[: 1 << 20]
        with pytest.raises(ConfigError) as exc:
            run_device.check_block_device(loop, True, "s.yaml", "device.block")
        msg = str(exc.value)
        assert msg.startswith(f"s.yaml: device.block.path: '{loop}' (expected an empty device")
        assert "ext4" in msg and "\n" not in msg
        assert img.read_bytes()[: 1 << 20] == before
        assert run_device.check_block_device(loop, False) == "use"
    with loop_device(tmp_path / "empty.img") as loop:
        assert run_device.check_block_device(loop, True) == "format"


def test_not_a_block_device(tmp_path):
    with pytest.raises(ConfigError, match="expected a block device"):
        run_device.check_block_device(str(tmp_path), True)
