"""The report's charts: matplotlib figures saved as SVG text for inlining in the page.

Deterministic bytes: a fixed hash salt for matplotlib's generated ids, no date, no creator
metadata, text kept as text (``svg.fonttype: none``) with 'DejaVu Sans' (matplotlib's bundled
font, so the layout is measured the same everywhere) and the generic ``sans-serif`` fallback,
so the page needs no font file. Layouts use fixed margins: ``bbox_inches='tight'`` draws every
figure twice, which doubles the time of a large report. Every SVG's ids get the chart's own
prefix so several charts can share one HTML document.
"""

from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.base.vocabulary import PIPE_COLUMNS
from ascend_tune.report.data import OperatorResult, ShapeResult

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ascend_tune.report.fidelity import Fidelity

INSTALL_HINT = "pip install 'ascend-tune[report]'"

_STYLE: dict[str, Any] = {
    "svg.hashsalt": "ascend-tune-report",
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "text.parse_math": False,  # labels come from input files: a '$' is a dollar sign
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
}
# One colour per msprof column on every chart of the page (tab10 order).
_TAB10 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf")
PIPE_COLOURS = {c: _TAB10[i % len(_TAB10)] for i, c in enumerate(PIPE_COLUMNS)}
_BASELINE, _TUNED, _BAD = "#9a9a9a", "#1f77b4", "#d62728"
_METADATA = {"Date": None, "Creator": None, "Format": None, "Type": None}
_ID = re.compile(r'\bid="([^"]+)"')
_REF = re.compile(r'(url\(#|href="#)([^")]+)')


def require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise AscendTuneError(f"the report draws its charts with matplotlib, which is not "
                              f"installed: {INSTALL_HINT}") from None


def _figure(width_in: float, height_in: float, left_in: float, bottom_in: float,
            right_in: float = 0.15, top_in: float = 0.15) -> tuple[Figure, Axes]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width_in, height_in))
    fig.subplots_adjust(left=left_in / width_in, right=1 - right_in / width_in,
                        bottom=bottom_in / height_in, top=1 - top_in / height_in)
    return fig, fig.add_subplot()


def _svg(fig: Figure, chart_id: str) -> str:
    """The figure as an ``<svg>`` element with ids unique to ``chart_id``."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata=_METADATA)
    text = buf.getvalue()
    text = text[text.index("<svg"):]  # no XML prolog or DOCTYPE inside HTML
    prefix = f"{chart_id}-"
    text = _ID.sub(lambda m: f'id="{prefix}{m.group(1)}"', text)
    text = _REF.sub(lambda m: f"{m.group(1)}{prefix}{m.group(2)}", text)
    return text.replace("<svg ", f'<svg role="img" aria-labelledby="{prefix}caption" ', 1)


def _number(value: float, _pos: Any = None) -> str:
    """A tick label without mathtext: 0.01, 2, 300, 4k, 5M, 1e+12."""
    if value == 0:
        return "0"
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale and abs(value) < scale * 1000:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"


def _log(ax: Axes, which: str) -> None:
    """A log axis with plain labels and no minor ticks (minor ticks and mathtext labels cost
    most of a log chart's drawing time)."""
    from matplotlib import ticker

    class Steps(ticker.LogLocator):
        """1-2-5 steps when the axis spans at most two decades, decades when it spans more
        (decided when drawn, from the final limits)."""

        def tick_values(self, vmin: float, vmax: float) -> Any:
            lo, hi = sorted((vmin, vmax))
            few = lo > 0 and np.log10(hi / lo) <= 2.0
            self.set_params(subs=(1.0, 2.0, 5.0) if few else (1.0,))
            return super().tick_values(vmin, vmax)

    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis.set_major_locator(Steps(base=10, numticks=8))
    axis.set_minor_locator(ticker.NullLocator())
    axis.set_major_formatter(ticker.FuncFormatter(_number))


def draw(chart_id: str, painter: Any, *args: Any) -> str:
    """``painter(*args)`` builds a figure; return it as inline SVG, drawn in the report style."""
    import matplotlib

    with matplotlib.rc_context(_STYLE):  # type: ignore[arg-type]
        return _svg(painter(*args), chart_id)


# ---- per shape --------------------------------------------------------------------------------

def pipes(shape: ShapeResult) -> Figure:
    """Stacked busy time per pipe (msprof names), baseline vs tuned; the black tick is the
    latency: pipes overlap, so the stack is the work, not the time."""
    bars = [("tuned", shape.tuned)]
    if shape.baseline is not None:
        bars.append(("baseline", shape.baseline))
    used = [c for c in PIPE_COLUMNS if any(p.pipes_us[c] > 0 for _, p in bars)]
    # Tall enough for the bars and for the legend (one line per pipe, and the latency).
    height = max(0.9 + 0.45 * len(bars), 0.45 + 0.17 * (len(used) + 1))
    fig, ax = _figure(7.2, height, 0.8, 0.45, right_in=1.9)
    y = np.arange(len(bars), dtype=np.float64)
    left = np.zeros(len(bars))
    for column in used:
        widths = np.array([p.pipes_us[column] for _, p in bars])
        ax.barh(y, widths, left=left, height=0.6, color=PIPE_COLOURS[column],
                label=column)
        left += widths
    latency = [p.latency_us for _, p in bars]
    ax.scatter(latency, y, marker="|", s=600, color="black", linewidths=2, zorder=3,
               label="latency")
    ax.set_yticks(y, [name for name, _ in bars])
    ax.set_xlabel("busy time per pipe, us (slowest core)")
    ax.set_xlim(0, max(float(left.max()), *latency) * 1.04)
    ax.grid(axis="y", visible=False)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, markerscale=0.5)
    return fig


