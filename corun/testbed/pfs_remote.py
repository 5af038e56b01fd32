"""The file system's hosts reached from this machine: a netns cluster's host entered by its
network namespace (NetnsHost), a shell script run on a host (remote), and the names the
file system's parts share. Light on purpose: corun.testbed.pfs_sched, which the aIOLi variants
start four times a run, imports only this, not the configuration and its schema."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

from corun.errors import CorunError
from corun.testbed import inventory

# corun's request scheduling translator (schedulers/aioli): each server gets its own control
# and status files, {dir}/NAME.control and {dir}/NAME.status unless the options name them.
AIOLI_TYPE = "corun/aioli"
REMOTE_TIMEOUT_S = 120


class PfsError(CorunError):
    pass


@dataclass
class NetnsHost(inventory.Host):
    """A host of a netns cluster of this machine, reached by entering its network namespace
    (nsenter --net): no ssh session per command (each cost about 0.5 s on a busy 2-CPU machine),
    the same file systems and mounts as the root namespace."""

    netns: str = ""

    def command(self, argv: list[str], cwd: str | None = None, own_connection: bool = False) -> list[str]:
        enter = ["nsenter", f"--net=/run/netns/{self.netns}", "--"]
        if cwd:
            return [*enter, "sh", "-c", 'cd "$0" && exec "$@"', cwd, *argv]
        return [*enter, *argv]


def remote_argv(host: inventory.Host, script: str, *args: str) -> list[str]:
    return host.command(["sh", "-c", script, "sh", *args])


def remote(
    host: inventory.Host, script: str, *args: str, stdin: str | None = None, check: bool = True
) -> subprocess.CompletedProcess:
    argv = remote_argv(host, script, *args)
    try:
        res = subprocess.run(
            argv,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=REMOTE_TIMEOUT_S,
            stdin=None if stdin is not None else subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise PfsError(f"pfs: {host.name}: no answer within {REMOTE_TIMEOUT_S} s") from None
    if check and res.returncode != 0:
        err = (res.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise PfsError(f"pfs: {host.name}: exit {res.returncode}: {err}")
    return res
