"""How long `ascend-tune report` takes against the number of shapes in a results file.

    python benchmarks/report_scale.py           # 10 .. 2000 shapes, Add and Matmul, ~2 minutes
    python benchmarks/report_scale.py --quick   # 10 .. 500 shapes, Add only

Each results file holds one tuned entry copied onto N shapes (longer vectors for Add, more rows
M for Matmul); the report recomputes every number from the embedded spec, so the copies cost
what real entries cost. Columns: the model's share (reading, re-checking, predicting the
baseline, winner and every one-step neighbour: ``report.data.gather``) and the whole page
(plus the charts: 2 per operator and 3 for each of the --charts shapes, default 12),
median of the repeats, in seconds of wall time and, for the page, of CPU time; the page size.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ascend_tune.hardware import load_profile  # noqa: E402
from ascend_tune.report import DEFAULT_CHART_SHAPES, build, data  # noqa: E402
from ascend_tune.results import format as results  # noqa: E402
from ascend_tune.spec import load_spec  # noqa: E402
from ascend_tune.tune.shape import TuneSettings, tune_shape  # noqa: E402

_SEED_SHAPES: dict[str, dict[str, int]] = {
    "add": {"totalLength": 1 << 24},
    "matmul": {"M": 4096, "N": 4096, "K": 4096},
}
_GROW = {"add": ("totalLength", 4096), "matmul": ("M", 128)}


def _results(spec_name: str, n: int, path: Path) -> None:
    spec, hw = load_spec(spec_name), load_profile("ascend910b3")
    head = results.header(spec.name, spec.sha256, spec.source_text, hw.name, hw.sha256,
                          hw.data, "auto", 0, 300, spec.variant)
    entry = tune_shape(spec, hw, _SEED_SHAPES[spec_name], TuneSettings("auto", 300, 0))
    var, step = _GROW[spec_name]
    shapes: list[dict[str, Any]] = []
    for i in range(n):
        e = dict(entry)
        e["shape"] = {**entry["shape"], var: entry["shape"][var] + step * i}
        shapes.append(e)
    path.write_text(results.to_text({**head, "shapes": shapes}))


def _median_seconds(fn: Any, repeats: int) -> tuple[float, float, Any]:
    """Median wall and CPU time of ``fn()`` over the repeats (CPU time is what a busy,
    shared machine does not inflate), and its last result."""
    wall, cpu, result = [], [], None
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return float(np.median(wall)), float(np.median(cpu)), result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sizes = (10, 100, 500) if args.quick else (10, 100, 500, 2000)
    specs = ("add",) if args.quick else ("add", "matmul")
    print(f"{'spec':<8} {'shapes':>7} {'charts':>7} {'model s':>9} {'page s':>8} "
          f"{'page cpu s':>11} {'page KB':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for spec_name in specs:
            for n in sizes:
                path = Path(tmp) / f"{spec_name}_{n}.json"
                _results(spec_name, n, path)
                build([path], chart_shapes=1)  # warm: imports, fonts, template
                model_s, _, _ = _median_seconds(
                    lambda p=path: data.gather(p, DEFAULT_CHART_SHAPES), args.repeats)
                page_s, page_cpu, built = _median_seconds(lambda p=path: build([p]),
                                                          args.repeats)
                print(f"{spec_name:<8} {n:>7} {built.charts:>7} {model_s:>9.2f} {page_s:>8.2f} "
                      f"{page_cpu:>11.2f} {len(built.html.encode()) / 1024:>9,.0f}")


if __name__ == "__main__":
    main()
