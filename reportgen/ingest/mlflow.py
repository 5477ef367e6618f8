"""MLflow tracking data, read with the standard library (no MLflow needed).

The SQLite store (`mlflow.db`, MLflow's default since 3.7): tables runs (name, status, start and
end times in ms), metrics (key, value, timestamp ms, step, is_nan), params and tags. A NaN is
stored as value 0.0 with is_nan = 1, and is read back as NaN. The database is opened read-only.

The older file store (`mlruns/<experiment>/<run>/`): meta.yaml (run_name, status, start_time,
end_time), metrics/<key> files with one "timestamp value step" line per value, params/<key> and
tags/<key> files holding one value each.

A run's id is its run name (the `mlflow.runName` tag), so an MLflow run merges with the output
folder of the same name. Status: FINISHED is completed; FAILED and KILLED are interrupted; a run
still RUNNING with no end time is interrupted too (its process died without ending it).
"""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

from reportgen.ingest.common import (
    MetricRows,
    Reading,
    decode_text,
    from_epoch,
    read_mapping,
)
from reportgen.ingest.lightning import is_eval
from reportgen.model import Evaluation, Evidence, InputFile, RunFacts

SQLITE_FORMAT = "mlflow-sqlite"
FILES_FORMAT = "mlflow-files"
_STATUS = {"FINISHED": "completed", "FAILED": "interrupted", "KILLED": "interrupted", "RUNNING": "interrupted",
           "SCHEDULED": None}
# The file store writes status as RunStatus enum numbers.
_FILE_STATUS = {1: "RUNNING", 2: "SCHEDULED", 3: "FINISHED", 4: "FAILED", 5: "KILLED"}


def sniff_sqlite(head: bytes) -> bool:
    return head.startswith(b"SQLite format 3\x00")


def _status(status: str | None, ended: bool) -> tuple[str | None, str]:
    mapped = _STATUS.get(status or "")
    if status == "RUNNING":
        return mapped, "MLflow still shows the run as RUNNING with no end time: its process ended without ending the run"
    return mapped, f"MLflow run status {status}" + ("" if ended else " (no end time)")


def _eval_event(run: str, step: int, at, evidence: Evidence, values: dict[str, float]) -> list:
    metrics = {k: v for k, v in values.items() if is_eval(k)}
    return [Evaluation(run, step, at, evidence, metrics)] if metrics and at is not None else []


def read_sqlite(path: Path, rel: str, taken: dict[str, dict]) -> Reading | None:
    """Every run in an MLflow SQLite store; None when the database is not an MLflow store."""
    info = InputFile(path=rel, format=SQLITE_FORMAT)
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error:
        return None
    try:
        tables = {r[0] for r in db.execute("select name from sqlite_master where type='table'")}
        if not {"runs", "metrics", "params", "tags"} <= tables:
            return None
        reading = Reading(inputs=[info])
        rows = MetricRows(rel)
        runs = db.execute("select run_uuid, name, status, start_time, end_time, lifecycle_stage, rowid "
                          "from runs order by start_time, run_uuid").fetchall()
        for uuid, name, status, start, end, stage, rowid in runs:
            if stage == "deleted":
                continue
            tags = dict(db.execute("select key, value from tags where run_uuid = ?", (uuid,)).fetchall())
            params = dict(db.execute("select key, value from params where run_uuid = ?", (uuid,)).fetchall())
            run_id, clash = _run_id(tags.get("mlflow.runName") or name, uuid, taken, params)
            if clash:
                info.problem(None, clash)
            evidence = Evidence(rel, None)
            mapped, reason = _status(status, end is not None)
            reading.events.append(RunFacts(
                run=run_id, format=SQLITE_FORMAT, evidence=evidence, status=mapped, reason=reason,
                started_at=from_epoch(start / 1000 if start else None), ended_at=from_epoch(end / 1000 if end else None),
                config={"params": params} if params else None))
            by_step: dict[tuple[int, int], dict[str, float]] = {}
            for key, value, ts, step, is_nan in db.execute(
                    "select key, value, timestamp, step, is_nan from metrics where run_uuid = ? order by step, timestamp, key",
                    (uuid,)):
                by_step.setdefault((step, ts), {})[key] = math.nan if is_nan else float(value)
            for (step, ts), values in by_step.items():
                at = from_epoch(ts / 1000)
                kind = "eval" if all(is_eval(k) for k in values) else "train"
                rows.add(run_id, kind, step, None, at, values)
                info.records += 1
                reading.events += _eval_event(run_id, step, at, evidence, values)
        reading.frames.append(rows.frame())
        return reading
    except sqlite3.DatabaseError as exc:
        info.problem(None, f"the database cannot be read: {exc}")
        return Reading(inputs=[info])
    finally:
        db.close()


