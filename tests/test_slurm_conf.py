"""roles/slurm's slurm.conf, rendered from an inventory's facts as the role gathers them: each
node's line carries what `slurmd -C` printed on that node (sockets, cores, threads, memory),
nothing typed; one exclusive partition of every node; accounting through slurmdbd or none."""

import re
from pathlib import Path

import jinja2
import yaml

ROLE = Path(__file__).resolve().parent.parent / "roles" / "slurm"

# What `slurmd -C` prints on two nodes of different hardware (its first line).
SLURMD_C = {
    "gros-1": "NodeName=gros-1 CPUs=32 Boards=1 SocketsPerBoard=2 CoresPerSocket=8 ThreadsPerCore=2 RealMemory=257654",
    "gros-2": "NodeName=gros-2 CPUs=16 Boards=1 SocketsPerBoard=1 CoresPerSocket=16 ThreadsPerCore=1 RealMemory=128810",
}


def node_hw(line: str) -> dict:
    """The role's 'Note the node's hardware': the line's KEY=VALUE words as a mapping."""
    return dict(word.split("=", 1) for word in line.split())


def render(accounting="slurmdbd", **extra) -> str:
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    env = jinja2.Environment(trim_blocks=True, undefined=jinja2.StrictUndefined)  # Ansible's template settings
    template = env.from_string((ROLE / "templates" / "slurm.conf.j2").read_text())
    nodes = [
        {"name": hw["NodeName"], "address": f"10.0.0.{i}", "hw": hw}
        for i, hw in enumerate(map(node_hw, SLURMD_C.values()), start=11)
    ]
    values = {**defaults, "slurm_accounting": accounting, **extra}
    values |= {"__slurm_ctl": {"hostname": "gros-1", "address": "10.0.0.11"}, "__slurm_nodes": nodes}
    return template.render(values)


def test_each_node_is_described_by_what_slurmd_read_on_it():
    conf = render()
    lines = [line for line in conf.splitlines() if line.startswith("NodeName=")]
    assert lines == [
        "NodeName=gros-1 NodeAddr=10.0.0.11 CPUs=32 Boards=1 SocketsPerBoard=2 CoresPerSocket=8 ThreadsPerCore=2 "
        "RealMemory=257654 State=UNKNOWN",
        "NodeName=gros-2 NodeAddr=10.0.0.12 CPUs=16 Boards=1 SocketsPerBoard=1 CoresPerSocket=16 ThreadsPerCore=1 "
        "RealMemory=128810 State=UNKNOWN",
    ]
    assert "SlurmctldHost=gros-1(10.0.0.11)" in conf.splitlines()
    assert "ClusterName=corun" in conf.splitlines()


def test_one_exclusive_partition_of_every_node():
    parts = [line for line in render().splitlines() if line.startswith("PartitionName=")]
    assert len(parts) == 1
    assert re.search(r"\bNodes=gros-1,gros-2\b", parts[0]) and "OverSubscribe=EXCLUSIVE" in parts[0]
    assert "Default=YES" in parts[0]


def test_accounting_through_slurmdbd_or_none():
    assert "AccountingStorageType=accounting_storage/slurmdbd" in render().splitlines()
    assert "AccountingStorageHost=10.0.0.11" in render().splitlines()
    none = render("none").splitlines()
    assert "AccountingStorageType=accounting_storage/none" in none
    assert not any(line.startswith("AccountingStorageHost") for line in none)


def test_every_line_is_a_key_and_value_or_a_comment():
    for line in render().splitlines():
        assert not line or line.startswith("#") or re.fullmatch(r"[A-Za-z]+=\S+( [A-Za-z]+=\S+)*", line), line


def test_the_role_reads_the_hardware_from_slurmd_not_from_the_inventory():
    tasks = (ROLE / "tasks" / "main.yml").read_text()
    assert "argv: [slurmd, -C]" in tasks
    assert "slurm_node_hw:" in tasks and "map('split', '=', 1)" in tasks
