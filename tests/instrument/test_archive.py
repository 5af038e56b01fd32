"""corun archive / verify / publish: RO-Crate, tamper detection, secrets, round trip, Zenodo."""

import hashlib
import http.server
import io
import json
import subprocess
import sys
import tarfile
import threading
import zipfile
from pathlib import Path

import pytest

from analysis import compare_runs
from analysis.synthetic import write_run
from corun.results import archive

PY = sys.executable
SECRETS = [
    "hunter2-become",
    "tok-4f9a8b7c6d5e",
    "s3cr3t-env-value",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "pw-in-spec-arg",
]
KEY_TEXT = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----\n"


def corun(*args, cwd=None, env=None):
    return subprocess.run([PY, "-m", "corun", *args], capture_output=True, text=True, cwd=cwd, env=env)


@pytest.fixture
def campaign(tmp_path) -> Path:
    camp = tmp_path / "camp"
    for i, b in enumerate([10.0, 10.3, 9.7, 10.1]):
        write_run(
            camp / "runs" / f"linux_r{i}", "linux", [b, b * 1.1], labels={"rep": i, "warmup": False}, build_id="aa11"
        )
        write_run(
            camp / "runs" / f"bfq_r{i}",
            "elevator_bfq",
            [b * 1.3, b * 1.4],
            labels={"rep": i, "warmup": False},
            build_id="bb22",
            extra_meta={"environment": {"ZENODO_TOKEN": SECRETS[1], "HOME": "/root", "MY_SECRET": SECRETS[2]}},
        )
    (camp / "inventory").mkdir()
    (camp / "inventory" / "hosts.ini").write_text(
        f"[testbed]\nnode1 ansible_host=10.0.0.1 ansible_become_pass={SECRETS[0]}\n"
    )
    (camp / "config.yaml").write_text(f"profile: local\napi_token: '{SECRETS[1]}'\nnote: {SECRETS[3]}\n")
    spec = {"name": "x", "jobs": [{"cmd": ["tool", "--password", SECRETS[4]]}]}
    (camp / "runs" / "linux_r0" / "spec.json").write_text(json.dumps(spec))
    (camp / "report.html").write_text("<html><body>report</body></html>\n")
    (camp / "figures").mkdir()
    (camp / "figures" / "f.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    (camp / "runs" / "linux_r9.incomplete").mkdir()
    return camp


def members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}


def test_archive_contents_and_ro_crate(campaign, tmp_path):
    out = tmp_path / "camp-v1.tar.gz"
    res = archive.archive(campaign, out, creators=["Doe, Jane"], title="t")
    assert res["runs"] == 8
    files = members(out)
    assert all(n.startswith("camp-v1/") for n in files)
    for n in (
        "ro-crate-metadata.json",
        "SHA256SUMS",
        "provenance/archive.json",
        "provenance/runs.json",
        "runs/linux_r0/metadata.json",
        "runs/linux_r0/jobs.csv",
        "runs/linux_r0/tidy/psi.csv",
        "runs/linux_r0/monitors/psi.csv",
        "report.html",
        "figures/f.png",
    ):
        assert f"camp-v1/{n}" in files, n
    assert not any(".incomplete" in n for n in files)
    crate = json.loads(files["camp-v1/ro-crate-metadata.json"])
    assert crate["@context"] == "https://w3id.org/ro/crate/1.1/context"
    g = {e["@id"]: e for e in crate["@graph"]}
    assert g["ro-crate-metadata.json"]["about"] == {"@id": "./"}
    assert g["./"]["@type"] == "Dataset" and g["./"]["version"] == "1"
    f = g["runs/linux_r0/jobs.csv"]
    data = files["camp-v1/runs/linux_r0/jobs.csv"]
    assert f["@type"] == "File" and f["encodingFormat"] == "text/csv"
    assert f["contentSize"] == str(len(data)) and f["sha256"] == hashlib.sha256(data).hexdigest()
    assert g["runs/linux_r0/"]["@type"] == "Dataset"
    assert {"@id": "runs/linux_r0/jobs.csv"} in g["runs/linux_r0/"]["hasPart"]
    action = g["#run-runs/bfq_r1"]
    assert action["@type"] == "CreateAction" and action["result"] == {"@id": "runs/bfq_r1/"}
    assert action["instrument"][0] == {"@id": "#variant-elevator_bfq-bb22"}
    assert g["#variant-elevator_bfq-bb22"]["@type"] == "SoftwareApplication"
    assert g["#corun"]["version"] and g["#corun"]["identifier"]
    sums = files["camp-v1/SHA256SUMS"].decode().splitlines()
    assert len(sums) == len(files) - 1


