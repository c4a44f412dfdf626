from __future__ import annotations

import numpy as np

from ascend_tune.hardware import HardwareProfile
from ascend_tune.model.diagnose import diagnose
from ascend_tune.model.engine import ShapeModel
from ascend_tune.spec import OperatorSpec, load_spec


def _explain(spec: OperatorSpec, hw: HardwareProfile, shape: dict[str, int],
             **overrides: int) -> str:
    model = ShapeModel(spec, hw, shape)
    config = {**model.baseline_values(), **overrides}
    ev = model.evaluate(np.array([[config[p] for p in spec.params]]), detail=True)
    assert ev.valid[0]
    return diagnose(model, config, ev)


def test_small_tiles_point_at_the_tile_parameter(hw: HardwareProfile,
                                                 add_spec: OperatorSpec) -> None:
    text = _explain(add_spec, hw, {"totalLength": 1 << 24}, tileLength=512)
    assert text.startswith("MTE2 moves 1 KiB per transfer (copy_in_x)")
    assert text.endswith("a larger tileLength raises it")


def test_tiny_shape_is_launch_bound(hw: HardwareProfile, add_spec: OperatorSpec) -> None:
    text = _explain(add_spec, hw, {"totalLength": 1000})
    assert text.startswith("launch overhead")


def test_memory_roofline_is_recognised(hw: HardwareProfile, add_spec: OperatorSpec) -> None:
    text = _explain(add_spec, hw, {"totalLength": 1 << 24}, blockDim=40, tileLength=8192)
    # Roofline: 2^24 elements * 6 B = 100 663 296 B at 1.6 TB/s = 62.91 us; the model's
    # 68.11 us for 40 cores and tiles of 8192 is 62.91 / 68.11 = 92 % of it.
    assert text == ("GM bandwidth bound at the compulsory traffic (64.46 us at the chip rate): "
                    "this configuration is at the memory roofline (92% efficiency)")


def test_cube_bound_lever_is_a_real_improvement(hw: HardwareProfile,
                                                matmul_spec: OperatorSpec) -> None:
    # The baseline's 256 B B rows keep MTE2 busier than the Cube (ND2NZ converts every run);
    # with asc-devkit matmul_high_performance case 5's deeper K steps the Cube binds.
    shape, steps = {"M": 8192, "N": 1024, "K": 1024}, {"stepKa": 8, "stepKb": 4}
    text = _explain(matmul_spec, hw, shape, **steps)
    assert text.startswith("Cube bound")
    # The named move must shorten the Cube pipe when applied.
    model = ShapeModel(matmul_spec, hw, shape)
    base = {**model.baseline_values(), **steps}
    word, param = text.rsplit("; ", 1)[1].split(" shortens")[0].split(" or ")[0].split()[1:]
    grid = model.grids[matmul_spec.params.index(param)]
    i = int(np.searchsorted(grid, base[param]))
    moved = {**base, param: int(grid[i + 1 if word == "larger" else i - 1])}
    rows = np.array([[c[p] for p in matmul_spec.params] for c in (base, moved)])
    ev = model.evaluate(rows)
    assert ev.pipes_us["aic_mac_time_us"][1] < ev.pipes_us["aic_mac_time_us"][0]


def test_out_of_domain_set_is_flagged(hw: HardwareProfile, add_spec: OperatorSpec) -> None:
    from ascend_tune.tune.explain import explain

    ex = explain(add_spec, hw, {"totalLength": 1 << 20}, {"tileLength": 1000})
    assert any("tileLength=1000 is outside the searched domain (nearest: 512, 1024)" in n
               for n in ex.notes), ex.notes
    assert explain(add_spec, hw, {"totalLength": 1 << 20}, {"tileLength": 1024}).notes == ()


def test_a_pitch_no_tiling_can_fix_is_named_with_its_remedy(hw: HardwareProfile) -> None:
    spec = load_spec("catlass_matmul")
    # An LM head with B row-major [4096, 152064]: B's rows are 152 064 elements apart, over
    # the 65 535 one ND2NZ copy takes, so B comes in one row per copy whatever the tiles.
    text = _explain(spec, hw, {"M": 4096, "N": 152064, "K": 4096})
    assert text.endswith("; load_b_l1 copies one row at a time: its operand's rows are 152064 "
                         "elements apart, more than one ND2NZ copy takes (65535); pad the rows "
                         "or store the operand transposed or in NZ")
    # K = 4000: A's rows are 8000 B apart, not a multiple of 512: misaligned starts.
    text = _explain(spec, hw, {"M": 2048, "N": 4096, "K": 4000})
    assert text.endswith("; load_a_l1 reads rows that start misaligned (4000 elements apart, "
                         "not a multiple of 512 B): padding the rows restores full bandwidth")
    # Runs misaligned by their own length too (96-column tiles: 192 B rows): padding the
    # pitch alone would not help, so the note is not given.
    text = _explain(spec, hw, {"M": 4096, "N": 4000, "K": 4000}, m1=96, n1=96, k1=128, k0=32)
    assert "apart" not in text
    # A write (FixPipe) whose rows start misaligned: N = 1000, 2000 B apart.
    text = _explain(spec, hw, {"M": 8192, "N": 1000, "K": 16})
    assert "; write_c writes rows that start misaligned (1000 elements apart" in text
    # Aligned pitches: nothing to say about the layout.
    assert "pitch" not in _explain(spec, hw, {"M": 2048, "N": 4096, "K": 4096})
    assert "apart" not in _explain(spec, hw, {"M": 2048, "N": 4096, "K": 4096})
