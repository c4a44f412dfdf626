"""How the results file scales with the number of shapes.

    python benchmarks/results_scale.py            # about 3 minutes
    python benchmarks/results_scale.py --quick    # smaller sizes
    python benchmarks/results_scale.py --big      # only 4., the 200 MB file (about 2 minutes)
    python benchmarks/results_scale.py --big --repeat 5   # medians of 5 runs each

1. End to end: `ascend-tune search add` over N shapes with and without `-o`; the difference per
   shape is what the results file costs (journal append, merges, final write).
2. The store alone with real-sized entries (a tuned Add entry) at 10 000 and 100 000 shapes:
   microseconds per added shape, including every merge.
3. Reusing a large cache: a ~200 MB results file, 1 000 new shapes on top; peak memory of the
   process (the cache is streamed, never held whole).
4. The file a user reported (issue 27): 178 000 tuned Add shapes, 200 MB. Wall and CPU time of
   `ascend-tune emit` and of `ascend-tune search -o` adding one shape (goal: under 20 s each
   on a quiet 2-core machine), then a search killed with SIGKILL on it and the next run, which
   must not be blocked by the lock file the killed one left. Medians of --repeat runs, with
   the load average: on a shared machine wall time follows the load, CPU time much less.
"""

from __future__ import annotations

import argparse
import copy
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ascend_tune.hardware import load_profile  # noqa: E402
from ascend_tune.results import format as results  # noqa: E402
from ascend_tune.results.store import ResultsStore  # noqa: E402
from ascend_tune.spec import load_spec  # noqa: E402
from ascend_tune.tune.shape import TuneSettings, tune_shape  # noqa: E402


def _search(n: int, out: Path | None, folder: Path) -> float:
    shapes = folder / f"shapes_{n}.csv"
    shapes.write_text("totalLength\n" + "".join(f"{4096 + 32 * i}\n" for i in range(n)))
    cmd = [sys.executable, "-m", "ascend_tune", "search", "add", "--hw", "ascend910b3",
           "--shapes", str(shapes), "--budget", "40", "--strategy", "random", "-q"]
    if out is not None:
        cmd += ["-o", str(out)]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - start


def _head_and_entry() -> tuple[dict, dict]:
    spec, hw = load_spec("add"), load_profile("ascend910b3")
    head = results.header(spec.name, spec.sha256, spec.source_text, hw.name, hw.sha256,
                          hw.data, "auto", 0, 50)
    entry = tune_shape(spec, hw, {"totalLength": 4096}, TuneSettings("auto", 50, 0))
    return head, entry


def _store_rate(n: int, folder: Path) -> tuple[float, int]:
    head, entry = _head_and_entry()
    path = folder / f"store_{n}.json"
    start = time.perf_counter()
    with ResultsStore(path, head, fresh=True) as st:
        for i in range(n):
            e = copy.copy(entry)
            e["shape"] = {"totalLength": 1 + ((i * 7919) % (n * 10))}  # unsorted arrival
            st.add(e)
    seconds = time.perf_counter() - start
    return seconds / n * 1e6, path.stat().st_size


def _reuse_child(path: str, new: int) -> None:
    head, entry = _head_and_entry()
    with ResultsStore(Path(path), head, fresh=False) as st:
        for i in range(new):
            e = copy.copy(entry)
            e["shape"] = {"totalLength": 10**9 + i}
            st.add(e)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)


