"""corun run with device.kind rotating_disk and block: the run's file system is built, populated,
recorded in metadata.json and gone afterwards; bad device settings are one line and nothing
starts; a daemon killed mid-run fails the run naming the emulator."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from corun.emulators import ROTATING_DISK
from corun.errors import ConfigError
from corun.machine import rotating_disk as rd
from tests.emulators.disk_helpers import loop_device

PY = sys.executable
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def built():
    subprocess.run(["make", "-s", "-C", str(REPO / "emulators/rotating_disk")], check=True)


def run(tmp_path, spec, env=None):
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return subprocess.run(
        [PY, "-m", "corun", "run", str(path), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


def base(tmp_path, **device):
    return {
        "name": "disk",
        "jobs": [{"name": "a", "cmd": ["true"]}],
        "device": {
            "path": str(tmp_path / "mnt"),
            "kind": "rotating_disk",
            "rotating_disk": {"size_bytes": 256 << 20},
            **device,
        },
    }


@pytest.mark.parametrize(
    "device,needle",
    [
        ({"rotating_disk": {"preset": "floppy"}}, "device.rotating_disk.preset: 'floppy' (expected a preset name"),
        ({"rotating_disk": {"stroke": 2}}, "device.rotating_disk.stroke: 2"),
        ({"rotating_disk": {"host": {"elevator": "cfq"}}}, "device.rotating_disk.host.elevator: 'cfq'"),
        ({"kind": "floppy"}, "device.kind: 'floppy'"),
        ({"path": "."}, "device.path: '.' (expected an empty or new folder"),
        ({"populate": [{"src": "/no/such/input"}]}, "device.populate[0].src: '/no/such/input'"),
        (
            {"kind": "block", "block": {"path": "/dev/null", "format": True}},
            "device.block.path: '/dev/null' (expected a block device",
        ),
        ({"kind": "throttle", "path": ".", "populate": [{"src": "."}]}, "device.populate"),
    ],
)
def test_bad_device_is_one_line_and_nothing_starts(tmp_path, device, needle):
    spec = base(tmp_path)
    spec["device"].update(device)
    res = run(tmp_path, spec)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and lines[0].startswith("corun: "), res.stderr
    assert needle in lines[0], lines[0]
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.incomplete").exists()
    assert not (tmp_path / "mnt").exists() or rd._mount_entry(str(tmp_path / "mnt")) is None


@pytest.mark.root
def test_block_device_holding_ext4_is_refused_untouched(tmp_path):
    with loop_device(tmp_path / "fs.img", ext4=True) as loop:
        before = subprocess.run(["blkid", "-p", "-o", "export", loop], capture_output=True, text=True).stdout
        spec = base(tmp_path, kind="block", block={"path": loop, "format": True})
        res = run(tmp_path, spec)
        assert res.returncode == 2, res.stderr
        assert res.stderr.strip() == (
            f"corun: {tmp_path / 'spec.yaml'}: device.block.path: '{loop}' "
            "(expected an empty device to format (it holds ext4; wipe it yourself "
            "if it is spare))"
        )
        assert subprocess.run(["blkid", "-p", "-o", "export", loop], capture_output=True, text=True).stdout == before
        assert rd._mount_entry(str(tmp_path / "mnt")) is None


@pytest.mark.root
def test_run_on_the_emulated_disk_records_model_settings_and_counters(tmp_path):
    data = tmp_path / "inputs"
    data.mkdir()
    (data / "in.bin").write_bytes(os.urandom(16 << 20))
    mnt = tmp_path / "mnt"
    spec = base(tmp_path, populate=[{"src": str(data), "dst": ""}])
    spec["jobs"] = [
        {"name": "reader", "repeat": 2, "cmd": ["dd", f"if={mnt}/inputs/in.bin", "of=/dev/null", "bs=128k"]}
    ]
    spec["monitors"] = {"enabled": ["iostat"]}
    res = run(tmp_path, spec, env={"CORUN_STATE_DIR": str(tmp_path / "state")})
    assert res.returncode == 0, res.stderr
    out = tmp_path / "out"
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["device_kind"] == "rotating_disk"
    ds = meta["device_setup"]
    assert ds["preset"] == "sata_7200_2010" and ds["model"]["params"]["rpm"] == 7200
    assert ds["host_settings"]["after_mount"] == {
        "rotational": 1,
        "elevator": "mq-deadline",
        "nr_requests": ds["host_settings"]["after_mount"]["nr_requests"],
        "max_sectors_kb": 128,
        "read_ahead_kb": 128,
    }
    c = ds["counters"]
    assert c["bytes_read"] >= 16 << 20 and c["requests"] > 0 and c["lateness_p99_ms"] is not None
    # the set-up's steps, timed (a campaign pays them on every run)
    assert set(ds["setup_steps_s"]) == {"daemon", "loop", "mkfs", "mount", "fill", "go_timed"}
    assert all(v >= 0 for v in ds["setup_steps_s"].values())
    assert ds["daemon_status"] == "exited"
    assert meta["device"]["name"].startswith("loop") and meta["device"]["rotational"] is True
    assert (out / "device" / "state.json").exists()
    assert rd._mount_entry(str(mnt)) is None and not rd._loops_of(ds["loop_device"] or "")
    assert not list((tmp_path / "state").glob("*.journal.json"))


@pytest.mark.root
def test_daemon_killed_mid_run_fails_the_run_naming_the_emulator(tmp_path):
    mnt = tmp_path / "mnt"
    state = tmp_path / "state"
    spec = base(tmp_path)
    spec["jobs"] = [
        {"name": "slow", "cmd": ["sh", "-c", f"dd if=/dev/zero of={mnt}/f bs=64k count=64 oflag=direct; sleep 30"]}
    ]

    def killer():
        end = time.monotonic() + 60
        while time.monotonic() < end:
            for st in state.glob("rotating_disk/*/state.json"):
                if not (mnt / "f").exists():  # the job has started writing
                    continue
                try:
                    pid = json.loads(st.read_text())["pid"]
                except (OSError, ValueError, KeyError):
                    continue
                time.sleep(0.5)
                os.kill(pid, signal.SIGKILL)
                return
            time.sleep(0.05)

    t = threading.Thread(target=killer)
    t.start()
    t0 = time.monotonic()
    res = run(tmp_path, spec, env={"CORUN_STATE_DIR": str(state)})
    t.join()
    assert res.returncode != 0
    assert "rotating_disk emulator" in res.stderr and "killed by signal 9" in res.stderr, res.stderr
    assert time.monotonic() - t0 < 25  # the sleeping job was not waited for
    assert rd._mount_entry(str(mnt)) is None
    assert not list(state.glob("*.journal.json"))
    assert not any(
        "corun_rotating_disk" in ln and str(state) in ln for ln in Path("/proc/self/mountinfo").read_text().splitlines()
    )


@pytest.mark.root
def test_overlay_keeps_the_jobs_input_paths(tmp_path):
    data = tmp_path / "data"
    (data / "inputs").mkdir(parents=True)
    payload = os.urandom(8 << 20)
    (data / "inputs" / "in.bin").write_bytes(payload)
    (data / "other.txt").write_text("not copied")
    spec = {
        "name": "overlay",
        "device": {
            "path": str(data),
            "kind": "rotating_disk",
            "rotating_disk": {"size_bytes": 256 << 20, "overlay": True},
            "populate": [{"src": str(data / "inputs")}],
        },
        "jobs": [
            {"name": "reader", "cmd": ["sh", "-c", f"test ! -e {data}/other.txt && sha256sum {data}/inputs/in.bin"]}
        ],
    }
    res = run(tmp_path, spec, env={"CORUN_STATE_DIR": str(tmp_path / "state")})
    assert res.returncode == 0, res.stderr
    out = (tmp_path / "out" / "jobs").glob("*reader.out")
    import hashlib

    assert hashlib.sha256(payload).hexdigest() in next(out).read_text()
    meta = json.loads((tmp_path / "out" / "metadata.json").read_text())
    ds = meta["device_setup"]
    assert ds["overlay"] is True and ds["counters"]["bytes_read"] >= 8 << 20
    assert set(ds["setup_steps_s"]) == {"daemon", "loop", "mkfs", "fill", "mount", "go_timed"}
    assert ds["image_cache"]["state"] == "built" and ds["image_cache"]["keep"] is False  # its first use
    assert ds["populated"] == [{"src": str(data / "inputs"), "dst": str(data / "inputs")}]
    assert rd._mount_entry(str(data)) is None
    assert (data / "other.txt").read_text() == "not copied" and (data / "inputs" / "in.bin").read_bytes() == payload


@pytest.mark.root
def test_a_later_run_starts_from_the_cached_image_until_an_input_changes(tmp_path):
    """The first run builds the image and only marks its content seen; the second builds it
    again and keeps it (sparse); the third starts its disk from it, without mkfs or copy, and
    its job reads the same bytes; an input touched, or the cache turned off, means a new mkfs
    and copy."""
    import hashlib

    data = tmp_path / "data"
    (data / "inputs").mkdir(parents=True)
    payload = os.urandom(8 << 20)
    (data / "inputs" / "in.bin").write_bytes(payload)
    state = tmp_path / "state"

    def one(i, **rotating):
        spec = {
            "name": f"cached{i}",
            "device": {
                "path": str(data),
                "kind": "rotating_disk",
                "rotating_disk": {"size_bytes": 256 << 20, "overlay": True, **rotating},
                "populate": [{"src": str(data / "inputs")}],
            },
            "jobs": [{"name": "reader", "cmd": ["sha256sum", f"{data}/inputs/in.bin"]}],
        }
        (tmp_path / f"s{i}").mkdir()
        res = run(tmp_path / f"s{i}", spec, env={"CORUN_STATE_DIR": str(state)})
        assert res.returncode == 0, res.stderr
        out = tmp_path / f"s{i}" / "out"
        assert hashlib.sha256(payload).hexdigest() in next((out / "jobs").glob("*reader.out")).read_text()
        return json.loads((out / "metadata.json").read_text())["device_setup"]

    once = one(0)
    assert once["image_cache"]["state"] == "built" and once["image_cache"]["keep"] is False
    assert "save_image" not in once["setup_steps_s"] and not Path(once["image_cache"]["file"]).exists()
    first = one(1)
    assert first["image_cache"]["state"] == "built" and first["image_cache"]["keep"] is True
    assert {"mkfs", "save_image"} <= set(first["setup_steps_s"])
    assert first["image_cache"]["key"] == once["image_cache"]["key"]
    img = Path(first["image_cache"]["file"])
    assert img.parent == state / "rotating_disk" / "images"
    assert img.stat().st_size == 256 << 20 and img.stat().st_blocks * 512 < 128 << 20  # sparse
    second = one(2)
    assert second["image_cache"] == {
        "state": "loaded",
        **{k: first["image_cache"][k] for k in ("key", "file", "stored_bytes")},
    }
    assert not {"mkfs", "fill", "save_image"} & set(second["setup_steps_s"])
    assert second["populated"] == first["populated"]
    assert second["counters"]["bytes_read"] >= 8 << 20
    os.utime(data / "inputs" / "in.bin")  # the same bytes, a new time: another key
    stale = img.parent / ".0123.99999.tmp"  # the partial file of a save cut short
    stale.write_bytes(b"x")
    third = one(3)
    assert third["image_cache"]["state"] == "built" and third["image_cache"]["key"] != first["image_cache"]["key"]
    assert not stale.exists() and not list(img.parent.glob(".*.tmp"))
    fourth = one(4, image_cache=False)
    assert fourth["image_cache"] == {"state": "off"} and {"mkfs", "fill"} <= set(fourth["setup_steps_s"])
    assert rd._mount_entry(str(data)) is None and (data / "inputs" / "in.bin").read_bytes() == payload


def test_image_cache_is_true_or_false():
    with pytest.raises(ConfigError, match=r"device.rotating_disk.image_cache: 'yes' \(expected true or false\)"):
        rd.resolve({"image_cache": "yes"}, ROTATING_DISK)


def test_overlay_needs_inputs_under_the_folder(tmp_path):
    (tmp_path / "data").mkdir()
    spec = {
        "name": "overlay",
        "jobs": [{"name": "a", "cmd": ["true"]}],
        "device": {
            "path": str(tmp_path / "data"),
            "kind": "rotating_disk",
            "rotating_disk": {"overlay": True},
            "populate": [{"src": str(tmp_path)}],
        },
    }
    res = run(tmp_path, spec)
    if os.geteuid() != 0:
        pytest.skip("the machine check (root) comes first")
    assert res.returncode == 2 and "device.populate[0].src" in res.stderr and "under device.path" in res.stderr


@pytest.mark.root
def test_working_folder_is_removed_after_the_run(tmp_path):
    state = tmp_path / "state"
    res = run(tmp_path, base(tmp_path), env={"CORUN_STATE_DIR": str(state)})
    assert res.returncode == 0, res.stderr
    assert not list((state / "rotating_disk").glob("*")) if (state / "rotating_disk").exists() else True
    assert (tmp_path / "out" / "device" / "state.json").exists()
