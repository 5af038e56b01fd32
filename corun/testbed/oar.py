"""Snakemake's cluster-generic executor on OAR (Grid'5000): submit, status and cancel commands.

    python -m corun.testbed.oar submit [--walltime H:MM:SS] [--nodes N] [--cores N] [--name NAME]
                               [--project P] [--type T ...] [--undeployed] JOBSCRIPT
    python -m corun.testbed.oar status JOBID
    python -m corun.testbed.oar cancel JOBID...

workflows/profiles/oar/config.yaml wires them into
`snakemake --executor cluster-generic`: `submit` runs oarsub on Snakemake's job script and
prints the OAR job id; `status` prints running, success or failed from `oarstat -fj JOBID -J`
(state and exit_code); `cancel` runs oardel. Exit 0 ok, 1 an OAR command failed, 2 usage.

`submit` refuses a job that is not a deploy job (`--type deploy`, nodes installed with kadeploy,
root on them) unless `--undeployed` says so: Grid'5000's default environment gives no root, so
corun cannot set cgroups, elevators or perf there and the runs measure nothing trustworthy.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys

from corun.errors import ConfigError, CorunError, one_line_errors

WALLTIME = re.compile(r"^\d+(:[0-5]\d){0,2}$")
RUNNING_STATES = {
    "Waiting",
    "Hold",
    "toLaunch",
    "toAckReservation",
    "Launching",
    "Running",
    "Suspended",
    "Resuming",
    "Finishing",
}


def submit_argv(
    jobscript: str,
    walltime: str = "1:00:00",
    nodes: int = 1,
    cores: int | None = None,
    name: str | None = None,
    project: str | None = None,
    types: list[str] | None = None,
    undeployed: bool = False,
) -> list[str]:
    if not WALLTIME.match(walltime):
        raise ConfigError("--walltime", "walltime", walltime, "hours[:minutes[:seconds]] such as 1:30:00")
    if nodes < 1 or (cores is not None and cores < 1):
        raise ConfigError("--nodes/--cores", "resources", f"nodes={nodes} cores={cores}", "integers >= 1")
    if "deploy" not in (types or []) and not undeployed:
        raise ConfigError(
            "corun.testbed.oar submit",
            "--type",
            types or [],
            "deploy (a kadeploy job: root on the nodes, where runs measure), or --undeployed to submit "
            "to the default environment, where runs cannot measure",
        )
    resource = f"nodes={nodes}" + (f"/core={cores}" if cores else "") + f",walltime={walltime}"
    argv = ["oarsub", "-l", resource]
    if name:
        argv += ["-n", re.sub(r"[^A-Za-z0-9_.-]", "_", name)]
    if project:
        argv += ["--project", project]
    for t in types or []:
        argv += ["-t", t]
    # Output files beside the job script: OAR.<name>.<id>.stdout by default would land in the cwd.
    argv += ["-O", f"{jobscript}.%jobid%.out", "-E", f"{jobscript}.%jobid%.err", f"/bin/bash {jobscript}"]
    return argv


def parse_submit(stdout: str) -> str:
    m = re.search(r"^OAR_JOB_ID=(\d+)\s*$", stdout, re.MULTILINE)
    if not m:
        raise CorunError(f"oarsub printed no OAR_JOB_ID ({stdout.strip().splitlines()[-1:] or 'nothing'})")
    return m.group(1)


def parse_status(doc: dict, job: str) -> str:
    """running, success or failed, from oarstat -fj JOB -J."""
    entry = doc.get(str(job)) if isinstance(doc, dict) else None
    if not isinstance(entry, dict) or "state" not in entry:
        raise CorunError(f"oarstat -fj {job} -J: no state for job {job}")
    state = entry["state"]
    if state in RUNNING_STATES:
        return "running"
    if state == "Terminated" and entry.get("exit_code") in (0, "0"):
        return "success"
    return "failed"


def _run(argv: list[str]) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        raise CorunError(f"{argv[0]} not found: run Snakemake on an OAR frontend (Grid'5000)") from None
    if proc.returncode != 0:
        raise CorunError(f"{argv[0]} failed ({(proc.stderr.strip().splitlines() or [f'exit {proc.returncode}'])[-1]})")
    return proc


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m corun.testbed.oar", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("submit")
    s.add_argument("--walltime", default="1:00:00")
    s.add_argument("--nodes", type=int, default=1)
    s.add_argument("--cores", type=int)
    s.add_argument("--name")
    s.add_argument("--project")
    s.add_argument("--type", action="append", default=[], dest="types")
    s.add_argument("--undeployed", action="store_true", help="submit a job that is not a deploy job")
    s.add_argument("jobscript")
    st = sub.add_parser("status")
    st.add_argument("job")
    c = sub.add_parser("cancel")
    c.add_argument("jobs", nargs="+")
    a = ap.parse_args(argv)
    if a.command == "submit":
        cmd = submit_argv(a.jobscript, a.walltime, a.nodes, a.cores, a.name, a.project, a.types, a.undeployed)
        print(parse_submit(_run(cmd).stdout))
    elif a.command == "status":
        try:
            doc = json.loads(_run(["oarstat", "-fj", a.job, "-J"]).stdout)
        except ValueError:
            raise CorunError(f"oarstat -fj {a.job} -J printed no JSON") from None
        print(parse_status(doc, a.job))
    else:
        _run(["oardel", *a.jobs])
    return 0


if __name__ == "__main__":
    sys.exit(main())
