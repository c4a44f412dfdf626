"""Run-time dispatch quality on shapes nobody tuned (issue 25).

    python benchmarks/dispatch_quality.py                        # every example, 20 shapes each
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

Held out: the drawn shapes are never tuned (a draw equal to a tuned shape is redrawn, as is a
draw ``check_shape`` rejects or one without any valid configuration; the last are counted).
Deterministic for a given ``--seed``: each spec draws from its own stream, so ``--specs`` does
not change the shapes of the specs it keeps.

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
from ascend_tune.spec import OperatorSpec
from ascend_tune.spec.shapes import check_shape, shape_key
from ascend_tune.tune.shape import DEFAULT_BUDGET, TuneSettings, tune_shape

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
WITHIN = 1.05  # "good enough": dispatched within 5 % of the shape's optimum
MAX_DRAWS = 200  # attempts per unseen shape before giving up on it
REL_EPS = 1e-9  # latency comparisons: equal within rounding of the results file


# ---- the selection under test ------------------------------------------------------------------

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


def token_dim(spec: OperatorSpec, shapes: Sequence[Mapping[str, int]]) -> tuple[str, float]:
    """The shape variable whose tuned values vary most (max/min), first in spec order on ties."""
    best, ratio = spec.shape_vars[0], -1.0
    for v in spec.shape_vars:
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


def run_spec(name: str, per_spec: int, seed: int, budget: int) -> tuple[dict[str, Any],
                                                                        list[dict[str, Any]]]:
    bundle = load_example(name)
    spec, hw = bundle.spec, bundle.hw
    tuned = [s for s, _ in bundle.shapes]
    tuned_keys = {tuple(s.values()) for s in tuned}
    token, spread = token_dim(spec, tuned)
    hi = 2 * max(s[token] for s in tuned)
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    settings = TuneSettings("auto", budget, seed, 1)
    info: dict[str, Any] = {
        "spec": name, "op": spec.name, "token": token, "spread": spread,
        "tuned": len(tuned), "range": [1, hi], "rejected": 0, "seen": 0, "no_valid": 0,
        "gave_up": 0, "runners_up": sum(1 for c in runners_up(bundle) if c),
    }
    optimum_cache: dict[tuple[int, ...], dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    for i in range(per_spec):
        for _attempt in range(MAX_DRAWS):
            base_index = int(rng.integers(len(tuned)))
            value = round(math.exp(rng.uniform(0.0, math.log(hi))))
            raw = {**tuned[base_index], token: max(1, min(value, hi))}
            try:
                shape = check_shape(spec, raw, f"{name} draw")
            except AscendTuneError:
                info["rejected"] += 1
                continue
            key = tuple(shape.values())
            if key in tuned_keys:
                info["seen"] += 1
                continue
            if key not in optimum_cache:
                try:
                    optimum_cache[key] = tune_shape(spec, hw, shape, settings)
                except NoValidConfigError:
                    info["no_valid"] += 1
                    continue
            break
        else:
            info["gave_up"] += 1
            print(f"  {name}: no usable draw for shape {i + 1} after {MAX_DRAWS} attempts",
                  file=sys.stderr)
            continue
        opt = optimum_cache[key]
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
            "spec": name, "shape": shape, "from_tuned": base_index, "token": token,
            "dispatched": config, "dispatched_us": _num(disp_us),
            "dispatched_valid": math.isfinite(disp_us), "dispatched_violates": disp_fails,
            "optimum": opt["best"], "optimum_us": _num(search_us), "strategy": opt["strategy"],
            "dispatch_beat_search": disp_us < search_us * (1 - REL_EPS),
            "baseline": baseline, "baseline_us": _num(base_us),
            "baseline_valid": math.isfinite(base_us), "baseline_violates": base_fails,
            "ratio": _num(ratio),
        })
        shown = f"{ratio:.3f}x" if math.isfinite(ratio) else "FAILED"
        print(f"  {name} {i + 1}/{per_spec} {shape_key(shape)}: {shown} ({opt['strategy']})",
              file=sys.stderr, flush=True)
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


def table_row(label: str, token: str, s: Mapping[str, Any], no_valid: int) -> str:
    def x(v: float) -> str:
        return "-" if math.isnan(v) else f"{v:.2f}x"
    within = "-" if math.isnan(s["within"]) else f"{s['within']:.0%}"
    return (f"| {label} | {token} | {s['n']} | {x(s['mean'])} | {x(s['p90'])} "
            f"| {x(s['worst'])} | {within} | {s['slower']} | {s['no_config']} "
            f"| {s['invalid']} | {s['fallback_invalid']} | {no_valid} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--specs", help="comma-separated example names (default: all)")
    ap.add_argument("--per-spec", type=int, default=20, help="unseen shapes per spec")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget", type=int, default=DEFAULT_BUDGET,
                    help=f"search budget of each shape's optimum (default {DEFAULT_BUDGET})")
    ap.add_argument("--json", type=Path, help="also write the raw rows here")
    args = ap.parse_args()
    available = example_names()
    names = available
    if args.specs:
        names = [n.strip() for n in args.specs.split(",") if n.strip()]
        unknown = [n for n in names if n not in available]
        if unknown:
            ap.error(f"no example for {', '.join(unknown)}; choose from {', '.join(available)}")
    if args.per_spec < 1 or args.budget < 1:
        ap.error("--per-spec and --budget must be at least 1")

    start = time.perf_counter()
    infos: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    for name in names:
        print(f"{name}:", file=sys.stderr, flush=True)
        info, spec_rows = run_spec(name, args.per_spec, args.seed, args.budget)
        infos.append(info)
        rows += spec_rows
    wall = time.perf_counter() - start

    hw_names = sorted({load_example(n).hw.name for n in names})
    print(f"# Dispatch quality on unseen shapes (seed {args.seed}, budget {args.budget})\n")
    print(f"Selection: {selection_name()}.  ")
    print(f"Profile: {', '.join(hw_names)} (each results file's own), its own core counts.  ")
    print("Held out: no shape below was tuned; each is a tuned shape with its token dimension "
          "redrawn log-uniformly in [1, 2 x largest tuned value]. Ratio = dispatched / "
          "optimum by the model (optimum: `tune_shape` auto, or the dispatched configuration "
          "where it beats the search); mean / p90 / worst over the launches with a valid "
          "configuration, the share within 1.05x over all.\n")
    print(HEADER)
    print("|" + "---|" * HEADER.count(" | ") + "---|")
    for info in infos:
        s = summarize([r for r in rows if r["spec"] == info["spec"]])
        print(table_row(info["spec"], f"{info['token']} ({info['spread']:.0f})", s,
                        info["no_valid"]))
    total = summarize(rows)
    print(table_row("**all**", "", total, sum(i["no_valid"] for i in infos)))

    notes = []
    flat = [i["spec"] for i in infos if i["spread"] <= 1.0]
    if flat:
        notes.append(f"no token-like dimension (every tuned value equal): {', '.join(flat)}")
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
    with_cands = [i["spec"] for i in infos if i["runners_up"]]
    notes.append("runners-up (`candidates`) in the results files: "
                 + (", ".join(with_cands) if with_cands else "none"))
    print()
    for note in notes:
        print(f"- {note}")
    print(f"\nWall time: {wall:.1f} s  ")
    print(f"Command: `python {shlex.join(sys.argv)}`")

    if args.json is not None:
        args.json.write_text(json.dumps({"command": sys.argv, "seed": args.seed,
                                         "budget": args.budget, "selection": selection_name(),
                                         "specs": infos, "summary": _finite(total), "rows": rows},
                                        indent=1, allow_nan=False) + "\n", encoding="utf-8")
        print(f"wrote {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
