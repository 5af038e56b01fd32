"""PARSEC's own programs, run as their run configurations say, and the inputs they read here.

The parsec role builds the programs (`parsecmgmt -a build -c corun`) and records them, and the
input sets of the input archives it unpacked, in the upstream manifest (`parsec.programs`,
`parsec.inputs`: package -> input set -> input tar). A job asks for a package at an input set
(simlarge, as paper 000 ran); what it gets, in order:

- the real input set, when an input archive holds it (PARSEC's own sim archive, if the user
  pinned one in the role's `parsec_inputs`);
- swaptions: simlarge has no file (`-ns 64 -sm 40000`): exact;
- x264, vips, raytrace: simlarge's command line on a file corun generates in simlarge's format
  and size, seeded and cached (`GENERATED`): a 4:2:0 640x360 y4m of 128 frames, a LabQ VIPS
  image of 2662x5500, an OBJ mesh of happy_buddha's triangle count;
- bodytrack, freqmine: the largest real input there is (simdev), with simdev's command line.

Every job records which (`input_provenance`: real, exact, generated or smaller-real; and
`input_stands_in_for`, the input it takes the place of).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from corun.errors import ConfigError
from corun.run.inputs import make_y4m, y4m_bytes
from corun.util import atomic_file

_RUNCONF = re.compile(r'^\s*(run_exec|run_args)\s*=\s*"([^"]*)"', re.M)

# The simlarge inputs corun generates: the file simlarge's command line names, and how it is made.
VIPS_SIZE = (2662, 5500)  # bigben_2662x5500.v
X264_CLIP = (640, 360, 128)  # eledream_640x360_128.y4m
# Stanford's Happy Buddha (happy_vrip), which PARSEC's happy_buddha.obj is: 1,087,716 triangles.
BUDDHA_TRIANGLES = 1_087_716
GENERATED = {
    "x264": ("eledream_640x360_128.y4m", "a seeded 4:2:0 640x360 y4m of 128 frames (corun.run.inputs.make_y4m)"),
    "vips": ("bigben_2662x5500.v", "a seeded LabQ VIPS image of 2662x5500, simlarge's format and size"),
    "raytrace": ("happy_buddha.obj", f"a seeded OBJ mesh of {BUDDHA_TRIANGLES:,} triangles, happy_buddha's count"),
}
# Packages whose simlarge input only the real data would match: the largest real one stands in.
SMALLER_REAL = {"bodytrack": "simdev", "freqmine": "simdev"}
NO_INPUT = {"swaptions"}


@dataclass
class ParsecProgram:
    """A PARSEC package as its run configuration runs it: `argv` from run_exec and run_args of
    pkgs/<group>/<pkg>/parsec/<set>.runconf (${NTHREADS} filled in), run in a folder holding the
    unpacked `input_tar` and the `generated` file (name, generator key), if any."""

    template: object  # corun.run.workloads.JobTemplate
    input_tar: Path | None
    generated: tuple[str, str] | None = None
    input_labels: dict = field(default_factory=dict)


def runconf(pkg_dir: Path, input_set: str, threads: int) -> list[str]:
    """run_exec and run_args of the package's <input_set>.runconf, as argv (run_exec relative to
    the platform folder)."""
    path = pkg_dir / "parsec" / f"{input_set}.runconf"
    try:
        fields = dict(_RUNCONF.findall(path.read_text()))
    except OSError:
        raise ConfigError(
            str(path),
            "",
            "unreadable",
            f"PARSEC's run configuration of {pkg_dir.name} {input_set} (re-run the parsec role)",
        ) from None
    if "run_exec" not in fields or "run_args" not in fields:
        raise ConfigError(
            str(path),
            "run_exec/run_args",
            "missing",
            f"PARSEC's run command of {pkg_dir.name} (re-run the parsec role)",
        )
    args = fields["run_args"].replace("${NTHREADS}", str(threads)).replace("$NTHREADS", str(threads)).split()
    return [fields["run_exec"], *args]


def input_tar(parsec: dict, pkg: str, pkg_dir: Path, input_set: str) -> Path | None:
    """The input tar of the set: the manifest's (the role's unpacked input archives), else the
    tree's own pkgs/<group>/<pkg>/inputs/input_<set>.tar; None when neither exists."""
    recorded = ((parsec.get("inputs") or {}).get(pkg) or {}).get(input_set)
    for p in ([Path(recorded)] if isinstance(recorded, str) and recorded else []) + [
        pkg_dir / "inputs" / f"input_{input_set}.tar"
    ]:
        if p.is_file():
            return p
    return None


