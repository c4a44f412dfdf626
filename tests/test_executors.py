"""The local process pool an interrupted search aborts is gone when ``close`` returns, so the
interpreter's exit hook has nothing left to wake or join (Python 3.11 printed "OSError: Bad
file descriptor" after an interrupted search's last line, or waited on a killed worker)."""

from __future__ import annotations

import concurrent.futures.process as cf_process
import subprocess
import sys
import time
from pathlib import Path

from ascend_tune.base import executors


def _nap(seconds: float, payload: bytes = b"", *, slot: object = None) -> float:
    time.sleep(seconds)
    return seconds


def test_an_aborted_process_pool_is_torn_down_before_close_returns() -> None:
    executor = executors.LocalExecutor([None, None], processes=True)
    with executor:
        pool = executor._pool
        assert pool is not None
        for _ in range(3):  # two running, one queued
            executor._submit(_nap, (60.0,), None)
        deadline = time.monotonic() + 60
        while len(getattr(pool, "_processes", None) or {}) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = list(pool._processes.values())  # type: ignore[attr-defined]
        assert len(workers) == 2 and all(p.is_alive() for p in workers)
        manager = pool._executor_manager_thread  # type: ignore[attr-defined]
        assert manager is not None and manager in cf_process._threads_wakeups
        executor.close(abort=True)
        assert not any(p.is_alive() for p in workers), "workers outlived close"
        assert not manager.is_alive(), "the pool's manager thread outlived close"
        assert manager not in cf_process._threads_wakeups, "the exit hook would still wake it"


_ABORT_WITH_A_QUEUED_TASK = """
import sys, time
sys.path.insert(0, sys.argv[1])
from ascend_tune.base import executors
from test_executors import _nap
executor = executors.LocalExecutor([None, None], processes=True)
with executor:
    pool = executor._pool
    # Two tasks run, a third waits in the call pipe; each carries 1 MB (a task's spec and
    # profile pickle is ~80 KB, more than a pipe holds).
    for _ in range(3):
        executor._submit(_nap, (60.0, b"x" * (1 << 20)), None)
    while len(pool._processes) < 2:
        time.sleep(0.05)
    time.sleep(1.0)
    executor.close(abort=True)
print("closed", flush=True)
"""


def test_a_process_that_aborted_its_pool_exits_though_a_task_was_queued(tmp_path: Path) -> None:
    # Without cancel_join_thread the interpreter's exit waits forever for the call queue's
    # feeder thread, blocked writing the third task into a pipe no worker reads (an
    # interrupted `search --jobs 2` that never exited).
    proc = subprocess.Popen([sys.executable, "-c", _ABORT_WITH_A_QUEUED_TASK,
                             str(Path(__file__).parent)], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError("the process hung at exit after aborting its pool") from None
    assert (proc.returncode, out) == (0, "closed\n"), err
