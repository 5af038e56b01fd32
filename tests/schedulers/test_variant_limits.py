"""The programs' option limits are the manifests' parameter bounds, for every family.

Every param of a variant is passed by its start command to an option of the family's program
(corun-dynamic-io, corun-cosched, pin.py, steer.py, and corun.testbed.pfs_sched's --set keys for
the aIOLi variants). Each program prints the types and bounds it checks (`--limits`,
`steer.py limits`; pfs_sched's are its INT_KEYS), in JSON schema words. Compared with the manifests:
- every param goes to an option the program checks, of the same type, and the manifest's bounds
  and enum lie within the program's (a variant may narrow them: batch fixes mpl to 1);
- the program's bounds are the manifests' widest, and its words the union of the variants'
  (the program refuses nothing a manifest allows, allows nothing no manifest does);
- each program bound is tried: a value on an inclusive bound is accepted, one just outside is
  refused with one line naming the option and the value.
"""

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from corun.run import schedulers
from corun.testbed import pfs_sched

ROOT = Path(__file__).resolve().parents[2]
SCHED = ROOT / "schedulers"
BOUND_KEYS = ("type", "minimum", "exclusiveMinimum", "maximum", "enum")


def load_module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    spec.loader.exec_module(module)
    return module


class CDaemon:
    """A C daemon: --limits; a value tried with the option alone, so the parser's verdict is
    all that decides (accepted: the daemon then stops at the first option it lacks)."""

    def __init__(self, folder, exe):
        self.folder, self.exe = folder, exe

    def build(self):
        subprocess.run(["make", "-s", "-C", str(SCHED / self.folder), "all"], check=True)

    def limits(self):
        res = subprocess.run(
            [str(SCHED / self.folder / "build" / self.exe), "--limits"], capture_output=True, text=True
        )
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout)

    def verdict(self, option, text):
        """None if accepted, else the error line."""
        res = subprocess.run(
            [str(SCHED / self.folder / "build" / self.exe), f"--{option}", text], capture_output=True, text=True
        )
        lines = res.stderr.strip().splitlines()
        assert res.returncode == 2 and len(lines) == 1, (option, text, res.stderr)
        return None if ": missing (expected" in lines[0] else lines[0]


class PythonProgram:
    """A variant's Python program: its module (loaded once, for its parser) and its limits."""

    module = None
    name: str
    path: Path
    limits_argv: list[str]

    def build(self):
        if type(self).module is None:
            type(self).module = load_module(self.name, self.path)

    def limits(self):
        res = subprocess.run([sys.executable, str(self.path), *self.limits_argv], capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout)


class Pin(PythonProgram):
    name, path, limits_argv = "corun_pin", SCHED / "placement" / "pin.py", ["--limits"]

    def verdict(self, option, text):
        try:
            self.module.build_parser().parse_args([f"--{option}", text])
        except self.module.UsageError as exc:
            return f"corun-placement: {exc}"
        return None


class Steer(PythonProgram):
    name, path, limits_argv = "steer", SCHED / "irq_steering" / "steer.py", ["limits"]

    def verdict(self, option, text):
        """apply's parser and checks, with the policy that takes the option (or the value's
        own policy) and a valid value for that policy's other options."""
        steer = self.module
        policy = (
            text
            if option == "policy"
            else next((p for o, ps in steer.TAKEN_BY.items() if o == option for p in ps), "spread")
        )
        argv = ["apply", "--policy", policy, "--interfaces", "eth0", "--state", "s.json"]
        for opt, policies in steer.TAKEN_BY.items():
            if policy in policies and opt != option:
                lim = steer.LIMITS[opt]
                argv += [f"--{opt}", str(lim.get("minimum", "x"))]
        if option != "policy":
            argv += [f"--{option}", text]
        try:
            steer.check_args(steer.build_parser().parse_args(argv))
        except steer.UsageError as exc:
            return str(exc)
        return None


class PfsSched:
    """The aIOLi variants' --set KEY=VALUE items, checked by corun.testbed.pfs_sched before it
    writes any server's control file."""

    def build(self):
        pass

    def limits(self):
        lim = {k: {"type": "integer", "minimum": lo, "maximum": hi} for k, (lo, hi) in pfs_sched.INT_KEYS.items()}
        return {**lim, **{k: {"type": "string"} for k in (*pfs_sched.PATH_KEYS, "pfs-state")}}

    def verdict(self, option, text):
        try:
            pfs_sched.parse_sets([f"{option}={text}"])
        except pfs_sched.SchedError as exc:
            return str(exc)
        return None


PROGRAMS = {
    "corun-dynamic-io": CDaemon("dynamic_io", "corun-dynamic-io"),
    "corun-cosched": CDaemon("mpi_cosched", "corun-cosched"),
    "pin.py": Pin(),
    "steer.py": Steer(),
    "corun.testbed.pfs_sched": PfsSched(),
}


def program_of(start):
    if start[0] == "{python}":
        return start[2] if start[1] == "-m" else Path(start[1]).name
    return Path(start[0]).name


def option_of(argv, param):
    """The option the command passes the param to: `--name {param.x}`, or `--set key={param.x}`."""
    for i, arg in enumerate(argv):
        if arg == f"{{param.{param}}}" and i > 0 and argv[i - 1].startswith("--"):
            return argv[i - 1][2:]
        if arg.endswith(f"={{param.{param}}}") and i > 0 and argv[i - 1] == "--set":
            return arg.split("=", 1)[0]
    return None


