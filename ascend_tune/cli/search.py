"""`ascend-tune search`: tune every shape and save each as it finishes."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import typer

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.cli import ExitWith, app, console
from ascend_tune.hardware import load_profile
from ascend_tune.results import format as results
from ascend_tune.search.strategies import STRATEGIES
from ascend_tune.spec import OperatorSpec, load_spec
from ascend_tune.spec.shapes import shape_key
from ascend_tune.tune import run as search_run
from ascend_tune.tune.shape import DEFAULT_BUDGET, DEFAULT_SEED, TuneSettings


@app.command()
def search(
    spec_ref: str = typer.Argument(..., metavar="SPEC", help="Spec file or built-in name."),
    hw_ref: str = typer.Option(..., "--hw", help="Hardware profile file or built-in name."),
    shapes_files: list[Path] = typer.Option([], "--shapes", help="YAML, JSON or CSV shapes."),
    shape: list[str] = typer.Option([], "--shape", help="One shape as K=V,... (repeatable)."),
    strategy: str = typer.Option("auto", "--strategy",
                                 help="ils | ga | exhaustive | random | auto (exhaustive "
                                      "where the valid set is small, else ils)."),
    budget: int = typer.Option(DEFAULT_BUDGET, "--budget",
                               help="Configurations looked at per shape (scored or ruled out)."),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Random seed (0 .. 2**63-1)."),
    jobs: int = typer.Option(1, "--jobs", help="Processes (results do not depend on it)."),
    top_k: int = typer.Option(1, "--top-k", metavar="K",
                              help="Keep the K best distinct configurations per shape as "
                                   "'candidates' (for `measure`); 1 keeps the winner only."),
    executor: str = typer.Option("local", "--executor",
                                 help="local (--jobs processes) | ray (spread the shapes over "
                                      "a Ray cluster)."),
    address: str | None = typer.Option(None, "--address",
                                       help="Ray cluster address for --executor ray "
                                            "(default: start a local one)."),
    output: Path | None = typer.Option(None, "-o", "--output",
                                       help="Results file (also the cache)."),
    fresh: bool = typer.Option(False, "--fresh",
                               help="Retune every shape, reusing nothing from -o."),
    locked: bool = typer.Option(False, "--locked",
                                help="CI: exit 1 if any shape would be tuned or pruned; "
                                     "write nothing."),
    as_json: bool = typer.Option(False, "--json", help="Print the results as JSON."),
    quiet: bool = typer.Option(False, "--quiet", "-q",
                               help="No progress lines, notes or summary table."),
    dry_run: bool = typer.Option(False, "--dry-run",
                                 help="Print search spaces and baselines; tune nothing."),
) -> None:
    """Tune every shape; save each one as it finishes."""
    from ascend_tune.spec.shapes import collect

    _check_options(strategy, budget, jobs, seed)
    if top_k < 1:
        raise AscendTuneError(f"--top-k must be at least 1, got {top_k}")
    engine = _executor(executor, address)
    spec = load_spec(spec_ref)
    hw = load_profile(hw_ref)
    shapes = collect(spec, shapes_files, shape)
    if dry_run:
        _print_plan(spec, hw.name, search_run.plan(spec, hw, shapes, strategy))
        return
    head = results.header(spec.name, spec.sha256, spec.source_text, hw.name, hw.sha256,
                          hw.data, strategy, seed, budget, spec.variant, top_k=top_k)
    if locked:
        _print_lock_check(output, search_run.check_locked(
            output, head, {shape_key(s) for s in shapes}, fresh))
        return
    run = search_run.run_search(spec, hw, shapes, TuneSettings(strategy, budget, seed, top_k),
                                head, jobs=jobs, output=output, fresh=fresh,
                                progress=_Progress(quiet or as_json), executor=engine)
    if run.interrupted:
        where = f"saved to {output}" if output is not None else "not saved (no -o)"
        console.error(f"interrupted: {run.saved} shape(s) tuned by this run {where}")
        raise ExitWith(130)
    rows = search_run.in_shape_order(run.entries(), shapes)
    if as_json:
        doc = search_run.document(head, rows, run.failures)
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
    elif not quiet:
        _print_summary(spec, rows, run.times)
    for message in run.failures:
        console.error(message)
    if run.failures:
        raise ExitWith(1)


def _executor(name: str, address: str | None) -> Any:
    """None for the local process pool (--jobs); else the named executor."""
    from ascend_tune.base import executors

    if name == "local":
        if address is not None:
            raise AscendTuneError("--address is for --executor ray")
        return None
    return executors.make(name, slots=[None], address=address, resources={"CPU": 1})


def _check_options(strategy: str, budget: int, jobs: int, seed: int) -> None:
    if strategy != "auto" and strategy not in STRATEGIES:
        raise AscendTuneError(f"--strategy '{strategy}' is not one of: auto, "
                              f"{', '.join(STRATEGIES)}")
    if budget < 1:
        raise AscendTuneError(f"--budget must be at least 1, got {budget}")
    if jobs < 1:
        raise AscendTuneError(f"--jobs must be at least 1, got {jobs}")
    if not 0 <= seed < 1 << 63:
        raise AscendTuneError(f"--seed must be between 0 and 2**63-1, got {seed}")


class _Progress(search_run.Progress):
    """Notes about the results file and a progress bar or lines on stderr."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.reporter = console.Reporter(0, quiet)

    def opened(self, cache: search_run.CacheReport) -> None:
        if self.quiet:
            return
        if cache.invalidated:
            console.warn(f"{cache.path}: {cache.invalidated}; retuning every shape")
        if cache.pruned:
            console.warn(f"{cache.path}: dropped {cache.pruned} shape(s) no longer in the "
                         "shape list")
        if cache.removed_temps:
            console.warn(f"removed {cache.removed_temps} temp file(s) a killed run left beside "
                         f"{cache.path}")
        if cache.reused:
            console.warn(f"{cache.reused} of {cache.total} shape(s) reused from {cache.path}")

    @contextlib.contextmanager
    def running(self, todo: int) -> Iterator[None]:
        self.reporter = console.Reporter(todo, self.quiet)
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


