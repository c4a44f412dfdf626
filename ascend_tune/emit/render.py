"""Render a results file into AscendC C++: TilingData header, host selection code, kernel
constants, and optionally the complete msOpGen host file (OpDef and TilingFunc).

Python prepares every value (names checked as C++ identifiers by the spec loader, numbers
formatted, expressions rendered to C++); the Jinja templates only loop and branch, with
``StrictUndefined`` so a missing value is an error.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from ascend_tune import __version__
from ascend_tune.base import cann, resources
from ascend_tune.base.errors import AscendTuneError
from ascend_tune.emit import attr_code, host_shape, meanings, profiles, refine, walk

# Bundle and load_bundle re-exported: callers read a results file through render
# (emit.load_bundle, emit.Bundle).
from ascend_tune.emit.bundle import ENTRY_FIELDS
from ascend_tune.emit.bundle import Bundle as Bundle
from ascend_tune.emit.bundle import load_bundle as load_bundle
from ascend_tune.emit.cpp_text import (
    RUNTIME_CORES,
    _bound,
    _comment,
    _ctype,
    _literal,
    cpp,
    cpp_member,
    cpp_name,
)
from ascend_tune.emit.styles import emit_style
from ascend_tune.expr import CPP_RUNTIME, Expr, scalar_value
from ascend_tune.hardware import HardwareProfile
from ascend_tune.model.dispatch import dispatch_model
from ascend_tune.model.dispatch_cpp import CPP_DISPATCH_RUNTIME
from ascend_tune.results.format import glob_escape
from ascend_tune.spec import Nested, OperatorSpec, launch
from ascend_tune.spec.shapes import shape_key

_CORE_VAR = {"cube": "aicNum", "vector": "aivNum"}


@functools.cache
def _environment() -> jinja2.Environment:
    # One per process: compiling the templates costs ~0.2 s, and `measure` renders the
    # headers of every candidate (the environment is read-only once built).
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resources.data_dir("templates"))),
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
        keep_trailing_newline=True, autoescape=False)


@dataclass(frozen=True)
class Slot:
    """One member of the emitted TilingData, in emitted order."""

    name: str
    ctype: str
    expr: str | None  # None for padding
    nested: Nested | None = None
    comment: tuple[str, ...] = ()  # the field's derivation (meanings.field_comment)


def layout(spec: OperatorSpec) -> tuple[list[Slot], int]:
    """Members in emitted order and the total size in bytes.

    Nested API structs first, then scalars widest first, so every member lands naturally
    aligned without holes and the macro class, the build's generated kernel struct and the
    struct-style header agree byte for byte; then padding to a multiple of 8 bytes, which
    the replay generator needs (docs/spec_reference.md, CANN facts)."""
    slots: list[Slot] = []
    offset = 0
    for n in spec.tiling_nested:
        names, ctype = cann.NESTED_TYPES[n.ctype]
        offset = _align(offset, cann.field_bytes(ctype)) + len(names) * cann.field_bytes(ctype)
        slots.append(Slot(n.name, n.ctype, None, n))
    for f in sorted(spec.tiling_fields, key=lambda f: -cann.field_bytes(f.ctype)):
        offset = _align(offset, cann.field_bytes(f.ctype)) + cann.field_bytes(f.ctype)
        slots.append(Slot(f.name, f.ctype, attr_code.field_cpp(spec, f),
                          comment=tuple(meanings.field_comment(spec, f))))
    pad = 0
    while offset % cann.TILING_ALIGN_BYTES:
        size = next(s for s in (4, 2, 1) if offset % s == 0
                    and offset + s <= _align(offset, cann.TILING_ALIGN_BYTES))
        slots.append(Slot(f"{cann.PAD_FIELD_PREFIX}{pad}", f"uint{8 * size}_t", None))
        offset += size
        pad += 1
    return slots, offset


def _align(offset: int, size: int) -> int:
    return -(-offset // size) * size


def context(bundle: Bundle, style: str, socs: tuple[str, ...] = ()) -> dict[str, Any]:
    """Everything a template reads for one operator on one profile."""
    return {**_identity_context(bundle, style), **_expression_context(bundle),
            **_selection_context(bundle), **_op_host_context(bundle, socs)}


def _identity_context(bundle: Bundle, style: str) -> dict[str, Any]:
    """Names, digests, kernel mode and the TilingData layout."""
    spec, hw = bundle.spec, bundle.hw
    snake = spec.snake_name
    slots, size = layout(spec)
    mode = spec.mode
    return {
        "version": __version__,
        "digest": bundle.digest,
        "spec_name": _comment(spec.display_name),
        "spec_sha": spec.sha256[:16],
        "hw_name": _comment(hw.name),
        "hw_sha": hw.sha256[:16],
        "op": spec.name,
        "snake": snake,
        "ns": f"{snake}_tiling",
        "guard": snake.upper(),
        "struct": spec.tiling_struct,
        "struct_bytes": size,
        "style": style,
        "kernel_mode": mode.name,
        "kernel_mode_summary": mode.summary,
        "kernel_type": mode.kernel_type,
        "lib_api_workspace": spec.system_workspace == "lib_api",
        "tiling_header": emit_style(style).include_from_host(snake),
        "slots": [{"name": s.name, "type": s.ctype, "expr": s.expr, "comment": s.comment,
                   "pad": s.expr is None
                   and s.nested is None, "nested": None if s.nested is None else
                   [{"name": f.name, "type": f.ctype, "expr": cpp_member(f.value)}
                    for f in s.nested.fields]} for s in slots],
        "has_nested": bool(spec.tiling_nested),
    }


def _expression_context(bundle: Bundle) -> dict[str, Any]:
    """The spec's expressions as C++: shape and parameter names, derived values, checks,
    the hardware numbers they read, the baseline, block dim, tiling key and workspace."""
    spec, hw = bundle.spec, bundle.hw
    runtime = set(RUNTIME_CORES)
    hw_used = sorted({n for e in _all_exprs(spec) for n in e.names if n.startswith("hw.")})
    sizeof = spec.sizeof_env()
    return {
        "shape_vars": [{"name": v, "cpp": cpp_name(v), "min": spec.shape_min[v],
                        "max": spec.shape_max.get(v)} for v in spec.shape_vars],
        "params": [{"name": p, "cpp": cpp_name(p)} for p in spec.params],
        "derived": [{"name": n, "cpp": cpp_name(n), "type": _ctype(e.kind), "expr": cpp(e)}
                    for n, e in spec.model_derive],
        "constraints": [{"name": n, "expr": cpp(e)} for n, e in spec.constraints],
        "core_checks": [{"name": n, "expr": cpp(e), "limit": _CORE_VAR[core]}
                        for n, e, core in launch.core_limit_names(spec)],
        "range_checks": [{"name": r.name, "expr": cpp(r.expr), "lo": _bound(r.lo),
                          "hi": _bound(r.hi)} for r in launch.range_checks(spec)],
        "hw_consts": [{"cpp": cpp_name(n), "type": "int64_t" if isinstance(hw[n[3:]], int)
                       else "double", "value": _literal(hw[n[3:]])}
                      for n in hw_used if n not in runtime],
        "hw_runtime": [{"cpp": cpp_name(n), "var": var} for n, var in RUNTIME_CORES.items()],
        "sizeof": [{"cpp": cpp_name(k), "value": v} for k, v in sorted(sizeof.items())],
        "baseline": [{"name": p, "cpp": cpp_name(p), "expr": cpp(e)}
                     for p, e in spec.baseline.items()],
        "block_dim": cpp_member(spec.block_dim),
        "tiling_key": (cpp_member(spec.tiling_key)
                       if spec.tiling_key is not None else "INT64_C(0)"),
        "workspace": (cpp_member(spec.workspace_bytes)
                      if spec.workspace_bytes is not None else "INT64_C(0)"),
        "kernel_constants": [{"name": n, "type": _ctype(e.kind),
                              "value": _literal(scalar_value(e.evaluate({**hw.env(), **sizeof})))}
                             for n, e in spec.kernel_constants],
    }


def _selection_context(bundle: Bundle) -> dict[str, Any]:
    """The tuned table, the candidates and the run-time selection's model, walk and descent."""
    spec = bundle.spec
    model = dispatch_model(spec, bundle.hw)
    return {
        "tuned": [{"shape": ", ".join(_literal(v) for v in shape.values()),
                   "config": ", ".join(_literal(best[p]) for p in spec.params),
                   "comment": shape_key(shape)}
                  for shape, best in bundle.sorted_shapes()],
        "runtime": CPP_RUNTIME + CPP_DISPATCH_RUNTIME,
        "candidates": [", ".join(_literal(c[p]) for p in spec.params)
                       for c in bundle.candidates()],
        "predict": model.cpp("PredictUs"),
        "check_step": walk.render_steps_cpp(spec, cpp_member, cpp_name,
                                            {"cube": "v.aicNum", "vector": "v.aivNum"}),
        "domains": walk.render_domains_cpp(spec, cpp),
        "walk_keep": walk.KEEP,
        "walk_visits": walk.MAX_VISITS,
        "refine_evals": refine.MAX_EVALS,
        "refine_pairs": refine.coupled_pairs(spec),
        "refine_split": refine.split_cpp(spec, cpp_name),
        "resplit_evals": refine.RESPLIT_EVALS,
        "shape_from": host_shape.shape_from(spec),
    }


