"""What a calibration may scale: groups of hardware-profile leaves, each moved by one
multiplicative coefficient, and the two ways of applying the scales (to profile data, as
written; to a parsed profile, for a trial inside a fit). See docs/model.md "Calibration".
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ascend_tune.hardware import LIMITS, HardwareProfile

# The scales a coefficient without a physical range (PHYSICAL_RANGES) may take: within these
# factors of the sourced value.
SCALE_BOUNDS = (0.2, 5.0)

# What each coefficient's first leaf can physically be, in the leaf's own unit (a bandwidth
# curve: its plateau, B/cycle), whatever the shipped profile says; a fit moves within these,
# not within a fixed factor of the source. A device whose per-core GM port is a tenth of the
# msKPP plateau (the public 910B3 tile sweeps suggest as much) is inside them; x0.2..x5 was not,
# and the fit then absorbed the port's error in the HBM rate and the latencies (issue 45).
# The ranges are deliberately wide: they exclude the impossible, not the unlikely (the prior
# on the sourced value does that, weighted by its confidence).
PHYSICAL_RANGES: dict[str, tuple[float, float]] = {
    # Per-core copy rates: from a few bytes a cycle (a starved port) to twice the widest
    # on-chip path the official tables give (S6: 256 B/cycle GM->L1, L1->L0A).
    "gm_to_l1_bandwidth": (2.0, 1024.0),
    "gm_to_ub_bandwidth": (2.0, 1024.0),
    "ub_write_bandwidth": (2.0, 1024.0),
    "fixpipe_bandwidth": (2.0, 1024.0),
    "mte1_bandwidth": (8.0, 2048.0),
    "aic_gm_port": (2.0, 2048.0),
    "aiv_gm_port": (2.0, 2048.0),
    # First-byte latencies, cycles: S3's GM latencies are 150-350, msKPP's fits 10-215.
    "gm_to_l1_latency": (10.0, 5000.0),
    "gm_to_ub_latency": (10.0, 5000.0),
    "ub_write_latency": (1.0, 5000.0),
    "fixpipe_latency": (1.0, 5000.0),
    "mte1_latency": (0.5, 500.0),
    "nd2nz_run": (0.25, 200.0),
    "mmad_overhead": (0.1, 500.0),
    "vector_issue": (1.0, 1000.0),
    "bank_conflict": (1.0, 8.0),
    # Chip GM and L2 rates, GB/s (an HBM above L2 is refused by the physical check).
    "hbm_bandwidth": (50.0, 20000.0),
    "l2_bandwidth": (100.0, 100000.0),
    "gm_unaligned": (0.02, 1.0),
    "nd2nz_pitch": (0.02, 1.0),
    "scalar_loop": (1.0, 1000.0),
    "sync": (0.5, 1000.0),
    # Launch costs, us: a device kernel's head is 1-30 us in every source
    # (ascend_hardware.md 0.6); a hundred is past any of them.
    "head_base": (0.05, 100.0),
    "head_per_core": (0.01, 100.0),
    "cube_floor": (0.01, 100.0),
    "mix_launch": (0.01, 100.0),
}
# Tables (cycles per fractal, per repeat) and the contention exponent scale as a whole.
RELATIVE_RANGES: dict[str, tuple[float, float]] = {
    "cube_rate": (0.25, 4.0),
    "vector_rate": (0.25, 8.0),
    "gm_contention": (0.25, 4.0),
}


@dataclass(frozen=True)
class Coefficient:
    name: str
    doc: str
    leaves: tuple[tuple[str, ...], ...]  # key paths of profile leaves it scales
    pipes: tuple[str, ...]  # measured pipe columns it explains (empty: end-to-end only)
    bound_by: str  # what a row must be bound by (or measure) for this coefficient to show
    # Fitted unless excluded; False: only with --include or --fit-all (a constant of the
    # model's form, not a number of the device).
    default: bool = True
    # Which rows pay it at all, for a coefficient only some kernels or shapes reach (said
    # when the rows show nothing of it).
    regime: str = ""


# Every number a stage reads has a coefficient (issue 26), except the chip's structure (core
# counts, buffer sizes, fractal and block sizes), which a datasheet fixes. Pipe columns say
# which measured busy times a coefficient explains; what the fit can determine from a set of
# rows is decided by the identifiability screen, not by this list.
_AIC_GM = ("aic_mte2_time_us", "aic_fixpipe_time_us")
_AIV_GM = ("aiv_mte2_time_us", "aiv_mte3_time_us")
COEFFICIENTS = (
    Coefficient("gm_to_l1_bandwidth", "GM->L1 bandwidth curve",
                (("transfers", "gm_to_l1", "bandwidth_curve"),), ("aic_mte2_time_us",), "mte2"),
    Coefficient("gm_to_l1_latency", "GM->L1 fixed latency",
                (("transfers", "gm_to_l1", "latency_cycles"),), ("aic_mte2_time_us",), "mte2"),
    Coefficient("nd2nz_run", "MTE2 cycles per ND run a GM->L1 ND2NZ copy converts",
                (("memory", "nd2nz_row_cycles"),), ("aic_mte2_time_us",), "mte2"),
    Coefficient("gm_to_ub_bandwidth", "GM->UB bandwidth curve",
                (("transfers", "gm_to_ub", "bandwidth_curve"),), ("aiv_mte2_time_us",), "mte2"),
    Coefficient("gm_to_ub_latency", "GM->UB fixed latency",
                (("transfers", "gm_to_ub", "latency_cycles"),), ("aiv_mte2_time_us",), "mte2"),
    Coefficient("ub_write_bandwidth", "UB->GM bandwidth curve",
                (("transfers", "ub_to_gm", "bandwidth_curve"),), ("aiv_mte3_time_us",), "mte3"),
    Coefficient("ub_write_latency", "UB->GM fixed latency",
                (("transfers", "ub_to_gm", "latency_cycles"),), ("aiv_mte3_time_us",), "mte3"),
    Coefficient("fixpipe_bandwidth", "L0C->GM bandwidth curve",
                (("transfers", "l0c_to_gm", "bandwidth_curve"),), ("aic_fixpipe_time_us",),
                "fixpipe"),
    Coefficient("fixpipe_latency", "L0C->GM fixed latency",
                (("transfers", "l0c_to_gm", "latency_cycles"),), ("aic_fixpipe_time_us",),
                "fixpipe"),
    Coefficient("mte1_bandwidth", "L1->L0A/L0B bandwidth curves",
                (("transfers", "l1_to_l0a", "bandwidth_curve"),
                 ("transfers", "l1_to_l0b", "bandwidth_curve")), ("aic_mte1_time_us",), "mte1"),
    Coefficient("mte1_latency", "L1->L0A/L0B fixed latencies",
                (("transfers", "l1_to_l0a", "latency_cycles"),
                 ("transfers", "l1_to_l0b", "latency_cycles")), ("aic_mte1_time_us",), "mte1"),
    Coefficient("cube_rate", "Cube cycles per fractal", (("cube", "cycles_per_fractal"),),
                ("aic_mac_time_us",), "cube"),
    Coefficient("mmad_overhead", "per-Mmad instruction overhead",
                (("cube", "mmad_overhead_cycles"),), ("aic_mac_time_us",), "cube"),
    Coefficient("vector_rate", "Vector cycles per repeat", (("vector", "cycles_per_repeat"),),
                ("aiv_vec_time_us",), "vector"),
    Coefficient("vector_issue", "Vector per-instruction issue cost",
                (("vector", "issue_cycles"),), ("aiv_vec_time_us",), "vector"),
    Coefficient("bank_conflict", "UB bank-conflict factor of two-source vector ops",
                (("vector", "bank_conflict_factor"),), ("aiv_vec_time_us",), "vector"),
    Coefficient("hbm_bandwidth", "aggregate GM (HBM) bandwidth",
                (("memory", "hbm_bandwidth_gbps"),), (), "the shared GM bandwidth"),
    Coefficient("l2_bandwidth", "L2 bandwidth (declared L2 hits)",
                (("memory", "l2_bandwidth_gbps"),), (), "L2 hits"),
    Coefficient("aic_gm_port", "GM bytes/cycle one AIC's port offers",
                (("memory", "aic_gm_port_bytes_per_cycle"),), _AIC_GM,
                "the AIC GM port"),
    Coefficient("aiv_gm_port", "GM bytes/cycle one AIV's port offers",
                (("memory", "aiv_gm_port_bytes_per_cycle"),), _AIV_GM,
                "the AIV GM port"),
    # The exponent shapes the model's saturation curve; fitted by default it bends the curve
    # to whatever the rows show instead of recovering the port and HBM rates (closed_loop.py:
    # with it the AIC port is never determined, only its product with the exponent).
    Coefficient("gm_contention", "how sharply the chip's GM rate saturates with cores",
                (("memory", "gm_contention_exponent"),), (), "GM near the chip's cap",
                default=False),
    Coefficient("gm_unaligned", "bandwidth share of GM rows off the 512 B alignment",
                (("memory", "gm_unaligned_efficiency"),), (), "unaligned GM rows",
                regime="only GM rows off the 512 B alignment pay it"),
    Coefficient("nd2nz_pitch", "GM->L1 ND2NZ bandwidth share at row pitches off 512 B",
                (("memory", "nd2nz_pitch_256b_efficiency"),
                 ("memory", "nd2nz_pitch_128b_efficiency"),
                 ("memory", "nd2nz_pitch_32b_efficiency")), ("aic_mte2_time_us",),
                "misaligned ND2NZ pitches",
                regime="only an ND2NZ copy whose operand rows are a pitch off the 512 B "
                       "alignment apart pays it: a shape whose K or N rows are not a multiple "
                       "of 512 B (256 fp16 elements) shows it"),
    Coefficient("scalar_loop", "scalar cycles per loop iteration",
                (("scalar", "loop_iteration_cycles"),), ("aic_scalar_time_us",
                                                          "aiv_scalar_time_us"), "scalar"),
    Coefficient("sync", "cycles per flag handoff between pipes", (("scalar", "sync_cycles"),),
                (), "pipe handoffs"),
    Coefficient("head_base", "kernel head (launch) overhead, fixed part",
                (("launch", "head_base_us"),), (), "the launch overhead"),
    Coefficient("head_per_core", "kernel head (launch) overhead, the part growing with cores",
                (("launch", "head_full_chip_us"),), (), "the launch overhead"),
    Coefficient("cube_floor", "fixed per-kernel cost of a kernel with a cube side",
                (("launch", "cube_kernel_floor_us"),), (), "the cube kernel's fixed cost"),
    Coefficient("mix_launch", "extra launch cost of a mixed Cube + Vector kernel",
                (("launch", "mix_extra_us"),), (), "the mix kernel's launch",
                regime="only a mix (Cube + Vector) kernel's launch pays it"),
)
# Names of earlier releases: each moves the coefficients it was split into together.
ALIASES = {"vector_time": ("vector_rate", "vector_issue"),
           "head_overhead": ("head_base", "head_per_core")}
BY_NAME = {c.name: c for c in COEFFICIENTS}


def _scale_value(value: Any, factor: float, curve: bool) -> Any:
    if curve:  # [[bytes, bytes_per_cycle], ...]: scale the bandwidth column only
        return [[point[0], round(point[1] * factor, 6)] for point in value]
    if isinstance(value, dict):
        return {k: _scale_value(v, factor, False) for k, v in value.items()}
    return round(float(value) * factor, 9)


def leaf(data: Mapping[str, Any], path: Sequence[str]) -> Any:
    """The node at key ``path`` of profile data (a ``{value, source, confidence}`` leaf)."""
    node: Any = data
    for key in path:
        node = node[key]
    return node


def leaf_number(data: Mapping[str, Any], path: Sequence[str]) -> float:
    """A scalar leaf's value, or a bandwidth curve's last bytes/cycle (its plateau): the one
    number a report of a fitted leaf shows."""
    value = leaf(data, path)["value"]
    return float(value[-1][1] if isinstance(value, list) else value)


def scale_bounds(name: str, data: Mapping[str, Any]) -> tuple[float, float]:
    """The scales coefficient ``name`` may take on profile ``data``: its physical range
    (:data:`PHYSICAL_RANGES`) over the value ``data`` holds, or its relative range, else
    :data:`SCALE_BOUNDS`; narrowed so that no scalar leaf it moves leaves its limit (an
    efficiency at 0.8 may grow by x1.25 at most: the profile would not load beyond)."""
    lo, hi = RELATIVE_RANGES.get(name, SCALE_BOUNDS)
    physical = PHYSICAL_RANGES.get(name)
    if physical is not None:
        value = leaf_number(data, BY_NAME[name].leaves[0])
        if value > 0:
            # Never narrower than a factor of 1.01 either way: a sourced value outside the
            # range (a user's profile) can still be fitted back towards it.
            lo = min(physical[0] / value, 1.0 / 1.01)
            hi = max(physical[1] / value, 1.01)
    for path in BY_NAME[name].leaves:
        value = leaf(data, path)["value"]
        limit = LIMITS.get(path[-1])
        if limit is not None and isinstance(value, (int, float)) and value > 0:
            hi = min(hi, limit.hi / float(value))
    return lo, hi


# The log spread of the prior on a sourced value, by the leaf's confidence: a datasheet number
# (high) stays within ~5 %; a measured curve (med) may move by a factor ~1.4 before the prior
# matters as much as a row; an estimate or a fitted leaf (low) by a factor ~2.7.
PRIOR_SPREAD = {"high": 0.05, "med": 0.35, "low": 1.0}


def prior_spread(name: str, data: Mapping[str, Any]) -> float:
    """The prior's log spread for coefficient ``name``: that of its least confident leaf."""
    spreads = [PRIOR_SPREAD.get(str(leaf(data, path).get("confidence", "low")), 1.0)
               for path in BY_NAME[name].leaves]
    return max(spreads)


