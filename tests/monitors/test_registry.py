"""make_monitors: the registry, tool checks and the shared context."""

from __future__ import annotations

import pytest

from corun.errors import ConfigError, MissingTool
from corun.monitors import MONITORS, MonitorContext, make_monitors
from corun.monitors.base import refine_whole_seconds


def test_registry_names(tmp_path):
    assert set(MONITORS) == {"iostat", "pidstat", "psi", "perf", "memory", "cpustat"}
    for name, cls in MONITORS.items():
        assert cls.name == name
        assert any(f.startswith(name) for f in cls.raw_files)
        assert f"{name}.meta.json" in cls.raw_files


@pytest.mark.parametrize(
    "name, tool, role", [("iostat", "iostat", "sysstat"), ("pidstat", "pidstat", "sysstat"),
                         ("perf", "perf", "perf")]
)  # fmt: skip
def test_missing_tool_names_the_role(tmp_path, monkeypatch, name, tool, role):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(MissingTool) as err:
        make_monitors([name], MonitorContext(tmp_path))
    assert err.value.tool == tool and err.value.role == role
    assert f"'{role}' role" in str(err.value)


def test_psi_needs_no_tool(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    (mon,) = make_monitors(["psi"], MonitorContext(tmp_path))
    assert mon.name == "psi"


def test_unknown_monitor(tmp_path):
    with pytest.raises(ConfigError, match="'vmstat'"):
        make_monitors(["vmstat"], MonitorContext(tmp_path))


def test_context_defaults_are_not_shared(tmp_path):
    a, b = MonitorContext(tmp_path), MonitorContext(tmp_path)
    a.perf_events.append("task-clock")
    a.devices.append("vda")
    assert b.perf_events == ["LLC-load-misses", "LLC-store-misses", "cycles", "instructions"]
    assert b.devices == [] and b.cgroup is None and b.interval_s == 1.0


def test_stop_before_start_is_harmless(tmp_path):
    for cls in MONITORS.values():
        mon = cls(MonitorContext(tmp_path))
        mon.stop()
        mon.stop()
        assert not (tmp_path / f"{cls.name}.meta.json").exists()


def test_refine_whole_seconds():
    # launched at 100.98 s: report 1 is due at 101.98, but arrived after the second ticked
    # over (printed 102), or (impossible but clipped all the same) printed 100: the estimate
    # always stays inside the printed second
    got = refine_whole_seconds([101, 102, 100], [1, 1, 1], 100.98, 1)
    assert got.tolist() == pytest.approx([101.98, 102.0, 100.999])
    assert refine_whole_seconds([101], [1], None, 1).tolist() == [101.0]
