"""The run-time selection rule in Python (emit/selection.py), piece by piece, against numbers
worked out from AddCustom's spec (operator_specs/add.yaml) and the C types by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ascend_tune.emit import render as emit
from ascend_tune.emit.selection import (
    BASELINE,
    EXACT,
    MODEL,
    NONE,
    REFINED,
    WALK,
    candidate_table,
    derive,
    field_value,
    first_failure,
    runtime_env,
)
from ascend_tune.hardware import HardwareProfile
from ascend_tune.model.dispatch import dispatch_model
from ascend_tune.spec import OperatorSpec
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def bundle() -> emit.Bundle:
    return emit.load_bundle(json.loads((ROOT / "examples/add/results.json").read_text()),
                            "add.json")


def test_runtime_env_takes_the_platform_core_counts(add_spec: OperatorSpec,
                                                    hw: HardwareProfile) -> None:
    env = runtime_env(add_spec, hw, 3, 5)
    assert (env["hw.cube_cores"], env["hw.vector_cores"]) == (3, 5)
    assert env["hw.ub_bytes"] == 196608 and env["sizeof.x"] == 2


def test_first_failure_gives_derived_values_and_the_first_failed_check(
        add_spec: OperatorSpec, hw: HardwareProfile) -> None:
    env = runtime_env(add_spec, hw, 20, 40)
    shape = {"totalLength": 1000}
    # 2 cores: alignedLength = align_up(1000, 16) = 1008, blockLength = align_up(504, 16) = 512,
    # tile 512: one tile; the last core takes 1000 - 512 = 488.
    local, failed = first_failure(add_spec, env, shape, {"blockDim": 2, "tileLength": 512,
                                                         "bufferNum": 1})
    assert failed is None
    assert (local["alignedLength"], local["blockLength"], local["tileNum"],
            local["lastBlockLength"]) == (1008, 512, 1, 488)
    assert derive(add_spec, env, shape, {"blockDim": 2, "tileLength": 512,
                                         "bufferNum": 1}) == local
    # Tiles of 32 768 on 2 buffers: 3 * 2 * 32768 * 2 B = 393 216 > 196 608 UB bytes; 64
    # cores also leave cores idle, but ub_fits comes first in the spec.
    bad = {"blockDim": 64, "tileLength": 32768, "bufferNum": 2}
    assert first_failure(add_spec, env, shape, bad)[1] == "ub_fits"
    assert derive(add_spec, env, shape, bad) is None
    # 8 cores: blocks of 128, (8 - 1) * 128 = 896 < 1000, every core busy; a 256 tile is
    # allowed (the minimum) and fits.
    assert first_failure(add_spec, env, shape, {"blockDim": 8, "tileLength": 256,
                                                "bufferNum": 2})[1] is None
    # 9 cores: blocks of align_up(112, 16) = 112, 8 * 112 = 896 < 1000: still busy; 10 cores:
    # blocks of align_up(101, 16) = 112, 9 * 112 = 1008 >= 1000: the last core idles.
    assert first_failure(add_spec, env, shape, {"blockDim": 10, "tileLength": 256,
                                                "bufferNum": 2})[1] == "every_core_busy"


def test_candidate_table_keeps_first_places() -> None:
    winners = [{"a": 1, "b": 2}, {"a": 1, "b": 2}, {"a": 3, "b": np.int64(4), "x": 9}]
    runners = [{"a": 3, "b": 4}, {"a": 5, "b": 6}, {"a": 1, "b": 2}]
    table = candidate_table(winners, runners, ["a", "b"])
    assert table == [{"a": 1, "b": 2}, {"a": 3, "b": 4}, {"a": 5, "b": 6}]
    assert all(type(v) is int for row in table for v in row.values())
    assert candidate_table([], [], ["a"]) == []


@pytest.mark.parametrize(("ctype", "value", "stored"), [
    ("float", 0.1, 0.10000000149011612),  # rounded to float32
    ("uint32_t", -1, 4294967295),  # wraps modulo 2^32
    ("uint32_t", 1 << 32, 0),
    ("int32_t", (1 << 31) - 1, 2147483647),
    ("int32_t", 1 << 31, -2147483648),  # two's complement
    ("int8_t", 128, -128),
    ("int8_t", -129, 127),
    ("uint8_t", 255, 255),
    ("uint16_t", 65535.9, 65535),  # a float truncates toward zero
    ("int64_t", -5.7, -5),
    ("int64_t", 7, 7),
])
def test_field_value_is_the_static_cast(ctype: str, value: float, stored: float) -> None:
    got = field_value(ctype, value)
    assert got == stored and type(got) is type(stored)


def test_exact_shape_takes_its_tuned_winner(bundle: emit.Bundle) -> None:
    for i, (shape, best) in enumerate(bundle.sorted_shapes()):
        sel = bundle.select(shape)
        assert (sel.source, sel.index, sel.config) == (EXACT, i, best)
        assert sel.env["blockDim"] == best["blockDim"]


def test_exact_winner_invalid_on_a_smaller_chip(bundle: emit.Bundle) -> None:
    # On one AIV every candidate launching more than one core fails; the 1-core candidates
    # and the baseline (8 cores capped at the chip's 1) compete.
    shape, best = bundle.sorted_shapes()[-1]
    assert best["blockDim"] > 1
    # No candidate launches a single core: only the baseline is valid.
    assert min(c["blockDim"] for c in bundle.candidates()) == 2
    # The ranking alone (refine_evals=0): the run-time descent is tests/test_refine.py's.
    sel = bundle.select(shape, 1, 1, refine_evals=0)
    assert (sel.source, sel.index) == (BASELINE, -1) and sel.config["blockDim"] == 1
    model = dispatch_model(bundle.spec, bundle.hw)
    values = [shape[v] for v in bundle.spec.shape_vars]
    valid = [c for c in [*bundle.candidates(), sel.config] if c["blockDim"] == 1]
    times = [model.latency_us(values, [c[p] for p in bundle.spec.params], 1, 1) for c in valid]
    assert sel.latency_us == min(times)


def test_unseen_shape_takes_the_fastest_valid_candidate(bundle: emit.Bundle) -> None:
    shape = {"totalLength": 3_000_000}
    assert shape not in [s for s, _b in bundle.shapes]
    sel = bundle.select(shape, refine_evals=0)
    model = dispatch_model(bundle.spec, bundle.hw)
    env = runtime_env(bundle.spec, bundle.hw, 20, 40)
    table = bundle.candidates()
    times = [model.latency_us([3_000_000], [c[p] for p in bundle.spec.params], 20, 40)
             if derive(bundle.spec, env, shape, c) is not None else np.inf for c in table]
    assert sel.source == MODEL and sel.index == int(np.argmin(times))
    assert sel.config == table[sel.index] and sel.latency_us == min(times)
    # With the descent (the default) it starts from that candidate and gets faster here: a
    # valid configuration, its derived values and its latency by the model.
    refined = bundle.select(shape)
    assert (refined.source, refined.index) == (REFINED, sel.index)
    assert refined.latency_us < sel.latency_us and refined.config != sel.config
    assert refined.env == derive(bundle.spec, env, shape, refined.config)
    assert refined.latency_us == model.latency_us(
        [3_000_000], [refined.config[p] for p in bundle.spec.params], 20, 40)


def _no_baseline_bundle() -> emit.Bundle:
    """The add example with a baseline that always launches one core more than the chip has."""
    doc = json.loads((ROOT / "examples/add/results.json").read_text())
    text = doc["spec"]["text"]
    start = text.index("  blockDim: ceil_div(align_up(totalLength")
    end = text.index("\n", start)
    doc["spec"]["text"] = text[:start] + "  blockDim: hw.vector_cores + 1" + text[end:]
    return emit.load_bundle(doc, "broken.json")


def test_the_walk_serves_a_shape_no_candidate_fits() -> None:
    bundle = _no_baseline_bundle()
    # 100 elements: every candidate's tile (512 or more) is oversized for blocks of at most
    # align_up(ceil_div(112, 2), 16) = 64 elements (the rule: tile < 2 * block, or 256).
    shape = {"totalLength": 100}
    env = runtime_env(bundle.spec, bundle.hw, 20, 40)
    assert all(derive(bundle.spec, env, shape, c) is None for c in bundle.candidates())
    sel = bundle.select(shape, refine_evals=0)
    assert (sel.source, sel.index) == (WALK, -1)
    assert derive(bundle.spec, env, shape, sel.config) is not None
    model = dispatch_model(bundle.spec, bundle.hw)
    assert sel.latency_us == model.latency_us([100], [sel.config[p] for p in bundle.spec.params],
                                              20, 40)
    assert sel.env["blockDim"] == sel.config["blockDim"]


def test_nothing_valid_on_a_chip_without_cores() -> None:
    bundle = _no_baseline_bundle()
    sel = bundle.select({"totalLength": 100}, 1, 0)
    assert (sel.source, sel.index, sel.env) == (NONE, -1, {})
    assert sel.config["blockDim"] == 1  # the baseline's value on 0 AIV: 0 + 1
    assert sel.latency_us == np.inf
