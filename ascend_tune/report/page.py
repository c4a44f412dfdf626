"""The report page: every number formatted here, the Jinja template (``templates/report/``)
only loops. Autoescaped: names and paths come from input files.

Self-contained by construction: charts are inline SVG, the style sheet is inline, and a
Content-Security-Policy forbids the page any fetch (``default-src 'none'``), so even a future
template change cannot make it load something. The one script opens the collapsed sections
before printing; the policy allows exactly it, by hash.
"""

from __future__ import annotations

import base64
import hashlib
import math
from collections.abc import Mapping, Sequence
from typing import Any

import jinja2
from markupsafe import Markup

from ascend_tune import __version__
from ascend_tune.base import resources
from ascend_tune.report import charts
from ascend_tune.report.data import Neighbour, OperatorResult, ShapeResult
from ascend_tune.report.dispatch import DispatchCheck
from ascend_tune.report.fidelity import Fidelity
from ascend_tune.report.kernel_view import KernelView
from ascend_tune.report.range_chart import range_latency
from ascend_tune.spec.shapes import shape_key

PRINT_SCRIPT = ('addEventListener("beforeprint",()=>{for(const d of '
                'document.querySelectorAll("details"))d.open=true});')
_SCRIPT_HASH = base64.b64encode(hashlib.sha256(PRINT_SCRIPT.encode()).digest()).decode()
CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
       f"script-src 'sha256-{_SCRIPT_HASH}'; base-uri 'none'; form-action 'none'")


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resources.data_dir("templates") / "report")),
        undefined=jinja2.StrictUndefined, autoescape=True, trim_blocks=True,
        lstrip_blocks=True, keep_trailing_newline=True)


def us(value: float) -> str:
    """Microseconds with 4 significant digits (0.01234, 12.34, 1234, 12345)."""
    if value >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}" if value >= 0.001 else f"{value:.2e}"


def pct(value: float, signed: bool = False) -> str:
    return f"{100 * value:+.1f} %" if signed else f"{100 * value:.1f} %"


