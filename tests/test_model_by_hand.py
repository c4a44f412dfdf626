"""The model's numbers worked out by hand from the formulas of docs/model.md.

Every other model test compares one implementation with another (engine, row kernel, memo,
tables) or with a measurement; a mistake shared by all of them, or a formula that drifts from
the documentation, passes those. Here the expected numbers are computed by hand (the
arithmetic is in the comments) on a profile with round numbers, so each one is checkable on
paper:

    clock 1000 MHz (1 cycle = 1 ns; GB/s = bytes per cycle), HBM 1000 B/cycle, L2 4000 B/cycle,
    GM ports: AIV 100 B/cycle, AIC 200 B/cycle; contention exponent p = 1 (softmin is then
    the harmonic sum: (a^-1 + c^-1)^-1; 2 where a test says so); 32 B blocks, 512 B GM
    alignment, unaligned rows at 0.5 of the curve; gm_to_ub: 100 cycles + curve
    [(1024 B, 32 B/cycle), (3072 B, 64)]; ub_to_gm: 50 cycles + 64 B/cycle flat; gm_to_l1:
    200 cycles + 128 B/cycle flat, ND2NZ 0 cycles per run (5 where a test says so), ND2NZ
    from a misaligned pitch at 0.75 / 0.5 / 0.25 (pitch 256 B / 128 B / less aligned);
    Mmad: 16 x 16 fractals, k0 16 (fp16) / 8 (fp32), 1 / 2 cycles per fractal, 2 cycles per
    Mmad; vector: 256 B repeats, at most 255 per instruction, 20 cycles per instruction,
    binary 1 cycle per repeat times a bank-conflict factor 2, unary 3; loop iteration 10
    cycles, flag handoff 2 cycles; head 2 us + 1 us * cores / chip cores, cube floor 5 us,
    MIX launch 1 us; 20 AIC, 40 AIV. A GM DataCopy (GM <-> UB, GM -> L1) holds its pipe for
    its bytes, at least 10 cycles (the issue cost), and its latency is waited for once after
    the copies queued with it: by the chain, and on the pipe when a flag hands the data on.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from ascend_tune.hardware import HardwareProfile, load_profile, load_profile_data
from ascend_tune.model import costs
from ascend_tune.model.engine import ShapeModel
from ascend_tune.spec import load_spec


def _leaf(value: object) -> dict[str, object]:
    return {"value": value, "source": "round number for hand-worked tests", "confidence": "low"}


@pytest.fixture(scope="module")
def hand() -> HardwareProfile:
    return _hand_profile()


def _hand_profile(contention: float = 1.0, nd2nz_cycles: float = 0) -> HardwareProfile:
    data = copy.deepcopy(load_profile("ascend910b3").data)
    data["name"] = "hand"
    chip, memory = data["chip"], data["memory"]
    chip["clock_mhz"] = _leaf(1000)
    chip["cube_cores"], chip["vector_cores"] = _leaf(20), _leaf(40)
    memory.update({"hbm_bandwidth_gbps": _leaf(1000), "l2_bandwidth_gbps": _leaf(4000),
                   "gm_align_bytes": _leaf(512), "gm_unaligned_efficiency": _leaf(0.5),
                   "ub_block_bytes": _leaf(32), "gm_contention_exponent": _leaf(contention),
                   "nd2nz_row_cycles": _leaf(nd2nz_cycles),
                   "nd2nz_pitch_256b_efficiency": _leaf(0.75),
                   "nd2nz_pitch_128b_efficiency": _leaf(0.5),
                   "nd2nz_pitch_32b_efficiency": _leaf(0.25),
                   "aiv_gm_port_bytes_per_cycle": _leaf(100),
                   "aic_gm_port_bytes_per_cycle": _leaf(200),
                   "copy_issue_cycles": _leaf(10)})
    transfers = data["transfers"]
    transfers["gm_to_ub"] = {"latency_cycles": _leaf(100),
                             "bandwidth_curve": _leaf([[1024, 32.0], [3072, 64.0]])}
    transfers["gm_to_l1"] = {"latency_cycles": _leaf(200),
                             "bandwidth_curve": _leaf([[1024, 128.0], [8192, 128.0]])}
    transfers["ub_to_gm"] = {"latency_cycles": _leaf(50),
                             "bandwidth_curve": _leaf([[1024, 64.0], [8192, 64.0]])}
    data["cube"].update({"fractal_mn": _leaf(16), "mmad_overhead_cycles": _leaf(2),
                         "k0": _leaf({"float16": 16, "bfloat16": 16, "int8": 32,
                                      "float32": 8, "hf32": 8}),
                         "cycles_per_fractal": _leaf({"float16": 1, "bfloat16": 1, "int8": 1,
                                                      "float32": 2, "hf32": 1})})
    vector = data["vector"]
    rates = copy.deepcopy(vector["cycles_per_repeat"]["value"])
    rates["binary"] = {1: 1.0, 2: 1.0, 4: 1.0}
    rates["unary"] = {1: 3.0, 2: 3.0, 4: 3.0}
    vector.update({"repeat_bytes": _leaf(256), "max_repeat": _leaf(255),
                   "issue_cycles": _leaf(20), "bank_conflict_factor": _leaf(2),
                   "cycles_per_repeat": _leaf(rates)})
    data["scalar"] = {"loop_iteration_cycles": _leaf(10), "sync_cycles": _leaf(2)}
    data["launch"].update({"head_base_us": _leaf(2.0), "head_full_chip_us": _leaf(1.0),
                           "mix_extra_us": _leaf(1.0), "cube_kernel_floor_us": _leaf(5.0)})
    return load_profile_data(data, "hand")


def _one(x: float) -> np.ndarray:
    return np.array([float(x)])


def _chain(t: costs.TransferCost) -> float:
    """One execution of a stage's copies as its consumer sees it: the pipe's cycles, then the
    latency of the last copy."""
    return float(t.cycles[0]) + float(np.asarray(t.wait_cycles).reshape(-1)[0])


def _gm_to_ub(hw: HardwareProfile, nbytes: float, rows: float = 1, count: float = 1,
              hit: float = 0.0, cores: float = 1, **kw: object) -> costs.TransferCost:
    return costs.transfer(hw, "gm_to_ub", _one(nbytes), _one(rows), _one(count), _one(hit),
                          _one(cores), **kw)  # type: ignore[arg-type]


# ---- transfer cost -------------------------------------------------------------------------

def test_transfer_one_aligned_row_alone_on_the_chip(hand: HardwareProfile) -> None:
    # 2048 B, one row: 2048 / 32 = 64 whole blocks, moved 2048 B; 2048 % 512 = 0: aligned.
    # Curve at 2048 B: halfway between (1024, 32) and (3072, 64) -> 48 B/cycle.
    # Chip share, 1 core, no L2 hit: softmin(1 * 100, 1000) = 1 / (1/100 + 1/1000)
    #   = 1000 / 11 = 90.909 B/cycle, all of it this core's: 48 < 90.9, not capped.
    # pipe cycles = max(2048 / 48, 10) = 42.667, then the latency 100 waited for: 142.667;
    # GM cycles = 2048 / (1000/11) = 22.528.
    t = _gm_to_ub(hand, 2048)
    assert t.bytes_per_transfer[0] == 2048
    assert t.bandwidth[0] == pytest.approx(48.0)
    assert t.cycles[0] == pytest.approx(2048 / 48)
    assert t.wait_cycles == pytest.approx(100.0)
    assert _chain(t) == pytest.approx(100 + 2048 / 48)
    assert t.gm_cycles[0] == pytest.approx(22.528)
    assert not t.share_capped[0]
    assert t.peak_bandwidth[0] == 64.0  # the curve's best point
    assert t.effective_bandwidth[0] == pytest.approx(2048 / (100 + 2048 / 48))


def test_transfer_rounds_every_row_to_whole_blocks(hand: HardwareProfile) -> None:
    # 2000 B in 4 rows of 500 B: each row ceil(500 / 32) = 16 blocks = 512 B -> moved 2048 B.
    # 500 % 512 != 0: unaligned, 0.5 x the curve at 2048 B = 24 B/cycle (share 90.9 above).
    # cycles = 2048 / 24 = 85.333 (+ the 100 waited); GM cycles on the moved bytes:
    # 2048 * 11 / 1000.
    t = _gm_to_ub(hand, 2000, rows=4)
    assert t.bytes_per_transfer[0] == 2048
    assert t.bandwidth[0] == pytest.approx(24.0)
    assert t.cycles[0] == pytest.approx(2048 / 24)
    assert t.gm_cycles[0] == pytest.approx(22.528)


def test_transfer_count_repeats_the_whole_transfer(hand: HardwareProfile) -> None:
    # count 3 of the first case, queued back to back: the pipe 3 * 42.667 = 128, the latency
    # waited for once after the last (100); GM cycles 3 * 22.528 = 67.584.
    t = _gm_to_ub(hand, 2048, count=3)
    assert t.cycles[0] == pytest.approx(3 * 2048 / 48)
    assert t.wait_cycles == pytest.approx(100.0)
    assert t.gm_cycles[0] == pytest.approx(67.584)
    assert t.per_transfer_cycles[0] == pytest.approx(2048 / 48)
    # A fractional count (a copy on half the trips) waits on that share: 0.5 * 100.
    assert _gm_to_ub(hand, 2048, count=0.5).wait_cycles == pytest.approx(50.0)


def test_a_small_copy_holds_its_pipe_for_the_issue_cost(hand: HardwareProfile) -> None:
    # 64 B: 64 / 32 = 2 cycles of bytes, below the 10-cycle issue cost: 10 on the pipe; 1000
    # of them queued hold it 10 000 cycles, and wait 100 once.
    t = _gm_to_ub(hand, 64, count=1000)
    assert t.cycles[0] == pytest.approx(10_000.0)
    assert t.wait_cycles == pytest.approx(100.0)
    # L1 -> L0A is not a GM copy: its own latency stays on the pipe, nothing is waited.
    spec = hand.transfers["l1_to_l0a"]
    t = costs.transfer(hand, "l1_to_l0a", _one(64), _one(1), _one(1), _one(0.0), _one(1))
    assert t.cycles[0] == pytest.approx(spec.latency_cycles + 64 / float(spec.bandwidth(64)))
    assert t.wait_cycles == 0.0


def test_transfer_curve_is_clamped_at_its_ends(hand: HardwareProfile) -> None:
    # 512 B (below the first point): 32 B/cycle; 8192 B (past the last): 64 B/cycle.
    # 512 B: 100 + 512 / 32 = 116 cycles; 8192 B: 100 + 8192 / 64 = 228 cycles.
    assert _chain(_gm_to_ub(hand, 512)) == pytest.approx(116.0)
    assert _chain(_gm_to_ub(hand, 8192)) == pytest.approx(228.0)


def test_a_declared_misaligned_stage_slows_the_chip_share_too(hand: HardwareProfile) -> None:
    # 2048 B declared misaligned on 40 cores: curve 48 * 0.5 = 24 B/cycle; the chip delivers
    # 1000 * 0.5 = 500 B/cycle: softmin(40 * 100, 500) = 1 / (1/4000 + 1/500) = 444.44,
    # 11.111 per core < 24: capped; cycles = 100 + 2048 / 11.111 = 284.32.
    t = _gm_to_ub(hand, 2048, cores=40, aligned=np.array([False]))
    assert t.bandwidth[0] == pytest.approx(4000 / 9 / 40)
    assert _chain(t) == pytest.approx(100 + 2048 * 9 * 40 / 4000)
    assert t.share_capped[0]
    # Declared aligned: full curve and chip rate although the row is not a multiple of 512.
    # Share: softmin(4000, 1000) = 800 -> 20 per core < 48: capped; 100 + 2048 / 20 = 202.4.
    t = _gm_to_ub(hand, 2000, cores=40, aligned=np.array([True]))
    assert t.bandwidth[0] == pytest.approx(20.0)


def test_non_gm_paths_book_no_gm_cycles(hand: HardwareProfile) -> None:
    # L1 -> L0A is inside the core: no chip share, no GM cycles, never capped.
    t = costs.transfer(hand, "l1_to_l0a", _one(4096), _one(1), _one(1), _one(0.0), _one(40))
    assert t.gm_cycles[0] == 0.0 and not t.share_capped[0]
    spec = hand.transfers["l1_to_l0a"]
    assert t.cycles[0] == pytest.approx(spec.latency_cycles + 4096 / float(spec.bandwidth(4096)))


def test_layouts_make_runs_as_documented(hand: HardwareProfile) -> None:
    # Column-major 4096 B tile of 64 rows of 2-byte elements: each column is 64 * 2 = 128 B,
    # 4096 / 128 = 32 runs. NZ: one run per 32 B wide fractal column, all 64 rows deep:
    # ceil(4096 / 64 / 32) = 2 runs of 64 * 32 = 2048 B. Row-major: 64 runs of 64 B.
    runs, run_bytes = costs.contiguous_runs(hand, _one(4096), _one(64), "column_major", 2)
    assert (runs[0], run_bytes[0]) == (32.0, 128.0)
    runs, run_bytes = costs.contiguous_runs(hand, _one(4096), _one(64), "nz", 2)
    assert (runs[0], run_bytes[0]) == (2.0, 2048.0)
    runs, run_bytes = costs.contiguous_runs(hand, _one(4096), _one(64), None, 2)
    assert (runs[0], run_bytes[0]) == (64.0, 64.0)
    # Column-major with 48 B columns (24 rows of 2 B): 4096 / 48 = 85.33 runs, each rounded
    # to 64 B: moved 85.33 * 64 = 5461.33 B (partial runs are charged their fraction).
    t = _gm_to_ub(hand, 4096, rows=24, layout="column_major", element_bytes=2)
    assert t.bytes_per_transfer[0] == pytest.approx(4096 / 48 * 64)


# ---- shared GM bandwidth -------------------------------------------------------------------

@pytest.mark.parametrize(("cores", "hit", "port", "share"), [
    # softmin(k * b, C) / k with p = 1, i.e. 1 / (1/(k b) + 1/C) / k:
    (1, 0.0, "aiv", 1000 / 11),  # 1 / (1/100 + 1/1000) = 90.909
    (10, 0.0, "aiv", 50.0),  # 1 / (1/1000 + 1/1000) = 500, / 10 = 50
    (40, 0.0, "aiv", 20.0),  # 1 / (1/4000 + 1/1000) = 800, / 40 = 20
    # L2 hit 0.5: C = 1 / (0.5/1000 + 0.5/4000) = 1600; 1 / (1/4000 + 1/1600) = 1142.86, / 40
    (40, 0.5, "aiv", 4000 * 1600 / 5600 / 40),
    # all hits: C = 4000; 1 / (1/4000 + 1/4000) = 2000, / 40 = 50
    (40, 1.0, "aiv", 50.0),
    # the AIC port: 20 cores * 200 = 4000 offered, same chip: 1 / (1/4000 + 1/1000) / 20 = 40
    (20, 0.0, "aic", 40.0),
])
def test_chip_share(hand: HardwareProfile, cores: int, hit: float, port: str,
                    share: float) -> None:
    chip = costs._chip_bytes_per_cycle(hand, np.array([hit]))
    got = costs.chip_share_bytes_per_cycle(hand, chip, np.array([cores]), port)
    assert got[0] == pytest.approx(share)
    scalar = costs.chip_share_bytes_per_cycle(hand, float(chip[0]), float(cores), port)
    assert float(scalar) == pytest.approx(share)


def test_the_share_caps_a_transfer_and_counts_its_gm_cycles(hand: HardwareProfile) -> None:
    # 40 cores, L2 hit 0.5: share 28.571 B/cycle (above) < 48: the share streams.
    # cycles = 100 + 2048 / 28.571 = 171.68; GM cycles = 2048 / 28.571 = 71.68.
    share = 4000 * 1600 / 5600 / 40
    t = _gm_to_ub(hand, 2048, hit=0.5, cores=40)
    assert t.share_capped[0]
    assert t.bandwidth[0] == pytest.approx(share)
    assert _chain(t) == pytest.approx(100 + 2048 / share)
    assert t.gm_cycles[0] == pytest.approx(71.68)


def test_more_cores_never_lower_the_chip_rate(hand: HardwareProfile) -> None:
    # k * share(k) = softmin(k * 100, 1000) grows with k towards 1000 (p = 1: 1000 k / (k + 10)).
    k = np.arange(1, 41, dtype=np.float64)
    total = k * costs.chip_share_bytes_per_cycle(hand, 1000.0, k, "aiv")
    assert np.allclose(total, 1000 * k / (k + 10))


# ---- cube and vector -----------------------------------------------------------------------

@pytest.mark.parametrize(("dtype", "m", "n", "k", "cycles"), [
    # ceil(17/16) * ceil(32/16) * ceil(40/16) = 2 * 2 * 3 = 12 fractals * 1 + 2 = 14
    ("float16", 17, 32, 40, 14),
    # float32: k0 = 8, ceil(40/8) = 5: 2 * 2 * 5 = 20 fractals * 2 cycles + 2 = 42
    ("float32", 17, 32, 40, 42),
    # one fractal exactly: 1 + 2 = 3; int8 k0 = 32: 16 x 16 x 32 is one fractal too
    ("float16", 16, 16, 16, 3),
    ("int8", 16, 16, 32, 3),
    # 1 x 1 x 1 still occupies a whole fractal
    ("bfloat16", 1, 1, 1, 3),
])
def test_mmad_cycles(hand: HardwareProfile, dtype: str, m: int, n: int, k: int,
                     cycles: float) -> None:
    assert costs.mmad_cycles(hand, dtype, _one(m), _one(n), _one(k))[0] == cycles


@pytest.mark.parametrize(("op", "element_bytes", "elements", "cycles"), [
    # binary fp16, 70 000 elements: 140 000 B / 256 = 546.9 -> 547 repeats,
    # ceil(547 / 255) = 3 instructions: 3 * 20 + 547 * 1 * 2 (bank conflicts) = 1154
    ("binary", 2, 70_000, 1154),
    # unary fp32, 64 elements: 256 B = 1 repeat, 1 instruction: 20 + 1 * 3 = 23
    ("unary", 4, 64, 23),
    # unary fp32, 65 elements: 260 B -> 2 repeats: 20 + 2 * 3 = 26
    ("unary", 4, 65, 26),
    # exactly 255 repeats is one instruction; 256 is two: 255 * 256 / 2 = 32 640 fp16
    ("unary", 2, 32_640, 20 + 255 * 3),
    ("unary", 2, 32_768, 2 * 20 + 256 * 3),
])
def test_vector_cycles(hand: HardwareProfile, op: str, element_bytes: int, elements: int,
                       cycles: float) -> None:
    got = costs.vector_cycles(hand, op, element_bytes, _one(elements))[0]
    assert got == pytest.approx(cycles)


# ---- head ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("side", "cores", "us"), [
    ("vector", 10, 2.25),  # 2 + 1 * 10 / 40
    ("vector", 40, 3.0),  # 2 + 1 * 40 / 40
    ("cube", 10, 7.5),  # 2 + 5 (cube floor) + 1 * 10 / 20
    ("cube", 20, 8.0),  # 2 + 5 + 1 * 20 / 20
])
def test_head_us(hand: HardwareProfile, side: str, cores: int, us: float) -> None:
    assert costs.head_us(hand, np.array([cores]), side)[0] == pytest.approx(us)


# ---- a whole kernel: loops, overlap, cores, head and roofline ------------------------------

# AddCustom (operator_specs/add.yaml), fp16, totalLength 65 536 on 4 cores, tiles of 4096,
# two buffers:
#   blockLength = align_up(ceil_div(65536, 4), 16) = 16 384; tileElems = 4096; 4 trips.
#   Chip share, 4 AIV cores, no hit: softmin(400, 1000) = 1 / (1/400 + 1/1000) = 285.71,
#   71.43 B/cycle per core (above the 64 of the curve: not capped).
#   copy_in_x, copy_in_y: 8192 B (aligned), 8192 / 64 = 128 cycles each on MTE2, GM cycles
#     8192 / 71.43 = 114.688 each; each hands its data to the add by its own flag, which
#     holds MTE2 for its latency: 2 * 100 on MTE2 and in the chain.
#   add: 8192 B = 32 repeats, 1 instruction: 20 + 32 * 1 * 2 = 84 cycles.
#   copy_out_z: 8192 / 64 = 128 cycles on MTE3; GM cycles 114.688; its latency (50) is
#     waited for at the trip's end, not on the pipe.
#   The tile loop (4 trips > 1): iteration 10 cycles on scalar; handoffs mte2 -> vector ->
#     mte3: 2 * 2 = 4 cycles. Sequential trip 10 + 128 + 128 + 84 + 200 + 128 + 50 + 4 = 732.
#     Steady trip: max(mte2 456, vector 84, mte3 178, scalar 14, GM 3 * 114.688 = 344.064)
#     = 456. Two buffers: 732 + (4 - 1) * 456 = 2100 cycles.
#   One item per core: the core loop has one trip, 2100 cycles = 2.1 us at 1000 MHz.
#   Head: 2 + 1 * 4 / 40 = 2.1 us. Latency 4.2 us.
#   Pipes over the 4 trips: mte2 4 * 456 = 1824 cycles (1.824 us), vector 0.336 us, mte3
#   0.512 us, scalar 4 * 14 = 56 cycles (0.056 us); GM 4 * 344.064 = 1376.256 cycles.
#   Bound: the largest of those and the head: head 2.1 us.
#   Roofline: 65 536 * 6 B = 393 216 B at 1000 B/ns = 0.393216 us (vector: 131 072 B at
#   256 B * 40 cores per ns = 0.0128 us). Efficiency 0.393216 / 4.2 = 0.093623.
ADD_SHAPE = {"totalLength": 65536}
ADD_CONFIG = {"blockDim": 4, "tileLength": 4096, "bufferNum": 2}


def test_add_kernel_by_hand(hand: HardwareProfile) -> None:
    model = ShapeModel(load_spec("add"), hand, ADD_SHAPE)
    row = np.array([[ADD_CONFIG[p] for p in model.spec.params]])
    e = model.evaluate(row)
    assert e.valid[0]
    assert e.latency_us[0] == pytest.approx(4.2)
    assert e.head_us[0] == pytest.approx(2.1)
    assert e.pipes_us["aiv_mte2_time_us"][0] == pytest.approx(1.824)
    assert e.pipes_us["aiv_vec_time_us"][0] == pytest.approx(0.336)
    assert e.pipes_us["aiv_mte3_time_us"][0] == pytest.approx(0.512)
    assert e.pipes_us["aiv_scalar_time_us"][0] == pytest.approx(0.056)
    assert e.gm_us[0] == pytest.approx(1.376256)
    assert e.roofline_us == pytest.approx(0.393216)
    assert e.roofline_us / e.latency_us[0] == pytest.approx(0.093623, abs=1e-6)
    # The search's objective (row kernel for small batches) gives the same hand number.
    assert model.objective(model.nearest_indices(ADD_CONFIG)[None, :])[0] == pytest.approx(4.2)


def test_add_kernel_one_buffer_serialises(hand: HardwareProfile) -> None:
    # bufferNum 1: the tile loop is 4 sequential trips, 4 * 732 = 2928 cycles = 2.928 us,
    # plus the 2.1 us head: 5.028 us.
    model = ShapeModel(load_spec("add"), hand, ADD_SHAPE)
    config = {**ADD_CONFIG, "bufferNum": 1}
    e = model.evaluate(np.array([[config[p] for p in model.spec.params]]))
    assert e.latency_us[0] == pytest.approx(5.028)


def test_add_kernel_unaligned_one_trip_tiles(hand: HardwareProfile) -> None:
    # totalLength 3584 on 32 cores, tiles of 256: blockLength = align_up(ceil_div(3584, 32),
    #   16) = 112, tileElems = min(256, 112) = 112, 112 / 112 = 1 trip (no iteration cost).
    # 224 B per copy, one row of 7 whole blocks, 224 % 512 != 0: unaligned, the curve clamped
    #   at 32 B/cycle * 0.5 = 16; share softmin(3200, 1000) / 32 = 761.9 / 32 = 23.81 > 16:
    #   copy in 224 / 16 = 14 cycles (twice), each flag holding MTE2 100 more; copy out: the
    #   curve gives 64 * 0.5 = 32 B/cycle, above the share: capped at 23.81, 224 / 23.81 =
    #   9.408, below the issue cost: 10, then its latency 50 waited for at the end;
    #   add: 224 B = 1 repeat, 20 + 1 * 2 = 22; handoffs 2 * 2 = 4.
    # Sequential trip 14 + 14 + 22 + 200 + 10 + 50 + 4 = 314 cycles; one trip: no steady term.
    # Head 2 + 1 * 32 / 40 = 2.8 us. Latency 2.8 + 0.314 = 3.114 us.
    # GM: 3 * 224 / 23.81 = 28.224 cycles = 0.028224 us.
    model = ShapeModel(load_spec("add"), hand, {"totalLength": 3584})
    config = {"blockDim": 32, "tileLength": 256, "bufferNum": 2}
    e = model.evaluate(np.array([[config[p] for p in model.spec.params]]))
    assert e.valid[0]
    assert e.latency_us[0] == pytest.approx(3.114)
    assert e.pipes_us["aiv_mte3_time_us"][0] == pytest.approx(0.010)
    assert e.gm_us[0] == pytest.approx(0.028224)
    assert e.pipes_us["aiv_scalar_time_us"][0] == pytest.approx(0.004)


def test_add_kernel_that_leaves_a_core_idle_is_invalid(hand: HardwareProfile) -> None:
    # 4096 elements on 40 cores: blockLength = align_up(ceil_div(4096, 40), 16) = 112 and
    # (40 - 1) * 112 = 4368 is not below 4096: the last core would get nothing.
    model = ShapeModel(load_spec("add"), hand, {"totalLength": 4096})
    config = {"blockDim": 40, "tileLength": 256, "bufferNum": 2}
    e = model.evaluate(np.array([[config[p] for p in model.spec.params]]))
    assert not e.valid[0] and e.latency_us[0] == np.inf
    assert model.constraint_names[int(e.failed[0])] == "every_core_busy"


# A mix kernel with a cube stage and a scalar stage on the AIC and a vector stage on the AIVs.
MIX_SPEC = """
operator: MiniMix
description: hand-worked mix kernel
core: mix
dtypes: {a: float16, c: float16}
shape:
  n: {min: 1, max: 65536, from: input0.size, doc: "elements"}
