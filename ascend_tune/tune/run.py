"""Tuning a list of shapes: the results store, worker processes, SIGTERM and Ctrl-C, failures
and times. Nothing here prints; the caller sees progress through a ``Progress``.

* ``run_search`` tunes the shapes a results file does not already hold and saves each one as
  it finishes; an interrupt (Ctrl-C or SIGTERM) stops it with what is done saved.
* ``check_locked`` says, reading only, whether a search would change a results file.
* ``plan`` describes the search spaces and baselines without tuning anything.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ascend_tune.base.errors import AscendTuneError, NoValidConfigError
from ascend_tune.base.executors import Executor, LocalExecutor
from ascend_tune.base.memory import keep_batch_memory
from ascend_tune.hardware import HardwareProfile
from ascend_tune.model.engine import ShapeModel
from ascend_tune.results import format as results
from ascend_tune.results.store import ResultsStore, survey
from ascend_tune.search.strategies import STRATEGIES
from ascend_tune.spec import OperatorSpec
from ascend_tune.spec.shapes import shape_key
from ascend_tune.tune import batch
from ascend_tune.tune.shape import (
    DEFAULT_BUDGET,
    Seeds,
    TuneSettings,
    describe,
    resolve_strategy,
    tune_shape,
)

Entry = dict[str, Any]
Finish = Callable[[str, "Entry | str", float], None]


# ---- progress -------------------------------------------------------------------------------


@dataclass(frozen=True)
class CacheReport:
    """What opening the results file found, before anything is tuned."""

    path: Path
    invalidated: str | None  # why every cached entry was dropped
    pruned: int  # entries dropped because their shape is no longer asked for
    removed_temps: int  # temp files a killed run left beside the file
    reused: int  # shapes taken from the file as they are
    total: int  # shapes asked for
    stale_lock: int | None = None  # pid of a killed search whose lock file was taken over


class Progress:
    """Callbacks of ``run_search``; these defaults do nothing."""

    def opened(self, cache: CacheReport) -> None:
        """The results file is open (only called with an output file)."""

    @contextlib.contextmanager
    def running(self, todo: int) -> Iterator[None]:
        """Wraps the tuning of the ``todo`` shapes not taken from the results file."""
        yield

    def shape_done(self, key: str, entry: Entry | str, seconds: float) -> None:
        """One shape finished: its results entry, or why it has no valid configuration."""

    def served(self, count: int, todo: int) -> None:
        """``count`` of the ``todo`` shapes to tune were answered by the tuning database."""

    def seeded(self, seeds: Mapping[str, Seeds], todo: int) -> None:
        """The searches of these shapes (of ``todo``) start from the tuning database's
        configurations of their nearest recorded shapes."""


# ---- search ---------------------------------------------------------------------------------


@dataclass
class SearchOutcome:
    failures: list[str] = field(default_factory=list)  # one message per shape with no config
    times: dict[str, float] = field(default_factory=dict)  # shape key -> seconds, tuned now
    interrupted: bool = False  # Ctrl-C or SIGTERM stopped the run
    saved: int = 0  # shapes tuned by this run (saved to the file when there is one)
    served: int = 0  # shapes answered by the tuning database (``known``), not tuned
    _entries: Callable[[], Iterator[Entry]] = field(default=lambda: iter(()), repr=False)

    def entries(self) -> Iterator[Entry]:
        """Every entry for the shapes asked for (cached and new), in results-file order."""
        return self._entries()


def in_shape_order(entries: Iterable[Entry], shapes: Sequence[Mapping[str, int]]) -> list[Entry]:
    """``entries`` in the order of ``shapes`` (shapes without an entry are left out)."""
    by_key = {shape_key(e["shape"]): e for e in entries}
    return [by_key[shape_key(s)] for s in shapes if shape_key(s) in by_key]


def document(head: Mapping[str, Any], rows: list[Entry], failures: list[str]) -> dict[str, Any]:
    """The JSON summary of a search: the results header without the spec text and profile
    data, the entries, and the failures."""
    summary = dict(head)
    summary["spec"] = {k: v for k, v in head["spec"].items() if k != "text"}
    summary["hw"] = {k: v for k, v in head["hw"].items() if k != "data"}
    return {**summary, "shapes": rows, "failures": failures}


class _Stop(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C: save what is done, then stop."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Stop()


def run_search(spec: OperatorSpec, hw: HardwareProfile, shapes: Sequence[dict[str, int]],
               settings: TuneSettings, head: Mapping[str, Any], *, jobs: int = 1,
               output: Path | None = None, fresh: bool = False, prune: bool = False,
               progress: Progress | None = None,
               executor: Executor | None = None,
               known: Callable[[Sequence[str]], Mapping[str, Entry]] | None = None,
               record: Callable[[Entry], None] | None = None,
               seeds_for: Callable[[Sequence[dict[str, int]]], Mapping[str, Seeds]] | None = None
               ) -> SearchOutcome:
    """Tune every shape of ``shapes`` that ``output`` does not already hold (all of them with
    ``fresh`` or without ``output``), saving each as it finishes. Entries of other shapes stay
    in the file (tuning data the run-time dispatch uses) unless ``prune``. Ctrl-C and SIGTERM
    end the run early with ``interrupted`` set; everything finished is kept. ``known`` (the
    tuning database) answers shape keys it holds the entry of; ``record`` gets each entry
    tuned now; ``seeds_for`` gives the shapes to tune their starts (the configurations of the
    nearest recorded shapes), computed before any is tuned so that results do not depend on
    the order of shapes or the number of processes."""
    progress = progress or Progress()
    wanted = {shape_key(s) for s in shapes}
    out = SearchOutcome()
    memory: list[Entry] = []  # entries of a run without an output file
    store: ResultsStore | None = None

    def finish(key: str, entry: Entry | str, seconds: float) -> None:
        out.times[key] = seconds
        if isinstance(entry, str):
            out.failures.append(entry)
        else:
            keep(entry)
            if record is not None:
                record(entry)
        progress.shape_done(key, entry, seconds)

    def keep(entry: Entry) -> None:
        if store is not None:
            store.add(entry)
        else:
            memory.append(entry)

    old_sigterm = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        with contextlib.ExitStack() as stack:
            if output is not None:
                store = stack.enter_context(ResultsStore(output, head, fresh,
                                                         keep=wanted if prune else None))
            cached = store.keys if store is not None else set()
            todo = [s for s in shapes if shape_key(s) not in cached]
            if store is not None and output is not None:
                progress.opened(CacheReport(output, store.invalidated, store.pruned,
                                            len(store.removed_temps),
                                            len(shapes) - len(todo), len(shapes),
                                            store.stale_lock))
            if known is not None and todo:
                served = known([shape_key(s) for s in todo])
                for entry in served.values():
                    keep(entry)
                todo = [s for s in todo if shape_key(s) not in served]
                out.served = len(served)
                progress.served(out.served, out.served + len(todo))
            seeds = seeds_for(todo) if seeds_for is not None and todo else {}
            if seeds:
                progress.seeded(seeds, len(todo))
            try:
                with progress.running(len(todo)):
                    _run_shapes(todo, spec, hw, settings, jobs, finish, executor, seeds)
            except KeyboardInterrupt:
                out.interrupted = True
    finally:
        signal.signal(signal.SIGTERM, old_sigterm)
    out.saved = (store.saved if store is not None else len(memory)) - out.served
    if store is not None:
        done = store
        out._entries = lambda: done.entries(wanted)
    else:
        out._entries = lambda: iter(sorted(memory, key=results.sort_key))
    return out


def _tune_worker(spec: OperatorSpec, hw: HardwareProfile, shape: dict[str, int],
                 settings: TuneSettings, seeds: Seeds | None = None
                 ) -> tuple[str, Entry | str, float]:
    start = time.perf_counter()
    try:
        entry: Entry | str = tune_shape(spec, hw, shape, settings, seeds)
    except NoValidConfigError as exc:
        entry = str(exc)
    return shape_key(shape), entry, time.perf_counter() - start


def _worker_init() -> None:
    """Workers leave Ctrl-C to the parent and die with it (Linux: parent-death signal)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    keep_batch_memory()
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _tune_task(spec: OperatorSpec, hw: HardwareProfile, shape: dict[str, int],
               settings: TuneSettings, seeds: Seeds | None = None, *, slot: str | None = None
               ) -> tuple[str, Entry | str, float]:
    return _tune_worker(spec, hw, shape, settings, seeds)


