"""Where independent tasks run: on this host (default) or on a Ray cluster (several hosts).

An :class:`Executor` runs ``fn(*task, slot=SLOT)`` for every task and hands back each result
as it finishes. Its lifecycle:

1. construct: options only; nothing starts, nothing connects;
2. ``with executor:`` starts the engine (Ray: connects to the cluster, or starts a local one);
3. ``executor.run(fn, tasks)`` yields ``(task index, result)`` in finishing order. At most
   ``executor.slots`` tasks run at once and a slot runs one task at a time: with devices, a
   slot is a device and ``slot`` is its id, so one NPU never runs two candidates together;
4. leaving the ``with`` block (done, an error, Ctrl-C or SIGTERM) drops the queued tasks and
   stops the running ones (running child processes are the task's own business: see
   ``ascend_tune.hil.command`` for how measurement commands die with their worker).

``fn`` and the tasks must be picklable for the process and Ray engines (module-level
functions, plain data). An exception raised by ``fn`` stops the run and propagates: tasks
report expected failures in their result instead.

Engines: :class:`LocalExecutor` (threads, for tasks whose work is a child process, or a
process pool, for CPU-bound tasks such as tuning) and :class:`RayExecutor` (``pip install
'ascend-tune[ray]'``; tasks ask for Ray resources, a device is the custom resource ``NPU``
and Ray itself sets ``ASCEND_RT_VISIBLE_DEVICES`` for the task).
"""

from __future__ import annotations

import concurrent.futures as cf
import concurrent.futures.process as cf_process
import contextlib
import importlib
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from multiprocessing import get_context
from typing import Any

from ascend_tune.base.errors import AscendTuneError

Task = tuple[Any, ...]
Slot = str | None
_POLL_S = 0.5  # how often a waiting driver wakes up (Ctrl-C and SIGTERM handlers run then)


def parse_devices(text: str) -> list[str]:
    """``0-7``, ``0,2,4`` or ``0-3,6`` as device ids in order, each once."""
    out: list[str] = []
    for part in text.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        try:
            first = int(lo)
            last = int(hi) if sep else first
        except ValueError:
            raise AscendTuneError(f"--devices '{text}': expected ids and ranges such as 0-7 "
                                  "or 0,2,4") from None
        if first < 0 or last < first or last - first >= 4096:
            raise AscendTuneError(f"--devices '{text}': '{part}' is not a range of device ids")
        for dev in range(first, last + 1):
            if str(dev) not in out:
                out.append(str(dev))
    return out


class Executor:
    """Base: the slot bookkeeping every engine shares. Engines implement ``_submit`` (start
    one task, return a handle), ``_wait`` (handles that finished) and ``_result``."""

    def __init__(self, slots: Sequence[Slot]) -> None:
        if not slots:
            raise AscendTuneError("an executor needs at least one slot")
        self._slot_ids: list[Slot] = list(slots)

    @property
    def slots(self) -> int:
        return len(self._slot_ids)

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        self.close(abort=exc_type is not None)

    def close(self, abort: bool = True) -> None:
        """Release the engine; with ``abort`` stop whatever still runs. Idempotent."""

    def run(self, fn: Callable[..., Any], tasks: Iterable[Task]) -> Iterator[tuple[int, Any]]:
        """``tasks`` is consumed as slots free up (a generator can prepare each task just in
        time)."""
        free = list(reversed(self._slot_ids))
        queue = enumerate(tasks)
        running: dict[Any, tuple[int, Slot]] = {}
        more = True
        try:
            while more or running:
                while more and free:
                    item = next(queue, None)
                    if item is None:
                        more = False
                        break
                    slot = free.pop()
                    running[self._submit(fn, item[1], slot)] = (item[0], slot)
                if not running:
                    break
                for handle in self._wait(list(running)):
                    index, slot = running.pop(handle)
                    free.append(slot)
                    yield index, self._result(handle)
        finally:
            if running:
                self._cancel(list(running))

    def _submit(self, fn: Callable[..., Any], task: Task, slot: Slot) -> Any:
        raise NotImplementedError

    def _wait(self, handles: list[Any]) -> list[Any]:
        raise NotImplementedError

    def _result(self, handle: Any) -> Any:
        raise NotImplementedError

    def _cancel(self, handles: list[Any]) -> None:
        raise NotImplementedError


