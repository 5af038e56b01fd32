"""Grid'5000 nodes reserved and deployed through EnOSlib, written as corun's Ansible inventory.

inventory/grid5000/reserve.py calls these functions. A reservation is a few settings (site,
cluster, nodes, walltime, image, job name) read from a small YAML file and the command line;
`enoslib_settings` turns them into the settings of EnOSlib's G5k provider (one deploy job of
N nodes of one cluster, the nodes in role `testbed`), `reserve` hands them to EnOSlib, and
`inventory_text` writes the roles and networks EnOSlib gives back as the inventory the testbed
profiles read: group `testbed`, one host per node under its short name, root over ssh, the
corun tree copied to every node by roles/corun_source.

EnOSlib is imported only by `reserve` and `release`: the rest (and the tests) run without it.
EnOSlib pins an ansible-core older than corun's (requirements-grid5000.txt), so it lives in a
Python environment of its own on the frontend, never in corun's .venv.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import yaml

from corun.errors import ConfigError, CorunError
from corun.testbed.testbeds import corun_vars, inventory_yaml
from corun.util import lazy_module

ROLE = "testbed"  # the EnOSlib role of the reserved nodes, and the inventory group
DEFAULT_CORUN_DIR = "/root/corun"  # on each node: local disk, root's (any image)
DEFAULTS = {"nodes": 1, "walltime": "2:00:00", "image": "debian12-min", "job_name": "corun"}
KEYS = (
    "site",
    "cluster",
    "nodes",
    "walltime",
    "image",
    "job_name",
    "job_id",
    "reservation",
    "project",
    "queue",
    "key",
    "reservable_disks",
    "corun_dir",
)
QUEUES = ("default", "production", "testing", "besteffort")
NAME = re.compile(r"^[a-z][a-z0-9-]*$")
IMAGE = re.compile(r"^debian12-[a-z0-9]+$")
WALLTIME = re.compile(r"^(\d+):([0-5]\d)(?::([0-5]\d))?$")
JOB_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
RESERVATION = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")
MISSING_ENOSLIB = (
    "enoslib is not installed: on the frontend run python3 -m venv .venv-grid5000 && "
    ".venv-grid5000/bin/pip install -r requirements-grid5000.txt, then this script with "
    ".venv-grid5000/bin/python (docs/howto/grid5000.md)"
)


def read_config(path: str | None, overrides: dict) -> tuple[dict, str]:
    """The reservation's settings: DEFAULTS, then the YAML file at PATH, then the command line's
    OVERRIDES (None values left out), checked. Returns (settings, source naming where from)."""
    source = path or "command line"
    doc: dict = {}
    if path:
        try:
            doc = yaml.safe_load(Path(path).read_text()) or {}
        except OSError:
            raise ConfigError(path, "", path, "a readable reservation file (YAML)") from None
        except yaml.YAMLError as exc:
            raise ConfigError(path, "", "unparsable YAML", f"a YAML mapping ({str(exc).splitlines()[0]})") from None
        if not isinstance(doc, dict):
            raise ConfigError(path, "", doc, "a YAML mapping of reservation settings")
    cli = {k: v for k, v in overrides.items() if v is not None}
    return check({**doc, **cli}, source, set(cli)), source


def check(given: dict, source: str, from_cli: set | None = None) -> dict:
    """The settings with defaults filled in, or a ConfigError naming the first bad key (and
    where it came from: SOURCE, or the command line for the keys FROM_CLI)."""

    def src(key: str) -> str:
        return "command line" if key in (from_cli or ()) else source

    for k in given:
        if k not in KEYS:
            raise ConfigError(source, str(k), given[k], f"a reservation setting ({', '.join(KEYS)})")
    s = {**DEFAULTS, "corun_dir": DEFAULT_CORUN_DIR, **given}
    for k in ("site", "cluster"):
        if k not in given:
            raise ConfigError(source, k, None, f"the Grid'5000 {k} to reserve on (e.g. {_example(k)})")
        if not isinstance(s[k], str) or not NAME.match(s[k]):
            raise ConfigError(src(k), k, s[k], f"a Grid'5000 {k} name such as {_example(k)}")
    if isinstance(s["nodes"], bool) or not isinstance(s["nodes"], int) or s["nodes"] < 1:
        raise ConfigError(src("nodes"), "nodes", s["nodes"], "an integer >= 1")
    if isinstance(s["walltime"], int):  # YAML 1.1 reads an unquoted 3:00 as 180 (base 60)
        raise ConfigError(
            src("walltime"),
            "walltime",
            s["walltime"],
            'a quoted "hours:minutes[:seconds]" (YAML reads 3:00 unquoted as 180)',
        )
    m = WALLTIME.match(s["walltime"]) if isinstance(s["walltime"], str) else None
    if not m or (int(m.group(1)), int(m.group(2))) == (0, 0):
        raise ConfigError(
            src("walltime"), "walltime", s["walltime"], "hours:minutes[:seconds] such as 3:00 or 12:30:00"
        )
    s["walltime"] = f"{int(m.group(1))}:{m.group(2)}:{m.group(3) or '00'}"  # EnOSlib takes H:MM:SS
    if not isinstance(s["image"], str) or not IMAGE.match(s["image"]):
        raise ConfigError(
            src("image"), "image", s["image"], "a Debian 12 kadeploy environment such as debian12-min or debian12-nfs"
        )
    if not isinstance(s["job_name"], str) or not JOB_NAME.match(s["job_name"]):
        raise ConfigError(src("job_name"), "job_name", s["job_name"], "a job name of letters, digits, '_', '.' and '-'")
    job_id = s.get("job_id")
    if job_id is not None and (isinstance(job_id, bool) or not str(job_id).isdigit()):
        raise ConfigError(src("job_id"), "job_id", job_id, "the number of a running OAR job on the site")
    if s.get("reservation") is not None and not RESERVATION.match(str(s["reservation"])):
        raise ConfigError(
            src("reservation"),
            "reservation",
            s["reservation"],
            "a start date YYYY-MM-DD HH:MM:SS (Grid'5000's time, Paris)",
        )
    if s.get("queue") is not None and s["queue"] not in QUEUES:
        raise ConfigError(src("queue"), "queue", s["queue"], f"one of {', '.join(QUEUES)}")
    if s.get("project") is not None and not isinstance(s["project"], str):
        raise ConfigError(src("project"), "project", s["project"], "a Grid'5000 project name")
    if s.get("key") is not None and not str(s["key"]).endswith(".pub"):
        raise ConfigError(src("key"), "key", s["key"], "the path of an ssh public key (.pub) for root on the nodes")
    if not isinstance(s.get("reservable_disks", False), bool):
        raise ConfigError(src("reservable_disks"), "reservable_disks", s["reservable_disks"], "true or false")
    if not isinstance(s["corun_dir"], str) or not s["corun_dir"].startswith("/") or s["corun_dir"] == "/":
        raise ConfigError(src("corun_dir"), "corun_dir", s["corun_dir"], "an absolute path on the nodes other than /")
    return s


def _example(key: str) -> str:
    return {"site": "grenoble", "cluster": "dahu"}[key]


def enoslib_settings(s: dict) -> tuple[dict, dict]:
    """(the G5k provider's settings, its one machine) for EnOSlib's
    G5kConf.from_settings(**settings).add_machine(**machine): one deploy job (root on the nodes,
    the image installed by kadeploy) of s["nodes"] nodes of one cluster, in role testbed."""
    settings = {
        "job_name": s["job_name"],
        "job_type": ["deploy"],
        "env_name": s["image"],
        "walltime": s["walltime"],
    }
    if s.get("job_id") is not None:
        settings["oargrid_jobids"] = [[s["site"], str(s["job_id"])]]  # reload that job, not one by name
    for k in ("reservation", "project", "queue", "key"):
        if s.get(k) is not None:
            settings[k] = str(s[k])
    machine = {"roles": [ROLE], "cluster": s["cluster"], "site": s["site"], "nodes": s["nodes"]}
    if s.get("reservable_disks"):
        machine["reservable_disks"] = True  # the nodes' extra disks (docs/howto/grid5000-disk.md)
    return settings, machine


def _enoslib():
    """EnOSlib, loaded on first use (the module imports without it), or the one-line error."""
    if importlib.util.find_spec("enoslib") is None:
        raise CorunError(MISSING_ENOSLIB)
    return lazy_module("enoslib")


def _provider(s: dict):
    en = _enoslib()
    settings, machine = enoslib_settings(s)
    try:
        conf = en.G5kConf.from_settings(**settings).add_machine(**machine)
        return en.G5k(conf)
    except Exception as exc:  # EnOSlib's own errors: schema, API; shown in one line
        raise CorunError(f"EnOSlib could not prepare the reservation ({_first_line(exc)})") from None


def reserve(s: dict):
    """Reserve (or reload, by job name or job_id) and deploy the nodes: EnOSlib's (roles,
    networks, OAR job ids). EnOSlib's progress (waiting for the job, kadeploy) goes to stderr."""
    _enoslib().init_logging()  # INFO: a deployment takes minutes, say what it waits for
    provider = _provider(s)
    try:
        roles, networks = provider.init()
    except Exception as exc:
        raise CorunError(f"EnOSlib could not reserve or deploy the nodes ({_first_line(exc)})") from None
    jobs = []
    for job in getattr(provider, "jobs", None) or []:
        uid = getattr(job, "uid", None)
        if uid is not None:
            jobs.append(str(uid))
    return roles, networks, jobs


