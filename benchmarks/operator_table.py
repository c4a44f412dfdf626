"""Per spec on its example suite: predicted geomean speedup over the baseline, median
efficiency against the roofline, and median search time per shape.

    python benchmarks/operator_table.py [--hw ascend910b3] [--markdown]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from ascend_tune.hardware import load_profile
from ascend_tune.spec import load_spec
from ascend_tune.spec.shapes import load_shape_file
from ascend_tune.tune.shape import DEFAULT_BUDGET, TuneSettings, tune_shape

ROOT = Path(__file__).resolve().parents[1]
REFS = ["add", "add:float32", "mul", "gelu", "swiglu", "cast", "softmax", "rmsnorm", "layernorm",
        "matmul", "matmul:bfloat16", "matmul:float32", "matmul:hf32", "matmul:int8",
        "matmul:splitk", "batch_matmul", "flash_attention", "grouped_matmul", "quant_matmul",
        "catlass_matmul"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hw", default="ascend910b3")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    hw = load_profile(args.hw)
    rows = []
    for ref in REFS:
        spec = load_spec(ref)
        stem = ref.split(":")[0]
        suite = next(p for p in (ROOT / "examples" / stem).glob("shapes.*"))
        shapes = load_shape_file(suite, spec)
        speedups, effs, times = [], [], []
        for shape in shapes:
            start = time.perf_counter()
            entry = tune_shape(spec, hw, shape, TuneSettings("auto", DEFAULT_BUDGET, 0))
            times.append(time.perf_counter() - start)
            speedups.append(entry["speedup"])
            effs.append(entry["predicted"]["efficiency"])
        geo = float(np.exp(np.mean(np.log(speedups))))
        rows.append((ref, len(shapes), geo, max(speedups), float(np.median(effs)),
                     float(np.median(times))))
    if args.markdown:
        print("| spec | shapes | geomean speedup | max speedup | median efficiency | "
              "median search s |\n|---|---:|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r[0]} | {r[1]} | {r[2]:.2f}x | {r[3]:.2f}x | {r[4]:.0%} | {r[5]:.2f} |")
        return
    print(f"{'spec':<18} {'shapes':>6} {'geomean':>8} {'max':>6} {'median eff':>11} "
          f"{'search s':>9}   ({hw.name}, budget {DEFAULT_BUDGET})")
    for r in rows:
        print(f"{r[0]:<18} {r[1]:>6} {r[2]:>7.2f}x {r[3]:>5.2f}x {r[4]:>11.0%} {r[5]:>9.2f}")


if __name__ == "__main__":
    main()