def history(shape: ShapeResult) -> Figure:
    """Best latency so far against evaluations (the search's record), with the baseline."""
    fig, ax = _figure(4.6, 2.6, 0.75, 0.5)
    n = [h[0] for h in shape.history] + [max(shape.evaluations, shape.history[-1][0])]
    lat = [h[1] for h in shape.history] + [shape.history[-1][1]]
    ax.step(n, lat, where="post", color=_TUNED, linewidth=1.5, label="best so far")
    ax.scatter(n[:-1], lat[:-1], s=12, color=_TUNED, zorder=3)
    if shape.baseline is not None:
        ax.axhline(shape.baseline.latency_us, color=_BASELINE, linestyle="--", linewidth=1,
                   label="baseline")
    _log(ax, "x")
    ax.set_xlabel("evaluations")
    ax.set_ylabel("latency, us")
    ax.legend(loc="upper right", frameon=False)
    return fig


def sensitivity(shape: ShapeResult) -> Figure:
    """Latency change when each parameter of the winner moves one domain step down or up
    (symmetric log scale: 1 % and 300 % on one chart); a cross marks a step that breaks a
    check."""
    rows = list(shape.sensitivity)
    fig, ax = _figure(6.0, 0.8 + 0.3 * max(len(rows), 1), 1.25, 0.5, right_in=1.75)
    winner = shape.tuned.latency_us
    y = np.arange(len(rows), dtype=np.float64)[::-1]
    extent = [0.0]
    for offset, side, colour, label in ((0.18, "down", "#2ca02c", "one step down"),
                                        (-0.18, "up", "#ff7f0e", "one step up")):
        values, bad = [], []
        for yy, s in zip(y, rows, strict=True):
            step = s.down if side == "down" else s.up
            if step is None:
                continue
            change = step.change(winner)
            if change is None:
                bad.append(yy + offset)
            else:
                values.append((yy + offset, 100.0 * change))
                extent.append(100.0 * change)
        if values:
            ax.barh([v[0] for v in values], [v[1] for v in values], height=0.34, color=colour,
                    label=label)
        if bad:
            ax.scatter([0.0] * len(bad), bad, marker="x", color=_BAD, s=18, zorder=3,
                       label=f"{label}: breaks a check")
    ax.axvline(0, color="black", linewidth=0.8)
    from matplotlib import ticker

    ax.set_xscale("symlog", linthresh=1.0)
    # Autoscaling a symlog axis can cut the longest bar; give it 30 % room (log-wise).
    ax.set_xlim(min(min(extent) * 1.3, -0.5), max(max(extent) * 1.3, 1.5))
    ax.xaxis.set_minor_locator(ticker.NullLocator())
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(_number))
    ax.set_yticks(y, [f"{s.param}={s.value}" for s in rows])
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel("latency change, % (symlog)")
    ax.grid(axis="y", visible=False)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=7)
    return fig


# ---- per operator -----------------------------------------------------------------------------

