"""The command line: a thin shell over the pure core. The only place that exits.

Exit codes: 0 success; 1 the command worked and found what it reports (stale emitted files,
a shape with no valid configuration); 2 bad input or usage.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np
import typer

from ascend_tune import __version__, console, results
from ascend_tune.engine import BOUND_NAMES, PIPE_COLUMNS, ShapeModel
from ascend_tune.errors import AscendTuneError, NoValidConfigError
from ascend_tune.hardware import HardwareProfile, load_profile, sourced_leaves
from ascend_tune.spec import OperatorSpec, check_shape, load_spec, parse_assignments, shape_key
from ascend_tune.store import ResultsStore
from ascend_tune.strategies import STRATEGIES
from ascend_tune.tuner import DEFAULT_BUDGET, DEFAULT_SEED, TuneSettings, describe, tune_shape

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Tiling auto-tuner for Huawei Ascend NPUs (no NPU needed).")
hw_app = typer.Typer(no_args_is_help=True, help="List and show hardware profiles.")
app.add_typer(hw_app, name="hw")


class ExitWith(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


def _version(value: bool) -> None:
    if value:
        console.line(f"ascend-tune {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """ascend-tune: search tiling parameters with an analytical NPU pipeline model."""


# ---- search ---------------------------------------------------------------------------------


def _tune_worker(spec: OperatorSpec, hw: HardwareProfile, shape: dict[str, int],
                 settings: TuneSettings) -> tuple[str, dict[str, Any] | str, float]:
    start = time.perf_counter()
    try:
        entry: dict[str, Any] | str = tune_shape(spec, hw, shape, settings)
    except NoValidConfigError as exc:
        entry = str(exc)
    return shape_key(shape), entry, time.perf_counter() - start


class _Stop(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C: save what is done, then exit."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Stop()


@app.command()
def search(
    spec_ref: str = typer.Argument(..., metavar="SPEC", help="Spec file or built-in name."),
    hw_ref: str = typer.Option(..., "--hw", help="Hardware profile file or built-in name."),
    shapes_files: list[Path] = typer.Option([], "--shapes", help="YAML, JSON or CSV shapes."),
    shape: list[str] = typer.Option([], "--shape", help="One shape as K=V,... (repeatable)."),
    strategy: str = typer.Option("auto", "--strategy",
                                 help="ga | exhaustive | random | auto (by space size)."),
    budget: int = typer.Option(DEFAULT_BUDGET, "--budget", help="Model evaluations per shape."),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Random seed (0 .. 2**63-1)."),
    jobs: int = typer.Option(1, "--jobs", help="Processes (results do not depend on it)."),
    output: Path | None = typer.Option(None, "-o", "--output",
                                          help="Results file (also the cache)."),
    fresh: bool = typer.Option(False, "--fresh",
                               help="Retune every shape, reusing nothing from -o."),
    locked: bool = typer.Option(False, "--locked",
                                help="CI: exit 1 if any shape would be tuned or pruned; "
                                     "write nothing."),
    as_json: bool = typer.Option(False, "--json", help="Print the results as JSON."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress output."),
    dry_run: bool = typer.Option(False, "--dry-run",
                                 help="Print search spaces and baselines; tune nothing."),
) -> None:
    """Tune every shape; save each one as it finishes."""
    from ascend_tune.shapes import collect

    if strategy != "auto" and strategy not in STRATEGIES:
        raise AscendTuneError(f"--strategy '{strategy}' is not one of: auto, "
                              f"{', '.join(STRATEGIES)}")
    if budget < 1:
        raise AscendTuneError(f"--budget must be at least 1, got {budget}")
    if jobs < 1:
        raise AscendTuneError(f"--jobs must be at least 1, got {jobs}")
    if not 0 <= seed < 1 << 63:
        raise AscendTuneError(f"--seed must be between 0 and 2**63-1, got {seed}")
    spec = load_spec(spec_ref)
    hw = load_profile(hw_ref)
    shapes = collect(spec, shapes_files, shape)
    if dry_run:
        _dry_run(spec, hw, shapes, strategy)
        return
    head = results.header(spec.name, spec.sha256, spec.source_text, hw.name, hw.sha256,
                          hw.data, strategy, seed, budget, spec.variant)
    settings = TuneSettings(strategy, budget, seed)
    wanted = {shape_key(s) for s in shapes}
    if locked:
        _check_locked(output, head, wanted, fresh)
        return
    failures: list[str] = []
    times: dict[str, float] = {}
    memory: list[dict[str, Any]] = []  # entries of a run without -o
    old_sigterm = signal.signal(signal.SIGTERM, _on_sigterm)
    interrupted = False
    store: ResultsStore | None = None
    try:
        with contextlib.ExitStack() as stack:
            if output is not None:
                store = stack.enter_context(ResultsStore(output, head, fresh, keep=wanted))
            cached = store.keys if store is not None else set()
            todo = [s for s in shapes if shape_key(s) not in cached]
            if store is not None and not (quiet or as_json):
                if store.invalidated:
                    console.warn(f"{output}: {store.invalidated}; retuning every shape")
                if store.pruned:
                    console.warn(f"{output}: dropped {store.pruned} shape(s) no longer in the "
                                 "shape list")
                if store.removed_temps:
                    console.warn(f"removed {len(store.removed_temps)} temp file(s) a killed "
                                 f"run left beside {output}")
                if len(todo) < len(shapes):
                    console.warn(f"{len(shapes) - len(todo)} of {len(shapes)} shape(s) reused "
                                 f"from {output}")
            reporter = console.Reporter(len(todo), quiet or as_json)

            def finish(key: str, entry: dict[str, Any] | str, seconds: float) -> None:
                times[key] = seconds
                if isinstance(entry, str):
                    failures.append(entry)
                    reporter.shape_done(f"{key}: no valid configuration")
                    return
                if store is not None:
                    store.add(entry)
                else:
                    memory.append(entry)
                pred = entry["predicted"]
                speed = f"{entry['speedup']:.2f}x" if entry["speedup"] is not None else "n/a"
                reporter.shape_done(f"{key}: {pred['latency_us']:.2f} us ({speed} vs baseline, "
                                    f"{seconds:.2f} s)")

            try:
                with reporter.running():
                    _run_shapes(todo, spec, hw, settings, jobs, finish)
            except KeyboardInterrupt:
                interrupted = True
    finally:
        signal.signal(signal.SIGTERM, old_sigterm)
    if interrupted:
        where = f"saved to {output}" if output is not None else "not saved (no -o)"
        done = store.saved if store is not None else len(memory)
        console.error(f"interrupted: {done} shape(s) tuned by this run {where}")
        raise ExitWith(130)

    entries = (store.entries(wanted) if store is not None
               else iter(sorted(memory, key=results.sort_key)))
    if as_json:
        by_key = {shape_key(e["shape"]): e for e in entries}
        rows = [by_key[shape_key(s)] for s in shapes if shape_key(s) in by_key]
        summary = dict(head)
        summary["spec"] = {k: v for k, v in head["spec"].items() if k != "text"}
        summary["hw"] = {k: v for k, v in head["hw"].items() if k != "data"}
        sys.stdout.write(json.dumps({**summary, "shapes": rows, "failures": failures},
                                    indent=1) + "\n")
    elif not quiet:
        _summary(spec, shapes, entries, times)
    for message in failures:
        console.error(message)
    if failures:
        raise ExitWith(1)


def _check_locked(output: Path | None, head: dict[str, Any], wanted: set[str],
                  fresh: bool) -> None:
    from ascend_tune.store import survey

    if output is None:
        raise AscendTuneError("--locked needs -o: it checks a results file")
    if fresh:
        raise AscendTuneError("--locked and --fresh contradict each other")
    plan = survey(output, head, wanted)
    if plan.invalidated is not None:
        console.error(f"{output}: {plan.invalidated}; {len(wanted)} shape(s) would be retuned")
        raise ExitWith(1)
    missing = len(wanted - plan.cached)
    if missing or plan.pruned:
        console.error(f"{output}: {missing} shape(s) would be tuned and {plan.pruned} pruned; "
                      "rerun without --locked to update it")
        raise ExitWith(1)
    console.line(f"{output}: up to date for {len(wanted)} shape(s)")


def _worker_init() -> None:
    """Workers leave Ctrl-C to the parent and die with it (Linux: parent-death signal)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _run_shapes(todo: list[dict[str, int]], spec: OperatorSpec, hw: HardwareProfile,
                settings: TuneSettings, jobs: int, finish: Any) -> None:
    if jobs == 1 or len(todo) <= 1:
        for s in todo:
            finish(*_tune_worker(spec, hw, s, settings))
        return
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn"),
                               initializer=_worker_init)
    try:
        futures = [pool.submit(_tune_worker, spec, hw, s, settings) for s in todo]
        for fut in as_completed(futures):
            finish(*fut.result())
    except BaseException:
        # Python 3.11 has no public way to stop running workers (3.14 adds
        # terminate_workers); they would finish their shape for nothing.
        workers = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for proc in workers:
            proc.terminate()
        raise
    pool.shutdown()


