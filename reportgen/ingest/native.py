"""Reader of reportgen's native JSONL event log (docs/events.md).

Built for logs of millions of lines. The file is cut into chunks at line ends and the chunks
are parsed in parallel by pyarrow's JSON reader; `metric` lines, the bulk of any log, stay
columnar from there to the final frame. The rare events (run start/end, eval, checkpoints,
stops, steps, decisions) are re-read one by one with the standard library, so their fields
stay exactly as written. Lines that do not start with `{`, and lines that are not UTF-8 (pyarrow
does not check its strings), never reach pyarrow.
A piece pyarrow rejects (a damaged line, a value whose type changes) is re-parsed
around the row its error names, or halved, until the damaged lines are isolated and read one by
one: each bad line is counted and reported with its number, and every good line is still kept,
at close to the speed of an undamaged file.
"""

from __future__ import annotations

import codecs
import copy
import json
import os
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from itertools import repeat
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from reportgen.ingest import cache
from reportgen.ingest.cache import EDGE, ReadTo
from reportgen.ingest.common import (
    EARLIEST,
    LATEST,
    LOG_BUDGET,
    MAX_COUNT,
    Reading,
    duration_problem,
    log_time,
    read_log,
)
from reportgen.ingest.scan import Kept, Reader, Scan, Source, parents
from reportgen.model import (
    MAX_PROBLEMS_PER_FILE,
    METRIC_FRAME_COLUMNS,
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
CHUNK_BYTES = 4 << 20
# Below this size a piece that pyarrow rejects is read line by line instead of split again.
SMALL_PIECE_BYTES = 16 << 10
RUN_EVENTS = {"run_start", "run_end", "eval", "checkpoint_save", "checkpoint_transfer", "checkpoint_restore", "reload_test", "stop"}
CAMPAIGN_EVENTS = {"step_start", "step_end", "decision"}
EVENT_TYPES = {"metric"} | RUN_EVENTS | CAMPAIGN_EVENTS
_CORE_SCHEMA = pa.schema(
    [("ts", pa.timestamp("us", tz="UTC")), ("run", pa.string()), ("type", pa.string()), ("step", pa.int64())]
)
_PARSE_OPTIONS = pa_json.ParseOptions(explicit_schema=_CORE_SCHEMA, unexpected_field_behavior="infer")
_ROW_HINT = re.compile(r"in row (\d+)$")
# How many times one chunk may be re-parsed around a row named by pyarrow's error before it is halved.
MAX_ROW_HINTS = 16
# Columns of every metric-rows table; the metric columns follow, all float64.
_ROW_SCHEMA = pa.schema(
    [
        ("line", pa.int64()),
        ("run", pa.dictionary(pa.int32(), pa.string())),
        ("kind", pa.dictionary(pa.int32(), pa.string())),
        ("step", pa.int64()),
        ("ts", pa.timestamp("us", tz="UTC")),
    ]
)


class _BadRecord(ValueError):
    """A line that is JSON but not a usable event; the message says which key is wrong."""


class _CutOff(_BadRecord):
    """The last line ends mid-record: its writer was stopped while writing."""


CUT_OFF = "cut off: the file ends mid-line (a writer stopped while writing)"


@dataclass
class NativeLog:
    """What one event file holds: the metric rows (columnar) and the rare events."""

    input: InputFile
    metrics: pd.DataFrame
    events: list = field(default_factory=list)


@dataclass
class _Piece:
    """What a worker made of one chunk; line numbers are relative to the chunk."""

    newlines: int = 0
    tables: list[pa.Table] = field(default_factory=list)
    lines: list[tuple[int, bytes]] = field(default_factory=list)  # read one by one afterwards
    # Lines set aside before pyarrow, read one by one afterwards: (line, start, end) in the file's bytes,
    # as arrays (a log of millions of damaged lines holds no copy of each).
    aside: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    problems: list[tuple[int, str]] = field(default_factory=list)
    skipped: int = 0
    blank: int = 0  # empty lines pyarrow passed over
    ignored: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)  # see _Collector.ignored


def _ignore(ignored: dict[tuple[str, str], tuple[int, int]], name: str, why: str, line: int, count: int) -> None:
    """Values of a metric that are not numbers, counted per file: its first line and how many."""
    first, total = ignored.get((name, why), (line, 0))
    ignored[(name, why)] = (min(first, line), total + count)


