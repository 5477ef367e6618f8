"""What every format reader shares: the shape of its result and the metrics frame it builds."""

from __future__ import annotations

import codecs
import csv
import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
import yaml

from reportgen.boundary import MB, read_file, size
from reportgen.bounded import TooComplex, load_json, load_yaml
from reportgen.ingest import cache
from reportgen.ingest.cache import ReadTo
from reportgen.model import InputFile

# How much of one file is read. A log past its budget is read up to its last full line within it
# and says so; a document (one JSON or YAML value) past its budget is not read at all.
LOG_BUDGET = 512 * MB  # event logs: native JSONL, TensorBoard, checkpoint benchmarks, metrics.csv, MLflow metrics
TEXT_BUDGET = 128 * MB  # captured console output
DOCUMENT_BUDGET = 64 * MB  # trainer_state.json, hparams.yaml, adapter_config.json, manifests, MLflow meta.yaml


def read_log(path: Path, info: InputFile, budget: int | None = None, what: str = "lines") -> bytes:
    """A line-based file's bytes, its first `budget` bytes at most (whole lines; LOG_BUDGET by default);
    past it, a problem says so."""
    read = read_file(path, LOG_BUDGET if budget is None else budget, whole_lines=True)
    note = read.budget_note(what)
    if note:
        info.problem(None, note)
    return read.data


class LineRead:
    """A line log read line by line (a reader's subclass reads lines in `feed`), kept between builds
    (ingest/cache.py) as it is after the log's complete lines, so that a log its writer has only appended to
    since is read on from `at` (read_lines)."""

    def __init__(self, info: InputFile) -> None:
        self.info = info
        self.lines = 0  # lines read
        self.at: ReadTo | None = None  # where the complete lines end in the file, and what says it still holds them

    def feed(self, text: str | bytes, first: int, unterminated: bool = False) -> None:
        """Read the lines of `text` (bytes for a read_lines not of `text`), the first numbered `first`;
        `unterminated`: it is the file's last line, and has no newline (a writer stopped mid-line, or one still
        writing it). A read fed texts in turn reads as one fed their concatenation."""
        raise NotImplementedError

    def keepable(self) -> bool:
        """Whether what was read can be read on from (not, say, after a header that is no header)."""
        return self.lines > 0

    def copy(self) -> LineRead:
        """A read to go on with, this one left as it is (pickled and loaded: a reader whose state allows a
        quicker copy gives its own)."""
        return cache.copied(self)


Read = TypeVar("Read", bound=LineRead)


def read_lines(path: Path, read: Read, since: Read | None, not_text: str | None, budget: int | None = None,
               what: str = "lines", keep: bool = True) -> tuple[Read | None, Read | None]:
    """A line log's lines fed to `since` (what an earlier read kept) from where it stopped, when the log has only
    grown since, else all of them to `read` (a new read); the last line, when it has no newline yet, is fed last,
    on a copy when what is read is kept. The lines are fed as UTF-8 text, or as bytes when `not_text` is None (a
    reader that decodes each line itself). Returns the read of every line (None when the log is not UTF-8 text:
    a problem on `read.info` says so, `not_text`) and what to keep to read on from next time (None: a log to read
    whole then, cut by the budget say)."""
    budget = LOG_BUDGET if budget is None else budget
    more = None if since is None else cache.appended(path, since.at, budget, text=not_text is not None)
    if more is not None:
        since.feed(more.complete, since.lines + 1)
        since.at, read, tail, kept = more.at, since, more.tail, since
    else:
        noted = len(read.info.problems)
        data = read_log(path, read.info, budget, what)
        text = data if not_text is None else decode_text(data)
        if text is None:
            read.info.problem(None, not_text)
            return None, None
        whole = len(read.info.problems) == noted  # not cut by the budget: its end was read
        cut = text.rfind(b"\n" if not_text is None else "\n") + 1
        read.feed(text[:cut], 1)
        read.at, tail = cache.read_to_lines(path, data), text[cut:]
        kept = read if keep and whole and read.keepable() else None
    if kept is not None:
        read = read.copy()
    if tail:
        read.feed(tail, read.lines + 1, unterminated=True)
    return read, kept


