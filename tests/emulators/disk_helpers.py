"""Block devices for the rotating disk tests (root): a loop device over a scratch image."""

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
