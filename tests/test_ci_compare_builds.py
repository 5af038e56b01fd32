"""scripts/ci_compare.py in build mode: a variant built from a base commit against the head's build.

The tests work in a throw-away clone of this repository holding the working tree's files as a
commit (`base`) and one more commit that changes schedulers/dynamic_io trivially (`head`), so
the repository under test is never touched.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from corun.results import campaign
from tests.ci_compare_checks import TINY_RUN_OPTIONS, gates_of_tiny_run

PY = sys.executable
GIT_ID = ["-c", "user.name=corun tests", "-c", "user.email=tests@corun.invalid", "-c", "commit.gpgsign=false"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *GIT_ID, *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def clone(repo_root, tmp_path_factory):
    """A clone whose HEAD~1 is the working tree of repo_root and HEAD changes dynamic_io's decide.c."""
    repo = tmp_path_factory.mktemp("ci-builds") / "repo"
    subprocess.run(["git", "clone", "--quiet", "--no-local", str(repo_root), str(repo)], check=True)
    here = set(git(repo_root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")) - {""}
    for rel in set(git(repo, "ls-files", "-z").split("\0")) - {""} - here:
        (repo / rel).unlink(missing_ok=True)
    for rel in here:
        src = repo_root / rel
        if src.is_file() and not src.is_symlink():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, repo / rel)
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "--allow-empty", "-m", "base: the working tree under test")
    decide = repo / "schedulers" / "dynamic_io" / "src" / "decide.c"
    decide.write_text(decide.read_text() + "/* a head build differs from its base by this comment */\n")
    git(repo, "commit", "--quiet", "-am", "head: dynamic_io changed trivially")
    yield repo
    shutil.rmtree(repo.parent, ignore_errors=True)


def ci_compare(repo: Path, *args: str, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PY, "scripts/ci_compare.py", *args, "--out", str(out)], capture_output=True, text=True, cwd=repo, timeout=600
    )


def worktrees(repo: Path) -> list[str]:
    return [line for line in git(repo, "worktree", "list", "--porcelain").splitlines() if line.startswith("worktree ")]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--variant", "dynamic_io", "--base-ref", "no-such-ref"], "--base-ref: 'no-such-ref' (expected a commit"),
        (
            ["--variant", "dynamic_io", "--base-ref", "HEAD~1", "--head-ref", "no-such-ref"],
            "--head-ref: 'no-such-ref' (expected a commit",
        ),
        (
            ["--variant", "no_such_variant", "--base-ref", "HEAD~1"],
            "--variant: 'no_such_variant' (expected a scheduler variant in schedulers/ at HEAD)",
        ),
        (["--variant", "dynamic_io"], "--base-ref: 'missing' (expected a git commit"),
        (["--variant", "dynamic_io", "--base-ref", "HEAD~1", "--head", "linux"], "--head: 'linux' (expected no --base"),
        (
            ["--head", "dynamic_io", "--base-ref", "HEAD~1"],
            "--base-ref: 'HEAD~1' (expected no git ref without --variant",
        ),
        (["--variant", "dynamic_io", "--base-ref", "HEAD"], "both are build"),  # nothing to compare
    ],
)
def test_bad_input_is_one_line(clone, tmp_path, args, message):
    res = ci_compare(clone, *args, out=tmp_path / "ci")
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("ci_compare: ") and message in res.stderr, res.stderr
    assert len(worktrees(clone)) == 1  # a worktree made on the way is gone
    assert not (tmp_path / "ci" / "campaign").exists()


def test_arms_set_variant_env_and_labels(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "t", "jobs": [{"name": "a", "cmd": ["true"]}], "device": {"path": "."}}))
    calls = []

    def runner(spec, spec_file, out, env=None):
        from analysis.synthetic import write_run

        calls.append((spec, env))
        write_run(out, spec["scheduler"]["name"], [1.0, 1.0], labels=spec["labels"])

    arms = {
        "base": {"variant": "v", "env": {"CORUN_SCHEDULERS_PATH": "elsewhere"}, "labels": {"build": "base"}},
        "head": {"variant": "v", "labels": {"build": "head"}},
    }

    def run_campaign(folder, **kw):
        return campaign.run_campaign(spec, ["base", "head"], tmp_path / folder, runner=runner, **kw)

    state = run_campaign("camp", reps=2, warmup=1, seed=3, arms=arms, log=lambda s: None)
    assert len(calls) == 6 and all(s["scheduler"]["name"] == "v" for s, _ in calls)
    for s, env in calls:
        assert s["labels"]["variant"] == "v" and s["labels"]["build"] == s["labels"]["arm"]
        assert env == ({"CORUN_SCHEDULERS_PATH": "elsewhere"} if s["labels"]["arm"] == "base" else None)
    assert state["arms"]["base"] == {"variant": "v", "labels": {"build": "base"}}  # no environment recorded
    arms["head"]["labels"]["build"] = "other"
    with pytest.raises(campaign.ConfigError, match="arms"):  # a resumed campaign keeps its arms
        run_campaign("camp", reps=2, arms=arms)
    with pytest.raises(campaign.ConfigError, match="arms.head"):
        run_campaign("c2", arms={"base": arms["base"]})


