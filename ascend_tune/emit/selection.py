"""Run-time tiling selection, in Python: the reference the emitted C++ must agree with.

Given a shape and the platform's AIC and AIV counts: the exact tuned shape if its configuration
is still valid there, else tuned shapes in order of log distance (first one whose configuration,
with derived values recomputed from the real shape, passes every constraint and launch check),
else the spec's baseline. Emitted host code implements the same rule with the same expressions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ascend_tune.expr import scalar_value
from ascend_tune.hardware import HardwareProfile
from ascend_tune.spec import OperatorSpec, evaluate_baseline, launch

EXACT, NEAREST, BASELINE, NONE = 0, 1, 2, 3


def runtime_env(spec: OperatorSpec, hw: HardwareProfile, aic: int, aiv: int) -> dict[str, Any]:
    """Profile constants, with the core counts replaced by the platform's."""
    env: dict[str, Any] = {**hw.env(), **spec.sizeof_env()}
    env["hw.cube_cores"] = aic
    env["hw.vector_cores"] = aiv
    return env


def first_failure(spec: OperatorSpec, env: Mapping[str, Any], shape: Mapping[str, int],
                  config: Mapping[str, int]) -> tuple[dict[str, Any], str | None]:
    """Derived values for ``config`` on ``shape`` and the first check it fails (or None)."""
    local: dict[str, Any] = {**env, **shape, **config}
    for name, e in spec.derive:
        local[name] = scalar_value(e.evaluate(local))
    for name, e in spec.constraints:
        if not bool(e.evaluate(local)):
            return local, name
    cores = {"cube": env["hw.cube_cores"], "vector": env["hw.vector_cores"]}
    for name, ok in zip(launch.check_names(spec), launch.evaluate(spec, local, cores),
                        strict=True):
        if not bool(ok):
            return local, name
    return local, None


def derive(spec: OperatorSpec, env: Mapping[str, Any], shape: Mapping[str, int],
           config: Mapping[str, int]) -> dict[str, Any] | None:
    """Derived values for ``config`` on ``shape``, or None if a check fails."""
    local, failed = first_failure(spec, env, shape, config)
    return None if failed is not None else local


def log_distance(a: Sequence[int], b: Sequence[int]) -> float:
    total = 0.0
    for x, y in zip(a, b, strict=False):
        d = math.log(float(x)) - math.log(float(y))
        total += d * d
    return total


@dataclass(frozen=True)
class Selection:
    source: int  # EXACT | NEAREST | BASELINE | NONE
    index: int  # into the tuned table, -1 for baseline/none
    config: dict[str, int]
    env: dict[str, Any]


def select(spec: OperatorSpec, hw: HardwareProfile, tuned_shapes: Sequence[Sequence[int]],
           tuned_configs: Sequence[Mapping[str, int]], shape: Mapping[str, int],
           aic: int, aiv: int) -> Selection:
    env = runtime_env(spec, hw, aic, aiv)
    values = [shape[v] for v in spec.shape_vars]
    dist = [log_distance(values, t) for t in tuned_shapes]
    order = sorted(range(len(tuned_shapes)), key=lambda i: (dist[i], i))
    for i in order:
        local = derive(spec, env, shape, tuned_configs[i])
        if local is not None:
            source = EXACT if list(tuned_shapes[i]) == values else NEAREST
            return Selection(source, i, dict(tuned_configs[i]), local)
    base = evaluate_baseline(spec, {**env, **shape})
    local = derive(spec, env, shape, base)
    if local is not None:
        return Selection(BASELINE, -1, base, local)
    return Selection(NONE, -1, base, {})


def field_value(ctype: str, value: Any) -> int | float:
    """The value as the C++ field type stores it (the emitted static_cast)."""
    if ctype == "float":
        return float(np.float32(value))
    bits = int(ctype.replace("uint", "").replace("int", "").replace("_t", ""))
    v = int(value) if not isinstance(value, float) else math.trunc(value)
    v &= (1 << bits) - 1
    if not ctype.startswith("u") and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v
