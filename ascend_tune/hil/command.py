"""The user's measuring command: one candidate, run ``repeat`` times, its median time.

The command line is split like a shell would (``shlex``) but never run by one: each argument
has its placeholders replaced on its own, so a value with spaces or quotes stays one
argument. Placeholders (``{{`` and ``}}`` are literal braces):

* ``{shape}`` (``M=4096,N=4096,K=4096``), ``{shape_json}``, and each shape variable (``{M}``);
* ``{config_json}`` and each parameter (``{baseM}``); ``{block_dim}``, ``{tiling_key}``;
* ``{candidate}``: its rank by the model (0 = the model's pick);
* ``{tiling_blob}``: a file holding the packed TilingData bytes (``ascend_tune.emit.blob``);
* ``{headers_dir}``: a folder with the headers ``emit`` writes for this candidate alone;
* ``{work_dir}``: an empty folder for this run (e.g. ``msprof --output={work_dir}``);
* ``{device}``: the device the run is on (``ASCEND_RT_VISIBLE_DEVICES``), ``{repeat}``: the
  run's number (0 .. repeat-1).

Built-in names win over a shape variable or parameter of the same name.

The time is, in microseconds: the last match of ``pattern`` (one group) in the command's
standard output, by default a line ``time_us: <float>``; or, with ``csv``, read from the msprof
CSV the glob names (relative globs are searched in ``{work_dir}``): an ``op_summary`` /
``kernel_details`` file (``Task Duration(us)`` or ``Duration(us)``; several rows, e.g. one per
launch, give their median; ``where`` keeps rows whose columns have the given values) or an
``msprof op`` ``PipeUtilization.csv`` (the slowest block's ``aic_time(us)`` / ``aiv_time(us)``).
Per-pipe columns found in the CSV are kept for calibration.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.base.processes import process_alive
from ascend_tune.base.vocabulary import PIPE_COLUMNS
from ascend_tune.base.yamlio import LIMIT_MEASUREMENTS, ReadError, csv_rows, read_text

DEFAULT_PATTERN = r"time_us:\s*([-+0-9.eE]+)"
# Filled by the worker, not by the job.
RUN_PLACEHOLDERS = ("tiling_blob", "headers_dir", "work_dir", "device", "repeat")
JOB_PLACEHOLDERS = ("shape", "shape_json", "config_json", "block_dim", "tiling_key",
                    "candidate")
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}|[{}]")
_STDERR_TAIL = 300  # characters of a failed command's stderr kept in its error


@dataclass(frozen=True)
class Command:
    argv: tuple[str, ...]  # split, placeholders not yet replaced
    pattern: str = DEFAULT_PATTERN
    csv: str | None = None  # glob of the msprof CSV to read instead of stdout
    where: tuple[tuple[str, str], ...] = ()  # CSV rows kept: column == value
    timeout_s: float | None = None  # per run
    repeat: int = 1
    retries: int = 0  # extra attempts of a candidate whose run failed


def parse(text: str, names: Sequence[str], *, pattern: str | None = None,
          csv: str | None = None, where: Mapping[str, str] | None = None,
          timeout_s: float | None = None, repeat: int = 1, retries: int = 0) -> Command:
    """Check everything about the command before anything runs: it splits, every
    placeholder is known (``names``: the shape variables and parameters), the pattern
    compiles with one group, the numbers are in range."""
    try:
        argv = tuple(_shlex_split(text))
    except ValueError as exc:
        raise AscendTuneError(f"--run: {exc}") from None
    if not argv:
        raise AscendTuneError("--run: empty command")
    known = set(names) | set(JOB_PLACEHOLDERS) | set(RUN_PLACEHOLDERS)
    for arg in (*argv, csv or ""):
        for m in _PLACEHOLDER.finditer(arg):
            if m.group(0) in ("{", "}"):
                raise AscendTuneError(f"--run: unmatched brace in '{arg:.60}' (write {{{{ or "
                                      "}} for a literal brace)")
            if m.group(1) is not None and m.group(1) not in known:
                raise AscendTuneError(f"--run: unknown placeholder {{{m.group(1)}}}; known: "
                                      + ", ".join(f"{{{n}}}" for n in sorted(known)))
    chosen = pattern if pattern is not None else DEFAULT_PATTERN
    try:
        groups = re.compile(chosen).groups
    except re.error as exc:
        raise AscendTuneError(f"--pattern '{chosen:.60}': {exc}") from None
    if groups != 1:
        raise AscendTuneError(f"--pattern '{chosen:.60}' must have exactly one group (the "
                              f"time in microseconds), it has {groups}")
    if csv is not None and pattern is not None:
        raise AscendTuneError("--pattern and --csv contradict each other: the time comes from "
                              "the output or from a CSV")
    if repeat < 1:
        raise AscendTuneError(f"--repeat must be at least 1, got {repeat}")
    if retries < 0:
        raise AscendTuneError(f"--retries must be at least 0, got {retries}")
    if timeout_s is not None and not (math.isfinite(timeout_s) and timeout_s > 0):
        raise AscendTuneError(f"--timeout must be a positive number of seconds, got {timeout_s}")
    return Command(argv, chosen, csv, tuple(sorted((where or {}).items())), timeout_s, repeat,
                   retries)


def _shlex_split(text: str) -> list[str]:
    import shlex

    return shlex.split(text)


def substitute(arg: str, values: Mapping[str, str]) -> str:
    def one(m: re.Match[str]) -> str:
        token = m.group(0)
        if token in ("{{", "}}"):
            return token[0]
        return values[m.group(1)]

    return _PLACEHOLDER.sub(one, arg)


@dataclass(frozen=True)
class Job:
    """One candidate of one shape, everything the worker needs (it may run on another host:
    files travel as data)."""

    key: str  # shape key
    index: int  # candidate rank by the model
    values: Mapping[str, str]  # job placeholders
    blob: bytes  # packed TilingData
    headers: Mapping[str, str]  # relative path -> text, as emit writes them


@dataclass
class Outcome:
    key: str
    index: int
    time_us: float | None = None  # median over the runs; None when the candidate failed
    runs_us: list[float] = field(default_factory=list)
    pipes_us: dict[str, float] = field(default_factory=dict)  # medians, from a CSV
    error: str | None = None
    attempts: int = 0
    invocations: int = 0  # command runs started (for the ETA and the tests)
    device: str | None = None


# ---- running --------------------------------------------------------------------------------

_running: set[subprocess.Popen[bytes]] = set()
_running_lock = threading.Lock()
_stops = [0]  # kill_running calls so far: a job started before one dies with it


def kill_running() -> None:
    """Kill every command this process is waiting for (with their process groups), and the
    commands jobs already under way start after this: a measurement stopped by Ctrl-C or
    SIGTERM must not keep a device busy."""
    with _running_lock:
        _stops[0] += 1
        procs = list(_running)
    for proc in procs:
        _kill_group(proc)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        proc.kill()


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the command gets SIGKILL when the worker that started it dies (a killed
    `ascend-tune measure` leaves no command running on a device)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


RUN_DIR_PREFIX = "ascend-tune-measure-"
_RUN_DIR = re.compile(re.escape(RUN_DIR_PREFIX) + r"([0-9]+)-[A-Za-z0-9_]{8}")


def remove_killed_run_dirs() -> list[Path]:
    """The temp folders (tiling blob, headers, run folders) of measure workers that were
    killed before they could remove them: this user's, named by a pid that no longer runs."""
    removed = []
    for folder in sorted(Path(tempfile.gettempdir()).glob(f"{RUN_DIR_PREFIX}*")):
        match = _RUN_DIR.fullmatch(folder.name)
        try:
            mine = folder.is_dir() and not folder.is_symlink() \
                and folder.stat().st_uid == os.getuid()
        except OSError:
            continue
        if match is None or not mine or process_alive(int(match.group(1))):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            removed.append(folder)
    return removed