def _op_host_context(bundle: Bundle, socs: tuple[str, ...]) -> dict[str, Any]:
    """The op_host source's inputs, outputs, attributes, accepted shapes and SoCs."""
    spec = bundle.spec
    return {
        "inputs": [{"name": n, "dtype": cann.GE_DTYPES[spec.dtypes[n]]} for n in spec.io_inputs],
        "outputs": [{"name": o.name, "dtype": cann.GE_DTYPES[spec.dtypes[o.name]],
                     "like": None if o.like is None else spec.io_inputs.index(o.like),
                     "dims": [{"input": spec.io_inputs.index(t), "dim": d} for t, d in o.dims]}
                    for o in spec.io_outputs],
        **attr_code.context(spec),
        "shape_multiple": dict(spec.shape_multiple),
        "socs": list(socs),
        "nested": False,  # render only the per-profile body (several profiles in one file)
        "profiles": [],  # with several profiles: their bodies and how the platform picks one
        "arches": [],  # kernel constants per NpuArch when profiles of several archs differ
    }


def _all_exprs(spec: OperatorSpec) -> list[Expr]:
    exprs = [e for _, e in spec.derive] + [e for _, e in spec.constraints]
    exprs += [s.cores for s in spec.sides] + list(spec.baseline.values())
    exprs += [f.value for f in spec.tiling_fields]
    exprs += [f.value for n in spec.tiling_nested for f in n.fields]
    exprs += [spec.block_dim] + ([spec.tiling_key] if spec.tiling_key is not None else [])
    exprs += [spec.workspace_bytes] if spec.workspace_bytes is not None else []
    return exprs


