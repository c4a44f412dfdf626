"""Matmul predictions next to the published CATLASS measurements (shared/data/measurements).

    python benchmarks/model_vs_measured.py [path/to/catlass_public.csv]

Constants come from the profiles' sources; nothing here is fitted to these points. Each row is
modelled with the tiling its source kernel uses (CATLASS L1 128x256x256 / L0 128x256x64 for
fp16, 128x256x512 / 128x256x128 for int8; ping-pong L1 and L0A/B); the M x N core grid is
the best one for that tiling, standing in for CATLASS's block scheduler. The split-K kernels
are not modelled by this spec (no split-K parameter) and are listed as skipped.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

from ascend_tune.engine import ShapeModel
from ascend_tune.hardware import load_profile
from ascend_tune.spec import load_spec, load_spec_text

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "measurements" / \
    "catlass_public.csv"


def predict(model: ShapeModel, fixed: dict[str, int]) -> float:
    spec = model.spec
    m_vals = model.grids[spec.params.index("mDim")]
    n_vals = model.grids[spec.params.index("nDim")]
    rows = [[{**fixed, "mDim": int(a), "nDim": int(b)}[p] for p in spec.params]
            for a in m_vals for b in n_vals]
    ev = model.evaluate(np.array(rows, dtype=np.int64))
    return float(ev.latency_us.min())


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    lines = [ln for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]
    fp16 = load_spec("matmul")
    int8 = load_spec_text(fp16.source_text.replace(
        "dtypes: {a: float16, b: float16, c: float16, acc: float32}",
        "dtypes: {a: int8, b: int8, c: float16, acc: int32}"), "matmul-int8 (benchmark)")
    tiles = {"float16": dict(baseM=128, baseN=256, baseK=64, stepKa=4, stepKb=4),
             "int8": dict(baseM=128, baseN=256, baseK=128, stepKa=4, stepKb=4)}
    common = dict(stepM=1, stepN=1, dbL1=2, dbL0A=2, dbL0B=2, dbL0C=1, iterateOrder=0)
    errors = []
    print(f"{'chip':<12} {'kernel':<26} {'M':>5} {'N':>6} {'K':>6} {'dtype':<8} "
          f"{'measured us':>12} {'predicted us':>13} {'error':>8}")
    for row in csv.DictReader(lines):
        kernel, dtype = row["kernel"], row["dtype"]
        shape = {"M": int(row["M"]), "N": int(row["N"]), "K": int(row["K"])}
        measured = float(row["time_us"])
        if "splitk" in kernel:
            print(f"{row['chip']:<12} {kernel:<26} {shape['M']:>5} {shape['N']:>6} "
                  f"{shape['K']:>6} {dtype:<8} {measured:>12.1f} {'skipped':>13}")
            continue
        hw = load_profile(row["chip"].replace("ascend", "ascend"))
        spec = fp16 if dtype == "float16" else int8
        model = ShapeModel(spec, hw, shape)
        pred = predict(model, {**common, **tiles[dtype]})
        err = (pred - measured) / measured
        errors.append(abs(err))
        print(f"{row['chip']:<12} {kernel:<26} {shape['M']:>5} {shape['N']:>6} {shape['K']:>6} "
              f"{dtype:<8} {measured:>12.1f} {pred:>13.1f} {err:>+8.1%}")
    print(f"\nMAPE over {len(errors)} modelled points: {np.mean(errors):.1%} "
          f"(median abs error {np.median(errors):.1%})")


if __name__ == "__main__":
    main()
