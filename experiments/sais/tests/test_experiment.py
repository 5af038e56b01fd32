"""The sais experiment plugin: config checks (one line each), its groups, run order and specs."""

import functools
import json

import pytest
import yaml

from corun.util import repo_root
from experiments.config import profile_config, validate_config
from experiments.sais import experiment as sais
from tests import experiment_helpers

cfg_with = functools.partial(experiment_helpers.cfg_with, "sais")


@pytest.mark.parametrize(
    "section, line",
    [
        ({"policies": ["spread", "source_aware"]}, "sais.policies: ['spread', 'source_aware'] (expected a list"),
        ({"policies": ["irqbalance", "rfs"]}, "sais.policies[1]: 'rfs'"),
        ({"servers": [0]}, "sais.servers[0]: 0"),
        ({"transfer_sizes_bytes": [100000], "file_mib": 1}, "sizes_bytes[0]: 100000 (expected a multiple of 8"),
        ({"policy_params": {"dedicated": {"cpu": 1}}}, "policy_params.dedicated: 'dedicated' (expected a policy"),
        ({"policies": ["irqbalance", "dedicated"], "policy_params": {"dedicated": {"cpu": -1}}}, "dedicated.cpu: -1"),
        ({"cluster": {"prefix": "sais-x"}}, "sais.cluster.prefix: 'sais-x'"),
        ({"cluster": {"kind": "inventory"}}, "sais.cluster.inventory: None (expected an inventory (kind inventory))"),
        ({"pm": {"request_size_bytes": 100000}}, "sais.pm.request_size_bytes: 100000 (expected a multiple of 65536)"),
        ({"speed": 1}, "speed"),
        # the gain's 1 % is the claims' null in claims.yaml, no longer a key of the configuration
        ({"min_speedup_pct": 1.0}, "min_speedup_pct"),
        ({"reps": 3, "max_reps": 2}, "sais.max_reps: 2 (expected an integer >= sais.reps (3))"),
        ({"client_hosts": [0]}, "sais.client_hosts[0]: 0 (expected an integer >= 1)"),
        ({"l2_events": {"misses": "l2_rqsts.miss", "hits": "x"}}, "hits"),
    ],
)  # fmt: skip
def test_bad_config_is_one_line_naming_key_value_and_expectation(section, line):
    msg = experiment_helpers.config_error("sais", section)
    assert "\n" not in msg and msg.startswith("test.yaml: ") and line in msg


def test_local_profile_caps_the_sequential_design():
    raw = profile_config(repo_root() / "workflows" / "config" / "local.yaml")
    sec = validate_config(raw, "local.yaml")["sais"]
    assert sec["reps"] == 3 and sec["max_reps"] == 9


def test_groups_and_run_order_interleave_reps():
    cfg = cfg_with({"policies": ["irqbalance", "source_aware", "spread"], "servers": [2, 4], "reps": 2})
    sec = cfg["sais"]
    runs = sais.EXPERIMENT.group_runs(cfg)
    assert list(runs) == ["s2_l1", "s4_l1"]
    g = runs["s2_l1"]
    assert len(g) == 3 * 2 * 2  # policies x default transfer sizes x reps
    assert all(n.endswith("_r0") for n in g[:6]) and all(n.endswith("_r1") for n in g[6:])
    assert sais.points(sec, 2, 1) == sais.points(sec, 2, 1)  # same seed, same order
    names = sais.EXPERIMENT.run_names(cfg)
    assert names[-4:] == ["pm_thread_r0", "pm_process_r0", "pm_thread_r1", "pm_process_r1"]
    est = sais.EXPERIMENT.estimate(cfg)
    assert est["runs"] == len(names) and est["seconds"] > 0