def times(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


class _Charts:
    """Draws charts and counts them."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, chart_id: str, painter: Any, *args: Any) -> dict[str, Any]:
        self.count += 1
        return {"id": chart_id, "svg": Markup(charts.draw(chart_id, painter, *args))}


def _step(n: Neighbour | None, winner_us: float) -> str:
    if n is None:
        return "domain edge"
    change = n.change(winner_us)
    if change is None:
        return f"{n.value}: breaks {n.violates}"
    return f"{n.value}: {pct(change, signed=True)}"


def _history_text(s: ShapeResult) -> str:
    if not s.history:
        return "not recorded (results written before the history was; rerun search --fresh)"
    steps = " \u2192 ".join(f"{n}: {us(lat)}" for n, lat in s.history)
    return f"{steps} us (of {s.evaluations:,} evaluations, {s.strategy})"


def _kernel_rows(kernel: KernelView | None, index: int) -> dict[str, Any]:
    if kernel is None:
        return {"tiling": [], "leaves": None}
    leaves = kernel.leaves.get(index)
    return {
        "tiling": [{"name": r.name, "ctype": r.ctype, "value": r.value}
                   for r in kernel.tiling.get(index, ())],
        "leaves": None if leaves is None else [
            {"path": x.path, "coefficient": x.coefficient, "why": x.why,
             "change": pct(x.change, signed=True), "source": x.source} for x in leaves],
    }


def _shape_view(op_id: str, s: ShapeResult, draw: _Charts | None,
                kernel: KernelView | None = None) -> dict[str, Any]:
    sid = f"{op_id}-s{s.index + 1}"
    figures = []
    if draw is not None:
        figures.append({**draw(f"{sid}-pipes", charts.pipes, s), "kind": "pipes",
                        "caption": "Busy time per pipe (msprof columns), stacked; the black "
                                   "tick is the latency (pipes overlap)."})
        if s.history:
            figures.append({**draw(f"{sid}-history", charts.history, s), "kind": "history",
                            "caption": "Search history: best latency so far against "
                                       "evaluations; dashed: the baseline."})
        figures.append({**draw(f"{sid}-sensitivity", charts.sensitivity, s),
                        "kind": "sensitivity",
                        "caption": "Sensitivity: latency change with each parameter one "
                                   "domain step down or up from the winner."})
    winner = s.tuned.latency_us
    m = s.measured
    return {
        "id": sid, "key": s.key,
        "measured": us(m.winner_us) if m is not None and m.winner_us is not None else "-",
        "baseline_measured": (us(m.baseline_us) if m is not None and m.baseline_us is not None
                              else "-"),
        "measured_speedup": times(m.speedup) if m is not None else "n/a",
        "baseline": us(s.baseline.latency_us) if s.baseline else f"invalid ({s.baseline_violates})",
        "tuned": us(winner), "speedup": times(s.speedup), "bound": s.tuned.bound,
        "efficiency": pct(s.tuned.efficiency),
        "changed": ("n/a: the baseline breaks a check" if s.baseline is None else
                    ", ".join(f"{p} {a}\u2192{b}" for p, a, b in s.changed) or "none"),
        "stale": s.stale,
        "figures": figures,
        "sensitivity": [{"param": x.param, "value": x.value, "down": _step(x.down, winner),
                         "up": _step(x.up, winner)} for x in s.sensitivity],
        "history": _history_text(s),
        "config": " ".join(f"{p}={v}" for p, v in s.tuned.config.items()),
        **_kernel_rows(kernel, s.index),
    }


def _operator_view(i: int, op: OperatorResult, draw: _Charts) -> dict[str, Any]:
    op_id = f"op{i}"
    charted = set(op.charted)
    base_total = sum(s.baseline.latency_us for s in op.shapes if s.baseline is not None)
    tuned_total = sum(s.tuned.latency_us for s in op.shapes if s.baseline is not None)
    caption = ("Roofline: hollow = baseline, filled = tuned, one pair per shape; ceilings of "
               f"{op.hw.name} for {op.roofline.work_name}.")
    if op.spec.roofline_cube_flops is not None and op.spec.roofline_vector_bytes is not None:
        caption += (" The operator's Vector work has its own ceiling, not drawn here; the "
                    "efficiency column counts it.")
    figures = [{**draw(f"{op_id}-roofline", charts.roofline, op), "kind": "roofline",
                "caption": caption}]
    if any(s.history for s in op.shapes):
        figures.append({**draw(f"{op_id}-convergence", charts.convergence, op),
                        "kind": "convergence",
                        "caption": "Convergence of every shape's search: best latency so far "
                                   "relative to the final best."})
    curve = op.kernel.range_curve if op.kernel is not None else None
    if curve is not None:
        fixed = ", ".join(f"{k}={v}" for k, v in curve.fixed.items())
        figures.append({**draw(f"{op_id}-range", range_latency, curve), "kind": "range",
                        "caption": f"Predicted latency along {curve.variable}"
                                   f"{' (' + fixed + ')' if fixed else ''} of the "
                                   "configuration the emitted dispatch picks; vertical "
                                   f"marks: the picked tiling changes ({len(curve.changes)}"
                                   "); dots: the tuned shapes."})
    search = op.search
    return {
        "id": op_id, "title": op.title, "path": str(op.path),
        "spec_sha": op.spec.sha256[:12],
        "search": ", ".join(f"{k} {search[k]}" for k in ("strategy", "budget", "seed")
                            if k in search),
        "shapes": [_shape_view(op_id, s, draw if s.index in charted else None, op.kernel)
                   for s in op.shapes],
        "count": len(op.shapes), "charted": len(charted),
        "geomean": times(op.geomean_speedup), "max": times(op.max_speedup),
        "measured": op.measured_shapes,
        "measured_geomean": times(op.measured_geomean_speedup),
        "efficiency": pct(op.median_efficiency),
        "bounds": ", ".join(f"{b} ({n})" for b, n in op.bounds),
        "top_bound": op.bounds[0][0],
        "total": (f"{us(tuned_total)} of {us(base_total)} us" if base_total else "n/a"),
        "stale": op.stale_count, "figures": figures,
        "dispatch": _dispatch_view(op.dispatch) if op.dispatch is not None else None,
    }


def _ratio(value: float) -> str:
    return f"{value:.3f}x" if math.isfinite(value) else "n/a"


def _dispatch_view(check: DispatchCheck) -> dict[str, Any]:
    """The dispatch table, worst ratio first (ties: draw order)."""
    order = sorted(range(len(check.rows)), key=lambda i: (-check.rows[i].ratio, i))
    return {
        "n": len(check.rows), "token": check.token, "lo": check.lo, "hi": check.hi,
        "mean": _ratio(check.mean), "p90": _ratio(check.p90), "worst": _ratio(check.worst),
        "within": pct(check.within), "slower": check.slower_than_fallback,
        "failed": check.failed,
        "rows": [{"key": shape_key(r.shape), "source": r.source,
                  "dispatched": us(r.dispatched_us) if math.isfinite(r.dispatched_us)
                  else "none", "optimum": us(r.optimum_us), "ratio": _ratio(r.ratio),
                  "fallback": us(r.fallback_us) if math.isfinite(r.fallback_us)
                  else "invalid"}
                 for r in (check.rows[i] for i in order)],
    }


def _rank(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _fidelity_view(fid: Fidelity, draw: _Charts) -> dict[str, Any]:
    return {
        "title": f"{fid.spec_name} on {fid.hw_name}", "files": ", ".join(fid.files),
        "rows": len(fid.points), "skipped": list(fid.skipped),
        "mape": pct(fid.mape), "max_error": pct(fid.max_error),
        "bias": pct(fid.bias, signed=True), "spearman": _rank(fid.spearman),
        "figures": [
            {**draw("fidelity-scatter", charts.fidelity_scatter, fid), "kind": "scatter",
             "caption": "Predicted against measured time per row; the line is y = x."},
            {**draw("fidelity-errors", charts.fidelity_errors, fid), "kind": "errors",
             "caption": "Prediction error by row (negative: the model is optimistic)."}],
        "sweeps": [{"key": s.shape_key, "rows": s.rows, "spearman": _rank(s.spearman),
                    "pairwise": "n/a" if s.pairwise is None else pct(s.pairwise),
                    "regret": times(s.regret)}
                   for s in fid.sweeps],
        "points": [{"n": n, "origin": p.origin, "key": p.shape_key,
                    "measured": us(p.measured_us), "predicted": us(p.predicted_us),
                    "error": pct(p.error, signed=True)}
                   for n, p in enumerate(fid.points, start=1)],
    }


def render(operators: Sequence[OperatorResult], fid: Fidelity | None,
           database: Mapping[str, Any] | None = None) -> tuple[str, int]:
    """The page and the number of charts on it; ``database``: what the tuning database holds
    of these operators (``source`` and ``rows``), shown when given."""
    draw = _Charts()
    ops = [_operator_view(i, op, draw) for i, op in enumerate(operators, start=1)]
    fidelity = _fidelity_view(fid, draw) if fid is not None else None
    html = _environment().get_template("page.html.j2").render(
        version=__version__, csp=CSP, script=Markup(PRINT_SCRIPT), operators=ops,
        fidelity=fidelity, database=database)
    return html, draw.count
