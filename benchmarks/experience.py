"""Experience from the tuning database: how much sooner the GA reaches a result when its
first pool holds the winners of the nearest recorded shapes (issue 47).

    python benchmarks/experience.py                 # matmul and batch_matmul, 3 seeds
    python benchmarks/experience.py --seeds 5 --budget 2000
    python benchmarks/experience.py --overhead     # search with and without recording
    python benchmarks/experience.py --split train --seeds 10   # where settings are chosen
    python benchmarks/experience.py --detail       # every run: evaluations to its result

Per example suite (examples/matmul/shapes.csv, examples/batch_matmul/shapes.yaml): the even
rows are tuned first (``api.search`` at the budget, recorded in a fresh SQLite tuning
database), the odd rows are held out. Each held-out shape is then tuned by the GA for every
seed twice: without the database, and with the starts it offers (``api.database
.nearest_seeds``: the winners of the nearest recorded shapes, repaired to the held-out shape's
constraints with the fewest changes (``tune.seeding``), scored in the GA's first pool and
descended from, best first). The table gives the mean fraction of the exact optimum (optimum /
best found; the optimum from the pruned exhaustive enumeration) after n evaluations, read off
each run's convergence history (every configuration the run scored counts, the seeds too),
the fewest evaluations after which the seeded runs' mean reaches what the runs without the
database reach at the full budget (the issue's target: at most a quarter; a mean of 12 runs,
so one slow run decides it), and the share of runs (same shape, same seed) whose seeded best
after a quarter of the budget is already the unseeded run's best at the full budget, and the
median over runs of the evaluations the seeded run needs to reach the unseeded run's best at
the full budget (steadier than the mean's reach, which the slowest run decides).

``--split train`` never looks at the odd rows: each even row is held out in turn and the other
three even rows are recorded (leave one out). The search's seeding settings are chosen on this
split, the odd rows only report them (with four held-out shapes a suite, settings picked on
them would flatter the method).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ascend_tune import api
from ascend_tune.api import database as dbapi
from ascend_tune.db import location
from ascend_tune.model.engine import ShapeModel
from ascend_tune.tune.shape import TuneSettings, tune_shape

sys.path.insert(0, str(Path(__file__).parent))
from search_quality import optimum

ROOT = Path(__file__).resolve().parents[1]
SUITES = {"matmul": ROOT / "examples" / "matmul" / "shapes.csv",
          "batch_matmul": ROOT / "examples" / "batch_matmul" / "shapes.yaml"}
POINTS = (10, 25, 50, 100, 250, 500, 1000, 2000)


def best_at(history: Sequence[Sequence[float]], n: int) -> float:
    """The best latency a run had found after ``n`` evaluations (its history is the best so
    far each time it improved)."""
    best = float("inf")
    for evaluations, latency in history:
        if evaluations > n:
            break
        best = float(latency)
    return best


def mean_fraction(runs: Sequence[tuple[float, Sequence[Sequence[float]]]], n: int) -> float:
    return float(np.mean([opt / best_at(h, n) for opt, h in runs]))


def reach(runs: Sequence[tuple[float, Sequence[Sequence[float]]]], target: float,
          budget: int) -> int | None:
    """The fewest evaluations after which the runs' mean fraction of the optimum is at least
    ``target`` (None: not within the budget)."""
    marks = sorted({int(e) for _opt, h in runs for e, _lat in h if e <= budget})
    for n in marks:
        if mean_fraction(runs, n) >= target - 1e-12:
            return n
    return None


def run_reach(plain: Sequence[Sequence[float]], seeded: Sequence[Sequence[float]],
              budget: int) -> int | None:
    """The evaluations after which the seeded run's best is the unseeded run's best at the
    full budget (None: not within the budget)."""
    goal = best_at(plain, budget) * (1 + 1e-9)
    return next((int(e) for e, lat in seeded if e <= budget and lat <= goal), None)


def splits(shapes: list[dict[str, int]], split: str
           ) -> list[tuple[list[dict[str, int]], list[dict[str, int]]]]:
    """(recorded, held out) pairs: the even rows against the odd ones, or (``train``) each
    even row against the other even rows."""
    even, odd = shapes[0::2], shapes[1::2]
    if split == "held":
        return [(even, odd)]
    return [([s for j, s in enumerate(even) if j != i], [h]) for i, h in enumerate(even)]


def overhead(hw: api.HardwareProfile, repeat: int) -> None:
    """Seconds of ``api.search`` over the matmul suite without a database and recording into
    a fresh SQLite file each time (nothing to serve or seed: the cost of recording)."""
    spec = api.load_spec("matmul")
    shapes = api.collect_shapes(spec, [SUITES["matmul"]])
    times: dict[str, list[float]] = {"no database": [], "recording (SQLite)": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeat):
            for mode in times:
                db = (api.open_db(location.sqlite_url(Path(tmp) / f"{i}.sqlite"))
                      if mode != "no database" else None)
                start = time.perf_counter()
                api.search(spec, hw, shapes, db=db)
                times[mode].append(time.perf_counter() - start)
                if db is not None:
                    db.dispose()
    plain = float(np.median(times["no database"]))
    print(f"search matmul, {len(shapes)} shapes, budget 2000, median of {repeat}:")
    for mode, values in times.items():
        median = float(np.median(values))
        print(f"  {mode:20s} {median:7.2f} s  ({median / plain - 1:+.1%})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--overhead", action="store_true",
                    help="only the cost of recording: search with and without a database")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--hw", default="ascend910b3")
    ap.add_argument("--suites", default=",".join(SUITES))
    ap.add_argument("--split", choices=("held", "train"), default="held",
                    help="held: the even rows recorded, the odd rows tuned; train: leave one "
                    "out within the even rows (where the settings are chosen)")
    ap.add_argument("--detail", action="store_true",
                    help="also every run: evaluations to the unseeded run's result")
    args = ap.parse_args()
    hw = api.load_profile(args.hw)
    if args.overhead:
        overhead(hw, args.repeat)
        return
    rows = []
    detail: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.suites.split(","):
            spec = api.load_spec(name)
            shapes = api.collect_shapes(spec, [SUITES[name]])
            plain: list[tuple[float, list[list[float]]]] = []
            seeded: list[tuple[float, list[list[float]]]] = []
            starts = []
            held_out = 0
            for part, (train, held) in enumerate(splits(shapes, args.split)):
                db = api.open_db(location.sqlite_url(Path(tmp) / f"{name}.{part}.sqlite"))
                assert db is not None
                api.search(spec, hw, train, strategy="ga", budget=args.budget, db=db)
                seeds = dbapi.nearest_seeds(db, spec, hw, held)
                db.dispose()
                held_out += len(held)
                for shape in held:
                    best = optimum(ShapeModel(spec, hw, shape), {})
                    key = api.shape_key(shape)
                    for s in range(args.seeds):
                        settings = TuneSettings("ga", args.budget, s)
                        plain.append((best, tune_shape(spec, hw, shape, settings)["history"]))
                        entry = tune_shape(spec, hw, shape, settings, seeds.get(key))
                        seeded.append((best, entry["history"]))
                        starts.append(entry.get("seeded", {}).get("configurations", 0))
                        detail.append(
                            f"{name} {key} seed {s}: unseeded best at {args.budget} "
                            f"{best / best_at(plain[-1][1], args.budget):.4f}, seeded there "
                            f"after {run_reach(plain[-1][1], seeded[-1][1], args.budget)}")
            # Per run (same shape, same seed): does the seeded run's best after a quarter of
            # the budget match what the run without the database found at the full budget?
            quarter = args.budget // 4
            matched = float(np.mean([best_at(q[1], quarter) <= best_at(p[1], args.budget)
                                     * (1 + 1e-9) for p, q in zip(plain, seeded, strict=True)]))
            target = mean_fraction(plain, args.budget)
            points = [p for p in POINTS if p <= args.budget]
            need_plain = reach(plain, target, args.budget)
            need_seeded = reach(seeded, target, args.budget)
            per_run = [run_reach(p[1], q[1], args.budget)
                       for p, q in zip(plain, seeded, strict=True)]
            # Runs that never get there count as beyond the budget.
            median = float(np.median([args.budget + 1 if n is None else n for n in per_run]))
            rows.append((name, "no database", held_out, [mean_fraction(plain, p)
                                                         for p in points], need_plain, None,
                         None))
            rows.append((name, f"seeded ({np.mean(starts):.1f} starts)", held_out,
                         [mean_fraction(seeded, p) for p in points], need_seeded,
                         matched, median))
    head = ["suite", "search", "held-out", *[f"@{p}" for p in points],
            f"evals to the no-db @{args.budget}", f"runs there by @{args.budget // 4}",
            "median run"]
    widths = [13, 22, 8, *[7] * len(points), 22, 17, 10]
    print(f"mean fraction of the exact optimum after n evaluations, {args.seeds} seed(s), "
          f"{args.hw}; " + ("the even rows of each suite recorded first" if args.split == "held"
                            else "each even row held out in turn, the other even rows "
                            "recorded") + f" (budget {args.budget})")
    print(" ".join(h.rjust(w) if i > 1 else h.ljust(w) for i, (h, w) in
                   enumerate(zip(head, widths, strict=True))))
    for name, mode, n, fractions, need, matched, median in rows:
        cells = [name, mode, str(n), *[f"{f:.4f}" for f in fractions],
                 "not reached" if need is None else f"{need} ({need / args.budget:.0%})",
                 "" if matched is None else f"{matched:.0%}",
                 "" if median is None else f"{median:.0f}"]
        print(" ".join(c.rjust(w) if i > 1 else c.ljust(w) for i, (c, w) in
                       enumerate(zip(cells, widths, strict=True))))
    if args.detail:
        print("\n".join(detail))


if __name__ == "__main__":
    main()
