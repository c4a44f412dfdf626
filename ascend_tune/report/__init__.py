"""`ascend-tune report`: one self-contained HTML page about tuning results.

``data`` gathers what the page shows from results files (pure: the model recomputes every
number from the spec and profile the file embeds), ``fidelity`` compares the model with
measurements, ``charts`` draws them with matplotlib into inline SVG and ``page`` renders the
Jinja template. ``build`` ties them together; the CLI only parses options and writes the text.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ascend_tune.base.errors import AscendTuneError

DEFAULT_CHART_SHAPES = 12  # per operator: the shapes with the longest tuned latency
DEFAULT_DISPATCH_SHAPES = 16  # per operator: unseen shapes the run-time dispatch is judged on


def check_output(path: Path) -> None:
    """Refuse an output the page cannot be written to, before any work."""
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise AscendTuneError(f"{path}: is a folder; give a file name for the report")
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise AscendTuneError(f"{path}: folder {folder} {what}")
    try:  # a real file: access() says yes to root on read-only mounts
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise AscendTuneError(f"{path}: cannot write the report: {exc.strerror}") from None


@dataclass(frozen=True)
class Built:
    html: str
    operators: int
    shapes: int
    charts: int
    skipped_rows: tuple[str, ...]  # measurement rows the fidelity page could not use


def build(results_paths: Sequence[Path], measurements: Sequence[Path] = (),
          manifest: Path | None = None, where: str | None = None,
          chart_shapes: int = DEFAULT_CHART_SHAPES,
          dispatch_shapes: int = DEFAULT_DISPATCH_SHAPES,
          knowledge: Callable[[Sequence[tuple[str, str]]], list[dict[str, Any]]] | None = None,
          knowledge_source: str = "") -> Built:
    """The report page for ``results_paths``; with ``measurements`` (measurement files or
    measured results files), or when results files of the first one's spec and profile hold
    measured candidates, a fidelity section comparing the model (the first results file's
    spec and profile) with them."""
    from ascend_tune.report import charts, data, page

    charts.require_matplotlib()  # before any work: the page cannot be drawn without it
    if chart_shapes < 0:
        raise AscendTuneError(f"--charts must be 0 or more, got {chart_shapes}")
    if not 0 <= dispatch_shapes <= 1000:
        raise AscendTuneError(f"--dispatch-shapes must be from 0 to 1000, got {dispatch_shapes}")
    if manifest is not None and not measurements:
        raise AscendTuneError("--manifest needs --measurements")
    if where is not None and not measurements:
        raise AscendTuneError("--where needs --measurements")
    if not results_paths:
        raise AscendTuneError("give at least one results file")
    operators = [data.gather(path, chart_shapes, dispatch_shapes) for path in results_paths]
    first = operators[0]
    # Results files tuned with the first one's spec and profile whose shapes were measured
    # (`measure`): their measured candidates are fidelity rows too.
    measured = [op.path for op in operators
                if op.spec.sha256 == first.spec.sha256 and op.hw.sha256 == first.hw.sha256
                and (op.measured_shapes or any(s.measured for s in op.shapes))]
    fid = None
    if measurements or measured:
        from ascend_tune.report import fidelity

        fid = fidelity.compare(first.spec, first.hw, measurements, manifest, where, measured)
    database = None
    if knowledge is not None:
        held = knowledge([(op.spec.sha256, op.hw.sha256) for op in operators])
        names = {(op.spec.sha256, op.hw.sha256): (op.spec.display_name, op.hw.name)
                 for op in operators}
        rows = [{**r, "operator": names[(r["spec_sha256"], r["hw_sha256"])][0],
                 "chip": names[(r["spec_sha256"], r["hw_sha256"])][1]} for r in held
                if r["searches"] or r["measurements"] or r["calibrations"]]
        database = {"source": knowledge_source, "rows": rows} if rows else None
    html, chart_count = page.render(operators, fid, database)
    return Built(html, len(operators), sum(len(op.shapes) for op in operators), chart_count,
                 tuple(fid.skipped) if fid is not None else ())
