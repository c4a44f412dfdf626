"""Tune one shape: build the space, run a strategy, describe the winner. No I/O, no printing."""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ascend_tune.base.errors import AscendTuneError, NoValidConfigError
from ascend_tune.base.vocabulary import BOUND_NAMES, PIPE_COLUMNS
from ascend_tune.expr import scalar_value
from ascend_tune.hardware import HardwareProfile
from ascend_tune.model.engine import Evaluation, ShapeModel
from ascend_tune.search.problem import NoValidFound, decode_flat, run
from ascend_tune.search.space import Enumerator, TooMany, check_set, enumerator, index_blocks
from ascend_tune.search.strategies import (
    COUNT_ESTIMATE_FACTOR,
    COUNT_PREFIX_FACTOR,
    STRATEGIES,
    Problem,
    default_strategy,
    exact_limit,
)
from ascend_tune.spec import OperatorSpec
from ascend_tune.spec.shapes import shape_key
from ascend_tune.tune.seeding import Seeds as Seeds  # re-exported: callers import it here
from ascend_tune.tune.seeding import transfer

DEFAULT_BUDGET = 2000
DEFAULT_SEED = 0


@dataclass(frozen=True)
class TuneSettings:
    strategy: str  # "auto" resolves per shape
    budget: int
    seed: int
    top_k: int = 1  # distinct configurations kept per shape (> 1 adds "candidates")


def shape_rng(seed: int, shape: Mapping[str, int]) -> np.random.Generator:
    """Each shape gets its own stream, so results do not depend on order or process count."""
    return np.random.default_rng([seed, zlib.crc32(shape_key(shape).encode())])


def _num(value: Any) -> int | float:
    """JSON-stable number: booleans as 0/1, floats rounded so files stay byte-identical."""
    v = scalar_value(value)
    return round(v, 9) if isinstance(v, float) else int(v)


def describe(model: ShapeModel, values: Mapping[str, int]) -> dict[str, Any]:
    """Everything the results file and `explain` say about one configuration."""
    spec = model.spec
    row = np.array([[values[p] for p in spec.params]], dtype=np.int64)
    ev = model.evaluate(row, detail=True)
    return describe_evaluation(model, ev)


def describe_evaluation(model: ShapeModel, ev: Evaluation) -> dict[str, Any]:
    spec = model.spec
    env = ev.env
    out: dict[str, Any] = {
        "config": {p: _num(env[p]) for p in spec.params},
        "valid": bool(ev.valid[0]),
    }
    if not ev.valid[0]:
        out["violates"] = model.constraint_names[int(ev.failed[0])]
        return out
    out["derived"] = {n: _num(env[n]) for n, _ in spec.derive}
    out["tiling"] = {f.name: _num(f.value.evaluate(env)) for f in spec.tiling_fields}
    for nested in spec.tiling_nested:
        out["tiling"][nested.name] = {f.name: _num(f.value.evaluate(env)) for f in nested.fields}
    out["block_dim"] = _num(spec.block_dim.evaluate(env))
    if spec.tiling_key is not None:
        out["tiling_key"] = _num(spec.tiling_key.evaluate(env))
    latency = float(ev.latency_us[0])
    out["predicted"] = {
        "latency_us": round(latency, 6),
        "pipes_us": {c: round(float(ev.pipes_us[c][0]), 6) for c in PIPE_COLUMNS},
        "gm_bandwidth_us": round(float(ev.gm_us[0]), 6),
        "head_overhead_us": round(float(ev.head_us[0]), 6),
        "bound": BOUND_NAMES[int(ev.bound[0])],
        "roofline_us": round(model.roofline_us, 6),
        "efficiency": round(model.roofline_us / latency, 6),
    }
    return out


