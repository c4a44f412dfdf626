"""The Python API: what the command line does, for build scripts and notebooks.

Thin, typed entries to the core; the CLI reaches the core only through them. Errors are
:class:`AscendTuneError` with the CLI's one-line messages. docs/api.md documents each
function. A worked example (``tests/test_api.py`` runs it as written)::

    from pathlib import Path
    from ascend_tune import api

    spec = api.load_spec("add")                     # built-in name, file, or NAME:VARIANT
    hw = api.load_profile("ascend910b3")            # built-in name or a profile file
    entries = api.tune(spec, hw, [{"totalLength": 4096}, {"totalLength": 1 << 20}],
                       output=Path("add.results.json"))
    best = entries[0]["best"]                       # {"blockDim": ..., "tileLength": ..., ...}
    why = api.explain(spec, hw, {"totalLength": 1 << 20}, overrides=best)
    print(why.bound, why.predicted["latency_us"], why.diagnosis)
    written = api.emit(Path("add.results.json"), Path("AddCustom"), op_host=True)
    scored = api.predict(spec, hw, {"totalLength": 4096}, [best, {"tileLength": 512}])
    assert scored[0].latency_us == min(p.latency_us for p in scored if p.valid)

``tune`` with ``output`` uses the results file as a cache exactly as ``ascend-tune search -o``
does (one writer at a time, each shape saved as it finishes).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from ascend_tune import report as _report
from ascend_tune.api import agree as _agree
from ascend_tune.api import database as _database
from ascend_tune.api.agree import refuse, spec_refusal, with_attrs
from ascend_tune.api.database import Database, open_db
from ascend_tune.api.measurements import (
    calibrate,
    calibration_refusals,
    check_split,
    load_measurements,
    probe,
    validate,
    write_profile,
)
from ascend_tune.api.measuring import MeasurePlan, measure, measure_summary, plan_measure
from ascend_tune.api.paths import PathLike, _list, _path, _paths
from ascend_tune.base import executors
from ascend_tune.base.errors import AscendTuneError
from ascend_tune.calibrate.measurements import LoadReport as Measurements
from ascend_tune.emit import profiles as _emit_profiles
from ascend_tune.emit import refine as _emit_refine
from ascend_tune.emit import render as _emit
from ascend_tune.emit.bundle import Selected
from ascend_tune.emit.render import EmitPlan
from ascend_tune.emit.styles import STYLES
from ascend_tune.hardware import (
    HardwareProfile,
    builtin_summaries,
    load_profile_data,
    show_document,
)
from ascend_tune.hardware import load_profile as _load_profile
from ascend_tune.hil.command import Outcome as CandidateOutcome
from ascend_tune.hil.run import MeasureOutcome
from ascend_tune.hil.run import Progress as MeasureProgress
from ascend_tune.model.engine import ShapeModel
from ascend_tune.report import DEFAULT_CHART_SHAPES
from ascend_tune.report import Built as ReportPage
from ascend_tune.results import format as results
from ascend_tune.results.format import read_all as _read_results
from ascend_tune.search.strategies import STRATEGIES
from ascend_tune.spec import OperatorSpec, load_spec_text
from ascend_tune.spec import load_spec as _load_spec
from ascend_tune.spec import shapes as _shapes
from ascend_tune.spec.checking import check_report
from ascend_tune.spec.library import shadowing_file as _shadowing_file
from ascend_tune.tune import predict as _predict
from ascend_tune.tune import ranges as _ranges
from ascend_tune.tune import run as _run
from ascend_tune.tune.explain import Explanation
from ascend_tune.tune.explain import explain as _explain
from ascend_tune.tune.predict import Prediction
from ascend_tune.tune.ranges import RangeOutcome, RangeRound
from ascend_tune.tune.run import CacheReport, LockCheck, PlannedShape, Progress, SearchResult
from ascend_tune.tune.shape import DEFAULT_BUDGET, DEFAULT_SEED, Seeds, TuneSettings

if TYPE_CHECKING:
    from ascend_tune.calibrate.fit import FitResult
    from ascend_tune.calibrate.validation import Validation

__all__ = [
    "DEFAULT_BUDGET", "DEFAULT_CHART_SHAPES", "DEFAULT_SEED", "AscendTuneError", "CacheReport",
    "CandidateOutcome", "Database", "EmitPlan", "Explanation", "FitResult", "HardwareProfile",
    "LockCheck", "MeasureOutcome", "MeasurePlan", "MeasureProgress", "Measurements",
    "OperatorSpec", "PlannedShape", "Prediction", "Progress", "RangeOutcome", "RangeRound",
    "ReportPage", "SearchResult", "Seeds", "Selected", "Validation", "calibrate",
    "calibration_refusals", "check", "check_locked", "check_search_options", "check_split",
    "check_writable", "collect_shape_sources", "collect_shapes", "emit", "emit_styles",
    "explain", "explain_results", "load_measurements", "load_profile", "load_spec", "measure",
    "measure_summary", "open_db", "parse_assignments", "parse_ranges", "parse_shape", "plan",
    "plan_measure", "predict", "prepare_emit", "probe", "profile_document", "profiles",
    "refuse", "render", "report", "results_inputs", "search", "search_range", "select",
    "shadowing_spec", "shape_key", "spec_refusal", "strategies", "tune", "validate",
    "with_attrs", "write_profile",
]

Shape = Mapping[str, int]

if not TYPE_CHECKING:
    def __getattr__(name: str) -> Any:  # the calibration types load scipy: only when asked
        module = {"FitResult": "fit", "Validation": "validation"}.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"ascend_tune.calibrate.{module}"), name)


def load_spec(ref: str | Path) -> OperatorSpec:
    """A built-in spec by name (``"matmul"``), a spec file, either with ``:VARIANT``."""
    return _load_spec(ref)


def shadowing_spec(ref: str | Path, spec: OperatorSpec) -> Path | None:
    """``operator_specs/NAME.yaml`` in the working folder when ``ref`` named a built-in and
    that file differs from the built-in that was loaded (it was not used)."""
    return _shadowing_file(ref, spec)


def results_inputs(results_path: PathLike) -> tuple[OperatorSpec, HardwareProfile]:
    """The spec and hardware profile a results file embeds (what it was tuned with); reads
    only the header, however large the file."""
    path = Path(results_path)
    head = results.read_head(path)
    try:
        spec = load_spec_text(head["spec"]["text"], f"{path} (embedded spec)",
                              head["spec"].get("variant"))
        hw = load_profile_data(head["hw"]["data"], f"{path} (embedded profile)")
    except (KeyError, TypeError, AttributeError):
        raise AscendTuneError(f"{path}: results file lacks the embedded spec or profile; "
                              "rerun `ascend-tune search`") from None
    return spec, hw


def load_profile(ref: str | Path) -> HardwareProfile:
    """A built-in hardware profile by name (``"ascend910b3"``) or a profile file."""
    return _load_profile(str(ref))


def strategies() -> list[str]:
    """The search strategies ``strategy`` may name besides ``"auto"``, in the CLI's order."""
    return list(STRATEGIES)


