"""The model for a few configurations at a time: one shape compiled to a plain Python function.

A local search scores a handful of configurations per step, and the vectorised engine costs
the same ~3 ms for 8 rows as for 2 000: hundreds of small numpy calls and the Python around
them. Here the same arithmetic runs on Python floats, one configuration at a time, in
straight-line code generated per shape: the loop tree unrolled, every profile and shape
number folded in as a literal, each expression rendered from its checked tree.

Every step is the engine's step on one element, in the engine's order, so the results are
the engine's bits (``tests/test_row_kernel.py`` compares both on every built-in spec). Two
limits keep that true: a kernel is built only where the whole space is proven free of int64
overflow (Python integers do not wrap, numpy's do), and a row whose arithmetic raises (a
float overflow in ``**``, a zero divisor the engine turns into inf) goes to the engine.

The generated source holds only names made here (``i0``, ``p0``, ``t17``, ``_G0``) and
numbers rendered from Python ints and floats: nothing from a spec or profile is pasted in as
text.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ascend_tune.base.vocabulary import DTYPE_BYTES, TWO_SOURCE_CLASSES
from ascend_tune.expr import (
    Binary,
    BoolOp,
    Call,
    Compare,
    Const,
    Expr,
    Kind,
    Node,
    Span,
    Unary,
    Var,
    node_span,
    value_span,
)
from ascend_tune.hardware import HardwareProfile
from ascend_tune.model import costs
from ascend_tune.model.fastpaths import memo as row_memo
from ascend_tune.spec import Loop, OperatorSpec, Stage, end_pipes, launch, needed_derived

# Errors a row's Python arithmetic may raise where numpy gives inf or nan: such rows go to
# the vectorised engine.
ROW_ERRORS = (ArithmeticError, ValueError)


# ---- scalar forms of the numpy operations the engine uses --------------------------------

def _min2(a: Any, b: Any) -> Any:
    """np.minimum on one element: the first operand when it is smaller or nan, else the
    second (so min(0.0, -0.0) is -0.0, as numpy gives)."""
    return a if (a < b or a != a) else b


def _max2(a: Any, b: Any) -> Any:
    """np.maximum on one element (see :func:`_min2`)."""
    return a if (a > b or a != a) else b


def _fceil(x: float) -> float:
    """np.ceil: a float, -0.0 for x in (-1, 0] (math.ceil gives an int, and raises on inf or
    nan: the row falls back)."""
    r = float(math.ceil(x))
    return r if r != 0.0 else (-0.0 if x < 0.0 else x)


def _ffloor(x: float) -> float:
    """np.floor: a float, keeping the sign of a zero x."""
    r = float(math.floor(x))
    return r if r != 0.0 else (0.0 if x > 0.0 else x)


def _fdiv(a: Any, b: Any) -> float:
    """The expression ``/``: float division, 0.0 for a zero divisor."""
    return float(a) / float(b) if b != 0 else 0.0


def _ifloordiv(a: int, b: int) -> int:
    return a // b if b != 0 else 0


def _imod(a: int, b: int) -> int:
    return a % b if b != 0 else 0


def _ffloordiv(a: Any, b: Any) -> float:
    return _ffloor(float(a) / b) if b != 0 else 0.0


def _fmod(a: Any, b: Any) -> float:
    af = float(a)
    return af - b * _ffloor(af / b) if b != 0 else 0.0


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b) if b != 0 else 0


def _align_up(x: int, a: int) -> int:
    return -((-x) // a) * a if a != 0 else 0


def _align_down(x: int, a: int) -> int:
    return (x // a) * a if a != 0 else 0


def _log2(x: float) -> float:
    return float(np.log2(x)) if x > 0 else 0.0


def _is_pow2(x: int) -> bool:
    return x > 0 and (x & (x - 1)) == 0


def _pow2_ceil(x: int) -> int:
    return 1 << (x - 1).bit_length() if x > 1 else 1


def _pow2_floor(x: int) -> int:
    return 1 << (x.bit_length() - 1) if x > 1 else 1


def _interp(x: float, xp: Sequence[float], fp: Sequence[float]) -> float:
    """np.interp on one element, by numpy's algorithm (the same slope and operand order)."""
    last = len(xp) - 1
    if x > xp[last]:
        return fp[last]
    if x < xp[0]:
        return fp[0]
    j = bisect.bisect_right(xp, x) - 1
    if j == last or xp[j] == x:
        return fp[j]
    slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j])
    out = slope * (x - xp[j]) + fp[j]
    if out != out:  # numpy tries from the other end of the interval
        out = slope * (x - xp[j + 1]) + fp[j + 1]
        if out != out and fp[j] == fp[j + 1]:
            out = fp[j]
    return out


