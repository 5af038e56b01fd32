"""The testbed CI workflow and its local twin (make ci-compare) are wired as documented."""

import re

import pytest
import yaml

from tests.ci_compare_checks import TINY_RUN_OPTIONS, gates_of_tiny_run


def test_testbed_workflow(repo_root):
    wf = yaml.safe_load((repo_root / ".github" / "workflows" / "testbed.yml").read_text())
    on = wf.get("on", wf.get(True))  # YAML 1.1 reads the key `on` as True
    assert "pull_request" in on and "workflow_dispatch" in on
    job = wf["jobs"]["compare"]
    assert job["runs-on"] == ["self-hosted", "testbed"]
    steps = job["steps"]
    runs = "\n".join(s.get("run", "") for s in steps)
    assert "ansible-playbook" in runs and "site.yml" in runs
    compare = next(s for s in steps if s.get("id") == "compare")
    assert "make ci-compare" in compare["run"] and "BASE=" in compare["run"] and "HEAD=" in compare["run"]
    assert "if" not in compare  # its exit status fails the job on a regression
    # a pull request: the picked variant built from the base commit against the head's build
    checkout = next(s for s in steps if str(s.get("uses", "")).startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] == 0  # the base commit is there to build
    assert job["env"]["BASE_REF"] == "${{ github.event.pull_request.base.sha }}"
    assert "vars.CORUN_CI_VARIANT" in job["env"]["CI_VARIANT"] and "dynamic_io" in job["env"]["CI_VARIANT"]
    pick = next(s for s in steps if s.get("id") == "pick")
    assert pick["if"] == "github.event_name == 'pull_request'"
    assert 'scripts/ci_pick_variant.py --base-ref "$BASE_REF"' in pick["run"] and "GITHUB_OUTPUT" in pick["run"]
    assert steps.index(pick) < steps.index(compare)
    assert 'VARIANT="$VARIANT" BASE_REF="$BASE_REF"' in compare["run"]
    assert compare["env"]["VARIANT"] == "${{ steps.pick.outputs.variant }}"
    assert "${{" not in compare["run"]  # values reach the shell as variables, never spliced into it
    summary = next(s for s in steps if "GITHUB_STEP_SUMMARY" in s.get("run", ""))
    assert summary["if"] == "always()"
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact"))
    assert upload["if"] == "always()" and "compare" in upload["with"]["path"]
    assert "corun archive" in runs
    assert wf["concurrency"]["group"] == "testbed"


def test_make_ci_compare_target(repo_root):
    mk = (repo_root / "Makefile").read_text()
    assert re.search(r"^ci-compare:", mk, re.M)
    assert "scripts/ci_compare.py --base $(BASE) --head $(HEAD)" in mk
    assert "scripts/ci_compare.py --variant $(VARIANT) --base-ref $(BASE_REF)" in mk
    assert "$(if $(HEAD_REF),--head-ref $(HEAD_REF))" in mk
    assert "make ci-compare VARIANT=dynamic_io BASE_REF=origin/main" in mk  # in make help
    assert (repo_root / "scripts" / "ci_compare.py").is_file()


def test_ci_compare_bad_input(repo_root, tmp_path):
    import subprocess
    import sys

    res = subprocess.run(
        [sys.executable, "scripts/ci_compare.py", "--base", "linux", "--head", "linux", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=repo_root,
    )
    assert res.returncode == 2 and "--head: 'linux' (expected a variant other than --base)" in res.stderr


@pytest.mark.root
def test_ci_compare_real_runs(repo_root, disk_tmp, kernels_built):
    """The local CI flow end to end with tiny sizes: a campaign of real runs, then the comparison,
    of linux against an elevator the data disk has and does not use (bfq, the Makefile's default
    head, where its kernel offers it: not every kernel builds it, nor ships it as a module)."""
    import json
    import subprocess
    import sys

    from corun.machine import block_device

    dev = block_device.device_of(disk_tmp)
    avail, now = block_device.available_elevators(dev), block_device.current_elevator(dev)
    head = next((e for e in ("bfq", "kyber", "none", "mq-deadline") if e in avail and e != now), None)
    if head is None:
        pytest.skip(f"{dev.name} offers one elevator only ({now}): no other to compare linux with")
    out = disk_tmp / "ci"
    res = subprocess.run(
        [
            sys.executable,
            "scripts/ci_compare.py",
            "--base",
            "linux",
            "--head",
            f"elevator_{head.replace('-', '_')}",
            "--out",
            str(out),
            "--reps",
            "2",
            *TINY_RUN_OPTIONS,
        ],
        capture_output=True,
        text=True,
        cwd=repo_root,
    )
    result, _ = gates_of_tiny_run(res, out)
    assert [s["runs"] for s in result["sets"]] == [2, 2]
    assert {e["reason"] for e in result["excluded"]} == {"warm-up run"}
    state = json.loads((out / "campaign" / "campaign.json").read_text())
    assert state["seed"] == 1 and len(state["runs"]) == 6