def default_socs(hw: HardwareProfile) -> tuple[str, ...]:
    soc = cann.PROFILE_SOCS.get(hw.name)
    return (soc,) if soc else ()


def render(bundle: Bundle, style: str, op_host: bool = False,
           socs: tuple[str, ...] = (), banner: Mapping[str, str] | None = None
           ) -> dict[str, str]:
    """Relative path -> file text for everything emit writes.

    ``op_host`` adds the complete msOpGen host file ``op_host/<op>.cpp`` (OpDef, InferShape,
    InferDataType, a static TilingFunc), registered for ``socs`` (default: the profile's SoC).
    """
    emit_as = emit_style(style)
    socs = socs or default_socs(bundle.hw)
    for soc in socs:
        if not SOC_NAME.fullmatch(soc):
            raise AscendTuneError(f"--soc '{soc:.40}' is not a SoC name such as ascend910b")
    ctx = {**context(bundle, style, socs), **(banner or {})}
    env = _environment()
    snake = ctx["snake"]
    files = {
        emit_as.header_path(snake): env.get_template(emit_as.template).render(ctx),
        f"op_host/{snake}_tiling_select.h": env.get_template("select.h.j2").render(ctx),
        f"op_kernel/{snake}_tuned_constants.h": env.get_template("constants.h.j2").render(ctx),
    }
    if op_host:
        spec = bundle.spec
        if ctx["shape_from"] is None:
            raise AscendTuneError(f"--op-host needs 'from: inputN.size', inputN.rows, "
                                  f"inputN.last or inputN.dimD on every shape variable of "
                                  f"{spec.name}")
        if not spec.io_inputs:
            raise AscendTuneError(f"--op-host needs an 'io' section (inputs and outputs of the "
                                  f"OpDef) in the {spec.name} spec")
        if not socs:
            raise AscendTuneError(f"--op-host: no SoC known for profile {bundle.hw.name}; "
                                  "pass --soc (e.g. --soc ascend910b)")
        files[f"op_host/{snake}.cpp"] = env.get_template("op_host.cpp.j2").render(ctx)
    return files


