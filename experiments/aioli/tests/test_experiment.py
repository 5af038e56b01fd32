"""The aioli experiment plugin: config checks (one line each), its run order and specs, the
translator's wiring switched on and off."""

import functools
import json

import pytest
import yaml

from experiments.aioli import experiment as aioli
from tests import experiment_helpers

cfg_with = functools.partial(experiment_helpers.cfg_with, "aioli")


@pytest.mark.parametrize(
    "section, line",
    [
        ({"policies": ["aioli"]}, "aioli.policies: ['aioli'] (expected a list holding pfs_fifo (aioli.baseline))"),
        ({"policies": ["pfs_fifo", "Aioli"]}, "aioli.policies[1]: 'Aioli'"),
        ({"patterns": ["random"]}, "aioli.patterns[0]: 'random'"),
        ({"operations": ["append"]}, "aioli.operations[0]: 'append'"),
        ({"request_sizes_bytes": [1000]}, "aioli.request_sizes_bytes[0]: 1000"),
        ({"request_sizes_bytes": [12288], "client_mib": 1}, "12288 (expected a multiple of 4096 dividing"),
        ({"apps": [3]}, "aioli.apps[0]: 3"),
        ({"clients": [33], "apps": [2], "client_mib": 1}, "aioli.clients: [33] (expected at most 64 clients"),
        ({"clients": [0]}, "aioli.clients[0]: 0"),
        ({"policy_params": {"app_aware": {"quantum": 1}}}, "policy_params.app_aware: 'app_aware' (expected a policy"),
        ({"clients": [64], "client_mib": 64, "disk": {"size_mib": 256}}, "aioli.disk.size_mib: 256 (expected room for"),
        ({"disk": {"backend": "tape"}}, "aioli.disk.backend: 'tape'"),
        ({"disk": {"stroke": 0}}, "aioli.disk.stroke: 0"),
        (
            {"translator": {"enabled": True}, "policies": ["pfs_fifo", "aioli_fast"]},
            "aioli.policies[1]: 'aioli_fast' (expected one of",
        ),
        ({"translator": {"type": "Corun/aioli"}}, "aioli.translator.type: 'Corun/aioli'"),
        ({"cluster": {"kind": "inventory"}}, "aioli.cluster.inventory: None (expected an inventory (kind inventory))"),
        ({"cluster": {"prefix": "aioli-x"}}, "aioli.cluster.prefix: 'aioli-x'"),
        ({"speed": 1}, "speed"),
        # the gain's 1 % is the claim's null in claims.yaml, no longer a key of the configuration
        ({"min_speedup_pct": 1.0}, "min_speedup_pct"),
        (
            {"translator": {"enabled": True}, "policies": ["pfs_fifo", "aioli", "app_aware"]},
            "aioli.policy_params.app_aware.trace: None (expected the trace of an earlier run",
        ),
    ],
)  # fmt: skip
def test_bad_config_is_one_line_naming_key_value_and_expectation(section, line):
    msg = experiment_helpers.config_error("aioli", section)
    assert "\n" not in msg and msg.startswith("test.yaml: ") and line in msg, msg


def test_app_aware_runs_with_a_trace():
    """Without a trace app_aware schedules as aioli without waits: a one-line error before anything
    runs (the old configuration ran it, and its rows compared aioli with itself)."""
    trace = "{dir}/arrivals.trace"
    cfg = cfg_with({"translator": {"enabled": True}, "policies": ["pfs_fifo", "aioli", "app_aware"],
                    "policy_params": {"app_aware": {"trace": trace}}})  # fmt: skip
    assert cfg["aioli"]["policy_params"]["app_aware"]["trace"] == trace
    assert cfg_with({"policies": ["pfs_fifo", "app_aware"]})["aioli"]["translator"]["enabled"] is False


def test_matrix_and_run_order_interleave_reps():
    cfg = cfg_with(
        {
            "policies": ["pfs_fifo", "aioli"],
            "patterns": ["strided", "contiguous"],
            "operations": ["read", "write"],
            "request_sizes_bytes": [65536, 262144],
            "clients": [4, 8],
            "apps": [1, 2],
            "client_mib": 2,
            "reps": 2,
        }
    )
    names = aioli.EXPERIMENT.run_names(cfg)
    per_rep = 2 * 2 * 2 * 2 * 2 * 2
    assert len(names) == 2 * per_rep and len(set(names)) == len(names)
    assert all(n.endswith("_r0") for n in names[:per_rep]) and all(n.endswith("_r1") for n in names[per_rep:])
    assert aioli.points(cfg["aioli"]) == aioli.points(cfg["aioli"])  # same seed, same order
    assert names[:per_rep] != sorted(names[:per_rep])  # shuffled within the rep
    assert "s2_aioli_contiguous_write_t256k_c8_a2_r1" in names
    assert list(aioli.EXPERIMENT.group_runs(cfg)) == ["s2"]
    est = aioli.EXPERIMENT.estimate(cfg)
    assert est["runs"] == len(names) and est["seconds"] > len(names) * 3


