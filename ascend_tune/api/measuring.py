"""The API's `measure` half: a checked plan, the run (recording each candidate in the tuning
database as it completes, skipping what it holds measured the same way) and the summary."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ascend_tune.api import database as _database
from ascend_tune.api import fleet as _fleet
from ascend_tune.api.paths import PathLike
from ascend_tune.base import executors
from ascend_tune.base.errors import AscendTuneError
from ascend_tune.db.engine import Database
from ascend_tune.emit.styles import emit_style
from ascend_tune.hardware import HardwareProfile
from ascend_tune.hil import candidates as _cands
from ascend_tune.hil import command as _command
from ascend_tune.hil import run as _hil
from ascend_tune.hil.command import Command
from ascend_tune.hil.run import MeasureOutcome
from ascend_tune.hil.run import Progress as MeasureProgress
from ascend_tune.spec import OperatorSpec


@dataclass(frozen=True)
class MeasurePlan:
    """A checked ``measure`` run: the results file, its embedded spec and the command."""

    results: Path
    spec: OperatorSpec
    command: Command
    style: str  # of the headers in {headers_dir}
    hw: HardwareProfile | None = None  # the profile the results file embeds


def plan_measure(results_path: PathLike, run: str, *, pattern: str | None = None,
                 csv: str | None = None, where: str | Mapping[str, str] | None = None,
                 repeat: int = 3, timeout: float | None = None, retries: int = 1,
                 style: str = "macro") -> MeasurePlan:
    """Check a ``measure`` run before anything runs: style, results file, command."""
    emit_style(style)
    results_path = Path(results_path)
    bundle = _hil.load(results_path)
    if isinstance(where, str):
        from ascend_tune.calibrate.rows import parse_where

        where = parse_where(where) if where else {}
    if where and csv is None:
        raise AscendTuneError("--where selects CSV rows: it needs --csv")
    command = _command.parse(run, _hil.names(bundle), pattern=pattern, csv=csv, where=where,
                             timeout_s=timeout, repeat=repeat, retries=retries)
    return MeasurePlan(results_path, bundle.spec, command, style, bundle.hw)


def measure(plan: MeasurePlan, executor: executors.Executor | None = None, *,
            fresh: bool = False, retry_failed: bool = False,
            progress: MeasureProgress | None = None, baseline: bool = True,
            db: Database | None = None, remeasure: bool = False) -> MeasureOutcome:
    """Measure the candidates not measured yet; the fastest measured wins its shape. With
    ``baseline`` each shape's baseline configuration too, for the measured speedup. With
    ``db`` each measured candidate is recorded there as it completes, and a candidate it
    holds measured under the same protocol (command, repeats, host, chip, spec) is taken from
    it instead of run again, unless ``remeasure`` (or ``fresh``)."""
    engine = executor if executor is not None else executors.make("local", slots=[None])
    prior = None
    hw = plan.hw if plan.hw is not None else _hil.load(plan.results).hw
    task: dict[str, Any] = {}
    if isinstance(engine, executors.RayExecutor) and "NPU" in engine.resources:
        # A device of the results file's chip only (api.fleet): a mixed fleet never mixes.
        engine.resources.setdefault(_fleet.soc_resource(hw), engine.resources["NPU"])
    if db is not None:
        prior, recording = _database.measure_hooks(db, plan.spec, hw, plan.command, progress,
                                                   remeasure or fresh)
        if isinstance(engine, executors.RayExecutor):
            # Each node records its own measurements; the driver journals the results file.
            engine.check = _fleet.refuse_sqlite_fleet(db)
            engine.max_retries = max(engine.max_retries, _fleet.RETRIES_AFTER_WORKER_LOSS)
            task = {"task": _fleet.measure_on_node,
                    "task_extra": _fleet.node_records(db, _database.keys(plan.spec, hw),
                                                      _database.protocol(plan.command))}
        else:
            progress = recording
    return _hil.run_measure(plan.results, plan.command, engine, fresh=fresh,
                            retry_failed=retry_failed, style=plan.style, progress=progress,
                            baseline=baseline, prior=prior, **task)


def measure_summary(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per shape: ``shape``, ``winner``, each candidate's predicted and measured time, the
    ``baseline``'s, and the winner's ``speedup`` over it, ``predicted`` and ``measured``."""
    return list(_cands.summary(entries))


