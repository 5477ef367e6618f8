"""MLflow tracking data, read with the standard library (no MLflow needed).

The SQLite store (`mlflow.db`, MLflow's default since 3.7): tables runs (name, status, start and
end times in ms), metrics (key, value, timestamp ms, step, is_nan), params and tags. A NaN is
stored as value 0.0 with is_nan = 1, and is read back as NaN. The database is opened read-only.
A store in WAL mode (a server or a live run writes `mlflow.db-wal` beside it) keeps its latest
commits in the WAL until a checkpoint: the database and its WAL are then copied to a temporary
folder and read there, so those commits are seen and nothing in LOGS is written.

The older file store (`mlruns/<experiment>/<run>/`): meta.yaml (run_name, status, start_time,
end_time), metrics/<key> files with one "timestamp value step" line per value, params/<key> and
tags/<key> files holding one value each.

Each MLflow run is one source, keyed by its store and uuid; ingest/identity.py decides which run
it is: the Trainer output folder its `output_dir` parameter names, the run folder of its name,
or a run of its own named by its run name (the `mlflow.runName` tag). Status: FINISHED is
completed; FAILED and KILLED are interrupted; RUNNING with no end time is said as such (its
process died without ending the run, or it is still running) and decides nothing on its own.
"""

from __future__ import annotations

import bisect
import math
import shutil
import sqlite3
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath

from reportgen.boundary import open_file
from reportgen.ingest.common import (
    LineRead,
    MetricRows,
    Reading,
    decode_text,
    duration_problem,
    from_epoch,
    is_eval,
    is_number,
    quoted,
    read_document,
    read_lines,
    read_mapping,
    row_kind,
    text_lines,
)
from reportgen.ingest.scan import Kept, Reader, Scan, Source, folder_name, parents
from reportgen.model import Evaluation, Evidence, InputFile, RunFacts

SQLITE_FORMAT = "mlflow-sqlite"
FILES_FORMAT = "mlflow-files"
_STATUS = {"FINISHED": "completed", "FAILED": "interrupted", "KILLED": "interrupted", "RUNNING": None,
           "SCHEDULED": None}
# The file store writes status as RunStatus enum numbers.
_FILE_STATUS = {1: "RUNNING", 2: "SCHEDULED", 3: "FINISHED", 4: "FAILED", 5: "KILLED"}


def sniff_sqlite(head: bytes) -> bool:
    return head.startswith(b"SQLite format 3\x00")


@dataclass(frozen=True)
class MlflowRun:
    """One MLflow run as a source: its provisional key, its name and uuid, and the parameters it logged."""

    key: str
    name: str | None
    uuid: str
    params: dict[str, str]
    evidence: Evidence
    parent: str | None = None  # the uuid of the run it is nested in (the mlflow.parentRunId tag)


def _millis(value: object) -> datetime | None:
    """An MLflow time (Unix milliseconds) as a datetime; None for anything else ('yesterday', a list, the
    year 33658, a 64-bit overflow)."""
    if not is_number(value) or (isinstance(value, int) and abs(value) >= 1 << 63):  # MLflow keeps 64-bit milliseconds
        return None
    return from_epoch(value / 1000)  # type: ignore[operator]


def _run_times(start: object, end: object, info: InputFile, run: str) -> tuple[datetime | None, datetime | None]:
    """A run's start and end; one that is given and is no time is a problem, and the run is read without it."""
    times = []
    for key, value in (("start_time", start), ("end_time", end)):
        at = _millis(value)
        if value is not None and at is None:
            info.problem(None, f"{run}{key} {quoted(value)} is no time between 1970 and 2199 (Unix milliseconds); "
                         "the run is read without it")
        times.append(at)
    return times[0], times[1]


def _status(status: object, ended: bool) -> tuple[str | None, str]:
    if not isinstance(status, str):
        return None, f"MLflow run status {status!r} is not one MLflow writes"
    mapped = _STATUS.get(status or "")
    if status == "RUNNING":
        return mapped, ("MLflow still shows the run as RUNNING with no end time: its process ended without ending "
                        "the run, or it is still running")
    return mapped, f"MLflow run status {status}" + ("" if ended else " (no end time)")


def _eval_event(run: str, step: int, at, evidence: Evidence, values: dict[str, float]) -> list:
    metrics = {k: v for k, v in values.items() if is_eval(k)}
    if not metrics or at is None:
        return []
    seconds = metrics.get("eval_runtime")
    if seconds is not None and duration_problem(seconds, "eval_runtime") is not None:
        seconds = None
    return [Evaluation(run, step, at, evidence, metrics, seconds=seconds)]


