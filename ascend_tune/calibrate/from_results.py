"""Measurement rows from results files: what `ascend-tune measure` recorded (each measured
candidate, and the measured baseline) as rows `calibrate`, `validate` and `report` read.

A results file is an input like any other: every measured time must be a finite positive
number and every configuration a mapping of parameters to integers, else one error naming the
file, the shape and the candidate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.base.yamlio import is_finite_number
from ascend_tune.calibrate.measurements import Measurement
from ascend_tune.results import format as results
from ascend_tune.spec import OperatorSpec
from ascend_tune.spec.shapes import check_shape, shape_key


def _positive_time(value: Any) -> bool:
    return is_finite_number(value) and value > 0


def _row(origin: str, where: str, shape: dict[str, int], config: Any, measured: Mapping[str, Any]
         ) -> Measurement:
    time_us = measured["time_us"]
    if not _positive_time(time_us):
        raise AscendTuneError(f"{origin}: shape {shape_key(shape)} {where}: measured time "
                              f"{time_us!r:.30} is not a finite positive number")
    pipes_raw = measured.get("pipes_us")
    pipes = {str(k): float(v) for k, v in (pipes_raw.items() if isinstance(pipes_raw, Mapping)
                                           else ())
             if is_finite_number(v)}
    runs_raw = measured.get("runs_us")
    runs = tuple(runs_raw) if isinstance(runs_raw, list) else ()
    if not all(_positive_time(r) for r in runs):
        raise AscendTuneError(f"{origin}: shape {shape_key(shape)} {where}: 'runs_us' holds "
                              "a value that is not a finite positive time")
    if not isinstance(config, Mapping) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in config.values()):
        raise AscendTuneError(f"{origin}: shape {shape_key(shape)} {where}: 'config' must map "
                              "parameters to integers")
    return Measurement(f"{origin}: {shape_key(shape)} {where}", dict(shape),
                       {str(k): v for k, v in config.items()}, (), float(time_us), pipes,
                       runs_us=tuple(float(r) for r in runs))


def measured_rows(doc: Mapping[str, Any], spec: OperatorSpec, origin: str
                  ) -> list[Measurement]:
    """Every measured candidate of a results document as a measurement row (shape, config,
    time, per-pipe times when the CSV had them), then the measured baseline of each shape
    unless it is one of the candidates (then it is that candidate's row already)."""
    rows = []
    for entry in doc.get("shapes", []):
        shape = check_shape(spec, entry["shape"], f"{origin}: shape")
        for i, cand in enumerate(entry.get("candidates") or []):
            measured = cand.get("measured") if isinstance(cand, Mapping) else None
            if isinstance(measured, Mapping) and "time_us" in measured:
                rows.append(_row(origin, f"candidate {i}", shape, cand.get("config"), measured))
        base = entry.get("baseline")
        measured = base.get("measured") if isinstance(base, Mapping) else None
        if isinstance(measured, Mapping) and "time_us" in measured \
                and "candidate" not in measured:
            assert isinstance(base, Mapping)
            rows.append(_row(origin, "baseline", shape, base.get("config"), measured))
    return rows


def read_measured_rows(paths: Sequence[Path], spec: OperatorSpec) -> list[Measurement]:
    """``measured_rows`` of results files; a file tuned for another spec is an error."""
    rows: list[Measurement] = []
    for path in paths:
        doc = results.read_all(path)
        name = doc["spec"].get("name")
        if name != spec.name:
            raise AscendTuneError(f"{path}: results of spec '{name}', not '{spec.name}'")
        rows += measured_rows(doc, spec, str(path))
    return rows


def is_results_file(path: Path) -> bool:
    """Whether ``path`` looks like a results file (JSON) rather than a measurement CSV."""
    try:
        with path.open("rb") as fh:
            head = fh.read(64)
    except OSError:
        return False  # the measurement reader says why it cannot be read
    return head.lstrip().startswith(b"{")
