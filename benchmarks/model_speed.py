"""Model evaluations per second on one core (median of repeats), per spec and batch size.

    python benchmarks/model_speed.py [--repeats 7]

Two columns: ``valid evals/s`` scores valid configurations only (what the search pays the model
for: an exhaustive sweep filters invalid rows first), ``objective evals/s`` scores random index
genomes through ``ShapeModel.objective`` (valid and invalid rows, as the GA does).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import partial

import numpy as np

from ascend_tune.engine import ShapeModel
from ascend_tune.hardware import load_profile
from ascend_tune.spec import load_spec

CASES = (
    ("matmul", {"M": 4096, "N": 4096, "K": 4096}),
    ("batch_matmul", {"B": 8, "M": 1024, "N": 1024, "K": 1024}),
)
BATCH_ROWS = (4096, 65536)


def _median_rate(run: Callable[[], object], rows: int, repeats: int) -> float:
    """Rows per second, median over ``repeats`` timed calls (the machine is shared: noisy)."""
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        rates.append(rows / (time.perf_counter() - start))
    return float(np.median(rates))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    hw = load_profile("ascend910b3")
    print(f"{'spec':<14} {'batch':>8} {'valid evals/s':>15} {'objective evals/s':>18} "
          f"{'valid share':>12}")
    for name, shape in CASES:
        model = ShapeModel(load_spec(name), hw, shape)
        rng = np.random.default_rng(0)
        for batch in BATCH_ROWS:
            genomes = rng.integers(0, model.sizes, size=(batch, model.sizes.size))
            values = model.values(genomes)
            ev = model.evaluate(values)
            valid_rows = np.resize(values[ev.valid], (batch, values.shape[1]))
            valid_rate = _median_rate(partial(model.evaluate, valid_rows), batch, args.repeats)
            objective_rate = _median_rate(partial(model.objective, genomes), batch,
                                          args.repeats)
            print(f"{name:<14} {batch:>8} {valid_rate:>15,.0f} {objective_rate:>18,.0f} "
                  f"{float(ev.valid.mean()):>12.1%}")


if __name__ == "__main__":
    main()
