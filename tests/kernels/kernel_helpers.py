"""Helpers shared by the kernel tests: the normal and ASan/UBSan builds, running a kernel with
sanitizer reports made fatal, its one-line JSON result, and a disk-backed scratch folder."""

import json
import os
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
KERNELS = REPO / "kernels"
MIB = 1 << 20
# A sanitizer report must not pass for the kernel's own exit code 1.
SANITIZER_EXIT = 99
ENV = dict(
    os.environ,
    ASAN_OPTIONS=f"exitcode={SANITIZER_EXIT}",
    UBSAN_OPTIONS=f"halt_on_error=1:print_stacktrace=1:exitcode={SANITIZER_EXIT}",
)


def builds(kernel):
    """{"normal": path, "asan": path} of one kernel's two builds."""
    return {
        "normal": KERNELS / "build" / kernel,
        "asan": KERNELS / "build" / "asan" / kernel,
    }


def make_builds():
    for target in ("all", "asan"):
        proc = subprocess.run(["make", "-C", str(KERNELS), target], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def run_kernel(binary, args, timeout):
    """(exit code, stdout bytes, stderr text) of BINARY with ARGS (numbers given as text); fails
    on a sanitizer report."""
    argv = [a if isinstance(a, str | bytes | os.PathLike) else str(a) for a in args]
    proc = subprocess.run([binary, *argv], capture_output=True, env=ENV, timeout=timeout)
    stderr = proc.stderr.decode(errors="replace")
    assert "Sanitizer" not in stderr and "runtime error:" not in stderr, stderr
    return proc.returncode, proc.stdout, stderr


def skip_if_skipped(kernel, code, out, err):
    """pytest.skip() on the kernel's exit code 4, after checking its message."""
    if code == 4:
        assert err.startswith(f"{kernel}: skipped: "), err
        assert out == b""
        pytest.skip(err.strip())


def ok_result(kernel, result, quiet=False):
    """The JSON result of RESULT, a kernel's (exit code, stdout, stderr), that succeeded (with
    nothing on stderr where QUIET); pytest.skip() on its exit code 4."""
    code, out, err = result
    skip_if_skipped(kernel, code, out, err)
    assert code == 0 and (err == "" or not quiet), err
    return json_result(out)


def kernel_runs(kernel, timeout, check, quiet=False):
    """(run, run_ok) for KERNEL's tests: run(binary, args) is run_kernel with TIMEOUT seconds;
    run_ok(binary, args) the JSON result of a run that must succeed (with nothing on stderr where
    QUIET), on which CHECK, the kernel's own invariant, must pass; pytest.skip() (after checking
    the skip message) where the kernel exits 4."""

    def run(binary, args):
        return run_kernel(binary, args, timeout)

    def run_ok(binary, args):
        result = ok_result(kernel, run(binary, args), quiet)
        check(result)
        return result

    return run, run_ok


def json_result(out):
    """The one JSON line on stdout, with a passed self-check."""
    text = out.decode("utf-8")  # strict: the escaper must emit valid UTF-8
    assert text.endswith("\n") and text.count("\n") == 1, text
    result = json.loads(text)
    assert result["check"] == "ok"
    return result


@contextmanager
def disk_backed_dir(tmp, suits):
    """TMP if suits(TMP), else a scratch folder under results/ if it suits
    (removed afterwards), else TMP."""
    if suits(tmp):
        yield tmp
        return
    (REPO / "results").mkdir(exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".test-kernels-", dir=REPO / "results"))
    try:
        yield scratch if suits(scratch) else tmp
    finally:
        shutil.rmtree(scratch)


@contextmanager
def per_test_dir(parent, request):
    """A folder of PARENT named after the running test, removed afterwards."""
    path = parent / request.node.name.replace("/", "_")[:80]
    path.mkdir()
    yield path
    shutil.rmtree(path)


def assert_one_line_error(kernel, result, code, message):
    """RESULT, a kernel's (exit code, stdout, stderr), is exit CODE with nothing on stdout and
    one line "<kernel>: ..." on stderr that holds MESSAGE."""
    got, out, err = result
    assert (got, out) == (code, b""), err
    assert err.startswith(f"{kernel}: ") and message in err and err.count("\n") == 1, err


def assert_run_recorded(kernel, result, binary, args, before, after):
    """RESULT names KERNEL and its version, this host and its kernel release, the command line
    (BINARY with ARGS) and a start time between BEFORE and AFTER (epoch seconds, 1 s slack)."""
    assert result["kernel"] == kernel
    assert isinstance(result["kernel_version"], str) and result["kernel_version"]
    assert result["host"] == os.uname().nodename
    assert result["kernel_release"] == os.uname().release
    assert result["cmdline"] == [str(binary), *args]
    assert before - 1 <= result["start_epoch_s"] <= after + 1


def assert_help_lists(result, fragments):
    """RESULT, a kernel's --help (exit code, stdout, stderr), exits 0 and names every one of
    FRAGMENTS (options, units, defaults)."""
    code, out, err = result
    assert (code, err) == (0, "")
    text = out.decode()
    assert [f for f in fragments if f not in text] == []


def assert_version(kernel, result):
    """RESULT, a kernel's --version (exit code, stdout, stderr), prints "<kernel> <version>"."""
    code, out, err = result
    assert (code, err) == (0, "")
    assert out.decode().startswith(f"{kernel} ")