def test_secrets_never_archived(campaign, tmp_path):
    (campaign / "id_ed25519").write_text(KEY_TEXT)
    res = corun("archive", str(campaign), "--out", str(tmp_path / "a.tar.gz"))
    assert res.returncode == 2 and "id_ed25519" in res.stderr and "private key" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "a.tar.gz").exists()
    for out in (tmp_path / "a.tar.gz", tmp_path / "a.zip"):
        res = corun("archive", str(campaign), "--out", str(out), "--exclude", "id_*")
        assert res.returncode == 0, res.stderr
        blob = out.read_bytes()
        if out.suffix == ".zip":
            with zipfile.ZipFile(out) as z:
                blob = b"".join(z.read(n) for n in z.namelist())
        else:
            with tarfile.open(out) as tar:
                blob = b"".join(tar.extractfile(m).read() for m in tar if m.isfile())
        for s in SECRETS:
            assert s.encode() not in blob, s
        assert b"PRIVATE KEY" not in blob
        assert b"ansible_become_pass=REDACTED" in blob and b'"ZENODO_TOKEN": "REDACTED"' in blob
        assert b"10.0.0.1" in blob and b'"HOME": "/root"' in blob  # only secrets go
        assert corun("verify", str(out)).returncode == 0
    assert SECRETS[0] in (campaign / "inventory" / "hosts.ini").read_text()  # source untouched


def _retar(src: Path, dst: Path, change) -> None:
    with tarfile.open(src) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}
    files = change(files)
    with tarfile.open(dst, "w:gz") as tar:
        for name, data in files.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tar.addfile(ti, io.BytesIO(data))


@pytest.mark.parametrize(
    "kind, change, needle",
    [
        (
            "altered",
            lambda f: {**f, "c/runs/linux_r1/jobs.csv": f["c/runs/linux_r1/jobs.csv"] + b"x"},
            "altered: runs/linux_r1/jobs.csv",
        ),
        (
            "missing",
            lambda f: {k: v for k, v in f.items() if k != "c/runs/bfq_r2/metadata.json"},
            "missing: runs/bfq_r2/metadata.json",
        ),
        ("extra", lambda f: {**f, "c/runs/bfq_r2/new.csv": b"a,b\n"}, "extra: runs/bfq_r2/new.csv"),
        (
            "sums edited",
            lambda f: {
                **f,
                "c/report.html": b"forged\n",
                "c/SHA256SUMS": f["c/SHA256SUMS"].replace(
                    hashlib.sha256(f["c/report.html"]).hexdigest().encode(),
                    hashlib.sha256(b"forged\n").hexdigest().encode(),
                ),
            },
            "altered: report.html (differs from its sha256 in ro-crate-metadata.json)",
        ),
    ],
)
def test_verify_detects_tampering(campaign, tmp_path, kind, change, needle):
    good = tmp_path / "c.tar.gz"
    archive.archive(campaign, good)
    assert corun("verify", str(good)).returncode == 0
    bad = tmp_path / "bad.tar.gz"
    _retar(good, bad, change)
    res = corun("verify", str(bad))
    assert res.returncode == 1 and needle in res.stderr, res.stderr


