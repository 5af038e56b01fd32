"""Citable result archives: `corun archive`, `corun verify`, `corun publish`.

`archive(CAMPAIGN_DIR, OUT)` writes OUT (.tar.gz, .tgz or .zip) holding one folder named after
OUT, with
  the campaign folder's files     run folders (raw monitors, tidy tables, jobs.csv, metadata),
                                  collected tables, figures, sections and reports, as they are
                                  except for secrets (below); unfinished `*.incomplete` runs and
                                  symbolic links are left out and listed
  provenance/archive.json         archive format version, corun version, git describe, when,
                                  from which folder (its name only), what was left out
  provenance/runs.json            one line per run: variant, build id, host, kernel, start, end
  provenance/redactions.json      which key or pattern was redacted in which file (never the value)
  ro-crate-metadata.json          RO-Crate 1.1: the root Dataset, every file (encodingFormat,
                                  contentSize, sha256), each run as a Dataset, corun and every
                                  scheduler variant as SoftwareApplication, and one CreateAction
                                  per run whose instrument is the variant (and corun)
  SHA256SUMS                      `sha256sum -c` format, every file but itself

Secrets are scrubbed in the copies (the campaign folder is never changed): in JSON files the
value of every key matching *TOKEN*, *SECRET*, *PASSWORD*, *PASSWD*, *KEY*, *_PASS (case-
insensitive; ansible_become_pass, environment variables recorded in metadata ...) and of
`NAME=value` strings with such names; in every other text file `NAME=value` and `NAME: value`
with such names (inventories, .env files, YAML); anywhere, GitHub, AWS and Slack token formats.
A file holding a private key is refused: the archive is not written, and the error names the
file (leave it out with --exclude). `verify` reports any altered, missing or extra file.

`publish` uploads an archive to Zenodo (deposition API: create a deposition, PUT the file to
its bucket, set the metadata, optionally publish), token from ZENODO_TOKEN, --sandbox for
sandbox.zenodo.org, --base-url for any other server (tests use a local one).
"""

from __future__ import annotations

import fnmatch
import gzip
import hashlib
import io
import json
import mimetypes
import os
import re
import tarfile
import time
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from corun import __version__
from corun.errors import ConfigError, CorunError
from corun.run.metadata import git_describe
from corun.util import atomic_path, lazy_module

requests = lazy_module("requests")  # about 0.1 s to import; only `publish` needs it

FORMAT_VERSION = "1"
SUFFIXES = (".tar.gz", ".tgz", ".zip")
GENERATED = ("ro-crate-metadata.json", "SHA256SUMS", "provenance")
REDACTED = "REDACTED"
SECRET_WORD = r"(?:TOKEN|SECRET|PASSWORD|PASSWD|KEY|_PASS\b|_PASS_|CREDENTIAL)"
SECRET_NAME = re.compile(rf"[A-Za-z0-9_.\-]*{SECRET_WORD}[A-Za-z0-9_.\-]*", re.I)
SECRET_ASSIGN = re.compile(
    rf"(?P<name>(?<![A-Za-z0-9_])[A-Za-z_][A-Za-z0-9_.\-]*{SECRET_WORD}[A-Za-z0-9_.\-]*)"
    r"(?P<sep>[ \t]*[:=][ \t]*)(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^\s,;\"']+)", re.I)
SECRET_OPTION = re.compile(r"^--?[A-Za-z0-9-]*(?:token|secret|password|passwd)[A-Za-z0-9-]*$", re.I)
TOKEN_FORMATS = [
    ("GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")),
    ("AWS access key", re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
    ("Slack token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
]
PRIVATE_KEY = re.compile(rb"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----|PuTTY-User-Key-File-")
FORMATS = {".json": "application/json", ".jsonl": "application/x-ndjson", ".csv": "text/csv",
           ".png": "image/png", ".html": "text/html", ".md": "text/markdown", ".yaml": "application/yaml",
           ".yml": "application/yaml", ".txt": "text/plain", ".out": "text/plain", ".err": "text/plain",
           ".stderr": "text/plain", ".log": "text/plain", ".svg": "image/svg+xml", ".pdf": "application/pdf"}


def _is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.fullmatch(name))


# ----------------------------------------------------------------------------- scrubbing