_HELPERS: dict[str, Any] = {
    "_min2": _min2, "_max2": _max2, "_fceil": _fceil, "_ffloor": _ffloor, "_fdiv": _fdiv,
    "_ifloordiv": _ifloordiv, "_imod": _imod, "_ffloordiv": _ffloordiv, "_fmod": _fmod,
    "_ceil_div": _ceil_div, "_align_up": _align_up, "_align_down": _align_down,
    "_log2": _log2, "_is_pow2": _is_pow2, "_pow2_ceil": _pow2_ceil,
    "_pow2_floor": _pow2_floor, "_interp": _interp, "_isfinite": math.isfinite,
    "_fmodf": math.fmod, "_INF": math.inf, "_NAN": math.nan,
}


def literal(value: Any) -> str:
    """Python source of a number (only ints, floats and bools become code)."""
    if type(value) is bool or isinstance(value, np.bool_):
        return "True" if value else "False"
    if isinstance(value, (int, np.integer)):
        return repr(int(value))
    if isinstance(value, (float, np.floating)):
        f = float(value)
        if math.isnan(f):
            return "_NAN"
        if math.isinf(f):
            return "_INF" if f > 0 else "(-_INF)"
        return repr(f)
    raise TypeError(f"not a number: {type(value).__name__}")


# ---- expressions ---------------------------------------------------------------------------

class _Writer:
    """Straight-line Python: one statement per node result worth naming."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._n = 0

    def tmp(self, text: str) -> str:
        name = f"t{self._n}"
        self._n += 1
        self.lines.append(f"{name} = {text}")
        return name

    def emit(self, text: str) -> None:
        self.lines.append(text)

    def atom(self, text: str) -> str:
        """``text`` itself when it is a name or a number, else a temporary holding it (so it
        can appear twice in an inline expression)."""
        return text if _ATOM.fullmatch(text) else self.tmp(text)

    def pick(self, a: str, b: str, op: str, floats: bool = True) -> str:
        """np.minimum (``op`` "<") or np.maximum (">") inline: ``a`` when it wins or is nan,
        else ``b`` (so min(0.0, -0.0) is -0.0, as numpy gives)."""
        a, b = self.atom(a), self.atom(b)
        nan = f" or {a} != {a}" if floats and not _NUMBER.fullmatch(a) else ""
        return f"({a} if {a} {op} {b}{nan} else {b})"


_ATOM = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|-?[0-9][0-9.e+-]*|\(-_INF\)")
_NUMBER = re.compile(r"-?[0-9][0-9.e+-]*|\(-_INF\)|_INF|_NAN")


def _number_value(text: str) -> int | float:
    """The value of a finite literal this module rendered (:func:`literal`)."""
    return int(text) if re.fullmatch(r"-?[0-9]+", text) else float(text)


def _as_float(text: str, kind: Kind) -> str:
    """A number's text as a float: an integer literal rewritten, anything else converted."""
    if kind is Kind.FLOAT:
        return text
    if re.fullmatch(r"-?[0-9]+", text):
        return literal(float(int(text)))
    return f"float({text})"


def _cast(text: str, have: Kind, to: Kind) -> str:
    if have is to:
        return text
    if to is Kind.FLOAT:
        return f"float({text})"
    if to is Kind.INT:
        if have is Kind.BOOL:
            return f"int({text})"
        raise AssertionError("a float is never cast to an integer implicitly")
    return f"({text} != 0)"


