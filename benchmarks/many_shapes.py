"""Many shapes at the speed of the machine (issue 49 part 5): one figure per target.

    ASCEND_TUNE_DB=off python benchmarks/many_shapes.py            # every table (~3 min)
    ASCEND_TUNE_DB=off python benchmarks/many_shapes.py --only add --shapes 100000

1. *add*: ``ascend-tune search add --budget 50 -o`` over N one-variable shapes (target: 100 000
   in <= 20 s), wall and CPU seconds of the command, against the per-shape search (batches
   off, ``tune.batch.MAX_BATCH_SPACE = 0``) timed in-process on the first 1 000 shapes and
   scaled to N. The two results files are compared byte for byte on those 1 000 shapes.
2. *matmul*: ``ascend-tune search matmul`` on the 100 LLM shapes of
   benchmarks/search_speed.py, ``--jobs 1`` and ``--jobs 2`` (target: <= 5 s).
3. *emit*: ``ascend-tune emit`` of a ~200 MB results file (178 000 add entries as a search
   writes them; target: <= 10 s).
4. *interrupt*: a search of N add shapes stopped with SIGINT after a second: the shapes it
   kept, whether the file reads back whole and what it left beside it (target: every shape
   tuned kept, no temp file), then the rerun that finishes the list.

Wall time follows the load of the shared machine (printed with each table); CPU time (user +
system of the command, children included) much less. Run with ASCEND_TUNE_DB=off.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from results_scale import _big_file  # noqa: E402
from search_speed import list_shapes  # noqa: E402

from ascend_tune.hardware import load_profile  # noqa: E402
from ascend_tune.results import format as results  # noqa: E402
from ascend_tune.spec import load_spec  # noqa: E402
from ascend_tune.tune import batch, run  # noqa: E402
from ascend_tune.tune.shape import TuneSettings  # noqa: E402


def _load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def _cli(args: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, children included) of one CLI run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ascend_tune", *args], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL, env={**os.environ, "ASCEND_TUNE_DB": "off"})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return time.perf_counter() - start, cpu


def _add_shapes(folder: Path, n: int) -> Path:
    path = folder / f"add_{n}.csv"
    path.write_text("totalLength\n" + "".join(f"{1000 + 37 * i}\n" for i in range(n)))
    return path


def _add_head() -> dict:
    spec, hw = load_spec("add"), load_profile("ascend910b3")
    return results.header(spec.name, spec.sha256, spec.source_text, hw.name, hw.sha256,
                          hw.data, "auto", 0, 50)


def add_table(folder: Path, n: int) -> None:
    print(f"\n1. search add, {n:,} shapes, --budget 50, -o ({_load()})")
    out = folder / "add.json"
    wall, cpu = _cli(["search", "add", "--hw", "ascend910b3", "--shapes",
                      str(_add_shapes(folder, n)), "--budget", "50", "-q", "-o", str(out)])
    # The per-shape search on the first 1 000 shapes, in this process, batches off.
    spec, hw = load_spec("add"), load_profile("ascend910b3")
    few = [{"totalLength": 1000 + 37 * i} for i in range(min(n, 1000))]
    settings = TuneSettings("auto", 50, 0)
    saved = batch.MAX_BATCH_SPACE
    timings = {}
    for label, space in (("per shape", 0), ("batched", saved)):
        batch.MAX_BATCH_SPACE = space
        start, cpu0 = time.perf_counter(), time.process_time()
        run.run_search(spec, hw, few, settings, _add_head(), output=folder / f"{label}.json")
        timings[label] = (time.perf_counter() - start, time.process_time() - cpu0)
    batch.MAX_BATCH_SPACE = saved
    same = (folder / "per shape.json").read_bytes() == (folder / "batched.json").read_bytes()
    per_wall, per_cpu = timings["per shape"]
    print(f"{'how':<36} {'shapes':>8} {'wall s':>8} {'CPU s':>8} {'ms/shape':>9}")
    print(f"{'per shape (in-process, 1 000)':<36} {len(few):>8} {per_wall:>8.2f} "
          f"{per_cpu:>8.2f} {per_wall / len(few) * 1e3:>9.3f}")
    print(f"{'per shape, scaled to N':<36} {n:>8} {per_wall / len(few) * n:>8.0f} "
          f"{per_cpu / len(few) * n:>8.0f} {'':>9}")
    b_wall, b_cpu = timings["batched"]
    print(f"{'batched (in-process, 1 000)':<36} {len(few):>8} {b_wall:>8.2f} {b_cpu:>8.2f} "
          f"{b_wall / len(few) * 1e3:>9.3f}")
    print(f"{'ascend-tune search (batched), N':<36} {n:>8} {wall:>8.1f} {cpu:>8.1f} "
          f"{wall / n * 1e3:>9.3f}")
    print(f"results of the 1 000 shapes byte-identical, batched and per shape: {same}; "
          f"file {out.stat().st_size / 1e6:.0f} MB")


def matmul_table(folder: Path) -> None:
    print(f"\n2. search matmul, the 100 LLM shapes of search_speed.py ({_load()})")
    path = folder / "matmul.json"
    path.write_text(json.dumps(list_shapes()))
    print(f"{'--jobs':>6} {'wall s':>8} {'CPU s':>8}")
    for jobs in (1, 2):
        out = folder / f"mm{jobs}.json"
        wall, cpu = _cli(["search", "matmul", "--hw", "ascend910b3", "--shapes", str(path),
                          "--jobs", str(jobs), "-q", "-o", str(out)])
        print(f"{jobs:>6} {wall:>8.1f} {cpu:>8.1f}")


def emit_table(folder: Path, n: int) -> None:
    path = folder / "big.json"
    _big_file(path, n)
    print(f"\n3. emit a results file of {n:,} shapes, {path.stat().st_size / 1e6:.0f} MB "
          f"({_load()})")
    wall, cpu = _cli(["emit", str(path), "-o", str(folder / "out"), "--quiet"])
    print(f"emit: {wall:.1f} s wall, {cpu:.1f} s CPU")


def interrupt_table(folder: Path, n: int) -> None:
    print(f"\n4. search add, {n:,} shapes, SIGINT after 1 s, then the rerun ({_load()})")
    shapes = _add_shapes(folder, n)
    out = folder / "stopped.json"
    cmd = [sys.executable, "-m", "ascend_tune", "search", "add", "--hw", "ascend910b3",
           "--shapes", str(shapes), "--budget", "50", "-q", "-o", str(out)]
    env = {**os.environ, "ASCEND_TUNE_DB": "off"}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    lock = out.with_name(f".{out.name}.lock")
    while not lock.exists() and proc.poll() is None:
        time.sleep(0.02)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate()
    kept = len(list(results.stream(out)[1]))
    left = sorted(p.name for p in folder.glob(f".{out.name}*"))
    print(f"exit {proc.returncode}; {err.strip().splitlines()[-1] if err.strip() else ''}")
    print(f"kept {kept:,} of {n:,} shapes; the file reads back whole; left beside it: "
          f"{left or 'nothing'}")
    wall, _cpu = _cli([*cmd[3:]])
    whole = len(list(results.stream(out)[1]))
    print(f"rerun: {whole:,} shapes in the file after {wall:.1f} s; left beside it: "
          f"{sorted(p.name for p in folder.glob(f'.{out.name}*')) or 'nothing'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=("add", "matmul", "emit", "interrupt"), default=None)
    ap.add_argument("--shapes", type=int, default=100_000, help="add shapes in 1.")
    ap.add_argument("--emit-shapes", type=int, default=178_000, help="entries of 3.'s file")
    ap.add_argument("--interrupt-shapes", type=int, default=20_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if args.only in (None, "add"):
            add_table(folder, args.shapes)
        if args.only in (None, "matmul"):
            matmul_table(folder)
        if args.only in (None, "emit"):
            emit_table(folder, args.emit_shapes)
        if args.only in (None, "interrupt"):
            interrupt_table(folder, args.interrupt_shapes)


if __name__ == "__main__":
    main()