@dataclass
class Scrubber:
    redactions: list = field(default_factory=list)  # {"file", "what"}

    def _note(self, rel: str, what: str) -> None:
        item = {"file": rel, "what": what}
        if item not in self.redactions:
            self.redactions.append(item)

    def text(self, text: str, rel: str) -> str:
        def assign(m: re.Match) -> str:
            self._note(rel, m.group("name"))
            v = m.group("value")
            q = v[0] if v[:1] in "\"'" else ""
            return f"{m.group('name')}{m.group('sep')}{q}{REDACTED}{q}"
        text = SECRET_ASSIGN.sub(assign, text)
        for what, pattern in TOKEN_FORMATS:
            text, n = pattern.subn(REDACTED, text)
            if n:
                self._note(rel, what)
        return text

    def json_value(self, obj: object, rel: str, path: str = "") -> object:
        if isinstance(obj, dict):
            out = {}
            for k, v in obj.items():
                key = f"{path}.{k}" if path else str(k)
                if _is_secret_name(str(k)) and v not in (None, "", [], {}):
                    out[k] = REDACTED
                    self._note(rel, key)
                else:
                    out[k] = self.json_value(v, rel, key)
            return out
        if isinstance(obj, list):
            out = []
            for i, v in enumerate(obj):
                prev = obj[i - 1] if i else None
                if isinstance(v, str) and isinstance(prev, str) and SECRET_OPTION.match(prev):
                    out.append(REDACTED)
                    self._note(rel, f"{path}[{i}] (value of {prev})")
                else:
                    out.append(self.json_value(v, rel, f"{path}[{i}]"))
            return out
        if isinstance(obj, str):
            return self.text(obj, rel)
        return obj

    def file(self, data: bytes, rel: str) -> bytes:
        """The bytes to archive for one file (unchanged when nothing is secret)."""
        if PRIVATE_KEY.search(data):
            raise ConfigError(rel, "file", "a private key",
                              "no private key in a campaign folder (remove it or leave it out with --exclude)")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return data
        before = len(self.redactions)
        if rel.endswith(".json"):
            try:
                obj = json.loads(text)
            except json.JSONDecodeError:
                obj = None
            else:
                clean = self.json_value(obj, rel)
                if clean != obj:
                    return (json.dumps(clean, indent=2, sort_keys=True) + "\n").encode("utf-8")
                return data
        if rel.endswith(".jsonl"):
            lines = []
            for line in text.splitlines(keepends=True):
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError:
                    lines.append(self.text(line, rel))
                    continue
                clean = self.json_value(obj, rel)
                lines.append(line if clean == obj else json.dumps(clean, sort_keys=True) + "\n")
            joined = "".join(lines)
            return data if joined == text else joined.encode("utf-8")
        clean_text = self.text(text, rel)
        return clean_text.encode("utf-8") if len(self.redactions) != before or clean_text != text else data


# ----------------------------------------------------------------------------- RO-Crate


def _iso(epoch: float | None) -> str | None:
    if not isinstance(epoch, (int, float)) or isinstance(epoch, bool):
        return None
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _format(rel: str) -> str:
    suffix = PurePosixPath(rel).suffix.lower()
    return FORMATS.get(suffix) or mimetypes.guess_type(rel)[0] or "application/octet-stream"


def _runs(files: dict[str, bytes]) -> dict[str, dict]:
    """run folder (relative, with '/') -> its metadata, for every folder with metadata.json + jobs.csv."""
    runs = {}
    for rel, data in files.items():
        p = PurePosixPath(rel)
        if p.name == "metadata.json" and str(p.parent / "jobs.csv") in files:
            try:
                meta = json.loads(data)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
            if isinstance(meta, dict):
                runs[str(p.parent)] = meta
    return runs


