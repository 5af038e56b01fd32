"""The rotating-disk model's timing on hand-made request sequences (replay mode), its command
line, and the FUSE daemon's serving, counters and teardown (built normally and with ASan/UBSan)."""

import errno
import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from corun.machine.rotating_disk import data_extents

EMU = Path(__file__).resolve().parents[2] / "emulators" / "rotating_disk"
SATA = EMU / "presets" / "sata_7200_2010.conf"
SAS = EMU / "presets" / "sas_15k_2010.conf"
GiB = 1 << 30


@pytest.fixture(scope="module")
def binary():
    subprocess.run(["make", "-s", "-C", str(EMU), "all", "asan"], check=True)
    return EMU / "build" / "corun-rotating-disk"


@pytest.fixture(scope="module")
def asan_binary(binary):
    return EMU / "build" / "asan" / "corun-rotating-disk"


def replay(binary, tmp_path, lines, *args):
    trace = tmp_path / "trace.txt"
    trace.write_text("".join(f"{op} {off} {length}{'' if t is None else f' {t}'}\n" for op, off, length, t in lines))
    res = subprocess.run(
        [str(binary), "--replay", str(trace), *map(str, args)], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def random_reads(n, size=GiB, seed=1, bs=4096):
    r = random.Random(seed)
    return [("R", r.randrange(size // bs) * bs, bs, None) for _ in range(n)]


def test_random_qd1_is_average_seek_plus_half_a_revolution(binary, tmp_path):
    d = replay(binary, tmp_path, random_reads(1500), "--preset", SATA, "--replay-qd", 1)
    expected = 8.5 + 60000 / 7200 / 2
    assert d["summary"]["mean_latency_ms"] == pytest.approx(expected, rel=0.05)
    assert d["derived"]["avg_rotational_latency_ms"] == pytest.approx(4.1667, rel=1e-3)
    assert d["summary"]["seeks"] >= 1490
    for r in d["requests"]:
        assert 0 <= r["rot_ms"] < 8.334
        assert r["seek_ms"] <= 18.0 + 1e-9


def test_sequential_reads_stream_at_the_outer_zone_rate(binary, tmp_path):
    seq = [("R", i * 131072, 131072, None) for i in range(400)]  # 52 MB: the outer zone
    d = replay(binary, tmp_path, seq, "--preset", SATA, "--replay-qd", 1)
    assert d["summary"]["mb_s"] == pytest.approx(125, rel=0.03)
    assert d["summary"]["seeks"] == 0
    assert d["requests"][0]["how"] == "mechanical"
    assert all(r["how"] == "stream" for r in d["requests"][1:])


def test_inner_zone_is_slower(binary, tmp_path):
    start = GiB - 300 * 131072  # the last 40 MB lie in the inner zone
    seq = [("R", start + i * 131072, 131072, None) for i in range(300)]
    d = replay(binary, tmp_path, seq, "--preset", SATA, "--replay-qd", 1)
    assert d["summary"]["mb_s"] == pytest.approx(65, rel=0.05)


def test_stride_reads_pay_a_rotation_but_no_long_seek(binary, tmp_path):
    # 4 KiB every 4 MiB: past the 2 MiB read-ahead, so every read is a positioning,
    # but the distance is small: short seeks and rotational waits, far below random.
    stride = [("R", i * (4 << 20), 4096, None) for i in range(200)]
    d = replay(binary, tmp_path, stride, "--preset", SATA, "--replay-qd", 1)
    mech = [r for r in d["requests"][1:] if r["how"] == "mechanical"]
    assert len(mech) >= 190
    assert max(r["seek_ms"] for r in mech) < 3.0
    assert d["summary"]["mean_latency_ms"] < 8.5
    # within the read-ahead (every 64 KiB), the reads come from the stream, no positioning
    near = [("R", i * 65536, 4096, None) for i in range(200)]
    d2 = replay(binary, tmp_path, near, "--preset", SATA, "--replay-qd", 1)
    assert sum(r["how"] != "mechanical" for r in d2["requests"]) >= 199


def test_reordering_window_raises_qd32_iops(binary, tmp_path):
    reqs = random_reads(1500)
    qd1 = replay(binary, tmp_path, reqs, "--preset", SATA, "--replay-qd", 1)["summary"]["iops"]
    qd32 = replay(binary, tmp_path, reqs, "--preset", SATA, "--replay-qd", 32)["summary"]["iops"]
    fifo = replay(binary, tmp_path, reqs, "--preset", SATA, "--replay-qd", 32, "--queue-window", 1)["summary"]["iops"]
    assert 1.5 <= qd32 / qd1 <= 2.5
    assert fifo == pytest.approx(qd1, rel=0.01)


def test_sptf_picks_the_nearest_and_starvation_limit_bounds_bypasses(binary, tmp_path):
    # All arrive at once: a far request first, then near ones around the head.
    lines = [("R", 0, 4096, 0.0), ("R", GiB - 4096, 4096, 0.0)]
    lines += [("R", 4096 * (8 + 64 * i), 4096, 0.0) for i in range(20)]
    d = replay(binary, tmp_path, lines, "--preset", SATA)
    order = sorted(d["requests"], key=lambda r: r["start_ms"])
    assert order[-1]["offset"] == GiB - 4096  # the far one waits for the near ones
    d = replay(binary, tmp_path, lines, "--preset", SATA, "--starvation-limit", 3)
    far = next(r for r in d["requests"] if r["offset"] == GiB - 4096)
    assert far["bypassed"] == 3
    d = replay(binary, tmp_path, lines, "--preset", SATA, "--queue-window", 1)
    assert [r["i"] for r in sorted(d["requests"], key=lambda r: r["start_ms"])] == list(range(22))


def test_stroke_shortens_random_seeks(binary, tmp_path):
    full = replay(binary, tmp_path, random_reads(800), "--preset", SATA, "--replay-qd", 1)
    tenth = replay(binary, tmp_path, random_reads(800), "--preset", SATA, "--replay-qd", 1, "--stroke", 0.1)
    assert tenth["summary"]["mean_latency_ms"] < full["summary"]["mean_latency_ms"] - 4


def test_seed_sets_the_rotational_positions(binary, tmp_path):
    reqs = random_reads(50)
    a = replay(binary, tmp_path, reqs, "--preset", SATA, "--replay-qd", 1, "--seed", 7)
    b = replay(binary, tmp_path, reqs, "--preset", SATA, "--replay-qd", 1, "--seed", 7)
    c = replay(binary, tmp_path, reqs, "--preset", SATA, "--replay-qd", 1, "--seed", 8)
    assert a["requests"] == b["requests"]
    assert [r["rot_ms"] for r in a["requests"]] != [r["rot_ms"] for r in c["requests"]]


def test_write_cache_back_acknowledges_at_bus_speed(binary, tmp_path):
    w = [("W", i * 65536, 65536, None) for i in range(100)]
    through = replay(binary, tmp_path, w, "--preset", SATA, "--replay-qd", 1)
    back = replay(binary, tmp_path, w, "--preset", SATA, "--replay-qd", 1, "--write-cache", "back")
    assert back["requests"][5]["latency_ms"] < 0.5
    assert through["requests"][5]["latency_ms"] > 1.0
    assert back["summary"]["mean_latency_ms"] < through["summary"]["mean_latency_ms"]


def test_sas_preset(binary, tmp_path):
    d = replay(binary, tmp_path, random_reads(1000), "--preset", SAS, "--replay-qd", 1)
    assert d["summary"]["mean_latency_ms"] == pytest.approx(3.4 + 2.0, rel=0.07)
    seq = [("R", i * 131072, 131072, None) for i in range(400)]
    assert replay(binary, tmp_path, seq, "--preset", SAS, "--replay-qd", 1)["summary"]["mb_s"] == pytest.approx(
        204, rel=0.03
    )


@pytest.mark.parametrize(
    "args,code,text",
    [
        (["--rpm", "abc", "--replay", "-"], 2, "--rpm: 'abc'"),
        (["--stroke", "0", "--replay", "-"], 2, "--stroke: '0'"),
        (["--queue-window", "33", "--replay", "-"], 2, "--queue-window: '33'"),
        (["--write-cache", "sometimes", "--replay", "-"], 2, "expected through or back"),
        (["--preset", "/nonexistent.conf", "--replay", "-"], 2, "--preset"),
        (["--bogus"], 2, "--bogus"),
        ([], 2, "--mount: missing"),
        (["--mount", "x"], 2, "--state: missing"),
        (["--seek-avg-ms", "30", "--replay", "-"], 2, "seek times must rise"),
        (["--load", "x.img", "--replay", "-"], 2, "--load: given with --replay (expected --mount)"),
        (["--help"], 0, ""),
    ],
)
def test_command_line(binary, args, code, text):
    res = subprocess.run([str(binary), *args], capture_output=True, text=True, input="")
    assert res.returncode == code, res.stderr
    assert text in res.stderr
    if "--help" in args:
        assert "(7200)" in res.stdout and "MB/s" in res.stdout


def test_bad_preset_line(binary, tmp_path):
    p = tmp_path / "p.conf"
    p.write_text("rpm = 7200\nspeed = 3\n")
    res = subprocess.run([str(binary), "--preset", str(p), "--replay", "-"], capture_output=True, text=True, input="")
    assert res.returncode == 2 and ":2: speed" in res.stderr


def test_replay_under_asan(asan_binary, tmp_path):
    lines = random_reads(300) + [("W", i * 4096, 4096, None) for i in range(50)]
    d = replay(asan_binary, tmp_path, lines, "--preset", SATA, "--replay-qd", 8, "--write-cache", "back")
    assert d["summary"]["requests"] == 350


def _wait_for(pred, timeout_s=10.0):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False


def _mounted(path):
    return any(line.split()[4] == str(path) for line in Path("/proc/self/mountinfo").read_text().splitlines())


@pytest.mark.root
@pytest.mark.parametrize("which", ["binary", "asan_binary"])
def test_daemon_serves_times_and_writes_its_state(which, request, tmp_path):
    exe = request.getfixturevalue(which)
    mnt, state = tmp_path / "mnt", tmp_path / "state.json"
    mnt.mkdir()
    proc = subprocess.Popen(
        [str(exe), "--preset", str(SATA), "--size", "64M", "--mount", str(mnt), "--state", str(state)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert _wait_for(state.exists), "no state file"
        img = mnt / "disk.img"
        assert img.stat().st_size == 64 << 20
        data = os.urandom(1 << 20)
        fd = os.open(img, os.O_RDWR)
        try:
            os.pwrite(fd, data, 8 << 20)
            t0 = time.monotonic()
            back = b"".join(os.pread(fd, 131072, (8 << 20) + i * 131072) for i in range(8))
            elapsed = time.monotonic() - t0
        finally:
            os.close(fd)
        assert back == data
        assert elapsed >= 0.006  # at least the media transfer of 1 MiB at 125 MB/s (8 ms) minus slack
        # SEEK_DATA / SEEK_HOLE from the daemon's map: only the written MiB holds data, so a copy
        # of the image (the image cache's) reads 1 MiB, not 64
        fd = os.open(img, os.O_RDWR)
        try:
            # zeros over chunks that hold none (mkfs's zeroed inode tables) leave them holes;
            # zeros over one that holds data leave it data
            os.pwrite(fd, bytes(3 << 20), 30 << 20)
            os.pwrite(fd, bytes(4096), 8 << 20)
            assert data_extents(fd, 64 << 20) == [(8 << 20, 9 << 20)]
            assert os.lseek(fd, 100, os.SEEK_DATA) == 8 << 20 and os.lseek(fd, 100, os.SEEK_HOLE) == 100
            assert os.lseek(fd, 9 << 20, os.SEEK_HOLE) == 9 << 20
            with pytest.raises(OSError) as exc:
                os.lseek(fd, 9 << 20, os.SEEK_DATA)
            assert exc.value.errno == errno.ENXIO
        finally:
            os.close(fd)
        proc.send_signal(signal.SIGUSR1)
        assert _wait_for(lambda: json.loads(state.read_text())["counters"]["reads"] >= 8)
        s = json.loads(state.read_text())
        assert s["status"] == "running" and s["params"]["rpm"] == 7200
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert not _mounted(mnt)
    s = json.loads(state.read_text())
    assert s["status"] == "exited"
    c = s["counters"]
    assert c["writes"] >= 1 and c["bytes_written"] >= 1 << 20 and c["bytes_read"] >= 1 << 20
    assert c["lateness_samples"] == c["requests"] and c["lateness_max_ms"] >= c["lateness_p99_ms"]
    assert c["cpu_us_per_request"] > 0 and c["busy_ms"] > 0
    assert not list(tmp_path.glob("state.json.tmp*"))


@pytest.mark.root
@pytest.mark.parametrize("which", ["binary", "asan_binary"])
def test_load_starts_from_a_sparse_image_and_refuses_another_size(which, request, tmp_path):
    exe = request.getfixturevalue(which)
    image = tmp_path / "start.img"
    data = os.urandom(3 << 20)
    with open(image, "wb") as f:  # data at 1 MiB and 40 MiB, holes elsewhere
        f.truncate(64 << 20)
        os.pwrite(f.fileno(), data, 1 << 20)
        os.pwrite(f.fileno(), data[: 1 << 20], 40 << 20)
    mnt, state = tmp_path / "mnt", tmp_path / "state.json"
    mnt.mkdir()
    argv = [str(exe), "--size", "64M", "--untimed-start", "--mount", str(mnt), "--state", str(state)]
    proc = subprocess.Popen([*argv, "--load", str(image)], stderr=subprocess.PIPE, text=True)
    try:
        assert _wait_for(state.exists), "no state file"
        fd = os.open(mnt / "disk.img", os.O_RDONLY)
        try:
            assert os.pread(fd, 3 << 20, 1 << 20) == data
            assert os.pread(fd, 1 << 20, 40 << 20) == data[: 1 << 20]
            assert os.pread(fd, 1 << 20, 20 << 20) == bytes(1 << 20)  # a hole reads as zeros
            assert os.pread(fd, 4096, (64 << 20) - 4096) == bytes(4096)
        finally:
            os.close(fd)
        fd = os.open(mnt / "disk.img", os.O_WRONLY)  # the run's writes stay in the daemon
        try:
            os.pwrite(fd, b"w" * 8192, (1 << 20) + 4096)
            os.pwrite(fd, b"h" * 4096, 20 << 20)
        finally:
            os.close(fd)
        fd = os.open(mnt / "disk.img", os.O_RDONLY)
        try:
            assert os.pread(fd, 8192, (1 << 20) + 4096) == b"w" * 8192
            assert os.pread(fd, 4096, 20 << 20) == b"h" * 4096
            # the file's data and the run's writes are marked, its holes are not
            assert data_extents(fd, 64 << 20) == [(1 << 20, 4 << 20), (20 << 20, 21 << 20), (40 << 20, 41 << 20)]
        finally:
            os.close(fd)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    with open(image, "rb") as f:  # the image it started from is unchanged (mapped copy-on-write)
        assert os.pread(f.fileno(), 3 << 20, 1 << 20) == data
        assert os.pread(f.fileno(), 4096, 20 << 20) == bytes(4096)
    os.truncate(image, 32 << 20)
    state.unlink()
    res = subprocess.run([*argv, "--load", str(image)], capture_output=True, text=True, timeout=30)
    assert res.returncode == 1 and not _mounted(mnt)
    assert f"--load: {image}: 33554432 bytes (expected 67108864, the --size)" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


@pytest.mark.root
def test_daemon_ends_when_unmounted(binary, tmp_path):
    mnt, state = tmp_path / "mnt", tmp_path / "state.json"
    mnt.mkdir()
    proc = subprocess.Popen([str(binary), "--size", "16M", "--mount", str(mnt), "--state", str(state)])
    assert _wait_for(state.exists)
    subprocess.run(["umount", str(mnt)], check=True)
    assert proc.wait(timeout=10) == 0
    assert json.loads(state.read_text())["status"] == "exited"


@pytest.mark.root
def test_untimed_start_until_sigusr2_and_untimed_again_from_sigrtmin(binary, tmp_path):
    """A run's disk: untimed while it is filled, timed from SIGUSR2 for the jobs, and untimed again
    from SIGRTMIN, sent in the teardown once the run's counters are read, so the unmount's flush is
    not timed; untimed requests are counted apart."""
    mnt, state = tmp_path / "mnt", tmp_path / "state.json"
    mnt.mkdir()
    proc = subprocess.Popen(
        [str(binary), "--size", "64M", "--untimed-start", "--mount", str(mnt), "--state", str(state)]
    )
    try:
        assert _wait_for(state.exists)
        assert json.loads(state.read_text())["timed"] is False
        fd = os.open(mnt / "disk.img", os.O_RDWR)
        try:
            os.pwrite(fd, b"a" * (4 << 20), 0)
            proc.send_signal(signal.SIGUSR2)
            assert _wait_for(lambda: json.loads(state.read_text())["timed"] is True)
            assert os.pread(fd, 4096, 60 << 20) == b"\0" * 4096
            os.pwrite(fd, b"t" * 4096, 32 << 20)
            proc.send_signal(signal.SIGRTMIN)
            assert _wait_for(lambda: json.loads(state.read_text())["timed"] is False)
            timed = json.loads(state.read_text())["counters"]
            os.pwrite(fd, b"b" * (4 << 20), 8 << 20)
            assert os.pread(fd, 4096, 8 << 20) == b"b" * 4096
        finally:
            os.close(fd)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
    c = json.loads(state.read_text())["counters"]
    assert timed["reads"] >= 1 and timed["bytes_written"] == 4096 and timed["untimed_bytes"] >= 4 << 20
    assert c["bytes_written"] == 4096 and c["untimed_bytes"] >= timed["untimed_bytes"] + (4 << 20)
