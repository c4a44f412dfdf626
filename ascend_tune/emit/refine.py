"""Run-time refinement: a short descent from the selected configuration, by the model, on the
shape that arrived, which the emitted C++ repeats step for step.

The candidate table holds configurations tuned for other shapes. Measured on unseen shapes of
the example families (``benchmarks/dispatch_quality.py``), the best of them is usually one or
two parameters away from the shape's own optimum: a column tile that now fits a whole row, a
core split that divides the new M, a ``blockDim`` that balances 28 heads. So after the table is
ranked, the pick is improved by a descent that reaches exactly those:

1. each parameter in spec order: every value of its domain for this shape, the others fixed;
   the best strictly faster valid one (ties to the smaller value) is taken. A parameter swept
   since any other last moved is skipped: its values were all looked at with the others as
   they are, and none was faster than a best that has only fallen since;
2. when no single parameter improves: every pair of coupled parameters (two that one
   constraint reads, :func:`coupled_pairs`), each moved one step up or down its domain (the
   moves that keep a product fixed, e.g. ``mDim``/``nDim`` or a larger tile with fewer
   buffers, which a constraint ties together; two parameters no constraint ties can each
   move alone, which step 1 looks at); the best strictly faster is taken, then back to 1.

Every configuration looked at counts towards :data:`MAX_EVALS`, so the host time is bounded;
when the budget runs out, the best move found so far is kept. Each step only ever accepts a
faster valid configuration, so the result is never slower than the pick it started from (nor,
therefore, than the fallback). Python (:func:`refine`) and C++ (the template's ``Refine``) look at
the same configurations in the same order and count the same, so they agree bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ascend_tune.base.errors import SpecError
from ascend_tune.emit.walk import _param_reads
from ascend_tune.spec import OperatorSpec

# Configurations one refinement may look at: 256 takes every example family to a mean within
# 1.05x of the shape's optimum (128: batch_matmul 1.06x) at tens of microseconds of C++, once
# per shape (the emitted per-shape cache keeps the answer). A project that wants less host time
# compiles with -DASCEND_TUNE_REFINE_EVALS=<n> and asks ``api.select(..., refine_evals=n)``.
MAX_EVALS = 256

# Latencies of several configurations (values in parameter order), inf where invalid.
Scores = Callable[[Sequence[Sequence[int]]], Sequence[float]]

# Pair moves, in order: (step of the first parameter, step of the second).
PAIR_STEPS = ((-1, -1), (-1, 1), (1, -1), (1, 1))


def coupled_pairs(spec: OperatorSpec) -> list[tuple[int, int]]:
    """Pairs ``(i, j)``, ``i < j``, of parameters some constraint reads both of (directly or
    through derived values), in the order the pair moves try them."""
    reads = _param_reads(spec)
    position = {p: i for i, p in enumerate(spec.params)}
    pairs: set[tuple[int, int]] = set()
    for _name, e in spec.constraints:
        read = sorted(position[p] for p in reads(e))
        pairs.update((a, b) for k, a in enumerate(read) for b in read[k + 1:])
    return sorted(pairs)


def domains(spec: OperatorSpec, env: Mapping[str, Any], shape: Mapping[str, int]
            ) -> list[list[int]] | None:
    """Each parameter's domain for this shape, ascending; None where one is empty or bad (the
    refinement is then skipped, as in C++)."""
    local = {**env, **shape}
    try:
        return [[int(v) for v in spec.domains[p].values(local)] for p in spec.params]
    except (SpecError, ArithmeticError, ValueError, OverflowError):
        return None


def neighbour(domain: Sequence[int], value: int, step: int) -> int | None:
    """The next domain value above ``value`` (step 1) or below it (step -1), if any."""
    if step > 0:
        return next((v for v in domain if v > value), None)
    return next((v for v in reversed(domain) if v < value), None)


def refine(spec: OperatorSpec, env: Mapping[str, Any], shape: Mapping[str, int],
           start: Mapping[str, int], start_us: float, score: Callable[[Sequence[int]], float],
           max_evals: int = MAX_EVALS, scores: Scores | None = None
           ) -> tuple[dict[str, int], float] | None:
    """A strictly faster configuration than ``start`` (latency ``start_us``) and its latency,
    or None. ``score`` gives a configuration's latency in parameter order, inf if it is
    invalid on this shape; ``env`` holds the profile constants with the platform's cores;
    at most ``max_evals`` configurations are looked at (the C++ macro
    ``ASCEND_TUNE_REFINE_EVALS``, default :data:`MAX_EVALS`; 0 turns the descent off).
    ``scores``, if given, is ``score`` of several configurations at once (the same values,
    in order): each step's configurations are all known before any is scored, so they are
    scored in one call, then taken in the order the C++ takes them."""
    doms = domains(spec, env, shape)
    if doms is None:
        return None

    def batch(configs: list[list[int]]) -> Sequence[float]:
        if scores is None or not configs:
            return [score(c) for c in configs]
        return scores(configs)

    cur = [int(start[p]) for p in spec.params]
    best = start_us
    evals = 0
    changed = spent = False
    swept = [False] * len(doms)  # swept since any other parameter last moved
    pairs = coupled_pairs(spec)
    while not spent:
        improved = False
        for j, dom in enumerate(doms):
            if swept[j]:
                continue
            swept[j] = True
            was = cur[j]
            pick: int | None = None
            values = [v for v in dom if v != was]
            if len(values) > max_evals - evals:  # the value past the budget ends the descent
                values = values[:max_evals - evals]
                spent = True
            evals += len(values)
            trials = [[*cur[:j], v, *cur[j + 1:]] for v in values]
            for v, us in zip(values, batch(trials), strict=True):
                if us < best:
                    best, pick = us, v
            cur[j] = was if pick is None else pick
            if pick is not None:
                improved = True
                swept = [k == j for k in range(len(doms))]
            if spent:
                break
        changed = changed or improved
        if improved or spent:
            continue
        moved: list[int] | None = None
        moves: list[list[int]] = []
        for i, j in pairs:
            for di, dj in PAIR_STEPS:
                a, b = neighbour(doms[i], cur[i], di), neighbour(doms[j], cur[j], dj)
                if a is None or b is None:
                    continue
                if evals >= max_evals:
                    spent = True
                    break
                evals += 1
                trial = list(cur)
                trial[i], trial[j] = a, b
                moves.append(trial)
            if spent:
                break
        for trial, us in zip(moves, batch(moves), strict=True):
            if us < best:
                best, moved = us, trial
        if moved is None:
            break
        cur, changed = moved, True
        swept = [False] * len(doms)
    if not changed:
        return None
    return dict(zip(spec.params, cur, strict=True)), best
