from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ascend_tune.base.vocabulary import PIPE_COLUMNS
from ascend_tune.hardware import HardwareProfile, load_profile, load_profile_data
from ascend_tune.model import costs
from ascend_tune.model.engine import ShapeModel
from ascend_tune.spec import OperatorSpec, load_spec, load_spec_text

A1 = np.ones(1)


def _chain(t: costs.TransferCost) -> float:
    """One copy as its consumer sees it: the pipe's cycles, then the latency waited for."""
    return float(t.cycles[0]) + float(np.asarray(t.wait_cycles).reshape(-1)[0])


def test_transfer_hand_worked(hw: HardwareProfile) -> None:
    # GM->UB 16 KiB, 512 B-aligned, one core: 16384 / 150.9 (curve at 16384) = 108.575
    # cycles on MTE2, then the latency 190 waited for: 298.575. Chip share at 1.6 TB/s /
    # 1.8 GHz = 888.9 B/cycle.
    t = costs.transfer(hw, "gm_to_ub", np.array([16384.0]), A1, A1, np.zeros(1), A1)
    assert t.cycles[0] == pytest.approx(16384 / 150.9)
    assert _chain(t) == pytest.approx(190 + 16384 / 150.9)
    # The chip delivers softmin(1 core x 200 B/cycle, 888.9) with p = 1.5 to one core.
    share = (200.0 ** -1.5 + (1600e9 / 1.8e9) ** -1.5) ** (-1 / 1.5)
    assert t.gm_cycles[0] == pytest.approx(16384 / share)
    # Same bytes in 2 rows of 8200 B: rows round up to 8224 B (32 B blocks) -> 16448 B moved,
    # rows not 512 B aligned -> bandwidth x 0.7: 190 + 16448 / (151.03 * 0.7).
    t = costs.transfer(hw, "gm_to_ub", np.array([16400.0]), np.array([2.0]), A1, np.zeros(1), A1)
    bw = np.interp(16448, [16384, 32768], [150.9, 110.7]) * 0.7
    assert _chain(t) == pytest.approx(190 + 16448 / bw)
    # 40 cores: the chip delivers softmin(40 x 200, 888.9) = 869.3 B/cycle, 21.7 each, which
    # caps the 150.9 curve.
    t = costs.transfer(hw, "gm_to_ub", np.array([16384.0]), A1, A1, np.zeros(1),
                       np.array([40.0]))
    chip = 1600e9 / 1.8e9
    assert t.bandwidth[0] == pytest.approx((8000.0 ** -1.5 + chip ** -1.5) ** (-1 / 1.5) / 40)
    # Full L2 hit: the chip rate becomes L2's 7 TB/s (3888.9 B/cycle); 40 cores offer 8000, so
    # the chip delivers softmin(8000, 3888.9) = 3335.5, 80.0 each.
    t = costs.transfer(hw, "gm_to_ub", np.array([16384.0]), A1, A1, np.ones(1), np.array([40.0]))
    l2 = 7000e9 / 1.8e9
    assert t.bandwidth[0] == pytest.approx((8000.0 ** -1.5 + l2 ** -1.5) ** (-1 / 1.5) / 40)


def test_mmad_hand_worked(hw: HardwareProfile) -> None:
    # 128 x 256 x 64 fp16: 8 * 16 * 4 = 512 fractals at 1 cycle + 2 cycles overhead.
    assert costs.mmad_cycles(hw, "float16", np.array([128.0]), np.array([256.0]),
                             np.array([64.0]))[0] == 514
    # fp32: k0 = 8 and 2 cycles per fractal: 8 * 16 * 8 * 2 + 2 = 2050. int8: k0 = 32 -> 258.
    assert costs.mmad_cycles(hw, "float32", np.array([128.0]), np.array([256.0]),
                             np.array([64.0]))[0] == 2050
    assert costs.mmad_cycles(hw, "int8", np.array([128.0]), np.array([256.0]),
                             np.array([64.0]))[0] == 258
    # 17 x 17 x 17 fp16 pads to 2 x 2 x 2 fractals = 8 cycles + 2.
    assert costs.mmad_cycles(hw, "float16", np.array([17.0]), np.array([17.0]),
                             np.array([17.0]))[0] == 10


