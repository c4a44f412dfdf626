"""`ascend-tune explain`: predict one configuration and say what bounds it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from ascend_tune import api
from ascend_tune.base.errors import AscendTuneError
from ascend_tune.base.vocabulary import PIPE_COLUMNS
from ascend_tune.cli import console
from ascend_tune.cli.app import app

_SOURCES = {"exact": "the tuned winner", "model": "the fastest tuned candidate by the model",
            "baseline": "the spec's baseline", "walk": "the fallback walk",
            "none": "no valid configuration"}


def _is_results(ref: str) -> bool:
    return ref.endswith(".json") and Path(ref).is_file()


@app.command()
def explain(
    spec_ref: str = typer.Argument(
        ..., metavar="SPEC",
        help="Spec file or built-in name; or a results file (RESULTS.json): explain the "
             "configuration its selection code runs for --shape (the tuned winner), on the "
             "file's own spec and profile."),
    more: list[str] = typer.Argument(
        None, metavar="[P=V]...", show_default=False,
        help="More --set values, as the tables print them: --set blockDim=4 tileLength=2048."),
    hw_ref: str | None = typer.Option(None, "--hw", metavar="CHIP",
                                      help="Hardware profile file or built-in name (required "
                                           "with a spec; a results file holds its own)."),
    shape: str = typer.Option(..., "--shape", metavar="K=V,...",
                              help="K=V,... for every shape variable."),
    set_: str | None = typer.Option(None, "--set", metavar="P=V,...",
                                    help="P=V,... (or P=V P=V) overrides of the baseline, or "
                                         "of the winner of a results file."),
    as_json: bool = typer.Option(False, "--json",
                                 help="Print the prediction, diagnosis and stages as JSON."),
    attr: list[str] = typer.Option([], "--attr", metavar="ATTR=VALUE",
                                   help="An operator attribute's value (repeatable; the "
                                        "others keep their default)."),
) -> None:
    """Predict one configuration (the spec's baseline unless --set) and say what bounds it."""
    if more and set_ is None:
        raise AscendTuneError(f"'{more[0]}': give parameter values after --set")
    setting = " ".join([set_ or "", *(more or [])]).strip()
    values = api.parse_shape(shape)
    overrides = api.parse_assignments(setting, "--set") if setting else {}
    if _is_results(spec_ref):
        if hw_ref is not None:
            raise AscendTuneError(f"--hw: {spec_ref} is a results file; it holds its profile")
        if attr:
            raise AscendTuneError(f"--attr: {spec_ref} is a results file; it records its "
                                  "attribute values")
        ex, chosen = api.explain_results(Path(spec_ref), values, overrides,
                                         shape_label=f"--shape {shape}", overrides_label="--set")
        spec, hw = ex.spec, ex.hw
        if not as_json:
            console.note(f"{spec_ref}: the configuration its selection code runs for this "
                         f"shape ({_SOURCES.get(chosen.source, chosen.source)})"
                         + (", with --set" if overrides else ""))
    else:
        if hw_ref is None:
            raise AscendTuneError("--hw is required with a spec (a results file holds its own)")
        spec = api.with_attrs(api.load_spec(spec_ref), attr)
        hw = api.load_profile(hw_ref)
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
