"""corun.testbed.inventory: a static inventory is listed by ansible-inventory once, then read from
the state folder until anything it was read from changes; plugins and scripts are listed each time."""

import subprocess

import pytest

from corun.testbed import inventory as inv

INVENTORY = """\
testbed:
  hosts:
    n1: {ansible_host: 10.0.0.1}
    n2: {ansible_host: 10.0.0.2, ansible_port: 2222}
"""


@pytest.fixture
def listings(monkeypatch, tmp_path):
    """Counts the ansible-inventory calls (the real program still answers)."""
    monkeypatch.setenv("CORUN_STATE_DIR", str(tmp_path / "state"))
    calls = []
    real = subprocess.run

    def counting(argv, *a, **kw):
        if str(argv[0]).endswith("ansible-inventory"):
            calls.append(argv)
        return real(argv, *a, **kw)

    monkeypatch.setattr(inv.subprocess, "run", counting)
    return calls


def test_an_unchanged_static_inventory_is_listed_once(tmp_path, listings):
    f = tmp_path / "hosts.yml"
    f.write_text(INVENTORY)
    first = inv.load(f)
    again = inv.load(f)
    assert [h.address for h in first] == [h.address for h in again] == ["10.0.0.1", "10.0.0.2"]
    assert again[1].port == 2222
    assert len(listings) == 1


def test_a_changed_file_or_group_vars_beside_it_is_listed_again(tmp_path, listings):
    f = tmp_path / "hosts.yml"
    f.write_text(INVENTORY)
    inv.load(f)
    f.write_text(INVENTORY.replace("10.0.0.2", "10.0.0.3"))
    assert [h.address for h in inv.load(f)] == ["10.0.0.1", "10.0.0.3"]
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "testbed.yml").write_text("ansible_user: alice\n")
    assert {h.user for h in inv.load(f)} == {"alice"}
    assert len(listings) == 3


def test_a_plugin_or_a_script_is_listed_every_time(tmp_path, listings):
    plugin = tmp_path / "hosts.yml"
    plugin.write_text("plugin: ansible.builtin.constructed\n")
    assert inv._listing_key(plugin) is None
    script = tmp_path / "hosts.sh"
    script.write_text('#!/bin/sh\necho \'{"testbed": {"hosts": ["n1"]}, "_meta": {"hostvars": {}}}\'\n')
    script.chmod(0o755)
    assert [h.name for h in inv.load(script)] == ["n1"]
    assert [h.name for h in inv.load(script)] == ["n1"]
    assert len(listings) == 2


def test_a_damaged_kept_listing_is_listed_again(tmp_path, listings):
    f = tmp_path / "hosts.yml"
    f.write_text(INVENTORY)
    inv.load(f)
    kept = next((tmp_path / "state" / "inventory").glob("*.json"))
    kept.write_text("{not json")
    assert len(inv.load(f)) == 2
    assert len(listings) == 2


def test_hosts_from_an_inventory_may_name_some_of_its_hosts(listings, tmp_path):
    """`hosts: {from_inventory, names}`: those hosts of the group, in that order (one node of a
    testbed for the single-machine experiments); a name the group lacks is one line."""
    path = tmp_path / "inv.yml"
    path.write_text(INVENTORY)
    assert [h.name for h in inv.resolve({"from_inventory": str(path)})] == ["n1", "n2"]
    assert [h.name for h in inv.resolve({"from_inventory": str(path), "names": ["n2"]}, "t.yaml")] == ["n2"]
    with pytest.raises(inv.ConfigError) as exc:
        inv.resolve({"from_inventory": str(path), "names": ["n3"]}, "t.yaml")
    assert str(exc.value) == "t.yaml: hosts.names: 'n3' (expected a host of the inventory's group: n1, n2)"


def test_an_inventory_no_plugin_parses_says_why(tmp_path, listings):
    """Ansible only warns about a source it cannot parse and lists an empty inventory; corun says
    the parser's reason in one line, not "expected a group with hosts"."""
    from corun.errors import ConfigError

    f = tmp_path / "hosts.ini"
    f.write_text("[testbed\nnode1 ansible_host=10.0.0.1\n")
    with pytest.raises(ConfigError) as ei:
        inv.load(f)
    msg = str(ei.value)
    assert "\n" not in msg and "expected an inventory ansible-inventory can read (" in msg, msg
    assert "group with hosts" not in msg and "not enough values to unpack" in msg, msg