def test_vector_hand_worked(hw: HardwareProfile) -> None:
    # Add fp16 over 16384 elements: 32768 B = 128 repeats, one instruction (<= 255):
    # 22 issue + 128 * 1.0 * bank factor 2 = 278 cycles.
    assert costs.vector_cycles(hw, "binary", 2, np.array([16384.0]))[0] == 22 + 128 * 2
    # 65536 elements = 512 repeats -> 3 instructions: 3 * 22 + 512 * 2 = 1090.
    assert costs.vector_cycles(hw, "binary", 2, np.array([65536.0]))[0] == 3 * 22 + 1024
    # Exp fp32 1024 elements = 16 repeats at 2 cycles, no bank factor: 22 + 32 = 54.
    assert costs.vector_cycles(hw, "exp", 4, np.array([1024.0]))[0] == 54


def test_head_overhead_grows_with_cores(hw: HardwareProfile) -> None:
    # DQ: 2.0 + 1.3 * blockDim / coreNum us; a cube side adds the cube kernel floor (a fitted
    # leaf, read from the profile so a refit does not rewrite this test).
    assert costs.head_us(hw, np.array([40.0]), "vector")[0] == pytest.approx(3.3)
    assert costs.head_us(hw, np.array([10.0]), "vector")[0] == pytest.approx(2.325)
    floor = float(hw["cube_kernel_floor_us"])
    assert floor > 0
    assert costs.head_us(hw, np.array([20.0]), "cube")[0] == pytest.approx(3.3 + floor)


LOOP_SPEC = """
operator: LoopProbe
core: vector
dtypes: {x: float16}
shape: {n: {}}
params:
  buf: {values: [1, 2]}
derive: {}
pipeline:
  roofline: {gm_bytes: 1}
  vector:
    cores: 1
    body:
      - loop: t
        trips: n
        buffers: buf
        body:
          - {stage: a, pipe: scalar, cycles: 100}
          - {stage: b, pipe: vector, op: unary, elements: 128 * 30, dtype: x}
baseline: {buf: 1}
tiling: {struct: T, fields: {n: {type: uint32_t, value: n}}, block_dim: 1}
"""


def test_loop_semantics_hand_worked(hw: HardwareProfile) -> None:
    # Per trip: scalar loop cost 14 + stage a 100 (scalar) + stage b 22 + 30 = 52 (vector)
    # + one flag handoff (scalar -> vector) 2 cycles. Sequential sum 168.
    # One buffer, 10 trips: 1680 cycles. Two buffers: fill 168 + 9 * busiest pipe per trip
    # (scalar 14 + 100 + 2 = 116) = 1212. The per-core item loop around the body has one item:
    # a one-trip loop is straight-line code and adds nothing. Head: 2 + 1.3 * 1/40 us.
    spec = load_spec_text(LOOP_SPEC, "probe.yaml")
    model = ShapeModel(spec, hw, {"n": 10})
    ev = model.evaluate(np.array([[1], [2]]))
    head = 2 + 1.3 / 40
    assert ev.latency_us.tolist() == pytest.approx([1680 / 1800 + head, 1212 / 1800 + head])
    assert ev.pipes_us["aiv_vec_time_us"][0] == pytest.approx(520 / 1800)
    assert ev.pipes_us["aiv_scalar_time_us"][0] == pytest.approx(1160 / 1800)


def _random_valid(model: ShapeModel, rng: np.random.Generator, n: int) -> np.ndarray:
    idx = rng.integers(0, model.sizes, size=(n * 40, model.sizes.size))
    values = model.values(idx)
    ev = model.evaluate(values)
    return values[ev.valid][:n]


