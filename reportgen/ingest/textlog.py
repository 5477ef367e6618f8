"""Plain text logs (stdout/stderr captures): what went wrong, and how the run ended.

Recognised, each with its line:
- Python tracebacks (the message is the exception line that ends them) and CUDA out-of-memory;
- a process killed by the system ("Killed", SIGKILL);
- non-finite losses in messages and in the Trainer's printed progress dicts;
- "Token indices sequence length is longer than the specified maximum sequence length": the
  inputs are longer than the model's maximum and were NOT cut (the tokenizer warns, then the
  model would index out of range or the collator cuts later) — reported as `too_long`;
- real truncation messages (sequences truncated, `truncation` strategies applied) — `truncation`;
- the end of training (the Trainer's final summary dict, Lightning's "`Trainer.fit` stopped");
- resumes ("Restoring states from the checkpoint path at ...", "Continuing training from ...").
Lightning prints "GPU available:" when each process starts, and a Trainer's progress bar starts again
at 0 of its total: lines after the k-th such line belong to session k, so a log appended to by a run
and its resume (or by two runs one after the other) can be told apart.

The Hugging Face Trainer's printed dicts ({'loss': '3.907', 'epoch': '0.07812'}) are also metric rows
of the log (`read_console`; see Printed for how each one's step is known), and a Kaggle notebook's
log (a JSON array of its writes) is read as the console it records.

Each session also keeps what can tie it to a run when the log lies outside every run's folder
(ingest/identity.py decides): the clock times its lines start with (logging's asctime, ISO
times; a time without an offset is read as UTC), the hyperparameters it printed (a dict or an
argparse Namespace), the values it printed (the Trainer's progress dicts and final summary, each
to the digits printed), the logger version Lightning's progress bar shows (`v_num`), the paths it
names, and whether it shows training steps.
"""

from __future__ import annotations

import ast
import codecs
import copy
import math
import re
import warnings
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path, PurePosixPath

import numpy as np
import pandas as pd

from reportgen.boundary import open_file
from reportgen.ingest.common import (
    EARLIEST,
    LATEST,
    TEXT_BUDGET,
    LineIndex,
    LineRead,
    Reading,
    decode_text,
    json_entries,
    metric_frame,
    quoted,
    read_lines,
    read_log,
    row_kind,
    sparse_column,
    text_lines,
)
from reportgen.ingest.scan import Kept, Reader, Scan, TextLog, parents
from reportgen.model import Evidence, InputFile, LogMessage, MessageKind

FORMAT = "text-log"
TEXT_SUFFIXES = (".log", ".txt", ".out", ".err", ".stdout", ".stderr")
MAX_MESSAGE = 300

_TRACEBACK_TEXT = "Traceback (most recent call last):"
_TRACEBACK = re.compile(r"^Traceback \(most recent call last\):")
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b.*|[A-Za-z_][\w.]*Error)$")
_OOM = re.compile(r"CUDA out of memory|OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED|out of memory", re.IGNORECASE)
_KILLED = re.compile(r"^(Killed|.*\bSIGKILL\b.*|.*killed by signal 9.*|.*exit code 137.*)$", re.IGNORECASE)
_NON_FINITE = re.compile(r"\b(loss|grad[_ ]?norm)\b[^\n]{0,40}?\b(nan|inf|infinity|non-finite|not finite)\b", re.IGNORECASE)
_TOO_LONG = re.compile(r"sequence length is longer than the specified maximum sequence length", re.IGNORECASE)
_TRUNCATION = re.compile(r"\btruncat(ed|ion|ing)\b", re.IGNORECASE)
_FIT_DONE = re.compile(r"`Trainer\.fit` stopped:|Training completed\. Do not forget to share your model")
_RESTORE = re.compile(r"(?:Restoring states from the checkpoint path at|Restored all states from the checkpoint at|"
                      r"Continuing training from checkpoint|Loading model from) (\S+)")
_SESSION = re.compile(r"^GPU available: ")
# Words without which no message pattern (_OOM to _RESTORE) can match a line, lowercased: most lines of a
# long log hold none of them and are passed by a few substring tests instead of eight regular expressions.
_MESSAGE_WORDS = ("memory", "cublas_status_alloc_failed", "kill", "exit code 137", "sequence length is longer", "truncat",
                  "trainer.fit", "training completed", "did not improve", "threshold reached", "restor",
                  "continuing training from checkpoint", "loading model from")
_NON_FINITE_WORDS, _NON_FINITE_TARGETS = ("nan", "inf", "finite"), ("loss", "grad")
_LOADED_WORDS = ("load", "restor", "read", "from_pretrained", "init")


def _may_say(low: str) -> bool:
    """Whether a lowercased line may hold a message some pattern recognises (never False when one would)."""
    return any(w in low for w in _MESSAGE_WORDS) or (
        any(w in low for w in _NON_FINITE_WORDS) and any(w in low for w in _NON_FINITE_TARGETS))
# Where training is: "step 1320/3000", "global_step=1320", or the Trainer's progress bar " 44%|▍ | 1320/3000 [".
# (Lightning's bar counts batches within an epoch, "Epoch 0: 50%| | 10/20 [", and is not a step; nor
# is an evaluation bar nested in the training one, which has its own total.)
_STEP = re.compile(r"^(?:global[_ ])?step[\s=:]+(\d+)\b", re.IGNORECASE)
_BAR = re.compile(r"^\s*\d{1,3}%\|[^|]*\|\s*(\d+)/(\d+)\s*\[(?:(\d+):)?(\d{1,2}):(\d{2})<")
_PROGRESS = re.compile(r"^\{'[A-Za-z_]+': .*\}$")
# Lightning's EarlyStopping callback when it stops the fit: the training loop's own stop.
_EARLY_STOP = re.compile(r"did not improve in the last \d+ records\..*Signaling Trainer to stop|"
                         r"Stopping threshold reached:|Divergence threshold reached:", re.IGNORECASE)
