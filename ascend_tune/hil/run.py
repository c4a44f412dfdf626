"""Measuring a results file: one job per (shape, candidate) not measured yet, run by an
executor, each outcome saved as it arrives. Nothing here prints; the caller sees progress
through a ``Progress``.

Resumable: each measured candidate is journaled through the results store (the whole entry,
replacing the shape's previous one), so a killed run keeps everything it measured and the
next run measures only the rest. Ctrl-C and SIGTERM stop the run with what is done saved.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import signal
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.base.executors import Executor
from ascend_tune.emit import blob as tiling_blob
from ascend_tune.emit import render as emit
from ascend_tune.hil import candidates as cands
from ascend_tune.hil.command import (
    Command,
    Job,
    Outcome,
    kill_running,
    remove_killed_run_dirs,
    run_job,
)
from ascend_tune.model.engine import ShapeModel
from ascend_tune.results import format as results
from ascend_tune.results.store import ResultsStore
from ascend_tune.spec.shapes import shape_key
from ascend_tune.tune.shape import describe

Entry = dict[str, Any]


class Progress:
    """Callbacks of ``run_measure``; these defaults do nothing."""

    def opened(self, total: int, done: int) -> None:
        """The file holds ``total`` candidates, ``done`` of them measured already."""

    @contextlib.contextmanager
    def running(self, todo: int) -> Iterator[None]:
        """Wraps measuring the ``todo`` candidates left."""
        yield

    def candidate_done(self, outcome: Outcome, entry: Mapping[str, Any]) -> None:
        """One candidate measured (or failed); ``entry`` is its shape's entry as saved."""


@dataclass
class MeasureOutcome:
    entries: list[Entry] = field(default_factory=list)  # every entry, shape order, as saved
    measured: int = 0  # candidates measured by this run
    baselines: int = 0  # baseline configurations measured by this run (``baseline``)
    failures: list[str] = field(default_factory=list)  # one per candidate that failed now
    invocations: int = 0  # command runs this run started
    reused: int = 0  # candidates the tuning database had measured (``prior``): not run
    interrupted: bool = False
    removed_run_dirs: list[Path] = field(default_factory=list)  # left by killed workers


def names(bundle: emit.Bundle) -> list[str]:
    """Shape variables and parameters: the placeholders a command may use besides the
    built-in ones."""
    return [*bundle.spec.shape_vars, *bundle.spec.params]


def load(path: Path) -> emit.Bundle:
    """The results file with its embedded spec and profile, every winner re-checked."""
    return emit.load_bundle(results.read_all(path), str(path))


def checked(bundle: emit.Bundle, model: ShapeModel, entry: Mapping[str, Any], index: int
            ) -> tuple[dict[str, int], dict[str, Any]]:
    """Candidate ``index``'s configuration (``cands.BASELINE``: the spec's baseline for the
    shape) re-checked on the embedded spec and profile, and described afresh (the file is an
    input: nothing in it reaches the command unchecked)."""
    spec = bundle.spec
    if index == cands.BASELINE:
        where = f"shape {shape_key(entry['shape'])} baseline"
        config = model.baseline_values()
        base = entry.get("baseline")
        recorded = base.get("config") if isinstance(base, Mapping) else None
        if recorded != config:
            raise AscendTuneError(f"{where}: the file's baseline {recorded!r:.80} is not the "
                                  f"spec's {config!r:.80}; the results file is stale or was "
                                  "edited")
    else:
        where = f"shape {shape_key(entry['shape'])} candidate {index}"
        config = cands.candidates(entry)[index]["config"]
    unknown = [k for k in config if k not in spec.params]
    if unknown or any(isinstance(config.get(p), bool) or not isinstance(config.get(p), int)
                      for p in spec.params):
        raise AscendTuneError(f"{where}: 'config' must map each parameter of {spec.name} to an "
                              "integer; rerun `ascend-tune search --top-k`")
    described = describe(model, config)
    if not described["valid"]:
        raise AscendTuneError(f"{where}: the configuration fails '{described['violates']}' on "
                              f"{bundle.hw.name}; the results file is stale or was edited")
    return dict(config), described


def job(bundle: emit.Bundle, model: ShapeModel, entry: Mapping[str, Any], index: int,
        style: str) -> Job:
    """Candidate ``index`` of ``entry`` as a job: checked, with its tiling, blob and headers
    computed from the configuration."""
    config, described = checked(bundle, model, entry, index)
    key = shape_key(entry["shape"])
    shape = dict(model.shape)
    one = dataclasses.replace(bundle, shapes=((shape, dict(config)),), digest=hashlib.sha256(
        json.dumps([shape, config], sort_keys=True).encode()).hexdigest())
    values = {
        **{p: str(v) for p, v in config.items()},
        **{v: str(n) for v, n in shape.items()},
        "shape": key, "shape_json": json.dumps(shape, separators=(",", ":")),
        "config_json": json.dumps(config, separators=(",", ":")),
        "block_dim": str(described["block_dim"]),
        "tiling_key": str(described.get("tiling_key", 0)),
        "candidate": "baseline" if index == cands.BASELINE else str(index),
    }
    return Job(key, index, values, tiling_blob.pack(bundle.spec, described["tiling"]),
               emit.render(one, style))