class _ExprRenderer:
    """Expression trees to Python source, value for value the numpy fast path
    (``Node.evaluate`` on proven inputs): integers stay integers, booleans used as numbers
    become 0 or 1, mixed operands are floats, divisions by zero give 0."""

    def __init__(self, w: _Writer, names: Callable[[str], tuple[str, Kind]],
                 spans: Mapping[str, Span] | None = None) -> None:
        self.w = w
        self.names = names
        # Each name's [lo, hi] over the space (None: unknown): a divisor whose span excludes
        # 0 needs no zero guard, and its division is written inline.
        self.spans = spans

    def _nonzero(self, n: Node) -> bool:
        """Whether ``n`` is never 0: a literal, or a span over the space without 0."""
        span = node_span(n, self.spans or {})
        return span is not None and (span[0] > 0 or span[1] < 0)

    def expr(self, e: Expr, to: Kind | None = None) -> str:
        text, kind = self.node(e.root)
        return text if to is None else _cast(text, kind, to)

    def node(self, n: Node) -> tuple[str, Kind]:
        if isinstance(n, Const):
            value = n.value
            if n.kind is Kind.FLOAT:
                value = float(value)
            elif n.kind is Kind.INT:
                value = int(value)
            return literal(value), n.kind
        if isinstance(n, Var):
            return self.names(n.name)
        if isinstance(n, Unary):
            x, k = self.node(n.operand)
            if n.op == "not":
                return f"(not {_cast(x, k, Kind.BOOL)})", Kind.BOOL
            if k is Kind.BOOL:
                x, k = f"int({x})", Kind.INT
            return (f"(-{x})" if n.op == "-" else x), k
        if isinstance(n, Binary):
            return self._binary(n)
        if isinstance(n, Compare):
            a, ka = self.node(n.left)
            b, kb = self.node(n.right)
            to = Kind.BOOL if ka is Kind.BOOL and kb is Kind.BOOL else (
                Kind.FLOAT if Kind.FLOAT in (ka, kb) else Kind.INT)
            return f"({_cast(a, ka, to)} {n.op} {_cast(b, kb, to)})", Kind.BOOL
        if isinstance(n, BoolOp):
            parts = [_cast(*self.node(x), Kind.BOOL) for x in n.operands]
            return "(" + f" {n.op} ".join(parts) + ")", Kind.BOOL
        if isinstance(n, Call):
            return self._call(n)
        raise AssertionError(type(n).__name__)  # pragma: no cover

    def _number(self, n: Node) -> tuple[str, Kind]:
        """A node's value as a number (booleans as 0 or 1): a name or a literal."""
        x, k = self.node(n)
        if k is Kind.BOOL:
            x, k = f"int({x})", Kind.INT
        return self.w.atom(x), k

    def _binary(self, n: Binary) -> tuple[str, Kind]:
        a, ka = self._number(n.left)
        b, kb = self._number(n.right)
        op = n.op
        if op in ("+", "-", "*"):
            if _NUMBER.fullmatch(a) and _NUMBER.fullmatch(b) and "_" not in a + b:
                # Both literals: folded now, the same Python arithmetic the row would do.
                x, y = _number_value(a), _number_value(b)
                return literal(x + y if op == "+" else x - y if op == "-" else x * y), n.kind
            return f"({a} {op} {b})", n.kind
        # A divisor that is never 0 needs no zero guard: the operation inline.
        if op == "/":
            if self._nonzero(n.right):
                return f"({_as_float(a, ka)} / {_as_float(b, kb)})", Kind.FLOAT
            return f"_fdiv({a}, {b})", Kind.FLOAT
        if op in ("//", "%"):
            if n.kind is Kind.INT:
                if self._nonzero(n.right):
                    return f"({a} {op} {b})", Kind.INT
                return f"{'_ifloordiv' if op == '//' else '_imod'}({a}, {b})", Kind.INT
            return f"{'_ffloordiv' if op == '//' else '_fmod'}({a}, {b})", Kind.FLOAT
        if op == "**":
            times = int(getattr(n.right, "value", 0))
            if times == 0:
                return ("1.0" if ka is Kind.FLOAT else "1"), ka
            return "(" + " * ".join([a] * times) + ")", ka
        raise AssertionError(op)  # pragma: no cover

    def _call(self, n: Call) -> tuple[str, Kind]:
        fn = n.fn
        if fn == "where":
            c = _cast(*self.node(n.args[0]), Kind.BOOL)
            x, kx = self.node(n.args[1])
            y, ky = self.node(n.args[2])
            if n.kind is not Kind.BOOL:
                x, kx = (f"int({x})", Kind.INT) if kx is Kind.BOOL else (x, kx)
                y, ky = (f"int({y})", Kind.INT) if ky is Kind.BOOL else (y, ky)
                x, y = _cast(x, kx, n.kind), _cast(y, ky, n.kind)
            return f"({x} if {c} else {y})", n.kind
        args = [self._number(a) for a in n.args]
        if fn in ("min", "max", "clamp"):
            # numpy promotes a mixed fold to float before comparing.
            vals = [_cast(x, k, n.kind) for x, k in args]
            floats = n.kind is Kind.FLOAT
            if fn == "clamp":
                return self.w.pick(self.w.pick(vals[0], vals[1], ">", floats), vals[2], "<",
                                   floats), n.kind
            text = vals[0]
            for v in vals[1:]:
                text = self.w.pick(text, v, "<" if fn == "min" else ">", floats)
            return text, n.kind
        if fn == "abs":
            return f"abs({args[0][0]})", n.kind
        if fn in ("floor", "ceil", "log2"):
            x = _cast(*args[0], Kind.FLOAT)
            if fn == "log2":
                return f"_log2({x})", Kind.FLOAT
            return f"math.{fn}({x})", Kind.INT
        a, b = args[0][0], args[-1][0]
        if fn in ("ceil_div", "align_up", "align_down") and self._nonzero(n.args[1]):
            if fn == "ceil_div":
                return f"(-((-{a}) // {b}))", Kind.INT
            if fn == "align_up":
                return f"(-((-{a}) // {b}) * {b})", Kind.INT
            return f"({a} // {b} * {b})", Kind.INT
        simple = {"ceil_div": "_ceil_div", "align_up": "_align_up",
                  "align_down": "_align_down", "is_pow2": "_is_pow2",
                  "pow2_ceil": "_pow2_ceil", "pow2_floor": "_pow2_floor"}
        if fn in simple:
            return f"{simple[fn]}({', '.join(x for x, _k in args)})", n.kind
        raise AssertionError(fn)  # pragma: no cover - tests hold every function to a form


