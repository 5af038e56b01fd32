"""Which scheduler variant the testbed CI compares for a pull request (.github/workflows/testbed.yml).

Prints step outputs for $GITHUB_OUTPUT:

  variant=NAME   --default when the changes since --base-ref touch its folder or no variant's
                 folder; else the first (by name) changed variant that the working tree has
  args=...       --allow-same when no variant's folder changed: the two builds of --default may
                 then be the same, and comparing them checks the flow and the machine's noise
  base=, head=   for a variant new in the pull request (no folder at --base-ref): variant= is
                 empty, and the variant is compared with linux (base=linux head=NAME)

Variants changed besides the one picked are named on stderr (they are not compared).
Exit status: 0; 2 bad input (an unknown --base-ref, a --default that is not a variant).

  python scripts/ci_pick_variant.py --base-ref origin/main --default dynamic_io >> "$GITHUB_OUTPUT"
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ci_compare import ROOT, git, resolve_ref  # noqa: E402

from corun.errors import ConfigError, one_line_errors  # noqa: E402
from corun.run import schedulers  # noqa: E402

NAME = re.compile(r"^[a-z0-9_]+$")


def changed_variants(base_commit: str) -> list[str]:
    """Variants (folders of schedulers/ with a manifest in the working tree) with a file changed.
    A parametrised variant (`named_by`, e.g. elevator) is left out: it builds nothing, and runs
    only under the names of its values (compare those with make ci-compare BASE=... HEAD=...)."""
    names = {
        p.split("/")[1]
        for p in git("diff", "--name-only", base_commit, "--", "schedulers").splitlines()
        if p.count("/") >= 2
    }
    out = []
    for n in sorted(names):
        manifest = ROOT / "schedulers" / n / "manifest.yaml"
        if NAME.match(n) and manifest.is_file():
            if schedulers.load_manifest(manifest).get("named_by"):
                print(f"ci_pick_variant: {n} changed: a parametrised variant, not compared", file=sys.stderr)
                continue
            out.append(n)
    return out


@one_line_errors(prefix="ci_pick_variant")
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-ref", required=True, help="the pull request's base commit")
    ap.add_argument("--default", default="dynamic_io", help="variant compared when none changed (default dynamic_io)")
    a = ap.parse_args(argv)
    if not NAME.match(a.default) or not (ROOT / "schedulers" / a.default / "manifest.yaml").is_file():
        raise ConfigError("command line", "--default", a.default, "a scheduler variant in schedulers/")
    base_commit = resolve_ref(a.base_ref, "--base-ref")
    changed = changed_variants(base_commit)
    variant = a.default if not changed or a.default in changed else changed[0]
    others = [n for n in changed if n != variant]
    if others:
        print(f"ci_pick_variant: changed but not compared: {', '.join(others)}", file=sys.stderr)
    if not exists_at(base_commit, variant):  # nothing to build at the base: the new variant against linux
        print(f"ci_pick_variant: {variant} is new (none at {a.base_ref}): compared with linux", file=sys.stderr)
        print("variant=")
        print("base=linux")
        print(f"head={variant}")
        print("args=")
        return 0
    print(f"variant={variant}")
    print(f"args={'' if changed else '--allow-same'}")
    return 0


def exists_at(commit: str, variant: str) -> bool:
    """The variant has a manifest at that commit."""
    res = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "-e", f"{commit}:schedulers/{variant}/manifest.yaml"],
        capture_output=True,
    )
    return res.returncode == 0


if __name__ == "__main__":
    sys.exit(main())
