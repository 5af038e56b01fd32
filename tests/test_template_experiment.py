"""Adding an experiment is one folder and a variant is one manifest: the template experiment and
its template variant, copied under new names, run through the smoke profile (the variant against
linux), the claim judged, and nothing outside the two new folders changes."""

import shutil
import subprocess

import pytest

NAME = "zz_template_copy"
VARIANT = "zz_variant_copy"


@pytest.mark.root
def test_a_copied_template_runs_and_touches_no_generic_file(repo_root, tmp_path):
    dest = repo_root / "experiments" / NAME
    variant = repo_root / "schedulers" / VARIANT
    assert not dest.exists() and not variant.exists()
    before = subprocess.run(["git", "status", "--porcelain"], cwd=repo_root, capture_output=True, text=True).stdout
    shutil.copytree(repo_root / "experiments" / "_template", dest, ignore=shutil.ignore_patterns("__pycache__"))
    variant.mkdir()
    manifest = (repo_root / "experiments" / "_template" / "variant" / "manifest.yaml").read_text()
    (variant / "manifest.yaml").write_text(manifest.replace("name: my_variant", f"name: {VARIANT}"))
    try:
        extra = tmp_path / "extra.yaml"
        extra.write_text(
            f"results_dir: {tmp_path}/results\ndata_dir: {tmp_path}/data\nexperiments: [{NAME}]\n"
            f"{NAME}: {{variants: [linux, {VARIANT}], reps: 2}}\n"
        )
        res = subprocess.run(
            [
                str(repo_root / ".venv/bin/snakemake"),
                "--profile",
                "workflows/profiles/smoke",
                "--configfile",
                "workflows/config/smoke.yaml",
                str(extra),
                "--",
                "all",
            ],
            cwd=repo_root,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
        section = (tmp_path / "results" / NAME / "analysis" / "section.json").read_text()
        assert '"claim": "variant_faster"' in section and '"n": 2' in section  # judged on 2 pairs
        meta = next((tmp_path / "results" / NAME / "runs").glob(f"{VARIANT}_r*/metadata.json")).read_text()
        assert '"io_bound_mbps": 20' in meta  # the variant's own default held
        assert (tmp_path / "results" / "report.html").is_file()
        after = subprocess.run(["git", "status", "--porcelain"], cwd=repo_root, capture_output=True, text=True).stdout
        added = set(after.splitlines()) - set(before.splitlines())
        assert added == {f"?? experiments/{NAME}/", f"?? schedulers/{VARIANT}/"}, added  # no generic file
        res = subprocess.run(
            [str(repo_root / ".venv/bin/python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", str(dest)],
            cwd=repo_root,
            capture_output=True,
            text=True,
        )
        assert res.returncode == 0, res.stdout[-2000:]  # its own tests pass under its new name
    finally:
        shutil.rmtree(dest, ignore_errors=True)
        shutil.rmtree(variant, ignore_errors=True)
