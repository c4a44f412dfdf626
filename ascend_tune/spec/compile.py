"""Compile a spec's YAML into an :class:`OperatorSpec`.

The loader checks structure against :data:`SPEC_SCHEMA` (unknown keys get "did you mean"),
then compiles every section in file order, each expression against the names visible at its
place, so an error names the file, the key path, the line and the offending token.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ascend_tune.base import cann, schema
from ascend_tune.base.errors import SpecError, did_you_mean
from ascend_tune.base.vocabulary import DTYPE_BYTES, PATH_PIPE, SIDE_PIPES, stage_kind
from ascend_tune.base.yamlio import INT64_MAX, KeyPath, parse_yaml
from ascend_tune.expr import Expr, Kind, parse
from ascend_tune.hardware import SCALARS
from ascend_tune.spec.format import (
    CPP_IDENT,
    CPP_KEYWORDS,
    LOOP_SHALLOW,
    MAX_DOMAIN_VALUES,
    SHAPE_FROM,
    SHAPE_FROM_FORMS,
    SPEC_SCHEMA,
    STAGE,
    STAGE_KEYS,
    STAGE_NAME_KEYS,
    STAGE_REQUIRED,
)
from ascend_tune.spec.model import (
    Domain,
    Field,
    Loop,
    Nested,
    OperatorSpec,
    OutputDef,
    ShapeSource,
    ShapeSourceKind,
    Side,
    Stage,
)

Symbols = dict[str, Kind]


def hw_symbols() -> dict[str, Kind]:
    kinds: dict[str, Kind] = {}
    for keys in SCALARS.values():
        for key, (types, _doc) in keys.items():
            kinds[f"hw.{key}"] = Kind.INT if types == ("integer",) else Kind.FLOAT
    return kinds


class _Compiler:
    """Where a key is (file, line, key path), and the names the spec has defined so far."""

    def __init__(self, origin: str, lines: Mapping[KeyPath, int]) -> None:
        self.origin = origin
        self.lines = lines
        self.names_seen: dict[str, str] = {}

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

    def ident(self, name: str, what: str, *path: str) -> None:
        if not isinstance(name, str) or not CPP_IDENT.fullmatch(name) or name in CPP_KEYWORDS:
            raise self.fail(f"{what} '{name}' is not a valid C++ identifier", *path)

    def claim(self, name: str, what: str, *path: str) -> None:
        """A shape variable, parameter or derived value: one namespace, no name twice."""
        self.ident(name, f"{what} name", *path)
        if name in self.names_seen:
            raise self.fail(f"'{name}' is already defined as a {self.names_seen[name]}", *path)
        self.names_seen[name] = what


def load_spec_text(text: str, origin: str, variant: str | None = None) -> OperatorSpec:
    data, lines = parse_yaml(text, origin)
    errors = schema.validate(data, SPEC_SCHEMA, origin, lines)
    if errors:
        raise SpecError(errors[0])
    c = _Compiler(origin, lines)
    if variant is not None:
        apply_variant(data, variant, c)
    name, dtypes = _operator(c, data)
    layouts = _layouts(c, data.get("layouts") or {}, dtypes)
    shape = _shape(c, data["shape"], dtypes)
    domains = _params(c, data["params"], shape.symbols)
    symbols = {**shape.symbols, **{p: Kind.INT for p in domains}}
    derive = _derive(c, data.get("derive") or {}, symbols)
    constraints = _constraints(c, data.get("constraints") or {}, symbols)
    pipe = _pipeline(c, data["pipeline"], data["core"], symbols, shape.symbols, dtypes,
                     layouts)
    baseline = _baseline(c, data["baseline"], tuple(domains), shape.symbols)
    til = _tiling(c, data["tiling"], symbols)
    kconsts, tiling_key = _kernel_constants(c, data, shape.base_symbols, symbols)
    kernel_mode, system_workspace = _kernel(c, data.get("kernel") or {}, data["core"])
    io_inputs, io_outputs = _io(c, data.get("io"), dtypes, shape.sources)
    return OperatorSpec(
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
    # ``version: 1`` and no version mean the same (the only format so far).
    meaning = {k: v for k, v in strip(data).items() if k != "version"}
    canonical = json.dumps(meaning, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def apply_variant(data: dict[str, Any], variant: str, c: _Compiler) -> None:
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

def _operator(c: _Compiler, data: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    name: str = data["operator"]
    c.ident(name, "operator name", "operator")
    if not name[0].isupper():
        raise c.fail(f"operator '{name}' must be CamelCase as in the OpDef", "operator")
    dtypes: dict[str, str] = dict(data["dtypes"])
    for tensor in dtypes:
        c.ident(tensor, "tensor name", "dtypes", tensor)
    return name, dtypes


def _layouts(c: _Compiler, raw: Mapping[str, Any], dtypes: Mapping[str, str]
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
    base_symbols: Symbols  # hardware and sizeof.<tensor>: what kernel constants see
    symbols: Symbols  # and the shape variables


def _shape(c: _Compiler, raw: Mapping[str, Any], dtypes: Mapping[str, str]) -> _Shape:
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
    base_symbols: Symbols = {**hw_symbols(), **{f"sizeof.{t}": Kind.INT for t in dtypes}}
    symbols = {**base_symbols, **{v: Kind.INT for v in shape_vars}}
    return _Shape(shape_vars, shape_min, shape_max, sources, base_symbols, symbols)


def _shape_source(c: _Compiler, text: str, *path: str) -> ShapeSource:
    m = SHAPE_FROM.fullmatch(text)
    if not m:
        raise c.fail(f"'{text:.60}' is not {SHAPE_FROM_FORMS}", *path)
    dim = m.group(3)
    kind = "dim" if dim is not None else cast(ShapeSourceKind, m.group(2))
    return ShapeSource(int(m.group(1)), kind, None if dim is None else int(dim))


# --- params, derive, constraints -------------------------------------------------------------

def _params(c: _Compiler, raw: Mapping[str, Any], shape_symbols: Symbols) -> dict[str, Domain]:
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


def _derive(c: _Compiler, raw: Mapping[str, Any], symbols: Symbols
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


def _constraints(c: _Compiler, raw: Mapping[str, Any], symbols: Symbols
                 ) -> tuple[tuple[str, Expr], ...]:
    constraints = []
    for n, src in raw.items():
        e = c.expr(src, symbols, "constraints", n)
        if e.kind is not Kind.BOOL:
            raise c.fail("a constraint must be a comparison or boolean expression",
                         "constraints", n)
        constraints.append((n, e))
    return tuple(constraints)


# --- pipeline --------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Pipeline:
    sides: tuple[Side, ...]
    handoffs: Expr | None
    cube_flops: Expr | None
    cube_dtype: str | None
    vector_bytes: Expr | None
    gm_bytes: Expr


def _pipeline(c: _Compiler, pipe: Mapping[str, Any], core_kind: str, symbols: Symbols,
              shape_symbols: Symbols, dtypes: Mapping[str, str],
              layouts: Mapping[str, str]) -> _Pipeline:
    sides = []
    for core in ("cube", "vector"):
        if core in pipe:
            sd = pipe[core]
            sides.append(Side(
                core=core,
                cores=c.expr(sd["cores"], symbols, "pipeline", core, "cores"),
                items=(c.expr(sd["items"], symbols, "pipeline", core, "items")
                       if "items" in sd else None),
                body=_body(c, sd["body"], symbols, dtypes, core, ("pipeline", core, "body"),
                           layouts)))
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

    def roofline(key: str) -> Expr | None:
        return (c.expr(roof[key], shape_symbols, "pipeline", "roofline", key)
                if key in roof else None)

    gm_bytes = roofline("gm_bytes")
    assert gm_bytes is not None  # required by the schema
    return _Pipeline(tuple(sides), handoffs, roofline("cube_flops"), cube_dtype,
                     roofline("vector_bytes"), gm_bytes)


def _body(c: _Compiler, items: list[Any], symbols: Mapping[str, Kind],
          dtypes: Mapping[str, str], core: str, path: tuple[str, ...],
          layouts: Mapping[str, str]) -> tuple[Stage | Loop, ...]:
    """A loop body: stages and (recursively) loops, each checked for the core it runs on."""
    out: list[Stage | Loop] = []
    for i, item in enumerate(items):
        here = (*path, str(i))
        if not isinstance(item, dict):
            raise c.fail("expected a stage or loop mapping", *here)
        if "loop" in item:
            out.append(_loop(c, item, symbols, dtypes, core, here, layouts))
        else:
            out.append(_stage(c, item, symbols, dtypes, core, here, layouts))
    return tuple(out)


def _loop(c: _Compiler, item: Mapping[str, Any], symbols: Mapping[str, Kind],
          dtypes: Mapping[str, str], core: str, here: tuple[str, ...],
          layouts: Mapping[str, str]) -> Loop:
    # The loop's own keys here; its body items are checked by the recursive call.
    errors = schema.validate(item, LOOP_SHALLOW, c.origin, c.lines, here)
    if errors:
        raise SpecError(errors[0])
    return Loop(
        name=str(item["loop"]),
        trips=c.expr(item["trips"], symbols, *here, "trips"),
        buffers=(c.expr(item["buffers"], symbols, *here, "buffers")
                 if "buffers" in item else None),
        body=_body(c, item["body"], symbols, dtypes, core, (*here, "body"), layouts),
        where=c.where(*here))


def _stage(c: _Compiler, item: Mapping[str, Any], symbols: Mapping[str, Kind],
           dtypes: Mapping[str, str], core: str, here: tuple[str, ...],
           layouts: Mapping[str, str]) -> Stage:
    errors = schema.validate(item, STAGE, c.origin, c.lines, here)
    if errors:
        raise SpecError(errors[0])
    pipe = item["pipe"]
    if pipe not in SIDE_PIPES[core]:
        raise c.fail(f"pipe '{pipe}' does not exist on the {core} core; "
                     f"allowed: {', '.join(SIDE_PIPES[core])}", *here, "pipe")
    kind = stage_kind(pipe)
    allowed = STAGE_KEYS[kind] | {"stage", "pipe"}
    for key in item:
        if key not in allowed:
            raise c.fail(f"key '{key}' does not apply to a {pipe} stage; "
                         f"allowed: {', '.join(sorted(allowed))}", *here, key)
    for key in STAGE_REQUIRED[kind]:
        if key not in item:
            raise c.fail(f"a {pipe} stage needs '{key}'", *here)
    if kind == "transfer" and PATH_PIPE[item["path"]] != pipe:
        raise c.fail(f"path {item['path']} runs on {PATH_PIPE[item['path']]}, not {pipe}",
                     *here, "path")
    if "dtype" in item and item["dtype"] not in dtypes and item["dtype"] not in DTYPE_BYTES:
        raise c.fail(f"unknown tensor or dtype '{item['dtype']}'"
                     f"{did_you_mean(item['dtype'], [*dtypes, *DTYPE_BYTES])}",
                     *here, "dtype")
    operand = item.get("operand")
    if operand is not None and operand not in dtypes:
        raise c.fail(f"operand '{operand}' is not a tensor{did_you_mean(operand, dtypes)}; "
                     f"tensors: {', '.join(dtypes)}", *here, "operand")
    exprs = {k: c.expr(v, symbols, *here, k) for k, v in item.items()
             if k not in STAGE_NAME_KEYS}
    return Stage(name=str(item["stage"]), pipe=pipe, where=c.where(*here),
                 path=item.get("path"), dtype=item.get("dtype"), op=item.get("op"),
                 operand=operand, layout=layouts[operand] if operand is not None else None,
                 **exprs)


# --- baseline --------------------------------------------------------------------------------

def _baseline(c: _Compiler, raw: Mapping[str, Any], params: tuple[str, ...],
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


# --- tiling ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Tiling:
    struct: str
    fields: tuple[Field, ...]
    nested: tuple[Nested, ...]
    block_dim: Expr
    workspace_bytes: Expr | None


def _tiling(c: _Compiler, til: Mapping[str, Any], symbols: Symbols) -> _Tiling:
    c.ident(til["struct"], "struct name", "tiling", "struct")
    fields = _fields(c, til["fields"], symbols, ("tiling", "fields"))
    nested = []
    for n, nd in (til.get("nested") or {}).items():
        c.ident(n, "field name", "tiling", "nested", n)
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
    return _Tiling(
        struct=til["struct"], fields=fields, nested=tuple(nested),
        block_dim=c.expr(til["block_dim"], symbols, "tiling", "block_dim"),
        workspace_bytes=(c.expr(til["workspace_bytes"], symbols, "tiling", "workspace_bytes")
                         if "workspace_bytes" in til else None))


def _fields(c: _Compiler, raw: Mapping[str, Any], symbols: Mapping[str, Kind],
            path: tuple[str, ...]) -> tuple[Field, ...]:
    out = []
    for n, fd in raw.items():
        c.ident(n, "field name", *path, n)
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


# --- kernel_constants and tiling_key ---------------------------------------------------------

def _kernel_constants(c: _Compiler, data: Mapping[str, Any], base_symbols: Symbols,
                      symbols: Symbols) -> tuple[tuple[tuple[str, Expr], ...], Expr | None]:
    """Kernel constants (shape-independent: hardware and sizeof only) and the tiling key."""
    kconsts = []
    for n, src in (data.get("kernel_constants") or {}).items():
        c.ident(n, "constant name", "kernel_constants", n)
        kconsts.append((n, c.expr(src, base_symbols, "kernel_constants", n)))
    tiling_key = (c.expr(data["tiling_key"], symbols, "tiling_key")
                  if "tiling_key" in data else None)
    if tiling_key is not None and tiling_key.kind is Kind.FLOAT:
        raise c.fail("tiling_key must be an integer expression", "tiling_key")
    return tuple(kconsts), tiling_key


# --- kernel ----------------------------------------------------------------------------------

def _kernel(c: _Compiler, kernel: Mapping[str, Any], core_kind: str) -> tuple[str, str]:
    """The launch mode (default from core) and the system workspace it needs."""
    kernel_mode: str = kernel.get("mode", cann.DEFAULT_KERNEL_MODE[core_kind])
    if (kernel_mode, core_kind) in (("aiv_only", "cube"), ("aiv_only", "mix"),
                                    ("aic_only", "vector"), ("aic_only", "mix")):
        raise c.fail(f"kernel mode {kernel_mode} cannot run a '{core_kind}' pipeline",
                     "kernel", "mode")
    system_workspace: str = kernel.get("system_workspace",
                                       "lib_api" if kernel_mode == "mix" else "none")
    if kernel_mode == "mix" and system_workspace != "lib_api":
        # On 910B user workspace starts past the system part (docs/spec_reference.md, "CANN
        # facts"): a mix kernel that reserves none is written out of bounds.
        raise c.fail("a mix kernel needs system_workspace: lib_api", "kernel",
                     "system_workspace")
    return kernel_mode, system_workspace


# --- io --------------------------------------------------------------------------------------

def _io(c: _Compiler, raw: Mapping[str, Any] | None, dtypes: Mapping[str, str],
        sources: Mapping[str, ShapeSource]
        ) -> tuple[tuple[str, ...], tuple[OutputDef, ...]]:
    """The OpDef inputs and outputs; with them, every ``from:`` must name an input."""
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
    for v, src in sources.items():
        if src.input >= len(inputs):
            raise c.fail(f"'{src}' reads input {src.input}, but io.inputs lists "
                         f"{len(inputs)} (input0 to input{len(inputs) - 1})", "shape", v, "from")
    return inputs, tuple(outputs)
