"""The source roles' modules, as plain functions: roles/source_tarball/library/pinned_source.py
(which pinned source archive is taken, and its sha256 check) and swap_tree.py (a finished build
put in place at once). The roles that use them are tested in test_roles_upstream.py."""

import hashlib
import importlib.util

import pytest
from test_provision import REPO

LIBRARY = REPO / "roles" / "source_tarball" / "library"


def load(name):
    spec = importlib.util.spec_from_file_location(name, LIBRARY / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pinned = load("pinned_source")
swap_tree = load("swap_tree")


def archive(folder, name, data):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def source(name, file, sha, url=""):
    return {"name": name, "file": file, "sha256": sha, "url": url, "description": f"{name} archive"}


@pytest.fixture
def two_sources(tmp_path):
    """An upstream source with a URL and an alternative without, and their archives' bytes."""
    up, alt = b"upstream bytes", b"alternative bytes"
    sources = [
        source("upstream", "up.tar.gz", hashlib.sha256(up).hexdigest(), "https://example.org/up.tar.gz"),
        source("git-import", "alt.tar.gz", hashlib.sha256(alt).hexdigest()),
    ]
    return sources, up, alt


def no_fetch(url, dest, timeout):
    raise AssertionError(f"nothing should be downloaded, asked for {url}")


def test_the_first_source_found_in_the_mirror_is_taken(tmp_path, two_sources):
    sources, up, alt = two_sources
    mirror = tmp_path / "mirror"
    archive(mirror, "alt.tar.gz", alt)
    got, fetched, reason = pinned.choose("npb", sources, str(mirror), str(tmp_path / "dl"), 5, fetch=no_fetch)
    assert (got["name"], got["origin"], got["path"], fetched, reason) == (
        "git-import",
        "mirror",
        str(mirror / "alt.tar.gz"),
        False,
        "",
    )
    # With the upstream file there too, upstream comes first.
    archive(mirror, "up.tar.gz", up)
    got, _, _ = pinned.choose("npb", sources, str(mirror), str(tmp_path / "dl"), 5, fetch=no_fetch)
    assert got["name"] == "upstream"


def test_a_wrong_sha256_in_the_mirror_names_the_role_the_file_and_both_hashes(tmp_path, two_sources):
    sources, _, _ = two_sources
    mirror = tmp_path / "mirror"
    actual = archive(mirror, "up.tar.gz", b"tampered")
    archive(mirror, "alt.tar.gz", b"alternative bytes")  # never a fall-through to it
    with pytest.raises(pinned.SourceError) as err:
        pinned.choose("npb", sources, str(mirror), str(tmp_path / "dl"), 5, fetch=no_fetch)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"npb: up.tar.gz in {mirror} has sha256 {actual}, expected {sources[0]['sha256']}"), msg


def test_without_the_file_in_the_mirror_the_upstream_one_is_downloaded_once(tmp_path, two_sources):
    sources, up, _ = two_sources
    calls = []

    def fetch(url, dest, timeout):
        calls.append(url)
        with open(dest, "wb") as f:
            f.write(up)

    for mirror in ("", str(tmp_path / "absent"), str(tmp_path)):
        got, fetched, _ = pinned.choose("ior", sources, mirror, str(tmp_path / "dl"), 5, fetch=fetch)
        assert (got["origin"], got["path"]) == ("download", str(tmp_path / "dl" / "up.tar.gz"))
        assert fetched == (len(calls) == 1 and mirror == "")
    assert calls == ["https://example.org/up.tar.gz"]  # then kept, its sha256 checked each time


def test_a_download_with_a_wrong_sha256_is_removed_and_refused(tmp_path, two_sources):
    sources, _, _ = two_sources

    def fetch(url, dest, timeout):
        with open(dest, "wb") as f:
            f.write(b"a proxy's error page")

    with pytest.raises(pinned.SourceError) as err:
        pinned.choose("ior", sources, "", str(tmp_path / "dl"), 5, fetch=fetch)
    actual = hashlib.sha256(b"a proxy's error page").hexdigest()
    url = "https://example.org/up.tar.gz"
    assert str(err.value).startswith(
        f"ior: up.tar.gz fetched from {url} has sha256 {actual}, expected {sources[0]['sha256']}"
    )
    assert list((tmp_path / "dl").iterdir()) == []


def test_no_source_to_be_had_gives_the_reason(tmp_path, two_sources):
    sources, _, _ = two_sources

    def fetch(url, dest, timeout):
        raise OSError("Name or service not known")

    got, fetched, reason = pinned.choose("npb", sources, str(tmp_path / "m"), str(tmp_path / "dl"), 5, fetch=fetch)
    assert (got, fetched) == (None, False)
    assert reason == (
        f"npb: no source archive: up.tar.gz (sha256 {sources[0]['sha256']}) or alt.tar.gz (sha256 "
        f"{sources[1]['sha256']}); corun_mirror {tmp_path / 'm'} does not exist; "
        "https://example.org/up.tar.gz cannot be fetched (Name or service not known)"
    )


