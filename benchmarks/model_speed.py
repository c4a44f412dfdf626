"""Model evaluations per second on one core (median of repeats), per spec and batch size.

    python benchmarks/model_speed.py [--repeats 7]
    python benchmarks/model_speed.py --small    # the row kernel against the engine


Two columns: ``valid evals/s`` scores valid configurations only (what the search pays the model
for: an exhaustive sweep filters invalid rows first), ``objective evals/s`` scores random index
genomes through ``ShapeModel.objective`` (valid and invalid rows, as the GA does).

``--small``: milliseconds per call for the batches a local search sends (a few valid rows):
the model by the row kernel (ascend_tune/model/fastpaths/kernel.py; its memoised groups
empty, as for a new shape, and filled, as once a search has seen the combinations) against
the vectorised engine;
the checks by their tables (ascend_tune/model/fastpaths/tables.py, what a search uses), by
the row kernel (each row new: what a check too large to table costs) and by the engine.
Where the columns cross is where ``engine.ROW_KERNEL_MAX_ROWS`` and
``space.CHECK_KERNEL_MAX_ROWS`` hand over.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import partial

import numpy as np

from ascend_tune.hardware import load_profile
from ascend_tune.model.engine import ShapeModel
from ascend_tune.search import space as feasibility
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


def _median_ms(run: Callable[[], object], repeats: int,
               before: Callable[[], object] = lambda: None) -> float:
    times = []
    for _ in range(repeats):
        before()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def _forget(memo: list[list[object]]) -> None:
    """Empty a kernel's memoised groups, as a new shape's kernel has them."""
    for table in memo:
        table[:] = [None] * len(table)


def small(repeats: int) -> None:
    hw = load_profile("ascend910b3")
    print("| spec | rows | model: kernel, new combinations ms | model: kernel, seen ms | "
          "model: engine ms | checks: tables ms | checks: row kernel ms | checks: engine ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, shape in CASES:
        model = ShapeModel(load_spec(name), hw, shape)
        checks = feasibility.check_set(model)
        untabled = feasibility.CheckSet(feasibility.enumerator(model), proven=True,
                                        max_table_entries=0)
        valid = next(feasibility.index_blocks(model, rows=20_000))
        every = list(range(len(checks.checks)))
        rng = np.random.default_rng(0)
        kernel_fn = model._row_latency
        assert kernel_fn is not None
        forget = partial(_forget, [v for k, v in kernel_fn.__globals__.items()
                                   if k.startswith("_M")])
        for rows in (8, 32, 64, 128, 256):
            genomes = valid[rng.choice(len(valid), rows)]
            cold = _median_ms(partial(model._row_objective, genomes), repeats, forget)
            warm = _median_ms(partial(model._row_objective, genomes), repeats)
            engine = _median_ms(partial(model.evaluate, model.values(genomes)), repeats)
            tables = _median_ms(partial(checks.passes, genomes, every), repeats)
            saved = feasibility.CHECK_KERNEL_MAX_ROWS
            feasibility.CHECK_KERNEL_MAX_ROWS = rows  # the kernel, each row new
            check_kernel = _median_ms(partial(untabled.passes, genomes, every), repeats,
                                      untabled._memo.clear)
            feasibility.CHECK_KERNEL_MAX_ROWS = saved
            check_engine = _median_ms(partial(checks.passes_vectorised, genomes, every),
                                      repeats)
            print(f"| {name} | {rows} | {cold:.2f} | {warm:.2f} | {engine:.2f} | "
                  f"{tables:.2f} | {check_kernel:.2f} | {check_engine:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--small", action="store_true",
                        help="the row kernel against the engine on small batches")
    args = parser.parse_args()
    if args.small:
        small(max(args.repeats, 15))
        return
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