def run_job(command: Command, job: Job, *, slot: str | None = None) -> Outcome:
    """Measure one candidate: up to ``1 + retries`` attempts of ``repeat`` runs each; the
    first attempt whose runs all succeed gives the median. Never raises for a failing
    command: the error is in the outcome."""
    stops = _stops[0]
    device = slot if slot is not None else os.environ.get("ASCEND_RT_VISIBLE_DEVICES", "")
    out = Outcome(job.key, job.index, device=device or None)
    env = dict(os.environ)
    if slot is not None:
        env["ASCEND_RT_VISIBLE_DEVICES"] = slot
    # The worker's pid in the name: a later run removes the folders of killed workers.
    root = Path(tempfile.mkdtemp(prefix=f"{RUN_DIR_PREFIX}{os.getpid()}-"))
    try:
        blob = root / "tiling.bin"
        blob.write_bytes(job.blob)
        headers = root / "headers"
        for rel, text in job.headers.items():
            path = headers / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        headers.mkdir(exist_ok=True)
        for attempt in range(1 + command.retries):
            out.attempts = attempt + 1
            runs: list[float] = []
            pipes: list[dict[str, float]] = []
            try:
                for r in range(command.repeat):
                    work = root / f"run{attempt}_{r}"
                    work.mkdir()
                    values = {**job.values, "tiling_blob": str(blob),
                              "headers_dir": str(headers), "work_dir": str(work),
                              "device": device, "repeat": str(r)}
                    out.invocations += 1
                    time_us, pipe_us = _run_once(command, values, env, work, stops)
                    runs.append(time_us)
                    pipes.append(pipe_us)
            except _RunFailed as exc:
                out.error = str(exc)
                continue
            out.error = None
            out.time_us = round(statistics.median(runs), 6)
            out.runs_us = [round(t, 6) for t in runs]
            columns = sorted({c for p in pipes for c in p})
            out.pipes_us = {c: round(statistics.median(p[c] for p in pipes if c in p), 6)
                            for c in columns}
            break
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return out


class _RunFailed(Exception):
    pass


