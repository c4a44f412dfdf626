"""Hardware profiles: every number the model uses, each with its source and confidence.

A profile is YAML. Leaves are ``{value, source, confidence}``; a profile may start from another
with ``base: NAME`` and override single leaves, which is how the 910B variants share the 910B3
numbers and how a user overrides one bandwidth without copying a file.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ascend_tune.base import resources, schema
from ascend_tune.base.errors import ProfileError, did_you_mean
from ascend_tune.base.vocabulary import DTYPES, TRANSFER_PATHS, VECTOR_CLASSES
from ascend_tune.base.yamlio import KeyPath, load_yaml

CONFIDENCE = ("high", "med", "low")


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
        "gm_contention_exponent": (_NUM, "p of the chip's delivered GM rate, softmin(k * "
                                         "port rate, chip rate)"),
        "aic_gm_port_bytes_per_cycle": (_NUM, "GM bytes/cycle one AIC's MTE2 and FixPipe "
                                              "offer together"),
        "aiv_gm_port_bytes_per_cycle": (_NUM, "GM bytes/cycle one AIV's MTE2 and MTE3 "
                                              "offer together"),
        "nd2nz_row_cycles": (_NUM, "MTE2 cycles per ND row a GM->L1 ND2NZ copy converts"),
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
        "cube_kernel_floor_us": (_NUM, "fixed per-kernel cost of a kernel with a cube side "
                                       "(prologue and drain)"),
    },
}


@dataclass(frozen=True)
class Limit:
    """What a profile number may be. Bounds are sanity limits that keep the model's int64 and
    float arithmetic far from overflow, not hardware facts."""

    lo: float
    hi: float
    lo_open: bool  # value > lo (a rate, size or clock) instead of value >= lo (a latency)
    integral: bool  # a count: cores, bytes, k0, ...

    def problem(self, value: Any) -> str | None:
        """None if ``value`` is acceptable, else what it must be."""
        kind = "an integer" if self.integral else "a finite number"
        op = ">" if self.lo_open else ">="
        want = f"must be {kind} {op} {_num(self.lo)} and <= {_num(self.hi)}"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return want
        if isinstance(value, float) and not math.isfinite(value):
            return want
        if self.integral and isinstance(value, float) and not value.is_integer():
            return want
        below = value <= self.lo if self.lo_open else value < self.lo
        return want if below or value > self.hi else None


def _num(x: float) -> str:
    if x == int(x):
        n = int(x)
        return f"2**{n.bit_length() - 1}" if n >= 2**32 and n & (n - 1) == 0 else str(n)
    return repr(x)


MAX_CORES = 4096
MAX_BYTES = 2**48
COUNT = Limit(0, MAX_CORES, True, True)  # cores, fractal sizes
SIZE = Limit(0, MAX_BYTES, True, True)  # buffer sizes, alignments, block sizes
OPTIONAL_SIZE = Limit(0, MAX_BYTES, False, True)  # a buffer a chip may lack (BiasTable, FB)
CLOCK = Limit(0, 10_000, True, False)  # MHz
BANDWIDTH = Limit(0, 1e6, True, False)  # GB/s (1 PB/s)
FRACTION = Limit(0, 1, True, False)
FACTOR = Limit(0, 1e3, True, False)
CYCLES = Limit(0, 1e9, False, False)  # latencies and overheads: 0 allowed
RATE_CYCLES = Limit(0, 1e9, True, False)  # cycles per unit of work: > 0
MICROSECONDS = Limit(0, 1e6, False, False)
BYTES_PER_CYCLE = Limit(0, 2**20, True, False)
CURVE_BYTES = Limit(0, MAX_BYTES, True, False)
MAX_CURVE_POINTS = 1000

# Every scalar leaf's limit (the keys of SCALARS).
LIMITS: dict[str, Limit] = {
    "arch": Limit(0, 2**31 - 1, False, True),
    "clock_mhz": CLOCK,
    "cube_cores": COUNT,
    "vector_cores": COUNT,
    "l1_bytes": SIZE, "l0a_bytes": SIZE, "l0b_bytes": SIZE, "l0c_bytes": SIZE, "ub_bytes": SIZE,
    "bt_bytes": OPTIONAL_SIZE, "fb_bytes": OPTIONAL_SIZE, "l2_bytes": SIZE,
    "hbm_bandwidth_gbps": BANDWIDTH,
    "l2_bandwidth_gbps": BANDWIDTH,
    "gm_align_bytes": SIZE,
    "gm_unaligned_efficiency": FRACTION,
    "gm_contention_exponent": Limit(0, 64, True, False),
    "aic_gm_port_bytes_per_cycle": BYTES_PER_CYCLE,
    "aiv_gm_port_bytes_per_cycle": BYTES_PER_CYCLE,
    "nd2nz_row_cycles": CYCLES,
    "ub_block_bytes": SIZE,
    "fractal_mn": COUNT,
    "mmad_overhead_cycles": CYCLES,
    "repeat_bytes": SIZE,
    "max_repeat": Limit(0, 2**20, True, True),
    "issue_cycles": CYCLES,
    "bank_conflict_factor": FACTOR,
    "loop_iteration_cycles": CYCLES,
    "sync_cycles": CYCLES,
    "head_base_us": MICROSECONDS,
    "head_full_chip_us": MICROSECONDS,
    "mix_extra_us": MICROSECONDS,
    "cube_kernel_floor_us": MICROSECONDS,
}
TABLE_LIMITS = {"k0": COUNT, "cycles_per_fractal": RATE_CYCLES, "cycles_per_repeat": RATE_CYCLES}
MAX_BASE_DEPTH = 16

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
        "version": (schema.Scalar(("integer",), enum=(1,), doc="file format version (1); a "
                                  "newer file needs a newer ascend-tune"), False),
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


def _read_chain(ref: str, seen: tuple[tuple[str, str], ...]
                ) -> tuple[dict[str, Any], list[str]]:
    """Load a profile and its bases; return merged data and the file names involved.

    ``seen`` holds (resolved path, name as given) of the profiles that led here: a cycle is
    detected by resolved path, so ``base: ../dir/self.yaml`` cannot spell one file many ways.
    """
    path = resources.resolve("hw_profiles", ref)
    try:
        exists = path.is_file()
        real = str(path.resolve()) if exists else ""
    except (OSError, RuntimeError, ValueError):  # name too long, symlink loop, NUL byte
        exists, real = False, ""
    if not exists:
        known = resources.builtin_names("hw_profiles")
        where = f"{seen[-1][1]}: base: " if seen else ""
        raise ProfileError(f"{where}hardware profile '{_short(ref)}' not found"
                           f"{did_you_mean(ref, known)}; built-in: {', '.join(known)}")
    origin = str(path)
    if real in (r for r, _ in seen):
        chain = " -> ".join(Path(r).name for r in (*(r for r, _ in seen), real))
        raise ProfileError(f"{seen[-1][1]}: base: profiles form a cycle: {chain}")
    if len(seen) >= MAX_BASE_DEPTH:
        raise ProfileError(f"{seen[-1][1]}: base: more than {MAX_BASE_DEPTH} levels of base "
                           "profiles")
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
    base, files = _read_chain(base_arg, (*seen, (real, origin)))
    merged = _merge(base, {k: v for k, v in data.items() if k != "base"})
    return merged, [*files, origin]


def _short(text: str) -> str:
    return text if len(text) <= 120 else text[:117] + "..."


def validate_profile_data(data: Any, origin: str, lines: Mapping[KeyPath, int],
                          partial: bool) -> list[str]:
    """Structure, then values. A partial profile (a file with a ``base``) checks the leaves it
    has, so an error names the file that holds the bad number."""
    errors = schema.validate(data, _profile_schema(partial), origin, lines)
    if errors:
        return errors
    return _check_values(data, origin, lines)


def _leaf_value(data: Mapping[str, Any], *path: str) -> tuple[bool, Any]:
    node: Any = data
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return False, None
        node = node[key]
    if not isinstance(node, Mapping) or "value" not in node:
        return False, None
    return True, node["value"]


def _check_values(data: Mapping[str, Any], origin: str,
                  lines: Mapping[KeyPath, int] | None = None) -> list[str]:
    """Every number finite and within :data:`LIMITS`; one message per bad leaf, naming the
    file (and line) and the leaf's key path."""
    lines = lines or {}
    errors: list[str] = []

    def bad(path: tuple[str, ...], message: str) -> None:
        line = lines.get((*path, "value")) or lines.get(path)
        head = f"{origin}:{line}" if line else origin
        errors.append(f"{head}: {'.'.join(path)}: {message}")

    def shown(value: Any) -> str:
        text = repr(value) if not isinstance(value, (dict, list)) else (
            "a mapping" if isinstance(value, dict) else "a list")
        return _short(text)

    for section, keys in SCALARS.items():
        for key in keys:
            present, value = _leaf_value(data, section, key)
            if present:
                problem = LIMITS[key].problem(value)
                if problem:
                    bad((section, key), f"{problem}, got {shown(value)}")
    for path in TRANSFER_PATHS:
        present, value = _leaf_value(data, "transfers", path, "latency_cycles")
        if present:
            problem = CYCLES.problem(value)
            if problem:
                bad(("transfers", path, "latency_cycles"), f"{problem}, got {shown(value)}")
        present, curve = _leaf_value(data, "transfers", path, "bandwidth_curve")
        if present:
            message = _curve_problem(curve)
            if message:
                bad(("transfers", path, "bandwidth_curve"), message)
    for table, keyset in (("k0", DTYPES), ("cycles_per_fractal", DTYPES)):
        present, value = _leaf_value(data, "cube", table)
        if not present:
            continue
        if not isinstance(value, dict):
            bad(("cube", table), "expected a mapping dtype -> number")
            continue
        for key, num in value.items():
            if key not in keyset:
                bad(("cube", table, key), f"unknown dtype{did_you_mean(key, keyset)}; "
                                          f"allowed: {', '.join(keyset)}")
                continue
            problem = TABLE_LIMITS[table].problem(num)
            if problem:
                bad(("cube", table, key), f"{problem}, got {shown(num)}")
    present, cpr = _leaf_value(data, "vector", "cycles_per_repeat")
    if present and not isinstance(cpr, dict):
        bad(("vector", "cycles_per_repeat"), "expected class -> {element bytes: cycles}")
    elif present:
        for cls, per in cpr.items():
            here = ("vector", "cycles_per_repeat", str(cls))
            if cls not in VECTOR_CLASSES:
                bad(here, f"unknown class{did_you_mean(str(cls), VECTOR_CLASSES)}")
            elif not isinstance(per, dict) or not per:
                bad(here, "expected {element bytes (1, 2, 4, 8): cycles per repeat}")
            else:
                for k, v in per.items():
                    if str(k) not in ("1", "2", "4", "8"):
                        bad((*here, str(k)), "element bytes must be 1, 2, 4 or 8")
                        continue
                    problem = TABLE_LIMITS["cycles_per_repeat"].problem(v)
                    if problem:
                        bad((*here, str(k)), f"{problem}, got {shown(v)}")
    return errors