def test_verify_extracted_folder_and_bad_input(campaign, tmp_path):
    good = tmp_path / "c.zip"
    archive.archive(campaign, good)
    with zipfile.ZipFile(good) as z:
        z.extractall(tmp_path / "x")
    assert corun("verify", str(tmp_path / "x")).returncode == 0
    (tmp_path / "x" / "c" / "report.html").write_text("changed")
    res = corun("verify", str(tmp_path / "x" / "c"))
    assert res.returncode == 1 and "altered: report.html" in res.stderr
    res = corun("archive", str(campaign), "--out", str(tmp_path / "c.rar"))
    assert res.returncode == 2 and "--out" in res.stderr and ".tar.gz" in res.stderr
    res = corun("verify", str(tmp_path / "nope.tar.gz"))
    assert res.returncode == 2 and "ARCHIVE" in res.stderr
    res = corun("archive", str(campaign), "--out", str(tmp_path / "d.tar.gz"), "--creator", "Jane Doe")
    assert res.returncode == 2 and res.stderr.strip().splitlines() == [
        "corun: command line: --creator: 'Jane Doe' (expected 'Family, Given', e.g. --creator 'Doe, Jane')"
    ]
    norun = tmp_path / "norun"
    (norun / "analysis").mkdir(parents=True)
    (norun / "analysis" / "notes.txt").write_text("no run here\n")
    res = corun("archive", str(norun), "--out", str(tmp_path / "e.tar.gz"))
    assert res.returncode == 2 and "at least one finished run" in res.stderr
    assert not (tmp_path / "d.tar.gz").exists() and not (tmp_path / "e.tar.gz").exists()


def test_round_trip_reanalysis_identical(campaign, tmp_path):
    out = tmp_path / "camp.tar.gz"
    archive.archive(campaign, out)
    elsewhere = tmp_path / "other-machine"
    with tarfile.open(out) as tar:
        tar.extractall(elsewhere)  # noqa: S202 - written above
    a, b = tmp_path / "cmp-a", tmp_path / "cmp-b"
    compare_runs.run([campaign], by="variant", baseline="linux", out=a, plots=False)
    compare_runs.run([elsewhere / "camp"], by="variant", baseline="linux", out=b, plots=False)
    for name in ("comparison.csv", "runs.csv", "comparison.md"):
        assert (a / name).read_text() == (b / name).read_text(), name
    from analysis.collect import collect

    ja, ra = collect(sorted((campaign / "runs").glob("*_r[0-9]")))
    jb, rb = collect(sorted((elsewhere / "camp" / "runs").glob("*_r[0-9]")))
    assert ja.equals(jb)
    cols = [c for c in ra.columns if c not in ("metadata_path", "run_dir")]
    assert ra[cols].equals(rb[cols])


class Zenodo(http.server.BaseHTTPRequestHandler):
    """The deposition calls corun uses: create, bucket upload, metadata, publish."""

    calls: list = []
    store: dict = {}

    def log_message(self, *a):
        pass

    def _reply(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _body(self):
        return self.rfile.read(int(self.headers.get("Content-Length", 0)))

    def _auth(self):
        if self.headers.get("Authorization") != "Bearer test-token":
            self._reply(401, {"message": "bad token"})
            return False
        return True

    def do_POST(self):  # noqa: N802
        if not self._auth():
            return
        body = self._body()
        base = f"http://{self.headers['Host']}"
        self.calls.append(("POST", self.path))
        if self.path == "/api/deposit/depositions":
            self._reply(201, {"id": 7, "links": {"bucket": f"{base}/api/files/bucket-7", "html": f"{base}/deposit/7"}})
        elif self.path == "/api/deposit/depositions/7/actions/publish":
            self._reply(202, {"id": 7, "doi": "10.5072/zenodo.7", "links": {"html": f"{base}/records/7"}})
        else:
            self._reply(404, {"message": f"no {self.path} {body[:0]}"})

    def do_PUT(self):  # noqa: N802
        if not self._auth():
            return
        body = self._body()
        self.calls.append(("PUT", self.path))
        if self.path.startswith("/api/files/bucket-7/"):
            self.store["file"] = (self.path.rsplit("/", 1)[1], body)
            self._reply(201, {"key": self.path.rsplit("/", 1)[1], "checksum": f"md5:{hashlib.md5(body).hexdigest()}"})
        elif self.path == "/api/deposit/depositions/7":
            self.store["metadata"] = json.loads(body)["metadata"]
            self._reply(200, {"id": 7})
        else:
            self._reply(404, {"message": "unknown"})


@pytest.fixture
def zenodo():
    Zenodo.calls, Zenodo.store = [], {}
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Zenodo)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