def _run_once(command: Command, values: Mapping[str, str], env: Mapping[str, str],
              work: Path, stops: int) -> tuple[float, dict[str, float]]:
    argv = [substitute(a, values) for a in command.argv]
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=dict(env), start_new_session=True,
                                preexec_fn=_die_with_parent if sys.platform.startswith("linux")
                                else None)
    except OSError as exc:
        raise _RunFailed(f"cannot run {argv[0]}: {exc.strerror}") from None
    with _running_lock:
        _running.add(proc)
        if _stops[0] != stops:  # the run was stopped while this job was under way
            _kill_group(proc)
    try:
        stdout, stderr = proc.communicate(timeout=command.timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.communicate()
        raise _RunFailed(f"timed out after {command.timeout_s:g} s") from None
    finally:
        with _running_lock:
            _running.discard(proc)
    text = stdout.decode("utf-8", errors="replace")
    if proc.returncode != 0:
        tail = stderr.decode("utf-8", errors="replace").strip()[-_STDERR_TAIL:]
        how = (f"killed by signal {-proc.returncode}" if proc.returncode < 0
               else f"exit status {proc.returncode}")
        raise _RunFailed(f"{how}" + (f": {' | '.join(tail.splitlines())}" if tail else ""))
    if command.csv is not None:
        try:
            return _from_csv(command, values, work)
        except ValueError as exc:  # a cell that is not a number, no positive block time
            raise _RunFailed(f"CSV: {exc}") from None
    matches = re.findall(command.pattern, text)
    if not matches:
        raise _RunFailed(f"no time in the output (pattern {command.pattern!r}); last line: "
                         f"{(text.strip().splitlines() or [''])[-1][:120]!r}")
    return _time(matches[-1], "the output"), {}


def _time(raw: str, where: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise _RunFailed(f"{where}: {raw[:40]!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise _RunFailed(f"{where}: {raw[:40]!r} is not a positive time")
    return value


# ---- msprof CSV -----------------------------------------------------------------------------

_DURATIONS = ("taskduration(us)", "duration(us)", "time_us")
_BLOCK_TIMES = ("aic_time(us)", "aiv_time(us)")


def _norm(header: str) -> str:
    return re.sub(r"\s+", "", header).lower()


def _pipe_column(norm: str) -> str | None:
    """msprof's ``aic_mte2_time(us)`` (older CANN: ``aic_cube_time``) -> the model's name."""
    name = norm.replace("aic_cube_time", "aic_mac_time").replace("(us)", "_us")
    return name if name in PIPE_COLUMNS else None


def _from_csv(command: Command, values: Mapping[str, str], work: Path
              ) -> tuple[float, dict[str, float]]:
    assert command.csv is not None
    pattern = substitute(command.csv, values)
    base = Path(pattern) if Path(pattern).is_absolute() else work / pattern
    anchor = Path(base.anchor)
    found = sorted(anchor.glob(str(base.relative_to(anchor))))
    files = [p for p in found if p.is_file()]
    if not files:
        raise _RunFailed(f"no CSV matches {pattern!r}")
    path = files[-1]  # several (a rerun in the same folder): the last by name
    try:
        text = read_text(path, "msprof CSV", LIMIT_MEASUREMENTS)
        rows = list(csv_rows(text, str(path), comments=True))
    except (AscendTuneError, ReadError) as exc:
        raise _RunFailed(str(exc)) from None
    if len(rows) < 2:
        raise _RunFailed(f"{path.name}: no data rows")
    header = [_norm(h) for h in rows[0][1]]
    records = [dict(zip(header, (v.strip() for v in r), strict=False)) for _line, r in rows[1:]]
    where = {_norm(k): v for k, v in command.where}
    missing = [k for k in where if k not in header]
    if missing:
        raise _RunFailed(f"{path.name}: no column {missing[0]!r} (--where)")
    records = [r for r in records if all(r.get(k) == v for k, v in where.items())]
    if not records:
        raise _RunFailed(f"{path.name}: no row matches --where")
    pipes: dict[str, list[float]] = {}
    for norm in header:
        column = _pipe_column(norm)
        if column is not None:
            pipes[column] = [_time(r[norm], f"{path.name}: {norm}") for r in records
                             if r.get(norm) and float(r[norm] or 0) > 0]
    if "block_id" in header:  # msprof op PipeUtilization: one row per block
        cols = [c for c in _BLOCK_TIMES if c in header]
        if not cols:
            raise _RunFailed(f"{path.name}: no aic_time(us) or aiv_time(us) column")
        time_us = max(_time(r[c], f"{path.name}: {c}") for r in records for c in cols
                      if r.get(c) and float(r[c]) > 0)
        return time_us, {c: max(v) for c, v in pipes.items() if v}
    column = next((c for c in _DURATIONS if c in header), None)
    if column is None:
        raise _RunFailed(f"{path.name}: no Task Duration(us), Duration(us) or time_us column")
    times = [_time(r.get(column, ""), f"{path.name}: {column}") for r in records]
    return statistics.median(times), {c: statistics.median(v) for c, v in pipes.items() if v}