def test_specs_on_the_netns_cluster(tmp_path):
    cfg = cfg_with(
        {
            "policies": ["irqbalance", "sais_mark"],
            "servers": [2],
            "transfer_sizes_bytes": [131072],
            "clients": [2],
            "reps": 1,
        }
    )
    n = sais.EXPERIMENT.specs(cfg, {}, tmp_path / "data", tmp_path / "specs")
    assert n == 2 + 2
    spec = yaml.safe_load((tmp_path / "specs" / "s2_l1_sais_mark_t128k_c2_r0.yaml").read_text())
    assert [j["name"] for j in spec["jobs"]] == ["client-0", "client-1"]
    cmd = spec["jobs"][0]["cmd"]
    assert cmd[:4] == ["ip", "netns", "exec", "sais-n1"] and cmd[4].endswith("kernels/build/pfs_read")
    assert cmd[cmd.index("--transfer-size") + 1] == "131072" and "--read" in cmd
    vol = str((tmp_path / "data" / "pfs" / "sais-n1" / "client" / "stripe-1.vol").resolve())
    assert vol in cmd
    assert spec["scheduler"] == {
        "name": "sais_mark",
        "params": {"interfaces": "sais-n1/eth0", "server_interfaces": "sais-n2/eth0,sais-n3/eth0"},
    }
    assert spec["labels"]["policy"] == "sais_mark" and spec["labels"]["reader"] == "pfs_read"
    # pfs_read stands in for the paper's IOR, and every reading job says so
    labels = spec["jobs"][0]["labels"]
    assert labels["binary"] == "corun pfs_read"
    assert labels["stands_in_for"] == "IOR -a POSIX -r -t 131072 -b 268435456 on PVFS2 (64 KiB strips)"
    assert "cpustat" in spec["monitors"]["enabled"]
    groups = json.loads((tmp_path / "specs" / "groups.json").read_text())["groups"]
    (g,) = groups
    assert g["cluster"] == {
        "kind": "netns",
        "prefix": "sais",
        "subnet": "10.78.0.0/24",
        "hosts": 3,
        "client": "sais-n1",
    }
    assert g["pfs"]["servers"] == 2 and g["pfs"]["link"]["client_links"] == 1 and g["pfs"]["port"] == 24019
    assert g["pfs"]["state_dir"] == str((tmp_path / "work" / "s2_l1" / "pfs").resolve())
    assert "--write" in g["write_cmd"] and g["volfiles"][1] == vol
    pm = yaml.safe_load((tmp_path / "specs" / "pm_process_r0.yaml").read_text())
    assert pm["jobs"][0]["cmd"][1:3] == ["--mode", "process"] and pm["labels"]["kind"] == "pm"
    # the in-memory study's runs are counted by perf as the read runs are (its L2 miss rate)
    assert pm["labels"]["apps"] == 1 and pm["monitors"]["enabled"] == ["perf"]
    assert pm["monitors"]["perf_events"] == spec["monitors"]["perf_events"] == ["cycles", "cache-misses"]


def test_pm_runs_per_application_count(tmp_path):
    """One application's runs keep their names (the model's P and M); more are the saturated point."""
    cfg = cfg_with({"policies": ["irqbalance"], "servers": [2], "reps": 2, "pm": {"apps": [1, 2]}})
    names = sais.EXPERIMENT.run_names(cfg)
    assert names[-8:] == ["pm_thread_r0", "pm_process_r0", "pm_thread_r1", "pm_process_r1", "pm_thread_a2_r0",
                          "pm_process_a2_r0", "pm_thread_a2_r1", "pm_process_a2_r1"]  # fmt: skip
    sais.EXPERIMENT.specs(cfg, {}, tmp_path / "data", tmp_path / "specs")
    pm = yaml.safe_load((tmp_path / "specs" / "pm_process_a2_r1.yaml").read_text())
    cmd = pm["jobs"][0]["cmd"]
    assert cmd[cmd.index("--apps") + 1] == "2" and pm["labels"]["apps"] == 2 and pm["labels"]["rep"] == 1
    assert pm["name"] == "sais-pm_process_a2_r1"


@pytest.mark.parametrize("intervals, reps_1gbe, reps_3gbe", [(2, 2, 6), (0, 1, 1), (1, 1, 3)])
def test_read_runs_last_the_monitor_intervals_their_figures_need(tmp_path, intervals, reps_1gbe, reps_3gbe):
    """64 MiB at the 1 GbE cap reads in 0.54 s, at 3 x 1 GbE in 0.18 s: fewer than two intervals of
    0.5 s for cpustat and perf; the file is read again until a run lasts them (0: as given)."""
    cfg = cfg_with({"policies": ["irqbalance"], "servers": [4], "client_links": [1, 3], "reps": 1, "file_mib": 64,
                    "monitor_interval_s": 0.5, "min_read_intervals": intervals})  # fmt: skip
    sais.EXPERIMENT.specs(cfg, {}, tmp_path / "data", tmp_path / "specs")
    for links, want in ((1, reps_1gbe), (3, reps_3gbe)):
        spec = yaml.safe_load((tmp_path / "specs" / f"s4_l{links}_irqbalance_t1024k_c1_r0.yaml").read_text())
        cmd = spec["jobs"][0]["cmd"]
        flag = "--repetitions" if "--repetitions" in cmd else "-i"
        assert cmd[cmd.index(flag) + 1] == str(want) and spec["labels"]["read_repetitions"] == want