def _dry_run(spec: OperatorSpec, hw: HardwareProfile, shapes: list[dict[str, int]],
             strategy: str) -> None:
    from ascend_tune.strategies import default_strategy

    rows = []
    for s in shapes:
        model = ShapeModel(spec, hw, s)
        base = describe(model, model.baseline_values())
        chosen = strategy if strategy != "auto" else default_strategy(model.space_size)
        rows.append([shape_key(s), f"{model.space_size:,}", chosen,
                     f"{base['predicted']['latency_us']:.2f}" if base["valid"]
                     else f"invalid ({base['violates']})"])
    console.table(f"{spec.display_name} on {hw.name}: search spaces (nothing tuned)",
                  ["shape", "configurations", "strategy", "baseline us"], rows, right=(1,))


def _summary(spec: OperatorSpec, shapes: list[dict[str, int]], entries: Any,
             times: dict[str, float]) -> None:
    by_key: dict[str, list[str]] = {}
    for r in entries:
        pred = r["predicted"]
        base = r["baseline"]
        # Only what differs from the baseline: short, and it is what the tuner changed.
        changed = [f"{k}={v}" for k, v in r["best"].items() if base["config"].get(k) != v]
        config = " ".join(changed) if changed else "= baseline"
        key = shape_key(r["shape"])
        by_key[key] = [
            key, config, f"{pred['latency_us']:.2f}",
            f"{base['latency_us']:.2f}" if base.get("valid") else "invalid",
            f"{r['speedup']:.2f}x" if r["speedup"] is not None else "n/a",
            pred["bound"].replace("_time_us", ""), f"{pred['efficiency']:.0%}",
            f"{times[key]:.2f}" if key in times else "cached"]
    table_rows = [by_key[shape_key(s)] for s in shapes if shape_key(s) in by_key]
    console.table(f"{spec.display_name}: best configuration per shape",
                  ["shape", "changed from baseline", "us", "baseline us", "speedup",
                   "bound", "eff.", "search s"], table_rows, right=(2, 3, 4, 6, 7))


