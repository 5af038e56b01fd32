"""CLI table and functional tests for kernels/graph_bfs.c.

Every test runs against the normal build and the ASan/UBSan build (at a
smaller SCALE where the sanitizers would make it slow).  The BFS levels are
checked against a breadth-first search in Python over the dumped edge list,
and the degree distribution against an R-MAT simulation in numpy.
"""

import json
import os
import subprocess
import tempfile
from collections import deque

import numpy as np
import pytest
from kernel_helpers import (
    ENV,
    KERNELS,
    assert_help_lists,
    assert_one_line_error,
    assert_version,
    disk_backed_dir,
    json_result,
    per_test_dir,
    run_kernel,
)

KERNEL = "graph_bfs"
A, B, C = 0.57, 0.19, 0.19
INT64 = 8


@pytest.fixture
def scale(build):
    """The SCALE of functional tests: smaller under the sanitizers."""
    return 10 if build == "normal" else 8


def run(binary, args, timeout=30):
    return run_kernel(binary, args, timeout)


def run_ok(binary, args, stderr=""):
    code, out, err = run(binary, args)
    assert code == 0, err
    assert err == stderr
    return json_result(out)


def memory_fs_mounts():
    with open("/proc/self/mounts", encoding="utf-8") as mounts:
        return [(line.split()[1], line.split()[2] in ("tmpfs", "ramfs")) for line in mounts]


def on_memory_fs(path):
    """Whether PATH is on tmpfs or ramfs (the longest mount point wins)."""
    path = os.path.realpath(path)
    best, memory = "", False
    for mount, is_memory in memory_fs_mounts():
        inside = path == mount or path.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):
            best, memory = mount, is_memory
    return memory


@pytest.fixture(scope="session")
def disk_dir(tmp_path_factory):
    """A directory on a disk-backed file system, where the kernel's mappings
    are written back to a device: the pytest temporary directory if it is
    not tmpfs, else a scratch folder under results/."""
    with disk_backed_dir(tmp_path_factory.mktemp("graph_bfs"), lambda path: not on_memory_fs(path)) as path:
        yield path


@pytest.fixture
def storage(disk_dir, request):
    with per_test_dir(disk_dir, request) as path:
        yield path


# (id, args, exit code, stderr substring); {dir} is an existing directory,
# {file} an existing file, {missing} a path that does not exist.
S = ["-s", "4", "-e", "2"]
CLI_CASES = [
    ("no-args", [], 2, "-s/--scale SCALE is required"),
    ("no-edgefactor", ["-s", "4", "--storage", "{dir}"], 2, "-e/--edgefactor N is required"),
    ("no-scale", ["--edgefactor", "4", "--storage", "{dir}"], 2, "-s/--scale SCALE is required"),
    ("no-storage", S, 2, "--storage DIR is required with --storage-mode file"),
    ("no-storage-file-mode", [*S, "--storage-mode", "file"], 2, "--storage DIR is required"),
    ("scale-without-value", ["-s"], 2, "-s: missing value"),
    ("storage-without-value", [*S, "--storage"], 2, "--storage: missing value"),
    ("unknown-long", [*S, "--storage", "{dir}", "--bogus"], 2, "invalid option '--bogus'"),
    ("unknown-short", [*S, "--storage", "{dir}", "-x"], 2, "invalid option '-x'"),
    ("value-on-flag", ["--help=1"], 2, "'--help=1'"),
    ("extra-argument", [*S, "--storage", "{dir}", "extra"], 2, "unexpected argument 'extra'"),
    ("scale-zero", ["-s", "0", "-e", "2"], 2, "--scale: '0' (expected an integer from 1 to 30)"),
    ("scale-31", ["--scale", "31", "-e", "2"], 2, "--scale: '31'"),
    ("scale-junk", ["-s", "ten", "-e", "2"], 2, "--scale: 'ten'"),
    ("scale-suffix", ["-s", "1K", "-e", "2"], 2, "--scale: '1K'"),
    ("edgefactor-zero", ["-s", "4", "-e", "0"], 2, "--edgefactor: '0' (expected an integer from 1 to 64)"),
    ("edgefactor-65", ["-s", "4", "--edgefactor", "65"], 2, "--edgefactor: '65'"),
    ("roots-zero", [*S, "--roots", "0"], 2, "--roots: '0' (expected an integer from 1 to 64)"),
    ("roots-65", [*S, "--roots", "65"], 2, "--roots: '65'"),
    ("seed-negative", [*S, "--seed", "-1"], 2, "--seed: '-1' (expected an integer >= 0)"),
    ("seed-junk", [*S, "--seed", "0x10"], 2, "--seed: '0x10'"),
    ("storage-mode-unknown", [*S, "--storage-mode", "disk"], 2, "--storage-mode: 'disk' (expected file or anon)"),
    (
        "storage-missing",
        [*S, "--storage", "{missing}"],
        1,
        "--storage: cannot use '{missing}': No such file or directory",
    ),
    ("storage-not-a-directory", [*S, "--storage", "{file}"], 1, "--storage: '{file}' is not a directory"),
    # With this seed both edges of the 2-vertex graph are self-loops.
    (
        "no-root-candidates",
        ["-s", "1", "-e", "1", "--seed", "6", "--storage-mode", "anon"],
        1,
        "no vertex has a neighbour other than itself (scale 1, edgefactor 1, seed 6): nothing to search",
    ),
    (
        "dump-graph-unwritable",
        [*S, "--storage", "{dir}", "--dump-graph", "{missing}/g.txt"],
        1,
        "--dump-graph: cannot open '{missing}/g.txt'",
    ),
    (
        "dump-levels-unwritable",
        [*S, "--storage", "{dir}", "--dump-levels", "{missing}/l.txt"],
        1,
        "--dump-levels: cannot open '{missing}/l.txt'",
    ),
]