def test_the_l2_events_of_the_miss_rate_are_counted(tmp_path):
    """The paper's L2 figure is misses / accesses: both events of sais.l2_events go to perf."""
    l2 = {"misses": "l2_rqsts.miss", "accesses": "l2_rqsts.references"}
    cfg = cfg_with({"policies": ["irqbalance"], "servers": [2], "reps": 1, "l2_events": l2, "monitors": ["cpustat"]})
    sais.EXPERIMENT.specs(cfg, {}, tmp_path / "data", tmp_path / "specs")
    spec = yaml.safe_load((tmp_path / "specs" / "s2_l1_irqbalance_t1024k_c1_r0.yaml").read_text())
    assert spec["monitors"]["perf_events"] == ["cycles", "cache-misses", "l2_rqsts.miss", "l2_rqsts.references"]
    pm = yaml.safe_load((tmp_path / "specs" / "pm_thread_r0.yaml").read_text())
    assert pm["monitors"]["enabled"] == []  # no perf among the monitors: none for the pm runs either


def test_specs_with_several_client_hosts(tmp_path):
    cfg = cfg_with(
        {
            "policies": ["irqbalance", "source_aware", "sais_mark"],
            "servers": [2],
            "transfer_sizes_bytes": [131072],
            "client_hosts": [1, 2],
            "reps": 1,
        }
    )
    assert list(sais.EXPERIMENT.group_runs(cfg)) == ["s2_l1", "s2_l1_h2"]  # one host: the names before
    sais.EXPERIMENT.specs(cfg, {}, tmp_path / "data", tmp_path / "specs")
    spec = yaml.safe_load((tmp_path / "specs" / "s2_l1_h2_source_aware_t128k_c1_r0.yaml").read_text())
    assert [j["name"] for j in spec["jobs"]] == ["client-h0-0", "client-h1-0"]
    for host, job in enumerate(spec["jobs"]):
        ns = f"sais-n{host + 1}"
        assert job["cmd"][:4] == ["ip", "netns", "exec", ns] and job["labels"]["client_host"] == host
        assert job["labels"]["client"] == 0 and job["labels"]["stands_in_for"].startswith("IOR ")
        vols = [job["cmd"][i + 1] for i, a in enumerate(job["cmd"]) if a == "--volfile"]
        assert vols == [str((tmp_path / "data" / "pfs" / ns / "client" / f"stripe-{i}.vol").resolve()) for i in (0, 1)]
    assert spec["labels"]["client_hosts"] == 2
    assert spec["scheduler"]["params"] == {"interfaces": "sais-n1/eth0,sais-v1,sais-n2/eth0,sais-v2"}
    mark = yaml.safe_load((tmp_path / "specs" / "s2_l1_h2_sais_mark_t128k_c1_r0.yaml").read_text())
    assert mark["scheduler"]["params"] == {  # the servers are the hosts after the clients
        "interfaces": "sais-n1/eth0,sais-n2/eth0",
        "server_interfaces": "sais-n3/eth0,sais-n4/eth0",
    }
    one = yaml.safe_load((tmp_path / "specs" / "s2_l1_sais_mark_t128k_c1_r0.yaml").read_text())
    assert one["scheduler"]["params"]["server_interfaces"] == "sais-n2/eth0,sais-n3/eth0"
    by = {g["name"]: g for g in json.loads((tmp_path / "specs" / "groups.json").read_text())["groups"]}
    g = by["s2_l1_h2"]
    assert g["cluster"]["hosts"] == 4 and g["pfs"]["client_hosts"] == 2 and g["client_hosts"] == 2
    assert list(g["client_volfiles"]) == ["sais-n1", "sais-n2"] and g["client_volfiles"]["sais-n1"] == g["volfiles"]
    assert g["pfs"]["state_dir"] == str((tmp_path / "work" / "s2_l1_h2" / "pfs").resolve())
    assert by["s2_l1"]["cluster"]["hosts"] == 3 and by["s2_l1"]["pfs"]["client_hosts"] == 1