def render_all(bundles: Sequence[Bundle], style: str, op_host: bool = False,
               socs: tuple[str, ...] = ()) -> dict[str, str]:
    """:func:`render` for one or several profiles of one operator (:mod:`.profiles`): the
    TilingData header, constants and host file must come out the same for every profile; the
    selection file holds each profile's tables in its own namespace."""
    if len(bundles) == 1:
        return render(bundles[0], style, op_host, socs)
    profiles.check_same_operator(bundles)
    socs = socs or tuple(dict.fromkeys(s for b in bundles for s in default_socs(b.hw)))
    banner = profiles.merged_banner(bundles)
    per = [render(b, style, op_host, socs, banner) for b in bundles]
    select_rel = f"op_host/{bundles[0].spec.snake_name}_tiling_select.h"
    const_rel = f"op_kernel/{bundles[0].spec.snake_name}_tuned_constants.h"
    for rel, text in per[0].items():
        for b, other in zip(bundles[1:], per[1:], strict=True):
            if rel not in (select_rel, const_rel) and other[rel] != text:
                raise AscendTuneError(
                    f"{rel} differs between profiles {bundles[0].hw.name} and {b.hw.name} "
                    "(kernel constants or tiling that depend on the chip); one kernel binary "
                    "cannot serve both: emit them into separate projects")
    env = _environment()
    rows = []
    for i, b in enumerate(bundles):
        body = env.get_template("select.h.j2").render({**context(b, style, socs),
                                                         "nested": True})
        aic, aiv = profiles.cores(b)
        rows.append({"ns": profiles.namespace(i, b), "name": _comment(b.hw.name), "body": body,
                     "soc": profiles.soc_version(b), "aic": aic, "aiv": aiv,
                     "hbm": profiles.hbm_bytes(b)})
    ctx = {**context(bundles[0], style, socs), **banner, "profiles": rows}
    out = {**per[0], select_rel: env.get_template("select.h.j2").render(ctx)}
    arches = profiles.arch_sections(bundles, [p[const_rel] for p in per],
                                    [context(b, style, socs) for b in bundles])
    if arches:
        out[const_rel] = env.get_template("constants.h.j2").render({**ctx, "arches": arches})
    return out


SOC_NAME = re.compile(r"ascend[0-9a-z_]{1,24}")
_DEFINES = re.compile(r"BEGIN_TILING_DATA_DEF\((\w+)\)|^struct (\w+) \{", re.MULTILINE)
_REGISTERS = re.compile(r"REGISTER_TILING_DATA_CLASS\((\w+), *(\w+)\)")


def project_conflicts(out_dir: Path, files: Mapping[str, str]) -> list[str]:
    """Tiling headers already in the project that would clash with ``files`` in one library:
    the same TilingData class name defined by another header (an ODR violation; metadef
    reports "tiling struct conflict"), or the same operator registered twice."""
    ours: dict[str, str] = {}
    our_ops: set[str] = set()
    for rel, text in files.items():
        if rel.endswith("_tiling.h"):
            ours.update({m.group(1) or m.group(2): rel for m in _DEFINES.finditer(text)})
            our_ops.update(m.group(1) for m in _REGISTERS.finditer(text))
    problems = []
    for folder in ("op_host", "op_kernel"):
        for path in sorted((out_dir / folder).glob("*_tiling.h")):
            rel = f"{folder}/{path.name}"
            if rel in files:
                continue
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            for m in _DEFINES.finditer(text):
                name = m.group(1) or m.group(2)
                if name in ours and path.name == Path(ours[name]).name:
                    problems.append(f"{path} is this operator's header from an emit in the other "
                                    f"style; delete it to switch styles (one project holds one)")
                elif name in ours:
                    problems.append(f"{path} already defines tiling class {name}, which "
                                    f"{ours[name]} would define again in the same project; two "
                                    "operators in one project need distinct tiling classes "
                                    "(rename tiling.struct in the spec)")
            for m in _REGISTERS.finditer(text):
                if m.group(1) in our_ops:
                    problems.append(f"{path} already registers tiling data for operator "
                                    f"{m.group(1)}")
    return problems


def check(out_dir: Path, files: Mapping[str, str]) -> list[str]:
    """One report per stale or missing file (with a short diff); empty when up to date."""
    reports = []
    for rel, text in sorted(files.items()):
        path = out_dir / rel
        if not path.exists():
            reports.append(f"missing: {path}")
            continue
        try:
            current = path.read_text(encoding="utf-8")
        except OSError as exc:
            reports.append(f"unreadable: {path}: {exc.strerror}")
            continue
        if current != text:
            diff = list(difflib.unified_diff(current.splitlines(), text.splitlines(),
                                             f"{path} (on disk)", f"{path} (would write)",
                                             lineterm="", n=1))
            shown = "\n".join(diff[:12]) + ("\n  ..." if len(diff) > 12 else "")
            reports.append(f"stale: {path}\n{shown}")
    return reports


BANNER_START = "// Generated by ascend-tune "


