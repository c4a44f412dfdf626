"""Operator specs: load, validate and compile the YAML that describes one kernel.

The loader checks structure against :data:`SPEC_SCHEMA` (unknown keys get "did you mean"),
then compiles every expression against the names visible at its place, so an error names the
file, the key path, the line and the offending token.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ascend_tune import cann, resources, schema
from ascend_tune.errors import AscendTuneError, SpecError, did_you_mean
from ascend_tune.expr import Expr, Kind, parse
from ascend_tune.hardware import SCALARS, TRANSFER_PATHS, VECTOR_CLASSES
from ascend_tune.yamlio import KeyPath, parse_yaml, read_text

DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "hf32": 4, "int8": 1, "int32": 4}
# Types the kernel-side TilingData accepts (cann.FIELD_CTYPES): nothing else is emitted.
FIELD_TYPES = tuple(cann.FIELD_CTYPES)
PIPES = ("mte2", "mte1", "cube", "fixpipe", "vector", "mte3", "scalar")
SIDE_PIPES = {"cube": ("mte2", "mte1", "cube", "fixpipe", "scalar"),
              "vector": ("mte2", "vector", "mte3", "scalar")}
PATH_PIPE = {"gm_to_l1": "mte2", "gm_to_ub": "mte2", "l1_to_l0a": "mte1", "l1_to_l0b": "mte1",
             "l0c_to_gm": "fixpipe", "ub_to_gm": "mte3"}
MAX_DOMAIN_VALUES = 100_000
CPP_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # used with fullmatch: no trailing newline
# C++17 keywords and alternative tokens, plus names the emitted code itself defines.
CPP_KEYWORDS = frozenset("""alignas alignof and and_eq asm auto bitand bitor bool break case catch
char char16_t char32_t class compl const const_cast constexpr continue decltype default delete do
double dynamic_cast else enum explicit export extern false float for friend goto if inline int long
mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public
register reinterpret_cast return short signed sizeof static static_assert static_cast struct
switch template this thread_local throw true try typedef typeid typename union unsigned using
virtual void volatile wchar_t while xor xor_eq""".split())

_S = schema.Scalar
_EXPR = _S(("expression",))
_STR = _S(("string",))

_DOMAIN = schema.Obj(fields={
    "values": (schema.Arr(_EXPR, min_items=1), False),
    "range": (schema.Arr(_EXPR, min_items=2), False),
    "step": (_EXPR, False),
    "multiple_of": (_EXPR, False),
    "pow2": (schema.Arr(_EXPR, min_items=2), False),
    "doc": (_STR, False),
}, doc="finite domain: values, range [lo, hi] with step or multiple_of, or pow2 [lo, hi]")

_STAGE = schema.Obj(fields={
    "stage": (_STR, True),
    "pipe": (_S(("string",), enum=PIPES), True),
    "path": (_S(("string",), enum=TRANSFER_PATHS), False),
    "bytes": (_EXPR, False),
    "rows": (_EXPR, False),
    "count": (_EXPR, False),
    "l2_hit": (_EXPR, False),
    "gm_aligned": (_EXPR, False),
    "m": (_EXPR, False),
    "n": (_EXPR, False),
    "k": (_EXPR, False),
    "dtype": (_STR, False),
    "op": (_S(("string",), enum=VECTOR_CLASSES), False),
    "elements": (_EXPR, False),
    "cycles": (_EXPR, False),
}, doc="one pipe stage, run once per trip of its loop")

_LOOP_FIELDS: dict[str, tuple[schema.Node, bool]] = {
    "loop": (_STR, True),
    "trips": (_EXPR, True),
    "buffers": (_EXPR, False),
}
# Loops nest to any depth; the schema describes two levels explicitly and then accepts any item
# (deeper levels are checked by the same code when the loader walks the tree).
_BODY_ITEM_DEEP = schema.AnyOf((_STAGE, schema.Obj(fields={
    **_LOOP_FIELDS, "body": (schema.Arr(schema.Anything(), min_items=1), True)})))
_LOOP = schema.Obj(fields={**_LOOP_FIELDS, "body": (schema.Arr(_BODY_ITEM_DEEP, min_items=1),
                                                    True)})
_BODY_ITEM = schema.AnyOf((_STAGE, _LOOP))
_LOOP_SHALLOW = schema.Obj(fields={**_LOOP_FIELDS,
                                   "body": (schema.Arr(schema.Anything(), min_items=1), True)})

_SIDE = schema.Obj(fields={
    "cores": (_EXPR, True),
    "items": (_EXPR, False),
    "body": (schema.Arr(_BODY_ITEM, min_items=1), True),
}, doc="the per-core program of one core type")

_FIELD = schema.Obj(fields={"type": (_S(("string",), enum=FIELD_TYPES), True),
                            "value": (_EXPR, True), "doc": (_STR, False)})

_KERNEL = schema.Obj(fields={
    "mode": (_S(("string",), enum=tuple(cann.KERNEL_MODES)), False),
    "system_workspace": (_S(("string",), enum=cann.SYSTEM_WORKSPACES), False),
}, doc="how the kernel launches (default from core) and the system workspace it needs")

_IO = schema.Obj(fields={
    "inputs": (schema.Arr(_STR, min_items=1), True),
    "outputs": (schema.Obj(extra=schema.Obj(fields={
        "like": (_STR, False),
        "dims": (schema.Arr(_STR, min_items=1), False)})), True),
}, doc="the OpDef: inputs in order (tensor names from dtypes), outputs with their shape")

SPEC_SCHEMA = schema.Obj(fields={
    "operator": (_STR, True),
    "description": (_STR, False),
    "core": (_S(("string",), enum=("vector", "cube", "mix")), True),
    "dtypes": (schema.Obj(extra=_S(("string",), enum=tuple(DTYPE_BYTES))), True),
    "shape": (schema.Obj(extra=schema.Obj(fields={
        "min": (_S(("integer",)), False),
        "max": (_S(("integer",)), False),
        "from": (_STR, False),
        "doc": (_STR, False)})), True),
    "params": (schema.Obj(extra=_DOMAIN), True),
    "derive": (schema.Obj(extra=_EXPR), False),
    "constraints": (schema.Obj(extra=_EXPR), False),
    "pipeline": (schema.Obj(fields={
        "cube": (_SIDE, False),
        "vector": (_SIDE, False),
        "handoffs": (_EXPR, False),
        "roofline": (schema.Obj(fields={
            "cube_flops": (_EXPR, False),
            "cube_dtype": (_STR, False),
            "vector_bytes": (_EXPR, False),
            "gm_bytes": (_EXPR, True)}), True),
    }), True),
    "baseline": (schema.Obj(extra=_EXPR), True),
    "tiling": (schema.Obj(fields={
        "struct": (_STR, True),
        "fields": (schema.Obj(extra=_FIELD), True),
        "nested": (schema.Obj(extra=schema.Obj(fields={
            "type": (_STR, True),
            "fields": (schema.Obj(extra=_FIELD), True)})), False),
        "block_dim": (_EXPR, True),
        "workspace_bytes": (_EXPR, False),
    }), True),
    "kernel_constants": (schema.Obj(extra=_EXPR), False),
    "tiling_key": (_EXPR, False),
    "kernel": (_KERNEL, False),
    "io": (_IO, False),
    "variants": (schema.Obj(extra=schema.Obj(fields={
        "description": (_STR, False),
        "dtypes": (schema.Obj(extra=_S(("string",), enum=tuple(DTYPE_BYTES))), False),
        "params": (schema.Obj(extra=_DOMAIN), False),
        "derive": (schema.Obj(extra=_EXPR), False),
        "baseline": (schema.Obj(extra=_EXPR), False),
        "kernel": (_KERNEL, False),
    })), False),
}, doc="ascend-tune operator spec")


@dataclass(frozen=True)
class Domain:
    """A parameter's finite domain, as expressions evaluated per shape."""

    kind: str  # values | range | pow2
    exprs: tuple[Expr, ...]
    step: Expr | None
    multiple_of: Expr | None
    where: str

    def values(self, env: Mapping[str, Any]) -> np.ndarray:
        vals = [_to_int(e.evaluate(env), self.where) for e in self.exprs]
        if self.kind == "values":
            out = np.unique(np.asarray(vals, dtype=np.int64))
        elif self.kind == "pow2":
            lo, hi = vals[0], vals[1]
            pows: list[int] = []
            p = 1
            while p <= hi and len(pows) < 63:
                if p >= lo:
                    pows.append(p)
                p *= 2
            out = np.asarray(pows, dtype=np.int64)
        else:
            lo, hi = vals[0], vals[1]
            step = _to_int(self.step.evaluate(env), self.where) if self.step else 1
            mult = _to_int(self.multiple_of.evaluate(env), self.where) if self.multiple_of else 0
            if step <= 0 or mult < 0:
                raise SpecError(f"{self.where}: step and multiple_of must be positive")
            if mult:
                lo = -(-lo // mult) * mult
                step = mult if not self.step else step
                if lo > _INT64_MAX:
                    raise SpecError(f"{self.where}: domain bound {lo} (range start rounded up "
                                    "to multiple_of) does not fit a 64-bit integer")
            if hi >= lo and (hi - lo) // step + 1 > MAX_DOMAIN_VALUES:
                raise SpecError(f"{self.where}: domain has more than {MAX_DOMAIN_VALUES} values; "
                                "use pow2, a larger step or a values list")
            out = np.arange(lo, hi + 1, step, dtype=np.int64)
        if out.size == 0:
            shown = ", ".join(str(v) for v in vals)
            raise SpecError(f"{self.where}: empty domain ({self.kind} [{shown}])")
        return out


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _to_int(value: Any, where: str) -> int:
    arr = np.asarray(value)
    if arr.ndim != 0:
        raise SpecError(f"{where}: domain bound must not depend on other parameters")
    if arr.dtype.kind == "f":
        f = float(arr)
        if not np.isfinite(f) or not -(2.0**63) <= f < 2.0**63:
            raise SpecError(f"{where}: domain bound {f} does not fit a 64-bit integer")
        if f != int(f):
            raise SpecError(f"{where}: domain bound {f} is not an integer")
    out = int(arr)
    if not _INT64_MIN <= out <= _INT64_MAX:
        raise SpecError(f"{where}: domain bound {out} does not fit a 64-bit integer")
    return out


@dataclass(frozen=True)
class Stage:
    name: str
    pipe: str
    where: str
    path: str | None = None
    bytes: Expr | None = None
    rows: Expr | None = None
    count: Expr | None = None
    l2_hit: Expr | None = None
    gm_aligned: Expr | None = None
    m: Expr | None = None
    n: Expr | None = None
    k: Expr | None = None
    dtype: str | None = None
    op: str | None = None
    elements: Expr | None = None
    cycles: Expr | None = None


@dataclass(frozen=True)
class Loop:
    name: str
    trips: Expr
    buffers: Expr | None
    body: tuple[Stage | Loop, ...]
    where: str


@dataclass(frozen=True)
class Side:
    core: str  # cube | vector
    cores: Expr
    items: Expr | None
    body: tuple[Stage | Loop, ...]


@dataclass(frozen=True)
class Field:
    name: str
    ctype: str
    value: Expr


@dataclass(frozen=True)
class Nested:
    name: str
    ctype: str
    fields: tuple[Field, ...]


@dataclass(frozen=True)
class OutputDef:
    """One OpDef output: its shape is an input's (``like``) or built from input dims."""

    name: str
    like: str | None
    dims: tuple[tuple[str, int], ...]  # (input tensor, dim index)


@dataclass(frozen=True)
class OperatorSpec:
    name: str
    description: str
    core: str
    dtypes: Mapping[str, str]
    shape_vars: tuple[str, ...]
    shape_min: Mapping[str, int]
    shape_max: Mapping[str, int]
    shape_from: Mapping[str, str]
    params: tuple[str, ...]
    domains: Mapping[str, Domain]
    derive: tuple[tuple[str, Expr], ...]
    constraints: tuple[tuple[str, Expr], ...]
    sides: tuple[Side, ...]
    handoffs: Expr | None
    roofline_cube_flops: Expr | None
    roofline_cube_dtype: str | None
    roofline_vector_bytes: Expr | None
    roofline_gm_bytes: Expr
    baseline: Mapping[str, Expr]
    tiling_struct: str
    tiling_fields: tuple[Field, ...]
    tiling_nested: tuple[Nested, ...]
    block_dim: Expr
    workspace_bytes: Expr | None
    kernel_constants: tuple[tuple[str, Expr], ...]
    tiling_key: Expr | None
    kernel_mode: str
    system_workspace: str
    io_inputs: tuple[str, ...]
    io_outputs: tuple[OutputDef, ...]
    source_text: str
    origin: str
    variant: str | None
    sha256: str

    @property
    def display_name(self) -> str:
        return self.name if self.variant is None else f"{self.name}:{self.variant}"

    @property
    def snake_name(self) -> str:
        return snake_case(self.name)

    def sizeof_env(self) -> dict[str, int]:
        return {f"sizeof.{t}": DTYPE_BYTES[d] for t, d in self.dtypes.items()}

    def stage_dtype(self, name: str) -> str:
        return self.dtypes.get(name, name)

    @property
    def mode(self) -> cann.KernelMode:
        return cann.KERNEL_MODES[self.kernel_mode]


def round_half_up(value: Any) -> int:
    """The one rounding rule for baseline values (the emitted C++ uses floor(x + 0.5)).

    Raises ValueError when the result is not finite or does not fit a 64-bit integer."""
    x = float(np.floor(float(np.asarray(value)) + 0.5))
    if not (np.isfinite(x) and -(2.0**63) <= x < 2.0**63):
        raise ValueError(f"{float(np.asarray(value))!r} does not fit a 64-bit integer")
    return int(x)


def evaluate_baseline(spec: OperatorSpec, env: Mapping[str, Any]) -> dict[str, int]:
    """Baseline parameter values in spec order of declaration, each seeing the earlier ones."""
    local = dict(env)
    out: dict[str, int] = {}
    for p, e in spec.baseline.items():
        try:
            out[p] = local[p] = round_half_up(e.evaluate(local))
        except ValueError as exc:
            where = e.where or f"{spec.origin}: baseline.{p}"
            raise SpecError(f"{where}: baseline value {exc}") from None
    return {p: out[p] for p in spec.params}


def snake_case(name: str) -> str:
    """OpType to file base name as msOpGen does it (AddCustom -> add_custom)."""
    out = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    out = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", out)
    return out.lower()


def hw_symbols() -> dict[str, Kind]:
    kinds: dict[str, Kind] = {}
    for keys in SCALARS.values():
        for key, (types, _doc) in keys.items():
            kinds[f"hw.{key}"] = Kind.INT if types == ("integer",) else Kind.FLOAT
    return kinds


class _Compiler:
    def __init__(self, origin: str, lines: Mapping[KeyPath, int]) -> None:
        self.origin = origin
        self.lines = lines

    def where(self, *path: str) -> str:
        line = None
        for cut in range(len(path), 0, -1):
            line = self.lines.get(tuple(path[:cut]))
            if line is not None:
                break
        head = f"{self.origin}:{line}" if line else self.origin
        return f"{head}: {'.'.join(path)}"

    def expr(self, source: object, symbols: Mapping[str, Kind], *path: str) -> Expr:
        return parse(source, symbols, self.where(*path))

    def fail(self, message: str, *path: str) -> SpecError:
        return SpecError(f"{self.where(*path)}: {message}")


def _check_ident(c: _Compiler, name: str, what: str, *path: str) -> None:
    if not isinstance(name, str) or not CPP_IDENT.fullmatch(name) or name in CPP_KEYWORDS:
        raise c.fail(f"{what} '{name}' is not a valid C++ identifier", *path)


def _apply_variant(data: dict[str, Any], variant: str, c: _Compiler) -> None:
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
    if over.get("kernel"):
        data["kernel"] = {**(data.get("kernel") or {}), **over["kernel"]}
    if over.get("description"):
        data["description"] = over["description"]


def load_spec_text(text: str, origin: str, variant: str | None = None) -> OperatorSpec:
    data, lines = parse_yaml(text, origin)
    errors = schema.validate(data, SPEC_SCHEMA, origin, lines)
    if errors:
        raise SpecError(errors[0])
    c = _Compiler(origin, lines)
    if variant is not None:
        _apply_variant(data, variant, c)
    name = data["operator"]
    _check_ident(c, name, "operator name", "operator")
    if not name[0].isupper():
        raise c.fail(f"operator '{name}' must be CamelCase as in the OpDef", "operator")

    dtypes: dict[str, str] = dict(data["dtypes"])
    for tensor in dtypes:
        _check_ident(c, tensor, "tensor name", "dtypes", tensor)
    shape_vars = tuple(data["shape"])
    if not shape_vars:
        raise c.fail("needs at least one shape variable", "shape")
    names_seen: dict[str, str] = {}

    def claim(n: str, what: str, *path: str) -> None:
        _check_ident(c, n, f"{what} name", *path)
        if n in names_seen:
            raise c.fail(f"'{n}' is already defined as a {names_seen[n]}", *path)
        names_seen[n] = what

    for v in shape_vars:
        claim(v, "shape variable", "shape", v)
    base_symbols: dict[str, Kind] = {**hw_symbols(),
                                     **{f"sizeof.{t}": Kind.INT for t in dtypes}}
    shape_symbols = {**base_symbols, **{v: Kind.INT for v in shape_vars}}

    params = tuple(data["params"])
    if not params:
        raise c.fail("needs at least one tunable parameter", "params")
    domains: dict[str, Domain] = {}
    for p, d in data["params"].items():
        claim(p, "parameter", "params", p)
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

    symbols = {**shape_symbols, **{p: Kind.INT for p in params}}
    derive = []
    for n, src in (data.get("derive") or {}).items():
        claim(n, "derived value", "derive", n)
        e = c.expr(src, symbols, "derive", n)
        derive.append((n, e))
        symbols[n] = e.kind
    constraints = []
    for n, src in (data.get("constraints") or {}).items():
        e = c.expr(src, symbols, "constraints", n)
        if e.kind is not Kind.BOOL:
            raise c.fail("a constraint must be a comparison or boolean expression",
                         "constraints", n)
        constraints.append((n, e))

    pipe = data["pipeline"]
    sides = []
    for core in ("cube", "vector"):
        if core in pipe:
            sd = pipe[core]
            sides.append(Side(
                core=core,
                cores=c.expr(sd["cores"], symbols, "pipeline", core, "cores"),
                items=(c.expr(sd["items"], symbols, "pipeline", core, "items")
                       if "items" in sd else None),
                body=_body(c, sd["body"], symbols, dtypes, core, ("pipeline", core, "body"))))
    core_kind = data["core"]
    want = {"cube": ["cube"], "vector": ["vector"], "mix": ["cube", "vector"]}[core_kind]
    if [s.core for s in sides] != want:
        raise c.fail(f"core '{core_kind}' needs pipeline section(s): {', '.join(want)}",
                     "pipeline")
    handoffs = (c.expr(pipe["handoffs"], symbols, "pipeline", "handoffs")
                if "handoffs" in pipe else None)
    roof = pipe["roofline"]
    cube_dtype = roof.get("cube_dtype")
    if cube_dtype is not None and cube_dtype not in dtypes and cube_dtype not in DTYPE_BYTES:
        raise c.fail(f"unknown tensor or dtype '{cube_dtype}'"
                     f"{did_you_mean(cube_dtype, [*dtypes, *DTYPE_BYTES])}",
                     "pipeline", "roofline", "cube_dtype")
    if "cube_flops" in roof and cube_dtype is None:
        raise c.fail("cube_flops needs cube_dtype", "pipeline", "roofline")

    # Baseline entries are evaluated in order; each may use the ones before it.
    baseline = {}
    base_symbols_seen = dict(shape_symbols)
    for p, src in data["baseline"].items():
        if p not in domains:
            raise c.fail(f"unknown parameter '{p}'{did_you_mean(p, params)}", "baseline", p)
        baseline[p] = c.expr(src, base_symbols_seen, "baseline", p)
        base_symbols_seen[p] = Kind.INT
    missing = [p for p in params if p not in baseline]
    if missing:
        raise c.fail(f"baseline misses parameter(s): {', '.join(missing)}", "baseline")

    til = data["tiling"]
    _check_ident(c, til["struct"], "struct name", "tiling", "struct")
    fields = _fields(c, til["fields"], symbols, ("tiling", "fields"))
    nested = []
    for n, nd in (til.get("nested") or {}).items():
        _check_ident(c, n, "field name", "tiling", "nested", n)
        nested.append(_nested(c, n, nd, symbols))
    all_names = [f.name for f in fields] + [n.name for n in nested]
    for where_path, f in ([(("tiling", "fields", f.name), f) for f in fields]
                          + [(("tiling", "nested", n.name, "fields", f.name), f)
                             for n in nested for f in n.fields]):
        if not f.value.names:
            v = float(np.asarray(f.value.evaluate({}), dtype=np.float64))
            lo, hi = cann.field_range(f.ctype)
            if not (np.isfinite(v) and lo <= v <= hi):
                raise c.fail(f"value {f.value.source} does not fit {f.ctype}", *where_path)
    for fname in all_names:
        if fname.startswith(cann.PAD_FIELD_PREFIX):
            raise c.fail(f"field names starting with '{cann.PAD_FIELD_PREFIX}' are reserved "
                         "for the padding emit adds", "tiling", "fields", fname)
    dup = {x for x in all_names if all_names.count(x) > 1}
    if dup:
        raise c.fail(f"duplicate field name(s): {', '.join(sorted(dup))}", "tiling")

    kconsts = []
    for n, src in (data.get("kernel_constants") or {}).items():
        _check_ident(c, n, "constant name", "kernel_constants", n)
        kconsts.append((n, c.expr(src, base_symbols, "kernel_constants", n)))
    tiling_key = (c.expr(data["tiling_key"], symbols, "tiling_key")
                  if "tiling_key" in data else None)
    if tiling_key is not None and tiling_key.kind is Kind.FLOAT:
        raise c.fail("tiling_key must be an integer expression", "tiling_key")

    kernel = data.get("kernel") or {}
    kernel_mode = kernel.get("mode", cann.DEFAULT_KERNEL_MODE[core_kind])
    if (kernel_mode, core_kind) in (("aiv_only", "cube"), ("aiv_only", "mix"),
                                    ("aic_only", "vector"), ("aic_only", "mix")):
        raise c.fail(f"kernel mode {kernel_mode} cannot run a '{core_kind}' pipeline",
                     "kernel", "mode")
    system_workspace = kernel.get("system_workspace",
                                  "lib_api" if kernel_mode == "mix" else "none")
    if kernel_mode == "mix" and system_workspace != "lib_api":
        # On 910B user workspace starts past the system part (cann_integration.md §2): a mix
        # kernel that reserves none is written out of bounds.
        raise c.fail("a mix kernel needs system_workspace: lib_api", "kernel",
                     "system_workspace")
    io_inputs, io_outputs = _io(c, data.get("io"), dtypes)

    shape_min = {v: int(o.get("min", 1)) for v, o in data["shape"].items()}
    shape_max = {v: int(o["max"]) for v, o in data["shape"].items() if "max" in o}
    for v, o in data["shape"].items():
        # A shape variable read from a tensor (`from:`) is an extent: an empty tensor
        # launches no kernel. Others may be flags or counts, but never negative.
        floor = 1 if "from" in o else 0
        if not floor <= shape_min[v] <= _INT64_MAX:
            raise c.fail(f"min must be an integer from {floor} to 2**63-1, got "
                         f"{str(shape_min[v])[:40]}", "shape", v, "min")
        if v in shape_max and not shape_min[v] <= shape_max[v] <= _INT64_MAX:
            raise c.fail(f"max must be an integer from min ({shape_min[v]}) to 2**63-1, got "
                         f"{str(shape_max[v])[:40]}", "shape", v, "max")
    return OperatorSpec(
        name=name,
        description=str(data.get("description", "")),
        core=core_kind,
        dtypes=dtypes,
        shape_vars=shape_vars,
        shape_min=shape_min,
        shape_max=shape_max,
        shape_from={v: o["from"] for v, o in data["shape"].items() if "from" in o},
        params=params,
        domains=domains,
        derive=tuple(derive),
        constraints=tuple(constraints),
        sides=tuple(sides),
        handoffs=handoffs,
        roofline_cube_flops=(c.expr(roof["cube_flops"], shape_symbols, "pipeline", "roofline",
                                    "cube_flops") if "cube_flops" in roof else None),
        roofline_cube_dtype=cube_dtype,
        roofline_vector_bytes=(c.expr(roof["vector_bytes"], shape_symbols, "pipeline",
                                      "roofline", "vector_bytes")
                               if "vector_bytes" in roof else None),
        roofline_gm_bytes=c.expr(roof["gm_bytes"], shape_symbols, "pipeline", "roofline",
                                 "gm_bytes"),
        baseline=baseline,
        tiling_struct=til["struct"],
        tiling_fields=fields,
        tiling_nested=tuple(nested),
        block_dim=c.expr(til["block_dim"], symbols, "tiling", "block_dim"),
        workspace_bytes=(c.expr(til["workspace_bytes"], symbols, "tiling", "workspace_bytes")
                         if "workspace_bytes" in til else None),
        kernel_constants=tuple(kconsts),
        tiling_key=tiling_key,
        kernel_mode=kernel_mode,
        system_workspace=system_workspace,
        io_inputs=io_inputs,
        io_outputs=io_outputs,
        source_text=text,
        origin=origin,
        variant=variant,
        sha256=meaning_sha256(data),
    )


def meaning_sha256(data: Mapping[str, Any]) -> str:
    """Hash of what a spec means (variant applied, comments, layout, docs and descriptions
    left out): an edit that cannot change a result keeps the results cache and the banners."""
    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items()
                    if k not in ("doc", "description", "variants")}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node
    canonical = json.dumps(strip(data), separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _fields(c: _Compiler, raw: Mapping[str, Any], symbols: Mapping[str, Kind],
            path: tuple[str, ...]) -> tuple[Field, ...]:
    out = []
    for n, fd in raw.items():
        _check_ident(c, n, "field name", *path, n)
        out.append(Field(n, fd["type"], c.expr(fd["value"], symbols, *path, n, "value")))
    return tuple(out)


def _nested(c: _Compiler, name: str, nd: Mapping[str, Any], symbols: Mapping[str, Kind]
            ) -> Nested:
    """A nested API tiling struct: every field of the real struct, in its order."""
    path = ("tiling", "nested", name)
    ctype = nd["type"]
    if ctype not in cann.NESTED_TYPES:
        raise c.fail(f"nested type '{ctype}' is not an API tiling struct ascend-tune knows"
                     f"{did_you_mean(ctype, cann.NESTED_TYPES)}; known: "
                     f"{', '.join(cann.NESTED_TYPES)}", *path, "type")
    fields = _fields(c, nd["fields"], symbols, (*path, "fields"))
    want, want_type = cann.NESTED_TYPES[ctype]
    got = tuple(f.name for f in fields)
    if got != want:
        missing = [f for f in want if f not in got]
        extra = [f for f in got if f not in want]
        if missing:
            problem = f"misses field(s) {', '.join(missing[:6])}" + (
                f" and {len(missing) - 6} more" if len(missing) > 6 else "")
        elif extra:
            problem = f"has unknown field(s) {', '.join(extra)}"
        else:
            first = next(i for i, (a, b) in enumerate(zip(got, want, strict=True)) if a != b)
            problem = f"lists field {got[first]} where {want[first]} belongs"
        raise c.fail(f"{ctype} {problem}: list all {len(want)} fields in the real order "
                     "(a field left out is 0 in the kernel, which the Matmul API misreads)",
                     *path, "fields")
    for f in fields:
        if f.ctype != want_type:
            raise c.fail(f"{ctype}.{f.name} is {want_type}, not {f.ctype}",
                         *path, "fields", f.name, "type")
    return Nested(name, ctype, fields)


def _io(c: _Compiler, raw: Mapping[str, Any] | None, dtypes: Mapping[str, str]
        ) -> tuple[tuple[str, ...], tuple[OutputDef, ...]]:
    if raw is None:
        return (), ()
    inputs = tuple(raw["inputs"])
    for i, name in enumerate(inputs):
        if name not in dtypes:
            raise c.fail(f"input '{name}' has no dtype{did_you_mean(name, dtypes)}",
                         "io", "inputs", str(i))
    if len(set(inputs)) != len(inputs):
        raise c.fail("an input is listed twice", "io", "inputs")
    outputs = []
    for name, od in raw["outputs"].items():
        here = ("io", "outputs", name)
        if name not in dtypes:
            raise c.fail(f"output '{name}' has no dtype{did_you_mean(name, dtypes)}", *here)
        if name in inputs:
            raise c.fail(f"'{name}' is both an input and an output", *here)
        if ("like" in od) == ("dims" in od):
            raise c.fail("give exactly one of like (an input's shape) or dims", *here)
        like = od.get("like")
        if like is not None and like not in inputs:
            raise c.fail(f"like: '{like}' is not an input{did_you_mean(like, inputs)}",
                         *here, "like")
        dims = []
        for j, ref in enumerate(od.get("dims") or []):
            tensor, _, dim = ref.partition(".dim")
            if tensor not in inputs or not dim.isdigit() or len(dim) > 2:
                raise c.fail(f"dims entry '{ref}' is not <input>.dim<N>", *here, "dims", str(j))
            dims.append((tensor, int(dim)))
        outputs.append(OutputDef(name, like, tuple(dims)))
    return inputs, tuple(outputs)


_STAGE_KEYS = {
    "transfer": {"path", "bytes", "rows", "count", "l2_hit", "gm_aligned"},
    "cube": {"m", "n", "k", "dtype", "count"},
    "vector": {"op", "elements", "dtype", "count"},
    "scalar": {"cycles"},
}
_REQUIRED = {"transfer": ("path", "bytes"), "cube": ("m", "n", "k", "dtype"),
             "vector": ("op", "elements", "dtype"), "scalar": ("cycles",)}


def _body(c: _Compiler, items: list[Any], symbols: Mapping[str, Kind],
          dtypes: Mapping[str, str], core: str, path: tuple[str, ...]
          ) -> tuple[Stage | Loop, ...]:
    out: list[Stage | Loop] = []
    for i, item in enumerate(items):
        here = (*path, str(i))
        if not isinstance(item, dict):
            raise c.fail("expected a stage or loop mapping", *here)
        if "loop" in item:
            # The loop's own keys here; its body items are checked by the recursive call.
            errors = schema.validate(item, _LOOP_SHALLOW, c.origin, c.lines, here)
            if errors:
                raise SpecError(errors[0])
            out.append(Loop(
                name=str(item["loop"]),
                trips=c.expr(item["trips"], symbols, *here, "trips"),
                buffers=(c.expr(item["buffers"], symbols, *here, "buffers")
                         if "buffers" in item else None),
                body=_body(c, item["body"], symbols, dtypes, core, (*here, "body")),
                where=c.where(*here)))
            continue
        errors = schema.validate(item, _STAGE, c.origin, c.lines, here)
        if errors:
            raise SpecError(errors[0])
        pipe = item["pipe"]
        if pipe not in SIDE_PIPES[core]:
            raise c.fail(f"pipe '{pipe}' does not exist on the {core} core; "
                         f"allowed: {', '.join(SIDE_PIPES[core])}", *here, "pipe")
        kind = ("transfer" if pipe in ("mte2", "mte1", "mte3", "fixpipe") else pipe)
        allowed = _STAGE_KEYS[kind] | {"stage", "pipe"}
        for key in item:
            if key not in allowed:
                raise c.fail(f"key '{key}' does not apply to a {pipe} stage; "
                             f"allowed: {', '.join(sorted(allowed))}", *here, key)
        for key in _REQUIRED[kind]:
            if key not in item:
                raise c.fail(f"a {pipe} stage needs '{key}'", *here)
        if kind == "transfer" and PATH_PIPE[item["path"]] != pipe:
            raise c.fail(f"path {item['path']} runs on {PATH_PIPE[item['path']]}, not {pipe}",
                         *here, "path")
        if "dtype" in item and item["dtype"] not in dtypes and item["dtype"] not in DTYPE_BYTES:
            raise c.fail(f"unknown tensor or dtype '{item['dtype']}'"
                         f"{did_you_mean(item['dtype'], [*dtypes, *DTYPE_BYTES])}",
                         *here, "dtype")
        exprs = {k: c.expr(v, symbols, *here, k) for k, v in item.items()
                 if k not in ("stage", "pipe", "path", "dtype", "op")}
        out.append(Stage(name=str(item["stage"]), pipe=pipe, where=c.where(*here),
                         path=item.get("path"), dtype=item.get("dtype"), op=item.get("op"),
                         **exprs))
    return tuple(out)


def split_variant(ref: str) -> tuple[str, str | None]:
    """``add:float32`` -> (``add``, ``float32``); a plain name or path has no variant."""
    head, sep, tail = ref.rpartition(":")
    if sep and head and tail and "/" not in tail and "\\" not in tail:
        return head, tail
    return ref, None


def load_spec(ref: str | Path) -> OperatorSpec:
    """Load a built-in spec by name (``add``), a spec file, either with ``:variant``."""
    name, variant = split_variant(str(ref))
    path = resources.resolve("operator_specs", name)
    if not path.exists():
        known = resources.builtin_names("operator_specs")
        raise SpecError(f"operator spec '{ref}' not found{did_you_mean(str(ref), known)}; "
                        f"built-in: {', '.join(known)}")
    return load_spec_text(read_text(path, "operator spec"), str(path), variant)


def parse_assignments(text: str, what: str) -> dict[str, int]:
    """Parse ``K=V,K=V`` (integers) from the command line."""
    out: dict[str, int] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not key:
            raise AscendTuneError(f"{what} '{text}': expected NAME=VALUE pairs separated by ','")
        try:
            out[key] = int(value.strip())
        except ValueError:
            raise AscendTuneError(f"{what} '{text}': value of {key} must be an integer, "
                                  f"got '{value.strip()}'") from None
    if not out:
        raise AscendTuneError(f"{what} is empty: expected NAME=VALUE pairs separated by ','")
    return out


def check_shape(spec: OperatorSpec, shape: Mapping[str, int], origin: str) -> dict[str, int]:
    """Validate one shape against the spec's variables; return it in the spec's order."""
    unknown = [k for k in shape if k not in spec.shape_vars]
    if unknown:
        k = unknown[0]
        raise AscendTuneError(f"{origin}: unknown shape variable '{k}'"
                              f"{did_you_mean(k, spec.shape_vars)}; "
                              f"{spec.name} takes {', '.join(spec.shape_vars)}")
    missing = [v for v in spec.shape_vars if v not in shape]
    if missing:
        raise AscendTuneError(f"{origin}: shape misses {', '.join(missing)}")
    out = {}
    for v in spec.shape_vars:
        value = shape[v]
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise AscendTuneError(f"{origin}: {v} must be an integer, got {value!r:.60}")
        value = int(value)
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise AscendTuneError(f"{origin}: {v}={str(value)[:40]} does not fit a 64-bit "
                                  "integer")
        if value < spec.shape_min[v] or (v in spec.shape_max and value > spec.shape_max[v]):
            hi = spec.shape_max.get(v)
            rng = f"[{spec.shape_min[v]}, {hi}]" if hi is not None else f">= {spec.shape_min[v]}"
            raise AscendTuneError(f"{origin}: {v}={value} is out of range {rng}")
        out[v] = value
    return out


def shape_key(shape: Mapping[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in shape.items())


def spec_paths() -> list[Path]:
    return sorted(resources.data_dir("operator_specs").glob("*.yaml"))

