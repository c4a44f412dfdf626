"""The operator spec file format: the schema the YAML is checked against, the names and keys
each place allows, and the C++ identifier rules. Data only; nothing here compiles a spec."""

from __future__ import annotations

import re

from ascend_tune.base import cann, schema
from ascend_tune.base.vocabulary import (
    DTYPE_BYTES,
    PIPES,
    STAGE_KINDS,
    TRANSFER_PATHS,
    VECTOR_CLASSES,
)

# Types the kernel-side TilingData accepts (cann.FIELD_CTYPES): nothing else is emitted.
FIELD_TYPES = tuple(cann.FIELD_CTYPES)
# Keys a stage may carry besides stage and pipe, and the ones it must carry, per stage kind
# (vocabulary.STAGE_KINDS; a transfer is any stage on a transfer pipe).
STAGE_KEYS = {name: set(kind.keys) for name, kind in STAGE_KINDS.items()}
STAGE_REQUIRED = {name: kind.required for name, kind in STAGE_KINDS.items()}
# Stage keys that hold names rather than expressions.
STAGE_NAME_KEYS = ("stage", "pipe", "path", "dtype", "op", "operand", "call")
# How an operand is stored in GM (``layouts:``): ND row-major, ND column-major (a transposed
# matrix: the tile's logical rows are strided, its columns contiguous) or the fractal NZ
# format (16 x C0 fractals, C0 = 32 bytes; no ND->NZ conversion on the way into L1).
LAYOUTS = ("row_major", "column_major", "nz")
MAX_DOMAIN_VALUES = 100_000
# A shape variable's ``from:``: which input tensor and what of its shape (see ShapeSource).
# Dimension indices have at most two digits, as in io.outputs dims.
SHAPE_FROM = re.compile(r"input([0-9]{1,3})\.(size|rows|last|dim([0-9]{1,2}))")
SHAPE_FROM_FORMS = "inputN.size, inputN.rows, inputN.last or inputN.dimD"
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

DOMAIN = schema.Obj(fields={
    "values": (schema.Arr(_EXPR, min_items=1), False),
    "range": (schema.Arr(_EXPR, min_items=2), False),
    "step": (_EXPR, False),
    "multiple_of": (_EXPR, False),
    "pow2": (schema.Arr(_EXPR, min_items=2), False),
    "doc": (_STR, False),
}, doc="finite domain: values, range [lo, hi] with step or multiple_of, or pow2 [lo, hi]")

