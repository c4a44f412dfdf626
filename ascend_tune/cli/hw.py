"""`ascend-tune hw list` and `ascend-tune hw show`: the hardware profiles."""

from __future__ import annotations

import json
import sys

import typer

from ascend_tune import api
from ascend_tune.cli import console
from ascend_tune.cli.app import app

hw_app = typer.Typer(no_args_is_help=True, help="List and show hardware profiles.")
app.add_typer(hw_app, name="hw")


@hw_app.command("list")
def hw_list(as_json: bool = typer.Option(False, "--json",
                                         help="Print the profiles' numbers as JSON.")) -> None:
    """List the built-in hardware profiles."""
    rows = api.profiles()
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
def hw_show(name: str = typer.Argument(..., metavar="CHIP",
                                     help="Profile file or built-in name."),
            as_json: bool = typer.Option(False, "--json",
                                         help="Print values, sources and confidences as JSON.")
            ) -> None:
    """Show every number of a profile with its source and confidence."""
    p = api.load_profile(name)
    doc = api.profile_document(p)
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
        return
    console.line(f"{p.name}: {p.description}")
    console.table("values", ["key", "value", "confidence", "source"],
                  [[k, json.dumps(d["value"]) if isinstance(d["value"], (list, dict))
                    else d["value"], d["confidence"], d["source"]]
                   for k, d in doc["values"].items()])
