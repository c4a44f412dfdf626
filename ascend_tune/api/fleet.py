"""`measure --executor ray` and the tuning database: the fleet records into one database.

* **Each node records.** A candidate's task measures it on the node Ray placed it on and
  records the outcome in the database from there, as it completes (the driver only journals
  the results file). The record's host is the node's; its protocol is the run's (command,
  repeats and the driver's host), so a later `measure` of the same file skips what any node
  measured.
* **Exactly once.** Each candidate of a run has its own record uid (the run, the shape, the
  candidate). A task whose worker dies (killed, its host lost) is tried again by Ray on
  another worker: a try finds the uid recorded and returns that measurement without running
  the command again, and a uid already held is never written twice.
* **Chips never mix.** Each task asks for one ``NPU`` and one ``NPU_<chip>`` (the results
  file's hardware profile): a host of that chip advertises both, its device count each
  (``ray start --resources '{"NPU": 8, "NPU_ascend910b3": 8}'``), so Ray places a candidate
  only on a node of the chip it was tuned for.
* **A SQLite file is one host's.** A cluster whose live nodes span several hosts with a
  SQLite database is refused before anything runs: give the team's PostgreSQL.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.db.engine import Database
from ascend_tune.db.records import Keys, Protocol, host_name, measurement_by_uid
from ascend_tune.db.records import record_measurement as _record
from ascend_tune.hardware import HardwareProfile
from ascend_tune.hil import candidates as _cands
from ascend_tune.hil.command import Command, Job, Outcome, run_job
from ascend_tune.hil.run import measured_of

# Tries of a candidate whose worker died, after the first.
RETRIES_AFTER_WORKER_LOSS = 3


def soc_resource(hw: HardwareProfile) -> str:
    """The Ray resource a host of this chip advertises, one per device."""
    return f"NPU_{hw.name}"


def node_hosts(nodes: list[dict[str, Any]]) -> list[str]:
    """The distinct hosts of a Ray cluster's live nodes (their addresses), sorted."""
    return sorted({str(n.get("NodeManagerAddress") or n.get("NodeManagerHostname") or "?")
                   for n in nodes})


def refuse_sqlite_fleet(database: Database) -> Any:
    """A cluster check (``RayExecutor.check``): a SQLite file with nodes on several hosts is
    refused (the other hosts cannot write it)."""

    def check(nodes: list[dict[str, Any]]) -> None:
        hosts = node_hosts(nodes)
        if database.url.startswith("sqlite") and len(hosts) > 1:
            raise AscendTuneError(
                f"database {database.shown}: a SQLite file is this host's only, and the Ray "
                f"cluster's nodes are on {len(hosts)} hosts ({', '.join(hosts[:4])}): give "
                "the team's PostgreSQL (--db postgresql://... or ASCEND_TUNE_DB)")

    return check


@dataclass(frozen=True)
class NodeRecord:
    """What a node records one candidate's outcome with (plain values: Ray pickles it)."""

    url: str
    keys: Keys
    protocol: Protocol
    uid: str
    shape: dict[str, int]
    config: dict[str, int]
    baseline: bool
    predicted_us: float | None


_OPEN: dict[str, Database] = {}  # per worker process: one engine per database URL


def _database(url: str) -> Database:
    db = _OPEN.get(url)
    if db is None:
        db = _OPEN[url] = Database(url)
    return db


def measure_on_node(command: Command, job: Job, record: NodeRecord, *,
                    slot: str | None = None) -> Outcome:
    """The Ray task: measure one candidate here and record it, unless an earlier try of the
    same task recorded it already (then that measurement, the command not run again)."""
    db = _database(record.url)
    held = measurement_by_uid(db, record.uid)
    if held is not None:
        measured, device = held
        return Outcome(job.key, job.index, time_us=measured.get("time_us"),
                       runs_us=list(measured.get("runs_us") or []),
                       pipes_us=dict(measured.get("pipes_us") or {}),
                       error=measured.get("error"), attempts=int(measured.get("attempts", 0)),
                       invocations=0, device=device)
    outcome = run_job(command, job, slot=slot)
    _record(db, record.keys, record.protocol, record.shape, record.config,
            measured_of(outcome), baseline=record.baseline, predicted_us=record.predicted_us,
            device=outcome.device, uid=record.uid)
    return outcome


def node_records(database: Database, keys: Keys, protocol: Protocol) -> Any:
    """``task_extra`` of ``hil.run.run_measure``: each job's :class:`NodeRecord` (a fresh
    run id per call, so a later ``--remeasure`` records anew)."""
    run_id = uuid.uuid4().hex
    # The protocol's host is the driver's: a rerun of the same file skips what any node
    # measured; the record's own host (Keys.host left empty) is the node's.
    how = replace(protocol, host=protocol.host or host_name())

    def extra(entry: Mapping[str, Any], index: int, job: Job) -> NodeRecord:
        is_base = index == _cands.BASELINE
        item = entry["baseline"] if is_base else _cands.candidates(entry)[index]
        predicted = (item.get("latency_us") if is_base
                     else item.get("predicted", {}).get("latency_us"))
        uid = hashlib.sha256(f"{run_id}|{job.key}|{index}".encode()).hexdigest()
        return NodeRecord(database.url, keys, how, uid, dict(entry["shape"]),
                          dict(item["config"]), is_base, predicted)

    return extra
