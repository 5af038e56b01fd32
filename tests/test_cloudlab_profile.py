"""The CloudLab profile (inventory/cloudlab/profile.py) requests nodes that corun's node check
accepts: its default disk image is Debian 12. The profile runs in CloudLab's portal (geni-lib),
so its source is read, not run."""

import ast
from pathlib import Path

PROFILE = Path(__file__).resolve().parent.parent / "inventory" / "cloudlab" / "profile.py"


def parameter_default(name: str):
    for node in ast.walk(ast.parse(PROFILE.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "defineParameter":
            if isinstance(node.args[0], ast.Constant) and node.args[0].value == name:
                return ast.literal_eval(node.args[3])
    raise AssertionError(f"{PROFILE.name}: no parameter {name!r}")


def test_the_default_disk_image_is_debian_12():
    image = parameter_default("image")
    assert image.startswith("urn:publicid:IDN+emulab.net+image+emulab-ops//"), image
    assert image.rsplit("//", 1)[1].startswith("DEB12-"), image
