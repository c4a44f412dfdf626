"""`ascend-tune explain`: predict one configuration and say what bounds it."""

from __future__ import annotations

import json
import sys

import typer

from ascend_tune import api
from ascend_tune.base.vocabulary import PIPE_COLUMNS
from ascend_tune.cli import app, console


@app.command()
def explain(
    spec_ref: str = typer.Argument(..., metavar="SPEC", help="Spec file or built-in name."),
    hw_ref: str = typer.Option(..., "--hw", help="Hardware profile file or built-in name."),
    shape: str = typer.Option(..., "--shape", help="K=V,... for every shape variable."),
    set_: str | None = typer.Option(None, "--set", help="P=V,... overrides of the baseline."),
    as_json: bool = typer.Option(False, "--json",
                                 help="Print the prediction, diagnosis and stages as JSON."),
) -> None:
    """Predict one configuration (the spec's baseline unless --set) and say what bounds it."""
    spec = api.load_spec(spec_ref)
    hw = api.load_profile(hw_ref)
    values = api.parse_shape(shape)
    overrides = api.parse_assignments(set_, "--set") if set_ else {}
    ex = api.explain(spec, hw, values, overrides,
                     shape_label=f"--shape {shape}", overrides_label="--set")
    shp = ex.shape
    for note in ex.notes:
        console.warn(note)
    if as_json:
        sys.stdout.write(json.dumps(ex.as_dict(), indent=1) + "\n")
        return
    pred = ex.predicted
    latency = pred["latency_us"]
    console.line(f"{spec.display_name} on {hw.name}, {api.shape_key(shp)}")
    console.line("configuration: " + " ".join(f"{k}={v}" for k, v in ex.config.items()))
    rows = [[c, f"{pred['pipes_us'][c]:.3f}", f"{pred['pipes_us'][c] / latency:.0%}"]
            for c in PIPE_COLUMNS if pred["pipes_us"][c] > 0]
    rows.append(["gm_bandwidth (shared)", f"{pred['gm_bandwidth_us']:.3f}",
                 f"{pred['gm_bandwidth_us'] / latency:.0%}"])
    rows.append(["head_overhead", f"{pred['head_overhead_us']:.3f}",
                 f"{pred['head_overhead_us'] / latency:.0%}"])
    console.table("busy time per pipe (slowest core)", ["pipe", "busy us", "of latency"], rows,
                  right=(1, 2))
    console.line(f"latency {latency:.3f} us, roofline {pred['roofline_us']:.3f} us, "
                 f"efficiency {pred['efficiency']:.0%}, bound: {ex.bound}")
    console.line(f"diagnosis: {ex.diagnosis}")
