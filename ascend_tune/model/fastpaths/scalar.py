"""Scalar forms of the numpy operations the cost formulas use, for the generated row kernel.

Each returns, for one element, exactly what the numpy form returns elementwise, so a row
priced by the generated Python agrees bit for bit with the vectorised engine.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from typing import Any

from ascend_tune.expr.python import RUNTIME

# ---- scalar forms of the numpy operations the cost formulas use ----------------------------
# (the expressions' own are :data:`ascend_tune.expr.python.RUNTIME`)

def _fceil(x: float) -> float:
    """np.ceil: a float, -0.0 for x in (-1, 0] (math.ceil gives an int, and raises on inf or
    nan: the row falls back)."""
    r = float(math.ceil(x))
    return r if r != 0.0 else (-0.0 if x < 0.0 else x)


def _interp(x: float, xp: Sequence[float], fp: Sequence[float]) -> float:
    """np.interp on one element, by numpy's algorithm (the same slope and operand order)."""
    last = len(xp) - 1
    if x > xp[last]:
        return fp[last]
    if x < xp[0]:
        return fp[0]
    j = bisect.bisect_right(xp, x) - 1
    if j == last or xp[j] == x:
        return fp[j]
    slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j])
    out = slope * (x - xp[j]) + fp[j]
    if out != out:  # numpy tries from the other end of the interval
        out = slope * (x - xp[j + 1]) + fp[j + 1]
        if out != out and fp[j] == fp[j + 1]:
            out = fp[j]
    return out


HELPERS: dict[str, Any] = {
    **RUNTIME, "_fceil": _fceil, "_interp": _interp, "_isfinite": math.isfinite,
    "_fmodf": math.fmod,
}
