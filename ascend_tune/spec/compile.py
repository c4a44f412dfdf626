"""Compile a spec's YAML into an :class:`OperatorSpec`.

The loader checks structure against :data:`SPEC_SCHEMA` (unknown keys get "did you mean"),
then compiles every section in file order, each expression against the names visible at its
place, so an error names the file, the key path, the line and the offending token.

This module owns the entry point (:func:`load_spec_text`), variants, the meaning hash, the
``hw.*`` names (:func:`hw_symbols`) and the sections that define names: operator and dtypes,
layouts, shape, params, derive, constraints, baseline. The ``pipeline`` section is
:mod:`~ascend_tune.spec.compile_pipeline`; tiling, kernel constants, kernel and io are
:mod:`~ascend_tune.spec.compile_kernel`; the shared compiler state is
:mod:`~ascend_tune.spec.compile_context`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from ascend_tune.base import schema
from ascend_tune.base.errors import SpecError, did_you_mean
from ascend_tune.base.yamlio import INT64_MAX, parse_yaml
from ascend_tune.expr import Expr, Kind
from ascend_tune.hardware import SCALARS
from ascend_tune.spec.compile_attrs import attrs_section, finish
from ascend_tune.spec.compile_context import Compiler, Symbols
from ascend_tune.spec.compile_kernel import (
    io_section,
    kernel_constants_section,
    kernel_section,
    tiling_section,
)
from ascend_tune.spec.compile_pipeline import pipeline_section
from ascend_tune.spec.format import (
    MAX_DOMAIN_VALUES,
    SHAPE_FROM,
    SHAPE_FROM_FORMS,
    SPEC_SCHEMA,
)
from ascend_tune.spec.model import (
    Domain,
    OperatorSpec,
    ShapeSource,
    ShapeSourceKind,
)


def hw_symbols() -> dict[str, Kind]:
    kinds: dict[str, Kind] = {}
    for keys in SCALARS.values():
        for key, (types, _doc) in keys.items():
            kinds[f"hw.{key}"] = Kind.INT if types == ("integer",) else Kind.FLOAT
    return kinds


def load_spec_text(text: str, origin: str, variant: str | None = None) -> OperatorSpec:
    data, lines = parse_yaml(text, origin)
    errors = schema.validate(data, SPEC_SCHEMA, origin, lines)
    if errors:
        raise SpecError(errors[0])
    c = Compiler(origin, lines)
    if variant is not None:
        apply_variant(data, variant, c)
    name, dtypes = _operator(c, data)
    layouts = _layouts(c, data.get("layouts") or {}, dtypes)
    shape = _shape(c, data["shape"], dtypes)
    attrs, attr_symbols = attrs_section(c, data.get("attrs") or {})
    domains = _params(c, data["params"], shape.symbols)
    symbols = {**shape.symbols, **attr_symbols, **{p: Kind.INT for p in domains}}
    derive = _derive(c, data.get("derive") or {}, symbols)
    constraints = _constraints(c, data.get("constraints") or {}, symbols)
    pipe = pipeline_section(c, data["pipeline"], data["core"], symbols, shape.symbols, dtypes,
                            layouts)
    baseline = _baseline(c, data["baseline"], tuple(domains), shape.symbols)
    til = tiling_section(c, data["tiling"], symbols)
    kconsts, tiling_key = kernel_constants_section(c, data, shape.base_symbols, symbols)
    kernel_mode, system_workspace = kernel_section(c, data.get("kernel") or {}, data["core"])
    io_inputs, io_outputs = io_section(c, data.get("io"), dtypes, shape.sources)
    return finish(OperatorSpec(
        name=name,
        description=str(data.get("description", "")),
        core=data["core"],
        dtypes=dtypes,
        shape_vars=shape.vars,
        shape_min=shape.min,
        shape_max=shape.max,
        shape_from=shape.sources,
        params=tuple(domains),
        domains=domains,
        derive=derive,
        constraints=constraints,
        sides=pipe.sides,
        handoffs=pipe.handoffs,
        roofline_cube_flops=pipe.cube_flops,
        roofline_cube_dtype=pipe.cube_dtype,
        roofline_vector_bytes=pipe.vector_bytes,
        roofline_gm_bytes=pipe.gm_bytes,
        baseline=baseline,
        tiling_struct=til.struct,
        tiling_fields=til.fields,
        tiling_nested=til.nested,
        block_dim=til.block_dim,
        workspace_bytes=til.workspace_bytes,
        kernel_constants=kconsts,
        tiling_key=tiling_key,
        kernel_mode=kernel_mode,
        system_workspace=system_workspace,
        io_inputs=io_inputs,
        io_outputs=io_outputs,
        source_text=text,
        origin=origin,
        variant=variant,
        sha256=meaning_sha256(data),
        layouts=layouts,
        attrs=attrs,
        shape_multiple=shape.multiple,
    ))


def meaning_sha256(data: Mapping[str, Any]) -> str:
    """Hash of what a spec means (variant applied, comments, layout, docs and descriptions
    left out): an edit that cannot change a result keeps the results cache and the banners."""
    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items()
                    if k not in ("doc", "description", "variants", "meaning")}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node
    # ``version: 1`` and no version mean the same (the only format so far).
    meaning = {k: v for k, v in strip(data).items() if k != "version"}
    canonical = json.dumps(meaning, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def apply_variant(data: dict[str, Any], variant: str, c: Compiler) -> None:
    """A variant overrides dtypes, parameter domains and baseline entries of the base spec."""
    variants = data.get("variants") or {}
    if variant not in variants:
        known = ", ".join(variants) or "none"
        raise SpecError(f"{c.origin}: unknown variant '{variant}'{did_you_mean(variant, variants)}"
                        f"; variants: {known}")
    over = variants[variant]
    for section in ("dtypes", "params", "derive", "baseline"):
        for key, value in (over.get(section) or {}).items():
            if key not in (data.get(section) or {}):
                what = {"dtypes": "tensor", "params": "parameter", "derive": "derived value",
                        "baseline": "parameter"}
                raise c.fail(f"variant overrides unknown {what[section]} "
                             f"'{key}'{did_you_mean(key, data[section])}",
                             "variants", variant, section, key)
            data[section][key] = value
    if over.get("layouts"):
        # Layouts may name any tensor (a base spec without ``layouts:`` is all row-major).
        data["layouts"] = {**(data.get("layouts") or {}), **over["layouts"]}
    if over.get("kernel"):
        data["kernel"] = {**(data.get("kernel") or {}), **over["kernel"]}
    if over.get("description"):
        data["description"] = over["description"]


# --- operator and dtypes ---------------------------------------------------------------------

def _operator(c: Compiler, data: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    name: str = data["operator"]
    c.ident(name, "operator name", "operator")
    if not name[0].isupper():
        raise c.fail(f"operator '{name}' must be CamelCase as in the OpDef", "operator")
    dtypes: dict[str, str] = dict(data["dtypes"])
    for tensor in dtypes:
        c.ident(tensor, "tensor name", "dtypes", tensor)
    return name, dtypes


def _layouts(c: Compiler, raw: Mapping[str, Any], dtypes: Mapping[str, str]
             ) -> dict[str, str]:
    """Every tensor's GM layout: the ``layouts:`` entry, else row-major."""
    for tensor in raw:
        if tensor not in dtypes:
            raise c.fail(f"layout for unknown tensor '{tensor}'{did_you_mean(tensor, dtypes)}; "
                         f"tensors: {', '.join(dtypes)}", "layouts", tensor)
    return {t: str(raw.get(t, "row_major")) for t in dtypes}


