"""Host cost of one run-time selection call in the emitted C++ (issue 25).

    python benchmarks/dispatch_host_cost.py                  # matmul 8/16/32/64 + 4 others
    python benchmarks/dispatch_host_cost.py --matmul-counts 64 --others ""   # the target case
    python benchmarks/dispatch_host_cost.py --draw token     # LLM-like: only M (tokens) varies
    python benchmarks/dispatch_host_cost.py --keep /tmp/dhc  # keep generated sources

The emitted ``optiling::<op>_tiling::Select(shape, aicNum, aivNum, values)`` runs on the host
for every launch: it ranks every candidate configuration (tuned winners, the runners-up of a
``--top-k`` search, the baseline) valid on the real shape and chip by the C++ model
(``PredictUs``) and, when none is valid, walks to a valid configuration (``WalkFallback``).
Target from the issue: at most 20 us per call for matmul with 64 candidates.

Per spec and candidate count this builds a results document in memory (``tune_shape`` with
strategy ``auto``, ``--budget``, ``--top-k`` on the shortest prefix of a fixed shape pool whose
emitted candidate table reaches the count; the count reported is the table's own,
``load_bundle(doc).candidates()``), renders it (``render(bundle, "macro")``), compiles a driver
with ``g++ -std=c++17 -O2 -I tests/cann_stub -I <dir>/op_host`` and times ``Select`` on
``--shapes`` unseen shapes (``--draw all``: each variable log-uniform from its minimum to
max(8192, twice its largest value in the example's tuned shapes), capped by its maximum;
``--draw token``: an example shape with only its token-like variable drawn, 1 to twice its
largest example value; fixed ``--seed``), on two platforms: the profile's
(AIC, AIV) and ``--worst`` (default 1 AIC / 2 AIV: most matmul candidates need more cores, so
the fallback walk runs).

Columns:

* *mean us*: the whole shape list in a loop (repeated to reach ``--min-seconds``), wall time /
  calls, median of ``--repeats`` repeats; *cpu us*: the same loop in this thread's CPU time
  (``CLOCK_THREAD_CPUTIME_ID``), which leaves out the time the thread waited for a core;
* *p50 / p99 / max us*: per shape, the median of its individually timed calls (shapes in
  mixed order, the timer's own overhead subtracted), then the percentile over shapes;
* *sources*: calls by the source the code returned (x exact, m model, b baseline,
  w walk = source 4, n none, r refined = source 5: the pick improved by the run-time descent);
* *walk us*: mean per-shape cost of the calls whose source is the walk; *other us*: the same
  for every other call (exact, model, baseline, refined; calls ending with no configuration
  walked and failed, so they count with neither); *refined us*: the same for refined calls
  (ranking plus the descent, at most ``emit.refine.MAX_EVALS`` configurations);
* *Derive / Predict / walk / Baseline*: a second driver times the pieces of ``Select``
  separately (each over the whole shape list, CPU time, us per ``Select`` call): ``Derive``
  of every candidate and the baseline (with the ``Values`` zeroing), ``PredictUs`` of the
  valid ones, ``WalkFallback`` where none is valid, ``Baseline`` alone (``Select`` builds it
  twice).

The machine is shared and noisy: medians, not means; compare ratios between runs.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import shutil
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.emit.render import Bundle, load_bundle, render, write
from ascend_tune.hardware import HardwareProfile, load_profile
from ascend_tune.results import format as results
from ascend_tune.spec import OperatorSpec, load_spec
from ascend_tune.spec.shapes import check_shape
from ascend_tune.tune.shape import TuneSettings, tune_shape

ROOT = Path(__file__).resolve().parent.parent
STUB = ROOT / "tests" / "cann_stub"
EXAMPLES = ROOT / "examples"
TARGET_US = 20.0  # the budget for matmul with 64 candidates
SOURCES = "xmbnwr"  # source codes 0..5: exact, model, baseline, none, walk, refined
HI = 8192  # unseen shapes: upper end of the log-uniform draw (or twice the largest tuned)

DRIVER = r"""
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <vector>
#include "{select}"
using namespace optiling::{ns};
using Clock = std::chrono::steady_clock;
static volatile int64_t g_sink = 0;

