"""The shape of a profile: which leaves it has, what each means, and the schema that checks it.

Owns the leaf form ``{value, source, confidence[, note]}`` (:data:`CONFIDENCE`), the scalar
leaves per section (:data:`SCALARS`, which expressions see as ``hw.<key>``), the per-dtype and
per-class tables (:data:`TABLES`), the transfer paths' leaves, and :data:`PROFILE_SCHEMA`.
What each value may be is :mod:`ascend_tune.hardware.limits`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ascend_tune.base import schema
from ascend_tune.base.vocabulary import TRANSFER_PATHS

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
        "hbm_bytes": (_INT, "HBM capacity (GetCoreMemSize(HBM), the ini's memory_size): "
                            "tells apart chips of one SoC family and core count"),
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
        "copy_issue_cycles": (_NUM, "MTE2/MTE3 cycles one GM DataCopy holds its queue for "
                                    "besides its bytes (its GM latency overlaps the copies "
                                    "behind it)"),
        "nd2nz_max_pitch_elements": (_INT, "largest ND row pitch (elements) one GM->L1 ND2NZ "
                                           "copy takes; beyond it each row is its own copy"),
        "nd2nz_pitch_256b_efficiency": (_NUM, "bandwidth fraction of a GM->L1 ND2NZ copy whose "
                                              "row pitch is 256 B but not 512 B aligned"),
        "nd2nz_pitch_128b_efficiency": (_NUM, "the same for a pitch 128 B but not 256 B aligned"),
        "nd2nz_pitch_32b_efficiency": (_NUM, "the same for a pitch less than 128 B aligned"),
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

TABLES: dict[str, dict[str, str]] = {
    "cube": {"k0": "K elements per fractal, per dtype",
             "cycles_per_fractal": "cycles per 16 x 16 x k0 fractal, per dtype"},
    "vector": {"cycles_per_repeat": "class -> {element bytes: cycles per repeat}"},
}


# Leaves a complete profile may lack: added after results files embedding profiles existed
# (a missing leaf reads as 0, "not known").
OPTIONAL_LEAVES = frozenset({"hbm_bytes"})


def profile_schema(partial: bool) -> schema.Obj:
    """The schema of a profile file; ``partial`` (a file with a ``base``) makes every section
    and leaf optional."""
    sections: dict[str, tuple[schema.Node, bool]] = {}
    for section, keys in SCALARS.items():
        fields: dict[str, tuple[schema.Node, bool]] = {
            k: (_leaf(t, doc), not partial and k not in OPTIONAL_LEAVES)
            for k, (t, doc) in keys.items()}
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


PROFILE_SCHEMA = profile_schema(partial=True)


def leaf_value(data: Mapping[str, Any], *path: str) -> tuple[bool, Any]:
    """(True, value) if ``data`` has a leaf at ``path``, else (False, None)."""
    node: Any = data
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return False, None
        node = node[key]
    if not isinstance(node, Mapping) or "value" not in node:
        return False, None
    return True, node["value"]
