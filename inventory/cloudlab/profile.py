"""corun testbed: N raw PCs on one LAN, for contention-aware scheduling experiments.

Every node is a bare-metal machine (no VM: the I/O and cache contention measured is the
hardware's). The nodes share one experiment LAN (10.10.1.0/24) for MPI traffic; corun reaches
them over their control network with ssh.

Instructions:
When the experiment is ready, download its manifest (List View, or "Manifest" in the Actions
menu) and, in a corun checkout, run
`python3 inventory/cloudlab/manifest_inventory.py manifest.xml --out inventory/cloudlab.yml`,
then `make provision INVENTORY=inventory/cloudlab.yml` (docs/howto/cloudlab.md).
"""

import geni.portal as portal
import geni.rspec.pg as pg

pc = portal.Context()
pc.defineParameter(
    "node_count",
    "Number of nodes",
    portal.ParameterType.INTEGER,
    2,
    longDescription="Raw PCs to allocate, 1 or more; all join one LAN.",
)
pc.defineParameter(
    "image",
    "Disk image",
    portal.ParameterType.IMAGE,
    "urn:publicid:IDN+emulab.net+image+emulab-ops//DEB12-64-STD",
    longDescription="Debian 12, the system corun's node check accepts (corun doctor); another image "
    "fails that check before a run measures.",
)
pc.defineParameter(
    "hardware_type",
    "Hardware type",
    portal.ParameterType.NODETYPE,
    "",
    longDescription="A node type such as c220g5 or m510; empty lets the cluster choose. "
    "Keep one type so the nodes are comparable.",
)
params = pc.bindParameters()

if params.node_count < 1:
    pc.reportError(portal.ParameterError("node_count: expected an integer >= 1", ["node_count"]))
pc.verifyParameters()

request = pc.makeRequestRSpec()
lan = request.LAN("lan") if params.node_count > 1 else None
for i in range(params.node_count):
    node = request.RawPC("node%d" % i)
    node.disk_image = params.image
    if params.hardware_type:
        node.hardware_type = params.hardware_type
    if lan is not None:
        iface = node.addInterface("if%d" % i)
        iface.addAddress(pg.IPv4Address("10.10.1.%d" % (i + 1), "255.255.255.0"))
        lan.addInterface(iface)

pc.printRequestRSpec(request)