# A clock time a line starts with: "2026-11-03 05:30:14,123", "[2026-11-03T05:30:14Z]", "[INFO|2026-11-03 05:30:14]".
# A clock time a line starts with, after an optional "[LEVEL|file.py:N] " or "[LEVEL|": logging's asctime
# "2026-11-03 05:30:14,123", ISO "2026-11-03T05:30:14Z", MLflow's "2026/11/03 05:30:14", and the
# Hugging Face examples' datefmt "11/03/2026 05:30:14" (month first, as they write it).
_CLOCK_LEAD = r"^\[?(?:[A-Za-z]+\|(?:[^\]|]*\]\s*)?)?"
_CLOCK_TIME = r"[ T](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,6}))?\s*(Z|[+-]\d{2}:?\d{2})?(?![\d:])"
_CLOCK = re.compile(_CLOCK_LEAD + r"(\d{4})[-/](\d{2})[-/](\d{2})" + _CLOCK_TIME)
_CLOCK_US = re.compile(_CLOCK_LEAD + r"(\d{2})/(\d{2})/(\d{4})" + _CLOCK_TIME)
# What a line may start with before its message: a clock time, a [bracketed] prefix, a level, a logger name.
_LEAD = re.compile(r"^(?:\[[^\]]*\]\s*|\d{2,4}[-/]\d{2}[-/]\d{2,4}[ T][\d:,.]+\s*(?:Z|[+-]\d{2}:?\d{2})?\s*"
                   r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]+:|(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\b[\s:|-]*"
                   r"|(?!(?:global[_ ])?step\b)[A-Za-z_][\w.]*:\s+|-\s+)*", re.IGNORECASE)
# Lightning's ModelCheckpoint on resume: the first path is the resumed run's folder, the second its own.
_DIRPATH_CHANGED = re.compile(r"The dirpath has changed from '([^']+)' to '([^']+)'")
# A path the process read from (a model, a configuration, a checkpoint): it names another run, not this one.
_LOADED = re.compile(r"\b(?:load(?:ing|ed)?|restor(?:e|ed|ing)|read(?:ing)?|from_pretrained|init(?:ialis|ializ)ed from)\b",
                     re.IGNORECASE)
_MAPPING = re.compile(r"(\{[^{}]*\}|Namespace\([^()]*\))")
# (A path starts where a word starts: no match is tried again at every letter of a word without a slash.)
_PATH = re.compile(r"(?<![\w.\-=+@~])(?:[A-Za-z]:)?[\w.\-=+@~]*(?:[/\\][\w.\-=+@~]+)+")
# What looks like a path and is not one: a progress bar's count or rate (6/30, 37.86it/s, 2.82s/it).
_NOT_A_PATH = re.compile(r"^[\d.]*(?:it|s)?/(?:s|it|[\d.]+)$")
MAX_SESSION_ITEMS = 200  # clock times, printed mappings and paths kept per session
MAX_SESSION_VALUES = 2000  # printed values kept per session
# A value in a printed dict: 'loss': 3.9031 (transformers 4) or 'loss': '3.903' (transformers 5 prints strings).
# Lightning's progress bar shows its first logger's version: "v_num=3" (tqdm), "v_num: 3.000" (rich).
_V_NUM = re.compile(r"\bv_num[=:]\s*(\d{1,9})(?:\.0+)?(?![\d.])")
_VALUE = re.compile(r"'([A-Za-z_][\w/.\-]*)':\s*'?(-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)'?(?=\s*[,}])")


@dataclass
class PrintedValues:
    """The values a session printed, one column per name as printed: each value's line, the value and
    ± half a unit of its last printed digit (arrays of numbers: no object per value)."""

    columns: dict[str, tuple[array, array, array]] = field(default_factory=dict)  # name -> lines, values, halves
    count: int = 0

    def __len__(self) -> int:
        return self.count

    def add(self, line: int, name: str, value: float, half: float) -> None:
        column = self.columns.get(name) or self.columns.setdefault(name, (array("q"), array("d"), array("d")))
        column[0].append(line)
        column[1].append(value)
        column[2].append(half)
        self.count += 1

    def relined(self, line_of: Callable[[int], int]) -> None:
        """Each value's line mapped (a Kaggle log's console lines to the lines of its file)."""
        for lines, _values, _halves in self.columns.values():
            lines[:] = array("q", map(line_of, lines))


@dataclass(eq=False)  # one per file or process: compared and hashed as itself
class Session:
    """One process's part of a text log, with what can tie it to a run."""

    index: int
    first_line: int
    last_line: int
    times: list[datetime] = field(default_factory=list)
    clock_resolution: float = 0.0  # the coarsest resolution its clock times are printed to, in seconds
    mappings: list[tuple[int, dict]] = field(default_factory=list)  # printed hyperparameters, by line
    paths: list[tuple[int, str]] = field(default_factory=list)  # paths named (restored checkpoints excluded), by line
    values: PrintedValues = field(default_factory=PrintedValues)  # the values printed, to the digits printed
    versions: list[tuple[int, int]] = field(default_factory=list)  # Lightning's progress bar v_num, by line
    steps: bool = False  # a step line or a training progress bar: this process trained
    first_step: int | None = None
    last_step: int | None = None
    first_clock: tuple[int, datetime] | None = None  # the first clock time printed, with its line
    setup: Setup = field(default_factory=lambda: Setup())  # the training set-up it printed


