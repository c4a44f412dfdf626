"""The cost of one batch of configurations: each side's loops and stages folded into latency,
per-pipe busy time and GM time.

Loop semantics (docs/model.md "Loops and overlap"): a loop of ``trips`` iterations over its
stages costs, with one buffer, ``trips * sum(stage)``; with two or more buffers, the fill of
one trip plus ``(trips - 1)`` times the steady state per trip: the busiest resource (a pipe or
the shared GM bandwidth, nested loops' busy time counted per pipe, since both levels issue to
the same hardware queues) or the serial chain of a single-buffered nested loop, whichever is
longer (docs/model.md names the sources). Every trip also pays the scalar loop cost and
one flag handoff per change of pipe between consecutive stages (through nested loops).

The cost of a single stage comes from :mod:`ascend_tune.model.costs`; which configurations
are valid, and the batch's parameters and derived values, from
:class:`~ascend_tune.model.engine.ShapeModel`, the only caller.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ascend_tune.base.vocabulary import DTYPE_BYTES, PIPE_COLUMN, PIPE_COLUMNS
from ascend_tune.hardware import HardwareProfile
from ascend_tune.model import costs
from ascend_tune.spec import Loop, OperatorSpec, Stage, end_pipes


@dataclass
class StageDetail:
    """Per-core totals of one stage, for `explain` (batch of one)."""

    side: str
    name: str
    pipe: str
    cycles: float
    executions: float
    bytes_per_transfer: float = 0.0
    bandwidth_bytes_per_cycle: float = 0.0
    peak_bytes_per_cycle: float = 0.0
    share_capped: bool = False
    latency_fraction: float = 0.0  # share of each transfer's time spent on fixed latency
    pitch_elements: float = 0.0  # the operand's row pitch, where the stage gives it
    pitch_misaligned: bool = False  # runs start misaligned because of the pitch
    copies_per_run: bool = False  # the pitch is too long for one ND2NZ copy


class _Ctx:
    """One side of one batch: what its loops and stages read, and the stages' details."""

    def __init__(self, spec: OperatorSpec, hw: HardwareProfile, env: Mapping[str, Any],
                 side: str, cores: Any, n: int, detail: bool) -> None:
        self.spec = spec
        self.hw = hw
        self.env = env
        self.side = side
        self.cores = cores
        self.n = n
        self.detail = detail
        self.stages: list[StageDetail] = []
        self.share_cache: costs.ShareCache = {}
        # Shared, read-only: a stage's count, rows and L2 hit when it declares none, and the
        # GM cycles and recurrence of a loop until something adds to them (then the loop
        # takes the addend's array as its own).
        self.zeros = np.zeros(n)
        self.zeros.flags.writeable = False
        self.ones = np.ones(n)
        self.ones.flags.writeable = False


def _arr(value: Any, n: int) -> np.ndarray:
    out = np.asarray(value, dtype=np.float64)
    return out if out.shape == (n,) else np.broadcast_to(out, (n,))


def _owned_arr(value: Any, n: int) -> tuple[np.ndarray, bool]:
    """:func:`_arr`, and whether the result is a new writeable array (a conversion from
    integers) that the caller may overwrite, rather than ``value`` itself or a view."""
    out = _arr(value, n)
    return out, out is not value and out.flags.writeable and out.base is None


