"""The model for a few configurations at a time: one shape compiled to a plain Python function.

A local search scores a handful of configurations per step, and the vectorised engine costs
the same ~3 ms for 8 rows as for 2 000: hundreds of small numpy calls and the Python around
them. Here the same arithmetic runs on Python floats, one configuration at a time, in
straight-line code generated per shape: the loop tree unrolled, every profile and shape
number folded in as a literal, each expression rendered from its checked tree
(:mod:`ascend_tune.expr.python`).

Every step is the engine's step on one element, in the engine's order, so the results are
the engine's bits (``tests/test_row_kernel.py`` compares both on every built-in spec). Two
limits keep that true: a kernel is built only where the whole space is proven free of int64
overflow (Python integers do not wrap, numpy's do), and a row whose arithmetic raises (a
float overflow in ``**``, a zero divisor the engine turns into inf) goes to the engine.

The generated source holds only names made here (``i0``, ``p0``, ``t17``, ``_G0``) and
numbers rendered from Python ints and floats: nothing from a spec or profile is pasted in as
text. Each source is registered with :mod:`linecache` under a pseudo-filename naming the
operator, the function and a digest of the text (``<ascend-tune row kernel MatmulCustom
latency 3f2a9c01d4e5>``), so a traceback through it shows its lines, for as long as a
function compiled from it is alive; with ``ASCEND_TUNE_DUMP_GENERATED=<dir>`` set, it is also
written there, one file per source named after the same digest (and, where
:mod:`.memo` rewrote it, the straight-line source beside it).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ascend_tune.base.vocabulary import DTYPE_BYTES, GM_PATHS, TWO_SOURCE_CLASSES
from ascend_tune.expr import Expr, Kind, Span, node_span, value_span
from ascend_tune.expr.python import PythonRenderer, Writer, literal
from ascend_tune.hardware import HardwareProfile
from ascend_tune.model import costs
from ascend_tune.model.fastpaths import code_cache
from ascend_tune.model.fastpaths.scalar import HELPERS as _HELPERS
from ascend_tune.spec import Loop, OperatorSpec, Stage, end_pipes, launch, needed_derived

# Errors a row's Python arithmetic may raise where numpy gives inf or nan: such rows go to
# the vectorised engine.
ROW_ERRORS = (ArithmeticError, ValueError)


# ---- the generated functions ------------------------------------------------------------

class _Source:
    """Python source of one shape's functions of an index genome ``i0 .. in`` (the values
    ``p0 .. pn`` looked up in the domains)."""

    def __init__(self, spec: OperatorSpec, base_env: Mapping[str, Any],
                 grids: Sequence[np.ndarray], inputs: Sequence[str] = ()) -> None:
        self.spec = spec
        self.base_env = base_env
        self.w = Writer()
        self._params = {p: f"p{j}" for j, p in enumerate(spec.params)}
        # Integer values of base_env read by name (``_S0`` ..) rather than written in as
        # literals: the shape's, so that shapes whose spans lead to the same text share one
        # compiled kernel (:func:`_compile` keeps it), each with its own values.
        self._inputs = {n: f"_S{j}" for j, n in enumerate(inputs)
                        if isinstance(base_env[n], (int, np.integer))
                        and not isinstance(base_env[n], (bool, np.bool_))}
        self._derived: dict[str, tuple[str, Kind]] = {}
        self.grids = grids
        self.spans: dict[str, Span] = {k: value_span(v) for k, v in base_env.items()}
        self.spans.update({p: (int(g.min()), int(g.max())) for p, g in
                           zip(spec.params, grids, strict=True) if g.size})
        self.r = PythonRenderer(self.w, self._name, self.spans)

    def _name(self, name: str) -> tuple[str, Kind]:
        if name in self._params:
            return self._params[name], Kind.INT
        if name in self._derived:
            return self._derived[name]
        if name in self._inputs:
            return self._inputs[name], Kind.INT
        value = self.base_env[name]
        if isinstance(value, (bool, np.bool_)):
            return literal(bool(value)), Kind.BOOL
        if isinstance(value, (int, np.integer)):
            return literal(int(value)), Kind.INT
        return literal(float(value)), Kind.FLOAT

    def derive(self, which: Sequence[tuple[str, Expr]]) -> None:
        for name, e in which:
            self.w.label = name
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

    def constants(self) -> dict[str, Any]:
        return {**{f"_G{j}": g.tolist() for j, g in enumerate(self.grids)},
                **{v: int(self.base_env[n]) for n, v in self._inputs.items()}}

    def sizes(self) -> list[int]:
        return [int(g.size) for g in self.grids]


# ---- compiling: tracebacks show the generated lines, and a folder may keep them -----------

DUMP_ENV = "ASCEND_TUNE_DUMP_GENERATED"
# The operator whose functions are being compiled, for their pseudo-filenames: set around each
# ``_compile`` call rather than passed to it (tests wrap ``_compile`` and its four arguments).
_SUBJECT: contextvars.ContextVar[str] = contextvars.ContextVar("ascend_tune_kernel_subject",
                                                               default="")


@contextlib.contextmanager
def _subject(name: str) -> Iterator[None]:
    token = _SUBJECT.set(re.sub(r"[^A-Za-z0-9_]", "_", name))
    try:
        yield
    finally:
        _SUBJECT.reset(token)


def _compile(source: str, name: str, constants: Mapping[str, Any] | None = None,
             sizes: Sequence[int] | None = None) -> Callable[..., Any]:
    """The function ``name`` of ``source``; given the domain sizes of its index arguments,
    with its few-parameter statements memoised per combination (:mod:`.memo`). The source
    compiled is registered with linecache and dumped (the module docstring). The same text
    again is not compiled again (:mod:`.code_cache`): a fresh function in a fresh scope, its own
    ``constants`` and empty memo tables."""
    straight = source
    stem, source, code, tables = code_cache.compiled(_SUBJECT.get(), source, name, sizes)
    _dump(stem, source, straight)
    filename = f"<ascend-tune row kernel {stem}>"
    scope: dict[str, Any] = {**_HELPERS, **(constants or {}),
                             **{k: [None] * n for k, n in tables.items()}}
    exec(code, scope)
    fn: Callable[..., Any] = scope[name]
    code_cache.register(filename, source, fn)
    return fn


def _dump(stem: str, source: str, straight: str) -> None:
    """``source`` (and the straight-line ``straight`` it was rewritten from, if it was) as
    files in the folder :data:`DUMP_ENV` names, when it is set."""
    folder = os.environ.get(DUMP_ENV)
    if not folder:
        return
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    base = "row-kernel-" + stem.replace(" ", "-")
    (path / f"{base}.py").write_text(source, encoding="utf-8")
    if straight != source:
        (path / f"{base}.straight.py").write_text(straight, encoding="utf-8")


def checks_function(spec: OperatorSpec, base_env: Mapping[str, Any],
                    grids: Sequence[np.ndarray], checks: Sequence[launch.Check]
                    ) -> Callable[..., bytes]:
    """``f(i0, ..., in)``: whether one configuration (its index genome) passes each of
    ``checks``, in order, as bytes of 0 and 1 (a row of a boolean array)."""
    src = _Source(spec, base_env, grids)
    src.derive(needed_derived(spec, [c.expr for c in checks]))
    results = [src.w.atom(src.check(c)) for c in checks]
    tail = "bytes((" + "".join(f"{r}, " for r in results) + "))"
    with _subject(spec.display_name):
        return _compile(src.function("checks", tail), "checks", src.constants(), src.sizes())


class _Cost:
    """The engine's ``_cost`` / ``_loop`` / ``_stage`` unrolled for one configuration: the
    same operations on floats in the same order (names follow engine.py)."""

    def __init__(self, src: _Source, hw: HardwareProfile,
                 chip_cores: Mapping[str, str] | None = None) -> None:
        self.src = src
        # The chip's core counts per side as text: the profile's literals, or (for the
        # shape-generic model of model.dispatch) the platform's counts as arguments.
        self.chip_cores = chip_cores
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
            w.label = f"{side.core}_side"
            cores = self.src.value(side.cores, Kind.FLOAT)
            items = self.src.value(side.items, Kind.FLOAT) if side.items is not None else cores
            per_core = w.tmp(f"_fceil({items} / {w.pick(cores, '1.0', '>')})")
            lat, _busy, _gm, _rec = self._loop(side.body, per_core, None, cores, w.label)
            side_us.append(w.tmp(f"{lat} / {clock}"))
            chip = (self.chip_cores[side.core] if self.chip_cores is not None
                    else literal(float(hw[f"{side.core}_cores"])))
            floor = self.f("cube_kernel_floor_us") if side.core == "cube" else "0.0"
            head = w.tmp(f"{self.f('head_base_us')} + {floor} + "
                         f"{self.f('head_full_chip_us')} * {cores} / {chip}")
            head_us = w.tmp(w.pick(head_us, head, ">"))
        body = side_us[0]
        if len(side_us) > 1:
            handoffs = (self.src.value(spec.handoffs, Kind.FLOAT)
                        if spec.handoffs is not None else "0.0")
            # A prologue side runs before the other (engine: the sum, else the maximum).
            both = (w.tmp(f"{side_us[0]} + {side_us[1]}")
                    if any(s.prologue for s in spec.sides)
                    else w.pick(side_us[0], side_us[1], '>'))
            body = w.tmp(f"{both} + {handoffs} * "
                         f"{self.f('sync_cycles')} / {clock} + {self.f('mix_extra_us')}")
        return w.tmp(f"{head_us} + {body}")

    def _loop(self, body: Sequence[Stage | Loop], trips: str, buffers: str | None,
              cores: str, label: str) -> tuple[str, dict[str, str], str, str]:
        w = self.w
        w.label = label
        trips = w.tmp(w.pick(trips, "0.0", ">"))
        # A one-trip loop pays no iteration cost (engine._where_more_than_one).
        iteration = self.f("loop_iteration_cycles")
        busy: dict[str, str] = {"scalar": w.tmp(f"{iteration} if {trips} > 1.0 else 0.0")}
        seq = w.tmp(busy["scalar"])
        gm = recurrence = "0.0"
        handoffs = 0
        prev: str | None = None
        # The GM latency of the copies just queued on ``prev`` (engine._loop): the longest,
        # waited for at the loop's end, and their sum, held by the flags of a handoff.
        pending: str | None = None
        flagged = "0.0"
        for item in body:
            wait: str | None = None
            if isinstance(item, Loop):
                t = self.src.value(item.trips, Kind.FLOAT)
                b = (self.src.value(item.buffers, Kind.FLOAT) if item.buffers is not None
                     else None)
                lat, sub_busy, sub_gm, sub_rec = self._loop(item.body, t, b, cores, item.name)
                seq = w.tmp(f"{seq} + {lat}")
                for pipe, cycles in sub_busy.items():
                    self._accumulate(busy, pipe, cycles)
                gm = w.tmp(f"{gm} + {sub_gm}")
                recurrence = w.tmp(w.pick(recurrence, sub_rec, ">"))
                first, last = end_pipes(item.body)
            else:
                cycles, stage_gm, wait = self._stage(item, cores)
                seq = w.tmp(f"{seq} + {cycles}")
                self._accumulate(busy, item.pipe, cycles)
                gm = w.tmp(f"{gm} + {stage_gm}")
                first = last = item.pipe
            w.label = label
            if prev is not None and first is not None and first != prev:
                handoffs += 1
                if pending is not None:
                    busy[prev] = w.tmp(f"{busy[prev]} + {flagged}")
                    seq = w.tmp(f"{seq} + {flagged}")
                    pending = None
            if isinstance(item, Loop):
                pending = None
            elif wait is not None:
                if pending is None:
                    pending = flagged = wait
                else:
                    pending = w.tmp(w.pick(pending, wait, ">"))
                    flagged = w.tmp(f"{flagged} + {wait}")
            prev = last if last is not None else prev
        if pending is not None:
            seq = w.tmp(f"{seq} + {pending}")
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

    def _stage(self, stage: Stage, cores: str) -> tuple[str, str, str | None]:
        src, w, hw, spec = self.src, self.w, self.hw, self.spec
        w.label = stage.name
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
            pitch = src.value(stage.pitch, Kind.FLOAT) if stage.pitch is not None else None
            cycles, gm, wait = self._transfer(stage.path, nbytes, rows, count, hit, cores,
                                              aligned, stage.layout, element, pitch)
            return cycles, gm, (wait if stage.path in costs.QUEUED_COPY_PATHS else None)
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
            return w.tmp(f"{count} * {mmad}"), "0.0", None
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
            return w.tmp(f"{count} * {cycles}"), "0.0", None
        assert stage.cycles is not None
        return w.tmp(f"{src.value(stage.cycles, Kind.FLOAT)} * {count}"), "0.0", None

    def _transfer(self, path: str, nbytes: str, rows: str, count: str, hit: str,
                  cores: str, aligned: str | None, layout: str | None,
                  element: int, pitch: str | None) -> tuple[str, str, str]:
        """costs.transfer on one element (its cycles, GM cycles and wait cycles)."""
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
        if path in GM_PATHS:
            unaligned = self.f('gm_unaligned_efficiency')
            declared = aligned  # None: the chip's rate is not affected (costs.transfer)
            if aligned is None:
                aligned = w.tmp(f"_fmodf({row_bytes}, {self.f('gm_align_bytes')}) == 0")
            efficiency = w.tmp(f"1.0 if {aligned} else {unaligned}")
            chip_efficiency = (None if declared is None
                               else w.tmp(f"1.0 if {declared} else {unaligned}"))
            if pitch is not None:
                pitch_bytes = w.tmp(f"{pitch} * {literal(float(element))}")
                starts = w.tmp(f"_fmodf({pitch_bytes}, {self.f('gm_align_bytes')}) == 0")
                off = unaligned
                if path == "gm_to_l1" and layout in costs.ND_LAYOUTS:
                    # costs.nd2nz_pitch_grade
                    off = w.tmp(f"{self.f('nd2nz_pitch_256b_efficiency')} if "
                                f"_fmodf({pitch_bytes}, 256.0) == 0 else "
                                f"({self.f('nd2nz_pitch_128b_efficiency')} if "
                                f"_fmodf({pitch_bytes}, 128.0) == 0 else "
                                f"{self.f('nd2nz_pitch_32b_efficiency')})")
                efficiency = w.tmp(f"{efficiency} if {starts} else "
                                   f"{w.pick(efficiency, off, '<')}")
                base = "1.0" if chip_efficiency is None else chip_efficiency
                chip_efficiency = w.tmp(f"{base} if {starts} else {w.pick(base, off, '<')}")
            bandwidth = w.tmp(f"{bandwidth} * {efficiency}")
            chip = self._chip_bytes_per_cycle(hit)
            if chip_efficiency is not None:
                chip = w.tmp(f"{chip} * {chip_efficiency}")
            share = self._chip_share(chip, cores, costs._port(path))
            bandwidth = w.tmp(w.pick(bandwidth, share, "<"))
            gm = w.tmp(f"{count} * {moved} / {share}")
        else:
            gm = "0.0"
        streaming = w.tmp(f"{moved} / {bandwidth}")
        if path == "gm_to_l1" and layout in costs.ND_LAYOUTS:
            converting = w.tmp(f"{runs} * {self.f('nd2nz_row_cycles')}")
            streaming = w.tmp(w.pick(streaming, converting, ">"))
        latency = literal(spec.latency_cycles)
        split: str | None = None
        if path == "gm_to_l1" and layout in costs.ND_LAYOUTS and pitch is not None:
            # One copy per run beyond the ND2NZ pitch field (costs.transfer).
            split = w.tmp(f"{pitch} > {self.f('nd2nz_max_pitch_elements')}")
            latency = w.tmp(f"{runs} * {latency} if {split} else {latency}")
        wait = "0.0"
        if path in costs.QUEUED_COPY_PATHS:
            # A copy holds its queue at least its issue cost; its latency is waited for after
            # the queued copies, once per execution of the stage (costs.transfer).
            per_transfer = w.tmp(w.pick(streaming, self.f("copy_issue_cycles"), ">"))
            wait = w.tmp(f"{w.pick(count, '1.0', '<')} * {literal(spec.latency_cycles)}")
            if split is not None:
                per_transfer = w.tmp(f"({latency} + {per_transfer}) if {split} "
                                     f"else {per_transfer}")
                wait = w.tmp(f"0.0 if {split} else {wait}")
        else:
            per_transfer = w.tmp(f"{latency} + {streaming}")
        return w.tmp(f"{count} * {per_transfer}"), gm, wait

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
                     grids: Sequence[np.ndarray], checks: Sequence[launch.Check | None],
                     inputs: Sequence[str] = ()) -> Callable[..., float]:
    """``f(i0, ..., in)``: the predicted latency (us) of one configuration (its index genome),
    inf when one of ``checks`` (None: proven to pass) fails. ``inputs``: names of base_env
    (the shape's) read as values rather than written in (:class:`_Source`)."""
    src = _Source(spec, base_env, grids, inputs)
    src.derive(spec.derive)
    for c in checks:
        if c is not None:
            src.w.emit(f"if not {src.check(c)}: return _INF")
    cost = _Cost(src, hw)
    result = cost.latency()
    curves: dict[str, Any] = src.constants()
    for i, (xp, fp) in enumerate(cost.curves.values()):
        curves[f"_XP{i}"], curves[f"_FP{i}"] = xp, fp
    with _subject(spec.display_name):
        return _compile(src.function("latency", result), "latency", curves, src.sizes())


def expression_function(e: Expr, kinds: Mapping[str, Kind]) -> Callable[..., Any]:
    """``f(*values)``: one expression on one row, its inputs ``kinds``' names in order (each
    a Python int, float or bool of that kind). The renderer's unit under test."""
    w = Writer()
    local = {name: (f"p{j}", kind) for j, (name, kind) in enumerate(kinds.items())}
    text = PythonRenderer(w, local.__getitem__).expr(e)
    body = "\n".join(f"    {line}" for line in [*w.lines, f"return {text}"])
    args = ", ".join(v for v, _k in local.values())
    with _subject("expression"):
        return _compile(f"def value({args}):\n{body}\n", "value")
