"""The memetic GA (search.strategies.genetic): population, crowding, elitism, adaptation."""

from __future__ import annotations

import numpy as np

from ascend_tune.hardware import HardwareProfile
from ascend_tune.model.engine import ShapeModel
from ascend_tune.search.descent import TRADE_TIER, TierMoves, descend
from ascend_tune.search.strategies.genetic import DESCENT_TIERS, OPERATORS, Genetic, _Run
from ascend_tune.spec import OperatorSpec
from ascend_tune.tune.shape import search_problem

SHAPE = {"M": 512, "N": 4096, "K": 1024}


def _run(model: ShapeModel, budget: int, seed: int, **options: object) -> _Run:
    problem = search_problem(model, "ga")
    problem.budget = budget
    assert problem.baseline is not None
    problem.evaluate(problem.baseline[None, :])
    state = _Run(Genetic(**options), problem, np.random.default_rng(seed))  # type: ignore[arg-type]
    state.evolve()
    return state


def test_population_holds_the_best_and_distinct_members(
        hw: HardwareProfile, matmul_spec: OperatorSpec) -> None:
    model = ShapeModel(matmul_spec, hw, SHAPE)
    state = _run(model, 1500, 0)
    problem = state.problem
    assert problem.spent == 1500
    members, latency = state.members, state.latency
    assert 2 <= len(members) <= Genetic().population
    assert len({tuple(m) for m in members.tolist()}) == len(members), "no duplicate member"
    # Elitism: the fastest configuration the run scored is a member.
    assert latency.min() == problem.best_latency
    assert np.array_equal(model.objective(members), latency)


def test_members_entered_by_descent_are_local_optima(
        hw: HardwareProfile, matmul_spec: OperatorSpec) -> None:
    """With every offspring descended, a member is a local optimum of the descent: one more
    descent from it (given budget) finds nothing better; all but at most the last one, whose
    descent the end of the budget may have cut short."""
    model = ShapeModel(matmul_spec, hw, SHAPE)
    state = _run(model, 1200, 1, descent_floor=1.0)
    problem = state.problem
    problem.budget = problem.spent + 100_000
    moves = TierMoves(problem)
    improved = 0
    for member, lat in zip(state.members, state.latency.tolist(), strict=True):
        _genome, after = descend(problem, member, lat, np.random.default_rng(0), 8, moves,
                                 state.ga.tiers)
        improved += after < lat
    assert len(state.members) >= 3 and improved <= 1


def test_descents_use_only_the_tiers_asked(hw: HardwareProfile,
                                           matmul_spec: OperatorSpec) -> None:
    """The GA's descents build the moves of its tiers only (one-gene, ties, mirror, ratio,
    shifted: not the coupled tier, whose evaluations did not pay, nor local_moves, which it
    splits),
    and a descent limited to one tier ends at a local optimum of that tier without building
    another."""
    model = ShapeModel(matmul_spec, hw, SHAPE)
    state = _run(model, 1200, 2, escape=False)
    assert DESCENT_TIERS == (4, 7, 5, 2, 3) and state.ga.tiers == DESCENT_TIERS
    built = {tier for tier, _genome in state.moves._built}
    assert built == {2, 3, 4, 5, 7}, built
    # The trade neighbourhood (TRADE_TIER) is built only at converged parents, once each.
    state = _run(model, 1200, 2)
    built = {tier for tier, _genome in state.moves._built}
    assert built <= {2, 3, 4, 5, 7, TRADE_TIER} and {2, 3, 4, 5, 7} <= built, built
    traded = [genome for tier, genome in state.moves._built if tier == TRADE_TIER]
    assert len(traded) == len(state.escaped)
    problem = search_problem(model, "ga")
    problem.budget = 100_000
    start = problem.sample(1, np.random.default_rng(3))[0]
    moves = TierMoves(problem)
    end, lat = descend(problem, start, float(problem.evaluate(start[None, :])[0]),
                       np.random.default_rng(3), 8, moves, (0,))
    assert {tier for tier, _genome in moves._built} == {0}
    assert lat <= problem.evaluate(moves(0, end, np.random.default_rng(0))).min()
    assert lat < float(problem.evaluate(start[None, :])[0])