def seed_genomes(model: ShapeModel, problem: Problem, seeds: Seeds, seed: int
                 ) -> np.ndarray:
    """The seeds as valid index genomes of this shape, moved onto its domains and constraints
    with the fewest changes (:func:`~ascend_tune.tune.seeding.transfer`), best first."""
    if not seeds.configs:
        return problem.seeds
    return transfer(model, problem, [dict(c) for c in seeds.configs], seed)


def tune_shape(spec: OperatorSpec, hw: HardwareProfile, shape: Mapping[str, int],
               settings: TuneSettings, seeds: Seeds | None = None) -> dict[str, Any]:
    model = ShapeModel(spec, hw, shape)
    name, enum, valid = resolve_strategy(model, settings.strategy, settings.budget)
    baseline_values = model.baseline_values()
    problem = search_problem(model, name, enum, valid)
    problem.keep_top = max(problem.keep_top, settings.top_k)
    if seeds is not None and seeds.configs and STRATEGIES[name].builds_valid:
        problem.seeds = seed_genomes(model, problem, seeds, settings.seed)
    try:
        result = run(STRATEGIES[name](), problem, settings.budget, shape_rng(settings.seed, shape))
    except NoValidFound as exc:
        raise NoValidConfigError(no_valid_message(
            model, looked=exc.evaluations + exc.rejected)) from None
    chosen = model.values(result.genome[None, :])[0]
    best = {p: int(v) for p, v in zip(spec.params, chosen, strict=True)}
    entry = describe(model, best)
    baseline = describe(model, baseline_values)
    # The baseline may lie outside the searched domains (e.g. baseM = align16(M)); the tuner
    # never recommends a configuration slower than the one the developer already has.
    if baseline["valid"] and (baseline["predicted"]["latency_us"]
                              < entry["predicted"]["latency_us"]):
        entry = baseline
    base_summary: dict[str, Any] = {"config": baseline["config"], "valid": baseline["valid"]}
    if baseline["valid"]:
        base_summary["latency_us"] = baseline["predicted"]["latency_us"]
        entry["speedup"] = round(baseline["predicted"]["latency_us"]
                                 / entry["predicted"]["latency_us"], 6)
    else:
        base_summary["violates"] = baseline["violates"]
        entry["speedup"] = None
    candidates = (top_candidates(model, problem, entry, settings.top_k)
                  if settings.top_k > 1 else None)
    out = {
        "shape": dict(shape),
        "strategy": name,
        "best": entry.pop("config"),
        **{k: v for k, v in entry.items() if k != "valid"},
        "baseline": base_summary,
        "evaluations": result.evaluations,
        "rejected": result.rejected,
        "space_size": model.space_size,
        # Best latency so far against evaluations, each time it improved (the report's
        # convergence chart); the baseline counts as the first evaluation.
        "history": [[n, round(lat, 6)] for n, lat in result.history],
        # Only when it happened: fresh sampling inside the valid set hit its walk cap
        # (search.problem.WALKS_PER_BUDGET), on spaces where valid configurations are rare.
        **({"sampling_capped": True} if result.walks_capped else {}),
        # Only when the tuning database seeded the search: how many starts, from where.
        **({"seeded": {"configurations": len(problem.seeds), "from": list(seeds.shapes)}}
           if seeds is not None and len(problem.seeds) else {}),
    }
    if candidates is not None:
        out["candidates"] = candidates
    return out


def top_candidates(model: ShapeModel, problem: Problem, winner: Mapping[str, Any],
                   k: int) -> list[dict[str, Any]]:
    """The ``k`` best distinct configurations the search scored, described, fastest first by
    the model; the first is always the entry's winner (the baseline when it beat the search).
    Ties keep the search's deterministic order."""
    described = [winner] + [describe(model, dict(zip(model.spec.params, (int(v) for v in row),
                                                      strict=True)))
                            for row in model.values(np.array([g for g, _ in problem.top(k)]))]
    out: list[dict[str, Any]] = []
    seen: set[tuple[int, ...]] = set()
    for cand in described:
        key = tuple(cand["config"][p] for p in model.spec.params)
        if key in seen or not cand["valid"]:
            continue
        seen.add(key)
        out.append({key2: cand[key2] for key2 in CANDIDATE_KEYS if key2 in cand})
    return out[:k]


