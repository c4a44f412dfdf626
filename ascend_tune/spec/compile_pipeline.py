"""The ``pipeline:`` section: each core side's body of stages and loops, handoffs, roofline.

Owns :func:`pipeline_section`, which compiles the cube and/or vector side a spec's ``core``
needs (cores, items, body), each stage checked for the core it runs on (its pipe, the keys that
apply to its kind, transfer paths, dtypes and operands), loops recursively, and the roofline
amounts the model's lower bound uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ascend_tune.base import schema
from ascend_tune.base.ascendc_calls import VECTOR_CALLS
from ascend_tune.base.errors import SpecError, did_you_mean
from ascend_tune.base.vocabulary import (
    DTYPE_BYTES,
    GM_PATHS,
    PATH_PIPE,
    SIDE_PIPES,
    stage_kind,
)
from ascend_tune.expr import Expr, Kind
from ascend_tune.spec.compile_context import Compiler, Symbols
from ascend_tune.spec.format import (
    LOOP_SHALLOW,
    STAGE,
    STAGE_KEYS,
    STAGE_NAME_KEYS,
    STAGE_REQUIRED,
)
from ascend_tune.spec.model import Loop, Side, Stage


@dataclass(frozen=True)
class PipelineSection:
    """What ``pipeline:`` compiles to: the core sides, handoffs and the roofline amounts."""

    sides: tuple[Side, ...]
    handoffs: Expr | None
    cube_flops: Expr | None
    cube_dtype: str | None
    vector_bytes: Expr | None
    gm_bytes: Expr


def pipeline_section(c: Compiler, pipe: Mapping[str, Any], core_kind: str, symbols: Symbols,
                     shape_symbols: Symbols, dtypes: Mapping[str, str],
                     layouts: Mapping[str, str]) -> PipelineSection:
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
                           layouts),
                prologue=bool(sd.get("prologue", False))))
    want = {"cube": ["cube"], "vector": ["vector"], "mix": ["cube", "vector"]}[core_kind]
    if [s.core for s in sides] != want:
        raise c.fail(f"core '{core_kind}' needs pipeline section(s): {', '.join(want)}",
                     "pipeline")
    first = [s.core for s in sides if s.prologue]
    if first and core_kind != "mix":
        raise c.fail("a prologue runs before the other side: only in a 'mix' pipeline",
                     "pipeline", first[0], "prologue")
    if len(first) > 1:
        raise c.fail("only one side can be the prologue (the other runs after its barrier)",
                     "pipeline", "vector", "prologue")
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
    return PipelineSection(tuple(sides), handoffs, roofline("cube_flops"), cube_dtype,
                     roofline("vector_bytes"), gm_bytes)


def _body(c: Compiler, items: list[Any], symbols: Mapping[str, Kind],
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


def _loop(c: Compiler, item: Mapping[str, Any], symbols: Mapping[str, Kind],
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


def _stage(c: Compiler, item: Mapping[str, Any], symbols: Mapping[str, Kind],
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
    if ("gm_rows" in item) != ("gm_cols" in item):
        given, missing = ("gm_rows", "gm_cols") if "gm_rows" in item else ("gm_cols", "gm_rows")
        raise c.fail(f"'{given}' needs '{missing}' too: together they give the operand's "
                     "row pitch in GM", *here, given)
    if "gm_rows" in item and item.get("path") not in GM_PATHS:
        raise c.fail(f"'gm_rows' and 'gm_cols' apply to GM paths ({', '.join(sorted(GM_PATHS))}), "
                     f"not {item.get('path')}", *here, "gm_rows")
    if "gm_rows" in item and "operand" not in item:
        raise c.fail("'gm_rows' and 'gm_cols' need 'operand': the tensor's element size and "
                     "layout turn them into the row pitch", *here, "gm_rows")
    op = _vector_op(c, item, here) if kind == "vector" else item.get("op")
    exprs = {k: c.expr(v, symbols, *here, k) for k, v in item.items()
             if k not in STAGE_NAME_KEYS}
    return Stage(name=str(item["stage"]), pipe=pipe, where=c.where(*here),
                 path=item.get("path"), dtype=item.get("dtype"), op=op, call=item.get("call"),
                 operand=operand, layout=layouts[operand] if operand is not None else None,
                 **exprs)


def _vector_op(c: Compiler, item: Mapping[str, Any], here: tuple[str, ...]) -> str:
    """A vector stage's instruction class: ``op``, or the class of the AscendC ``call``
    (ascendc_calls.VECTOR_CALLS); an unknown call is an error naming it."""
    call = item.get("call")
    if call is None:
        if "op" not in item:
            raise c.fail("a vector stage needs 'op' (the instruction class) or 'call' (the "
                         "AscendC API call, e.g. call: Maxs)", *here)
        return str(item["op"])
    known = VECTOR_CALLS.get(call)
    if known is None:
        raise c.fail(f"unknown AscendC vector call '{call:.40}'{did_you_mean(call, VECTOR_CALLS)};"
                     " give op: CLASS for a call the table lacks (docs/spec_reference.md, "
                     "Vector calls)", *here, "call")
    if "op" in item and item["op"] != known.op:
        raise c.fail(f"op {item['op']} contradicts call {call}, whose class is {known.op}",
                     *here, "op")
    return known.op