def test_publish_to_local_zenodo(campaign, tmp_path, zenodo):
    out = tmp_path / "camp-v1.tar.gz"
    archive.archive(campaign, out, creators=["Doe, Jane"], title="corun camp", version="1.2")
    env = {"ZENODO_TOKEN": "test-token", "PATH": "/usr/bin:/bin"}
    res = corun("publish", str(out), "--base-url", zenodo, "--publish", env=env)
    assert res.returncode == 0, res.stderr
    info = json.loads(res.stdout)
    assert info["doi"] == "10.5072/zenodo.7" and info["published"]
    assert [c[0] for c in Zenodo.calls] == ["POST", "PUT", "PUT", "POST"]
    name, body = Zenodo.store["file"]
    assert name == "camp-v1.tar.gz" and body == out.read_bytes()
    md = Zenodo.store["metadata"]
    assert md["title"] == "corun camp" and md["creators"] == [{"name": "Doe, Jane"}]
    assert md["upload_type"] == "dataset" and md["version"] == "1.2" and "elevator_bfq" in md["keywords"]
    assert "test-token" not in res.stdout + res.stderr
    # draft only, no creators in the archive but given on the command line
    Zenodo.calls.clear()
    out2 = tmp_path / "camp-v2.tar.gz"
    archive.archive(campaign, out2)
    assert corun("publish", str(out2), "--base-url", zenodo, "--creator", "Roe, R", env=env).returncode == 0
    assert [c[0] for c in Zenodo.calls] == ["POST", "PUT", "PUT"]


def test_publish_errors(campaign, tmp_path, zenodo):
    out = tmp_path / "c.tar.gz"
    archive.archive(campaign, out, creators=["Doe, Jane"])
    res = corun("publish", str(out), "--base-url", zenodo, env={"PATH": "/usr/bin:/bin"})
    assert res.returncode == 2 and "ZENODO_TOKEN" in res.stderr
    res = corun("publish", str(out), "--base-url", zenodo, env={"ZENODO_TOKEN": "wrong", "PATH": "/usr/bin:/bin"})
    assert res.returncode == 1 and "HTTP 401" in res.stderr and "wrong" not in res.stderr
    res = corun(
        "publish",
        str(tmp_path / "c2.tar.gz"),
        "--base-url",
        zenodo,
        env={"ZENODO_TOKEN": "test-token", "PATH": "/usr/bin:/bin"},
    )
    assert res.returncode == 2
    out2 = tmp_path / "n.tar.gz"
    archive.archive(campaign, out2)
    res = corun("publish", str(out2), "--base-url", zenodo, env={"ZENODO_TOKEN": "test-token", "PATH": "/usr/bin:/bin"})
    assert res.returncode == 2 and "--creator" in res.stderr


def test_paper_analysis_of_an_extracted_archive_is_identical(tmp_path, monkeypatch):
    """An experiment folder as the workflow leaves it (runs.csv naming run folders relative to
    the project), archived, extracted on "another machine" and analysed there from another
    working folder: the paper analysis finds the runs and writes the same tables."""
    import shutil

    from analysis.experiment import read_inputs, write
    from experiments import PAPERS_DIR
    from experiments.cmp_stacking import analysis as cs

    fixtures = Path(__file__).resolve().parents[2] / "experiments/cmp_stacking/tests/fixtures/cmp_stacking"
    project = tmp_path / "project"
    exp = project / "results" / "local" / "cmp_stacking"
    shutil.copytree(fixtures / "runs", exp / "runs")
    shutil.copy(fixtures / "jobs.csv", exp / "jobs.csv")
    text = (fixtures / "runs.csv").read_text().replace(",runs/", ",results/local/cmp_stacking/runs/")
    (exp / "runs.csv").write_text(text)

    def analyse(folder, out):
        inputs = read_inputs("cmp_stacking", cs.FOLDER, PAPERS_DIR, folder / "jobs.csv", folder / "runs.csv",
                             job_text=cs.JOB_TEXT, run_text=cs.RUN_TEXT)  # fmt: skip
        write(out, inputs, cs.analyse(inputs))
        return {p.name: p.read_text() for p in sorted(out.glob("*.csv"))}

    monkeypatch.chdir(project)
    here = analyse(exp, tmp_path / "a")
    archive.archive(exp, tmp_path / "exp.tar.gz")
    elsewhere = tmp_path / "other-machine"
    with tarfile.open(tmp_path / "exp.tar.gz") as tar:
        tar.extractall(elsewhere)  # noqa: S202 - written above
    monkeypatch.chdir(tmp_path)
    there = analyse(elsewhere / "exp", tmp_path / "b")  # the archive's folder is named after it
    assert here and here == there