def emit_styles() -> dict[str, str]:
    """The TilingData styles ``emit`` takes: name -> what it declares."""
    return {name: s.doc for name, s in STYLES.items()}


def parse_assignments(text: str, what: str = "--set") -> dict[str, int]:
    """``"K=V,K=V"`` with integer values (``what`` names the input in errors)."""
    return _shapes.parse_assignments(text, what)


def parse_shape(text: str, spec: OperatorSpec | None = None, what: str = "--shape"
                ) -> dict[str, int]:
    """One shape ``"M=128,N=256,K=64"``; with ``spec`` checked and in the spec's order."""
    values = _shapes.parse_assignments(text, what)
    return _shapes.check_shape(spec, values, f"{what} {text}") if spec is not None else values


def shape_key(shape: Shape) -> str:
    """The text key of a shape (``"M=128,N=256"``), as results files and messages show it."""
    return _shapes.shape_key(shape)


def collect_shapes(spec: OperatorSpec, files: Sequence[PathLike] = (),
                   shapes: Sequence[str] = ()) -> list[dict[str, int]]:
    """The checked shapes of shape files (YAML, JSON, CSV) and ``"K=V,..."`` texts, in order."""
    return _shapes.collect(spec, _list(files), list(shapes))


def collect_shape_sources(spec: OperatorSpec, files: Sequence[PathLike] = (),
                          shapes: Sequence[str] = ()) -> tuple[list[dict[str, int]], list[str]]:
    """The checked shapes and shape ranges (as ``--shape-range`` texts, each checked and named
    by its file and line when bad) of shape files and ``"K=V,..."`` texts; either may be
    empty."""
    found = _shapes.collect_sources(spec, _list(files), list(shapes))
    for origin, text in found.ranges:
        _ranges.parse_range(spec, text, origin)
    return found.shapes, [text for _origin, text in found.ranges]


