"""Run-time tiling selection, in Python: the reference the emitted C++ must agree with.

Given a shape and the platform's AIC and AIV counts: the exact tuned shape's winner if it is
still valid there (it may be a measured winner the model ranks lower: the device's word
stands). Otherwise every candidate (each tuned shape's winner, then the runners-up a
``--top-k`` search kept, then the spec's baseline as the fallback) has its derived values
recomputed for the real shape; the invalid are dropped and the rest are ranked by the spec's
own model on that shape and those core counts (:mod:`ascend_tune.model.dispatch`, the same
function the emitted C++ computes), the fastest winning and ties going to the earlier
candidate. Where nothing there is valid, the fallback walk (:mod:`.walk`) finds a valid
configuration if one exists. The pick is then improved by a short descent on the real shape
(:mod:`.refine`): configurations tuned for other shapes are often a parameter or two from
this shape's optimum. So a dispatched configuration is never slower than the fallback by the
model, and the nearest tuned shape by distance no longer decides (a configuration tuned for
rows=2048 served rows=3 up to 25x slower than the best of the table). Emitted host code
implements the same rule with the same expressions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ascend_tune.emit.refine import (
    MAX_EVALS,
    RESPLIT_EVALS,
    domains,
    refine,
    resplit,
    resplit_bound,
    split_bound,
    split_group,
)
from ascend_tune.emit.walk import walk
from ascend_tune.expr import scalar_value
from ascend_tune.hardware import HardwareProfile
from ascend_tune.model.dispatch import dispatch_model
from ascend_tune.spec import OperatorSpec, evaluate_baseline, launch

# Where the selected configuration came from: the exact tuned shape, a candidate the model
# ranked first (MODEL; NEAREST is its old name), the baseline fallback, or nothing valid.
# WALK: no candidate and not the baseline is valid; the fallback walk found one.
# REFINED: the model's pick (a candidate, the baseline or the walk's) improved by :mod:`.refine`.
EXACT, MODEL, BASELINE, NONE, WALK, REFINED = 0, 1, 2, 3, 4, 5
NEAREST = MODEL


def runtime_env(spec: OperatorSpec, hw: HardwareProfile, aic: int, aiv: int) -> dict[str, Any]:
    """Profile constants, with the core counts replaced by the platform's."""
    env: dict[str, Any] = {**hw.env(), **spec.sizeof_env(), **spec.attr_env()}
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


def valid_rows(spec: OperatorSpec, env: Mapping[str, Any], shape: Mapping[str, int],
               configs: Sequence[Sequence[int]]) -> np.ndarray | None:
    """Which of ``configs`` (values in parameter order) pass every check on ``shape``: what
    :func:`derive` decides one configuration at a time, decided for all at once (each
    parameter an array, one element per configuration; the expressions are numpy
    elementwise either way, so each element is the scalar evaluation's value). None when the
    evaluation raises (an integer overflow on any of them, perhaps on one the scalar order
    stops before): the caller then asks :func:`derive` one by one, which raises, or not,
    exactly where it always did."""
    local: dict[str, Any] = {**env, **shape}
    for j, p in enumerate(spec.params):
        local[p] = np.asarray([c[j] for c in configs], dtype=np.int64)
    ok = np.ones(len(configs), dtype=bool)
    rules = launch.rules(spec, env["hw.cube_cores"], env["hw.vector_cores"])
    try:
        for name, e in spec.derive:
            local[name] = e.evaluate(local)
        checks = [e.evaluate(local) for _, e in spec.constraints]
        checks += [check.passes(local) for check in rules.checks]
        for passed in checks:
            ok &= np.broadcast_to(np.asarray(passed, dtype=bool), ok.shape)
    except Exception:  # any failure at all: the scalar path decides, as it always did
        return None
    return ok


