"""What a calibration may not write: a fitted number at the fit's bound, or one the chip cannot
have. Either is refused before anything is written, unless the caller forces it.

A scale that stopped at its bound (:data:`~ascend_tune.calibrate.coefficients.SCALE_BOUNDS`)
did not fit the rows: they wanted more than the bound allows, so the written number is the
bound, not a measurement (typically the model's form is wrong for those rows, or the rows
cannot tell this coefficient from another). A number beyond a physical limit
(:func:`ascend_tune.hardware.limits.physical_problems`, e.g. an HBM rate above the L2 rate)
is wrong whatever the rows say. A profile that predicts the rows it was not fitted on worse
than the one it started from would leave the user worse off than the shipped profile.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ascend_tune.calibrate.coefficients import BY_NAME, SCALE_BOUNDS, leaf, scale_bounds
from ascend_tune.calibrate.fit import FitResult
from ascend_tune.hardware.limits import physical_problems

# A scale within this factor of a bound counts as at it (the solver stops a hair inside).
AT_BOUND = 0.001


def _shown(value: Any) -> str:
    """A leaf's value for a message: a number, or a bandwidth curve's peak."""
    if isinstance(value, list):
        peak = max(float(p[1]) for p in value)
        return f"peak {peak:.6g} B/cycle"
    if isinstance(value, dict):
        return "its table"
    return f"{float(value):.6g}"


def at_bound(result: FitResult) -> list[str]:
    """One line per fitted coefficient whose scale stopped at a bound: the leaf, the value
    written, the sourced value and the bound."""
    out = []
    for name in result.fitted:
        scale = result.scales[name]
        lo, hi = scale_bounds(name, result.base_data) if result.base_data else SCALE_BOUNDS
        if lo * (1 + AT_BOUND) < scale < hi * (1 - AT_BOUND):
            continue
        bound = lo if scale <= lo * (1 + AT_BOUND) else hi
        path = BY_NAME[name].leaves[0]
        value = _shown(leaf(result.data, path)["value"])
        base = _shown(leaf(result.base_data, path)["value"]) if result.base_data else "?"
        more = len(BY_NAME[name].leaves) - 1
        out.append(f"{name}: {'.'.join(path)}{f' (and {more} more leaf)' if more else ''} "
                   f"fitted to {value}, x{scale:.4g} of the sourced {base}: at the fit's "
                   f"bound x{bound:g}")
    return out


def beyond_physics(result: FitResult) -> list[str]:
    """One line per physical limit the calibrated profile breaks and its base did not."""
    before = {str(p) for p in physical_problems(result.base_data)} if result.base_data else set()
    return [f"physical limit: {p}" for p in physical_problems(result.data)
            if str(p) not in before]


def worse_than_sourced(result: FitResult) -> list[str]:
    """A line when the calibrated profile predicts rows it was not fitted on worse than the
    profile it started from: the held-out rows, or (nothing held out) the selection rows the
    chosen start was fitted without. Such a profile would predict the device worse than the
    one shipped (issue 45)."""
    before, after = result.held_out_before, result.held_out_after
    if before is not None and after is not None:
        if after.mape > before.mape:
            return [f"held-out MAPE {after.mape:.1%} with the fit against {before.mape:.1%} "
                    f"with the profile it started from ({after.n} rows it was not fitted on)"]
        return []
    sel = result.selection
    if sel and sel["check_mape_chosen"] > sel["check_mape_sourced"]:
        return [f"MAPE {sel['check_mape_chosen']:.1%} on the {sel['check_rows']} selection rows "
                f"the fit did not see, against {sel['check_mape_sourced']:.1%} with the profile "
                "it started from"]
    return []


def refusals(result: FitResult) -> list[str]:
    """Why the calibrated profile must not be written (empty: it may)."""
    return [*worse_than_sourced(result), *at_bound(result), *beyond_physics(result)]


def refusal_message(problems: Sequence[str]) -> str:
    """One line for the error: the first problem, how many more, and the way out."""
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return (f"calibration refused, nothing written: {problems[0]}{more}; check the rows or "
            "--exclude the coefficient, or --force to write it anyway")
