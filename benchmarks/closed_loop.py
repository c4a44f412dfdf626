"""The measure -> calibrate loop on a device whose numbers differ from the profile (issue 26).

    python benchmarks/closed_loop.py                     # every scenario, noise 0 / 1 / 3 %
    python benchmarks/closed_loop.py --scenario matmul --noise 0.01 --probes 0

A stand-in device is the model on a TRUE profile: the shipped profile with several leaves
scaled by factors the loop never sees (``SCENARIOS``). For each scenario the loop runs what a
user with an NPU runs, through the same API the commands use:

1. ``search --top-k K`` on a few calibration shapes with the shipped profile;
2. ``probe --count P`` (with ``--probes P``): extra configurations chosen to separate the
   coefficients the top-k cannot;
3. ``measure`` with ``--run`` launching ``benchmarks/standin_device.py`` (a subprocess per
   run, ``--repeat 3``, log-normal noise of ``--noise``);
4. ``calibrate --from-results`` (every row fitted: ``--holdout 0``);
5. judged on HELD-OUT shapes no step saw: for each, the top 8 configurations by the shipped
   and by the calibrated profile and 24 random valid ones, predicted against the stand-in's
   noise-free time.

Printed first, held out: MAPE, the mean over shapes of the within-shape Spearman rank
correlation, and the regret (true time of the calibrated model's pick / true optimum, by an
exhaustive search on the truth where the valid set allows, else the GA at budget 4000), before
(shipped profile) and after (calibrated). Then each perturbed leaf: shipped, true and
recovered value.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ascend_tune import api
from ascend_tune.base import executors
from ascend_tune.calibrate.coefficients import COEFFICIENTS, leaf_number, scale_leaves
from ascend_tune.calibrate.fit import error_stats
from ascend_tune.hardware import HardwareProfile, load_profile, load_profile_data
from ascend_tune.model.engine import ShapeModel
from ascend_tune.spec import OperatorSpec, load_spec
from ascend_tune.tune.shape import TuneSettings, tune_shape

HERE = Path(__file__).resolve().parent
Shape = dict[str, int]


@dataclass(frozen=True)
class Scenario:
    spec: str
    hw: str
    factors: Mapping[tuple[str, ...], float]  # leaf path -> true / shipped
    calibration: Sequence[Shape]
    held_out: Sequence[Shape]


def _mm(m: int, n: int, k: int) -> Shape:
    return {"M": m, "N": n, "K": k}


SCENARIOS = {
    # A 910B3 whose GM side is slower than the profile says (the stand-in, with more
    # leaves): HBM, the AIC's GM port, the first-byte latency of GM->L1, the FixPipe write
    # rate, the cube kernel's fixed cost and the per-core head.
    "matmul": Scenario(
        "matmul", "ascend910b3",
        {("memory", "hbm_bandwidth_gbps"): 0.8,
         ("memory", "aic_gm_port_bytes_per_cycle"): 0.45,
         ("transfers", "gm_to_l1", "latency_cycles"): 1.6,
         ("transfers", "l0c_to_gm", "bandwidth_curve"): 0.85,
         ("launch", "cube_kernel_floor_us"): 0.6,
         ("launch", "head_full_chip_us"): 1.5},
        [_mm(1024, 1024, 1024), _mm(128, 8192, 4096), _mm(4096, 4096, 512),
         _mm(2048, 2048, 8192)],
        [_mm(777, 1999, 513), _mm(256, 11008, 4096), _mm(8192, 8192, 128),
         _mm(1, 4096, 4096), _mm(3000, 3000, 3000), _mm(512, 2048, 1024)]),
    # The issue-45 device: per-core GM ports about a tenth of the shipped msKPP plateau (as
    # the public 910B3 tile sweeps suggest) and HBM 30 % lower; nothing else differs.
    "ports": Scenario(
        "matmul", "ascend910b3",
        {("memory", "hbm_bandwidth_gbps"): 0.7,
         ("memory", "aic_gm_port_bytes_per_cycle"): 0.1},
        [_mm(1024, 1024, 1024), _mm(128, 8192, 4096), _mm(4096, 4096, 512),
         _mm(2048, 2048, 8192)],
        [_mm(777, 1999, 513), _mm(256, 11008, 4096), _mm(8192, 8192, 128),
         _mm(1, 4096, 4096), _mm(3000, 3000, 3000), _mm(512, 2048, 1024)]),
    # A vector kernel on a part whose AIV side differs: the GM->UB and UB->GM rates, the
    # AIV's GM port, the per-instruction issue cost and the launch head.
    "rmsnorm": Scenario(
        "rmsnorm", "ascend910b3",
        {("memory", "aiv_gm_port_bytes_per_cycle"): 0.6,
         ("transfers", "gm_to_ub", "bandwidth_curve"): 0.75,
         ("transfers", "ub_to_gm", "latency_cycles"): 1.8,
         ("vector", "issue_cycles"): 1.4,
         ("launch", "head_base_us"): 1.6},
        [{"rows": 1, "cols": 4096}, {"rows": 128, "cols": 8192}, {"rows": 4096, "cols": 4096},
         {"rows": 16384, "cols": 1024}],
        [{"rows": 7, "cols": 5120}, {"rows": 333, "cols": 2048}, {"rows": 2048, "cols": 11008},
         {"rows": 65536, "cols": 512}, {"rows": 32, "cols": 16384}]),
}


def perturbed(hw: HardwareProfile, factors: Mapping[tuple[str, ...], float]
              ) -> dict[str, Any]:
    data = scale_leaves(hw.data, factors)
    data["name"] = f"{hw.name}_standin"
    return data


def held_out_rows(spec: OperatorSpec, shipped: HardwareProfile, calibrated: HardwareProfile,
                  truth: HardwareProfile, shape: Shape, rng: np.random.Generator,
                  ) -> tuple[np.ndarray, ...]:
    """(configurations, truth, shipped and calibrated predictions, regret before / after)."""
    models = {name: ShapeModel(spec, hw, shape)
              for name, hw in (("shipped", shipped), ("calibrated", calibrated),
                               ("truth", truth))}
    picks = {}
    for name, hw in (("shipped", shipped), ("calibrated", calibrated), ("truth", truth)):
        entry = tune_shape(spec, hw, shape, TuneSettings("auto", 4000, 1, 8))
        picks[name] = [c["config"] for c in entry.get("candidates", [])] or [entry["best"]]
    model = models["truth"]
    # Judged on configurations that do not depend on the calibration: the best by the
    # shipped profile and by the truth, and random valid ones.
    configs = [[c[p] for p in spec.params] for name in ("shipped", "truth")
               for c in picks[name]]
    genomes = rng.integers(0, model.sizes, size=(4000, model.sizes.size))
    values = model.values(genomes)
    valid = values[model.evaluate(values).valid]
    configs += valid[:24].tolist()
    rows = np.unique(np.array(configs, dtype=np.int64), axis=0)
    times = {name: m.evaluate(rows).latency_us for name, m in models.items()}
    best_true = min(float(models["truth"].evaluate(np.array(
        [[c[p] for p in spec.params]], dtype=np.int64)).latency_us[0]) for c in picks["truth"])

    def regret(name: str) -> float:
        pick = np.array([[picks[name][0][p] for p in spec.params]], dtype=np.int64)
        return float(models["truth"].evaluate(pick).latency_us[0]) / best_true

    return (rows, times["truth"], times["shipped"], times["calibrated"],
            np.array(regret("shipped")), np.array(regret("calibrated")))


def run_loop(name: str, scenario: Scenario, noise: float, probes: int, top_k: int,
             work: Path, fit_all: bool, rounds: int = 1) -> dict[str, Any]:
    spec = load_spec(scenario.spec)
    shipped = load_profile(scenario.hw)
    truth_data = perturbed(shipped, scenario.factors)
    truth_path = work / "truth.json"
    truth_path.write_text(json.dumps(truth_data), encoding="utf-8")
    truth = load_profile_data(truth_data, "truth")
    results = work / "results.json"
    t0 = time.perf_counter()
    api.search(spec, shipped, list(scenario.calibration), top_k=top_k, output=results)
    determined: list[str] = []
    if probes:
        determined = api.probe(results, probes).determined
    run = " ".join(shlex.quote(a) for a in (
        sys.executable, str(HERE / "standin_device.py"), scenario.spec, str(truth_path),
        "--noise", str(noise))) + " --shape-json {shape_json} --config-json {config_json} " \
        "--run {repeat}"
    plan = api.plan_measure(results, run, repeat=3)
    api.measure(plan, executors.make("local", slots=[None, None]))
    rows = api.load_measurements(spec, shipped, from_results=[results])
    fit = api.calibrate(spec, shipped, rows, holdout=0.0, fit_all=fit_all)
    calibrated = load_profile_data(fit.data, "calibrated")
    for _round in range(1, rounds):
        # Another probe round, designed at the calibrated numbers (what a configuration shows
        # of each coefficient depends on where the numbers are), measured, and the fit again
        # from the shipped profile over every row.
        determined = api.probe(results, probes, hw=calibrated, seed=_round).determined
        api.measure(plan, executors.make("local", slots=[None, None]))
        rows = api.load_measurements(spec, shipped, from_results=[results])
        fit = api.calibrate(spec, shipped, rows, holdout=0.0, fit_all=fit_all)
        calibrated = load_profile_data(fit.data, "calibrated")
    loop_s = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    truth_all, before_all, after_all, rho_before, rho_after, reg_b, reg_a = ([] for _ in range(7))
    for shape in scenario.held_out:
        _rows, t, b, a, rb, ra = held_out_rows(spec, shipped, calibrated, truth, shape, rng)
        truth_all.append(t)
        before_all.append(b)
        after_all.append(a)
        rho_before.append(error_stats(b, t).spearman)
        rho_after.append(error_stats(a, t).spearman)
        reg_b.append(float(rb))
        reg_a.append(float(ra))
    t_all = np.concatenate(truth_all)
    before = error_stats(np.concatenate(before_all), t_all)
    after = error_stats(np.concatenate(after_all), t_all)
    owner = {leaf_path: c.name for c in COEFFICIENTS for leaf_path in c.leaves}
    leaves = {}
    for p in scenario.factors:
        interval = fit.intervals.get(owner.get(p, ""))
        leaves[".".join(p)] = (leaf_number(shipped.data, p), leaf_number(truth_data, p),
                               leaf_number(fit.data, p),
                               None if interval is None else interval.percent)
    # Every other leaf a coefficient scales: how far the fit moved it from the shipped value
    # (the device has it as shipped, so any move is an error the fit made).
    others = {".".join(p): _ratio(fit.data, shipped.data, p) - 1.0
              for c in COEFFICIENTS for p in c.leaves if p not in scenario.factors}
    return {"scenario": name, "noise": noise, "probes": probes * rounds, "rows": len(rows.rows),
            "others": {k: v for k, v in others.items() if abs(v) > 1e-9},
            "mape": (before.mape, after.mape),
            "spearman": (float(np.mean(rho_before)), float(np.mean(rho_after))),
            "worst_regret": (max(reg_b), max(reg_a)), "fitted": fit.fitted,
            "not_fitted": fit.not_fitted, "determined": determined, "leaves": leaves,
            "loop_s": loop_s, "warnings": fit.warnings, "selection": fit.selection}


def _first_number(value: Any) -> float:
    """A leaf's one number: a curve's plateau, a table's first entry (a fit scales a table
    as a whole), a scalar."""
    if isinstance(value, list):
        return float(value[-1][1])
    if isinstance(value, dict):
        return _first_number(next(iter(value.values())))
    return float(value)


def _ratio(data: Mapping[str, Any], base: Mapping[str, Any], path: tuple[str, ...]) -> float:
    node, ref = data, base
    for key in path:
        node, ref = node[key], ref[key]
    b = _first_number(ref["value"])
    return _first_number(node["value"]) / b if b else 1.0


def print_run(r: Mapping[str, Any]) -> None:
    mb, ma = r["mape"]
    sb, sa = r["spearman"]
    gb, ga = r["worst_regret"]
    print(f"{r['scenario']:<8} noise {r['noise'] * 100:3.0f} %  probes {r['probes']:>2}  "
          f"rows {r['rows']:>3}  held-out MAPE {mb * 100:5.1f} % -> {ma * 100:5.1f} %   "
          f"Spearman {sb:5.2f} -> {sa:5.2f}   worst regret {gb:5.3f}x -> {ga:5.3f}x   "
          f"({r['loop_s']:.0f} s)")
    for path, (shipped, true, got, within) in r["leaves"].items():
        miss = got / true - 1.0
        if within is None:
            band = "not fitted"
        else:
            # Inside the 95 % interval: the truth is within the factor of what was recovered
            # (give or take the written profile's rounding to 4-6 digits).
            inside = abs(np.log(got / true)) <= np.log1p(within / 100.0) + 1e-4
            band = f"95 % ±{within:4.1f} %, truth {'inside' if inside else 'OUTSIDE'}"
        print(f"    {path:<44} shipped {shipped:>9.4g}  true {true:>9.4g}  "
              f"recovered {got:>9.4g}  ({miss * 100:+5.1f} %; {band})")
    moved = sorted(r["others"].items(), key=lambda kv: -abs(kv[1]))
    worst = f"{moved[0][0]} {moved[0][1] * 100:+.1f} %" if moved else "none moved"
    print(f"    untouched leaves: {len(moved)} moved, the most {worst}")
    for path, move in moved:
        print(f"        {path:<44} {move * 100:+6.1f} %")
    print(f"    fitted: {', '.join(r['fitted'])}")
    if r["determined"]:
        print(f"    probe design determines: {', '.join(r['determined'])}")
    sel = r.get("selection") or {}
    if sel:
        tried = ", ".join(f"{k} {v * 100:.1f} %" for k, v in sel["candidates"].items())
        print(f"    chosen start: {sel['chosen']} of {sel['starts']} (MAPE on "
              f"{sel['check_rows']} selection rows: {tried})")
    for w in r["warnings"]:
        print(f"    warning: {w}")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", choices=sorted(SCENARIOS), action="append")
    ap.add_argument("--noise", type=float, action="append",
                    help="log-normal sigma of each run (default: 0, 0.01, 0.03)")
    ap.add_argument("--probes", type=int, default=8, help="probe configurations added")
    ap.add_argument("--top-k", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=2,
                    help="probe -> measure -> calibrate rounds (the later ones designed at the "
                         "calibrated profile)")
    ap.add_argument("--fit-all", action="store_true", help="fit high-confidence leaves too")
    ap.add_argument("--json", type=Path, help="write every run's figures here")
    args = ap.parse_args(argv)
    out = []
    for name in args.scenario or sorted(SCENARIOS):
        for noise in args.noise or [0.0, 0.01, 0.03]:
            with tempfile.TemporaryDirectory() as tmp:
                r = run_loop(name, SCENARIOS[name], noise, args.probes, args.top_k, Path(tmp),
                             args.fit_all, args.rounds if args.probes else 1)
            print_run(r)
            sys.stdout.flush()
            out.append(r)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=list), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
