"""Scheduler manifests as families (corun/run/schedulers/): what a variant that `extends`
another inherits and may override, the names one `named_by` manifest stands for, the errors a
new user's mistakes get (one line naming the manifest, the key and the nearest names), and a
broken manifest that breaks only its own names.

Each test writes its variants into a folder of its own that is put first on the search path
(CORUN_SCHEDULERS_PATH), beside the shipped ones."""

import textwrap
from pathlib import Path

import pytest

from corun.errors import ConfigError
from corun.results import campaign
from corun.run import schedulers

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def variants(tmp_path, monkeypatch):
    """write(name, yaml): a variant folder in a search-path folder of the test's own."""
    monkeypatch.setenv("CORUN_SCHEDULERS_PATH", str(tmp_path))

    def write(name: str, text: str) -> Path:
        (tmp_path / name).mkdir(exist_ok=True)
        path = tmp_path / name / "manifest.yaml"
        path.write_text(textwrap.dedent(text))
        return path

    return write


MY_IO = """\
    name: my_io
    description: dynamic_io with a lower bound.
    extends: dynamic_io
    params:
      io_bound_mbps:
        default: 20
    """


def test_an_override_of_default_alone_keeps_the_rest(variants):
    variants("my_io", MY_IO)
    mine, base = schedulers.manifest("my_io"), schedulers.manifest("dynamic_io")
    assert mine["params"]["io_bound_mbps"] == {**base["params"]["io_bound_mbps"], "default": 20}
    assert mine["kind"] == base["kind"] == "daemon"  # the kind is inherited too
    v = schedulers.Variant.load("my_io", {}, need_built=False)
    assert v.params["io_bound_mbps"] == 20 and v.params["timeslice_s"] == base["params"]["timeslice_s"]["default"]
    v.ctx = {"state_dir": "/s", "job_events": "/e"}
    argv = v.expand(v.manifest["start"])
    assert argv[argv.index("--io-bound-mbps") + 1] == "20"
    assert Path(argv[0]).resolve() == ROOT / "schedulers" / "dynamic_io" / "build" / "corun-dynamic-io"
    # the inherited bounds still hold
    with pytest.raises(ConfigError, match=r"scheduler.params.io_bound_mbps: 0 \(expected a number > 0"):
        schedulers.Variant.load("my_io", {"io_bound_mbps": 0}, need_built=False)


def test_a_default_out_of_the_inherited_bounds_is_refused(variants):
    path = variants("my_io", MY_IO.replace("default: 20", "default: -1"))
    with pytest.raises(ConfigError) as exc:
        schedulers.manifest("my_io")
    assert str(exc.value).startswith(
        f"{schedulers.show(path)}: params.io_bound_mbps.default: -1 (expected a number > 0"
    )


def test_a_misspelt_override_names_the_nearest_params_of_the_base(variants):
    path = variants("my_io", MY_IO.replace("io_bound_mbps:", "io_bound_mbsp:"))
    with pytest.raises(ConfigError) as exc:
        schedulers.manifest("my_io")
    msg = str(exc.value)
    assert msg.startswith(f"{schedulers.show(path)}: params.io_bound_mbsp: ")
    assert "a parameter of dynamic_io to override (nearest: io_bound_mbps" in msg and "\n" not in msg


def test_a_new_param_that_no_command_uses_is_refused(variants):
    """A full param of its own is no excuse: nothing would ever read it."""
    typo = "  io_bound_mbsp: {type: number, default: 20, description: a typo with all its keys}\n"
    variants("my_io", textwrap.dedent(MY_IO) + typo)
    with pytest.raises(
        ConfigError, match=r"params.io_bound_mbsp: .*nearest: io_bound_mbps.*uses as \{param.io_bound_mbsp\}"
    ):
        schedulers.manifest("my_io")


def test_a_new_param_its_command_uses_is_taken(variants):
    variants(
        "my_fair",
        """\
        name: my_fair
        description: dynamic_io_fair with a variant of its own.
        extends: dynamic_io_fair
        params:
          max_suspend_s: {default: 3}
        """,
    )
    m = schedulers.manifest("my_fair")
    assert m["params"]["max_suspend_s"]["default"] == 3 and m["params"]["max_suspend_s"]["unit"] == "s"
    assert m["start"][-2:] == ["--max-suspend-s", "{param.max_suspend_s}"]  # its base's start_args kept


