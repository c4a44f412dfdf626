"""Run-time dispatch quality on shapes nobody tuned (issue 25).

    python benchmarks/dispatch_quality.py                        # every example, 20 shapes each
    python benchmarks/dispatch_quality.py --mode range           # only the range-search table
    python benchmarks/dispatch_quality.py --specs add,matmul --per-spec 5 --json rows.json

An LLM operator sees shapes nobody tuned: M (tokens) changes on every call. For every built-in
spec with an example (``examples/<name>/results.json`` and ``examples/<name>/shapes.*``) this
draws unseen shapes -- a tuned shape with its token-like dimension (the shape variable whose
tuned values span the largest max/min ratio; ties: the first in spec order) replaced by an
integer drawn log-uniformly from 1 to twice the largest tuned value -- and compares, by the
model on the results file's own profile:

* the dispatched configuration: :func:`dispatch`, the run-time selection the emitted
  ``TilingFunc`` follows (``ascend_tune.api.select`` when it exists, else
  ``ascend_tune.emit.selection.select`` with the profile's own core counts);
* the shape's own optimum: ``tune_shape`` with strategy ``auto`` (exact where the valid set is
  small) at ``--budget``; where the dispatched configuration beats the search, it is the best
  known and the ratio is 1;
* the fallback: the spec's baseline configuration.

Two tables dispatch (``--mode``, default both):

* suite: the example's results file as committed (its shape suite tuned);
* range: ``ascend_tune.api.search_range`` over the same family, tuned here in memory: the
  token dimension from 1 to twice its largest suite value, every other shape variable fixed
  to one of the distinct combinations of the other dimensions in the suite (at most
  MAX_COMBOS, the most frequent first, the first seen on ties), one ``--shape-range`` each,
  all in one search (``--target``, ``--max-shapes``, ``--budget``, ``--seed``). Its table is
  judged on shapes drawn exactly as in suite mode (the same function and the same per-spec
  stream, not the range search's own), a draw equal to a shape the range search tuned being
  redrawn; judged shapes whose other dimensions are a suite combination left out of the
  ranges are counted apart ("off the ranges").

Held out: the drawn shapes are never tuned for the table judged (a draw equal to a tuned shape
is redrawn, as is a draw ``check_shape`` rejects or one without any valid configuration; the
last are counted). Deterministic for a given ``--seed``: each spec draws from its own stream,
so ``--specs`` does not change the shapes of the specs it keeps.

Per spec: n, mean / p90 / worst of dispatched / optimum, the share within 1.05x, launches
slower than the fallback, launches with no configuration although a valid one exists,
dispatched configurations the model rejects, and shapes where the fallback itself is invalid.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import shlex
import sys
import time
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ascend_tune import api
from ascend_tune.base.errors import AscendTuneError, NoValidConfigError
from ascend_tune.emit import selection
from ascend_tune.emit.render import Bundle, load_bundle
from ascend_tune.hardware import HardwareProfile
from ascend_tune.model.engine import ShapeModel
from ascend_tune.results import format as results_format
from ascend_tune.spec import OperatorSpec
from ascend_tune.spec.shapes import check_shape, shape_key
from ascend_tune.tune.ranges import DEFAULT_MAX_SHAPES, DEFAULT_TARGET, RangeRound
from ascend_tune.tune.shape import DEFAULT_BUDGET, TuneSettings, tune_shape

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
WITHIN = 1.05  # "good enough": dispatched within 5 % of the shape's optimum
MAX_DRAWS = 200  # attempts per unseen shape before giving up on it
REL_EPS = 1e-9  # latency comparisons: equal within rounding of the results file
MAX_COMBOS = 3  # range mode: ranges per spec (combinations of the other dimensions)


# ---- the selection under test ------------------------------------------------------------------

# Runners-up kept per tuned shape in range mode (--top-k).
TOP_K = 1

def dispatch(bundle: Bundle, spec: OperatorSpec, hw: HardwareProfile,
             shape: Mapping[str, int]) -> dict[str, int] | None:
    """The configuration the emitted host code launches for ``shape``, None for no launch."""
    if hasattr(api, "select"):
        return _config_of(api.select(bundle.doc, shape), spec)
    if hasattr(bundle, "select"):  # the emitted table's order, runners-up included
        sel = bundle.select(shape, int(hw["cube_cores"]), int(hw["vector_cores"]))
    else:
        sel = selection.select(spec, hw, [tuple(s.values()) for s, _ in bundle.shapes],
                               [best for _, best in bundle.shapes], shape,
                               int(hw["cube_cores"]), int(hw["vector_cores"]))
    return None if sel.source == selection.NONE else dict(sel.config)


def _config_of(result: Any, spec: OperatorSpec) -> dict[str, int] | None:
    """Whatever ``api.select`` returns (None, a Selection-like object, a config mapping)."""
    if result is None:
        return None
    source = result.get("source") if isinstance(result, Mapping) else getattr(result, "source",
                                                                               None)
    if source is not None and (source == selection.NONE or str(source).lower() == "none"):
        return None
    config = getattr(result, "config", result)
    if isinstance(config, Mapping) and "config" in config:
        config = config["config"]
    if not config:
        return None
    return {p: int(config[p]) for p in spec.params}


def selection_name() -> str:
    """What :func:`dispatch` calls, with a digest of the selection source (it is being edited)."""
    if hasattr(api, "select"):
        what = "ascend_tune.api.select(results_doc, shape)"
    elif hasattr(Bundle, "select"):
        what = "ascend_tune.emit.render.Bundle.select (emit.selection.select)"
    else:
        what = "ascend_tune.emit.selection.select"
    digest = hashlib.sha256(Path(selection.__file__).read_bytes()).hexdigest()[:12]
    return f"{what}; emit/selection.py sha256 {digest}"


# ---- inputs ------------------------------------------------------------------------------------

def example_names() -> list[str]:
    return sorted(d.name for d in EXAMPLES.iterdir()
                  if (d / "results.json").is_file() and any(d.glob("shapes.*")))


def load_example(name: str) -> Bundle:
    path = EXAMPLES / name / "results.json"
    with path.open(encoding="utf-8") as f:
        return load_bundle(json.load(f), str(path.relative_to(EXAMPLES.parent)))


def runners_up(bundle: Bundle) -> list[list[dict[str, int]]]:
    """Per tuned entry, the configurations of its ``candidates`` (winner first), where present."""
    out = []
    for entry in bundle.doc["shapes"]:
        cands = entry.get("candidates") or []
        out.append([dict(c["config"]) for c in cands if isinstance(c, Mapping)])
    return out


# --dims: the dimension redrawn per spec where it is not the token-like one (e.g. B).
DIMS: dict[str, str] = {}


def token_dim(spec: OperatorSpec, shapes: Sequence[Mapping[str, int]]) -> tuple[str, float]:
    """The shape variable whose tuned values vary most (max/min), first in spec order on ties
    (or the one ``--dims`` names for this spec)."""
    best, ratio = spec.shape_vars[0], -1.0
    for v in spec.shape_vars:
        if DIMS.get(spec.name) not in (None, v):
            continue
        vals = [s[v] for s in shapes]
        r = max(vals) / max(min(vals), 1)
        if r > ratio:
            best, ratio = v, r
    return best, ratio


# ---- one spec ----------------------------------------------------------------------------------

def evaluate_rows(model: ShapeModel, configs: Sequence[Mapping[str, int]]
                  ) -> list[tuple[float, str | None]]:
    """Model latency (us) of each configuration on the model's shape (inf where invalid) and
    the check it fails (None where valid), in one batch."""
    rows = np.array([[c[p] for p in model.spec.params] for c in configs], dtype=np.int64)
    ev = model.evaluate(rows)
    return [(float(lat), None if ok else model.constraint_names[int(f)])
            for lat, ok, f in zip(ev.latency_us, ev.valid, ev.failed, strict=True)]


def judge_stream(seed: int, name: str) -> np.random.Generator:
    """The stream the judged shapes of spec ``name`` are drawn from, in both modes (the range
    search draws its own shapes from ``[seed, 0x5A4E6E]``, tune/ranges.py)."""
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def new_info(name: str, spec: OperatorSpec, token: str, spread: float, tuned: int,
             hi: int) -> dict[str, Any]:
    return {"spec": name, "op": spec.name, "token": token, "spread": spread, "tuned": tuned,
            "range": [1, hi], "rejected": 0, "seen": 0, "no_valid": 0, "gave_up": 0}


def draw_unseen(name: str, spec: OperatorSpec, hw: HardwareProfile,
                bases: Sequence[Mapping[str, int]], token: str, hi: int,
                rng: np.random.Generator, exclude: set[tuple[int, ...]],
                settings: TuneSettings, optimum: dict[tuple[int, ...], dict[str, Any]],
                info: dict[str, Any]) -> tuple[dict[str, int], int] | None:
    """One unseen shape and the index of its base: a base shape (uniform) with ``token``
    redrawn log-uniformly in [1, hi]; redrawn while ``check_shape`` rejects it, it is in
    ``exclude`` (tuned) or it has no valid configuration (its optimum lands in ``optimum``).
    None after MAX_DRAWS attempts."""
    for _attempt in range(MAX_DRAWS):
        base_index = int(rng.integers(len(bases)))
        value = round(math.exp(rng.uniform(0.0, math.log(hi))))
        raw = {**bases[base_index], token: max(1, min(value, hi))}
        try:
            shape = check_shape(spec, raw, f"{name} draw")
        except AscendTuneError:
            info["rejected"] += 1
            continue
        key = tuple(shape.values())
        if key in exclude:
            info["seen"] += 1
            continue
        if key not in optimum:
            try:
                optimum[key] = tune_shape(spec, hw, shape, settings)
            except NoValidConfigError:
                info["no_valid"] += 1
                continue
        return shape, base_index
    return None


def judge(mode: str, name: str, bundle: Bundle, bases: Sequence[Mapping[str, int]],
          token: str, hi: int, rng: np.random.Generator, exclude: set[tuple[int, ...]],
          per_spec: int, settings: TuneSettings,
          optimum: dict[tuple[int, ...], dict[str, Any]], info: dict[str, Any]
          ) -> list[dict[str, Any]]:
    """``per_spec`` unseen shapes (:func:`draw_unseen`): what ``bundle`` dispatches against
    each shape's optimum and the fallback."""
    spec, hw = bundle.spec, bundle.hw
    rows: list[dict[str, Any]] = []
    for i in range(per_spec):
        drawn = draw_unseen(name, spec, hw, bases, token, hi, rng, exclude, settings,
                            optimum, info)
        if drawn is None:
            info["gave_up"] += 1
            print(f"  {name} ({mode}): no usable draw for shape {i + 1} after {MAX_DRAWS} "
                  "attempts", file=sys.stderr)
            continue
        shape, base_index = drawn
        opt = optimum[tuple(shape.values())]
        model = ShapeModel(spec, hw, shape)
        config = dispatch(bundle, spec, hw, shape)
        baseline = model.baseline_values()
        # The search's winner is re-scored here (the results entry rounds its latency).
        scored = evaluate_rows(model, [baseline, opt["best"]]
                               + ([config] if config is not None else []))
        (base_us, base_fails), (search_us, _) = scored[0], scored[1]
        disp_us, disp_fails = scored[2] if config is not None else (math.inf, None)
        best_us = min(search_us, disp_us)
        ratio = disp_us / best_us if math.isfinite(disp_us) else math.inf
        rows.append({
            "mode": mode, "spec": name, "shape": shape, "from_tuned": base_index,
            "token": token, "dispatched": config, "dispatched_us": _num(disp_us),
            "dispatched_valid": math.isfinite(disp_us), "dispatched_violates": disp_fails,
            "optimum": opt["best"], "optimum_us": _num(search_us), "strategy": opt["strategy"],
            "dispatch_beat_search": disp_us < search_us * (1 - REL_EPS),
            "baseline": baseline, "baseline_us": _num(base_us),
            "baseline_valid": math.isfinite(base_us), "baseline_violates": base_fails,
            "ratio": _num(ratio),
        })
        shown = f"{ratio:.3f}x" if math.isfinite(ratio) else "FAILED"
        print(f"  {name} {mode} {i + 1}/{per_spec} {shape_key(shape)}: {shown} "
              f"({opt['strategy']})", file=sys.stderr, flush=True)
    return rows


