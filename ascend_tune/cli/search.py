"""`ascend-tune search`: tune every shape and save each as it finishes."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ascend_tune import api
from ascend_tune.base import executors
from ascend_tune.base.errors import AscendTuneError
from ascend_tune.cli import console
from ascend_tune.cli import search_options as opt
from ascend_tune.cli.app import ExitWith, app
from ascend_tune.cli.db import database, db_option, no_db_option


@app.command()
def search(
    spec_ref: opt.Spec,
    hw_ref: opt.Chip,
    shapes_files: opt.ShapeFiles = None,
    shape: opt.Shapes = None,
    shape_range: opt.ShapeRanges = None,
    target: opt.Target = 1.03,
    max_shapes: opt.MaxShapes = 48,
    strategy: opt.Strategy = "auto",
    budget: opt.Budget = opt.DEFAULT_BUDGET,
    seed: opt.Seed = opt.DEFAULT_SEED,
    jobs: opt.Jobs = 1,
    top_k: opt.TopK = 1,
    executor: opt.Executor = "local",
    address: opt.Address = None,
    output: opt.Output = None,
    fresh: opt.Fresh = False,
    prune: opt.Prune = False,
    locked: opt.Locked = False,
    as_json: opt.AsJson = False,
    quiet: opt.Quiet = False,
    progress_bar: opt.ProgressBar = False,
    dry_run: opt.DryRun = False,
    db_url: str | None = db_option(),
    no_db: bool = no_db_option(),
    attr: opt.Attrs = None,
    force: opt.Force = False,
) -> None:
    """Tune every shape; save each one as it finishes."""
    api.check_search_options(strategy=strategy, budget=budget, seed=seed, jobs=jobs,
                             top_k=top_k)
    engine = _executor(executor, address)
    spec = api.with_attrs(api.load_spec(spec_ref), attr or [])
    hw = api.load_profile(hw_ref)
    shadow = api.shadowing_spec(spec_ref, spec)
    if shadow is not None and not quiet:
        console.note(f"'{spec_ref}' is the built-in spec {spec.origin}; {shadow} differs from "
                     f"it: pass {shadow} to tune that file")
    shapes, ranges_given = _shapes(spec, shapes_files or [], shape or [], shape_range or [])
    if dry_run:
        ranges = api.parse_ranges(spec, ranges_given)
        _print_plan(spec, hw.name, api.plan(spec, hw, [*shapes, *(
            g for r in ranges for g in r.grid())], strategy, budget))
        return
    if locked:
        _print_lock_check(output, api.check_locked(
            spec, hw, shapes, output, strategy=strategy, budget=budget, seed=seed, top_k=top_k,
            fresh=fresh, prune=prune, ranges=ranges_given, target=target,
            max_shapes=max_shapes))
        return
    # After every shape and value error: those name the input; this names the spec.
    for message in api.refuse(spec, force, "search"):
        console.warn(message)
    options: dict[str, Any] = {
        "strategy": strategy, "budget": budget, "seed": seed, "top_k": top_k, "jobs": jobs,
        "output": output, "fresh": fresh, "prune": prune,
        "progress": _Progress(quiet or as_json, progress_bar),
        "executor": engine, "db": database(db_url, no_db, quiet or as_json)}
    outcome = None
    if ranges_given:
        run, outcome = api.search_range(spec, hw, ranges_given, shapes=shapes, target=target,
                                        max_shapes=max_shapes, on_round=None if quiet else
                                        _print_round, **options)
    else:
        run = api.search(spec, hw, shapes, **options)
    _report(spec, run, outcome, output, as_json, quiet)


def _shapes(spec: api.OperatorSpec, files: list[Path], shape: list[str],
            shape_range: list[str]) -> tuple[list[dict[str, int]], list[str]]:
    """The shapes to tune (--shapes files, --shape) and the ranges to sample (--shape-range
    and the ranges of the files), checked: ranges parse, and there is something to tune."""
    shapes, file_ranges = api.collect_shape_sources(spec, files, shape)
    ranges = [*shape_range, *file_ranges]
    if not shapes and not ranges:
        raise AscendTuneError("no shapes: pass --shapes FILE, --shape K=V,... or "
                              "--shape-range K=LO:HI,...")
    api.parse_ranges(spec, ranges)
    return shapes, ranges


def _report(spec: api.OperatorSpec, run: api.SearchResult, outcome: api.RangeOutcome | None,
            output: Path | None, as_json: bool, quiet: bool) -> None:
    """What a search prints when it ends: interrupted (exit 130), the results (JSON or the
    summary table), the range's verdict, and one error per shape without a valid
    configuration (exit 1)."""
    if run.interrupted:
        where = f"saved to {output}" if output is not None else "not saved (no -o)"
        console.interrupted(f"{run.saved} shape(s) tuned by this run {where}")
        raise ExitWith(130)
    if as_json:
        doc = run.document()
        doc["spec"]["path"] = spec.origin  # which file a built-in name resolved to
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
    elif not quiet:
        _print_summary(spec, run.entries(), run.times)
    if outcome is not None and not quiet:
        _print_range(outcome)
    for message in run.failures:
        console.error(message)
    if run.failures:
        raise ExitWith(1)


def _print_round(judged: api.RangeRound) -> None:
    console.line(f"range: {len(judged.ratios)} unseen shape(s) against {judged.tuned_before} "
                 f"tuned: dispatched/optimum mean {judged.mean():.3f}x, worst "
                 f"{max(judged.ratios, default=float('nan')):.2f}x")


def _print_range(outcome: api.RangeOutcome) -> None:
    held = outcome.held_out
    if held is None or not held.ratios:
        console.line(f"range: {len(outcome.shapes)} shape(s) tuned; {outcome.stopped}")
        return
    console.line(f"range: {len(outcome.shapes)} shape(s) tuned; {outcome.stopped}. Held out "
                 f"(the last {len(held.ratios)} unseen shapes, judged before they were tuned): "
                 f"mean {held.mean():.3f}x, p90 {held.quantile(0.9):.3f}x, worst "
                 f"{max(held.ratios):.2f}x, {held.within():.0%} within 1.05x")


def _executor(name: str, address: str | None) -> executors.Executor | None:
    """None for the local process pool (--jobs); else the named executor."""
    if name == "local":
        if address is not None:
            raise AscendTuneError("--address is for --executor ray")
        return None
    return executors.make(name, slots=[None], address=address, resources={"CPU": 1})


class _Progress(api.Progress):
    """Notes about the results file and a progress bar or lines on stderr."""

    def __init__(self, quiet: bool, bar: bool = False) -> None:
        self.quiet = quiet
        self.bar = bar  # --progress: the bar even where stderr is no terminal
        self.reporter = console.Reporter(0, quiet)

    def opened(self, cache: api.CacheReport) -> None:
        # Work thrown away is said even with -q (quiet silences progress, not data loss).
        if cache.invalidated:
            console.warn(f"{cache.path}: {cache.invalidated}; retuning every shape")
        if cache.pruned:
            console.warn(f"{cache.path}: dropped {cache.pruned} shape(s) not in the shape "
                         "list (--prune)")
        if self.quiet:
            return
        if cache.stale_lock is not None:
            console.note(f"{cache.path}: took over the lock file of search {cache.stale_lock}, "
                         "which was killed; what it saved is kept")
        if cache.removed_temps:
            console.note(f"removed {cache.removed_temps} temp file(s) a killed run left beside "
                         f"{cache.path}")
        if cache.reused:
            console.note(f"{cache.reused} of {cache.total} shape(s) reused from {cache.path}")

    def served(self, count: int, todo: int) -> None:
        if count and not self.quiet:
            console.note(f"{count} of {todo} shape(s) to tune served from the tuning database "
                         "(the same spec, chip and settings; --no-db tunes them)")

    def seeded(self, seeds: Mapping[str, api.Seeds], todo: int) -> None:
        if self.quiet:
            return
        count = sum(len(s.configs) for s in seeds.values())
        first, where = next(iter(seeds.items()))
        console.note(f"{len(seeds)} of {todo} shape(s) start from {count} configuration(s) of "
                     f"their nearest recorded shapes in the tuning database ({first}: from "
                     f"{_names(where.shapes, 4)})")

    @contextlib.contextmanager
    def running(self, todo: int) -> Iterator[None]:
        self.reporter = console.Reporter(todo, self.quiet, bar=self.bar)
        with self.reporter.running():
            yield

    def shape_done(self, key: str, entry: dict[str, Any] | str, seconds: float) -> None:
        if isinstance(entry, str):
            self.reporter.shape_done(f"{key}: no valid configuration")
            return
        pred = entry["predicted"]
        speed = f"{entry['speedup']:.2f}x" if entry["speedup"] is not None else "n/a"
        self.reporter.shape_done(f"{key}: {pred['latency_us']:.2f} us ({speed} vs baseline, "
                                 f"{seconds:.2f} s)")


def _print_lock_check(output: Path | None, check: api.LockCheck) -> None:
    if check.invalidated is not None:
        console.error(f"{output}: {check.invalidated}; {check.shapes} shape(s) would be "
                      f"retuned: {_names(check.missing_keys)}")
        raise ExitWith(1)
    if not check.up_to_date:
        parts = []
        if check.missing:
            parts.append(f"{check.missing} shape(s) would be tuned: "
                         f"{_names(check.missing_keys)}")
        if check.pruned:
            parts.append(f"{check.pruned} pruned: {_names(check.pruned_keys)}")
        console.error(f"{output}: {'; '.join(parts)}; rerun without --locked to update it")
        raise ExitWith(1)
    console.line(f"{output}: up to date for {check.shapes} shape(s)")


def _names(keys: Sequence[str], at_most: int = 8) -> str:
    """Shape keys for one line: the first few, then how many more."""
    shown = " ".join(keys[:at_most])
    return shown + (f" and {len(keys) - at_most} more" if len(keys) > at_most else "")


def _print_plan(spec: api.OperatorSpec, hw_name: str,
                planned: Sequence[api.PlannedShape]) -> None:
    rows = [[p.key, f"{p.space_size:,}", p.strategy,
             f"{p.baseline_us:.2f}" if p.baseline_us is not None
             else f"invalid ({p.baseline_violates})"] for p in planned]
    console.table(f"{spec.display_name} on {hw_name}: search spaces (nothing tuned)",
                  ["shape", "configurations", "strategy", "baseline us"], rows, right=(1,))


def _print_summary(spec: api.OperatorSpec, rows: Sequence[dict[str, Any]],
                   times: dict[str, float]) -> None:
    table_rows = []
    for r in rows:
        pred = r["predicted"]
        base = r["baseline"]
        # Only what differs from the baseline: short, and it is what the tuner changed.
        changed = [f"{k}={v}" for k, v in r["best"].items() if base["config"].get(k) != v]
        key = api.shape_key(r["shape"])
        table_rows.append([
            key, " ".join(changed) if changed else "= baseline", f"{pred['latency_us']:.2f}",
            f"{base['latency_us']:.2f}" if base.get("valid")
            else f"invalid ({base.get('violates', '?')})",
            f"{r['speedup']:.2f}x" if r["speedup"] is not None else "n/a",
            pred["bound"], f"{pred['efficiency']:.0%}",
            f"{times[key]:.2f}" if key in times else "cached"])
    columns = ["shape", "changed from baseline", "us", "baseline us", "speedup", "bound",
               "eff.", "search s"]
    right: tuple[int, ...] = (2, 3, 4, 6, 7)
    if any("time_us" in r.get("measured", {}) for r in rows):
        # `measure` ran: the winner is the device's; show its time beside the prediction.
        columns[2:3] = ["predicted us", "measured us"]
        right = (2, 3, 4, 5, 7, 8)
        for r, row in zip(rows, table_rows, strict=True):
            row.insert(3, f"{r['measured']['time_us']:.2f}"
                       if "time_us" in r.get("measured", {}) else "-")
        if any(isinstance(r.get("measured", {}).get("speedup"), (int, float)) for r in rows):
            # `measure --baseline` ran: the device's speedup beside the model's.
            columns[5:6] = ["predicted speedup", "measured speedup"]
            right = (2, 3, 4, 5, 6, 8, 9)
            for r, row in zip(rows, table_rows, strict=True):
                speedup = r.get("measured", {}).get("speedup")
                row.insert(6, f"{speedup:.2f}x" if isinstance(speedup, (int, float)) else "-")
    console.table(f"{spec.display_name}: best configuration per shape", columns, table_rows,
                  right=right)