# a small matrix: both policies, both patterns and operations, one size, 3 clients of 2 apps
SMALL = {
    "policies": ["pfs_fifo", "aioli"],
    "patterns": ["strided", "contiguous"],
    "operations": ["read", "write"],
    "request_sizes_bytes": [65536],
    "clients": [3],
    "apps": [2],
    "client_mib": 1,
    "reps": 1,
}


def test_specs_without_the_translator(tmp_path):
    cfg = cfg_with(SMALL)
    n = aioli.EXPERIMENT.specs(cfg, {}, tmp_path / "data", tmp_path / "specs")
    assert n == 2 * 2 * 2
    spec = yaml.safe_load((tmp_path / "specs" / "s2_aioli_strided_read_t64k_c3_a2_r0.yaml").read_text())
    assert [j["name"] for j in spec["jobs"]] == [f"app{a}-client-{r}" for a in (0, 1) for r in range(3)]
    assert spec["placement"] == {"slots_per_core": 6}  # every client at once
    assert "scheduler" not in spec  # no translator: the stock server, the policy a label
    assert spec["labels"]["policy"] == "aioli" and spec["labels"]["policy_applied"] is False
    cmd = spec["jobs"][4]["cmd"]
    assert cmd[:4] == ["ip", "netns", "exec", "aioli-n1"] and cmd[4].endswith("kernels/build/pfs_read")

    def opt(c, name):
        return c[c.index(name) + 1]

    assert (opt(cmd, "--rank"), opt(cmd, "--ranks"), opt(cmd, "--app")) == ("1", "3", "1")
    assert opt(cmd, "--file") == "/aioli-r-app1.dat" and "--read" in cmd and "--direct" in cmd
    # strided: one request per block, client_mib / request segments
    assert (opt(cmd, "--pattern"), opt(cmd, "--block-size"), opt(cmd, "--segments")) == ("strided", "65536", "16")
    assert opt(cmd, "--barrier-count") == "6" and opt(cmd, "--barrier").endswith("/s2_aioli_strided_read_t64k_c3_a2_r0")
    cont = yaml.safe_load((tmp_path / "specs" / "s2_pfs_fifo_contiguous_write_t64k_c3_a2_r0.yaml").read_text())
    c = cont["jobs"][0]["cmd"]
    assert (opt(c, "--pattern"), opt(c, "--block-size"), opt(c, "--segments")) == ("contiguous", str(1 << 20), "1")
    assert opt(c, "--file") == "/aioli-w-app0.dat" and "--write" in c
    (g,) = json.loads((tmp_path / "specs" / "groups.json").read_text())["groups"]
    assert g["cluster"] == {
        "kind": "netns",
        "prefix": "aioli",
        "subnet": "10.80.0.0/24",
        "hosts": 3,
        "client": "aioli-n1",
    }
    assert g["pfs"]["server_xlators"] == [] and g["counters"] == {"sched_status": None}
    assert g["pfs"]["brick"]["backend"] == "rotating_disk" and g["pfs"]["brick"]["o_direct"] is True
    assert g["pfs"]["brick"]["rotating_disk"]["preset"] == "sata_7200_2010"
    assert g["pfs"]["brick"]["rotating_disk"]["host"] == {"elevator": "mq-deadline"}
    files = [opt(c, "--file") for c in g["write_cmds"]]
    assert files == ["/aioli-r-app0.dat", "/aioli-r-app1.dat", "/aioli-w-app0.dat", "/aioli-w-app1.dat"]
    assert opt(g["write_cmds"][1], "--block-size") == str(3 << 20) and opt(g["write_cmds"][1], "--app") == "1"
    assert len(g["runs"]) == n