def check_search_options(*, strategy: str = "auto", budget: int = DEFAULT_BUDGET,
                         seed: int = DEFAULT_SEED, jobs: int = 1, top_k: int = 1) -> None:
    """Refuse options ``search`` cannot run with, before any work."""
    if strategy != "auto" and strategy not in STRATEGIES:
        raise AscendTuneError(f"--strategy '{strategy}' is not one of: auto, "
                              f"{', '.join(STRATEGIES)}")
    for name, value in (("--budget", budget), ("--jobs", jobs)):
        if value < 1:
            raise AscendTuneError(f"{name} must be at least 1, got {value}")
    if not 0 <= seed < 1 << 63:
        raise AscendTuneError(f"--seed must be between 0 and 2**63-1, got {seed}")
    if top_k < 1:
        raise AscendTuneError(f"--top-k must be at least 1, got {top_k}")


def _header(spec: OperatorSpec, hw: HardwareProfile, strategy: str, budget: int, seed: int,
            top_k: int) -> dict[str, Any]:
    return results.header(spec.name, spec.sha256, spec.source_text, hw.name, hw.sha256,
                          hw.data, strategy, seed, budget, spec.variant, top_k=top_k,
                          attrs=spec.attr_values)


def plan(spec: OperatorSpec, hw: HardwareProfile, shapes: Sequence[Shape],
         strategy: str = "auto", budget: int = DEFAULT_BUDGET) -> list[PlannedShape]:
    """Per shape: space size, strategy (``auto`` weighs the exact search against the
    heuristic at ``budget``), baseline latency; nothing is tuned (``--dry-run``)."""
    return _run.plan(spec, hw, [_shapes.check_shape(spec, s, "shape") for s in shapes],
                     strategy, budget)


def check_locked(spec: OperatorSpec, hw: HardwareProfile, shapes: Sequence[Shape],
                 output: str | Path | None, *, strategy: str = "auto",
                 budget: int = DEFAULT_BUDGET, seed: int = DEFAULT_SEED, top_k: int = 1,
                 fresh: bool = False, prune: bool = False,
                 ranges: Sequence[str] = (), target: float = _ranges.DEFAULT_TARGET,
                 max_shapes: int = _ranges.DEFAULT_MAX_SHAPES) -> LockCheck:
    """Whether ``search`` (with ``ranges``: ``search_range``) would leave ``output`` as it
    is (``--locked``); reads only."""
    output = _path(output)
    head = _header(spec, hw, strategy, budget, seed, top_k)
    if ranges:
        held = (_read_results(output).get("shapes", []) if output is not None
                and output.exists() else [])
        shapes = _ranges.replay(spec, [_ranges.parse_range(spec, r) for r in ranges],
                                [_shapes.check_shape(spec, s, "shape") for s in shapes], head,
                                held if isinstance(held, list) else [], seed=seed,
                                target=target, max_shapes=max_shapes)
    return _run.check_locked(output, head, [_shapes.shape_key(s) for s in shapes], fresh,
                             prune)