def ro_crate(files: dict[str, bytes], runs: dict[str, dict], info: dict) -> dict:
    """The ro-crate-metadata.json graph for `files` (relative path -> bytes)."""
    graph: list[dict] = [
        {"@id": "ro-crate-metadata.json", "@type": "CreativeWork",
         "conformsTo": {"@id": "https://w3id.org/ro/crate/1.1"}, "about": {"@id": "./"}},
    ]
    corun_id = "#corun"
    graph.append({"@id": corun_id, "@type": "SoftwareApplication", "name": "corun",
                  "version": info["corun_version"], "identifier": info["git_describe"],
                  "description": "harness for contention-aware scheduling studies"})
    run_of, parts_of = {}, {rd: [] for rd in runs}
    for rel in sorted(files):
        for parent in PurePosixPath(rel).parents:
            if str(parent) in runs:
                run_of[rel] = str(parent)
                parts_of[str(parent)].append({"@id": rel})
                break
    root_parts, variants, actions = [], {}, []
    for rd, meta in sorted(runs.items()):
        sched = meta.get("scheduler") if isinstance(meta.get("scheduler"), dict) else {}
        vname = str(sched.get("name") or "unknown")
        build = sched.get("build_id")
        vid = f"#variant-{vname}" + (f"-{build}" if build else "")
        if vid not in variants:
            variants[vid] = {"@id": vid, "@type": "SoftwareApplication", "name": vname,
                             "description": str(sched.get("description") or "scheduler variant").strip(),
                             **({"version": str(build)} if build else {})}
        host = meta.get("host") if isinstance(meta.get("host"), dict) else {}
        run_id = str(meta.get("run_id") or PurePosixPath(rd).name)
        dataset = {"@id": rd + "/", "@type": "Dataset", "name": run_id,
                   "description": f"corun run {run_id}: variant {vname} on {host.get('hostname')}, "
                                  f"kernel {host.get('kernel_release')}",
                   "hasPart": parts_of[rd]}
        graph.append(dataset)
        root_parts.append({"@id": rd + "/"})
        action = {"@id": f"#run-{rd}", "@type": "CreateAction", "name": f"corun run {run_id}",
                  "instrument": [{"@id": vid}, {"@id": corun_id}], "result": {"@id": rd + "/"}}
        if meta.get("scheduler", {}).get("params") if isinstance(meta.get("scheduler"), dict) else None:
            action["description"] = "variant parameters: " + json.dumps(sched["params"], sort_keys=True)
        for key, prop in (("start_epoch_s", "startTime"), ("end_epoch_s", "endTime")):
            if _iso(meta.get(key)):
                action[prop] = _iso(meta.get(key))
        actions.append(action)
    for rel, data in sorted(files.items()):
        graph.append({"@id": rel, "@type": "File", "name": PurePosixPath(rel).name,
                      "encodingFormat": _format(rel), "contentSize": str(len(data)),
                      "sha256": hashlib.sha256(data).hexdigest()})
        if rel not in run_of:
            root_parts.append({"@id": rel})
    graph.extend(variants.values())
    graph.extend(actions)
    graph.append({"@id": "#archive", "@type": "CreateAction", "name": "corun archive",
                  "instrument": {"@id": corun_id}, "result": {"@id": "./"}, "endTime": info["created"]})
    root = {"@id": "./", "@type": "Dataset", "name": info["title"], "description": info["description"],
            "datePublished": info["created"], "version": info["version"],
            "license": {"@id": info["license"]} if info["license"].startswith("http") else info["license"],
            "hasPart": root_parts, "mentions": [{"@id": a["@id"]} for a in actions] + [{"@id": "#archive"}]}
    if info["creators"]:
        root["author"] = [{"@id": f"#author-{i}"} for i, _ in enumerate(info["creators"])]
        graph.extend({"@id": f"#author-{i}", "@type": "Person", "name": n} for i, n in enumerate(info["creators"]))
    graph.insert(1, root)
    return {"@context": "https://w3id.org/ro/crate/1.1/context", "@graph": graph}


# ----------------------------------------------------------------------------- archive


def archive_root_name(out: Path) -> str:
    name = out.name
    for s in SUFFIXES:
        if name.endswith(s):
            return name[: -len(s)]
    raise ConfigError("command line", "--out", str(out), "a file name ending in .tar.gz, .tgz or .zip")


def _gather(src: Path, exclude: list[str]) -> tuple[dict[str, Path], list[str]]:
    files, skipped = {}, []
    for dirpath, dirnames, filenames in os.walk(src):
        d = Path(dirpath)
        keep = []
        for name in sorted(dirnames):
            rel = (d / name).relative_to(src).as_posix()
            if (d / name).is_symlink():
                skipped.append(f"{rel}: symbolic link")
            elif name.endswith(".incomplete"):
                skipped.append(f"{rel}: unfinished run (no metadata.json)")
            elif any(fnmatch.fnmatch(rel, g) or fnmatch.fnmatch(name, g) for g in exclude):
                skipped.append(f"{rel}: --exclude")
            elif d == src and name == "provenance":
                skipped.append(f"{rel}: regenerated")
            else:
                keep.append(name)
        dirnames[:] = keep
        for name in sorted(filenames):
            p = d / name
            rel = p.relative_to(src).as_posix()
            if any(fnmatch.fnmatch(rel, g) or fnmatch.fnmatch(name, g) for g in exclude):
                skipped.append(f"{rel}: --exclude")
            elif p.is_symlink() or not p.is_file():
                skipped.append(f"{rel}: not a regular file")
            elif d == src and name in GENERATED:
                skipped.append(f"{rel}: regenerated")
            else:
                files[rel] = p
    return files, skipped


