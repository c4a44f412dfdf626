"""The Ascend names every module shares: data types, pipes, transfer paths, vector instruction
classes, msprof columns and the kinds of pipeline stage. Data only, importing nothing of ours,
so the spec loader, the hardware profile, the engine, the emitter and the measurement readers
agree on one spelling without importing each other.

Sources: pipes and paths follow the AscendC programming guide's memory hierarchy (GM, L1, L0A,
L0B, L0C, UB) and its pipe names; the msprof column names are those of ``op_summary`` /
``PipeUtilization`` (docs/model.md, "Measured pipe times").
"""

from __future__ import annotations

from dataclasses import dataclass

# ---- data types ---------------------------------------------------------------------------

DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "hf32": 4, "int8": 1, "int32": 4}
DTYPES = tuple(DTYPE_BYTES)

# ---- pipes and the paths data moves along -------------------------------------------------

# An AI Core's instruction queues. The AIC (cube core) and AIV (vector core) each have their
# own set; a stage runs on one of them.
PIPES = ("mte2", "mte1", "cube", "fixpipe", "vector", "mte3", "scalar")
SIDE_PIPES = {"cube": ("mte2", "mte1", "cube", "fixpipe", "scalar"),
              "vector": ("mte2", "vector", "mte3", "scalar")}
TRANSFER_PIPES = ("mte2", "mte1", "mte3", "fixpipe")
# Buffer-to-buffer paths and the pipe that moves each.
PATH_PIPE = {"gm_to_l1": "mte2", "gm_to_ub": "mte2", "l1_to_l0a": "mte1", "l1_to_l0b": "mte1",
             "l0c_to_gm": "fixpipe", "ub_to_gm": "mte3"}
TRANSFER_PATHS = ("gm_to_l1", "gm_to_ub", "ub_to_gm", "l1_to_l0a", "l1_to_l0b", "l0c_to_gm")
GM_PATHS = frozenset({"gm_to_l1", "gm_to_ub", "ub_to_gm", "l0c_to_gm"})  # one end in GM

# ---- vector instruction classes -----------------------------------------------------------

VECTOR_CLASSES = ("unary", "binary", "exp", "div", "reduce", "fma", "sigmoid", "tanh", "erf",
                  "cast")
# Two-source classes read two operands per repeat and pay the UB bank-conflict factor.
TWO_SOURCE_CLASSES = frozenset({"binary", "fma"})

# ---- msprof columns -----------------------------------------------------------------------

# The model's per-pipe busy times under msprof's column names, in a fixed order for tables and
# JSON (``_us`` for msprof's ``(us)``).
PIPE_COLUMN = {("cube", "cube"): "aic_mac_time_us", ("cube", "mte1"): "aic_mte1_time_us",
               ("cube", "mte2"): "aic_mte2_time_us", ("cube", "fixpipe"): "aic_fixpipe_time_us",
               ("cube", "scalar"): "aic_scalar_time_us", ("vector", "vector"): "aiv_vec_time_us",
               ("vector", "mte2"): "aiv_mte2_time_us", ("vector", "mte3"): "aiv_mte3_time_us",
               ("vector", "scalar"): "aiv_scalar_time_us"}
PIPE_COLUMNS = ("aic_mac_time_us", "aic_mte1_time_us", "aic_mte2_time_us",
                "aic_fixpipe_time_us", "aic_scalar_time_us", "aiv_vec_time_us",
                "aiv_mte2_time_us", "aiv_mte3_time_us", "aiv_scalar_time_us")
# msprof column -> pipe name, for messages.
COLUMN_PIPE = {column: pipe for (_side, pipe), column in PIPE_COLUMN.items()}
# msprof CSV headers (whitespace removed, lower case) -> the model's column. Older CANN
# versions name the Cube column ``aic_cube_time``.
MSPROF_PIPE_HEADERS = {
    **{column.removesuffix("_us") + "(us)": column for column in PIPE_COLUMNS},
    "aic_cube_time(us)": "aic_mac_time_us",
}
# What can bound a configuration: a pipe, the GM bandwidth shared by all cores, or launch.
BOUND_NAMES = (*PIPE_COLUMNS, "gm_bandwidth", "head_overhead")

# ---- stage kinds --------------------------------------------------------------------------


@dataclass(frozen=True)
class StageKind:
    """One kind of pipeline stage: the keys a spec stage of this kind may and must carry."""

    name: str
    keys: frozenset[str]  # besides ``stage`` and ``pipe``
    required: tuple[str, ...]
    doc: str


# The one table the loader (keys), the engine (cost per kind), the emitter and the checks use.
STAGE_KINDS = {k.name: k for k in (
    StageKind("transfer", frozenset({"path", "bytes", "rows", "count", "l2_hit", "gm_aligned",
                                     "operand", "gm_rows", "gm_cols"}),
              ("path", "bytes"), "moves bytes along a path on an MTE or FixPipe pipe"),
    StageKind("cube", frozenset({"m", "n", "k", "dtype", "count"}), ("m", "n", "k", "dtype"),
              "Mmad of an m x k by k x n block on the Cube unit"),
    StageKind("vector", frozenset({"op", "call", "elements", "dtype", "count"}),
              ("elements", "dtype"), "a vector instruction class (op, or the AscendC call it "
              "comes from) over some elements"),
    StageKind("scalar", frozenset({"cycles"}), ("cycles",), "a fixed number of scalar cycles"),
)}


def stage_kind(pipe: str) -> str:
    """A stage's kind from its pipe: any transfer pipe moves data; the others name themselves."""
    return "transfer" if pipe in TRANSFER_PIPES else pipe