def search(spec: OperatorSpec, hw: HardwareProfile, shapes: Sequence[Shape], *,
           strategy: str = "auto", budget: int = DEFAULT_BUDGET, seed: int = DEFAULT_SEED,
           top_k: int = 1, jobs: int = 1, output: str | Path | None = None,
           fresh: bool = False, prune: bool = False, progress: Progress | None = None,
           executor: executors.Executor | None = None, db: Database | None = None
           ) -> SearchResult:
    """Tune every shape ``output`` does not hold yet, saving each; failures are not raised.
    The file keeps entries of shapes not in ``shapes`` unless ``prune``. With ``db`` (the
    tuning database, ``open_db``) a shape it holds under the same settings is served from it
    and every shape tuned is recorded there."""
    output = _path(output)
    check_search_options(strategy=strategy, budget=budget, seed=seed, jobs=jobs, top_k=top_k)
    checked = [_shapes.check_shape(spec, s, "shape") for s in shapes]
    head = _header(spec, hw, strategy, budget, seed, top_k)
    known, record, seeds = (_database.search_hooks(db, spec, hw, head["search"])
                            if db is not None else (None, None, None))
    out = _run.run_search(spec, hw, checked, TuneSettings(strategy, budget, seed, top_k), head,
                          jobs=jobs, output=output, fresh=fresh, prune=prune,
                          progress=progress, executor=executor,  # --fresh: nothing served
                          known=None if fresh else known, record=record, seeds_for=seeds)
    return SearchResult(head, checked, out.failures, out.times, out.interrupted, out.saved,
                        out.entries)


def tune(spec: OperatorSpec, hw: HardwareProfile, shapes: Sequence[Shape], *,
         strategy: str = "auto", budget: int = DEFAULT_BUDGET, seed: int = DEFAULT_SEED,
         output: str | Path | None = None, fresh: bool = False, prune: bool = False,
         jobs: int = 1, top_k: int = 1) -> list[dict[str, Any]]:
    """``search``, then its entries in the order of ``shapes``; a shape with no valid
    configuration raises (after the others are saved), an interrupt KeyboardInterrupt."""
    run = search(spec, hw, shapes, strategy=strategy, budget=budget, seed=seed, top_k=top_k,
                 jobs=jobs, output=output, fresh=fresh, prune=prune)
    if run.interrupted:
        raise KeyboardInterrupt
    if run.failures:
        raise AscendTuneError(run.failures[0])
    return run.entries()


def parse_ranges(spec: OperatorSpec, texts: Sequence[str]) -> list[_ranges.ShapeRange]:
    """Checked ``--shape-range`` texts (``"M=1:8192,N=4096"``)."""
    return [_ranges.parse_range(spec, t) for t in texts]


def search_range(spec: OperatorSpec, hw: HardwareProfile, ranges: Sequence[str], *,
                 shapes: Sequence[Shape] = (), target: float = _ranges.DEFAULT_TARGET,
                 max_shapes: int = _ranges.DEFAULT_MAX_SHAPES,
                 on_round: Callable[[RangeRound], None] | None = None, **options: Any
                 ) -> tuple[SearchResult, RangeOutcome]:
    """Tune ranges (``"M=1:8192,N=4096"``) and ``shapes``, the tuner picking shapes until the
    dispatch's held-out regret is within ``target`` (tune/ranges.py); ``options``: search's."""
    parsed = [_ranges.parse_range(spec, r) for r in ranges]
    fixed = [_shapes.check_shape(spec, s, "shape") for s in shapes]
    fresh = bool(options.pop("fresh", False))
    rounds = _ranges.RoundProgress(options.pop("progress", None) or Progress())
    tuner = _ranges.CumulativeTuner(
        lambda todo, first: search(spec, hw, todo, fresh=fresh and first,
                                   progress=rounds.round(todo), **options),
        cached=options.get("output") is not None)
    head = _header(spec, hw, options.get("strategy", "auto"),
                   options.get("budget", DEFAULT_BUDGET), options.get("seed", DEFAULT_SEED),
                   options.get("top_k", 1))
    outcome = _ranges.tune_range(spec, parsed, fixed, head, tuner,
                                 seed=options.get("seed", DEFAULT_SEED), target=target,
                                 max_shapes=max_shapes, on_round=on_round)
    return tuner.result(outcome.shapes), outcome