# ---- the generated functions ------------------------------------------------------------

class _Source:
    """Python source of one shape's functions of an index genome ``i0 .. in`` (the values
    ``p0 .. pn`` looked up in the domains)."""

    def __init__(self, spec: OperatorSpec, base_env: Mapping[str, Any],
                 grids: Sequence[np.ndarray]) -> None:
        self.spec = spec
        self.base_env = base_env
        self.w = _Writer()
        self._params = {p: f"p{j}" for j, p in enumerate(spec.params)}
        self._derived: dict[str, tuple[str, Kind]] = {}
        self.grids = grids
        self.spans: dict[str, Span] = {k: value_span(v) for k, v in base_env.items()}
        self.spans.update({p: (int(g.min()), int(g.max())) for p, g in
                           zip(spec.params, grids, strict=True) if g.size})
        self.r = _ExprRenderer(self.w, self._name, self.spans)

    def _name(self, name: str) -> tuple[str, Kind]:
        if name in self._params:
            return self._params[name], Kind.INT
        if name in self._derived:
            return self._derived[name]
        value = self.base_env[name]
        if isinstance(value, (bool, np.bool_)):
            return literal(bool(value)), Kind.BOOL
        if isinstance(value, (int, np.integer)):
            return literal(int(value)), Kind.INT
        return literal(float(value)), Kind.FLOAT

    def derive(self, which: Sequence[tuple[str, Expr]]) -> None:
        for name, e in which:
            self._derived[name] = (self.w.tmp(self.r.expr(e)), e.kind)
            span = node_span(e.root, self.spans)
            if span is not None:
                self.spans[name] = span

    def value(self, e: Expr, to: Kind | None = None) -> str:
        return self.w.tmp(self.r.expr(e, to))

    def check(self, c: launch.Check) -> str:
        """An expression that is False where ``c`` fails (the row is ruled out)."""
        if c.boolean:
            return self.value(c.expr, Kind.BOOL)
        v = self.value(c.expr, Kind.FLOAT)
        return (f"(_isfinite({v}) and {v} >= {literal(float(c.lo))} "
                f"and {v} <= {literal(float(c.hi))})")

    def function(self, name: str, result: str) -> str:
        """``def name(i0, ..., in)``: the function of one configuration's index genome (each
        parameter's value looked up in its domain, ``_G0`` .. ``_Gn``)."""
        indices = ", ".join(f"i{j}" for j in range(len(self._params)))
        lookups = [f"{v} = _G{j}[i{j}]" for j, v in enumerate(self._params.values())]
        body = "\n".join(f"    {line}" for line in [*lookups, *self.w.lines,
                                                      f"return {result}"])
        return f"def {name}({indices}):\n{body}\n"

    def constants(self) -> dict[str, list[int]]:
        return {f"_G{j}": g.tolist() for j, g in enumerate(self.grids)}

    def sizes(self) -> list[int]:
        return [int(g.size) for g in self.grids]