// This thread's CPU time: what the calls cost without the waits of a shared machine.
static double CpuNs() {{
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}}

static double Ns(Clock::time_point a, Clock::time_point b) {{
    return std::chrono::duration<double, std::nano>(b - a).count();
}}

static int64_t Once(const Shape& shape, int64_t aic, int64_t aiv) {{
    Values values = Values();
    const Selection sel = Select(shape, aic, aiv, values);
    return static_cast<int64_t>(sel.source) * 131 + sel.index + sel.config.{first};
}}

static double Median(std::vector<double> v) {{
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}}

int main(int argc, char** argv) {{
    if (argc != 6) return 2;
    std::FILE* f = std::fopen(argv[1], "r");
    const int64_t aic = std::atoll(argv[2]), aiv = std::atoll(argv[3]);
    const double minNs = std::atof(argv[4]) * 1e9;
    const int repeats = std::atoi(argv[5]);
    if (f == nullptr) return 2;
    std::vector<Shape> shapes;
    long long raw[{nshape}];
    while (true) {{
        bool ok = true;
        for (int i = 0; i < {nshape}; ++i) ok = ok && std::fscanf(f, "%lld", &raw[i]) == 1;
        if (!ok) break;
        Shape shape = Shape();
{assign}
        shapes.push_back(shape);
    }}
    std::fclose(f);
    const size_t n = shapes.size();
    if (n == 0) return 2;
    int64_t sink = 0;
    // Whole-list loop: calibrate the pass count to minNs, then `repeats` timed runs.
    Clock::time_point t0 = Clock::now();
    for (const Shape& s : shapes) sink += Once(s, aic, aiv);
    double one = Ns(t0, Clock::now());
    const long passes = std::max(1L, static_cast<long>(std::ceil(minNs / std::max(one, 1.0))));
    for (int r = 0; r < repeats; ++r) {{
        const double c0 = CpuNs();
        t0 = Clock::now();
        for (long p = 0; p < passes; ++p)
            for (const Shape& s : shapes) sink += Once(s, aic, aiv);
        const double ns = Ns(t0, Clock::now());
        const double cpu = CpuNs() - c0;
        const double calls = static_cast<double>(passes) * static_cast<double>(n);
        std::printf("mixed %.3f %.3f\n", ns / calls, cpu / calls);
    }}
    // Per shape: each call timed on its own, shapes in list order, the timer's cost removed.
    std::vector<double> empty;
    for (int i = 0; i < 20001; ++i) {{
        const Clock::time_point a = Clock::now();
        const Clock::time_point b = Clock::now();
        empty.push_back(Ns(a, b));
    }}
    const double timer = Median(empty);
    const long samples = std::min(2000L, std::max(3L, passes));
    std::vector<std::vector<double>> per(n);
    for (long p = 0; p < samples; ++p) {{
        for (size_t i = 0; i < n; ++i) {{
            const Clock::time_point a = Clock::now();
            sink += Once(shapes[i], aic, aiv);
            const Clock::time_point b = Clock::now();
            per[i].push_back(Ns(a, b));
        }}
    }}
    std::printf("timer %.3f passes %ld samples %ld values_bytes %zu\n", timer, passes, samples,
                sizeof(Values));
    for (size_t i = 0; i < n; ++i) {{
        Values values = Values();
        const Selection sel = Select(shapes[i], aic, aiv, values);
        std::printf("shape %zu %d %.3f\n", i, static_cast<int>(sel.source),
                    std::max(0.0, Median(per[i]) - timer));
    }}
    g_sink = sink;
    return 0;
}}
"""

# The pieces of Select, each over the whole shape list (needs the emitted internals: Derive,
# CandidateConfig, Baseline, PredictUs, WalkFallback; reported as n/a when they change).
BREAKDOWN = r"""
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <vector>
#include "{select}"
using namespace optiling::{ns};
using Clock = std::chrono::steady_clock;
static volatile int64_t g_sink = 0;

