"""The sections that shape the emitted code: ``tiling``, ``kernel_constants`` and ``tiling_key``,
``kernel`` and ``io``.

Owns :func:`tiling_section` (the tiling struct: fields, nested API tiling structs checked
against the real struct's field list and types, constant values that must fit their C type,
reserved and duplicate names), :func:`kernel_constants_section` (shape-independent constants
and the integer tiling key), :func:`kernel_section` (launch mode and system workspace) and
:func:`io_section` (the OpDef inputs and outputs, and that every ``from:`` names an input).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ascend_tune.base import cann
from ascend_tune.base.errors import did_you_mean
from ascend_tune.expr import Expr, Kind
from ascend_tune.spec.compile_context import Compiler, Symbols
from ascend_tune.spec.model import Field, Nested, OutputDef, ShapeSource

# --- tiling ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class TilingSection:
    """What ``tiling:`` compiles to: the struct, its fields and nested structs, block_dim and
    the user workspace."""

    struct: str
    fields: tuple[Field, ...]
    nested: tuple[Nested, ...]
    block_dim: Expr
    workspace_bytes: Expr | None


def tiling_section(c: Compiler, til: Mapping[str, Any], symbols: Symbols) -> TilingSection:
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
    return TilingSection(
        struct=til["struct"], fields=fields, nested=tuple(nested),
        block_dim=c.expr(til["block_dim"], symbols, "tiling", "block_dim"),
        workspace_bytes=(c.expr(til["workspace_bytes"], symbols, "tiling", "workspace_bytes")
                         if "workspace_bytes" in til else None))


def _fields(c: Compiler, raw: Mapping[str, Any], symbols: Mapping[str, Kind],
            path: tuple[str, ...]) -> tuple[Field, ...]:
    out = []
    for n, fd in raw.items():
        c.ident(n, "field name", *path, n)
        out.append(Field(n, fd["type"], c.expr(fd["value"], symbols, *path, n, "value"),
                         str(fd.get("doc", "")), fd.get("meaning")))
    return tuple(out)


def _nested(c: Compiler, name: str, nd: Mapping[str, Any], symbols: Mapping[str, Kind]
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

def kernel_constants_section(c: Compiler, data: Mapping[str, Any], base_symbols: Symbols,
                             symbols: Symbols
                             ) -> tuple[tuple[tuple[str, Expr], ...], Expr | None]:
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

def kernel_section(c: Compiler, kernel: Mapping[str, Any], core_kind: str) -> tuple[str, str]:
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

def io_section(c: Compiler, raw: Mapping[str, Any] | None, dtypes: Mapping[str, str],
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