def _max_steps(params: dict[str, str]) -> int | None:
    """max_steps as a parameter (MLflow keeps every parameter as a string)."""
    try:
        value = int(params.get("max_steps", ""))
    except ValueError:
        return None
    return value if value > 0 else None


WAL_SUFFIX, SHM_SUFFIX = "-wal", "-shm"


def read_sqlite(path: Path, rel: str, wal: Path | None = None) -> tuple[Reading, list[MlflowRun]] | None:
    """Every run in an MLflow SQLite store; None when the database is not an MLflow store.

    `wal` is the store's write-ahead log when LOGS holds one that is not empty: its commits are read
    from a copy of the database and the WAL in a temporary folder."""
    info = InputFile(path=rel, format=SQLITE_FORMAT)
    if wal is None:
        return _read_store(f"file:{path}?mode=ro&immutable=1", rel, info)
    with tempfile.TemporaryDirectory(prefix="reportgen-mlflow-") as folder:
        copy = Path(folder) / "mlflow.db"
        for source, target in ((path, copy), (wal, copy.with_name(copy.name + WAL_SUFFIX))):
            with open_file(source) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
        read = _read_store(f"file:{copy}?mode=ro", rel, info)
        if read is not None:
            info.notes.append(f"the store is in WAL mode: the commits still in {PurePosixPath(rel).name}{WAL_SUFFIX} "
                              "were read from a copy of the database and its WAL (LOGS is not written)")
        return read


def store_parts(rel: str, logged: bool) -> list[tuple[str, str]]:
    """The files SQLite keeps beside a store in WAL mode, each with what it is; `logged`: the WAL was read."""
    name = PurePosixPath(rel).name
    wal = (f"the write-ahead log of {name}: its commits were read with the database" if logged
           else f"the write-ahead log of {name}, empty")
    return [(rel + WAL_SUFFIX, wal),
            (rel + SHM_SUFFIX, f"the shared-memory index of {name}'s write-ahead log: rebuilt from it, not read")]


def _read_store(uri: str, rel: str, info: InputFile) -> tuple[Reading, list[MlflowRun]] | None:
    try:
        db = sqlite3.connect(uri, uri=True)
    except sqlite3.Error:
        return None
    # A damaged page can hold text that is not UTF-8: read it with U+FFFD where bytes do not decode,
    # rather than fail the whole store on one name.
    db.text_factory = lambda raw: raw.decode("utf-8", errors="replace")
    try:
        tables = {r[0] for r in db.execute("select name from sqlite_master where type='table'")}
        if not {"runs", "metrics", "params", "tags"} <= tables:
            return None
        reading = Reading(inputs=[info])
        sources: list[MlflowRun] = []
        rows = MetricRows(rel)
        runs = db.execute("select run_uuid, name, status, start_time, end_time, lifecycle_stage, rowid "
                          "from runs order by start_time, run_uuid").fetchall()
        for uuid, name, status, start, end, stage, rowid in runs:
            if stage == "deleted":
                continue
            tags = dict(db.execute("select key, value from tags where run_uuid = ?", (uuid,)).fetchall())
            params = dict(db.execute("select key, value from params where run_uuid = ?", (uuid,)).fetchall())
            run_id = f"{rel}#{uuid}"
            evidence = Evidence(rel, None)
            sources.append(MlflowRun(run_id, tags.get("mlflow.runName") or name, uuid, params, evidence,
                                     tags.get("mlflow.parentRunId")))
            mapped, reason = _status(status, end is not None)
            started, ended = _run_times(start, end, info, f"run {uuid}: ")
            reading.events.append(RunFacts(
                run=run_id, format=SQLITE_FORMAT, evidence=evidence, status=mapped, reason=reason,
                started_at=started, ended_at=ended,
                config={"params": params} if params else None, max_steps=_max_steps(params)))
            by_step: dict[tuple[int, int], dict[str, float]] = {}
            damaged: list[str] = []
            for key, value, ts, step, is_nan in db.execute(
                    "select key, value, timestamp, step, is_nan from metrics where run_uuid = ? order by step, timestamp, key",
                    (uuid,)):
                number = math.nan if is_nan else float(value) if is_number(value) else None
                if number is None or isinstance(step, bool) or not isinstance(step, int) or _millis(ts) is None:
                    damaged.append(f"{key} at step {step!r}")
                    continue
                by_step.setdefault((step, ts), {})[key] = number
            if damaged:
                info.problem(None, f"run {uuid}: {len(damaged)} metric value{'s' if len(damaged) > 1 else ''} with a value, "
                             f"step or time that is not a number (first: {damaged[0]}); skipped")
                info.skipped += len(damaged)
            for (step, ts), values in by_step.items():
                at = _millis(ts)
                rows.add(run_id, row_kind(list(values)), step, None, at, values)
                info.records += 1
                reading.events += _eval_event(run_id, step, at, evidence, values)
        reading.frames.append(rows.frame())
        return reading, sources
    except sqlite3.DatabaseError as exc:
        info.problem(None, f"the database cannot be read: {exc}")
        return Reading(inputs=[info]), []
    except UnicodeDecodeError:  # SQLite's own message about a damaged schema, in bytes that are not UTF-8
        info.problem(None, "the database cannot be read: its schema is damaged")
        return Reading(inputs=[info]), []
    finally:
        db.close()


