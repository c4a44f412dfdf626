"""Search quality after Schoonhoven et al.: GA and random search against the exhaustive
optimum over a shape suite, several budgets and seeds.

    python benchmarks/search_quality.py            # full suite: 54 shapes, 10 seeds (slow)
    python benchmarks/search_quality.py --quick    # 6 shapes, 3 seeds

Prints per budget: fraction of optimum (optimum / found; median and 5th percentile over shapes
of the per-shape median over seeds), hit rate (found within 1.01x of the optimum), the P-score
against random search at the same budget (0 = random, 1 = optimum) and the median search time
per shape. Strategies see the problem the tuner builds (``tuner.search_problem``: the GA
proposes inside the valid set); budgets count every configuration looked at. The exhaustive
optimum (the pruned enumeration of the valid set, all of it scored) takes tens of seconds per
large Matmul shape; that is the slow part of the full run.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ascend_tune.hardware import load_profile
from ascend_tune.model.engine import ShapeModel
from ascend_tune.search.problem import run
from ascend_tune.search.strategies import STRATEGIES
from ascend_tune.search.strategies.exhaustive import Exhaustive
from ascend_tune.spec import load_spec
from ascend_tune.tune.shape import search_problem

ADD = [1, 31, 1000, 4096, 65537, 99991, 917504, 1 << 21, 7340032, 1 << 24, 41943040, 123456789,
       7, 333333, 1 << 26, 5_000_011, 262144, 786432, 3_145_728, 10_000_000, 2_359_296, 131071,
       45056, 18_874_368]
MATMUL = [(128, 4096, 4096), (512, 4096, 1024), (1024, 4096, 1024), (2048, 4096, 4000),
          (4096, 4096, 4096), (128, 16384, 1024), (2048, 11008, 4096), (4096, 7168, 2048),
          (1, 4096, 4096), (16, 5120, 5120), (4096, 1, 4096), (97, 193, 389), (1000, 1000, 1000),
          (8192, 8192, 128), (64, 64, 65536), (3584, 3584, 3584), (256, 151936, 4096),
          (7168, 2048, 7168), (32, 18944, 3584), (2048, 2048, 2048), (511, 1023, 2047),
          (4096, 14336, 4096), (12288, 4096, 128), (8, 7168, 18432), (1536, 1536, 1536),
          (6144, 6144, 512), (40, 40, 40), (2000, 3000, 5000), (4096, 128, 4096),
          (1024, 12288, 6144)]
BUDGETS = (250, 500, 1000, 2000)


def optimum(model: ShapeModel) -> float:
    problem = search_problem(model, "exhaustive")
    run(Exhaustive(chunk=131072), problem, 1, np.random.default_rng(0))
    return problem.best_latency


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--hw", default="ascend910b3")
    args = ap.parse_args()
    hw = load_profile(args.hw)
    suite = [("add", {"totalLength": n}) for n in ADD] + [
        ("matmul", {"M": m, "N": n, "K": k}) for m, n, k in MATMUL]
    seeds = args.seeds
    if args.quick:
        suite = suite[2:5] + suite[len(ADD): len(ADD) + 3]
        seeds = 3
    specs = {"add": load_spec("add"), "matmul": load_spec("matmul")}
    frac: dict[tuple[str, int], list[float]] = {}
    pscore: dict[int, list[float]] = {b: [] for b in BUDGETS}
    times: dict[int, list[float]] = {b: [] for b in BUDGETS}
    for name, shape in suite:
        model = ShapeModel(specs[name], hw, shape)
        best = optimum(model)
        for budget in BUDGETS:
            found: dict[str, list[float]] = {"ga": [], "random": []}
            for seed in range(seeds):
                for strat in ("ga", "random"):
                    problem = search_problem(model, strat)
                    start = time.perf_counter()
                    res = run(STRATEGIES[strat](), problem, budget, np.random.default_rng(seed))
                    if strat == "ga":
                        times[budget].append(time.perf_counter() - start)
                    found[strat].append(res.latency_us)
            for strat in found:
                frac.setdefault((strat, budget), []).append(best / float(np.median(found[strat])))
            ga_f, rnd_f = best / np.median(found["ga"]), best / np.median(found["random"])
            pscore[budget].append(1.0 if rnd_f >= 1 else (ga_f - rnd_f) / (1 - rnd_f))
        print(f"  {name} {shape}: optimum {best:.2f} us", flush=True)
    print(f"\n{len(suite)} shapes x {seeds} seeds on {hw.name}")
    print(f"{'strategy':<8} {'budget':>6} {'frac median':>12} {'frac p5':>8} {'hit@1.01':>9} "
          f"{'P vs random':>12} {'GA s/shape':>11}")
    for budget in BUDGETS:
        for strat in ("ga", "random"):
            f = np.array(frac[(strat, budget)])
            hit = float(np.mean(f >= 1 / 1.01))
            p = f"{np.median(pscore[budget]):.2f}" if strat == "ga" else "0 (ref)"
            t = f"{np.median(times[budget]):.3f}" if strat == "ga" else ""
            print(f"{strat:<8} {budget:>6} {np.median(f):>12.4f} {np.percentile(f, 5):>8.4f} "
                  f"{hit:>9.1%} {p:>12} {t:>11}")


if __name__ == "__main__":
    main()
