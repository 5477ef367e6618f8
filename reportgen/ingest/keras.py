"""Keras CSVLogger files (`training.log`, or any name the user gave it), read without Keras.

CSVLogger (keras/src/callbacks/csv_logger.py) writes one row per epoch with the csv module's excel
dialect (rows end in "\\r\\n"): a header `epoch` + the logged keys sorted (`accuracy, loss,
val_accuracy, val_loss`; without validation data the `val_` copies of the keys are added after
them), `NA` for a key missing in that epoch's logs, and its `separator` (`,` by default) between
cells. With `append=True` a second fit() appends its rows WITHOUT a header; its epochs continue
from `initial_epoch`, or start again at 0 when the user forgot it. Steps here are epochs, as Keras
numbers them in this file (from 0), and the file keeps no times.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from reportgen.ingest.common import (
    MAX_COUNT,
    LineRead,
    Reading,
    csv_lines,
    decode_text,
    is_eval,
    metric_frame,
    parse_numbers,
    quoted,
    read_lines,
    text_lines,
)
from reportgen.ingest.scan import Kept, Reader, Scan, Source
from reportgen.model import Decision, Evaluation, Evidence, InputFile, RunFacts

FORMAT = "keras-csv"
SEPARATORS = (",", ";", "\t")
NA = "NA"
STEPS_ARE_EPOCHS = "steps are epochs: CSVLogger writes one row per epoch, numbered from 0 as Keras counts them"
_EPOCH = re.compile(r"^\d{1,16}$")
_NUMBER = re.compile(r"^[+-]?(\d|\.\d|inf|nan)", re.IGNORECASE)


@dataclass
class KerasLog:
    """What one CSVLogger file says: its InputFile, metric rows and evaluations (in `reading`), the
    run's facts, and the line ranges of each attempt (each fit() that wrote into it, as far as the
    file tells) with what decided each one."""

    reading: Reading
    facts: RunFacts
    attempts: list[tuple[int, int]] = field(default_factory=list)
    attempt_reasons: list[str] = field(default_factory=list)


def _separator(first: str) -> str | None:
    """The separator of a CSVLogger header: the character after its first cell, `epoch`."""
    if first.startswith("epoch") and len(first) > 5 and first[5] in SEPARATORS:
        return first[5]
    return None


def _names(cells: list[str]) -> bool:
    """Cells that are metric names: none empty, none a number, none quoted."""
    return all(c and not c.isspace() and '"' not in c and not _NUMBER.match(c) for c in cells)


def _keras_order(names: list[str]) -> bool:
    """The order CSVLogger writes keys in: sorted, or sorted keys followed by their `val_` copies
    (what it adds when no key starts with `val_`)."""
    if names == sorted(names):
        return True
    half = len(names) // 2
    train, val = names[:half], names[half:]
    return len(names) % 2 == 0 and train == sorted(train) and val == [f"val_{n}" for n in train]


def recognise(rel: str, head: bytes) -> str | None:
    """"keras-csv" when the first line is a CSVLogger header (`epoch`, then metric names in the order
    CSVLogger writes them, no `step` column) and every complete row in `head` starts with an epoch.

    Lightning's metrics.csv (it has a `step` column) and checkpoint benchmark records (they name
    `checkpoint` and `operation`) are not taken.
    """
    complete = head[: head.rfind(b"\n") + 1] or head
    text = decode_text(complete)
    if text is None:
        return None
    lines = text_lines(text)
    if not lines:
        return None
    first = lines[0].removesuffix("\r")
    sep = _separator(first)
    if sep is None or not _names(first.split(sep)[1:]):
        return None
    names = first.split(sep)[1:]
    if not names or not _names(names) or "step" in names or "epoch" in names:
        return None
    if {"checkpoint", "operation"} <= set(names) or not _keras_order(names):
        return None
    rows = [line.removesuffix("\r") for line in lines[1:] if line.strip()]
    if complete is not head and rows and not head.endswith(b"\n"):
        rows = rows[:-1]
    for row in rows:
        cell = row.split(sep, 1)[0]
        if not (_EPOCH.match(cell) or row.startswith(f"epoch{sep}")):
            return None
    return FORMAT


def _blank(cells: list[str] | str) -> bool:
    return isinstance(cells, list) and len(cells) <= 1 and not "".join(cells).strip()


@dataclass
class _Segment:
    """The rows under one header: their lines, epochs and cells (the epoch's cell left out)."""

    names: list[str]
    lines: list[int] = field(default_factory=list)
    epochs: list[int] = field(default_factory=list)
    cells: list[list[str]] = field(default_factory=list)


def read(path: Path, rel: str, run: str) -> KerasLog:
    """One CSVLogger file: a train row (the keys without `val_`) and an eval row (the `val_` keys) per
    epoch, at step = the epoch; an Evaluation per eval row; the facts; and its attempts. Rows under
    each header are one metrics frame."""
    return read_on(path, rel, run, keep=False)[0]


def read_on(path: Path, rel: str, run: str, since: CsvLog | None = None, keep: bool = True) -> tuple[KerasLog, CsvLog | None]:
    """`read`, on from `since` when CSVLogger has only appended rows since (an epoch a row), else whole; with what
    to keep to read on from next time (common.read_lines). Either way the file reads as it does whole."""
    fresh = CsvLog(rel, run)
    read, kept = read_lines(path, fresh, since, "not UTF-8 text; a CSVLogger file is a CSV file", what="rows", keep=keep)
    if read is None:  # not text: nothing read
        facts = RunFacts(run=run, format=FORMAT, evidence=Evidence(rel))
        return KerasLog(Reading([fresh.info], [], [facts]), facts), None
    return read.log(), kept


class CsvLog(LineRead):
    """A CSVLogger file read line by line: its separator (from its first line), the rows under each header so
    far, and where each attempt starts."""

    def __init__(self, rel: str, run: str) -> None:
        super().__init__(InputFile(path=rel, format=FORMAT, notes=[STEPS_ARE_EPOCHS]))
        self.rel, self.run = rel, run
        self.sep: str | None = None  # once the first line that is not blank is read
        self.no_header: tuple[int, str] | None = None  # that line, when it is no header: nothing is read then
        self.segments: list[_Segment] = []
        self.previous: int | None = None  # the epoch of the last row read
        self.skipped_since = 0  # damaged rows since that row
        self.starts: list[tuple[int, str]] = []  # (first line, why) of each attempt
        self.first_epoch: int | None = None

    def feed(self, text: str, first: int, unterminated: bool = False) -> None:
        info = self.info
        lines = text_lines(text)
        at = 0
        while self.sep is None and self.no_header is None and at < len(lines):  # the first line that is not blank
            line = lines[at].removesuffix("\r")
            if line.strip():
                sep = _separator(line)
                if sep is None or not _names(line.split(sep)[1:]):
                    self.no_header = (first + at, line)
                else:
                    self.sep = sep
                break
            info.blank += 1
            at += 1
        self.lines = first + len(lines) - 1
        if self.no_header is not None:  # nothing below (or at) a first line that is no header is read
            skipped = sum(1 for line in lines[at:] if line.strip())
            info.skipped += skipped
            info.blank += len(lines) - at - skipped
            return
        if self.sep is None:
            return
        rest = "\n".join(lines[at:])
        for line, cells in csv_lines(rest, self.sep, first + at):
            self._row(line, cells, unterminated and not lines[-1].endswith("\r"))

    def _row(self, line: int, cells: list[str] | str, cut: bool) -> None:
        info, segments = self.info, self.segments
        if len(cells) <= 1 and _blank(cells):
            info.blank += 1
            return
        if isinstance(cells, str):
            info.skip(line, f"not a CSV row ({cells}); row skipped")
            self.skipped_since += 1
            return
        if cells[0] == "epoch" and _names(cells[1:]):
            info.header += 1
            if not segments:
                self.starts.append((line, "the header: the first fit() that wrote this file (rows whose epochs follow one "
                                          "another are one attempt: a resume appending from the next epoch looks the same)"))
            else:
                self.starts.append((line, f"a second header at line {line}: another CSVLogger wrote this file as a new "
                                          "one from here (files joined, or a logger that found the file empty)"))
                self.previous, self.skipped_since = None, 0
            segments.append(_Segment(cells[1:]))
            return
        if not segments:
            info.skip(line, "a row before the header; row skipped")
            return
        segment = segments[-1]
        if cut:
            info.cut_off = True
            info.skip(line, "the last row has no line end (CSVLogger ends every row with one): cut off mid-row "
                            "by a writer that stopped; row skipped")
            return
        if len(cells) != len(segment.names) + 1:
            info.skip(line, f"{len(cells)} cells where the header has {len(segment.names) + 1} (a fit() that "
                            "logged other metrics appended without a header of its own); row skipped")
            self.skipped_since += 1
            return
        if not _EPOCH.match(cells[0]) or int(cells[0]) > MAX_COUNT:
            info.skip(line, f"epoch: {quoted(cells[0])} is not an epoch number; row skipped")
            self.skipped_since += 1
            return
        epoch = int(cells[0])
        why = _new_attempt(epoch, self.previous, line, self.skipped_since)
        if why is not None:
            self.starts.append((line, why))
        self.previous, self.skipped_since = epoch, 0
        self.first_epoch = epoch if self.first_epoch is None else self.first_epoch
        segment.lines.append(line)
        segment.epochs.append(epoch)
        segment.cells.append(cells[1:])
        info.records += 1

    def log(self) -> KerasLog:
        """What the lines read make: the frames, evaluations, facts and attempts."""
        info, rel = self.info, self.rel
        facts = RunFacts(run=self.run, format=FORMAT, evidence=Evidence(rel))
        reading = Reading([info], [], [facts])
        log = KerasLog(reading, facts)
        info.lines = self.lines
        if self.no_header is not None:
            number, first = self.no_header
            info.problem(number, f"no CSVLogger header (a first line `epoch` then the metric names, separated by "
                                 f"',', ';' or a tab): {quoted(first)}; the {info.skipped} lines are not read")
            return log
        if self.sep is None:
            return log
        for segment in self.segments:
            reading.frames.append(_frame(segment, rel, self.run, info, reading.events))
        for i, (start, why) in enumerate(self.starts):
            end = self.starts[i + 1][0] - 1 if i + 1 < len(self.starts) else self.lines
            log.attempts.append((start, end))
            log.attempt_reasons.append(why)
        facts.first_step, facts.last_step = self.first_epoch, self.previous
        if info.cut_off:
            facts.status, facts.unended = "interrupted", True
            facts.reason = f"{rel} line {self.lines}: the last row is cut off mid-row: its writer was stopped"
        else:
            facts.reason = "CSVLogger writes nothing at the end of training: the file tells no status"
        return log


def _frame(segment: _Segment, rel: str, run: str, info: InputFile, events: list) -> pd.DataFrame:
    """The metric rows of one header's rows, column by column: per epoch a train row, then an eval row
    (each only when it has a value); and an Evaluation per eval row, appended to `events`."""
    rows, width = len(segment.lines), len(segment.names)
    table = np.array(segment.cells, dtype=str).reshape(rows, width)
    lines = np.array(segment.lines, dtype=np.int64)
    epochs = np.array(segment.epochs, dtype=np.int64)
    evals = np.array([is_eval(name) for name in segment.names], dtype=bool)
    values = np.full((rows, width), np.nan)
    present = np.zeros((rows, width), dtype=bool)
    for j, name in enumerate(segment.names):
        column = table[:, j]
        logged = (column != NA) & (column != "")  # NA: a key missing from that epoch's logs
        parsed, ok = parse_numbers(column[logged])
        values[logged, j] = parsed
        present[logged, j] = ok
        for i in np.flatnonzero(logged)[~ok].tolist():
            info.problem(int(lines[i]), f"{name}: {quoted(str(column[i]))} is not a number; that cell is left out")
    has_train = present[:, ~evals].any(axis=1)
    has_eval = present[:, evals].any(axis=1)
    source = np.concatenate([np.flatnonzero(has_train), np.flatnonzero(has_eval)])
    eval_row = np.concatenate([np.zeros(int(has_train.sum()), dtype=bool), np.ones(int(has_eval.sum()), dtype=bool)])
    order = np.argsort(source * 2 + eval_row, kind="stable")  # by line, a train row before its eval row
    source, eval_row = source[order], eval_row[order]
    metrics = {}
    for j, name in enumerate(segment.names):
        mask = present[source, j] & (eval_row == evals[j])
        if mask.any():
            metrics[name] = pa.array(values[source, j], mask=~mask)
    names = [name for name, e in zip(segment.names, evals) if e]
    at = np.flatnonzero(has_eval)
    for epoch, line, row, logged in zip(epochs[at].tolist(), lines[at].tolist(), values[at][:, evals].tolist(),
                                        present[at][:, evals].tolist()):
        events.append(Evaluation(run, epoch, None, Evidence(rel, line),
                                 {name: value for name, value, ok in zip(names, row, logged) if ok}))
    return metric_frame(rel, lines[source].tolist(), run, np.where(eval_row, "eval", "train").tolist(),
                        epochs[source].tolist(), [None] * len(source), metrics)


def _new_attempt(epoch: int, previous: int | None, line: int, skipped: int) -> str | None:
    """Why this row starts a new attempt, or None: one fit() writes every epoch, one after the other."""
    if previous is None or epoch == previous + 1:
        return None
    if epoch == 0:
        return (f"line {line}: epochs start again at 0 after epoch {previous}: a new fit() appended without "
                "initial_epoch, a new attempt and not a continuation")
    if epoch <= previous:
        return (f"line {line}: epoch {epoch} after epoch {previous}: a new fit() appended from initial_epoch {epoch}, "
                f"training epochs {epoch}-{previous} again")
    if skipped:
        return None  # the damaged rows between may be the missing epochs
    return (f"line {line}: epoch {epoch} after epoch {previous}: epochs {previous + 1}-{epoch - 1} are not in the "
            f"file: a new fit() appended from initial_epoch {epoch}")


# --- the reader's scan step ------------------------------------------------------------------

def read_files(scan: Scan) -> None:
    """Each CSVLogger file is a run, named after the file (or its folder, for a generic name such as
    training.log); in a run folder its rows are that run's. Each further attempt a file shows (a fit()
    whose epochs start again, go back or skip) is a run of its own, named <name>-n, continuing nothing:
    the file does not say which weights it started from."""
    for rel in scan.files(FORMAT):
        with scan.contained(rel, FORMAT):
            owner = scan.owner(rel)
            key = owner or f"{FORMAT}:{rel}"
            log = scan.read_one(rel, lambda rel: read(scan.found[rel][0], rel, key),
                                Kept(FORMAT, context=lambda _rel: key, resume=lambda rel, since: read_on(scan.found[rel][0], rel, key, since)))
            scan.add(log.reading)
            if owner is None:
                scan.sources[key] = Source(key, FORMAT, scan.file_name_of(rel), Evidence(rel))
                _attempts(scan, log, rel, key)
        scan.done(rel)


def _attempts(scan: Scan, log: KerasLog, rel: str, key: str) -> None:
    """The rows, evaluations and facts of the 2nd, 3rd... attempt go to a source of their own."""
    if len(log.attempts) < 2:
        return
    reading, facts = log.reading, log.facts
    frames = [f for f in reading.frames if len(f)]
    for n, ((start, end), why) in enumerate(zip(log.attempts, log.attempt_reasons, strict=True), start=1):
        if n == 1:
            continue
        other = f"{key}#{n}"
        for frame in frames:
            inside = (frame["line"] >= start) & (frame["line"] <= end)
            frame.loc[inside, "run"] = other
        for event in reading.events:
            if isinstance(event, Evaluation) and event.evidence.line is not None and start <= event.evidence.line <= end:
                event.run = other
        steps = [int(s) for f in frames for s in f.loc[f["run"] == other, "step"].dropna()]
        theirs = RunFacts(run=other, format=FORMAT, evidence=Evidence(rel, start), status=facts.status,
                          reason=facts.reason, first_step=min(steps) if steps else None,
                          last_step=max(steps) if steps else None)
        reading.events.append(theirs)
        scan.sources[other] = Source(other, FORMAT, f"{scan.sources[key].name}-{n}", Evidence(rel, start))
        scan.notes.append((other, Decision("separate", "keras-attempt", f"{rel} {why}", (Evidence(rel, start),))))
    steps = [int(s) for f in frames for s in f.loc[f["run"] == key, "step"].dropna()]
    facts.first_step, facts.last_step = (min(steps), max(steps)) if steps else (None, None)
    facts.status = None
    facts.reason = f"another fit() appended to {rel} after it (line {log.attempts[1][0]}): the file tells no status"


READER = Reader(FORMAT, recognise, read_files)
