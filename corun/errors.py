"""Errors that reach the user as one line, never as a traceback."""

from __future__ import annotations

import functools
import sys


class CorunError(Exception):
    """A user-facing error: the message is printed as one line, exit code `exit_code`."""

    exit_code = 1

    def __init__(self, message: str, exit_code: int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class ConfigError(CorunError):
    """Invalid configuration, manifest or run spec: `<file>: <key>: <value> (expected ...)`."""

    exit_code = 2

    def __init__(self, source: str, key: str, value: object, expected: str):
        self.source, self.key, self.value, self.expected = source, key, value, expected
        shown = value if isinstance(value, str) else repr(value)
        if isinstance(value, str):
            shown = repr(value)
        super().__init__(f"{source}: {key or '(top level)'}: {shown} (expected {expected})")


class MissingTool(CorunError):
    """A program corun needs is not installed; names the Ansible role that installs it."""

    exit_code = 3

    def __init__(self, tool: str, role: str, purpose: str = ""):
        self.tool, self.role = tool, role
        why = f" for {purpose}" if purpose else ""
        super().__init__(
            f"{tool} not found{why}: install it with the '{role}' role (ansible-playbook site.yml --tags {role})"
        )


def missing(metric: str, reason: str, source: str) -> dict:
    """A measurement the machine could not make: recorded, never filled in."""
    return {"metric": metric, "reason": reason, "source": source}


def one_line_errors(main=None, *, prefix: str = "corun"):
    """Decorate a command's main(argv) -> exit code: a CorunError becomes one line on stderr
    (`<prefix>: <message>`) and its exit code, Ctrl-C exit code 130; never a traceback.

    The one implementation of the command-line error tail: `corun`, `python -m experiments`,
    `python -m corun.machine.elevator`, the testbed and analysis commands and scripts use it."""

    def wrap(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs) -> int:
            try:
                return fn(*args, **kwargs)
            except CorunError as exc:
                print(f"{prefix}: {exc}", file=sys.stderr)
                return exc.exit_code
            except KeyboardInterrupt:
                print(f"{prefix}: interrupted", file=sys.stderr)
                return 130

        return run

    return wrap(main) if main is not None else wrap