# ---- explain --------------------------------------------------------------------------------


@app.command()
def explain(
    spec_ref: str = typer.Argument(..., metavar="SPEC"),
    hw_ref: str = typer.Option(..., "--hw"),
    shape: str = typer.Option(..., "--shape", help="K=V,... for every shape variable."),
    set_: str | None = typer.Option(None, "--set", help="P=V,... overrides of the baseline."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Predict one configuration (the spec's baseline unless --set) and say what bounds it."""
    from ascend_tune.diagnose import diagnose

    spec = load_spec(spec_ref)
    hw = load_profile(hw_ref)
    shp = check_shape(spec, parse_assignments(shape, "--shape"), f"--shape {shape}")
    model = ShapeModel(spec, hw, shp)
    config = model.baseline_values()
    if set_:
        for k, v in parse_assignments(set_, "--set").items():
            if k not in config:
                from ascend_tune.errors import did_you_mean
                raise AscendTuneError(f"--set: unknown parameter '{k}'"
                                      f"{did_you_mean(k, config)}; {spec.name} takes "
                                      f"{', '.join(spec.params)}")
            config[k] = v
    row = np.array([[config[p] for p in spec.params]], dtype=np.int64)
    ev = model.evaluate(row, detail=True)
    if not ev.valid[0]:
        name = model.constraint_names[int(ev.failed[0])]
        expr = dict(spec.constraints).get(name)
        shown = ", ".join(f"{k}={v}" for k, v in config.items())
        rule = f" ({expr.source})" if expr is not None else ""
        raise AscendTuneError(f"configuration breaks constraint '{name}'{rule} with {shown}")
    info = describe(model, config)
    bound = BOUND_NAMES[int(ev.bound[0])]
    diagnosis = diagnose(model, config, ev)
    if as_json:
        payload = {"spec": spec.name, "hw": hw.name, "shape": shp, **info,
                   "diagnosis": diagnosis,
                   "stages": [{"side": s.side, "stage": s.name, "pipe": s.pipe,
                               "busy_us": round(s.cycles / float(hw["clock_mhz"]), 6),
                               "executions": s.executions,
                               "bytes_per_transfer": s.bytes_per_transfer,
                               "bandwidth_bytes_per_cycle": round(s.bandwidth_bytes_per_cycle, 6)}
                              for s in ev.stages]}
        sys.stdout.write(json.dumps(payload, indent=1) + "\n")
        return
    pred = info["predicted"]
    latency = pred["latency_us"]
    console.line(f"{spec.display_name} on {hw.name}, {shape_key(shp)}")
    console.line("configuration: " + " ".join(f"{k}={v}" for k, v in config.items()))
    rows = [[c, f"{pred['pipes_us'][c]:.3f}", f"{pred['pipes_us'][c] / latency:.0%}"]
            for c in PIPE_COLUMNS if pred["pipes_us"][c] > 0]
    rows.append(["gm_bandwidth (shared)", f"{pred['gm_bandwidth_us']:.3f}",
                 f"{pred['gm_bandwidth_us'] / latency:.0%}"])
    rows.append(["head_overhead", f"{pred['head_overhead_us']:.3f}",
                 f"{pred['head_overhead_us'] / latency:.0%}"])
    console.table("busy time per pipe (slowest core)", ["pipe", "busy us", "of latency"], rows,
                  right=(1, 2))
    console.line(f"latency {latency:.3f} us, roofline {pred['roofline_us']:.3f} us, "
                 f"efficiency {pred['efficiency']:.0%}, bound: {bound}")
    console.line(f"diagnosis: {diagnosis}")


# ---- emit -----------------------------------------------------------------------------------


@app.command()
def emit(
    results_path: Path = typer.Argument(..., metavar="RESULTS", help="Results file of search."),
    out_dir: Path = typer.Option(..., "-o", "--output",
                                 help="Operator project folder (op_host/, op_kernel/)."),
    style: str = typer.Option("macro", "--style", help="macro (CANN 8.x) | struct."),
    check_only: bool = typer.Option(False, "--check",
                                    help="Write nothing; exit 1 if files are stale or missing."),
    op_host: bool = typer.Option(False, "--op-host",
                                 help="Also write op_host/<op>.cpp: the complete msOpGen host "
                                      "file (OpDef, InferShape, InferDataType, TilingFunc)."),
    socs: list[str] = typer.Option([], "--soc",
                                   help="AddConfig SoC for --op-host (repeatable; default: "
                                        "the profile's, e.g. ascend910b)."),
    quiet: bool = typer.Option(False, "--quiet", "-q"),
) -> None:
    """Render AscendC tiling headers, host selection code and kernel constants."""
    from ascend_tune import emit as emitter

    doc = results.load(results_path)
    bundle = emitter.load_bundle(doc, str(results_path))
    snake = bundle.spec.snake_name
    if out_dir.exists() and not out_dir.is_dir():
        raise AscendTuneError(f"{out_dir}: exists and is not a folder")
    # A host file emitted earlier is kept up to date (and checked) even without --op-host.
    op_host = op_host or f"op_host/{snake}.cpp" in emitter.generated_here(out_dir, snake)
    files = emitter.render(bundle, style, op_host=op_host, socs=tuple(socs))
    conflicts = emitter.project_conflicts(out_dir, files)
    if conflicts:
        raise AscendTuneError(conflicts[0])
    extra = emitter.leftovers(out_dir, files, snake)
    if check_only:
        reports = emitter.check(out_dir, files)
        for r in reports:
            console.line(r)
        for rel in extra:
            console.line(f"leftover: {out_dir / rel} (generated earlier, not by these options; "
                         "delete it if the project no longer uses it)")
        if reports:
            fix = ["ascend-tune", "emit", str(results_path), "-o", str(out_dir)]
            fix += ["--style", style] if style != "macro" else []
            fix += ["--op-host"] if op_host else []
            fix += [a for s in socs for a in ("--soc", s)]
            console.line(f"{len(reports)} of {len(files)} file(s) stale or missing in {out_dir}; "
                         f"fix: {' '.join(fix)}")
            raise ExitWith(1)
        if not quiet:
            console.line(f"{len(files)} file(s) up to date in {out_dir}"
                         + (f", {len(extra)} leftover" if extra else ""))
        return
    written = emitter.write(out_dir, files)
    if not quiet:
        for path in written:
            console.line(f"wrote {path}")
        for rel in extra:
            console.warn(f"leftover: {out_dir / rel} was generated earlier and is not written "
                         "by these options; delete it if the project no longer uses it")
        console.line(f"{len(files)} file(s) in {out_dir}, {len(written)} changed")


# ---- calibrate, validate ---------------------------------------------------------------------


def _load_measurements(files: list[Path], spec: OperatorSpec, hw: HardwareProfile,
                       manifest_path: Path | None, where: str | None, quiet: bool) -> Any:
    from dataclasses import replace

    from ascend_tune import measurements
    from ascend_tune.calibrate import split_valid

    manifest = measurements.load_manifest(manifest_path)
    if where:
        pairs = {}
        for part in where.split(","):
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise AscendTuneError(f"--where '{where}': expected COLUMN=VALUE pairs")
            pairs[key.strip()] = value.strip()
        manifest = replace(manifest, where={**manifest.where, **pairs})
    report = measurements.load(files, spec, manifest)
    report.rows, invalid = split_valid(spec, hw, report.rows)
    report.skipped += invalid
    if not quiet:
        for line in report.skipped:
            console.warn(f"skipped {line}")
    total = len(report.rows) + len(report.skipped)
    if not report.rows:
        first = f"; first: {report.skipped[0]}" if report.skipped else ""
        raise AscendTuneError(f"no usable measurement row in {', '.join(map(str, files))} "
                              f"({len(report.skipped)} skipped{first})")
    if report.skipped and not quiet:
        console.warn(f"used {len(report.rows)} of {total} row(s), skipped {len(report.skipped)}")
    return report


@app.command()
def calibrate(
    files: list[Path] = typer.Argument(..., metavar="MEASUREMENTS..."),
    spec_ref: str = typer.Option(..., "--spec"),
    hw_ref: str = typer.Option(..., "--hw"),
    output: Path = typer.Option(..., "-o", "--output", help="Calibrated profile YAML."),
    manifest: Path | None = typer.Option(None, "--manifest",
                                            help="YAML: config, free, files, shapes, where."),
    where: str | None = typer.Option(None, "--where", help="Use rows with COLUMN=VALUE,..."),
    name: str | None = typer.Option(None, "--name", help="Name of the calibrated profile."),
    quiet: bool = typer.Option(False, "--quiet", "-q"),
) -> None:
    """Fit profile coefficients to measured times; write a profile that records the fit."""
    import os

    import yaml

    from ascend_tune import calibrate as cal

    spec = load_spec(spec_ref)
    hw = load_profile(hw_ref)
    results.check_writable(output)
    report = _load_measurements(files, spec, hw, manifest, where, quiet)
    fit = cal.fit(spec, hw, report.rows)
    hw_path = Path(hw_ref)
    base_ref = (os.path.relpath(hw_path.resolve(), output.resolve().parent)
                if hw_path.is_file() else hw_ref)
    doc = cal.profile_document(fit, base_ref, name or f"{hw.name}_calibrated", report.files,
                               len(report.rows), len(report.skipped))
    results.write_atomic(output, yaml.safe_dump(doc, sort_keys=False, width=100))
    rows = [["before (" + hw.name + ")", *_error_cells(fit.before)],
            ["after (" + output.name + ")", *_error_cells(fit.after)]]
    console.table(f"{spec.display_name}: model error on {len(report.rows)} measurement(s)",
                  ["profile", "MAPE", "max error", "Spearman", "pair order"], rows,
                  right=(1, 2, 3, 4))
    console.line("fitted: " + ", ".join(f"{k} x{v:.3g}" for k, v in fit.scales.items()))
    console.line(f"wrote {output}")


def _error_cells(e: Any) -> list[str]:
    return [f"{e.mape:.1%}", f"{e.max_error:.1%}", f"{e.spearman:.3f}",
            f"{e.pairwise_agreement:.0%}"]


@app.command()
def validate(
    files: list[Path] = typer.Argument(..., metavar="MEASUREMENTS..."),
    spec_ref: str = typer.Option(..., "--spec"),
    hw_ref: str = typer.Option(..., "--hw"),
    manifest: Path | None = typer.Option(None, "--manifest"),
    where: str | None = typer.Option(None, "--where", help="Use rows with COLUMN=VALUE,..."),
    holdout: float | None = typer.Option(None, "--holdout",
                                            help="Calibrate on the rest, report on this share."),
    kfold: int | None = typer.Option(None, "--kfold", help="K-fold cross-validation."),
    seed: int = typer.Option(0, "--seed"),
    as_json: bool = typer.Option(False, "--json"),
    quiet: bool = typer.Option(False, "--quiet", "-q"),
) -> None:
    """Model error against measurements: MAPE, max error, Spearman, pairwise ordering."""
    from ascend_tune import calibrate as cal

    if holdout is not None and kfold is not None:
        raise AscendTuneError("give --holdout or --kfold, not both")
    if holdout is not None and not 0 < holdout < 1:
        raise AscendTuneError(f"--holdout must be between 0 and 1, got {holdout}")
    spec = load_spec(spec_ref)
    hw = load_profile(hw_ref)
    report = _load_measurements(files, spec, hw, manifest, where, quiet or as_json)
    rows = report.rows
    measured = np.array([m.time_us for m in rows])
    pred = cal.predict(spec, hw, rows)
    overall = cal.errors(pred.time_us, measured)
    out: dict[str, Any] = {"spec": spec.display_name, "hw": hw.name, "rows": len(rows),
                           "skipped": len(report.skipped), "errors": overall.as_dict(),
                           "points": [{"row": m.origin, "shape": m.shape,
                                       "measured_us": m.time_us,
                                       "predicted_us": round(float(p), 6)}
                                      for m, p in zip(rows, pred.time_us, strict=True)]}
    folds: list[np.ndarray] = []
    order = np.random.default_rng(seed).permutation(len(rows))
    if holdout is not None:
        n_test = max(1, round(holdout * len(rows)))
        if n_test >= len(rows):
            raise AscendTuneError("--holdout leaves no row to calibrate on")
        folds = [order[:n_test]]
    elif kfold is not None:
        if not 2 <= kfold <= len(rows):
            raise AscendTuneError(f"--kfold must be between 2 and the {len(rows)} rows")
        folds = list(np.array_split(order, kfold))
    if folds:
        before, after = [], []
        for test in folds:
            train = np.setdiff1d(order, test)
            fit = cal.fit(spec, hw, [rows[i] for i in train])
            tuned = cal.load_profile_data(cal.apply(hw.data, fit.scales), "fold")
            test_rows = [rows[i] for i in test]
            test_measured = measured[test]
            before.append(cal.errors(cal.predict(spec, hw, test_rows).time_us, test_measured))
            after.append(cal.errors(cal.predict(spec, tuned, test_rows).time_us,
                                    test_measured))
        out["held_out"] = {"folds": len(folds),
                           "before": _mean_errors(before), "after": _mean_errors(after)}
    if as_json:
        sys.stdout.write(json.dumps(out, indent=1) + "\n")
        return
    table_rows = [[p["row"], shape_key(p["shape"]), f"{p['measured_us']:.2f}",
                   f"{p['predicted_us']:.2f}",
                   f"{(p['predicted_us'] - p['measured_us']) / p['measured_us']:+.1%}"]
                  for p in out["points"]]
    console.table(f"{spec.display_name} on {hw.name}", ["row", "shape", "measured us",
                                                        "predicted us", "error"], table_rows,
                  right=(2, 3, 4))
    console.table("model error", ["set", "MAPE", "max error", "Spearman", "pair order"],
                  [["all rows", *_error_cells(overall)]], right=(1, 2, 3, 4))
    if "held_out" in out:
        h = out["held_out"]
        console.line(f"held out ({h['folds']} fold(s)): MAPE {h['before']['mape']:.1%} with "
                     f"{hw.name}, {h['after']['mape']:.1%} after calibrating on the rest; "
                     f"Spearman {h['before']['spearman']:.3f} -> {h['after']['spearman']:.3f}")


def _mean_errors(items: list[Any]) -> dict[str, float]:
    keys = ("mape", "max_error", "spearman", "pairwise_agreement")
    return {k: round(float(np.mean([getattr(e, k) for e in items])), 6) for k in keys}


# ---- check, hw ------------------------------------------------------------------------------


@app.command()
def check(files: list[Path] = typer.Argument(..., metavar="FILE...",
                                             help="Spec and profile YAML files.")) -> None:
    """Validate specs and hardware profiles: one line per problem, exit 2 if any."""
    from ascend_tune.checking import check_files

    problems = check_files(files)
    for p in problems:
        console.error(p)
    if problems:
        raise ExitWith(2)
    console.line(f"{len(files)} file(s) valid")


@hw_app.command("list")
def hw_list(as_json: bool = typer.Option(False, "--json")) -> None:
    """List the built-in hardware profiles."""
    from ascend_tune.hardware import profile_paths

    rows = []
    for path in profile_paths():
        p = load_profile(str(path))
        rows.append({"name": p.name, "clock_mhz": p["clock_mhz"],
                     "cube_cores": p["cube_cores"], "vector_cores": p["vector_cores"],
                     "ub_bytes": p["ub_bytes"], "l1_bytes": p["l1_bytes"],
                     "hbm_bandwidth_gbps": p["hbm_bandwidth_gbps"],
                     "description": p.description})
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=1) + "\n")
        return
    console.table("hardware profiles", ["name", "MHz", "AIC", "AIV", "UB KiB", "L1 KiB",
                                        "HBM GB/s", "description"],
                  [[r["name"], r["clock_mhz"], r["cube_cores"], r["vector_cores"],
                    int(r["ub_bytes"]) // 1024, int(r["l1_bytes"]) // 1024,
                    r["hbm_bandwidth_gbps"], r["description"]] for r in rows],
                  right=(1, 2, 3, 4, 5, 6))


@hw_app.command("show")
def hw_show(name: str = typer.Argument(...), as_json: bool = typer.Option(False, "--json")
            ) -> None:
    """Show every number of a profile with its source and confidence."""
    p = load_profile(name)
    leaves = sourced_leaves(p.data)
    if as_json:
        sys.stdout.write(json.dumps({"name": p.name, "description": p.description,
                                     "sha256": p.sha256, "sources": p.data.get("sources", {}),
                                     "values": {k: {"value": v, "source": s, "confidence": c}
                                                for k, v, s, c in leaves}}, indent=1) + "\n")
        return
    console.line(f"{p.name}: {p.description}")
    console.table("values", ["key", "value", "confidence", "source"],
                  [[k, json.dumps(v) if isinstance(v, (list, dict)) else v, c, s]
                   for k, v, s, c in leaves])


# ---- entry point ----------------------------------------------------------------------------


def main() -> None:
    # Standalone mode: typer/click own usage errors (one message, exit 2) and --help; our own
    # errors propagate out of app() and become one line with the contract's exit code.
    try:
        app()
    except ExitWith as exc:
        sys.exit(exc.code)
    except AscendTuneError as exc:
        console.error(str(exc))
        sys.exit(2)
    except KeyboardInterrupt:
        console.error("interrupted; finished shapes are saved")
        sys.exit(130)
