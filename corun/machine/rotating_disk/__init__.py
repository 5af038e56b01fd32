"""The emulated rotating disk as a real block device for a run (docs/emulators/rotating_disk.md):
its settings (settings.py), the FUSE daemon (daemon.py), the loop device, mkfs and mounts
(stack.py), the loop device's queue settings (queue.py), the image cache (image_cache.py), and
the disk that builds them for one run (disk.py). The undo handlers of every step register on
import."""

from corun.machine.disk_mounts import _loops_of, _mount_entry
from corun.machine.rotating_disk.daemon import STOP_GRACE_S
from corun.machine.rotating_disk.disk import RotatingDisk, stop
from corun.machine.rotating_disk.image_cache import (
    IMAGES_BYTES,
    IMAGES_KEPT,
    SEEN_KEPT,
    _seen_before,
    data_extents,
    evict_images,
)
from corun.machine.rotating_disk.queue import HostSettings
from corun.machine.rotating_disk.settings import (
    DEFAULTS,
    EMULATOR,
    HOST_DEFAULTS,
    HOST_ORDER,
    check_machine,
    preset_path,
    read_preset,
    resolve,
)
from corun.machine.rotating_disk.stack import MKFS_ARGV

__all__ = [
    "DEFAULTS",
    "EMULATOR",
    "HOST_DEFAULTS",
    "HOST_ORDER",
    "IMAGES_BYTES",
    "IMAGES_KEPT",
    "MKFS_ARGV",
    "SEEN_KEPT",
    "STOP_GRACE_S",
    "HostSettings",
    "RotatingDisk",
    "_loops_of",
    "_mount_entry",
    "_seen_before",
    "check_machine",
    "data_extents",
    "evict_images",
    "preset_path",
    "read_preset",
    "resolve",
    "stop",
]