def test_specs_on_an_inventory_need_no_netns(tmp_path):
    inv = tmp_path / "inv.yml"
    inv.write_text("testbed:\n  hosts:\n    c1: {ansible_host: 10.0.0.1}\n    s1: {ansible_host: 10.0.0.2}\n")
    cfg = cfg_with(
        {
            "servers": [1],
            "cluster": {"kind": "inventory", "inventory": str(inv), "pfs_root": "/srv/pfs", "interfaces": "ens1"},
        }
    )
    sais.EXPERIMENT.specs(cfg, {}, tmp_path / "data", tmp_path / "specs")
    spec = yaml.safe_load((tmp_path / "specs" / "s1_l1_irqbalance_t1024k_c1_r0.yaml").read_text())
    cmd = spec["jobs"][0]["cmd"]
    assert cmd[0].endswith("pfs_read") and "/srv/pfs/c1/client/stripe-0.vol" in cmd
    assert spec["scheduler"]["params"] == {"interfaces": "ens1"}
    (g,) = json.loads((tmp_path / "specs" / "groups.json").read_text())["groups"]
    assert g["cluster"]["client"] == "c1" and g["pfs"]["inventory"] == str(inv.resolve())


def test_sais_mark_on_an_inventory_is_the_clients_half_and_a_server_part_per_server(tmp_path):
    """The servers are other hosts: the client's run attaches the client's half with the servers'
    addresses; the controller attaches the servers' half on each (corun.testbed.server_parts)."""
    inv = tmp_path / "inv.yml"
    hosts = {"c1": "10.0.0.1", "s1": "10.0.0.2", "s2": "10.0.0.3", "s3": "10.0.0.4"}
    inv.write_text("testbed:\n  hosts:\n" + "".join(f"    {n}: {{ansible_host: {a}}}\n" for n, a in hosts.items()))
    cluster = {"kind": "inventory", "inventory": str(inv), "pfs_root": "/srv/pfs", "interfaces": "ens1"}
    cfg = cfg_with(
        {"policies": ["irqbalance", "sais_mark"], "servers": [2], "transfer_sizes_bytes": [1048576], "reps": 1,
         "cluster": {**cluster, "server_interfaces": "ens2"}}
    )  # fmt: skip
    sais.EXPERIMENT.specs(cfg, {}, tmp_path / "data", tmp_path / "specs")
    run = "s2_l1_sais_mark_t1024k_c1_r0"
    spec = yaml.safe_load((tmp_path / "specs" / f"{run}.yaml").read_text())
    assert spec["scheduler"] == {
        "name": "sais_mark",
        "params": {"interfaces": "ens1", "server_interfaces": "", "server_addresses": "10.0.0.2,10.0.0.3"},
    }
    (g,) = json.loads((tmp_path / "specs" / "groups.json").read_text())["groups"]
    assert list(g["server_parts"]) == [run]  # irqbalance has no server half
    parts = g["server_parts"][run]
    assert [p["host"] for p in parts] == ["s1", "s2"]
    for p in parts:
        state = str((tmp_path / "work" / "s2_l1" / "parts" / run / p["host"]).resolve())
        assert p["state_dir"] == state and p["fetch"] == ["sais_mark_counters.json"]
        assert p["apply"][0] == "{python}" and p["apply"][1].endswith("irq_steering/steer.py")
        args = p["apply"][2:]
        assert args[0] == "apply" and args[args.index("--interfaces") + 1] == ""
        assert args[args.index("--server-interfaces") + 1] == "ens2"
        assert args[args.index("--server-addresses") + 1] == ""
        assert p["restore"][2:4] == ["restore", "--state"] and p["restore"][4].startswith(state)


def test_the_configs_validate():
    cfg = dict(experiment_helpers.validated_profiles("sais"))["paper"]
    assert cfg["sais"]["servers"] == [8, 16, 32, 48] and cfg["sais"]["client_links"] == [1, 3]