def _run_shapes(todo: list[dict[str, int]], spec: OperatorSpec, hw: HardwareProfile,
                settings: TuneSettings, jobs: int, finish: Finish,
                executor: Executor | None = None,
                seeds: Mapping[str, Seeds] | None = None) -> None:
    """Tune ``todo``: in this process (``jobs`` 1, no executor) or on the executor's workers,
    in batches where the shapes' spaces allow it (:mod:`ascend_tune.tune.batch`: one task
    per batch), else one task per shape. Each shape is finished as its task ends."""
    seeds = seeds or {}
    size = _batch_size(todo, spec, hw, settings)
    groups = [todo[i:i + size] for i in range(0, len(todo), size)] if size else []
    if executor is None:
        if jobs == 1 or len(todo) <= 1 or len(groups) == 1:
            for group in groups:
                for result in _tune_group(spec, hw, group, settings, seeds):
                    finish(*result)
            if not size:
                for s in todo:
                    finish(*_tune_worker(spec, hw, s, settings, seeds.get(shape_key(s))))
            return
        executor = LocalExecutor([None] * jobs, processes=True, initializer=_worker_init)
    # Local processes (--jobs) or e.g. a Ray cluster for a long shape list; leaving the block
    # early (Ctrl-C, SIGTERM, an error) stops the workers: they would finish for nothing.
    with executor:
        if size:
            tasks = ((spec, hw, g, settings, _seeds_of(g, seeds)) for g in groups)
            for _index, results in executor.run(_batch_task, tasks):
                for result in results:
                    finish(*result)
            return
        for _index, result in executor.run(_tune_task, [(spec, hw, s, settings,
                                                         seeds.get(shape_key(s)))
                                                        for s in todo]):
            finish(*result)


