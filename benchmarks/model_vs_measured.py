"""The model's predictions next to published measured kernel times, uncalibrated.

    python benchmarks/model_vs_measured.py [--markdown] [--rows]

Data: ``../shared/data/measurements/public_timings.csv`` (353 rows, notes in PUBLIC_TIMINGS.md;
copied to ``benchmarks/data/public_timings.csv`` when the shared copy is absent) and
``benchmarks/data/catlass_public.csv`` (18 CATLASS points, manifests beside it). Every
prediction uses the shipped profiles as they are: nothing here is fitted.

Held-out split, fixed before any error was looked at (by source):

* **held out** -- rows no constant of the model was set or checked against: the CATLASS msKPP
  autotune tiling sweeps on 910B4 (catlass examples/autotune @30f3b93d: 00_basic_matmul,
  06_optimized_matmul -- its column-major B is predicted as row-major, operand layout is not
  modelled yet) and the asc-devkit standalone GELU rows (matmul_gelu_high_performance,
  gelu_high_performance).
* **dev** -- rows that earlier work calibrated or validated against, or that this change
  inspected while re-deriving the launch cost: ``catlass_public.csv`` (the project's previous
  validation set) and the asc-devkit add_high_performance tuning steps.

Per group (operator, chip): MAPE, max |error|, bias (mean signed error); per tiling sweep (one
shape, several measured tilings): Spearman rank correlation and regret = measured time of the
model's pick / measured best. Rows the built-in specs cannot describe are counted by reason.
"""

from __future__ import annotations

import argparse
import csv
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ascend_tune import calibrate as cal
from ascend_tune.engine import ShapeModel
from ascend_tune.hardware import HardwareProfile, load_profile
from ascend_tune.measurements import load_manifest, read_files
from ascend_tune.spec import OperatorSpec, load_spec

DATA = Path(__file__).resolve().parent / "data"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "measurements"
PUBLIC = next((p for p in (SHARED / "public_timings.csv", DATA / "public_timings.csv")
               if p.exists()), SHARED / "public_timings.csv")
CATLASS_GROUPS = [("matmul fp16 (catlass_public)", "matmul", "ascend910b2",
                   "catlass_fp16.manifest.yaml"),
                  ("matmul int8 (catlass_public)", "matmul:int8", "ascend910b1",
                   "catlass_int8.manifest.yaml")]
# CATLASS 00/06 as the matmul spec sees them (as catlass_fp16.manifest.yaml): ping-pong L1 and
# L0A/L0B, L0C single, the model's best core grid.
CATLASS_FIXED = {"dbL1": 2, "dbL0A": 2, "dbL0B": 2, "dbL0C": 1, "iterateOrder": 0, "kDim": 1}


@dataclass
class Point:
    split: str  # "held-out" or "dev"
    group: str  # operator and chip
    sweep: str | None  # rows of one shape differing only in tiling
    label: str
    measured: float
    predicted: float


@dataclass
class Report:
    points: list[Point] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)


def _predict(spec: OperatorSpec, hw: HardwareProfile, shape: Mapping[str, int],
             config: Mapping[str, int], free: Sequence[str] = ()) -> float:
    """Predicted time of ``config``; parameters in ``free`` take the model's best value."""
    model = ShapeModel(spec, hw, shape)
    base = {**model.baseline_values(), **config}
    combos = [base]
    for p in free:
        grid = model.grids[spec.params.index(p)]
        combos = [{**c, p: int(v)} for c in combos for v in grid]
    values = np.array([[c[p] for p in spec.params] for c in combos], dtype=np.int64)
    ev = model.evaluate(values)
    if not ev.valid.any():
        raise ValueError(model.constraint_names[int(ev.failed[0])])
    return float(ev.latency_us[ev.valid].min())


