"""The public rows of the two specs docs/spec_tutorial.md writes (floor_mod, broadcast_mul),
for benchmarks/model_vs_measured.py.

Both groups are held out: the specs were written from the kernels' code and descriptions
(the tutorial), no profile leaf was set or checked against these rows, and nothing is fitted.
Tiling the sources do not state takes the model's best value (as for the GELU rows).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ascend_tune.hardware import load_profile
from ascend_tune.spec import load_spec

Predict = Callable[..., float]


def floor_mod_rows(rows: Sequence[Mapping[str, str]]) -> list[int]:
    return [i for i, r in enumerate(rows) if "FloorMod" in r["op"]]


def broadcast_mul_rows(rows: Sequence[Mapping[str, str]]) -> list[int]:
    return [i for i, r in enumerate(rows) if r["op"].startswith("elementwise broadcast-mul")]


def floor_mod(rows: Sequence[Mapping[str, str]], report: Any, point: type,
              predict: Predict) -> None:
    """asc-devkit simd_simt_high_performance on 950PR (64 AIV: the 950PR_9589 part), FloorMod
    of two int32 [8192, 8192] tensors. Case 1 (SIMD, the Reg vector API) is the structure the
    spec describes; cases 0, 2 and 3 run the divide as SIMT threads, another programming model.
    Tile length and buffering are not stated: the model's best."""
    spec, hw = load_spec("floor_mod"), load_profile("ascend950pr_9589")
    for r in rows:
        if "SIMT" in r["kernel"]:
            report.skipped["FloorMod as SIMT threads (another programming model)"] += 1
            continue
        cores = int(r["block_dim"])
        pred = predict(spec, hw, {"totalLength": 8192 * 8192}, {"blockDim": cores},
                       ("tileLength", "bufferNum"))
        report.points.append(point("held-out", "floor_mod int32 / 950PR_9589", None,
                                   r["kernel"][:60], float(r["time_us"]), pred))


def broadcast_mul(rows: Sequence[Mapping[str, str]], report: Any, point: type,
                  predict: Predict) -> None:
    """ops-transformer experimental mhc_post on 910B2 (48 AIV; the page says "20 AI Cores"),
    out[b, n] = h[b, n] * x[b] for (B, S, D) with 4 streams, float32 (the usage example's; the
    page states no dtype). The kernel's tile (UB_SIZE / (5 * sizeof(T))) and double buffering
    are the spec's baseline; the core count is not stated per shape: the model's best. The
    torch.einsum rows are CANN's own Mul kernel, whose tiling is not stated."""
    spec, hw = load_spec("broadcast_mul"), load_profile("ascend910b2")
    dims = re.compile(r"\(B,S,D\)=\((\d+),(\d+),(\d+)\), num_streams=(\d+)")
    for r in rows:
        if "einsum" in r["kernel"]:
            report.skipped["broadcast mul through torch.einsum (CANN's Mul, tiling not "
                           "stated)"] += 1
            continue
        found = dims.search(r["shape"])
        assert found is not None, r["shape"]
        b, s, d, n = (int(v) for v in found.groups())
        shape = {"batch": b, "seq": s, "hidden": d, "streams": n}
        pred = predict(spec, hw, shape, {}, ("blockDim",))
        report.points.append(point("held-out", "broadcast_mul fp32 / 910B2", None,
                                   f"B,S,D,N={b},{s},{d},{n}", float(r["time_us"]), pred))