@pytest.mark.root
def test_builds_compared_end_to_end(clone, repo_root, kernels_built, disk_tmp):
    """Both builds made, the base runs ran the base build, the comparison written; a few tiny runs."""
    shutil.copytree(kernels_built, clone / "kernels" / "build", dirs_exist_ok=True)
    out = disk_tmp / "ci"
    res = ci_compare(
        clone,
        "--variant",
        "dynamic_io",
        "--base-ref",
        "HEAD~1",
        "--reps",
        "2",
        "--warmup",
        "0",
        *TINY_RUN_OPTIONS,
        out=out,
    )
    result, gates = gates_of_tiny_run(res, out)
    assert "building dynamic_io at HEAD~1" in res.stderr and "building dynamic_io at HEAD" in res.stderr
    assert (clone / "schedulers" / "dynamic_io" / "build" / "corun-dynamic-io").is_file()  # the head build
    assert len(worktrees(clone)) == 1  # the base worktree is removed
    ids, commits = {}, {}
    for meta_path in sorted((out / "campaign" / "runs").glob("*/metadata.json")):
        meta = json.loads(meta_path.read_text())
        labels = meta["labels"]
        assert meta["scheduler"]["name"] == "dynamic_io" and meta["scheduler"]["verified"] is True
        assert labels["build_id"] == meta["scheduler"]["build_id"]
        ids.setdefault(labels["build"], set()).add(meta["scheduler"]["build_id"])
        commits[labels["build"]] = (labels["git_ref"], labels["git_commit"])
    assert set(ids) == {"base", "head"} and all(len(v) == 1 for v in ids.values())
    assert ids["base"] != ids["head"]  # the recorded build ids differ
    assert commits["base"] == ("HEAD~1", git(clone, "rev-parse", "HEAD~1").strip())
    assert commits["head"] == ("HEAD", git(clone, "rev-parse", "HEAD").strip())
    assert [s["runs"] for s in result["sets"]] == [2, 2]
    assert result["gate"]["status"] == ("undecided" if "undecided" in gates else "passed")
    assert (out / "compare" / "comparison.md").is_file()


@pytest.mark.parametrize(
    "args, outputs",
    [
        (["--base-ref", "HEAD~1", "--default", "dynamic_io"], ["variant=dynamic_io", "args="]),
        (["--base-ref", "HEAD~1", "--default", "linux"], ["variant=dynamic_io", "args="]),  # the changed one
        (["--base-ref", "HEAD", "--default", "linux"], ["variant=linux", "args=--allow-same"]),  # none changed
    ],
)
def test_pick_variant(clone, args, outputs):
    res = subprocess.run([PY, "scripts/ci_pick_variant.py", *args], capture_output=True, text=True, cwd=clone)
    assert res.returncode == 0 and res.stdout.splitlines() == outputs, res.stderr


def test_pick_variant_new_in_the_pull_request(clone, tmp_path):
    """A variant with no folder at the base commit has no base build: it is compared with linux."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "clone", "--quiet", str(clone), str(repo)], check=True)
    shutil.copytree(repo / "schedulers" / "linux", repo / "schedulers" / "my_new_variant")
    manifest = repo / "schedulers" / "my_new_variant" / "manifest.yaml"
    manifest.write_text(manifest.read_text().replace("name: linux", "name: my_new_variant"))
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "a new variant")
    res = subprocess.run(
        [PY, "scripts/ci_pick_variant.py", "--base-ref", "HEAD~1", "--default", "linux"],
        capture_output=True,
        text=True,
        cwd=repo,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["variant=", "base=linux", "head=my_new_variant", "args="]
    assert "my_new_variant is new (none at HEAD~1): compared with linux" in res.stderr


def test_pick_variant_bad_input(clone):
    res = subprocess.run(
        [PY, "scripts/ci_pick_variant.py", "--base-ref", "no-such-ref"], capture_output=True, text=True, cwd=clone
    )
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "--base-ref: 'no-such-ref'" in res.stderr
    res = subprocess.run(
        [PY, "scripts/ci_pick_variant.py", "--base-ref", "HEAD", "--default", "nope"],
        capture_output=True,
        text=True,
        cwd=clone,
    )
    assert res.returncode == 2 and "--default: 'nope' (expected a scheduler variant" in res.stderr