def _batch_size(todo: Sequence[dict[str, int]], spec: OperatorSpec, hw: HardwareProfile,
                settings: TuneSettings) -> int:
    """Shapes per batch where ``todo`` can be tuned in batches, else 0."""
    if len(todo) <= 1:
        return 0
    model = ShapeModel(spec, hw, todo[0])
    return batch.batch_size(model) if batch.batchable(spec, settings, model) else 0


def _tune_group(spec: OperatorSpec, hw: HardwareProfile, group: list[dict[str, int]],
                settings: TuneSettings, seeds: Mapping[str, Seeds]
                ) -> list[tuple[str, Entry | str, float]]:
    """One batch (:mod:`ascend_tune.tune.batch`, the entries ``tune_shape`` gives), in order;
    a shape the batch leaves is tuned on its own, and so is one the tuning database seeds
    where its strategy starts from seeds (the exhaustive search a batch runs does not:
    ``tune_shape`` gives it no seeds)."""
    start = time.perf_counter()
    entries = batch.tune_batch(ShapeModel(spec, hw, group[0]), group, settings)
    each = (time.perf_counter() - start) / len(group)
    out: list[tuple[str, Entry | str, float]] = []
    for s, entry in zip(group, entries, strict=True):
        key = shape_key(s)
        seeded = seeds.get(key)
        if entry is None or (seeded is not None and seeded.configs
                             and STRATEGIES[entry["strategy"]].builds_valid):
            out.append(_tune_worker(spec, hw, s, settings, seeded))
        else:
            out.append((key, entry, each))
    return out


def _seeds_of(group: Sequence[dict[str, int]], seeds: Mapping[str, Seeds]
              ) -> dict[str, Seeds]:
    """The seeds of the shapes of ``group`` (what its task needs, not every shape's)."""
    if not seeds:
        return {}
    keys = (shape_key(s) for s in group)
    return {k: seeds[k] for k in keys if k in seeds}


