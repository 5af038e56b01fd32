#!/usr/bin/python3
"""Ansible module: choose one of a role's pinned source archives, fetch it if needed, check it.

A role names its sources in order, upstream first, then alternatives (an archive made another
way, under its own file name and sha256). The first source whose file is in the local mirror is
taken (a folder on the node, or an http(s) URL whose files are fetched into the download
folder); when none is, the first source with a URL whose download succeeds (kept in the download
folder, reused while its sha256 matches). The taken file's sha256 must equal its pin: a mismatch
is an error naming the role, the file and both hashes, never a fall-through to the next source.
With no source to be had, the module fails (required) or returns source=None and the reason,
and the role records its stand-in. It also reads the installed build's record (which source
and settings it was built from) and decides whether to build, so an up-to-date role costs one
module call. It sets the facts source_tarball_source, source_tarball_reason,
source_tarball_rebuild and source_tarball_stamp (roles/source_tarball/tasks/pinned.yml), and
the role's own facts. Unless a build is to come, it also writes the role's upstream manifest
(rewritten only when its content changes), the built programs and the source, or the stand-in
and why; install.yml writes it after a build.

Used by roles/source_tarball/tasks/pinned.yml; the logic is plain functions, tested in
tests/test_pinned_source.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url

SHA256 = re.compile(r"^[0-9a-f]{64}$")
URL = re.compile(r"^(https?|ftp|file)://[^/]+/.*[^/]$")
KEYS = {"name", "file", "sha256", "url", "description"}
CHUNK = 1 << 20


class SourceError(Exception):
    """One line for the user: what was wrong, with the role's name first."""


def check_sources(role: str, sources, var: str) -> list[dict]:
    """The sources, checked: a non-empty list of {name, file, sha256[, url][, description]}."""
    if not isinstance(sources, list) or not sources:
        raise SourceError(f"{role}: {var}: {sources!r} (expected a non-empty list of pinned sources)")
    out = []
    for i, s in enumerate(sources):
        where = f"{var}[{i}]"
        if not isinstance(s, dict):
            raise SourceError(f"{role}: {where}: {s!r} (expected a mapping with name, file and sha256)")
        extra = sorted(set(s) - KEYS)
        if extra:
            raise SourceError(f"{role}: {where}: unknown key {extra[0]} (expected {', '.join(sorted(KEYS))})")
        for key in ("name", "file", "sha256"):
            if not isinstance(s.get(key), str) or not s[key]:
                raise SourceError(f"{role}: {where}.{key}: {s.get(key)!r} (expected a non-empty string)")
        if "/" in s["file"] or s["file"] in (".", ".."):
            raise SourceError(f"{role}: {where}.file: {s['file']!r} (expected a file name, no folder)")
        if not SHA256.match(s["sha256"].lower()):
            raise SourceError(f"{role}: {where}.sha256: {s['sha256']!r} (expected 64 hex digits)")
        url = s.get("url") or ""
        if url and (not isinstance(url, str) or not URL.match(url)):
            raise SourceError(f"{role}: {where}.url: {url!r} (expected an http(s), ftp or file URL of an archive)")
        out.append(
            {
                "name": s["name"],
                "file": s["file"],
                "sha256": s["sha256"].lower(),
                "url": url,
                "description": s.get("description") or "",
            }
        )
    return out


