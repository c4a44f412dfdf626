"""Scoring given configurations of one shape, as ``api.predict`` returns them: each checked
against the spec (known parameters, integers, values in their domain for the shape; the
baseline fills what is missing), then evaluated by the engine in one batch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ascend_tune.base.errors import AscendTuneError, did_you_mean
from ascend_tune.base.vocabulary import BOUND_NAMES, PIPE_COLUMNS
from ascend_tune.model.engine import ShapeModel
from ascend_tune.spec import shapes as _shapes


@dataclass(frozen=True)
class Prediction:
    """The model's verdict on one configuration, the engine's float64 values unrounded."""

    config: dict[str, int]  # every parameter, in the spec's order
    valid: bool
    violates: str | None  # the first constraint or launch check that fails; None if valid
    latency_us: float  # inf when invalid
    pipes_us: dict[str, float]  # busy time of the slowest core per pipe (PIPE_COLUMNS)
    gm_bandwidth_us: float  # time the GM bandwidth shared by all cores needs
    head_overhead_us: float  # launch overhead
    bound: str | None  # what bounds the latency (vocabulary.BOUND_NAMES); None if invalid
    roofline_us: float  # the shape's roofline


def score(model: ShapeModel, configs: Sequence[Any], labels: list[str]) -> list[Prediction]:
    """One prediction per configuration (``labels`` name each in errors)."""
    if not configs:
        return []
    domains = [set(g.tolist()) for g in model.grids]
    rows = [_config_row(model, domains, c, where)
            for c, where in zip(configs, labels, strict=True)]
    ev = model.evaluate(np.array(rows, dtype=np.int64))
    out = []
    for i, row in enumerate(rows):
        valid = bool(ev.valid[i])
        out.append(Prediction(
            dict(zip(model.spec.params, row, strict=True)), valid,
            None if valid else model.constraint_names[int(ev.failed[i])],
            float(ev.latency_us[i]), {c: float(ev.pipes_us[c][i]) for c in PIPE_COLUMNS},
            float(ev.gm_us[i]), float(ev.head_us[i]),
            BOUND_NAMES[int(ev.bound[i])] if valid else None, float(ev.roofline_us)))
    return out


def _config_row(model: ShapeModel, domains: list[set[int]], config: Any, where: str
                ) -> list[int]:
    spec = model.spec
    if not isinstance(config, Mapping):
        raise AscendTuneError(f"{where}: expected a mapping of parameter values, got "
                              f"{type(config).__name__}")
    values = model.baseline_values()
    for k, v in config.items():
        if k not in values:
            raise AscendTuneError(f"{where}: unknown parameter '{k!s:.40}'"
                                  f"{did_you_mean(str(k), spec.params)}; {spec.name} takes "
                                  f"{', '.join(spec.params)}")
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise AscendTuneError(f"{where}: {k} must be an integer, got {v!r:.40}")
        j = spec.params.index(k)
        if int(v) != values[k] and int(v) not in domains[j]:
            grid = model.grids[j]
            near = min(max(int(v), int(grid.min())), int(grid.max()))
            two = grid[np.argsort(np.abs(grid.astype(np.float64) - float(near)))[:2]]
            raise AscendTuneError(f"{where}: {k}={str(int(v))[:40]} is outside its domain for "
                                  f"shape {_shapes.shape_key(model.shape)} (nearest: "
                                  f"{', '.join(str(int(x)) for x in sorted(two))})")
        values[k] = int(v)
    return [int(values[p]) for p in spec.params]
