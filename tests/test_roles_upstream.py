"""Tests of the roles that build upstream tools: openmpi, parsec, npb's checks, kernel_build, site.yml.

Like test_provision.py, these run the venv's ansible-playbook from the repository root with
ANSIBLE_CONFIG pointing at ansible.cfg. PARSEC has no published checksum, so nothing of it is
built here: the parsec role is driven to its fetch, checksum and unpack checks with unreachable
URLs, a small HTTP server on this host and small fake tarballs, and must stop with one clear line
naming the variable to set; a stand-in parsecmgmt drives its build stage. The roles with pinned
sources (graph500, npb, ior) are built from the mirror in test_roles_pinned.py. The openmpi role
really installs MPI (root), and site.yml must skip the parts that are off by default.
"""

import functools
import hashlib
import http.server
import io
import json
import re
import socket
import subprocess
import tarfile
import threading

import pytest
from test_provision import (
    RECAP,
    REPO,
    ansible_env,
    failure_messages,
    output,
    run_tool,
)

# A closed port on this host: the download fails at once instead of waiting for a timeout.
UNREACHABLE = "http://127.0.0.1:9/x.tar.gz"

# Each role's folders, redirected into the test's tmp_path.
DIR_VARIABLES = {
    "parsec": ["parsec_download_dir", "parsec_install_dir"],
    "graph500": ["graph500_download_dir", "graph500_install_dir"],
    "npb": ["npb_download_dir", "npb_install_dir"],
    "ior": ["ior_download_dir", "ior_install_dir"],
}


def role_play(path, role, variables, gather_facts=False):
    # JSON is YAML, and keeps every value's type exactly.
    play = [
        {
            "name": f"Apply {role}",
            "hosts": "testbed",
            "gather_facts": gather_facts,
            "roles": [{"role": role, "vars": variables}],
        }
    ]
    path.write_text(json.dumps(play, indent=2) + "\n")
    return path


def run_playbook(playbook, *args, timeout=300):
    return run_tool(
        "ansible-playbook",
        "-i",
        str(REPO / "inventory" / "local"),
        *args,
        str(playbook),
        timeout=timeout,
        env=ansible_env(ANSIBLE_CALLBACK_RESULT_FORMAT="json"),
    )


def recap(proc):
    match = RECAP.search(proc.stdout)
    assert match, f"no PLAY RECAP line for localhost:\n{output(proc)}"
    return tuple(map(int, match.groups()))


def final_failure(proc):
    """The message that stopped the play: the last failed result (earlier ones were rescued)."""
    assert proc.returncode != 0, output(proc)
    messages = failure_messages(proc.stdout)
    assert messages, output(proc)
    return messages[-1]


def role_failure(tmp_path, role, variables, *args):
    """The message that stopped a play of ROLE with VARIABLES (written to TMP_PATH/play.yml), run
    with ARGS."""
    return final_failure(run_playbook(role_play(tmp_path / "play.yml", role, variables), *args))


def parsec_failure(tmp_path, **extra):
    """role_failure of the parsec role with its source variables and EXTRA."""
    return role_failure(tmp_path, "parsec", source_vars(tmp_path, "parsec", **extra))


def source_vars(tmp_path, role, **extra):
    variables = {name: str(tmp_path / name) for name in DIR_VARIABLES[role]}
    # Never the machine's own manifest: corun would run the stand-in builds.
    variables[f"{role}_upstream_manifest"] = str(tmp_path / "upstream.d" / f"{role}.json")
    # No local mirror unless a test gives one (inventory/group_vars/all.yml points at ../shared/mirror).
    variables["corun_mirror"] = ""
    if role == "parsec":
        # Only the core tarball: the input tarballs follow the same code path.
        variables["parsec_inputs"] = []
    variables.update(extra)
    return variables