def sha256_of(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def verify(role: str, source: dict, path: str, where: str) -> None:
    actual = sha256_of(path)
    if actual != source["sha256"]:
        raise SourceError(
            f"{role}: {source['file']} {where} has sha256 {actual}, expected {source['sha256']} "
            f"(pinned source {source['name']!r}); remove it or fix the pin"
        )


def fetch_verified(role: str, source: dict, url: str, download_dir: str, dest: str, timeout: int, fetch) -> str:
    """URL into DEST (in download_dir), checked against the source's pin: "" when done, else
    why it could not be fetched. Raises SourceError, and removes DEST, when its sha256 differs."""
    os.makedirs(download_dir, exist_ok=True)
    try:
        fetch(url, dest, timeout)
    except Exception as exc:  # noqa: BLE001 - any failure to fetch is reported, with its reason
        return re.sub(r"\s+", " ", str(exc)).strip() or type(exc).__name__
    try:
        verify(role, source, dest, f"fetched from {url}")
    except SourceError:
        os.unlink(dest)
        raise
    return ""


def in_mirror(sources: list[dict], mirror: str) -> tuple[dict | None, str]:
    """The first source whose file is in the mirror, and a note on the mirror for the reason."""
    if not mirror:
        return None, "corun_mirror is empty"
    if not os.path.isdir(mirror):
        return None, f"corun_mirror {mirror} does not exist"
    for s in sources:
        if os.path.isfile(os.path.join(mirror, s["file"])):
            return s, ""
    return None, f"corun_mirror {mirror} holds none of them"


def is_url(mirror) -> bool:
    return isinstance(mirror, str) and re.match(r"https?://", mirror) is not None


def from_url_mirror(
    role: str, sources: list[dict], mirror: str, download_dir: str, timeout: int, check_mode: bool, fetch
) -> tuple[dict | None, str]:
    """The first source whose file the mirror URL serves, fetched into download_dir (kept and
    reused while its sha256 matches), with "fetched" saying whether it was downloaded now."""
    notes = []
    for s in sources:
        url = mirror.rstrip("/") + "/" + s["file"]
        dest = os.path.join(download_dir, s["file"])
        if os.path.isfile(dest) and sha256_of(dest) == s["sha256"]:
            return {**s, "origin": "mirror", "path": dest, "fetched": False}, ""
        if check_mode:
            return {**s, "origin": "mirror", "path": dest, "fetched": True}, ""
        reason = fetch_verified(role, s, url, download_dir, dest, timeout, fetch)
        if reason:  # a file the mirror lacks: the next source
            notes.append(f"{url} ({reason})")
            continue
        return {**s, "origin": "mirror", "path": dest, "fetched": True}, ""
    return None, f"corun_mirror {mirror} serves none of them: {'; '.join(notes)}"


def download(url: str, dest: str, timeout: int) -> None:
    """URL into DEST.part, then renamed to DEST: an interrupted download never looks whole."""
    part = dest + ".part"
    try:
        with open_url(url, timeout=timeout, follow_redirects="all") as resp, open(part, "wb") as out:
            for block in iter(lambda: resp.read(CHUNK), b""):
                out.write(block)
        os.replace(part, dest)
    finally:
        if os.path.exists(part):
            os.unlink(part)


def choose(
    role: str,
    sources: list[dict],
    mirror: str,
    download_dir: str,
    timeout: int,
    check_mode: bool = False,
    fetch=download,
) -> tuple[dict | None, bool, str]:
    """(the chosen source with origin and path, whether a file was downloaded, the reason when none).

    Raises SourceError for a file whose sha256 differs from its pin."""
    if is_url(mirror):
        found, mirror_note = from_url_mirror(role, sources, mirror, download_dir, timeout, check_mode, fetch)
        if found is not None:
            return found, found.pop("fetched"), ""
    else:
        found, mirror_note = in_mirror(sources, mirror)
    if found is not None:
        path = os.path.join(mirror, found["file"])
        verify(role, found, path, f"in {mirror}")
        return {**found, "origin": "mirror", "path": path}, False, ""
    failures = []
    for s in sources:
        if not s["url"]:
            continue
        dest = os.path.join(download_dir, s["file"])
        if os.path.isfile(dest):
            if sha256_of(dest) == s["sha256"]:
                return {**s, "origin": "download", "path": dest}, False, ""
            os.unlink(dest)  # the download folder is ours: fetch it again, and check that
        if check_mode:
            return {**s, "origin": "download", "path": dest}, True, ""
        reason = fetch_verified(role, s, s["url"], download_dir, dest, timeout, fetch)
        if reason:
            failures.append(f"{s['url']} cannot be fetched ({reason})")
            continue
        return {**s, "origin": "download", "path": dest}, True, ""
    files = " or ".join(f"{s['file']} (sha256 {s['sha256']})" for s in sources)
    why = "; ".join([mirror_note] + (failures or ["no source has a URL"]))
    return None, False, f"{role}: no source archive: {files}; {why}"


def installed_record(install_dir: str, programs: list[str]) -> dict:
    """The installed build's record (install_dir/corun-build.json), {} when there is none or
    when one of its programs (paths relative to install_dir) is missing or not executable."""
    try:
        with open(os.path.join(install_dir, "corun-build.json")) as f:
            record = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(record, dict):
        return {}
    for rel in programs:
        if not os.access(os.path.join(install_dir, rel), os.X_OK):
            return {}
    return record


def check_settings(role: str, p: dict) -> None:
    """The shared settings, with the variable that sets each named in the error: corun_mirror,
    <role>_download_dir, <role>_download_timeout, <role>_required, <role>_install_dir,
    <role>_upstream_manifest (YAML and -e give any type, so types are checked here)."""
    mirror = p["mirror"]
    if not isinstance(mirror, str) or (mirror and not os.path.isabs(mirror) and not is_url(mirror)):
        raise SourceError(
            f'{role}: corun_mirror: {mirror!r} (expected "", the absolute path of a folder of archives '
            "or an http(s) URL serving them)"
        )
    for key in ("download_dir", "install_dir", "upstream_manifest"):
        v = p[key]
        if not isinstance(v, str) or not os.path.isabs(v) or v == "/":
            raise SourceError(f"{role}: {role}_{key}: {v!r} (expected an absolute path)")
    t = p["timeout"]
    if not isinstance(t, int) or isinstance(t, bool) or t < 1:
        raise SourceError(f"{role}: {role}_download_timeout: {t!r} (expected an integer number of seconds >= 1)")
    if not isinstance(p["required"], bool):
        raise SourceError(f"{role}: {role}_required: {p['required']!r} (expected true or false)")


def decide(
    source: dict | None, installed: dict, settings: dict, pins: list[str], install_dir: str
) -> tuple[dict | None, bool, dict]:
    """(the source to build from or that the installed build came from, whether to build, the
    wanted build's record). Without a source to be had, an installed build of a pinned source
    with the same settings stays in use (origin "installed")."""
    if source is None:
        kept = installed.get("source") or {}
        if installed.get("settings") == settings and kept.get("sha256") in pins:
            return {**kept, "origin": "installed", "path": install_dir}, False, installed
        return None, False, installed
    record_keys = ("name", "file", "sha256", "url", "description")
    wanted = {"settings": settings, "source": {k: source[k] for k in record_keys}}
    return source, wanted != installed, wanted


def manifest_entry(source: dict | None, reason: str, built: dict, stand_in: dict) -> dict:
    """The role's upstream manifest entry: BUILT with the source, or STAND_IN with the reason."""
    if source is None:
        return {**stand_in, "status": "stand-in", "reason": reason}
    return {**built, "status": "built", "source": source}


def empty_like(facts: dict) -> dict:
    """The role's facts when nothing is built: the same keys, empty values of the same type."""
    return {k: type(v)() if isinstance(v, (str, list, dict)) else None for k, v in facts.items()}


def write_if_changed(path: str, text: str) -> bool:
    """PATH holds TEXT afterwards (written atomically); whether it had to be written."""
    try:
        with open(path) as f:
            if f.read() == text:
                return False
    except OSError:
        pass
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o755, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".manifest-", dir=folder)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return True