// This thread's CPU time: what the calls cost without the waits of a shared machine.
static double CpuNs() {{
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}}

struct Row {{ size_t shape; int64_t params[{nparam}]; }};

template <typename F>
static double Timed(double minNs, int repeats, F body) {{
    double t0 = CpuNs();
    int64_t sink = body();
    const double one = CpuNs() - t0;
    const long passes = std::max(1L, static_cast<long>(std::ceil(minNs / std::max(one, 1.0))));
    std::vector<double> runs;
    for (int r = 0; r < repeats; ++r) {{
        t0 = CpuNs();
        for (long p = 0; p < passes; ++p) sink += body();
        runs.push_back((CpuNs() - t0) / static_cast<double>(passes));
    }}
    g_sink = sink;
    std::sort(runs.begin(), runs.end());
    return runs[runs.size() / 2];
}}

int main(int argc, char** argv) {{
    if (argc != 6) return 2;
    std::FILE* f = std::fopen(argv[1], "r");
    const int64_t aic = std::atoll(argv[2]), aiv = std::atoll(argv[3]);
    const double minNs = std::atof(argv[4]) * 1e9;
    const int repeats = std::atoi(argv[5]);
    if (f == nullptr) return 2;
    std::vector<Shape> shapes;
    long long raw[{nshape}];
    while (true) {{
        bool ok = true;
        for (int i = 0; i < {nshape}; ++i) ok = ok && std::fscanf(f, "%lld", &raw[i]) == 1;
        if (!ok) break;
        Shape shape = Shape();
{assign}
        shapes.push_back(shape);
    }}
    std::fclose(f);
    const size_t n = shapes.size();
    std::vector<Row> rows;
    std::vector<size_t> walkers;
    for (size_t s = 0; s < n; ++s) {{
        const Shape& shape = shapes[s];
        bool any = false;
        for (int32_t i = 0; i <= kCandidateCount; ++i) {{
            const Config config = i < kCandidateCount ? CandidateConfig(i)
                                                      : Baseline(shape, aic, aiv);
            Values trial = Values();
            if (!Derive(shape, config, aic, aiv, trial)) continue;
            any = true;
            Row row = {{s, {{{params}}}}};
            rows.push_back(row);
        }}
        if (!any) walkers.push_back(s);
    }}
    const double derive = Timed(minNs, repeats, [&]() {{
        int64_t sink = 0;
        for (const Shape& shape : shapes) {{
            for (int32_t i = 0; i <= kCandidateCount; ++i) {{
                const Config config = i < kCandidateCount ? CandidateConfig(i)
                                                          : Baseline(shape, aic, aiv);
                Values trial = Values();
                sink += Derive(shape, config, aic, aiv, trial) ? 1 : 0;
            }}
        }}
        return sink;
    }});
    const double predict = Timed(minNs, repeats, [&]() {{
        double sink = 0.0;
        for (const Row& row : rows) {{
            const Shape& shape = shapes[row.shape];
            const int64_t dims[{nshape}] = {{ {dims} }};
            sink += PredictUs(dims, row.params, aic, aiv);
        }}
        return static_cast<int64_t>(sink);
    }});
    const double baseline = Timed(minNs, repeats, [&]() {{
        int64_t sink = 0;
        for (const Shape& shape : shapes) sink += Baseline(shape, aic, aiv).{first};
        return sink;
    }});
    double walk = 0.0;
    if (!walkers.empty()) {{
        walk = Timed(minNs, repeats, [&]() {{
            int64_t sink = 0;
            for (size_t s : walkers) {{
                const Config base = Baseline(shapes[s], aic, aiv);
                Config out = Config();
                sink += WalkFallback(shapes[s], aic, aiv, base, out) ? out.{first} : 0;
            }}
            return sink;
        }});
    }}
    std::printf("breakdown %zu %zu %zu %.3f %.3f %.3f %.3f\n", n, rows.size(), walkers.size(),
                derive, predict, walk, baseline);
    return 0;
}}
"""


# ---- results documents -------------------------------------------------------------------------

def _rng(seed: int, *names: str) -> np.random.Generator:
    return np.random.default_rng([seed, *(zlib.crc32(n.encode()) for n in names)])


def example_shapes(spec: OperatorSpec, name: str) -> list[dict[str, int]]:
    """The shapes tuned in ``examples/<name>/results.json`` (one default shape without)."""
    path = EXAMPLES / name / "results.json"
    if path.exists():
        return [dict(e["shape"]) for e in json.loads(path.read_text())["shapes"]]
    return [{v: max(spec.shape_min[v], 1024) for v in spec.shape_vars}]


def shape_pool(spec: OperatorSpec, base: Sequence[dict[str, int]], name: str, seed: int,
               size: int) -> list[dict[str, int]]:
    """Shapes to tune: the example's tuned shapes, then each of them with every variable
    scaled by a random power of two (2^-3 .. 2^3), clipped to the spec's range."""
    rng = _rng(seed, name, "pool")
    pool = list(base)
    seen = {tuple(s.values()) for s in pool}
    tries = 0
    while len(pool) < size and tries < 50 * size:
        tries += 1
        src = base[int(rng.integers(len(base)))]
        shape = {}
        for v in spec.shape_vars:
            value = int(src[v] * 2.0 ** int(rng.integers(-3, 4)))
            value = max(value, spec.shape_min[v], 1)
            if spec.shape_max.get(v) is not None:
                value = min(value, spec.shape_max[v])
            shape[v] = value
        key = tuple(shape[v] for v in spec.shape_vars)
        if key in seen:
            continue
        try:
            check_shape(spec, shape, "pool")
        except AscendTuneError:
            continue
        seen.add(key)
        pool.append(shape)
    return pool