def fake_tarball(path, top="fake-1.0"):
    """A real, small .tar.gz that holds none of the expected source tree."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        data = b"not the benchmark you are looking for\n"
        info = tarfile.TarInfo(f"{top}/README")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    path.write_bytes(buffer.getvalue())
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.timeout(120)
def test_parsec_unreachable_source_names_the_mirror(tmp_path):
    message = parsec_failure(tmp_path, parsec_source_url=UNREACHABLE)
    assert "\n" not in message
    assert message.startswith(f"parsec: cannot fetch {UNREACHABLE} ("), message
    assert message.endswith("; set corun_mirror to a folder holding x.tar.gz"), message


@pytest.mark.timeout(120)
def test_parsec_mirror_without_the_tarball_downloads_it(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    message = parsec_failure(tmp_path, corun_mirror=str(mirror), parsec_source_url=UNREACHABLE)
    assert message.startswith(f"parsec: cannot fetch {UNREACHABLE} ("), message


@pytest.mark.timeout(120)
def test_parsec_mirror_with_a_wrong_sha256_names_the_checksum_variable(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    actual = fake_tarball(mirror / "parsec-3.0-core.tar.gz")
    wrong = hashlib.sha256(b"something else").hexdigest()
    message = parsec_failure(tmp_path, corun_mirror=str(mirror), parsec_source_sha256=wrong)
    assert message.startswith(f"parsec: parsec_source_sha256: {wrong} does not match"), message
    assert actual in message


@pytest.mark.timeout(120)
def test_parsec_mirror_without_a_sha256_names_the_checksum_variable(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    actual = fake_tarball(mirror / "parsec-3.0-core.tar.gz")
    message = parsec_failure(tmp_path, corun_mirror=str(mirror))
    assert message.startswith("parsec: parsec_source_sha256 is empty"), message
    assert f"has sha256 {actual}" in message


@pytest.mark.timeout(120)
def test_parsec_mirror_with_the_right_sha256_reaches_the_unpack_check(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    actual = fake_tarball(mirror / "parsec-3.0-core.tar.gz")
    playbook = role_play(
        tmp_path / "play.yml",
        "parsec",
        source_vars(tmp_path, "parsec", corun_mirror=str(mirror), parsec_source_sha256=actual),
    )
    proc = run_playbook(playbook)
    message = final_failure(proc)
    assert "\n" not in message
    assert message.startswith(f"parsec: {mirror / 'parsec-3.0-core.tar.gz'} did not unpack"), message
    # Nothing was built or installed: the unpack check comes before the build dependencies.
    assert "TASK [parsec : Install" not in proc.stdout


@pytest.fixture
def web_root(tmp_path):
    """A folder served over HTTP on this host; yields (folder, base URL)."""
    root = tmp_path / "www"
    root.mkdir()

    class QuietHandler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.timeout(120)
def test_parsec_download_with_a_wrong_sha256_names_the_checksum_variable(tmp_path, web_root):
    root, base = web_root
    fake_tarball(root / "parsec-3.0-core.tar.gz")
    wrong = hashlib.sha256(b"something else").hexdigest()
    url = f"{base}/parsec-3.0-core.tar.gz"
    message = parsec_failure(tmp_path, parsec_source_url=url, parsec_source_sha256=wrong)
    assert message.startswith(f"parsec: parsec_source_sha256: {wrong} does not match the file fetched from {url} ("), (
        message
    )


@pytest.mark.timeout(120)
def test_parsec_download_with_the_right_sha256_reaches_the_unpack_check(tmp_path, web_root):
    root, base = web_root
    digest = fake_tarball(root / "parsec-3.0-core.tar.gz")
    downloads = tmp_path / "parsec_download_dir"
    message = parsec_failure(tmp_path, parsec_source_url=f"{base}/parsec-3.0-core.tar.gz", parsec_source_sha256=digest)
    assert message.startswith(f"parsec: {downloads / 'parsec-3.0-core.tar.gz'} did not unpack"), message


@pytest.mark.timeout(120)
def test_parsec_joins_the_native_parts_before_checking_them(tmp_path, web_root):
    root, base = web_root
    core_digest = fake_tarball(root / "parsec-3.0-core.tar.gz")
    native = tmp_path / "native.tar.gz"
    native_digest = fake_tarball(native, top="parsec-3.0")
    data = native.read_bytes()
    cuts = [0, len(data) // 3, 2 * len(data) // 3, len(data)]
    urls = []
    for index in range(3):
        part = root / f"parsec-3.0-input-native.tar.gz.{index}"
        part.write_bytes(data[cuts[index] : cuts[index + 1]])
        urls.append(f"{base}/{part.name}")
    message = parsec_failure(
        tmp_path,
        parsec_inputs=["native"],
        parsec_source_url=f"{base}/parsec-3.0-core.tar.gz",
        parsec_source_sha256=core_digest,
        parsec_input_native_urls=urls,
        parsec_input_native_sha256=native_digest,
    )
    joined = tmp_path / "parsec_download_dir" / "parsec-3.0-input-native.tar.gz"
    assert joined.read_bytes() == data
    assert message.startswith("parsec: "), message
    assert "did not unpack the expected files" in message
    assert "core and native tarball" in message


# A stand-in for PARSEC's bin/parsecmgmt: "builds" a package by writing its program, except
# bodytrack, which fails the way the pristine tree does with a C++17 compiler.
STUB_PARSECMGMT = """#!/bin/sh
while getopts a:p:c: option; do
  case $option in a) action=$OPTARG;; p) package=$OPTARG;; c) config=$OPTARG;; esac
