"""sais_mark's counters (schedulers/irq_steering/sais_mark.py): summed over the interfaces,
written beside the state file, and verify's check that stamped requests got replies steered. The
programs themselves count on a veth pair in test_irq_steering_veth.py (root)."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "schedulers" / "irq_steering"))
import sais_mark  # noqa: E402
import steer  # noqa: E402


def test_sais_mark_counters_are_summed_and_verify_needs_replies_steered(tmp_path, monkeypatch):
    """verify reads the programs' counters into sais_mark_counters.json; requests stamped with no
    reply steered is a mark not in effect (it used to check only that the programs were attached)."""
    stats = {
        ("h1", "eth0"): {"stamped": 10, "recorded": 0, "reflected": 0, "steered": 0, "foreign": 1},
        ("h2", "eth0"): {"stamped": 0, "recorded": 10, "reflected": 9, "steered": 0, "foreign": 0},
    }
    status = {"xdp": 1, "tc_egress": 2, "tc_ingress": 3, "servers": 1}
    monkeypatch.setattr(sais_mark, "_status", lambda ctl, ns, iface: {**status, "stats": stats[(ns, iface)]})
    monkeypatch.setattr(sais_mark, "_tx_csum", lambda ns, iface: "off")
    monkeypatch.setattr(sais_mark, "_ctl", lambda d: (tmp_path / "ctl", tmp_path / "obj"))
    attached = [{"ns": "h2", "iface": "eth0", "role": "server"}, {"ns": "h1", "iface": "eth0", "role": "client"}]
    state = {"ctl": str(tmp_path / "ctl"), "server_addresses": ["10.0.0.2"], "attached": attached}
    (tmp_path / "s.json").write_text(json.dumps(state))
    p = {"client": [("h1", "eth0")], "server": [("h2", "eth0")]}
    args = type("Args", (), {"bpf_dir": str(tmp_path)})()
    with pytest.raises(
        steer.NotInEffect, match="10 requests stamped, 10 marks recorded, 9 reflected, no reply steered"
    ):
        sais_mark.verify_mark(args, steer.Fs("/"), p, tmp_path / "s.json")
    doc = json.loads((tmp_path / "sais_mark_counters.json").read_text())
    assert doc["totals"] == {"stamped": 10, "recorded": 10, "reflected": 9, "steered": 0, "foreign": 1}
    stats[("h1", "eth0")]["steered"] = 9
    assert sais_mark.verify_mark(args, steer.Fs("/"), p, tmp_path / "s.json") == 0
    assert json.loads((tmp_path / "sais_mark_counters.json").read_text())["totals"]["steered"] == 9
