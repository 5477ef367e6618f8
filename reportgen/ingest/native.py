"""Reader of reportgen's native JSONL event log (docs/events.md).

Built for logs of millions of lines: `metric` lines, the bulk of any log, are parsed by
pyarrow's multi-threaded JSON reader chunk by chunk and stay columnar. The rare events (run
start/end, eval, checkpoints, stops, steps, decisions) are re-read one by one with the standard
library, so their fields stay exactly as written. A chunk pyarrow cannot read (a damaged line,
bad UTF-8, a value whose type changes) is read line by line instead: each bad line is counted
and reported with its number, and every good line of the chunk is still kept.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.json as pa_json

from reportgen.model import (
    CheckpointOp,
    Evaluation,
    Evidence,
    InputFile,
    LoggedDecision,
    LoggedStop,
    ReloadTest,
    RunEvent,
    StepMark,
)

FORMAT = "reportgen-events"
CHUNK_BYTES = 16 << 20
RUN_EVENTS = {"run_start", "run_end", "eval", "checkpoint_save", "checkpoint_transfer", "checkpoint_restore", "reload_test", "stop"}
CAMPAIGN_EVENTS = {"step_start", "step_end", "decision"}
EVENT_TYPES = {"metric"} | RUN_EVENTS | CAMPAIGN_EVENTS
_CORE_SCHEMA = pa.schema(
    [("ts", pa.timestamp("us", tz="UTC")), ("run", pa.string()), ("type", pa.string()), ("step", pa.int64())]
)
_PARSE_OPTIONS = pa_json.ParseOptions(explicit_schema=_CORE_SCHEMA, unexpected_field_behavior="infer")


class _BadRecord(ValueError):
    """A line that is JSON but not a usable event; the message says which key is wrong."""


@dataclass
class NativeLog:
    """What one event file holds: the metric rows (columnar) and the rare events."""

    input: InputFile
    metrics: pd.DataFrame
    events: list = field(default_factory=list)


@dataclass
class _Collector:
    info: InputFile
    frames: list[pd.DataFrame] = field(default_factory=list)
    metric_rows: list[dict] = field(default_factory=list)
    events: list = field(default_factory=list)

    def flush_rows(self) -> None:
        """Turn the rows read one by one into a frame like the columnar path's."""
        if not self.metric_rows:
            return
        rows = self.metric_rows
        frame = pd.DataFrame({key: [row[key] for row in rows] for key in ("line", "run", "kind", "step")})
        frame["step"] = frame["step"].astype("Int64")
        frame["ts"] = pd.to_datetime([row["ts"] for row in rows], utc=True).astype("datetime64[us, UTC]")
        names = sorted({key for row in rows for key in row} - {"line", "run", "kind", "step", "ts"})
        for name in names:
            frame[name] = metric_series(pa.array([row.get(name) for row in rows], type=pa.float64()))
        self.frames.append(frame)
        self.metric_rows = []


def sniff(head: bytes) -> bool:
    """True when the first non-blank line is a JSON object with the native `ts` and `type` keys."""
    for raw in head.splitlines():
        line = raw.strip()
        if not line:
            continue
        if not line.startswith(b"{"):
            return False
        try:
            record = json.loads(line)
        except ValueError:
            return b'"type"' in line and b'"ts"' in line
        return isinstance(record, dict) and "ts" in record and "type" in record
    return False


def read(path: Path, rel: str) -> NativeLog:
    """Read one native event log; damaged lines become problems, never exceptions."""
    out = _Collector(InputFile(path=rel, format=FORMAT))
    buf = path.read_bytes()
    body = len(buf) if buf.endswith(b"\n") else buf.rfind(b"\n") + 1
    pos, line_no = 0, 1
    while pos < body:
        end = body if pos + CHUNK_BYTES >= body else buf.rfind(b"\n", pos, pos + CHUNK_BYTES) + 1
        if end <= pos:  # one line longer than a chunk
            end = buf.find(b"\n", pos) + 1
        _read_chunk(buf, pos, end, line_no, out)
        line_no += buf.count(b"\n", pos, end)
        pos = end
    if body < len(buf):
        # The last line has no newline: a writer killed mid-line. It is read on its own.
        _read_line(buf[body:], line_no, out, unterminated=True)
    out.flush_rows()
    frames = [f for f in out.frames if len(f)]
    if frames:
        metrics = pd.concat(frames, ignore_index=True, sort=False).sort_values("line", kind="stable", ignore_index=True)
    else:
        metrics = _empty_metrics()
    metrics.insert(0, "path", pd.Categorical([rel] * len(metrics)))
    out.info.records = len(metrics) + sum(1 for e in out.events if not isinstance(e, Evaluation))
    return NativeLog(input=out.info, metrics=metrics, events=out.events)


def _empty_metrics() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "line": pd.Series(dtype="int64"),
            "run": pd.Series(dtype="object"),
            "kind": pd.Series(dtype="object"),
            "step": pd.Series(dtype="Int64"),
            "ts": pd.Series(dtype="datetime64[us, UTC]"),
        }
    )