def generated_here(out_dir: Path, snake: str) -> list[str]:
    """Relative paths of files in the project that ascend-tune generated for ``snake`` (by
    name and banner), whatever options wrote them."""
    found = []
    for folder in ("op_host", "op_kernel"):
        for path in sorted((out_dir / folder).glob(f"{glob_escape(snake)}*")):
            if not path.is_file() or path.is_symlink():
                continue
            try:
                with path.open(encoding="utf-8", errors="replace") as fh:
                    first = fh.readline()
            except OSError:
                continue
            if first.startswith(BANNER_START):
                found.append(f"{folder}/{path.name}")
    return found


def leftovers(out_dir: Path, files: Mapping[str, str], snake: str) -> list[str]:
    """Generated files of this operator that the current options would not write (another
    style, an option dropped, an older version's file names)."""
    return [rel for rel in generated_here(out_dir, snake) if rel not in files]


def write(out_dir: Path, files: Mapping[str, str],
          removed_temps: list[Path] | None = None) -> list[str]:
    """Write files whose content changed (unchanged files keep their timestamps). Nothing is
    written through a symlink that leads outside ``out_dir``. Temp files a killed emit left
    beside these files are removed first (appended to ``removed_temps``)."""
    from ascend_tune.results.format import remove_dead_writers_temps, write_atomic

    root = out_dir.resolve()
    for rel in sorted(files):
        target = (out_dir / rel).resolve()
        if not target.is_relative_to(root):
            raise AscendTuneError(f"{out_dir / rel}: resolves to {target}, outside {out_dir} "
                                  "(a symlink); refusing to write there")
    written = []
    for rel, text in sorted(files.items()):
        path = out_dir / rel
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise AscendTuneError(f"{path.parent}: cannot create folder: {exc.strerror}") from None
        left = remove_dead_writers_temps(path)
        if removed_temps is not None:
            removed_temps.extend(left)
        if path.exists() and path.read_text(encoding="utf-8", errors="replace") == text:
            continue
        write_atomic(path, text)
        written.append(str(path))
    return written


def prepare(results_paths: Path | Sequence[Path], out_dir: Path, style: str = "macro",
            op_host: bool = False, socs: tuple[str, ...] = (), replace: bool = False
            ) -> tuple[Bundle, dict[str, str]]:
    """Everything ``emit`` checks before writing: the results files re-checked (one per
    profile of one operator), the files rendered (a host file emitted earlier stays included),
    no clash with the project, no profile the project's selection code serves dropped unless
    ``replace``."""
    from ascend_tune.results import format as results

    paths = [results_paths] if isinstance(results_paths, Path) else list(results_paths)
    if not paths:
        raise AscendTuneError("emit: give at least one results file")
    bundles = [load_bundle(results.read_all(p, ENTRY_FIELDS), str(p)) for p in paths]
    if out_dir.exists() and not out_dir.is_dir():
        raise AscendTuneError(f"{out_dir}: exists and is not a folder")
    snake = bundles[0].spec.snake_name
    op_host = op_host or f"op_host/{snake}.cpp" in generated_here(out_dir, snake)
    files = render_all(bundles, style, op_host=op_host, socs=socs)
    conflicts = project_conflicts(out_dir, files)
    if conflicts:
        raise AscendTuneError(conflicts[0])
    profiles.check_replacing(out_dir, bundles, replace)
    return bundles[0], files


@dataclass(frozen=True)
class EmitPlan:
    """The files ``emit`` would write into ``out_dir``, checked against the project."""

    out_dir: Path
    spec: OperatorSpec  # embedded in the results file
    files: dict[str, str]  # relative path -> text
    op_host: bool  # the msOpGen host file is among them (asked for, or emitted earlier)
    leftovers: list[str]  # relative paths of files generated earlier these would not write
    warnings: tuple[str, ...] = ()  # check's refusal under --force, sample-named fields

    def __repr__(self) -> str:  # short: ``files`` holds every rendered text
        return (f"EmitPlan({str(self.out_dir)!r}, {self.spec.display_name!r}, "
                f"files={sorted(self.files)}, op_host={self.op_host})")

    def stale(self) -> list[str]:
        """One report per stale or missing file (``stale: PATH`` + a short diff)."""
        return check(self.out_dir, self.files)

    def write(self, removed_temps: list[Path] | None = None) -> list[str]:
        """Write the files whose content changed; the paths written. Temp files a killed emit
        left beside them are removed (and appended to ``removed_temps``)."""
        return write(self.out_dir, self.files, removed_temps)