def test_crowding_replaces_only_the_nearest_member(
        hw: HardwareProfile, matmul_spec: OperatorSpec) -> None:
    model = ShapeModel(matmul_spec, hw, SHAPE)
    problem = search_problem(model, "ga")
    state = _Run(Genetic(population=3), problem, np.random.default_rng(0))
    base = np.zeros(problem.n_genes, dtype=np.int64)
    far = base.copy()
    far[:6] = 1
    near = base.copy()
    near[0] = 1
    for genome, lat in ((base, 10.0), (far, 20.0), (near, 30.0)):
        assert state._insert(genome, lat)
    # One gene from `near`, two from `base`, four from `far`: only `near` may go.
    child = near.copy()
    child[1] = 1
    assert not state._insert(child, 40.0), "slower than the nearest: nothing changes"
    assert state._insert(child, 25.0)
    assert sorted(state.latency.tolist()) == [10.0, 20.0, 25.0]
    assert not state._insert(child, 1.0), "a member already: not entered twice"


def test_operator_rates_follow_success(hw: HardwareProfile,
                                       matmul_spec: OperatorSpec) -> None:
    model = ShapeModel(matmul_spec, hw, SHAPE)
    state = _Run(Genetic(), search_problem(model, "ga"), np.random.default_rng(0))
    for _ in range(30):
        state._credit("cross", 2.0)
        state._credit("kick", 0.0)
    picks = [state._operator() for _ in range(4000)]
    share = {op: picks.count(op) / len(picks) for op in OPERATORS}
    assert share["cross"] > 0.4 and share["cross"] > 1.8 * max(
        share[op] for op in OPERATORS if op != "cross")
    floor = Genetic().rate_floor
    assert abs(share["kick"] - floor) < 0.03, "a failing operator keeps its floor"


def test_descent_share_follows_reward_per_evaluation(
        hw: HardwareProfile, matmul_spec: OperatorSpec) -> None:
    model = ShapeModel(matmul_spec, hw, SHAPE)
    state = _Run(Genetic(descent_floor=0.2), search_problem(model, "ga"),
                 np.random.default_rng(0))
    assert state._descent_share() == 0.5  # equal priors
    state.pay[1] = [1.0, 1000.0]  # descents: one success in 1000 evaluations
    state.pay[0] = [10.0, 100.0]  # offspring kept as they are: ten in 100
    assert state._descent_share() == 0.2  # the floor
    state.pay[0] = [0.0, 100.0]
    assert state._descent_share() == 1.0


def test_a_former_parent_resumes_its_failures(hw: HardwareProfile,
                                              matmul_spec: OperatorSpec) -> None:
    """Offspring that did not beat a parent count for its latency: when the search falls
    back into it, or into a twin of exactly the same latency (a plateau), the stall goes on
    from there (a basin that failed is not kicked again from 0)."""
    model = ShapeModel(matmul_spec, hw, SHAPE)
    problem = search_problem(model, "ga")
    problem.budget = 100
    state = _Run(Genetic(), problem, np.random.default_rng(0))
    a, b, twin = problem.sample(3, np.random.default_rng(1))
    state._adopt(a, 2.0)
    state.fails = 5
    state._adopt(b, 1.0)
    assert state.fails == 0
    state._adopt(a, 2.0)
    assert state.fails == 5
    state.fails = 6
    state._adopt(b, 1.0)
    state._adopt(twin, 2.0)
    assert state.fails == 6, "a twin of the same latency resumes the count"
    state._adopt(a, 2.5)
    assert state.fails == 0
    off = _Run(Genetic(keep_fails=False), problem, np.random.default_rng(0))
    off._adopt(a, 2.0)
    off.fails = 5
    off._adopt(b, 1.0)
    off._adopt(a, 2.0)
    assert off.fails == 0


def test_immigrants_draw_their_samples_a_few_at_a_time(
        hw: HardwareProfile, matmul_spec: OperatorSpec) -> None:
    """One sampling call serves several immigrants (a walk batch costs little more for 32
    rows than for 8): the next immigrants take distinct stocked samples, walking no more,
    and each is the fastest of its own pool, every sample of which was scored (counted)."""
    model = ShapeModel(matmul_spec, hw, SHAPE)
    problem = search_problem(model, "ga")
    problem.budget = 1000
    state = _Run(Genetic(), problem, np.random.default_rng(0))
    state.first = False
    pool = state.ga.pool
    first = state._immigrant()
    walks, stock = problem.walks, state.stock.copy()
    assert first is not None and walks > 0 and len(stock) >= pool
    second = state._immigrant()
    assert problem.walks == walks, "served from the stock"
    assert second is not None and any(np.array_equal(second, row) for row in stock[:pool])
    assert problem.spent == 2 * pool
    assert float(model.objective(second[None, :])[0]) == model.objective(stock[:pool]).min()