SHAPES = {"add": [{"totalLength": 4096}, {"totalLength": 1 << 24}, {"totalLength": 999_983}],
          "matmul": [{"M": 4096, "N": 4096, "K": 4096}, {"M": 128, "N": 16384, "K": 1024},
                     {"M": 1000, "N": 77, "K": 4000}]}


@pytest.mark.parametrize("which", ["add", "matmul"])
def test_invariants_on_random_configurations(which: str, hw: HardwareProfile,
                                             add_spec: OperatorSpec,
                                             matmul_spec: OperatorSpec) -> None:
    spec = add_spec if which == "add" else matmul_spec
    rng = np.random.default_rng(1)
    for shape in SHAPES[which]:
        model = ShapeModel(spec, hw, shape)
        values = _random_valid(model, rng, 300)
        assert len(values) > 20
        ev = model.evaluate(values)
        assert np.all(ev.latency_us >= model.roofline_us), "never below the roofline"
        for c in PIPE_COLUMNS:
            assert np.all(ev.pipes_us[c] <= ev.latency_us + 1e-9), c
        faster = ShapeModel(spec, hw.scaled(1.5), shape).evaluate(values)
        assert np.all(faster.latency_us <= ev.latency_us + 1e-9), "faster chip never slower"


def test_double_buffering_never_slower(hw: HardwareProfile, add_spec: OperatorSpec,
                                       matmul_spec: OperatorSpec) -> None:
    rng = np.random.default_rng(2)
    for spec, shape, knobs in ((add_spec, {"totalLength": 1 << 22}, ["bufferNum"]),
                               (matmul_spec, {"M": 2048, "N": 2048, "K": 2048},
                                ["dbL0A", "dbL0B", "dbL0C", "dbL1"])):
        model = ShapeModel(spec, hw, shape)
        values = _random_valid(model, rng, 200)
        for knob in knobs:
            j = spec.params.index(knob)
            single, double = values.copy(), values.copy()
            single[:, j], double[:, j] = 1, 2
            a, b = model.evaluate(single), model.evaluate(double)
            both = a.valid & b.valid
            assert both.sum() > 10
            assert np.all(b.latency_us[both] <= a.latency_us[both] + 1e-9), knob


MIX_SPEC = """
operator: MixProbe
core: mix
dtypes: {a: float16}
shape: {n: {}}
params:
  cores: {values: [2, 4]}
pipeline:
  roofline: {gm_bytes: 1}
  handoffs: 5
  cube:
    cores: cores
    body:
      - {stage: mm, pipe: cube, m: 128, n: 128, k: 128, dtype: a}
  vector:
    cores: 2 * cores
    items: n
    body:
      - {stage: work, pipe: scalar, cycles: 1000}
baseline: {cores: 2}
tiling: {struct: T, fields: {n: {type: uint32_t, value: n}}, block_dim: cores}
"""


def test_mix_kernel_and_waves_hand_worked(hw: HardwareProfile) -> None:
    # Cube side, one item per core (a one-trip loop: no loop cost): Mmad 8 * 8 * 8 + 2 = 514.
    # Vector side: 10 items over 2 * cores AIV cores -> ceil(10 / 4) = 3 items (cores = 2) or
    # ceil(10 / 8) = 2 (cores = 4), each 14 + 1000 cycles, single-buffered.
    # Mix: max(sides) + 5 handoffs * 2 cycles + 1 us MIX launch; head = the larger side's.
    spec = load_spec_text(MIX_SPEC, "mix.yaml")
    model = ShapeModel(spec, hw, {"n": 10})
    ev = model.evaluate(np.array([[2], [4]]))
    for row, (cores, items) in enumerate(((2, 3), (4, 2))):
        vec_cycles = items * 1014
        body = max(514, vec_cycles) + 10
        # Head: the cube side's (it carries the cube kernel floor).
        floor = float(hw["cube_kernel_floor_us"])
        head = max(2 + floor + 1.3 * cores / 20, 2 + 1.3 * 2 * cores / 40)
        assert ev.latency_us[row] == pytest.approx(body / 1800 + 1.0 + head)
        assert ev.pipes_us["aic_mac_time_us"][row] == pytest.approx(514 / 1800)
        assert ev.pipes_us["aiv_scalar_time_us"][row] == pytest.approx(vec_cycles / 1800)


