"""A stand-in for corun.run.runner.Runner, for tests of the runner's remeasure loop: every attempt
"measures" len(jobs) x per_job_s seconds and writes its run as corun.run.recorder.WrittenRun does
(the part the loop reads), so a test sees which specs the loop asked for and what it kept."""

import json

from corun.run import runner


class _Written:
    def __init__(self, spec, out, attempt, per_job_s):
        self.spec, self.out, self.tmp = spec, out, out.parent / f"{out.name}.incomplete"
        self.tmp.mkdir(parents=True, exist_ok=True)
        (self.tmp / "spec.json").write_text(json.dumps(spec))
        self.meta = {"duration_s": per_job_s * len(spec["jobs"]), "run_id": f"a{attempt}", "machine_cpu": {}}

    def ends_in_error(self):
        return False

    def set_aside(self, dest):
        self.tmp.rename(dest)

    def finish(self):
        (self.tmp / "metadata.json").write_text(json.dumps(self.meta))
        self.tmp.rename(self.out)
        return self.out


def fake_runner(monkeypatch, per_job_s: float) -> list:
    """Put the stand-in in place of runner.Runner; the specs it is asked to measure, in order."""
    measured = []

    class FakeRunner:
        def __init__(self, spec, out, source, attempt, **kw):
            self.w = _Written(spec, out, attempt, per_job_s)
            measured.append(spec)

        def measure(self):
            return self.w

    monkeypatch.setattr(runner, "Runner", FakeRunner)
    return measured
