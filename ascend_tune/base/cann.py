"""CANN facts the emitted code depends on, in one place, each with its public source.

Source keys (docs/spec_reference.md, "CANN facts ..."): T81 = CANN 8.1.RC1 toolkit tree,
ASC = asc-devkit, CO = cann-ops ``matmul_api_constant``, MD = metadef.
"""

from __future__ import annotations

from dataclasses import dataclass

# C types a TilingData field may have: what the kernel-side struct generator accepts
# (T81 cmake/util/tiling_data_def_build.py: int8..uint64 and float). Value = (bytes, lo, hi).
FIELD_CTYPES: dict[str, tuple[int, float, float]] = {
    "int8_t": (1, -(1 << 7), (1 << 7) - 1),
    "uint8_t": (1, 0, (1 << 8) - 1),
    "int16_t": (2, -(1 << 15), (1 << 15) - 1),
    "uint16_t": (2, 0, (1 << 16) - 1),
    "int32_t": (4, -(1 << 31), (1 << 31) - 1),
    "uint32_t": (4, 0, (1 << 32) - 1),
    "int64_t": (8, -(1 << 63), (1 << 63) - 1),
    "uint64_t": (8, 0, (1 << 64) - 1),
    "float": (4, -3.4028234663852886e38, 3.4028234663852886e38),
}

# The replay generator copies sizeof(T) / 8 uint64 words (T81 tiling_data_def_build.py), so a
# TilingData whose size is not a multiple of 8 loses its tail: emitted structs are padded.
TILING_ALIGN_BYTES = 8
PAD_FIELD_PREFIX = "tilingPad"

# TCubeTiling: 50 int32 fields in this order (T81 lib/matmul/matmul_tilingdata.h and
# kernel_tiling/kernel_tiling.h; 9.x renames the last to mxTypePara).
TCUBE_TILING_FIELDS: tuple[str, ...] = (
    "usedCoreNum", "M", "N", "Ka", "Kb", "singleCoreM", "singleCoreN", "singleCoreK",
    "baseM", "baseN", "baseK", "depthA1", "depthB1", "stepM", "stepN", "isBias", "transLength",
    "iterateOrder", "shareMode", "shareL1Size", "shareL0CSize", "shareUbSize", "batchM",
    "batchN", "singleBatchM", "singleBatchN", "stepKa", "stepKb", "depthAL1CacheUB",
    "depthBL1CacheUB", "dbL0A", "dbL0B", "dbL0C", "ALayoutInfoB", "ALayoutInfoS",
    "ALayoutInfoN", "ALayoutInfoG", "ALayoutInfoD", "BLayoutInfoB", "BLayoutInfoS",
    "BLayoutInfoN", "BLayoutInfoG", "BLayoutInfoD", "CLayoutInfoB", "CLayoutInfoS1",
    "CLayoutInfoN", "CLayoutInfoG", "CLayoutInfoS2", "BatchNum", "reserved",
)

# API tiling structs a spec may nest: name -> (fields in order, C type of every field).
NESTED_TYPES: dict[str, tuple[tuple[str, ...], str]] = {
    "TCubeTiling": (TCUBE_TILING_FIELDS, "int32_t"),
}


@dataclass(frozen=True)
class KernelMode:
    """How a kernel is launched: which cores a block holds and what block dim counts."""

    name: str
    kernel_type: str  # KERNEL_TASK_TYPE_DEFAULT argument (T81 kernel_utils_macros.h)
    block_core: str  # the core type block dim counts: "vector" (AIV) or "cube" (AIC)
    summary: str


KERNEL_MODES: dict[str, KernelMode] = {
    "aiv_only": KernelMode("aiv_only", "KERNEL_TYPE_AIV_ONLY", "vector",
                           "one block per AIV core, block dim <= AIV count"),
    "aic_only": KernelMode("aic_only", "KERNEL_TYPE_AIC_ONLY", "cube",
                           "ASCENDC_CUBE_ONLY build, one block per AIC core, "
                           "block dim <= AIC count"),
    # ASC SetDim.md / CO matmul_api_constant.cpp: MIX blocks are one AIC with two AIVs.
    "mix": KernelMode("mix", "KERNEL_TYPE_MIX_AIC_1_2", "cube",
                      "AIC:AIV 1:2, one block is one AIC with its two AIVs, "
                      "block dim <= AIC count"),
}
DEFAULT_KERNEL_MODE = {"vector": "aiv_only", "cube": "aic_only", "mix": "mix"}

# System workspace a kernel needs besides its own: the high-level API library's (Matmul
# message queues in MIX mode, T81 kfc_register_obj.h); the host adds
# PlatformAscendC::GetLibApiWorkSpaceSize() (ASC GetLibApiWorkSpaceSize.md).
SYSTEM_WORKSPACES = ("none", "lib_api")

# ge::DataType of each spec dtype (T81 graph/types.h); hf32 is float32 data in HF32 mode.
GE_DTYPES = {"float16": "DT_FLOAT16", "bfloat16": "DT_BF16", "float32": "DT_FLOAT",
             "hf32": "DT_FLOAT", "int8": "DT_INT8", "int32": "DT_INT32"}

# AddConfig SoC names of the profiles we ship (msOpGen `-c ai_core-<soc>`; T81 op_tmpl.py).
PROFILE_SOCS = {"ascend910b1": "ascend910b", "ascend910b2": "ascend910b",
                "ascend910b3": "ascend910b", "ascend910b4": "ascend910b",
                "ascend310p3": "ascend310p"}


def field_range(ctype: str) -> tuple[float, float]:
    _size, lo, hi = FIELD_CTYPES[ctype]
    return lo, hi


def field_bytes(ctype: str) -> int:
    return FIELD_CTYPES[ctype][0]