class _Lines:
    """Where the lines of one chunk start and end, found once with numpy (which releases the
    GIL, unlike bytes.count or a regex scan) and then looked up for any piece of the chunk."""

    def __init__(self, buf: bytes, start: int, end: int):
        self.ends = start + np.flatnonzero(np.frombuffer(memoryview(buf)[start:end], dtype=np.uint8) == 10)
        self.first = start

    def count(self, start: int, end: int) -> int:
        """Newlines in buf[start:end]."""
        return int(np.searchsorted(self.ends, end) - np.searchsorted(self.ends, start))

    def starts(self, start: int, end: int) -> np.ndarray:
        """Absolute start of every line of the piece buf[start:end] (which ends at a newline)."""
        inside = self.ends[np.searchsorted(self.ends, start) : np.searchsorted(self.ends, end)]
        return np.concatenate(([start], inside[:-1] + 1)).astype(np.int64)

    def empty(self, start: int, end: int) -> np.ndarray:
        """Which lines of the piece are empty. Pieces only hold lines that start with `{` or are
        empty (the others were set aside), so these are exactly the lines pyarrow skips."""
        return self.starts(start, end) == self.ends[np.searchsorted(self.ends, start) : np.searchsorted(self.ends, end)]


@dataclass
class _Collector:
    info: InputFile
    tables: list[pa.Table] = field(default_factory=list)
    metric_rows: list[dict] = field(default_factory=list)
    events: list = field(default_factory=list)
    # (metric, why) -> (first line, count) of the values that are not numbers, reported once the file is read
    ignored: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)

    def flush_rows(self) -> None:
        """Turn the rows read one by one into a table like the columnar path's."""
        if not self.metric_rows:
            return
        rows = sorted(self.metric_rows, key=lambda row: row["line"])  # a chunk's lines set aside are read after its others
        columns = {
            "line": pa.array([r["line"] for r in rows], pa.int64()),
            "run": pa.array([r["run"] for r in rows], pa.string()).dictionary_encode(),
            "kind": pa.array([r["kind"] for r in rows], pa.string()).dictionary_encode(),
            "step": pa.array([r["step"] for r in rows], pa.int64()),
            "ts": pa.array([r["ts"] for r in rows], pa.timestamp("us", tz="UTC")),
        }
        names = [key for key in dict.fromkeys(key for row in rows for key in row) if key not in columns]  # as first met
        for name in names:
            columns[name] = pa.array([row.get(name) for row in rows], type=pa.float64())
        self.tables.append(pa.table(columns))
        self.metric_rows = []


def sniff(head: bytes) -> bool:
    """True when the first non-blank line is a JSON object with the native `ts` and `type` keys."""
    for raw in head.removeprefix(codecs.BOM_UTF8).splitlines():
        line = raw.strip()
        if not line:
            continue
        if not line.startswith(b"{"):
            return False
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            return b'"type"' in line and b'"ts"' in line
        return isinstance(record, dict) and "ts" in record and "type" in record
    return False


def _chunks(buf: bytes, body: int) -> list[tuple[int, int]]:
    """Byte ranges of about CHUNK_BYTES, each ending at a line end."""
    out, pos = [], 0
    while pos < body:
        end = body if pos + CHUNK_BYTES >= body else buf.rfind(b"\n", pos, pos + CHUNK_BYTES) + 1
        if end <= pos:  # one line longer than a chunk
            end = buf.find(b"\n", pos) + 1
        out.append((pos, end))
        pos = end
    return out


def read(path: Path, rel: str) -> NativeLog:
    """Read one native event log; damaged lines become problems, never exceptions."""
    return read_on(path, rel)[0]


@dataclass
class Body:
    """What the complete lines of one event log held when it was read (every line up to its last newline):
    kept between builds (ingest/cache.py), so that a log that has only grown since is read on from `end`."""

    info: InputFile  # the lines' counts and problems
    tables: list[pa.Table]  # their metric rows, by line number in the file (a few tables: joined as they grow)
    events: list
    lines: int
    order: dict[str, tuple[int, int, str]]  # each metric's place among the columns (_first_values)
    ignored: dict[tuple[str, str], tuple[int, int]]  # values that are not numbers so far (_Collector.ignored)
    at: ReadTo  # where they end in the file, and what says it still holds them

    @property
    def end(self) -> int:
        return self.at.end


