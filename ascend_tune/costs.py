"""Pure cost formulas, vectorised: transfers, Mmad, vector instructions, launch overhead.

Every constant comes from the hardware profile; the sources are in ``hw_profiles/*.yaml`` and
``../shared/reference``. All functions take and return numpy arrays (one entry per candidate).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ascend_tune.hardware import HardwareProfile
from ascend_tune.vocabulary import TWO_SOURCE_CLASSES

GM_PATHS = frozenset({"gm_to_l1", "gm_to_ub", "ub_to_gm", "l0c_to_gm"})


@dataclass(frozen=True)
class TransferCost:
    cycles: np.ndarray  # per trip, all `count` transfers
    gm_cycles: np.ndarray  # per trip: this core's share of the chip's GM bandwidth
    bytes_per_transfer: np.ndarray  # after rounding rows up to whole blocks
    bandwidth: np.ndarray  # bytes/cycle while streaming (after alignment and contention)
    effective_bandwidth: np.ndarray  # bytes/cycle including the fixed latency
    share_capped: np.ndarray  # True where the core's share of chip bandwidth is the limit
    peak_bandwidth: np.ndarray  # bytes/cycle at the best measured size, alone on the chip


def transfer(hw: HardwareProfile, path: str, nbytes: np.ndarray, rows: np.ndarray,
             count: np.ndarray, l2_hit: np.ndarray, active_cores: np.ndarray,
             aligned: np.ndarray | None = None) -> TransferCost:
    """cycles = count * (latency + bytes_moved / bandwidth).

    * ``bytes_moved``: each of ``rows`` contiguous runs rounds up to whole 32 B blocks (DataCopy
      moves blocks; S8/S11).
    * ``bandwidth``: the profile's size-dependent curve (msKPP single-core measurements), times
      ``gm_unaligned_efficiency`` when a GM-side row is not a multiple of ``gm_align_bytes``
      (512 B, S10), capped by this core's share of the chip bandwidth: HBM for misses and L2 for
      the declared hit fraction, split over the active cores (performance_model.md §5.3).
    """
    spec = hw.transfers[path]
    block = float(hw["ub_block_bytes"])
    rows = np.maximum(rows, 1.0)
    row_bytes = nbytes / rows
    moved = rows * np.ceil(row_bytes / block) * block
    bandwidth = spec.bandwidth(moved)
    peak = np.full_like(moved, float(spec.curve_bytes_per_cycle.max()))
    gm_cycles = np.zeros_like(moved)
    capped = np.zeros(moved.shape, dtype=bool)
    if path in GM_PATHS:
        if aligned is None:
            aligned = np.mod(row_bytes, float(hw["gm_align_bytes"])) == 0
        bandwidth = bandwidth * np.where(aligned, 1.0, float(hw["gm_unaligned_efficiency"]))
        hit = np.clip(l2_hit, 0.0, 1.0)
        chip_bytes_per_cycle = 1.0 / ((1.0 - hit) / hw.hbm_bytes_per_cycle
                                      + hit / hw.l2_bytes_per_cycle)
        share = chip_bytes_per_cycle / np.maximum(active_cores, 1.0)
        capped = share < bandwidth
        bandwidth = np.minimum(bandwidth, share)
        gm_cycles = count * moved / share
    per_transfer = spec.latency_cycles + moved / bandwidth
    cycles = count * per_transfer
    return TransferCost(cycles, gm_cycles, moved, bandwidth, moved / per_transfer, capped, peak)


def mmad_cycles(hw: HardwareProfile, dtype: str, m: np.ndarray, n: np.ndarray,
                k: np.ndarray) -> np.ndarray:
    """One Mmad of m x n x k: fractals of 16 x 16 x k0 at the dtype's rate, plus the
    per-instruction overhead (S6 utilisation formula; S5 measured overhead)."""
    fractal = float(hw["fractal_mn"])
    fractals = np.ceil(m / fractal) * np.ceil(n / fractal) * np.ceil(k / hw.k0[dtype])
    return fractals * hw.cycles_per_fractal[dtype] + float(hw["mmad_overhead_cycles"])


def vector_cycles(hw: HardwareProfile, op: str, element_bytes: int,
                  elements: np.ndarray) -> np.ndarray:
    """A count-mode vector API call over ``elements``: 256 B repeats at the class's cycles per
    repeat (two-source classes pay the UB bank-conflict factor), split into instructions of at
    most 255 repeats, each paying the issue overhead (S7, S5, S11, ATT v1)."""
    repeat_bytes = float(hw["repeat_bytes"])
    repeats = np.ceil(elements * element_bytes / repeat_bytes)
    instructions = np.ceil(repeats / float(hw["max_repeat"]))
    per_repeat = hw.vector_cycles_per_repeat[op][element_bytes]
    if op in TWO_SOURCE_CLASSES:
        per_repeat *= float(hw["bank_conflict_factor"])
    return instructions * float(hw["issue_cycles"]) + repeats * per_repeat


def head_us(hw: HardwareProfile, cores: Any, side: str) -> np.ndarray:
    """Launch (head) overhead: base + full * cores / chip cores. The form is CATLASS's
    CommonMatmul head model and S26's "head grows with launched cores"; the constants are the
    profile's (re-derived from measured device Durations; the leaves state where sources
    disagree)."""
    chip = float(hw[f"{side}_cores"])
    return float(hw["head_base_us"]) + float(hw["head_full_chip_us"]) * np.asarray(cores) / chip
