"""What `explain` reports about one configuration of one shape: the prediction, the bounding
pipe, the one-line diagnosis and the busy time of every stage. Data only; the CLI renders it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ascend_tune.base.errors import AscendTuneError, did_you_mean
from ascend_tune.base.vocabulary import BOUND_NAMES
from ascend_tune.hardware import HardwareProfile
from ascend_tune.model.diagnose import diagnose
from ascend_tune.model.engine import ShapeModel
from ascend_tune.spec import OperatorSpec
from ascend_tune.tune.shape import describe


@dataclass(frozen=True)
class Explanation:
    spec: OperatorSpec
    hw: HardwareProfile
    shape: dict[str, int]
    config: dict[str, int]
    info: dict[str, Any]  # tuner.describe: valid, predicted, ...
    bound: str  # the bounding quantity (vocabulary.BOUND_NAMES)
    diagnosis: str  # one line: what bounds it and the parameter that moves it
    stages: list[dict[str, Any]]  # per stage: side, stage, pipe, busy_us, executions, ...
    notes: tuple[str, ...] = ()  # e.g. an override outside its parameter's search domain

    def __repr__(self) -> str:  # short: spec, profile and stages would print ~40 KB
        return (f"Explanation({self.spec.display_name!r} on {self.hw.name!r}, shape={self.shape}, "
                f"config={self.config}, bound={self.bound!r}, "
                f"latency_us={self.info['predicted']['latency_us']!r})")

    @property
    def predicted(self) -> dict[str, Any]:
        return dict(self.info["predicted"])

    def as_dict(self) -> dict[str, Any]:
        """The `explain --json` document."""
        return {"spec": self.spec.name, "hw": self.hw.name, "shape": self.shape, **self.info,
                "diagnosis": self.diagnosis, "stages": self.stages, "notes": list(self.notes)}


def explain(spec: OperatorSpec, hw: HardwareProfile, shape: dict[str, int],
            overrides: Mapping[str, int] | None = None, what: str = "--set") -> Explanation:
    """Predict the spec's baseline configuration for ``shape``, with ``overrides`` (named
    ``what`` in messages) replacing baseline values; an invalid configuration is an error."""
    model = ShapeModel(spec, hw, shape)
    config = model.baseline_values()
    notes = []
    for k, v in (overrides or {}).items():
        if k not in config:
            raise AscendTuneError(f"{what}: unknown parameter '{k}'{did_you_mean(k, config)}; "
                                  f"{spec.name} takes {', '.join(spec.params)}")
        config[k] = v
        grid = model.grids[spec.params.index(k)]
        if v not in set(grid.tolist()):
            near = grid[np.argsort(np.abs(grid.astype(np.float64) - float(v)))[:2]]
            notes.append(f"{what}: {k}={v} is outside the searched domain (nearest: "
                         f"{', '.join(str(int(x)) for x in sorted(near))}); the tuner would "
                         "never pick it")
    for k, v in config.items():
        if k not in (overrides or {}) and v not in set(model.grids[spec.params.index(k)].tolist()):
            notes.append(f"baseline {k}={v} is outside the searched domain")
    row = np.array([[config[p] for p in spec.params]], dtype=np.int64)
    ev = model.evaluate(row, detail=True)
    if not ev.valid[0]:
        name = model.constraint_names[int(ev.failed[0])]
        expr = dict(spec.constraints).get(name)
        shown = ", ".join(f"{k}={v}" for k, v in config.items())
        rule = f" ({expr.source})" if expr is not None else ""
        raise AscendTuneError(f"configuration breaks constraint '{name}'{rule} with {shown}")
    clock_mhz = float(hw["clock_mhz"])
    stages = [{"side": s.side, "stage": s.name, "pipe": s.pipe,
               "busy_us": round(s.cycles / clock_mhz, 6),
               "executions": s.executions,
               "bytes_per_transfer": s.bytes_per_transfer,
               "bandwidth_bytes_per_cycle": round(s.bandwidth_bytes_per_cycle, 6)}
              for s in ev.stages]
    return Explanation(spec, hw, shape, config, describe(model, config),
                       BOUND_NAMES[int(ev.bound[0])], diagnose(model, config, ev), stages,
                       tuple(notes))
