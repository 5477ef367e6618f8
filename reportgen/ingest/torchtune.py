"""torchtune DiskLogger files (`log_<unix seconds>.txt`), read without torchtune.

DiskLogger (torchtune/training/metric_logging.py) opens `log_<int(time.time())>.txt` in its
log_dir when it starts, unless given a filename, and appends one line per call:

    log(name, data, step):    "Step {step} | {name}:{data}\\n"
    log_dict(payload, step):  "Step {step} | " + "{name}:{data} " for each item + "\\n"

The recipes call log_dict with loss, lr, tokens_per_second_per_gpu (and grad_norm, peak memory)
at `global_step`, which counts from 1. Lines keep no times: the only time is the one in the file's
name. A recipe's `log_dict.pkl` (a pickle) is never unpickled.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np
import pandas as pd
import pyarrow as pa

from reportgen.ingest.common import (
    MAX_COUNT,
    PROGRESS_KEYS,
    LineRead,
    Reading,
    decode_text,
    from_epoch,
    is_eval,
    metric_frame,
    parse_numbers,
    quoted,
    read_lines,
    text_lines,
)
from reportgen.ingest.scan import (
    Kept,
    Reader,
    Scan,
    Source,
    folder_name,
    parent,
    parents,
)
from reportgen.model import Evidence, InputFile, RunFacts

FORMAT = "torchtune"
PICKLE = "torchtune-pickle"
PICKLE_NOTE = "a pickle: never unpickled"
_LINE = re.compile(r"^Step (\d+) \| (.*)$")
_PAIR = re.compile(r"^[^\s:]+:\S+$")
_FILE_NAME = re.compile(r"^log_(\d{1,12})\.txt$")
NO_STATUS = "DiskLogger writes nothing when training ends (close() only closes the file): the file tells no status"


@dataclass
class TorchtuneLog:
    """What one DiskLogger file says: its InputFile and metric rows (in `reading`) and the run's facts."""

    reading: Reading
    facts: RunFacts


def _pairs(rest: str) -> list[str] | None:
    """The `name:value` items of a Step line, or None when it holds something else."""
    items = rest.split()
    return items if items and all(_PAIR.match(item) for item in items) else None


def _number(value: str) -> float | None:
    """A logged value as DiskLogger writes it (str of a float, an int, a 0-d tensor's item); None if none."""
    try:
        number = float(value)
    except ValueError:
        return None
    if math.isinf(number) and not value.lstrip("+-").lower().startswith("inf"):
        return None
    return number


def _step_line(line: str) -> bool:
    match = _LINE.match(line.removesuffix("\r"))
    if match is None:
        return False
    items = _pairs(match.group(2))
    return items is not None and any(_number(i.split(":", 1)[1]) is not None for i in items)


def recognise(rel: str, head: bytes) -> str | None:
    """"torchtune" when the complete lines of `head` are all DiskLogger lines (`Step N | name:value ...`),
    at least one; "torchtune-pickle" for a `log_dict.pkl` that starts like a pickle."""
    name = PurePosixPath(rel).name
    if name == "log_dict.pkl" and head[:1] == b"\x80":
        return PICKLE
    complete = head[: head.rfind(b"\n") + 1]
    text = decode_text(complete) if complete else None
    if text is None:
        return None
    lines = [line for line in text_lines(text) if line.strip()]
    return FORMAT if lines and all(_step_line(line) for line in lines) else None


def pickle_part(rel: str) -> InputFile:
    """A `log_dict.pkl`: a part of the run's output, listed and never unpickled (unpickling runs code)."""
    return InputFile(rel, PICKLE, records=0, notes=[PICKLE_NOTE])


def read(path: Path, rel: str, run: str) -> TorchtuneLog:
    """One DiskLogger file: a metric row per Step line, its facts (first and last step, and the start
    its name gives)."""
    return read_on(path, rel, run, keep=False)[0]


class Lines(LineRead):
    """A DiskLogger file read line by line: its Step lines so far (their values as printed, parsed when the frame
    is made), its counts and problems, and the run's facts."""

    def __init__(self, rel: str, run: str) -> None:
        super().__init__(InputFile(rel, FORMAT))
        self.facts = RunFacts(run=run, format=FORMAT, evidence=Evidence(rel), reason=NO_STATUS)
        _started(rel, self.info, self.facts)
        self.kept: list[int] = []  # the line of each Step line
        self.steps: list[int] = []
        self.by_name: dict[str, tuple[list[int], list[str]]] = {}  # name -> (row of each value, its text)

    def feed(self, text: str, first: int, unterminated: bool = False) -> None:
        """Read the lines of `text`, the first numbered `first`; `unterminated`: it is the file's last line, and
        has no newline (a writer stopped mid-line, or one still writing it)."""
        info, kept, steps, by_name = self.info, self.kept, self.steps, self.by_name
        for number, line in enumerate(text_lines(text), start=first):
            self.lines = number
            if not line.strip():
                info.blank += 1
                continue
            if unterminated:
                info.cut_off = True
                info.skip(number, "the last line has no line end (DiskLogger ends every line with one): cut off "
                                  "by a writer that stopped; not read")
                continue
            match = _LINE.match(line.removesuffix("\r"))
            pairs = [item.partition(":") for item in match.group(2).split()] if match else []
            if match is None or not pairs or not all(name and value for name, _colon, value in pairs):
                info.skip(number, f"not a DiskLogger line (`Step N | name:value ...`): {quoted(line.strip())}; skipped")
                continue
            if len(match.group(1)) > 16 or int(match.group(1)) > MAX_COUNT:
                info.skip(number, f"step {quoted(match.group(1))} is past any step count; skipped")
                continue
            row = len(kept)
            kept.append(number)
            steps.append(int(match.group(1)))
            for name, _colon, value in pairs:
                rows, texts = by_name.setdefault(name, ([], []))
                rows.append(row)
                texts.append(value)

    def log(self, rel: str, run: str) -> TorchtuneLog:
        """What the lines read make: the metrics frame and the facts (this read's own, left to it)."""
        info, facts = self.info, self.facts
        info.lines = self.lines
        log = TorchtuneLog(Reading([info], [], [facts]), facts)
        frame = _frame(rel, run, info, self.kept, self.steps, self.by_name)
        log.reading.frames.append(frame)
        if len(frame):
            facts.first_step, facts.last_step = int(frame["step"].min()), int(frame["step"].max())
        return log