def _curve_problem(curve: Any) -> str | None:
    shape = ("expected a non-empty list of [bytes, bytes_per_cycle] pairs "
             f"(at most {MAX_CURVE_POINTS})")
    if not isinstance(curve, list) or not curve or len(curve) > MAX_CURVE_POINTS or not all(
            isinstance(p, list) and len(p) == 2 for p in curve):
        return shape
    for i, (size, rate) in enumerate(curve):
        problem = CURVE_BYTES.problem(size)
        if problem:
            return f"point {i}: bytes {problem}, got {_short(repr(size))}"
        problem = BYTES_PER_CYCLE.problem(rate)
        if problem:
            return f"point {i}: bytes_per_cycle {problem}, got {_short(repr(rate))}"
    if any(a[0] >= b[0] for a, b in itertools.pairwise(curve)):
        return "sizes must increase"
    return None


def load_profile(ref: str) -> HardwareProfile:
    """Load a built-in profile by name, or a profile file (which may name a ``base``)."""
    data, files = _read_chain(ref, ())
    return load_profile_data(data, files[-1])


# What a profile says about the chip: its values. Provenance (sources, notes, confidence, the
# calibration record), the description and the format version leave the hash alone, so
# documenting a leaf keeps results cached and emitted banners unchanged.
_PROVENANCE = frozenset({"version", "description", "sources", "source", "note", "confidence",
                         "calibration"})


