"""corun.machine.host.physical_nics: the NICs of the run's network namespace with interrupts of
their own, on fake /sys and /proc trees (a virtio NIC, a PCI NIC, veth, lo, a bridge)."""

import os

from corun.machine import host

INTERRUPTS = """           CPU0       CPU1
 26:          0          8  IO-APIC   4-edge      ttyS0
 37:          0          0 PCI-MSIX-0000:00:03.0   0-edge      virtio2-config
 38:          0       5147 PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0
 39:       3818          0 PCI-MSIX-0000:00:03.0   2-edge      virtio2-output.0
 52:        100          0 PCI-MSI 524288-edge      enp1s0-TxRx-0
NMI:          0          0   Non-maskable interrupts
LOC:     107573      87000   Local timer interrupts
"""


def netdev(*names):
    head = "Inter-|   Receive  |  Transmit\n face |bytes    packets|bytes    packets\n"
    return head + "".join(f"  {n}:       0       0        0       0\n" for n in names)


def iface(root, name, ifindex, device=None):
    """/sys/class/net/NAME (a directory, as sysfs shows it) with its ifindex and, for a device,
    a `device` link to DEVICE under sys/devices."""
    d = root / "sys/class/net" / name
    d.mkdir(parents=True)
    (d / "ifindex").write_text(f"{ifindex}\n")
    if device:
        target = root / "sys/devices" / device
        target.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(target, d), d / "device")
    return d


def msi(root, device, *irqs):
    d = root / "sys/devices" / device / "msi_irqs"
    d.mkdir(parents=True, exist_ok=True)
    for i in irqs:
        (d / str(i)).write_text("msix\n")


def machine(tmp_path, names, interrupts=INTERRUPTS):
    (tmp_path / "proc/net").mkdir(parents=True)
    (tmp_path / "proc/net/dev").write_text(netdev(*names))
    (tmp_path / "proc/interrupts").write_text(interrupts)
    return tmp_path


INDEX = {"lo": 1, "eth0": 2, "enp1s0": 3, "veth0": 4, "br0": 5}


def test_a_virtio_nic_has_its_pci_functions_interrupts(tmp_path):
    root = machine(tmp_path, ["lo", "eth0"])
    iface(root, "lo", 1)
    iface(root, "eth0", 2, "pci0000:00/0000:00:03.0/virtio2")
    msi(root, "pci0000:00/0000:00:03.0", 37, 38, 39)
    assert host.physical_nics(root, INDEX.get) == [{"name": "eth0", "device": "virtio2", "irqs": [37, 38, 39]}]


def test_a_pci_nic_with_a_legacy_line_or_msi(tmp_path):
    root = machine(tmp_path, ["enp1s0"])
    iface(root, "enp1s0", 3, "pci0000:00/0000:01:00.0")
    msi(root, "pci0000:00/0000:01:00.0", 52)
    (root / "sys/devices/pci0000:00/0000:01:00.0/irq").write_text("26\n")
    assert host.physical_nics(root, INDEX.get)[0]["irqs"] == [26, 52]


def test_veth_lo_and_bridges_are_no_nics(tmp_path):
    # a node of the emulated testbed: a namespace of veth links
    root = machine(tmp_path, ["lo", "veth0", "br0"])
    for name in ("lo", "veth0", "br0"):
        iface(root, name, INDEX[name])
    assert host.physical_nics(root, INDEX.get) == []


def test_a_device_whose_interrupts_are_not_listed_is_no_nic(tmp_path):
    root = machine(tmp_path, ["eth0"], interrupts="           CPU0\nLOC:  1  Local timer interrupts\n")
    iface(root, "eth0", 2, "pci0000:00/0000:00:03.0/virtio2")
    msi(root, "pci0000:00/0000:00:03.0", 37)
    assert host.physical_nics(root, INDEX.get) == []


def test_only_the_namespaces_interfaces_count(tmp_path):
    # sysfs mounted in the initial namespace still shows its eth0; this namespace has lo only
    root = machine(tmp_path, ["lo"])
    iface(root, "lo", 1)
    iface(root, "eth0", 2, "pci0000:00/0000:00:03.0/virtio2")
    msi(root, "pci0000:00/0000:00:03.0", 37)
    assert host.physical_nics(root, INDEX.get) == []


def test_another_namespaces_interface_of_the_same_name_is_left_out(tmp_path):
    # this namespace's eth0 is a veth (ifindex 9); sysfs shows the initial namespace's eth0
    root = machine(tmp_path, ["eth0"])
    iface(root, "eth0", 2, "pci0000:00/0000:00:03.0/virtio2")
    msi(root, "pci0000:00/0000:00:03.0", 37)
    assert host.physical_nics(root, {"eth0": 9}.get) == []


def test_no_proc_no_nics(tmp_path):
    assert host.physical_nics(tmp_path, INDEX.get) == []


def test_every_run_records_its_nics():
    state = host.host_state()
    assert isinstance(state["physical_nics"], list)
    assert all({"name", "device", "irqs"} <= set(n) and n["irqs"] for n in state["physical_nics"])


def links(table):
    """An `ip -d -j link` stand-in: (namespace, name) -> the link's JSON object or an error text."""
    return lambda ns, name: table.get((ns, name), f'Cannot find device "{name}"')


def test_the_steered_interfaces_are_traced_to_their_devices(tmp_path):
    root = machine(tmp_path, ["eth0"])
    dev = root / "sys/devices/pci0000:00/0000:00:03.0/virtio2"
    dev.mkdir(parents=True)
    msi(root, "pci0000:00/0000:00:03.0", 37, 38)
    (root / "sys/bus/virtio/devices").mkdir(parents=True)
    os.symlink(os.path.relpath(dev, root / "sys/bus/virtio/devices"), root / "sys/bus/virtio/devices/virtio2")
    ip = links(
        {
            (None, "eth0"): {"ifname": "eth0", "parentbus": "virtio", "parentdev": "virtio2"},
            ("sais-n1", "eth0"): {"ifname": "eth0", "linkinfo": {"info_kind": "veth"}},
            (None, "lo"): {"ifname": "lo"},
        }
    )
    got = host.steered_nics("eth0, sais-n1/eth0,lo,sais-n9/eth0", root, ip)
    assert got[0] == {"name": "eth0", "kind": "physical", "device": "virtio2", "irqs": [37, 38]}
    assert got[1] == {"name": "sais-n1/eth0", "kind": "veth", "device": None, "irqs": []}
    assert got[2]["kind"] == "virtual" and got[2]["irqs"] == []
    assert got[3]["kind"] is None and "Cannot find device" in got[3]["error"]


def test_this_machines_loopback_is_no_nic():
    assert host.steered_nics("lo") == [{"name": "lo", "kind": "virtual", "device": None, "irqs": []}]