def read_on(path: Path, rel: str, run: str, since: Lines | None = None, keep: bool = True) -> tuple[TorchtuneLog, Lines | None]:
    """A DiskLogger file read on from `since` when DiskLogger has only appended to it since, else whole; with what
    to keep to read on from next time (common.read_lines). Either way the file reads as it does whole."""
    fresh = Lines(rel, run)
    read, kept = read_lines(path, fresh, since, "not UTF-8 text; a DiskLogger file is text", keep=keep)
    if read is None:
        return TorchtuneLog(Reading([fresh.info], [], [fresh.facts]), fresh.facts), None
    return read.log(rel, run), kept


def _frame(rel: str, run: str, info: InputFile, kept: list[int], steps: list[int],
           by_name: dict[str, tuple[list[int], list[str]]]) -> pd.DataFrame:
    """The metrics frame of the Step lines, parsed name by name; a line without a number is skipped."""
    rows = len(kept)
    lines = np.array(kept, dtype=np.int64)
    columns: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    numbers = np.zeros(rows, dtype=np.int64)  # values that are numbers, per row
    measured = np.zeros(rows, dtype=np.int64)  # ... and those that measure training (not evaluation)
    for name, (at, texts) in by_name.items():
        index = np.array(at, dtype=np.int64)
        parsed, ok = parse_numbers(np.array(texts, dtype=str))
        for i in np.flatnonzero(~ok).tolist():
            info.problem(int(lines[index[i]]), f"{name}: {quoted(texts[i])} is not a number; left out")
        values = np.full(rows, np.nan)
        present = np.zeros(rows, dtype=bool)
        values[index[ok]] = parsed[ok]
        present[index[ok]] = True
        columns[name] = (values, present)
        numbers += present
        if name not in PROGRESS_KEYS and not is_eval(name):
            measured += present
    read = numbers > 0
    for i in np.flatnonzero(~read).tolist():
        info.problem(int(lines[i]), "no value that is a number on this line; skipped")
    info.skipped += int((~read).sum())
    info.records = int(read.sum())
    evals = (measured == 0) & (numbers > measured)  # row_kind: every measured value an evaluation metric
    metrics = {name: pa.array(values[read], mask=~present[read]) for name, (values, present) in columns.items()
               if present[read].any()}
    return metric_frame(rel, lines[read].tolist(), run, np.where(evals[read], "eval", "train").tolist(),
                        np.array(steps, dtype=np.int64)[read].tolist(), [None] * int(read.sum()), metrics)


def _started(rel: str, info: InputFile, facts: RunFacts) -> None:
    """The run's start from the file's name: DiskLogger names its file log_<unix seconds>.txt when it
    opens it, its documented default; its lines keep no times, so nothing else dates the run."""
    match = _FILE_NAME.match(PurePosixPath(rel).name)
    if match is None:
        return
    at = from_epoch(int(match.group(1)))
    if at is None:
        info.problem(None, f"the name's time {match.group(1)} is no time from 1970 to 2199; the start is unknown")
        return
    facts.started_at = at
    facts.reason = (f"started_at from the file name: DiskLogger names its file log_<unix seconds>.txt when it opens "
                    f"it ({match.group(1)}), and its lines keep no times. {NO_STATUS}")


# --- the reader's scan step ------------------------------------------------------------------

def read_files(scan: Scan) -> None:
    """Each DiskLogger file is a run: named after its folder when the folder holds one (a generic
    `logs/` after the folder above it), else after the file; in a run folder its rows are that run's.
    A file whose steps start past 1 continues nothing on that alone. `log_dict.pkl` is listed only."""
    files = scan.files(FORMAT)
    per_folder: dict[str, int] = {}
    for rel in files:
        per_folder[parents(rel)[0]] = per_folder.get(parents(rel)[0], 0) + 1
    for rel in files:
        with scan.contained(rel, FORMAT):
            owner = scan.owner(rel)
            key = owner or f"{FORMAT}:{rel}"
            log = scan.read_one(rel, lambda rel: read(scan.found[rel][0], rel, key),
                                Kept(FORMAT, context=lambda _rel: key, resume=lambda rel, since: read_on(scan.found[rel][0], rel, key, since)))
            scan.add(log.reading)
            if owner is None:
                folder = parents(rel)[0]
                if per_folder[folder] > 1:
                    name = PurePosixPath(rel).stem
                elif folder_name(folder).lower() == "logs" and folder:
                    name = scan.name_of(parent(folder))
                else:
                    name = scan.name_of(folder)
                scan.sources[key] = Source(key, FORMAT, name, Evidence(rel))
        scan.done(rel)
    for rel in scan.files(PICKLE):
        scan.add(Reading([pickle_part(rel)]))
        scan.done(rel)


READER = Reader(FORMAT, recognise, read_files)
