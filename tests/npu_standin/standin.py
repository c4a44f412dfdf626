"""A stand-in for one NPU kernel run: what `ascend-tune measure --run` would launch.

It "runs" a candidate by evaluating the pipeline model on a HIDDEN hardware profile: the
shipped ascend910b3 profile with a few leaves scaled by factors only this file knows (the
tuner never sees them; a calibration that works moves toward them). Each run's time has
seeded noise (1 % log-normal, seeded by shape, configuration and run number), so the result
does not depend on which device or worker ran it, or in which order.

    standin.py SPEC --shape-json J --config-json J --blob PATH --headers DIR --repeat R
               [--csv-dir DIR]

Prints ``time_us: <float>``; with ``--csv-dir`` also writes an msprof-like
``PROF_000001/device_0/summary/op_summary_0.csv`` (an unrelated Cast row first, then the
kernel's row with per-pipe times). It checks that the blob and headers it was given exist
(blob size a multiple of 8 bytes, the TilingData header among the headers).

Environment (for the tests): STANDIN_COUNTER, a file that gets one line per invocation
(device, shape, config, run); STANDIN_SLEEP_S, seconds to sleep first; STANDIN_FAIL /
STANDIN_HANG, a JSON mapping: a configuration containing it fails (exit 3) / hangs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import zlib
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from ascend_tune.calibrate.coefficients import scale_leaves
from ascend_tune.hardware import HardwareProfile, load_profile, load_profile_data
from ascend_tune.model.engine import ShapeModel
from ascend_tune.spec import OperatorSpec, load_spec

# The hidden truth: leaf path -> factor (bandwidth curves scale their bytes/cycle column).
HIDDEN_FACTORS: dict[tuple[str, ...], float] = {
    ("launch", "head_base_us"): 2.2,
    ("launch", "head_full_chip_us"): 3.0,
    ("transfers", "gm_to_ub", "bandwidth_curve"): 0.7,
    ("transfers", "ub_to_gm", "bandwidth_curve"): 0.8,
}
NOISE_SIGMA = 0.01
BASE_PROFILE = "ascend910b3"


@cache
def hidden_profile() -> HardwareProfile:
    data = scale_leaves(load_profile(BASE_PROFILE).data, HIDDEN_FACTORS)
    return load_profile_data(data, "hidden stand-in profile")


def true_time(spec: OperatorSpec, shape: Mapping[str, int], config: Mapping[str, int]
              ) -> tuple[float, dict[str, float]]:
    """Noise-free time and per-pipe times of ``config`` on the hidden profile."""
    model = ShapeModel(spec, hidden_profile(), dict(shape))
    row = np.array([[config[p] for p in spec.params]], dtype=np.int64)
    ev = model.evaluate(row, detail=True)
    if not ev.valid[0]:
        raise ValueError(f"invalid configuration {dict(config)}")
    pipes = {c: float(v[0]) for c, v in ev.pipes_us.items()}
    return float(ev.latency_us[0]), pipes


def noisy_time(spec: OperatorSpec, shape: Mapping[str, int], config: Mapping[str, int],
               run: int) -> tuple[float, dict[str, float]]:
    seed = zlib.crc32(json.dumps([dict(shape), dict(config), run], sort_keys=True).encode())
    factor = float(np.exp(np.random.default_rng(seed).normal(0.0, NOISE_SIGMA)))
    time_us, pipes = true_time(spec, shape, config)
    return time_us * factor, {c: v * factor for c, v in pipes.items()}


def median_time(spec: OperatorSpec, shape: Mapping[str, int], config: Mapping[str, int],
                repeat: int) -> float:
    """What `measure --repeat N` should record for the candidate."""
    return float(np.median([noisy_time(spec, shape, config, r)[0] for r in range(repeat)]))


def _matches(config: Mapping[str, int], env: str) -> bool:
    raw = os.environ.get(env)
    if not raw:
        return False
    want: dict[str, Any] = json.loads(raw)
    return all(config.get(k) == v for k, v in want.items())


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("--shape-json", required=True)
    ap.add_argument("--config-json", required=True)
    ap.add_argument("--blob", required=True)
    ap.add_argument("--headers", required=True)
    ap.add_argument("--repeat", type=int, required=True)
    ap.add_argument("--csv-dir")
    args = ap.parse_args(argv)
    shape = json.loads(args.shape_json)
    config = json.loads(args.config_json)
    device = os.environ.get("ASCEND_RT_VISIBLE_DEVICES", "-")
    counter = os.environ.get("STANDIN_COUNTER")
    if counter:
        with open(counter, "a", encoding="utf-8") as fh:  # one short write: atomic append
            fh.write(f"device={device} shape={json.dumps(shape, sort_keys=True)} "
                     f"config={json.dumps(config, sort_keys=True)} run={args.repeat}\n")
    time.sleep(float(os.environ.get("STANDIN_SLEEP_S", "0")))
    if _matches(config, "STANDIN_HANG"):
        time.sleep(60)
    if _matches(config, "STANDIN_FAIL"):
        sys.stderr.write("aclrtSynchronizeStream failed: 507015 (stand-in)\n")
        return 3
    blob = Path(args.blob).read_bytes()
    if not blob or len(blob) % 8:
        sys.stderr.write(f"tiling blob of {len(blob)} bytes\n")
        return 4
    spec = load_spec(args.spec)
    if not list(Path(args.headers).glob(f"op_*/{spec.snake_name}_tiling.h")):
        sys.stderr.write("no TilingData header in the headers folder\n")
        return 4
    time_us, pipes = noisy_time(spec, shape, config, args.repeat)
    if args.csv_dir:
        folder = Path(args.csv_dir) / "PROF_000001" / "device_0" / "summary"
        folder.mkdir(parents=True)
        columns = [c for c in sorted(pipes) if pipes[c] > 0]
        head = ["Op Name", "OP Type", "Task Duration(us)", "Block Dim"]
        head += [c.removesuffix("_us") + "(us)" for c in columns]
        rows = [["aclnnCast_Cast", "Cast", "1.5", "1"] + ["0.5"] * len(columns),
                [f"{spec.name}_1", spec.name, f"{time_us:.4f}", "8"]
                + [f"{pipes[c]:.4f}" for c in columns]]
        (folder / "op_summary_0.csv").write_text(
            "\n".join(",".join(r) for r in [head, *rows]) + "\n", encoding="utf-8")
    print(f"kernel {spec.name} on device {device}")
    print(f"time_us: {time_us:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
