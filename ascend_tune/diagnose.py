"""One line that names what bounds a configuration and the parameter that moves it."""

from __future__ import annotations

from collections.abc import Iterable

from ascend_tune.engine import Evaluation, StageDetail
from ascend_tune.spec import OperatorSpec

_PIPE_OF_COLUMN = {"aic_mac_time_us": "cube", "aic_mte1_time_us": "mte1",
                   "aic_mte2_time_us": "mte2", "aic_fixpipe_time_us": "fixpipe",
                   "aic_scalar_time_us": "scalar", "aiv_vec_time_us": "vector",
                   "aiv_mte2_time_us": "mte2", "aiv_mte3_time_us": "mte3",
                   "aiv_scalar_time_us": "scalar"}


def param_levers(spec: OperatorSpec, names: Iterable[str]) -> list[str]:
    """Tunable parameters an expression depends on, through derived values."""
    derived = dict(spec.derive)
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in derived:
            todo += list(derived[name].names)
    return [p for p in spec.params if p in seen]


def _kib(nbytes: float) -> str:
    return f"{nbytes / 1024:.3g} KiB" if nbytes >= 1024 else f"{nbytes:.0f} B"


def _levers(spec: OperatorSpec, stage: StageDetail) -> str:
    params = param_levers(spec, stage.expr_names)
    return " or ".join(params) if params else "the tiling"


def diagnose(spec: OperatorSpec, ev: Evaluation, bound: str) -> str:
    latency = float(ev.latency_us[0])
    if bound == "head_overhead":
        share = float(ev.head_us[0]) / latency
        cores = " or ".join(param_levers(spec, spec.block_dim.names)) or "the core count"
        return (f"launch overhead ({float(ev.head_us[0]):.2f} us) is {share:.0%} of the "
                f"latency; fewer cores ({cores}) amortise it on a shape this small")
    if bound == "gm_bandwidth":
        transfers = [s for s in ev.stages if s.bytes_per_transfer > 0]
        heavy = max(transfers, key=lambda s: s.cycles) if transfers else None
        lever = f"; fewer GM re-reads ({_levers(spec, heavy)}) is the lever" if heavy else ""
        return (f"GM bandwidth bound: the cores together saturate HBM "
                f"({float(ev.gm_us[0]):.2f} us of traffic at the chip rate){lever}")
    pipe = _PIPE_OF_COLUMN[bound]
    side = "cube" if bound.startswith("aic") else "vector"
    stages = [s for s in ev.stages if s.pipe == pipe and s.side == side]
    if not stages:
        return f"{pipe} is the busiest pipe (loop and synchronisation overhead)"
    worst = max(stages, key=lambda s: s.cycles)
    if worst.bytes_per_transfer > 0:
        frac = worst.bandwidth_bytes_per_cycle / worst.peak_bytes_per_cycle
        if frac < 0.8:
            return (f"{pipe.upper()} moves {_kib(worst.bytes_per_transfer)} per transfer "
                    f"({worst.name}) at {frac:.0%} of peak bandwidth; a larger "
                    f"{_levers(spec, worst)} raises it")
        return (f"{pipe.upper()} runs at {frac:.0%} of peak bandwidth ({worst.name}); "
                f"moving fewer bytes (more reuse through {_levers(spec, worst)}) is the lever")
    if pipe == "cube":
        return (f"Cube bound ({worst.name}); larger base blocks ({_levers(spec, worst)}) "
                "amortise the per-Mmad overhead and the loads around it")
    if pipe == "vector":
        return (f"Vector bound ({worst.name}, {worst.executions:.0f} calls); longer "
                f"{_levers(spec, worst)} amortise the per-instruction issue cost")
    return (f"scalar bound: loop and flag overhead; fewer, larger iterations "
            f"({_levers(spec, worst)}) reduce it")
