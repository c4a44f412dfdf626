from __future__ import annotations

import numpy as np
import pytest

from ascend_tune import costs
from ascend_tune.engine import ShapeModel
from ascend_tune.hardware import HardwareProfile
from ascend_tune.spec import OperatorSpec, load_spec_text
from ascend_tune.vocabulary import PIPE_COLUMNS

A1 = np.ones(1)


def test_transfer_hand_worked(hw: HardwareProfile) -> None:
    # GM->UB 16 KiB, 512 B-aligned, one core: latency 190 + 16384 / 150.9 (curve at 16384)
    # = 190 + 108.575 = 298.575 cycles. Chip share at 1.6 TB/s / 1.8 GHz = 888.9 B/cycle.
    t = costs.transfer(hw, "gm_to_ub", np.array([16384.0]), A1, A1, np.zeros(1), A1)
    assert t.cycles[0] == pytest.approx(190 + 16384 / 150.9)
    assert t.gm_cycles[0] == pytest.approx(16384 / (1600e9 / 1.8e9))
    # Same bytes in 2 rows of 8200 B: rows round up to 8224 B (32 B blocks) -> 16448 B moved,
    # rows not 512 B aligned -> bandwidth x 0.7: 190 + 16448 / (151.03 * 0.7).
    t = costs.transfer(hw, "gm_to_ub", np.array([16400.0]), np.array([2.0]), A1, np.zeros(1), A1)
    bw = np.interp(16448, [16384, 32768], [150.9, 110.7]) * 0.7
    assert t.cycles[0] == pytest.approx(190 + 16448 / bw)
    # 40 cores share 888.9 B/cycle: 22.2 B/cycle each caps the 150.9 curve.
    t = costs.transfer(hw, "gm_to_ub", np.array([16384.0]), A1, A1, np.zeros(1),
                       np.array([40.0]))
    assert t.bandwidth[0] == pytest.approx(1600e9 / 1.8e9 / 40)
    # Full L2 hit: the chip rate becomes L2's 7 TB/s (3888.9 B/cycle), so 40 cores get 97.2.
    t = costs.transfer(hw, "gm_to_ub", np.array([16384.0]), A1, A1, np.ones(1), np.array([40.0]))
    assert t.bandwidth[0] == pytest.approx(7000e9 / 1.8e9 / 40)


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
    # CATLASS: 1 + 7 * blockDim / coreNum us.
    assert costs.head_us(hw, np.array([40.0]), "vector")[0] == pytest.approx(8.0)
    assert costs.head_us(hw, np.array([10.0]), "vector")[0] == pytest.approx(2.75)


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
    # a one-trip loop is straight-line code and adds nothing. Head: 1 + 7 * 1/40 us.
    spec = load_spec_text(LOOP_SPEC, "probe.yaml")
    model = ShapeModel(spec, hw, {"n": 10})
    ev = model.evaluate(np.array([[1], [2]]))
    head = 1 + 7 / 40
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
        head = max(1 + 7 * cores / 20, 1 + 7 * 2 * cores / 40)
        assert ev.latency_us[row] == pytest.approx(body / 1800 + 1.0 + head)
        assert ev.pipes_us["aic_mac_time_us"][row] == pytest.approx(514 / 1800)
        assert ev.pipes_us["aiv_scalar_time_us"][row] == pytest.approx(vec_cycles / 1800)