def read_document(path: Path, info: InputFile, budget: int | None = None) -> bytes | None:
    """A document's bytes; None, with a problem, when it is larger than a document is read (DOCUMENT_BUDGET
    by default)."""
    budget = DOCUMENT_BUDGET if budget is None else budget
    read = read_file(path, budget)
    if not read.whole:
        info.problem(None, f"{size(read.size)}: larger than reportgen reads for one document ({size(budget)}); not read")
        return None
    return read.data


@dataclass
class Reading:
    """What a reader made of its files: one InputFile each, metric rows, and the rare events."""

    inputs: list[InputFile] = field(default_factory=list)
    frames: list[pd.DataFrame] = field(default_factory=list)
    events: list = field(default_factory=list)


class MetricRows:
    """Collects metric rows of one file column by column; each metric column is sparse."""

    def __init__(self, rel: str):
        self.rel = rel
        self.line: list[int | None] = []
        self.run: list[str] = []
        self.kind: list[str] = []
        self.step: list[int | None] = []
        self.ts: list[datetime | None] = []
        self.values: dict[str, dict[int, float]] = {}

    def add(self, run: str, kind: str, step: int | None, line: int | None, ts: datetime | None,
            values: dict[str, float]) -> None:
        row = len(self.line)
        self.line.append(line)
        self.run.append(run)
        self.kind.append(kind)
        self.step.append(step)
        self.ts.append(ts)
        for name, value in values.items():
            self.values.setdefault(name, {})[row] = value

    def __len__(self) -> int:
        return len(self.line)

    def drop_metric(self, name: str) -> None:
        """Leave a metric out (an axis read as the step), and the rows it alone filled."""
        self.values.pop(name, None)
        filled = sorted({row for cells in self.values.values() for row in cells})
        if len(filled) == len(self.line):
            return
        new = {old: i for i, old in enumerate(filled)}
        for column in ("line", "run", "kind", "step", "ts"):
            setattr(self, column, [getattr(self, column)[old] for old in filled])
        self.values = {n: {new[row]: v for row, v in cells.items()} for n, cells in self.values.items()}

    def frame(self) -> pd.DataFrame:
        return metric_frame(self.rel, self.line, self.run, self.kind, self.step, self.ts,
                            {name: _column(cells, len(self.line)) for name, cells in self.values.items()})


def _column(cells: dict[int, float], rows: int) -> pa.Array:
    return sparse_column(np.fromiter(cells.keys(), dtype=np.int64, count=len(cells)),
                         np.fromiter(cells.values(), dtype=np.float64, count=len(cells)), rows)


def sparse_column(index: np.ndarray, values: np.ndarray, rows: int) -> pa.Array:
    """A metric logged in some of `rows` rows (those at `index`) as a frame column: null in the others."""
    column = np.zeros(rows, dtype=np.float64)
    present = np.zeros(rows, dtype=bool)
    column[index] = values
    present[index] = True
    return pa.array(column, mask=~present)


def metric_frame(rel: str, line: Sequence[int | None], run: Sequence[str] | str, kind: Sequence[str] | str,
                 step: Sequence[int | None], ts: Sequence[datetime | None] | pa.Array,
                 metrics: dict[str, pa.Array]) -> pd.DataFrame:
    """A metrics frame with the same columns and types as the native reader's.

    Metric columns keep NaN (logged non-finite) apart from null (not logged in that row).
    """
    rows = len(line)
    if isinstance(run, str):
        run = [run] * rows
    if isinstance(kind, str):
        kind = [kind] * rows
    stamps = ts if isinstance(ts, pa.Array) else pa.array(list(ts), pa.timestamp("us", tz="UTC"))
    frame = pd.DataFrame(
        {
            "path": pd.Categorical.from_codes(np.zeros(rows, dtype=np.int8), [rel]),
            "line": pd.array(list(line), dtype="Int64"),
            "run": pd.array(list(run), dtype=object),
            "kind": pd.array(list(kind), dtype=object),
            "step": pd.array(list(step), dtype="Int64"),
            "ts": stamps.to_pandas() if rows else pd.Series([], dtype="datetime64[us, UTC]"),
        }
    )
    if not metrics:
        return frame
    # All metric columns at once: inserting them one by one costs a copy each (minutes for 10,000 columns).
    values = pd.DataFrame({name: pd.arrays.ArrowExtensionArray(metrics[name]) for name in sorted(metrics)}, index=frame.index)
    return pd.concat([frame, values], axis=1)


MAX_COUNT = 10**15  # steps, items, bytes: larger is no count a campaign logged