def test_specs_with_the_translator_apply_the_policy_and_read_its_counters(tmp_path, monkeypatch):
    # the pfs_sched variants come with the translator; their manifests are not needed here
    monkeypatch.setattr(aioli.Aioli, "variant_params", lambda self, cfg, source: [])
    opts = {"control-file": "{root}/aioli/control"}
    cfg = cfg_with(
        {
            "policies": ["pfs_fifo", "app_aware"],
            "policy_params": {"app_aware": {"trace": "/srv/t.json"}},
            "translator": {"enabled": True, "options": opts},
            "reps": 1,
        }
    )
    aioli.EXPERIMENT.specs(cfg, {}, tmp_path / "data", tmp_path / "specs")
    spec = yaml.safe_load((tmp_path / "specs" / "s2_app_aware_strided_read_t64k_c4_a1_r0.yaml").read_text())
    pfs_state = str((tmp_path / "specs").parent / "work" / "s2" / "pfs")
    assert spec["scheduler"] == {"name": "app_aware", "params": {"pfs_state_dir": pfs_state, "trace": "/srv/t.json"}}
    assert spec["labels"]["policy_applied"] is True
    (g,) = json.loads((tmp_path / "specs" / "groups.json").read_text())["groups"]
    assert g["pfs"]["server_xlators"] == [{"name": "corun-aioli", "type": "corun/aioli", "options": opts}]
    assert g["pfs"]["state_dir"] == pfs_state
    assert g["counters"] == {"sched_status": "{root}/{host}/corun-aioli.status"}


def test_specs_on_an_inventory_have_the_controller_apply_the_policy(tmp_path):
    """The data servers are other hosts than the client's: the policy is a server part the
    controller applies around each run (corun.testbed.server_parts), the client's run records it."""
    inv = tmp_path / "inv.yml"
    inv.write_text("testbed:\n  hosts:\n    c1: {ansible_host: 10.0.0.1}\n    s1: {ansible_host: 10.0.0.2}\n")
    cluster = {"kind": "inventory", "inventory": str(inv), "pfs_root": "/srv/pfs"}
    cfg = cfg_with(
        {
            "policies": ["pfs_fifo", "aioli"],
            "servers": 1,
            "translator": {"enabled": True},
            "reps": 1,
            "cluster": cluster,
        }
    )
    aioli.EXPERIMENT.specs(cfg, {}, tmp_path / "data", tmp_path / "specs")
    (g,) = json.loads((tmp_path / "specs" / "groups.json").read_text())["groups"]
    assert sorted(g["server_parts"]) == sorted(g["runs"])
    for run in g["runs"]:
        spec = yaml.safe_load((tmp_path / "specs" / f"{run}.yaml").read_text())
        assert spec["scheduler"]["applied_by"] == "controller"
        (part,) = g["server_parts"][run]
        state = str((tmp_path / "work" / "s1" / "parts" / run).resolve())
        assert part["host"] is None and part["state_dir"] == state
        assert part["apply"][0] == "{python}" and part["apply"][1:5] == [
            "-m",
            "corun.testbed.pfs_sched",
            "apply",
            "--policy",
        ]
        last = len(part["apply"]) - 1 - part["apply"][::-1].index("--policy")  # pfs_fifo's start_args come last
        assert part["apply"][last + 1] == {"pfs_fifo": "fifo"}.get(spec["labels"]["policy"], "aioli")
        assert ["--pfs-state", g["pfs"]["state_dir"]] == part["apply"][6:8]
        assert part["verify"][3:] == ["verify", "--state", f"{state}/pfs_sched.json"]
        assert part["restore"][3:] == ["restore", "--state", f"{state}/pfs_sched.json"]
    # on the netns cluster the run applies it itself, as before
    netns = cfg_with({"policies": ["pfs_fifo", "aioli"], "translator": {"enabled": True}, "reps": 1})
    aioli.EXPERIMENT.specs(netns, {}, tmp_path / "d2", tmp_path / "s2")
    (g,) = json.loads((tmp_path / "s2" / "groups.json").read_text())["groups"]
    assert "server_parts" not in g
    spec = yaml.safe_load((tmp_path / "s2" / f"{g['runs'][0]}.yaml").read_text())
    assert "applied_by" not in spec["scheduler"]


def test_the_configs_validate():
    for name, cfg in experiment_helpers.validated_profiles("aioli"):
        est = aioli.EXPERIMENT.estimate(cfg)
        if name == "smoke":
            assert est["seconds"] < 70
        if name == "local":
            assert est["seconds"] < 240
    assert cfg["aioli"]["servers"] == 4 and cfg["aioli"]["clients"] == [32] and cfg["aioli"]["apps"] == [1, 2]
