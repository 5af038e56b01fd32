"""`python -m experiments analyze`: every analysis goes through analysis.experiment; one without
`analyse` is a one-line error (the legacy command-line path is gone)."""

import types

import pytest

import experiments.__main__ as main_mod
from corun.errors import ConfigError
from experiments import get


def test_an_analysis_without_analyse_is_one_line(monkeypatch, tmp_path):
    legacy = types.ModuleType("legacy")
    legacy.main = lambda argv: 0  # the old entry point, never called
    exp = get("llc_miss")
    monkeypatch.setattr(main_mod, "importlib", types.SimpleNamespace(import_module=lambda name: legacy))
    with pytest.raises(ConfigError) as err:
        main_mod.analyze(
            exp, {"experiments": ["llc_miss"], "llc_miss": {"reps": 1}}, str(tmp_path), str(tmp_path / "out")
        )
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("experiments/llc_miss/analysis.py: analyse: None (expected analyse(inputs) -> Result")


def test_no_experiment_has_analysis_args():
    from experiments import registry

    for name, exp in registry().items():
        assert not hasattr(exp, "analysis_args"), name