# Times no campaign logged at: a value outside is damage (and past the calendar's ends, a crash later).
EARLIEST, LATEST = datetime(1970, 1, 1, tzinfo=UTC), datetime(2200, 1, 1, tzinfo=UTC)
EPOCH_END = LATEST.timestamp()


def log_time(value: object, key: str) -> datetime:
    """An ISO 8601 time of a log record (naive: UTC); ValueError with what is wrong, naming `key`."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"'{key}' must be an ISO 8601 time string, got {value!r}")
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"'{key}' is not an ISO 8601 time: {value!r}") from None
    if not EARLIEST.year <= at.year < LATEST.year:
        raise ValueError(f"'{key}' {value!r} is outside {EARLIEST.year}-{LATEST.year - 1}: no campaign logged then")
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at


def from_epoch(seconds: float | None) -> datetime | None:
    """A Unix time (seconds) as an aware UTC datetime; None for missing or absurd values."""
    if seconds is None or not math.isfinite(seconds) or not 0 < seconds < EPOCH_END:
        return None
    return datetime.fromtimestamp(seconds, tz=UTC)


def text_lines(text: str) -> list[str]:
    """The lines of a text as reportgen numbers them: what ends in "\n", and a last line without one.
    A line keeps the "\r" of a "\r\n" end; a "\r" alone ends no line (a progress bar redrawn)."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the end of the last line, not a line of its own
    return lines


UNCLOSED_QUOTE = "a quote opened and not closed on its line"
STRAY_RETURN = "a carriage return inside the row"


# The csv module refuses a cell over 131,072 characters (a long message in a benchmark row, say) as if
# the row were damaged; a file is bounded by its budget already, so no cell is refused for its length.
csv.field_size_limit(max(csv.field_size_limit(), LOG_BUDGET))


def csv_lines(text: str, delimiter: str = ",", first: int = 1) -> Iterator[tuple[int, list[str] | str]]:
    """(line number, cells) of every line of a CSV log written one row per line (CSVLogger, benchmark
    records), numbered as text_lines numbers them (the first `first`). A line whose quote is not closed on
    it, or that the csv module refuses, is (line, why it is no row): a damaged row, which never swallows the
    lines after it (so the lines of a log read in parts read as they do in one)."""
    lines = text_lines(text)
    if '"' not in text:
        reader = csv.reader(lines, delimiter=delimiter)  # no quotes: one line is one row
        for number in range(first, first + len(lines)):
            try:
                yield number, next(reader)
            except csv.Error:
                yield number, STRAY_RETURN
        return
    for number, line in enumerate(lines, start=first):
        line = line.removesuffix("\r")
        if line.count('"') % 2:
            yield number, UNCLOSED_QUOTE
            continue
        try:
            yield number, next(csv.reader([line], delimiter=delimiter), [])
        except csv.Error:
            yield number, STRAY_RETURN


def decode_text(raw: bytes) -> str | None:
    """UTF-8 text (a BOM is dropped), or None when the bytes are not text."""
    raw = raw.removeprefix(codecs.BOM_UTF8)
    if b"\x00" in raw[:8192]:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def read_parsed(path: Path, info: InputFile, holds: str) -> tuple[bool, object]:
    """A JSON or YAML file (by its suffix), parsed: (True, its value), or (False, None) when it cannot be
    read, with the problem on `info` at its line; `holds` says what the file should hold."""
    raw = read_document(path, info)
    if raw is None:
        return False, None
    text = decode_text(raw)
    if text is None:
        info.problem(None, f"not UTF-8 text; {holds}")
        return False, None
    try:
        return True, load_json(text) if path.suffix == ".json" else load_yaml(text)
    except TooComplex as exc:
        info.problem(exc.line, f"not read: {exc.message}")
    except json.JSONDecodeError as exc:
        info.problem(exc.lineno, f"unreadable JSON ({exc.msg})")
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        info.problem(mark.line + 1 if mark else None, f"unreadable YAML ({getattr(exc, 'problem', None) or exc})")
    return False, None


def read_mapping(path: Path, info: InputFile, holds: str) -> dict | None:
    """A JSON or YAML file (by its suffix) that holds one mapping; {} when empty, None when unreadable.

    What is wrong becomes a problem on `info`, with its line; `holds` says what the file should
    hold ("an adapter_config.json holds one JSON object").
    """
    read, data = read_parsed(path, info, holds)
    if not read:
        return None
    if data is None:
        return {}
    if not isinstance(data, dict):
        info.problem(1, f"{holds}; this is not one")
        return None
    info.records = 1
    return data