# --- shape -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Shape:
    vars: tuple[str, ...]
    min: dict[str, int]
    max: dict[str, int]
    sources: dict[str, ShapeSource]
    multiple: dict[str, int]
    base_symbols: Symbols  # hardware and sizeof.<tensor>: what kernel constants see
    symbols: Symbols  # and the shape variables


def _shape(c: Compiler, raw: Mapping[str, Any], dtypes: Mapping[str, str]) -> _Shape:
    shape_vars = tuple(raw)
    if not shape_vars:
        raise c.fail("needs at least one shape variable", "shape")
    for v in shape_vars:
        c.claim(v, "shape variable", "shape", v)
    shape_min = {v: int(o.get("min", 1)) for v, o in raw.items()}
    shape_max = {v: int(o["max"]) for v, o in raw.items() if "max" in o}
    for v, o in raw.items():
        # A shape variable read from a tensor (`from:`) is an extent: an empty tensor
        # launches no kernel. Others may be flags or counts, but never negative.
        floor = 1 if "from" in o else 0
        if not floor <= shape_min[v] <= INT64_MAX:
            raise c.fail(f"min must be an integer from {floor} to 2**63-1, got "
                         f"{str(shape_min[v])[:40]}", "shape", v, "min")
        if v in shape_max and not shape_min[v] <= shape_max[v] <= INT64_MAX:
            raise c.fail(f"max must be an integer from min ({shape_min[v]}) to 2**63-1, got "
                         f"{str(shape_max[v])[:40]}", "shape", v, "max")
    sources = {v: _shape_source(c, o["from"], "shape", v, "from")
               for v, o in raw.items() if "from" in o}
    multiple = {v: int(o["multiple_of"]) for v, o in raw.items() if "multiple_of" in o}
    for v, m in multiple.items():
        if not 1 <= m <= INT64_MAX:
            raise c.fail(f"multiple_of must be an integer from 1 to 2**63-1, got {str(m)[:40]}",
                         "shape", v, "multiple_of")
        if shape_min[v] % m:
            raise c.fail(f"min {shape_min[v]} is not a multiple of multiple_of {m}: write "
                         f"min: {-(-shape_min[v] // m) * m}", "shape", v, "min")
    base_symbols: Symbols = {**hw_symbols(), **{f"sizeof.{t}": Kind.INT for t in dtypes}}
    symbols = {**base_symbols, **{v: Kind.INT for v in shape_vars}}
    return _Shape(shape_vars, shape_min, shape_max, sources, multiple, base_symbols, symbols)


