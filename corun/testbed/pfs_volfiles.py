"""The parallel file system's generated volfiles (corun.testbed.pfs): server and client graphs
of translators, the FUSE volfile, the layout the striped clients read."""

from __future__ import annotations

import dataclasses

from corun.testbed.pfs_config import BRICK_NAME, Deployment, Server
from corun.testbed.pfs_links import _link_summary
from corun.testbed.pfs_remote import AIOLI_TYPE

# ---- generated volfiles ------------------------------------------------------------------


def server_xlators(xlators: list[dict], s: Server, root: str = "/") -> list[dict]:
    """The configured server translators of server s: {dir} (the server's folder {root}/{host}),
    {host}, {index} and {root} filled in string option values; a corun/aioli translator also
    gets control-file and status-file in {dir} unless its options name them."""
    out = []
    for x in xlators:
        opts = {}
        for k, v in x.get("options", {}).items():
            if isinstance(v, str):
                v = (
                    v.replace("{dir}", s.dir)
                    .replace("{host}", s.host.name)
                    .replace("{index}", str(s.index))
                    .replace("{root}", root.rstrip("/") or "/")
                )
            opts[k] = v
        if x["type"] == AIOLI_TYPE:
            opts.setdefault("control-file", f"{s.dir}/{x['name']}.control")
            opts.setdefault("status-file", f"{s.dir}/{x['name']}.status")
        out.append({"name": x["name"], "type": x["type"], "options": opts})
    return out


def _inserted(xlators: list[dict], below: str) -> tuple[str, str]:
    """The volfile text of the (filled) server translators stacked on `below`, and the top."""
    text = ""
    for x in xlators:
        opts = "".join(
            f"    option {k} {str(v).lower() if isinstance(v, bool) else v}\n" for k, v in x.get("options", {}).items()
        )
        text += f"volume {x['name']}\n    type {x['type']}\n{opts}    subvolumes {below}\nend-volume\n\n"
        below = x["name"]
    return text, below


def server_volfile(s: Server, port: int, xlators: list[dict] | None = None, o_direct: bool = False) -> str:
    """The brick server's translator graph, bottom up. The configured server translators (a
    request scheduler) go between io-threads and the export (see docs/pfs.md). With o_direct,
    posix opens every brick file with O_DIRECT (GlusterFS 10's `option o-direct`)."""
    inserted, top = _inserted(server_xlators(xlators or [], s, s.dir.rsplit("/", 1)[0] or "/"), "corun-io-threads")
    direct = "    option o-direct on\n" if o_direct else ""
    return f"""# Written by corun/testbed/pfs.py: data server {s.index} on {s.host.name}
volume corun-posix
    type storage/posix
    option directory {s.brick}
{direct}end-volume

volume corun-locks
    type features/locks
    subvolumes corun-posix
end-volume

volume corun-io-threads
    type performance/io-threads
    subvolumes corun-locks
end-volume

{inserted}volume {BRICK_NAME}
    type debug/io-stats
    option count-fop-hits on
    option latency-measurement on
    subvolumes {top}
end-volume

volume corun-server
    type protocol/server
    option transport-type tcp
    option transport.address-family inet
    option transport.socket.bind-address {s.host.address}
    option transport.socket.listen-port {port}
    option auth.addr.{BRICK_NAME}.allow *
    subvolumes {BRICK_NAME}
end-volume
"""


def _client_xlator(name: str, s: Server, port: int) -> str:
    return f"""volume {name}
    type protocol/client
    option transport-type tcp
    option transport.address-family inet
    option remote-host {s.host.address}
    option remote-port {port}
    option remote-subvolume {BRICK_NAME}
    option ping-timeout 10
end-volume
"""


def client_volfile(s: Server, port: int) -> str:
    return f"# Written by corun/testbed/pfs.py: striped layout, data server {s.index}\n" + _client_xlator(
        f"stripe-{s.index}", s, port
    )


def fuse_volfile(fs: Deployment) -> str:
    port = fs.cfg["port"]
    parts = ["# Written by corun/testbed/pfs.py: FUSE volume (distribute + shard) for IOR\n"]
    parts += [_client_xlator(f"server-{s.index}", s, port) + "\n" for s in fs.servers]
    parts.append(
        "volume corun-dht\n    type cluster/distribute\n    subvolumes "
        + " ".join(f"server-{s.index}" for s in fs.servers)
        + "\nend-volume\n\n"
    )
    parts.append(
        f"volume corun-shard\n    type features/shard\n    option shard-block-size "
        f"{fs.cfg['fuse']['shard_block_mib']}MB\n    subvolumes corun-dht\nend-volume\n"
    )
    return "".join(parts)


def layout(fs: Deployment) -> dict:
    return {
        "client": {"name": fs.client.name, "address": fs.client.address},
        "clients": [{"name": h.name, "address": h.address} for h in fs.clients],
        "servers": [
            {
                "index": s.index,
                "name": s.host.name,
                "address": s.host.address,
                "port": fs.cfg["port"],
                "brick": s.brick,
                "backend": fs.cfg["brick"]["backend"],
                "dir": s.dir,
                "host": {k: v for k, v in dataclasses.asdict(s.host).items() if k != "vars"},
                "xlators": server_xlators(fs.cfg["server_xlators"], s, fs.cfg["root"]),
            }
            for s in fs.servers
        ],
        "strip_size_bytes": fs.cfg["strip_size_bytes"],
        "volfiles": [fs.client_volfile(s.index) for s in fs.servers],
        "client_volfiles": {h.name: [fs.client_volfile(s.index, h) for s in fs.servers] for h in fs.clients},
        "fuse_mountpoint": fs.mountpoint if fs.cfg["fuse"]["mount"] else None,
        "link": _link_summary(fs),
    }


def kernel_args(lay: dict) -> list[str]:
    """The pfs_read options that name this file system's servers and strip size."""
    args = []
    for v in lay["volfiles"]:
        args += ["--volfile", v]
    return args + ["--strip-size", str(lay["strip_size_bytes"])]