def read_on(path: Path, rel: str, since: Body | None = None) -> tuple[NativeLog, Body]:
    """Read one native event log, on from `since` (its complete lines as an earlier read found them) when
    the log has only grown since, else whole; with its complete lines as they are now, for the next read.
    Either way the log reads as it does when read whole; a last line without its newline yet is read on
    its own each time, never kept."""
    grown = None if since is None or not since.lines else cache.grown(path, since.at, LOG_BUDGET)  # no line yet: whole
    if grown is None:
        out = _Collector(InputFile(path=rel, format=FORMAT))
        data = read_log(path, out.info)
        start, first, head, before = 0, 1, b"", b""
        skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    else:
        head, before, data = grown
        out = _Collector(since.info, tables=list(since.tables), events=since.events, ignored=dict(since.ignored))
        start, first, skip = since.end, since.lines + 1, 0
    buf = data[skip:] if skip else data
    body = len(buf) if buf.endswith(b"\n") else buf.rfind(b"\n") + 1
    end = start + skip + body  # in the file
    known = len(out.tables)
    line_no = _read_lines(buf, body, first, out)
    out.flush_rows()
    order = _first_values(out.tables[known:], since.order if grown is not None else None, partial(_keys_at, buf, first))
    kept = Body(copy.deepcopy(out.info), _joined(out.tables), list(out.events), line_no - 1, order, dict(out.ignored),
                ReadTo.of(path, end, head + data[:EDGE], before + data[max(0, skip + body - EDGE):skip + body]))
    del data
    if body < len(buf):
        # The last line has no newline: a writer killed mid-line, or one still writing it. It is read on
        # its own, and again from its start by the next read.
        known = len(out.tables)
        _read_line(buf[body:], line_no, out, unterminated=True)
        out.flush_rows()
        order = _first_values(out.tables[known:], order, partial(_keys_at, buf, first))
    out.info.lines = line_no - 1 + (1 if body < len(buf) else 0)
    for (name, why), (line, count) in sorted(out.ignored.items(), key=lambda item: (item[1][0], item[0])):
        out.info.problem(line, f"metrics.{name} {why} ({count} values ignored)")
    del buf  # the file's bytes are all read: let them go before the frame is built
    out.info.problems.sort(key=lambda p: (p.line is None, p.line or 0))  # each chunk's columnar problems, then its others
    events = sorted(out.events, key=lambda e: e.evidence.line)  # in the file's order, however its lines were read
    metrics = _to_frame(out.tables, rel, order)
    out.info.records = len(metrics) + sum(1 for e in events if not isinstance(e, Evaluation))
    return NativeLog(input=out.info, metrics=metrics, events=events), kept


JOIN_ABOVE = 8  # a log read on at every build keeps its rows in at most this many tables (then one)


def _joined(tables: list[pa.Table]) -> list[pa.Table]:
    """The rows kept for reading on: as they are while they are a few tables, else one table in line order
    (a log read on thousands of times during a lot would otherwise keep thousands of tables)."""
    tables = [t for t in tables if t.num_rows]
    if len(tables) <= JOIN_ABOVE:
        return tables
    return [_in_line_order(tables)]


def _in_line_order(tables: list[pa.Table]) -> pa.Table:
    """One table of the rows of `tables`, in line order. Each table is in line order (a chunk's rows, or the
    rows read one by one): the whole is when each starts after the one before ends."""
    bounds = [(t.column("line")[0].as_py(), t.column("line")[-1].as_py()) for t in tables]
    table = pa.concat_tables(tables, promote_options="default")
    if any(first < last for (_, last), (first, _) in zip(bounds, bounds[1:])):
        table = table.take(np.argsort(table.column("line").to_numpy(), kind="stable"))
    return table


def _read_lines(buf: bytes, body: int, line_no: int, out: _Collector) -> int:
    """Read the complete lines buf[:body], the first numbered line_no, into `out`; the next line's number."""
    ranges = _chunks(buf, body)
    workers = min(len(ranges), os.cpu_count() or 1) or 1
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pieces = list(pool.map(_parse_range, repeat(buf), [a for a, _b in ranges], [b for _a, b in ranges]))
    for piece in pieces:
        for table in piece.tables:
            lines = pc.add(table.column("line"), line_no)
            out.tables.append(table.set_column(0, "line", lines))
        for rel_line, message in piece.problems:
            out.info.problem(line_no + rel_line, message)
        for (name, why), (rel_line, count) in piece.ignored.items():
            _ignore(out.ignored, name, why, line_no + rel_line, count)
        out.info.skipped += piece.skipped
        out.info.blank += piece.blank
        for rel_line, raw in piece.lines:
            _read_line(raw, line_no + rel_line, out)
        if piece.aside is not None:
            _read_aside(buf, piece.aside, line_no, out)
        line_no += piece.newlines
    return line_no