done
tree=$(cd "$(dirname "$0")/.." && pwd)
echo "$action $package $config" >> "$tree/stub.log"
case $action in
  uninstall) exit 0;;
  build)
    if [ "$package" = bodytrack ]; then
      echo "[PARSEC] [---------- Building package parsec.bodytrack ----------]"
      echo "Thread.h:62:24: error: ISO C++17 does not allow dynamic exception specifications"
      exit 1
    fi
    bin="$tree/pkgs/apps/$package/inst/amd64-linux.$config/bin"
    mkdir -p "$bin" && printf '#!/bin/sh\\n' > "$bin/$package" && chmod +x "$bin/$package";;
esac
"""

STUB_BLDCONFS = {
    "swaptions": "gcc-pthreads",
    "bodytrack": "gcc-pthreads",
    "x264": "gcc-pthreads",
    "freqmine": "gcc-openmp",
}


def stub_parsec_tarball(path):
    """A PARSEC-shaped tree whose parsecmgmt is a stand-in; returns the tarball's sha256."""
    files = {
        "bin/parsecmgmt": (STUB_PARSECMGMT, 0o755),
        "version": ("3.0-stub\n", 0o644),
        "config/gcc.bldconf": ('export CFLAGS="-O3"\nexport CXXFLAGS="-O3"\n', 0o644),
    }
    for package, config in STUB_BLDCONFS.items():
        files[f"pkgs/apps/{package}/parsec/{config}.bldconf"] = (
            'build_deps=""\nbuild_conf="--extra-cflags=\\"${CFLAGS}\\""\n',
            0o644,
        )
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, (text, mode) in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"parsec-3.0/{name}")
            info.size = len(data)
            info.mode = mode
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(buffer.getvalue())
    return hashlib.sha256(path.read_bytes()).hexdigest()


def stub_parsec_vars(tmp_path, packages):
    mirror = tmp_path / "mirror"
    mirror.mkdir(exist_ok=True)
    digest = stub_parsec_tarball(mirror / "parsec-3.0-core.tar.gz")
    return source_vars(
        tmp_path,
        "parsec",
        corun_mirror=str(mirror),
        parsec_source_sha256=digest,
        parsec_packages=packages,
        parsec_build_packages=[],
    )


@pytest.mark.timeout(180)
def test_parsec_build_stage_is_idempotent(tmp_path):
    playbook = role_play(
        tmp_path / "play.yml",
        "parsec",
        stub_parsec_vars(tmp_path, ["x264", "swaptions"]),
    )
    first = run_playbook(playbook)
    assert first.returncode == 0, output(first)
    tree = tmp_path / "parsec_install_dir"
    gcc_bldconf = (tree / "config" / "gcc.bldconf").read_text()
    assert "-fcommon" in gcc_bldconf and "-std=gnu++98" in gcc_bldconf, gcc_bldconf
    x264_bldconf = (tree / "pkgs/apps/x264/parsec/gcc-pthreads.bldconf").read_text()
    assert x264_bldconf.index("-no-pie") < x264_bldconf.index("build_conf="), x264_bldconf
    assert "parsec: PARSEC 3.0-stub (parsec_version 3.0)" in first.stdout
    second = run_playbook(playbook)
    assert second.returncode == 0, output(second)
    assert recap(second) == (0, 0), output(second)
    # Each package was built once; the first run uninstalled the old builds once per config.
    assert (tree / "stub.log").read_text().split("\n")[:-1] == [
        "uninstall all gcc-pthreads",
        "build x264 gcc-pthreads",
        "build swaptions gcc-pthreads",
    ]
    # The upstream manifest names the built programs as corun/run/workloads.py reads them.
    manifest = json.loads((tmp_path / "upstream.d" / "parsec.json").read_text())
    binaries = {
        name: str(tree / f"pkgs/apps/{name}/inst/amd64-linux.gcc-pthreads/bin/{name}") for name in ("x264", "swaptions")
    }
    assert manifest == {
        "parsec": {
            "version": "3.0-stub",
            "x264": binaries["x264"],
            "binaries": binaries,
            "inputs": {},
        }
    }