def test_layout_decides_the_contiguous_runs(hw: HardwareProfile) -> None:
    # A 64-row x 256-column float16 tile (32 KiB). Row-major: 64 runs of 512 B. Column-major:
    # 256 runs of 64 rows x 2 B = 128 B. NZ: 256 * 2 / 32 = 16 fractal columns of 64 x 32 B.
    nbytes, rows = np.array([32768.0]), np.array([64.0])
    assert [a.tolist() for a in costs.contiguous_runs(hw, nbytes, rows, "row_major", 2)] == \
        [[64.0], [512.0]]
    assert [a.tolist() for a in costs.contiguous_runs(hw, nbytes, rows, "column_major", 2)] == \
        [[256.0], [128.0]]
    assert [a.tolist() for a in costs.contiguous_runs(hw, nbytes, rows, "nz", 2)] == \
        [[16.0], [2048.0]]
    # 128 B runs are not 512 B aligned: x 0.7 bandwidth; the 512 B and 2 KiB runs are aligned.
    times = {layout: _chain(costs.transfer(hw, "gm_to_l1", nbytes, rows, A1, np.zeros(1), A1,
                                           layout=layout, element_bytes=2))
             for layout in ("row_major", "column_major", "nz")}
    bw = float(hw.transfers["gm_to_l1"].bandwidth(32768.0))  # 200.2 B/cycle
    # ND runs also convert at nd2nz_row_cycles each (4.8), the longer of streaming and
    # converting binding: 64 runs -> 307 cycles, 256 runs -> 1229; NZ converts nothing.
    nd = float(hw["nd2nz_row_cycles"])
    assert nd > 0
    assert times["row_major"] == pytest.approx(210 + max(32768 / bw, 64 * nd))
    assert times["nz"] == pytest.approx(210 + 32768 / bw)
    assert times["column_major"] == pytest.approx(210 + max(32768 / (bw * 0.7), 256 * nd))


def test_nd2nz_cost_is_per_nd_run_on_gm_to_l1_only(tmp_path: Path) -> None:
    mine = tmp_path / "nd2nz.yaml"
    mine.write_text("name: nd2nz\nbase: ascend910b3\nmemory:\n  nd2nz_row_cycles: "
                    "{value: 5, source: test, confidence: low}\n")
    hw = load_profile(str(mine))
    zero = tmp_path / "none.yaml"
    zero.write_text("name: none\nbase: ascend910b3\nmemory:\n  nd2nz_row_cycles: "
                    "{value: 0, source: test, confidence: low}\n")
    base = load_profile(str(zero))
    nbytes, rows = np.array([32768.0]), np.array([64.0])

    def cycles(profile: HardwareProfile, path: str, layout: str | None) -> float:
        return _chain(costs.transfer(profile, path, nbytes, rows, A1, np.zeros(1), A1,
                                     layout=layout, element_bytes=2))

    # ND -> NZ: 64 row-major runs or 256 column-major runs, 5 cycles each, a throughput limit
    # that overlaps the streaming: the copy takes the longer of the two. Row-major: 64 * 5 =
    # 320 cycles against 164 streaming 32 KiB at 200 B/cycle; column-major: 256 * 5 = 1280
    # against 234 (at 70 %): both conversion-bound.
    # NZ and no layout (a stage without an operand) convert nothing; GM -> UB never converts.
    latency = 210.0
    assert cycles(hw, "gm_to_l1", "row_major") == pytest.approx(latency + 64 * 5)
    assert cycles(base, "gm_to_l1", "row_major") < latency + 64 * 5
    assert cycles(hw, "gm_to_l1", "column_major") == pytest.approx(latency + 256 * 5)
    assert cycles(hw, "gm_to_l1", "column_major") > cycles(base, "gm_to_l1", "column_major")
    assert cycles(hw, "gm_to_l1", "nz") == cycles(base, "gm_to_l1", "nz")
    assert cycles(hw, "gm_to_l1", None) == cycles(base, "gm_to_l1", None)
    assert cycles(hw, "gm_to_ub", "row_major") == cycles(base, "gm_to_ub", "row_major")


