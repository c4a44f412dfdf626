"""Pure cost formulas, vectorised: transfers, Mmad, vector instructions, launch overhead.

Every constant comes from the hardware profile; the sources are in ``hw_profiles/*.yaml`` and
``docs/model.md``. All functions take and return numpy arrays (one entry per candidate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ascend_tune.base.vocabulary import GM_PATHS, TWO_SOURCE_CLASSES
from ascend_tune.hardware import HardwareProfile
from ascend_tune.hardware.profile import TransferPath

AIC_GM_PATHS = frozenset({"gm_to_l1", "l0c_to_gm"})  # the others are the AIV's
# The MTE2 / MTE3 DataCopy paths with GM at one end: a copy's GM latency is waited for by its
# consumer, not held on the pipe (FixPipe's L0C->GM keeps its short latency on the pipe).
QUEUED_COPY_PATHS = frozenset({"gm_to_l1", "gm_to_ub", "ub_to_gm"})
ND_LAYOUTS = ("row_major", "column_major")  # converted by ND2NZ on the way into L1


@dataclass(frozen=True)
class TransferCost:
    cycles: np.ndarray  # per trip, all `count` transfers: the pipe's busy time
    gm_cycles: np.ndarray  # per trip: this core's share of the chip's GM bandwidth
    bytes_per_transfer: np.ndarray  # after rounding rows up to whole blocks
    bandwidth: np.ndarray  # bytes/cycle while streaming (after alignment and contention)
    per_transfer_cycles: np.ndarray  # one transfer: fixed latency plus streaming
    share_capped: np.ndarray  # True where the core's share of chip bandwidth is the limit
    peak_bandwidth: np.ndarray  # bytes/cycle at the best measured size, alone on the chip
    # Where the stage gave a pitch: runs misaligned by the pitch alone (their length and a
    # declared gm_aligned are fine), and ND2NZ copies split into one copy per run (None: no
    # pitch, or nothing of the kind).
    misaligned_starts: np.ndarray | None = None
    split_copies: np.ndarray | None = None
    # The GM round trip the stage's consumer waits for after the pipe has issued the copies
    # (once per execution of the stage: queued copies overlap their latencies); 0 where the
    # copies pay it on the pipe (split ND2NZ copies) and on local paths without one.
    wait_cycles: Any = 0.0

    @property
    def effective_bandwidth(self) -> np.ndarray:
        """Bytes/cycle of one copy alone, its latency included (computed on demand: `explain`
        reads it, the batch path does not)."""
        out: np.ndarray = self.bytes_per_transfer / (self.per_transfer_cycles + self.wait_cycles)
        return out


# Chip shares computed for earlier stages of one batch, by (port, id(active cores), id(L2
# hit)): stages reading the same hit array on the same cores (Matmul's A and B loads) share
# it instead of repeating its three array powers. The value holds the key arrays, so their
# ids cannot pass to other arrays while the cache lives; the arrays must not change in it.
ShareCache = dict[tuple[str, int, int], tuple[Any, Any, np.ndarray]]


def _gm_efficiency(hw: HardwareProfile, path: str, row_bytes: np.ndarray,
                   aligned: np.ndarray | None, pitch: np.ndarray | None, layout: str | None,
                   element_bytes: int) -> tuple[Any, Any, np.ndarray | None]:
    """A GM-side copy's rate factors: this core's (run length, declared alignment, pitch),
    the chip's (None: unaffected, only a declared or pitch misalignment touches it), and where
    the pitch is the only misalignment (None without a pitch)."""
    pitch_only: np.ndarray | None = None
    unaligned = float(hw["gm_unaligned_efficiency"])
    declared = aligned
    if aligned is None:
        # mod(x, a) == 0 exactly where fmod(x, a) == 0 (numpy's mod adds a to a nonzero
        # fmod of the other sign, which cannot reach 0), and fmod skips mod's division.
        aligned = np.fmod(row_bytes, float(hw["gm_align_bytes"])) == 0
    efficiency = np.where(aligned, 1.0, unaligned)
    chip_efficiency = None if declared is None else np.where(declared, 1.0, unaligned)
    if pitch is not None:
        # Runs a misaligned pitch apart start misaligned whatever their length (the
        # 12288 x 12287 reads in transfer's note are exactly that): S10's rate at the core and the
        # chip, or for an ND2NZ copy the grade of the pitch's own alignment (CATLASS's
        # stride grades, per-core rates with every core reading; the hw leaves name the
        # sources), never above what the runs alone get.
        pitch_bytes = np.multiply(pitch, float(element_bytes))
        starts = np.fmod(pitch_bytes, float(hw["gm_align_bytes"])) == 0
        # Where the pitch is the only misalignment (for explain: padding would help).
        pitch_only = np.logical_and(aligned, np.logical_not(starts))
        off: Any = (nd2nz_pitch_grade(hw, pitch_bytes)
                    if path == "gm_to_l1" and layout in ND_LAYOUTS else unaligned)
        efficiency = np.where(starts, efficiency, np.minimum(efficiency, off))
        chip_base: Any = 1.0 if chip_efficiency is None else chip_efficiency
        chip_efficiency = np.where(starts, chip_base, np.minimum(chip_base, off))
    return efficiency, chip_efficiency, pitch_only


def _nd2nz(hw: HardwareProfile, spec: TransferPath, per_transfer: np.ndarray, runs: np.ndarray,
           pitch: np.ndarray | None) -> tuple[np.ndarray, Any, np.ndarray | None]:
    """An ND -> NZ GM->L1 copy's time per transfer before its latency, the latency (per run
    where the copy splits) and where it splits (None: no pitch given)."""
    latency: Any = spec.latency_cycles
    split: np.ndarray | None = None
    # DataCopy ND2NZ scatters every ND run into 16-row fractals on MTE2 (S10 data_copy),
    # overlapped with the stream: a single-AIC 8192^3 matmul reads 128 B runs at ~4.5-5
    # cycles each (asc-devkit matmul_high_performance cases 0-1), and 1-2 KiB runs no
    # slower than the curve (cases 4-5), so the limit is a max, not a sum.
    per_transfer = np.maximum(per_transfer, runs * float(hw["nd2nz_row_cycles"]))
    if pitch is not None:
        # The ND2NZ pitch field is 16 bits of elements: a longer pitch takes one copy
        # per run, each with its own latency (hw leaf nd2nz_max_pitch_elements).
        split = np.asarray(pitch > float(hw["nd2nz_max_pitch_elements"]))
        if split.any():
            latency = np.where(split, runs * spec.latency_cycles, spec.latency_cycles)
    return per_transfer, latency, split


def transfer(hw: HardwareProfile, path: str, nbytes: np.ndarray, rows: np.ndarray,
             count: np.ndarray, l2_hit: np.ndarray, active_cores: np.ndarray,
             aligned: np.ndarray | None = None, layout: str | None = None,
             element_bytes: int = 1, share_cache: ShareCache | None = None,
             pitch: np.ndarray | None = None) -> TransferCost:
    """cycles = count * (latency + bytes_moved / bandwidth); for a GM DataCopy (GM -> L1,
    GM <-> UB) count * max(copy_issue_cycles, bytes_moved / bandwidth) on the pipe and the
    latency in ``wait_cycles``: queued copies overlap their GM latencies, and the consumer
    (pipeline._loop: the chain, and the pipe at a flag handoff) waits for it once per
    execution of the stage (on the share of trips a fractional count gives).

    * ``bytes_moved``: each contiguous run (a row, or what ``layout`` makes of the tile's
      ``rows``: :func:`contiguous_runs`) rounds up to whole 32 B blocks (DataCopy moves
      blocks; S8/S11).
    * ND -> NZ: a GM->L1 copy of an ND operand converts each run on MTE2 at
      ``nd2nz_row_cycles`` per run, alongside the streaming: the copy takes the longer of the
      two (short runs are conversion-bound, long runs stream).
    * ``bandwidth``: the profile's size-dependent curve (msKPP single-core measurements), times
      ``gm_unaligned_efficiency`` when a GM-side row is not a multiple of ``gm_align_bytes``
      (512 B, S10) or the stage declares ``gm_aligned`` false (then the chip rate too), capped
      by this core's share of the chip bandwidth: HBM for misses and L2 for the declared hit
      fraction, as the chip delivers it to the active cores
      (:func:`chip_share_bytes_per_cycle`; docs/model.md "Shared GM bandwidth").
    * ``pitch`` (elements between the starts of consecutive runs in GM, when the stage
      gives the operand's matrix): runs whose starts step by a pitch that is not a multiple
      of ``gm_align_bytes`` start misaligned, which costs as a declared misalignment (core
      and chip); an ND2NZ copy whose pitch exceeds ``nd2nz_max_pitch_elements`` issues one
      copy per run, each paying the path's latency.

    ``share_cache`` (one dict per batch) lets later stages of the batch reuse a chip share.
    The arithmetic runs in place on arrays this function creates (fewer temporaries: at
    65 536 rows each one is a fresh half-megabyte the kernel faults in page by page); every
    operation and its operand order are those of the formulas above.
    """
    spec = hw.transfers[path]
    block = float(hw["ub_block_bytes"])
    rows = np.maximum(rows, 1.0)
    runs, row_bytes = contiguous_runs(hw, nbytes, rows, layout, element_bytes)
    moved = np.divide(row_bytes, block)  # runs * ceil(row_bytes / block) * block
    moved = np.ceil(moved, out=_into(moved, moved))
    moved = np.multiply(runs, moved, out=_into(moved, runs, moved))
    moved = np.multiply(moved, block, out=_into(moved, moved))
    bandwidth = spec.bandwidth(moved)
    # np.full_like(moved, peak) without the fill: one read-only value viewed at every row.
    peak = np.broadcast_to(np.array(float(spec.curve_bytes_per_cycle.max()),
                                    dtype=np.asarray(moved).dtype), np.shape(moved))
    pitch_only: np.ndarray | None = None
    if path in GM_PATHS:
        # Whether the chip's rate suffers too: only for a declared or pitch misalignment
        # (None: not at all). A start address misaligned wastes part of every burst at the
        # chip too (asc-devkit data_copy: 12288 x 12287 half reads 1.28x (GM->UB) and 1.9x
        # (GM->L1) slower than 12288^2 at full-chip, chip-bound core counts). Short runs from
        # aligned starts do not (128 B runs: 1.08x), so the run-length rule stays a per-core
        # effect.
        efficiency, chip_efficiency, pitch_only = _gm_efficiency(
            hw, path, row_bytes, aligned, pitch, layout, element_bytes)
        del row_bytes  # temporaries go before the chip share makes its own (a lower peak)
        bandwidth = np.multiply(bandwidth, efficiency, out=_into(bandwidth, bandwidth,
                                                                 efficiency))
        del efficiency
        if chip_efficiency is not None and not np.all(chip_efficiency == 1.0):
            chip = _chip_bytes_per_cycle(hw, l2_hit)
            chip = np.multiply(chip, chip_efficiency, out=_into(chip, chip, chip_efficiency))
            share = chip_share_bytes_per_cycle(hw, chip, active_cores, _port(path))
        else:
            share = _cached_share(hw, l2_hit, active_cores, path, share_cache)
        capped = share < bandwidth
        bandwidth = np.minimum(bandwidth, share, out=_into(bandwidth, bandwidth, share))
        gm_cycles = np.multiply(count, moved)  # count * moved / share
        gm_cycles = np.divide(gm_cycles, share, out=_into(gm_cycles, gm_cycles, share))
    else:
        gm_cycles = np.zeros_like(moved)
        capped = np.zeros(np.shape(moved), dtype=bool)
    per_transfer = np.divide(moved, bandwidth)  # latency + moved / bandwidth
    latency: Any = spec.latency_cycles
    split: np.ndarray | None = None
    if path == "gm_to_l1" and layout in ND_LAYOUTS:
        per_transfer, latency, split = _nd2nz(hw, spec, per_transfer, runs, pitch)
    wait: Any = 0.0
    if path in QUEUED_COPY_PATHS:
        # A DataCopy holds its queue for its bytes, at least its issue cost; its GM latency
        # overlaps the copies queued behind it and is waited for after them (wait_cycles).
        per_transfer = np.maximum(per_transfer, float(hw["copy_issue_cycles"]),
                                  out=_into(per_transfer, per_transfer))
        # Once per execution of the stage however many copies it queues; a fractional count
        # (a copy issued on that share of the loop's trips, none at 0) waits on that share.
        wait = np.minimum(count, 1.0) * spec.latency_cycles
        if split is not None and split.any():
            # One copy per run, each waiting out its own latency on the pipe (the K = 80000
            # dev row: ~440 000 single-row copies at ~210 cycles each).
            per_transfer = np.where(split, latency + per_transfer, per_transfer)
            wait = np.where(split, 0.0, wait)
    else:
        per_transfer = np.add(latency, per_transfer,
                              out=_into(per_transfer, latency, per_transfer))
    cycles = count * per_transfer
    return TransferCost(cycles, gm_cycles, moved, bandwidth, per_transfer, capped, peak,
                        pitch_only, split, wait)


def nd2nz_pitch_grade(hw: HardwareProfile, pitch_bytes: Any) -> np.ndarray:
    """The bandwidth fraction of a GM->L1 ND2NZ copy from rows ``pitch_bytes`` apart (a
    pitch off the 512 B alignment), by the pitch's own alignment: 256 B, 128 B, less."""
    return np.where(np.fmod(pitch_bytes, 256.0) == 0, float(hw["nd2nz_pitch_256b_efficiency"]),
                    np.where(np.fmod(pitch_bytes, 128.0) == 0,
                             float(hw["nd2nz_pitch_128b_efficiency"]),
                             float(hw["nd2nz_pitch_32b_efficiency"])))


def _into(target: Any, *operands: Any) -> np.ndarray | None:
    """``target`` (an array :func:`transfer` made) as the ``out`` of an elementwise step on
    ``operands`` when it has the step's result shape and dtype, so the step gives the bits a
    new array would; else None (a new array: a scalar or broadcast input)."""
    if type(target) is not np.ndarray or not target.ndim:
        return None
    fits = (np.broadcast_shapes(*(np.shape(o) for o in operands)) == target.shape
            and np.result_type(*operands) == target.dtype)
    return target if fits else None


def _port(path: str) -> str:
    return "aic" if path in AIC_GM_PATHS else "aiv"


def _chip_bytes_per_cycle(hw: HardwareProfile, l2_hit: Any) -> Any:
    """What the chip delivers: HBM for misses, L2 for the hit fraction,
    ``1 / ((1 - hit) / hbm + hit / l2)`` (in place when the clipped hit is a float array)."""
    hit = np.clip(l2_hit, 0.0, 1.0)
    hbm, l2 = hw.hbm_bytes_per_cycle, hw.l2_bytes_per_cycle
    if _into(hit, hit, l2) is None:
        return 1.0 / ((1.0 - hit) / hbm + hit / l2)
    miss = np.subtract(1.0, hit)
    np.divide(miss, hbm, out=miss)
    np.divide(hit, l2, out=hit)
    np.add(miss, hit, out=miss)
    return np.divide(1.0, miss, out=miss)


def _cached_share(hw: HardwareProfile, l2_hit: Any, active_cores: Any, path: str,
                  cache: ShareCache | None) -> np.ndarray:
    """:func:`chip_share_bytes_per_cycle` of the undeclared-alignment chip rate, reused from
    ``cache`` when an earlier stage had the same hit and core arrays."""
    port = _port(path)
    key = (port, id(active_cores), id(l2_hit))
    cached = cache.get(key) if cache is not None else None
    if cached is not None:
        return cached[2]
    share = chip_share_bytes_per_cycle(hw, _chip_bytes_per_cycle(hw, l2_hit), active_cores,
                                       port)
    if cache is not None:
        cache[key] = (active_cores, l2_hit, share)
    return share


def contiguous_runs(hw: HardwareProfile, nbytes: np.ndarray, rows: np.ndarray,
                    layout: str | None, element_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """(runs, bytes per run) of a tile of ``rows`` logical rows and ``nbytes`` in GM.

    Row-major (and no layout given): one run per row. Column-major: the tile's columns are
    contiguous, ``rows * element`` bytes each. NZ: one run per C0-wide fractal column
    (``ub_block_bytes`` wide, all ``rows`` deep)."""
    if layout == "column_major":
        run_bytes = rows * float(element_bytes)
        return np.maximum(nbytes / run_bytes, 1.0), run_bytes
    if layout == "nz":
        c0_bytes = float(hw["ub_block_bytes"])
        return np.maximum(np.ceil(nbytes / rows / c0_bytes), 1.0), rows * c0_bytes
    return rows, nbytes / rows


def chip_share_bytes_per_cycle(hw: HardwareProfile, chip_bytes_per_cycle: Any,
                               active_cores: Any, port: str = "aiv") -> np.ndarray:
    """One core's share of what the chip delivers to ``k`` active cores.

    The chip delivers ``X(k) = softmin(k * b_core, C)``, ``softmin(a, c) = (a^-p + c^-p)^(-1/p)``:
    ``b_core`` is what one core's GM port offers (read and write queues together; ``port`` is
    ``aic`` or ``aiv``), ``C`` the chip rate. With a hard minimum every core count past
    ``C / b_core`` ties, and any launch cost that grows with block dim then picks the fewest
    cores that reach the cap; requests
    queue as the chip nears its cap, so the approach is gradual and one more core always adds
    outstanding requests (Little's law). Both constants are the profile's.
    """
    k = np.maximum(np.asarray(active_cores, dtype=np.float64), 1.0)
    chip = np.asarray(chip_bytes_per_cycle, dtype=np.float64)
    p = float(hw["gm_contention_exponent"])
    per_core = float(hw[f"{port}_gm_port_bytes_per_cycle"])

    def share(cores: float, rate: float) -> float:
        # libm's pow, as Python's float ** (and so the row kernel) computes it: numpy's array
        # power takes a SIMD path (SVML) on CPUs with AVX-512 that can differ in the last bit,
        # which would make results depend on the machine.
        return _pow(_pow(cores * per_core, -p) + _pow(rate, -p), -1.0 / p) / cores

    if k.ndim == 0 and chip.ndim == 0:
        return np.asarray(share(float(k), float(chip)))
    shape = np.broadcast_shapes(k.shape, chip.shape)
    # A batch holds few distinct core counts and chip rates: the formula is taken once per
    # distinct (cores, rate) pair and gathered.
    k_codes, k_values = _distinct(np.broadcast_to(k, shape).ravel())
    c_codes, c_values = _distinct(np.broadcast_to(chip, shape).ravel())
    pairs = k_codes * len(c_values) + c_codes
    if len(k_values) * len(c_values) > max(_PAIR_TABLE, pairs.size):
        used, pairs = np.unique(pairs, return_inverse=True)
    else:
        used = np.arange(len(k_values) * len(c_values))
    kv, cv = k_values.tolist(), c_values.tolist()
    table = np.array([share(kv[u // len(cv)], cv[u % len(cv)]) for u in used.tolist()],
                     dtype=np.float64)
    out: np.ndarray = table[pairs].reshape(shape)
    return out


# Whole core counts up to this index a table directly; pairs tables up to this size are filled
# whole rather than only where used.
_TABLE_CORES = 4096
_PAIR_TABLE = 4096


def _pow(x: float, exponent: float) -> float:
    """``x ** exponent`` by libm with numpy's IEEE answers where Python would raise."""
    if x > 0.0 and math.isfinite(x):
        return math.pow(x, exponent)
    return float(np.power(np.float64(x), exponent))


def _distinct(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes into a table of distinct values (not necessarily all used): whole numbers from 1
    to :data:`_TABLE_CORES` index ``arange`` directly, anything else goes through a sort."""
    if values.size == 1:
        return np.zeros(1, dtype=np.intp), values.copy()
    top = float(values.max()) if values.size else 0.0
    if 1.0 <= top <= _TABLE_CORES and bool(np.all(values == np.floor(values))) \
            and float(values.min()) >= 1.0:
        return values.astype(np.intp) - 1, np.arange(1.0, top + 1.0)
    uniq, codes = np.unique(values, return_inverse=True)
    return codes.ravel(), uniq


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
    """Launch (head) overhead: base + full * cores / chip cores (+ the cube kernel floor on a
    cube side). The form is CATLASS's CommonMatmul head model and S26's "head grows with
    launched cores"; the constants are the profile's (from measured device Durations and a
    fit on dev rows; the leaves state where sources disagree)."""
    chip = float(hw[f"{side}_cores"])
    # A side on the cube core also pays the cube kernel's fixed prologue and drain (L1/L0
    # set-up, first load, last FixPipe), once per kernel: every core pays it at the same time.
    floor = float(hw["cube_kernel_floor_us"]) if side == "cube" else 0.0
    return (float(hw["head_base_us"]) + floor
            + float(hw["head_full_chip_us"]) * np.asarray(cores) / chip)
