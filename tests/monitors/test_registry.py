"""make_monitors: the registry, tool checks and the shared context."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

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
    assert got == pytest.approx([101.98, 102.0, 100.999])
    assert refine_whole_seconds([101], [1], None, 1) == [101.0]


ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "monitors"
FIXTURE_DIRS = sorted({p.parent for p in FIXTURES.rglob("*.meta.json")})


def test_tidy_tables_are_written_without_numpy_or_pandas():
    # the run path parses every monitor's raw files and writes the tidy CSVs: in a fresh
    # interpreter, neither library may be loaded by it
    code = textwrap.dedent(f"""
        import sys, tempfile
        from pathlib import Path
        import corun.cli.main, corun.run.runner
        from corun.monitors import MONITORS
        out = Path(tempfile.mkdtemp())
        n = 0
        for d in {[str(d) for d in FIXTURE_DIRS]!r}:
            for name, cls in MONITORS.items():
                if (Path(d) / f"{{name}}.meta.json").exists():
                    table, _ = cls.tidy_raw(Path(d), 0.0)
                    table.write_csv(out / f"{{n}}.csv")
                    n += 1
        # corun.util.lazy_module leaves a module object that loads at its first use
        loaded = [m for m in ("numpy", "pandas") if m in sys.modules and type(sys.modules[m]).__name__ != "_LazyModule"]
        print(n, loaded)
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False)
    assert res.returncode == 0, res.stderr
    n, loaded = res.stdout.split(" ", 1)
    assert int(n) >= 5 and loaded.strip() == "[]", res.stdout


@pytest.mark.parametrize("raw_dir", FIXTURE_DIRS, ids=lambda d: f"{d.parent.name}/{d.name}")
def test_tidy_csv_reads_back_as_the_dataframe(raw_dir, tmp_path):
    pd = pytest.importorskip("pandas")
    for name, cls in MONITORS.items():
        if not (raw_dir / f"{name}.meta.json").exists():
            continue
        table, records = cls.tidy_raw(raw_dir, 1795000000.0)
        df, records_df = cls.parse_raw(raw_dir, 1795000000.0)
        assert records == records_df
        assert list(df.columns) == table.columns and len(df) == len(table)
        table.write_csv(tmp_path / "t.csv")
        back = pd.read_csv(tmp_path / "t.csv")
        assert list(back.columns) == table.columns
        if len(df):
            pd.testing.assert_frame_equal(back, df, check_dtype=False)
