"""The layers of docs/architecture.md, checked: no import points up a layer.

Each package may import its own layer and those below, never one above: corun's base modules, then
corun.machine, corun.monitors, corun.testbed, corun.run, corun.results, corun.plan, corun.cli, then
analysis, then experiments. So corun imports neither analysis nor experiments, and analysis does
not import experiments. Every import counts: at the top of a file or inside a function, relative
ones, and the modules named to corun.util.lazy_module or importlib.import_module, as a literal
or as a name built at run time from a literal start (f"experiments.{name}.analysis" or
"experiments." + name imports at least a module of the package experiments).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# lowest first; a module belongs to the layer of its longest matching prefix
LAYERS: list[tuple[str, ...]] = [
    ("corun",),  # the package's own modules: errors, util, config, upstream
    ("corun.machine",),
    ("corun.monitors",),
    ("corun.testbed",),
    ("corun.run",),
    ("corun.results",),
    ("corun.plan",),
    ("corun.cli", "corun.__main__"),
    ("analysis",),
    ("experiments",),
]
PACKAGES = ("corun", "analysis", "experiments")


def layer_of(module: str, layers: list[tuple[str, ...]] = LAYERS) -> int | None:
    best, found = -1, None
    for i, names in enumerate(layers):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > best:
                best, found = len(name), i
    return found


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, module) of every import in a parsed file."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the file's package
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.append((node.lineno, target))
            # `from corun import run` imports the package corun.run
            out.extend((node.lineno, f"{target}.{a.name}") for a in node.names if a.name != "*")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, (ast.Name, ast.Attribute))
            and (node.func.id if isinstance(node.func, ast.Name) else node.func.attr)
            in ("lazy_module", "import_module")
            and node.args
        ):
            name = named_module(node.args[0])
            if name:
                out.append((node.lineno, name))
    return out


def named_module(arg: ast.expr) -> str | None:
    """The module a name argument imports: a literal string; for a name built at run time, the
    packages its literal start names whole ("experiments." in f"experiments.{x}"); else None."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values:
        start = arg.values[0]
    elif isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Add):
        start = arg.left
        while isinstance(start, ast.BinOp) and isinstance(start.op, ast.Add):
            start = start.left
    else:
        return None
    if not (isinstance(start, ast.Constant) and isinstance(start.value, str)) or "." not in start.value:
        return None
    return start.value.rsplit(".", 1)[0] or None


def back_arrows(root: Path, packages=PACKAGES, layers=LAYERS) -> list[str]:
    """Every import in the packages under ROOT that points up a layer, as `file:line: a -> b`."""
    found = []
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            module = module_name(root, path)
            here = layer_of(module, layers)
            if here is None:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            lines = set()  # one arrow per import statement
            for line, target in imported(tree, module, path.name == "__init__.py"):
                there = layer_of(target, layers)
                if there is not None and there > here and line not in lines:
                    lines.add(line)
                    found.append(f"{path.relative_to(root)}:{line}: {module} -> {target}")
    return found


def test_no_import_points_up_a_layer():
    arrows = back_arrows(ROOT)
    assert not arrows, "imports pointing up a layer (docs/architecture.md, Layers):\n" + "\n".join(arrows)


def test_every_corun_package_has_a_layer():
    """A new package under corun/ is placed in LAYERS (and the docs) before it is used."""
    for d in sorted((ROOT / "corun").iterdir()):
        if d.is_dir() and (d / "__init__.py").exists():
            assert layer_of(f"corun.{d.name}") != layer_of("corun"), f"corun/{d.name}: not in LAYERS"


def test_the_docs_name_the_layers_in_this_order():
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text[text.index("## Layers") :]
    names = [n for names in LAYERS[1:] for n in names if n != "corun.__main__"]
    positions = [section.index(f"`{n.replace('.', '/')}") for n in names]
    assert positions == sorted(positions), "docs/architecture.md lists the layers in another order"


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for pkg in {Path(rel).parts[0] for rel in files}:
        for d in [root / pkg, *(x for x in (root / pkg).rglob("*") if x.is_dir())]:
            (d / "__init__.py").touch()
    return root


CLEAN = {
    "corun/errors.py": "",
    "corun/machine/host.py": "from corun.errors import CorunError\n",
    "corun/run/runner.py": "from corun.machine import host\nfrom . import checked_spec\n",
    "corun/run/checked_spec.py": "import corun.machine.host\n",
    "analysis/report.py": "from corun.run import runner\n",
    "experiments/x.py": "import analysis.report\n",
}


def test_a_clean_synthetic_tree_has_no_back_arrow(tmp_path):
    assert back_arrows(write(tmp_path, CLEAN)) == []


@pytest.mark.parametrize(
    "rel, text, arrow",
    [
        # the five kinds issue 26 named: machine -> run, machine -> testbed, monitors -> run,
        # testbed -> run, run -> results
        ("corun/machine/doctor.py", "from corun.run import schedulers\n", "corun.machine.doctor -> corun.run"),
        (
            "corun/machine/doctor.py",
            "from corun.testbed.hosts import x\n",
            "corun.machine.doctor -> corun.testbed.hosts",
        ),
        ("corun/monitors/pelt.py", "def f():\n    from corun.run.task_cpu import tree\n", "-> corun.run.task_cpu"),
        ("corun/testbed/pfs_runs.py", "from corun.run.runner import STEAL_ENV\n", "-> corun.run.runner"),
        ("corun/run/x.py", "from corun.results import metadata\n", "corun.run.x -> corun.results"),
        ("corun/run/x.py", "from ..results import metadata\n", "corun.run.x -> corun.results"),
        ("corun/run/x.py", "import analysis.verdicts\n", "corun.run.x -> analysis.verdicts"),
        ("corun/run/x.py", "m = lazy_module('experiments.config')\n", "corun.run.x -> experiments.config"),
        ("analysis/y.py", "import importlib\nimportlib.import_module('experiments')\n", "analysis.y -> experiments"),
        # a name built at run time: the package its literal start names
        (
            "analysis/y.py",
            "import importlib\ndef f(n):\n    return importlib.import_module(f'experiments.{n}.analysis')\n",
            "analysis.y -> experiments",
        ),
        ("analysis/y.py", "def f(n):\n    return lazy_module('experiments.' + n)\n", "analysis.y -> experiments"),
        ("corun/run/x.py", "m = lazy_module(f'analysis.{n}')\n", "corun.run.x -> analysis"),
    ],
)
def test_an_injected_back_arrow_is_found(tmp_path, rel, text, arrow):
    arrows = back_arrows(write(tmp_path, {**CLEAN, rel: text}))
    assert len(arrows) == 1 and arrow in arrows[0] and arrows[0].startswith(rel), arrows
