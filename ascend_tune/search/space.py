"""The valid set of a shape's search space, enumerated with pruning.

Every constraint and launch check reads a few parameters (directly or through derived values).
Parameters are assigned one at a time, in an order that lets checks decide early; after each
step, every check whose parameters are now all assigned runs on the partial assignments
(vectorised) and the failing prefixes are dropped with everything below them. What is left at
the end is exactly the valid set, found without visiting the invalid bulk of the product space.

The model is not involved: this costs expression evaluations on prefixes only, so counting the
valid set is cheap where it is small enough to matter (``auto`` picks exhaustive search by this
count, not by the raw product size). What the search reads of a shape model is named by
:class:`SearchableModel`; the assignment order is :mod:`ascend_tune.search.order`'s.
"""

from __future__ import annotations

import contextlib
import functools
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from ascend_tune import expr as expr_mod
from ascend_tune.model.fastpaths import kernel as row_kernel
from ascend_tune.model.fastpaths.tables import MAX_TABLE_ENTRIES, CheckTables
from ascend_tune.search.order import assignment_order, param_deps, params_read
from ascend_tune.spec import OperatorSpec, launch, needed_derived

# New rows at or below which CheckSet.passes runs the row kernel (~10 us a row) rather than
# one vectorised call (~0.5 ms): benchmarks/model_speed.py --small.
CHECK_KERNEL_MAX_ROWS = 96
_MEMO_ROWS = 500_000  # configurations whose checks CheckSet.passes remembers


def radix(sizes: Sequence[int] | np.ndarray) -> np.ndarray | None:
    """Weights that number index genomes in the product space (last gene fastest:
    ``genomes @ radix``), or None where the space's size does not fit well inside int64."""
    sizes = np.asarray(sizes, dtype=np.int64)
    if math.prod(int(x) for x in sizes) >= 2**62:
        return None
    out: np.ndarray = np.concatenate([[1], np.cumprod(sizes[::-1])[:-1]])[::-1].astype(np.int64)
    return out


def genome_keys(sizes: Sequence[int] | np.ndarray) -> Callable[[np.ndarray], list[Any]]:
    """Hashable keys of index genomes: each row's number in the product space (one matrix
    product for the batch, :func:`radix`) where that fits in int64, else the row's bytes."""
    weights = radix(sizes)
    if weights is None:
        return lambda genomes: [row.tobytes() for row in genomes]
    return lambda genomes: (genomes @ weights).tolist()  # type: ignore[no-any-return]


class SearchableModel(Protocol):
    """What the search reads of a shape model, and all of it
    (:class:`~ascend_tune.model.engine.ShapeModel` is one): the spec, the names the shape
    binds, the parameter domains, the launch checks of the spec on the chip and two facts the
    model proved about this shape's space. The search scores configurations only through the
    objective a :class:`~ascend_tune.search.problem.Problem` is given."""

    @property
    def spec(self) -> OperatorSpec: ...

    @property
    def base_env(self) -> Mapping[str, Any]:
        """The profile (``hw.*``), sizeof and shape names with their values."""

    @property
    def grids(self) -> Sequence[np.ndarray]:
        """Each parameter's domain values (ascending), in spec order."""

    @property
    def launch_rules(self) -> launch.LaunchRules:
        """The launch checks of the spec on the chip (:func:`launch.rules`)."""

    @property
    def launch_in_space(self) -> Sequence[launch.Check | None]:
        """``launch_rules.checks`` with None for each check interval arithmetic proves to
        pass everywhere in the domains (:meth:`launch.LaunchRules.to_run`)."""

    @property
    def space_proven(self) -> bool:
        """Every expression of the spec is proven free of int64 overflow over the whole
        space: checks may be evaluated on the unchecked fast path."""


class TooMany(Exception):
    """The valid prefixes outgrew the cap: the valid set is too large to enumerate."""