def _compile(source: str, name: str, constants: Mapping[str, Any] | None = None,
             sizes: Sequence[int] | None = None) -> Callable[..., Any]:
    """The function ``name`` of ``source``; given the domain sizes of its index arguments,
    with its few-parameter statements memoised per combination (:mod:`.row_memo`)."""
    tables: dict[str, Any] = {}
    if sizes is not None:
        source, tables = row_memo.hoist(source, name, sizes)
    scope: dict[str, Any] = {"math": math, **_HELPERS, **(constants or {}), **tables}
    exec(compile(source, f"<ascend_tune.model.fastpaths.kernel {name}>", "exec"), scope)
    fn: Callable[..., Any] = scope[name]
    return fn


def checks_function(spec: OperatorSpec, base_env: Mapping[str, Any],
                    grids: Sequence[np.ndarray], checks: Sequence[launch.Check]
                    ) -> Callable[..., bytes]:
    """``f(i0, ..., in)``: whether one configuration (its index genome) passes each of
    ``checks``, in order, as bytes of 0 and 1 (a row of a boolean array)."""
    src = _Source(spec, base_env, grids)
    src.derive(needed_derived(spec, [c.expr for c in checks]))
    results = [src.w.atom(src.check(c)) for c in checks]
    tail = "bytes((" + "".join(f"{r}, " for r in results) + "))"
    return _compile(src.function("checks", tail), "checks", src.constants(), src.sizes())


