"""Hardware profiles: every number the model uses, each with its source and confidence.

A profile is YAML. Leaves are ``{value, source, confidence}``; a profile may start from another
with ``base: NAME`` and override single leaves, which is how the 910B variants share the 910B3
numbers and how a user overrides one bandwidth without copying a file.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ascend_tune import resources, schema
from ascend_tune.errors import ProfileError, did_you_mean
from ascend_tune.expr import Kind
from ascend_tune.yamlio import KeyPath, load_yaml

CONFIDENCE = ("high", "med", "low")
TRANSFER_PATHS = ("gm_to_l1", "gm_to_ub", "ub_to_gm", "l1_to_l0a", "l1_to_l0b", "l0c_to_gm")
DTYPES = ("float16", "bfloat16", "float32", "hf32", "int8", "int32")
VECTOR_CLASSES = ("unary", "binary", "exp", "div", "reduce", "fma", "sigmoid", "tanh", "erf",
                  "cast")
# Two-source vector classes read two operands per repeat and pay the UB bank-conflict factor.
TWO_SOURCE_CLASSES = frozenset({"binary", "fma"})


def _leaf(types: tuple[str, ...], doc: str) -> schema.Obj:
    return schema.Obj(
        fields={
            "value": (schema.Scalar(types) if types else schema.Anything(), True),
            "source": (schema.Scalar(("string",)), True),
            "confidence": (schema.Scalar(("string",), enum=CONFIDENCE), True),
            "note": (schema.Scalar(("string",)), False),
        },
        doc=doc,
    )


_INT = ("integer",)
_NUM = ("number",)

# (section, key) -> (value types, doc). Sections become hw.<key> names in expressions.
SCALARS: dict[str, dict[str, tuple[tuple[str, ...], str]]] = {
    "chip": {
        "arch": (_INT, "NpuArch (2201 = 910B, 2002 = 310P, 3510 = 950)"),
        "clock_mhz": (_NUM, "AI core clock in MHz"),
        "cube_cores": (_INT, "AIC (cube) cores"),
        "vector_cores": (_INT, "AIV (vector) cores; AI cores on coupled chips"),
    },
    "memory": {
        "l1_bytes": (_INT, "L1 buffer per AIC"),
        "l0a_bytes": (_INT, "L0A per AIC"),
        "l0b_bytes": (_INT, "L0B per AIC"),
        "l0c_bytes": (_INT, "L0C per AIC"),
        "ub_bytes": (_INT, "Unified Buffer per AIV"),
        "bt_bytes": (_INT, "BiasTable"),
        "fb_bytes": (_INT, "FixPipe buffer"),
        "l2_bytes": (_INT, "L2 cache (chip)"),
        "hbm_bandwidth_gbps": (_NUM, "aggregate GM bandwidth, GB/s (1e9)"),
        "l2_bandwidth_gbps": (_NUM, "aggregate L2 bandwidth, GB/s (1e9)"),
        "gm_align_bytes": (_INT, "GM alignment that reaches full bandwidth"),
        "gm_unaligned_efficiency": (_NUM, "bandwidth fraction when rows are not aligned"),
        "ub_block_bytes": (_INT, "UB DataBlock size; transfers move whole blocks"),
    },
    "cube": {
        "fractal_mn": (_INT, "fractal M and N (16)"),
        "mmad_overhead_cycles": (_NUM, "per-Mmad instruction overhead"),
    },
    "vector": {
        "repeat_bytes": (_INT, "bytes per vector repeat"),
        "max_repeat": (_INT, "repeats per instruction"),
        "issue_cycles": (_NUM, "issue overhead per vector instruction"),
        "bank_conflict_factor": (_NUM, "slowdown of two-source ops from UB bank conflicts"),
    },
    "scalar": {
        "loop_iteration_cycles": (_NUM, "scalar cost per loop iteration"),
        "sync_cycles": (_NUM, "set/wait flag cost per ping-pong handoff"),
    },
    "launch": {
        "head_base_us": (_NUM, "kernel head overhead, constant part"),
        "head_full_chip_us": (_NUM, "head overhead added at full core count (scales linearly)"),
        "mix_extra_us": (_NUM, "extra launch cost of MIX (cube + vector) kernels"),
    },
}
TABLES: dict[str, dict[str, str]] = {
    "cube": {"k0": "K elements per fractal, per dtype",
             "cycles_per_fractal": "cycles per 16 x 16 x k0 fractal, per dtype"},
    "vector": {"cycles_per_repeat": "class -> {element bytes: cycles per repeat}"},
}


def _profile_schema(partial: bool) -> schema.Obj:
    sections: dict[str, tuple[schema.Node, bool]] = {}
    for section, keys in SCALARS.items():
        fields: dict[str, tuple[schema.Node, bool]] = {
            k: (_leaf(t, doc), not partial) for k, (t, doc) in keys.items()}
        for k, doc in TABLES.get(section, {}).items():
            fields[k] = (_leaf((), doc), not partial)
        sections[section] = (schema.Obj(fields=fields), not partial)
    transfer = schema.Obj(fields={
        "latency_cycles": (_leaf(_NUM, "fixed cycles per transfer"), not partial),
        "bandwidth_curve": (_leaf((), "[[bytes, bytes/cycle], ...] interpolated"), not partial),
    })
    sections["transfers"] = (schema.Obj(fields={p: (transfer, not partial)
                                                for p in TRANSFER_PATHS}), not partial)
    return schema.Obj(fields={
        "name": (schema.Scalar(("string",)), True),
        "base": (schema.Scalar(("string",), doc="profile to start from"), False),
        "description": (schema.Scalar(("string",)), False),
        "sources": (schema.Obj(extra=schema.Scalar(("string",))), False),
        **sections,
        "calibration": (schema.Anything(doc="written by `ascend-tune calibrate`"), False),
    }, doc="ascend-tune hardware profile")


PROFILE_SCHEMA = _profile_schema(partial=True)


@dataclass(frozen=True)
class TransferPath:
    latency_cycles: float
    curve_bytes: np.ndarray
    curve_bytes_per_cycle: np.ndarray

    def bandwidth(self, nbytes: Any) -> Any:
        """Per-core bandwidth in bytes/cycle for a transfer of ``nbytes`` (interpolated)."""
        return np.interp(nbytes, self.curve_bytes, self.curve_bytes_per_cycle)


@dataclass(frozen=True)
class HardwareProfile:
    name: str
    description: str
    scalars: Mapping[str, float | int]
    transfers: Mapping[str, TransferPath]
    k0: Mapping[str, int]
    cycles_per_fractal: Mapping[str, float]
    vector_cycles_per_repeat: Mapping[str, Mapping[int, float]]
    data: Mapping[str, Any]  # merged YAML, for `hw show` and hashing
    sha256: str

    def __getitem__(self, key: str) -> float | int:
        return self.scalars[key]

    @property
    def clock_hz(self) -> float:
        return float(self.scalars["clock_mhz"]) * 1e6

    @property
    def hbm_bytes_per_cycle(self) -> float:
        return float(self.scalars["hbm_bandwidth_gbps"]) * 1e9 / self.clock_hz

    @property
    def l2_bytes_per_cycle(self) -> float:
        return float(self.scalars["l2_bandwidth_gbps"]) * 1e9 / self.clock_hz

    def symbols(self) -> dict[str, Kind]:
        return {f"hw.{k}": (Kind.INT if isinstance(v, int) else Kind.FLOAT)
                for k, v in self.scalars.items()}

    def env(self) -> dict[str, float | int]:
        return {f"hw.{k}": v for k, v in self.scalars.items()}

    def cube_macs_per_cycle(self, dtype: str) -> float:
        fractal = int(self.scalars["fractal_mn"])
        return fractal * fractal * self.k0[dtype] / self.cycles_per_fractal[dtype]

    def scaled(self, factor: float) -> HardwareProfile:
        """A uniformly faster copy (clock, bandwidths): used by model invariant tests."""
        scalars = dict(self.scalars)
        for key in ("clock_mhz", "hbm_bandwidth_gbps", "l2_bandwidth_gbps"):
            scalars[key] = float(scalars[key]) * factor
        return HardwareProfile(f"{self.name}x{factor}", self.description, scalars, self.transfers,
                               self.k0, self.cycles_per_fractal, self.vector_cycles_per_repeat,
                               self.data, self.sha256)


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        is_leaf = isinstance(value, dict) and "value" in value
        if isinstance(value, dict) and isinstance(out.get(key), dict) and not is_leaf:
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _read_chain(ref: str, seen: tuple[str, ...]) -> tuple[dict[str, Any], list[str]]:
    """Load a profile and its bases; return merged data and the file names involved."""
    path = resources.resolve("hw_profiles", ref)
    if not path.exists():
        known = resources.builtin_names("hw_profiles")
        raise ProfileError(f"hardware profile '{ref}' not found{did_you_mean(ref, known)}; "
                           f"built-in: {', '.join(known)}")
    origin = str(path)
    if origin in seen:
        raise ProfileError(f"{origin}: base profiles form a cycle: {' -> '.join(seen)}")
    data, lines = load_yaml(path, "hardware profile")
    errors = validate_profile_data(data, origin, lines, partial=True)
    if errors:
        raise ProfileError(errors[0])
    base_ref = data.get("base")
    if base_ref is None:
        return data, [origin]
    # A relative base path is relative to the profile that names it.
    base_path = path.parent / base_ref
    base_arg = str(base_path) if base_path.suffix in (".yaml", ".yml") else base_ref
    base, files = _read_chain(base_arg, (*seen, origin))
    merged = _merge(base, {k: v for k, v in data.items() if k != "base"})
    return merged, [*files, origin]


def validate_profile_data(data: Any, origin: str, lines: Mapping[KeyPath, int],
                          partial: bool) -> list[str]:
    errors = schema.validate(data, _profile_schema(partial), origin, lines)
    if errors or partial:
        return errors
    return _check_values(data, origin)


def _check_values(data: Mapping[str, Any], origin: str) -> list[str]:
    errors = []
    for section, keys in SCALARS.items():
        for key in keys:
            value = data[section][key]["value"]
            if value < 0 or (key in ("clock_mhz", "cube_cores", "vector_cores") and value <= 0):
                errors.append(f"{origin}: {section}.{key}: must be positive, got {value}")
    for path in TRANSFER_PATHS:
        curve = data["transfers"][path]["bandwidth_curve"]["value"]
        ok = (isinstance(curve, list) and curve and all(
            isinstance(p, list) and len(p) == 2 and all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 for x in p)
            for p in curve))
        if not ok:
            errors.append(f"{origin}: transfers.{path}.bandwidth_curve: expected a non-empty "
                          "list of [bytes, bytes_per_cycle] pairs of positive numbers")
        elif any(a[0] >= b[0] for a, b in itertools.pairwise(curve)):
            errors.append(f"{origin}: transfers.{path}.bandwidth_curve: sizes must increase")
    for table, keyset in (("k0", DTYPES), ("cycles_per_fractal", DTYPES)):
        value = data["cube"][table]["value"]
        if not isinstance(value, dict):
            errors.append(f"{origin}: cube.{table}: expected a mapping dtype -> number")
            continue
        for key, num in value.items():
            if key not in keyset:
                errors.append(f"{origin}: cube.{table}.{key}: unknown dtype"
                              f"{did_you_mean(key, keyset)}; allowed: {', '.join(keyset)}")
            elif not isinstance(num, (int, float)) or isinstance(num, bool) or num <= 0:
                errors.append(f"{origin}: cube.{table}.{key}: must be a positive number")
    cpr = data["vector"]["cycles_per_repeat"]["value"]
    if not isinstance(cpr, dict):
        errors.append(f"{origin}: vector.cycles_per_repeat: expected class -> {{bytes: cycles}}")
    else:
        for cls, per in cpr.items():
            if cls not in VECTOR_CLASSES:
                errors.append(f"{origin}: vector.cycles_per_repeat.{cls}: unknown class"
                              f"{did_you_mean(cls, VECTOR_CLASSES)}")
            elif not isinstance(per, dict) or not all(
                    str(k) in ("1", "2", "4", "8") and isinstance(v, (int, float)) and v > 0
                    for k, v in per.items()):
                errors.append(f"{origin}: vector.cycles_per_repeat.{cls}: expected "
                              "{element bytes (1, 2, 4, 8): positive cycles}")
    return errors


def load_profile(ref: str) -> HardwareProfile:
    """Load a built-in profile by name, or a profile file (which may name a ``base``)."""
    data, files = _read_chain(ref, ())
    return load_profile_data(data, files[-1])


def load_profile_data(data: Any, origin: str) -> HardwareProfile:
    """Build a profile from merged data (a file and its bases, or a results file's copy)."""
    if not isinstance(data, dict):
        raise ProfileError(f"{origin}: expected a profile mapping")
    errors = validate_profile_data(data, origin, {}, partial=False)
    if errors:
        raise ProfileError(errors[0])
    scalars: dict[str, float | int] = {}
    for section, keys in SCALARS.items():
        for key in keys:
            scalars[key] = data[section][key]["value"]
    transfers = {}
    for path in TRANSFER_PATHS:
        entry = data["transfers"][path]
        curve = np.asarray(entry["bandwidth_curve"]["value"], dtype=np.float64)
        transfers[path] = TransferPath(float(entry["latency_cycles"]["value"]),
                                       curve[:, 0], curve[:, 1])
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return HardwareProfile(
        name=str(data["name"]),
        description=str(data.get("description", "")),
        scalars=scalars,
        transfers=transfers,
        k0={k: int(v) for k, v in data["cube"]["k0"]["value"].items()},
        cycles_per_fractal={k: float(v)
                            for k, v in data["cube"]["cycles_per_fractal"]["value"].items()},
        vector_cycles_per_repeat={
            cls: {int(k): float(v) for k, v in per.items()}
            for cls, per in data["vector"]["cycles_per_repeat"]["value"].items()},
        data=data,
        sha256=hashlib.sha256(canonical.encode()).hexdigest(),
    )


def profile_paths() -> list[Path]:
    folder = resources.data_dir("hw_profiles")
    return sorted(folder.glob("*.yaml"))


def sourced_leaves(data: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any, str, str]]:
    """Flatten a merged profile to (key path, value, source, confidence) rows."""
    rows: list[tuple[str, Any, str, str]] = []
    for key, value in data.items():
        if key in ("name", "base", "description", "sources", "calibration"):
            continue
        path = f"{prefix}{key}"
        if isinstance(value, dict) and "value" in value:
            rows.append((path, value["value"], str(value.get("source", "")),
                         str(value.get("confidence", ""))))
        elif isinstance(value, dict):
            rows += sourced_leaves(value, path + ".")
    return rows