def _all_checks(spec: OperatorSpec, base_env: Mapping[str, Any], grids: Sequence[np.ndarray],
                rules: launch.LaunchRules,
                launch_checks: Sequence[launch.Check | None] | None = None
                ) -> list[launch.Check]:
    """The spec's constraints and the launch checks, without the launch checks interval
    arithmetic proves for every configuration of these domains (most C-type ranges);
    ``launch_checks``: that proof already made (:meth:`launch.LaunchRules.to_run` over these
    domains, None for each proven check)."""
    every = [launch.Check(n, e, boolean=True) for n, e in spec.constraints]
    if launch_checks is None:
        spans = {k: expr_mod.value_span(v) for k, v in base_env.items()}
        spans.update({p: expr_mod.outer_span(int(g.min()), int(g.max())) if g.size else (0, 0)
                      for p, g in zip(spec.params, grids, strict=True)})
        launch_checks = rules.to_run(spans)
    return every + [c for c in launch_checks if c is not None]


# Random full configurations behind the pass-rate estimates (the assignment order, the
# valid-set size estimate).
_SAMPLES = 2048


class Enumerator:
    """Enumerate the valid configurations of ``spec`` on one shape.

    ``grids[j]`` holds parameter j's domain values; ``base_env`` the profile, sizeof and shape
    names; ``rules`` the launch checks of the spec on the chip.
    """

    def __init__(self, spec: OperatorSpec, base_env: Mapping[str, Any],
                 grids: Sequence[np.ndarray], rules: launch.LaunchRules,
                 proven: bool = False,
                 launch_checks: Sequence[launch.Check | None] | None = None) -> None:
        self.spec = spec
        # Every expression is proven free of int64 overflow over these domains: evaluate on
        # the unchecked fast path (no per-array min/max).
        self.proven = proven
        self.base_env = dict(base_env)
        self.grids = [np.asarray(g, dtype=np.int64) for g in grids]
        params = set(spec.params)
        self._deps = param_deps(spec)
        every = _all_checks(spec, base_env, self.grids, rules, launch_checks)
        checks = self.checks = [(c, params_read(c.expr, params, self._deps)) for c in every]
        self._sample_passes: list[np.ndarray] | None = None
        # The order that decides checks early (search.order), from their sampled pass rates.
        self.order = assignment_order(spec.params, self.grids, [r for _c, r in checks],
                                      self._pass_rates)
        self._index = {p: i for i, p in enumerate(spec.params)}
        position = {p: i for i, p in enumerate(self.order)}
        # Checks that read no parameter run at the first step (they can only reject all).
        self._at: list[list[launch.Check]] = [[] for _ in self.order]
        # The assigned parameters (positions in the order) each step's checks read.
        read_at: list[set[int]] = [set() for _ in self.order]
        for check, reads in checks:
            step = max((position[p] for p in reads), default=0)
            self._at[step].append(check)
            read_at[step].update(position[p] for p in reads)
        self._read_at = [sorted(r) for r in read_at]
        # The derived values each step's checks need (transitively), in derive order: a step
        # computes those only, not every derived value its parameters happen to determine.
        self._derive_at = [needed_derived(spec, [c.expr for c in at]) for at in self._at]

    def _pass_rates(self) -> list[float]:
        """Each check's pass rate on random full configurations (floored: a rate feeds a
        logarithm)."""
        floor = 0.5 / _SAMPLES
        return [max(float(np.mean(p)), floor) for p in self._sampled()]

    def estimated_valid(self) -> float:
        """The valid set's size estimated from the random configurations that pass every
        check (0.0 when none of them does): cheap, rough, for choosing what to count."""
        sampled = self._sampled()
        joint = np.logical_and.reduce(sampled) if sampled else np.ones(_SAMPLES, dtype=bool)
        space = float(np.prod([float(g.size) for g in self.grids]))
        return space * float(np.mean(joint))

    def _sampled(self) -> list[np.ndarray]:
        """Each check's outcome on the same ``_SAMPLES`` random full configurations (fixed
        seed), computed once."""
        if self._sample_passes is None:
            rng = np.random.default_rng(0)
            env = dict(self.base_env)
            for p, g in zip(self.spec.params, self.grids, strict=True):
                env[p] = g[rng.integers(0, g.size, _SAMPLES)]
            for name, e in self.spec.derive:
                env[name] = e.evaluate(env)
            self._sample_passes = [self._passes(c, env, _SAMPLES) for c, _r in self.checks]
        return self._sample_passes

    @staticmethod
    def _passes(check: launch.Check, env: Mapping[str, Any], n: int) -> np.ndarray:
        return np.broadcast_to(check.passes(env), (n,))

    def _keep(self, prefix: Sequence[np.ndarray], n: int, size: int,
              k: int) -> np.ndarray | None:
        """(n, size): which extensions of the ``n`` prefixes by each of the k-th parameter's
        ``size`` values pass the checks the k-th step decides (None: no check is decided
        here, all do). The checks see each prefix's values as a column and the new values as
        a row, broadcast: nothing is gathered per candidate, and only the parameters and
        derived values those checks read are computed."""
        if not self._at[k - 1]:
            return None
        env = dict(self.base_env)
        for j in self._read_at[k - 1]:
            p = self.order[j]
            g = self.grids[self._index[p]]
            env[p] = g[None, :] if j == k - 1 else g[prefix[j]][:, None]
        keep = np.ones((n, size), dtype=bool)
        with expr_mod.unchecked() if self.proven else contextlib.nullcontext():
            for name, e in self._derive_at[k - 1]:
                env[name] = e.evaluate(env)
            for check in self._at[k - 1]:
                keep &= np.broadcast_to(check.passes(env), (n, size))
        return keep

    def indices(self, cap: int = 5_000_000) -> np.ndarray:
        """Every valid configuration as index genomes (n, params) in spec order, sorted;
        raises :class:`TooMany` when more than ``cap`` candidate prefixes arise at a step."""
        prefix: list[np.ndarray] = []
        for k, p in enumerate(self.order, start=1):
            rows = prefix[0].size if prefix else 1
            if rows * self.grids[self._index[p]].size > cap:
                raise TooMany(rows * self.grids[self._index[p]].size)
            prefix = self._step(prefix, k)
            if prefix[0].size == 0:
                break
        out = self._spec_order(prefix)
        weights = radix([g.size for g in self.grids])
        if weights is None:
            return out[np.lexsort(out.T[::-1])]
        # Sorted rows are sorted configuration numbers (each row's is unique): one integer
        # sort instead of a sort by every column in turn.
        return out[np.argsort(out @ weights)]

    def blocks(self, rows: int = 1_000_000) -> Iterator[np.ndarray]:
        """The valid set in blocks of index genomes (spec order), each built from at most
        ``rows`` candidate prefixes at a time: exact for any size, in bounded memory (depth
        first)."""
        yield from self._blocks([], 1, rows)

    def _blocks(self, prefix: list[np.ndarray], k: int, rows: int) -> Iterator[np.ndarray]:
        if k > len(self.order):
            if prefix and prefix[0].size:
                yield self._spec_order(prefix)
            return
        size = self.grids[self._index[self.order[k - 1]]].size
        chunk = max(rows // max(size, 1), 1)
        n = prefix[0].size if prefix else 1
        for start in range(0, n, chunk):
            part = self._step([c[start:start + chunk] for c in prefix], k)
            if part[0].size:
                yield from self._blocks(part, k + 1, rows)

    def _step(self, prefix: list[np.ndarray], k: int) -> list[np.ndarray]:
        """Extend every prefix (one index column per assigned parameter) by each value of
        the k-th parameter and keep the feasible ones; the prefix columns are gathered for
        the survivors only."""
        size = self.grids[self._index[self.order[k - 1]]].size
        n = prefix[0].size if prefix else 1
        keep = self._keep(prefix, n, size, k)
        # Index columns as narrow as the domain allows: the enumeration of millions of
        # prefixes is memory traffic (int64 columns took 40 % more on BatchMatmul B=32).
        dtype = _index_dtype(size)
        if keep is None:  # every extension is kept: repeat the prefixes, no gather
            return [np.repeat(c, size) for c in prefix] + [
                np.tile(np.arange(size, dtype=dtype), n)]
        parent, value = np.nonzero(keep)  # prefix-major, values ascending
        return [c[parent] for c in prefix] + [value.astype(dtype)]

    def _spec_order(self, prefix: Sequence[np.ndarray]) -> np.ndarray:
        """The prefix columns as genomes in spec order: column-major, so each column is one
        contiguous write here and one contiguous read where the model gathers a parameter's
        values (a row-major array took a strided pass per column: 1.8 s of 16 on BatchMatmul
        with 14 M valid configurations)."""
        out = np.empty((len(self.spec.params), prefix[0].size if prefix else 0), dtype=np.int64)
        genomes: np.ndarray = out.T
        if len(prefix) < len(self.spec.params):
            return genomes[:0]
        for j, p in enumerate(self.order):
            out[self._index[p]] = prefix[j]
        return genomes


def _index_dtype(size: int) -> type[np.integer[Any]]:
    """The narrowest integer type that holds the indices of a domain of ``size`` values."""
    if size <= 1 << 8:
        return np.uint8
    return np.int16 if size < 1 << 15 else np.int64


class CheckSet:
    """The checks of one shape seen from index genomes, for proposals built inside the valid
    set (:mod:`ascend_tune.search.construct`): which genes each check reads, the
    assignment order that decides checks early, and the checks evaluated on chosen rows."""

    def __init__(self, enum: Enumerator, proven: bool = False,
                 max_table_entries: int = MAX_TABLE_ENTRIES) -> None:
        spec = self.spec = enum.spec
        self._max_table_entries = max_table_entries
        self.base_env = enum.base_env
        self.grids = enum.grids
        # Every expression is proven free of int64 overflow over these domains.
        self._proven = proven
        params = list(spec.params)
        self.checks = [c for c, _r in enum.checks]
        self.reads = np.zeros((len(self.checks), len(params)), dtype=bool)
        for i, (_c, reads) in enumerate(enum.checks):
            for p in reads:
                self.reads[i, params.index(p)] = True
        self.order: Sequence[int] = [params.index(p) for p in enum.order]
        self.pairs: Sequence[tuple[int, int]] = mirror_pairs(params, self.grids)

    @functools.cached_property
    def _tables(self) -> CheckTables | None:
        """The checks tabled over the genes each reads (:mod:`ascend_tune.model.fastpaths.tables`):
        only where every expression is proven free of int64 overflow."""
        if not self._proven:
            return None
        return CheckTables(self.spec, self.base_env, self.grids, self.checks, self.reads,
                           self._max_table_entries)

    @functools.cached_property
    def _untabled(self) -> list[int]:
        """The checks no table covers (computed per row by the kernel, or by numpy)."""
        tables = self._tables
        return [i for i in range(len(self.checks)) if tables is None or not tables.covers(i)]

    @functools.cached_property
    def _row_checks(self) -> Callable[..., bytes] | None:
        """The untabled checks on one configuration
        (:mod:`ascend_tune.model.fastpaths.kernel`): only where every expression is proven
        free of int64 overflow, as the unchecked numpy path is."""
        if not self._proven or not self._untabled:
            return None
        return row_kernel.checks_function(self.spec, self.base_env, self.grids,
                                          [self.checks[i] for i in self._untabled])

    def passes(self, genomes: np.ndarray, which: Sequence[int]) -> np.ndarray:
        """(rows, len(which)) booleans: does each row pass each chosen check. Tabled checks
        are read off their tables; the others are computed (:meth:`_computed`)."""
        genomes = np.asarray(genomes, dtype=np.int64)
        which = list(which)
        tables = self._tables
        if tables is None:
            return self._computed(genomes, which)
        if not self._untabled:  # the usual case: every check tabled
            return tables.passes(genomes, which)
        tabled = [c for c, i in enumerate(which) if tables.covers(i)]
        if len(tabled) == len(which):
            return tables.passes(genomes, which)
        out = np.empty((genomes.shape[0], len(which)), dtype=bool)
        rest = [c for c, i in enumerate(which) if not tables.covers(i)]
        if tabled:
            out[:, tabled] = tables.passes(genomes, [which[c] for c in tabled])
        out[:, rest] = self._computed(genomes, [which[c] for c in rest])
        return out

    def _computed(self, genomes: np.ndarray, which: list[int]) -> np.ndarray:
        """:meth:`passes` for untabled checks. Where the row kernel applies, each
        configuration's untabled checks are computed once, all of them, and remembered: a
        search asks about the same rows again and again (a repair re-checks its candidates,
        neighbourhoods overlap). New rows go through the kernel when few, else through one
        vectorised call."""
        fn = self._row_checks
        if fn is None:
            return self.passes_vectorised(genomes, which)
        untabled = self._untabled
        memo = self._memo
        if len(memo) > _MEMO_ROWS:
            memo.clear()
        keys = self._keys(genomes)
        first: dict[Any, int] = {}  # each new configuration's first row
        for i in [i for i, k in enumerate(keys) if k not in memo]:
            first.setdefault(keys[i], i)
        new = genomes[list(first.values())]
        if len(first) > CHECK_KERNEL_MAX_ROWS:
            every = self.passes_vectorised(new, untabled)
            memo.update(zip(first, map(bytes, every.view(np.uint8)), strict=True))
        else:
            for k, row in zip(first, new.tolist(), strict=True):
                try:
                    memo[k] = fn(*row)
                except row_kernel.ROW_ERRORS:  # numpy's inf or nan where Python raises
                    every = self.passes_vectorised(np.array([row]), untabled)
                    memo[k] = every[0].view(np.uint8).tobytes()
        out = np.frombuffer(b"".join([memo[k] for k in keys]), dtype=bool).reshape(
            len(keys), len(untabled))
        if which == untabled:
            return out
        position = {c: j for j, c in enumerate(untabled)}
        return out[:, [position[i] for i in which]]

    @functools.cached_property
    def _memo(self) -> dict[Any, bytes]:
        return {}

    @functools.cached_property
    def _keys(self) -> Callable[[np.ndarray], list[Any]]:
        return genome_keys([g.size for g in self.grids])

    def passes_vectorised(self, genomes: np.ndarray, which: Sequence[int]) -> np.ndarray:
        """:meth:`passes` by the numpy evaluation (any number of rows)."""
        n = genomes.shape[0]
        env: dict[str, Any] = dict(self.base_env)
        for j, (p, g) in enumerate(zip(self.spec.params, self.grids, strict=True)):
            env[p] = g[genomes[:, j]]
        out = np.ones((n, len(which)), dtype=bool)
        with expr_mod.unchecked() if self._proven else contextlib.nullcontext():
            for name, e in needed_derived(self.spec, [self.checks[i].expr for i in which]):
                env[name] = e.evaluate(env)
            for col, i in enumerate(which):
                out[:, col] = self.checks[i].passes(env)  # a scalar broadcasts
        return out

# Letters whose swap mirrors a name: M/N (rows/columns of C), A/B (the two inputs).
_MIRROR = {"M": "N", "N": "M", "m": "n", "n": "m", "A": "B", "B": "A", "a": "b", "b": "a"}


def mirror_pairs(params: Sequence[str], grids: Sequence[np.ndarray]) -> list[tuple[int, int]]:
    """Pairs of genes that play mirrored roles (baseM/baseN, mDim/nDim, stepKa/stepKb,
    dbL0A/dbL0B): the names differ in one mirror letter at a word boundary (a capital, a
    lower-case letter before a capital or at the ends) and the domains are equal. Found from
    the names and domains of any spec, so a swap move needs no per-spec table."""
    out = []
    for i, a in enumerate(params):
        for j in range(i + 1, len(params)):
            b = params[j]
            if len(a) != len(b) or not np.array_equal(grids[i], grids[j]):
                continue
            diff = [k for k in range(len(a)) if a[k] != b[k]]
            if len(diff) == 1 and _MIRROR.get(a[diff[0]]) == b[diff[0]] and _word_letter(
                    a, diff[0]):
                out.append((i, j))
    return out


def _word_letter(name: str, k: int) -> bool:
    """A letter that stands for a word in a camelCase name, not a letter inside a word."""
    if name[k].isupper():
        return True
    before = k == 0 or not name[k - 1].islower()
    after = k + 1 == len(name) or bool(re.match(r"[A-Z0-9_]", name[k + 1]))
    return before or after


def enumerator(model: SearchableModel) -> Enumerator:
    """The enumerator of a shape model."""
    return Enumerator(model.spec, model.base_env, model.grids, model.launch_rules,
                      proven=model.space_proven, launch_checks=model.launch_in_space)


def check_set(model: SearchableModel, enum: Enumerator | None = None) -> CheckSet:
    """The :class:`CheckSet` of a shape model (reusing the order of ``enum``, its enumerator,
    when there is one)."""
    return CheckSet(enum or enumerator(model), proven=model.space_proven)


def index_blocks(model: SearchableModel, enum: Enumerator | None = None,
                 rows: int = 1_000_000) -> Iterator[np.ndarray]:
    """The valid set of a model as blocks of index genomes (see :meth:`Enumerator.blocks`)."""
    yield from (enum or enumerator(model)).blocks(rows)


def valid_indices(model: SearchableModel, cap: int = 5_000_000) -> np.ndarray:
    """The valid set of a shape model as index genomes."""
    return enumerator(model).indices(cap)