params:
  cores: {range: [1, hw.cube_cores], doc: AIC cores}
derive:
  per: n
constraints: {}
pipeline:
  roofline:
    gm_bytes: n * 2
    cube_flops: 2 * 32 * 32 * 32
    cube_dtype: a
  handoffs: 3
  cube:
    cores: cores
    body:
      - loop: k
        trips: 2
        body:
          - {stage: mmad, pipe: cube, m: 32, n: 32, k: 32, dtype: a}
          - {stage: bookkeeping, pipe: scalar, cycles: 7 * 2}
  vector:
    cores: 2 * cores
    body:
      - {stage: scale, pipe: vector, op: unary, elements: 64, dtype: c}
baseline:
  cores: 1
tiling:
  struct: MiniTilingData
  fields:
    n: {type: uint32_t, value: n}
  block_dim: cores
kernel: {mode: mix}
"""


def test_mix_kernel_by_hand(hand: HardwareProfile) -> None:
    # Cube side, 10 cores, one item each. Loop k, 2 trips, one buffer:
    #   mmad 32 x 32 x 32 fp16: 2 * 2 * 2 = 8 fractals * 1 + 2 = 10 cycles;
    #   scalar stage: 7 * 2 = 14 cycles; iteration 10 (2 trips); handoff cube -> scalar 2.
    #   Sequential trip 10 + 10 + 14 + 2 = 36; one buffer: 2 * 36 = 72 cycles = 0.072 us.
    #   Busy: cube 2 * 10 = 20 cycles (0.020 us); scalar 2 * (10 + 14 + 2) = 52 (0.052 us).
    # Vector side, 20 cores: unary fp16 over 64 elements = 128 B, 1 repeat: 20 + 3 = 23
    #   cycles = 0.023 us.
    # Head: the larger of the cube side's 2 + 5 + 1 * 10 / 20 = 7.5 us and the vector
    #   side's 2 + 1 * 20 / 40 = 2.5 us: 7.5 us.
    # Mix: max(0.072, 0.023) + 3 handoffs * 2 cycles (0.006 us) + 1 us MIX launch = 1.078.
    # Latency 7.5 + 1.078 = 8.578 us.
    # Roofline: GM 1000 * 2 B at 1000 B/ns = 0.002 us; cube 65 536 FLOPs at
    #   2 * (16 * 16 * 16 / 1) MACs * 20 cores * 1e9 = 163.84 TFLOP/s = 0.0004 us: 0.002 us.
    from ascend_tune.spec import load_spec_text

    model = ShapeModel(load_spec_text(MIX_SPEC, "mini.yaml"), hand, {"n": 1000})
    e = model.evaluate(np.array([[10]]))
    assert e.valid[0]
    assert e.latency_us[0] == pytest.approx(8.578)
    assert e.head_us[0] == pytest.approx(7.5)
    assert e.pipes_us["aic_mac_time_us"][0] == pytest.approx(0.020)
    assert e.pipes_us["aic_scalar_time_us"][0] == pytest.approx(0.052)
    assert e.pipes_us["aiv_vec_time_us"][0] == pytest.approx(0.023)
    assert e.roofline_us == pytest.approx(0.002)
    # 21 cores is one more AIC than the chip has: the launch check refuses it.
    assert model.evaluate(np.array([[20], [21]])).valid.tolist() == [True, False]


# ---- edges the cases above do not reach ------------------------------------------------------

def test_nd_to_nz_copies_pay_per_run_on_gm_to_l1_only() -> None:
    hw = _hand_profile(nd2nz_cycles=5)

    def gm_to_l1(layout: str | None, path: str = "gm_to_l1") -> float:
        t = costs.transfer(hw, path, _one(4096), _one(16), _one(1), _one(0.0), _one(1),
                           layout=layout, element_bytes=2)
        return _chain(t)

    # GM -> L1 latency 200, flat 128 B/cycle; 1 AIC: share softmin(200, 1000) = 166.7.
    # Row-major 4096 B in 16 rows of 256 B: unaligned, 64 B/cycle: streaming 4096 / 64 = 64
    # cycles; ND2NZ converts 16 runs * 5 = 80 cycles alongside; the longer binds: 200 + 80.
    assert gm_to_l1("row_major") == pytest.approx(280.0)
    # Column-major: 16 rows * 2 B = 32 B columns, 128 of them (unaligned, 64 B/cycle):
    # 200 + max(4096 / 64, 128 * 5) = 840.
    assert gm_to_l1("column_major") == pytest.approx(840.0)
    # NZ is already the L1 layout: 4096 / 16 / 32 = 8 runs of 512 B (aligned): 200 + 32.
    assert gm_to_l1("nz") == pytest.approx(232.0)
    # No layout: no ND2NZ either (the spec did not name an operand), rows of 256 B: 264.
    assert gm_to_l1(None) == pytest.approx(264.0)
    # GM -> UB never converts: 100 + 4096 / (0.5 * 64) = 228 (16 rows of 256 B, unaligned).
    assert gm_to_l1("row_major", "gm_to_ub") == pytest.approx(228.0)


def test_a_misaligned_pitch_costs_as_a_declared_misalignment() -> None:
    hw = _hand_profile()

    def transfer(pitch: float, cores: float = 1, path: str = "gm_to_l1") -> costs.TransferCost:
        return costs.transfer(hw, path, _one(8192), _one(16), _one(1), _one(0.0),
                              _one(cores), layout="row_major", element_bytes=2,
                              pitch=_one(pitch))

    # 8192 B in 16 rows of 512 B (aligned runs); GM -> L1 200 cycles + 128 B/cycle flat.
    # Pitch 4096 elements = 8192 B, a multiple of 512: aligned. 1 AIC: share
    # softmin(200, 1000) = 166.7 > 128: 200 + 8192 / 128 = 264.
    assert _chain(transfer(4096)) == pytest.approx(264.0)
    # Misaligned pitches: every row starts misaligned although each is 512 B long, and an
    # ND2NZ copy streams at the grade of the pitch's own alignment:
    # 3968 elements = 7936 B, 256 B-aligned: 0.75 x 128 = 96 B/cycle: 200 + 8192 / 96;
    assert _chain(transfer(3968)) == pytest.approx(200 + 8192 / 96)
    # 4032 elements = 8064 B, 128 B-aligned: 0.5 x 128 = 64 B/cycle: 200 + 128 = 328;
    assert _chain(transfer(4032)) == pytest.approx(328.0)
    # 4000 elements = 8000 B, 64 B-aligned: 0.25 x 128 = 32 B/cycle: 200 + 256 = 456.
    assert _chain(transfer(4000)) == pytest.approx(456.0)
    # GM -> UB has no ND2NZ: 0.5 x its curve (64 B/cycle at 8192 B) = 32: 100 + 256 = 356.
    assert _chain(transfer(4000, path="gm_to_ub")) == pytest.approx(356.0)
    # The chip's rate takes the same grade (CATLASS's grades are rates with every core
    # reading), on 20 AIC: softmin(20 * 200, 0.25 * 1000) = 1 / (1/4000 + 1/250) = 235.29,
    # 11.765 per core < 32: capped; 200 + 8192 / 11.765 = 896.32; GM cycles 696.32.
    t = transfer(4000, cores=20)
    assert t.share_capped[0]
    assert _chain(t) == pytest.approx(200 + 8192 * 17 * 20 / 4000)
    assert t.gm_cycles[0] == pytest.approx(8192 * 17 * 20 / 4000)
    # Other paths take gm_unaligned_efficiency at the chip (as gm_aligned: false): GM -> UB on
    # 40 AIV: softmin(40 * 100, 0.5 * 1000) = 444.4, 11.11 per core: 100 + 8192 / 11.11.
    t = transfer(4000, cores=40, path="gm_to_ub")
    assert _chain(t) == pytest.approx(100 + 8192 * 9 * 40 / 4000)
    # The aligned pitch on 20 AIC: softmin(4000, 1000) = 800, 40 per core: 200 + 8192 / 40.
    assert _chain(transfer(4096, cores=20)) == pytest.approx(200 + 8192 / 40)


def test_a_pitch_beyond_the_nd2nz_field_copies_run_by_run() -> None:
    hw = _hand_profile(nd2nz_cycles=5)

    def gm_to_l1(pitch: float, layout: str = "row_major", path: str = "gm_to_l1") -> float:
        t = costs.transfer(hw, path, _one(8192), _one(16), _one(3), _one(0.0), _one(1),
                           layout=layout, element_bytes=2, pitch=_one(pitch))
        return _chain(t)

    # 3 transfers of 8192 B in 16 rows of 512 B, pitch 65 535 elements (131 070 B, 2 B
    # aligned): the lowest grade, 0.25 x 128 = 32 B/cycle, streaming 8192 / 32 = 256 cycles,
    # ND2NZ 16 * 5 = 80 alongside: 3 * 256 on the pipe, queued, then one latency: 968. One
    # copy per transfer: the pitch fits the 16-bit field.
    assert gm_to_l1(65535) == pytest.approx(3 * 256 + 200)
    # Pitch 65 536 (131 072 B, aligned): one copy per row, 16 latencies a transfer on the pipe
    # (none waited after), and the conversion (16 * 5 = 80) outlasts the stream
    # (8192 / 128 = 64): 3 * (16 * 200 + 80).
    assert gm_to_l1(65536) == pytest.approx(3 * (16 * 200 + 80))
    # Column-major: runs are the 16-element columns (32 B; 256 of them, unaligned, 64 B/cycle),
    # the pitch the operand's rows: 256 copies, 3 * (256 * 200 + max(128, 256 * 5)) = 157 440.
    assert gm_to_l1(131072, "column_major") == pytest.approx(3 * (256 * 200 + 1280))
    # NZ has no ND2NZ copy (and no pitch); GM -> UB neither: a long pitch costs them nothing
    # beyond its alignment (131 072 B is aligned): 3 * 8192 / 64 + 100 = 484 on GM -> UB.
    assert gm_to_l1(131072, "nz") == gm_to_l1(4096, "nz")
    assert gm_to_l1(65536, "row_major", "gm_to_ub") == pytest.approx(3 * 8192 / 64 + 100)


def test_contention_exponent_two() -> None:
    # p = 2, 1 core, no hit: (100^-2 + 1000^-2)^(-1/2) = (1.01e-4)^(-0.5) = 99.504 B/cycle.
    hw = _hand_profile(contention=2.0)
    share = costs.chip_share_bytes_per_cycle(hw, np.array([1000.0]), np.array([1.0]), "aiv")
    assert share[0] == pytest.approx(1.01e-4 ** -0.5)


def test_chip_rate_of_a_scalar_hit_and_its_clip(hand: HardwareProfile) -> None:
    # Scalar hit 0.5: 1 / (0.5 / 1000 + 0.5 / 4000) = 1600; outside [0, 1] it is clipped.
    assert float(costs._chip_bytes_per_cycle(hand, 0.5)) == pytest.approx(1600.0)
    assert float(costs._chip_bytes_per_cycle(hand, 1.5)) == pytest.approx(4000.0)
    assert float(costs._chip_bytes_per_cycle(hand, -1.0)) == pytest.approx(1000.0)
    assert costs._chip_bytes_per_cycle(hand, np.array([1.5, -1.0])) == pytest.approx(
        [4000.0, 1000.0])


def test_chip_share_of_odd_inputs(hand: HardwareProfile) -> None:
    # Zero active cores count as one: 1000 / 11. A scalar core count with two chip rates:
    # 10 cores at 1000 -> 50; at 4000: 1 / (1/1000 + 1/4000) = 800, / 10 = 80.
    assert costs.chip_share_bytes_per_cycle(hand, 1000.0, np.array([0.0]))[0] == pytest.approx(
        1000 / 11)
    got = costs.chip_share_bytes_per_cycle(hand, np.array([1000.0, 4000.0]), 10.0)
    assert got == pytest.approx([50.0, 80.0])
    got = costs.chip_share_bytes_per_cycle(hand, 1000.0, np.array([10.0, 40.0]))
    assert got == pytest.approx([50.0, 20.0])


def test_rows_below_one_count_as_one(hand: HardwareProfile) -> None:
    # rows 0 is one row: 2048 B, aligned, as the first case: 100 + 2048 / 48.
    assert _chain(_gm_to_ub(hand, 2048, rows=0)) == pytest.approx(100 + 2048 / 48)


def test_runs_of_tiles_smaller_than_one_run(hand: HardwareProfile) -> None:
    # Column-major 64 B tile of 64 rows of 2 B: one 128 B column would hold it: 1 run.
    runs, _b = costs.contiguous_runs(hand, _one(64), _one(64), "column_major", 2)
    assert runs[0] == 1.0
    # NZ 512 B over 64 rows: 512 / 64 / 32 = 0.25 of a fractal column, rounded up to 1;
    # 3072 B: 1.5 -> 2; an empty tile still moves one run.
    for nbytes, want in ((512, 1.0), (3072, 2.0), (0, 1.0)):
        runs, _b = costs.contiguous_runs(hand, _one(nbytes), _one(64), "nz", 2)
        assert runs[0] == want, nbytes
    # The transfer's default element size is one byte: 4096 B column-major in 40 rows is
    # 4096 / 40 = 102.4 columns of 40 B, each moved as 64 B: 6553.6 B (2-byte elements
    # would make 80 B columns moved as 96 B: 4915.2 B).
    t = _gm_to_ub(hand, 4096, rows=40, layout="column_major")
    assert t.bytes_per_transfer[0] == pytest.approx(6553.6)


def test_a_share_equal_to_the_curve_is_not_a_cap(hand: HardwareProfile) -> None:
    # 2176 B (68 blocks) declared aligned: the curve gives 32 + 1152 / 2048 * 32 = 50 B/cycle;
    # 10 cores share softmin(1000, 1000) = 500: 50 each. Equal: the curve, not the share, is
    # the limit (capped means strictly below).
    t = _gm_to_ub(hand, 2176, cores=10, aligned=np.array([True]))
    assert t.bandwidth[0] == pytest.approx(50.0)
    assert not t.share_capped[0]


def test_a_misaligned_pitch_is_never_cheaper_than_an_aligned_one() -> None:
    hw = _hand_profile()

    def gm_to_l1(pitch: float, aligned: bool | None = None) -> float:
        t = costs.transfer(hw, "gm_to_l1", _one(4096), _one(16), _one(1), _one(0.0), _one(1),
                           None if aligned is None else np.array([aligned]), "row_major", 2,
                           pitch=_one(pitch))
        return _chain(t)

    # 16 runs of 256 B: misaligned by their length (0.5 x 128 = 64 B/cycle): 200 + 64.
    assert gm_to_l1(4096) == pytest.approx(264.0)
    # A 256 B-aligned pitch grades 0.75, but the runs already stream at 0.5: the lower holds.
    assert gm_to_l1(3968) == pytest.approx(264.0)
    # A 64 B-aligned pitch grades 0.25: 32 B/cycle, 200 + 128.
    assert gm_to_l1(4000) == pytest.approx(328.0)
    # Declared misaligned: 0.5 at the core and the chip whatever the pitch grade above it.
    assert gm_to_l1(3968, aligned=False) == gm_to_l1(4096, aligned=False)