def _run_id(name: str | None, uuid: str, taken: dict[str, dict], params: dict) -> tuple[str, str | None]:
    """The run name, and a problem when the name was already used with other parameters (R10).

    A name used by two MLflow runs gets the run's uuid added to stay unique; `taken` maps every
    name used so far to its run's parameters.
    """
    run_id = name or uuid
    clash = None
    if run_id in taken:
        if taken[run_id] != params:
            clash = (f"MLflow run name '{run_id}' is used again by run {uuid} with different parameters: "
                     f"a changed configuration needs a new run name (R10); shown as '{run_id}-{uuid[:8]}'")
        run_id = f"{run_id}-{uuid[:8]}"
    taken[run_id] = params
    return run_id, clash


def is_run_meta(head: bytes) -> bool:
    return b"run_id:" in head and b"experiment_id:" in head and b"lifecycle_stage:" in head


def read_file_run(folder: Path, logs: Path, taken: dict[str, dict]) -> Reading:
    """One run folder of the file store: meta.yaml, metrics/, params/, tags/."""
    rel_folder = folder.relative_to(logs).as_posix()
    reading = Reading()
    meta_info = InputFile(path=f"{rel_folder}/meta.yaml", format=FILES_FORMAT)
    reading.inputs.append(meta_info)
    meta = read_mapping(folder / "meta.yaml", meta_info, "an MLflow meta.yaml holds one mapping") or {}

    def values_of(sub: str) -> dict[str, str]:
        out = {}
        base = folder / sub
        for file in sorted(base.rglob("*")) if base.is_dir() else []:
            if file.is_file():
                info = InputFile(path=file.relative_to(logs).as_posix(), format=FILES_FORMAT, records=1)
                reading.inputs.append(info)
                out[file.relative_to(base).as_posix()] = (decode_text(file.read_bytes()) or "").strip()
        return out

    tags = values_of("tags")
    params = values_of("params")
    uuid = str(meta.get("run_id") or meta.get("run_uuid") or folder.name)
    run_id, clash = _run_id(tags.get("mlflow.runName") or meta.get("run_name"), uuid, taken, params)
    if clash:
        meta_info.problem(None, clash)
    status = meta.get("status")
    status = _FILE_STATUS.get(status, status) if isinstance(status, int) else status
    start, end = meta.get("start_time"), meta.get("end_time")
    mapped, reason = _status(status, end is not None)
    reading.events.append(RunFacts(
        run=run_id, format=FILES_FORMAT, evidence=Evidence(meta_info.path), status=mapped, reason=reason,
        started_at=from_epoch(start / 1000 if isinstance(start, (int, float)) else None),
        ended_at=from_epoch(end / 1000 if isinstance(end, (int, float)) else None),
        config={"params": params} if params else None))
    metrics_dir = folder / "metrics"
    for file in sorted(metrics_dir.rglob("*")) if metrics_dir.is_dir() else []:
        if not file.is_file():
            continue
        rel = file.relative_to(logs).as_posix()
        key = file.relative_to(metrics_dir).as_posix()
        info = InputFile(path=rel, format=FILES_FORMAT)
        reading.inputs.append(info)
        rows = MetricRows(rel)
        text = decode_text(file.read_bytes())
        if text is None:
            info.problem(None, "not UTF-8 text; an MLflow metric file holds 'timestamp value step' lines")
            continue
        lines = text.split("\n")
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            parts = line.split()
            try:
                ts, value = int(parts[0]), float(parts[1])
                step = int(parts[2]) if len(parts) > 2 else 0
                if len(parts) > 3:
                    raise ValueError
            except (ValueError, IndexError):
                cut = number == len(lines) and not text.endswith("\n")
                info.problem(number, f"not a 'timestamp value step' line: {line[:80]!r}"
                             + ("; the last line is cut off" if cut else ""))
                info.skipped += 1
                continue
            at = from_epoch(ts / 1000)
            rows.add(run_id, "eval" if is_eval(key) else "train", step, number, at, {key: value})
            info.records += 1
            reading.events += _eval_event(run_id, step, at, Evidence(rel, number), {key: value})
        reading.frames.append(rows.frame())
    return reading
