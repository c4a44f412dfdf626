"""A loaded profile: :class:`HardwareProfile`, its derived rates, and what its hash covers.

Owns the frozen :class:`HardwareProfile` (scalar leaves by key, transfer paths with their
bandwidth curves, the cube and vector tables, the merged YAML it came from) with the rates the
model derives from it (clock in Hz, GM and L2 bytes per cycle, cube MACs per cycle), and
:func:`profile_sha256`, the hash of what a profile says about the chip.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np


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

    def __repr__(self) -> str:  # the dataclass repr prints every leaf (~14 KB)
        return f"HardwareProfile({self.name!r}, sha256={self.sha256[:12]!r})"

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


def profile_sha256(data: Mapping[str, Any]) -> str:
    """The hash of a merged profile's meaning: every value (the name included), no provenance."""
    canonical = json.dumps(_meaning(data), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()