def _to_frame(tables: list[pa.Table], rel: str, order: dict[str, tuple[int, int, str]]) -> pd.DataFrame:
    """One frame of metric rows in line order, its metric columns in `order`; metric columns keep NaN apart
    from missing."""
    tables = [t for t in tables if t.num_rows]
    table = _in_line_order(tables) if tables else _ROW_SCHEMA.empty_table()
    core = {name: table.column(name) for name in _ROW_SCHEMA.names}
    frame = pd.DataFrame(
        {
            "path": pd.Categorical.from_codes(np.zeros(table.num_rows, dtype=np.int8), [rel]),
            "line": core["line"].to_numpy(),
            "run": core["run"].to_pandas(),
            "kind": core["kind"].to_pandas(),
            "step": core["step"].to_pandas().astype("Int64"),
            "ts": core["ts"].to_pandas(),
        },
        copy=False,  # each column is made here for this frame alone
    )
    for name in sorted((name for name in table.column_names if name not in core), key=order.__getitem__):
        frame[name] = metric_series(table.column(name))
    return frame


def _first_values(tables: list[pa.Table], known: dict[str, tuple[int, int, str]] | None,
                  keys_at: Callable[[set[int]], dict[int, list[str]]]) -> dict[str, tuple[int, int, str]]:
    """Each metric's place in the frame: the line of its first value, then its place among the metrics that
    line writes (`keys_at`: the metric names of some lines, in their order); a metric with no value at all
    goes last, by name. `known`: the places found in the lines read before. The same however the file was
    cut into pieces (chunks, lines read one by one, a log read on from where it stopped)."""
    first: dict[str, int] = {}
    for table in tables:
        lines = table.column("line").to_numpy()
        for name in table.column_names:
            if name in _ROW_SCHEMA.names or (known and name in known and known[name][0] != NEVER):
                continue
            valid = table.column(name).is_valid().to_numpy(zero_copy_only=False)
            if valid.any():
                first[name] = min(first.get(name, NEVER), int(lines[int(np.argmax(valid))]))
            else:
                first.setdefault(name, NEVER)
    written = keys_at({line for line in first.values() if line != NEVER})
    places = dict(known or {})
    for name, line in first.items():
        if line == NEVER:
            places.setdefault(name, (NEVER, NEVER, name))
            continue
        keys = written.get(line, [])
        places[name] = (line, keys.index(name) if name in keys else len(keys), "" if name in keys else name)
    return places


NEVER = np.iinfo(np.int64).max  # the line of a metric's first value when it has none


def _keys_at(buf: bytes, first: int, lines: set[int]) -> dict[int, list[str]]:
    """The metric names each of `lines` (numbered from `first`, the first line of buf) writes, in its order
    (a line that is no event with metrics: none)."""
    out: dict[int, list[str]] = {}
    wanted = sorted(line for line in lines if line >= first)
    if not wanted:
        return out
    if wanted[-1] - first > 100_000:  # far into the file: every line end at once
        ends = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8) == 10)
        starts = {line: (int(ends[line - first - 1]) + 1 if line > first else 0) for line in wanted
                  if line - first - 1 < len(ends)}
    else:
        starts, pos, line = {}, 0, first
        for target in wanted:
            while line < target and pos >= 0:
                pos = buf.find(b"\n", pos)
                pos, line = (pos + 1, line + 1) if pos >= 0 else (-1, line)
            if pos >= 0:
                starts[target] = pos
    for line, start in starts.items():
        end = buf.find(b"\n", start)
        try:
            metrics = json.loads(buf[start:len(buf) if end < 0 else end]).get("metrics")
        except (ValueError, AttributeError, RecursionError):
            continue
        if isinstance(metrics, dict):
            out[line] = list(metrics)
    return out


def metric_series(values: pa.ChunkedArray | pa.Array) -> pd.Series:
    """Metric values keep both NaN (logged non-finite) and null (not logged at that step)."""
    return pd.Series(pd.arrays.ArrowExtensionArray(values))


# A line with more opening brackets than this could nest deeper than pyarrow's reader survives
# (thousands of levels crash it, and the whole process with it): it is read on the careful path.
MAX_OPEN_BRACKETS = 100
_SCAN_BLOCK = 8 << 20  # bytes scanned for brackets at a time, to bound the scan's memory


