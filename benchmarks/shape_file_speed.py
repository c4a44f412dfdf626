"""Reading a large shape file: YAML, JSON and CSV lists of 100 000 add shapes.

    python benchmarks/shape_file_speed.py [--shapes N] [--repeat R]

Prints one row per format: the file's size and the best of R wall times of
``spec.shapes.read_shape_file`` (parse, line marks, every shape checked against the spec). The
YAML row runs twice: through libyaml's C composer (the default where PyYAML has libyaml:
``base/yaml_fast.py``) and through the Python composer (``yaml_fast.AVAILABLE`` off), so the
table shows what the C path saves. Run alone: the figures are wall times.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from ascend_tune.base import yaml_fast
from ascend_tune.spec import load_spec
from ascend_tune.spec.shapes import read_shape_file


def _write(folder: Path, n: int) -> dict[str, Path]:
    lengths = [1000 + 37 * i for i in range(n)]
    files = {"yaml": folder / "shapes.yaml", "json": folder / "shapes.json",
             "csv": folder / "shapes.csv"}
    files["yaml"].write_text("".join(f"- {{totalLength: {x}}}\n" for x in lengths))
    files["json"].write_text(json.dumps([{"totalLength": x} for x in lengths]))
    files["csv"].write_text("totalLength\n" + "".join(f"{x}\n" for x in lengths))
    return files


def _best(path: Path, repeat: int) -> tuple[float, int]:
    spec = load_spec("add")
    times, count = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        count = len(read_shape_file(path, spec).shapes)
        times.append(time.perf_counter() - start)
    return min(times), count


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = _write(Path(tmp), args.shapes)
        print(f"{'file':<24} {'MB':>6} {'shapes':>8} {'best s':>8}")
        rows = [("yaml (libyaml C compose)", "yaml", True),
                ("yaml (Python compose)", "yaml", False),
                ("json", "json", True), ("csv", "csv", True)]
        for label, kind, fast in rows:
            saved = yaml_fast.AVAILABLE
            yaml_fast.AVAILABLE = saved and fast
            try:
                seconds, count = _best(files[kind], args.repeat)
            finally:
                yaml_fast.AVAILABLE = saved
            size = files[kind].stat().st_size / 1e6
            print(f"{label:<24} {size:>6.1f} {count:>8} {seconds:>8.2f}")


if __name__ == "__main__":
    main()
