"""Runs on the hosts of an inventory: `corun run` on one host, MPI jobs across hosts.

    python -m corun.testbed.hosts (--inventory INV | --names H1,H2) run --host NAME --spec SPEC --out DIR
        [--push DIR ...]
    python -m corun.testbed.hosts (--inventory INV | --names H1,H2) hostfile --out FILE [--slots N]
    python -m corun.testbed.hosts (--inventory INV | --names H1,H2) mpirun --np N --out FILE [--slots N]
        -- PROGRAM [ARGS...]

`run` copies the pushed folders and the spec to the host (rsync over the inventory's ssh
settings, same absolute paths: corun is checked out at the same path on every host), runs
`corun run` there and copies the finished run folder back to DIR. A run folder the host
already finished (metadata.json present) is fetched, not measured again. A local host
(ansible_connection: local) runs corun here. Any failure (host unreachable, run failed) is
one line on stderr and exit 1; nothing is left at DIR.

`mpirun` writes a hostfile from the inventory (one line per host: its address and slots) and
runs Open MPI's mpirun with the inventory's ssh settings as the rsh agent, TCP transport, and
traffic restricted to the hosts' `corun_mpi_network` (a CIDR or interface name) when set.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from corun.errors import ConfigError, CorunError, one_line_errors
from corun.testbed.inventory import Host, from_names, load, pick
from corun.util import atomic_write_text, repo_root


def remote_python(host: Host) -> str:
    return str(host.vars.get("corun_python") or repo_root() / ".venv" / "bin" / "python")


def rsync_argv(host: Host, src: str, dst: str) -> list[str]:
    """rsync -a with the host's ssh settings; src or dst is host-side when prefixed with ':'."""

    def side(p: str) -> str:
        return f"{host.destination()}:{p[1:]}" if p.startswith(":") else p

    return ["rsync", "-a", "--mkpath", "-e", shlex.join(host.ssh_base()), side(src), side(dst)]


UNREACHABLE = re.compile(r"ssh: |Connection (refused|timed out|closed)|No route to host|Could not resolve")


def _check(proc: subprocess.CompletedProcess, what: str, host: Host) -> None:
    if proc.returncode != 0:
        lines = [line.strip() for line in (proc.stderr or proc.stdout or "").splitlines() if line.strip()]
        reason = lines[-1] if lines else f"exit {proc.returncode}"
        # ssh exits 255 when it cannot connect; rsync then reports its own code 12 or 255.
        ssh_lines = [line for line in lines if UNREACHABLE.search(line)]
        if not host.local and (proc.returncode == 255 or ssh_lines):
            reason = f"host unreachable: {(ssh_lines or [reason])[0]}"
        raise CorunError(f"{host.name}: {what} failed ({reason})")


def _run(argv: list[str], timeout: float | None = None) -> subprocess.CompletedProcess:
    """A command with no standard input (ssh would read Snakemake's) and its output captured."""
    return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)


