"""`ascend-tune measure`: run the model's top candidates on NPUs; the fastest measured wins."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import typer

from ascend_tune import api
from ascend_tune.base import executors
from ascend_tune.base.errors import AscendTuneError
from ascend_tune.cli import console
from ascend_tune.cli.app import ExitWith, app
from ascend_tune.cli.db import database, db_option, no_db_option


@app.command()
def measure(
    results_path: Path = typer.Argument(..., metavar="RESULTS",
                                        help="Results file of `search` (best with --top-k)."),
    run: str = typer.Option(..., "--run", metavar="CMD",
                            help="Command measuring one candidate, with placeholders {shape}, "
                                 "{shape_json}, each shape variable ({M}), {config_json}, each "
                                 "parameter ({baseM}), {block_dim}, {tiling_key}, "
                                 "{candidate}, {tiling_blob}, {headers_dir}, {work_dir}, "
                                 "{device}, {repeat}; {{ is a literal brace."),
    pattern: str | None = typer.Option(None, "--pattern", metavar="REGEX",
                                       help="Time in us from the output: the last match of "
                                            "this one-group regex (default: 'time_us: X')."),
    csv: str | None = typer.Option(None, "--csv", metavar="GLOB",
                                   help="Read the time from this msprof CSV (op_summary, "
                                        "kernel_details, PipeUtilization); relative: in "
                                        "{work_dir}."),
    where: str | None = typer.Option(None, "--where", metavar="COL=VAL,..",
                                     help="Use the CSV rows with these column values."),
    repeat: int = typer.Option(3, "--repeat", help="Runs per candidate; the median counts."),
    timeout: float | None = typer.Option(None, "--timeout", help="Seconds per run."),
    retries: int = typer.Option(1, "--retries",
                                help="Extra attempts of a candidate whose run failed."),
    devices: str | None = typer.Option(None, "--devices", metavar="IDS",
                                       help="One worker per device (0-7, 0,2,4), each run "
                                            "with ASCEND_RT_VISIBLE_DEVICES set."),
    executor: str = typer.Option("local", "--executor", metavar="EXECUTOR",
                                 help="local | ray (several hosts; a device is the Ray "
                                      "resource NPU)."),
    address: str | None = typer.Option(None, "--address", metavar="ADDRESS",
                                       help="Ray cluster address (default: start a local one)."),
    style: str = typer.Option("macro", "--style", metavar="STYLE", help="Headers in {headers_dir}: "
                              + " | ".join(api.emit_styles()) + "."),
    baseline: bool = typer.Option(True, "--baseline/--no-baseline",
                                  help="Also measure each shape's baseline configuration (the "
                                       "spec's), for the measured speedup beside the "
                                       "predicted one."),
    fresh: bool = typer.Option(False, "--fresh", help="Measure every candidate again."),
    retry_failed: bool = typer.Option(False, "--retry-failed",
                                      help="Measure the candidates that failed again."),
    remeasure: bool = typer.Option(False, "--remeasure",
                                   help="Run candidates the tuning database holds measured "
                                        "the same way (command, repeats, host) again."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress or table."),
    db_url: str | None = db_option(),
    no_db: bool = no_db_option(),
) -> None:
    """Measure each shape's candidates with your command; the fastest measured becomes the
    winner `emit` writes. Resumable: measured candidates are saved in RESULTS."""
    plan = api.plan_measure(results_path, run, pattern=pattern, csv=csv, where=where,
                            repeat=repeat, timeout=timeout, retries=retries, style=style)
    engine = _executor(executor, devices, address)
    progress = _Progress(quiet or as_json)
    out = api.measure(plan, engine, fresh=fresh, retry_failed=retry_failed, progress=progress,
                      baseline=baseline, db=database(db_url, no_db, quiet or as_json),
                      remeasure=remeasure)
    if out.reused and not (quiet or as_json):
        console.note(f"{out.reused} candidate(s) taken from the tuning database, measured the "
                     "same way before (--remeasure runs them again)")
    for folder in out.removed_run_dirs:
        console.note(f"removed {folder}, the temp folder of a measure run that was killed")
    if out.interrupted:
        # The user asked for the stop: not an error.
        console.interrupted(f"{out.measured} candidate(s) measured by this run saved to "
                            f"{results_path}")
        raise ExitWith(130)
    if as_json:
        sys.stdout.write(json.dumps({
            "results": str(results_path), "measured": out.measured,
            "baselines_measured": out.baselines, "failures": out.failures,
            "invocations": out.invocations,
            "shapes": api.measure_summary(out.entries)}, indent=1) + "\n")
    elif not quiet:
        _print_table(plan.spec.display_name, out.entries)
    for message in out.failures:
        console.error(message)
    if out.failures:
        raise ExitWith(1)


def _executor(engine: str, devices: str | None, address: str | None) -> executors.Executor:
    if engine == "ray":
        if devices is not None:
            raise AscendTuneError("--devices is for --executor local; Ray assigns each task "
                                  "a device (the NPU resource of each host)")
        return executors.make("ray", slots=[None], address=address,
                              resources={"NPU": 1})
    slots: list[str | None] = list(executors.parse_devices(devices)) if devices else [None]
    return executors.make(engine, slots=slots, address=address)


class _Progress(api.MeasureProgress):
    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.reporter = console.Reporter(0, quiet, "measuring")

    def opened(self, total: int, done: int) -> None:
        if done and not self.quiet:
            console.warn(f"{done} of {total} candidate(s) already measured; measuring the "
                         "rest (--fresh measures all again)")

    @contextlib.contextmanager
    def running(self, todo: int) -> Iterator[None]:
        self.reporter = console.Reporter(todo, self.quiet, "measuring")
        with self.reporter.running():
            yield

    def candidate_done(self, outcome: api.CandidateOutcome, entry: Mapping[str, Any]) -> None:
        # A negative index is the shape's baseline configuration (measure --baseline).
        where = (f"{outcome.key} baseline" if outcome.index < 0
                 else f"{outcome.key} #{outcome.index}")
        if outcome.device:
            where += f" (device {outcome.device})"
        if outcome.error is not None:
            self.reporter.shape_done(f"{where}: failed: {outcome.error}")
        else:
            self.reporter.shape_done(f"{where}: {outcome.time_us:.2f} us")


def _print_table(name: str, entries: Sequence[Mapping[str, Any]]) -> None:
    rows = []
    moved = 0
    summary = api.measure_summary(entries)
    for item in summary:
        winner = item["winner"]
        moved += winner not in (None, 0)
        for c in item["candidates"]:
            rows.append([api.shape_key(item["shape"]) if c["candidate"] == 0 else "",
                         c["candidate"],
                         " ".join(f"{k}={v}" for k, v in c["config"].items()),
                         _us(c["predicted_us"]), _measured_cell(c),
                         ("<- winner" if c["candidate"] == winner
                          else "probe" if c.get("probe") else "")])
    console.table(f"{name}: predicted vs measured (candidate 0 is the model's pick)",
                  ["shape", "#", "config", "predicted us", "measured us", ""], rows,
                  right=(1, 3, 4))
    console.line(f"the device chose another candidate than the model on {moved} of "
                 f"{len(entries)} shape(s)")
    _print_speedups(name, summary)


def _us(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, (int, float)) else ""


def _measured_cell(c: Mapping[str, Any]) -> str:
    return (f"{c['measured_us']:.2f}" if "measured_us" in c
            else ("failed" if "error" in c else "-"))


def _times(value: Any) -> str:
    return f"{value:.2f}x" if isinstance(value, (int, float)) else "-"


def _print_speedups(name: str, summary: Sequence[Mapping[str, Any]]) -> None:
    """The winner against the spec's baseline, by the model and on the device."""
    rows = []
    slower = 0
    for item in summary:
        base, speedup = item["baseline"], item["speedup"]
        win = next((c for c in item["candidates"] if c["candidate"] == item["winner"]), None)
        if base.get("valid") is not True:
            rows.append([api.shape_key(item["shape"]), "invalid", "-", "", "", "n/a", "n/a"])
            continue
        measured = speedup["measured"]
        slower += isinstance(measured, (int, float)) and measured < 1
        rows.append([api.shape_key(item["shape"]), _us(base["predicted_us"]),
                     _measured_cell(base) + (f" (= #{base['candidate']})"
                                             if "candidate" in base else ""),
                     _us(win["predicted_us"]) if win else "", _measured_cell(win) if win else "-",
                     _times(speedup["predicted"]), _times(measured)])
    if not any(r[2] not in ("-", "") for r in rows):
        return  # nothing of the baselines measured (--no-baseline): no measured column
    console.table(f"{name}: speedup of the measured winner over the spec's baseline",
                  ["shape", "baseline predicted us", "baseline measured us",
                   "winner predicted us", "winner measured us", "predicted speedup",
                   "measured speedup"], rows, right=(1, 2, 3, 4, 5, 6))
    if slower:
        console.warn(f"the baseline measured faster than the winner on {slower} shape(s): "
                     "the model's candidates missed it there")
