"""The compiled operator spec: frozen data classes and the small rules that read them."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, Literal

import numpy as np

from ascend_tune.base import cann
from ascend_tune.base.errors import SpecError
from ascend_tune.base.vocabulary import DTYPE_BYTES, stage_kind
from ascend_tune.base.yamlio import INT64_MAX, INT64_MIN
from ascend_tune.expr import Expr
from ascend_tune.spec.format import MAX_DOMAIN_VALUES

ShapeSourceKind = Literal["size", "rows", "last", "dim"]


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
                if lo > INT64_MAX:
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
    if not INT64_MIN <= out <= INT64_MAX:
        raise SpecError(f"{where}: domain bound {out} does not fit a 64-bit integer")
    return out


@dataclass(frozen=True)
class ShapeSource:
    """Where a shape variable is read from at run time (``from: input0.dim1``): input tensor
    ``input``'s element count (size), product of all but the last axis (rows), last axis
    (last) or axis ``dim``."""

    input: int
    kind: ShapeSourceKind
    dim: int | None = None

    def __str__(self) -> str:
        return f"input{self.input}.{self.kind if self.dim is None else f'dim{self.dim}'}"

    def read(self, dims: Sequence[int]) -> int:
        """The value from one tensor's dimensions (``dims`` must hold what ``dim`` reads)."""
        size = 1
        for d in dims:
            size *= d
        if self.kind == "size":
            return size
        if self.kind == "last":
            return dims[-1]
        if self.kind == "rows":
            return size // dims[-1] if dims[-1] else 0
        assert self.dim is not None
        return dims[self.dim]


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
    operand: str | None = None  # tensor moved (its layout shapes the runs)
    layout: str | None = None  # that tensor's GM layout, resolved from ``layouts:``
    # The operand's whole matrix in GM (logical rows x columns): with the layout, the pitch
    # between its contiguous runs (row-major: gm_cols elements, column-major: gm_rows).
    gm_rows: Expr | None = None
    gm_cols: Expr | None = None
    m: Expr | None = None
    n: Expr | None = None
    k: Expr | None = None
    dtype: str | None = None
    op: str | None = None
    call: str | None = None  # the AscendC API call (ascendc_calls.VECTOR_CALLS) op comes from
    elements: Expr | None = None
    cycles: Expr | None = None

    @property
    def kind(self) -> str:
        """transfer, cube, vector or scalar (vocabulary.STAGE_KINDS)."""
        return stage_kind(self.pipe)

    @property
    def pitch(self) -> Expr | None:
        """Elements between the starts of consecutive contiguous runs in GM: the row length
        of a row-major operand, the column length of a column-major one; None where the
        stage does not say (no ``gm_rows``/``gm_cols``) or the runs are NZ fractals."""
        if self.layout == "nz":
            return None
        return self.gm_rows if self.layout == "column_major" else self.gm_cols

    def expressions(self) -> tuple[Expr, ...]:
        """Every expression the stage evaluates."""
        return tuple(e for e in (self.bytes, self.rows, self.count, self.l2_hit,
                                 self.gm_aligned, self.gm_rows, self.gm_cols, self.m, self.n,
                                 self.k, self.elements, self.cycles) if e is not None)


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
    # A pre-pass (mix kernels): this side runs to a barrier over its cores before the other
    # side starts, instead of alongside it (CATLASS OptimizedMatmul padding A and B on the
    # AIVs before the AICs' matmul).
    prologue: bool = False


@dataclass(frozen=True)
class Field:
    name: str
    ctype: str
    value: Expr
    doc: str = ""
    # ``meaning: own`` or ``sample``: whether a field named like an AscendC sample's means
    # what the sample's does (emit warns where a sample name's derivation differs unsaid).
    meaning: str | None = None


@dataclass(frozen=True)
class Attr:
    """One operator attribute (``attrs:``): the OpDef declares it OPTIONAL with its default,
    the emitted TilingFunc reads it from the tiling context (in declaration order) and
    refuses a value outside [lo, hi]."""

    name: str
    type: str  # float | int | bool
    default: float | int | bool
    lo: float | int | None
    hi: float | int | None
    doc: str = ""

    def problem(self, value: float | int | bool) -> str | None:
        """Why ``value`` is not a value of this attribute (None when it is)."""
        if self.lo is not None and value < self.lo:
            return f"{self.name}={value} is below its minimum {self.lo}"
        if self.hi is not None and value > self.hi:
            return f"{self.name}={value} is above its maximum {self.hi}"
        return None


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
    shape_from: Mapping[str, ShapeSource]
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
    layouts: Mapping[str, str] = dataclass_field(default_factory=dict)  # tensor -> GM layout
    attrs: tuple[Attr, ...] = ()
    # The attribute values the spec is evaluated with (defaults, or ``--attr`` values).
    attr_values: Mapping[str, float | int | bool] = dataclass_field(default_factory=dict)
    # Names that read an attribute (the attributes and the derived values built on them):
    # they feed tiling fields only, never the model.
    attr_names: frozenset[str] = frozenset()
    # Shape variable -> the multiple the kernel accepts (``shape: {V: {multiple_of: N}}``).
    shape_multiple: Mapping[str, int] = dataclass_field(default_factory=dict)

    def __repr__(self) -> str:
        # Short: the full dataclass repr (source text, every expression) is ~20 KB.
        return (f"OperatorSpec({self.display_name!r}, origin={self.origin!r}, "
                f"shape_vars={self.shape_vars}, params={self.params})")

    @property
    def display_name(self) -> str:
        return self.name if self.variant is None else f"{self.name}:{self.variant}"

    @property
    def snake_name(self) -> str:
        return snake_case(self.name)

    def sizeof_env(self) -> dict[str, int]:
        return {f"sizeof.{t}": DTYPE_BYTES[d] for t, d in self.dtypes.items()}

    @property
    def model_derive(self) -> tuple[tuple[str, Expr], ...]:
        """The derived values the model and the run-time selection compute (those built on
        attributes feed only tiling fields, computed where the attributes are read)."""
        return tuple((n, e) for n, e in self.derive if n not in self.attr_names)

    def attr_env(self) -> dict[str, float | int | bool]:
        """The attribute values, as expressions read them."""
        return dict(self.attr_values)

    def stage_dtype(self, name: str) -> str:
        return self.dtypes.get(name, name)

    @property
    def mode(self) -> cann.KernelMode:
        return cann.KERNEL_MODES[self.kernel_mode]


def end_pipes(body: Sequence[Stage | Loop]) -> tuple[str | None, str | None]:
    """The pipe a body starts and ends on (through nested loops), for flag handoffs: entering a
    nested loop hands off to its first stage's pipe, leaving it from its last stage's."""
    pipes: list[str] = []
    for item in body:
        if isinstance(item, Loop):
            first, last = end_pipes(item.body)
            pipes += [p for p in (first, last) if p is not None]
        else:
            pipes.append(item.pipe)
    return (pipes[0], pipes[-1]) if pipes else (None, None)


def needed_derived(spec: OperatorSpec, exprs: Sequence[Expr]) -> list[tuple[str, Expr]]:
    """The derived values ``exprs`` read, directly or through other derived values, in the
    spec's derive order (which is dependency order)."""
    derive = dict(spec.derive)
    need: set[str] = set()
    todo = [n for e in exprs for n in e.names if n in derive]
    while todo:
        name = todo.pop()
        if name not in need:
            need.add(name)
            todo += [n for n in derive[name].names if n in derive]
    return [(name, e) for name, e in spec.derive if name in need]


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
