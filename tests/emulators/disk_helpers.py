"""For the rotating disk tests: a loop device over a scratch image (root), and the checks of a
calibration JSON."""

import subprocess
from contextlib import contextmanager


@contextmanager
def loop_device(img, mib=64, ext4=False):
    """A loop device over IMG, a new image of MIB MiB (holding ext4 with EXT4), detached after."""
    with open(img, "wb") as fh:
        fh.truncate(mib << 20)
    if ext4:
        subprocess.run(["mkfs.ext4", "-q", "-F", str(img)], check=True)
    loop = subprocess.run(["losetup", "-f", "--show", str(img)], capture_output=True, text=True, check=True)
    try:
        yield loop.stdout.strip()
    finally:
        subprocess.run(["losetup", "-d", loop.stdout.strip()], check=True)


def calibration_check(check, measured, expected, unit, tolerance, verdict) -> dict:
    """One entry of a calibration JSON's "checks"."""
    return {
        "check": check,
        "measured": measured,
        "expected": expected,
        "unit": unit,
        "tolerance": tolerance,
        "verdict": verdict,
    }


def qd1_latency_pass() -> dict:
    """The latency check the sata_7200_2010 preset passes, as its calibration records it."""
    return calibration_check("qd1 random 4k latency", 13.1, 12.67, "ms", "+-10 %", "PASS")