def rows():
    """(program, variant, param, option, the manifest's bounds) of every param of every
    variant whose start command runs one of PROGRAMS."""
    out = []
    good, _ = schedulers.listing()
    for man in good:
        prog = program_of(man.get("start") or ["", ""])
        if prog not in PROGRAMS:
            continue
        for param, spec in sorted(man["params"].items()):
            bounds = {k: spec[k] for k in BOUND_KEYS if k in spec}
            out.append((prog, man["name"], param, option_of(man["start"], param), bounds))
    return out


ROWS = rows()


@pytest.fixture(scope="module")
def limits():
    out = {}
    for name, prog in PROGRAMS.items():
        prog.build()
        out[name] = prog.limits()
    return out


def test_every_family_is_covered():
    families = {(r[0], r[1]) for r in ROWS}
    for prog, variant in [
        ("corun-dynamic-io", "cgroup_io_throttle"),
        ("corun-dynamic-io", "dynamic_io_psi"),
        ("corun-cosched", "gang"),
        ("corun-cosched", "mpi_cosched"),
        ("pin.py", "numa_spread"),
        ("steer.py", "sais_mark"),
        ("corun.testbed.pfs_sched", "app_aware"),
    ]:
        assert (prog, variant) in families


def lower(b):
    if "minimum" in b:
        return (b["minimum"], False)
    if "exclusiveMinimum" in b:
        return (b["exclusiveMinimum"], True)
    return (-math.inf, False)


@pytest.mark.parametrize("prog,variant,param,option,bounds", ROWS, ids=[f"{r[1]}.{r[2]}" for r in ROWS])
def test_every_param_goes_to_a_checked_option_within_its_bounds(limits, prog, variant, param, option, bounds):
    assert option, f"{variant}: {param} is not passed to an option of {prog}"
    assert option in limits[prog], f"{variant}: {param}: {prog} has no checked option --{option}"
    theirs = limits[prog][option]
    assert bounds.get("type") == theirs["type"], (variant, param)
    if "enum" in bounds or "enum" in theirs:
        assert set(bounds.get("enum", [None])) <= set(theirs.get("enum", [])), (variant, param)
    (mine_lo, mine_x), (their_lo, their_x) = lower(bounds), lower(theirs)
    assert mine_lo > their_lo or (mine_lo == their_lo and (mine_x or not their_x)), (variant, param, bounds, theirs)
    assert bounds.get("maximum", math.inf) <= theirs.get("maximum", math.inf), (variant, param, bounds, theirs)


def options():
    """(program, option) of every option a manifest passes a param to."""
    return sorted({(r[0], r[3]) for r in ROWS if r[3]})


@pytest.mark.parametrize("prog,option", options(), ids=[f"{p}--{o}" for p, o in options()])
def test_the_program_allows_what_the_widest_manifest_allows(limits, prog, option):
    theirs = {k: v for k, v in limits[prog][option].items() if k in BOUND_KEYS}
    mine = [b for p, _, _, o, b in ROWS if (p, o) == (prog, option)]
    if "enum" in theirs:
        assert sorted({w for b in mine for w in b.get("enum", [])}) == sorted(theirs["enum"])
    else:
        assert theirs in mine, f"--{option} of {prog}: {theirs}; the manifests: {mine}"


def edges(bounds):
    """(text, accepted) on and just outside each bound of the program."""
    cases = []
    if bounds["type"] == "integer":
        low, high = bounds.get("minimum"), bounds.get("maximum")
        if low is not None:
            cases += [(str(int(low)), True), (str(int(low) - 1), False), (f"{int(low)}.5", False)]
        if high is not None:
            cases += [(str(int(high)), True), (str(int(high) + 1), False)]
        return cases
    if bounds["type"] == "number":
        if "minimum" in bounds:
            low = bounds["minimum"]
            cases += [(repr(float(low)), True), (repr(low - max(abs(low) * 1e-3, 1e-6)), False)]
        if "exclusiveMinimum" in bounds:
            low = bounds["exclusiveMinimum"]
            cases += [(repr(float(low)), False), (repr(low + max(abs(low) * 1e-3, 1e-6)), True)]
        if "maximum" in bounds:
            high = bounds["maximum"]
            cases += [(repr(float(high)), True), (repr(high + max(abs(high) * 1e-3, 1e-6)), False)]
        return cases
    if bounds["type"] == "boolean":
        return [("true", True), ("false", True), ("1", True), ("0", True), ("maybe", False)]
    for word in bounds.get("enum", []):
        cases.append((word, True))
    if "enum" in bounds:
        cases.append(("not-" + bounds["enum"][0], False))
    return cases


@pytest.mark.parametrize("prog,option", options(), ids=[f"{p}--{o}" for p, o in options()])
def test_the_program_accepts_its_bounds_and_refuses_just_outside(limits, prog, option):
    cases = edges(limits[prog][option])
    if limits[prog][option]["type"] in ("integer", "number", "boolean") or "enum" in limits[prog][option]:
        assert cases, (prog, option)
    for text, accepted in cases:
        verdict = PROGRAMS[prog].verdict(option, text)
        if accepted:
            assert verdict is None, (prog, option, text, verdict)
        else:
            assert verdict is not None and (f"--{option}" in verdict or option.replace("-", "_") in verdict), (
                prog,
                option,
                text,
                verdict,
            )
            assert text in verdict or str(int(float(text))) in verdict, (prog, option, text, verdict)
