"""Operator attributes (``attrs:``): compiling them, where they may be read, and the values a
spec is evaluated with (``--attr name=value``).

An attribute is an OpDef attribute the host reads from the tiling context. It may feed tiling
fields and derived values that only such fields read, never the parameters, constraints,
pipeline, baseline, block dim, tiling key or workspace: the model, the search and the
run-time selection do not depend on it, so one tuning serves every attribute value and the
emitted TilingFunc computes the attribute's fields from the value the graph passes.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ascend_tune.base import cann
from ascend_tune.base.errors import AscendTuneError, SpecError, did_you_mean
from ascend_tune.expr import Expr, Kind
from ascend_tune.spec.compile_context import Compiler, Symbols
from ascend_tune.spec.model import Attr, Loop, OperatorSpec, Stage

ATTR_KINDS = {"float": Kind.FLOAT, "int": Kind.INT, "bool": Kind.BOOL}
_INT64 = (-(1 << 63), (1 << 63) - 1)


def attrs_section(c: Compiler, raw: Mapping[str, Any]) -> tuple[tuple[Attr, ...], Symbols]:
    out = []
    for name, a in raw.items():
        c.claim(name, "attribute", "attrs", name)
        kind = a["type"]
        default = a["default"]
        if (kind == "bool") != isinstance(default, bool) or (
                kind == "int" and not isinstance(default, int)):
            raise c.fail(f"default {default!r:.40} is not a{'n' if kind == 'int' else ''} "
                         f"{kind}", "attrs", name, "default")
        if kind == "bool" and ("min" in a or "max" in a):
            raise c.fail("a bool attribute has no min or max", "attrs", name)
        lo, hi = a.get("min"), a.get("max")
        for key, bound in (("min", lo), ("max", hi), ("default", default)):
            if bound is None or isinstance(bound, bool):
                continue
            if not math.isfinite(float(bound)) or (kind == "int" and not (
                    isinstance(bound, int) and _INT64[0] <= bound <= _INT64[1])):
                raise c.fail(f"{key} {bound!r:.40} is not a finite {kind}", "attrs", name, key)
        if lo is not None and hi is not None and lo > hi:
            raise c.fail(f"min {lo} is above max {hi}", "attrs", name)
        attr = Attr(name, kind, _typed(kind, default), lo, hi, str(a.get("doc", "")))
        why = attr.problem(attr.default)
        if why is not None:
            raise c.fail(f"default: {why}", "attrs", name, "default")
        out.append(attr)
    return tuple(out), {a.name: ATTR_KINDS[a.type] for a in out}


def _typed(kind: str, value: Any) -> float | int | bool:
    """A value as the TilingFunc sees it: a float attribute is a C++ float (32 bits)."""
    if kind == "float":
        return float(np.float32(value))
    return bool(value) if kind == "bool" else int(value)


def _body_exprs(body: Iterable[Stage | Loop]) -> Iterable[Expr]:
    for item in body:
        if isinstance(item, Loop):
            yield item.trips
            if item.buffers is not None:
                yield item.buffers
            yield from _body_exprs(item.body)
        else:
            yield from item.expressions()


def finish(spec: OperatorSpec) -> OperatorSpec:
    """The spec with its attribute values and ``attr_names`` set, once every place that reads
    an attribute is one that may."""
    if not spec.attrs:
        return spec
    reach = {a.name for a in spec.attrs}
    ok = reach | set(spec.sizeof_env())

    def pure(e: Expr, what: str) -> bool:
        read = set(e.names) & reach
        if read and not set(e.names) <= ok:
            other = sorted(set(e.names) - ok)
            raise SpecError(f"{e.where}: {what} reads attribute {sorted(read)[0]} and "
                            f"{other[0]}: a value built on an attribute may read only "
                            "attributes, values built on them and sizeof.*")
        return bool(read)

    for name, e in spec.derive:
        if pure(e, "derived value"):
            reach.add(name)
            ok.add(name)
    for f in spec.tiling_fields:
        pure(f.value, "tiling field")
    model = [e for _, e in spec.constraints] + [e for s in spec.sides for e in (
        s.cores, *([s.items] if s.items is not None else []), *_body_exprs(s.body))]
    model += [e for e in (spec.handoffs, spec.roofline_cube_flops, spec.roofline_vector_bytes,
                          spec.roofline_gm_bytes, spec.block_dim, spec.workspace_bytes,
                          spec.tiling_key) if e is not None]
    model += [f.value for n in spec.tiling_nested for f in n.fields]
    for e in model:
        read = sorted(set(e.names) & reach)
        if read:
            raise SpecError(f"{e.where}: reads attribute {read[0]}: attributes feed tiling "
                            "fields (and derived values only they read), not the model, the "
                            "constraints, the block dim, the tiling key or the workspace")
    values = {a.name: a.default for a in spec.attrs}
    out = dataclasses.replace(spec, attr_values=values, attr_names=frozenset(reach))
    why = field_problem(out)
    if why is not None:
        raise SpecError(f"{spec.origin}: with the attribute defaults, {why}")
    return out


def field_problem(spec: OperatorSpec) -> str | None:
    """Why a tiling field built on the attributes does not fit its C type with the spec's
    attribute values (None when every one fits)."""
    env: dict[str, Any] = {**spec.sizeof_env(), **spec.attr_env()}
    for name, e in spec.derive:
        if name in spec.attr_names:
            env[name] = e.evaluate(env)
    for f in spec.tiling_fields:
        if not set(f.value.names) & spec.attr_names:
            continue
        v = float(np.asarray(f.value.evaluate(env), dtype=np.float64))
        lo, hi = cann.field_range(f.ctype)
        if not (math.isfinite(v) and lo <= v <= hi):
            return f"tiling field {f.name} = {f.value.source} is {v:g}, outside {f.ctype}"
    return None


def with_attrs(spec: OperatorSpec, texts: Iterable[str]) -> OperatorSpec:
    """``spec`` evaluated with ``--attr NAME=VALUE`` values (the others keep their default);
    a bad name or value is one error line."""
    by_name = {a.name: a for a in spec.attrs}
    values = dict(spec.attr_values)
    for text in texts:
        name, sep, raw = (part.strip() for part in text.partition("="))
        if not sep or not name:
            raise AscendTuneError(f"--attr '{text:.60}': expected NAME=VALUE")
        if name not in by_name:
            known = ", ".join(by_name) or "none"
            raise AscendTuneError(f"--attr {name}: {spec.name} has no attribute '{name:.40}'"
                                  f"{did_you_mean(name, by_name)}; attributes: {known}")
        attr = by_name[name]
        values[name] = _parse(attr, raw)
        why = attr.problem(values[name])
        if why is not None:
            raise AscendTuneError(f"--attr {why}")
    out = dataclasses.replace(spec, attr_values=values)
    why = field_problem(out)
    if why is not None:
        raise AscendTuneError(f"--attr: {why}")
    return out


def _parse(attr: Attr, raw: str) -> float | int | bool:
    what = f"--attr {attr.name}={raw:.40}"
    if attr.type == "bool":
        if raw.lower() in ("true", "1"):
            return True
        if raw.lower() in ("false", "0"):
            return False
        raise AscendTuneError(f"{what}: a bool attribute takes true or false")
    try:
        value = int(raw) if attr.type == "int" else float(raw)
    except ValueError:
        raise AscendTuneError(f"{what}: not a{'n' if attr.type == 'int' else ''} "
                              f"{attr.type}") from None
    if attr.type == "int" and not _INT64[0] <= value <= _INT64[1]:
        raise AscendTuneError(f"{what}: does not fit a 64-bit integer")
    if not math.isfinite(value) or abs(value) > 3.4028234663852886e38:
        raise AscendTuneError(f"{what}: not a finite float")
    return _typed(attr.type, value)


def recorded(spec: OperatorSpec, doc: Any, origin: str) -> OperatorSpec:
    """The spec with the attribute values a results file records (``spec.attrs``)."""
    if not spec.attrs or not isinstance(doc, Mapping):
        return spec
    try:
        return with_attrs(spec, [f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                                 for k, v in doc.items()])
    except AscendTuneError as exc:
        raise AscendTuneError(f"{origin}: recorded attributes: {exc}") from None