@pytest.mark.timeout(120)
def test_parsec_failed_build_names_the_package_and_the_error(tmp_path):
    message = role_failure(tmp_path, "parsec", stub_parsec_vars(tmp_path, ["bodytrack"]))
    assert message == (
        "parsec: parsecmgmt -a build -p bodytrack -c gcc-pthreads failed (Thread.h:62:24: "
        "error: ISO C++17 does not allow dynamic exception specifications); see the build "
        f"log in {tmp_path / 'parsec_install_dir' / 'log'}"
    )


@pytest.mark.timeout(120)
def test_parsec_package_without_the_configuration_names_parsec_config(tmp_path):
    variables = stub_parsec_vars(tmp_path, ["freqmine"])
    variables["parsec_package_configs"] = {}
    message = role_failure(tmp_path, "parsec", variables)
    assert message.startswith("parsec: parsec_config: pkgs/apps/freqmine/parsec/gcc-pthreads.bldconf does not exist"), (
        message
    )


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("benchmarks", "nprocs", "needs"),
    [
        (["bt"], [3], "square process counts"),
        (["sp", "ep"], [2, 8], "square process counts"),
        (["cg"], [6], "powers of two"),
        (["is", "ft", "mg"], [6, 12], "powers of two"),
    ],
)
def test_npb_process_counts_are_checked_by_name(tmp_path, benchmarks, nprocs, needs):
    playbook = role_play(
        tmp_path / "play.yml",
        "npb",
        source_vars(tmp_path, "npb", npb_benchmarks=benchmarks, npb_nprocs=nprocs),
    )
    proc = run_playbook(playbook, "--check")
    message = final_failure(proc)
    assert message.startswith(f"npb: npb_nprocs: {json.dumps(nprocs)} ("), message
    assert needs in message
    assert "TASK [source_tarball : Choose and check the source archive" not in proc.stdout


@pytest.mark.timeout(120)
def test_npb_accepts_valid_process_counts_before_fetching(tmp_path):
    unreachable = {"name": "upstream", "file": "x.tar.gz", "sha256": "0" * 64, "url": UNREACHABLE}
    message = role_failure(
        tmp_path,
        "npb",
        source_vars(
            tmp_path,
            "npb",
            npb_benchmarks=["bt", "cg", "ep"],
            npb_nprocs=[1, 4, 16],
            npb_sources=[unreachable],
            npb_required=True,
        ),
    )
    assert message.startswith("npb: no source archive: x.tar.gz"), message


@pytest.mark.timeout(120)
def test_graph500_hugepages_only_with_2_1_4(tmp_path):
    message = role_failure(
        tmp_path,
        "graph500",
        source_vars(tmp_path, "graph500", graph500_version="3.0.0", graph500_hugepages=True),
        "--check",
    )
    assert message.startswith("graph500: graph500_hugepages: true ("), message


