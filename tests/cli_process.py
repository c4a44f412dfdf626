"""Run ``ascend-tune`` as its own process, the way a user's shell does, without paying for a
fresh interpreter each time.

A CLI test wants a separate process: its own exit code, its own stdout and stderr, a crash or
``sys.exit`` that cannot take the test run down, and no state shared with the test. Starting
``python -m ascend_tune`` gives that, but three fifths of a second of every call is the
interpreter importing numpy, typer, jinja2 and the package again, and the suite makes
hundreds of calls. This module forks the test process instead (it has imported all of that
already): the child points fds 0/1/2 at files, takes the command's environment, working
directory and argv, resets the signal dispositions a fresh interpreter would have, runs the
same ``ascend_tune.cli.main`` that ``python -m ascend_tune`` runs, and leaves with its exit
code. What a forked child cannot reproduce (a command piped into ``head``, signals sent to a
running command, the installed console script) is tested with real subprocesses elsewhere.

``ASCEND_TUNE_TEST_SPAWN=1`` makes every call a real ``python -m ascend_tune`` subprocess
(``.ci/run`` runs the CLI test files once that way, so the fork cannot hide an import that
only the test process happened to make).
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path

SPAWN = os.environ.get("ASCEND_TUNE_TEST_SPAWN") == "1"


def run(args: Sequence[str], *, cwd: Path | str | None = None,
        env: Mapping[str, str] | None = None, input: str | None = None,
        timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """``subprocess.run([python, -m, ascend_tune, *args], capture_output=True, text=True)``."""
    argv = [sys.executable, "-m", "ascend_tune", *args]
    environ = dict(os.environ if env is None else env)
    if SPAWN or not hasattr(os, "fork"):
        return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=environ,
                              input=input, timeout=timeout)
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as stdout, \
            tempfile.TemporaryFile() as stderr:
        if input is not None:
            stdin.write(input.encode())
            stdin.seek(0)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child leaves through os._exit
            _child([str(a) for a in args], cwd, environ,
                   stdin.fileno() if input is not None else None, stdout.fileno(),
                   stderr.fileno())
        code = _wait(pid, argv, timeout)
        stdout.seek(0)
        stderr.seek(0)
        return subprocess.CompletedProcess(argv, code, _text(stdout.read()),
                                           _text(stderr.read()))


def _text(data: bytes) -> str:
    # What subprocess.run(text=True) does: decode, and universal newlines.
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8").read()


def _wait(pid: int, argv: list[str], timeout: float | None) -> int:
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, 0 if deadline is None else os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if deadline is not None and time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise subprocess.TimeoutExpired(argv, timeout or 0.0)
        time.sleep(0.01)


def _child(args: list[str], cwd: Path | str | None, env: dict[str, str], stdin: int | None,
           stdout: int, stderr: int) -> None:  # pragma: no cover - runs in the fork
    code = 1
    try:
        os.dup2(os.open(os.devnull, os.O_RDONLY) if stdin is None else stdin, 0)
        os.dup2(stdout, 1)
        os.dup2(stderr, 2)
        # A fresh interpreter's streams over the new fds (the test's were pytest's captures).
        streams = {
            "stdin": io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8"),
            "stdout": io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8"),
            "stderr": io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                       errors="backslashreplace", line_buffering=True),
        }
        for name, stream in streams.items():
            setattr(sys, name, stream)
            setattr(sys, f"__{name}__", stream)
        # The dispositions a fresh interpreter starts with (pytest's may differ).
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for name in ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGCHLD", "SIGALRM"):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        os.environ.clear()
        os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        sys.argv = [str(Path(sys.modules["ascend_tune"].__file__ or "").parent / "__main__.py"),
                    *args]
        from ascend_tune.cli import main

        main()
        code = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:  # sys.exit("message"): printed, exit 1, as the interpreter does
            sys.stderr.write(f"{exc.code}\n")
            code = 1
    except BaseException:
        traceback.print_exc()
    finally:
        for out in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                out.flush()
        os._exit(code)