class Documents:
    """Tuned entries over a shape pool, tuned lazily; ``for_count`` returns the results
    document of the shortest prefix whose candidate table reaches the count."""

    def __init__(self, spec: OperatorSpec, hw: HardwareProfile, name: str, budget: int,
                 seed: int, top_k: int) -> None:
        self.spec, self.hw, self.budget, self.seed, self.top_k = spec, hw, budget, seed, top_k
        self.examples = example_shapes(spec, name)
        self.pool = shape_pool(spec, self.examples, name, seed, 400)
        self.entries: list[dict[str, Any]] = []
        self.next = 0

    def doc(self) -> dict[str, Any]:
        spec, hw = self.spec, self.hw
        doc = {**results.header(spec.name, spec.sha256, spec.source_text, hw.name, hw.sha256,
                                hw.data, "auto", self.seed, self.budget, top_k=self.top_k),
               "shapes": list(self.entries)}
        return json.loads(results.to_text(doc))  # type: ignore[no-any-return]

    def for_count(self, count: int) -> tuple[dict[str, Any], Bundle]:
        settings = TuneSettings("auto", self.budget, self.seed, self.top_k)
        bundle = load_bundle(self.doc(), "bench") if self.entries else None
        while bundle is None or len(bundle.candidates()) < count:
            if self.next >= len(self.pool):
                break
            shape = self.pool[self.next]
            self.next += 1
            try:
                self.entries.append(tune_shape(self.spec, self.hw, shape, settings))
            except AscendTuneError:  # no valid configuration on the profile: skip the shape
                continue
            bundle = load_bundle(self.doc(), "bench")
        assert bundle is not None, "no shape of the pool could be tuned"
        # The shortest prefix: drop entries from the end while the count is still reached.
        doc = self.doc()
        while len(doc["shapes"]) > 1:
            shorter = {**doc, "shapes": doc["shapes"][:-1]}
            if len(load_bundle(shorter, "bench").candidates()) < count:
                break
            doc = shorter
        return doc, load_bundle(doc, "bench")


def token_var(spec: OperatorSpec, examples: Sequence[dict[str, int]]) -> str:
    """The token-like variable: its example values span the largest max/min ratio (ties: the
    first in spec order), as in benchmarks/dispatch_quality.py."""
    def ratio(v: str) -> float:
        values = [max(1, s[v]) for s in examples]
        return max(values) / min(values)
    return max(spec.shape_vars, key=lambda v: (ratio(v), -spec.shape_vars.index(v)))


