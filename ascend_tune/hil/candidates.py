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
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.calibrate.from_results import measured_rows, read_measured_rows
from ascend_tune.calibrate.measurements import LoadReport
from ascend_tune.hardware import HardwareProfile
from ascend_tune.spec import OperatorSpec
from ascend_tune.spec.shapes import shape_key

Entry = dict[str, Any]
# Fields a candidate and the entry's winner share.
WINNER_FIELDS = ("derived", "tiling", "block_dim", "tiling_key", "predicted")
# The job index of a shape's baseline configuration (candidates are 0, 1, ...).
BASELINE = -1

__all__ = ["BASELINE", "baseline_alone", "baseline_to_measure", "candidates", "extend_report",
           "forget", "measured_rows", "promote", "read_measured_rows", "record",
           "record_baseline", "same_as_baseline", "summary", "synced", "to_measure",
           "with_candidates"]


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
    base = out.get("baseline")
    for item in [*out["candidates"], *([base] if isinstance(base, dict) else [])]:
        if "measured" in item and (not failed_only or not _timed(item["measured"])):
            del item["measured"]
    return _sync(_adopt(out, 0) if not failed_only else out)


def record(entry: Mapping[str, Any], index: int, measured: Mapping[str, Any]) -> Entry:
    """The entry with candidate ``index`` measured; when that was the last one, the measured
    winner adopted."""
    out = with_candidates(entry)
    out["candidates"][index]["measured"] = dict(measured)
    if all(_timed(c.get("measured")) or _failed(c.get("measured"))
           for c in out["candidates"]):
        out = promote(out)
    return _sync(out)


def record_baseline(entry: Mapping[str, Any], measured: Mapping[str, Any]) -> Entry:
    """The entry with its baseline configuration measured (``measure --baseline``)."""
    out = with_candidates(entry)
    out["baseline"] = {**out["baseline"], "measured": dict(measured)}
    return _sync(out)


def same_as_baseline(entry: Mapping[str, Any]) -> int | None:
    """The candidate whose configuration is the shape's baseline (its measurement is the
    baseline's: it is not run twice), or None."""
    base = entry.get("baseline")
    if not isinstance(base, Mapping) or not isinstance(base.get("config"), Mapping):
        return None
    return next((i for i, c in enumerate(candidates(entry)) if c["config"] == base["config"]),
                None)


def baseline_alone(entry: Mapping[str, Any]) -> bool:
    """Whether the shape's baseline is measured by a run of its own: it is valid by the
    search and not one of the candidates."""
    base = entry.get("baseline")
    return (isinstance(base, Mapping) and base.get("valid") is True
            and same_as_baseline(entry) is None)


def baseline_to_measure(entry: Mapping[str, Any]) -> bool:
    """Whether the shape's baseline still needs its own run (``baseline_alone`` and no
    measurement or failure recorded; ``forget`` clears those for a rerun)."""
    if not baseline_alone(entry):
        return False
    measured = entry["baseline"].get("measured")
    return not (_timed(measured) or _failed(measured))


def synced(entry: Mapping[str, Any]) -> Entry:
    """The entry with its baseline's measurement taken from the candidate it is and the
    measured speedup filled in (a file measured before baselines were)."""
    return _sync(with_candidates(entry))


def _sync(out: Entry) -> Entry:
    """The baseline's measurement taken from the candidate it is (if any), and the measured
    speedup of the winner over it (``measured.baseline_us``, ``measured.speedup``) once both
    are timed."""
    base = out.get("baseline")
    twin = same_as_baseline(out)
    if twin is not None and isinstance(base, dict):
        found = out["candidates"][twin].get("measured")
        if _timed(found) or _failed(found):
            base["measured"] = {**found, "candidate": twin}
        else:
            base.pop("measured", None)
    win = out.get("measured")
    if isinstance(win, dict):
        win.pop("baseline_us", None)
        win.pop("speedup", None)
        timed = base.get("measured") if isinstance(base, Mapping) else None
        if _timed(win) and _timed(timed):
            assert isinstance(timed, Mapping)
            win["baseline_us"] = timed["time_us"]
            win["speedup"] = round(timed["time_us"] / win["time_us"], 6)
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
    return _sync(out)


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


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def summary(entries: Sequence[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    """Per shape: every candidate's predicted and measured time, and the winner."""
    for entry in entries:
        cands = candidates(entry)
        base = _mapping(entry.get("baseline"))
        measured_base = _mapping(base.get("measured"))
        won = _mapping(entry.get("measured"))
        yield {
            "shape": entry["shape"],
            "winner": won.get("candidate"),
            "baseline": {
                "config": base.get("config"), "valid": base.get("valid"),
                "predicted_us": base.get("latency_us"),
                **({"measured_us": measured_base["time_us"]} if "time_us" in measured_base
                   else {}),
                **({"error": measured_base["error"]} if "error" in measured_base else {}),
                **({"candidate": measured_base["candidate"]} if "candidate" in measured_base
                   else {}),
            },
            # Baseline over winner: the model's (its predictions) and the device's (measured).
            "speedup": {"predicted": entry.get("speedup"), "measured": won.get("speedup")},
            "candidates": [{
                "candidate": i, "config": c["config"],
                "predicted_us": c.get("predicted", {}).get("latency_us"),
                **({"measured_us": c["measured"]["time_us"]}
                   if "time_us" in c.get("measured", {}) else {}),
                **({"error": c["measured"]["error"]} if "error" in c.get("measured", {})
                   else {}),
                **({"probe": True} if c.get("probe") is True else {}),
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