def test_column_major_b_costs_more_when_its_runs_are_short(hw: HardwareProfile) -> None:
    # Matmul B tile baseK x baseN: row-major runs are baseN * 2 B, column-major ones
    # stepKb * baseK * 2 B. With stepKb * baseK = 32 the column-major runs are 64 B (below the
    # 512 B alignment) while the 256 * 2 = 512 B row-major runs are aligned.
    row = load_spec("matmul")
    col = load_spec_text(row.source_text.replace("\ndtypes:", "\nlayouts: {b: column_major}"
                                                 "\ndtypes:", 1), "mm.yaml")
    shape = {"M": 2048, "N": 2048, "K": 2048}
    cfg = {"baseM": 128, "baseN": 256, "baseK": 32, "stepM": 1, "stepN": 1, "stepKa": 1,
           "stepKb": 1, "dbL1": 2, "dbL0A": 2, "dbL0B": 2, "dbL0C": 1, "iterateOrder": 0,
           "mDim": 4, "nDim": 5, "kDim": 1}
    out = []
    for spec in (row, col):
        model = ShapeModel(spec, hw, shape)
        ev = model.evaluate(np.array([[cfg[p] for p in spec.params]]), detail=True)
        assert ev.valid[0]
        (load_b,) = [s for s in ev.stages if s.name == "load_b_l1"]
        out.append(load_b.cycles)
    # Same bytes moved (64 B runs are whole 32 B blocks), at 0.7 of the bandwidth, and the ND2NZ
    # conversion of each run alongside (the longer binds; the latency is waited for, not on
    # the stage): per 16 KiB load row-major 32 runs, max(16384 / 192, 32 * 4.8) = 154 cycles;
    # column-major 256 runs, max(16384 / 134.4, 256 * 4.8) = 1229.
    nd = float(hw["nd2nz_row_cycles"])
    assert out[1] == pytest.approx(out[0] * max(16384 / (192 * 0.7), 256 * nd)
                                   / max(16384 / 192, 32 * nd), rel=0.02)


@pytest.mark.parametrize("change", ["faster chip", "fewer cores"])
def test_a_model_moved_to_another_profile_predicts_what_a_fresh_one_does(
        hw: HardwareProfile, matmul_spec: OperatorSpec, change: str) -> None:
    if change == "faster chip":
        other = hw.scaled(1.3)  # cost numbers change; the symbols construction reads do not
    else:
        data = {**hw.data, "chip": {**hw.data["chip"], "cube_cores": {
            **hw.data["chip"]["cube_cores"], "value": 8}}}
        other = load_profile_data(data, "fewer.yaml")
    model = ShapeModel(matmul_spec, hw, {"M": 1024, "N": 4096, "K": 1024})
    moved, fresh = model.with_profile(other), ShapeModel(matmul_spec, other, model.shape)
    values = model.values(np.random.default_rng(0).integers(0, model.sizes,
                                                             (400, model.sizes.size)))
    a, b = moved.evaluate(values), fresh.evaluate(values)
    np.testing.assert_array_equal(a.latency_us, b.latency_us)
    np.testing.assert_array_equal(a.valid, b.valid)
    assert moved.roofline_us == fresh.roofline_us and model.hw is hw
