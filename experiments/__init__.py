"""The experiments: one folder each, experiments/<name>/, found by `registry()`.

A folder is an experiment when it holds `experiment.py` defining `EXPERIMENT` (an instance of a
subclass of corun.plan.base.Experiment: the experiment's one object, its plan and, as its
`analysis` attribute, its analysis.py). Beside it: `config.schema.json` (its config section and
defaults), `profiles/<profile>.yaml` (its values per workflow profile), `claims.yaml` (the paper's
values and the claims its report judges), `analysis.py`, `README.md` (its docs page), `tests/`
and, only where an experiment needs rules no other has, `rules.smk`. Folders whose name starts
with `_` are not experiments (`_papers/`: the papers' citations; `_template/`: the folder to copy).
Adding an experiment adds one folder and touches no generic file (docs/howto/add-an-experiment.md).

  python -m experiments data NAME --config C --data-dir D
  python -m experiments calibrate NAME --config C --data-dir D --out calibration.json
  python -m experiments specs NAME --config C --data-dir D --out-dir S [--calibration F]
  python -m experiments analyze NAME --config C --results R --out-dir D
"""

from __future__ import annotations

import functools
import importlib
from pathlib import Path

from corun.errors import ConfigError

EXPERIMENTS_DIR = Path(__file__).resolve().parent
PAPERS_DIR = EXPERIMENTS_DIR / "_papers"


def folders() -> list[Path]:
    """Every experiment folder, by name."""
    return sorted(
        p
        for p in EXPERIMENTS_DIR.iterdir()
        if p.is_dir() and not p.name.startswith(("_", ".")) and (p / "experiment.py").is_file()
    )


@functools.cache
def registry() -> dict:
    """{name: Experiment} of every experiment folder, sorted by name."""
    found = {}
    for folder in folders():
        module = importlib.import_module(f"{__name__}.{folder.name}.experiment")
        exp = getattr(module, "EXPERIMENT", None)
        if exp is None:
            raise ConfigError(f"experiments/{folder.name}/experiment.py", "EXPERIMENT", None, "an Experiment instance")
        if exp.name != folder.name:
            raise ConfigError(
                f"experiments/{folder.name}/experiment.py", "name", exp.name, f"{folder.name!r}, the folder's name"
            )
        exp.folder = folder
        found[exp.name] = exp
    return dict(sorted(found.items()))


def get(name: str, source: str = "command line", key: str = "experiment"):
    exps = registry()
    if name not in exps:
        raise ConfigError(source, key, name, "one of " + ", ".join(exps))
    return exps[name]
