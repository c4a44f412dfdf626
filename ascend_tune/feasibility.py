"""The valid set of a shape's search space, enumerated with pruning.

Every constraint and launch check reads a few parameters (directly or through derived values).
Parameters are assigned one at a time, in an order that lets checks decide early; after each
step, every check whose parameters are now all assigned runs on the partial assignments
(vectorised) and the failing prefixes are dropped with everything below them. What is left at
the end is exactly the valid set, found without visiting the invalid bulk of the product space.

The model is not involved: this costs expression evaluations on prefixes only, so counting the
valid set is cheap where it is small enough to matter (``auto`` picks exhaustive search by this
count, not by the raw product size).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ascend_tune import launch
from ascend_tune.expr import Expr
from ascend_tune.spec import OperatorSpec


class TooMany(Exception):
    """The valid prefixes outgrew the cap: the valid set is too large to enumerate."""


def _param_deps(spec: OperatorSpec) -> dict[str, frozenset[str]]:
    """For every derived value, the parameters it reads (through other derived values)."""
    params = set(spec.params)
    deps: dict[str, frozenset[str]] = {}
    for name, e in spec.derive:
        deps[name] = _reads(e, params, deps)
    return deps


def _reads(e: Expr, params: set[str], deps: Mapping[str, frozenset[str]]) -> frozenset[str]:
    out: set[str] = set()
    for n in e.names:
        if n in params:
            out.add(n)
        elif n in deps:
            out |= deps[n]
    return frozenset(out)


class Enumerator:
    """Enumerate the valid configurations of ``spec`` on one shape.

    ``grids[j]`` holds parameter j's domain values; ``base_env`` the profile, sizeof and shape
    names; ``cores`` the chip's core counts for the launch checks.
    """

    def __init__(self, spec: OperatorSpec, base_env: Mapping[str, Any],
                 grids: Sequence[np.ndarray], cores: Mapping[str, Any]) -> None:
        self.spec = spec
        self.base_env = dict(base_env)
        self.grids = [np.asarray(g, dtype=np.int64) for g in grids]
        params = set(spec.params)
        self._deps = _param_deps(spec)
        every = [launch.Check(n, e, boolean=True) for n, e in spec.constraints]
        every += launch.checks(spec, cores)
        checks = [(c, _reads(c.expr, params, self._deps)) for c in every]
        self.order = self._choose_order(checks)
        position = {p: i for i, p in enumerate(self.order)}
        # Checks that read no parameter run at the first step (they can only reject all).
        self._at: list[list[launch.Check]] = [[] for _ in self.order]
        for check, reads in checks:
            step = max((position[p] for p in reads), default=0)
            self._at[step].append(check)

    def _choose_order(self, checks: Sequence[tuple[launch.Check, frozenset[str]]]) -> list[str]:
        """The assignment order that minimises the expected total number of prefixes.

        Each check's pass rate is estimated on random full configurations; the expected
        log-count of prefixes after assigning a set S of parameters is the sum of their log
        domain sizes plus the log pass rates of the checks S decides. A dynamic programme over
        all subsets (vectorised; specs have at most a couple of dozen parameters) finds the
        order whose prefix counts summed over the steps are smallest: free parameters go last,
        strongly pruning groups (core splits) early."""
        params = list(self.spec.params)
        n_params = len(params)
        if n_params > 18:  # 2**18 subsets: beyond that keep the spec's order
            return params
        rates = self._pass_rates([c for c, _r in checks])
        logs = np.array([np.log(max(g.size, 1)) for g in self.grids])
        subsets = np.arange(1 << n_params, dtype=np.int64)
        bits = ((subsets[:, None] >> np.arange(n_params)) & 1).astype(bool)
        log_count = bits.astype(np.float64) @ logs
        for (_check, reads), rate in zip(checks, rates, strict=True):
            if not reads:
                continue
            mask = sum(1 << params.index(p) for p in reads)
            log_count += np.where((subsets & mask) == mask, np.log(rate), 0.0)
        count = np.exp(np.minimum(log_count, 700.0))
        best = np.full(subsets.size, np.inf)
        best[0] = 0.0
        popcount = bits.sum(axis=1)
        for size in range(1, n_params + 1):  # a subset's best needs only smaller subsets
            layer = subsets[popcount == size]
            lbits = bits[layer]
            prev = np.full(layer.size, np.inf)
            for j in range(n_params):
                prev = np.minimum(prev, np.where(lbits[:, j], best[layer ^ (1 << j)], np.inf))
            best[layer] = prev + count[layer]
        order: list[str] = []
        state = (1 << n_params) - 1
        while state:
            j = min((j for j in range(n_params) if state >> j & 1),
                    key=lambda j: (best[state ^ (1 << j)], j))
            order.append(params[j])
            state ^= 1 << j
        return order[::-1]

    def _pass_rates(self, checks: Sequence[launch.Check], samples: int = 2048) -> list[float]:
        rng = np.random.default_rng(0)
        env = dict(self.base_env)
        for p, g in zip(self.spec.params, self.grids, strict=True):
            env[p] = g[rng.integers(0, g.size, samples)]
        for name, e in self.spec.derive:
            env[name] = e.evaluate(env)
        floor = 0.5 / samples
        return [max(float(np.mean(self._passes(c, env, samples))), floor) for c in checks]

    @staticmethod
    def _passes(check: launch.Check, env: Mapping[str, Any], n: int) -> np.ndarray:
        return np.broadcast_to(check.passes(env), (n,))

    def _env(self, prefix: np.ndarray, k: int) -> dict[str, Any]:
        env = dict(self.base_env)
        assigned = set(self.order[:k])
        for j, p in enumerate(self.order[:k]):
            env[p] = prefix[:, j]
        for name, e in self.spec.derive:
            if self._deps[name] <= assigned:
                env[name] = e.evaluate(env)
        return env

    def _keep(self, prefix: np.ndarray, k: int) -> np.ndarray:
        n = prefix.shape[0]
        keep = np.ones(n, dtype=bool)
        if not self._at[k - 1]:
            return keep
        env = self._env(prefix, k)
        for check in self._at[k - 1]:
            keep &= self._passes(check, env, n)
        return keep

    def values(self, cap: int = 5_000_000) -> np.ndarray:
        """Every valid configuration as parameter values (n, params) in spec order, sorted;
        raises :class:`TooMany` when more than ``cap`` prefixes survive a step."""
        prefix = np.zeros((1, 0), dtype=np.int64)
        index = {p: i for i, p in enumerate(self.spec.params)}
        for k, p in enumerate(self.order, start=1):
            grid = self.grids[index[p]]
            if prefix.shape[0] * grid.size > cap:
                raise TooMany(prefix.shape[0] * grid.size)
            prefix = np.concatenate([np.repeat(prefix, grid.size, axis=0),
                                     np.tile(grid, prefix.shape[0])[:, None]], axis=1)
            prefix = prefix[self._keep(prefix, k)]
            if prefix.shape[0] == 0:
                break
        out = np.empty((prefix.shape[0], len(self.spec.params)), dtype=np.int64)
        for j, p in enumerate(self.order[:prefix.shape[1]]):
            out[:, index[p]] = prefix[:, j]
        if prefix.shape[1] < len(self.spec.params):
            return out[:0]
        return out[np.lexsort(out.T[::-1])]


def valid_indices(model: Any, cap: int = 5_000_000) -> np.ndarray:
    """The valid set of a :class:`~ascend_tune.engine.ShapeModel` as index genomes."""
    hw = model.hw
    enum = Enumerator(model.spec, model.base_env, model.grids,
                      {"cube": hw["cube_cores"], "vector": hw["vector_cores"]})
    vals = enum.values(cap)
    idx = np.empty_like(vals)
    for j, g in enumerate(model.grids):
        idx[:, j] = np.searchsorted(g, vals[:, j])
    return idx
