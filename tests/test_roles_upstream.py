"""Tests of the roles that build upstream tools: openmpi, parsec, npb's checks, kernel_build, site.yml.

Like test_provision.py, these run the venv's ansible-playbook from the repository root with
ANSIBLE_CONFIG pointing at ansible.cfg. The roles with pinned sources (graph500, npb, ior) are
built from the mirror in test_roles_pinned.py, parsec in test_roles_parsec.py. The openmpi role
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
    "parsec": ["parsec_download_dir", "parsec_install_dir", "parsec_inputs_dir"],
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


def source_vars(tmp_path, role, **extra):
    variables = {name: str(tmp_path / name) for name in DIR_VARIABLES[role]}
    # Never the machine's own manifest: corun would run the stand-in builds.
    variables[f"{role}_upstream_manifest"] = str(tmp_path / "upstream.d" / f"{role}.json")
    # No local mirror unless a test gives one (inventory/group_vars/all.yml points at ../shared/mirror).
    variables["corun_mirror"] = ""
    if role == "parsec":
        # No input archives unless a test gives them (tests/test_roles_parsec.py).
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
# when corun_upstream_benchmarks leaves it out, the kernel build by default, every upstream
# benchmark with corun_upstream_benchmarks empty. (graph500, npb, ior and parsec are built by
# default: make provision, then test_provisioning_again_changes_nothing in test_provision.py.)
SITE_INCLUDES = {
    "parsec": (["-e", "corun_upstream_benchmarks=graph500,npb,ior"], {"Build PARSEC": "parsec"}),
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
