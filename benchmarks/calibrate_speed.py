"""How long `calibrate` and `validate --kfold 5` take as the measurement file grows.

    python benchmarks/calibrate_speed.py [--repeats 3] [--sizes 50,100,200,400] [--spec add]

Measurements are synthetic: a perturbed 910B3 profile (GM read bandwidth x0.8, Vector x1.3,
head x1.5) predicts the time of random valid configurations, with 3 % log-normal noise, written
as a plain CSV with per-pipe columns (what `msprof op` gives). Rows come as tiling sweeps
(``--per-shape`` configurations of each shape), the usual shape of a tuning measurement
campaign; the last line of the table is the worst case, every row its own shape. Times are the
median of ``--repeats`` runs of the Python API in this process (``api.calibrate``,
``api.validate(kfold=5)``: reading the CSV, screening, fitting; no interpreter start-up),
wall-clock and, in brackets, CPU time (on a shared machine the wall-clock figure includes
waiting for a core).

The model is evaluated once per distinct shape per trial profile (all of a shape's rows in one
vectorised call), so the cost follows the number of shapes, not rows.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ascend_tune import api
from ascend_tune.base.vocabulary import PIPE_COLUMNS
from ascend_tune.calibrate import fit as cal
from ascend_tune.hardware import HardwareProfile, load_profile_data
from ascend_tune.model.engine import ShapeModel
from ascend_tune.spec import OperatorSpec

TRUTH = {"gm_to_ub_bandwidth": 0.8, "vector_time": 1.3, "head_overhead": 1.5}
SHAPE_RANGE = {"add": ("totalLength", 5e4, 5e7), "gelu": ("totalLength", 5e4, 5e7)}


def synthetic_csv(path: Path, spec_name: str, spec: OperatorSpec, truth: HardwareProfile,
                  n_shapes: int, per_shape: int, seed: int) -> int:
    """Write ``n_shapes * per_shape`` rows; return how many were written."""
    rng = np.random.default_rng(seed)
    var, lo, hi = SHAPE_RANGE[spec_name]
    columns = list(PIPE_COLUMNS)
    lines = [",".join([var, *spec.params, "time_us", *columns])]
    sizes = sorted({int(np.exp(rng.uniform(np.log(lo), np.log(hi)))) for _ in range(n_shapes)})
    for size in sizes:
        model = ShapeModel(spec, truth, {var: size})
        idx = np.stack([rng.integers(len(g), size=per_shape * 50) for g in model.grids], axis=1)
        values = model.values(idx)
        ev = model.evaluate(values)
        keep = np.flatnonzero(ev.valid)[:per_shape]
        for i in keep:
            noise = float(np.exp(rng.normal(0.0, 0.03)))
            cells = [size, *values[i].tolist(), repr(float(ev.latency_us[i]) * noise),
                     *(repr(float(ev.pipes_us[c][i]) * noise) for c in columns)]
            lines.append(",".join(str(x) for x in cells))
    path.write_text("\n".join(lines) + "\n")
    return len(lines) - 1


def median_seconds(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Median wall-clock and CPU seconds of ``repeats`` calls (CPU time is what a shared,
    busy machine does not inflate)."""
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", default="50,100,200,400")
    parser.add_argument("--per-shape", type=int, default=10)
    parser.add_argument("--spec", default="add", choices=sorted(SHAPE_RANGE))
    args = parser.parse_args()
    spec = api.load_spec(args.spec)
    hw = api.load_profile("ascend910b3")
    truth = load_profile_data(cal.apply(hw.data, TRUTH), "truth")
    cases = [(n // args.per_shape, args.per_shape) for n in map(int, args.sizes.split(","))]
    cases.append((int(args.sizes.split(",")[0]), 1))  # worst case: every row its own shape
    print(f"{spec.display_name} on ascend910b3, median of {args.repeats} run(s)")
    print("| rows | shapes | calibrate s (cpu) | validate --kfold 5 s (cpu) "
          "| held-out MAPE before -> after |")
    print("|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for n_shapes, per_shape in cases:
            path = Path(tmp) / f"m{n_shapes}x{per_shape}.csv"
            n = synthetic_csv(path, args.spec, spec, truth, n_shapes, per_shape, seed=n_shapes)
            shapes = len(set(path.read_text().splitlines()[1:][i].split(",")[0]
                             for i in range(n)))
            fit = api.calibrate(spec, hw, [path])
            t_cal, c_cal = median_seconds(lambda p=path: api.calibrate(spec, hw, [p]),
                                          args.repeats)
            t_val, c_val = median_seconds(lambda p=path: api.validate(spec, hw, [p], kfold=5),
                                          args.repeats)
            held = (f"{fit.held_out_before.mape:.1%} -> {fit.held_out_after.mape:.1%}"
                    if fit.held_out_before and fit.held_out_after else "none held out")
            print(f"| {n} | {shapes} | {t_cal:.2f} ({c_cal:.2f}) | {t_val:.2f} ({c_val:.2f}) "
                  f"| {held} |")


if __name__ == "__main__":
    main()