class _Cost:
    """The engine's ``_cost`` / ``_loop`` / ``_stage`` unrolled for one configuration: the
    same operations on floats in the same order (names follow engine.py)."""

    def __init__(self, src: _Source, hw: HardwareProfile) -> None:
        self.src = src
        self.w = src.w
        self.hw = hw
        self.spec = src.spec
        self.curves: dict[str, tuple[list[float], list[float]]] = {}

    def f(self, key: str) -> str:
        return literal(float(self.hw[key]))

    def latency(self) -> str:
        w, hw, spec = self.w, self.hw, self.spec
        clock = self.f("clock_mhz")
        side_us: list[str] = []
        head_us = "0.0"
        for side in spec.sides:
            cores = self.src.value(side.cores, Kind.FLOAT)
            items = self.src.value(side.items, Kind.FLOAT) if side.items is not None else cores
            per_core = w.tmp(f"_fceil({items} / {w.pick(cores, '1.0', '>')})")
            lat, _busy, _gm, _rec = self._loop(side.body, per_core, None, cores)
            side_us.append(w.tmp(f"{lat} / {clock}"))
            chip = literal(float(hw[f"{side.core}_cores"]))
            floor = self.f("cube_kernel_floor_us") if side.core == "cube" else "0.0"
            head = w.tmp(f"{self.f('head_base_us')} + {floor} + "
                         f"{self.f('head_full_chip_us')} * {cores} / {chip}")
            head_us = w.tmp(w.pick(head_us, head, ">"))
        body = side_us[0]
        if len(side_us) > 1:
            handoffs = (self.src.value(spec.handoffs, Kind.FLOAT)
                        if spec.handoffs is not None else "0.0")
            body = w.tmp(f"{w.pick(side_us[0], side_us[1], '>')} + {handoffs} * "
                         f"{self.f('sync_cycles')} / {clock} + {self.f('mix_extra_us')}")
        return w.tmp(f"{head_us} + {body}")

    def _loop(self, body: Sequence[Stage | Loop], trips: str, buffers: str | None,
              cores: str) -> tuple[str, dict[str, str], str, str]:
        w = self.w
        trips = w.tmp(w.pick(trips, "0.0", ">"))
        # A one-trip loop pays no iteration cost (engine._where_more_than_one).
        iteration = self.f("loop_iteration_cycles")
        busy: dict[str, str] = {"scalar": w.tmp(f"{iteration} if {trips} > 1.0 else 0.0")}
        seq = w.tmp(busy["scalar"])
        gm = recurrence = "0.0"
        handoffs = 0
        prev: str | None = None
        for item in body:
            if isinstance(item, Loop):
                t = self.src.value(item.trips, Kind.FLOAT)
                b = (self.src.value(item.buffers, Kind.FLOAT) if item.buffers is not None
                     else None)
                lat, sub_busy, sub_gm, sub_rec = self._loop(item.body, t, b, cores)
                seq = w.tmp(f"{seq} + {lat}")
                for pipe, cycles in sub_busy.items():
                    self._accumulate(busy, pipe, cycles)
                gm = w.tmp(f"{gm} + {sub_gm}")
                recurrence = w.tmp(w.pick(recurrence, sub_rec, ">"))
                first, last = end_pipes(item.body)
            else:
                cycles, stage_gm = self._stage(item, cores)
                seq = w.tmp(f"{seq} + {cycles}")
                self._accumulate(busy, item.pipe, cycles)
                gm = w.tmp(f"{gm} + {stage_gm}")
                first = last = item.pipe
            if prev is not None and first is not None and first != prev:
                handoffs += 1
            prev = last if last is not None else prev
        sync = literal(handoffs * float(self.hw["sync_cycles"]))
        seq = w.tmp(f"{seq} + {sync}")
        busy["scalar"] = w.tmp(f"{busy['scalar']} + {sync}")
        terms = [*busy.values(), gm, recurrence]
        steady = terms[0]
        for term in terms[1:]:
            steady = w.tmp(w.pick(steady, term, ">"))
        later = w.tmp(w.pick(f"{trips} - 1.0", "0.0", ">"))
        if buffers is None:
            latency = w.tmp(f"{trips} * {seq}")
            exported = w.tmp(f"{later} * {seq} + {steady}")
        else:
            double = w.tmp(f"{buffers} >= 2")
            latency = w.tmp(f"({seq} + {later} * {steady}) if {double} else {trips} * {seq}")
            exported = w.tmp(f"({trips} * {recurrence}) if {double} "
                             f"else {later} * {seq} + {steady}")
        latency = w.tmp(f"0.0 if {trips} <= 0 else {latency}")
        exported = w.tmp(f"0.0 if {trips} <= 0 else {exported}")
        busy = {pipe: w.tmp(f"{cycles} * {trips}") for pipe, cycles in busy.items()}
        gm = w.tmp(f"{gm} * {trips}")
        return latency, busy, gm, exported

    def _accumulate(self, busy: dict[str, str], pipe: str, cycles: str) -> None:
        if pipe in busy:
            busy[pipe] = self.w.tmp(f"{busy[pipe]} + {cycles}")
        else:
            busy[pipe] = self.w.tmp(f"0.0 + {cycles}")

    def _stage(self, stage: Stage, cores: str) -> tuple[str, str]:
        src, w, hw, spec = self.src, self.w, self.hw, self.spec
        count = src.value(stage.count, Kind.FLOAT) if stage.count is not None else "1.0"
        if stage.kind == "transfer":
            assert stage.bytes is not None and stage.path is not None
            nbytes = src.value(stage.bytes, Kind.FLOAT)
            rows = src.value(stage.rows, Kind.FLOAT) if stage.rows is not None else "1.0"
            hit = src.value(stage.l2_hit, Kind.FLOAT) if stage.l2_hit is not None else "0.0"
            aligned = (src.value(stage.gm_aligned, Kind.BOOL) if stage.gm_aligned is not None
                       else None)
            element = (DTYPE_BYTES[spec.stage_dtype(spec.dtypes[stage.operand])]
                       if stage.operand is not None else 1)
            return self._transfer(stage.path, nbytes, rows, count, hit, cores, aligned,
                                  stage.layout, element)
        if stage.kind == "cube":
            assert stage.m is not None and stage.n is not None and stage.k is not None
            dtype = spec.stage_dtype(stage.dtype or "")
            m = src.value(stage.m, Kind.FLOAT)
            n = src.value(stage.n, Kind.FLOAT)
            k = src.value(stage.k, Kind.FLOAT)
            fractal = self.f("fractal_mn")
            fractals = w.tmp(f"_fceil({m} / {fractal}) * _fceil({n} / {fractal}) * "
                             f"_fceil({k} / {literal(hw.k0[dtype])})")
            mmad = w.tmp(f"{fractals} * {literal(hw.cycles_per_fractal[dtype])} + "
                         f"{self.f('mmad_overhead_cycles')}")
            return w.tmp(f"{count} * {mmad}"), "0.0"
        if stage.kind == "vector":
            assert stage.elements is not None and stage.op is not None
            size = DTYPE_BYTES[spec.stage_dtype(stage.dtype or "")]
            elements = src.value(stage.elements, Kind.FLOAT)
            repeats = w.tmp(f"_fceil({elements} * {size} / {self.f('repeat_bytes')})")
            instructions = w.tmp(f"_fceil({repeats} / {self.f('max_repeat')})")
            per_repeat = hw.vector_cycles_per_repeat[stage.op][size]
            if stage.op in TWO_SOURCE_CLASSES:
                per_repeat *= float(hw["bank_conflict_factor"])
            cycles = w.tmp(f"{instructions} * {self.f('issue_cycles')} + "
                           f"{repeats} * {literal(per_repeat)}")
            return w.tmp(f"{count} * {cycles}"), "0.0"
        assert stage.cycles is not None
        return w.tmp(f"{src.value(stage.cycles, Kind.FLOAT)} * {count}"), "0.0"

    def _transfer(self, path: str, nbytes: str, rows: str, count: str, hit: str,
                  cores: str, aligned: str | None, layout: str | None,
                  element: int) -> tuple[str, str]:
        """costs.transfer on one element (its cycles and GM cycles)."""
        w, hw = self.w, self.hw
        spec = hw.transfers[path]
        block = self.f("ub_block_bytes")
        rows = w.tmp(w.pick(rows, "1.0", ">"))
        if layout == "column_major":
            row_bytes = w.tmp(f"{rows} * {literal(float(element))}")
            runs = w.tmp(w.pick(f"{nbytes} / {row_bytes}", "1.0", ">"))
        elif layout == "nz":
            c0 = self.f("ub_block_bytes")
            runs = w.tmp(w.pick(f"_fceil({nbytes} / {rows} / {c0})", "1.0", ">"))
            row_bytes = w.tmp(f"{rows} * {c0}")
        else:
            runs, row_bytes = rows, w.tmp(f"{nbytes} / {rows}")
        moved = w.tmp(f"{runs} * _fceil({row_bytes} / {block}) * {block}")
        if path not in self.curves:
            self.curves[path] = ([float(x) for x in spec.curve_bytes],
                                 [float(x) for x in spec.curve_bytes_per_cycle])
        curve = list(self.curves).index(path)  # the curve's constants by number, not by name
        bandwidth = w.tmp(f"_interp({moved}, _XP{curve}, _FP{curve})")
        if path in costs.GM_PATHS:
            declared = aligned is not None
            if aligned is None:
                aligned = w.tmp(f"_fmodf({row_bytes}, {self.f('gm_align_bytes')}) == 0")
            efficiency = w.tmp(f"1.0 if {aligned} else {self.f('gm_unaligned_efficiency')}")
            bandwidth = w.tmp(f"{bandwidth} * {efficiency}")
            chip = self._chip_bytes_per_cycle(hit)
            if declared:
                chip = w.tmp(f"{chip} * {efficiency}")
            share = self._chip_share(chip, cores, costs._port(path))
            bandwidth = w.tmp(w.pick(bandwidth, share, "<"))
            gm = w.tmp(f"{count} * {moved} / {share}")
        else:
            gm = "0.0"
        per_transfer = w.tmp(f"{literal(spec.latency_cycles)} + {moved} / {bandwidth}")
        if path == "gm_to_l1" and layout in ("row_major", "column_major"):
            per_transfer = w.tmp(f"{per_transfer} + {runs} * {self.f('nd2nz_row_cycles')}")
        return w.tmp(f"{count} * {per_transfer}"), gm

    def _chip_bytes_per_cycle(self, hit: str) -> str:
        hbm = literal(float(self.hw.hbm_bytes_per_cycle))
        l2 = literal(float(self.hw.l2_bytes_per_cycle))
        clipped = self.w.tmp(self.w.pick(self.w.pick(hit, "0.0", ">"), "1.0", "<"))
        return self.w.tmp(f"1.0 / ((1.0 - {clipped}) / {hbm} + {clipped} / {l2})")

    def _chip_share(self, chip: str, cores: str, port: str) -> str:
        p = float(self.hw["gm_contention_exponent"])
        k = self.w.tmp(self.w.pick(cores, "1.0", ">"))
        offered = self.w.tmp(f"{k} * {self.f(f'{port}_gm_port_bytes_per_cycle')}")
        term = self.w.tmp(f"{chip} ** {literal(-p)}")
        return self.w.tmp(f"({offered} ** {literal(-p)} + {term}) ** {literal(-1.0 / p)} "
                          f"/ {k}")


