"""corun.run.run_length: runs sized in time. The copies a level needs, the jobs repeated in each
slot, and the runner measuring a run that came out shorter than its spec's min_measure_s again,
longer (the short attempt kept and said)."""

import json

import pytest
import yaml

from corun.errors import CorunError
from corun.run import run_length as rl
from corun.run import runner


@pytest.mark.parametrize(
    "job_s, min_s, slots, copies",
    [
        (0.7, 10.0, 2, 15),  # a fresh machine's 0.7 s Graph500 level: 15 after another, 10.5 s
        (12.0, 10.0, 2, 1),  # already long enough: as it was
        (0.01, 10.0, 2, 32),  # at most 64 jobs a run: 32 copies of 2 slots
        (2.0, 0.0, 2, 1),  # no minimum
        (float("nan"), 10.0, 4, 16),  # no time measured: the most
    ],
)
def test_copies_for_a_minimum_length(job_s, min_s, slots, copies):
    assert rl.copies_for(job_s, min_s, slots) == copies


def test_repeat_jobs_keeps_each_slots_pin_and_names_the_copies():
    jobs = [{"name": "g-s0", "cmd": ["x"], "cmp": 0, "labels": {"slot": 0}}, {"name": "g-s1", "cmd": ["x"], "cmp": 1}]
    out = rl.repeat_jobs(jobs, 3)
    assert [j["name"] for j in out] == ["g-s0", "g-s1", "g-s0-c1", "g-s1-c1", "g-s0-c2", "g-s1-c2"]
    assert [j["cmp"] for j in out] == [0, 1] * 3 and [j["labels"]["repeat"] for j in out] == [0, 0, 1, 1, 2, 2]
    assert out[2]["labels"]["slot"] == 0 and "repeat" not in jobs[0]["labels"]  # the input untouched


def test_lengthen_scales_the_copies_by_what_was_missing():
    spec = {"name": "r", "labels": {"copies": 2}, "jobs": rl.repeat_jobs([{"name": "a", "cmd": ["x"]}], 2)}
    longer, copies = rl.lengthen(spec, measured_s=2.5, min_s=10.0)
    assert copies == 8 and len(longer["jobs"]) == 8 and longer["labels"]["copies"] == 8
    assert rl.too_short({"remeasure": {"min_measure_s": 10}}, {"duration_s": 2.5}).startswith("its jobs ran 2.50 s")
    assert rl.too_short({"remeasure": {"min_measure_s": 10}}, {"duration_s": 12.0}) == ""
    assert rl.too_short({"remeasure": {}}, {"duration_s": 0.1}) == ""


def test_timing_a_job_that_fails_is_one_line():
    assert rl.time_job(["/bin/true"]) >= 0
    with pytest.raises(CorunError) as err:
        rl.time_job(["/bin/sh", "-c", "echo broken >&2; exit 3"])
    assert "exit 3: broken" in str(err.value) and "\n" not in str(err.value)


def test_the_jobs_timed_in_a_block_are_collected_there_and_only_there():
    # the calibrate step's measuring time (phases_s.jobs_s): what bench/workflow_times.py counts
    # as measurement, not as the harness's cost
    rl.time_job(["/bin/true"])  # outside any block: collected nowhere
    with rl.timed_jobs() as outer:
        rl.time_job(["/bin/sleep", "0.2"])
        with rl.timed_jobs() as inner:
            rl.time_job(["/bin/sleep", "0.1"])
        rl.time_job(["/bin/true"])
    assert len(outer) == 2 and outer[0] >= 0.2 and len(inner) == 1 and inner[0] >= 0.1
    with pytest.raises(CorunError), rl.timed_jobs() as failed:
        rl.time_job(["/bin/false"])
    assert failed == []  # a job that failed measured nothing


def _short_run(disk_tmp, **remeasure) -> tuple:
    """A run of one 0.2 s job under a 0.6 s minimum: its folder and metadata."""
    spec = {
        "name": "short",
        "remeasure": {"min_measure_s": 0.6, **remeasure},
        "jobs": [{"name": "j", "cmd": ["/bin/sleep", "0.2"]}],
        "device": {"path": str(disk_tmp)},
        "monitors": {"enabled": []},
    }
    path = disk_tmp / "s.yaml"
    path.write_text(yaml.safe_dump(spec))
    out = runner.run_spec_file(path, disk_tmp / "run", progress=False)
    return out, json.loads((out / "metadata.json").read_text())


@pytest.mark.root
def test_a_run_shorter_than_its_minimum_is_measured_again_longer(disk_tmp):
    out, meta = _short_run(disk_tmp, attempts=3)
    rm = meta["remeasured"]
    assert rm["min_measure_s"] == 0.6 and rm["attempt"] >= 2
    first = rm["earlier"][0]
    assert first["duration_s"] < 0.6 and "shorter than the 0.6 s" in first["short"]
    assert meta["duration_s"] >= 0.6 or rm["attempt"] == 3
    names = [j["name"] for j in meta["spec"]["jobs"]]
    assert names[:2] == ["j", "j-c1"] and meta["labels"]["copies"] == len(names) >= 3
    kept = json.loads((out / first["folder"] / "metadata.json").read_text())
    assert len(kept["spec"]["jobs"]) == 1


@pytest.mark.root
def test_a_run_shorter_than_its_minimum_is_measured_again_as_it_is(disk_tmp):
    """remeasure.lengthen none (an experiment that sizes its jobs larger instead, as
    cmp_stacking does): measured again, its jobs never repeated."""
    _, meta = _short_run(disk_tmp, attempts=2, lengthen="none")
    rm = meta["remeasured"]
    assert rm["min_measure_s"] == 0.6 and rm["attempt"] == 2
    first = rm["earlier"][0]
    assert first["duration_s"] < 0.6 and "shorter than the 0.6 s" in first["short"]
    assert [j["name"] for j in meta["spec"]["jobs"]] == ["j"]  # never repeated
    assert meta["duration_s"] < 0.6  # still short: the analysis fails it, naming it


@pytest.mark.root
def test_a_repeated_job_with_evict_reads_its_input_from_the_disk_again(disk_tmp):
    """A job's `evict` drops its input's cached pages as it starts: its copy, run after it,
    reads the file from the disk again (io_read_bytes), not from the page cache it left."""
    import pandas as pd

    data = disk_tmp / "input.dat"
    data.write_bytes(b"x" * (4 << 20))
    job = {"name": "cat", "cmd": ["/bin/cat", str(data)], "evict": [str(data)]}
    spec = {
        "name": "evicting",
        "jobs": rl.repeat_jobs([job], 2),
        "placement": {"cmp": {"grouping": "cores"}, "use_cmps": [0]},  # one after another
        "device": {"path": str(disk_tmp)},
        "monitors": {"enabled": []},
    }
    path = disk_tmp / "s.yaml"
    path.write_text(yaml.safe_dump(spec))
    out = runner.run_spec_file(path, disk_tmp / "run", progress=False)
    jobs = pd.read_csv(out / "jobs.csv")
    # each reads the whole file from the disk (and, on a busy machine, may read cat's own pages
    # too); without the evict the copy reads 0
    assert len(jobs) == 2 and all(b >= 4 << 20 for b in jobs["io_read_bytes"]), list(jobs["io_read_bytes"])
