"""The daemon's option limits are the manifests' parameter bounds.

Every parameter of a variant that starts corun-dynamic-io is passed to one of its options; the
manifest's type, minimum, exclusiveMinimum, maximum and enum must be what the daemon enforces.
The daemon prints its table (`--limits`), which is compared with every manifest, and each bound
is also tried: the daemon accepts a value on an inclusive bound and refuses one just outside
with exit 2 and one line naming the option.
"""

import json
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DIO = ROOT / "schedulers" / "dynamic_io"
DAEMON_NAME = "corun-dynamic-io"
BOUND_KEYS = ("type", "minimum", "exclusiveMinimum", "maximum", "enum")


def load_manifests():
    return {p.parent.name: yaml.safe_load(p.read_text()) for p in (ROOT / "schedulers").glob("*/manifest.yaml")}


def start_argv(manifests, name):
    """The variant's start command, its own or the one of the variant it extends."""
    manifest = manifests[name]
    while "start" not in manifest and manifest.get("extends"):
        manifest = manifests[manifest["extends"]]
    return manifest.get("start", [])


def option_of(argv, param):
    """The option the start command passes the parameter to; by default --<name with dashes>."""
    for i, arg in enumerate(argv):
        if arg == f"{{param.{param}}}" and i > 0 and argv[i - 1].startswith("--"):
            return argv[i - 1][2:]
    return param.replace("_", "-")


def daemon_params():
    """(variant, param, option, the manifest's bounds) for every param of every variant
    that runs the daemon."""
    manifests = load_manifests()
    rows = []
    for name in sorted(manifests):
        argv = start_argv(manifests, name)
        if not argv or not argv[0].endswith("/" + DAEMON_NAME):
            continue
        for param, spec in sorted((manifests[name].get("params") or {}).items()):
            bounds = {k: spec[k] for k in BOUND_KEYS if k in spec}
            rows.append((name, param, option_of(argv, param), bounds))
    return rows


PARAMS = daemon_params()
IDS = [f"{variant}.{param}" for variant, param, _, _ in PARAMS]


@pytest.fixture(scope="module")
def exe():
    subprocess.run(["make", "-s", "-C", str(DIO), "all"], check=True)
    return DIO / "build" / DAEMON_NAME


@pytest.fixture(scope="module")
def limits(exe):
    res = subprocess.run([str(exe), "--limits"], capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def run(exe, *args):
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=30)


def test_every_daemon_variant_has_params():
    variants = {variant for variant, _, _, _ in PARAMS}
    assert {"dynamic_io", "dynamic_io_psi", "dynamic_io_fair", "cgroup_io_throttle"} <= variants


@pytest.mark.parametrize("variant,param,option,bounds", PARAMS, ids=IDS)
def test_manifest_bounds_equal_the_daemon_limits(limits, variant, param, option, bounds):
    assert option in limits, f"{variant}: {param}: the daemon has no checked option --{option}"
    daemon = {k: v for k, v in limits[option].items() if k in BOUND_KEYS}
    assert bounds == daemon, f"{variant}: {param} in the manifest, --{option} in the daemon"


def edges(bounds):
    """(value, accepted) pairs on and just outside each bound."""
    cases = []
    if bounds.get("type") == "integer":  # whole numbers: one past each bound, and a fraction
        return [(int(bounds["minimum"]), True), (int(bounds["minimum"]) - 1, False)] + [
            (int(bounds["maximum"]), True),
            (int(bounds["maximum"]) + 1, False),
            (int(bounds["minimum"]) + 0.5, False),
        ]
    if "minimum" in bounds:
        low = bounds["minimum"]
        cases += [(low, True), (low - max(abs(low) * 1e-3, 1e-6), False)]
    if "exclusiveMinimum" in bounds:
        low = bounds["exclusiveMinimum"]
        cases += [(low, False), (low + max(abs(low) * 1e-3, 1e-6), True)]
    if "maximum" in bounds:
        high = bounds["maximum"]
        cases += [(high, True), (high + max(abs(high) * 1e-3, 1e-6), False)]
    for word in bounds.get("enum", []):
        cases.append((word, True))
    if "enum" in bounds:
        cases.append(("not-" + bounds["enum"][0], False))
    return cases


NUMBERED = [row for row in PARAMS if edges(row[3])]


@pytest.mark.parametrize("variant,param,option,bounds", NUMBERED, ids=[f"{r[0]}.{r[1]}" for r in NUMBERED])
def test_daemon_accepts_the_bounds_and_refuses_just_outside(exe, variant, param, option, bounds):
    for value, accepted in edges(bounds):
        text = value if isinstance(value, (str, int)) else repr(float(value))
        text = str(text)
        res = run(exe, f"--{option}", text)
        lines = res.stderr.strip().splitlines()
        assert res.returncode == 2 and len(lines) == 1, (variant, param, text, res.stderr)
        if accepted:
            # The value passed; what stops it is the missing event log.
            assert "--job-events: missing" in lines[0], (variant, param, text, res.stderr)
        else:
            assert lines[0].startswith(f"{DAEMON_NAME}: --{option}: '{text}' (expected"), (
                variant,
                param,
                text,
                res.stderr,
            )