class _Stop(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C: save what is measured, then stop."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Stop()


def run_measure(path: Path, command: Command, executor: Executor, *, fresh: bool = False,
                retry_failed: bool = False, style: str = "macro",
                progress: Progress | None = None, baseline: bool = True,
                prior: Callable[[str, Mapping[str, int]], Mapping[str, Any] | None] | None = None,
                task: Callable[..., Outcome] = run_job,
                task_extra: Callable[[Entry, int, Job], Any] | None = None) -> MeasureOutcome:
    """Measure every candidate of ``path`` that has no measurement yet (all of them with
    ``fresh``; failed ones again with ``retry_failed``), saving each as it finishes; with
    ``baseline`` each shape's baseline configuration too (unless it is a candidate), so the
    winner's measured speedup over it is known. ``prior`` (the tuning database) gives the
    measurement of a (shape key, configuration) already measured the same way: it is
    recorded without running. ``task`` runs each job on the executor (``run_job``: the
    command), with ``task_extra(entry, index, job)`` as a third argument when given (what a
    Ray node records the outcome with)."""
    progress = progress or Progress()
    bundle = load(path)
    head = results.read_head(path)
    out = MeasureOutcome()
    old_sigterm = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        with contextlib.ExitStack() as stack:
            store = stack.enter_context(ResultsStore(path, head, fresh=False))
            entries: dict[str, Entry] = {}
            forgotten: list[Entry] = []
            for entry in store.entries():
                updated = (cands.forget(entry, failed_only=not fresh)
                           if fresh or retry_failed else cands.synced(entry))
                if updated != cands.with_candidates(entry):
                    forgotten.append(updated)
                entries[shape_key(entry["shape"])] = updated
            # Baselines that need a run of their own (valid, not one of the candidates).
            own = {key for key, e in entries.items() if baseline and cands.baseline_alone(e)}
            total = sum(len(cands.candidates(e)) for e in entries.values()) + len(own)
            todo = [(key, i) for key, e in entries.items()
                    for i in [*cands.to_measure(e),
                              *([cands.BASELINE] if key in own and cands.baseline_to_measure(e)
                                else [])]]
            # Every candidate is checked and the executor started (a Ray cluster joined)
            # before anything in the file changes: a bad file or cluster loses nothing.
            reuse: list[tuple[str, int, Mapping[str, Any]]] = []
            for key, i, model, entry in _with_models(bundle, todo, entries):
                config, _described = checked(bundle, model, entry, i)
                known = prior(key, config) if prior is not None else None
                if known is not None:
                    reuse.append((key, i, known))
            if reuse:
                done = {(key, i) for key, i, _m in reuse}
                todo = [t for t in todo if t not in done]
            if todo:
                out.removed_run_dirs = remove_killed_run_dirs()
                stack.enter_context(executor)
            for entry in forgotten:
                store.replace(entry)  # a killed --fresh run must not keep the old times
            for key, i, known in reuse:
                entries[key] = (cands.record_baseline(entries[key], known)
                                if i == cands.BASELINE else cands.record(entries[key], i, known))
                store.replace(entries[key])
                out.reused += 1
            progress.opened(total, total - len(todo))
            # Blob and headers just in time: preparing thousands up front would delay the
            # first measurement by minutes.
            jobs = (_task_args(command, job(bundle, model, entry, i, style), entry, i,
                               task_extra)
                    for _key, i, model, entry in _with_models(bundle, todo, entries))
            try:
                with progress.running(len(todo)):
                    if todo:
                        _run_jobs(jobs, executor, entries, store, progress, out, task)
            except KeyboardInterrupt:
                out.interrupted = True
            out.entries = list(store.entries())
    finally:
        signal.signal(signal.SIGTERM, old_sigterm)
    return out


def _with_models(bundle: emit.Bundle, todo: Sequence[tuple[str, int]],
                 entries: Mapping[str, Entry]) -> Iterator[tuple[str, int, ShapeModel, Entry]]:
    """``todo`` (grouped by shape) with each shape's model, built once per shape."""
    model: ShapeModel | None = None
    for key, i in todo:
        entry = entries[key]
        if model is None or shape_key(model.shape) != key:
            model = ShapeModel(bundle.spec, bundle.hw, entry["shape"])
        yield key, i, model, entry


def _task_args(command: Command, one: Job, entry: Entry, index: int,
               extra: Callable[[Entry, int, Job], Any] | None) -> tuple[Any, ...]:
    return (command, one) if extra is None else (command, one, extra(entry, index, one))


def _run_jobs(jobs: Iterable[tuple[Any, ...]], executor: Executor,
              entries: dict[str, Entry], store: ResultsStore, progress: Progress,
              out: MeasureOutcome, task: Callable[..., Outcome] = run_job) -> None:
    try:
        for _index, outcome in executor.run(task, jobs):
            key = outcome.key
            is_base = outcome.index == cands.BASELINE
            entry = (cands.record_baseline(entries[key], measured_of(outcome)) if is_base
                     else cands.record(entries[key], outcome.index, measured_of(outcome)))
            entries[key] = entry
            store.replace(entry)
            out.invocations += outcome.invocations
            if outcome.error is None:
                out.baselines += is_base
                out.measured += not is_base
            else:
                what = "baseline" if is_base else f"candidate {outcome.index}"
                out.failures.append(f"shape {key} {what}: {outcome.error}")
            progress.candidate_done(outcome, entry)
    finally:
        kill_running()  # commands of a stopped run (local threads) must not hold a device


def measured_of(outcome: Outcome) -> dict[str, Any]:
    """What the results file and the tuning database keep of an outcome."""
    if outcome.error is not None:
        return {"error": outcome.error, "attempts": outcome.attempts}
    measured: dict[str, Any] = {"time_us": outcome.time_us, "runs_us": outcome.runs_us,
                                "attempts": outcome.attempts}
    if outcome.pipes_us:
        measured["pipes_us"] = outcome.pipes_us
    return measured