def unseen_shapes(spec: OperatorSpec, examples: Sequence[dict[str, int]], n: int, seed: int,
                  draw: str) -> list[list[int]]:
    """``all``: each variable log-uniform from its minimum (at least 1) to max(HI, twice its
    largest value in the example's tuned shapes), capped by its maximum. ``token``: an example
    shape with its token-like variable log-uniform from its minimum to twice its largest
    example value (an LLM layer at another token count). The same shapes for every candidate
    count."""
    rng = _rng(seed, spec.name, "unseen", draw)
    token = token_var(spec, examples)
    out = []
    for _ in range(n):
        src = examples[int(rng.integers(len(examples)))]
        row = []
        for v in spec.shape_vars:
            if draw == "token" and v != token:
                row.append(int(src[v]))
                continue
            lo = max(1, spec.shape_min[v])
            top = 2 * max(s[v] for s in examples)
            hi = top if draw == "token" else max(HI, top)
            if spec.shape_max.get(v) is not None:
                hi = min(hi, spec.shape_max[v])
            hi = max(hi, lo)
            row.append(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))
        out.append(row)
    return out


# ---- compile and run ---------------------------------------------------------------------------

def _fill(template: str, spec: OperatorSpec) -> str:
    assign = "\n".join(f"        shape.{v} = raw[{i}];" for i, v in enumerate(spec.shape_vars))
    return template.format(select=f"{spec.snake_name}_tiling_select.h",
                           ns=f"{spec.snake_name}_tiling", nshape=len(spec.shape_vars),
                           nparam=len(spec.params), assign=assign, first=spec.params[0],
                           params=", ".join(f"config.{p}" for p in spec.params),
                           dims=", ".join(f"shape.{v}" for v in spec.shape_vars))