def explain(spec: OperatorSpec, hw: HardwareProfile, shape: Shape,
            overrides: Mapping[str, int] | None = None, *, shape_label: str = "shape",
            overrides_label: str = "overrides") -> Explanation:
    """The model's breakdown of the baseline configuration with ``overrides`` applied; an
    invalid configuration raises. The labels name the two inputs in error messages."""
    return _explain(spec, hw, _shapes.check_shape(spec, shape, shape_label), overrides,
                    overrides_label)


def explain_results(results_path: PathLike, shape: Shape,
                    overrides: Mapping[str, int] | None = None, *, shape_label: str = "shape",
                    overrides_label: str = "overrides") -> tuple[Explanation, Selected]:
    """``explain`` of what a results file's selection code runs for ``shape`` (the tuned
    winner for a tuned shape, else what the run-time dispatch picks), on the file's embedded
    spec and profile; ``overrides`` change that configuration."""
    path = Path(results_path)
    bundle = _emit.load_bundle(_read_results(path), str(path))
    checked = _shapes.check_shape(bundle.spec, shape, shape_label)
    chosen = bundle.selected(checked)
    why = _explain(bundle.spec, bundle.hw, checked, {**chosen.config, **(overrides or {})},
                   overrides_label)
    return why, chosen


@overload
def predict(spec: OperatorSpec, hw: HardwareProfile, shape: Shape,
            configs: Mapping[str, int]) -> Prediction: ...
@overload
def predict(spec: OperatorSpec, hw: HardwareProfile, shape: Shape,
            configs: Sequence[Mapping[str, int]]) -> list[Prediction]: ...
def predict(spec: OperatorSpec, hw: HardwareProfile, shape: Shape,
            configs: Mapping[str, int] | Sequence[Mapping[str, int]]
            ) -> Prediction | list[Prediction]:
    """Score one configuration (a mapping of parameter values; missing ones are the spec's
    baseline) or a sequence of them. Values must lie in their parameter's domain."""
    model = ShapeModel(spec, hw, _shapes.check_shape(spec, shape, "shape"))
    if isinstance(configs, Mapping):
        return _predict.score(model, [configs], ["config"])[0]
    if isinstance(configs, (str, bytes)) or not isinstance(configs, Sequence):
        raise AscendTuneError("configs: expected a mapping of parameter values or a sequence "
                              f"of them, got {type(configs).__name__}")
    return _predict.score(model, configs, [f"configs[{i}]" for i in range(len(configs))])


def select(results: PathLike | Mapping[str, Any] | Sequence[PathLike | Mapping[str, Any]],
           shape: Shape, *, aic: int | None = None, aiv: int | None = None,
           soc: str | None = None, hbm_bytes: int | None = None,
           refine_evals: int = _emit_refine.MAX_EVALS) -> Selected:
    """What the emitted selection code chooses for ``shape`` on a chip with ``aic`` / ``aiv``
    cores, SoC ``soc`` (e.g. ``"ascend910b"``; default: the first profile's) and ``hbm_bytes``
    of HBM: with several
    results files (one per profile), the profile the platform picks, then the exact tuned
    shape's winner, else the fastest valid candidate by the model, else the fallback walk,
    then improved by the run-time descent (at most ``refine_evals`` configurations, the
    emitted code's ``ASCEND_TUNE_REFINE_EVALS``; 0: none). The tests hold the compiled C++ to
    this."""
    many = (list(results) if isinstance(results, Sequence)
            and not isinstance(results, (Mapping, str)) else [results])
    bundles = [_emit.load_bundle(_read_results(Path(r)) if isinstance(r, (str, Path)) else r,
                                 str(r) if isinstance(r, (str, Path)) else "results")
               for r in many]
    if not bundles:
        raise AscendTuneError("select: give at least one results file")
    _emit_profiles.check_same_operator(bundles)
    default = next((b for b in bundles if soc is not None and
                    _emit_profiles.soc_version(b) == _emit_profiles.SOC_VERSIONS.get(soc)),
                   bundles[0])
    aic = _emit_profiles.cores(default)[0] if aic is None else aic
    aiv = _emit_profiles.cores(default)[1] if aiv is None else aiv
    chosen = bundles[_emit_profiles.pick(bundles, _emit_profiles.SOC_VERSIONS.get(soc or ""),
                                         aic, aiv, hbm_bytes)] if len(bundles) > 1 else bundles[0]
    return chosen.selected(_shapes.check_shape(chosen.spec, shape, "shape"), aic, aiv,
                           refine_evals)


