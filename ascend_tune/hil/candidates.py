"""A results entry's candidates and what was measured of them. Pure functions on entries.

An entry of ``search --top-k K`` holds ``candidates``: the K best distinct configurations by
the model, fastest first, each described as ``explain`` would (config, derived, tiling,
block_dim, tiling_key, predicted). ``measure`` adds ``measured`` to each: ``{"time_us",
"runs_us", "attempts"[, "pipes_us"]}``, or ``{"error", "attempts"}`` for a candidate whose
command failed. Once every candidate has one, the fastest measured candidate becomes the
entry's winner: ``best``, ``derived``, ``tiling``, ``block_dim``, ``tiling_key`` and
``predicted`` (the model's prediction for it) are its own, and the entry's ``measured`` says
which candidate won, its time and the measured time of the model's pick, so ``emit`` writes
the device's choice and every report can show predicted against measured.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.calibrate.measurements import LoadReport, Measurement
from ascend_tune.hardware import HardwareProfile
from ascend_tune.results import format as results
from ascend_tune.spec import OperatorSpec
from ascend_tune.spec.shapes import check_shape, shape_key

Entry = dict[str, Any]
# Fields a candidate and the entry's winner share.
WINNER_FIELDS = ("derived", "tiling", "block_dim", "tiling_key", "predicted")


def candidates(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The entry's candidates; an entry of a plain search (no ``candidates``) has one: its
    winner (measuring it still gives `calibrate` a row)."""
    found = entry.get("candidates")
    if found is None:
        return [{"config": dict(entry["best"]),
                 **{k: copy.deepcopy(entry[k]) for k in WINNER_FIELDS if k in entry}}]
    if not isinstance(found, list) or not found or not all(
            isinstance(c, dict) and isinstance(c.get("config"), dict) for c in found):
        raise AscendTuneError(f"shape {shape_key(entry['shape'])}: 'candidates' must be a list "
                              "of {config, ...}; rerun `ascend-tune search --top-k`")
    return found


def with_candidates(entry: Mapping[str, Any]) -> Entry:
    out = copy.deepcopy(dict(entry))
    out["candidates"] = candidates(out)
    return out


def to_measure(entry: Mapping[str, Any], retry_failed: bool = False) -> list[int]:
    """Ranks of the candidates without a measurement (with ``retry_failed``, also those
    whose command failed)."""
    out = []
    for i, cand in enumerate(candidates(entry)):
        measured = cand.get("measured")
        # A hand-edited or torn measurement is measured again rather than trusted.
        if not (_timed(measured) or _failed(measured)) or (retry_failed
                                                           and not _timed(measured)):
            out.append(i)
    return out


def _timed(measured: Any) -> bool:
    if not isinstance(measured, Mapping):
        return False
    t = measured.get("time_us")
    return isinstance(t, (int, float)) and not isinstance(t, bool) and t > 0


def _failed(measured: Any) -> bool:
    return isinstance(measured, Mapping) and isinstance(measured.get("error"), str)


def forget(entry: Mapping[str, Any], failed_only: bool = False) -> Entry:
    """The entry as the search left it (``measure --fresh``), or without the failed
    measurements only; the model's pick is the winner again until measuring finishes."""
    out = with_candidates(entry)
    for cand in out["candidates"]:
        if "measured" in cand and (not failed_only or not _timed(cand["measured"])):
            del cand["measured"]
    return _adopt(out, 0) if not failed_only else out


def record(entry: Mapping[str, Any], index: int, measured: Mapping[str, Any]) -> Entry:
    """The entry with candidate ``index`` measured; when that was the last one, the measured
    winner adopted."""
    out = with_candidates(entry)
    out["candidates"][index]["measured"] = dict(measured)
    if all(_timed(c.get("measured")) or _failed(c.get("measured"))
           for c in out["candidates"]):
        out = promote(out)
    return out