def _crowded(buf: bytes, starts: np.ndarray, ends: np.ndarray, start: int, end: int) -> np.ndarray:
    """Indices of the chunk's lines holding more than MAX_OPEN_BRACKETS `[` or `{`.

    A line holds more than N when some open bracket and the N-th after it are on that line: only
    pairs closer together than the chunk's longest line can be, and only those are looked up."""
    data = np.frombuffer(buf, dtype=np.uint8)
    found = []
    for low in range(start, end, _SCAN_BLOCK):
        block = data[low:min(end, low + _SCAN_BLOCK)]
        found.append(np.flatnonzero((block | 0x20) == ord("{")) + low)  # `[` is 0x5B, `{` 0x7B: one bit apart
    opens = np.concatenate(found) if found else np.empty(0, np.int64)
    if len(opens) <= MAX_OPEN_BRACKETS:
        return np.empty(0, np.int64)
    line_ends = ends[np.searchsorted(ends, start) : np.searchsorted(ends, end)]
    longest = int((line_ends - starts).max())
    near = np.flatnonzero(opens[MAX_OPEN_BRACKETS:] - opens[:-MAX_OPEN_BRACKETS] < longest)
    if not near.size:
        return np.empty(0, np.int64)
    line_of_first = np.searchsorted(line_ends, opens[near])
    same = line_of_first == np.searchsorted(line_ends, opens[near + MAX_OPEN_BRACKETS])
    return np.unique(line_of_first[same])


def _not_utf8(buf: bytes, starts: np.ndarray, ends: np.ndarray, start: int, end: int) -> np.ndarray:
    """Indices of the chunk's lines that are not UTF-8. pyarrow's reader does not check strings: it
    takes such a line, and the table it gives fails later, outside any parse (a run id or a metric
    name that cannot be given back as text)."""
    data = np.frombuffer(buf, dtype=np.uint8)[start:end]
    if not data.size or data.max() < 0x80:  # ASCII: one pass, no index array
        return np.empty(0, np.int64)
    high = np.flatnonzero(data >= 0x80)
    try:
        codecs.decode(memoryview(buf)[start:end], "utf-8")
        return np.empty(0, np.int64)
    except UnicodeDecodeError:
        pass
    line_ends = ends[np.searchsorted(ends, start) : np.searchsorted(ends, end)]
    bad = []
    for index in np.unique(np.searchsorted(line_ends, high + start)):
        try:
            codecs.decode(memoryview(buf)[int(starts[index]) : int(line_ends[index])], "utf-8")
        except UnicodeDecodeError:
            bad.append(index)
    return np.asarray(bad, dtype=np.int64)


def _parse_range(buf: bytes, start: int, end: int) -> _Piece:
    """Parse one chunk. Lines that do not start with `{` cannot be events, lines crowded with
    brackets may nest deeper than pyarrow survives, and lines that are not UTF-8 pyarrow takes
    without a word: all are set aside for the careful path before pyarrow sees them (its reader
    crashes on such lines, e.g. a bare `null` at the start of a block, or a value nested 2,500
    levels deep)."""
    lines = _Lines(buf, start, end)
    piece = _Piece(newlines=len(lines.ends))
    starts = lines.starts(start, end)
    first_bytes = np.frombuffer(buf, dtype=np.uint8)[starts]
    odd = np.flatnonzero((first_bytes != ord("{")) & (first_bytes != 10))
    odd = np.union1d(odd, _crowded(buf, starts, lines.ends, start, end))
    odd = np.union1d(odd, _not_utf8(buf, starts, lines.ends, start, end))
    if not len(odd):
        _parse_piece(buf, lines, start, end, 0, piece, hints=MAX_ROW_HINTS)
        return piece
    piece.aside = (odd, starts[odd], lines.ends[odd])
    # The other lines are parsed in bulk, once: in a copy of the chunk where each line set aside is
    # emptied (it keeps its newline, so every line keeps its number). Parsing the runs of lines
    # between them one by one costs a pyarrow call each: minutes for a log where every other line is damaged.
    bounds = np.concatenate(([start], np.column_stack((starts[odd], lines.ends[odd])).ravel(), [end])) - start
    keep = np.repeat(np.arange(2 * len(odd) + 1) % 2 == 0, np.diff(bounds))  # kept, emptied, kept, ... bytes
    rest = np.frombuffer(memoryview(buf)[start:end], dtype=np.uint8)[keep].tobytes()
    _parse_piece(rest, _Lines(rest, 0, len(rest)), 0, len(rest), 0, piece, hints=MAX_ROW_HINTS)
    piece.blank -= len(odd)  # emptied in `rest`, each line set aside is counted where it is read
    return piece