def test_check_mode_downloads_nothing(tmp_path, two_sources):
    sources, _, _ = two_sources
    got, fetched, _ = pinned.choose("ior", sources, "", str(tmp_path / "dl"), 5, check_mode=True, fetch=no_fetch)
    assert got["origin"] == "download" and fetched
    assert not (tmp_path / "dl").exists()


def test_real_download_through_a_file_url(tmp_path):
    data = b"an archive"
    sha = archive(tmp_path / "www", "a.tar.gz", data)
    sources = [source("upstream", "a.tar.gz", sha, (tmp_path / "www" / "a.tar.gz").as_uri())]
    got, fetched, _ = pinned.choose("ior", sources, "", str(tmp_path / "dl"), 5)
    assert fetched and (tmp_path / "dl" / "a.tar.gz").read_bytes() == data
    assert not (tmp_path / "dl" / "a.tar.gz.part").exists()


@pytest.mark.parametrize(
    ("sources", "expected"),
    [
        ([], "ior_sources: [] (expected a non-empty list of pinned sources)"),
        ("x", "ior_sources: 'x' (expected a non-empty list"),
        ([{"name": "u", "file": "a", "sha256": "0" * 64, "urll": ""}], "ior_sources[0]: unknown key urll"),
        ([{"name": "u", "file": "a/b", "sha256": "0" * 64}], "ior_sources[0].file: 'a/b' (expected a file name"),
        ([{"name": "u", "file": "a", "sha256": "abc"}], "ior_sources[0].sha256: 'abc' (expected 64 hex digits)"),
        ([{"name": "u", "file": "a", "sha256": "0" * 64, "url": "a.tar.gz"}], "ior_sources[0].url: 'a.tar.gz' ("),
        ([{"file": "a", "sha256": "0" * 64}], "ior_sources[0].name: None (expected a non-empty string)"),
    ],
)
def test_malformed_sources_are_one_line_naming_the_variable(sources, expected):
    with pytest.raises(pinned.SourceError) as err:
        pinned.check_sources("ior", sources, "ior_sources")
    assert str(err.value).startswith(f"ior: {expected}"), str(err.value)


def test_the_installed_record_needs_every_program(tmp_path):
    (tmp_path / "corun-build.json").write_text('{"source": {"sha256": "x"}}')
    prog = tmp_path / "bin" / "ior"
    prog.parent.mkdir()
    prog.write_text("#!/bin/sh\n")
    assert pinned.installed_record(str(tmp_path), ["bin/ior"]) == {}  # not executable
    prog.chmod(0o755)
    assert pinned.installed_record(str(tmp_path), ["bin/ior"]) == {"source": {"sha256": "x"}}
    assert pinned.installed_record(str(tmp_path), ["bin/ior", "bin/mdtest"]) == {}
    assert pinned.installed_record(str(tmp_path / "absent"), []) == {}


def test_swap_tree_exchanges_the_builds_at_once(tmp_path):
    dest, staging = tmp_path / "ior-4.0.0", tmp_path / "ior-4.0.0.staging"
    staging.mkdir()
    (staging / "new").write_text("new build")
    swap_tree.swap(str(staging), str(dest))  # nothing installed yet: renamed into place
    assert (dest / "new").exists() and not staging.exists()
    staging.mkdir()
    (staging / "newer").write_text("newer build")
    swap_tree.swap(str(staging), str(dest))
    assert sorted(p.name for p in dest.iterdir()) == ["newer"] and not staging.exists()
    with pytest.raises(OSError):
        swap_tree.swap(str(staging), str(dest))


SETTINGS = {"version": "4.0.0", "configure_args": ["--with-mpiio"]}


def test_a_build_is_made_only_when_its_source_or_settings_changed(two_sources):
    sources, _, _ = two_sources
    chosen = {**sources[1], "origin": "mirror", "path": "/m/alt.tar.gz"}
    pins = [s["sha256"] for s in sources]
    use, rebuild, stamp = pinned.decide(chosen, {}, SETTINGS, pins, "/opt/x")
    assert use == chosen and rebuild
    assert stamp == {
        "settings": SETTINGS,
        "source": {k: sources[1][k] for k in ("name", "file", "sha256", "url", "description")},
    }
    assert pinned.decide(chosen, stamp, SETTINGS, pins, "/opt/x")[1] is False
    assert pinned.decide(chosen, stamp, {**SETTINGS, "configure_args": []}, pins, "/opt/x")[1] is True
    upstream = {**sources[0], "origin": "mirror", "path": "/m/up.tar.gz"}
    assert pinned.decide(upstream, stamp, SETTINGS, pins, "/opt/x")[1] is True  # the preferred one appeared


def test_without_a_source_an_installed_pinned_build_stays(two_sources):
    sources, _, _ = two_sources
    pins = [s["sha256"] for s in sources]
    _, _, stamp = pinned.decide({**sources[0], "origin": "mirror", "path": "/m/up"}, {}, SETTINGS, pins, "/opt/x")
    use, rebuild, _ = pinned.decide(None, stamp, SETTINGS, pins, "/opt/x")
    assert (use["origin"], use["path"], use["sha256"], rebuild) == ("installed", "/opt/x", sources[0]["sha256"], False)
    # ... but not one of another source or other settings: then the stand-in.
    assert pinned.decide(None, stamp, SETTINGS, pins[1:], "/opt/x")[0] is None
    assert pinned.decide(None, stamp, {}, pins, "/opt/x")[0] is None


