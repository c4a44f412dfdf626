"""Render a results file into AscendC C++: TilingData header, host selection code, kernel
constants, and optionally a complete TilingFunc.

Python prepares every value (names checked as C++ identifiers by the spec loader, numbers
formatted, expressions rendered to C++); the Jinja templates only loop and branch, with
``StrictUndefined`` so a missing value is an error.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from ascend_tune import __version__, resources
from ascend_tune.errors import AscendTuneError
from ascend_tune.expr import CPP_RUNTIME, Expr, Kind, scalar_value
from ascend_tune.hardware import HardwareProfile, load_profile_data
from ascend_tune.spec import OperatorSpec, load_spec_text

STYLES = ("macro", "struct")
_SIZE = {"int8_t": 1, "uint8_t": 1, "int16_t": 2, "uint16_t": 2, "int32_t": 4, "uint32_t": 4,
         "int64_t": 8, "uint64_t": 8, "float": 4}
_FROM = re.compile(r"^input(\d+)\.(size|rows|last|dim(\d+))$")


def cpp_name(name: str) -> str:
    """Spec names in C++ get a prefix so they cannot collide with the code around them."""
    if name.startswith("hw."):
        return "hw_" + name[3:]
    if name.startswith("sizeof."):
        return "sizeof_" + name[7:]
    return "v_" + name


def cpp(e: Expr) -> str:
    return e.to_cpp(cpp_name)


def cpp_member(e: Expr, runtime: frozenset[str]) -> str:
    """Render reading spec names from a ``Values v`` (functions after Derive)."""
    def name(n: str) -> str:
        if n in runtime:
            return "v.coreNum"
        if n.startswith(("hw.", "sizeof.")):
            return cpp_name(n)
        return "v." + cpp_name(n)
    return e.to_cpp(name)


def _ctype(kind: Kind) -> str:
    return {Kind.INT: "int64_t", Kind.FLOAT: "double", Kind.BOOL: "bool"}[kind]


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"INT64_C({value})"
    text = repr(float(value))
    return text if ("." in text or "e" in text) else text + ".0"


@dataclass(frozen=True)
class Bundle:
    spec: OperatorSpec
    hw: HardwareProfile
    doc: Mapping[str, Any]
    digest: str


def load_bundle(doc: Mapping[str, Any], origin: str) -> Bundle:
    try:
        spec = load_spec_text(doc["spec"]["text"], f"{origin} (embedded spec)",
                              doc["spec"].get("variant"))
        hw = load_profile_data(doc["hw"]["data"], f"{origin} (embedded profile)")
    except (KeyError, TypeError):
        raise AscendTuneError(f"{origin}: results file lacks the embedded spec or profile; "
                              "rerun `ascend-tune search`") from None
    if not doc.get("shapes"):
        raise AscendTuneError(f"{origin}: results file holds no tuned shape")
    canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return Bundle(spec, hw, doc, hashlib.sha256(canonical.encode()).hexdigest())


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resources.data_dir("templates"))),
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
        keep_trailing_newline=True, autoescape=False)


def _ordered_fields(fields: Any) -> list[Any]:
    # Widest first: every field lands naturally aligned and the struct packs without holes,
    # so old and new metadef layouts and the kernel-side struct agree (ascendc_tiling.md §1.3).
    return sorted(fields, key=lambda f: -_SIZE[f.ctype])


def context(bundle: Bundle, style: str) -> dict[str, Any]:
    spec, hw = bundle.spec, bundle.hw
    shapes = sorted(bundle.doc["shapes"], key=lambda s: tuple(s["shape"].values()))
    snake = spec.snake_name
    side = spec.sides[0].core if len(spec.sides) == 1 else "cube"
    hw_used = sorted({n for e in _all_exprs(spec) for n in e.names if n.startswith("hw.")})
    runtime_cores = frozenset(f"hw.{s.core}_cores" for s in spec.sides)
    sizeof = spec.sizeof_env()
    nested_types = sorted({n.ctype for n in spec.tiling_nested})
    for shape_entry in shapes:
        if list(shape_entry["shape"]) != list(spec.shape_vars):
            raise AscendTuneError("results file shapes do not match the spec's variables")
    return {
        "version": __version__,
        "digest": bundle.digest,
        "spec_name": spec.name,
        "spec_sha": spec.sha256[:16],
        "hw_name": hw.name,
        "hw_sha": hw.sha256[:16],
        "op": spec.name,
        "snake": snake,
        "guard": snake.upper(),
        "struct": spec.tiling_struct,
        "style": style,
        "header_path": (f"{snake}_tiling.h" if style == "macro"
                        else f"../op_kernel/{snake}_tiling.h"),
        "fields": [{"name": f.name, "type": f.ctype,
                    "expr": cpp_member(f.value, runtime_cores)}
                   for f in _ordered_fields(spec.tiling_fields)],
        "nested": [{"name": n.name, "type": n.ctype,
                    "fields": [{"name": f.name, "type": f.ctype,
                                "expr": cpp_member(f.value, runtime_cores)}
                               for f in n.fields]} for n in spec.tiling_nested],
        "nested_types": nested_types,
        "shape_vars": [{"name": v, "cpp": cpp_name(v)} for v in spec.shape_vars],
        "params": [{"name": p, "cpp": cpp_name(p)} for p in spec.params],
        "derived": [{"name": n, "cpp": cpp_name(n), "type": _ctype(e.kind), "expr": cpp(e)}
                    for n, e in spec.derive],
        "constraints": [{"name": n, "expr": cpp(e)} for n, e in spec.constraints],
        "side_cores": [{"expr": cpp(s.cores)} for s in spec.sides],
        "hw_consts": [{"cpp": cpp_name(n), "type": "int64_t" if isinstance(hw[n[3:]], int)
                       else "double", "value": _literal(hw[n[3:]])}
                      for n in hw_used if n not in runtime_cores],
        "hw_runtime": [cpp_name(n) for n in sorted(runtime_cores)],
        "sizeof": [{"cpp": cpp_name(k), "value": v} for k, v in sorted(sizeof.items())],
        "baseline": [{"name": p, "cpp": cpp_name(p), "expr": cpp(e)}
                     for p, e in spec.baseline.items()],
        "block_dim": cpp_member(spec.block_dim, runtime_cores),
        "tiling_key": (cpp_member(spec.tiling_key, runtime_cores)
                       if spec.tiling_key is not None else "INT64_C(0)"),
        "workspace": (cpp_member(spec.workspace_bytes, runtime_cores)
                      if spec.workspace_bytes is not None else "INT64_C(0)"),
        "core_query": "GetCoreNumAic" if side == "cube" else "GetCoreNumAiv",
        "tuned": [{"shape": ", ".join(f"INT64_C({v})" for v in s["shape"].values()),
                   "config": ", ".join(f"INT64_C({s['best'][p]})" for p in spec.params),
                   "comment": ",".join(f"{k}={v}" for k, v in s["shape"].items())}
                  for s in shapes],
        "kernel_constants": [{"name": n, "type": _ctype(e.kind),
                              "value": _literal(scalar_value(e.evaluate({**hw.env(), **sizeof})))}
                             for n, e in spec.kernel_constants],
        "runtime": CPP_RUNTIME,
        "shape_from": _shape_from(spec),
    }


def _shape_from(spec: OperatorSpec) -> list[dict[str, str]] | None:
    out = []
    for v in spec.shape_vars:
        src = spec.shape_from.get(v)
        m = _FROM.match(src or "")
        if not m:
            return None
        getter = {"size": "GetShapeSize()",
                  "last": "GetDim(input->GetStorageShape().GetDimNum() - 1)",
                  "rows": "GetShapeSize() / input->GetStorageShape().GetDim("
                          "input->GetStorageShape().GetDimNum() - 1)"}.get(
            m.group(2), f"GetDim({m.group(3)})")
        out.append({"cpp": cpp_name(v), "input": m.group(1), "getter": getter})
    return out


def _all_exprs(spec: OperatorSpec) -> list[Expr]:
    exprs = [e for _, e in spec.derive] + [e for _, e in spec.constraints]
    exprs += [s.cores for s in spec.sides] + list(spec.baseline.values())
    exprs += [f.value for f in spec.tiling_fields]
    exprs += [f.value for n in spec.tiling_nested for f in n.fields]
    exprs += [spec.block_dim] + ([spec.tiling_key] if spec.tiling_key is not None else [])
    exprs += [spec.workspace_bytes] if spec.workspace_bytes is not None else []
    return exprs


def render(bundle: Bundle, style: str, with_tiling_func: bool) -> dict[str, str]:
    """Relative path -> file text for everything emit writes."""
    if style not in STYLES:
        raise AscendTuneError(f"--style '{style}' is not one of: {', '.join(STYLES)}")
    ctx = context(bundle, style)
    env = _environment()
    snake = ctx["snake"]
    files = {
        (f"op_host/{snake}_tiling.h" if style == "macro" else f"op_kernel/{snake}_tiling.h"):
            env.get_template(f"tiling_{style}.h.j2").render(ctx),
        f"op_host/{snake}_tiling_select.h": env.get_template("select.h.j2").render(ctx),
        f"op_kernel/{snake}_tuned_constants.h": env.get_template("constants.h.j2").render(ctx),
    }
    if with_tiling_func:
        if ctx["shape_from"] is None:
            raise AscendTuneError(f"--with-tiling-func needs 'from: inputN.size', inputN.rows, "
                                  f"inputN.last or inputN.dimD on every shape variable of "
                                  f"{ctx['op']}")
        files[f"op_host/{snake}_tiling_func.cpp"] = env.get_template(
            "tiling_func.cpp.j2").render(ctx)
    return files


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


def write(out_dir: Path, files: Mapping[str, str]) -> list[str]:
    """Write files whose content changed (unchanged files keep their timestamps)."""
    from ascend_tune.results import write_atomic

    written = []
    for rel, text in sorted(files.items()):
        path = out_dir / rel
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise AscendTuneError(f"{path.parent}: cannot create folder: {exc.strerror}") from None
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        write_atomic(path, text)
        written.append(str(path))
    return written