def release(s: dict) -> None:
    """Delete the job (by name, or job_id): the nodes go back to Grid'5000."""
    provider = _provider(s)
    try:
        provider.destroy()
    except Exception as exc:
        raise CorunError(f"EnOSlib could not delete the job ({_first_line(exc)})") from None


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _jumps(extra: dict) -> str | None:
    """ssh -J of EnOSlib's gateway host vars (access.grid5000.fr from outside, a kavlan-local
    gateway inside), outermost first."""
    hops = []
    for prefix in ("gateway", "internal_gateway"):
        host = extra.get(prefix)
        if host:
            user = extra.get(f"{prefix}_user")
            port = extra.get(f"{prefix}_port")
            hops.append(f"{user + '@' if user else ''}{host}{f':{port}' if port else ''}")
    return f"-J {','.join(hops)}" if hops else None


def inventory_hosts(roles, source: str) -> list[tuple[str, dict]]:
    """(name, host vars) of the hosts in EnOSlib's role testbed. A host is EnOSlib's Host:
    address (ssh address: the node's FQDN after a deployment), alias, user, port, keyfile and
    extra (its gateway host vars)."""
    hosts = list(roles.get(ROLE, []) if hasattr(roles, "get") else [])
    if not hosts:
        raise ConfigError(source, f"roles.{ROLE}", sorted(roles) if roles else [], "reserved nodes in role testbed")
    out: list[tuple[str, dict]] = []
    for h in sorted(hosts, key=lambda h: _node_order(h.address)):
        user = h.user or "root"
        if user != "root":
            raise ConfigError(
                source, f"{h.address}.user", user, "root (a deploy job's nodes, where corun's runs can measure)"
            )
        hv: dict = {"ansible_host": h.address, "ansible_user": user}
        if h.port:
            hv["ansible_port"] = int(h.port)
        if h.keyfile:
            hv["ansible_ssh_private_key_file"] = str(h.keyfile)
        jumps = _jumps(h.extra or {})
        if jumps:
            hv["ansible_ssh_common_args"] = jumps
        name = str(h.alias or h.address).split(".")[0]
        if any(name == n for n, _ in out):
            raise ConfigError(source, f"roles.{ROLE}", name, "each node once")
        out.append((name, hv))
    return out