def _meaning(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _meaning(v) for k, v in node.items() if k not in _PROVENANCE}
    if isinstance(node, list):
        return [_meaning(v) for v in node]
    return node


# Leaves added after profiles and results files were written (issue 13). A complete profile
# that lacks them -- a user's file without ``base``, or the copy a results file embeds -- takes
# them from the reference profile, with a note saying so, instead of failing to load.
ADDED_LEAVES = (("memory", "gm_contention_exponent"), ("memory", "aic_gm_port_bytes_per_cycle"),
                ("memory", "aiv_gm_port_bytes_per_cycle"), ("memory", "nd2nz_row_cycles"),
                ("launch", "cube_kernel_floor_us"))
REFERENCE_PROFILE = "ascend910b3"


def _with_added_leaves(data: dict[str, Any]) -> dict[str, Any]:
    missing = [(s, k) for s, k in ADDED_LEAVES
               if isinstance(data.get(s, {}), dict) and not _leaf_value(data, s, k)[0]]
    if not missing:
        return data
    reference, _files = _read_chain(REFERENCE_PROFILE, ())
    out = dict(data)
    for section, key in missing:
        leaf = {**reference[section][key],
                "note": f"taken from {REFERENCE_PROFILE}: this profile predates the leaf"}
        out[section] = {**out.get(section, {}), key: leaf}
    return out


def load_profile_data(data: Any, origin: str) -> HardwareProfile:
    """Build a profile from merged data (a file and its bases, or a results file's copy)."""
    if not isinstance(data, dict):
        raise ProfileError(f"{origin}: expected a profile mapping")
    data = _with_added_leaves(data)
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
    canonical = json.dumps(_meaning(data), sort_keys=True, separators=(",", ":"))
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


def builtin_summaries() -> list[dict[str, Any]]:
    """The headline numbers of every built-in profile (what `hw list` shows)."""
    rows = []
    for path in profile_paths():
        p = load_profile(str(path))
        rows.append({"name": p.name, "clock_mhz": p["clock_mhz"],
                     "cube_cores": p["cube_cores"], "vector_cores": p["vector_cores"],
                     "ub_bytes": p["ub_bytes"], "l1_bytes": p["l1_bytes"],
                     "hbm_bandwidth_gbps": p["hbm_bandwidth_gbps"],
                     "description": p.description})
    return rows


def show_document(p: HardwareProfile) -> dict[str, Any]:
    """Every number of a profile with its source and confidence (what `hw show --json` prints)."""
    return {"name": p.name, "description": p.description, "sha256": p.sha256,
            "sources": p.data.get("sources", {}),
            "values": {k: {"value": v, "source": s, "confidence": c}
                       for k, v, s, c in sourced_leaves(p.data)}}
