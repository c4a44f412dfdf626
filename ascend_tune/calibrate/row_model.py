"""Measured rows evaluated in batches: the model's time for each row, fast enough to sit inside a
least-squares loop.

Rows are grouped by shape: one :class:`ShapeModel` per distinct shape and all of that shape's
measured configurations (with every combination of a row's ``free`` parameters) in one
vectorised ``evaluate`` call. The candidate matrices are built once; evaluating another profile
(a calibration trial) reuses them through ``ShapeModel.with_profile``, so no profile is
reloaded, re-validated or re-hashed per residual (docs/model.md "Calibration").
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.base.vocabulary import PIPE_COLUMNS
from ascend_tune.calibrate.measurements import Measurement
from ascend_tune.hardware import HardwareProfile
from ascend_tune.model.engine import ShapeModel, evaluate_valid_rows
from ascend_tune.spec import OperatorSpec
from ascend_tune.spec.shapes import shape_key


@dataclass
class _Group:
    """The rows of one shape: their candidates stacked, and each row's slice of them."""

    model: ShapeModel
    rows: np.ndarray  # row indices (into the RowModel's rows)
    values: np.ndarray  # (candidates, params)
    starts: np.ndarray  # first candidate of each row; a row's candidates are contiguous
    valid: np.ndarray  # per candidate: valid on the model's profile


@dataclass(frozen=True)
class RowTimes:
    """Predicted end-to-end time (us) per row and per-pipe busy time (rows x PIPE_COLUMNS)."""

    time_us: np.ndarray
    pipes_us: np.ndarray