def program(parsec: dict, pkg: str, input_name: str, threads: int, template_cls) -> ParsecProgram | None:
    """PARSEC's own `pkg` for `input_name` when the parsec role built it, with the input this
    machine has for it (module docstring); None when it is not built (the caller's stand-in runs)."""
    binary = (parsec.get("programs") or parsec.get("binaries") or {}).get(pkg)
    if not binary or not os.access(binary, os.X_OK):
        return None
    inst = Path(binary).parent.parent  # pkgs/<group>/<pkg>/inst/<platform>
    pkg_dir = inst.parent.parent
    version = parsec.get("version", "?")
    tar = input_tar(parsec, pkg, pkg_dir, input_name)
    generated = None
    run_set = input_name
    if tar is not None:
        prov = {"input_provenance": "real", "input_stands_in_for": ""}
    elif pkg in NO_INPUT:
        prov = {"input_provenance": "exact", "input_stands_in_for": ""}
    elif pkg in GENERATED and input_name == "simlarge":
        generated = (GENERATED[pkg][0], pkg)
        prov = {"input_provenance": f"generated: {GENERATED[pkg][1]}", "input_stands_in_for": f"{GENERATED[pkg][0]}"}
    elif pkg in SMALLER_REAL and (tar := input_tar(parsec, pkg, pkg_dir, SMALLER_REAL[pkg])) is not None:
        run_set = SMALLER_REAL[pkg]
        prov = {"input_provenance": f"real {run_set}", "input_stands_in_for": f"PARSEC {pkg} {input_name}"}
    else:
        raise ConfigError(
            str(pkg_dir / "inputs"),
            f"input_{input_name}.tar",
            "missing",
            f"PARSEC's {input_name} input of {pkg} (add its input archive to the parsec role's parsec_inputs)",
        )
    argv = runconf(pkg_dir, run_set, threads)
    cmd = [str(inst / argv[0]), *argv[1:]]
    env = {"OMP_NUM_THREADS": str(threads), "IM_CONCURRENCY": str(threads)}  # freqmine, vips
    labels = {
        "binary": f"PARSEC {version} {pkg}",
        "stands_in_for": f"PARSEC {pkg} {input_name}",
        "input_set": run_set,
        **prov,
    }
    return ParsecProgram(template_cls(cmd, labels, env), tar, generated, prov)


# ----------------------------------------------------------------------------- generated inputs


def make_vips_labq(path: Path, width: int, height: int, seed: int = 1) -> Path:
    """A VIPS 7 image file of LabQ coding (4 bands of bytes: L, a, b and their packed low bits):
    the 64-byte header (magic big-endian, the fields little-endian) and the pixels, a seeded
    smooth field with noise so the pipeline's resampling has structure to work on."""
    header = (
        b"\xb6\xa6\xf2\x08"
        + np.array([width, height, 4, 8, 0, 2, 13], dtype="<i4").tobytes()
        + np.array([1.0, 1.0], dtype="<f4").tobytes()
        + np.zeros(6, dtype="<i4").tobytes()
    )
    assert len(header) == 64
    rng = np.random.default_rng(seed)
    xx = np.arange(width, dtype=np.int32)
    with atomic_file(path, "wb") as fh:
        fh.write(header)
        for y0 in range(0, height, 256):
            rows = min(256, height - y0)
            yy = np.arange(y0, y0 + rows, dtype=np.int32)[:, None]
            px = np.empty((rows, width, 4), dtype=np.uint8)
            px[..., 0] = ((xx[None, :] * 255) // max(1, width - 1) + yy // 16) % 256
            px[..., 1] = (128 + (yy * 7 + xx[None, :] * 3) // 64) % 256
            px[..., 2] = (96 + (xx[None, :] // 8 + yy // 8) % 64).astype(np.uint8)
            px[..., :3] += rng.integers(0, 8, (rows, width, 3), dtype=np.uint8)
            px[..., 3] = rng.integers(0, 256, (rows, width), dtype=np.uint8)
            fh.write(px.tobytes())
    return Path(path)


def make_obj_mesh(path: Path, triangles: int, seed: int = 1) -> Path:
    """A closed OBJ mesh of exactly `triangles` triangles (even): a seeded, bumpy torus grid."""
    triangles += triangles % 2
    cells = triangles // 2
    n = int(np.sqrt(cells))
    while cells % n:
        n -= 1
    m = cells // n
    rng = np.random.default_rng(seed)
    u = np.linspace(0, 2 * np.pi, n, endpoint=False)[:, None]
    v = np.linspace(0, 2 * np.pi, m, endpoint=False)[None, :]
    r = 0.3 + 0.01 * rng.standard_normal((n, m))
    x, y, z = (1 + r * np.cos(v)) * np.cos(u), (1 + r * np.cos(v)) * np.sin(u), r * np.sin(v)
    with atomic_file(path, "w") as fh:
        for a, b, c in zip(x.ravel(), y.ravel(), z.ravel()):
            fh.write(f"v {a:.5f} {b:.5f} {c:.5f}\n")
        i = np.arange(n)[:, None]
        j = np.arange(m)[None, :]
        p00 = (i * m + j).ravel() + 1
        p10 = (((i + 1) % n) * m + j).ravel() + 1
        p01 = (i * m + (j + 1) % m).ravel() + 1
        p11 = (((i + 1) % n) * m + (j + 1) % m).ravel() + 1
        for a, b, c, d in zip(p00, p10, p11, p01):
            fh.write(f"f {a} {b} {c}\nf {a} {c} {d}\n")
    return Path(path)


def generate(kind: str, path: Path, seed: int = 1) -> Path:
    """The generated simlarge input of package `kind` (GENERATED) at `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "x264":
        return make_y4m(path, *X264_CLIP, seed=seed)
    if kind == "vips":
        return make_vips_labq(path, *VIPS_SIZE, seed=seed)
    if kind == "raytrace":
        return make_obj_mesh(path, BUDDHA_TRIANGLES, seed=seed)
    raise ValueError(f"no generated input for {kind}")


def generated_bytes(kind: str) -> int | None:
    """The size of the generated file, to tell a whole cached copy from a broken one (None: the
    OBJ text, whose size is not fixed in advance)."""
    if kind == "x264":
        return y4m_bytes(*X264_CLIP)
    if kind == "vips":
        return 64 + VIPS_SIZE[0] * VIPS_SIZE[1] * 4
    return None
