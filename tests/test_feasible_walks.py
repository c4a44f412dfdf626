"""The feasibility walk (search/construct.py) on a toy problem small enough to count by hand.

Three genes with domains 0..3, 0..3 and 0..2, two checks:
    c0: g0 + g1 <= 3  (reads g0, g1)
    c1: g2 >= g0      (reads g0, g2)
Valid configurations: for each g0, g1 in 0..3-g0 and g2 in g0..2: g0 = 0: 4 * 3 = 12,
g0 = 1: 3 * 2 = 6, g0 = 2: 2 * 1 = 2, g0 = 3: none (g2 cannot reach 3). 20 in all.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ascend_tune.search import construct

SIZES = np.array([4, 4, 3])


class Toy:
    reads = np.array([[True, True, False], [True, False, True]])
    order: Sequence[int] = [0, 1, 2]
    pairs: Sequence[tuple[int, int]] = []

    def passes(self, genomes: np.ndarray, which: Sequence[int]) -> np.ndarray:
        g = np.asarray(genomes)
        every = np.stack([g[:, 0] + g[:, 1] <= 3, g[:, 2] >= g[:, 0]], axis=1)
        return every[:, list(which)]


VALID = {(a, b, c) for a in range(4) for b in range(4) for c in range(3)
         if a + b <= 3 and c >= a}


def test_the_toy_has_twenty_valid_configurations() -> None:
    assert len(VALID) == 20


def test_violated() -> None:
    rows = np.array([[0, 0, 0], [3, 1, 0], [2, 1, 1], [1, 2, 2]])
    assert construct.violated(Toy(), rows).tolist() == [[False, False], [True, True],
                                                        [False, True], [False, False]]
    assert construct.violated(Toy(), np.zeros((0, 3), dtype=np.int64)).shape == (0, 2)
    assert construct.violated(construct.Unconstrained(3), rows).shape == (4, 0)


def test_sampling_reaches_every_valid_configuration_and_only_those() -> None:
    rng = np.random.default_rng(0)
    start = np.zeros((3000, 3), dtype=np.int64)
    rows, ok = construct.complete(Toy(), SIZES, start, np.ones_like(start, dtype=bool), rng)
    found = {tuple(r) for r in rows[ok].tolist()}
    assert found == VALID
    # g0 = 3 leaves g2 no value (a dead end): those walks report ok False. g0 is drawn first,
    # uniform over 0..3 (no check is decidable yet), so about a quarter dead-end.
    assert not ok[rows[:, 0] == 3].any()
    assert 0.2 < (~ok).mean() < 0.3
    counts = np.bincount(rows[:, 0], minlength=4) / len(rows)
    assert np.all(np.abs(counts - 0.25) < 0.04), counts


def test_complete_keeps_pinned_genes() -> None:
    rng = np.random.default_rng(1)
    start = np.array([[2, 1, 0]] * 200)
    free = np.zeros_like(start, dtype=bool)
    free[:, 2] = True  # only g2 moves: it must reach g0 = 2
    rows, ok = construct.complete(Toy(), SIZES, start, free, rng)
    assert ok.all() and (rows[:, :2] == [2, 1]).all() and (rows[:, 2] == 2).all()
    dead, ok = construct.complete(Toy(), SIZES, np.array([[3, 0, 0]]), free[:1], rng)
    assert not ok[0] and dead.tolist() == [[3, 0, 0]]


def test_near_choice_prefers_the_next_value_and_never_keeps_the_current() -> None:
    # From value 0 of 4, weights 1/d^2: 1, 1/4, 1/9 for values 1, 2, 3: P(1) = 36/49 = 0.735.
    rng = np.random.default_rng(2)
    ok = np.ones((4000, 4), dtype=bool)
    pick, found = construct._choose(ok, np.zeros(4000, dtype=np.int64), rng, near=True)
    assert found.all() and not (pick == 0).any()
    share = np.bincount(pick, minlength=4) / 4000
    assert abs(share[1] - 36 / 49) < 0.03 and abs(share[2] - 9 / 49) < 0.03
    # Only the current value feasible: it is kept (found, and the caller sees no move).
    only = np.zeros((3, 4), dtype=bool)
    only[:, 2] = True
    pick, found = construct._choose(only, np.full(3, 2), rng, near=True)
    assert pick.tolist() == [2, 2, 2] and found.all()
    # Nothing feasible: not found.
    pick, found = construct._choose(np.zeros((2, 4), dtype=bool), np.zeros(2, dtype=np.int64),
                                    rng, near=False)
    assert not found.any()
    # Uniform: every feasible value about equally often, infeasible ones never.
    some = np.tile([True, False, True, True], (3000, 1))
    pick, _found = construct._choose(some, np.zeros(3000, dtype=np.int64), rng, near=False)
    share = np.bincount(pick, minlength=4) / 3000
    assert share[1] == 0 and np.all(np.abs(share[[0, 2, 3]] - 1 / 3) < 0.04)


def test_mutate_moves_one_gene_inside_the_valid_set() -> None:
    rng = np.random.default_rng(3)
    rows = np.array([[0, 0, 2], [1, 2, 2], [0, 3, 0]] * 100)
    genes = np.tile([0, 2, 1], 100)
    moved, ok = construct.mutate(Toy(), SIZES, rows, genes, rng)
    assert ok.all()
    assert ((moved != rows).sum(axis=1) == 1).all()
    assert {tuple(r) for r in moved.tolist()} <= VALID
    # [1, 2, 2]: g2 may only be 1 or 2; from 2 the move is to 1.
    assert (moved[1::3, 2] == 1).all()
    # [0, 3, 0], gene 1: g1 in 0..3, anything but 3; mostly 2 (near).
    assert not (moved[2::3, 1] == 3).any()
    # A gene with no other feasible value: [2, 1, 2], gene 2 must stay 2: not ok, unchanged.
    stuck, ok = construct.mutate(Toy(), SIZES, np.array([[2, 1, 2]]), np.array([2]), rng)
    assert not ok[0] and stuck.tolist() == [[2, 1, 2]]
    empty, ok = construct.mutate(Toy(), SIZES, np.zeros((0, 3), dtype=np.int64),
                                 np.zeros(0, dtype=np.int64), rng)
    assert empty.shape == (0, 3) and ok.shape == (0,)


def test_repair_frees_the_genes_of_violated_checks_only() -> None:
    rng = np.random.default_rng(4)
    # [3, 3, 0] fails both checks: every gene is re-drawn. [1, 3, 2] fails c0 only: g0 and g1
    # move, g2 stays. [1, 1, 1] is valid: unchanged.
    rows = np.array([[3, 3, 0], [1, 3, 2], [1, 1, 1]] * 50)
    fixed, ok = construct.repair(Toy(), SIZES, rows, rng)
    assert {tuple(r) for r in fixed[ok].tolist()} <= VALID
    assert (fixed[1::3, 2] == 2).all() and (fixed[2::3] == [1, 1, 1]).all()
    assert ok[1::3].all() and ok[2::3].all()
    # Pinning g0 of [3, 3, 0] leaves c1 unfixable (g2 <= 2 < 3): never ok.
    pinned = np.zeros((1, 3), dtype=bool)
    pinned[0, 0] = True
    _rows, ok = construct.repair(Toy(), SIZES, np.array([[3, 3, 0]]), rng, pinned=pinned)
    assert not ok[0]


def test_repair_reports_violations_it_may_not_touch() -> None:
    rng = np.random.default_rng(5)
    # [2, 2, 2] fails c0 only (4 > 3); with g0 and g1 pinned nothing may move: not ok.
    pinned = np.array([[True, True, False]])
    rows, ok = construct.repair(Toy(), SIZES, np.array([[2, 2, 2]]), rng, pinned=pinned)
    assert not ok[0] and rows.tolist() == [[2, 2, 2]]
    # [1, 3, 2] fails c0 only; with g0 pinned, g1 alone (one free gene of c0) fixes it: ok.
    pinned = np.array([[True, False, False]] * 20)
    rows, ok = construct.repair(Toy(), SIZES, np.array([[1, 3, 2]] * 20), rng, pinned=pinned)
    assert ok.all() and (rows[:, 0] == 1).all() and (rows[:, 2] == 2).all()
    assert set(rows[:, 1].tolist()) <= {0, 1, 2}
