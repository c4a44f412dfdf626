"""The run-time descent (emit/refine.py): which configurations it looks at, in which order, what
it accepts, and its budget. The compiled C++ is held to the same answers by
tests/test_dispatch.py::test_compiled_selection_matches_python_on_unseen_shapes."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from ascend_tune.emit import refine as refine_mod
from ascend_tune.emit.refine import domains, neighbour, refine
from ascend_tune.emit.selection import derive, first_failure, runtime_env, valid_rows
from ascend_tune.hardware import HardwareProfile
from ascend_tune.model.dispatch import dispatch_model
from ascend_tune.spec import OperatorSpec, evaluate_baseline, launch, load_spec


def _scorer(spec: OperatorSpec, hw: HardwareProfile, shape: dict[str, int], aic: int, aiv: int,
            seen: list[list[int]]):  # type: ignore[no-untyped-def]
    env = runtime_env(spec, hw, aic, aiv)
    model = dispatch_model(spec, hw)
    values = [shape[v] for v in spec.shape_vars]

    def score(config: Sequence[int]) -> float:
        seen.append(list(config))
        ok = derive(spec, env, shape, dict(zip(spec.params, config, strict=True)))
        return math.inf if ok is None else model.latency_us(values, config, aic, aiv)

    return env, score


def test_neighbour_steps_one_value_of_an_ascending_domain() -> None:
    dom = [1, 2, 4, 8]
    assert neighbour(dom, 2, 1) == 4 and neighbour(dom, 2, -1) == 1
    assert neighbour(dom, 8, 1) is None and neighbour(dom, 1, -1) is None
    # A value outside the domain (tuned for another shape) steps to the nearest on each side.
    assert neighbour(dom, 3, 1) == 4 and neighbour(dom, 3, -1) == 2
    assert neighbour(dom, 100, -1) == 8 and neighbour(dom, 0, 1) == 1


def test_a_pair_move_reaches_a_larger_tile_with_fewer_buffers(hw: HardwareProfile) -> None:
    """layernorm rows=188, cols=7168 from the colFactor=4096, bufferNum=2 candidate. A row
    (7168 halves) fits one UB pass with colFactor=8192, but not double-buffered:
    ub_fits = bufferNum*7168*(2+2) + 2*7168*4 + 7168*(2+2+4+4) + 64*1
            = 57344 + 57344 + 86016 + 64 = 200768 > 196608 (910B3 UB) with bufferNum=2,
            = 28672 + 57344 + 86016 + 64 = 172096 <= 196608 with bufferNum=1.
    So no single parameter improves (colFactor=8192 alone is invalid) and the pair
    (colFactor up one step, bufferNum down one step) is the move."""
    spec = load_spec("layernorm")
    shape = {"rows": 188, "cols": 7168}
    seen: list[list[int]] = []
    env, score = _scorer(spec, hw, shape, 20, 40, seen)
    start = {"blockDim": 38, "rowFactor": 1, "colFactor": 4096, "bufferNum": 2}
    start_us = score(list(start.values()))
    seen.clear()
    got = refine(spec, env, shape, start, start_us, score)
    assert got is not None
    assert got[0] == {"blockDim": 38, "rowFactor": 1, "colFactor": 8192, "bufferNum": 1}
    assert got[1] < start_us and got[1] == score(list(got[0].values()))
    # Phase 1 looked at every other value of each parameter, one parameter at a time:
    # blockDim 1..40 (39 others), rowFactor 1..1024 (10), colFactor 256..65536 (8), bufferNum (1).
    first = seen[:39 + 10 + 8 + 1]
    assert all(sum(a != b for a, b in zip(c, start.values(), strict=True)) == 1 for c in first)
    assert [c[0] for c in first[:39]] == [v for v in range(1, 41) if v != 38]
    assert score([38, 1, 8192, 2]) == math.inf  # the single move the arithmetic above forbids
    # Then pairs, in parameter order, each one step: (blockDim, rowFactor) first.
    assert seen[58][:2] == [37, 2] and seen[58][2:] == [4096, 2]


def test_every_configuration_looked_at_counts_and_the_budget_holds(
        hw: HardwareProfile) -> None:
    spec = load_spec("matmul")
    shape = {"M": 2142, "N": 4096, "K": 4096}
    seen: list[list[int]] = []
    env, score = _scorer(spec, hw, shape, 20, 40, seen)
    start = dict(baseM=128, baseN=256, baseK=64, stepM=1, stepN=1, stepKa=4, stepKb=4, dbL1=2,
                 dbL0A=2, dbL0B=2, dbL0C=1, iterateOrder=0, mDim=4, nDim=10, kDim=1)
    start_us = score([start[p] for p in spec.params])
    seen.clear()
    full = refine(spec, env, shape, start, start_us, score)
    # Within the budget (a parameter swept since no other moved is not swept again, and only
    # coupled pairs move together, so this descent now ends before spending it all).
    assert len(seen) <= refine_mod.MAX_EVALS
    assert full is not None and full[1] < start_us
    assert (full[0]["mDim"], full[0]["nDim"]) != (4, 10)
    # From the 8x5 split on M=1567 it stops early: at a local optimum, where no single
    # parameter's value improves.
    local_shape = {"M": 1567, "N": 4096, "K": 4096}
    env, local_score = _scorer(spec, hw, local_shape, 20, 40, seen)
    other = {**start, "baseN": 128, "stepKa": 8, "stepKb": 8, "dbL0C": 2, "mDim": 8, "nDim": 5}
    end = [other[p] for p in spec.params]
    other_us = local_score(end)
    seen.clear()
    assert refine(spec, env, local_shape, other, other_us, local_score) is None
    assert len(seen) < refine_mod.MAX_EVALS
    doms = domains(spec, env, local_shape)
    assert doms is not None
    for j, dom in enumerate(doms):
        for v in dom:
            assert local_score([*end[:j], v, *end[j + 1:]]) >= other_us
    env, score = _scorer(spec, hw, shape, 20, 40, seen)
    for budget in (0, 7):
        seen.clear()
        got = refine(spec, env, shape, start, start_us, score, max_evals=budget)
        assert len(seen) == budget
        # Cut short, the best configuration looked at is kept (here among baseM's values).
        times = [score(c) for c in list(seen)]
        if budget == 0 or min(times) >= start_us:
            assert got is None
        else:
            assert got is not None and got[1] == min(times)


def test_a_bad_domain_skips_the_descent(hw: HardwareProfile) -> None:
    spec = load_spec("add")
    env = runtime_env(spec, hw, 0, 0)  # blockDim's domain [1, 0] is empty on a 0-core part
    assert domains(spec, env, {"totalLength": 4096}) is None
    calls: list[int] = []
    assert refine(spec, env, {"totalLength": 4096}, {"blockDim": 1, "tileLength": 256,
                                                     "bufferNum": 1}, 1.0,
                  lambda c: calls.append(1) or 0.0) is None
    assert calls == []


def test_batched_validity_is_derive_one_by_one(hw: HardwareProfile) -> None:
    """select() scores each descent step's configurations in one numpy pass
    (selection.valid_rows): every configuration's verdict must be derive()'s, and an
    evaluation that raises on any of them hands the step back to derive(), which raises (or
    not) where it always did."""
    rng = np.random.default_rng(5)
    failed: set[str | None] = set()
    for ref, shape in (("matmul", {"M": 300, "N": 5000, "K": 700}),
                       ("layernorm", {"rows": 188, "cols": 7168}),
                       ("add", {"totalLength": 12_345})):
        spec = load_spec(ref)
        env = runtime_env(spec, hw, 8, 7)
        # Values from the profile's 20/40-core domains: the core limits of 8/7 fail some.
        doms = domains(spec, runtime_env(spec, hw, 20, 40), shape)
        assert doms is not None
        # What the descent asks: one or two parameters moved from the baseline.
        base = [evaluate_baseline(spec, {**env, **shape})[p] for p in spec.params]
        configs = []
        for _ in range(300):
            c = list(base)
            for j in rng.choice(len(doms), size=min(2, len(doms)), replace=False):
                c[j] = int(rng.choice(doms[j]))
            configs.append(c)
        ok = valid_rows(spec, env, shape, configs)
        assert ok is not None
        want = [derive(spec, env, shape, dict(zip(spec.params, c, strict=True))) is not None
                for c in configs]
        assert ok.tolist() == want and any(want), ref
        failed |= {first_failure(spec, env, shape, dict(zip(spec.params, c, strict=True)))[1]
                   for c in configs} & set(launch.check_names(spec))
    assert failed, "some configurations fail a launch check first"
    spec = load_spec("matmul")
    env = runtime_env(spec, hw, 20, 40)
    huge = [1 << 61, 256, 64, 1, 1, 4, 4, 2, 2, 2, 1, 0, 4, 10, 1]  # baseM * baseK overflows
    assert valid_rows(spec, env, {"M": 300, "N": 5000, "K": 700}, [huge]) is None


def test_splits_are_the_products_that_fill_the_bound() -> None:
    doms = [[1, 2, 4], [1, 2, 3], [7], [1, 2, 4, 8]]
    got = refine_mod.splits(doms, (0, 1, 3), [2, 2, 7, 1], 8)
    # Every combination (first parameter slowest) with product <= 8 that no parameter can
    # grow in without passing 8; the current (2, 2, 1) fills nothing, so it is not one.
    want = [(1, 1, 8), (1, 2, 4), (1, 3, 2), (2, 1, 4), (2, 2, 2), (2, 3, 1), (4, 1, 2),
            (4, 2, 1)]
    assert [(c[0], c[1], c[3]) for c in got] == want
    assert all(c[2] == 7 for c in got)
    assert refine_mod.splits(doms, (0, 1, 3), [2, 2, 7, 2], 8) == [
        c for c in got if (c[0], c[1], c[3]) != (2, 2, 2)]  # the current split is left out
    # Fewer than three parameters with a choice (matmul's kDim is fixed at 1): no move.
    assert refine_mod.splits([[1, 2], [1, 2], [1]], (0, 1, 2), [1, 1, 1], 4) == []
    assert refine_mod.splits([[0, 1], [1, 2], [1, 2]], (0, 1, 2), [1, 1, 1], 4) == []


def test_the_core_split_group_is_read_from_the_cores_constraint() -> None:
    bmm = load_spec("batch_matmul")
    group = refine_mod.split_group(bmm)
    assert group is not None
    assert [bmm.params[i] for i in group[0]] == ["mDim", "nDim", "kDim", "bDim"]
    assert group[1] == "issuerCores"
    assert refine_mod.split_group(load_spec("layernorm")) is None
    # mDim * nDim * kDim <= issuerCores with kDim: {values: [1]}: two have a choice at most
    assert refine_mod.split_group(load_spec("matmul")) is None


def test_a_batch_that_changes_rebalances_the_split_jointly(
        hw: HardwareProfile, monkeypatch: pytest.MonkeyPatch) -> None:
    """batch_matmul B=41, M=N=K=1024 from the candidate tuned for another batch (the 4x4x2
    split): no single parameter and no pair one step each is faster (the descent without the
    joint move returns None), but the 2x4x5 split (40 of 40 issuers, 9 batches per group
    instead of 21) is: mDim and bDim change together, which the joint move looks at."""
    spec = load_spec("batch_matmul")
    shape = {"B": 41, "M": 1024, "N": 1024, "K": 1024}
    seen: list[list[int]] = []
    env, score = _scorer(spec, hw, shape, 20, 40, seen)
    start = dict(baseM=128, baseN=256, baseK=64, stepM=1, stepN=1, stepKa=8, stepKb=2, dbL1=2,
                 dbL0A=2, dbL0B=2, dbL0C=1, iterateOrder=0, mDim=4, nDim=4, kDim=1, bDim=2)
    start_us = score([start[p] for p in spec.params])
    got = refine(spec, env, shape, start, start_us, score)
    assert got is not None and got[1] < start_us * 0.95
    assert (got[0]["mDim"], got[0]["nDim"], got[0]["bDim"]) == (2, 4, 5)
    seen.clear()
    with monkeypatch.context() as m:
        m.setattr(refine_mod, "split_group", lambda _spec: None)
        assert refine(spec, env, shape, start, start_us, score) is None
    # The joint move's configurations are looked at right after the single and pair ones.
    doms = domains(spec, env, shape)
    assert doms is not None
    cur = [start[p] for p in spec.params]
    joint = refine_mod.splits(doms, (12, 13, 14, 15), cur, 40)
    assert len(joint) > 0 and all(c[:12] == cur[:12] for c in joint)
    seen.clear()
    refine(spec, env, shape, start, start_us, score)
    first_joint = next(k for k, c in enumerate(seen) if c == joint[0])
    assert seen[first_joint:first_joint + len(joint)] == joint
