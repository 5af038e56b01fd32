"""The checked spec of a run: everything the run spec asks for, checked against this machine.

`CheckedSpec.build(spec, out)` finds everything that can be wrong with the input before anything runs
(CMPs, the device, caps the machine can apply, the scheduler variant, the monitors' tools, the
cluster's hosts) and holds the result: the jobs in submit order, the placer, the device (or the
device the run will build), the run's cgroup, the variant and the monitors. It changes nothing
on the machine; the machine session (corun.run.session) does.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from corun import config
from corun.emulators import ROTATING_DISK
from corun.errors import ConfigError, CorunError
from corun.machine import block_device as devmod
from corun.machine import cgroup as cg
from corun.machine import topology
from corun.machine.run_device import RunDevice
from corun.monitors import Monitor, MonitorContext, make_monitors
from corun.run import cluster as clu
from corun.run.placement import Placer, Slot
from corun.run.schedulers import Variant
from corun.testbed import hosts as testbed_hosts
from corun.testbed import inventory as inv


@dataclass
class Job:
    job_id: str
    name: str
    index: int
    copy: int
    spec: dict
    cmp_pin: int | None
    slot: Slot | None = None
    pid: int | None = None
    starttime: int | None = None
    start_mono: float | None = None
    end_mono: float | None = None
    exit_code: int | None = None
    term_signal: int | None = None
    timed_out: bool = False
    killed: bool = False
    cpu_user_s: float | None = None
    cpu_sys_s: float | None = None
    max_rss_kb: int | None = None
    io: dict | None = None
    result: dict = field(default_factory=dict)
    result_error: str | None = None
    journal_action: dict | None = None
    alloc: clu.Allocation | None = None


def expand_jobs(spec: dict) -> list[Job]:
    jobs, n = [], 0
    for i, js in enumerate(spec["jobs"]):
        for c in range(js["repeat"]):
            suffix = f"-{c}" if js["repeat"] > 1 else ""
            jobs.append(Job(f"{n:04d}-{js['name']}{suffix}", js["name"], i, c, js, js.get("cmp")))
            n += 1
    return jobs


def load_spec(path: str | Path) -> dict:
    return config.load(path, "run_spec")


@dataclass
class CheckedSpec:
    spec: dict
    source: str
    out: Path
    attempt: int = 1  # > 1: measured again (corun.run.runner.run_spec_file, steal)
    topo: topology.Topology | None = None
    grouping: str = ""
    all_cmps: list[list[int]] = field(default_factory=list)
    cmp_ids: list[int] = field(default_factory=list)  # the CMPs in use, machine indices
    placer: Placer | None = None
    jobs: list[Job] = field(default_factory=list)
    cluster: dict | None = None
    hosts: list = field(default_factory=list)
    cluster_placer: clu.ClusterPlacer | None = None
    mpi_network: str | None = None
    run_device: RunDevice | None = None  # a device built or formatted for the run
    device: devmod.Device | None = None  # None until a run_device exists
    cgroup: cg.RunCgroup | None = None
    variant: Variant | None = None
    mon_ctx: MonitorContext | None = None
    monitors: list[Monitor] = field(default_factory=list)

    @property
    def tmp(self) -> Path:
        """Where the run is built; renamed to `out` only when everything is written."""
        return self.out.parent / (self.out.name + ".incomplete")

    @property
    def raw_dir(self) -> Path:
        return self.tmp / "monitors"

    @classmethod
    def build(cls, spec: dict, out: str | Path, source: str = "spec", attempt: int = 1) -> CheckedSpec:
        """Everything that can be wrong with the input is found here, before anything runs."""
        p = cls(spec=spec, source=source, out=Path(out), attempt=attempt)
        p._place()
        p._cluster()
        p._check_jobs()
        p._device_and_caps()
        p.variant = Variant.load(spec["scheduler"]["name"], spec["scheduler"]["params"], source)
        if spec["scheduler"]["applied_by"] == "controller" and (p.variant.manifest["daemon"] or p.cluster):
            raise ConfigError(
                source,
                "scheduler.applied_by",
                "controller",
                f"run: {p.variant.name} runs {'node daemons' if p.cluster else 'a daemon'} beside the jobs, "
                "which only the run can start",
            )
        mon = spec["monitors"]
        if mon["enabled"]:  # tools checked here (MissingTool)
            p.mon_ctx = MonitorContext(
                raw_dir=p.raw_dir,
                interval_s=mon["interval_s"],
                devices=[p.device.name] if p.device else [],
                perf_events=list(mon["perf_events"]),
            )
            p.monitors = make_monitors(list(mon["enabled"]), p.mon_ctx)
        if (p.out / "metadata.json").exists():
            raise CorunError(f"{p.out}: already measured (metadata.json exists); remove the folder to measure again")
        return p

    def run_id(self) -> str:
        return self.cgroup.run_id

    def _place(self) -> None:
        spec, src = self.spec, self.source
        self.topo = topology.discover()
        pc = spec["placement"]["cmp"]
        self.grouping, cmps = topology.cmp_groups(
            self.topo, pc["grouping"], pc.get("cores_per_cmp"), pc.get("groups"), src
        )
        use = spec["placement"]["use_cmps"]
        if use is not None:
            for i, c in enumerate(use):
                if c >= len(cmps):
                    raise ConfigError(
                        src,
                        f"placement.use_cmps[{i}]",
                        c,
                        f"a CMP index < {len(cmps)} (this machine has {len(cmps)} CMPs)",
                    )
            self.cmp_ids = list(use)
        else:
            self.cmp_ids = list(range(len(cmps)))
        self.all_cmps = cmps
        self.placer = Placer(
            [cmps[i] for i in self.cmp_ids], spec["placement"]["slots_per_core"], spec["placement"]["policy"]
        )
        self.jobs = expand_jobs(spec)

    def _cluster(self) -> None:
        """Hosts, the MPL-slot placer and the checks of jobs of kind mpi."""
        spec, src = self.spec, self.source
        cs = self.cluster = spec.get("cluster")
        if cs is None:
            for i, js in enumerate(spec["jobs"]):
                if js["kind"] == "mpi":
                    raise ConfigError(src, f"jobs[{i}].kind", "mpi", "process, or a run with a cluster section")
            return
        if not Path(cs["inventory"]).is_file():
            raise ConfigError(src, "cluster.inventory", cs["inventory"], "an existing inventory file")
        hosts = inv.load(cs["inventory"], cs["group"], f"{src}: cluster.inventory")
        self.hosts = inv.pick(hosts, cs["hosts"], f"{src}: cluster.hosts") if cs["hosts"] else hosts
        self.cluster_placer = clu.ClusterPlacer(len(self.hosts), cs["mpl"], cs["ranks_per_node"])
        self.mpi_network = testbed_hosts.network_of(self.hosts)
        for i, js in enumerate(spec["jobs"]):
            if js["kind"] != "mpi":
                raise ConfigError(src, f"jobs[{i}].kind", js["kind"], "mpi (a run with a cluster runs MPI jobs only)")
            if "ranks" not in js:
                raise ConfigError(src, f"jobs[{i}].ranks", None, "an integer >= 1 (the job's MPI ranks)")
            if not self.cluster_placer.fits_anywhere(js["ranks"]):
                most = len(self.hosts) * cs["ranks_per_node"]
                raise ConfigError(
                    src,
                    f"jobs[{i}].ranks",
                    js["ranks"],
                    f"an integer <= {most} ({len(self.hosts)} hosts x {cs['ranks_per_node']} ranks per node)",
                )
            check_program(src, i, js)
        if shutil.which("mpirun") is None:
            raise ConfigError(src, "cluster", "mpirun", "Open MPI's mpirun on PATH (the openmpi role)")
        mpl_param = spec["scheduler"]["params"].get("mpl")
        if mpl_param is not None and mpl_param != cs["mpl"]:
            raise ConfigError(src, "scheduler.params.mpl", mpl_param, f"cluster.mpl ({cs['mpl']})")

    def _check_jobs(self) -> None:
        spec, src = self.spec, self.source
        # a device built or formatted for the run (kind rotating_disk, block with format) is found
        # once it exists, first thing in the machine session's set-up
        self.run_device = RunDevice.prepare(spec["device"], src, ROTATING_DISK)
        for i, js in enumerate(spec["jobs"]):
            if js["kind"] == "mpi":
                continue  # checked by _cluster
            pin = js.get("cmp")
            if pin is not None and pin not in self.cmp_ids:
                raise ConfigError(src, f"jobs[{i}].cmp", pin, f"one of the CMPs in use: {self.cmp_ids}")
            local_pin = self.cmp_ids.index(pin) if pin is not None else None
            if not self.placer.fits_anywhere(js["cores"], local_pin):
                biggest = max(len(g) for g in self.placer.cmps)
                raise ConfigError(src, f"jobs[{i}].cores", js["cores"], f"an integer <= {biggest} (cores of one CMP)")
            if js.get("cwd") and not Path(js["cwd"]).is_dir() and not self.on_run_fs(js["cwd"]):
                raise ConfigError(src, f"jobs[{i}].cwd", js["cwd"], "an existing directory")
            check_program(src, i, js)
        for j in self.jobs:
            if j.cmp_pin is not None:
                j.cmp_pin = self.cmp_ids.index(j.cmp_pin)

    def _device_and_caps(self) -> None:
        spec, src = self.spec, self.source
        self.device = None if self.run_device else devmod.device_of(spec["device"]["path"], src, "device.path")
        thr = spec["device"]["throttle"]
        again = f"-a{self.attempt}" if self.attempt > 1 else ""
        self.cgroup = cg.RunCgroup(f"{spec['name']}-{os.getpid()}-{int(time.time())}{again}")
        if thr and not self.cgroup.available:
            raise ConfigError(
                src,
                "device.throttle",
                thr,
                "a machine with a writable blkio (v1) or io (v2) cgroup controller (run as root)",
            )
        mem = spec["memory"]["limit_bytes"]
        if mem is not None and not (self.cgroup.available and self.cgroup.memory_available()):
            raise ConfigError(
                src, "memory.limit_bytes", mem, "a machine with a writable memory cgroup controller (run as root)"
            )
        for i, e in enumerate(spec["device"]["evict"]):
            if not Path(e).exists() and not self.on_run_fs(e):
                raise ConfigError(src, f"device.evict[{i}]", e, "an existing file or folder")
        for j, js in enumerate(spec["jobs"]):
            for i, e in enumerate(js.get("evict") or []):
                if not Path(e).exists() and not self.on_run_fs(e):
                    raise ConfigError(src, f"jobs[{j}].evict[{i}]", e, "an existing file or folder")
        if spec["device"]["drop_caches"] and not os.access("/proc/sys/vm/drop_caches", os.W_OK):
            raise ConfigError(
                src, "device.drop_caches", True, "false, or running as root (writes /proc/sys/vm/drop_caches)"
            )

    def on_run_fs(self, path: str) -> bool:
        """Is PATH on the file system built for the run (it does not exist yet)?"""
        if self.run_device is None:
            return False
        root = Path(self.spec["device"]["path"]).absolute()
        return root == Path(path).absolute() or root in Path(path).absolute().parents


def check_program(src: str, i: int, js: dict) -> None:
    """The job's program exists and is executable (MPI jobs: at the same path on every host)."""
    exe = js["cmd"][0]
    if "/" in exe:
        if not os.access(exe, os.X_OK):
            raise ConfigError(
                src,
                f"jobs[{i}].cmd[0]",
                exe,
                "an executable file (built by the corun_kernels role: ansible-playbook site.yml --tags corun_kernels)",
            )
    elif shutil.which(exe, path=js["env"].get("PATH", os.environ.get("PATH"))) is None:
        raise ConfigError(src, f"jobs[{i}].cmd[0]", exe, "a program on PATH")