# What a candidate records: describe()'s output without the entry-level extras.
CANDIDATE_KEYS = ("config", "derived", "tiling", "block_dim", "tiling_key", "predicted")


def resolve_strategy(model: ShapeModel, strategy: str, budget: int = DEFAULT_BUDGET
                     ) -> tuple[str, Enumerator | None, np.ndarray | None]:
    """The strategy to run (``auto`` resolved by counting the valid set with the pruned
    enumeration, skipped where an estimate says it is large and stopped early when it is, and
    weighing the exact search's cost against the heuristic's at ``budget``), the enumerator
    it built and the valid set when it was counted in full."""
    if strategy != "auto":
        if strategy not in STRATEGIES:
            raise AscendTuneError(
                f"unknown strategy '{strategy}'; choose from {', '.join(STRATEGIES)}")
        return strategy, None, None
    enum = enumerator(model)
    limit = exact_limit(budget)
    if enum.estimated_valid() > COUNT_ESTIMATE_FACTOR * limit:
        return default_strategy(None, budget), enum, None
    try:
        valid = enum.indices(COUNT_PREFIX_FACTOR * limit)
    except TooMany:
        return default_strategy(None, budget), enum, None
    return default_strategy(len(valid), budget), enum, valid


def search_problem(model: ShapeModel, strategy: str, enum: Enumerator | None = None,
                   valid: np.ndarray | None = None) -> Problem:
    """The problem a strategy sees: the GA builds its proposals inside the valid set from the
    constraints' structure, exhaustive search scores the enumerated valid set."""
    base = model.nearest_indices(model.baseline_values())
    if strategy == "exhaustive":
        if valid is not None:
            known = valid
            return Problem(model.sizes, model.objective, base, valid_genomes=lambda _cap: known,
                           valid_objective=model.valid_objective,
                           valid_screen=model.may_beat)
        return Problem(model.sizes, model.objective, base,
                       valid_blocks=lambda: index_blocks(model, enum),
                       valid_objective=model.valid_objective, valid_screen=model.may_beat)
    if STRATEGIES[strategy].builds_valid:
        return Problem(model.sizes, model.objective, base, feasible=check_set(model, enum),
                       grids=model.grids)
    return Problem(model.sizes, model.objective, base)


def no_valid_message(model: ShapeModel, sample: int = 200_000, looked: int | None = None
                     ) -> str:
    """Say how many candidates each check fails (every failing check counts, so the one that
    rules out everything is named even when another fails first). Where the candidates do
    include valid ones, the search (which looked at ``looked`` configurations) missed them:
    say so, and that a larger budget finds them."""
    rng = np.random.default_rng(0)
    if model.space_size <= sample:
        genomes = decode_flat(np.arange(model.space_size, dtype=np.int64), model.sizes)
        what = f"all {model.space_size:,} candidates"
    else:
        genomes = rng.integers(0, model.sizes, size=(sample, model.sizes.size))
        what = f"{sample:,} sampled candidates of {model.space_size:,}"
    total = len(genomes)
    counts, valid = model.failure_counts(model.values(genomes))
    if valid and looked is not None:
        plural = "" if looked == 1 else "s"
        return (f"shape {shape_key(model.shape)}: the search looked at {looked:,} "
                f"configuration{plural} and found none valid, but {valid:,} of {what} are: "
                "raise --budget")
    parts = [f"{name} fails {'all' if c == total else f'{c:,}'}"
             for name, c in sorted(counts.items(), key=lambda t: -t[1]) if c]
    return (f"shape {shape_key(model.shape)}: no valid configuration; of {what}: "
            + ", ".join(parts))
