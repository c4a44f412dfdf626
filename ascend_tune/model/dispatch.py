"""The model of one operator for any shape: the latency of a configuration as one function of
(shape, configuration, the platform's core counts), for run-time dispatch.

The search asks the engine about one shape at a time, with the shape and the whole profile
folded in. Dispatch asks the opposite question at run time: for the shape that just arrived,
which of a few dozen tuned configurations is fastest on this chip? It needs the same model
with the shape and the core counts left as arguments. This module generates it from the same
pieces as the row kernel (:mod:`.fastpaths.kernel`: the spec's expressions rendered by
:mod:`ascend_tune.expr.python`, the stage costs of ``_Cost``), so it is the engine's arithmetic
in the engine's order: for a valid configuration it returns the engine's bits (held by
tests/test_dispatch.py). The same source is rendered into C++ (:mod:`.dispatch_cpp`) for the
emitted host code, which must choose what the Python side chooses.

Validity is not this function's business: callers check a configuration's constraints and
launch checks on the real shape first (:func:`ascend_tune.emit.selection.first_failure`, and
``Derive`` in the emitted C++).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ascend_tune.expr import Kind
from ascend_tune.hardware import HardwareProfile
from ascend_tune.model import dispatch_cpp
from ascend_tune.model.fastpaths import kernel, scalar
from ascend_tune.spec import OperatorSpec

# The platform's core counts, read at run time (the profile's are only the tuning target).
CORE_ARGS = {"hw.cube_cores": "aic", "hw.vector_cores": "aiv"}


@dataclass(frozen=True)
class DispatchModel:
    """``latency_us(shape_values, config_values, aic, aiv)`` and its source."""

    spec: OperatorSpec
    source: str  # Python: def latency(s0.., p0.., aic, aiv) -> float
    curves: Mapping[str, tuple[float, ...]]  # _XP0/_FP0 ...: the transfer-rate curves
    function: Callable[..., float]
    labels: Mapping[str, str] = field(default_factory=dict)  # temporary -> what it prices

    def cpp(self, name: str = "PredictUs") -> str:
        """The model as the C++ function ``name`` (:func:`.dispatch_cpp.render_function`),
        its arguments named as the spec names them (``v_M``, ``v_baseM``)."""
        names = {**{f"s{j}": f"v_{v}" for j, v in enumerate(self.spec.shape_vars)},
                 **{f"p{j}": f"v_{p}" for j, p in enumerate(self.spec.params)}}
        return dispatch_cpp.render_function(self.source, name, self.curves, self.labels,
                                            scalar.HELPERS, names)

    def latency_us(self, shape: Sequence[int], config: Sequence[int], aic: int,
                   aiv: int) -> float:
        """The predicted latency (us); inf where the arithmetic breaks down (a zero divisor,
        a float overflow): such a configuration is never picked."""
        try:
            return float(self.function(*shape, *config, aic, aiv))
        except kernel.ROW_ERRORS:
            return float("inf")


class _GenericSource(kernel._Source):
    """The row kernel's source with the shape and the core counts as arguments."""

    def __init__(self, spec: OperatorSpec, env: Mapping[str, Any]) -> None:
        # No grids: parameters are arguments too, their spans unknown (divisions stay guarded).
        super().__init__(spec, env, [np.zeros(0, dtype=np.int64) for _ in spec.params])
        self.symbols = {**{v: f"s{j}" for j, v in enumerate(spec.shape_vars)}, **CORE_ARGS}

    def _name(self, name: str) -> tuple[str, Kind]:
        if name in self.symbols:
            return self.symbols[name], Kind.INT
        return super()._name(name)

    def function(self, name: str, result: str) -> str:
        args = [*(f"s{j}" for j in range(len(self.spec.shape_vars))),
                *(f"p{j}" for j in range(len(self.spec.params))), "aic", "aiv"]
        body = "\n".join(f"    {line}" for line in [*self.w.lines, f"return {result}"])
        return f"def {name}({', '.join(args)}):\n{body}\n"


def _generic_env(spec: OperatorSpec, hw: HardwareProfile) -> dict[str, Any]:
    env: dict[str, Any] = {**hw.env(), **spec.sizeof_env(), **spec.attr_env()}
    for name in CORE_ARGS:
        env.pop(name, None)
    return env


def _build(spec: OperatorSpec, hw: HardwareProfile) -> DispatchModel:
    src = _GenericSource(spec, _generic_env(spec, hw))
    src.derive(spec.model_derive)
    cost = kernel._Cost(src, hw, chip_cores={"cube": "float(aic)", "vector": "float(aiv)"})
    result = cost.latency()
    curves: dict[str, tuple[float, ...]] = {}
    for i, (xp, fp) in enumerate(cost.curves.values()):
        curves[f"_XP{i}"], curves[f"_FP{i}"] = tuple(xp), tuple(fp)
    source = src.function("latency", result)
    with kernel._subject(f"{spec.display_name} dispatch"):
        fn = kernel._compile(source, "latency", {k: list(v) for k, v in curves.items()})
    return DispatchModel(spec, source, curves, fn, dict(src.w.labels))


_BUILT: dict[tuple[str, str, str | None], DispatchModel] = {}
_BUILT_MAX = 32


def dispatch_model(spec: OperatorSpec, hw: HardwareProfile) -> DispatchModel:
    """The shape-generic model of ``spec`` on ``hw``, built once per (spec, profile) meaning
    (specs hold dicts, so the cache is keyed by their hashes, not the objects)."""
    key = (spec.sha256, hw.sha256, spec.variant)
    if key not in _BUILT:
        if len(_BUILT) >= _BUILT_MAX:
            _BUILT.pop(next(iter(_BUILT)))
        _BUILT[key] = _build(spec, hw)
    return _BUILT[key]
