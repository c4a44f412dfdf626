"""One line that names what bounds a configuration and the parameter that moves it.

The lever is found by asking the model, not by reading expressions: each parameter is moved
one domain step up and down, and a move is a lever when the configuration stays valid and the
bounding quantity (bytes per transfer of the busiest stage, or the bounding pipe's busy time)
improves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from ascend_tune.base.vocabulary import BOUND_NAMES, COLUMN_PIPE
from ascend_tune.model.engine import Evaluation, ShapeModel
from ascend_tune.model.pipeline import StageDetail


def _pct(fraction: float) -> str:
    return "<1%" if 0 < fraction < 0.005 else f"{fraction:.0%}"


def _kib(nbytes: float) -> str:
    return f"{nbytes / 1024:.3g} KiB" if nbytes >= 1024 else f"{nbytes:.0f} B"


def _levers(model: ShapeModel, config: Mapping[str, int],
            metric: Callable[[Evaluation], float], higher_is_better: bool) -> list[str]:
    """Parameter moves (one domain step) that keep the configuration valid and improve
    ``metric``, best first, as 'a larger X' / 'a smaller X'."""
    base = metric(model.evaluate(np.array([[config[p] for p in model.spec.params]]), True))
    found: list[tuple[float, str]] = []
    for j, p in enumerate(model.spec.params):
        grid = model.grids[j]
        i = int(np.searchsorted(grid, config[p]))
        for step, word in ((1, "larger"), (-1, "smaller")):
            k = i + step
            if not 0 <= k < grid.size:
                continue
            moved = dict(config)
            moved[p] = int(grid[k])
            ev = model.evaluate(np.array([[moved[q] for q in model.spec.params]]), True)
            if not ev.valid[0]:
                continue
            value = metric(ev)
            gain = (value - base) if higher_is_better else (base - value)
            if gain > 1e-9 * max(abs(base), 1.0):
                found.append((gain, f"a {word} {p}"))
    found.sort(key=lambda t: -t[0])
    best_per_param: dict[str, str] = {}
    for _, text in found:  # one direction per parameter: the better one
        best_per_param.setdefault(text.split()[-1], text)
    return list(best_per_param.values())[:2]


def _stage_named(ev: Evaluation, side: str, name: str) -> StageDetail | None:
    for s in ev.stages:
        if s.side == side and s.name == name:
            return s
    return None


def _layout_note(model: ShapeModel, ev: Evaluation) -> str:
    """What the operands' GM layout costs that no tiling parameter can change: a pitch too
    long for one ND2NZ copy, or runs a misaligned pitch apart (the busiest such stage, where
    it takes at least a tenth of the latency)."""
    cycles_per_us = float(model.hw["clock_mhz"])
    latency = float(ev.latency_us[0])
    hit = [s for s in ev.stages if (s.copies_per_run or s.pitch_misaligned)
           and s.cycles / cycles_per_us >= 0.1 * latency]
    if not hit:
        return ""
    worst = max(hit, key=lambda s: s.cycles)
    pitch = f"{worst.pitch_elements:.0f} elements"
    if worst.copies_per_run:
        return (f"; {worst.name} copies one row at a time: its operand's rows are {pitch} "
                f"apart, more than one ND2NZ copy takes "
                f"({int(model.hw['nd2nz_max_pitch_elements'])}); pad the rows or store the "
                "operand transposed or in NZ")
    verb = "reads" if worst.pipe == "mte2" else "writes"
    return (f"; {worst.name} {verb} rows that start misaligned ({pitch} apart, not a multiple "
            f"of {int(model.hw['gm_align_bytes'])} B): padding the rows restores full bandwidth")


def diagnose(model: ShapeModel, config: Mapping[str, int], ev: Evaluation) -> str:
    return _diagnosis(model, config, ev) + _layout_note(model, ev)


def _diagnosis(model: ShapeModel, config: Mapping[str, int], ev: Evaluation) -> str:
    bound = BOUND_NAMES[int(ev.bound[0])]
    latency = float(ev.latency_us[0])

    def latency_of(e: Evaluation) -> float:
        return float(e.latency_us[0])

    if bound == "head_overhead":
        share = float(ev.head_us[0]) / latency
        moves = _levers(model, config, latency_of, higher_is_better=False)
        lever = f"; {' or '.join(moves)} lowers the latency" if moves else ""
        return (f"launch overhead ({float(ev.head_us[0]):.2f} us) is {share:.0%} of the "
                f"latency: the shape is too small to hide it{lever}")
    if bound == "gm_bandwidth":
        gm = float(ev.gm_us[0])
        compulsory = model.roofline_us
        if compulsory >= 0.9 * gm:
            efficiency = compulsory / latency
            if efficiency >= 0.8:
                return (f"GM bandwidth bound at the compulsory traffic ({gm:.2f} us at the chip "
                        f"rate): this configuration is at the memory roofline ({efficiency:.0%} "
                        "efficiency)")
            return (f"GM bandwidth bound with only the compulsory traffic ({gm:.2f} us at the "
                    f"chip rate), yet at {efficiency:.0%} of the roofline: the rest is launch "
                    "overhead and pipeline fill around the transfers")
        moves = _levers(model, config, lambda e: float(e.gm_us[0]), higher_is_better=False)
        lever = f"; {' or '.join(moves)} cuts re-reads" if moves else ""
        return (f"GM bandwidth bound: {gm:.2f} us of traffic at the chip rate, "
                f"{gm / max(compulsory, 1e-12):.1f}x the compulsory bytes{lever}")
    pipe = COLUMN_PIPE[bound]
    side = "cube" if bound.startswith("aic") else "vector"
    stages = [s for s in ev.stages if s.pipe == pipe and s.side == side]
    if not stages:
        return f"{pipe} is the busiest pipe (loop and flag overhead)"
    worst = max(stages, key=lambda s: s.cycles)
    if worst.bytes_per_transfer > 0 and worst.share_capped and worst.latency_fraction < 0.5:
        side_spec = model.spec.sides[0 if side == "cube" else -1]
        cores = round(float(np.asarray(side_spec.cores.evaluate(ev.env)).reshape(-1)[0]))
        return (f"{pipe.upper()} ({worst.name}, {_kib(worst.bytes_per_transfer)} per transfer) "
                f"is limited by its share of the chip's GM bandwidth with {cores} cores active; "
                "moving fewer bytes per core (more reuse) is the lever")
    if worst.bytes_per_transfer > 0:
        frac = worst.bandwidth_bytes_per_cycle / worst.peak_bytes_per_cycle
        if frac < 0.8:

            def size_of(e: Evaluation) -> float:
                s = _stage_named(e, side, worst.name)
                return s.bytes_per_transfer if s is not None else 0.0

            moves = _levers(model, config, size_of, higher_is_better=True)
            lever = f"; {' or '.join(moves)} raises it" if moves else ""
            return (f"{pipe.upper()} moves {_kib(worst.bytes_per_transfer)} per transfer "
                    f"({worst.name}) at {_pct(frac)} of peak bandwidth, latency included{lever}")
    column = bound

    def busy(e: Evaluation) -> float:
        return float(e.pipes_us[column][0])

    moves = _levers(model, config, busy, higher_is_better=False)
    lever = f"; {' or '.join(moves)} shortens it" if moves else "; no single step shortens it"
    what = {"cube": "Cube", "vector": "Vector", "scalar": "Scalar"}.get(pipe, pipe.upper())
    return (f"{what} bound: {busy(ev):.2f} us busy ({worst.name} is the largest stage, "
            f"{worst.executions:.0f} executions){lever}")