def dig(data: object, *keys: str) -> object:
    """data[k1][k2]... of nested mappings, or None when any level is missing or not a mapping."""
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def quoted(value: object, limit: int = 40) -> str:
    """A value as a problem quotes it: its repr, or the start of it and how long it is."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return repr(value)
    start = repr(text[:limit]) if isinstance(value, str) else text[:limit]
    return f"{start}… ({len(text):,} characters)"


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class LineIndex:
    """Line numbers of character offsets in one text."""

    def __init__(self, text: str):
        # One code unit per character, so array indexes are string offsets.
        units = (np.frombuffer(text.encode("ascii"), dtype=np.uint8) if text.isascii()
                 else np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32))
        self.ends = np.flatnonzero(units == 10)

    def line(self, offset: int) -> int:
        return int(np.searchsorted(self.ends, offset, side="left")) + 1


def json_entries(text: str, start: int) -> tuple[list[tuple[int, object]], str | None]:
    """The elements of the JSON array starting at `start` ('['), each with its offset.

    Reads element by element, so a file cut off mid-array still gives every complete element;
    the second value is a message when the array is damaged or cut off.
    """
    decoder = json.JSONDecoder()
    out: list[tuple[int, object]] = []
    pos = start + 1
    length = len(text)
    while True:
        while pos < length and text[pos] in " \t\r\n":
            pos += 1
        if pos >= length:
            return out, "the file ends inside the list (cut off)"
        if text[pos] == "]":
            return out, None
        try:
            value, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            return out, f"unreadable JSON ({exc.msg})"
        out.append((pos, value))
        pos = end
        while pos < length and text[pos] in " \t\r\n":
            pos += 1
        if pos < length and text[pos] == ",":
            pos += 1
        elif pos < length and text[pos] == "]":
            return out, None
        elif pos >= length:
            return out, "the file ends inside the list (cut off)"
        else:
            return out, "unreadable JSON (expected ',' or ']')"


# The longest duration a campaign record can hold: no lot is this long, so a longer one is damage
# (and summing a few of them would overflow to infinity).
MAX_DURATION_S = 366 * 24 * 3600.0


def duration_problem(value: float, key: str = "seconds") -> str | None:
    """Why a number is not a duration in seconds (None when it is one)."""
    if not math.isfinite(value) or value < 0:
        return f"'{key}' must be a duration in seconds (a finite number, 0 or more), got {value!r}"
    if value > MAX_DURATION_S:
        return f"'{key}' is {value:g} s, over a year: not a duration from this campaign"
    return None


# Keys that say where training is, not what it measured: a row of eval metrics plus these is an eval row.
PROGRESS_KEYS = frozenset({"epoch", "step", "global_step", "trainer/global_step", "train/epoch", "train/global_step"})
_EVAL_PREFIXES = ("val", "valid", "validation", "eval", "test")


def is_eval(name: str) -> bool:
    """An evaluation metric by its name: `eval_loss`, `val_loss`, `eval/loss`, `test/acc`..."""
    return name.split("/", 1)[0].split("_", 1)[0].lower() in _EVAL_PREFIXES


def row_kind(names: list[str]) -> str:
    """`eval` when every metric of a row (progress counters aside) is an evaluation metric, else `train`."""
    measured = [n for n in names if n not in PROGRESS_KEYS]
    return "eval" if measured and all(is_eval(n) for n in measured) else "train"


def parse_numbers(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The float values of an array of text cells, parsed at once, and which cells are numbers as
    float() reads them (`nan` and `inf` are; digits past any float are not: no one logged them)."""
    try:
        values = cells.astype(np.float64)
        ok = np.ones(len(cells), dtype=bool)
    except ValueError:  # a cell that is no number: each cell on its own
        values = np.full(len(cells), np.nan)
        ok = np.zeros(len(cells), dtype=bool)
        for i, cell in enumerate(cells.tolist()):
            try:
                values[i], ok[i] = float(cell), True
            except ValueError:
                pass
    for i in np.flatnonzero(np.isinf(values)):
        if not str(cells[i]).strip().lstrip("+-").lower().startswith("inf"):
            ok[i] = False
    return values, ok