def candidate_table(tuned_configs: Sequence[Mapping[str, int]],
                    runners_up: Sequence[Mapping[str, int]], params: Sequence[str]
                    ) -> list[dict[str, int]]:
    """The candidates in the order the emitted table lists them: the winners (one per tuned
    shape, the tuned table's order), then the runners-up; a configuration listed twice keeps
    its first place."""
    out: list[dict[str, int]] = []
    seen: set[tuple[int, ...]] = set()
    for config in [*tuned_configs, *runners_up]:
        key = tuple(int(config[p]) for p in params)
        if key not in seen:
            seen.add(key)
            out.append({p: int(config[p]) for p in params})
    return out


@dataclass(frozen=True)
class Selection:
    source: int  # EXACT | MODEL | BASELINE | NONE | WALK | REFINED
    index: int  # into the candidate table (REFINED: where it started), -1 for baseline/none
    config: dict[str, int]
    env: dict[str, Any]
    latency_us: float = math.inf  # the model's time for the pick (NONE: inf)


def select(spec: OperatorSpec, hw: HardwareProfile, tuned_shapes: Sequence[Sequence[int]],
           tuned_configs: Sequence[Mapping[str, int]], shape: Mapping[str, int],
           aic: int, aiv: int, runners_up: Sequence[Mapping[str, int]] = (),
           refine_evals: int = MAX_EVALS) -> Selection:
    env = runtime_env(spec, hw, aic, aiv)
    values = [int(shape[v]) for v in spec.shape_vars]
    for i, tuned in enumerate(tuned_shapes):
        if list(tuned) == values:
            local = derive(spec, env, shape, tuned_configs[i])
            if local is not None:
                us = dispatch_model(spec, hw).latency_us(
                    values, [int(tuned_configs[i][p]) for p in spec.params], aic, aiv)
                return Selection(EXACT, i, dict(tuned_configs[i]), local, us)
            break
    model = dispatch_model(spec, hw)

    def latency(config: Sequence[int]) -> float:
        return model.latency_us(values, config, aic, aiv)

    def score(config: Sequence[int]) -> float:
        valid = derive(spec, env, shape, dict(zip(spec.params, config, strict=True)))
        return math.inf if valid is None else latency(config)

    best: Selection | None = None
    table = candidate_table(tuned_configs, runners_up, spec.params)
    base = evaluate_baseline(spec, {**env, **shape})
    group = split_group(spec) if resplit_bound(spec) else None
    doms: list[list[int]] | None = None
    left = RESPLIT_EVALS
    for i, config in [*enumerate(table), (-1, base)]:
        local = derive(spec, env, shape, config)
        if local is None:
            if i < 0 or group is None or left <= 0:
                continue
            if doms is None:  # the C++ computes them at the first candidate that fails
                doms = domains(spec, env, shape) or []
            values_of = [int(config[p]) for p in spec.params]
            limit = split_bound(spec, env, shape, values_of, group[1])
            split, _us, looked = resplit(doms or None, group[0], values_of, limit, left, score)
            left -= looked
            if split is None:
                continue
            config = dict(zip(spec.params, split, strict=True))
            local = derive(spec, env, shape, config)
            if local is None:  # valid by construction (its score was finite)
                continue
        us = latency([config[p] for p in spec.params])
        if best is None or us < best.latency_us:
            best = Selection(MODEL if i >= 0 else BASELINE, i, dict(config), local, us)
    if best is None:
        found = walk(spec, env, shape, base, latency)
        local = derive(spec, env, shape, found) if found is not None else None
        if found is None or local is None:
            return Selection(NONE, -1, base, {})
        best = Selection(WALK, -1, found, local, latency([found[p] for p in spec.params]))

    def scores(configs: Sequence[Sequence[int]]) -> list[float]:
        ok = valid_rows(spec, env, shape, configs)
        if ok is None:
            return [score(c) for c in configs]
        return [latency(c) if passed else math.inf
                for c, passed in zip(configs, ok.tolist(), strict=True)]

    better = refine(spec, env, shape, best.config, best.latency_us, score, refine_evals,
                    scores)
    if better is None:
        return best
    local = derive(spec, env, shape, better[0])
    if local is None:  # refine accepts valid configurations only; C++ returns kNone here
        return Selection(NONE, -1, better[0], {})
    return Selection(REFINED, best.index, better[0], local, better[1])


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