@dataclass
class Setup:
    """What a process printed of its training set-up, each figure with its line.

    The Trainer's "***** Running training *****" block: "Total optimization steps = N" (max_steps),
    "Instantaneous batch size per device = B", "Gradient Accumulation steps = A" and "Total train
    batch size (w. parallel, distributed & accumulation) = T", where the Trainer computes T as
    B x A x the devices it trains on (processes x GPUs per process); Accelerate's state print
    "Num processes: N" when the Trainer's block is not there."""

    total_steps: tuple[int, int] | None = None  # (line, steps)
    per_device: tuple[int, int] | None = None
    accumulation: tuple[int, int] | None = None
    total_batch: tuple[int, int] | None = None
    processes: tuple[int, int] | None = None

    def devices(self) -> tuple[int, int, str] | None:
        """(line, devices, how it was found): from the Trainer's batch sizes when they divide, else
        Accelerate's process count."""
        if self.per_device and self.accumulation and self.total_batch:
            b, a, t = self.per_device[1], self.accumulation[1], self.total_batch[1]
            if b > 0 and a > 0 and t % (b * a) == 0 and t // (b * a) >= 1:
                return (self.total_batch[0], t // (b * a),
                        f"the Trainer's total train batch size {t:,} = {b:,} per device x {a:,} accumulation steps "
                        f"x {t // (b * a):,} devices")
        if self.processes and self.processes[1] >= 1:
            return self.processes[0], self.processes[1], f"Accelerate's 'Num processes: {self.processes[1]:,}'"
        return None

    def read(self, line: str, number: int) -> None:
        """Take a set-up figure from one line, when it prints one (the first of each in a process)."""
        for attribute, pattern in _SETUP:
            if getattr(self, attribute) is None and (match := pattern.search(line)):
                value = int(match.group(1).replace(",", ""))
                if value <= MAX_SETUP:
                    setattr(self, attribute, (number, value))
                return


def sniff(head: bytes, name: str) -> bool:
    if not head:
        return False
    # The sniffed bytes may end inside a UTF-8 character: judge the complete lines only.
    complete = head[: head.rfind(b"\n") + 1] or head
    text = decode_text(complete)
    if text is None:
        return False
    if name.lower().endswith(TEXT_SUFFIXES):
        return True
    return sniff_kaggle(complete) or any(p.search(text) for p in (_TRACEBACK, _OOM, _FIT_DONE, _TOO_LONG)) or \
        any(_PROGRESS.match(line) for line in text.splitlines()[:200])


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # terminal colours and cursor moves


def _short(text: str) -> str:
    text = _ANSI.sub("", text).strip()
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE] + " …"


def read(path: Path, rel: str) -> tuple[InputFile, list[LogMessage], list[Session]]:
    """Every recognised message of one text log, and its sessions; the run is filled in by ingest."""
    got = read_console(path, rel)
    return got.info, got.messages, got.sessions


@dataclass
class TextRead:
    """What one console log gave: its messages, its sessions, and the metric rows it printed."""

    info: InputFile
    messages: list[LogMessage]
    sessions: list[Session]
    metrics: pd.DataFrame  # the Trainer's printed dicts (run "": the caller gives the run)


def read_console(path: Path, rel: str) -> TextRead:
    """A console log: a captured stdout/stderr, or a Kaggle notebook's log (a JSON array of its writes)."""
    return read_on(path, rel, keep=False)[0]


def read_on(path: Path, rel: str, since: _Scanner | None = None, keep: bool = True) -> tuple[TextRead, _Scanner | None]:
    """A console log scanned on from `since` (the scan of its complete lines as an earlier read left it) when it
    has only grown since, else whole; with the scan of its complete lines now, to read on from next time
    (common.read_lines; None when the log is not read on: a Kaggle log, one that is not UTF-8, one cut by the
    budget). Either way the log reads as it does when read whole."""
    if since is None and _is_kaggle(path):
        return _read_whole(path, rel), None
    read, kept = read_lines(path, _Scanner(rel), since, "not UTF-8", TEXT_BUDGET, keep=keep)
    if read is None:  # its undecodable bytes replaced, and said so
        return _read_whole(path, rel), None
    return read.result(), kept


def _is_kaggle(path: Path) -> bool:
    """Whether the log is a Kaggle notebook's (its first 200 characters, as _read_whole sniffs them)."""
    with open_file(path) as handle:
        head = handle.read(800 + len(codecs.BOM_UTF8))
    return sniff_kaggle(head.removeprefix(codecs.BOM_UTF8).decode("utf-8", errors="replace")[:200].encode("utf-8", "replace"))


def _read_whole(path: Path, rel: str) -> TextRead:
    """A Kaggle log, or a console that is not UTF-8 (its undecodable bytes replaced), read whole."""
    info = InputFile(path=rel, format=FORMAT)
    raw = read_log(path, info, TEXT_BUDGET)
    text = decode_text(raw)
    if text is None:
        text = raw.removeprefix(codecs.BOM_UTF8).decode("utf-8", errors="replace")
        info.problem(None, "not valid UTF-8; undecodable bytes were replaced")
    if sniff_kaggle(text[:200].encode("utf-8", "replace")):
        return _read_kaggle(text, rel, info)
    scanner = _Scanner(rel, info)
    scanner.feed(text, 1)
    return scanner.result()


def _scan(text: str, rel: str) -> tuple[list[LogMessage], list[Session], Printed]:
    """The messages, sessions and printed metric rows of a console's text, by its line numbers."""
    scanner = _Scanner(rel)
    scanner.feed(text, 1)
    return scanner.finish()


