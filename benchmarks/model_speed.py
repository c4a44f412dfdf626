"""Model evaluations per second for the Matmul spec on one core (median of repeats).

    python benchmarks/model_speed.py
"""

from __future__ import annotations

import time

import numpy as np

from ascend_tune.engine import ShapeModel
from ascend_tune.hardware import load_profile
from ascend_tune.spec import load_spec


def main() -> None:
    model = ShapeModel(load_spec("matmul"), load_profile("ascend910b3"),
                       {"M": 4096, "N": 4096, "K": 4096})
    rng = np.random.default_rng(0)
    print(f"{'batch':>8} {'evals/s (median)':>18} {'valid share':>12}")
    for batch in (4096, 65536):
        genomes = rng.integers(0, model.sizes, size=(batch, model.sizes.size))
        valid = model.values(genomes)
        ev = model.evaluate(valid)
        # Score valid configurations only: that is what the search pays the model for.
        rows = valid[ev.valid]
        rows = np.resize(rows, (batch, rows.shape[1]))
        rates = []
        for _ in range(7):
            start = time.perf_counter()
            model.evaluate(rows)
            rates.append(batch / (time.perf_counter() - start))
        print(f"{batch:>8} {np.median(rates):>18,.0f} {float(ev.valid.mean()):>12.1%}")


if __name__ == "__main__":
    main()