def run_suite(name: str, per_spec: int, seed: int, budget: int,
              optimum: dict[tuple[int, ...], dict[str, Any]]
              ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Suite mode: the example's results file as committed dispatches."""
    bundle = load_example(name)
    spec = bundle.spec
    tuned = [s for s, _ in bundle.shapes]
    token, spread = token_dim(spec, tuned)
    hi = 2 * max(s[token] for s in tuned)
    info = new_info(name, spec, token, spread, len(tuned), hi)
    info["runners_up"] = sum(1 for c in runners_up(bundle) if c)
    rows = judge("suite", name, bundle, tuned, token, hi, judge_stream(seed, name),
                 {tuple(s.values()) for s in tuned}, per_spec,
                 TuneSettings("auto", budget, seed, 1), optimum, info)
    return info, rows


def range_combos(spec: OperatorSpec, suite: Sequence[Mapping[str, int]], token: str
                 ) -> tuple[list[str], list[tuple[int, ...]], int]:
    """The other shape variables (spec order), their distinct value combinations in the suite
    (the MAX_COMBOS most frequent, first seen first on ties) and how many there are."""
    others = [v for v in spec.shape_vars if v != token]
    counts = Counter(tuple(s[v] for v in others) for s in suite)
    return others, [c for c, _ in counts.most_common(MAX_COMBOS)], len(counts)


def range_text(spec: OperatorSpec, token: str, hi: int, others: Sequence[str],
               combo: Sequence[int]) -> str:
    fixed = dict(zip(others, combo, strict=True))
    return ",".join(f"{v}=1:{hi}" if v == token else f"{v}={fixed[v]}"
                    for v in spec.shape_vars)


def run_range(name: str, per_spec: int, seed: int, budget: int, target: float,
              max_shapes: int, optimum: dict[tuple[int, ...], dict[str, Any]]
              ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Range mode: ``api.search_range`` over the suite's family tunes the table that
    dispatches; the judged shapes are drawn as in suite mode, minus the shapes it tuned."""
    example = load_example(name)
    spec, hw = example.spec, example.hw
    suite = [s for s, _ in example.shapes]
    token, spread = token_dim(spec, suite)
    hi = 2 * max(s[token] for s in suite)
    others, combos, n_combos = range_combos(spec, suite, token)
    texts = [range_text(spec, token, hi, others, c) for c in combos]
    info = new_info(name, spec, token, spread, 0, hi)
    info.update({"ranges": texts, "combos_used": len(combos), "combos_total": n_combos})
    print(f"  {name} range search: {' + '.join(texts)}", file=sys.stderr, flush=True)

    def on_round(r: RangeRound) -> None:
        print(f"  {name} range round: {r.tuned_before} tuned, held-out mean {r.mean():.3f}x, "
              f"{r.within():.0%} within 1.05x", file=sys.stderr, flush=True)

    start = time.perf_counter()
    result, outcome = api.search_range(spec, hw, texts, target=target, max_shapes=max_shapes,
                                       on_round=on_round, strategy="auto", budget=budget,
                                       seed=seed, top_k=TOP_K)
    head = results_format.header(spec.name, spec.sha256, spec.source_text, hw.name,
                                 hw.sha256, hw.data, "auto", seed, budget, spec.variant,
                                 top_k=TOP_K)
    entries = result.entries()
    # As a results file holds it (rounded latencies, sorted), the way the examples are read.
    doc = json.loads(results_format.to_text({**head, "shapes": entries}))
    bundle = load_bundle(doc, f"{name} range search")
    info.update({
        "tuned": len(outcome.shapes), "entries": len(entries),
        "range_failures": list(result.failures), "stopped": outcome.stopped,
        "at_shape_budget": len(outcome.shapes) >= max_shapes,
        "rounds": [{"tuned_before": r.tuned_before, "n": len(r.ratios),
                    "mean": _num(r.mean()), "within": r.within()} for r in outcome.rounds],
        "search_seconds": round(time.perf_counter() - start, 2),
    })
    exclude = {tuple(int(s[v]) for v in spec.shape_vars) for s in outcome.shapes}
    rows = judge("range", name, bundle, suite, token, hi, judge_stream(seed, name), exclude,
                 per_spec, TuneSettings("auto", budget, seed, 1), optimum, info)
    covered = set(combos)
    for r in rows:
        r["on_ranges"] = tuple(r["shape"][v] for v in others) in covered
    return info, rows


def _num(x: float) -> float | None:
    return round(x, 6) if math.isfinite(x) else None


def _finite(summary: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (_num(v) if isinstance(v, float) else v) for k, v in summary.items()}


# ---- report ------------------------------------------------------------------------------------

def summarize(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    ok = [r for r in rows if r["dispatched_valid"]]
    ratios = np.array([r["ratio"] for r in ok], dtype=np.float64)
    slower = sum(1 for r in ok if r["baseline_valid"]
                 and r["dispatched_us"] > r["baseline_us"] * (1 + REL_EPS))
    return {
        "n": len(rows),
        "mean": float(ratios.mean()) if ratios.size else math.nan,
        "p90": float(np.percentile(ratios, 90)) if ratios.size else math.nan,
        "worst": float(ratios.max()) if ratios.size else math.nan,
        # Over every launch: one without a valid configuration is not within.
        "within": float(np.sum(ratios <= WITHIN)) / len(rows) if rows else math.nan,
        "slower": slower,
        "no_config": sum(1 for r in rows if r["dispatched"] is None),
        "invalid": sum(1 for r in rows if r["dispatched"] is not None
                       and not r["dispatched_valid"]),
        "fallback_invalid": sum(1 for r in rows if not r["baseline_valid"]),
        "beat_search": sum(1 for r in rows if r["dispatch_beat_search"]),
    }


HEADER = ("| spec | token dim (tuned max/min) | n | mean | p90 | worst | within 1.05x "
          "| slower than fallback | no config (valid exists) | dispatched invalid "
          "| fallback invalid | no-valid draws |")
RANGE_HEADER = ("| spec | token range, fixed combinations (of the suite's) | n | mean | p90 "
                "| worst | within 1.05x | slower than fallback | no config (valid exists) "
                "| dispatched invalid | fallback invalid | no-valid draws "
                "| shapes the range search tuned (stop) | judged off the ranges (within 1.05x) |")


def _x(v: float) -> str:
    return "-" if math.isnan(v) else f"{v:.2f}x"


def _pct(v: float) -> str:
    return "-" if math.isnan(v) else f"{v:.0%}"


def table_row(label: str, token: str, s: Mapping[str, Any], no_valid: int | str,
              extra: Sequence[object] = ()) -> str:
    return (f"| {label} | {token} | {s['n']} | {_x(s['mean'])} | {_x(s['p90'])} "
            f"| {_x(s['worst'])} | {_pct(s['within'])} | {s['slower']} | {s['no_config']} "
            f"| {s['invalid']} | {s['fallback_invalid']} | {no_valid} |"
            + "".join(f" {e} |" for e in extra))


def print_table(header: str, lines: Sequence[str]) -> None:
    print(header)
    print("|" + "---|" * header.count(" | ") + "---|")
    for line in lines:
        print(line)


def common_notes(infos: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]],
                 total: Mapping[str, Any]) -> list[str]:
    notes = []
    for key, what in (("rejected", "draws rejected by check_shape"),
                      ("seen", "draws equal to a tuned shape (redrawn)"),
                      ("gave_up", "shapes given up after too many draws")):
        hit = [f"{i['spec']} {i[key]}" for i in infos if i[key]]
        if hit:
            notes.append(f"{what}: {', '.join(hit)}")
    if total["beat_search"]:
        notes.append(f"the dispatched configuration beat the budgeted search on "
                     f"{total['beat_search']} shape(s) (ratio 1 there)")
    fails: dict[str, int] = {}
    for r in rows:
        if not r["baseline_valid"]:
            k = f"{r['spec']} '{r['baseline_violates']}'"
            fails[k] = fails.get(k, 0) + 1
    if fails:
        notes.append("fallback (baseline) invalid: "
                     + ", ".join(f"{k} x{n}" for k, n in sorted(fails.items())))
    return notes


def print_notes(notes: Sequence[str]) -> None:
    print()
    for note in notes:
        print(f"- {note}")


def report_suite(infos: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]
                 ) -> dict[str, Any]:
    n_tuned = sum(i["tuned"] for i in infos)
    print(f"**Suite mode.** Tuned: each example's own shape suite as committed "
          f"(`examples/<name>/results.json`, {n_tuned} shapes in all); judged: unseen shapes, "
          "none of them in the suite.\n")
    lines = []
    for info in infos:
        s = summarize([r for r in rows if r["spec"] == info["spec"]])
        lines.append(table_row(info["spec"], f"{info['token']} ({info['spread']:.0f})", s,
                               info["no_valid"]))
    total = summarize(rows)
    lines.append(table_row("**all**", "", total, sum(i["no_valid"] for i in infos)))
    print_table(HEADER, lines)
    notes = []
    flat = [i["spec"] for i in infos if i["spread"] <= 1.0]
    if flat:
        notes.append(f"no token-like dimension (every tuned value equal): {', '.join(flat)}")
    notes += common_notes(infos, rows, total)
    with_cands = [i["spec"] for i in infos if i["runners_up"]]
    notes.append("runners-up (`candidates`) in the results files: "
                 + (", ".join(with_cands) if with_cands else "none"))
    print_notes(notes)
    return {"all": _finite(total)}


def _stop(info: Mapping[str, Any]) -> str:
    stopped = str(info.get("stopped", ""))
    if info.get("at_shape_budget"):
        return "shape budget"
    if "within the target" in stopped:
        return "target"
    return stopped or "-"


def _off(rows: Sequence[Mapping[str, Any]]) -> str:
    off = [r for r in rows if not r["on_ranges"]]
    return f"{len(off)} ({_pct(summarize(off)['within'])})" if off else "0"


def report_range(infos: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]],
                 seed: int, budget: int, target: float, max_shapes: int) -> dict[str, Any]:
    n_tuned = sum(i["tuned"] for i in infos)
    print(f"**Range mode.** Tuned: per spec `api.search_range` over the token dimension from "
          f"1 to 2 x its largest suite value, every other dimension fixed to one of the "
          f"suite's combinations (at most {MAX_COMBOS}, most frequent first; target "
          f"{target}x, at most {max_shapes} shapes, budget {budget}, seed {seed}; "
          f"{n_tuned} shapes in all); judged: unseen shapes drawn as in the suite table, "
          "none of them tuned by the range search.\n")
    lines = []
    for info in infos:
        mine = [r for r in rows if r["spec"] == info["spec"]]
        lo, hi = info["range"]
        label = f"{info['token']} {lo}:{hi}, {info['combos_used']} of {info['combos_total']}"
        lines.append(table_row(info["spec"], label, summarize(mine), info["no_valid"],
                               (f"{info['tuned']} ({_stop(info)})", _off(mine))))
    total = summarize(rows)
    no_valid = sum(i["no_valid"] for i in infos)
    lines.append(table_row("**all**", "", total, no_valid, (n_tuned, _off(rows))))
    on = [r for r in rows if r["on_ranges"]]
    off = [r for r in rows if not r["on_ranges"]]
    for label, part in (("**all, on the ranges**", on), ("**all, off the ranges**", off)):
        if part and off:
            lines.append(table_row(label, "", summarize(part), "-", ("-", "-")))
    print_table(RANGE_HEADER, lines)
    on_sum = summarize(on)
    notes = [f"issue target >= 95 % of unseen shapes within 1.05x: {_pct(total['within'])} of "
             f"all {total['n']}, {_pct(on_sum['within'])} of the {on_sum['n']} on the "
             "tuned ranges"]
    if off:
        notes.append("off the ranges: judged shapes whose other dimensions are a suite "
                     f"combination the range search did not get (only the {MAX_COMBOS} most "
                     "frequent are ranged): "
                     + ", ".join(f"{i['spec']} {sum(1 for r in off if r['spec'] == i['spec'])}"
                                 for i in infos
                                 if any(r["spec"] == i["spec"] for r in off)))
    budgeted = [i["spec"] for i in infos if i.get("at_shape_budget")]
    notes.append("range searches stopped at the shape budget: "
                 + (", ".join(budgeted) if budgeted else "none"))
    notes.append("the range search's own last held-out round (mean, within 1.05x): "
                 + ", ".join(f"{i['spec']} {_x(i['rounds'][-1]['mean'] or math.nan)} "
                             f"{_pct(i['rounds'][-1]['within'])} ({len(i['rounds'])} round(s))"
                             for i in infos if i.get("rounds")))
    failed = [f"{i['spec']} {len(i['range_failures'])}" for i in infos
              if i.get("range_failures")]
    if failed:
        notes.append(f"range-search shapes without a valid configuration: {', '.join(failed)}")
    notes += common_notes(infos, rows, total)
    notes.append("ranges: " + "; ".join(f"{i['spec']} `{' + '.join(i['ranges'])}`"
                                        for i in infos))
    print_notes(notes)
    return {"all": _finite(total), "on_ranges": _finite(on_sum),
            "off_ranges": _finite(summarize(off))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=("suite", "range", "both"), default="both",
                    help="suite: the example suites dispatch; range: a range search over the "
                         "same family does; both (default): one table each")
    ap.add_argument("--specs", help="comma-separated example names (default: all)")
    ap.add_argument("--per-spec", type=int, default=20, help="unseen shapes per spec")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget", type=int, default=DEFAULT_BUDGET,
                    help=f"search budget of each shape's optimum and of each shape the range "
                         f"search tunes (default {DEFAULT_BUDGET})")
    ap.add_argument("--target", type=float, default=DEFAULT_TARGET,
                    help=f"range mode: the range search's held-out mean target "
                         f"(default {DEFAULT_TARGET})")
    ap.add_argument("--max-shapes", type=int, default=DEFAULT_MAX_SHAPES,
                    help=f"range mode: shapes per range search (default {DEFAULT_MAX_SHAPES})")
    ap.add_argument("--json", type=Path, help="also write the raw rows here")
    ap.add_argument("--top-k", type=int, default=1,
                    help="range mode: runners-up kept per tuned shape (candidates of the table)")
    ap.add_argument("--dims", metavar="OP=VAR,...", default="",
                    help="the shape variable to redraw per operator (its example or spec "
                         "name, e.g. batch_matmul=B) instead of the token-like one")
    args = ap.parse_args()
    global TOP_K
    TOP_K = args.top_k
    available = example_names()
    items = [t.strip() for t in args.dims.split(",") if t.strip()]
    # Each example's spec, by its example name and by its spec name (loaded once, only if asked).
    specs = {k: s for n in (available if items else ())
             for s in [load_example(n).spec] for k in (n, s.name)}
    for item in items:
        op, _, var = (t.strip() for t in item.partition("="))
        if op not in specs:
            ap.error(f"--dims {item}: no example or spec named {op!r}")
        if var not in specs[op].shape_vars:
            ap.error(f"--dims {item}: {specs[op].name} has no shape variable {var!r}")
        DIMS[specs[op].name] = var
    names = available
    if args.specs:
        names = [n.strip() for n in args.specs.split(",") if n.strip()]
        unknown = [n for n in names if n not in available]
        if unknown:
            ap.error(f"no example for {', '.join(unknown)}; choose from {', '.join(available)}")
    if args.per_spec < 1 or args.budget < 1 or args.max_shapes < 1:
        ap.error("--per-spec, --budget and --max-shapes must be at least 1")
    if args.target < 1.0:
        ap.error("--target must be at least 1.0")
    modes = ["suite", "range"] if args.mode == "both" else [args.mode]

    start = time.perf_counter()
    infos: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
    rows: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
    walls: dict[str, float] = {}
    # Each judged shape's optimum, per spec: both modes judge largely the same shapes.
    optima: dict[str, dict[tuple[int, ...], dict[str, Any]]] = {n: {} for n in names}
    for mode in modes:
        t0 = time.perf_counter()
        for name in names:
            print(f"{name} ({mode}):", file=sys.stderr, flush=True)
            if mode == "suite":
                info, spec_rows = run_suite(name, args.per_spec, args.seed, args.budget,
                                            optima[name])
            else:
                info, spec_rows = run_range(name, args.per_spec, args.seed, args.budget,
                                            args.target, args.max_shapes, optima[name])
            infos[mode].append(info)
            rows[mode] += spec_rows
        walls[mode] = time.perf_counter() - t0
    wall = time.perf_counter() - start

    hw_names = sorted({load_example(n).hw.name for n in names})
    print(f"# Dispatch quality on unseen shapes (seed {args.seed}, budget {args.budget})\n")
    print(f"Selection: {selection_name()}.  ")
    print(f"Profile: {', '.join(hw_names)} (each results file's own), its own core counts.  ")
    print("Held out: no judged shape was tuned for the table that dispatches it; each is a "
          "suite shape with its token dimension redrawn log-uniformly in [1, 2 x largest "
          "suite value] (both modes draw from the same per-spec stream, so they judge "
          "largely the same shapes). Ratio = dispatched / optimum by the model (optimum: "
          "`tune_shape` auto, or the dispatched configuration where it beats the search); "
          "mean / p90 / worst over the launches with a valid configuration, the share within "
          "1.05x over all.\n")
    summaries: dict[str, Any] = {}
    for mode in modes:
        if mode == "suite":
            summaries[mode] = report_suite(infos[mode], rows[mode])
        else:
            summaries[mode] = report_range(infos[mode], rows[mode], args.seed, args.budget,
                                           args.target, args.max_shapes)
        print()
    timing = ", ".join(f"{m} {walls[m]:.1f} s" for m in modes)
    if "range" in walls:
        searched = sum(i["search_seconds"] for i in infos["range"])
        timing += f" (of which range searches {searched:.1f} s)"
    print(f"Wall time: {wall:.1f} s ({timing})  ")
    print(f"Command: `python {shlex.join(sys.argv)}`")

    if args.json is not None:
        args.json.write_text(json.dumps({
            "command": sys.argv, "mode": args.mode, "seed": args.seed, "budget": args.budget,
            "target": args.target, "max_shapes": args.max_shapes,
            "selection": selection_name(), "specs": [i for m in modes for i in infos[m]],
            "summary": summaries, "rows": [r for m in modes for r in rows[m]],
        }, indent=1, allow_nan=False) + "\n", encoding="utf-8")
        print(f"wrote {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