def test_a_command_with_an_undeclared_param_is_refused(variants):
    path = variants(
        "my_el",
        """\
        name: my_el
        description: a typo in a command.
        kind: elevator
        params:
          elevator: {type: string, default: bfq, description: the elevator}
        start: ["echo", "{param.elevatr}"]
        """,
    )
    with pytest.raises(ConfigError) as exc:
        schedulers.manifest("my_el")
    assert str(exc.value) == (
        f"{schedulers.show(path)}: start: '{{param.elevatr}}' (expected {{param.NAME}} of a declared param: elevator)"
    )


def test_kind_is_needed_without_extends(variants):
    variants("bare", "name: bare\ndescription: no kind.\n")
    with pytest.raises(ConfigError, match=r"kind: 'missing' \(expected one of none, elevator"):
        schedulers.manifest("bare")


def test_verify_args_are_appended_to_the_inherited_verify(variants):
    variants(
        "my_steer",
        """\
        name: my_steer
        description: dedicated on CPU 1.
        extends: dedicated
        params:
          cpu: {default: 1}
        """,
    )
    v = schedulers.Variant.load("my_steer", {}, need_built=False)
    v.ctx = {"state_dir": "/s"}
    verify = v.expand(v.manifest["verify"])
    assert verify[verify.index("--cpu") + 1] == "1" and verify[verify.index("--policy") + 1] == "dedicated"
    assert verify[verify.index("--variant") + 1] == "my_steer"  # {name}: the name it runs under


FAMILY = """\
    name: fam
    description: a family of one manifest.
    kind: daemon
    named_by:
      param: mode
      variants:
        fam_fast:
          value: fast
          description: the fast one.
          paper: "a paper, section 1"
          params:
            level: {default: 1, maximum: 1}
        slow:
          description: the slow one.
    params:
      mode: {type: string, enum: [fast, slow], default: slow, description: the mode}
      level: {type: integer, default: 3, minimum: 1, maximum: 9, description: the level}
    start: ["echo", "{param.mode}", "{param.level}"]
    """


def test_one_manifest_stands_for_a_family(variants):
    path = variants("fam", FAMILY)
    assert {"fam", "fam_fast", "slow"} <= set(schedulers.available())
    assert schedulers.lookup("fam_fast") == (path, {"mode": "fast"})
    fast = schedulers.manifest("fam_fast")
    assert fast["description"] == "the fast one." and fast["paper"] == "a paper, section 1"
    assert fast["params"]["mode"]["enum"] == ["fast"] and fast["params"]["level"]["maximum"] == 1
    assert fast["family"] == "fam" and fast["kind"] == "daemon"
    assert schedulers.manifest("slow")["params"]["mode"]["default"] == "slow"
    assert schedulers.manifest_files("slow") == [path]
    v = schedulers.Variant.load("fam_fast", {}, need_built=False)
    assert v.params == {"mode": "fast", "level": 1} and v.describe()["description"] == "the fast one."
    with pytest.raises(ConfigError, match=r"scheduler.params.mode: 'slow' \(expected 'fast', which the name fam_fast"):
        schedulers.Variant.load("fam_fast", {"mode": "slow"}, need_built=False)
    with pytest.raises(ConfigError, match=r"scheduler.params.level: 2 \(expected .*<= 1"):
        schedulers.Variant.load("fam_fast", {"level": 2}, need_built=False)


@pytest.mark.parametrize(
    "old, new, message",
    [
        (
            "value: fast",
            "value: quick",
            r"named_by.variants.fam_fast.value: 'quick' \(expected one of params.mode.enum",
        ),
        ("level: {default: 1", "levl: {default: 1", r"named_by.variants.fam_fast.params.levl: .*nearest level"),
        ("maximum: 1}", "maximum: 0}", r"named_by.variants.fam_fast.params.level.default: 1"),
        ("param: mode", "param: level", r"named_by: 'level' \(expected a param of this variant with an enum"),
    ],
)
def test_a_family_entry_is_checked_with_its_manifest(variants, old, new, message):
    variants("fam", FAMILY.replace(old, new))
    with pytest.raises(ConfigError, match=message):
        schedulers.manifest("fam")


def test_a_broken_manifest_breaks_only_its_own_names(variants):
    path = variants("broken", "name: broken\ndescription: bad\nkind: daemon\nparams: {x: {type: nope}}\n")
    variants("my_io", MY_IO)
    good, bad = schedulers.listing()
    names = {m["name"] for m in good}
    assert {"my_io", "dynamic_io", "cfs", "batch", "elevator_bfq"} <= names and "broken" not in names
    assert len(bad) == 1 and str(bad[0]).startswith(f"{schedulers.show(path)}: params.x.type: 'nope'")
    assert "broken" in schedulers.available()  # the folder is there: asking for it gives its error
    with pytest.raises(ConfigError, match="params.x.type"):
        schedulers.manifest("broken")
    assert schedulers.manifest("my_io")["params"]["io_bound_mbps"]["default"] == 20