def batch_cost(spec: OperatorSpec, hw: HardwareProfile, env: Mapping[str, Any], n: int,
               detail: bool) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray,
                                      np.ndarray, list[StageDetail]]:
    """Latency, per-pipe busy time, GM time and head overhead (us) of ``n`` configurations
    whose parameters and derived values ``env`` holds (every check passed), and with
    ``detail`` the per-stage totals of the first (a batch of one, for `explain`)."""
    clock_mhz = float(hw["clock_mhz"])
    pipes: dict[str, np.ndarray] = {}  # the pipes a side uses; zeros for the rest below
    side_us: list[np.ndarray] = []
    gm_us = np.zeros(n)
    head_us = np.zeros(n)
    stages: list[StageDetail] = []
    for side in spec.sides:
        cores = _arr(side.cores.evaluate(env), n)
        items = _arr(side.items.evaluate(env), n) if side.items is not None else cores
        per_core = np.maximum(cores, 1.0)  # ceil(items / max(cores, 1)), in place
        np.divide(items, per_core, out=per_core)
        np.ceil(per_core, out=per_core)
        ctx = _Ctx(spec, hw, env, side.core, cores, n, detail)
        lat, busy, gm, _rec = _loop(side.body, per_core, None, ctx,
                                    np.ones(n) if detail else None, trips_owned=True)
        # _loop's arrays are ours: scale them in place.
        side_us.append(np.divide(lat, clock_mhz, out=lat))
        for pipe, cycles in busy.items():
            _accumulate(pipes, PIPE_COLUMN[(side.core, pipe)],
                        np.divide(cycles, clock_mhz, out=cycles))
        np.maximum(gm_us, np.divide(gm, clock_mhz, out=gm), out=gm_us)
        np.maximum(head_us, costs.head_us(hw, cores, side.core), out=head_us)
        stages += ctx.stages
    pipes = {c: pipes[c] if c in pipes else np.zeros(n) for c in PIPE_COLUMNS}
    body_us = side_us[0]
    if len(side_us) > 1:
        # Mix kernel: Cube and Vector sides overlap (or, with a prologue side, run one after
        # the other across its barrier); they pay flag handoffs and a launch cost.
        handoffs = (_arr(spec.handoffs.evaluate(env), n)
                    if spec.handoffs is not None else np.zeros(n))
        both = (side_us[0] + side_us[1] if any(s.prologue for s in spec.sides)
                else np.maximum(side_us[0], side_us[1]))
        body_us = (both + handoffs * float(hw["sync_cycles"]) / clock_mhz
                   + float(hw["mix_extra_us"]))
    return np.add(head_us, body_us, out=body_us), pipes, gm_us, head_us, stages


