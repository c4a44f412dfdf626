"""Score every valid configuration: ground truth, and the default for small spaces.

Where the problem can enumerate its valid set (constraints decided on partial assignments,
:mod:`ascend_tune.search.space`), only that set is scored, enumerated in bounded-memory blocks:
exact on raw spaces of billions of configurations (tens of seconds where millions are valid).
Otherwise every configuration is scored in chunks.
"""

from __future__ import annotations

import numpy as np

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.search.problem import Problem, decode_flat
from ascend_tune.search.space import TooMany


class Exhaustive:
    name = "exhaustive"
    uses_budget = False  # run() lifts the budget: exhaustive scores the whole valid set
    builds_valid = False  # builds no proposals: it scores the enumerated valid set

    def __init__(self, chunk: int = 65536, limit: int = 20_000_000) -> None:
        self.chunk = int(chunk)
        self.limit = int(limit)

    def search(self, problem: Problem, budget: int, rng: np.random.Generator) -> None:
        del budget, rng  # exhaustive scores everything; the budget does not apply
        if problem.valid_blocks is not None:
            # The valid set in bounded-memory blocks: exact whatever its size.
            for block in problem.valid_blocks():
                for start in range(0, len(block), self.chunk):
                    problem.score_all(block[start:start + self.chunk], known_valid=True)
            problem.rejected = problem.space_size - problem.evaluations
            return
        if problem.valid_genomes is not None:
            try:
                valid = problem.valid_genomes(self.limit)
            except TooMany:
                valid = None
            if valid is not None:
                for start in range(0, len(valid), self.chunk):
                    problem.score_all(valid[start:start + self.chunk], known_valid=True)
                # Everything else was ruled out by a constraint without being scored.
                problem.rejected = problem.space_size - problem.evaluations
                return
        if problem.space_size > self.limit:
            raise AscendTuneError(
                f"exhaustive search refuses a space of {problem.space_size:,} configurations "
                f"whose valid set is too large to enumerate (limit {self.limit:,}); "
                "use --strategy ga")
        for start in range(0, problem.space_size, self.chunk):
            flat = np.arange(start, min(start + self.chunk, problem.space_size), dtype=np.int64)
            problem.score_all(decode_flat(flat, problem.sizes))
