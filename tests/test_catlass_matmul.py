"""The catlass_matmul spec's scheduling, worked by hand: tiles dealt round-robin over the AICs,
and the swizzle strips that decide the HBM traffic when A and B exceed L2
(operator_specs/catlass_matmul.yaml, docs/model.md "Shared GM bandwidth")."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ascend_tune.hardware import HardwareProfile, load_profile
from ascend_tune.model.engine import Evaluation, ShapeModel
from ascend_tune.spec import load_spec

MIB = 1 << 20


@pytest.fixture(scope="module")
def hw() -> HardwareProfile:
    return load_profile("ascend910b3")  # 20 AIC, L2 192 MiB


def _evaluate(hw: HardwareProfile, shape: dict[str, int], ref: str = "catlass_matmul",
              **config: int) -> Evaluation:
    spec = load_spec(ref)
    model = ShapeModel(spec, hw, shape)
    values = {"m1": 128, "n1": 256, "k1": 256, "k0": 64, "swizzleOffset": 1,
              "swizzleDirection": 0, "blockDim": 20, **config}
    ev = model.evaluate(np.array([[values[p] for p in spec.params]], dtype=np.int64))
    assert ev.valid[0], model.constraint_names[int(ev.failed[0])]
    return ev


def _derived(ev: Evaluation, name: str) -> Any:
    return np.asarray(ev.env[name]).ravel()[0]


def test_l2_exceeding_operands_read_the_streamed_one_once_per_strip(hw: HardwareProfile) -> None:
    # 16384^3 fp16: A = B = 512 MiB, together beyond the 192 MiB L2. 128 x 256 tiles:
    # 128 tile rows, 64 tile columns; every tile reads a 128 x 16384 A panel (4 MiB) and a
    # 16384 x 256 B panel (8 MiB): 8192 tiles * 12 MiB = 96 GiB of reads.
    shape = {"M": 16384, "N": 16384, "K": 16384}
    reads = 8192 * 12 * MIB
    expected = {
        (1, 0): 512 * MIB + 128 * 512 * MIB,  # Zn strips of one tile row: B once per row
        (4, 0): 512 * MIB + 32 * 512 * MIB,  # 32 strips of 4 rows (16 MiB of A held)
        (2, 1): 512 * MIB + 32 * 512 * MIB,  # Nz strips of 2 columns (16 MiB of B held)
        (8, 1): 512 * MIB + 8 * 512 * MIB,  # 8 strips of 8 columns (64 MiB held)
    }
    latency = {}
    for (offset, direction), miss in expected.items():
        ev = _evaluate(hw, shape, swizzleOffset=offset, swizzleDirection=direction)
        assert _derived(ev, "readBytes") == reads
        assert _derived(ev, "missBytes") == miss, (offset, direction)
        assert _derived(ev, "l2Hit") == pytest.approx(1 - miss / reads)
        latency[offset, direction] = float(ev.latency_us[0])
    # The default scheduler (<1, 0>) re-reads B from HBM for every tile row: slower than the
    # wider strips, and more HBM traffic never makes a configuration faster.
    assert latency[1, 0] > 1.3 * latency[4, 0]
    assert latency[8, 1] <= latency[2, 1] <= latency[1, 0]


def test_held_panels_beyond_half_of_l2_hit_nothing(hw: HardwareProfile) -> None:
    # K = 131072: a 128-row A panel is 32 MiB; a strip of 4 holds 128 MiB, more than half of
    # the 192 MiB L2, so no re-read hits: HBM reads every tile's panels.
    shape = {"M": 2048, "N": 2048, "K": 131072}
    held = _evaluate(hw, shape, swizzleOffset=4)
    assert _derived(held, "heldBytes") == 128 * MIB
    assert _derived(held, "missBytes") == _derived(held, "readBytes")
    assert _derived(held, "l2Hit") == 0.0
    # Offset 2 holds 64 MiB (at most half): A once, B once per strip of 2 of the 16 rows.
    two = _evaluate(hw, shape, swizzleOffset=2)
    a = b = 2048 * 131072 * 2
    assert _derived(two, "missBytes") == a + 8 * b


def test_operands_that_fit_in_l2_make_the_swizzle_irrelevant(hw: HardwareProfile) -> None:
    # 4096^3 fp16: A + B = 64 MiB fit in L2, every byte comes from HBM once.
    shape = {"M": 4096, "N": 4096, "K": 4096}
    latencies = set()
    for offset in (1, 2, 3, 4, 6, 8):
        for direction in (0, 1):
            ev = _evaluate(hw, shape, swizzleOffset=offset, swizzleDirection=direction)
            assert _derived(ev, "missBytes") == 64 * MIB
            latencies.add(float(ev.latency_us[0]))
    assert len(latencies) == 1


def test_tiles_are_dealt_round_robin(hw: HardwareProfile) -> None:
    # The CATLASS tuning guide's example: 1024 x 576 on 20 AIC. <128, 256> tiles make
    # 8 x 3 = 24 tiles, two rounds for 4 cores; <256, 128> make 4 x 5 = 20, one each.
    shape = {"M": 1024, "N": 576, "K": 4096}
    wide = _evaluate(hw, shape, m1=128, n1=256)
    tall = _evaluate(hw, shape, m1=256, n1=128)
    assert _derived(wide, "tiles") == 24 and _derived(wide, "tilesPerCore") == 2
    assert _derived(tall, "tiles") == 20 and _derived(tall, "tilesPerCore") == 1
    # Same work per tile (384 x 4096 of A and B), twice the tiles on the busiest core.
    assert float(wide.latency_us[0]) > 1.4 * float(tall.latency_us[0])


def test_the_preload_variant_overlaps_consecutive_tiles(hw: HardwareProfile) -> None:
    # Two tiles per core: BasicMatmul runs them one after the other, OptimizedMatmul starts
    # the second one's loads while the first drains. One tile per core: nothing to overlap.
    shape = {"M": 1024, "N": 576, "K": 4096}
    basic = _evaluate(hw, shape)
    preload = _evaluate(hw, shape, "catlass_matmul:preload")
    assert float(preload.latency_us[0]) < float(basic.latency_us[0])
    one = {"m1": 256, "n1": 128}
    assert (float(_evaluate(hw, shape, "catlass_matmul:preload", **one).latency_us[0])
            == float(_evaluate(hw, shape, **one).latency_us[0]))


def test_a_streamed_operand_that_fits_in_l2_is_read_once(hw: HardwareProfile) -> None:
    # M = 2^20, N = 256, K = 4096: A is 8 GiB, B 2 MiB. B stays in L2 beside any strip's
    # A panels (Zn), and in Nz the single tile column is the strip: every swizzle reads
    # A and B once from HBM, and none is faster than another.
    shape = {"M": 1 << 20, "N": 256, "K": 4096}
    a, b = (1 << 20) * 4096 * 2, 4096 * 256 * 2
    latencies = set()
    for offset, direction in ((1, 0), (3, 0), (1, 1)):
        ev = _evaluate(hw, shape, swizzleOffset=offset, swizzleDirection=direction)
        assert _derived(ev, "missBytes") == a + b, (offset, direction)
        latencies.add(float(ev.latency_us[0]))
    assert len(latencies) == 1


@pytest.mark.parametrize("ref,shape", [
    ("catlass_matmul", {"M": 1024, "N": 1024}),
    ("grouped_matmul", {"M": 1024, "G": 4, "N": 1024}),
    ("quant_matmul", {"M": 1024, "G": 1, "N": 1024})])
def test_a_partial_last_k_slice_is_charged_as_partial(hw: HardwareProfile, ref: str,
                                                      shape: dict[str, int]) -> None:
    # K = 1280 in k1 = 512 slices: two whole slices and a half. Charged as three whole
    # slices, it cost what K = 1536 costs; as partial, halfway between 1024 and 1536 (every
    # pitch 512 B aligned, so only the slices differ).
    config: dict[str, int] = {"m1": 128, "n1": 128, "k1": 512, "k0": 64}
    if ref == "catlass_matmul":
        config["swizzleOffset"] = 1
    if ref == "quant_matmul":
        config.update(k0=128, epiRows=8)
    lat = {}
    for k in (1024, 1280, 1536):
        ev = _evaluate(hw, {**shape, "K": k}, ref, **config)
        lat[k] = float(ev.latency_us[0])
    assert _derived(_evaluate(hw, {**shape, "K": 1280}, ref, **config), "kSlices") == 2.5
    assert lat[1024] < lat[1280] < lat[1536]
    assert lat[1280] == pytest.approx((lat[1024] + lat[1536]) / 2, rel=0.02)