def _loop(body: Sequence[Stage | Loop], trips: np.ndarray, buffers: np.ndarray | None,
          ctx: _Ctx, mult: np.ndarray | None, trips_owned: bool = False
          ) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Latency, per-pipe busy cycles, GM cycles and the serial recurrence of a loop.

    A nested loop is not an opaque block: its pipes' busy time joins this loop's per-pipe
    accounting (the hardware queues of the two levels are the same queues), so only what
    the nested loop cannot overlap -- the chain of its single-buffered iterations -- bounds
    this loop's steady state. The recurrence a loop exports is, with one buffer,
    ``(trips - 1) * sequential trip + steady trip`` (its iterations serialise, the first can
    overlap the stages around the loop), with two or more ``trips * recurrence of its own
    nested loops``. A ``trips: 1`` loop therefore exports no more than its own pipes' busy
    time, and pays no iteration cost: wrapping a body in it changes nothing.

    ``trips_owned``: ``trips`` is the caller's scratch array, free to overwrite.
    """
    hw = ctx.hw
    n = ctx.n
    trips = np.maximum(trips, 0.0, out=trips if trips_owned else None)
    # A one-trip loop is straight-line code (no back edge): it pays no iteration cost.
    busy: dict[str, np.ndarray] = {"scalar": _where_more_than_one(
        trips, float(hw["loop_iteration_cycles"]))}
    seq = busy["scalar"].copy()
    gm = recurrence = ctx.zeros  # until the body adds to them
    handoffs = 0
    prev: str | None = None
    # The GM latency of the copies just queued on ``prev`` (None: none): queued copies overlap
    # their latencies, and the flag that hands their data to the next pipe waits for the last
    # one to land, holding ``prev`` that long; the chain waits for it too.
    pending: Any = None
    flagged: Any = None
    # Executions of the body, for `explain` only (detail); None on the batch path.
    inner_mult = mult * trips if mult is not None else None
    # Every array this loop accumulates into (seq, gm, recurrence, busy) is its own, and so
    # are the arrays the nested loops and stages return: add into them in place.
    for item in body:
        wait: Any = None
        if isinstance(item, Loop):
            t, t_owned = _owned_arr(item.trips.evaluate(ctx.env), n)
            b = (_arr(item.buffers.evaluate(ctx.env), n) if item.buffers is not None
                 else None)
            lat, sub_busy, sub_gm, sub_rec = _loop(item.body, t, b, ctx, inner_mult, t_owned)
            seq += lat
            for pipe, cycles in sub_busy.items():
                _accumulate(busy, pipe, cycles)
            gm = np.add(gm, sub_gm, out=gm if gm is not ctx.zeros else sub_gm)
            recurrence = np.maximum(recurrence, sub_rec, out=(
                recurrence if recurrence is not ctx.zeros else sub_rec))
            first, last = end_pipes(item.body)
        else:
            cycles, stage_gm, wait = _stage(item, ctx, inner_mult)
            seq += cycles
            _accumulate(busy, item.pipe, cycles)
            gm = np.add(gm, stage_gm, out=gm if gm is not ctx.zeros else stage_gm)
            first = last = item.pipe
        if prev is not None and first is not None and first != prev:
            handoffs += 1
            if pending is not None:
                busy[prev] += flagged
                seq += flagged
                pending = None
        if isinstance(item, Loop):
            pending = None
        elif wait is not None:
            if pending is None:
                pending, flagged = wait, wait
            else:
                pending, flagged = np.maximum(pending, wait), flagged + wait
        prev = last if last is not None else prev
    if pending is not None:
        seq += pending  # the loop's end (the next trip, or what follows) waits for them
    sync = handoffs * float(hw["sync_cycles"])
    seq += sync
    busy["scalar"] += sync
    steady = _fold_maximum([*busy.values(), gm, recurrence])
    latency, exported = _loop_time(trips, buffers, seq, steady, recurrence)
    for cycles in busy.values():
        cycles *= trips
    gm = np.multiply(gm, trips, out=gm if gm is not ctx.zeros else None)
    return latency, busy, gm, exported


def _stage(stage: Stage, ctx: _Ctx, mult: np.ndarray | None
           ) -> tuple[np.ndarray, np.ndarray, Any]:
    """Pipe cycles, GM cycles and the latency waited for after them (None: none) of one stage
    per execution of its loop body."""
    env, n, hw, spec = ctx.env, ctx.n, ctx.hw, ctx.spec
    count = _arr(stage.count.evaluate(env), n) if stage.count is not None else ctx.ones
    gm = np.zeros(n)
    wait: Any = None
    extra: dict[str, Any] = {}
    kind = stage.kind  # vocabulary.STAGE_KINDS
    if kind == "transfer":
        assert stage.bytes is not None and stage.path is not None
        nbytes = _arr(stage.bytes.evaluate(env), n)
        rows = _arr(stage.rows.evaluate(env), n) if stage.rows is not None else ctx.ones
        # Stages without a hit on the same cores and port then share one chip share.
        hit = (_arr(stage.l2_hit.evaluate(env), n) if stage.l2_hit is not None
               else ctx.zeros)
        aligned = (np.broadcast_to(np.asarray(stage.gm_aligned.evaluate(env), bool), (n,))
                   if stage.gm_aligned is not None else None)
        element = (DTYPE_BYTES[spec.stage_dtype(spec.dtypes[stage.operand])]
                   if stage.operand is not None else 1)
        pitch = (_arr(stage.pitch.evaluate(env), n) if stage.pitch is not None else None)
        t = costs.transfer(hw, stage.path, nbytes, rows, count, hit, ctx.cores, aligned,
                           stage.layout, element, ctx.share_cache, pitch)
        cycles, gm = t.cycles, t.gm_cycles
        if stage.path in costs.QUEUED_COPY_PATHS:
            wait = t.wait_cycles
        if ctx.detail:
            extra = {"bytes_per_transfer": float(t.bytes_per_transfer[0]),
                     "bandwidth_bytes_per_cycle": float(t.effective_bandwidth[0]),
                     "peak_bytes_per_cycle": float(t.peak_bandwidth[0]),
                     "share_capped": bool(t.share_capped[0]),
                     "latency_fraction": float(1.0 - t.effective_bandwidth[0]
                                               / t.bandwidth[0])}
            if pitch is not None:
                extra["pitch_elements"] = float(pitch[0])
                extra["pitch_misaligned"] = bool(t.misaligned_starts is not None
                                                 and t.misaligned_starts.reshape(-1)[0])
                extra["copies_per_run"] = bool(t.split_copies is not None
                                               and t.split_copies.reshape(-1)[0])
    elif kind == "cube":
        assert stage.m is not None and stage.n is not None and stage.k is not None
        dtype = spec.stage_dtype(stage.dtype or "")
        cycles = count * costs.mmad_cycles(hw, dtype, _arr(stage.m.evaluate(env), n),
                                           _arr(stage.n.evaluate(env), n),
                                           _arr(stage.k.evaluate(env), n))
    elif kind == "vector":
        assert stage.elements is not None and stage.op is not None
        size = DTYPE_BYTES[spec.stage_dtype(stage.dtype or "")]
        cycles = count * costs.vector_cycles(hw, stage.op, size,
                                             _arr(stage.elements.evaluate(env), n))
    else:
        assert stage.cycles is not None
        cycles = _arr(stage.cycles.evaluate(env), n) * count
    if ctx.detail:
        assert mult is not None
        execs = float(mult[0])
        ctx.stages.append(StageDetail(ctx.side, stage.name, stage.pipe,
                                      float(cycles[0]) * execs, execs * float(count[0]),
                                      **extra))
    return cycles, gm, wait


def _accumulate(busy: dict[str, np.ndarray], pipe: str, cycles: np.ndarray) -> None:
    """busy[pipe] += cycles, taking ``cycles`` (the caller's own array) as the first term."""
    if pipe in busy:
        busy[pipe] += cycles
    else:
        busy[pipe] = np.add(0.0, cycles, out=cycles)  # 0.0 + x, as a sum starting at 0 gives


def _where_more_than_one(trips: np.ndarray, cycles: float) -> np.ndarray:
    """``where(trips > 1, cycles, 0.0)``. A bool times a finite ``cycles >= 0`` gives exactly
    ``cycles`` or +0.0, without where's per-row branch (mispredicted on mixed batches)."""
    more = trips > 1.0
    if math.isfinite(cycles) and cycles >= 0.0:
        return np.multiply(more, cycles)
    return np.where(more, cycles, 0.0)


def _loop_time(trips: np.ndarray, buffers: np.ndarray | None, seq: np.ndarray,
               steady: np.ndarray, recurrence: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A loop's latency and exported recurrence from its trips, buffer counts (None: one
    each), sequential trip, steady-state trip and nested recurrence (see :func:`_loop`)::

        latency  = where(double, seq + later * steady, trips * seq)
        exported = where(double, trips * recurrence, later * seq + steady)

    with ``double = buffers >= 2``, ``later = max(trips - 1, 0)``, both 0 where
    ``trips <= 0``. A batch whose rows agree on ``double`` computes that side only.
    Overwrites ``seq`` (the caller's own array, read last here)."""
    later = np.subtract(trips, 1.0)
    np.maximum(later, 0.0, out=later)
    double = buffers >= 2 if buffers is not None else None
    some_double = double is not None and bool(double.any())
    all_double = double is not None and some_double and bool(double.all())
    if some_double:
        pipelined = np.multiply(later, steady)
        np.add(seq, pipelined, out=pipelined)
        double_exported = trips * recurrence
    if not all_double:
        np.multiply(later, seq, out=later)
        single_exported = np.add(later, steady, out=later)
        single_latency = np.multiply(trips, seq, out=seq)
    if not some_double:
        latency, exported = single_latency, single_exported
    elif all_double:
        latency, exported = pipelined, double_exported
    else:
        assert double is not None
        latency = np.where(double, pipelined, single_latency)
        exported = np.where(double, double_exported, single_exported)
    return _unless_no_trips(trips, latency), _unless_no_trips(trips, exported)


def _unless_no_trips(trips: np.ndarray, value: np.ndarray) -> np.ndarray:
    """``where(trips <= 0, 0.0, value)``; ``value`` itself where every row has a trip."""
    none = trips <= 0
    return np.where(none, 0.0, value) if none.any() else value


def _fold_maximum(arrays: list[np.ndarray]) -> np.ndarray:
    """np.maximum over the arrays, left to right, as ``np.maximum.reduce`` of their stack
    folds them, without the stacked copy."""
    out: np.ndarray = np.maximum(arrays[0], arrays[1])
    for arr in arrays[2:]:
        np.maximum(out, arr, out=out)
    return out


def bound(pipes: Mapping[str, np.ndarray], gm: np.ndarray, head: np.ndarray) -> np.ndarray:
    """Index into BOUND_NAMES of the largest column: ``argmax`` of the columns stacked, the
    first one on ties, column by column (no stacked copy, and an all-zero pipe column costs
    one pass)."""
    columns = [*(pipes[c] for c in PIPE_COLUMNS), gm, head]
    best = columns[0].copy()
    index = np.zeros(best.shape, dtype=np.int64)
    for i, column in enumerate(columns[1:], 1):
        above = column > best  # strictly: a tie keeps the earlier column, as argmax does
        if above.any():
            index[above] = i
        np.maximum(best, column, out=best)
    if np.isnan(best).any():  # argmax picks a row's first nan, which > never does
        stacked: np.ndarray = np.argmax(np.stack(columns, axis=1), axis=1)
        return stacked
    return index

