"""Checkpoint benchmark records (`checkpoint-bench`): save, transfer, restore and reload-test timings.

The records a user writes while measuring checkpoints (R12), as JSONL (one object per line) or
CSV (a header row, then one record per row), with these fields:

    checkpoint   path of the checkpoint (required)
    operation    save | transfer | restore | reload_test (required)
    time         ISO 8601 time the operation ended (required; without an offset it is UTC)
    seconds      how long it took (a number, 0 or more)
    bytes        size moved or written
    ok           true/false: did it succeed (required for reload_test)
    host, process  where it ran: a reload test in another process than the save is a new-process test
    run, step, destination, message, new_process   optional

`reportgen probe --into LOGS` appends records of this format. A record that cannot be used is
reported with its line and skipped; the rest of the file is read.
"""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path

from reportgen.bounded import load_json
from reportgen.ingest.common import (
    MAX_COUNT,
    Reading,
    csv_lines,
    decode_text,
    duration_problem,
    log_time,
    read_log,
    text_lines,
)
from reportgen.ingest.scan import Kept, Reader, Scan
from reportgen.model import CheckpointOp, Evidence, InputFile, ReloadTest

FORMAT = "checkpoint-bench"
OPERATIONS = ("save", "transfer", "restore", "reload_test")
FIELDS = ("checkpoint", "operation", "time", "seconds", "bytes", "ok", "host", "process", "run", "step",
          "destination", "message", "new_process")
TRUE, FALSE = ("true", "1", "yes"), ("false", "0", "no")


class _Bad(Exception):
    pass


def sniff(head: bytes) -> bool:
    """A first line that is a JSON object, or a CSV header, naming `checkpoint` and `operation`."""
    first = head.split(b"\n", 1)[0].strip().decode("utf-8", errors="replace")
    if first.startswith("{"):
        try:
            record = load_json(first)
        except ValueError:
            return False
        return isinstance(record, dict) and "checkpoint" in record and "operation" in record
    columns = {c.strip().lower() for c in first.split(",")}
    return {"checkpoint", "operation"} <= columns


def read(path: Path, rel: str) -> Reading:
    """Every record of one benchmark file; each line is a record, skipped (reported), blank, or the CSV header."""
    info = InputFile(path=rel, format=FORMAT)
    reading = Reading(inputs=[info])
    text = decode_text(read_log(path, info, what="records"))
    if text is None:
        info.problem(None, "not UTF-8 text; a checkpoint benchmark file is JSONL or CSV")
        return reading
    lines = text_lines(text)
    info.lines = len(lines)
    records = list(_json_lines(text, lines, info) if text.lstrip().startswith("{") else _csv_rows(text, info))
    saves: dict[str, tuple[str | None, str | None]] = {}
    for line, record in records:
        if record.get("operation") == "save" and isinstance(record.get("checkpoint"), str):
            saves.setdefault(record["checkpoint"], (_text(record, "host"), _text(record, "process")))
    for line, record in records:
        try:
            reading.events.append(_event(record, Evidence(rel, line), saves))
            info.records += 1
        except _Bad as exc:
            info.skip(line, f"{exc}; record skipped")
    info.problems.sort(key=lambda p: (p.line is None, p.line or 0))  # text damage and bad records, in file order
    return reading


def _json_lines(text: str, lines: list[str], info: InputFile):
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            info.blank += 1
            continue
        try:
            record = load_json(raw)
        except ValueError as exc:  # TooComplex (nested too deep) has no msg
            cut = number == len(lines) and not text.endswith("\n")
            info.skip(number, "the last line is cut off" if cut else f"not JSON ({getattr(exc, 'msg', exc)}); line skipped")
            continue
        if not isinstance(record, dict):
            info.skip(number, "not a JSON object; line skipped")
            continue
        yield number, record