def prepare_emit(results_path: PathLike | Sequence[PathLike], out_dir: PathLike, *,
                 style: str = "macro", op_host: bool = False, socs: Sequence[str] = (),
                 replace: bool = False, force: bool = False) -> EmitPlan:
    """The results files (one per profile) re-checked, the files rendered, no clash with the
    project, no profile its selection code serves dropped unless ``replace``."""
    out_dir = Path(out_dir)
    bundle, files = _emit.prepare(_paths(results_path), out_dir, style, op_host, tuple(socs),
                                  replace)
    snake = bundle.spec.snake_name
    return EmitPlan(out_dir, bundle.spec, files, f"op_host/{snake}.cpp" in files,
                    _emit.leftovers(out_dir, files, snake), _agree.emit_warnings(bundle, force))


def render(results_doc: Mapping[str, Any], *, style: str = "macro", op_host: bool = False,
           socs: Sequence[str] = ()) -> dict[str, str]:
    """The files ``emit`` would write (relative path -> text) for a results document."""
    bundle = _emit.load_bundle(results_doc, "results")
    return _emit.render(bundle, style, op_host=op_host, socs=tuple(socs))


def emit(results_path: PathLike | Sequence[PathLike], out_dir: PathLike, *,
         style: str = "macro", op_host: bool = False, socs: Sequence[str] = ()) -> list[str]:
    """``prepare_emit(...).write()``: the paths written (unchanged files are left alone)."""
    return prepare_emit(results_path, out_dir, style=style, op_host=op_host, socs=socs).write()


def check_writable(path: PathLike) -> None:
    """Refuse an output file that cannot be written (no such folder, a folder, read-only)."""
    results.check_writable(Path(path))


def check(files: PathLike | Sequence[PathLike], notes: list[str] | None = None) -> list[str]:
    """Problems in spec and hardware profile files, one line each (empty: all valid); a
    baseline that breaks on a sampled shape of the spec's domain is one. ``notes`` (if given)
    receives information lines: sampled shapes with no valid configuration at all."""
    report = check_report(_list(files))
    if notes is not None:
        notes.extend(report.notes)
    return report.problems


def profiles() -> list[dict[str, Any]]:
    """The headline numbers of every built-in hardware profile (``hw list``)."""
    return builtin_summaries()


def profile_document(hw: HardwareProfile) -> dict[str, Any]:
    """Every number of a profile with its source and confidence (``hw show --json``)."""
    return show_document(hw)


def report(results_paths: PathLike | Sequence[PathLike], output: PathLike, *,
           measurements: PathLike | Sequence[PathLike] = (),
           manifest: PathLike | None = None, where: str | None = None,
           chart_shapes: int = DEFAULT_CHART_SHAPES,
           dispatch_shapes: int = _report.DEFAULT_DISPATCH_SHAPES,
           db: Database | None = None) -> ReportPage:
    """Write the HTML report of results files (and ``measurements``, and the dispatch judged
    on ``dispatch_shapes`` unseen shapes per operator); needs matplotlib."""
    output = Path(output)
    _report.check_output(output)
    held = _database.report_knowledge(db)
    built = _report.build(_list(results_paths), _list(measurements), _path(manifest), where,
                          chart_shapes, dispatch_shapes, *held)
    results.write_atomic(output, built.html)
    return built
