"""Where a provisioning run's time went: per role and the slowest tasks, printed at the end.

Enabled with `ANSIBLE_CALLBACKS_ENABLED=task_times` (before `make provision` too). A task's
time is from its start to its last host's result, so with several hosts it is the slowest
host's; the roles' totals add their tasks' times. `CORUN_TASK_TIMES_TOP` (default 15) sets how
many tasks are listed.
"""

from __future__ import annotations

import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
    name: task_times
    type: aggregate
    short_description: time per role and the slowest tasks of a playbook run
    description:
      - Prints, when the playbook ends, the summed time of each role's tasks and the slowest tasks.
    requirements:
      - enabled in ANSIBLE_CALLBACKS_ENABLED
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "task_times"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._t0 = time.monotonic()
        self._open: dict[str, tuple[str, str, float]] = {}  # uuid -> (role, name, start)
        self._times: dict[str, tuple[str, str, float]] = {}  # uuid -> (role, name, seconds)

    def _start(self, task) -> None:
        role = task._role.get_name() if task._role else "(play)"
        self._open[task._uuid] = (role, task.name or task.action, time.monotonic())

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._start(task)

    def v2_playbook_on_handler_task_start(self, task):
        self._start(task)

    def _done(self, result) -> None:
        uuid = result._task._uuid
        if uuid in self._open:
            role, name, start = self._open[uuid]
            self._times[uuid] = (role, name, time.monotonic() - start)

    v2_runner_on_ok = v2_runner_on_failed = v2_runner_on_skipped = v2_runner_on_unreachable = (
        lambda self, result, *args, **kwargs: self._done(result)
    )

    def v2_playbook_on_stats(self, stats):
        total = time.monotonic() - self._t0
        roles: dict[str, float] = {}
        for role, _name, secs in self._times.values():
            roles[role] = roles.get(role, 0.0) + secs
        top = int(os.environ.get("CORUN_TASK_TIMES_TOP", "15"))
        lines = [f"task_times: {total:.1f} s in all; per role (s):"]
        lines += [f"  {secs:8.1f}  {role}" for role, secs in sorted(roles.items(), key=lambda x: -x[1])]
        lines.append(f"task_times: the {top} slowest tasks (s):")
        slow = sorted(self._times.values(), key=lambda x: -x[2])[:top]
        lines += [f"  {secs:8.1f}  {role} : {name}" for role, name, secs in slow]
        self._display.display("\n".join(lines))