def test_the_manifest_entry_and_facts_of_a_build_and_of_a_stand_in(tmp_path):
    built = pinned.manifest_entry({"name": "upstream"}, "", {"programs": {"ior": "/i"}}, {"stand_in": "pfs_read"})
    assert built == {"programs": {"ior": "/i"}, "status": "built", "source": {"name": "upstream"}}
    stand_in = pinned.manifest_entry(None, "ior: no source archive", {"programs": {}}, {"stand_in": "pfs_read"})
    assert stand_in == {"stand_in": "pfs_read", "status": "stand-in", "reason": "ior: no source archive"}
    assert pinned.empty_like({"ior_binary": "/i", "npb_binaries": {"a": "/a"}}) == {
        "ior_binary": "",
        "npb_binaries": {},
    }
    path = tmp_path / "upstream.d" / "ior.json"
    text = pinned.render("ior", built)
    assert pinned.write_if_changed(str(path), text) and not pinned.write_if_changed(str(path), text)
    assert path.read_text() == text and list(path.parent.iterdir()) == [path]


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("mirror", "mirror", "ior: corun_mirror: 'mirror' (expected"),
        ("download_dir", "downloads", "ior: ior_download_dir: 'downloads' (expected an absolute path)"),
        ("upstream_manifest", 5, "ior: ior_upstream_manifest: 5 (expected an absolute path)"),
        ("timeout", "60", "ior: ior_download_timeout: '60' (expected an integer number of seconds >= 1)"),
        ("required", "yes", "ior: ior_required: 'yes' (expected true or false)"),
    ],
)
def test_shared_settings_are_one_line_naming_the_variable(key, value, expected):
    p = {"mirror": "", "download_dir": "/d", "install_dir": "/i", "upstream_manifest": "/m.json", "timeout": 60}
    p["required"] = False
    p[key] = value
    with pytest.raises(pinned.SourceError) as err:
        pinned.check_settings("ior", p)
    assert str(err.value).startswith(expected), str(err.value)


def test_a_mirror_url_serves_the_first_source_it_holds_into_the_download_folder(tmp_path, two_sources):
    """corun_mirror as an http(s) URL (a bare testbed's nodes reach the mirror over HTTP): its
    file is fetched into the download folder, checked, and reused by the next run."""
    sources, up, alt = two_sources
    served = {"http://10.78.0.1:8078/alt.tar.gz": alt}
    asked = []

    def fetch(url, dest, timeout):
        asked.append(url)
        if url not in served:
            raise OSError("HTTP Error 404: File not found")
        with open(dest, "wb") as f:
            f.write(served[url])

    dl = tmp_path / "dl"
    got, fetched, reason = pinned.choose("npb", sources, "http://10.78.0.1:8078/", str(dl), 5, fetch=fetch)
    assert (got["name"], got["origin"], got["path"], fetched, reason) == (
        "git-import",
        "mirror",
        str(dl / "alt.tar.gz"),
        True,
        "",
    )
    assert asked == ["http://10.78.0.1:8078/up.tar.gz", "http://10.78.0.1:8078/alt.tar.gz"]
    again = pinned.choose("npb", sources, "http://10.78.0.1:8078", str(dl), 5, fetch=no_fetch)
    assert (again[0]["name"], again[1]) == ("git-import", False)


def test_a_mirror_url_serving_nothing_falls_back_to_the_upstream_url_and_says_why(tmp_path, two_sources):
    sources, up, alt = two_sources

    def fetch(url, dest, timeout):
        if "example.org" not in url:
            raise OSError("HTTP Error 404: File not found")
        with open(dest, "wb") as f:
            f.write(up)

    got, fetched, _ = pinned.choose("npb", sources, "http://m.invalid", str(tmp_path / "dl"), 5, fetch=fetch)
    assert (got["name"], got["origin"], fetched) == ("upstream", "download", True)

    def refuse(url, dest, timeout):
        raise OSError("HTTP Error 404: File not found")

    got, _, reason = pinned.choose("npb", sources, "http://m.invalid", str(tmp_path / "dl2"), 5, fetch=refuse)
    assert got is None and "corun_mirror http://m.invalid serves none of them: http://m.invalid/up.tar.gz" in reason


def test_a_mirror_url_with_a_wrong_sha256_is_refused(tmp_path, two_sources):
    sources, up, alt = two_sources

    def fetch(url, dest, timeout):
        with open(dest, "wb") as f:
            f.write(b"tampered")

    with pytest.raises(pinned.SourceError, match="npb: .*up.tar.gz"):
        pinned.choose("npb", sources, "https://m.example", str(tmp_path / "dl"), 5, fetch=fetch)
    assert not (tmp_path / "dl" / "up.tar.gz").exists()
