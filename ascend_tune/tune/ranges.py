"""Tuning a range of shapes: the tuner picks which shapes to tune so that run-time dispatch is
good on every shape of the range, not only on a hand-made list.

An LLM operator sees a new M every call; a shape list is a sample someone guessed. Given a
range (``M=1:8192,N=4096,K=4096``) this starts from a log grid over the ranged variables,
then works in rounds: draw unseen shapes from the range (log-uniform, deterministic from the
seed), tune them, and measure the regret of the dispatch the emitted code would do on them
with the table as it stood (:mod:`ascend_tune.emit.selection`: candidates ranked by the
model) against each shape's own optimum. Those numbers are held out: the round's shapes were
not in the table they judge. Then the round's shapes join the table (the work is kept: every
tuned shape is a candidate), and the loop stops once the held-out mean regret is within the
target (and its worst within three times the target's margin: a mean over a few shapes hides
one bad one) or the shape budget is spent. The last round's numbers are the report.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.emit.bundle import load_bundle
from ascend_tune.emit.selection import NONE
from ascend_tune.spec import OperatorSpec
from ascend_tune.spec.shapes import check_shape, shape_key
from ascend_tune.tune.run import CacheReport, Progress, SearchResult

Shape = dict[str, int]
DEFAULT_TARGET = 1.03  # held-out mean of dispatched / optimum latency
DEFAULT_MAX_SHAPES = 48  # tuned shapes per range, grid included
GRID_POINTS = 6  # log-grid points per ranged variable (ends included)
ROUND_SHAPES = 8  # unseen shapes drawn, judged and then tuned per round


@dataclass(frozen=True)
class ShapeRange:
    """Per shape variable a fixed value or an inclusive range, in the spec's order."""

    spec_vars: tuple[str, ...]
    bounds: Mapping[str, tuple[int, int]]  # lo == hi for a fixed value
    multiple: Mapping[str, int] = field(default_factory=dict)  # the multiples the kernel takes

    def _snap(self, v: str, x: int) -> int:
        """``x`` at the nearest multiple the kernel accepts (the range's ends are ones)."""
        m = self.multiple.get(v, 1)
        return x if m == 1 else (x + m // 2) // m * m

    @property
    def ranged(self) -> list[str]:
        return [v for v in self.spec_vars if self.bounds[v][0] < self.bounds[v][1]]

    def text(self) -> str:
        return ",".join(f"{v}={lo}" if lo == hi else f"{v}={lo}:{hi}"
                        for v, (lo, hi) in ((v, self.bounds[v]) for v in self.spec_vars))

    def grid(self, points: int = GRID_POINTS) -> list[Shape]:
        """The cross product of a log grid per ranged variable (both ends included)."""
        axes = []
        for v in self.spec_vars:
            lo, hi = self.bounds[v]
            if lo == hi:
                axes.append([lo])
                continue
            raw = np.exp(np.linspace(math.log(lo), math.log(hi), points))
            axes.append(sorted({lo, hi, *(self._snap(v, round(float(x))) for x in raw)}))
        shapes: list[Shape] = [{}]
        for v, axis in zip(self.spec_vars, axes, strict=True):
            shapes = [{**s, v: x} for s in shapes for x in axis]
        return shapes

    def draw(self, rng: np.random.Generator, n: int, exclude: set[str]) -> list[Shape]:
        """``n`` shapes log-uniform in the range, none in ``exclude`` (shape keys), distinct."""
        out: list[Shape] = []
        seen = set(exclude)
        for _attempt in range(50 * n):
            if len(out) == n:
                break
            shape = {}
            for v in self.spec_vars:
                lo, hi = self.bounds[v]
                shape[v] = lo if lo == hi else self._snap(v, min(hi, max(lo, round(math.exp(
                    rng.uniform(math.log(lo), math.log(hi + 1))) - 0.5))))
            key = shape_key(shape)
            if key not in seen:
                seen.add(key)
                out.append(shape)
        return out


def parse_range(spec: OperatorSpec, text: str, what: str = "--shape-range") -> ShapeRange:
    """``"M=1:8192,N=4096,K=4096"``: every shape variable fixed or ``lo:hi``, within the
    spec's shape domain."""
    bounds: dict[str, tuple[int, int]] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep or not name:
            raise AscendTuneError(f"{what} '{text:.80}': expected NAME=LO:HI or NAME=VALUE "
                                  "pairs separated by ','")
        lo_text, colon, hi_text = value.partition(":")
        try:
            lo = int(lo_text.strip())
            hi = int(hi_text.strip()) if colon else lo
        except ValueError:
            raise AscendTuneError(f"{what} '{text:.80}': {name}={value.strip()[:40]} is not "
                                  "an integer or LO:HI") from None
        if lo > hi:
            raise AscendTuneError(f"{what} '{text:.80}': {name} range {lo}:{hi} is empty")
        if name in bounds:
            raise AscendTuneError(f"{what} '{text:.80}': {name} is given twice")
        bounds[name] = (lo, hi)
    # Both ends must be shapes the spec accepts (unknown or missing names, out of its range).
    check_shape(spec, {v: b[0] for v, b in bounds.items()}, f"{what} {text:.80}")
    check_shape(spec, {v: b[1] for v, b in bounds.items()}, f"{what} {text:.80}")
    return ShapeRange(tuple(spec.shape_vars), {v: bounds[v] for v in spec.shape_vars},
                      dict(spec.shape_multiple))


@dataclass
class RangeRound:
    """One round's held-out judgement: unseen shapes against the table before they joined."""

    tuned_before: int  # shapes in the table that judged this round
    ratios: list[float]  # dispatched / optimum per judged shape (inf: no configuration)

    def mean(self) -> float:
        return float(np.mean(self.ratios)) if self.ratios else math.nan

    def quantile(self, q: float) -> float:
        return float(np.quantile(self.ratios, q)) if self.ratios else math.nan

    def within(self, limit: float = 1.05) -> float:
        return sum(r <= limit for r in self.ratios) / len(self.ratios) if self.ratios else 0.0


@dataclass
class RangeOutcome:
    shapes: list[Shape] = field(default_factory=list)  # every tuned shape, in tuning order
    rounds: list[RangeRound] = field(default_factory=list)
    stopped: str = ""  # why the loop ended

    @property
    def held_out(self) -> RangeRound | None:
        return self.rounds[-1] if self.rounds else None


Tuner = Callable[[list[Shape]], list[dict[str, Any]]]


class RoundProgress(Progress):
    """``progress`` for the rounds of one range search: a round after the first finds the
    shapes the earlier rounds tuned in the results file, which are not "reused" from an
    earlier run, so its report counts only the shapes no round of this run asked for."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.asked: set[str] = set()
        self.earlier: set[str] = set()

    def round(self, todo: Sequence[Shape]) -> Progress:
        """The progress of the next round, which asks for ``todo``."""
        keys = {shape_key(t) for t in todo}
        self.earlier = self.asked & keys
        self.asked |= keys
        return self

    def opened(self, cache: CacheReport) -> None:
        self.progress.opened(dataclasses.replace(
            cache, reused=max(0, cache.reused - len(self.earlier))))

    @contextlib.contextmanager
    def running(self, todo: int) -> Iterator[None]:
        with self.progress.running(todo):
            yield

    def shape_done(self, key: str, entry: Any, seconds: float) -> None:
        self.progress.shape_done(key, entry, seconds)


class CumulativeTuner:
    """A :data:`Tuner` over a search function ``search(shapes, first_call)``. Each round asks
    for the cumulative list: a results file (``cached``) holds the earlier shapes (and a
    search drops shapes missing from its list); without one only new shapes are tuned and
    the entries are kept here."""

    def __init__(self, search: Callable[[list[Shape], bool], SearchResult],
                 cached: bool) -> None:
        self.search = search
        self.cached = cached
        self.known: dict[str, dict[str, Any]] = {}
        self.runs: list[SearchResult] = []

    def __call__(self, todo: list[Shape]) -> list[dict[str, Any]]:
        ask = todo if self.cached else [t for t in todo if shape_key(t) not in self.known]
        run = self.search(ask, not self.runs)
        self.runs.append(run)
        if run.interrupted:
            raise KeyboardInterrupt
        self.known.update((shape_key(e["shape"]), e) for e in run.entries())
        return [self.known[k] for k in map(shape_key, todo) if k in self.known]

    def result(self, shapes: list[Shape]) -> SearchResult:
        """One :class:`SearchResult` over every round."""
        last = self.runs[-1]
        return SearchResult(last.header, shapes,
                            sorted({f for r in self.runs for f in r.failures}),
                            {k: v for r in self.runs for k, v in r.times.items()}, False,
                            sum(r.saved for r in self.runs), lambda: iter(self.known.values()))


def tune_range(spec: OperatorSpec, ranges: Sequence[ShapeRange], fixed: Sequence[Shape],
               head: Mapping[str, Any], tune: Tuner, *, seed: int,
               target: float = DEFAULT_TARGET, max_shapes: int = DEFAULT_MAX_SHAPES,
               round_shapes: int = ROUND_SHAPES,
               on_round: Callable[[RangeRound], None] | None = None) -> RangeOutcome:
    """Tune ``fixed`` shapes and the ranges' grids, then judge and grow the table in rounds
    (module docstring). ``tune`` tunes a cumulative shape list (earlier shapes are cached)
    and returns its entries in order; ``head`` is the results header the entries belong to."""
    if target < 1.0:
        raise AscendTuneError(f"--target must be at least 1.0 (a ratio), got {target}")
    out = RangeOutcome()
    seen: set[str] = set()
    for s in [*fixed, *(g for r in ranges for g in r.grid())]:
        if shape_key(s) not in seen:
            seen.add(shape_key(s))
            out.shapes.append(dict(s))
    if len(out.shapes) > max_shapes:
        raise AscendTuneError(f"the ranges' starting grid holds {len(out.shapes)} shapes, "
                              f"more than --max-shapes {max_shapes}; raise it")
    entries = tune(list(out.shapes))
    rng = np.random.default_rng([seed, 0x5A4E6E])
    while True:
        if len(out.shapes) >= max_shapes:
            out.stopped = f"shape budget of {max_shapes} reached"
            break
        per_range = max(1, min(round_shapes, max_shapes - len(out.shapes)) // len(ranges))
        drawn = [s for r in ranges for s in r.draw(rng, per_range, seen)]
        if not drawn:
            out.stopped = "every shape of the range is tuned"
            break
        bundle = load_bundle({**head, "shapes": entries}, "range search")
        new_entries = tune([*out.shapes, *drawn])
        by_key = {shape_key(e["shape"]): e for e in new_entries}
        ratios = []
        for s in drawn:
            entry = by_key.get(shape_key(s))
            sel = bundle.select(s)
            if entry is None:  # no valid configuration: nothing to dispatch to either
                continue
            best = float(entry["predicted"]["latency_us"])
            ratios.append(math.inf if sel.source == NONE else
                          sel.latency_us / min(best, sel.latency_us))
        judged = RangeRound(len(out.shapes), ratios)
        out.rounds.append(judged)
        if on_round is not None:
            on_round(judged)
        for s in drawn:
            seen.add(shape_key(s))
            out.shapes.append(s)
        entries = new_entries
        # A mean over a handful of shapes is optimistic (one shape at 1.6x hides among seven
        # at 1.0x): the round's worst must also be within three times the target's margin.
        worst_allowed = 1.0 + 3.0 * (target - 1.0)
        if ratios and judged.mean() <= target and max(ratios) <= worst_allowed:
            out.stopped = (f"held-out mean {judged.mean():.3f}x within the target {target}x "
                           f"(worst {max(ratios):.2f}x within {worst_allowed:.2f}x)")
            break
    return out


def replay(spec: OperatorSpec, ranges: Sequence[ShapeRange], fixed: Sequence[Shape],
           head: Mapping[str, Any], entries: Sequence[Mapping[str, Any]], *, seed: int,
           target: float = DEFAULT_TARGET, max_shapes: int = DEFAULT_MAX_SHAPES) -> list[Shape]:
    """The shapes a range search would end with, tuning nothing: ``entries`` (a results
    file's) stand in for the tuner, a shape they lack is left out of the judgement. For
    ``--locked``: the file is up to date when it holds exactly these shapes."""
    by_key = {shape_key(e["shape"]): dict(e) for e in entries}

    def tuner(todo: list[Shape]) -> list[dict[str, Any]]:
        return [by_key[k] for k in map(shape_key, todo) if k in by_key]

    try:
        return tune_range(spec, ranges, fixed, head, tuner, seed=seed, target=target,
                          max_shapes=max_shapes).shapes
    except AscendTuneError:  # nothing tuned yet (no table to judge with): the grid
        return list(fixed) + [g for r in ranges for g in r.grid()]
