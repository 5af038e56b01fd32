"""Experiments as plugins: every module here that defines `EXPERIMENT` (an instance of
corun.experiments.base.Experiment) is one experiment of the workflow, found by `registry()`.

  python -m corun.experiments data NAME --config C --data-dir D
  python -m corun.experiments calibrate NAME --config C --data-dir D --out calibration.json
  python -m corun.experiments specs NAME --config C --data-dir D --out-dir S [--calibration F]
"""

from __future__ import annotations

import functools
import importlib
import pkgutil

from corun.errors import ConfigError


@functools.cache
def registry() -> dict:
    """{name: Experiment} of every experiment module, sorted by name."""
    found = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        exp = getattr(module, "EXPERIMENT", None)
        if exp is not None:
            found[exp.name] = exp
    return dict(sorted(found.items()))


def get(name: str, source: str = "command line", key: str = "experiment"):
    exps = registry()
    if name not in exps:
        raise ConfigError(source, key, name, "one of " + ", ".join(exps))
    return exps[name]
