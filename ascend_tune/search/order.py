"""The order in which the enumeration of the valid set assigns parameters.

Owns which parameters each check reads (directly or through derived values) and the
assignment order chosen from that and the checks' pass rates: a dynamic programme over the
subsets of parameters that minimises the expected number of prefixes summed over the steps,
the same on every machine. :class:`~ascend_tune.search.space.Enumerator` walks the order;
:class:`~ascend_tune.search.space.CheckSet` hands it to the proposals built inside the valid
set (:mod:`ascend_tune.search.construct`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ascend_tune.expr import Expr
from ascend_tune.spec import OperatorSpec

# Beyond this many parameters (2**18 subsets) the spec's own order is kept.
MAX_ORDERED_PARAMS = 18

# Expected prefix counts above e^27 (~5e11) count as e^27: x 64 x at most 18 steps, every
# sum the DP forms stays an exact integer below 2^53.
_LOG_COUNT_CAP = 27.0


def param_deps(spec: OperatorSpec) -> dict[str, frozenset[str]]:
    """For every derived value, the parameters it reads (through other derived values)."""
    params = set(spec.params)
    deps: dict[str, frozenset[str]] = {}
    for name, e in spec.derive:
        deps[name] = params_read(e, params, deps)
    return deps


def params_read(e: Expr, params: set[str], deps: Mapping[str, frozenset[str]]) -> frozenset[str]:
    """The parameters ``e`` reads, directly or through the derived values of ``deps``
    (:func:`param_deps`)."""
    out: set[str] = set()
    for n in e.names:
        if n in params:
            out.add(n)
        elif n in deps:
            out |= deps[n]
    return frozenset(out)


@functools.lru_cache(maxsize=8)
def _subset_lattice(n: int) -> tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """The subsets of ``n`` parameters as numbers, their membership as 0.0/1.0 (weights of
    the parameters' log domain sizes), and per size k = 1..n the subsets of that size with,
    for each, its k subsets one parameter smaller (a row of predecessors, in ascending
    parameter order): the same for every shape of a spec."""
    subsets = np.arange(1 << n, dtype=np.int64)
    bits = ((subsets[:, None] >> np.arange(n)) & 1).astype(bool)
    popcount = bits.sum(axis=1)
    layers = []
    for size in range(1, n + 1):
        layer = subsets[popcount == size]
        members = np.nonzero(bits[layer])[1].reshape(layer.size, size)
        layers.append((layer, layer[:, None] ^ (1 << members)))
    return subsets, bits.astype(np.float64), layers


@functools.lru_cache(maxsize=256)
def _supersets(n: int, mask: int) -> np.ndarray:
    """Which subsets of ``n`` parameters contain every parameter of ``mask`` (the subsets
    that decide a check reading those parameters)."""
    subsets = _subset_lattice(n)[0]
    out: np.ndarray = (subsets & mask) == mask
    return out


def assignment_order(params: Sequence[str], grids: Sequence[np.ndarray],
                     check_reads: Sequence[frozenset[str]],
                     pass_rates: Callable[[], Sequence[float]]) -> list[str]:
    """The assignment order that minimises the expected total number of prefixes.

    ``check_reads``: the parameters each check reads; ``pass_rates``: each check's pass rate
    estimated on random full configurations (asked only where the order is chosen). The
    expected log-count of prefixes after assigning a set S of parameters is the sum of their
    log domain sizes plus the log pass rates of the checks S decides. A dynamic programme over
    all subsets (vectorised; specs have at most a couple of dozen parameters) finds the order
    whose prefix counts summed over the steps are smallest: free parameters go last, strongly
    pruning groups (core splits) early."""
    params = list(params)
    n_params = len(params)
    if n_params > MAX_ORDERED_PARAMS:
        return params
    rates = pass_rates()
    subsets, bits, layers = _subset_lattice(n_params)
    # The same order on every machine. Many orders cost nearly the same, so the choice
    # must not hang on the last bits of a float: the log-counts are summed elementwise
    # in parameter order (a BLAS product sums in an order its CPU-specific kernel picks:
    # OpenBLAS's Sandybridge and Haswell kernels gave other orders for 37 of 148
    # spec/shape cases), and each expected count is rounded to a 64th of a prefix, so
    # the DP adds and compares exact integers and near-equal orders tie, the lower
    # parameter first.
    log_count = np.zeros(subsets.size)
    for j, g in enumerate(grids):
        log_count += bits[:, j] * math.log(max(g.size, 1))
    for read, rate in zip(check_reads, rates, strict=True):
        if not read:
            continue
        mask = sum(1 << params.index(p) for p in read)
        log_count += np.where(_supersets(n_params, mask), math.log(rate), 0.0)
    count = np.rint(np.exp(np.minimum(log_count, _LOG_COUNT_CAP)) * 64.0)
    best = np.full(subsets.size, np.inf)
    best[0] = 0.0
    for layer, below in layers:  # a subset's best needs only smaller subsets
        best[layer] = best[below].min(axis=1) + count[layer]
    order: list[str] = []
    state = (1 << n_params) - 1
    while state:
        j = min((j for j in range(n_params) if state >> j & 1),
                key=lambda j: (best[state ^ (1 << j)], j))
        order.append(params[j])
        state ^= 1 << j
    return order[::-1]
