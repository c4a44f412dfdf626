"""Reading profiles: files, ``base:`` inheritance, leaves added since, and building the profile.

Owns the built-in profile folder (:func:`profile_paths`), the ``base:`` chain (a relative base
path is relative to the file that names it; cycles and more than :data:`MAX_BASE_DEPTH` levels
are refused; a file's leaves replace its base's leaf by leaf), the leaves an older complete
profile lacks (:data:`ADDED_LEAVES`, taken from :data:`REFERENCE_PROFILE` with a note), and
:func:`load_profile` / :func:`load_profile_data`, which validate and build a
:class:`~ascend_tune.hardware.profile.HardwareProfile`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ascend_tune.base import resources
from ascend_tune.base.errors import ProfileError, did_you_mean
from ascend_tune.base.vocabulary import TRANSFER_PATHS
from ascend_tune.base.yamlio import load_yaml
from ascend_tune.hardware.leaves import SCALARS, leaf_value
from ascend_tune.hardware.limits import shorten, validate_profile_data
from ascend_tune.hardware.profile import HardwareProfile, TransferPath, profile_sha256

MAX_BASE_DEPTH = 16


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
        raise ProfileError(f"{where}hardware profile '{shorten(ref)}' not found"
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


def load_profile(ref: str) -> HardwareProfile:
    """Load a built-in profile by name, or a profile file (which may name a ``base``)."""
    data, files = _read_chain(ref, ())
    return load_profile_data(data, files[-1])


# Leaves added after profiles and results files were written (issue 13). A complete profile
# that lacks them -- a user's file without ``base``, or the copy a results file embeds -- takes
# them from the reference profile, with a note saying so, instead of failing to load.
ADDED_LEAVES = (("memory", "gm_contention_exponent"), ("memory", "aic_gm_port_bytes_per_cycle"),
                ("memory", "aiv_gm_port_bytes_per_cycle"), ("memory", "nd2nz_row_cycles"),
                ("launch", "cube_kernel_floor_us"), ("memory", "nd2nz_max_pitch_elements"),
                ("memory", "nd2nz_pitch_256b_efficiency"),
                ("memory", "nd2nz_pitch_128b_efficiency"),
                ("memory", "nd2nz_pitch_32b_efficiency"), ("memory", "copy_issue_cycles"))
REFERENCE_PROFILE = "ascend910b3"


def _with_added_leaves(data: dict[str, Any]) -> dict[str, Any]:
    missing = [(s, k) for s, k in ADDED_LEAVES
               if isinstance(data.get(s, {}), dict) and not leaf_value(data, s, k)[0]]
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
            leaf = data[section].get(key)
            scalars[key] = leaf["value"] if leaf is not None else 0  # OPTIONAL_LEAVES
    transfers = {}
    for path in TRANSFER_PATHS:
        entry = data["transfers"][path]
        curve = np.asarray(entry["bandwidth_curve"]["value"], dtype=np.float64)
        transfers[path] = TransferPath(float(entry["latency_cycles"]["value"]),
                                       curve[:, 0], curve[:, 1])
    sha256 = profile_sha256(data)
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
        sha256=sha256,
    )


def profile_paths() -> list[Path]:
    folder = resources.data_dir("hw_profiles")
    return sorted(folder.glob("*.yaml"))