def _write(out: Path, root: str, files: dict[str, bytes], mtime: int) -> None:
    with atomic_path(out) as tmp:
        if out.name.endswith(".zip"):
            with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
                for rel in sorted(files):
                    zi = zipfile.ZipInfo(f"{root}/{rel}", time.gmtime(max(mtime, 315532800))[:6])
                    zi.external_attr = 0o644 << 16
                    zi.compress_type = zipfile.ZIP_DEFLATED
                    z.writestr(zi, files[rel])
        else:
            with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=mtime) as gz, \
                    tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for rel in sorted(files):
                    ti = tarfile.TarInfo(f"{root}/{rel}")
                    ti.size, ti.mtime, ti.mode = len(files[rel]), mtime, 0o644
                    tar.addfile(ti, io.BytesIO(files[rel]))


def check_creators(creators) -> None:
    """Each creator as the archive's metadata (RO-Crate, Zenodo) wants a person: 'Family, Given'."""
    for name in creators:
        family, comma, given = str(name).partition(",")
        if not comma or not family.strip() or not given.strip():
            raise ConfigError("command line", "--creator", name, "'Family, Given', e.g. --creator 'Doe, Jane'")


def archive(src: Path, out: Path, *, exclude: list[str] = (), title: str | None = None,
            description: str | None = None, creators: list[str] = (), license: str = "CC-BY-4.0",
            version: str = "1") -> dict:
    """Write the archive (see module doc); returns a summary (files, runs, redactions, skipped)."""
    src, out = Path(src), Path(out)
    if not src.is_dir():
        raise ConfigError("command line", "CAMPAIGN_DIR", str(src), "an existing folder")
    check_creators(creators)
    root = archive_root_name(out)
    paths, skipped = _gather(src, list(exclude))
    if not paths:
        raise ConfigError("command line", "CAMPAIGN_DIR", str(src), "a folder with files to archive")
    scrub = Scrubber()
    files = {rel: scrub.file(p.read_bytes(), rel) for rel, p in paths.items()}
    runs = _runs(files)
    if not runs and not any(PurePosixPath(rel).name == "metadata.json" for rel in files):
        raise ConfigError("command line", "CAMPAIGN_DIR", str(src),
                          "a results folder with at least one finished run (a runs/<run>/metadata.json)")
    created = os.environ.get("SOURCE_DATE_EPOCH")
    now = int(created) if created and created.isdigit() else int(time.time())
    info = {"corun_version": __version__, "git_describe": git_describe(), "created": _iso(now),
            "title": title or f"corun results: {src.resolve().name}",
            "description": description or f"corun campaign {src.resolve().name}: {len(runs)} runs, "
                                          f"raw and tidy data, figures, reports and provenance",
            "license": license, "version": version, "creators": list(creators)}
    prov = {"format_version": FORMAT_VERSION, "corun_version": info["corun_version"],
            "git_describe": info["git_describe"], "created": info["created"], "source_folder": src.resolve().name,
            "title": info["title"], "version": version, "left_out": skipped}
    run_rows = []
    for rd, meta in sorted(runs.items()):
        sched = meta.get("scheduler") if isinstance(meta.get("scheduler"), dict) else {}
        host = meta.get("host") if isinstance(meta.get("host"), dict) else {}
        run_rows.append({"run": rd, "run_id": meta.get("run_id"), "variant": sched.get("name"),
                         "build_id": sched.get("build_id"), "host": host.get("hostname"),
                         "kernel_release": host.get("kernel_release"), "start": _iso(meta.get("start_epoch_s")),
                         "end": _iso(meta.get("end_epoch_s")), "status": meta.get("status")})
    files["provenance/archive.json"] = (json.dumps(prov, indent=2) + "\n").encode()
    files["provenance/runs.json"] = (json.dumps(run_rows, indent=2) + "\n").encode()
    files["provenance/redactions.json"] = (json.dumps(scrub.redactions, indent=2) + "\n").encode()
    crate = ro_crate(files, runs, info)
    files["ro-crate-metadata.json"] = (json.dumps(crate, indent=2) + "\n").encode()
    sums = "".join(f"{hashlib.sha256(files[rel]).hexdigest()}  {rel}\n" for rel in sorted(files))
    files["SHA256SUMS"] = sums.encode()
    out.parent.mkdir(parents=True, exist_ok=True)
    _write(out, root, files, now)
    return {"archive": str(out), "files": len(files), "runs": len(runs), "redactions": scrub.redactions,
            "left_out": skipped}