class LocalExecutor(Executor):
    """This host: one thread per slot (``processes=False``; the work is a child process the
    task starts and waits for) or a spawn-started process pool (CPU-bound tasks)."""

    def __init__(self, slots: Sequence[Slot], processes: bool = False,
                 initializer: Callable[[], None] | None = None) -> None:
        super().__init__(slots)
        self.processes = processes
        self._initializer = initializer
        self._pool: cf.Executor | None = None
        self._added_env: list[str] = []

    def __enter__(self) -> LocalExecutor:
        if self.processes:
            # Workers start while the pool runs (spawned as tasks arrive) and read these then.
            self._added_env = [k for k in _ONE_THREAD_ENV if k not in os.environ]
            os.environ.update({k: "1" for k in self._added_env})
            try:
                self._pool = cf.ProcessPoolExecutor(max_workers=self.slots,
                                                    mp_context=get_context("spawn"),
                                                    initializer=self._initializer)
            except BaseException:
                self._restore_env()
                raise
        else:
            self._pool = cf.ThreadPoolExecutor(max_workers=self.slots,
                                               thread_name_prefix="ascend-tune")
        return self

    def close(self, abort: bool = True) -> None:
        if self._pool is None:
            return
        pool, self._pool = self._pool, None
        self._restore_env()
        if not abort:
            pool.shutdown()
            return
        workers = list((getattr(pool, "_processes", None) or {}).values())
        manager = getattr(pool, "_executor_manager_thread", None)  # shutdown forgets it
        calls = getattr(pool, "_call_queue", None)
        pool.shutdown(wait=False, cancel_futures=True)
        # Python 3.11 has no public way to stop running pool processes (3.14 adds
        # terminate_workers); they would finish their task for nothing.
        for proc in workers:
            proc.terminate()
        # Tear the pool down before returning: left to the interpreter's exit hook, Python
        # 3.11 wakes the pool's manager thread through a pipe that thread may have closed
        # already ("OSError: Bad file descriptor" printed after an interrupted search's last
        # line) and joins the call queue's feeder thread (below).
        for proc in workers:
            proc.join(timeout=_TEARDOWN_S)
        if calls is not None:
            # A queued task (a spec and profile pickle, ~80 KB) may sit half-written in the
            # call pipe that no worker reads any more: its feeder thread blocks, and so would
            # the manager thread joining it and the exit hooks joining both. Closing the read
            # end unblocks the write (what CPython does for a broken pool, gh-94777).
            with contextlib.suppress(OSError, AttributeError):
                calls._reader.close()
            calls.cancel_join_thread()
        if manager is not None:
            manager.join(timeout=_TEARDOWN_S)
            if not manager.is_alive():
                getattr(cf_process, "_threads_wakeups", {}).pop(manager, None)

    def _restore_env(self) -> None:
        for k in self._added_env:
            os.environ.pop(k, None)
        self._added_env = []

    def _submit(self, fn: Callable[..., Any], task: Task, slot: Slot) -> Any:
        if self._pool is None:
            raise RuntimeError("use the executor in a with block")
        return self._pool.submit(fn, *task, slot=slot)

    def _wait(self, handles: list[Any]) -> list[Any]:
        while True:
            done, _pending = cf.wait(handles, timeout=_POLL_S, return_when=cf.FIRST_COMPLETED)
            if done:
                return [h for h in handles if h in done]  # submission order: deterministic

    def _result(self, handle: Any) -> Any:
        return handle.result()

    def _cancel(self, handles: list[Any]) -> None:
        for h in handles:
            h.cancel()


# How long an aborted pool's workers and manager thread get to end (each).
_TEARDOWN_S = 5.0

# A worker process runs on one core. numpy's BLAS (OpenBLAS) otherwise starts a thread per core
# in every worker, and those threads spin between calls on the cores the other workers need
# (100 matmul shapes, --jobs 2: 14.8 s -> 11.8 s wall). Set for the workers while the pool
# lives, unless the user set them.
_ONE_THREAD_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _import_ray() -> Any:
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise AscendTuneError("--executor ray needs Ray: pip install 'ascend-tune[ray]'"
                              ) from None


