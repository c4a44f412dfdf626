"""The local process pool an interrupted search aborts is gone when ``close`` returns, so the
interpreter's exit hook has nothing left to wake or join (Python 3.11 printed "OSError: Bad
file descriptor" after an interrupted search's last line, or waited on a killed worker)."""

from __future__ import annotations

import concurrent.futures.process as cf_process
import time

from ascend_tune.base import executors


def _nap(seconds: float, *, slot: object = None) -> float:
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
