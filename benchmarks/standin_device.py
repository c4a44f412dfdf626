"""A device stand-in for ``benchmarks/closed_loop.py``: what ``ascend-tune measure --run`` launches.

It "runs" one candidate by evaluating the pipeline model on the TRUE profile of a stand-in
device (a profile file the calibration never sees) and prints ``time_us: X`` with seeded
log-normal noise (seeded by shape, configuration and run number, so the times do not depend on
the worker or the order).

    standin_device.py SPEC TRUTH_PROFILE --shape-json J --config-json J --run R [--noise S]
"""

from __future__ import annotations

import argparse
import json
import sys
import zlib

import numpy as np

from ascend_tune.hardware import load_profile
from ascend_tune.model.engine import ShapeModel
from ascend_tune.spec import load_spec


def noisy_factor(shape: dict[str, int], config: dict[str, int], run: int, sigma: float) -> float:
    """The run's multiplicative noise: log-normal, ``sigma`` in log units (0.01: about 1 %)."""
    if sigma <= 0:
        return 1.0
    seed = zlib.crc32(json.dumps([shape, config, run], sort_keys=True).encode())
    return float(np.exp(np.random.default_rng(seed).normal(0.0, sigma)))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("truth")
    ap.add_argument("--shape-json", required=True)
    ap.add_argument("--config-json", required=True)
    ap.add_argument("--run", type=int, required=True)
    ap.add_argument("--noise", type=float, default=0.0)
    args = ap.parse_args(argv)
    spec = load_spec(args.spec)
    shape = json.loads(args.shape_json)
    config = json.loads(args.config_json)
    model = ShapeModel(spec, load_profile(args.truth), shape)
    ev = model.evaluate(np.array([[config[p] for p in spec.params]], dtype=np.int64))
    if not ev.valid[0]:
        sys.stderr.write("the stand-in device rejects this configuration\n")
        return 3
    time_us = float(ev.latency_us[0]) * noisy_factor(shape, config, args.run, args.noise)
    print(f"time_us: {time_us:.6g}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
