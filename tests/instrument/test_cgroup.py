"""The cgroup I/O cap in both formats, on a fake cgroup tree (the live v1 path is in test_runner)."""

import pytest

from corun.errors import CorunError
from corun.machine import cgroup as cg


def v1_tree(tmp_path):
    b = tmp_path / "blkio"
    b.mkdir(parents=True)
    for f in cg.V1_FILES.values():
        (b / f).write_text("")
    (b / "cgroup.procs").write_text("")
    return tmp_path


def v2_tree(tmp_path):
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("")
    return tmp_path


def created(tree, tmp_path, name):
    """A run's cgroup NAME created in a fake TREE (v1_tree or v2_tree) made under TMP_PATH/r:
    (the group, the tree's root, the group's folder)."""
    root = tree(tmp_path / "r")
    g = cg.RunCgroup(name, root)
    return g, root, g.create()


def test_detect_cgroup_version_from_the_tree(tmp_path):
    assert cg.detect(v1_tree(tmp_path / "a"))[0] == "v1"
    assert cg.detect(v2_tree(tmp_path / "b"))[0] == "v2"
    (tmp_path / "c").mkdir()
    assert cg.detect(tmp_path / "c") == (None, None)


def test_v1_throttle_written_per_device(tmp_path):
    g, root, path = created(v1_tree, tmp_path, "run-1")
    assert path == root / "blkio" / "corun" / "run-1"
    g.throttle("253:0", {"read_bps": 16_000_000, "write_iops": 50})
    assert (path / "blkio.throttle.read_bps_device").read_text() == "253:0 16000000"
    assert (path / "blkio.throttle.write_iops_device").read_text() == "253:0 50"
    assert g.read_limits() == {"read_bps": 16_000_000, "write_iops": 50}


def test_v2_io_max(tmp_path):
    g, root, path = created(v2_tree, tmp_path, "run-2")
    assert (root / "cgroup.subtree_control").read_text() == "+io"
    g.throttle("8:0", {"read_bps": 1000})
    assert (path / "io.max").read_text() == "8:0 rbps=1000"
    assert g.read_limits() == {"read_bps": 1000}


def test_cap_not_in_effect_is_an_error(tmp_path, monkeypatch):
    g, _, _ = created(v1_tree, tmp_path, "run-3")
    monkeypatch.setattr(g, "read_limits", lambda: {})
    with pytest.raises(CorunError, match="not in effect"):
        g.throttle("253:0", {"read_bps": 5})


def test_no_controller_is_a_clear_error(tmp_path):
    g = cg.RunCgroup("run-4", tmp_path)
    with pytest.raises(CorunError, match="drop device.throttle"):
        g.create()
