"""Search quality after Schoonhoven et al.: the GA, ils and random search against the exact
optimum over a shape suite, several budgets and seeds.

    python benchmarks/search_quality.py            # full suite: 54 shapes, 10 seeds (slow)
    python benchmarks/search_quality.py --quick    # 6 shapes, 3 seeds
    python benchmarks/search_quality.py --suite hard --seeds 5 --budgets 2000
                                                   # the peer suites: main, heldout, hard
    python benchmarks/search_quality.py --suite heldout --seeds 10 --first-seed 5 --budgets 2000
                                                   # seeds 5-14
    python benchmarks/search_quality.py --suite hard --shapes 6,9,10 --seeds 50 --first-seed 100
                                                   # three shapes of a suite

Prints per strategy and budget: the mean fraction of optimum (optimum / found) over every
run, the share of runs within 1.01x of the optimum and the worst run; the median and 5th
percentile over shapes of the per-shape median over seeds; the P-score against random search
at the same budget (0 = random, 1 = optimum) and the median seconds per run. Strategies see
the problem the tuner builds (``tune.shape.search_problem``: ga and ils propose inside the
valid set); budgets count every configuration looked at. The exact optimum (the pruned
enumeration of the valid set, screened by lower bounds of the latency) takes up to ~10 s per
large shape; ``--optima FILE`` keeps the optima between runs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ascend_tune.hardware import load_profile
from ascend_tune.model.engine import ShapeModel
from ascend_tune.search.problem import NoValidFound, run
from ascend_tune.search.strategies import STRATEGIES
from ascend_tune.search.strategies.exhaustive import Exhaustive
from ascend_tune.spec import load_spec
from ascend_tune.tune.shape import search_problem

sys.path.insert(0, str(Path(__file__).parent))
from search_vs_peers import HARD, HELDOUT, SUITE
from search_vs_peers import _key as optimum_key

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


def optimum(model: ShapeModel, cache: dict[str, Any]) -> float:
    """The exact optimum (the pruned enumeration of the valid set, screened by lower bounds
    of the latency), kept in ``cache`` under search_vs_peers' key."""
    key = optimum_key(model)
    if key not in cache:
        problem = search_problem(model, "exhaustive")
        run(Exhaustive(chunk=131072), problem, 1, np.random.default_rng(0))
        cache[key] = [problem.best_latency, problem.evaluations]
    return float(cache[key][0])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--first-seed", type=int, default=0,
                    help="seeds first-seed .. first-seed + seeds - 1 (seeds the strategies "
                    "were not tuned on: e.g. 5)")
    ap.add_argument("--hw", default="ascend910b3")
    ap.add_argument("--suite", choices=("schoonhoven", "main", "heldout", "hard"),
                    default="schoonhoven",
                    help="schoonhoven: 54 add and matmul shapes; main, heldout, hard: the "
                    "suites of benchmarks/search_vs_peers.py")
    ap.add_argument("--shapes", default="",
                    help="comma-separated indices into the suite (default: every shape)")
    ap.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    ap.add_argument("--strategies", default="ga,ils",
                    help="compared with random search at the same budget")
    ap.add_argument("--optima", type=Path, help="JSON file keeping exact optima between runs")
    args = ap.parse_args()
    hw = load_profile(args.hw)
    budgets = [int(b) for b in args.budgets.split(",")]
    strategies = [*args.strategies.split(","), "random"]
    if args.suite == "schoonhoven":
        suite = [("add", {"totalLength": n}) for n in ADD] + [
            ("matmul", {"M": m, "N": n, "K": k}) for m, n, k in MATMUL]
    else:
        suite = [(n, s) for n, s, _ in {"main": SUITE, "heldout": HELDOUT,
                                        "hard": HARD}[args.suite]]
    if args.shapes:
        suite = [suite[int(i)] for i in args.shapes.split(",")]
    seeds = args.seeds
    if args.quick:
        suite = suite[2:5] + suite[len(ADD): len(ADD) + 3] if args.suite == "schoonhoven" \
            else suite[:6]
        seeds = 3
    cache = json.loads(args.optima.read_text()) if args.optima and args.optima.exists() else {}
    specs = {n: load_spec(n) for n in {n for n, _ in suite}}
    frac: dict[tuple[str, int], list[float]] = {}  # per shape: median over seeds
    runs: dict[tuple[str, int], list[float]] = {}  # every run
    pscore: dict[tuple[str, int], list[float]] = {}
    times: dict[tuple[str, int], list[float]] = {}
    for name, shape in suite:
        model = ShapeModel(specs[name], hw, shape)
        best = optimum(model, cache)
        if args.optima is not None:
            args.optima.write_text(json.dumps(cache, indent=1, sort_keys=True))
        for budget in budgets:
            found: dict[str, list[float]] = {s: [] for s in strategies}
            for seed in range(args.first_seed, args.first_seed + seeds):
                for strat in strategies:
                    problem = search_problem(model, strat)
                    start = time.perf_counter()
                    try:
                        latency = run(STRATEGIES[strat](), problem, budget,
                                      np.random.default_rng(seed)).latency_us
                    except NoValidFound:
                        # Random search can miss every valid configuration where few are
                        # valid (matmul 64x64x65536): it found nothing, fraction 0.
                        latency = np.inf
                    times.setdefault((strat, budget), []).append(time.perf_counter() - start)
                    found[strat].append(latency)
                    runs.setdefault((strat, budget), []).append(best / latency)
            rnd_f = best / np.median(found["random"])
            for strat in strategies:
                f = best / float(np.median(found[strat]))
                frac.setdefault((strat, budget), []).append(f)
                pscore.setdefault((strat, budget), []).append(
                    1.0 if rnd_f >= 1 else (f - rnd_f) / (1 - rnd_f))
        print(f"  {name} {shape}: optimum {best:.2f} us", flush=True)
    print(f"\n{len(suite)} shapes ({args.suite}) x {seeds} seeds on {hw.name}; every "
          "configuration looked at counts against the budget")
    print(f"{'strategy':<8} {'budget':>6} {'mean':>7} {'hit@1.01':>9} {'worst':>6} "
          f"{'frac median':>12} {'frac p5':>8} {'P vs random':>12} {'s/run':>7}")
    for budget in budgets:
        for strat in strategies:
            f = np.array(frac[(strat, budget)])
            every = np.array(runs[(strat, budget)])
            p = f"{np.median(pscore[(strat, budget)]):.2f}" if strat != "random" else "0 (ref)"
            print(f"{strat:<8} {budget:>6} {every.mean():>7.4f} {np.mean(every >= 1 / 1.01):>9.1%}"
                  f" {every.min():>6.3f} {np.median(f):>12.4f} {np.percentile(f, 5):>8.4f} "
                  f"{p:>12} {np.median(times[(strat, budget)]):>7.3f}")


if __name__ == "__main__":
    main()