def _catlass_sweeps(rows: list[dict[str, str]], report: Report) -> None:
    spec, hw = load_spec("matmul"), load_profile("ascend910b4")
    tile = re.compile(r"L1TileShape=<(\d+),(\d+),(\d+)>; L0TileShape=<(\d+),(\d+),(\d+)>")
    for r in rows:
        kernel = r["kernel"]
        if "08_grouped_matmul" in kernel:
            report.skipped["grouped matmul (no grouped-matmul spec)"] += 1
            continue
        sweep = "00_basic_matmul" if "00_basic" in kernel else "06_optimized_matmul"
        m1, n1, k1, m0, n0, k0 = (int(v) for v in tile.search(r["tiling"]).groups())  # type: ignore[union-attr]
        config = {"baseM": m0, "baseN": n0, "baseK": k0, "stepM": m1 // m0, "stepN": n1 // n0,
                  "stepKa": k1 // k0, "stepKb": k1 // k0, **CATLASS_FIXED}
        shape = {"M": int(r["M"]), "N": int(r["N"]), "K": int(r["K"])}
        try:
            pred = _predict(spec, hw, shape, config, ("mDim", "nDim"))
        except ValueError as e:
            report.skipped[f"CATLASS tiling breaks spec constraint {e}"] += 1
            continue
        report.points.append(Point("held-out", "matmul fp16 / 910B4", f"catlass {sweep}",
                                   f"L1 <{m1},{n1},{k1}> L0 <{m0},{n0},{k0}>",
                                   float(r["time_us"]), pred))


def _add_steps(rows: list[dict[str, str]], report: Report) -> None:
    spec = load_spec("add")
    shape = {"totalLength": 8192 * 8192}
    for r in rows:
        kernel, tiling = r["kernel"], r["tiling"]
        if "Case 0" in kernel:
            report.skipped["scalar (non-vector) kernel"] += 1
            continue
        if "950" in r["chip"]:
            hw_name, chip = "ascend950pr", "950PR"
        else:
            hw_name, chip = "ascend910b2", "A2 (910B2 profile, 48 AIV)"
        hw = load_profile(hw_name)
        cores = int(r["block_dim"])
        if cores > int(hw["vector_cores"]):
            report.skipped[f"{hw_name} profile has {int(hw['vector_cores'])} AIV, "
                           f"the sample launches {cores}"] += 1
            continue
        length = int(re.search(r"dataCopyLen=(\d+)", tiling).group(1))  # type: ignore[union-attr]
        double = ("Double buffer" in kernel or "Case 5" in kernel or "Case 6" in kernel)
        config = {"blockDim": cores, "tileLength": length, "bufferNum": 2 if double else 1}
        try:
            pred = _predict(spec, hw, shape, config)
        except ValueError as e:
            report.skipped[f"Add step breaks spec constraint {e}"] += 1
            continue
        label = re.sub(r"^add_high_performance ", "", kernel)
        report.points.append(Point("dev", f"add fp16 / {chip}", f"asc-devkit add / {chip}",
                                   label[:60], float(r["time_us"]), pred))


def _gelu(rows: list[dict[str, str]], report: Report) -> None:
    spec = load_spec("gelu:float32")
    shape = {"totalLength": 8192 * 8192}
    for r in rows:
        hw_name = "ascend950pr" if "950" in r["chip"] else "ascend910b2"
        hw = load_profile(hw_name)
        cores = int(re.match(r"\d+", r["block_dim"]).group(0))  # type: ignore[union-attr]
        if cores > int(hw["vector_cores"]):
            report.skipped[f"{hw_name} profile has {int(hw['vector_cores'])} AIV, "
                           f"the sample launches {cores}"] += 1
            continue
        # Tiling beyond the core count is not stated: tile and buffering take the model's best.
        pred = _predict(spec, hw, shape, {"blockDim": cores}, ("tileLength", "bufferNum"))
        report.points.append(Point("held-out", f"gelu fp32 / {hw_name}", None,
                                   r["kernel"][:60], float(r["time_us"]), pred))


def _catlass_public(report: Report) -> None:
    for title, spec_ref, hw_ref, manifest in CATLASS_GROUPS:
        spec, hw = load_spec(spec_ref), load_profile(hw_ref)
        rows = read_files([DATA / "catlass_public.csv"], spec, load_manifest(DATA / manifest)).rows
        pred = cal.predict(spec, hw, rows).time_us
        for row, p in zip(rows, pred, strict=True):
            label = ",".join(f"{k}={v}" for k, v in row.shape.items())
            report.points.append(Point("dev", f"{title} / {hw_ref}", None, label,
                                       row.time_us, float(p)))


def collect() -> Report:
    report = Report()
    with PUBLIC.open(newline="") as f:
        rows = list(csv.DictReader(f))
    used: set[int] = set()
    catlass = [i for i, r in enumerate(rows) if "examples/autotune" in r["source"]]
    add = [i for i, r in enumerate(rows) if "add_high_performance" in r["kernel"]]
    gelu = [i for i, r in enumerate(rows) if (r["op"] == "gelu" and "asc-devkit" in r["source"]
            and "standalone" in r["kernel"]) or "gelu_high_performance Case" in r["kernel"]]
    _catlass_sweeps([rows[i] for i in catlass], report)
    _add_steps([rows[i] for i in add], report)
    _gelu([rows[i] for i in gelu], report)
    used |= set(catlass) | set(add) | set(gelu)
    for i, r in enumerate(rows):
        if i not in used:
            report.skipped[_why_not(r)] += 1
    _catlass_public(report)
    return report


def _why_not(r: Mapping[str, str]) -> str:
    op, source, meaning = r["op"], r["source"], r["time_meaning"].lower()
    if "wall" in meaning or "event" in meaning or "ascend-rs" in source:
        return "host wall / event time (launch and sync included), not a kernel time"
    if op.startswith("flash_attention"):
        return "flash attention: tiling not stated or a fused-infer op (spec needs a manifest)"
    if "grouped" in op or "quant" in op:
        return "quant / grouped kernel (no spec yet: issue 13 deliverable)"
    if op == "matmul" or op.startswith("matmul") or op.startswith("conv2d"):
        return "matmul / conv: per-case tiling needs a manifest (not written in this change)"
    if op.startswith("data_movement") or op.startswith("layout"):
        return "pure data movement (no copy spec)"
    if op.startswith("elementwise_add"):
        return "add with no block dim / shape stated, or SIMT (another programming model)"
    return f"no built-in spec for '{op.split(' (')[0]}'"


def _errors(points: Sequence[Point]) -> tuple[float, float, float]:
    e = np.array([(p.predicted - p.measured) / p.measured for p in points])
    return float(np.mean(np.abs(e))), float(np.max(np.abs(e))), float(np.mean(e))


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra = np.argsort(np.argsort(a, kind="stable"), kind="stable").astype(float)
    rb = np.argsort(np.argsort(b, kind="stable"), kind="stable").astype(float)
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def tables(report: Report) -> tuple[list[list[Any]], list[list[Any]]]:
    groups, sweeps = [], []
    for split in ("held-out", "dev"):
        pts = [p for p in report.points if p.split == split]
        for g in dict.fromkeys(p.group for p in pts):
            sel = [p for p in pts if p.group == g]
            groups.append([split, g, len(sel), *_errors(sel)])
        if pts:
            groups.append([split, "all", len(pts), *_errors(pts)])
        for s in dict.fromkeys(p.sweep for p in pts if p.sweep is not None):
            sel = [p for p in pts if p.sweep == s]
            meas = np.array([p.measured for p in sel])
            pred = np.array([p.predicted for p in sel])
            regret = float(meas[int(np.argmin(pred))] / meas.min())
            sweeps.append([split, s, len(sel), _spearman(pred, meas), regret])
    return groups, sweeps


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--rows", action="store_true", help="print every compared row")
    args = ap.parse_args()
    report = collect()
    groups, sweeps = tables(report)
    if args.rows:
        for p in report.points:
            print(f"{p.split:<8} {p.group:<40} {p.label:<60} {p.measured:>10.2f} "
                  f"{p.predicted:>10.2f} {(p.predicted - p.measured) / p.measured:>+8.1%}")
        print()
    if args.markdown:
        print("| split | operator / chip | rows | MAPE | max error | bias |\n"
              "|---|---|---:|---:|---:|---:|")
        for s, g, n, mape, mx, bias in groups:
            print(f"| {s} | {g} | {n} | {mape:.1%} | {mx:.1%} | {bias:+.1%} |")
        print("\n| split | tiling sweep | configs | Spearman | regret (pick / best) |\n"
              "|---|---|---:|---:|---:|")
        for s, name, n, rho, regret in sweeps:
            print(f"| {s} | {name} | {n} | {rho:.2f} | {regret:.3f}x |")
        print("\n| rows not compared | count |\n|---|---:|")
        for why, n in report.skipped.most_common():
            print(f"| {why} | {n} |")
        return
    print(f"{'split':<8} {'operator / chip':<44} {'rows':>4} {'MAPE':>7} {'max':>7} {'bias':>7}")
    for s, g, n, mape, mx, bias in groups:
        print(f"{s:<8} {g:<44} {n:>4} {mape:>7.1%} {mx:>7.1%} {bias:>+7.1%}")
    print(f"\n{'split':<8} {'tiling sweep':<44} {'n':>4} {'Spearman':>9} {'regret':>8}")
    for s, name, n, rho, regret in sweeps:
        print(f"{s:<8} {name:<44} {n:>4} {rho:>9.2f} {regret:>7.3f}x")
    print("\nrows not compared:")
    for why, n in report.skipped.most_common():
        print(f"  {n:>4}  {why}")


if __name__ == "__main__":
    main()
