"""Tests of corun's Ansible side: lint, syntax, idempotent provisioning, role input checks.

These run the venv's ansible-lint and ansible-playbook (found beside sys.executable) from the
repository root, so ansible.cfg and inventory/local are used.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
RECAP = re.compile(r"^localhost\s*:.*\bchanged=(\d+).*\bfailed=(\d+)", re.MULTILINE)
# A failed result with ANSIBLE_CALLBACK_RESULT_FORMAT=json: "fatal: [localhost]: FAILED! => {...}".
FAILED_RESULT = re.compile(r"^(?:fatal|failed): \[localhost\].*? => (\{.*\})$", re.MULTILINE)


def ansible_env(**extra):
    env = dict(os.environ)
    env.update(
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        PY_COLORS="0",
        NO_COLOR="1",
        **extra,
    )
    return env


def run_tool(name, *args, cwd=REPO, timeout=900, env=None):
    tool = BIN / name
    assert tool.is_file(), f"{tool} is missing: run make setup"
    return subprocess.run(
        [str(tool), *args],
        cwd=cwd,
        env=env or ansible_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def output(proc):
    return proc.stdout + proc.stderr


@pytest.mark.timeout(600)
def test_ansible_lint_production_profile_passes():
    proc = run_tool("ansible-lint")
    assert proc.returncode == 0, output(proc)
    assert "Profile 'production' was required, and it passed" in output(proc)


@pytest.mark.timeout(120)
def test_site_syntax_check():
    proc = run_tool("ansible-playbook", "site.yml", "--syntax-check")
    assert proc.returncode == 0, output(proc)


@pytest.mark.root
@pytest.mark.timeout(600)
def test_provisioning_again_changes_nothing():
    """A provisioning run on a provisioned machine reports changed=0.

    make test provisions first (make provision), so this run is the second one. Run directly
    on a fresh machine, or after editing a role, it fails until the machine is provisioned.
    """
    proc = run_tool("ansible-playbook", "site.yml")
    assert proc.returncode == 0, output(proc)
    recap = RECAP.search(proc.stdout)
    assert recap, f"no PLAY RECAP line for localhost:\n{output(proc)}"
    changed, failed = map(int, recap.groups())
    assert (changed, failed) == (0, 0), (
        "a provisioning run changed something (provision first: make provision):\n" + output(proc)
    )


# One wrong value per role and variable; each must stop the role, naming the variable, before
# anything is installed or built.
WRONG_VALUES = [
    ("common", "common_packages", 5),
    ("common", "common_extra_packages", "jq,git"),
    ("sysstat", "sysstat_package", ["sysstat"]),
    ("perf", "perf_event_paranoid", "abc"),
    ("perf", "perf_event_paranoid", 5),
    ("perf", "perf_package", {"name": "linux-perf"}),
    ("perf", "perf_sysctl_file", "sysctl.d/90-corun-perf.conf"),
    ("fio", "fio_package", 5),
    ("irq_steering", "irq_steering_packages", "irqbalance"),
    ("corun_kernels", "corun_kernels_src_dir", 5),
    ("corun_kernels", "corun_kernels_make_target", ["all"]),
    ("corun_schedulers", "corun_schedulers_src_dir", "relative/path"),
    ("corun_schedulers", "corun_schedulers_data_dir", ["results"]),
    ("corun_schedulers", "corun_schedulers_required_elevators", "mq-deadline"),
    ("corun_schedulers", "corun_schedulers_optional_elevators", 5),
    ("openmpi", "openmpi_implementation", "lam"),
    ("openmpi", "openmpi_implementation", ["openmpi"]),
    ("parsec", "parsec_version", 3.0),
    ("parsec", "parsec_sources", [{"name": "upstream", "file": "parsec-3.0.tar.gz", "sha256": "abc"}]),
    ("parsec", "parsec_inputs", ["huge"]),
    ("parsec", "corun_mirror", "mirror"),
    ("parsec", "parsec_packages", "x264"),
    ("parsec", "parsec_packages", ["x264", "blackscholes"]),
    ("parsec", "parsec_install_dir", "opt/parsec"),
    ("parsec", "parsec_make_jobs", "2"),
    ("graph500", "graph500_version", "2.1"),
    ("graph500", "graph500_sources", "graph500-2.1.4.tar.gz"),
    ("graph500", "graph500_version", "2.2.0"),
    ("graph500", "graph500_required", "yes"),
    ("graph500", "corun_mirror", "../shared/mirror"),
    ("graph500", "graph500_hugepages", "yes"),
    ("graph500", "graph500_download_timeout", "60"),
    ("graph500", "graph500_install_dir", "opt/graph500"),
    ("npb", "npb_version", "2.4"),
    ("npb", "npb_benchmarks", ["bt", "xx"]),
    ("npb", "npb_classes", "A"),
    ("npb", "npb_classes", ["A", "Z"]),
    ("npb", "npb_sources", [{"name": "upstream", "file": "NPB3.3.1.tar.gz", "sha256": "abc"}]),
    ("npb", "npb_nprocs", "4"),
    ("npb", "npb_nprocs", [True]),
    ("npb", "npb_fflags", ["-O3"]),
    ("ior", "ior_version", 4),
    ("ior", "ior_sources", []),
    ("ior", "ior_version", "4.0.1"),
    ("ior", "ior_required", 1),
    ("ior", "ior_configure_args", "--with-mpiio"),
    ("ior", "ior_configure_args", ["--prefix=/usr"]),
    ("parsec", "parsec_upstream_manifest", "upstream.d/parsec.json"),
    ("graph500", "graph500_upstream_manifest", 5),
    ("npb", "npb_upstream_manifest", "npb.json"),
    ("ior", "ior_upstream_manifest", ["/var/lib/corun/upstream.d/ior.json"]),
    ("kernel_build", "kernel_build_enabled", "false"),
    ("kernel_build", "kernel_build_reboot_ok", "yes"),
    ("kernel_build", "kernel_build_git_depth", -1),
    ("kernel_build", "kernel_build_config_fragment", ["CONFIG_BFQ_GROUP_IOSCHED"]),
    ("kernel_build", "kernel_build_config_fragment", "CONFIG_BFQ_GROUP_IOSCHED=y"),
    ("kernel_build", "kernel_build_patches", "fix.patch"),
    ("kernel_build", "kernel_build_method", "rpm-pkg"),
    ("kernel_build", "kernel_build_src_dir", "src/linux"),
    ("glusterfs", "glusterfs_packages", "glusterfs-server"),
    ("glusterfs", "glusterfs_packages", ["Bad Name"]),
    ("glusterfs", "glusterfs_glusterd_enabled", "no"),
    ("slurm", "slurm_accounting", "filetxt"),
    ("slurm", "slurm_verify_timeout_s", "60"),
]


def write_playbook(path, role, variable, value):
    # JSON is YAML, and keeps the value's type exactly.
    play = [
        {
            "name": f"Apply {role} with one wrong variable",
            "hosts": "testbed",
            "gather_facts": False,
            "roles": [{"role": role, "vars": {variable: value}}],
        }
    ]
    path.write_text(json.dumps(play, indent=2) + "\n")


def failure_messages(stdout):
    """The msg of every failed task result, from the default callback's one-line JSON results."""
    return [json.loads(result).get("msg", "") for result in FAILED_RESULT.findall(stdout)]


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("role", "variable", "value"),
    WRONG_VALUES,
    ids=[f"{r}-{v}-{type(x).__name__}" for r, v, x in WRONG_VALUES],
)
def test_wrong_variable_is_rejected_by_name(tmp_path, role, variable, value):
    playbook = tmp_path / "wrong.yml"
    write_playbook(playbook, role, variable, value)
    proc = run_tool(
        "ansible-playbook",
        "--check",
        "-i",
        str(REPO / "inventory" / "local"),
        str(playbook),
        timeout=120,
        env=ansible_env(ANSIBLE_CALLBACK_RESULT_FORMAT="json"),
    )
    assert proc.returncode != 0, output(proc)
    messages = failure_messages(proc.stdout)
    assert messages, output(proc)
    assert all(variable in message for message in messages), output(proc)


