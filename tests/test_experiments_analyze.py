"""`python -m experiments analyze`: every analysis goes through analysis.experiment, called on
the experiment's object (exp.analyse, from its `analysis` module); one without is a one-line error."""

import subprocess
import sys
from pathlib import Path

import pytest

from corun.errors import ConfigError
from corun.plan.base import Experiment

ROOT = Path(__file__).resolve().parent.parent


class NoAnalysis(Experiment):
    name = "llc_miss"


@pytest.mark.parametrize("ask", ["analyse", "job_text"])
def test_an_experiment_without_analysis_is_one_line(ask):
    with pytest.raises(ConfigError) as err:
        NoAnalysis().analyse(None) if ask == "analyse" else NoAnalysis().job_text
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("experiments/llc_miss/experiment.py: analysis: None (expected its analysis.py")


def test_every_experiment_owns_its_analysis():
    from experiments import registry

    for name, exp in registry().items():
        # its own analysis.py, loaded at first use
        assert exp.analysis.__name__ == f"experiments.{name}.analysis", name
        assert callable(exp.analysis.analyse), name
        assert isinstance(exp.job_text, list) and isinstance(exp.run_text, list), name


def test_no_experiment_has_analysis_args():
    from experiments import registry

    for name, exp in registry().items():
        assert not hasattr(exp, "analysis_args"), name


def test_the_registry_loads_no_analysis_library():
    """Every workflow step (data, calibrate, specs, decide) loads the registry: pandas, SciPy and
    matplotlib load with an experiment's analysis only (they cost about 1.4 s a step)."""
    code = (
        "import sys, experiments; experiments.registry(); "
        "print([m for m in ('pandas', 'scipy', 'matplotlib') "
        "if m in sys.modules and type(sys.modules[m]).__name__ != '_LazyModule'])"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]", res.stdout