class RayExecutor(Executor):
    """A Ray cluster. Each task asks for ``resources`` (e.g. ``{"NPU": 1}``: Ray places it on
    a host with a free device and sets ``ASCEND_RT_VISIBLE_DEVICES``); the slots are the
    cluster's total of the scarcest resource asked for, read when entering. ``address`` None
    joins the cluster this process is connected to, else starts a local one."""

    def __init__(self, address: str | None, resources: Mapping[str, float],
                 check: Callable[[list[dict[str, Any]]], None] | None = None,
                 max_retries: int = 0) -> None:
        super().__init__([None])
        self.address = address
        self.resources = dict(resources)
        # Called with the cluster's live nodes (``ray.nodes()``) once joined: may refuse it.
        self.check = check
        # Tries of a task whose worker died (killed, its host lost) on another worker: only
        # for tasks that are safe to run again (measure's node-side recording is).
        self.max_retries = int(max_retries)
        self._ray: Any = None
        self._started = False
        self._remote: dict[Callable[..., Any], Any] = {}

    def __enter__(self) -> RayExecutor:
        ray = _import_ray()
        if not ray.is_initialized():
            try:
                # Ray's INFO lines ("Connecting to existing Ray cluster ...") would come
                # before a one-line refusal on stderr.
                ray.init(address=self.address, include_dashboard=False, log_to_driver=False,
                         logging_level=logging.WARNING)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise AscendTuneError(f"--address {self.address}: cannot join the Ray "
                                      f"cluster: {str(exc).splitlines()[0][:200]}") from None
            self._started = True
        self._ray = ray
        try:
            if self.check is not None:
                self.check([n for n in ray.nodes() if n.get("Alive")])
            self._slot_ids = [None] * self._capacity(ray.cluster_resources())
        except BaseException:
            self.close()
            raise
        return self

    def _capacity(self, total: Mapping[str, float]) -> int:
        """How many tasks the cluster runs at once: its total of the scarcest resource."""
        counts = []
        for name, amount in self.resources.items():
            have = float(total.get(name, 0.0))
            if have < amount:
                raise AscendTuneError(
                    f"the Ray cluster has {have:g} '{name}' resource(s); each task needs "
                    f"{amount:g} (start each worker host with ray start --resources "
                    f"'{{{self._start_resources()}}}', N its devices)")
            counts.append(int(have // amount))
        return max(1, min(counts) if counts else 1)

    def _start_resources(self) -> str:
        """What a worker host advertises for these tasks, for the refusal's hint."""
        names = [name for name in self.resources if name != "CPU"] or list(self.resources)
        return ", ".join(f'"{name}": N' for name in names)

    def close(self, abort: bool = True) -> None:
        if self._ray is not None and self._started:
            self._ray.shutdown()
        self._ray = None
        self._started = False

    def _submit(self, fn: Callable[..., Any], task: Task, slot: Slot) -> Any:
        if self._ray is None:
            raise RuntimeError("use the executor in a with block")
        remote = self._remote.get(fn)
        if remote is None:
            remote = self._ray.remote(fn).options(
                resources={k: v for k, v in self.resources.items() if k != "CPU"},
                # A task that waits on a device needs no CPU of its own.
                num_cpus=self.resources.get("CPU", 0), max_retries=self.max_retries)
            self._remote[fn] = remote
        return remote.remote(*task, slot=slot)

    def _wait(self, handles: list[Any]) -> list[Any]:
        while True:
            done, _rest = self._ray.wait(handles, num_returns=1, timeout=_POLL_S)
            if done:
                return list(done)

    def _result(self, handle: Any) -> Any:
        return self._ray.get(handle)

    def _cancel(self, handles: list[Any]) -> None:
        if self._ray is None:
            return
        for h in handles:
            # A task that just finished cannot be cancelled; Ray's error types vary by version.
            with contextlib.suppress(Exception):
                self._ray.cancel(h, force=True)


def make(engine: str, *, slots: Sequence[Slot], address: str | None = None,
         resources: Mapping[str, float] | None = None, processes: bool = False,
         initializer: Callable[[], None] | None = None) -> Executor:
    """The executor named on the command line (``--executor local|ray``)."""
    if engine == "local":
        if address is not None:
            raise AscendTuneError("--address is for --executor ray")
        return LocalExecutor(slots, processes, initializer)
    if engine == "ray":
        return RayExecutor(address, resources or {"CPU": 1})
    raise AscendTuneError(f"--executor '{engine}' is not one of: local, ray")
