"""The upstream manifest: what the provisioning roles built from upstream sources, and from which.

Each source role (roles/graph500, roles/npb, roles/ior, roles/parsec) writes one JSON file,
/var/lib/corun/upstream.d/<role>.json, holding one object under its role's name:

    {"npb": {"status": "built", "program": "NAS Parallel Benchmarks (MPI)", "version": "3.3.1",
             "source": {"name": "git-import", "file": "NPB3.3.1-MPI-git-b066d24.tar.gz",
                        "sha256": "4116...", "url": "", "description": "...",
                        "origin": "mirror", "path": "..."},
             "install_dir": "/opt/corun/NPB3.3.1", "settings": {...},
             "programs": {"bt.A.4": "/opt/corun/NPB3.3.1/NPB3.3-MPI/bin/bt.A.4", ...}}}

or, where no source could be had, {"status": "stand-in", "version": ..., "reason": ...,
"stand_in": ...}. /var/lib/corun/upstream.json (or the file named by $CORUN_UPSTREAM, which
then replaces both) is merged first. `read()` merges them; `programs(role)` gives a role's built
programs; `provenance()` is the short record every run's metadata.json carries (docs/upstream.md).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from corun.errors import ConfigError

MANIFEST = Path(os.environ.get("CORUN_UPSTREAM", "/var/lib/corun/upstream.json"))
MANIFEST_DIR = Path("/var/lib/corun/upstream.d")

# What provenance() keeps of a role's entry, and of its source.
PROVENANCE_KEYS = ("status", "program", "version", "reason", "stand_in")
SOURCE_KEYS = ("name", "file", "sha256", "url", "origin")


def manifest_files(manifest: Path | None = None, manifest_dir: Path | None = None) -> list[Path]:
    """The manifest files in merge order: upstream.json, then upstream.d/*.json by name (only
    the one file when $CORUN_UPSTREAM names it)."""
    manifest = MANIFEST if manifest is None else manifest
    manifest_dir = MANIFEST_DIR if manifest_dir is None else manifest_dir
    if "CORUN_UPSTREAM" in os.environ:
        return [manifest]
    return [manifest] + sorted(manifest_dir.glob("*.json"))


def read(files: list[Path] | None = None) -> dict:
    """The merged manifest; {} when nothing was provisioned. A broken file is a ConfigError."""
    out: dict = {}
    for f in manifest_files() if files is None else files:
        try:
            text = f.read_text()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise ConfigError(
                str(f), "", "unreadable", f"a JSON object written by a provisioning role ({exc.strerror})"
            ) from None
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ConfigError(
                str(f), "", "unreadable", f"a JSON object written by a provisioning role ({exc})"
            ) from None
        if not isinstance(data, dict):
            raise ConfigError(str(f), "", type(data).__name__, "a JSON object")
        out.update(data)
    return out


def programs(role: str, manifest: dict | None = None) -> dict[str, str]:
    """The programs ROLE built (name -> absolute path), {} when it built none (a stand-in runs)."""
    entry = (read() if manifest is None else manifest).get(role) or {}
    if entry.get("status") != "built":
        return {}
    progs = entry.get("programs") or {}
    return {k: v for k, v in progs.items() if isinstance(v, str) and v}


def provenance(files: list[Path] | None = None) -> dict:
    """Per role, what was built and from which source, for metadata.json: status, version, the
    source's name, file, sha256, url and origin, or the stand-in and why. A manifest that cannot
    be read is recorded as such, never raised: the run itself decides whether it needs it."""
    try:
        manifest = read(files)
    except ConfigError as exc:
        return {"error": str(exc)}
    out = {}
    for role, entry in sorted(manifest.items()):
        if not isinstance(entry, dict):
            out[role] = {"status": "unreadable", "reason": f"not an object: {entry!r:.80}"}
            continue
        rec = {k: entry[k] for k in PROVENANCE_KEYS if k in entry}
        rec.setdefault("status", "built")  # manifests written before status existed (parsec)
        src = entry.get("source")
        if isinstance(src, dict):
            rec["source"] = {k: src[k] for k in SOURCE_KEYS if k in src}
        out[role] = rec
    return out