@pytest.mark.timeout(120)
def test_task_times_prints_the_time_per_role_and_the_slowest_tasks(tmp_path):
    """ANSIBLE_CALLBACKS_ENABLED=task_times: where a provisioning run's time went."""
    tasks = tmp_path / "roles" / "slow_demo" / "tasks"
    tasks.mkdir(parents=True)
    (tasks / "main.yml").write_text(
        "- name: Sleep a while\n  ansible.builtin.command: sleep 0.6\n  changed_when: false\n"
        "- name: Sleep a moment\n  ansible.builtin.command: sleep 0.1\n  changed_when: false\n"
    )
    play = tmp_path / "play.yml"
    play.write_text("- hosts: all\n  gather_facts: false\n  roles: [slow_demo]\n")
    env = ansible_env(ANSIBLE_CALLBACKS_ENABLED="task_times", ANSIBLE_ROLES_PATH=str(tmp_path / "roles"))
    interp = f"ansible_python_interpreter={sys.executable}"
    proc = run_tool(
        "ansible-playbook", "-i", "localhost,", "-c", "local", "-e", interp, str(play), env=env, timeout=100
    )
    assert proc.returncode == 0, output(proc)
    roles = re.search(r"task_times: [\d.]+ s in all; per role \(s\):\n((?:  .*\n)+)", proc.stdout)
    assert roles, output(proc)
    per_role = {line.split()[1]: float(line.split()[0]) for line in roles.group(1).splitlines()}
    assert per_role["slow_demo"] >= 0.7, per_role
    slow = re.search(r"slowest tasks \(s\):\n  +([\d.]+)  slow_demo : Sleep a while\n", proc.stdout)
    assert slow and float(slow.group(1)) >= 0.6, output(proc)
