"""The emulated disk's image cache: which contents it keeps and which images it evicts
(corun.machine.rotating_disk: _seen_before, evict_images). No root: plain files."""

from __future__ import annotations

import os

from corun.machine import rotating_disk as rd


def test_a_content_is_kept_from_its_second_build(tmp_path):
    d = tmp_path / "images"
    (d).mkdir()
    (d / ".k.123.tmp").write_bytes(b"partial")  # a save cut short
    assert rd._seen_before(d, "k") is False
    assert not (d / ".k.123.tmp").exists()
    assert rd._seen_before(d, "k") is True
    assert rd._seen_before(d, "other") is False


def image(d, name, size, age):
    f = d / f"{name}.img"
    with open(f, "wb") as fh:
        fh.write(b"\1" * size)
    (d / f"{name}.json").write_text("{}")
    t = 1_000_000 + age
    os.utime(f, (t, t))
    return f


def test_the_least_recently_used_go_beyond_the_count_or_the_bytes(tmp_path):
    d = tmp_path
    for i, name in enumerate(["old", "mid", "new"]):
        image(d, name, 64 << 10, i)
    assert rd.evict_images(d, most=2, budget=1 << 30) == ["old.img"]
    assert sorted(f.name for f in d.iterdir()) == ["mid.img", "mid.json", "new.img", "new.json"]
    # bytes: one image of 64 KiB fits in 100 KiB, not two: the older goes
    image(d, "older", 64 << 10, -5)
    assert rd.evict_images(d, most=10, budget=100 << 10) == ["mid.img", "older.img"]
    assert [f.name for f in d.glob("*.img")] == ["new.img"]
    # the image just kept stays, even alone beyond the bytes
    assert rd.evict_images(d, keep="new.img", most=10, budget=1 << 10) == []
    assert rd.evict_images(d, most=10, budget=1 << 10) == ["new.img"]