def _hinted_line(error: Exception, buf: bytes, lines: _Lines, start: int, end: int, newlines: int) -> tuple[int, int, int] | None:
    """(line index, start, end) of the row a pyarrow parse error names, when it can be trusted:
    the piece is one block and has no blank lines, so rows and lines coincide."""
    match = _ROW_HINT.search(str(error))
    if match is None or int(match.group(1)) >= newlines or lines.empty(start, end).any():
        return None
    index = int(match.group(1))
    begin = int(lines.starts(start, end)[index])
    return index, begin, buf.index(b"\n", begin, end) + 1


def _parse_piece(buf: bytes, lines: _Lines, start: int, end: int, first: int, piece: _Piece, hints: int) -> None:
    """Parse buf[start:end] (whole lines; `first` = its first line, relative) into `piece`.

    When pyarrow rejects a piece, the row its error names (if any) is set aside to be read on
    its own and the lines around it are parsed in bulk again; otherwise, or after `hints` such
    retries, the piece is halved until the damage is isolated.
    """
    view = memoryview(buf)[start:end]
    newlines = lines.count(start, end)
    try:
        table = pa_json.read_json(
            pa.BufferReader(pa.py_buffer(view)),
            read_options=pa_json.ReadOptions(use_threads=False, block_size=max(end - start, 1 << 16)),
            parse_options=_PARSE_OPTIONS,
        )
        rows = _row_lines(table.num_rows, newlines, lines, start, end)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        table, rows = None, None
        hinted = _hinted_line(error, buf, lines, start, end, newlines) if hints and newlines > 1 else None
        if hinted is not None:
            index, begin, stop = hinted
            if begin > start:
                _parse_piece(buf, lines, start, begin, first, piece, hints - 1)
            piece.lines.append((first + index, buf[begin : stop - 1]))
            if stop < end:
                _parse_piece(buf, lines, stop, end, first + index + 1, piece, hints - 1)
            return
    if rows is None:
        if end - start <= SMALL_PIECE_BYTES or newlines <= 1:
            for offset, raw in enumerate(bytes(view).split(b"\n")[:-1]):
                piece.lines.append((first + offset, raw))
            return
        middle = buf.rfind(b"\n", start, start + (end - start) // 2) + 1
        if middle <= start:
            middle = buf.find(b"\n", start, end) + 1
        _parse_piece(buf, lines, start, middle, first, piece, hints)
        _parse_piece(buf, lines, middle, end, first + lines.count(start, middle), piece, hints)
        return
    line_index, starts = rows
    piece.blank += newlines - table.num_rows
    types = table.column("type")
    is_metric = pc.fill_null(pc.equal(types, "metric"), False).to_numpy(zero_copy_only=False)
    if not is_metric.all():
        if starts is None:
            starts = lines.starts(start, end)
        for row in np.flatnonzero(~is_metric):
            index = int(line_index[row])
            begin = int(starts[index])
            piece.lines.append((first + index, buf[begin : buf.index(b"\n", begin, end)]))
    if is_metric.any():
        _metric_rows(table.filter(pa.array(is_metric)), line_index[is_metric] + first, piece)


def _row_lines(rows: int, newlines: int, lines: _Lines, start: int, end: int) -> tuple[np.ndarray, np.ndarray | None] | None:
    """Line index of each row pyarrow returned (it skips empty lines), with the absolute line
    starts when they had to be computed; None when rows and lines cannot be matched with certainty."""
    if rows == newlines:
        return np.arange(rows, dtype=np.int64), None
    kept = np.flatnonzero(~lines.empty(start, end))
    if len(kept) != rows:
        return None
    return kept, lines.starts(start, end)


def _metric_rows(rows: pa.Table, lines: np.ndarray, piece: _Piece) -> None:
    """The columnar path: metric rows as a table; rows missing a key become problems."""
    metrics = rows.column("metrics") if "metrics" in rows.column_names else None
    if metrics is None or not pa.types.is_struct(metrics.type):
        for line in lines:
            piece.problems.append((int(line), "'metric' event needs 'metrics' (an object of numbers); line skipped"))
        piece.skipped += len(lines)
        return
    missing = {
        "metrics": metrics.is_null(),
        "ts": rows.column("ts").is_null(),
        "run": rows.column("run").is_null(),
        "step": rows.column("step").is_null(),
    }
    bad = np.zeros(rows.num_rows, dtype=bool)
    for key, mask in missing.items():
        mask = mask.to_numpy(zero_copy_only=False)
        for line in lines[mask & ~bad]:
            piece.problems.append((int(line), f"'metric' event needs '{key}'; line skipped"))
        bad |= mask
    ts = rows.column("ts")
    outside = pc.fill_null(pc.or_(pc.less(ts, pa.scalar(EARLIEST, ts.type)), pc.greater_equal(ts, pa.scalar(LATEST, ts.type))),
                           False).to_numpy(zero_copy_only=False)
    for line in lines[outside & ~bad]:
        piece.problems.append((int(line), f"'ts' is outside {EARLIEST.year}-{LATEST.year - 1}: no campaign logged then; "
                                          "line skipped"))
    bad |= outside
    steps = rows.column("step")
    huge = pc.fill_null(pc.or_(pc.greater(steps, MAX_COUNT), pc.less(steps, -MAX_COUNT)), False).to_numpy(zero_copy_only=False)
    for line in lines[huge & ~bad]:
        piece.problems.append((int(line), f"'step' is past any step a campaign logged ({MAX_COUNT:.0e}); line skipped"))
    bad |= huge
    piece.skipped += int(bad.sum())
    keep = pa.array(~bad)
    columns = {
        "line": pa.array(lines[~bad], pa.int64()),
        "run": rows.column("run").filter(keep).dictionary_encode(),
        "kind": pa.DictionaryArray.from_arrays(pa.array(np.zeros(int((~bad).sum()), dtype=np.int32)), pa.array(["metric"])),
        "step": rows.column("step").filter(keep),
        "ts": rows.column("ts").filter(keep),
    }
    struct = metrics.filter(keep).combine_chunks()
    kept_lines = lines[~bad]
    for child_field, child in zip(struct.type, struct.flatten(), strict=True):
        numeric = pa.types.is_integer(child_field.type) or pa.types.is_floating(child_field.type)
        if numeric and child_field.name not in METRIC_FRAME_COLUMNS:
            columns[child_field.name] = child.cast(pa.float64(), safe=False)  # past 2**53: the nearest float
            continue
        # Reported once per metric and file, at its first line, with the count of values ignored (read_on).
        present = np.flatnonzero(child.is_valid().to_numpy(zero_copy_only=False))
        if present.size:
            why = "has the name of a reserved column" if child_field.name in METRIC_FRAME_COLUMNS else "is not a number"
            _ignore(piece.ignored, child_field.name, why, int(kept_lines[present[0]]), int(present.size))
    piece.tables.append(pa.table(columns))


def _parse_time(value: object) -> datetime:
    try:
        return log_time(value, "ts")
    except ValueError as exc:
        raise _BadRecord(str(exc)) from None


def _opt(record: dict, key: str, kinds: tuple[type, ...], name: str) -> Any:
    value = record.get(key)
    if value is None:
        return None
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
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


def _duration(record: dict, key: str = "seconds") -> float | None:
    """A duration in seconds: a finite number, 0 or more, at most a year (else a damaged record)."""
    value = _number(record, key)
    if value is not None and (problem := duration_problem(value, key)) is not None:
        raise _BadRecord(problem)
    return value


def _numeric_metrics(record: dict, line: int, info: InputFile) -> dict[str, float]:
    metrics = record.get("metrics")
    if not isinstance(metrics, dict):
        raise _BadRecord(f"'{record['type']}' event needs 'metrics' (an object of numbers)")
    out = {}
    for name, value in metrics.items():
        if name in METRIC_FRAME_COLUMNS:
            info.problem(line, f"metrics.{name} has the name of a reserved column; value ignored")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = float(value)
        elif value is not None:
            info.problem(line, f"metrics.{name} is not a number ({value!r}); value ignored")
    return out


def _event(record: dict, line: int, info: InputFile):
    """A typed event from one parsed line, or _BadRecord naming the key at fault."""
    kind = record.get("type")
    if kind not in EVENT_TYPES:
        raise _BadRecord(f"unknown event type {kind!r}; known types: {', '.join(sorted(EVENT_TYPES))}")
    at = _parse_time(record.get("ts"))
    evidence = Evidence(info.path, line)
    step = _opt(record, "step", (int,), "an integer")
    if step is not None and abs(step) > MAX_COUNT:  # past any campaign (and, past 2^63, the frame's 64 bits)
        raise _BadRecord(f"'step' {str(step)[:40]} is past any step a campaign logged ({MAX_COUNT:.0e})")
    run = _req_str(record, "run") if kind in RUN_EVENTS or kind == "metric" else _opt(record, "run", (str,), "a string")
    if kind in ("metric", "eval"):
        if step is None:
            raise _BadRecord(f"'{kind}' event needs 'step' (an integer)")
        metrics = _numeric_metrics(record, line, info)
        if kind == "metric":
            return {"line": line, "run": run, "kind": kind, "step": step, "ts": at, **metrics}
        return Evaluation(run=run, step=step, at=at, evidence=evidence, metrics=metrics, seconds=_duration(record))
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
        if size is not None and size < 0:
            raise _BadRecord(f"'bytes' must be 0 or more, got {size}")
        state = _opt(record, "state", (list,), "a list of names")
        return CheckpointOp(
            run=run,
            op=kind[len("checkpoint_"):],
            at=at,
            evidence=evidence,
            path=_opt(record, "path", (str,), "a string"),
            step=step,
            seconds=_duration(record),
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
            seconds=_duration(record),
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


def _decode(raw: bytes, unterminated: bool) -> dict:
    """One line as a JSON object, or _BadRecord saying why it is not one."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if unterminated and exc.end == len(raw) and exc.reason == "unexpected end of data":  # cut inside a character
            raise _CutOff(CUT_OFF) from None
        raise _BadRecord(f"not UTF-8 text (byte {exc.start} of the line)") from None
    try:
        record = json.loads(text)
    except RecursionError:
        raise _BadRecord("nested too deeply to read") from None
    except ValueError as exc:
        if unterminated:
            raise _CutOff(CUT_OFF) from None
        raise _BadRecord(f"not JSON ({getattr(exc, 'msg', exc)})") from None
    if not isinstance(record, dict):
        raise _BadRecord("not a JSON object")
    return record


# First bytes after which a line may still be a JSON object (leading blanks; a blank line is no record).
_MAY_BE_OBJECT = np.frombuffer(b"{ \t\r\x0b\x0c", dtype=np.uint8)


def _read_aside(buf: bytes, aside: tuple[np.ndarray, np.ndarray, np.ndarray], line_no: int, out: _Collector) -> None:
    """The lines set aside before pyarrow, on the careful path. Once the file's problems fill what is
    shown, a line that cannot be a JSON object (its first byte says so) is counted without parsing it:
    the count is the same, and a log of millions of damaged lines is read in seconds."""
    lines, starts, ends = aside
    hopeless = ~np.isin(np.frombuffer(buf, dtype=np.uint8)[starts], _MAY_BE_OBJECT)
    for i in range(len(lines)):
        if len(out.info.problems) >= MAX_PROBLEMS_PER_FILE:
            count = int(hopeless[i:].sum())
            out.info.skipped += count
            out.info.problems_not_shown += count
            for j in (i + np.flatnonzero(~hopeless[i:])).tolist():
                _read_line(buf[int(starts[j]):int(ends[j])], line_no + int(lines[j]), out)
            return
        _read_line(buf[int(starts[i]):int(ends[i])], line_no + int(lines[i]), out)


def _read_line(raw: bytes, line: int, out: _Collector, unterminated: bool = False) -> None:
    """The careful path for one line: a bad line is reported and skipped, never raised."""
    if not raw.strip():
        out.info.blank += 1
        return
    try:
        event = _event(_decode(raw, unterminated), line, out.info)
    except _BadRecord as exc:
        out.info.skip(line, f"{exc}; line skipped")
        out.info.cut_off = out.info.cut_off or isinstance(exc, _CutOff)
        return
    if isinstance(event, dict):
        out.metric_rows.append(event)
        return
    out.events.append(event)
    if isinstance(event, Evaluation):
        row = {"line": line, "run": event.run, "kind": "eval", "step": event.step, "ts": event.at}
        out.metric_rows.append({**row, **event.metrics})


def recognise(rel: str, head: bytes) -> str | None:
    return "native" if sniff(head) else None


def read_files(scan: Scan) -> None:
    """Native event logs name their runs inside; their folders name the runs for text logs."""
    rels = scan.files("native")
    read_ahead = scan.read_ahead(rels, lambda rel: read(scan.found[rel][0], rel),
                                 Kept(FORMAT, resume=lambda rel, since: read_on(scan.found[rel][0], rel, since)))
    for rel in rels:
        with scan.contained(rel, FORMAT):
            log = read_ahead.pop(rel, None) or read(scan.found[rel][0], rel)
            scan.add(Reading([log.input], [log.metrics], log.events))
            named = {e.run for e in log.events if getattr(e, "run", None)} | {str(r) for r in log.metrics["run"].unique()}
            scan.native_runs.setdefault(parents(rel)[0], set()).update(named)
            for run in sorted(named):
                scan.sources.setdefault(run, Source(run, FORMAT, run, Evidence(rel), declared=True))
        scan.done(rel)


READER = Reader(FORMAT, recognise, read_files)