class _Scanner(LineRead):
    """A console's scan, line by line: its messages, sessions and printed metric rows so far, its lines and blank
    lines, and where the process it was in stood (its step, its progress bar, an open traceback). `feed` scans
    more lines; `finish` ends the scan (a scan fed whole texts in turn reads as one fed their concatenation)."""

    def __init__(self, rel: str, info: InputFile | None = None) -> None:
        super().__init__(info or InputFile(path=rel, format=FORMAT))
        self.rel = rel
        self.messages: list[LogMessage] = []
        self.session = 0
        self.seen_session_line = False
        self.in_traceback: int | None = None
        self.step: int | None = None  # the last step the log showed in this session
        self.bar: tuple[int, int, float] | None = None  # the session's last progress bar: line, step, seconds elapsed
        self.bar_total: int | None = None  # the training bar's total; evaluation bars (other totals) are not steps
        self.crashed = False  # a traceback ended since the last progress bar
        self.sessions = [Session(0, 1, 1)]
        self.printed = Printed()

    def copy(self) -> _Scanner:
        """A scanner to scan on with, this one left as it is: the messages so far are shared (a scan only adds
        messages, never changes one), what a scan changes (the sessions, the printed rows) is copied."""
        other = copy.copy(self)
        other.messages, other.sessions, other.printed = list(self.messages), copy.deepcopy(self.sessions), self.printed.copy()
        other.info = copy.deepcopy(self.info)  # its counts go on
        return other

    def result(self) -> TextRead:
        """The scan ended, with the log's counts."""
        info = self.info
        info.lines = self.lines
        info.text_lines = info.lines - info.blank
        messages, sessions, printed = self.finish()
        info.records = len(messages)
        return TextRead(info, messages, sessions, printed.frame(info))

    def finish(self) -> tuple[list[LogMessage], list[Session], Printed]:
        if self.in_traceback is not None:
            self.messages.append(_message(self.rel, MessageKind.TRACEBACK, self.in_traceback,
                                          "a traceback cut off before its exception line", self.step, self.session))
        if self.bar is not None:
            self.messages.append(_bar_message(self.rel, self.bar, self.session))
        self.printed.settle(self.sessions)
        return self.messages, self.sessions, self.printed

    def feed(self, text: str, first: int, unterminated: bool = False) -> None:
        """Scan the lines of `text`, the first numbered `first` (a last line without its newline is scanned as any)."""
        lines = text_lines(text)
        self.lines = first + len(lines) - 1
        self.info.blank += sum(1 for line in lines if not line.strip())
        # The state in locals while the lines are scanned (the loop is the reader's hot path), back on self after.
        rel, messages, sessions, printed = self.rel, self.messages, self.sessions, self.printed
        session, seen_session_line, in_traceback = self.session, self.seen_session_line, self.in_traceback
        step, bar, bar_total, crashed = self.step, self.bar, self.bar_total, self.crashed

        def add(kind: MessageKind, line: int, message: str, target: str | None = None) -> None:
            messages.append(_message(rel, kind, line, message, step, session, target))

        def flush_bar() -> None:
            if bar is not None:
                messages.append(_bar_message(rel, bar, session))

        for number, line in _segments(text, first):
            stripped = line.strip()
            if not stripped:
                continue
            if _SESSION.match(stripped):
                if seen_session_line:
                    flush_bar()
                    printed.waiting.clear()
                    session += 1
                    step, bar, bar_total = None, None, None
                    sessions.append(Session(session, number, number))
                seen_session_line = True
            drawn = _BAR.match(line)
            if drawn and _new_loop(drawn, line, bar_total, step, crashed):
                # The training bar starts again from 0 after counting past it, or after a crash: the next
                # process appended to the log (or a new train()).
                flush_bar()
                printed.waiting.clear()
                session += 1
                step, bar, bar_total = None, None, None
                sessions.append(Session(session, number, number))
            current = sessions[-1]
            current.last_line = number
            if drawn:
                crashed = False
                bar_total = bar_total or int(drawn.group(2))  # the first bar of a process is its training loop
                if int(drawn.group(2)) == bar_total:
                    step = int(drawn.group(1))
                    printed.bar(step)
                    current.steps = True
                    current.first_step = step if current.first_step is None else min(current.first_step, step)
                    current.last_step = step if current.last_step is None else max(current.last_step, step)
                    hours, minutes, seconds = (int(g) if g else 0 for g in drawn.group(3, 4, 5))
                    bar = (number, step, float(hours * 3600 + minutes * 60 + seconds))
            elif match := _STEP.match(_LEAD.sub("", stripped, count=1)):
                step = int(match.group(1))
                current.steps = True
                current.first_step = step if current.first_step is None else min(current.first_step, step)
                current.last_step = step if current.last_step is None else max(current.last_step, step)
            if drawn is not None:
                # A bar says nothing more (its counts and rates are no paths, no message); what its line goes
                # on with may.
                rest = line[line.find("]", drawn.end()) + 1:].strip()
                if not rest and in_traceback is None:
                    continue
                if rest:
                    _ties(rest, rest.lower(), number, current, clock=False)
            low = stripped.lower()
            if drawn is None:
                _ties(stripped, low, number, current)
            if in_traceback is not None:
                if not line.startswith((" ", "\t")) and _EXCEPTION.match(stripped):
                    kind = MessageKind.OOM if _OOM.search(stripped) else MessageKind.TRACEBACK
                    add(kind, number, stripped)
                    in_traceback = None
                    crashed = True
                    continue
                if not line.startswith((" ", "\t")) and not stripped.startswith(("During handling", "The above exception")):
                    add(MessageKind.TRACEBACK, in_traceback, "a traceback with no final exception line")
                    in_traceback = None
                else:
                    continue
            # A traceback starts its line, or follows a progress bar the crash left without a line end.
            if _TRACEBACK.match(stripped) or (stripped.endswith(_TRACEBACK_TEXT) and drawn):
                in_traceback = number
                continue
            if "{'" in stripped and _PROGRESS.match(body := _ANSI_LEAD.sub("", stripped)):
                values = _printed_dict(body)
                if values is not None:
                    _progress(values, number, add)
                    printed.dict(values, number, session, current)
                continue
            if "per epoch" in stripped and (per_epoch := _PER_EPOCH.search(stripped)):
                printed.per_epoch[session] = int(per_epoch.group(1).replace(",", ""))
            elif any(word in stripped for word in _SETUP_WORDS):
                current.setup.read(_LEAD.sub("", stripped, count=1), number)
            if not _may_say(low):
                continue
            if _OOM.search(stripped):
                add(MessageKind.OOM, number, stripped)
            elif _KILLED.match(stripped):
                add(MessageKind.KILLED, number, stripped)
            elif _TOO_LONG.search(stripped):
                add(MessageKind.TOO_LONG, number, "inputs longer than the model's maximum; the tokenizer did not cut them: " + stripped)
            elif _TRUNCATION.search(stripped):
                add(MessageKind.TRUNCATION, number, stripped)
            elif match := _NON_FINITE.search(stripped):
                add(MessageKind.NON_FINITE, number, stripped, target=match.group(1).lower().replace(" ", "_"))
            elif _FIT_DONE.search(stripped):
                add(MessageKind.FINISHED, number, stripped)
            elif _EARLY_STOP.search(stripped):
                add(MessageKind.EARLY_STOP, number, stripped)
            elif match := _RESTORE.search(stripped):
                add(MessageKind.RESUMED, number, stripped, target=match.group(1).rstrip(".,;'\""))
        self.session, self.seen_session_line, self.in_traceback = session, seen_session_line, in_traceback
        self.step, self.bar, self.bar_total, self.crashed = step, bar, bar_total, crashed


