"""`ascend-tune probe`: add configurations to a results file that make one device run determine
the profile (measured by `measure`, fitted by `calibrate --from-results`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from ascend_tune import api
from ascend_tune.cli import console
from ascend_tune.cli.app import app

# A coefficient planned wider than this is reported as weakly determined.
WEAK_PERCENT = 10.0


@app.command()
def probe(
    results_path: Path = typer.Argument(..., metavar="RESULTS",
                                        help="Results file of `search --top-k`."),
    count: int = typer.Option(8, "--count", "-n",
                              help="Probe configurations to add (over all shapes)."),
    hw: str | None = typer.Option(None, "--hw", metavar="CHIP",
                                  help="Design at this profile, e.g. the one a first "
                                       "calibration wrote (default: the file's own)."),
    fit_all: bool = typer.Option(False, "--fit-all",
                                 help="Aim at high-confidence coefficients too."),
    include: list[str] | None = typer.Option(None, "--include", metavar="COEFFICIENT",
                                             help="Aim at this coefficient too. Repeatable."),
    exclude: list[str] | None = typer.Option(None, "--exclude", metavar="COEFFICIENT",
                                             help="Never aim at this coefficient. Repeatable."),
    shapes: int = typer.Option(0, "--shapes", metavar="COUNT",
                               help="Where the file's shapes leave a coefficient "
                                    "undetermined, also add up to COUNT new shapes (smaller: "
                                    "launch-bound; or one element longer: a misaligned "
                                    "pitch), each tuned, with probes; says what each is for."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random part of the pool."),
    as_json: bool = typer.Option(False, "--json", help="Print the design as JSON."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing on success."),
) -> None:
    """Add probe candidates: configurations (other core counts, tile sizes, buffer depths)
    whose measured times separate what the top-k alone cannot (the HBM rate from a core's GM
    port, the launch head from the cube floor). `measure` then measures them with the rest;
    `emit` ships a probe only if it measured fastest. Prints which coefficients the run will
    determine."""
    profile = api.load_profile(hw) if hw is not None else None
    design = api.probe(results_path, count, hw=profile, fit_all=fit_all, include=include or [],
                       exclude=exclude or [], seed=seed, shapes=shapes)
    if as_json:
        sys.stdout.write(json.dumps({"results": str(results_path), **design.document()},
                                    indent=1) + "\n")
        return
    if quiet:
        return
    rows = [[shape, " ".join(f"{k}={v}" for k, v in config.items())]
            for shape, configs in design.added.items() for config in configs]
    rows += [[s.key, " ".join(f"{k}={v}" for k, v in config.items())]
             for s in design.new_shapes for config in s.configs]
    console.table(f"{design.count} probe(s) added to {results_path}", ["shape", "config"], rows)
    for s in design.new_shapes:
        aim = (f"determines {', '.join(s.determines)}" if s.determines
               else f"sharpens {s.sharpens}")
        console.line(f"new shape {s.key}: {s.why}; {aim}")
    before = design.before.kept if design.before is not None else []
    after = design.after
    assert after is not None
    gained = [n for n in after.kept if n not in before]
    console.line(f"determined by the candidates alone: {', '.join(before) or 'nothing'}")
    console.line(f"determined with the probes: {', '.join(after.kept) or 'nothing'}"
                 + (f" (new: {', '.join(gained)})" if gained else ""))
    if design.precision:
        weak = [n for n, v in design.precision.items() if v > WEAK_PERCENT]
        planned = ", ".join(f"{n} ±{console.percent_text(v)}"
                            for n, v in design.precision.items())
        console.line(f"planned precision (95 %, at {design.noise * 100:.0f} % noise per "
                     f"measured row): {planned}")
        if weak:
            console.line(f"weakly determined (wider than ±{WEAK_PERCENT:.0f} %): "
                         f"{', '.join(weak)}; more probes (--count), or shapes where they "
                         "matter more in the results file (--shapes), narrow them")
    for name, partners in after.together.items():
        console.line(f"not determined: {name} moves the times together with "
                     f"{' and '.join(partners)}")
    if after.unseen:
        console.line(f"not seen by any configuration of these shapes: {', '.join(after.unseen)}")
    console.line(f"next: ascend-tune measure {results_path} --run CMD, then "
                 f"ascend-tune calibrate --from-results {results_path} -o PROFILE.yaml")
