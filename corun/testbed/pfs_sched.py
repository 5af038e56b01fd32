"""Apply, verify and restore a policy of the corun/aioli request scheduler on every data server
of the running parallel file system (schedulers/aioli, docs/schedulers/aioli.md).

The file system must be up (corun/testbed/pfs.py) with a `corun/aioli` translator in
`server_xlators`; its layout (`{pfs state_dir}/layout.json`) names every server, how to reach
it and its translator's control and status files. `apply` records what it will change in
`--state` first, then writes each server's control file (key=value lines, tmp + rename) with a
fresh generation and `reset=1`, and waits until every server's status file reports that
generation. `verify` reads every status file back: the generation, the policy and each
parameter in effect, no control error, written within the last STATUS_MAX_AGE_S seconds.
`{dir}` in a path parameter (trace, trace_record) is each server's own folder.
`restore` writes `policy=fifo` (the stock server) wherever `apply` wrote, then removes the
state; with no state it does nothing. `status` prints every server's status document.

    python -m corun.testbed.pfs_sched apply --policy P --pfs-state DIR --state FILE [--set KEY=VALUE]...
    python -m corun.testbed.pfs_sched verify --state FILE
    python -m corun.testbed.pfs_sched restore --state FILE
    python -m corun.testbed.pfs_sched status --pfs-state DIR [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from corun.errors import CorunError, one_line_errors
from corun.testbed import inventory
from corun.testbed.pfs_remote import AIOLI_TYPE, NetnsHost, remote
from corun.util import atomic_write_text, on_each, repo_path

POLICIES = ("fifo", "aioli", "aioli_no_wait", "aioli_no_agg", "time_order_agg", "app_aware")
# The translator's numeric keys and their bounds (src/policy.c, aioli_params_set).
INT_KEYS = {
    "quantum_step_kib": (1, 1 << 20),
    "max_agg_kib": (4, 1 << 20),
    "wait_us": (0, 10_000_000),
    "shift_window_kib": (0, 1 << 20),
    "starvation_ms": (1, 600_000),
    "max_outstanding": (1, 1024),
    "app_req_cost_us": (0, 10_000_000),
    "app_wait_max_us": (0, 10_000_000),
}
PATH_KEYS = ("trace", "trace_record")
STATUS_MAX_AGE_S = 5.0  # the status is rewritten every second; a busy machine may delay it
APPLY_TIMEOUT_S = 10.0
POLL_S = 0.02  # the status is read again this often until it shows the change (a nsenter and a cat)

WRITE_SCRIPT = r"""
f=$1
[ -d "$(dirname -- "$f")" ] || { echo "no folder $(dirname -- "$f")" >&2; exit 3; }
cat > "$f.tmp.$$" && mv -f -- "$f.tmp.$$" "$f"
"""


class SchedError(CorunError):
    pass


def parse_sets(sets: list[str]) -> dict:
    """--set KEY=VALUE items, each checked; one-line errors before anything is touched."""
    out: dict = {}
    for item in sets:
        key, eq, value = item.partition("=")
        if not eq:
            raise SchedError(f"pfs_sched: --set: {item!r} (expected KEY=VALUE)", 2)
        if key in INT_KEYS:
            lo, hi = INT_KEYS[key]
            try:
                v = int(value)
            except ValueError:
                v = None
            if v is None or not lo <= v <= hi:
                raise SchedError(f"pfs_sched: --set: {key}: {value!r} (expected an integer in [{lo}, {hi}])", 2)
            out[key] = v
        elif key in PATH_KEYS:
            if "\n" in value:
                raise SchedError(f"pfs_sched: --set: {key}: {value!r} (expected a path on one line)", 2)
            out[key] = value
        else:
            raise SchedError(
                f"pfs_sched: --set: {key!r} (expected one of {', '.join([*INT_KEYS, *PATH_KEYS])})",
                2,
            )
    return out


def targets(pfs_state: str) -> list[dict]:
    """Every corun/aioli translator of the running file system: host, control and status files."""
    lay_path = repo_path(pfs_state) / "layout.json"
    try:
        lay = json.loads(lay_path.read_text())
    except FileNotFoundError:
        raise SchedError(f"pfs_sched: no file system is up ({lay_path} is missing): run scripts/pfs up first") from None
    except (OSError, ValueError) as exc:
        raise SchedError(f"pfs_sched: {lay_path}: {exc}") from None
    out = []
    for s in lay.get("servers", []):
        for x in s.get("xlators", []):
            if x["type"] == AIOLI_TYPE:
                out.append(
                    {
                        "server": s["index"],
                        "host": s["host"],
                        "xlator": x["name"],
                        "dir": s["dir"],
                        "control_file": x["options"]["control-file"],
                        "status_file": x["options"]["status-file"],
                    }
                )
    if not out:
        raise SchedError(
            f"pfs_sched: {lay_path}: no {AIOLI_TYPE} translator on any data server "
            "(expected server_xlators: [{name: corun-aioli, type: corun/aioli}] in the pfs configuration)"
        )
    return out


def _host(t: dict) -> inventory.Host:
    """The server's host as the layout records it (a netns cluster's host with its namespace)."""
    return NetnsHost(**t["host"]) if t["host"].get("netns") else inventory.Host(**t["host"])


def control_text(policy: str, params: dict, generation: str, reset: bool) -> str:
    lines = [f"# written by corun.testbed.pfs_sched at {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}"]
    lines.append(f"generation={generation}")
    if reset:
        lines.append("reset=1")
    lines.append(f"policy={policy}")
    lines += [f"{k}={v}" for k, v in params.items()]
    return "\n".join(lines) + "\n"


def read_status(t: dict) -> dict | None:
    res = remote(_host(t), 'cat -- "$1" 2>/dev/null; exit 0', t["status_file"], check=False)
    try:
        return json.loads(res.stdout)
    except ValueError:
        return None


def check_status(t: dict, doc: dict | None, policy: str, params: dict, generation: str) -> str | None:
    """Why server t's status does not show (policy, params, generation) in effect, or None."""
    where = f"server {t['server']} ({t['host']['name']}) {t['status_file']}"
    if doc is None:
        return f"{where}: no status"
    if doc.get("control_error"):
        return f"{where}: control error: {doc['control_error']}"
    if doc.get("control_generation") != generation:
        return f"{where}: generation {doc.get('control_generation')!r} (expected {generation!r})"
    if doc.get("policy") != policy:
        return f"{where}: policy {doc.get('policy')!r} (expected {policy!r})"
    for k, v in params.items():
        if k in INT_KEYS and doc.get("params", {}).get(k) != v:
            return f"{where}: {k} {doc.get('params', {}).get(k)!r} (expected {v})"
    if "trace" in params and (doc.get("trace") or "") != fill(params["trace"], t):
        return f"{where}: trace {doc.get('trace')!r} (expected {fill(params['trace'], t)!r})"
    if params.get("trace") and doc.get("trace_error"):
        return f"{where}: trace error: {doc['trace_error']}"
    age = time.time() - float(doc.get("updated_unix", 0))
    if age > STATUS_MAX_AGE_S:
        return f"{where}: written {age:.1f} s ago (expected within {STATUS_MAX_AGE_S} s: is the server running?)"
    return None