def compile_cpp(source: str, folder: Path, name: str) -> tuple[Path | None, list[str], str]:
    cpp = folder / f"{name}.cpp"
    cpp.write_text(source)
    exe = folder / name
    cmd = ["g++", "-std=c++17", "-O2", f"-I{STUB}", f"-I{folder / 'op_host'}", str(cpp),
           "-o", str(exe)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return (exe if proc.returncode == 0 else None), cmd, proc.stderr


def run_driver(exe: Path, shapes_file: Path, cores: tuple[int, int], min_s: float,
               repeats: int) -> dict[str, Any]:
    out = subprocess.run([str(exe), str(shapes_file), str(cores[0]), str(cores[1]),
                          str(min_s), str(repeats)], capture_output=True, text=True,
                         check=True).stdout
    mixed: list[float] = []
    cpu: list[float] = []
    per: list[float] = []
    source: list[int] = []
    info: dict[str, Any] = {}
    for line in out.splitlines():
        parts = line.split()
        if parts[0] == "mixed":
            mixed.append(float(parts[1]))
            cpu.append(float(parts[2]))
        elif parts[0] == "shape":
            source.append(int(parts[2]))
            per.append(float(parts[3]))
        elif parts[0] == "timer":
            info = {"timer_ns": float(parts[1]), "passes": int(parts[3]),
                    "samples": int(parts[5]), "values_bytes": int(parts[7])}
    per_us = np.array(per) / 1e3
    src = np.array(source)
    walkish = np.isin(src, (3, 4))  # none: the walk ran and failed
    walked = src == 4
    return {
        **info,
        "mean_us": float(np.median(mixed)) / 1e3,
        "mean_runs_us": [m / 1e3 for m in mixed],
        "cpu_us": float(np.median(cpu)) / 1e3,
        "p50_us": float(np.percentile(per_us, 50)),
        "p99_us": float(np.percentile(per_us, 99)),
        "max_us": float(per_us.max()),
        "sources": {SOURCES[k]: int((src == k).sum()) for k in range(6) if (src == k).any()},
        "walk_share": float(walked.mean()),
        "walk_us": float(per_us[walked].mean()) if walked.any() else None,
        "walkish_us": float(per_us[walkish].mean()) if walkish.any() else None,
        "other_us": float(per_us[~walkish].mean()) if (~walkish).any() else None,
        "none_us": float(per_us[src == 3].mean()) if (src == 3).any() else None,
        "refined_us": float(per_us[src == 5].mean()) if (src == 5).any() else None,
    }


def run_breakdown(exe: Path, shapes_file: Path, cores: tuple[int, int], min_s: float,
                  repeats: int) -> dict[str, Any]:
    out = subprocess.run([str(exe), str(shapes_file), str(cores[0]), str(cores[1]),
                          str(min_s), str(repeats)], capture_output=True, text=True,
                         check=True).stdout.split()
    n, rows, walkers = int(out[1]), int(out[2]), int(out[3])
    derive, predict, walk, baseline = (float(x) for x in out[4:8])
    return {"valid_pairs": rows, "walk_shapes": walkers,
            "derive_us": derive / n / 1e3, "predict_us": predict / n / 1e3,
            "walk_us": walk / n / 1e3, "baseline_us": baseline / n / 1e3,
            "walk_per_walk_call_us": walk / walkers / 1e3 if walkers else None}


def measure(spec: OperatorSpec, doc: dict[str, Any], bundle: Bundle,
            examples: Sequence[dict[str, int]], folder: Path,
            platforms: Sequence[tuple[int, int]], n_shapes: int, seed: int, min_s: float,
            repeats: int, breakdown: bool, draw: str) -> tuple[list[dict[str, Any]], list[str]]:
    folder.mkdir(parents=True, exist_ok=True)
    write(folder, render(bundle, "macro"))
    shapes_file = folder / "shapes.txt"
    shapes_file.write_text("".join(" ".join(map(str, s)) + "\n"
                                   for s in unseen_shapes(spec, examples, n_shapes, seed, draw)))
    exe, cmd, err = compile_cpp(_fill(DRIVER, spec), folder, "driver")
    if exe is None:
        raise SystemExit(f"{spec.name}: the driver does not compile:\n{err[:3000]}")
    brk = None
    if breakdown:
        brk, _cmd, err = compile_cpp(_fill(BREAKDOWN, spec), folder, "breakdown")
        if brk is None:
            print(f"# {spec.name}: breakdown driver does not compile (emitted internals "
                  f"changed?): {err[:300]}", file=sys.stderr)
    rows = []
    for cores in platforms:
        row = {"spec": spec.name, "aic": cores[0], "aiv": cores[1],
               "tuned_shapes": len(doc["shapes"]), "candidates": len(bundle.candidates()),
               "shapes": n_shapes,
               **run_driver(exe, shapes_file, cores, min_s, repeats)}
        if brk is not None:
            row["breakdown"] = run_breakdown(brk, shapes_file, cores, min_s, repeats)
        rows.append(row)
    return rows, cmd


# ---- report ------------------------------------------------------------------------------------

def _us(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.3f}" if x < 1 else f"{x:.2f}" if x < 100 else f"{x:.0f}"


def table(rows: Sequence[dict[str, Any]]) -> str:
    head = ["spec", "AIC/AIV", "tuned", "cand.", "mean us", "cpu us", "p50 us", "p99 us",
            "max us", "sources", "walk share", "walk us", "other us", "refined us", "Derive",
            "Predict",
            "walk", "Baseline"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        b = r.get("breakdown") or {}
        src = " ".join(f"{k}{v}" for k, v in r["sources"].items())
        lines.append("| " + " | ".join([
            r["spec"], f"{r['aic']}/{r['aiv']}", str(r["tuned_shapes"]), str(r["candidates"]),
            _us(r["mean_us"]), _us(r["cpu_us"]), _us(r["p50_us"]), _us(r["p99_us"]),
            _us(r["max_us"]), src, f"{100 * r['walk_share']:.0f} %", _us(r["walk_us"]),
            _us(r["other_us"]), _us(r.get("refined_us")),
            _us(b.get("derive_us")), _us(b.get("predict_us")), _us(b.get("walk_us")),
            _us(b.get("baseline_us"))]) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--matmul-counts", default="8,16,32,64",
                    help="candidate counts for matmul (comma list)")
    ap.add_argument("--others", default="add,rmsnorm,flash_attention,quant_matmul",
                    help="other specs (comma list, empty for none)")
    ap.add_argument("--other-count", type=int, default=16)
    ap.add_argument("--hw", default="ascend910b3")
    ap.add_argument("--budget", type=int, default=300)
    ap.add_argument("--top-k", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shapes", type=int, default=200, help="unseen shapes per spec")
    ap.add_argument("--draw", choices=("all", "token"), default="all",
                    help="unseen shapes: every variable drawn, or only the token-like one")
    ap.add_argument("--worst", default="1,2", help="AIC,AIV of the second platform")
    ap.add_argument("--min-seconds", type=float, default=0.2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-breakdown", action="store_true")
    ap.add_argument("--keep", type=Path, help="write the generated sources here")
    ap.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = ap.parse_args(argv)
    if shutil.which("g++") is None:
        raise SystemExit("g++ not found")
    hw = load_profile(args.hw)
    worst = tuple(int(x) for x in args.worst.split(","))
    platforms = [(int(hw["cube_cores"]), int(hw["vector_cores"])), (worst[0], worst[1])]
    plan = [("matmul", int(c)) for c in args.matmul_counts.split(",") if c.strip()]
    plan += [(o.strip(), args.other_count) for o in args.others.split(",") if o.strip()]
    tmp = None
    if args.keep is None:
        tmp = tempfile.TemporaryDirectory(prefix="dispatch_host_cost_")
        base = Path(tmp.name)
    else:
        base = args.keep
    rows: list[dict[str, Any]] = []
    commands: list[str] = []
    docs: dict[str, Documents] = {}
    try:
        for name, count in plan:
            spec = load_spec(name)
            if name not in docs:
                docs[name] = Documents(spec, hw, name, args.budget, args.seed, args.top_k)
            doc, bundle = docs[name].for_count(count)
            got, cmd = measure(spec, doc, bundle, docs[name].examples, base / f"{name}_{count}",
                               platforms,
                               args.shapes, args.seed, args.min_seconds, args.repeats,
                               not args.no_breakdown, args.draw)
            rows.extend(got)
            text = shlex.join(cmd)
            commands.append(text if tmp is None else text.replace(str(base), "<tmp>"))
            for r in got:
                print(f"# {name} {r['candidates']} cand. on {r['aic']}/{r['aiv']}: "
                      f"{r['mean_us']:.2f} us/call", file=sys.stderr, flush=True)
    finally:
        if tmp is not None:
            tmp.cleanup()
    print(f"Host cost of one `Select` call (g++ -O2), {args.hw}, {args.shapes} unseen shapes "
          f"per spec (draw: {args.draw}), tuned with auto / budget {args.budget} / top-k "
          f"{args.top_k}, seed {args.seed}. mean us: wall time per call over the shape list, "
          f"median of {args.repeats} repeats; cpu us: the same in thread CPU time; "
          f"p50/p99/max: over shapes of each shape's median call.\n")
    print(table(rows))
    mm = [r for r in rows if r["spec"] == "MatmulCustom" and r["aic"] == platforms[0][0]
          and r["aiv"] == platforms[0][1]]
    if mm:
        top = max(mm, key=lambda r: r["candidates"])
        verdict = "within" if top["mean_us"] <= TARGET_US else "over"
        print(f"\nTarget: matmul, {top['candidates']} candidates on {top['aic']}/{top['aiv']}: "
              f"{top['mean_us']:.2f} us per call wall ({top['mean_us'] / TARGET_US:.2f}x the "
              f"{TARGET_US:.0f} us budget, {verdict}), {top['cpu_us']:.2f} us CPU "
              f"({top['cpu_us'] / TARGET_US:.2f}x).")
    print("\nCommand: " + shlex.join([sys.executable, *sys.argv]))
    print("Compile: " + (commands[0] if commands else "-"))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