def _message(rel: str, kind: MessageKind, line: int, message: str, step: int | None, session: int,
             target: str | None = None) -> LogMessage:
    return LogMessage(None, kind, _short(message), Evidence(rel, line), step=step, session=session, target=target)


def _bar_message(rel: str, bar: tuple[int, int, float], session: int) -> LogMessage:
    """A session's last progress bar: how long its training loop ran, to the step it reached."""
    line, at_step, elapsed = bar
    return LogMessage(None, MessageKind.PROGRESS, f"the progress bar shows step {at_step} after {_clock(elapsed)}",
                      Evidence(rel, line), step=at_step, session=session, seconds=elapsed)


def _ties(line: str, low: str, number: int, session: Session, clock: bool = True) -> None:
    """What in one line can tie its session to a run: a clock time (unless `clock` is False: the text
    does not start its line), printed hyperparameters, a path."""
    if clock and len(session.times) < MAX_SESSION_ITEMS and (at := _clock_time(line)) is not None:
        session.times.append(at[0])
        session.first_clock = session.first_clock or (number, at[0])
        session.clock_resolution = max(session.clock_resolution, at[1])
    if "v_num" in line and (version := _V_NUM.search(line)) and len(session.versions) < MAX_SESSION_ITEMS:
        session.versions.append((number, int(version.group(1))))
    if "{" in line and len(session.values) < MAX_SESSION_VALUES:
        for match in _VALUE.finditer(line):
            printed = match.group(2)
            try:
                read, exponent = float(printed), Decimal(printed).as_tuple().exponent
            except (ValueError, ArithmeticError):
                continue
            if math.isfinite(read) and isinstance(exponent, int) and abs(exponent) < 300:
                session.values.add(number, match.group(1), read, 0.5 * 10.0 ** exponent)
    if "{" in line or "Namespace(" in line:
        if len(session.mappings) < MAX_SESSION_ITEMS and not _PROGRESS.match(line):
            for match in _MAPPING.finditer(line):
                mapping = _mapping(match.group(1))
                if mapping:
                    session.mappings.append((number, mapping))
    if ("/" in line or "\\" in line) and len(session.paths) < MAX_SESSION_ITEMS and not _RESTORE.search(line) \
            and not (any(w in low for w in _LOADED_WORDS) and _LOADED.search(line)):
        changed = _DIRPATH_CHANGED.search(line)
        if changed:
            session.paths.append((number, changed.group(2)))
            return  # the other path is the run it resumed
        for match in _PATH.finditer(line):
            value = match.group(0).rstrip(".,;:")
            if not _NOT_A_PATH.match(value) and all(value != seen for _line, seen in session.paths):
                session.paths.append((number, value))


def _clock_time(line: str) -> tuple[datetime, float] | None:
    """The clock time a line starts with, and its resolution in seconds (0.001 for logging's ",123")."""
    if match := _CLOCK.match(line):
        year, month, day = (int(g) for g in match.group(1, 2, 3))
    elif match := _CLOCK_US.match(line):
        month, day, year = (int(g) for g in match.group(1, 2, 3))
    else:
        return None
    hour, minute, second = (int(g) for g in match.group(4, 5, 6))
    micro = int((match.group(7) or "0").ljust(6, "0"))
    zone = match.group(8)
    tz = UTC
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        tz = timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:4])))
    fraction = match.group(7) or ""
    try:
        return datetime(year, month, day, hour, minute, second, micro, tzinfo=tz), 10.0 ** -len(fraction)
    except ValueError:
        return None


