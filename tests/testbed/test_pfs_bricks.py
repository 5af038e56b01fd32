"""corun.testbed.pfs's brick options without a cluster: the rotating_disk backend's deployment
and its per-server disk folder, posix's O_DIRECT option in the server volfile, the disk's
configuration handed to corun.testbed.pfs_disk, and one-line errors for bad values."""

import pytest
import yaml

from corun.errors import ConfigError
from corun.testbed import pfs


def deployment(tmp_path, **brick):
    inv = tmp_path / "inv.yml"
    inv.write_text("testbed:\n  hosts:\n    c1: {ansible_host: 10.0.0.1}\n    s1: {ansible_host: 10.0.0.2}\n")
    cfg_file = tmp_path / "pfs.yaml"
    cfg_file.write_text(yaml.safe_dump({"inventory": str(inv), "servers": 1, "root": "/srv/pfs", "brick": brick}))
    cfg, source = pfs.load_config(cfg_file)
    return pfs.make_deployment(cfg, source)


def test_rotating_disk_bricks_have_a_disk_folder_beside_the_servers(tmp_path):
    p = deployment(
        tmp_path, backend="rotating_disk", size_mib=256, rotating_disk={"preset": "sas_15k_2010", "stroke": 0.1}
    )
    (s,) = p.servers
    assert s.disk == "/srv/pfs/.disks/s1" and s.image is None and s.brick == "/srv/pfs/s1/brick"
    assert not s.disk.startswith(s.dir)  # removing the server's folder never reaches a disk still up
    conf = pfs._disk_config(p.cfg)
    assert conf == {"preset": "sas_15k_2010", "stroke": 0.1, "queue_window": None, "rt_priority": 10, "model": {},
                    "host": {}, "size_bytes": 256 << 20}  # fmt: skip
    argv = pfs._disk_argv(p, "down", s.disk)
    assert argv[-5:] == ["-m", "corun.testbed.pfs_disk", "down", "--work", "/srv/pfs/.disks/s1"]
    assert argv[2] == "python3"  # not a netns cluster: the host's python3
    loop = deployment(tmp_path, backend="loop")
    assert loop.servers[0].disk is None and loop.servers[0].image == "/srv/pfs/s1/brick.img"


def test_o_direct_goes_into_posix():
    s = pfs.Server(0, pfs.inventory.Host(name="s1", address="10.0.0.2"), "/r/s1", "/r/s1/brick", "", "", "", None)
    on = pfs.server_volfile(s, 24017, [], o_direct=True)
    posix = on.split("end-volume")[0]
    assert "type storage/posix" in posix and "option o-direct on" in posix
    assert "o-direct" not in pfs.server_volfile(s, 24017, [])


@pytest.mark.parametrize(
    "brick, line",
    [
        ({"backend": "tape"}, "brick.backend: 'tape'"),
        ({"o_direct": "yes"}, "brick.o_direct: 'yes'"),
        ({"rotating_disk": {"stroke": 2}}, "brick.rotating_disk.stroke: 2"),
        ({"rotating_disk": {"queue_window": 64}}, "brick.rotating_disk.queue_window: 64"),
        ({"rotating_disk": {"heads": 4}}, "heads"),
    ],
)
def test_bad_brick_values_are_one_line(tmp_path, brick, line):
    with pytest.raises(ConfigError) as e:
        deployment(tmp_path, **brick)
    assert "\n" not in str(e.value) and line in str(e.value)