def expand(scales: Mapping[str, float]) -> dict[str, float]:
    """``scales`` with each alias (:data:`ALIASES`) replaced by the coefficients it names."""
    out: dict[str, float] = {}
    for name, factor in scales.items():
        for member in ALIASES.get(name, (name,)):
            out[member] = factor
    return out


def scale_leaves(data: Mapping[str, Any], factors: Mapping[tuple[str, ...], float]
                 ) -> dict[str, Any]:
    """A copy of merged profile data with each leaf at key path scaled by its factor (a
    bandwidth curve: its bytes/cycle column): a calibrated profile, or a stand-in device
    that differs from the shipped one."""
    out = copy.deepcopy(dict(data))
    for path, factor in factors.items():
        node = leaf(out, path)
        node["value"] = _scale_value(node["value"], factor, path[-1] == "bandwidth_curve")
    return out


def apply(data: Mapping[str, Any], scales: Mapping[str, float]) -> dict[str, Any]:
    """A copy of merged profile data with each coefficient's leaves scaled (what is written)."""
    scales = expand(scales)
    return scale_leaves(data, {path: scales[coef.name] for coef in COEFFICIENTS
                               if scales.get(coef.name, 1.0) != 1.0 for path in coef.leaves})


def scaled_profile(hw: HardwareProfile, scales: Mapping[str, float]) -> HardwareProfile:
    """``hw`` with the coefficients' numbers scaled, built directly from the parsed profile:
    no YAML, validation or hashing, so a least-squares residual costs only the model. Its
    ``data`` and ``sha256`` are ``hw``'s (a trial profile is never written or cached)."""
    scalars = dict(hw.scalars)
    transfers = dict(hw.transfers)
    cycles_per_fractal = dict(hw.cycles_per_fractal)
    vector = {k: dict(v) for k, v in hw.vector_cycles_per_repeat.items()}
    scales = expand(scales)
    for coef in COEFFICIENTS:
        f = float(scales.get(coef.name, 1.0))
        if f == 1.0:
            continue
        for path in coef.leaves:
            if path[0] == "transfers":
                t = transfers[path[1]]
                transfers[path[1]] = (
                    replace(t, curve_bytes_per_cycle=t.curve_bytes_per_cycle * f)
                    if path[2] == "bandwidth_curve"
                    else replace(t, latency_cycles=t.latency_cycles * f))
            elif path == ("cube", "cycles_per_fractal"):
                cycles_per_fractal = {k: v * f for k, v in cycles_per_fractal.items()}
            elif path == ("vector", "cycles_per_repeat"):
                vector = {k: {b: c * f for b, c in v.items()} for k, v in vector.items()}
            else:
                scalars[path[-1]] = float(scalars[path[-1]]) * f
    return replace(hw, scalars=scalars, transfers=transfers,
                   cycles_per_fractal=cycles_per_fractal, vector_cycles_per_repeat=vector)
