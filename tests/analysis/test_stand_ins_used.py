"""A row names the declared stand-ins its runs used (analysis.stand_ins), read from the runs'
metadata.json: the same claim names emulated_disk on runs with an emulated disk, not on runs with
a real device; a word no run records stays named."""

import pandas as pd

from analysis import stand_ins
from analysis.claims import load_claims, stand_in_words
from analysis.experiment import Inputs, Result, claim_rows
from experiments import PAPERS_DIR
from tests.analysis.claims_text import claims_header

CLAIMS = claims_header("t", "greater") + "    stand_ins: [emulated_disk, cores_as_cmps, stand_in_program]\n"


def meta(device="rotating_disk", cmps=4, sockets=1, jobs=({"binary": "debian x264", "stand_in_reason": "r"},)):
    return {
        "device_kind": device,
        "topology": {"cmps": [[i] for i in range(cmps)], "sockets": sockets},
        "spec": {"jobs": [{"labels": dict(j)} for j in jobs]},
    }


def rows_on(tmp_path, metas: dict, claims: str = CLAIMS) -> dict:
    p = tmp_path / "claims.yaml"
    p.write_text(claims)
    cs = load_claims(p, "e", PAPERS_DIR, shown="experiments/e/claims.yaml")
    table = pd.DataFrame(
        [
            {"run_id": rid, "p": side, "rep": rep, "t": 10.0 + (side == "a") * (1 + rep / 100)}
            for rep, rid in enumerate(metas)
            for side in ("a", "b")
        ]  # fmt: skip
    )
    table["run_id"] = [f"{r}" for r in metas for _ in ("a", "b")]
    inputs = Inputs("e", pd.DataFrame(), pd.DataFrame(), tmp_path / "runs.csv", [], metas, {}, cs)
    return claim_rows(inputs, Result([], {"runs": table}))[0]


def test_an_emulated_disk_is_named_a_real_device_is_not(tmp_path):
    words = stand_in_words()
    emulated = rows_on(tmp_path, {f"r{i}": meta() for i in range(8)})
    assert words["emulated_disk"] in emulated["stand_ins"] and len(emulated["stand_ins"]) == 3
    real = rows_on(tmp_path, {f"r{i}": meta(device="block") for i in range(8)})
    assert words["emulated_disk"] not in real["stand_ins"]
    assert real["stand_ins"] == [words["cores_as_cmps"], words["stand_in_program"]]
    # one run of the row on the emulated disk: the claim rests on it
    mixed = rows_on(tmp_path, {f"r{i}": meta(device="block" if i else "rotating_disk") for i in range(8)})
    assert words["emulated_disk"] in mixed["stand_ins"]


def test_each_word_from_the_runs_metadata():
    assert stand_ins.used(["emulated_disk"], [meta(device="throttle")]) == []
    # the file system's servers on emulated disks (the run's own device a real one)
    assert stand_ins.used(["emulated_disk"], [{**meta(device="throttle"), "labels": {"disk": "rotating_disk"}}])
    assert stand_ins.used(["cores_as_cmps"], [meta(cmps=2, sockets=2)]) == []
    upstream = meta(jobs=[{"binary": "PARSEC 3.0 x264", "stands_in_for": "PARSEC x264 simlarge"}])
    assert stand_ins.used(["stand_in_program"], [upstream]) == []
    kernel = meta(jobs=[{"binary": "corun llc_miss", "stands_in_for": "mcf_r"}])
    assert stand_ins.used(["stand_in_program"], [kernel]) == ["stand_in_program"]
    real_hosts = {"cluster": {"hosts": [{"name": "n1", "shared_machine": False}]}}
    netns = {"cluster": {"hosts": [{"name": "n1", "shared_machine": True}]}}
    assert stand_ins.used(["netns_links"], [real_hosts]) == []
    assert stand_ins.used(["netns_links"], [netns]) == ["netns_links"]
    assert stand_ins.used(["memory_cap"], [{"memory_cap": None}]) == []
    pmem = {"spec": {"jobs": [{"labels": {"binary": "fio mmap", "stands_in_for": "fio on persistent memory (DAX)",
                                          "io_medium": "memory (/dev/shm)"}}]}}  # fmt: skip
    assert stand_ins.used(["tmpfs_pmem"], [pmem]) == ["tmpfs_pmem"]


def pfs_run(*netns: bool) -> dict:
    """A file-system group's run (corun.testbed.pfs_runs) on hosts that are network namespaces
    of the machine (True) or hosts of their own (False)."""
    hosts = [{"name": f"n{i}", "roles": ["client" if i == 0 else "server"], "netns": n} for i, n in enumerate(netns)]
    return {**meta(device="throttle"), "pfs_group": {"group": "g", "cluster": "inventory", "hosts": hosts}}


def test_netns_links_is_named_on_a_netns_cluster_not_on_a_real_testbed(tmp_path):
    words = stand_in_words()
    claims = claims_header("t", "greater") + "    stand_ins: [striped_pfs, netns_links]\n"
    netns = rows_on(tmp_path, {f"r{i}": pfs_run(True, True, True) for i in range(8)}, claims)
    assert netns["stand_ins"] == [words["striped_pfs"], words["netns_links"]]
    real = rows_on(tmp_path, {f"r{i}": pfs_run(False, False, False) for i in range(8)}, claims)
    assert real["stand_ins"] == [words["striped_pfs"]]
    assert stand_ins.netns_links(pfs_run(False, True)) is True  # one host a namespace: veth links
    assert stand_ins.netns_links({"pfs_group": {"hosts": [{"name": "n0"}]}}) is None
    assert stand_ins.netns_links(meta()) is None  # an older run, which did not record its hosts


def test_a_word_no_run_records_stays_named():
    # no cluster recorded, a word corun has no other way to run, no runs at all
    assert stand_ins.used(["netns_links", "striped_pfs"], [{"cluster": None}]) == ["netns_links", "striped_pfs"]
    assert stand_ins.used(["emulated_disk"], []) == ["emulated_disk"]
