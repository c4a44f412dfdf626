"""How long searches take: a shape list through the CLI, one shape's default search, and one
shape's exact optimum.

    python benchmarks/search_speed.py                 # all three tables
    python benchmarks/search_speed.py --only list     # 100 matmul shapes, --jobs 2
    python benchmarks/search_speed.py --only exact --shapes 3
    python benchmarks/search_speed.py --only exact --exact-suite hard --shapes 0,1,2,3,4,5

1. *list*: ``ascend-tune search matmul`` on 100 LLM-sized matmul shapes (fixed list below),
   ``--jobs 2``, default strategy and budget; wall seconds of the whole command, median of
   ``--repeats`` runs.
2. *shape*: the default search (``auto``) of each matmul shape of the peer suite
   (benchmarks/search_vs_peers.py), seconds per shape (median of 3 seeds).
3. *exact*: ``--strategy exhaustive`` (the whole valid set enumerated, screened by lower bounds
   of the latency and scored) of each matmul and batch_matmul shape of the peer suite (or of
   its hard suite): wall and CPU seconds, valid-set size.

The machine is shared and noisy: medians, not means; compare ratios between runs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ascend_tune.hardware import load_profile
from ascend_tune.spec import load_spec
from ascend_tune.tune.shape import TuneSettings, tune_shape

sys.path.insert(0, str(Path(__file__).parent))
from search_vs_peers import HARD, SUITE

# Hidden sizes and token counts of common LLM layers (Llama 2/3, Qwen, DeepSeek), crossed into
# 100 (M, N, K): M tokens, N and K the projection's output and input widths.
_TOKENS = [1, 16, 128, 512, 1024, 2048, 4096, 8192, 77, 1000]
_PROJECTIONS = [(4096, 4096), (11008, 4096), (4096, 11008), (5120, 5120), (13824, 5120),
                (7168, 2048), (2048, 7168), (151936, 4096), (1024, 4096), (14336, 4096)]


def list_shapes() -> list[dict[str, int]]:
    return [{"M": m, "N": n, "K": k} for m in _TOKENS for n, k in _PROJECTIONS]


def time_list(repeats: int, jobs: int) -> None:
    shapes = list_shapes()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "shapes.json"
        path.write_text(json.dumps(shapes))
        walls = []
        for _ in range(repeats):
            out = Path(tmp) / "r.json"
            out.unlink(missing_ok=True)
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "ascend_tune", "search", "matmul", "--hw",
                            "ascend910b3", "--shapes", str(path), "--jobs", str(jobs),
                            "-o", str(out), "--quiet"], check=True, capture_output=True)
            walls.append(time.perf_counter() - start)
            strategies = [e["strategy"] for e in json.loads(out.read_text())["shapes"]]
    counts = {s: strategies.count(s) for s in sorted(set(strategies))}
    print(f"\n| shapes | --jobs | wall s (median of {repeats}) | strategies |")
    print("|---:|---:|---:|---|")
    print(f"| {len(shapes)} | {jobs} | {np.median(walls):.1f} | "
          + ", ".join(f"{s} {n}" for s, n in counts.items()) + " |")


def time_shapes(hw_name: str, seeds: int) -> None:
    hw = load_profile(hw_name)
    spec = load_spec("matmul")
    print(f"\n| matmul shape | strategy | s (median of {seeds} seeds) |")
    print("|---|---|---:|")
    medians = []
    for name, shape, _note in SUITE:
        if name != "matmul":
            continue
        secs, strategy = [], ""
        for seed in range(seeds):
            start = time.perf_counter()
            entry = tune_shape(spec, hw, shape, TuneSettings("auto", 2000, seed))
            secs.append(time.perf_counter() - start)
            strategy = entry["strategy"]
        medians.append(float(np.median(secs)))
        print(f"| {shape} | {strategy} | {medians[-1]:.2f} |")
    print(f"| **median over shapes** | | **{np.median(medians):.2f}** |")


def time_exact(hw_name: str, picked: list[int], suite: list[tuple[str, dict[str, int], str]]
               ) -> None:
    hw = load_profile(hw_name)
    print("\n| shape | valid configurations | exact optimum s | CPU s |")
    print("|---|---:|---:|---:|")
    for i in picked:
        name, shape, _note = suite[i]
        start, cpu = time.perf_counter(), time.process_time()
        entry = tune_shape(load_spec(name), hw, shape, TuneSettings("exhaustive", 1, 0))
        secs = time.perf_counter() - start
        print(f"| {name} {shape} | {entry['evaluations']:,} | {secs:.1f} | "
              f"{time.process_time() - cpu:.1f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=("list", "shape", "exact"), default=None)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--hw", default="ascend910b3")
    ap.add_argument("--shapes", default="", help="suite indices for the exact table")
    ap.add_argument("--exact-suite", choices=("main", "hard"), default="main",
                    help="the exact table's shapes: the matmul and batch_matmul shapes of "
                    "search_vs_peers' suite, or its hard suite (the six shapes of issue 28 "
                    "first)")
    args = ap.parse_args()
    if args.only in (None, "list"):
        time_list(args.repeats, args.jobs)
    if args.only in (None, "shape"):
        time_shapes(args.hw, args.seeds)
    if args.only in (None, "exact"):
        suite = HARD if args.exact_suite == "hard" else SUITE
        picked = ([int(i) for i in args.shapes.split(",")] if args.shapes else
                  [i for i, (n, _s, _t) in enumerate(suite) if n in ("matmul", "batch_matmul")])
        time_exact(args.hw, picked, suite)


if __name__ == "__main__":
    main()
