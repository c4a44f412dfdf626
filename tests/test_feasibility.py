"""The pruned enumeration of the valid set: exactly the configurations the model calls valid,
and an exhaustive search over it that is exact on raw spaces far beyond brute force."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ascend_tune.engine import ShapeModel
from ascend_tune.feasibility import TooMany, valid_indices
from ascend_tune.hardware import HardwareProfile
from ascend_tune.spec import load_spec, load_spec_text
from ascend_tune.strategies.base import decode_flat
from ascend_tune.tuner import TuneSettings, tune_shape

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
