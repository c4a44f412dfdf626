"""The pruned enumeration of the valid set: exactly the configurations the model calls valid,
and an exhaustive search over it that is exact on raw spaces far beyond brute force."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ascend_tune.hardware import HardwareProfile, load_profile
from ascend_tune.model.engine import ShapeModel
from ascend_tune.search.problem import decode_flat
from ascend_tune.search.space import (
    CheckSet,
    Enumerator,
    TooMany,
    check_set,
    enumerator,
    index_blocks,
    valid_indices,
)
from ascend_tune.search.strategies import COUNT_ESTIMATE_FACTOR, EXHAUSTIVE_VALID_LIMIT
from ascend_tune.spec import load_spec, load_spec_text
from ascend_tune.tune.shape import TuneSettings, resolve_strategy, tune_shape
from tests.test_model_fastpaths import _example_shapes

ROOT = Path(__file__).resolve().parent.parent


def _brute_valid(model: ShapeModel) -> np.ndarray:
    found = []
    for start in range(0, model.space_size, 100_000):
        genomes = decode_flat(np.arange(start, min(start + 100_000, model.space_size)),
                              model.sizes)
        found.append(genomes[model.evaluate(model.values(genomes)).valid])
    return np.concatenate(found)


def _small_matmul() -> str:
    """Matmul with shorter domains, so brute force stays cheap (~200k configurations)."""
    text = (ROOT / "operator_specs/matmul.yaml").read_text()
    for old, new in (("baseM: {values: [16, 32, 64, 96, 128, 192, 256]}",
                      "baseM: {values: [16, 64, 128, 256]}"),
                     ("baseN: {values: [16, 32, 64, 96, 128, 192, 256]}",
                      "baseN: {values: [16, 96, 256]}"),
                     ("stepKa: {values: [1, 2, 4, 8]}", "stepKa: {values: [1, 4]}"),
                     ("stepKb: {values: [1, 2, 4, 8]}", "stepKb: {values: [2, 8]}"),
                     ("[1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 40, 48], doc: \"issuer cores "
                      "along M\"", "[1, 3, 8, 40], doc: \"issuer cores along M\""),
                     ("[1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 40, 48], doc: \"issuer cores "
                      "along N\"", "[1, 5, 24], doc: \"issuer cores along N\"")):
        assert old in text, old
        text = text.replace(old, new)
    return text


@pytest.mark.parametrize(("ref", "shape"), [
    ("add", {"totalLength": 1000}), ("add", {"totalLength": 1 << 24}),
    ("softmax", {"rows": 4096, "cols": 5000}), ("layernorm", {"rows": 7, "cols": 70_001}),
    ("gelu:float32", {"totalLength": 154}),
    ("small_matmul", {"M": 96, "N": 200, "K": 333}),
    ("small_matmul", {"M": 4096, "N": 1024, "K": 8192}),
])
def test_enumeration_is_exactly_the_valid_set(ref: str, shape: dict[str, int],
                                              hw: HardwareProfile) -> None:
    spec = (load_spec_text(_small_matmul(), "small_matmul.yaml") if ref == "small_matmul"
            else load_spec(ref))
    model = ShapeModel(spec, hw, shape)
    assert model.space_size <= 400_000
    got = valid_indices(model)
    want = _brute_valid(model)
    assert len(want) > 0
    assert np.array_equal(got, want), (len(got), len(want))


def test_exhaustive_is_exact_beyond_brute_force(hw: HardwareProfile) -> None:
    spec = load_spec("matmul")
    shape = {"M": 96, "N": 200, "K": 64}
    exact = tune_shape(spec, hw, shape, TuneSettings("exhaustive", 1, 0))
    assert exact["space_size"] > 50_000_000, "far past the old 20M refusal"
    assert exact["evaluations"] + exact["rejected"] == exact["space_size"]
    ga = tune_shape(spec, hw, shape, TuneSettings("ga", 2000, 0))
    assert exact["predicted"]["latency_us"] <= ga["predicted"]["latency_us"] + 1e-9


def test_too_large_a_valid_set_is_said(hw: HardwareProfile) -> None:
    model = ShapeModel(load_spec("matmul"), hw, {"M": 4096, "N": 4096, "K": 4096})
    with pytest.raises(TooMany):
        valid_indices(model, cap=100_000)


def test_blocks_are_the_valid_set_in_bounded_pieces(hw: HardwareProfile) -> None:
    from ascend_tune.search.space import enumerator

    model = ShapeModel(load_spec("matmul"), hw, {"M": 96, "N": 200, "K": 64})
    enum = enumerator(model)
    whole = enum.indices()
    blocks = list(enum.blocks(rows=5000))
    assert len(blocks) > 3
    pieces = np.concatenate(blocks)
    assert np.array_equal(pieces[np.lexsort(pieces.T[::-1])], whole)


def test_launch_checks_proven_once_hold_everywhere(hw: HardwareProfile) -> None:
    from ascend_tune import expr as expr_mod
    from ascend_tune.spec import launch

    model = ShapeModel(load_spec("matmul"), hw, {"M": 4096, "N": 4096, "K": 4096})
    cores = {"cube": hw["cube_cores"], "vector": hw["vector_cores"]}
    spans = {k: expr_mod.value_span(v) for k, v in model.base_env.items()}
    spans.update({p: expr_mod.outer_span(int(g.min()), int(g.max()))
                  for p, g in zip(model.spec.params, model.grids, strict=True)})
    kept = launch.checks_to_run(model.spec, cores, spans)
    proven = [c for c, k in zip(launch.checks(model.spec, cores), kept, strict=True) if k is None]
    assert len(proven) >= 20, "most TCubeTiling fields are proven to fit their C type"
    rng = np.random.default_rng(0)
    values = model.values(rng.integers(0, model.sizes, size=(20_000, model.sizes.size)))
    env = model.evaluate(values).env
    for check in proven:
        assert np.all(check.passes(env)), check.name
    # A range the value does not fit is not proven (issuerCores = 40 against [0, 1]).
    tiny = launch.Check("tiny", model.spec.derive[0][1], 0, 1)
    assert launch.always_pass(tiny, launch.derived_spans(model.spec, spans)) is False


def test_launch_rules_are_built_once_per_spec_and_chip(hw: HardwareProfile) -> None:
    from ascend_tune.spec import launch

    spec = load_spec("matmul")
    a = ShapeModel(spec, hw, {"M": 96, "N": 200, "K": 64})
    b = ShapeModel(spec, hw, {"M": 4096, "N": 4096, "K": 4096})
    assert a.launch_rules is b.launch_rules  # shared by every shape of the spec on the chip
    # Keyed by the spec object (a spec has no value hash): another load builds its own.
    assert a.launch_rules is not ShapeModel(load_spec("matmul"), hw, a.shape).launch_rules
    cores = {"cube": hw["cube_cores"], "vector": hw["vector_cores"]}
    assert list(a.launch_rules.checks) == launch.checks(spec, cores)
    assert list(a.launch_rules.names) == launch.check_names(spec)
    assert a.constraint_names[len(spec.constraints):] == launch.check_names(spec)
    # The enumerator takes the model's rules and proof; without the proof it makes its own.
    enum = enumerator(a)
    again = Enumerator(spec, a.base_env, a.grids, a.launch_rules, proven=a.space_proven)
    assert [c for c, _r in again.checks] == [c for c, _r in enum.checks]
    assert again.order == enum.order


@pytest.mark.parametrize("shape", [{"M": 1, "N": 4096, "K": 4096},
                                   {"M": 2, "N": 32, "K": 16}])
def test_walks_stay_inside_the_valid_set(shape: dict[str, int], hw: HardwareProfile) -> None:
    from ascend_tune.search import construct
    from ascend_tune.search.space import check_set

    model = ShapeModel(load_spec("matmul"), hw, shape)
    feasible = check_set(model)
    rng = np.random.default_rng(3)

    def valid(genomes: np.ndarray) -> np.ndarray:
        return model.evaluate(model.values(genomes)).valid

    # The checks seen from index genomes agree with the model on arbitrary configurations.
    raw = rng.integers(0, model.sizes, size=(5000, model.sizes.size))
    assert np.array_equal(~construct.violated(feasible, raw).any(axis=1), valid(raw))
    found, walks = construct.sample(feasible, model.sizes, 50, rng, max_walks=200_000)
    assert len(found) == 50 and walks >= 50 and valid(found).all()
    assert len(np.unique(found, axis=0)) == 50
    genes = rng.integers(0, model.sizes.size, size=len(found))
    moved, ok = construct.mutate(feasible, model.sizes, found, genes, rng)
    assert ok.any() and valid(moved[ok]).all()
    changed = (moved != found).sum(axis=1)
    assert changed.max() == 1, "a mutation moves one gene"
    repaired, ok = construct.repair(feasible, model.sizes, raw[:500], rng)
    assert ok.any() and valid(repaired[ok]).all()


SPEC_NAMES = sorted(p.stem for p in (ROOT / "operator_specs").glob("*.yaml"))


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_enumerated_rows_score_the_same_without_the_checks(name: str,
                                                           hw: HardwareProfile) -> None:
    """Exhaustive search scores the enumerated valid set without checking it again
    (ShapeModel.valid_objective): that is only right because every enumerated row passes
    every check the model applies, with the same latency bits."""
    for shape in _example_shapes(name):
        model = ShapeModel(load_spec(name), hw, shape)
        block = next(index_blocks(model, rows=50_000), None)
        if block is None:
            continue
        block = block[:20_000]
        checked = model.objective(block)
        assert np.isfinite(checked).all(), (name, shape)
        assert model.valid_objective(block).tobytes() == checked.tobytes(), (name, shape)


PROFILE_NAMES = sorted(p.stem for p in (ROOT / "hw_profiles").glob("*.yaml"))


@pytest.mark.parametrize("profile", PROFILE_NAMES)
@pytest.mark.parametrize("name", SPEC_NAMES)
def test_check_tables_are_the_vectorised_checks(name: str, profile: str) -> None:
    """Each check read off its table (the genes it reads) is the check computed on the whole
    row, for every built-in spec on every profile, at random rows and at valid ones."""
    hw = load_profile(profile)
    for shape in _example_shapes(name):
        model = ShapeModel(load_spec(name), hw, shape)
        checks = check_set(model)
        assert checks._tables is not None and not checks._untabled, "every check tabled"
        every = list(range(len(checks.checks)))
        rng = np.random.default_rng(3)
        rows = rng.integers(0, model.sizes, size=(500, model.sizes.size))
        valid = next(index_blocks(model, rows=50_000), rows[:0])[:500]
        for genomes in (rows, valid, rows[:1]):
            want = checks.passes_vectorised(genomes, every)
            assert np.array_equal(checks.passes(genomes, every), want), (name, shape)
            some = every[1::3][::-1]
            assert np.array_equal(checks.passes(genomes, some), want[:, some]), (name, shape)
        assert valid.size == 0 or checks.passes(valid, every).all()


def test_a_check_too_large_to_table_is_computed(hw: HardwareProfile) -> None:
    """With a table cap below l1_fits' 31 360 combinations, that check goes through the row
    kernel and the rest are tabled; the answers do not change."""
    model = ShapeModel(load_spec("matmul"), hw, {"M": 512, "N": 4096, "K": 1024})
    mixed = CheckSet(enumerator(model), proven=True, max_table_entries=10_000)
    names = [mixed.checks[i].name for i in mixed._untabled]
    assert names == ["l1_fits"]
    every = list(range(len(mixed.checks)))
    rows = np.random.default_rng(4).integers(0, model.sizes, size=(300, model.sizes.size))
    for n in (1, 8, 300):  # the kernel, then numpy, for the untabled check
        want = mixed.passes_vectorised(rows[:n], every)
        assert np.array_equal(mixed.passes(rows[:n], every), want)
        assert np.array_equal(mixed.passes(rows[:n], every[::-1]), want[:, ::-1])


def test_auto_counts_only_where_the_estimate_is_small(
        hw: HardwareProfile, monkeypatch: pytest.MonkeyPatch) -> None:
    """``auto`` scores the whole valid set up to EXHAUSTIVE_VALID_LIMIT configurations
    (counted); where random configurations put the valid set far above it, nothing is
    counted."""
    spec = load_spec("matmul")
    small = ShapeModel(spec, hw, {"M": 1, "N": 4096, "K": 4096})  # 180 064 valid
    name, _enum, valid = resolve_strategy(small, "auto")
    assert name == "exhaustive" and valid is not None
    assert 20_000 < len(valid) <= EXHAUSTIVE_VALID_LIMIT
    counted: list[int] = []
    real = Enumerator.indices

    def indices(self: Enumerator, cap: int = 5_000_000) -> np.ndarray:
        counted.append(cap)
        return real(self, cap)

    monkeypatch.setattr(Enumerator, "indices", indices)
    large = ShapeModel(spec, hw, {"M": 77, "N": 4096, "K": 4096})  # 1.26 M valid
    assert enumerator(large).estimated_valid() > COUNT_ESTIMATE_FACTOR * EXHAUSTIVE_VALID_LIMIT
    assert resolve_strategy(large, "auto")[0] == "ga" and not counted
    # Rare valid configurations: no random one is valid, so the estimate says nothing and
    # the (capped) count decides: 580 128 valid, over the limit.
    rare = ShapeModel(load_spec("batch_matmul"), hw, {"B": 64, "M": 1, "N": 4096, "K": 128})
    assert enumerator(rare).estimated_valid() == 0.0
    assert resolve_strategy(rare, "auto")[0] == "ga" and counted
    # A larger budget makes the heuristic dearer: the exact search then pays for itself.
    assert resolve_strategy(rare, "auto", budget=20_000)[0] == "exhaustive"


def test_auto_weighs_the_exact_search_against_the_budget() -> None:
    from ascend_tune.search.strategies import (
        EXHAUSTIVE_VALID_CAP,
        default_strategy,
        exact_limit,
    )

    assert exact_limit(2000) == EXHAUSTIVE_VALID_LIMIT  # the default budget: as before
    assert exact_limit(200) < exact_limit(2000) < exact_limit(6000)
    assert exact_limit(10**9) == EXHAUSTIVE_VALID_CAP  # held in memory: capped
    assert default_strategy(300_000, 2000) == "ga"
    assert default_strategy(300_000, 4000) == "exhaustive"
    assert default_strategy(None, 10**9) == "ga"


_ORDER_CASES = [("matmul", {"M": 77, "N": 4096, "K": 4096}),
                ("matmul", {"M": 128, "N": 1024, "K": 4096}),
                ("matmul", {"M": 4096, "N": 128, "K": 4096}),
                ("batch_matmul", {"B": 32, "M": 128, "N": 128, "K": 128})]


def _orders() -> list[list[str]]:
    hw = load_profile("ascend910b3")
    return [enumerator(ShapeModel(load_spec(name), hw, shape)).order
            for name, shape in _ORDER_CASES]


def test_assignment_order_does_not_depend_on_the_blas_kernel() -> None:
    """The assignment order (which decides how samples are drawn, so every search result) is
    the same whichever kernel OpenBLAS picks for the CPU. With the log-counts summed by a
    BLAS product, OpenBLAS's Sandybridge kernel gave other orders than its Haswell/Zen one for
    each of these shapes (37 of 148 spec/shape cases)."""
    code = ("import json; from tests.test_feasibility import _orders; "
            "print(json.dumps(_orders()))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "OPENBLAS_CORETYPE": "Sandybridge"},
                          check=True)
    assert json.loads(proc.stdout) == _orders()
