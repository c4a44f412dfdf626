"""The latency-along-the-range chart (report/kernel_view.RangeCurve): the model's latency of
the configuration the emitted dispatch picks at each value of the ranged shape variable, a
vertical mark where that pick changes, and the tuned shapes as points."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ascend_tune.report.charts import _figure, _log
from ascend_tune.report.kernel_view import RangeCurve

if TYPE_CHECKING:
    from matplotlib.figure import Figure

LINE = "#6a3d9a"  # the dispatched latency (a colour no other chart uses)
CHANGE = "#fb9a99"  # where the dispatched tiling changes


def range_latency(curve: RangeCurve) -> Figure:
    fig, ax = _figure(7.2, 3.0, 0.8, 0.5, right_in=1.9)
    xs = np.array(curve.xs, dtype=np.float64)
    ys = np.array(curve.latency_us, dtype=np.float64)
    ok = np.isfinite(ys)
    for x in curve.changes:
        ax.axvline(x, color=CHANGE, linewidth=1.2, zorder=1)
    ax.plot(xs[ok], ys[ok], color=LINE, linewidth=2.5, zorder=2, label="dispatched")
    if curve.changes:
        ax.plot([], [], color=CHANGE, linewidth=1.2, label="tiling changes")
    tx = [x for x, _ in curve.tuned]
    ty = [y for _, y in curve.tuned]
    ax.scatter(tx, ty, s=14, color="black", zorder=3, label="tuned shapes")
    if xs.min() > 0 and xs.max() / max(xs.min(), 1) > 10:
        _log(ax, "x")
    if ok.any() and float(ys[ok].max()) / max(float(ys[ok].min()), 1e-9) > 10:
        _log(ax, "y")
    ax.set_xlabel(curve.variable)
    ax.set_ylabel("predicted latency, us")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    return fig