def _literal(text: str) -> object:
    """A Python literal a log printed; the parser's warnings on text that only looks like one ("invalid
    decimal literal", and on Python 3.11 "invalid escape sequence" as a DeprecationWarning) stay off
    the user's terminal."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return ast.literal_eval(text)


def _mapping(text: str) -> dict | None:
    """A printed dict or argparse Namespace of two or more plain values, as the hyperparameters it shows."""
    if text.startswith("Namespace("):
        pairs = re.findall(r"(\w+)=('[^']*'|\"[^\"]*\"|[^,]+)", text[len("Namespace("):-1])
        text = "{" + ", ".join(f"{key!r}: {value.strip()}" for key, value in pairs) + "}"
    try:
        value = _literal(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None
    if not isinstance(value, dict):
        return None
    plain = {str(k): v for k, v in value.items() if isinstance(v, (int, float, str, bool)) and v is not None}
    return plain if len(plain) >= 2 else None


def _new_loop(match: re.Match, line: str, total: int | None, step: int | None, crashed: bool) -> bool:
    """A progress bar at 0 of the training total, drawn on the first line (a nested bar, such as an
    evaluation's inside training, moves the cursor up with ESC[A), after that bar counted past 0 or
    after a traceback ended the process that drew it."""
    return (total is not None and ((step is not None and step > 0) or crashed) and int(match.group(1)) == 0
            and int(match.group(2)) == total and "\x1b[A" not in line)


def _segments(text: str, first: int = 1):
    """(line number, text) of every line, the first numbered `first`, where a line is what ends in "\n", as
    the evidence pages count them; a progress bar redrawn with "\r" gives one segment per redraw, on the
    same line."""
    for number, physical in enumerate(text.split("\n"), start=first):
        for segment in physical.split("\r"):
            yield number, segment


def _clock(seconds: float) -> str:
    hours, rest = divmod(int(seconds), 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"


_NUMBER = r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_KEY = r"[A-Za-z_][\w/.\-]*"
_ITEM = rf"'{_KEY}': (?:'{_NUMBER}'|{_NUMBER})"
_PLAIN_DICT = re.compile(rf"\{{{_ITEM}(?:, {_ITEM})*\}}")
_PAIRS = re.compile(rf"'({_KEY})': (?:'({_NUMBER})'|({_NUMBER}))")


def _printed_dict(line: str) -> dict | None:
    """A dict a line prints, when it is one. A dict of names and plain numbers (what the Trainer prints)
    is read by one regular expression; any other by the literal parser."""
    if _PLAIN_DICT.fullmatch(line):
        return {key: quoted or bare for key, quoted, bare in _PAIRS.findall(line)}
    try:
        values = _literal(line)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None
    return values if isinstance(values, dict) else None


def _progress(values: dict, number: int, add) -> None:
    """A dict the Trainer printed: its final summary, or values that are not finite."""
    if "train_runtime" in values:
        add(MessageKind.FINISHED, number, "the Trainer printed its final training summary")
    for key in ("loss", "grad_norm", "eval_loss"):
        value = values.get(key)
        try:
            number_value = float(value) if value is not None else None
        except (TypeError, ValueError):
            continue
        if number_value is not None and not math.isfinite(number_value):
            add(MessageKind.NON_FINITE, number, f"the Trainer printed {key}={value}", target=key)


# A dict is the Trainer's metric row when it holds one of the keys the Trainer logs (Trainer.log:
# loss, grad_norm, learning_rate; evaluate(): eval_*; the final summary: train_runtime, train_loss):
# a dict printed by other code ({'a': 1}, a configuration) is not one.
TRAINER_KEYS = frozenset({"loss", "grad_norm", "learning_rate", "train_runtime", "train_loss"})
_ANSI_LEAD = re.compile(r"^(?:\x1b\[[0-9;?]*[A-Za-z])+")  # a nested bar moves the cursor up before the dict
_PER_EPOCH = re.compile(r"Num update steps per epoch = ([\d,]{1,20})\b")
# The Trainer prints its figures with thousands separators ({max_steps:,}); Accelerate "Num processes: 4".
_SETUP = (("total_steps", re.compile(r"Total optimization steps = ([\d,]{1,24})\s*$")),
          ("per_device", re.compile(r"Instantaneous batch size per device = ([\d,]{1,24})\s*$")),
          ("accumulation", re.compile(r"Gradient Accumulation steps = ([\d,]{1,24})\s*$")),
          ("total_batch", re.compile(r"Total train batch size \(w\. parallel, distributed & accumulation\) = ([\d,]{1,24})\s*$")),
          ("processes", re.compile(r"\bNum processes: (\d{1,9})\s*$")))
_SETUP_WORDS = ("Total optimization steps", "batch size", "Gradient Accumulation steps", "Num processes")
MAX_SETUP = 10**15  # a figure past it is no step or batch count


def trainer_metrics(values: dict) -> dict[str, tuple[float, float]] | None:
    """The metrics of a dict the Trainer printed, each with half a unit of its last printed digit
    (transformers 5 prints '3.907', transformers 4 the float); None when it is not the Trainer's."""
    if not any(isinstance(k, str) and (k in TRAINER_KEYS or k.startswith("eval_")) for k in values):
        return None
    out: dict[str, tuple[float, float]] = {}
    for key, value in values.items():
        if not isinstance(key, str) or isinstance(value, bool) or not isinstance(value, (int, float, str)):
            continue
        try:
            number = float(value)
        except (ValueError, OverflowError):
            continue  # a string that is not a number ('[String too long to display...]')
        out[key] = (number, _half_unit(str(value))) if math.isfinite(number) else (math.nan, 0.0)
    return out or None


def _half_unit(printed: str) -> float:
    """Half a unit of the last digit of a printed number: '3.907' -> 0.0005, '4e-05' -> 5e-06, '12' -> 0.5."""
    mantissa, _e, power = printed.strip().lower().partition("e")
    point = mantissa.find(".")
    try:
        exponent = (int(power) if power else 0) - (len(mantissa) - point - 1 if point >= 0 else 0)
    except ValueError:
        return 0.0
    return 0.5 * 10.0 ** exponent if abs(exponent) < 300 else 0.0


class Printed:
    """The Trainer's printed dicts of one log, as metric rows, and how each one's step is known.

    A dict's step is, in this order: the training progress bar tqdm redraws right after it (tqdm
    clears its bar to write the dict and draws it again at once, at the step logged); else the
    printed `epoch` times the steps per epoch ("Num update steps per epoch = N", or the ratio of
    step to epoch of the dicts the bar placed), when the digits printed fix the step; else, when no
    dict of the log has a step, the dicts' order (1, 2, 3...), and a note says so.

    The rows are kept column by column, as the frame holds them: a metric's values with the rows that
    printed it (a row without it is null in the frame, a non-finite value NaN), and the epoch again
    with half a unit of its last printed digit, which place the rows the bar did not."""

    def __init__(self) -> None:
        self.lines = array("q")
        self.sessions = array("q")
        self.kinds: list[str] = []
        self.steps: list[int | None] = []
        self.metrics: dict[str, tuple[array, array]] = {}  # name -> the rows that printed it, its values
        self.epochs = array("d")  # each row's epoch, NaN when it printed none (or a non-finite one)
        self.epoch_halves = array("d")
        self.waiting: list[int] = []
        self.per_epoch: dict[int, int] = {}
        self.note: str | None = None
        self.unplaced = 0

    def __len__(self) -> int:
        return len(self.lines)

    def copy(self) -> Printed:
        """A copy to print on to, this one left as it is (its columns are copied: a deep copy is slow for them)."""
        other = copy.copy(self)
        other.lines, other.sessions, other.epochs, other.epoch_halves = (
            array(a.typecode, a) for a in (self.lines, self.sessions, self.epochs, self.epoch_halves))
        other.kinds, other.steps, other.waiting, other.per_epoch = list(self.kinds), list(self.steps), list(self.waiting), dict(self.per_epoch)
        other.metrics = {name: (array("q", rows), array("d", values)) for name, (rows, values) in self.metrics.items()}
        return other

    def dict(self, values: dict, number: int, session: int, current: Session) -> None:
        metrics = trainer_metrics(values)
        if metrics is None:
            return
        kind = "summary" if "train_runtime" in metrics else row_kind(list(metrics))
        row = len(self.lines)
        self.waiting.append(row)
        self.lines.append(number)
        self.sessions.append(session)
        self.kinds.append(kind)
        self.steps.append(None)
        for name, (value, _half) in metrics.items():
            rows, values = self.metrics.get(name) or self.metrics.setdefault(name, (array("q"), array("d")))
            rows.append(row)
            values.append(value)
        epoch, half = metrics.get("epoch", (math.nan, 0.0))
        self.epochs.append(epoch)
        self.epoch_halves.append(half)
        if kind == "train":
            current.steps = True  # it printed a training metric: this process trained

    def bar(self, step: int) -> None:
        for index in self.waiting:
            self.steps[index] = step
        self.waiting.clear()

    def settle(self, sessions: list[Session]) -> None:
        """The steps the bar did not give: from the epoch, else the order (see the class)."""
        by_session: dict[int, list[int]] = {}
        for i, index in enumerate(self.sessions):
            by_session.setdefault(index, []).append(i)
        for session in sessions:
            rows = by_session.get(session.index, [])
            per_epoch = self.per_epoch.get(session.index) or self._ratio(rows)
            for i in rows:
                epoch = self.epochs[i]
                if self.steps[i] is None and per_epoch and math.isfinite(epoch) and self.epoch_halves[i] * per_epoch < 0.5:
                    self.steps[i] = round(epoch * per_epoch)
            for i in rows:
                if (step := self.steps[i]) is not None:
                    session.first_step = step if session.first_step is None else min(session.first_step, step)
                    session.last_step = step if session.last_step is None else max(session.last_step, step)
        if self.lines and all(step is None for step in self.steps):
            self.steps = list(range(1, len(self.lines) + 1))
            self.note = (f"{len(self.lines)} printed metric dicts have no step (no progress bar, and no steps per epoch "
                         "to place their epoch): numbered 1, 2, 3... in the order printed, not by training step")
        else:
            self.unplaced = sum(step is None for step in self.steps)

    def _ratio(self, rows: list[int]) -> int | None:
        """Steps per epoch from the dicts the bar placed, when they agree on one whole number."""
        ratios = set()
        for i in rows:
            step, epoch, half = self.steps[i], self.epochs[i], self.epoch_halves[i]
            if step and epoch > 0 and half * step / epoch < 0.5:  # the printed epoch fixes the ratio to the step
                ratios.add(round(step / epoch))
        return ratios.pop() if len(ratios) == 1 else None

    def frame(self, info: InputFile, line_of=None, time_of=None) -> pd.DataFrame:
        """The rows as a metrics frame (run ""), line numbers and times mapped when the text came from
        elsewhere (a Kaggle log's entries)."""
        count = len(self.lines)
        lines = [line_of(number) for number in self.lines] if line_of else self.lines
        times = [time_of(number) for number in self.lines] if time_of else [None] * count
        frame = metric_frame(info.path, lines, "", self.kinds, self.steps, times,
                             {name: sparse_column(np.frombuffer(rows, np.int64), np.frombuffer(values, np.float64), count)
                              for name, (rows, values) in self.metrics.items()})
        # How the steps were placed is said on the file when the rows are given to a run (identity).
        notes = []
        if self.note:
            notes.append(self.note)
            frame.attrs["steps"] = "order"  # numbered in order: no step of training, and no run's step span
        if self.unplaced:
            notes.append(f"{self.unplaced} printed metric dicts have no step (no progress bar after them, "
                         "and their epoch does not fix one): kept without a step")
        frame.attrs["notes"] = notes
        return frame


# --- Kaggle notebook logs ------------------------------------------------------------------------
# A Kaggle kernel's .log is a JSON array of the notebook's writes, one entry a line:
# [{"stream_name":"stdout","time":1.23,"data":"..."}\n,{...}\n]; `time` is seconds since the kernel started.
_KAGGLE_HEAD = re.compile(rb'^\s*\[\s*\{\s*"stream_name"\s*:\s*"(?:stdout|stderr)"')


def sniff_kaggle(head: bytes) -> bool:
    """A Kaggle notebook log, by its content: a JSON array whose first entry names its stream."""
    return bool(_KAGGLE_HEAD.match(head.removeprefix(codecs.BOM_UTF8)))


def _read_kaggle(text: str, rel: str, info: InputFile) -> TextRead:
    """A Kaggle notebook log read as the console it records: the entries' `data`, in order (stdout and
    stderr interleaved, as `2>&1` leaves them). Each console line is cited at the line of the entry
    where it starts. Times: the kernel start is a clock time a console line prints minus its entry's
    `time`; without one, the log's times are relative and its rows have none."""
    lines = text_lines(text)
    info.lines = len(lines)
    info.blank = sum(1 for line in lines if not line.strip())
    info.text_lines = info.lines - info.blank
    index = LineIndex(text)
    entries, damage = json_entries(text, text.find("["))
    if damage:
        after = entries[-1][0] + 1 if entries else 0
        broken = text.find("{", after)
        # Damage on the last line of the file, after the last complete entry: its writer was stopped.
        info.cut_off = "cut off" in damage or (broken >= 0 and "\n" not in text[broken:].rstrip())
        where = index.line(broken) if broken >= 0 else (index.line(after) if entries else 1)
        info.problem(where, f"the log's JSON array: {damage}" + ("; the file is cut off there" if info.cut_off
                                                                and "cut off" not in damage else ""))
    parts: list[str] = []
    starts: list[int] = []  # the file line each console line starts at
    seconds: list[float | None] = []  # its entry's time
    open_line = False
    for offset, entry in entries:
        line = index.line(offset)
        data = entry.get("data") if isinstance(entry, dict) else None
        at = entry.get("time") if isinstance(entry, dict) else None
        if not isinstance(data, str):
            # A problem at its line; the line still counts as text, as every line of a text log does.
            info.problem(line, f"an entry without text 'data' ({quoted(entry)}); not read")
            continue
        at = float(at) if isinstance(at, (int, float)) and not isinstance(at, bool) and math.isfinite(at) else None
        if open_line and (parts[-1].endswith("\r") or data.startswith("\r")):
            # A line left at a carriage return (a bar redrawn) ends no console line; this entry starts its
            # own, so that what it prints is cited at its entry. The text is read the same: a "\r" ends a
            # redraw as a "\n" does.
            parts.append("\n")
            open_line = False
        pieces = data.split("\n")
        for i, _piece in enumerate(pieces):
            if i == 0 and open_line:
                continue  # the entry goes on with the console line an earlier entry started
            if i == len(pieces) - 1 and _piece == "":
                break
            starts.append(line)
            seconds.append(at)
        open_line = not data.endswith("\n")
        parts.append(data)
    console = "".join(parts)
    messages, sessions, printed = _scan(console, rel)

    def line_of(number: int) -> int:
        return starts[min(number, len(starts)) - 1] if starts else 1

    start = _kernel_start(sessions, seconds)
    if start is None and len(printed):
        info.notes.append("no clock time is printed: the Kaggle log's times are relative to the kernel start, "
                          "and its metric rows have no time")

    def time_of(number: int) -> datetime | None:
        at = seconds[min(number, len(seconds)) - 1] if seconds else None
        if start is None or at is None:
            return None
        stamp = start + timedelta(seconds=at)
        return stamp if EARLIEST <= stamp < LATEST else None

    for message in messages:
        message.evidence = Evidence(rel, line_of(message.evidence.line or 1))
    for session in sessions:
        session.first_line, session.last_line = line_of(session.first_line), line_of(session.last_line)
        session.values.relined(line_of)
        session.mappings = [(line_of(n), m) for n, m in session.mappings]
        session.paths = [(line_of(n), path) for n, path in session.paths]
        session.versions = [(line_of(n), v) for n, v in session.versions]
    info.records = len(messages)
    return TextRead(info, messages, sessions, printed.frame(info, line_of, time_of))


def _kernel_start(sessions: list[Session], seconds: list[float | None]) -> datetime | None:
    """When the kernel started: the first clock time printed, less its entry's time."""
    for session in sessions:
        if session.first_clock:
            number, clock = session.first_clock
            at = seconds[number - 1] if 0 < number <= len(seconds) else None
            if at is not None and 0 <= at <= 366 * 24 * 3600:
                return clock - timedelta(seconds=at)
    return None


def recognise(rel: str, head: bytes) -> str | None:
    return "text" if sniff(head, PurePosixPath(rel).name) else None


def read_files(scan: Scan) -> None:
    """In a run's folder (or the folder of one native run) a log belongs to that run; any other log is
    linked to a run, or left apart, by identity."""
    rels = scan.files("text")
    read_ahead = scan.read_ahead(rels, lambda rel: read_console(scan.found[rel][0], rel),
                                 Kept(FORMAT, resume=lambda rel, since: read_on(scan.found[rel][0], rel, since)))
    for rel in rels:
        with scan.contained(rel, FORMAT):
            read = read_ahead.pop(rel, None) or read_console(scan.found[rel][0], rel)
            info, messages, sessions = read.info, read.messages, read.sessions
            folder = parents(rel)[0]
            owner = scan.owner(rel)
            natives = scan.native_runs.get(folder, set())
            if owner is None and len(natives) == 1:
                owner = next(iter(natives))
            for message in messages:
                message.run = owner
            scan.texts.append(TextLog(rel, folder, sessions, messages, owner, scan.file_name_of(rel), metrics=read.metrics))
            scan.add(Reading([info], [], list(messages)))
        scan.done(rel)


READER = Reader(FORMAT, recognise, read_files)