def _csv_rows(text: str, info: InputFile):
    """The rows after the header (the first row that is not blank); a row with no value in any cell is blank."""
    header: list[str] | None = None
    for line, row in csv_lines(text):
        if isinstance(row, str):  # a stray quote or carriage return: that row only
            info.skip(line, f"not a CSV row ({row}); row skipped")
            continue
        if not any(cell.strip() for cell in row):
            info.blank += 1
            continue
        if header is None:
            header = [c.strip().lower() for c in row]
            info.header = 1
            unknown = [c for c in header if c not in FIELDS]
            if unknown:
                info.problem(line, f"unknown column{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} ignored")
            continue
        if len(row) != len(header):
            info.skip(line, f"{len(row)} cells where the header has {len(header)}; row skipped")
            continue
        yield line, {k: v.strip() for k, v in zip(header, row) if k in FIELDS and v.strip() != ""}


def _text(record: dict, key: str) -> str | None:
    value = record.get(key)
    return None if value is None else str(value)


def _number(record: dict, key: str, integer: bool = False) -> float | None:
    value = record.get(key)
    if value is None:
        return None
    try:
        number = int(value) if integer and not isinstance(value, float) else float(value)
    except (TypeError, ValueError):
        raise _Bad(f"'{key}' is not a number: {value!r}") from None
    if integer and number > MAX_COUNT:
        raise _Bad(f"'{key}' is larger than any count a checkpoint has: {str(value)[:40]}")
    if isinstance(value, bool) or not math.isfinite(number) or number < 0:
        raise _Bad(f"'{key}' must be a finite number, 0 or more: {value!r}")
    if integer and number != int(number):
        raise _Bad(f"'{key}' must be a whole number: {value!r}")
    return number


def _flag(record: dict, key: str) -> bool | None:
    value = record.get(key)
    if value is None or isinstance(value, bool):
        return value
    if str(value).lower() in TRUE:
        return True
    if str(value).lower() in FALSE:
        return False
    raise _Bad(f"'{key}' must be true or false: {value!r}")


def _time(record: dict) -> datetime:
    value = record.get("time")
    if value is None or value == "":
        raise _Bad("'time' is required (ISO 8601, when the operation ended)")
    try:
        return log_time(value, "time")
    except ValueError as exc:
        raise _Bad(str(exc)) from None


def _event(record: dict, evidence: Evidence, saves: dict[str, tuple[str | None, str | None]]) -> CheckpointOp | ReloadTest:
    checkpoint = record.get("checkpoint")
    if not isinstance(checkpoint, str) or not checkpoint:
        raise _Bad("'checkpoint' is required (the checkpoint's path)")
    operation = record.get("operation")
    if operation not in OPERATIONS:
        raise _Bad(f"'operation' must be one of {', '.join(OPERATIONS)}, got {operation!r}")
    at = _time(record)
    seconds = _number(record, "seconds")
    if seconds is not None and (problem := duration_problem(seconds)) is not None:
        raise _Bad(problem)
    step = _number(record, "step", integer=True)
    run = _text(record, "run")
    if operation == "reload_test":
        ok = _flag(record, "ok")
        if ok is None:
            raise _Bad("a reload_test record needs 'ok' (true or false)")
        new_process = _flag(record, "new_process")
        where = (_text(record, "host"), _text(record, "process"))
        saved = saves.get(checkpoint)
        if new_process is None and saved is not None and where[1] is not None and saved[1] is not None:
            new_process = where != saved  # another host or another process than the one that saved it
        return ReloadTest(run=run, at=at, evidence=evidence, path=checkpoint, ok=ok, seconds=seconds,
                          new_process=new_process, message=_text(record, "message"))
    size = _number(record, "bytes", integer=True)
    return CheckpointOp(run=run, op=operation, at=at, evidence=evidence, path=checkpoint,
                        step=int(step) if step is not None else None, seconds=seconds,
                        bytes=int(size) if size is not None else None, destination=_text(record, "destination"))


def recognise(rel: str, head: bytes) -> str | None:
    return "bench" if sniff(head) else None


def read_files(scan: Scan) -> None:
    """Checkpoint benchmark records (JSONL or CSV): save, transfer, restore and reload-test timings."""
    for rel in scan.files("bench"):
        with scan.contained(rel, FORMAT):
            scan.add(scan.read_one(rel, lambda rel: read(scan.found[rel][0], rel), Kept(FORMAT)))
        scan.done(rel)


READER = Reader(FORMAT, recognise, read_files)
