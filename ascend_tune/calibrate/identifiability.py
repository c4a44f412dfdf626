"""Which coefficients a set of measured rows can determine, from the fit's Jacobian.

The Jacobian holds, per residual (a row's log time or a measured pipe's log busy time) and per
coefficient (a log scale), how much the prediction moves: an elasticity. A coefficient whose
column is about zero is not seen by the rows (nothing they measure is bound by it); two or
more whose columns are about parallel are seen only in one combination (the rows cannot tell
them apart). Neither can be fitted: least squares would move them along the flat direction,
guided by noise. See docs/model.md "Calibration".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

# RMS elasticity below which a coefficient counts as unseen: doubling it would move the fitted
# predictions by well under 1 % on average.
MIN_SENSITIVITY = 0.005
# Smallest singular value of the column-normalised Jacobian that still counts as independent.
# For two columns with cosine c it is sqrt(1 - |c|): 0.1 means |c| < 0.99.
MIN_SINGULAR = 0.1
# A coefficient takes part in a near-dependency when its weight in the weakest direction is at
# least this share of the largest weight.
MEMBER_SHARE = 0.3


@dataclass
class Identified:
    kept: list[str]  # fit these, in the order given
    sensitivity: dict[str, float]  # RMS elasticity of each coefficient
    unseen: list[str] = field(default_factory=list)
    # dropped coefficient -> the kept coefficients it moves the predictions together with
    together: dict[str, list[str]] = field(default_factory=dict)
    condition: float = 1.0  # of the kept columns, normalised


def identify(jacobian: np.ndarray, names: Sequence[str]) -> Identified:
    """Split ``names`` (the Jacobian's columns) into those the rows determine and those they
    do not; of a near-dependent set the most sensitive member is kept."""
    if not names:
        return Identified([], {})
    jac = np.asarray(jacobian, dtype=np.float64).reshape(-1, len(names))
    rms = np.sqrt(np.mean(jac**2, axis=0)) if jac.shape[0] else np.zeros(len(names))
    out = Identified([], {n: float(r) for n, r in zip(names, rms, strict=True)})
    active = [j for j in range(len(names)) if rms[j] >= MIN_SENSITIVITY]
    out.unseen = [n for j, n in enumerate(names) if rms[j] < MIN_SENSITIVITY]
    while active:
        cols = jac[:, active] / np.linalg.norm(jac[:, active], axis=0)
        _u, s, vt = np.linalg.svd(cols, full_matrices=True)
        full = np.zeros(len(active))
        full[:len(s)] = s
        if full[-1] >= MIN_SINGULAR:
            out.condition = float(full[0] / full[-1])
            break
        weak = np.abs(vt[-1])
        members = [active[j] for j in np.flatnonzero(weak >= MEMBER_SHARE * weak.max())]
        if len(members) < 2:  # a lone member: its column is the degenerate one
            members = [active[int(np.argmax(weak))]]
        drop = min(members, key=lambda j: (rms[j], -j))
        out.together[names[drop]] = [names[j] for j in members if j != drop]
        active.remove(drop)
    out.kept = [names[j] for j in active]
    # Name the partners that stay fitted (a partner dropped later is named with its own).
    for name, partners in out.together.items():
        out.together[name] = [p for p in partners if p in out.kept] or partners
    return out