# ----------------------------------------------------------------------------- verify


def read_archive(path: Path) -> dict[str, bytes]:
    """Files of an archive file or an extracted archive folder, relative to its root folder."""
    path = Path(path)
    if path.is_dir():
        base = path
        if not (base / "SHA256SUMS").exists():
            subs = [d for d in base.iterdir() if d.is_dir()]
            if len(subs) == 1 and (subs[0] / "SHA256SUMS").exists():
                base = subs[0]
        return {p.relative_to(base).as_posix(): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}
    if not path.is_file():
        raise ConfigError("command line", "ARCHIVE", str(path), "an archive file (.tar.gz, .zip) or an extracted folder")
    entries: dict[str, bytes] = {}
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                for zi in z.infolist():
                    if not zi.is_dir():
                        entries[zi.filename] = z.read(zi)
        else:
            with tarfile.open(path, "r:*") as tar:
                for ti in tar:
                    if ti.isfile():
                        entries[ti.name] = tar.extractfile(ti).read()
                    elif not ti.isdir():
                        entries[ti.name] = b""  # a link or device: reported as extra below
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError) as exc:
        raise ConfigError("command line", "ARCHIVE", str(path), f"a readable .tar.gz or .zip archive ({exc})") from None
    roots = {n.split("/", 1)[0] for n in entries}
    if len(roots) != 1 or any("/" not in n for n in entries):
        return entries  # not one root folder: verify reports every file as extra
    return {n.split("/", 1)[1]: d for n, d in entries.items()}


def verify(path: Path) -> tuple[list[str], int]:
    """(problems, files checked): 'altered: F', 'missing: F', 'extra: F' and unsafe names."""
    files = read_archive(path)
    problems = []
    for name in files:
        parts = PurePosixPath(name).parts
        if name.startswith("/") or ".." in parts:
            problems.append(f"unsafe path: {name}")
    sums = files.get("SHA256SUMS")
    if sums is None:
        return problems + ["missing: SHA256SUMS"], len(files)
    listed = {}
    for i, line in enumerate(sums.decode("utf-8", "replace").splitlines()):
        m = re.fullmatch(r"([0-9a-f]{64})  (.+)", line)
        if not m:
            problems.append(f"altered: SHA256SUMS (line {i + 1} is not '<sha256>  <file>')")
            continue
        listed[m.group(2)] = m.group(1)
    for name, digest in sorted(listed.items()):
        if name not in files:
            problems.append(f"missing: {name}")
        elif hashlib.sha256(files[name]).hexdigest() != digest:
            problems.append(f"altered: {name}")
    for name in sorted(files):
        if name != "SHA256SUMS" and name not in listed:
            problems.append(f"extra: {name}")
    crate = files.get("ro-crate-metadata.json")
    if crate is None and "missing: ro-crate-metadata.json" not in problems:
        problems.append("missing: ro-crate-metadata.json")
    elif crate is not None:
        try:
            graph = json.loads(crate)["@graph"]
        except (ValueError, KeyError, TypeError):
            problems.append("altered: ro-crate-metadata.json (not an RO-Crate JSON-LD document)")
        else:
            for e in graph:
                name, digest = e.get("@id") if isinstance(e, dict) else None, (e or {}).get("sha256")
                if name in files and digest and hashlib.sha256(files[name]).hexdigest() != digest \
                        and f"altered: {name}" not in problems:
                    problems.append(f"altered: {name} (differs from its sha256 in ro-crate-metadata.json)")
    return problems, len(files)