def test_an_unknown_name_gets_the_nearest_names_of_the_kind_asked(variants):
    with pytest.raises(ConfigError) as exc:
        schedulers.lookup("dynamic_oi", "cfg.yaml", "dynamic_io.variants")
    assert str(exc.value).startswith(
        "cfg.yaml: dynamic_io.variants: 'dynamic_oi' (expected one of dynamic_io, dynamic_io_psi"
    )
    assert str(exc.value).endswith("(the nearest variants))")
    with pytest.raises(ConfigError) as exc:
        schedulers.lookup("smt_mix", "cfg.yaml", "noisy_neighbour.variants", kinds="placement")
    assert "(expected one of smt_mixed" in str(exc.value) and "(the nearest variants of kind placement)" in str(
        exc.value
    )
    assert "elevator" not in str(exc.value)
    with pytest.raises(ConfigError) as exc:  # a real name of another kind
        schedulers.lookup("elevator_bfq", "cfg.yaml", "noisy_neighbour.variants", kinds=["placement"])
    assert "(the variants of kind placement; elevator_bfq is of kind elevator))" in str(exc.value)
    with pytest.raises(ConfigError) as exc:  # nothing near: a short kind is listed whole
        schedulers.lookup("zzz", "cfg.yaml", "k", kinds="io_control")
    assert str(exc.value) == "cfg.yaml: k: 'zzz' (expected one of cgroup_io_throttle (the variants of kind io_control))"
    assert schedulers.lookup("cfs", kinds="placement")[1] == {"policy": "cfs"}


def test_check_param_names_the_nearest_param(variants):
    with pytest.raises(ConfigError) as exc:
        schedulers.check_param(
            "dynamic_io", "io_bound_mbsp", 3, "cfg.yaml", "dynamic_io.variant_params.dynamic_io.io_bound_mbsp"
        )
    assert "(expected a parameter of dynamic_io: io_bound_mbps)" in str(exc.value)


def test_manifest_files_are_the_own_and_the_inherited(variants):
    path = variants("my_io", MY_IO)
    sched = ROOT / "schedulers"
    assert schedulers.manifest_files("my_io") == [path, sched / "dynamic_io" / "manifest.yaml"]
    assert schedulers.manifest_files("cgroup_io_throttle") == [
        sched / "cgroup_io_throttle" / "manifest.yaml",
        sched / "dynamic_io" / "manifest.yaml",
    ]
    assert schedulers.manifest_files("elevator_bfq") == [sched / "elevator" / "manifest.yaml"]
    assert schedulers.manifest_files("gang") == [sched / "mpi_cosched" / "manifest.yaml"]
    with pytest.raises(ConfigError, match=r"expected one of linux \(the nearest variants\)"):
        schedulers.manifest_files("linus")


def test_an_edited_manifest_is_read_again(variants):
    variants("my_io", MY_IO)
    assert schedulers.manifest("my_io")["params"]["io_bound_mbps"]["default"] == 20
    variants("my_io", MY_IO.replace("default: 20", "default: 25"))
    assert schedulers.manifest("my_io")["params"]["io_bound_mbps"]["default"] == 25


def test_the_shipped_names_are_unique_and_every_manifest_reads():
    good, bad = schedulers.listing()
    assert bad == []
    names = [m["name"] for m in good]
    assert len(names) == len(set(names)) == len(schedulers.available())


def test_a_variant_keeps_the_defaults_it_changes_in_a_campaign(variants):
    """A campaign template's params go to every variant that declares them, except a default the
    variant changes itself: my_io keeps its io_bound_mbps, and takes the template's quantum."""
    variants("my_io", MY_IO)
    assert schedulers.manifest("my_io")["own_defaults"] == ["io_bound_mbps"]
    assert schedulers.manifest("dynamic_io_psi")["own_defaults"] == []  # its description only
    assert schedulers.manifest("batch")["own_defaults"] == ["mpl"]
    template = {"scheduler": {"name": "dynamic_io", "params": {"timeslice_s": 0.2, "io_bound_mbps": 5}}}
    assert campaign.scheduler_for(template, "my_io") == {"name": "my_io", "params": {"timeslice_s": 0.2}}
    assert campaign.scheduler_for(template, "dynamic_io")["params"] == {"timeslice_s": 0.2, "io_bound_mbps": 5}
    assert campaign.scheduler_for(template, "linux") == {"name": "linux"}