def roofline(op: OperatorResult) -> Figure:
    """Arithmetic intensity against attained throughput: the chip's roof (HBM slope, compute
    ceiling) with every shape's baseline (hollow) and tuned (filled) point."""
    roof = op.roofline
    fig, ax = _figure(5.2, 3.4, 0.8, 0.55)
    unit = "FLOP" if roof.work_name == "FLOP" else "B"
    intensity = np.array([s.work / s.gm_bytes if s.gm_bytes > 0 else np.nan for s in op.shapes])
    tuned = np.array([s.work / s.tuned.latency_us * 1e6 for s in op.shapes]) / 1e12
    base = np.array([s.work / s.baseline.latency_us * 1e6 if s.baseline else np.nan
                     for s in op.shapes]) / 1e12
    ok = np.isfinite(intensity) & (intensity > 0) & (tuned > 0)
    lo = float(np.nanmin(intensity[ok])) if ok.any() else 1.0
    hi = float(np.nanmax(intensity[ok])) if ok.any() else 1.0
    bw = roof.gm_bytes_per_s / 1e12
    if roof.compute_per_s is not None:
        ridge = roof.compute_per_s / roof.gm_bytes_per_s
        lo, hi = min(lo, ridge), max(hi, ridge)
    x = np.geomspace(lo / 4, hi * 4, 200)
    ceiling = x * bw
    ax.plot(x, ceiling, color="#555555", linestyle=":", linewidth=1,
            label=f"HBM {roof.gm_bytes_per_s / 1e9:,.0f} GB/s")
    if roof.compute_per_s is not None:
        peak = roof.compute_per_s / 1e12
        ax.axhline(peak, color="#555555", linestyle="--", linewidth=1,
                   label=f"peak {peak:,.1f} T{unit}/s")
        ceiling = np.minimum(ceiling, peak)
    ax.plot(x, ceiling, color="black", linewidth=1.5)
    pair = ok & np.isfinite(base)
    for xi, b, t in zip(intensity[pair], base[pair], tuned[pair], strict=True):
        ax.plot([xi, xi], [b, t], color="#bbbbbb", linewidth=0.8, zorder=1)
    ax.scatter(intensity[pair], base[pair], s=22, facecolors="none", edgecolors=_BASELINE,
               label="baseline", zorder=2)
    ax.scatter(intensity[ok], tuned[ok], s=22, color=_TUNED, label="tuned", zorder=3)
    _log(ax, "x")
    _log(ax, "y")
    work = {"FLOP": "FLOP", "vector bytes": "vector bytes", "GM bytes": "GM bytes"}[
        roof.work_name]
    ax.set_xlabel(f"arithmetic intensity, {work} per GM byte")
    ax.set_ylabel(f"attained T{unit}/s" + ("" if unit == "FLOP" else f" ({work})"))
    ax.legend(loc="lower right", frameon=False, fontsize=7)
    return fig


def convergence(op: OperatorResult) -> Figure:
    """Every shape's search: best latency so far relative to its final best, against
    evaluations (one line per shape, drawn as one collection so 500 shapes stay fast)."""
    from matplotlib.collections import LineCollection

    fig, ax = _figure(5.2, 3.4, 0.8, 0.55)
    segments = []
    top = 1.0
    right = 1
    for s in op.shapes:
        if not s.history:
            continue
        final = s.history[-1][1]
        pts: list[tuple[float, float]] = []
        for i, (n, lat) in enumerate(s.history):
            if i:
                pts.append((float(n), pts[-1][1]))
            pts.append((float(n), lat / final))
        end = max(s.evaluations, s.history[-1][0])
        pts.append((float(end), 1.0))
        top = max(top, pts[0][1])
        right = max(right, end)
        segments.append(pts)
    ax.add_collection(LineCollection(segments, colors=_TUNED, linewidths=0.9, alpha=0.5))
    _log(ax, "x")
    ax.set_xlim(0.8, right * 1.3)
    if top > 3:  # a search that started far off: keep the last few percent readable
        _log(ax, "y")
        ax.set_ylim(0.98, top * 1.1)
    else:
        ax.set_ylim(0.99, top * 1.01 + 0.01)
    ax.set_xlabel("evaluations")
    ax.set_ylabel("best so far / final best")
    return fig


# ---- fidelity ---------------------------------------------------------------------------------

def fidelity_scatter(fid: Fidelity) -> Figure:
    fig, ax = _figure(4.6, 4.0, 0.8, 0.55)
    measured = np.array([p.measured_us for p in fid.points])
    predicted = np.array([p.predicted_us for p in fid.points])
    lo = float(min(measured.min(), predicted.min())) / 1.5
    hi = float(max(measured.max(), predicted.max())) * 1.5
    ax.plot([lo, hi], [lo, hi], color="black", linewidth=1, label="y = x")
    for factor, style in ((1.2, ":"), (1 / 1.2, ":")):
        ax.plot([lo, hi], [lo * factor, hi * factor], color="#888888", linestyle=style,
                linewidth=0.8)
    ax.scatter(measured, predicted, s=16, color=_TUNED, alpha=0.8, label="row", zorder=3)
    _log(ax, "x")
    _log(ax, "y")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured, us")
    ax.set_ylabel("predicted, us")
    ax.legend(loc="upper left", frameon=False, title="dotted: \u00b120 %", title_fontsize=7)
    return fig


def fidelity_errors(fid: Fidelity) -> Figure:
    from matplotlib.ticker import MaxNLocator

    errors = np.array([100.0 * p.error for p in fid.points])
    fig, ax = _figure(max(4.6, min(12.0, 1.2 + 0.08 * len(errors))), 2.8, 0.8, 0.55)
    x = np.arange(1, len(errors) + 1)
    ax.bar(x, errors, width=0.8, color=np.where(errors < 0, _TUNED, "#ff7f0e"))
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xlim(0.3, len(errors) + 0.7)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("row (table below)")
    ax.set_ylabel("prediction error, %")
    ax.grid(axis="x", visible=False)
    return fig