def is_run_meta(head: bytes) -> bool:
    return b"run_id:" in head and b"experiment_id:" in head and b"lifecycle_stage:" in head


def _under(paths: Sequence[str], prefix: str) -> list[str]:
    """The paths of a sorted list that start with prefix."""
    start = bisect.bisect_left(paths, prefix)
    end = bisect.bisect_left(paths, prefix[:-1] + chr(ord(prefix[-1]) + 1))
    return list(paths[start:end])


def read_file_run(folder: Path, logs: Path, readable: Sequence[str]) -> tuple[Reading, MlflowRun]:
    """One run folder of the file store: meta.yaml, metrics/, params/, tags/. Only the files LOGS lists as
    readable (`readable`: sorted paths relative to LOGS) are read: a link out of LOGS is listed there, not read."""
    return read_file_run_on(folder, logs, readable, None, keep=False)[0]


def read_file_run_on(folder: Path, logs: Path, readable: Sequence[str], since: dict[str, MetricFile] | None,
                     keep: bool = True) -> tuple[tuple[Reading, MlflowRun], dict[str, MetricFile]]:
    """read_file_run, each metric file read on from where the last read of the folder stopped (`since`, kept by the
    parse cache) when MLflow has only appended lines to it; with what to keep of each now. The folder's other
    files (one value each) are read whole."""
    rel_folder = folder.relative_to(logs).as_posix()
    reading = Reading()
    meta_info = InputFile(path=f"{rel_folder}/meta.yaml", format=FILES_FORMAT)
    reading.inputs.append(meta_info)
    meta = read_mapping(folder / "meta.yaml", meta_info, "an MLflow meta.yaml holds one mapping") or {}

    def values_of(sub: str) -> dict[str, str]:
        out = {}
        prefix = f"{rel_folder}/{sub}/"
        for rel in _under(readable, prefix):
            info = InputFile(path=rel, format=FILES_FORMAT, records=1)
            reading.inputs.append(info)
            try:
                raw = read_document(logs / rel, info)
                out[rel[len(prefix):]] = (decode_text(raw or b"") or "").strip()
            except OSError as exc:
                info.records = 0
                info.problem(None, f"cannot be read: {exc.strerror}")
        return out

    tags = values_of("tags")
    params = values_of("params")
    uuid = str(meta.get("run_id") or meta.get("run_uuid") or folder.name)
    run_id = rel_folder
    name = tags.get("mlflow.runName") or meta.get("run_name")
    source = MlflowRun(run_id, str(name) if name else None, uuid, params, Evidence(meta_info.path),
                       tags.get("mlflow.parentRunId"))
    status = meta.get("status")
    status = _FILE_STATUS.get(status, status) if isinstance(status, int) and not isinstance(status, bool) else status
    start, end = meta.get("start_time"), meta.get("end_time")
    mapped, reason = _status(status, end is not None)
    started, ended = _run_times(start, end, meta_info, "")
    reading.events.append(RunFacts(
        run=run_id, format=FILES_FORMAT, evidence=Evidence(meta_info.path), status=mapped, reason=reason,
        started_at=started, ended_at=ended,
        config={"params": params} if params else None, max_steps=_max_steps(params)))
    metrics_dir = folder / "metrics"
    kept: dict[str, MetricFile] = {}
    for rel in _under(readable, f"{rel_folder}/metrics/"):
        fresh = MetricFile(rel, run_id, (logs / rel).relative_to(metrics_dir).as_posix())
        read, kept_file = read_lines(logs / rel, fresh, (since or {}).get(rel),
                                     "not UTF-8 text; an MLflow metric file holds 'timestamp value step' lines", keep=keep)
        reading.inputs.append((read or fresh).info)
        if kept_file is not None:
            kept[rel] = kept_file
        if read is not None:
            read.info.lines = read.lines
            reading.events += read.events
            reading.frames.append(read.rows.frame())
    return (reading, source), kept