def _batch_task(spec: OperatorSpec, hw: HardwareProfile, group: list[dict[str, int]],
                settings: TuneSettings, seeds: Mapping[str, Seeds], *, slot: str | None = None
                ) -> list[tuple[str, Entry | str, float]]:
    return _tune_group(spec, hw, group, settings, seeds)


# ---- --locked -------------------------------------------------------------------------------


@dataclass(frozen=True)
class LockCheck:
    """Whether a search would leave a results file as it is (read only)."""

    shapes: int  # shapes asked for
    invalidated: str | None  # the file answers other inputs: every shape would be retuned
    missing: int  # shapes that would be tuned
    pruned: int  # entries that would be dropped (only with prune)
    missing_keys: tuple[str, ...] = ()  # their shape keys, in the order asked for
    pruned_keys: tuple[str, ...] = ()

    @property
    def up_to_date(self) -> bool:
        return self.invalidated is None and not self.missing and not self.pruned


def check_locked(output: Path | None, head: Mapping[str, Any], wanted: Sequence[str],
                 fresh: bool, prune: bool = False) -> LockCheck:
    if output is None:
        raise AscendTuneError("--locked needs -o: it checks a results file")
    if fresh:
        raise AscendTuneError("--locked and --fresh contradict each other")
    keys = list(dict.fromkeys(wanted))
    found = survey(output, head, set(keys) if prune else None)
    if found.invalidated is not None:
        return LockCheck(len(keys), found.invalidated, len(keys), 0, tuple(keys))
    missing = tuple(k for k in keys if k not in found.cached)
    return LockCheck(len(keys), None, len(missing), found.pruned, missing,
                     tuple(found.pruned_keys))


# ---- --dry-run ------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlannedShape:
    key: str
    space_size: int  # configurations in the search space
    strategy: str  # the one that would run ("auto" resolved)
    baseline_us: float | None  # predicted latency of the spec's baseline, None if invalid
    baseline_violates: str | None  # the constraint an invalid baseline breaks


def plan(spec: OperatorSpec, hw: HardwareProfile, shapes: Sequence[dict[str, int]],
         strategy: str, budget: int = DEFAULT_BUDGET) -> list[PlannedShape]:
    """Search space size, strategy and baseline of each shape; nothing is tuned."""
    planned = []
    for s in shapes:
        model = ShapeModel(spec, hw, s)
        base = describe(model, model.baseline_values())
        chosen = resolve_strategy(model, strategy, budget)[0]
        valid = bool(base["valid"])
        planned.append(PlannedShape(
            shape_key(s), model.space_size, chosen,
            float(base["predicted"]["latency_us"]) if valid else None,
            None if valid else str(base["violates"])))
    return planned


@dataclass(frozen=True)
class SearchResult:
    """What a ``search`` run did; ``entries()`` reads the results file when there is one."""

    header: dict[str, Any]  # the results file's header
    shapes: list[dict[str, int]]  # as asked for, checked
    failures: list[str]  # one message per shape with no valid configuration
    times: dict[str, float]  # shape key -> seconds, for the shapes tuned by this run
    interrupted: bool  # Ctrl-C or SIGTERM stopped the run (what finished is saved)
    saved: int  # shapes tuned by this run
    _entries: Callable[[], Iterator[dict[str, Any]]] = field(repr=False)

    def __repr__(self) -> str:  # short: the header embeds the spec text and profile
        return (f"SearchResult({self.header['spec']['name']!r} on {self.header['hw']['name']!r}, "
                f"shapes={len(self.shapes)}, saved={self.saved}, failures={len(self.failures)}, "
                f"interrupted={self.interrupted})")

    def entries(self) -> list[dict[str, Any]]:
        """The results entries (cached and new) in the order of ``shapes``."""
        return in_shape_order(self._entries(), self.shapes)

    def document(self) -> dict[str, Any]:
        """The ``search --json`` document."""
        return document(self.header, self.entries(), self.failures)