def _print_lock_check(output: Path | None, check: search_run.LockCheck) -> None:
    if check.invalidated is not None:
        console.error(f"{output}: {check.invalidated}; {check.shapes} shape(s) would be "
                      "retuned")
        raise ExitWith(1)
    if not check.up_to_date:
        console.error(f"{output}: {check.missing} shape(s) would be tuned and {check.pruned} "
                      "pruned; rerun without --locked to update it")
        raise ExitWith(1)
    console.line(f"{output}: up to date for {check.shapes} shape(s)")


def _print_plan(spec: OperatorSpec, hw_name: str,
                planned: Sequence[search_run.PlannedShape]) -> None:
    rows = [[p.key, f"{p.space_size:,}", p.strategy,
             f"{p.baseline_us:.2f}" if p.baseline_us is not None
             else f"invalid ({p.baseline_violates})"] for p in planned]
    console.table(f"{spec.display_name} on {hw_name}: search spaces (nothing tuned)",
                  ["shape", "configurations", "strategy", "baseline us"], rows, right=(1,))


def _print_summary(spec: OperatorSpec, rows: Sequence[dict[str, Any]],
                   times: dict[str, float]) -> None:
    table_rows = []
    for r in rows:
        pred = r["predicted"]
        base = r["baseline"]
        # Only what differs from the baseline: short, and it is what the tuner changed.
        changed = [f"{k}={v}" for k, v in r["best"].items() if base["config"].get(k) != v]
        key = shape_key(r["shape"])
        table_rows.append([
            key, " ".join(changed) if changed else "= baseline", f"{pred['latency_us']:.2f}",
            f"{base['latency_us']:.2f}" if base.get("valid") else "invalid",
            f"{r['speedup']:.2f}x" if r["speedup"] is not None else "n/a",
            pred["bound"].replace("_time_us", ""), f"{pred['efficiency']:.0%}",
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
    console.table(f"{spec.display_name}: best configuration per shape", columns, table_rows,
                  right=right)