class MetricFile(LineRead):
    """One metric file of the file store (`timestamp value step` lines) read line by line: its rows and
    evaluations so far."""

    def __init__(self, rel: str, run_id: str, key: str) -> None:
        super().__init__(InputFile(path=rel, format=FILES_FORMAT))
        self.run_id, self.key = run_id, key
        self.rows = MetricRows(rel)
        self.events: list = []

    def feed(self, text: str, first: int, unterminated: bool = False) -> None:
        info, rows, key, run_id = self.info, self.rows, self.key, self.run_id
        for number, line in enumerate(text_lines(text), start=first):
            self.lines = number
            if not line.strip():
                info.blank += 1
                continue
            parts = line.split()
            try:
                ts, value = int(parts[0]), float(parts[1])
                step = int(parts[2]) if len(parts) > 2 else 0
                if len(parts) > 3 or abs(step) >= 1 << 63:  # steps are 64-bit integers
                    raise ValueError
            except (ValueError, IndexError):
                info.skip(number, f"not a 'timestamp value step' line: {line[:80]!r}"
                          + ("; the last line is cut off" if unterminated else ""))
                continue
            at = _millis(ts)
            if at is None:
                info.problem(number, f"timestamp {quoted(ts)} is no time between 1970 and 2199 (Unix milliseconds); "
                             "the value is read without a time")
            rows.add(run_id, row_kind([key]), step, number, at, {key: value})
            info.records += 1
            self.events += _eval_event(run_id, step, at, Evidence(info.path, number), {key: value})


def recognise(rel: str, head: bytes) -> str | None:
    if sniff_sqlite(head):
        return "sqlite"
    if PurePosixPath(rel).name == "meta.yaml" and is_run_meta(head):
        return "mlflow-run-meta"
    return None


def claim_folders(scan: Scan) -> None:
    """A file store's run folder (the folder of a run's meta.yaml) is a run folder: what its artifacts/
    hold (a TensorBoard file, a captured log) belongs to that run."""
    for rel in scan.files("mlflow-run-meta"):
        folder = parents(rel)[0]
        if folder not in scan.run_dirs:
            scan.run_folder(folder, Source(folder, FILES_FORMAT, folder_name(folder), Evidence(rel)))


def read_files(scan: Scan) -> None:
    for rel in scan.files("sqlite"):
        wal = rel + WAL_SUFFIX
        with scan.contained(rel, SQLITE_FORMAT):
            logged = wal in scan.found and len(scan.found[wal][1]) > 0  # its first bytes: not empty
            # Kept between builds while the store and its write-ahead log are unchanged (ingest/cache.py).
            store = [rel, wal] if logged else [rel]
            read = scan.read_one(rel, lambda rel, wal=wal, logged=logged: read_sqlite(
                scan.found[rel][0], rel, scan.found[wal][0] if logged else None), Kept(SQLITE_FORMAT, members=lambda _rel, store=store: store))
            if read is not None:
                reading, runs = read
                scan.add(reading)
                _sources(scan, runs, SQLITE_FORMAT)
                scan.done(rel)
                _store_parts(scan, rel, logged)
    readable = sorted(scan.found)
    for rel in scan.files("mlflow-run-meta"):
        with scan.contained(rel, FILES_FORMAT):
            folder = parents(rel)[0]
            # Kept between builds while the run folder's files are unchanged (ingest/cache.py).
            inside = _under(readable, f"{folder}/") if folder else readable
            reading, run = scan.read_one(folder, lambda folder: read_file_run(scan.logs / folder, scan.logs, readable),
                                         Kept(FILES_FORMAT, members=lambda _folder, inside=inside: inside,
                                              resume=lambda folder, since, readable=readable:
                                                  read_file_run_on(scan.logs / folder, scan.logs, readable, since)))
            scan.add(reading)
            _sources(scan, [run], FILES_FORMAT)
            for info in reading.inputs:
                scan.done(info.path)
    for rel in scan.files(None):
        if PurePosixPath(rel).name == "meta.yaml" and b"experiment_id:" in scan.found[rel][1]:
            scan.add(Reading([InputFile(rel, FILES_FORMAT, records=1)]))  # an experiment's
            scan.done(rel)


def _store_parts(scan: Scan, rel: str, logged: bool) -> None:
    """The -wal and -shm files beside an MLflow store: listed as parts of it, never as unknown files."""
    for part, note in store_parts(rel, logged):
        if part in scan.found and part not in scan.claimed:
            info = InputFile(part, SQLITE_FORMAT, records=0)
            info.notes.append(note)
            scan.add(Reading([info]))
            scan.done(part)


def _sources(scan: Scan, runs: list[MlflowRun], fmt: str) -> None:
    for run in runs:
        scan.sources[run.key] = Source(run.key, fmt, run.name or run.uuid, run.evidence, params=run.params,
                                       uuid=run.uuid, parent=run.parent)


READER = Reader(SQLITE_FORMAT, recognise, read_files, claim_folders)