@pytest.mark.parametrize("args, code, message", [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_cli_errors(binary, tmp_path, args, code, message):
    existing = tmp_path / "file"
    existing.write_text("x")
    fill = {"dir": tmp_path, "file": existing, "missing": tmp_path / "does-not-exist"}
    args = [a.format(**fill) for a in args]
    assert_one_line_error(KERNEL, run(binary, args), code, message.format(**fill))


def test_help_lists_units_and_defaults(binary):
    assert_help_lists(
        run(binary, ["--help"]),
        (
            "-s, --scale SCALE",
            "-e, --edgefactor N",
            "--roots N",
            "(default 8)",
            "--seed N",
            "(default 1)",
            "--storage DIR",
            "--storage-mode MODE",
            "(default)",
            "--dump-graph FILE",
            "--dump-levels FILE",
            "--version",
        ),
    )


def test_version_option_prints_the_kernel_name(binary):
    assert_version(KERNEL, run(binary, ["--version"]))


def read_edges(path):
    edges = np.loadtxt(path, dtype=np.int64, ndmin=2)
    assert edges.shape[1] == 2
    return edges


def csr_degrees(edges, nv):
    """Distinct neighbours other than itself, per vertex (the CSR degree)."""
    loops = edges[:, 0] == edges[:, 1]
    pairs = np.unique(np.sort(edges[~loops], axis=1), axis=0)
    return np.bincount(pairs.ravel(), minlength=nv)


def bfs_levels(edges, nv, root):
    adj = [[] for _ in range(nv)]
    for u, v in edges.tolist():
        adj[u].append(v)
        adj[v].append(u)
    level = [-1] * nv
    level[root] = 0
    queue = deque([root])
    while queue:
        u = queue.popleft()
        for v in adj[u]:
            if level[v] < 0:
                level[v] = level[u] + 1
                queue.append(v)
    return level


def test_result_fields(binary, storage, scale):
    args = ["-s", scale, "-e", 16, "--storage", storage]
    result = run_ok(binary, args)
    nv, ne = 1 << scale, 16 << scale

    assert result["params"] == {
        "scale": scale,
        "edgefactor": 16,
        "roots": 8,
        "seed": 1,
        "storage": str(storage),
        "storage_mode": "file",
    }
    assert result["initiator"] == {"a": 0.57, "b": 0.19, "c": 0.19, "d": 0.05}
    assert (result["scale"], result["edgefactor"]) == (scale, 16)
    assert (result["nvertices"], result["nedges"]) == (nv, ne)
    assert 0 <= result["self_loops"] < ne
    entries = result["csr_entries"]
    assert entries % 2 == 0 and 0 < entries <= 2 * (ne - result["self_loops"])
    # Edge list (two int64 per edge), offsets (nv + 1), adjacency (two
    # entries per non-loop edge, before duplicates are dropped).
    expected = INT64 * (2 * ne + nv + 1 + 2 * (ne - result["self_loops"]))
    assert result["storage_bytes"] == result["mapped_bytes"] == expected
    assert result["storage_on_memory_fs"] is False

    assert result["roots"] == 8
    roots = result["root_vertices"]
    assert roots == sorted(set(roots)) and len(roots) == 8
    assert all(0 <= r < nv for r in roots)
    for key in ("bfs_time_s", "reached_vertices", "traversed_edges", "teps"):
        assert len(result[key]) == 8, key
    for t, reached, edges, teps in zip(
        result["bfs_time_s"], result["reached_vertices"], result["traversed_edges"], result["teps"]
    ):
        assert t > 0 and 2 <= reached <= nv and 1 <= edges <= ne
        assert teps == pytest.approx(edges / t)
    teps = sorted(result["teps"])
    assert result["min_teps"] == teps[0]
    assert result["max_teps"] == teps[-1]
    assert result["median_teps"] == pytest.approx((teps[3] + teps[4]) / 2)
    assert result["harmonic_mean_teps"] == pytest.approx(8 / sum(1 / t for t in teps))
    assert teps[0] <= result["harmonic_mean_teps"] <= teps[-1]
    for key in ("generation_time_s", "construction_time_s", "validation_time_s"):
        assert result[key] > 0, key
    assert result["major_page_faults"] >= 0
    assert result["minor_page_faults"] > 0

    assert result["kernel"] == "graph_bfs"
    assert result["host"] == os.uname().nodename
    assert result["kernel_release"] == os.uname().release
    assert result["cmdline"] == [str(binary), *map(str, args)]
    # The temporary files were unlinked as soon as they were created.
    assert list(storage.iterdir()) == []


def test_anon_mode(binary, scale):
    result = run_ok(binary, ["-s", scale, "-e", 8, "--roots", 2, "--storage-mode", "anon"])
    assert result["params"]["storage"] is None
    assert result["params"]["storage_mode"] == "anon"
    assert result["storage_bytes"] == 0
    assert result["mapped_bytes"] > 0
    assert result["storage_on_memory_fs"] is None
    assert result["roots"] == 2


def test_anon_and_file_modes_agree(binary, storage, scale):
    common = ["-s", scale, "-e", 8, "--roots", 4, "--seed", 7]
    file_mode = run_ok(binary, [*common, "--storage", storage])
    anon = run_ok(binary, [*common, "--storage-mode", "anon"])
    for key in ("root_vertices", "reached_vertices", "traversed_edges", "self_loops", "csr_entries"):
        assert file_mode[key] == anon[key], key
    assert file_mode["storage_bytes"] == anon["mapped_bytes"]


def test_levels_match_python_bfs(binary, storage, scale):
    graph, levels = storage / "graph.txt", storage / "levels.txt"
    result = run_ok(
        binary,
        ["-s", scale, "-e", 16, "--roots", 3, "--storage", storage, "--dump-graph", graph, "--dump-levels", levels],
    )
    nv = 1 << scale
    edges = read_edges(graph)
    assert edges.shape == (16 << scale, 2)
    assert edges.min() >= 0 and edges.max() < nv
    assert int((edges[:, 0] == edges[:, 1]).sum()) == result["self_loops"]
    assert int(csr_degrees(edges, nv).sum()) == result["csr_entries"]

    dumped = [int(x) for x in levels.read_text().split()]
    root, got = dumped[0], dumped[1:]
    assert root == result["root_vertices"][0]
    assert len(got) == nv
    assert got == bfs_levels(edges, nv, root)
    reached = np.array(got) >= 0
    assert int(reached.sum()) == result["reached_vertices"][0]
    # TEPS counts input edges with both ends reached, repeats and
    # self-loops included, as Graph500 does.
    both = reached[edges[:, 0]] & reached[edges[:, 1]]
    assert int(both.sum()) == result["traversed_edges"][0]


def test_same_seed_same_graph(binary, storage, scale):
    outputs = []
    for name in ("a", "b"):
        graph = storage / f"{name}.txt"
        result = run_ok(binary, ["-s", scale, "-e", 4, "--seed", 42, "--storage", storage, "--dump-graph", graph])
        outputs.append((result, graph.read_bytes()))
    (first, g1), (second, g2) = outputs
    assert g1 == g2
    for key in ("nedges", "self_loops", "csr_entries", "root_vertices", "reached_vertices", "traversed_edges"):
        assert first[key] == second[key], key


def test_other_seed_other_graph(binary, storage, scale):
    results = {}
    for seed in (1, 2):
        graph = storage / f"{seed}.txt"
        result = run_ok(binary, ["-s", scale, "-e", 4, "--seed", seed, "--storage", storage, "--dump-graph", graph])
        results[seed] = (result, graph.read_bytes())
    (r1, g1), (r2, g2) = results[1], results[2]
    assert r1["nedges"] == r2["nedges"] == 4 << scale
    assert g1 != g2
    assert r1["root_vertices"] != r2["root_vertices"]


def rmat_edges(scale, nedges, rng):
    """Unpermuted R-MAT edges: at each level a quadrant with probability
    A, B, C, D = 1 - A - B - C."""
    u = np.zeros(nedges, dtype=np.int64)
    v = np.zeros(nedges, dtype=np.int64)
    for _ in range(scale):
        x = rng.random(nedges)
        u = (u << 1) | (x >= A + B)
        v = (v << 1) | (((x >= A) & (x < A + B)) | (x >= A + B + C))
    return np.stack([u, v], axis=1)


def popcounts(nv):
    return np.array([bin(i).count("1") for i in range(nv)])


def test_degree_distribution_is_kronecker(binary, storage, build):
    scale, edgefactor = (12, 16) if build == "normal" else (10, 16)
    nv, ne = 1 << scale, edgefactor << scale
    graph = storage / "graph.txt"
    run_ok(binary, ["-s", scale, "-e", edgefactor, "--roots", 1, "--storage", storage, "--dump-graph", graph])
    degree = csr_degrees(read_edges(graph), nv)
    simulated = csr_degrees(rmat_edges(scale, ne, np.random.default_rng(2024)), nv)

    # Heavy-tailed: a few hubs far above the mean.
    assert degree.max() > 20 * degree.mean()
    isolated = float((degree == 0).mean())
    assert 0.1 < isolated < 0.6
    assert isolated == pytest.approx(float((simulated == 0).mean()), abs=0.05)
    # The same distribution as the simulation, up to sampling noise.
    assert degree.max() == pytest.approx(simulated.max(), rel=0.5)
    assert degree.mean() == pytest.approx(simulated.mean(), rel=0.05)
    # Labels are permuted: unpermuted, a vertex with fewer one bits has a
    # higher degree; after the permutation the two are unrelated.
    bits = popcounts(nv)
    assert np.corrcoef(simulated, bits)[0, 1] < -0.3
    assert abs(np.corrcoef(degree, bits)[0, 1]) < 0.1


def test_fewer_candidates_than_roots(binary, storage):
    # 8 vertices cannot give 64 distinct roots: use them all, and warn.
    code, out, err = run(binary, ["-s", 3, "-e", 4, "--roots", 64, "--storage", storage])
    assert code == 0, err
    result = json.loads(out)
    n = result["roots"]
    assert 1 <= n <= 8 and len(result["root_vertices"]) == n
    assert result["params"]["roots"] == 64
    assert err == (f"graph_bfs: warning: only {n} vertices have a neighbour; using {n} roots, not 64\n")


def test_memory_storage_is_flagged(binary):
    if not os.access("/dev/shm", os.W_OK) or not on_memory_fs("/dev/shm"):
        pytest.skip("no writable tmpfs at /dev/shm")
    with tempfile.TemporaryDirectory(dir="/dev/shm") as shm:
        code, out, err = run(binary, ["-s", 6, "-e", 4, "--roots", 1, "--storage", shm])
    assert code == 0, err
    assert json.loads(out)["storage_on_memory_fs"] is True
    assert err.startswith(f"graph_bfs: warning: --storage '{shm}' is on tmpfs or ramfs")
    assert err.count("\n") == 1


# The validation is a safety net that a correct BFS never trips.  To see it
# catch broken trees, a harness linked with graph_bfs's own parts feeds it
# hand-made parent arrays.
HARNESS = r"""
#include "graph_bfs/graph_bfs.h"

/* stdin: nv nedges root, then nedges pairs u v, then nv parents; or with
 * root -1, the parents come from the kernel's own bfs() from vertex 0. */
int main(void)
{
	struct storage st = { .mode = STORAGE_ANON };
	struct graph g = { 0 };
	int64_t root, *e, *parent, *level, *stack, traversed;
	unsigned char *mark;

	if (scanf("%" SCNd64 " %" SCNd64 " %" SCNd64, &g.nv, &g.nedges,
		  &root) != 3)
		return 3;
	if (big_alloc(&st, &g.edges, (size_t)g.nedges * 16, "edges") != 0)
		return 3;
	e = g.edges.p;
	for (int64_t k = 0; k < 2 * g.nedges; k++)
		if (scanf("%" SCNd64, &e[k]) != 1)
			return 3;
	if (build_csr(&st, &g) != 0)
		return 3;
	parent = xmalloc((size_t)g.nv * sizeof(*parent));
	level = xmalloc((size_t)g.nv * sizeof(*level));
	stack = xmalloc((size_t)g.nv * sizeof(*stack));
	mark = xmalloc((size_t)g.nv);
	if (root < 0) {
		root = 0;
		bfs(&g, root, parent, stack);
	} else {
		for (int64_t v = 0; v < g.nv; v++)
			if (scanf("%" SCNd64, &parent[v]) != 1)
				return 3;
	}
	traversed = validate(&g, root, parent, level, stack, mark);
	printf("%" PRId64 "\n", traversed);
	free(mark);
	free(stack);
	free(level);
	free(parent);
	big_free(&g.adjncy);
	big_free(&g.xadj);
	big_free(&g.edges);
	return traversed < 0;
}
"""


@pytest.fixture(scope="session")
def harness(built, tmp_path_factory):
    """The validation harness, built like the ASan kernel."""
    work = tmp_path_factory.mktemp("harness")
    source = work / "validate_harness.c"
    source.write_text(HARNESS)
    exe = work / "validate_harness"
    proc = subprocess.run(
        [
            "gcc",
            "-std=gnu11",
            "-Wall",
            "-Wextra",
            "-Wconversion",
            "-Werror",
            "-O1",
            "-g",
            "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all",
            "-I",
            str(KERNELS),
            "-I",
            str(KERNELS / "common"),
            "-o",
            str(exe),
            str(source),
            *map(str, sorted((KERNELS / "graph_bfs").glob("*.c"))),
            str(KERNELS / "common" / "corun_kernel.c"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return exe


def validate_tree(harness, nv, edges, root, parent=()):
    text = f"{nv} {len(edges)} {root}\n"
    text += "\n".join(f"{u} {v}" for u, v in edges) + "\n"
    text += " ".join(map(str, parent)) + "\n"
    proc = subprocess.run([harness], input=text.encode(), capture_output=True, env=ENV, timeout=10)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


# A path 0-1-2-3 with a repeated edge and a self-loop, and apart from it the
# edge 4-5.  Rooted at 0, the BFS tree is 0 <- 1 <- 2 <- 3.
PATH = [(0, 1), (1, 2), (2, 3), (1, 0), (2, 2), (4, 5)]
TRIANGLE = [(0, 1), (1, 2), (2, 0)]
BROKEN_TREES = [
    ("root-not-own-parent", PATH, [1, 0, 1, 2, -1, -1], "the root's parent is 1"),
    ("second-root", PATH, [0, 0, 2, 2, -1, -1], "2 is its own parent"),
    ("parent-out-of-range", PATH, [0, 0, 1, 9, -1, -1], "parent of 3 is 9, not a vertex"),
    ("cycle", PATH, [0, 2, 1, 2, -1, -1], "has a cycle"),
    ("parent-not-reached", PATH, [0, 0, 1, 4, -1, -1], "the parent chain of 3 leaves the tree"),
    ("component-not-reached", PATH, [0, 0, 1, -1, -1, -1], "edge 2-3 has one end not reached"),
    ("outside-component-reached", PATH, [0, 0, 1, 2, 0, -1], "edge 4-5 has one end not reached"),
    ("parent-not-neighbour", PATH, [0, 0, 0, 2, -1, -1], "parent 0 of 2 is not a neighbour"),
    ("not-breadth-first", TRIANGLE, [0, 0, 1], "edge 2-0 joins levels 2 and 0"),
]


def test_validation_accepts_a_bfs_tree(harness):
    code, out, err = validate_tree(harness, 6, PATH, 0, [0, 0, 1, 2, -1, -1])
    assert (code, err) == (0, "")
    assert int(out) == 5  # the path's edges, the repeat and the self-loop


def test_validation_accepts_the_kernels_bfs(harness):
    rng = np.random.default_rng(3)
    edges = [tuple(e) for e in rng.integers(0, 64, size=(200, 2)).tolist()]
    code, out, err = validate_tree(harness, 64, edges, -1)
    assert (code, err) == (0, ""), err
    assert int(out) > 0


@pytest.mark.parametrize("edges, parent, message", [c[1:] for c in BROKEN_TREES], ids=[c[0] for c in BROKEN_TREES])
def test_validation_rejects_broken_trees(harness, edges, parent, message):
    code, out, err = validate_tree(harness, len(parent), edges, 0, parent)
    assert (code, out) == (1, "-1\n"), err
    assert err.startswith("graph_bfs: validation failed (root 0): ")
    assert message in err
    assert err.count("\n") == 1, err