STAGE = schema.Obj(fields={
    "stage": (_STR, True),
    "pipe": (_S(("string",), enum=PIPES), True),
    "path": (_S(("string",), enum=TRANSFER_PATHS), False),
    "bytes": (_EXPR, False),
    "rows": (_EXPR, False),
    "count": (_EXPR, False),
    "l2_hit": (_EXPR, False),
    "gm_aligned": (_EXPR, False),
    "operand": (_S(("string",), doc="tensor (a dtypes key) this transfer moves: its layout "
                   "decides the contiguous runs and the ND->NZ cost; rows are then the tile's "
                   "logical rows"), False),
    "gm_rows": (_S(("expression",), doc="logical rows of the operand's whole matrix in GM (one "
                   "batch or group); with gm_cols and its layout, the row pitch"), False),
    "gm_cols": (_S(("expression",), doc="logical columns of the operand's whole matrix in GM"),
                False),
    "m": (_EXPR, False),
    "n": (_EXPR, False),
    "k": (_EXPR, False),
    "dtype": (_STR, False),
    "op": (_S(("string",), enum=VECTOR_CLASSES), False),
    "call": (_S(("string",), doc="the AscendC vector API call (Maxs, Exp, ReduceSum, ...): "
                "its instruction class (docs/spec_reference.md)"), False),
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
_BODY_ITEM_DEEP = schema.AnyOf((STAGE, schema.Obj(fields={
    **_LOOP_FIELDS, "body": (schema.Arr(schema.Anything(), min_items=1), True)})))
LOOP = schema.Obj(fields={**_LOOP_FIELDS, "body": (schema.Arr(_BODY_ITEM_DEEP, min_items=1),
                                                   True)})
_BODY_ITEM = schema.AnyOf((STAGE, LOOP))
# A loop's own keys, its body items left to the walker.
LOOP_SHALLOW = schema.Obj(fields={**_LOOP_FIELDS,
                                  "body": (schema.Arr(schema.Anything(), min_items=1), True)})

SIDE = schema.Obj(fields={
    "cores": (_EXPR, True),
    "items": (_EXPR, False),
    "body": (schema.Arr(_BODY_ITEM, min_items=1), True),
    "prologue": (_S(("boolean",), doc="mix kernels: this side runs first, to a barrier over "
                    "its cores, and the other side starts after it (default false: the "
                    "sides overlap)"), False),
}, doc="the per-core program of one core type")

# A field named like an AscendC sample's (FIELD_MEANINGS): ``meaning: own`` says its
# derivation is meant to differ, ``sample`` that it is the sample's (emit checks it).
FIELD_MEANINGS = ("own", "sample")
FIELD = schema.Obj(fields={"type": (_S(("string",), enum=FIELD_TYPES), True),
                           "value": (_EXPR, True), "doc": (_STR, False),
                           "meaning": (_S(("string",), enum=FIELD_MEANINGS), False)})

ATTR_TYPES = ("float", "int", "bool")
ATTR = schema.Obj(fields={
    "type": (_S(("string",), enum=ATTR_TYPES), True),
    "default": (_S(("number", "boolean")), True),
    "min": (_S(("number",)), False),
    "max": (_S(("number",)), False),
    "doc": (_STR, False),
}, doc="an operator attribute: OPTIONAL in the OpDef with this default, read by the TilingFunc")

KERNEL = schema.Obj(fields={
    "mode": (_S(("string",), enum=tuple(cann.KERNEL_MODES)), False),
    "system_workspace": (_S(("string",), enum=cann.SYSTEM_WORKSPACES), False),
}, doc="how the kernel launches (default from core) and the system workspace it needs")

IO = schema.Obj(fields={
    "inputs": (schema.Arr(_STR, min_items=1), True),
    "outputs": (schema.Obj(extra=schema.Obj(fields={
        "like": (_STR, False),
        "dims": (schema.Arr(_STR, min_items=1), False)})), True),
}, doc="the OpDef: inputs in order (tensor names from dtypes), outputs with their shape")

# The file format version this ascend-tune reads. A file without ``version`` is version 1; a
# later format gets a new number, so an older ascend-tune refuses it by name instead of
# misreading it.
FORMAT_VERSIONS = (1,)
VERSION = _S(("integer",), enum=FORMAT_VERSIONS,
             doc="file format version (1); a newer file needs a newer ascend-tune")

SPEC_SCHEMA = schema.Obj(fields={
    "version": (VERSION, False),
    "operator": (_STR, True),
    "description": (_STR, False),
    "core": (_S(("string",), enum=("vector", "cube", "mix")), True),
    "dtypes": (schema.Obj(extra=_S(("string",), enum=tuple(DTYPE_BYTES))), True),
    "layouts": (schema.Obj(extra=_S(("string",), enum=LAYOUTS),
                           doc="GM layout per tensor (default row_major)"), False),
    "shape": (schema.Obj(extra=schema.Obj(fields={
        "min": (_S(("integer",)), False),
        "max": (_S(("integer",)), False),
        "multiple_of": (_S(("integer",), doc="the kernel accepts only multiples of this"),
                        False),
        "from": (_STR, False),
        "doc": (_STR, False)})), True),
    "attrs": (schema.Obj(extra=ATTR, doc="operator attributes, in OpDef order"), False),
    "params": (schema.Obj(extra=DOMAIN), True),
    "derive": (schema.Obj(extra=_EXPR), False),
    "constraints": (schema.Obj(extra=_EXPR), False),
    "pipeline": (schema.Obj(fields={
        "cube": (SIDE, False),
        "vector": (SIDE, False),
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
        "fields": (schema.Obj(extra=FIELD), True),
        "nested": (schema.Obj(extra=schema.Obj(fields={
            "type": (_STR, True),
            "fields": (schema.Obj(extra=FIELD), True)})), False),
        "block_dim": (_EXPR, True),
        "workspace_bytes": (_EXPR, False),
    }), True),
    "kernel_constants": (schema.Obj(extra=_EXPR), False),
    "tiling_key": (_EXPR, False),
    "kernel": (KERNEL, False),
    "io": (IO, False),
    "variants": (schema.Obj(extra=schema.Obj(fields={
        "description": (_STR, False),
        "dtypes": (schema.Obj(extra=_S(("string",), enum=tuple(DTYPE_BYTES))), False),
        "layouts": (schema.Obj(extra=_S(("string",), enum=LAYOUTS)), False),
        "params": (schema.Obj(extra=DOMAIN), False),
        "derive": (schema.Obj(extra=_EXPR), False),
        "baseline": (schema.Obj(extra=_EXPR), False),
        "kernel": (KERNEL, False),
    })), False),
}, doc="ascend-tune operator spec")