def fill(value, t: dict):
    """{dir} in a path value: that server's folder ({root}/{host} of the pfs configuration)."""
    return value.replace("{dir}", t["dir"]) if isinstance(value, str) else value


def write_control(t: dict, text: str):
    """Server t's control file := text ({dir} filled), tmp + rename on its host."""
    return remote(_host(t), WRITE_SCRIPT, t["control_file"], stdin=fill(text, t), check=False)


def write_all(ts: list[dict], text: str) -> None:
    for t, res in zip(ts, on_each(ts, lambda t: write_control(t, text))):
        if res.returncode != 0:
            err = (res.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise SchedError(f"pfs_sched: server {t['server']} ({t['host']['name']}): {t['control_file']}: {err}")


def wait_applied(ts: list[dict], policy: str, params: dict, generation: str, timeout_s: float) -> list[str]:
    deadline = time.monotonic() + timeout_s
    while True:
        docs = on_each(ts, read_status)
        problems = [p for t, d in zip(ts, docs) if (p := check_status(t, d, policy, params, generation))]
        if not problems or time.monotonic() > deadline:
            return problems
        time.sleep(POLL_S)


def new_generation() -> str:
    return f"{time.time_ns()}-{os.getpid()}"


def apply(policy: str, pfs_state: str, state: Path, sets: list[str]) -> dict:
    if policy not in POLICIES:
        raise SchedError(f"pfs_sched: --policy: {policy!r} (expected one of {', '.join(POLICIES)})", 2)
    params = parse_sets(sets)
    ts = targets(pfs_state)
    gen = new_generation()
    doc = {"policy": policy, "params": params, "generation": gen, "targets": ts}
    state.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(state, json.dumps(doc, indent=1) + "\n")  # before anything changes: restore finds it
    write_all(ts, control_text(policy, params, gen, reset=True))
    problems = wait_applied(ts, policy, params, gen, APPLY_TIMEOUT_S)
    if problems:
        raise SchedError(f"pfs_sched: apply {policy}: {problems[0]}")
    return doc


def load_state(state: Path) -> dict | None:
    try:
        return json.loads(state.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise SchedError(f"pfs_sched: {state}: {exc}") from None


def verify(state: Path) -> None:
    doc = load_state(state)
    if doc is None:
        raise SchedError(f"pfs_sched: {state}: missing (nothing was applied)")
    for t, status in zip(doc["targets"], on_each(doc["targets"], read_status)):
        problem = check_status(t, status, doc["policy"], doc["params"], doc["generation"])
        if problem:
            raise SchedError(f"pfs_sched: verify {doc['policy']}: {problem}")


def restore(state: Path) -> list[str]:
    """fifo on every server apply wrote to; servers that are gone are skipped (and reported)."""
    doc = load_state(state)
    if doc is None:
        return []
    gen, skipped = new_generation(), []
    live = []
    text = control_text("fifo", {}, gen, False)
    for t, res in zip(doc["targets"], on_each(doc["targets"], lambda t: write_control(t, text))):
        if res.returncode == 0:
            live.append(t)
        else:
            skipped.append(f"server {t['server']} ({t['host']['name']}): {(res.stderr.strip() or 'unreachable')}")
    problems = wait_applied(live, "fifo", {}, gen, APPLY_TIMEOUT_S)
    for p in problems:
        if "no status" in p or "ago (expected within" in p:  # that server is not running: nothing to restore
            skipped.append(p)
        else:
            raise SchedError(f"pfs_sched: restore: {p}")
    state.unlink(missing_ok=True)
    return skipped


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="pfs_sched", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    a = sub.add_parser("apply", help="set a policy on every data server")
    a.add_argument("--policy", required=True, help="one of " + ", ".join(POLICIES))
    a.add_argument("--pfs-state", required=True, help="the file system's state_dir (holds layout.json)")
    a.add_argument("--state", required=True, help="where apply records what it changed")
    a.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a parameter")
    v = sub.add_parser("verify", help="exit 0 when every server runs what apply set")
    v.add_argument("--state", required=True)
    r = sub.add_parser("restore", help="set fifo where apply wrote; nothing without state")
    r.add_argument("--state", required=True)
    s = sub.add_parser("status", help="every server's status document")
    s.add_argument("--pfs-state", required=True)
    s.add_argument("--json", action="store_true")
    return ap


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    if a.command == "apply":
        doc = apply(a.policy, a.pfs_state, Path(a.state), a.set)
        print(f"pfs_sched: {doc['policy']} on {len(doc['targets'])} data server(s)")
    elif a.command == "verify":
        verify(Path(a.state))
        print("pfs_sched: in effect")
    elif a.command == "restore":
        for line in restore(Path(a.state)):
            print(f"pfs_sched: restore skipped {line}", file=sys.stderr)
        print("pfs_sched: fifo")
    else:
        docs = [{**t, "status": read_status(t)} for t in targets(a.pfs_state)]
        if a.json:
            print(json.dumps(docs, indent=1))
        else:
            for d in docs:
                st = d["status"] or {}
                c = st.get("counters", {})
                print(
                    f"server {d['server']} {d['host']['name']}: policy {st.get('policy')}, "
                    f"dispatches {c.get('dispatches')}, aggregations {c.get('aggregations')}, "
                    f"waits {c.get('waits')}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