def render(role: str, entry: dict) -> str:
    return json.dumps({role: entry}, indent=4, sort_keys=True) + "\n"


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "role": {"type": "str", "required": True},
            "sources": {"type": "raw", "required": True},
            "sources_var": {"type": "str", "required": True},
            "mirror": {"type": "raw", "default": ""},
            "download_dir": {"type": "raw", "required": True},
            "timeout": {"type": "raw", "default": 60},
            "required": {"type": "raw", "default": False},
            "install_dir": {"type": "raw", "required": True},
            "upstream_manifest": {"type": "raw", "required": True},
            "programs": {"type": "list", "elements": "str", "default": []},
            "settings": {"type": "dict", "required": True},
            "manifest_entry": {"type": "dict", "required": True},
            "stand_in_entry": {"type": "dict", "required": True},
            "facts": {"type": "dict", "default": {}},
        },
        supports_check_mode=True,
    )
    p = module.params
    role = p["role"]
    try:
        check_settings(role, p)
        sources = check_sources(role, p["sources"], p["sources_var"])
        source, fetched, reason = choose(role, sources, p["mirror"], p["download_dir"], p["timeout"], module.check_mode)
    except SourceError as exc:
        module.fail_json(msg=str(exc))
    except OSError as exc:
        module.fail_json(msg=f"{role}: {exc.filename or ''}: {exc.strerror} (expected a readable source archive)")
    if source is None and p["required"]:
        module.fail_json(msg=f"{reason}; set corun_mirror to a folder holding one of them")
    installed = installed_record(p["install_dir"], p["programs"])
    use, rebuild, stamp = decide(source, installed, p["settings"], [s["sha256"] for s in sources], p["install_dir"])
    entry = manifest_entry(use, reason, p["manifest_entry"], p["stand_in_entry"])
    written = False
    if not rebuild and not module.check_mode:  # a build to come writes it once it is in place
        try:
            written = write_if_changed(p["upstream_manifest"], render(role, entry))
        except OSError as exc:
            module.fail_json(
                msg=f"{role}: cannot write {role}_upstream_manifest {p['upstream_manifest']} ({exc.strerror})"
            )
    module.exit_json(
        changed=fetched or written,
        ansible_facts={
            "source_tarball_source": use,
            "source_tarball_reason": "" if use else reason,
            "source_tarball_rebuild": rebuild,
            "source_tarball_stamp": stamp,
            "source_tarball_manifest_text": render(role, entry),
            **(p["facts"] if use else empty_like(p["facts"])),
        },
    )


if __name__ == "__main__":
    main()