class RowModel:
    """Measured rows bound to a spec and a profile. Rows whose configuration the model rejects
    on that profile are left out and listed in ``invalid`` (index, reason)."""

    def __init__(self, spec: OperatorSpec, hw: HardwareProfile,
                 rows: Sequence[Measurement]) -> None:
        self.spec = spec
        self.hw = hw
        self.invalid: list[tuple[int, str]] = []
        by_shape: dict[str, list[int]] = {}
        for i, m in enumerate(rows):
            by_shape.setdefault(shape_key(m.shape), []).append(i)
        groups: list[_Group] = []
        for indices in by_shape.values():
            model = ShapeModel(spec, hw, rows[indices[0]].shape)
            base = model.baseline_values()
            blocks = [_candidates(spec, model, base, rows[i]) for i in indices]
            values = np.concatenate(blocks) if blocks else np.zeros((0, len(spec.params)))
            ev = model.evaluate(values)
            ends = np.cumsum([len(b) for b in blocks])
            starts = ends - np.array([len(b) for b in blocks])
            keep = []
            for i, s, e in zip(indices, starts, ends, strict=True):
                if ev.valid[s:e].any():
                    keep.append(i)
                    continue
                config = {**base, **rows[i].config}
                name = model.constraint_names[int(ev.failed[s])]
                self.invalid.append((i, f"{rows[i].origin}: the measured configuration breaks "
                                        f"constraint '{name}' ("
                                        f"{', '.join(f'{k}={v}' for k, v in config.items())})"))
            valid = ev.valid
            if len(keep) < len(indices):
                kept = [blocks[indices.index(i)] for i in keep]
                if not kept:
                    continue
                valid = np.concatenate([ev.valid[starts[indices.index(i)]:
                                                  ends[indices.index(i)]] for i in keep])
                values = np.concatenate(kept)
                ends = np.cumsum([len(b) for b in kept])
                starts = ends - np.array([len(b) for b in kept])
            groups.append(_Group(model, np.array(keep, dtype=np.int64), values,
                                 np.asarray(starts, dtype=np.int64), valid))
        self.invalid.sort()
        self._groups = groups
        self.n_rows = len(rows)

    @property
    def valid_rows(self) -> np.ndarray:
        """Indices of the rows this model predicts (in order)."""
        bad = {i for i, _ in self.invalid}
        return np.array([i for i in range(self.n_rows) if i not in bad], dtype=np.int64)

    def groups_of(self, rows: np.ndarray) -> tuple[int, ...]:
        """The shape groups holding any of ``rows`` (to evaluate only those)."""
        return tuple(k for k, g in enumerate(self._groups) if np.isin(g.rows, rows).any())

    def evaluate(self, hw: HardwareProfile | None = None,
                 groups: tuple[int, ...] | None = None) -> RowTimes:
        """Each row's predicted time on ``hw`` (default: the profile the model was built with):
        the best over the row's free-parameter combinations. Rows not evaluated (invalid, or
        outside ``groups``) are NaN."""
        time_us = np.full(self.n_rows, np.nan)
        pipes_us = np.full((self.n_rows, len(PIPE_COLUMNS)), np.nan)
        chosen = self._groups if groups is None else [self._groups[k] for k in groups]
        for g, latency, pipes in self._costs(chosen, hw):
            # Best candidate of each row: reduceat gives the minimum per contiguous slice.
            best = np.minimum.reduceat(latency, g.starts)
            pick = _first_argmin(latency, g.starts, best)
            time_us[g.rows] = best
            pipes_us[g.rows] = np.stack([pipes[c][pick] for c in PIPE_COLUMNS], axis=1)
        return RowTimes(time_us, pipes_us)

    def _costs(self, chosen: Sequence[_Group], hw: HardwareProfile | None
               ) -> Iterator[tuple[_Group, np.ndarray, Mapping[str, np.ndarray]]]:
        """Each group's candidate latencies (inf where invalid) and per-pipe times (0 where
        invalid), as ``model.evaluate`` gives them: the valid candidates of every group in
        one batch (:func:`evaluate_valid_rows`, the same bits), or group by group where that
        cannot stand in."""
        stacked = evaluate_valid_rows([g.model for g in chosen],
                                      [g.values[g.valid] for g in chosen], hw)
        if stacked is None:
            for g in chosen:
                model = g.model if hw is None or hw is self.hw else g.model.with_profile(hw)
                ev = model.evaluate(g.values)
                yield g, ev.latency_us, ev.pipes_us
            return
        latency, pipes = stacked
        at = 0
        for g in chosen:
            k = int(np.count_nonzero(g.valid))
            lat = np.full(len(g.values), np.inf)
            lat[g.valid] = latency[at:at + k]
            busy = {}
            for c in PIPE_COLUMNS:
                busy[c] = np.zeros(len(g.values))
                busy[c][g.valid] = pipes[c][at:at + k]
            at += k
            yield g, lat, busy


def _candidates(spec: OperatorSpec, model: ShapeModel, base: dict[str, int],
                row: Measurement) -> np.ndarray:
    config = {**base, **row.config}
    free = [p for p in row.free if p in spec.params and p not in row.config]
    if not free:
        return np.array([[config[p] for p in spec.params]], dtype=np.int64)
    grids = [model.grids[spec.params.index(p)] for p in free]
    combos = [{**config, **dict(zip(free, (int(v) for v in combo), strict=True))}
              for combo in itertools.product(*grids)]
    return np.array([[c[p] for p in spec.params] for c in combos], dtype=np.int64)


def _first_argmin(latency: np.ndarray, starts: np.ndarray, best: np.ndarray) -> np.ndarray:
    """Index of the first candidate reaching each slice's minimum (the same pick as argmin)."""
    owner = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(latency))))
    hit = np.flatnonzero(latency == best[owner])
    first = np.full(len(starts), -1, dtype=np.int64)
    # hit is increasing; the first hit of each owner is where the owner changes.
    owners = owner[hit]
    lead = np.ones(len(hit), dtype=bool)
    lead[1:] = owners[1:] != owners[:-1]
    first[owners[lead]] = hit[lead]
    if (first < 0).any():
        raise AscendTuneError("internal: a measured row has no finite prediction")
    return first
