"""This machine's side of scripts/bare-testbed: its errors and command helpers, and the services
it runs on the bridge's address for the nodes (an apt proxy, an HTTP server of the source
mirror), each kept by a pid file in the testbed's state folder."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

PROXY_PORT, MIRROR_PORT = 3143, 8078

EXIT_RUNTIME, EXIT_USAGE, EXIT_MISSING = 1, 2, 4


class TestbedError(Exception):
    def __init__(self, message: str, code: int = EXIT_RUNTIME):
        super().__init__(message)
        self.code = code


def run(*argv: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, **kw)
    if check and proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        last = detail[-1] if detail else f"exit {proc.returncode}"
        raise TestbedError(f"bare-testbed: {' '.join(argv)} failed ({last})")
    return proc


def need(tool: str, package: str) -> str:
    path = shutil.which(tool) or next((p for p in (f"/usr/sbin/{tool}",) if os.access(p, os.X_OK)), None)
    if path is None:
        raise TestbedError(
            f"bare-testbed: {tool} not found (expected the Debian package {package}: make provision installs it)",
            EXIT_MISSING,
        )
    return path


def check_root() -> None:
    if os.geteuid() != 0:
        raise TestbedError("bare-testbed: needs root (namespaces, loop devices and mounts, a bridge)", EXIT_MISSING)


def write_file(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.chmod(mode)
    os.replace(tmp, path)


def port_open(addr: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((addr, port), timeout=timeout):
            return True
    except OSError:
        return False


def pid_of(pidfile: Path, comm: str) -> int | None:
    try:
        pid = int(pidfile.read_text().split()[0])
        return pid if Path(f"/proc/{pid}/comm").read_text().strip() == comm else None
    except (OSError, ValueError, IndexError):
        return None


# Host-side services: the apt proxy and the mirror server -------------------------------------


def start_proxy(state: dict, state_dir: Path, cache_dir: Path) -> None:
    pidfile = state_dir / "apt-cacher-ng.pid"
    if pid_of(pidfile, "apt-cacher-ng"):
        return
    acng = need("apt-cacher-ng", "apt-cacher-ng")
    conf = state_dir / "apt-cacher-ng"
    conf.mkdir(parents=True, exist_ok=True)
    cache_dir.mkdir(parents=True, exist_ok=True)
    # A configuration folder of its own (a plain caching proxy: no mirror remapping), address,
    # cache, log and pid: nothing of a system apt-cacher-ng is used or changed.
    write_file(conf / "acng.conf", "SupportDir: /usr/lib/apt-cacher-ng\nReportPage: acng-report.html\n")
    run(
        acng,
        "-c",
        str(conf),
        "ForeGround=0",
        f"BindAddress={state['gateway']}",
        f"Port={PROXY_PORT}",
        f"CacheDir={cache_dir}",
        f"LogDir={state_dir}",
        f"PidFile={pidfile}",
        f"SocketPath={state_dir / 'acng.sock'}",
        "ExThreshold=4",
    )
    wait_port(state["gateway"], PROXY_PORT, "apt-cacher-ng", state_dir / "apt-cacher.err")


def start_mirror(state: dict, state_dir: Path) -> None:
    pidfile = state_dir / "mirror-http.pid"
    if pid_of(pidfile, "python3"):
        return
    log = open(state_dir / "mirror-http.log", "ab")
    proc = subprocess.Popen(
        [
            "python3",
            "-m",
            "http.server",
            "--bind",
            state["gateway"],
            "--directory",
            state["mirror_dir"],
            str(MIRROR_PORT),
        ],
        stdout=log,
        stderr=log,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    pidfile.write_text(f"{proc.pid}\n")
    wait_port(state["gateway"], MIRROR_PORT, "the mirror's HTTP server", state_dir / "mirror-http.log")


def wait_port(addr: str, port: int, what: str, log: Path) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if port_open(addr, port, 0.5):
            return
        time.sleep(0.1)
    tail = log.read_text().strip().splitlines()[-1:] if log.exists() else []
    raise TestbedError(f"bare-testbed: {what} does not listen on {addr}:{port} ({tail[0] if tail else 'no log'})")


def stop_pidfile(pidfile: Path, comm: str) -> None:
    pid = pid_of(pidfile, comm)
    if pid is None:
        return
    os.kill(pid, signal.SIGTERM)
    for _ in range(50):
        if pid_of(pidfile, comm) is None:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


def _pid_alive(pidfile: Path) -> bool:
    """Whether PIDFILE names a running process."""
    try:
        return Path(f"/proc/{int(pidfile.read_text().split()[0])}").exists()
    except (OSError, ValueError, IndexError):
        return False


def stop_slurm_cluster(node_names: list[str], repo: Path) -> list[str]:
    """Stop the Slurm cluster this machine controls over the testbed's nodes (roles/slurm with
    corun_slurm: true; its slurm.conf names them): slurmctld by its pid file, then `corun
    recover`, which stops the rest of the role's daemons by the journal slurmctld kept alive.
    Nothing when slurm.conf names none of the nodes. What failed, as error lines."""
    try:
        conf = Path("/etc/slurm/slurm.conf").read_text()
    except OSError:
        return []
    if not any(f"NodeName={n} " in conf for n in node_names):
        return []
    errors = []
    # the role journals in corun's default state folder (corun_state_dir), whatever this process's
    journal = Path("/run/corun") / "testbed-slurm-corun.journal.json"
    try:
        ctld = int(json.loads(journal.read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        ctld = None
    # a slurm.conf left by an earlier cluster (its daemons stopped, its journal gone) is no
    # cluster to stop: nothing runs and nothing is journalled
    if not journal.exists() and not _pid_alive(Path("/run/slurmctld.pid")):
        return []
    stop = run(
        "start-stop-daemon",
        "--stop",
        "--quiet",
        "--oknodo",
        "--retry",
        "TERM/30/KILL/5",
        "--pidfile",
        "/run/slurmctld.pid",
        "--user",
        "slurm",
        check=False,
    )
    if stop.returncode != 0:
        errors.append(f"stopping slurmctld: {(stop.stderr or stop.stdout).strip()}")
    # the journal lives while its process (slurmctld) does, a zombie until it is reaped
    deadline = time.monotonic() + 30
    while ctld and Path(f"/proc/{ctld}").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    if ctld and Path(f"/proc/{ctld}").exists():
        state = Path(f"/proc/{ctld}/stat").read_text().rsplit(")", 1)[-1].split()[:2]
        errors.append(f"the journal's process {ctld} still there 30 s after slurmctld's stop (state, parent {state})")
    env = {**os.environ, "CORUN_STATE_DIR": str(journal.parent)}
    rec = run(sys.executable, "-m", "corun", "recover", check=False, cwd=repo, env=env)
    if rec.returncode != 0 or "testbed-slurm-" not in rec.stdout:
        errors.append(
            f"corun recover: {(rec.stderr or rec.stdout).strip()} (expected it to stop the Slurm cluster; "
            f"{sys.executable}, CORUN_STATE_DIR={os.environ.get('CORUN_STATE_DIR')})"
        )
    return errors