def _read_chunk(buf: bytes, start: int, end: int, first_line: int, out: _Collector) -> None:
    chunk = memoryview(buf)[start:end]
    try:
        table = pa_json.read_json(pa.BufferReader(pa.py_buffer(chunk)), parse_options=_PARSE_OPTIONS)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        _read_lines(bytes(chunk), first_line, out)
        return
    starts, lines = _row_lines(chunk, table.num_rows)
    if lines is None:
        _read_lines(bytes(chunk), first_line, out)
        return
    types = table.column("type").to_numpy(zero_copy_only=False)
    is_metric = types == "metric"
    # Rare events are re-read from their own line so that every field stays as written.
    for index in np.flatnonzero(~is_metric):
        begin = start + int(starts[lines[index]])
        stop = buf.find(b"\n", begin, end)
        _read_line(buf[begin : end if stop == -1 else stop], first_line + int(lines[index]), out)
    if is_metric.any():
        _take_metric_rows(table.filter(pa.array(is_metric)), first_line + lines[is_metric], out)


def _row_lines(chunk: memoryview, rows: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Start offset of each line, and the line index of each row pyarrow returned (it skips
    blank lines); None when the two cannot be matched with certainty."""
    data = np.frombuffer(chunk, dtype=np.uint8)
    newlines = np.flatnonzero(data == 10)
    starts = np.concatenate(([0], newlines[:-1] + 1)) if newlines.size else np.zeros(1, dtype=np.int64)
    if rows == len(starts):
        return starts, np.arange(rows, dtype=np.int64)
    lengths = newlines - starts
    blank = (lengths == 0) | ((lengths == 1) & (data[starts] == 13))
    kept = np.flatnonzero(~blank)
    return starts, (kept if len(kept) == rows else None)


def _take_metric_rows(rows: pa.Table, lines: np.ndarray, out: _Collector) -> None:
    info = out.info
    frame = pd.DataFrame(
        {
            "line": lines,
            "run": rows.column("run").to_pandas(),
            "kind": "metric",
            "step": rows.column("step").to_pandas().astype("Int64"),
            "ts": rows.column("ts").to_pandas(),
        }
    )
    values = _metric_columns(rows, lines, info)
    for name, column in (values or {}).items():
        frame[name] = column
    if values is None:
        no_metrics = np.ones(len(frame), dtype=bool)
    else:
        no_metrics = rows.column("metrics").is_null().to_numpy(zero_copy_only=False)
    bad = no_metrics | frame["ts"].isna() | frame["run"].isna() | frame["step"].isna()
    if bad.any():
        for line, ts, run, empty in zip(frame["line"][bad], frame["ts"][bad], frame["run"][bad], no_metrics[bad.to_numpy()]):
            key = "metrics" if empty else "ts" if pd.isna(ts) else "run" if pd.isna(run) else "step"
            info.problem(int(line), f"'metric' event needs '{key}'; line skipped")
        info.skipped += int(bad.sum())
        frame = frame[~bad]
    out.frames.append(frame)


def metric_series(values: pa.Array) -> pd.Series:
    """Metric values keep both NaN (logged non-finite) and null (not logged at that step)."""
    return pd.Series(pd.arrays.ArrowExtensionArray(values))


def _metric_columns(rows: pa.Table, lines: np.ndarray, info: InputFile) -> dict[str, pd.Series] | None:
    if "metrics" not in rows.column_names or not pa.types.is_struct(rows.schema.field("metrics").type):
        return None
    struct = rows.column("metrics").combine_chunks()
    out: dict[str, pd.Series] = {}
    for child_field, child in zip(struct.type, struct.flatten()):
        if pa.types.is_integer(child_field.type) or pa.types.is_floating(child_field.type):
            out[child_field.name] = metric_series(child.cast(pa.float64()))
        else:
            present = np.flatnonzero(child.is_valid().to_numpy(zero_copy_only=False))
            if present.size:
                info.problem(
                    int(lines[present[0]]),
                    f"metrics.{child_field.name} is not a number ({present.size} values ignored)",
                )
    return out


def _parse_time(value: object) -> datetime:
    if not isinstance(value, str):
        raise _BadRecord(f"'ts' must be an ISO 8601 time string, got {value!r}")
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        raise _BadRecord(f"'ts' is not an ISO 8601 time: {value!r}") from None
    return at.replace(tzinfo=timezone.utc) if at.tzinfo is None else at


def _opt(record: dict, key: str, kinds: tuple[type, ...], name: str) -> object:
    value = record.get(key)
    if value is None:
        return None
    if isinstance(value, bool) and bool not in kinds:
        raise _BadRecord(f"'{key}' must be {name}, got {value!r}")
    if not isinstance(value, kinds):
        raise _BadRecord(f"'{key}' must be {name}, got {value!r}")
    return value


def _req_str(record: dict, key: str) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value:
        raise _BadRecord(f"'{record.get('type')}' event needs '{key}' (a non-empty string)")
    return value


def _number(record: dict, key: str) -> float | None:
    value = _opt(record, key, (int, float), "a number")
    return None if value is None else float(value)


def _numeric_metrics(record: dict, line: int, info: InputFile) -> dict[str, float]:
    metrics = record.get("metrics")
    if not isinstance(metrics, dict):
        raise _BadRecord(f"'{record['type']}' event needs 'metrics' (an object of numbers)")
    out = {}
    for name, value in metrics.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = float(value)
        elif value is not None:
            info.problem(line, f"metrics.{name} is not a number ({value!r}); value ignored")
    return out


def _event(record: dict, line: int, rel: str, info: InputFile):
    """A typed event from one parsed line, or _BadRecord naming the key at fault."""
    kind = record.get("type")
    if kind not in EVENT_TYPES:
        raise _BadRecord(f"unknown event type {kind!r}; known types: {', '.join(sorted(EVENT_TYPES))}")
    at = _parse_time(record.get("ts"))
    evidence = Evidence(rel, line)
    step = _opt(record, "step", (int,), "an integer")
    run = _req_str(record, "run") if kind in RUN_EVENTS or kind == "metric" else _opt(record, "run", (str,), "a string")
    if kind in ("metric", "eval"):
        if step is None:
            raise _BadRecord(f"'{kind}' event needs 'step' (an integer)")
        metrics = _numeric_metrics(record, line, info)
        if kind == "metric":
            return {"line": line, "run": run, "kind": kind, "step": step, "ts": at, **metrics}
        return Evaluation(run=run, step=step, at=at, evidence=evidence, metrics=metrics, seconds=_number(record, "seconds"))
    if kind in ("run_start", "run_end"):
        config = _opt(record, "config", (dict,), "an object")
        return RunEvent(
            run=run,
            kind=kind[4:],
            at=at,
            evidence=evidence,
            status=_opt(record, "status", (str,), "a string"),
            step=step,
            config=config,
            variant=_opt(record, "variant", (str,), "a string"),
            resumes=_opt(record, "resumes", (str,), "a string"),
        )
    if kind.startswith("checkpoint_"):
        size = _opt(record, "bytes", (int,), "an integer")
        state = _opt(record, "state", (list,), "a list of names")
        return CheckpointOp(
            run=run,
            op=kind[len("checkpoint_"):],
            at=at,
            evidence=evidence,
            path=_opt(record, "path", (str,), "a string"),
            step=step,
            seconds=_number(record, "seconds"),
            bytes=size,
            state=[str(part) for part in state] if state is not None else None,
            destination=_opt(record, "destination", (str,), "a string"),
        )
    if kind == "reload_test":
        ok = record.get("ok")
        if not isinstance(ok, bool):
            raise _BadRecord("'reload_test' event needs 'ok' (true or false)")
        return ReloadTest(
            run=run,
            at=at,
            evidence=evidence,
            path=_opt(record, "path", (str,), "a string"),
            ok=ok,
            seconds=_number(record, "seconds"),
            new_process=_opt(record, "new_process", (bool,), "true or false"),
            message=_opt(record, "message", (str,), "a string"),
        )
    if kind == "stop":
        return LoggedStop(
            run=run,
            rule=_opt(record, "rule", (str,), "a string"),
            reason=_req_str(record, "reason"),
            at=at,
            evidence=evidence,
            step=step,
        )
    if kind in ("step_start", "step_end"):
        return StepMark(
            step_id=_req_str(record, "step_id"),
            kind=kind[len("step_"):],
            at=at,
            evidence=evidence,
            note=_opt(record, "note", (str,), "a string"),
        )
    return LoggedDecision(
        point=_req_str(record, "point"),
        decision=_req_str(record, "decision"),
        at=at,
        evidence=evidence,
        reason=_opt(record, "reason", (str,), "a string"),
        variant=_opt(record, "variant", (str,), "a string"),
    )


def _read_line(raw: bytes, line: int, out: _Collector, unterminated: bool = False) -> None:
    """The careful path for one line: a bad line is reported and skipped, never raised."""
    info = out.info
    if not raw.strip():
        return
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        info.problem(line, f"not UTF-8 text (byte {exc.start} of the line); line skipped")
        info.skipped += 1
        return
    try:
        record = json.loads(text)
    except ValueError as exc:
        reason = "cut off: the file ends mid-line (a writer stopped while writing)" if unterminated else f"not JSON ({exc.msg})"
        info.problem(line, f"{reason}; line skipped")
        info.skipped += 1
        return
    try:
        if not isinstance(record, dict):
            raise _BadRecord("not a JSON object")
        event = _event(record, line, info.path, info)
    except _BadRecord as exc:
        info.problem(line, f"{exc}; line skipped")
        info.skipped += 1
        return
    if isinstance(event, dict):
        out.metric_rows.append(event)
        return
    out.events.append(event)
    if isinstance(event, Evaluation):
        row = {"line": line, "run": event.run, "kind": "eval", "step": event.step, "ts": event.at}
        out.metric_rows.append({**row, **event.metrics})


def _read_lines(data: bytes, first_line: int, out: _Collector) -> None:
    for offset, raw in enumerate(data.split(b"\n")):
        _read_line(raw, first_line + offset, out)
