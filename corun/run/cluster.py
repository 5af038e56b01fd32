"""MPI jobs across the hosts of an inventory: the MPL-slot queue, the launch and the node daemons.

Paper 001 (section 5.2) runs parallel jobs on a cluster whose nodes each hold at most MPL jobs at
a time (the multi-programming level); jobs arrive at a front-end queue and are allocated in
first-in first-out order (OpenPBS's default): the head of the queue waits until enough nodes
have a free slot, and the jobs behind it wait too. Here:

- `ClusterPlacer`: every node has `mpl` job slots; a job of P ranks takes ceil(P / ranks_per_node)
  nodes with a free slot (the least loaded first, then the lowest index) and one slot on each;
  its ranks are spread as evenly as possible over them (the paper: one rank per node).
- `fifo_starts`: which queued jobs start now: only jobs already submitted, in submit order, and
  the head blocks the queue.
- `appfile_text` / `mpirun_argv`: Open MPI's mpirun with an application context file, one line
  per node with that node's rank count and its environment (each node's daemon has its own
  shared-memory segment), over the inventory's ssh settings and network.
- `NodeDaemons`: one daemon of the scheduler variant per host, started through ssh (so it lives
  in the host's network and CPU set), with the node arguments of the manifest (`node_args`,
  `peer_args`: node id, listen address, the other nodes); its `stop` (restore) is journalled
  per host before it starts, it is watched, verified and stopped, and its summary fetched.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from corun.errors import CorunError
from corun.machine.state import Journal
from corun.run.schedulers import Variant, push_stop, reap, start_daemon, terminate
from corun.testbed.hosts import ssh_agent
from corun.testbed.inventory import Host
from corun.util import Laps


@dataclass
class Allocation:
    """The nodes of one job: (node index, ranks on it), in rank order."""

    nodes: list[tuple[int, int]]

    @property
    def ranks(self) -> int:
        return sum(n for _, n in self.nodes)


@dataclass
class ClusterPlacer:
    n_nodes: int
    mpl: int
    ranks_per_node: int = 1
    used: list[int] = field(default_factory=list)  # jobs on each node

    def __post_init__(self):
        if self.n_nodes < 1 or self.mpl < 1 or self.ranks_per_node < 1:
            raise ValueError("a cluster needs nodes, mpl and ranks_per_node >= 1")
        self.used = [0] * self.n_nodes

    def nodes_needed(self, ranks: int) -> int:
        return math.ceil(ranks / self.ranks_per_node)

    def fits_anywhere(self, ranks: int) -> bool:
        """Could a job of `ranks` ranks ever start (on an empty cluster)?"""
        return 1 <= self.nodes_needed(ranks) <= self.n_nodes

    def capacity(self) -> int:
        return self.n_nodes * self.mpl

    def place(self, ranks: int) -> Allocation | None:
        """Reserve one slot on each node of a job now, or None if it must wait."""
        need = self.nodes_needed(ranks)
        free = [i for i in range(self.n_nodes) if self.used[i] < self.mpl]
        if len(free) < need:
            return None
        chosen = sorted(sorted(free, key=lambda i: (self.used[i], i))[:need])
        base, extra = divmod(ranks, need)
        nodes = [(node, base + (1 if k < extra else 0)) for k, node in enumerate(chosen)]
        for node, _ in nodes:
            self.used[node] += 1
        return Allocation(nodes)

    def release(self, alloc: Allocation) -> None:
        for node, _ in alloc.nodes:
            self.used[node] -= 1


def fifo_starts(pending: list, now_s: float, placer: ClusterPlacer, ranks_of, submit_of) -> list[tuple]:
    """Pop the jobs that start at `now_s` from `pending` (in submit order): (job, allocation).

    Only submitted jobs (submit time <= now) are eligible; the head of the queue blocks the
    others (first in, first out, no backfilling)."""
    started = []
    while pending and submit_of(pending[0]) <= now_s:
        alloc = placer.place(ranks_of(pending[0]))
        if alloc is None:
            break
        started.append((pending.pop(0), alloc))
    return started


def next_submit_in(pending: list, now_s: float, submit_of) -> float | None:
    """Seconds until the next submission of a job not yet submitted, if any."""
    later = [submit_of(j) - now_s for j in pending if submit_of(j) > now_s]
    return min(later) if later else None


# ------------------------------------------------------------------------------ launch


def shm_of(base: str, node: int) -> str:
    """The shared-memory segment of node `node`: the hosts of a netns cluster share /dev/shm."""
    return f"{base}-{node}"


def appfile_text(alloc: Allocation, hosts: list[Host], cmd: list[str], node_env: list[dict]) -> str:
    """An Open MPI application context: one line per node, its rank count and environment."""
    lines = []
    for node, nranks in alloc.nodes:
        parts = ["-np", str(nranks), "--host", f"{hosts[node].address}:{nranks}"]
        for k, v in sorted(node_env[node].items()):
            parts += ["-x", f"{k}={v}"]
        lines.append(shlex.join(parts + list(cmd)))
    return "\n".join(lines) + "\n"


def mpirun_argv(hosts: list[Host], appfile: str, network: str | None, session_dir: str | None = None) -> list[str]:
    """mpirun over the hosts' ssh settings, TCP only (the daemons watch the ranks' sockets);
    `session_dir`: the base of this mpirun's session files (Open MPI's orte_tmpdir_base), made
    by Open MPI where missing; on other hosts than the launching one its empty folders stay."""
    agent = ssh_agent(hosts)
    argv = ["mpirun"]
    if os.geteuid() == 0:
        argv.append("--allow-run-as-root")
    if agent:
        argv += ["--mca", "plm_rsh_agent", agent]
    argv += ["--mca", "btl", "tcp,self", "--bind-to", "none"]
    if session_dir:
        argv += ["--mca", "orte_tmpdir_base", session_dir]
    if network:
        argv += ["--mca", "btl_tcp_if_include", network, "--mca", "oob_tcp_if_include", network]
    return argv + ["--app", appfile]


# ------------------------------------------------------------------------------ daemons


def last_line(path: Path) -> str:
    """The last non-empty line of a log, or ''."""
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1].strip()[:300] if lines else ""


# a file a daemon writes on its host is looked for here every 0.05 s (found at once where the
# file system is shared, as on a netns cluster), and, where it is not, read over ssh every
# REMOTE_POLL_S
REMOTE_POLL_S = 0.3

# sh -c script: make the folder $1, then become the command after it
MKDIR_THEN_EXEC = 'mkdir -p -- "$1" || exit 125; shift; exec "$@"'

# a daemon on another host hears from the runner this often on its stdin (its lifeline: the
# manifest's lifeline_args); after the run spec's cluster.lifeline_s without a word it ends
LIFELINE_BEAT_S = 1.0


@dataclass
class NodeDaemon:
    host: Host
    node: int
    state_dir: Path
    process: subprocess.Popen | None = None
    restore_action: dict | None = None
    process_action: dict | None = None
    rank_env: dict = field(default_factory=dict)


class NodeDaemons:
    """One daemon of a `daemon` variant per host; nothing at all for other variants."""

    def __init__(self, variant: Variant, hosts: list[Host], state_root: Path, port: int, lifeline_s: float = 10.0):
        self.variant, self.hosts, self.port, self.lifeline_s = variant, hosts, port, lifeline_s
        self.active = variant.manifest["daemon"] and bool(variant.manifest.get("start"))
        self.nodes = [NodeDaemon(h, i, state_root / h.name) for i, h in enumerate(hosts)]
        self._beats: threading.Thread | None = None
        self._quiet = threading.Event()
        # seconds of each step of the daemons' start and stop, all nodes together (the run's
        # metadata.json: cluster.daemon_steps_s), where a run's set-up and teardown go
        self.laps = Laps()

    def _params(self, node: int) -> dict:
        p = dict(self.variant.params)
        if "shm" in p:
            p["shm"] = shm_of(p["shm"], node)
        return p

    @staticmethod
    def _here(nd: NodeDaemon) -> bool:
        """Whether NODE's files and processes are this machine's: a local host, or a host of a
        netns cluster (`corun_shared_machine`: its own network only, the same file systems and
        PIDs). Its variant's verify and stop then run here, without an ssh round trip each (0.15
        to 0.5 s here); its daemon still starts through ssh, over its link, as on a testbed."""
        return nd.host.local or bool(nd.host.vars.get("corun_shared_machine"))

    def _on(self, nd: NodeDaemon, step: str) -> list[str]:
        """The variant's STEP command for NODE, as run from here."""
        argv = self._argv(nd, step)
        return argv if self._here(nd) else nd.host.command(argv)

    def _lifeline(self, nd: NodeDaemon) -> bool:
        """Whether NODE's daemon hears from the runner on its stdin: on another host, where a
        cut link would otherwise leave it running (its ssh session never ends there)."""
        return not nd.host.local and bool(self.variant.manifest.get("lifeline_args"))

    def _argv(self, nd: NodeDaemon, step: str) -> list[str]:
        v = Variant(self.variant.name, self.variant.manifest, self.variant.directory, self._params(nd.node))
        v.ctx = {"state_dir": str(nd.state_dir.absolute()), "node_id": str(nd.node)}
        argv = list(self.variant.manifest[step])
        if step == "start":
            v.ctx["node_address"] = nd.host.address
            v.ctx["port"] = str(self.port)
            v.ctx["lifeline_s"] = f"{self.lifeline_s:g}"
            argv += self.variant.manifest.get("node_args", [])
            if self._lifeline(nd):
                argv += self.variant.manifest["lifeline_args"]
            for other in self.nodes:
                if other is nd:
                    continue
                argv += [
                    a.format(peer_id=other.node, peer_address=other.host.address, port=self.port)
                    for a in self.variant.manifest.get("peer_args", [])
                ]
        return v.expand(argv)

    def start(self, journal: Journal) -> None:
        """Start every node's daemon; each node's restore is journalled before its daemon starts."""
        if not self.active:
            return
        self.laps.restart()
        for nd in self.nodes:
            nd.state_dir.mkdir(parents=True, exist_ok=True)
            self.laps.lap("state_dirs")
            stop = self.variant.manifest.get("stop")
            if stop:
                nd.restore_action = push_stop(
                    journal,
                    self._on(nd, "stop"),
                    self.variant.directory,
                    f"stop scheduler {self.variant.name} on {nd.host.name}",
                )
            # `exec`: the daemon is the ssh session's command itself, so it notices the end of
            # the session (PR_SET_PDEATHSIG). With a lifeline the runner's end is its stdin's end,
            # which ssh forwards: a session on the shared master connection serves (0.3 s less
            # than a connection of its own here). Without one, a connection of its own, which
            # ends with the ssh client (a shared master connection would outlive it).
            # The state folder is made on the host first in the same session (the same path
            # there; a no-op where the file system is shared): no round trip of its own.
            argv = (
                nd.host.command(
                    ["exec", "sh", "-c", MKDIR_THEN_EXEC, "sh", str(nd.state_dir.absolute()), *self._argv(nd, "start")],
                    own_connection=not self._lifeline(nd),
                )
                if not nd.host.local
                else self._argv(nd, "start")
            )
            nd.process, nd.process_action = start_daemon(
                journal,
                argv,
                nd.state_dir / "daemon.log",
                f"daemon of {self.variant.name} on {nd.host.name}",
                lifeline=self._lifeline(nd),
            )
            self.laps.lap("start")
        if any(self._lifeline(nd) for nd in self.nodes):
            self._beats = threading.Thread(target=self._beat, name="lifelines", daemon=True)
            self._beats.start()
        for nd in self.nodes:
            nd.rank_env = self._wait_rank_env(nd)
        self.laps.lap("rank_env")

    def _beat(self) -> None:
        """A byte to every lifeline each LIFELINE_BEAT_S, until stop; a daemon gone is left to
        alive() to report."""
        lines = [nd.process.stdin for nd in self.nodes if nd.process is not None and nd.process.stdin]
        while not self._quiet.wait(LIFELINE_BEAT_S):
            for line in lines:
                try:
                    line.write(b"\n")
                    line.flush()
                except (OSError, ValueError):
                    pass  # the daemon's ssh is gone (or its pipe closed at stop)

    def _end_lifelines(self) -> None:
        self._quiet.set()
        if self._beats is not None:
            self._beats.join()
            self._beats = None
        for nd in self.nodes:
            if nd.process is not None and nd.process.stdin:
                try:
                    nd.process.stdin.close()
                except OSError:
                    pass

    def _wait_rank_env(self, nd: NodeDaemon, timeout_s: float = 20.0) -> dict:
        f = nd.state_dir / "rank_env.json"
        end = time.monotonic() + timeout_s
        next_remote = time.monotonic() + REMOTE_POLL_S
        while time.monotonic() < end:
            if nd.process.poll() is not None:
                said = last_line(nd.state_dir / "daemon.log")
                raise CorunError(
                    f"scheduler {self.variant.name}: the daemon on {nd.host.name} exited with "
                    f"{nd.process.returncode}{f': {said}' if said else ''} (see {nd.state_dir}/daemon.log)"
                )
            if f.exists():
                try:
                    return json.loads(f.read_text())
                except ValueError:
                    pass  # being written
            if not self._here(nd) and time.monotonic() >= next_remote:
                next_remote = time.monotonic() + REMOTE_POLL_S
                text = self._read_on_host(nd, f)
                if text:
                    try:
                        return json.loads(text)
                    except ValueError:
                        pass
            time.sleep(0.05)
        raise CorunError(f"scheduler {self.variant.name}: the daemon on {nd.host.name} wrote no rank_env.json")

    @staticmethod
    def _read_on_host(nd: NodeDaemon, f: Path) -> str | None:
        """The file F as the node's host has it (the same path there), or None if it has none yet."""
        res = subprocess.run(nd.host.command(["cat", str(f.absolute())]), capture_output=True, text=True, check=False)
        return res.stdout if res.returncode == 0 and res.stdout.strip() else None

    def node_env(self) -> list[dict]:
        return [nd.rank_env for nd in self.nodes]

    def alive(self) -> list[str]:
        """The hosts whose daemon died."""
        if not self.active:
            return []
        return [nd.host.name for nd in self.nodes if nd.process is None or nd.process.poll() is not None]

    def verify(self) -> None:
        """The variant's verify on every host at once (each is an ssh round trip); the first
        host in inventory order that fails is named."""
        if not self.active or not self.variant.manifest.get("verify"):
            return
        self.laps.restart()
        with ThreadPoolExecutor(max_workers=len(self.nodes)) as pool:
            results = list(
                pool.map(
                    lambda nd: subprocess.run(
                        self._on(nd, "verify"),
                        capture_output=True,
                        text=True,
                        check=False,
                        timeout=60,
                    ),
                    self.nodes,
                )
            )
        self.laps.lap("verify")
        for nd, res in zip(self.nodes, results):
            if res.returncode != 0:
                err = (res.stderr or res.stdout).strip().splitlines()
                raise CorunError(
                    f"scheduler {self.variant.name}: not in effect on {nd.host.name}: "
                    f"{err[-1] if err else 'verify failed'}"
                )

    def restore_now(self, journal: Journal) -> list[str]:
        """Run every node's restore at once (a daemon died: no rank may stay boosted or stopped)."""
        errors = journal.undo_together([nd.restore_action for nd in self.nodes])
        for nd in self.nodes:
            nd.restore_action = None
        return errors

    def stop(self, journal: Journal) -> list[str]:
        """End every daemon (SIGTERM: it restores its ranks and writes its summary), then restore."""
        self.laps.restart()
        self._end_lifelines()  # stdin's end: the daemons end as on SIGTERM, which follows
        for nd in self.nodes:
            if nd.process is not None:
                terminate(nd.process)  # the ssh client: the session ends
        for nd in self.nodes:
            if nd.process is None:
                continue
            reap(nd.process, timeout_s=15)
            journal.forget(nd.process_action)
            nd.process_action = None
        self.laps.lap("stop")
        for nd in self.nodes:
            if nd.process is not None:
                self._fetch_summary(nd)
        self.laps.lap("summaries")
        errors = self.restore_now(journal)
        self.laps.lap("restore")
        return errors

    def _fetch_summary(self, nd: NodeDaemon, timeout_s: float = 10.0) -> None:
        """Wait for the node's summary.json (the daemon writes it in its teardown)."""
        f = nd.state_dir / "summary.json"
        end = time.monotonic() + timeout_s
        next_remote = time.monotonic()  # the daemon has exited: read it over ssh at once if not here
        while time.monotonic() < end:
            if f.exists():
                return
            if not self._here(nd) and time.monotonic() >= next_remote:
                next_remote = time.monotonic() + REMOTE_POLL_S
                text = self._read_on_host(nd, f)
                if text:
                    f.write_text(text)
                    return
            time.sleep(0.05)

    def summaries(self) -> list[dict]:
        """Each node's summary: host, node and the daemon's counters; missing with a reason."""
        out = []
        for nd in self.nodes:
            f = nd.state_dir / "summary.json"
            row = {"host": nd.host.name, "node": nd.node}
            try:
                row.update(json.loads(f.read_text()))
            except (OSError, ValueError) as exc:
                row["missing"] = f"no daemon summary from {nd.host.name}: {exc}"
            out.append(row)
        return out

    def describe(self) -> list[dict]:
        return [{"host": nd.host.name, "node": nd.node, "state_dir": str(nd.state_dir)} for nd in self.nodes]
