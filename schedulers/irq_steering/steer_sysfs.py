"""steer.py's access to the kernel's files (docs/schedulers/irq_steering.md): reading and writing
them here or inside a network namespace (through `ip netns exec`, or under a synthetic --root
tree), CPU lists and masks as the kernel prints them, and an interface's receive queues and IRQs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


class Fs:
    def __init__(self, root: str = "/"):
        self.root = Path(root)
        self.synthetic = self.root != Path("/")

    def _local(self, ns: str | None, path: str) -> Path:
        rel = path.lstrip("/")
        if ns and self.synthetic:
            return self.root / "netns" / ns / rel
        return self.root / rel

    def read(self, ns: str | None, path: str) -> str:
        if ns and not self.synthetic:
            res = subprocess.run(["ip", "netns", "exec", ns, "cat", path], capture_output=True, text=True, check=False)
            if res.returncode != 0:
                raise OSError(f"{ns}:{path}: {res.stderr.strip()}")
            return res.stdout.strip()
        return self._local(ns, path).read_text().strip()

    def write(self, ns: str | None, path: str, value: str) -> None:
        if ns and not self.synthetic:
            res = subprocess.run(
                ["ip", "netns", "exec", ns, "sh", "-c", 'printf "%s\\n" "$1" > "$2"', "sh", value, path],
                capture_output=True,
                text=True,
                check=False,
            )
            if res.returncode != 0:
                raise OSError(f"{ns}:{path}: {res.stderr.strip()}")
            return
        with open(self._local(ns, path), "w") as f:
            f.write(value + "\n")

    def listdir(self, ns: str | None, path: str) -> list[str]:
        if ns and not self.synthetic:
            res = subprocess.run(
                ["ip", "netns", "exec", ns, "ls", "-1", path], capture_output=True, text=True, check=False
            )
            if res.returncode != 0:
                raise FileNotFoundError(f"{ns}:{path}")
            return res.stdout.split()
        return sorted(os.listdir(self._local(ns, path)))

    def exists(self, ns: str | None, path: str) -> bool:
        """Whether PATH (a file or a folder) is there."""
        if ns and not self.synthetic:
            try:
                self.listdir(ns, path)
                return True
            except FileNotFoundError:
                return False
        return self._local(ns, path).exists()


def parse_cpulist(text: str) -> list[int]:
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-")
            cpus.extend(range(int(a), int(b) + 1))
        else:
            cpus.append(int(part))
    return cpus


def mask_of(cpus) -> int:
    m = 0
    for c in cpus:
        m |= 1 << c
    return m


def mask_text(mask: int) -> str:
    """A CPU mask as the kernel prints it: hex in 32-bit groups joined by commas."""
    words = []
    while True:
        words.append(f"{mask & 0xFFFFFFFF:08x}")
        mask >>= 32
        if not mask:
            break
    return ",".join(reversed(words))


def parse_mask(text: str) -> int:
    return int(text.replace(",", "").strip() or "0", 16)


def online_cpus(fs: Fs) -> list[int]:
    return parse_cpulist(fs.read(None, "/sys/devices/system/cpu/online"))


def pow2_at_least(n: int) -> int:
    p = 1
    while p < n:
        p <<= 1
    return p


def iface_label(ns: str | None, name: str) -> str:
    return f"{ns}/{name}" if ns else name


def rx_queues(fs: Fs, ns: str | None, name: str) -> list[str]:
    return [q for q in fs.listdir(ns, f"/sys/class/net/{name}/queues") if q.startswith("rx-")]


def nic_irqs(fs: Fs, ns: str | None, name: str) -> list[int]:
    """The hardware IRQs of an interface (MSI vectors of its PCI device); none for veth."""
    for rel in ("device/msi_irqs", "device/../msi_irqs"):
        path = f"/sys/class/net/{name}/{rel}"
        if fs.exists(ns, path):
            return sorted(int(x) for x in fs.listdir(ns, path) if x.isdigit())
    return []
