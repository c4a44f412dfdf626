"""Cheap lower bounds of the latency, for an exact search that need not cost every valid
configuration in full.

A bound is the latency of a *relaxed* pipeline: the same sides and loops with some stages
dropped (first every transfer, leaving the compute stages; then only the GM reads, whose chip
share is the dearest part of the model). It never exceeds the latency
(:func:`~ascend_tune.model.pipeline.batch_cost`), bit for bit: every stage costs what it costs
alone (a transfer's chip share depends on its own bytes, hit and cores, not on the other
stages), a loop's latency is built from sums, maxima and products of non-negative per-stage
cycles (floating-point addition, maximum and multiplication by a non-negative number are
monotone, so dropping a term never raises a result), and removing stages never adds a change
of pipe between consecutive stages (a flag handoff). Trips, buffers, cores and the launch
head are those of the full pipeline.

Costing the compute stages takes about a third of the full model on Matmul shapes and rules
out 85-95 % of a valid set against a good incumbent; the GM-read-free pipeline a little over
half, and leaves about 1 % (benchmarks/search_speed.py --only exact).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ascend_tune import expr as expr_mod
from ascend_tune.expr import Expr
from ascend_tune.hardware import HardwareProfile
from ascend_tune.model.pipeline import batch_cost
from ascend_tune.spec import Loop, OperatorSpec, Stage, needed_derived

# The GM reads: the transfers whose chip share (L2 hit, contention) the bound leaves out.
GM_READ_PATHS = frozenset({"gm_to_l1", "gm_to_ub"})


def _relaxed(spec: OperatorSpec, keep: Callable[[Stage], bool]) -> OperatorSpec:
    """``spec`` with only the stages ``keep`` accepts (every loop kept, empty or not)."""

    def strip(body: Sequence[Stage | Loop]) -> tuple[Stage | Loop, ...]:
        return tuple(dataclasses.replace(item, body=strip(item.body)) if isinstance(item, Loop)
                     else item for item in body
                     if isinstance(item, Loop) or keep(item))

    return dataclasses.replace(spec, sides=tuple(dataclasses.replace(side, body=strip(side.body))
                                                 for side in spec.sides))


def _expressions(spec: OperatorSpec) -> Iterator[Expr]:
    """Every expression the pipeline of ``spec`` reads."""

    def walk(body: Sequence[Stage | Loop]) -> Iterator[Expr]:
        for item in body:
            if isinstance(item, Loop):
                yield item.trips
                if item.buffers is not None:
                    yield item.buffers
                yield from walk(item.body)
            else:
                yield from item.expressions()

    if spec.handoffs is not None:
        yield spec.handoffs
    for side in spec.sides:
        yield side.cores
        if side.items is not None:
            yield side.items
        yield from walk(side.body)


# Largest table of one derived value over the parameters it reads (see LatencyBounds).
MAX_TABLE_ENTRIES = 1 << 16


class LatencyBounds:
    """The relaxed pipelines of one shape model, cheapest first.

    The derived values a relaxed pipeline reads are mostly functions of two or three
    parameters (mBlocks of mDim and baseM: 98 combinations) evaluated over millions of rows
    (ceil_div chains were half the bound's time). Each one whose parameters have at most
    ``MAX_TABLE_ENTRIES`` combinations is computed once per shape over those combinations and
    gathered per row: the same elementwise numpy calls on the same values, so the same bits.
    Built only where the whole space is proven free of int64 overflow (``proven``), as the
    unchecked path requires; elsewhere every value is computed per row."""

    def __init__(self, spec: OperatorSpec, hw: HardwareProfile, base_env: Mapping[str, Any],
                 grids: Sequence[np.ndarray], proven: bool) -> None:
        self.hw = hw
        self.spec = spec
        self.base_env = dict(base_env)
        self.grids = grids
        self.levels = [_relaxed(spec, lambda s: s.kind != "transfer"),
                       _relaxed(spec, lambda s: s.path not in GM_READ_PATHS)]
        reads = _param_reads(spec)
        sizes = {p: int(g.size) for p, g in zip(spec.params, grids, strict=True)}
        self._tables: dict[str, tuple[list[tuple[int, int]], np.ndarray]] = {}
        if proven:
            for name, e in spec.derive:
                entries = int(np.prod([sizes[p] for p in reads[name]]))
                if reads[name] and entries <= MAX_TABLE_ENTRIES:
                    self._tables[name] = self._table(e, sorted(reads[name],
                                                     key=spec.params.index), entries)
        self._plans = [self._plan(r) for r in self.levels]

    def _table(self, e: Expr, params: list[str], entries: int
               ) -> tuple[list[tuple[int, int]], np.ndarray]:
        """``e`` over every combination of ``params`` (the last varies fastest), and the
        (gene, stride) pairs that index it."""
        spec = self.spec
        flat = np.arange(entries, dtype=np.int64)
        env: dict[str, Any] = dict(self.base_env)
        strides: list[tuple[int, int]] = []
        step = 1
        for p in reversed(params):
            j = spec.params.index(p)
            g = self.grids[j]
            env[p] = g[(flat // step) % g.size]
            strides.append((j, step))
            step *= int(g.size)
        with expr_mod.unchecked():
            for name, d in needed_derived(spec, [e]):
                env[name] = d.evaluate(env)
            value = np.asarray(e.evaluate(env))
        return strides, np.ascontiguousarray(np.broadcast_to(value, (entries,)))

    def _plan(self, relaxed: OperatorSpec) -> tuple[list[int], list[str], list[tuple[str, Expr]]]:
        """What a relaxed pipeline needs per row: the parameters (genes), the tabled derived
        values and the other derived values (in derive order)."""
        derive = dict(self.spec.derive)
        need: set[str] = set()
        todo = [n for e in _expressions(relaxed) for n in e.names]
        while todo:
            name = todo.pop()
            if name in need:
                continue
            need.add(name)
            if name in derive and name not in self._tables:
                todo += list(derive[name].names)
        genes = [j for j, p in enumerate(self.spec.params) if p in need]
        tabled = [n for n, _ in self.spec.derive if n in need and n in self._tables]
        computed = [(n, e) for n, e in self.spec.derive if n in need and n not in self._tables]
        return genes, tabled, computed

    def __call__(self, level: int, indices: np.ndarray) -> np.ndarray:
        """A lower bound of the latency (us) of each index genome (rows known to pass every
        check), from relaxed pipeline ``level``."""
        genes, tabled, computed = self._plans[level]
        env: dict[str, Any] = dict(self.base_env)
        for j in genes:
            env[self.spec.params[j]] = self.grids[j][indices[:, j]]
        for name in tabled:
            strides, table = self._tables[name]
            j, step = strides[0]
            at = indices[:, j] * step if step != 1 else indices[:, j].copy()
            for j, step in strides[1:]:
                at += indices[:, j] * step
            env[name] = table[at]
        for name, e in computed:
            env[name] = e.evaluate(env)
        return batch_cost(self.levels[level], self.hw, env, indices.shape[0], False)[0]


def _param_reads(spec: OperatorSpec) -> dict[str, frozenset[str]]:
    """For every derived value, the parameters it reads (through other derived values)."""
    params = set(spec.params)
    out: dict[str, frozenset[str]] = {}
    for name, e in spec.derive:
        found: set[str] = set()
        for n in e.names:
            if n in params:
                found.add(n)
            elif n in out:
                found |= out[n]
        out[name] = frozenset(found)
    return out