@pytest.mark.root
@pytest.mark.timeout(600)
def test_openmpi_installs_runs_and_changes_nothing_the_second_time(tmp_path):
    playbook = role_play(tmp_path / "play.yml", "openmpi", {}, gather_facts=False)
    first = run_playbook(playbook, timeout=600)
    assert first.returncode == 0, output(first)
    second = run_playbook(playbook, timeout=600)
    assert second.returncode == 0, output(second)
    assert recap(second) == (0, 0), output(second)
    assert "openmpi: openmpi 4." in second.stdout
    mpirun = subprocess.run(
        ["mpirun", "--allow-run-as-root", "-np", "2", "hostname"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert mpirun.returncode == 0, mpirun.stdout + mpirun.stderr
    hostname = socket.gethostname()
    assert mpirun.stdout.split() == [hostname, hostname], mpirun.stdout


# site.yml includes each optional role with one task, skipped while its switch is off: PARSEC
# (no published checksum) and the kernel build by default, every upstream benchmark with
# corun_upstream_benchmarks empty. (graph500, npb and ior are built by default: make provision,
# then test_provisioning_again_changes_nothing in test_provision.py.)
SITE_INCLUDES = {
    "parsec": ([], {"Build PARSEC": "parsec"}),
    "upstream": (
        ["-e", "corun_upstream_benchmarks="],
        {
            "Build PARSEC": "parsec",
            "Build Graph500": "graph500",
            "Build the NAS Parallel Benchmarks": "npb",
            "Build IOR": "ior",
        },
    ),
    "kernel_build": ([], {"Build and install a kernel": "kernel_build"}),
}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("tag", sorted(SITE_INCLUDES))
def test_site_skips_what_is_off(tag):
    args, includes = SITE_INCLUDES[tag]
    proc = run_tool("ansible-playbook", "site.yml", "--tags", tag, *args, timeout=300, env=ansible_env())
    assert proc.returncode == 0, output(proc)
    assert recap(proc) == (0, 0), output(proc)
    for task, role in includes.items():
        result = re.search(rf"^TASK \[{re.escape(task)}\]\s*\**\n(\w+)", proc.stdout, re.MULTILINE)
        assert result, f"no task {task!r}:\n{proc.stdout}"
        assert result.group(1) == "skipping", proc.stdout
        assert f"TASK [{role} : " not in proc.stdout, proc.stdout


@pytest.mark.timeout(120)
@pytest.mark.parametrize("value", ["true", "graph500,x264", '{"corun_upstream_benchmarks": {"ior": true}}'])
def test_site_names_a_wrong_upstream_list(value):
    extra = value if value.startswith("{") else f"corun_upstream_benchmarks={value}"
    proc = run_tool(
        "ansible-playbook",
        "site.yml",
        "--tags",
        "upstream",
        "-e",
        extra,
        timeout=120,
        env=ansible_env(ANSIBLE_CALLBACK_RESULT_FORMAT="json"),
    )
    message = final_failure(proc)
    assert message.startswith("corun: corun_upstream_benchmarks: "), message
    assert "(expected a list among graph500, npb, ior and parsec" in message


@pytest.mark.timeout(120)
def test_kernel_build_disabled_only_checks_its_variables(tmp_path):
    playbook = role_play(tmp_path / "play.yml", "kernel_build", {})
    proc = run_playbook(playbook)
    assert proc.returncode == 0, output(proc)
    assert recap(proc) == (0, 0), output(proc)
    assert "kernel_build: kernel_build_enabled is false; no kernel is built" in proc.stdout


@pytest.mark.timeout(120)
@pytest.mark.parametrize("value", ["yes", "true", 1])
def test_kernel_build_reboot_ok_must_be_a_boolean(tmp_path, value):
    playbook = role_play(
        tmp_path / "play.yml",
        "kernel_build",
        {
            "kernel_build_enabled": True,
            "kernel_build_ref": "v6.6.60",
            "kernel_build_reboot_ok": value,
            "kernel_build_src_dir": str(tmp_path / "linux"),
        },
    )
    proc = run_playbook(playbook, "--check")
    message = final_failure(proc)
    assert message == (f"kernel_build: kernel_build_reboot_ok: {json.dumps(value)} (expected true or false)")
    assert "TASK [kernel_build : Install the build dependencies]" not in proc.stdout


@pytest.mark.timeout(120)
def test_kernel_build_enabled_needs_a_ref(tmp_path):
    message = role_failure(
        tmp_path,
        "kernel_build",
        {"kernel_build_enabled": True, "kernel_build_src_dir": str(tmp_path / "linux")},
        "--check",
    )
    assert message.startswith('kernel_build: kernel_build_ref: "" ('), message
