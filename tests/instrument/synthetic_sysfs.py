"""A synthetic sysfs tree (sys/devices/system/{cpu,node}) describing any machine, for tests."""

from pathlib import Path


def cpulist(cpus):
    return ",".join(str(c) for c in sorted(cpus))


def make_sysfs(root, sockets=2, cores=4, threads=2, llc="socket", nodes_per_socket=1, caches=True):
    """Write the tree under root and return it.

    CPUs are numbered as Linux numbers Intel machines: the first thread of every core of every
    socket, then the second threads. llc: "socket" (one L3 per socket), "core" (per physical
    core) or "pairs" (one per two physical cores).
    """
    root = Path(root)
    cpu_dir = root / "sys/devices/system/cpu"
    node_dir = root / "sys/devices/system/node"
    ncores = sockets * cores
    n = ncores * threads

    def cpu_id(s, c, t):
        return t * ncores + s * cores + c

    node_cpus = {}
    for s in range(sockets):
        for c in range(cores):
            siblings = [cpu_id(s, c, t) for t in range(threads)]
            if llc == "socket":
                shared = [cpu_id(s, cc, t) for cc in range(cores) for t in range(threads)]
            elif llc == "core":
                shared = siblings
            else:
                first = c - c % 2
                shared = [cpu_id(s, cc, t) for cc in (first, first + 1) if cc < cores for t in range(threads)]
            node = s * nodes_per_socket + (c * nodes_per_socket) // cores
            for t in range(threads):
                i = cpu_id(s, c, t)
                node_cpus.setdefault(node, []).append(i)
                topo = cpu_dir / f"cpu{i}" / "topology"
                topo.mkdir(parents=True)
                (topo / "physical_package_id").write_text(f"{s}\n")
                (topo / "core_id").write_text(f"{c}\n")
                (topo / "thread_siblings_list").write_text(cpulist(siblings) + "\n")
                if not caches:
                    continue
                levels = [
                    (1, "Data", siblings),
                    (1, "Instruction", siblings),
                    (2, "Unified", siblings),
                    (3, "Unified", shared),
                ]
                for k, (lv, ty, cpus) in enumerate(levels):
                    idx = cpu_dir / f"cpu{i}" / "cache" / f"index{k}"
                    idx.mkdir(parents=True)
                    (idx / "level").write_text(f"{lv}\n")
                    (idx / "type").write_text(ty + "\n")
                    (idx / "shared_cpu_list").write_text(cpulist(cpus) + "\n")
    (cpu_dir / "online").write_text(f"0-{n - 1}\n")
    for node, cpus in node_cpus.items():
        (node_dir / f"node{node}").mkdir(parents=True)
        (node_dir / f"node{node}" / "cpulist").write_text(cpulist(cpus) + "\n")
    return root