# ----------------------------------------------------------------------------- publish (Zenodo)

ZENODO = "https://zenodo.org"
ZENODO_SANDBOX = "https://sandbox.zenodo.org"


def _crate_info(files: dict[str, bytes]) -> dict:
    graph = json.loads(files["ro-crate-metadata.json"])["@graph"]
    by_id = {e.get("@id"): e for e in graph}
    root = by_id.get("./", {})
    creators = [by_id.get(a.get("@id"), {}).get("name") for a in root.get("author", [])]
    variants = sorted({e["name"] for e in graph if str(e.get("@id", "")).startswith("#variant-")})
    lic = root.get("license")
    return {"title": root.get("name"), "description": root.get("description"), "version": root.get("version"),
            "creators": [c for c in creators if c], "variants": variants,
            "license": lic.get("@id") if isinstance(lic, dict) else lic}


def publish(path: Path, *, sandbox: bool = False, base_url: str | None = None, do_publish: bool = False,
            creators: list[str] = (), title: str | None = None, description: str | None = None,
            timeout: float = 600) -> dict:
    """Upload an archive to Zenodo (see module doc); returns the deposition's id, links, DOI."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError("command line", "ARCHIVE", str(path), "an archive file written by corun archive")
    token = os.environ.get("ZENODO_TOKEN", "")
    if not token:
        raise ConfigError("environment", "ZENODO_TOKEN", "unset", "a Zenodo personal access token (scope deposit:write)")
    problems, _ = verify(path)
    if problems:
        raise CorunError(f"{path}: does not verify ({problems[0]}): not published")
    info = _crate_info(read_archive(path))
    check_creators(creators)
    names = list(creators) or info["creators"]
    if not names:
        raise ConfigError("command line", "--creator", "none", "at least one creator (Zenodo requires one), "
                          "e.g. --creator 'Doe, Jane'")
    base = (base_url or (ZENODO_SANDBOX if sandbox else ZENODO)).rstrip("/")
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"

    def call(step: str, method: str, url: str, ok: tuple[int, ...], **kw) -> dict:
        try:
            res = session.request(method, url, timeout=timeout, **kw)
        except requests.RequestException as exc:
            raise CorunError(f"zenodo: {step}: {type(exc).__name__} talking to {base}") from None
        if res.status_code not in ok:
            try:
                msg = res.json().get("message") or res.text[:200]
            except ValueError:
                msg = res.text[:200]
            raise CorunError(f"zenodo: {step}: HTTP {res.status_code}: {' '.join(str(msg).split())}")
        try:
            return res.json()
        except ValueError:
            return {}

    dep = call("create deposition", "POST", f"{base}/api/deposit/depositions", (200, 201), json={})
    try:
        dep_id, bucket = dep["id"], dep["links"]["bucket"]
    except (KeyError, TypeError):
        raise CorunError("zenodo: create deposition: the answer has no id or links.bucket") from None
    data = path.read_bytes()
    up = call("upload", "PUT", f"{bucket}/{path.name}", (200, 201), data=data,
              headers={"Content-Type": "application/octet-stream"})
    md5 = hashlib.md5(data).hexdigest()  # noqa: S324 - the checksum Zenodo reports
    if up.get("checksum") and up["checksum"] != f"md5:{md5}":
        raise CorunError(f"zenodo: upload: checksum {up['checksum']} differs from the file's md5:{md5}")
    keywords = ["corun", "scheduling", "contention", *info["variants"]]
    metadata = {"upload_type": "dataset", "title": title or info["title"] or path.name,
                "description": description or info["description"] or path.name,
                "creators": [{"name": n} for n in names], "version": str(info["version"] or "1"),
                "keywords": keywords, "access_right": "open",
                "license": str(info["license"] or "CC-BY-4.0").lower()}
    call("set metadata", "PUT", f"{base}/api/deposit/depositions/{dep_id}", (200,), json={"metadata": metadata})
    out = {"id": dep_id, "bucket": bucket, "html": (dep.get("links") or {}).get("html"), "published": False,
           "doi": None, "checksum": f"md5:{md5}"}
    if do_publish:
        pub = call("publish", "POST", f"{base}/api/deposit/depositions/{dep_id}/actions/publish", (200, 202))
        out.update(published=True, doi=pub.get("doi"), html=(pub.get("links") or {}).get("html", out["html"]))
    return out