def _shape_source(c: Compiler, text: str, *path: str) -> ShapeSource:
    m = SHAPE_FROM.fullmatch(text)
    if not m:
        raise c.fail(f"'{text:.60}' is not {SHAPE_FROM_FORMS}", *path)
    dim = m.group(3)
    kind = "dim" if dim is not None else cast(ShapeSourceKind, m.group(2))
    return ShapeSource(int(m.group(1)), kind, None if dim is None else int(dim))


# --- params, derive, constraints -------------------------------------------------------------

def _params(c: Compiler, raw: Mapping[str, Any], shape_symbols: Symbols) -> dict[str, Domain]:
    if not raw:
        raise c.fail("needs at least one tunable parameter", "params")
    domains: dict[str, Domain] = {}
    for p, d in raw.items():
        c.claim(p, "parameter", "params", p)
        kinds = [k for k in ("values", "range", "pow2") if k in d]
        if len(kinds) != 1:
            raise c.fail("give exactly one of values, range or pow2", "params", p)
        kind = kinds[0]
        if kind == "values" and len(d[kind]) > MAX_DOMAIN_VALUES:
            raise c.fail(f"values lists more than {MAX_DOMAIN_VALUES} entries; use range with "
                         "step or pow2", "params", p, kind)
        if kind != "values" and len(d[kind]) != 2:
            raise c.fail(f"{kind} needs [lo, hi]", "params", p, kind)
        if kind != "range" and ("step" in d or "multiple_of" in d):
            raise c.fail("step and multiple_of apply only to range", "params", p)
        exprs = tuple(c.expr(v, shape_symbols, "params", p, kind, str(i))
                      for i, v in enumerate(d[kind]))
        step = c.expr(d["step"], shape_symbols, "params", p, "step") if "step" in d else None
        mult = (c.expr(d["multiple_of"], shape_symbols, "params", p, "multiple_of")
                if "multiple_of" in d else None)
        domains[p] = Domain(kind, exprs, step, mult, c.where("params", p))
    return domains


def _derive(c: Compiler, raw: Mapping[str, Any], symbols: Symbols
            ) -> tuple[tuple[str, Expr], ...]:
    """Derived values in order; each becomes a name the rest of the spec sees (``symbols``
    is extended in place)."""
    derive = []
    for n, src in raw.items():
        c.claim(n, "derived value", "derive", n)
        e = c.expr(src, symbols, "derive", n)
        derive.append((n, e))
        symbols[n] = e.kind
    return tuple(derive)


def _constraints(c: Compiler, raw: Mapping[str, Any], symbols: Symbols
                 ) -> tuple[tuple[str, Expr], ...]:
    constraints = []
    for n, src in raw.items():
        e = c.expr(src, symbols, "constraints", n)
        if e.kind is not Kind.BOOL:
            raise c.fail("a constraint must be a comparison or boolean expression",
                         "constraints", n)
        constraints.append((n, e))
    return tuple(constraints)


# --- baseline --------------------------------------------------------------------------------

def _baseline(c: Compiler, raw: Mapping[str, Any], params: tuple[str, ...],
              shape_symbols: Symbols) -> dict[str, Expr]:
    # Baseline entries are evaluated in order; each may use the ones before it.
    baseline = {}
    seen = dict(shape_symbols)
    for p, src in raw.items():
        if p not in params:
            raise c.fail(f"unknown parameter '{p}'{did_you_mean(p, params)}", "baseline", p)
        baseline[p] = c.expr(src, seen, "baseline", p)
        seen[p] = Kind.INT
    missing = [p for p in params if p not in baseline]
    if missing:
        raise c.fail(f"baseline misses parameter(s): {', '.join(missing)}", "baseline")
    return baseline