def promote(entry: Mapping[str, Any]) -> Entry:
    """The fastest measured candidate as the entry's winner (ties: the model's order). An
    entry where no candidate measured keeps the model's pick and says why."""
    out = with_candidates(entry)
    cands = out["candidates"]
    timed = [(c["measured"]["time_us"], i) for i, c in enumerate(cands)
             if _timed(c.get("measured"))]
    if not timed:
        out = _adopt(out, 0)
        out["measured"] = {"error": "no candidate measured", "failed": len(cands)}
        return out
    time_us, win = min(timed)
    out = _adopt(out, win)
    pick = cands[0].get("measured", {}).get("time_us")
    out["measured"] = {"time_us": time_us, "candidate": win, "model_pick_us": pick,
                       "measured": len(timed), "failed": len(cands) - len(timed)}
    return out


def _adopt(entry: Entry, index: int) -> Entry:
    cand = entry["candidates"][index]
    entry["best"] = dict(cand["config"])
    for k in WINNER_FIELDS:
        if k in cand:
            entry[k] = copy.deepcopy(cand[k])
        else:
            entry.pop(k, None)
    entry.pop("measured", None)
    base = entry.get("baseline", {})
    if base.get("valid") and "predicted" in entry:
        entry["speedup"] = round(base["latency_us"] / entry["predicted"]["latency_us"], 6)
    return entry


def measured_rows(doc: Mapping[str, Any], spec: OperatorSpec, origin: str
                  ) -> list[Measurement]:
    """Every measured candidate of a results document as a measurement row (shape, config,
    time, per-pipe times when the CSV had them), for `calibrate` and `validate`."""
    rows = []
    for entry in doc.get("shapes", []):
        shape = check_shape(spec, entry["shape"], f"{origin}: shape")
        for i, cand in enumerate(entry.get("candidates") or []):
            measured = cand.get("measured") if isinstance(cand, Mapping) else None
            if not isinstance(measured, Mapping) or "time_us" not in measured:
                continue
            time_us = measured["time_us"]
            if isinstance(time_us, bool) or not isinstance(time_us, (int, float)) \
                    or not (math.isfinite(time_us) and time_us > 0):
                raise AscendTuneError(f"{origin}: shape {shape_key(shape)} candidate {i}: "
                                      f"measured time {time_us!r:.30} is not a finite "
                                      "positive number")
            pipes = {k: float(v) for k, v in (measured.get("pipes_us") or {}).items()
                     if isinstance(v, (int, float)) and not isinstance(v, bool)}
            config = cand.get("config")
            if not isinstance(config, Mapping) or not all(
                    isinstance(v, int) and not isinstance(v, bool) for v in config.values()):
                raise AscendTuneError(f"{origin}: shape {shape_key(shape)} candidate {i}: "
                                      "'config' must map parameters to integers")
            rows.append(Measurement(f"{origin}: {shape_key(shape)} candidate {i}", dict(shape),
                                    {str(k): v for k, v in config.items()}, (),
                                    float(time_us), pipes))
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


def summary(entries: Sequence[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    """Per shape: every candidate's predicted and measured time, and the winner."""
    for entry in entries:
        cands = candidates(entry)
        yield {
            "shape": entry["shape"],
            "winner": entry.get("measured", {}).get("candidate"),
            "candidates": [{
                "candidate": i, "config": c["config"],
                "predicted_us": c.get("predicted", {}).get("latency_us"),
                **({"measured_us": c["measured"]["time_us"]}
                   if "time_us" in c.get("measured", {}) else {}),
                **({"error": c["measured"]["error"]} if "error" in c.get("measured", {})
                   else {}),
            } for i, c in enumerate(cands)],
        }


def extend_report(report: LoadReport, paths: Sequence[Path], spec: OperatorSpec,
                  hw: HardwareProfile) -> None:
    """Add the measured candidates of results files ``paths`` to the rows `calibrate` and
    `validate` loaded (``--from-results``); a row the model rejects on ``hw`` is skipped with
    its reason, as a measurement file's would be."""
    from ascend_tune.calibrate.fit import split_valid

    rows, invalid = split_valid(spec, hw, read_measured_rows(paths, spec))
    report.rows += rows
    report.skipped += invalid
    report.files += [str(p) for p in paths]