def _timed(cmd: list[str]) -> tuple[float, float]:
    """Wall and CPU (user + system, children included) seconds of a CLI run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ascend_tune", *cmd], check=True,
                   stdout=subprocess.DEVNULL, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return time.perf_counter() - start, cpu


def _load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def _big_file(path: Path, n: int) -> None:
    """``n`` Add entries as a search writes them (one tuned entry, the shape varied)."""
    head, entry = _head_and_entry()
    lines = (results.entry_line({**entry, "shape": {"totalLength": (1 << 20) + 64 * i}})
             for i in range(n))
    results.write_atomic(path, results.render_lines(head, lines))


def large_file(folder: Path, n: int = 178_000, repeat: int = 1) -> None:
    print(f"\n4. a results file of {n} shapes")
    path = folder / "big.json"
    _big_file(path, n)
    print(f"file: {path.stat().st_size / 1e6:.0f} MB; {_load()}")
    search = ["search", "add", "--hw", "ascend910b3", "--strategy", "auto", "--budget", "50",
              "-q", "-o", str(path)]
    emit = ["emit", str(path), "-o", str(folder / "out")]
    # Another new shape each search run: each reads and rewrites the whole file.
    grow = [[*search, "--shape", f"totalLength={100_000 + i}"] for i in range(repeat)]
    for label, cmds in (("emit", [emit] * repeat), ("search -o, one new shape", grow)):
        runs = [_timed(cmd) for cmd in cmds]
        walls, cpus = sorted(w for w, _c in runs), sorted(c for _w, c in runs)
        spread = f" (runs {walls[0]:.1f}-{walls[-1]:.1f} s wall)" if repeat > 1 else ""
        print(f"{label:<26} {statistics.median(walls):6.1f} s wall "
              f"{statistics.median(cpus):6.1f} s CPU{spread}; {_load()}")
    # SIGKILL while the search works on the file, then a normal run.
    proc = subprocess.Popen([sys.executable, "-m", "ascend_tune", *search, "--shape",
                             "totalLength=9", "--shape", "totalLength=11"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    lock = path.with_name(f".{path.name}.lock")
    while not lock.exists() and proc.poll() is None:
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    left = sorted(p.name for p in folder.glob(f".{path.name}*"))
    wall, _cpu = _timed([*search, "--shape", "totalLength=13"])
    after = sorted(p.name for p in folder.glob(f".{path.name}*"))
    print(f"after SIGKILL: {left or 'nothing'} left; the next run took {wall:.1f} s and left "
          f"{after or 'nothing'}")


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--reuse-child":
        _reuse_child(sys.argv[2], int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--big", action="store_true", help="only the 200 MB file (4.)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per command in 4. (median)")
    args = parser.parse_args()
    if args.big:
        with tempfile.TemporaryDirectory() as tmp:
            large_file(Path(tmp), repeat=args.repeat)
        return
    sizes = (500, 2000) if args.quick else (1000, 4000)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        print("1. search add, N shapes: file cost per shape = (with -o - without) / N")
        print(f"{'N':>8} {'without -o s':>13} {'with -o s':>10} {'file ms/shape':>14}")
        for n in sizes:
            without = _search(n, None, folder)
            with_o = _search(n, folder / f"r_{n}.json", folder)
            print(f"{n:>8} {without:>13.1f} {with_o:>10.1f} {(with_o - without) / n * 1e3:>14.3f}")
        print("\n2. store alone, real-sized entries, arrival order shuffled")
        print(f"{'N':>8} {'us/shape':>9} {'file MB':>8}")
        for n in ((10_000,) if args.quick else (10_000, 100_000)):
            rate, size = _store_rate(n, folder)
            print(f"{n:>8} {rate:>9.1f} {size / 1e6:>8.1f}")
        print("\n3. reuse a large cache, 1 000 new shapes: peak RSS of the process")
        n_big = 20_000 if args.quick else 100_000
        _rate, size = _store_rate(n_big, folder)
        big = folder / f"store_{n_big}.json"
        # Pad the entries to ~2 kB each, as a matmul entry is: a ~200 MB file at 100 000.
        head, entries = results.stream(big)
        padded = folder / "big.json"
        lines = (results.entry_line({**e, "pad": "x" * 1500}) for e in entries)
        results.write_atomic(padded, results.render_lines(head, lines))
        start = time.perf_counter()
        peak = subprocess.run([sys.executable, __file__, "--reuse-child", str(padded), "1000"],
                              check=True, capture_output=True, text=True).stdout.strip()
        print(f"cache {padded.stat().st_size / 1e6:.0f} MB ({n_big} shapes): peak RSS {peak} MB, "
              f"{time.perf_counter() - start:.1f} s")
        large_file(folder, 20_000 if args.quick else 178_000, args.repeat)
        os.sync()


if __name__ == "__main__":
    main()
