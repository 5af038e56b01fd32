"""Paper 000 section 2.4 (Figs. 5-7): waiting against serving time per k, from the iostat records
of the cmp_stacking runs (it makes no runs of its own)."""

from __future__ import annotations

from corun.plan.base import Experiment
from corun.util import lazy_module

# pandas and SciPy: loaded by the analyze step only (the data and specs steps need neither)


class IoLatencySplit(Experiment):
    name = "io_latency_split"
    runs_of = "cmp_stacking"
    data_file = None

    # ----------------------------------------------------------------- its analysis (analysis.py)
    # analyse(inputs), JOB_TEXT, RUN_TEXT: pandas and SciPy, loaded by the analyze step only
    analysis = lazy_module("experiments.io_latency_split.analysis")


EXPERIMENT = IoLatencySplit()
