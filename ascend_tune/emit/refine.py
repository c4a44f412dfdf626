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
   move alone, which step 1 looks at); the best strictly faster is taken, then back to 1;
3. when no pair improves either: the core split re-balanced jointly (:func:`split_group`, a
   constraint ``p1 * p2 * p3 ... <= bound`` over three or more parameters, at least three of
   them with a choice on this shape): every combination of their domains, the others kept,
   whose product fits the bound and which no single one of them can grow in (the splits that
   fill the cores; 47 for batch_matmul's mDim x nDim x bDim on 48 issuers). A batch that
   changes moves the best split along three parameters at once (B=41: mDim 4->1, nDim 4->8,
   bDim 2->5), which no one- or two-parameter step reaches; the best strictly faster is
   taken, then back to 1.

Every configuration looked at counts towards :data:`MAX_EVALS`, so the host time is bounded;
when the budget runs out, the best move found so far is kept. Each step only ever accepts a
faster valid configuration, so the result is never slower than the pick it started from (nor,
therefore, than the fallback). Python (:func:`refine`) and C++ (the template's ``Refine``) look at
the same configurations in the same order and count the same, so they agree bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ascend_tune.base.errors import SpecError
from ascend_tune.emit.walk import _param_reads
from ascend_tune.expr.arith import Kind
from ascend_tune.expr.nodes import Binary, Compare, Node, Var
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


# Core limits a split group's bound may name directly (else a derived value of the model).
HW_CORES = ("hw.cube_cores", "hw.vector_cores")


def _factors(node: Node) -> list[str] | None:
    """The names of a product of plain names, or None if ``node`` is anything else."""
    if isinstance(node, Var):
        return [node.name]
    if isinstance(node, Binary) and node.op == "*":
        left, right = _factors(node.left), _factors(node.right)
        return None if left is None or right is None else left + right
    return None


def _single(spec: OperatorSpec, param: str) -> bool:
    """Whether the parameter's domain is one value on every shape (a one-entry list)."""
    domain = spec.domains[param]
    return domain.kind == "values" and len(domain.exprs) == 1


def split_group(spec: OperatorSpec) -> tuple[tuple[int, ...], str] | None:
    """The core split the joint move re-balances: parameter positions (in the constraint's
    order) and the bound's name, from the first constraint ``p1 * p2 * ... <= bound`` over
    three or more distinct parameters, three of them with a domain that can hold more than
    one value (matmul's kDim is ``values: [1]``, so its mDim * nDim * kDim is no such split),
    whose bound is a derived value of the model or a core count (``hw.cube_cores`` /
    ``hw.vector_cores``); None if no constraint is one."""
    position = {p: i for i, p in enumerate(spec.params)}
    derived = {n for n, d in spec.model_derive if d.kind is Kind.INT}
    for _name, e in spec.constraints:
        root = e.root
        if not (isinstance(root, Compare) and root.op == "<=" and isinstance(root.right, Var)):
            continue
        bound = root.right.name
        factors = _factors(root.left)
        if (bound in derived or bound in HW_CORES) and factors is not None \
                and len(factors) >= 3 and len(set(factors)) == len(factors) \
                and all(f in position for f in factors) \
                and sum(not _single(spec, f) for f in factors) >= 3:
            return tuple(position[f] for f in factors), bound
    return None


# Configurations the ranking may look at to re-split candidates that do not fit the shape
# (:func:`resplit`), over all candidates together, beside the descent's MAX_EVALS.
RESPLIT_EVALS = 256


def resplit_bound(spec: OperatorSpec) -> bool:
    """Whether candidates that fail on a shape are re-split (:func:`resplit`): the spec has a
    split group whose bound reads no parameter (a core count, or a value of the shape and
    profile alone such as ``issuerCores: hw.vector_cores``), so the bound is known for a
    configuration that fails its checks (the C++ ``Derive`` computes such a value before
    any check)."""
    group = split_group(spec)
    if group is None:
        return False
    bound = group[1]
    if bound in HW_CORES:
        return True
    expr = dict(spec.model_derive).get(bound)
    return expr is not None and not _param_reads(spec)(expr)


def resplit(doms: Sequence[Sequence[int]] | None, group: Sequence[int], config: Sequence[int],
            bound: int | None, left: int, score: Callable[[Sequence[int]], float]
            ) -> tuple[list[int] | None, float, int]:
    """A candidate that does not fit this shape with its core split re-split: the fastest
    valid of the joint move's configurations from it (:func:`splits`, in order, the first of
    equals), at most ``left`` of them looked at. Returns the configuration (None if no valid
    one), its latency and how many were looked at. A batch or group count the candidate was
    not tuned for leaves its tiles right and its split wrong (B=41: a bDim of 8 tuned for
    B=64 leaves empty groups), which the descent cannot mend from a candidate the ranking
    has already dropped."""
    if doms is None or bound is None or left <= 0:
        return None, float("inf"), 0
    trials = splits(doms, group, config, bound)[:left]
    best: list[int] | None = None
    best_us = float("inf")
    for trial in trials:
        us = score(trial)
        if us < best_us:
            best, best_us = trial, us
    return best, best_us, len(trials)


def split_cpp(spec: OperatorSpec, cpp_name: Callable[[str], str]) -> dict[str, Any] | None:
    """The template's view of :func:`split_group`: the positions and the C++ of the bound
    (a field of the ``Values`` that ``Derive`` fills for the current configuration, or the
    run-time core count)."""
    group = split_group(spec)
    if group is None:
        return None
    positions, bound = group
    cores = {"hw.cube_cores": "aicNum", "hw.vector_cores": "aivNum"}
    return {"group": list(positions),
            "bound": cores.get(bound) or f"derived.{cpp_name(bound)}",
            "resplit": resplit_bound(spec),
            # the bound as Select reads it after a candidate's Derive failed (a value
            # computed before any check: resplit_bound)
            "resplit_limit": cores.get(bound) or f"trial.{cpp_name(bound)}"}


def split_bound(spec: OperatorSpec, env: Mapping[str, Any], shape: Mapping[str, int],
                config: Sequence[int], bound: str) -> int | None:
    """The value of a split group's bound for ``config`` on this shape (the C++ reads the
    field its ``Derive`` filled), None if it is not an integer."""
    local: dict[str, Any] = {**env, **shape, **dict(zip(spec.params, config, strict=True))}
    if bound not in local:
        for name, e in spec.model_derive:
            try:
                local[name] = e.evaluate(local)
            except (SpecError, ArithmeticError, ValueError, OverflowError):
                return None
            if name == bound:
                break
    value = local.get(bound)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        return None
    return int(value)


def splits(doms: Sequence[Sequence[int]], group: Sequence[int], cur: Sequence[int],
           bound: int) -> list[list[int]]:
    """The joint move's configurations: ``cur`` with the group's values replaced by every
    combination (the first parameter slowest) whose product is at most ``bound`` and which
    no single one of them can grow in (its next domain value would exceed the bound),
    except ``cur``'s own; none unless three of the group have a choice and every value is
    positive."""
    gdoms = [doms[g] for g in group]
    if sum(len(d) > 1 for d in gdoms) < 3 or any(v < 1 for d in gdoms for v in d):
        return []
    out: list[list[int]] = []
    idx = [0] * len(group)
    while True:
        vals = [d[k] for d, k in zip(gdoms, idx, strict=True)]
        prod = 1
        for v in vals:  # stops past the bound, as the C++ does (no int64 overflow there)
            prod *= v
            if prod > bound:
                break
        if prod <= bound and vals != [cur[g] for g in group]:
            full = True
            for d, k, v in zip(gdoms, idx, vals, strict=True):
                if k + 1 < len(d) and prod // v * d[k + 1] <= bound:
                    full = False
                    break
            if full:
                trial = list(cur)
                for g, v in zip(group, vals, strict=True):
                    trial[g] = v
                out.append(trial)
        q = len(group) - 1
        while q >= 0 and idx[q] + 1 == len(gdoms[q]):
            idx[q] = 0
            q -= 1
        if q < 0:
            return out
        idx[q] += 1


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
    group = split_group(spec)
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
        if moved is None and not spent and group is not None:
            limit = split_bound(spec, env, shape, cur, group[1])
            joint = [] if limit is None else splits(doms, group[0], cur, limit)
            if len(joint) > max_evals - evals:
                joint = joint[:max_evals - evals]
                spent = True
            evals += len(joint)
            for trial, us in zip(joint, batch(joint), strict=True):
                if us < best:
                    best, moved = us, trial
        if moved is None:
            break
        cur, changed = moved, True
        swept = [False] * len(doms)
    if not changed:
        return None
    return dict(zip(spec.params, cur, strict=True)), best