def latency_function(spec: OperatorSpec, hw: HardwareProfile, base_env: Mapping[str, Any],
                     grids: Sequence[np.ndarray], checks: Sequence[launch.Check | None]
                     ) -> Callable[..., float]:
    """``f(i0, ..., in)``: the predicted latency (us) of one configuration (its index genome),
    inf when one of ``checks`` (None: proven to pass) fails."""
    src = _Source(spec, base_env, grids)
    src.derive(spec.derive)
    for c in checks:
        if c is not None:
            src.w.emit(f"if not {src.check(c)}: return _INF")
    cost = _Cost(src, hw)
    result = cost.latency()
    curves: dict[str, Any] = src.constants()
    for i, (xp, fp) in enumerate(cost.curves.values()):
        curves[f"_XP{i}"], curves[f"_FP{i}"] = xp, fp
    return _compile(src.function("latency", result), "latency", curves, src.sizes())


def expression_function(e: Expr, kinds: Mapping[str, Kind]) -> Callable[..., Any]:
    """``f(*values)``: one expression on one row, its inputs ``kinds``' names in order (each
    a Python int, float or bool of that kind). The renderer's unit under test."""
    w = _Writer()
    local = {name: (f"p{j}", kind) for j, (name, kind) in enumerate(kinds.items())}
    text = _ExprRenderer(w, local.__getitem__).expr(e)
    body = "\n".join(f"    {line}" for line in [*w.lines, f"return {text}"])
    args = ", ".join(v for v, _k in local.values())
    return _compile(f"def value({args}):\n{body}\n", "value")
