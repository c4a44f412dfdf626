"""The seam between strategies and the model: a memoised, budgeted vectorised objective."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.search import construct
from ascend_tune.search.construct import Feasible, Unconstrained
from ascend_tune.search.space import genome_keys, radix

Objective = Callable[[np.ndarray], np.ndarray]
# Sampling walks allowed per unit of budget (a walk costs about one check evaluation per
# gene value; dead ends on spaces where few configurations are valid are retried).
WALKS_PER_BUDGET = 16
# score_all screens known-valid configurations by a lower bound of their latency only after
# this many were scored: below it, building the bounds (tables per shape) costs more than it
# saves, and a valid set small enough for `auto`'s exact search is scored as it always was.
SCREEN_AFTER = 262_144


class Problem:
    """What a strategy may see: gene domain sizes, the baseline genome, the objective and,
    optionally, the structure of the constraints (:class:`~.construct.Feasible`).

    ``evaluate`` memoises every genome it has scored, so a strategy never pays twice for the
    same configuration. ``evaluations`` counts unique configurations the model scored (valid
    ones); ``rejected`` counts unique genomes a constraint ruled out before the model ran.
    The budget bounds both together (``spent``): every configuration looked at counts.
    """

    def __init__(self, sizes: np.ndarray, objective: Objective,
                 baseline: np.ndarray | None = None,
                 valid_genomes: Callable[[int], np.ndarray] | None = None,
                 feasible: Feasible | None = None,
                 valid_blocks: Callable[[], Iterator[np.ndarray]] | None = None,
                 grids: Sequence[np.ndarray] | None = None,
                 valid_objective: Objective | None = None,
                 valid_screen: Callable[[np.ndarray, float], np.ndarray] | None = None) -> None:
        self.sizes = np.asarray(sizes, dtype=np.int64)
        # Optional: for genomes known to be valid, False where a lower bound of the latency
        # exceeds the given latency (score_all then need not score them).
        self._valid_screen = valid_screen
        # Optional: the objective of genomes known to be valid (from valid_blocks or
        # valid_genomes), which need not be checked again.
        self._valid_objective = valid_objective
        # Optional: each gene's domain values (ascending), for moves that reason in values
        # (a core split traded between two genes keeps their product).
        self.grids = grids
        self.feasible: Feasible = feasible if feasible is not None else Unconstrained(
            int(self.sizes.size))
        # Optional: the whole valid set in blocks of index genomes (exact, bounded memory).
        self.valid_blocks = valid_blocks
        # Optional: the valid set as index genomes, enumerated with pruning (raises
        # ascend_tune.search.space.TooMany past the given number of prefixes).
        self.valid_genomes = valid_genomes
        self.n_genes = int(self.sizes.size)
        self.space_size = int(np.prod(self.sizes.astype(object)))
        self.baseline = baseline
        # Configurations known to be good on similar inputs (the tuning database's nearest
        # recorded shapes, repaired to this one's constraints): they join the baseline in the
        # first pool a strategy starts from (``first_pool``).
        self.seeds = np.zeros((0, self.sizes.size), dtype=np.int64)
        self._objective = objective
        self._radix = radix(self.sizes)  # None: keys are bytes, not configuration numbers
        self.key = genome_keys(self.sizes)
        self._seen: dict[int | bytes, float] = {}
        self.evaluations = 0
        self.rejected = 0
        self.best_genome: np.ndarray | None = None
        self.best_latency = np.inf
        self.budget: int | None = None  # set by run(); ``spent`` never exceeds it
        # Walks that build fresh samples inside the valid set (construct.sample) are not
        # configurations, but they cost time: at most WALKS_PER_BUDGET x budget of them.
        self.walks = 0
        self.walks_capped = False  # the cap stopped sampling (reported, never silent)
        # (evaluations so far, best latency) each time the best improves: the convergence
        # curve the report draws. Deterministic for a seed, as the search itself is.
        self.history: list[tuple[int, float]] = []
        # score_all keeps only the best this many configurations for top() (at least the
        # --top-k the caller asks for): millions of scores need no memo.
        self.keep_top = 64
        # Move generators' memory of pure functions of a few genes (a pair's trades): kept for
        # the search, keyed by the generator.
        self.scratch: dict[Any, Any] = {}
        self._kept: tuple[np.ndarray, np.ndarray] | None = None  # (latencies, genomes)

    @property
    def spent(self) -> int:
        """Configurations looked at so far: scored by the model or ruled out by a check."""
        return self.evaluations + self.rejected

    @property
    def left(self) -> int:
        """What the budget still allows (unbounded without a budget)."""
        return (self.budget - self.spent) if self.budget is not None else 2**62

    @property
    def walks_left(self) -> int:
        budget = self.budget if self.budget is not None else 2**40
        return max(WALKS_PER_BUDGET * budget - self.walks, 0)

    @property
    def seen_count(self) -> int:
        """Unique configurations looked at (scored or ruled out)."""
        return len(self._seen)

    @property
    def exhausted(self) -> bool:
        """Every configuration of the space has been looked at."""
        return self.seen_count >= self.space_size

    def seen(self, genomes: np.ndarray) -> np.ndarray:
        return np.array([k in self._seen for k in self.key(genomes)], dtype=bool)

    def evaluate(self, genomes: np.ndarray) -> np.ndarray:
        """Latency per genome; scores only genomes not seen before, in one batch."""
        genomes = np.asarray(genomes, dtype=np.int64).reshape(-1, self.n_genes)
        keys = self.key(genomes)
        seen = self._seen
        todo: dict[int | bytes, int] = {}  # each new configuration's first row
        for i, k in enumerate(keys):
            if k not in seen and k not in todo:
                todo[k] = i
        if todo and self.left < len(todo):
            # Rows past the budget are not looked at, counted, cached or returned.
            todo = dict(list(todo.items())[:max(self.left, 0)])
        if todo:
            rows = list(todo.values())
            new = genomes if len(rows) == len(keys) else genomes[rows]  # all new: in order
            scores = np.asarray(self._objective(new), dtype=np.float64).tolist()
            valid = sum(map(math.isfinite, scores))
            self.evaluations += valid
            self.rejected += len(scores) - valid
            seen.update(zip(todo, scores, strict=True))
            # The first fastest, as np.argmin takes it (a nan there: no new best).
            if valid and not any(map(math.isnan, scores)):
                j = min(range(len(scores)), key=scores.__getitem__)
                if scores[j] < self.best_latency:
                    self._improve(scores[j], new[j])
        out = list(map(seen.get, keys))
        if None in out:  # past the budget: not looked at, inf
            out = [math.inf if v is None else v for v in out]
        return np.array(out, dtype=np.float64)

    def score_all(self, genomes: np.ndarray, known_valid: bool = False) -> np.ndarray:
        """Score configurations that are distinct and new to this search (an enumeration of
        the valid set, block by block): no memo, so millions of them cost only the model.
        Configurations ``evaluate`` already scored (the baseline) are not counted twice. The
        best ``keep_top`` (with ties) are kept for :meth:`top`. ``known_valid``: every row
        passes every check (from ``valid_blocks`` / ``valid_genomes``)."""
        genomes = np.asarray(genomes, dtype=np.int64).reshape(-1, self.n_genes)
        if self._radix is None or len(self._seen) > 64:
            return self.evaluate(genomes)
        if self._seen:
            old = decode_flat(np.fromiter((k for k in self._seen if isinstance(k, int)),
                                          dtype=np.int64), self.sizes)
            seen = _rows_among(genomes, old)
            if seen.any():
                genomes = genomes[~seen]
        objective = self._valid_objective if known_valid and self._valid_objective else \
            self._objective
        cut = (self._cut() if known_valid and self._valid_screen is not None
               and self.evaluations >= SCREEN_AFTER else math.inf)
        if math.isfinite(cut) and len(genomes):
            # Rows a bound proves slower than the keep_top-th best kept so far can enter
            # neither the kept best nor the history: valid, looked at, not scored.
            assert self._valid_screen is not None
            keep = self._valid_screen(genomes, cut)
            lat = np.full(len(genomes), math.inf)
            if keep.any():
                lat[keep] = objective(genomes[keep])
            self.evaluations += int((~keep).sum())
            finite = np.isfinite(lat)
            self.evaluations += int(finite.sum())
            self.rejected += int((keep & ~finite).sum())
        else:
            lat = np.asarray(objective(genomes), dtype=np.float64)
            finite = np.isfinite(lat)
            self.evaluations += int(finite.sum())
            self.rejected += int((~finite).sum())
        if finite.any():
            self._note_best(lat, genomes)
            self._keep_best(lat[finite], genomes[finite])
        return lat

    def _cut(self) -> float:
        """The latency a configuration must not exceed to enter the kept best: the
        keep_top-th best kept so far (inf until that many are kept)."""
        if self._kept is None or self._kept[0].size < self.keep_top:
            return math.inf
        return float(self._kept[0].max())

    def _note_best(self, lat: np.ndarray, genomes: np.ndarray) -> None:
        """Take the fastest of a scored batch as the best when it beats it (the history
        records each improvement against the evaluations so far)."""
        j = int(np.argmin(lat))
        if lat[j] < self.best_latency:
            self._improve(float(lat[j]), genomes[j])

    def _improve(self, latency: float, genome: np.ndarray) -> None:
        self.best_latency = latency
        self.best_genome = genome.copy()
        self.history.append((self.evaluations, self.best_latency))

    def _keep_best(self, lat: np.ndarray, genomes: np.ndarray) -> None:
        if self._kept is not None:
            lat = np.concatenate([self._kept[0], lat])
            genomes = np.concatenate([self._kept[1], genomes])
        if lat.size > self.keep_top:
            cut = np.partition(lat, self.keep_top - 1)[self.keep_top - 1]
            keep = lat <= cut  # ties at the cut stay: top() orders them by key
            lat, genomes = lat[keep], genomes[keep]
            if lat.size > 8 * self.keep_top and self._radix is not None:
                # Many ties: order as top() does, (latency, configuration number), and cut.
                order = np.lexsort((genomes @ self._radix, lat))[:self.keep_top]
                lat, genomes = lat[order], genomes[order]
        self._kept = (lat, genomes)

    def top(self, k: int) -> list[tuple[np.ndarray, float]]:
        """The ``k`` best distinct configurations scored so far, fastest first (ties broken
        by configuration number, so the order is deterministic)."""
        if self._kept is not None:
            for key, v in zip(self.key(self._kept[1]), self._kept[0].tolist(), strict=True):
                self._seen.setdefault(key, v)
            self._kept = None
        scored = [(v, key) for key, v in self._seen.items() if np.isfinite(v)]
        scored.sort(key=lambda t: (t[0], t[1]))
        out = []
        for latency, key in scored[:k]:
            if isinstance(key, bytes):
                genome = np.frombuffer(key, dtype=np.int64).copy()
            else:
                genome = decode_flat(np.array([key], dtype=np.int64), self.sizes)[0]
            out.append((genome, latency))
        return out

    def first_pool(self, fresh: np.ndarray) -> np.ndarray:
        """The first start pool of a strategy: the baseline and the seeds, then ``fresh``."""
        known = [self.seeds.astype(np.int64)]
        if self.baseline is not None:
            known.insert(0, self.baseline[None, :].astype(np.int64))
        return np.concatenate([*known, fresh.astype(np.int64)])

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Up to ``n`` fresh configurations built inside the valid set
        (:func:`~.construct.sample`), the walks they took counted against the walk cap and a
        shortfall caused by the cap recorded (``walks_capped``)."""
        fresh, walks = construct.sample(self.feasible, self.sizes, n, rng, self.walks_left)
        self.walks += walks
        self.walks_capped |= len(fresh) < n and self.walks_left == 0
        return fresh

    def random_genomes(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.integers(0, self.sizes, size=(n, self.n_genes), dtype=np.int64)


def _rows_among(genomes: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Mask of the genomes equal to one of ``rows`` (a few): the first gene compared over the
    batch, the next genes only on the matches so far (no key per row, no copy of the batch)."""
    out = np.zeros(len(genomes), dtype=bool)
    if genomes.shape[1] == 0:
        out[:] = len(rows) > 0
        return out
    for row in rows:
        # Column by column, on the matches so far only: the first compare is one pass over a
        # column (contiguous in the enumeration's column-major blocks), the rest are short.
        match = np.flatnonzero(genomes[:, 0] == row[0])
        for j in range(1, genomes.shape[1]):
            if not match.size:
                break
            match = match[genomes[match, j] == row[j]]
        out[match] = True
    return out


def decode_flat(flat: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Mixed-radix decode: flat configuration numbers to index genomes (last gene fastest)."""
    genomes = np.empty((flat.size, sizes.size), dtype=np.int64)
    rest = flat.astype(np.int64)
    for j in range(sizes.size - 1, -1, -1):
        genomes[:, j] = rest % sizes[j]
        rest = rest // sizes[j]
    return genomes


@dataclass(frozen=True)
class SearchResult:
    genome: np.ndarray
    latency_us: float
    evaluations: int
    rejected: int
    history: tuple[tuple[int, float], ...] = ()
    walks_capped: bool = False  # the sampling-walk cap ended fresh sampling early


class Strategy(Protocol):
    """A search strategy: :func:`run` drives it on a :class:`Problem`. Every strategy class
    sets its name and both flags explicitly (the registry's conformance test checks it)."""

    name: str
    # Class flags, read from the class as well as from an instance.
    # True: held to the budget (run() sets problem.budget; problem.spent never exceeds it).
    # False: run() lifts the budget and the strategy scores the whole valid set (exhaustive).
    uses_budget: bool
    # True: proposals are built inside the valid set, so the problem it is given carries the
    # constraints' structure (problem.feasible, a CheckSet, and the gene grids). False: it
    # is not (tune.shape.search_problem gives exhaustive search the enumerated valid set).
    builds_valid: bool

    def __init__(self, **options: object) -> None: ...

    def search(self, problem: Problem, budget: int, rng: np.random.Generator) -> None:
        """Drive ``problem.evaluate`` until ``problem.spent`` reaches ``budget``."""


def run(strategy: Strategy, problem: Problem, budget: int,
        rng: np.random.Generator) -> SearchResult:
    if budget < 1:
        raise AscendTuneError(f"--budget must be at least 1, got {budget}")
    # A strategy that scores everything (exhaustive) says so; the others are held to the budget.
    problem.budget = budget if strategy.uses_budget else None
    if problem.baseline is not None:
        problem.evaluate(problem.baseline[None, :])
    strategy.search(problem, budget, rng)
    if problem.best_genome is None:
        raise NoValidFound(problem.evaluations, problem.rejected)
    return SearchResult(problem.best_genome, problem.best_latency, problem.evaluations,
                        problem.rejected, tuple(problem.history), problem.walks_capped)


class NoValidFound(Exception):
    """The strategy saw no valid configuration (the caller explains which constraints)."""

    def __init__(self, evaluations: int, rejected: int) -> None:
        super().__init__(f"no valid configuration among {rejected} candidates")
        self.evaluations = evaluations
        self.rejected = rejected
