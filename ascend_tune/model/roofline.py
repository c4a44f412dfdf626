"""The roofline of one operator on one chip: the ceilings (GM bandwidth, Cube and Vector peak
throughput) and the work a shape does against each. The engine's efficiency and the report's
roofline chart both come from here, so the two cannot drift apart."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ascend_tune.hardware import HardwareProfile
from ascend_tune.spec import OperatorSpec


@dataclass(frozen=True)
class Ceilings:
    gm_bytes_per_s: float  # chip HBM bandwidth
    cube_flops_per_s: float | None  # when the spec counts Cube work
    vector_bytes_per_s: float | None  # when the spec counts Vector work


@dataclass(frozen=True)
class Work:
    gm_bytes: float
    cube_flops: float | None
    vector_bytes: float | None


def ceilings(spec: OperatorSpec, hw: HardwareProfile) -> Ceilings:
    cube = vector = None
    if spec.roofline_cube_flops is not None and spec.roofline_cube_dtype is not None:
        dtype = spec.stage_dtype(spec.roofline_cube_dtype)
        cube = 2.0 * hw.cube_macs_per_cycle(dtype) * float(hw["cube_cores"]) * hw.clock_hz
    if spec.roofline_vector_bytes is not None:
        vector = float(hw["repeat_bytes"]) * float(hw["vector_cores"]) * hw.clock_hz
    return Ceilings(hw.hbm_bytes_per_cycle * hw.clock_hz, cube, vector)


def work(spec: OperatorSpec, env: Mapping[str, Any]) -> Work:
    """The roofline work of one shape (``env``: the shape and the hardware symbols)."""
    cube = (float(spec.roofline_cube_flops.evaluate(env))
            if spec.roofline_cube_flops is not None and spec.roofline_cube_dtype is not None
            else None)
    vector = (float(spec.roofline_vector_bytes.evaluate(env))
              if spec.roofline_vector_bytes is not None else None)
    return Work(float(spec.roofline_gm_bytes.evaluate(env)), cube, vector)


def terms_us(spec: OperatorSpec, top: Ceilings, env: Mapping[str, Any],
             value: Callable[[Any], Any] = float) -> list[Any]:
    """The time of the shape's work against each ceiling the spec counts, GM first;
    ``value`` turns an evaluated work expression into a number (``float``) or, for a batch
    of shapes in column form, into an array (each term then an array of the shapes')."""
    terms = [value(spec.roofline_gm_bytes.evaluate(env)) / top.gm_bytes_per_s * 1e6]
    if spec.roofline_cube_flops is not None and spec.roofline_cube_dtype is not None \
            and top.cube_flops_per_s is not None:
        terms.append(value(spec.roofline_cube_flops.evaluate(env)) / top.cube_flops_per_s * 1e6)
    if spec.roofline_vector_bytes is not None and top.vector_bytes_per_s is not None:
        terms.append(value(spec.roofline_vector_bytes.evaluate(env))
                     / top.vector_bytes_per_s * 1e6)
    return terms


def roofline_us(spec: OperatorSpec, hw: HardwareProfile, env: Mapping[str, Any]) -> float:
    """The fastest the chip could do the shape's work: the slowest of its ceilings."""
    return float(max(terms_us(spec, ceilings(spec, hw), env)))