def _node_order(address: str) -> tuple:
    """dahu-2 before dahu-10."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", address))


def mpi_network(networks) -> str | None:
    """The one IPv4 network EnOSlib reports (the site's production network), for MPI's TCP."""
    found = set()
    for nets in (networks or {}).values():
        for net in nets:
            n = getattr(net, "network", None)
            if n is not None and getattr(n, "version", None) == 4:
                found.add(str(n))
    return found.pop() if len(found) == 1 else None


def inventory_text(roles, networks, s: dict, jobs: list[str], source: str) -> str:
    hosts = inventory_hosts(roles, source)
    group_vars: dict = {}
    for k in ("ansible_user", "ansible_ssh_common_args"):  # one value for every node: a group var
        values = {hv.get(k) for _, hv in hosts}
        if len(values) == 1 and None not in values:
            group_vars[k] = values.pop()
            for _, hv in hosts:
                del hv[k]
    group_vars["ansible_python_interpreter"] = "/usr/bin/python3"
    group_vars["corun_source_copy"] = True  # a deployed node holds only the image
    group_vars["corun_source_dir"] = s["corun_dir"]
    group_vars.update(corun_vars(s["corun_dir"]))
    net = mpi_network(networks)
    if net:
        group_vars["corun_mpi_network"] = net
    job = f"OAR job {', '.join(jobs)}" if jobs else f"job {s['job_name']}"
    return inventory_yaml(
        f"Grid'5000 nodes of {job} ({len(hosts)} x {s['cluster']}, {s['site']}, {s['image']}, "
        f"walltime {s['walltime']}),\nwritten by inventory/grid5000/reserve.py from {source} through EnOSlib.\n"
        "Deployed nodes take root over ssh with your key; corun is copied to corun_source_dir.",
        hosts,
        group_vars,
    )