def run_on_host(
    host: Host, spec: Path, out: Path, push: list[Path], timeout: float | None = None, fresh: bool = False
) -> Path:
    """`corun run SPEC --out OUT` on HOST, its run folder copied back to OUT. FRESH: measured now
    even where the host holds a finished run folder at OUT (the caller measures around the run:
    a file system's counters, a policy it applied on other hosts), which it removes first."""
    spec, out = spec.resolve(), out.resolve()
    if out.exists():
        raise CorunError(f"{out}: already exists; remove it to run again")
    if host.local:
        proc = subprocess.run(
            [sys.executable, "-m", "corun", "run", str(spec), "--out", str(out), "--quiet"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=repo_root(),
        )
        sys.stdout.write(proc.stdout)
        _check(proc, "corun run", host)
        return out
    for d in push:
        d = d.resolve()
        _check(_run(rsync_argv(host, f"{d}/", f":{d}/"), timeout), f"copying {d}", host)
    _check(_run(rsync_argv(host, str(spec), f":{spec}"), timeout), "copying the spec", host)
    # Measure unless the host already finished this run (then only the copy back was missing).
    # corun_become: the login user is not root (CloudLab) and runs corun with sudo.
    sudo = "sudo -n " if host.vars.get("corun_become") else ""
    q = shlex.quote(str(out))
    run = f"exec {sudo}{shlex.quote(remote_python(host))} -m corun run {shlex.quote(str(spec))} --out {q} --quiet"
    if fresh:
        script = f"rm -rf {q} {q}.incomplete && {run}"
    else:
        script = f"if [ -f {q}/metadata.json ]; then echo already measured; else rm -rf {q}.incomplete; {run}; fi"
    proc = _run(host.command(["sh", "-c", script], cwd=str(repo_root())), timeout)
    sys.stdout.write(proc.stdout)
    _check(proc, "corun run", host)
    tmp = out.with_name(out.name + ".fetching")
    shutil.rmtree(tmp, ignore_errors=True)
    _check(_run(rsync_argv(host, f":{out}/", f"{tmp}/"), timeout), "copying the run folder back", host)
    if not (tmp / "metadata.json").exists():
        shutil.rmtree(tmp, ignore_errors=True)
        raise CorunError(f"{host.name}: {out} has no metadata.json (the run did not finish)")
    if out.exists():  # the host shares this file system (netns test hosts): the run is already here
        shutil.rmtree(tmp)
    else:
        os.replace(tmp, out)
    return out


def hostfile_text(hosts: list[Host], slots: int) -> str:
    return "".join(f"{h.address} slots={slots}\n" for h in hosts)


def ssh_agent(hosts: list[Host]) -> str | None:
    """The one ssh command mpirun reaches the remote hosts with (its plm_rsh_agent), or None
    when every host is local."""
    agents = {shlex.join(h.ssh_base()) for h in hosts if not h.local}
    if len(agents) > 1:
        raise CorunError(
            "mpirun: the hosts are reached with different ssh settings; mpirun takes one "
            "(set ansible_user, ansible_port, ansible_ssh_* for the whole group)"
        )
    return agents.pop() if agents else None


def network_of(hosts: list[Host]) -> str | None:
    """The hosts' one `corun_mpi_network`, or None when none names one."""
    nets = {str(h.vars["corun_mpi_network"]) for h in hosts if h.vars.get("corun_mpi_network")}
    if len(nets) > 1:
        raise CorunError(f"mpirun: the hosts name different corun_mpi_network values ({', '.join(sorted(nets))})")
    return nets.pop() if nets else None


def mpirun_argv(hosts: list[Host], hostfile: str, np: int, program: list[str]) -> list[str]:
    """Open MPI's mpirun across the hosts, with their ssh settings and network."""
    agent, net = ssh_agent(hosts), network_of(hosts)
    argv = ["mpirun"]
    if os.geteuid() == 0:
        argv.append("--allow-run-as-root")
    argv += ["-np", str(np), "--hostfile", hostfile, "--map-by", "node"]
    if agent:
        argv += ["--mca", "plm_rsh_agent", agent]
    argv += ["--mca", "btl", "tcp,self"]
    if net:
        argv += ["--mca", "btl_tcp_if_include", net, "--mca", "oob_tcp_if_include", net]
    return argv + list(program)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} (expected an integer >= 1)")
    return value


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m corun.testbed.hosts", description=__doc__.split("\n\n")[0])
    which = ap.add_mutually_exclusive_group(required=True)
    which.add_argument("--inventory", help="Ansible inventory of the hosts")
    which.add_argument("--names", help="comma-separated hosts instead: localhost or [user@]host (ssh)")
    ap.add_argument("--group", default="testbed", help="inventory group (default testbed)")
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run a spec on one host and copy the run folder back")
    r.add_argument("--host", required=True)
    r.add_argument("--spec", required=True, type=Path)
    r.add_argument("--out", required=True, type=Path)
    r.add_argument("--push", action="append", default=[], type=Path, help="folder to copy to the host first")
    h = sub.add_parser("hostfile", help="write an Open MPI hostfile of the hosts")
    h.add_argument("--out", required=True, type=Path)
    h.add_argument("--slots", type=_positive, default=1, help="slots per host (default 1)")
    m = sub.add_parser("mpirun", help="run an MPI program across the hosts")
    m.add_argument("--np", required=True, type=_positive, help="number of MPI processes")
    m.add_argument("--slots", type=_positive, default=1, help="slots per host (default 1)")
    m.add_argument("--out", required=True, type=Path, help="file for the program's standard output")
    m.add_argument("program", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    if a.inventory:
        hosts = load(a.inventory, a.group)
    else:
        hosts = from_names([n for n in a.names.split(",") if n], "--names")
    if a.command == "run":
        (host,) = pick(hosts, [a.host], str(a.inventory or "--names"))
        print(run_on_host(host, a.spec, a.out, a.push))
    elif a.command == "hostfile":
        atomic_write_text(a.out, hostfile_text(hosts, a.slots))
    else:
        program = a.program[1:] if a.program[:1] == ["--"] else a.program
        if not program:
            raise ConfigError("command line", "program", "", "an MPI program after --")
        if a.np > a.slots * len(hosts):
            raise ConfigError(
                "command line", "--np", a.np, f"at most {a.slots * len(hosts)} ({len(hosts)} hosts x {a.slots} slots)"
            )
        hostfile = a.out.with_name(a.out.name + ".hostfile")
        atomic_write_text(hostfile, hostfile_text(hosts, a.slots))
        cmd = mpirun_argv(hosts, str(hostfile.resolve()), a.np, program)
        proc = _run(cmd)
        if proc.returncode != 0:
            lines = [line for line in proc.stderr.splitlines() if line.strip()]
            raise CorunError(
                f"mpirun across {', '.join(h.name for h in hosts)} failed "
                f"({lines[-1].strip() if lines else f'exit {proc.returncode}'})"
            )
        atomic_write_text(a.out, proc.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
