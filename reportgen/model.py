"""The campaign model: what the logs say, shared by every stage (ingest -> analysis -> render).

Per-step metrics stay columnar (one pandas frame for the whole campaign); the rare events
(run start/end, checkpoints, stops, decisions...) are small dataclasses, each with its evidence.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from functools import total_ordering
from typing import Literal, Protocol, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa

from reportgen.recall import frame_digests

MAX_PROBLEMS_PER_FILE = 200
MAX_PROBLEM_CHARS = 500  # a message quotes what it found; a value of megabytes is quoted by its start

# Columns every metrics frame has; every other column is one metric (float64, NaN kept).
METRIC_FRAME_COLUMNS = ("path", "line", "run", "kind", "step", "ts")


def same_metric(name: str, column: str) -> bool:
    """Whether a metric name (as a plan writes it) is this metrics-frame column, as any format
    logged it: `loss` is also TensorBoard's `train/loss`; `eval_loss` is also `eval/loss`."""
    if column in (name, f"train/{name}"):
        return True
    return name.startswith("eval_") and column == "eval/" + name.removeprefix("eval_")


def _path_parts(path: str) -> tuple[str, ...]:
    """PurePosixPath(path).parts, a Windows separator read as "/", without pathlib (a module of I/O
    that the data model and the analysis do not import): the root ("/", or "//" as POSIX keeps it),
    then the names, with empty and "." parts left out."""
    path = path.replace("\\", "/")
    root = ("//",) if path.startswith("//") and not path.startswith("///") else ("/",) if path.startswith("/") else ()
    return root + tuple(part for part in path.split("/") if part not in ("", "."))


def path_key(path: str) -> tuple[str, ...]:
    """What `same_path` compares, usable as a dict key: the last two path parts, or the one there is."""
    parts = _path_parts(path)
    return parts[-2:] if len(parts) >= 2 else parts


def same_path(a: str, b: str) -> bool:
    """Whether two spellings name one checkpoint: equal, or the same last two path parts
    (a path on the training machine against the copy under LOGS)."""
    return path_key(a) == path_key(b)


def metric_values(column: pd.Series, missing: float = float("nan")) -> tuple[np.ndarray, np.ndarray]:
    """A metrics-frame column as (logged mask, float values): NaN logged stays NaN, `missing` fills rows not logged."""
    if column.dtype == FLOAT_COLUMN:  # the readers' own column type, read straight from its array
        return ~column.array.isna(), column.to_numpy(dtype="float64", na_value=missing)
    logged = column.notna().to_numpy()
    return logged, column.astype(FLOAT_COLUMN).to_numpy(dtype="float64", na_value=missing)


FLOAT_COLUMN = pd.ArrowDtype(pa.float64())  # a metric column as the readers make it ("float64[pyarrow]")


class _OfRun(Protocol):
    @property
    def run(self) -> str | None: ...


T = TypeVar("T", bound=_OfRun)


def by_run(items: Iterable[T]) -> dict[str | None, list[T]]:
    """Records grouped by their `run` (None: records no run could be found for), in their order."""
    out: dict[str | None, list[T]] = {}
    for item in items:
        out.setdefault(item.run, []).append(item)
    return out


class Status(StrEnum):
    """How a run ended (docs/stops.md, "Run status"): decided from evidence only."""

    COMPLETED = "completed"
    STOPPED = "stopped"
    INTERRUPTED = "interrupted"
    UNKNOWN = "unknown"


class StoppedBy(StrEnum):
    """Who stopped a stopped run."""

    SCRIPT = "script"  # a stop event the training script wrote
    TRAINING_LOOP = "training loop"  # early stopping, or a training loop's own end short of its steps
    STOP_RULE = "stop rule"  # one of the plan's stop rules, found in the logs by reportgen


STOPPED_BY_LOOP = StoppedBy.TRAINING_LOOP


class EventKind(StrEnum):
    """A run's or a step's start or end as logged."""

    START = "start"
    END = "end"


class RunKind(StrEnum):
    """What a run did: trained, or only evaluated (a run that trained no step)."""

    TRAINING = "training"
    EVALUATION = "evaluation"


class MessageKind(StrEnum):
    """What a line of a text log (or a reader's own finding) says about its run."""

    TRACEBACK = "traceback"  # a Python traceback: the process died of an exception
    OOM = "oom"  # out of GPU or host memory
    KILLED = "killed"  # killed by a signal or by the system
    NON_FINITE = "non_finite"  # a NaN or infinite value logged (`target`: the metric)
    TOO_LONG = "too_long"  # inputs longer than the model's maximum, not cut
    TRUNCATION = "truncation"  # inputs cut to the model's maximum
    RESUMED = "resumed"  # training continued from a checkpoint (`target`: the path named)
    FINISHED = "finished"  # the trainer's own end-of-training line
    EARLY_STOP = "early_stop"  # early stopping ended training
    PROGRESS = "progress"  # a progress bar's step and elapsed time (`seconds`)


# Text-log findings that end a run before its end.
FATAL_MESSAGES = frozenset({MessageKind.TRACEBACK, MessageKind.OOM, MessageKind.KILLED})


class WarningCode(StrEnum):
    """What a warning of report.json is about (a closed list: tools may act on the code)."""

    DAMAGED_INPUT = "damaged_input"  # a file has lines or records that could not be read
    CONFIG_CHANGED = "config_changed"  # one run id or name used again with another configuration (R10)
    SAME_CONFIG_ACROSS_VARIANTS = "same_config_across_variants"  # the variants do not differ in what ran
    UNATTRIBUTED = "unattributed"  # a logged operation no run can be found for
    TIME_REVERSED = "time_reversed"  # a run ends before it starts
    NOT_IN_PLAN = "not_in_plan"  # a logged step, decision point, variant or stop rule the plan does not have
    AMBIGUOUS_VARIANT = "ambiguous_variant"  # a run matches the patterns of several variants
    PLAN_CHECK = "plan_check"  # what `reportgen check` says of the plan
    UNLINKED_SOURCE = "unlinked_source"  # a captured log no evidence ties to a run
    UNKNOWN_END = "unknown_end"  # no source says how a run ended
    MISSING_DELIVERABLE = "missing_deliverable"  # planned, but no manifest lists it
    LEFT_ON_MACHINE = "left_on_machine"  # checkpoints not copied off before the lot ended (R12)
    NO_RESUMABLE_CHECKPOINT = "no_resumable_checkpoint"  # every checkpoint of a run lacks required state (R11)
    NO_RUNS = "no_runs"  # LOGS holds no run at all
    PLAN_MISMATCH = "plan_mismatch"  # runs were found, but none belongs to a variant of the plan
    UNMATCHED_PATTERN = "unmatched_pattern"  # a variant's or schedule step's run pattern matches no run
    UNCLAIMED_RUN = "unclaimed_run"  # a training run that no variant of the plan claims
    FROZEN_LATE = "frozen_late"  # the plan was frozen after the rented window opened
    METRIC_NOT_LOGGED = "metric_not_logged"  # no run logged the plan's quality metric
    OUTSIDE_WINDOW = "outside_window"  # a training run started outside the rented window
    AHEAD_OF_CLOCK = "ahead_of_clock"  # the logs hold times after the wall clock's now (`watch`)


@total_ordering
@dataclass(frozen=True)
class Evidence:
    """Where a fact came from: a file relative to LOGS and, when it has lines, the line.

    Sorted by path, then line, a whole file (no line) before its lines."""

    path: str
    line: int | None = None

    def __lt__(self, other: Evidence) -> bool:
        return self.key() < other.key()

    def key(self) -> tuple[str, int]:
        return self.path, -1 if self.line is None else self.line

    @staticmethod
    def first(items: Iterable[Evidence], count: int) -> list[Evidence]:
        """The first `count` of these, once each, in order: without sorting them all (a measurement over
        every checkpoint of a campaign cites ten)."""
        return heapq.nsmallest(count, set(items), key=Evidence.key)

    def to_json(self) -> dict:
        return {"path": self.path, "line": self.line}


@dataclass(frozen=True)
class QuotedRecord:
    """A cited record of a binary file (TensorBoard events) as reportgen read it: its step and values
    (each metric as the file spells it), or why it was not read."""

    step: int | None
    values: tuple[tuple[str, float], ...]
    problem: str | None = None


@dataclass(frozen=True)
class Excerpt:
    """Lines of one input file around cited lines, for the site's evidence pages (`unit` "line");
    for a binary file, one cited record as reportgen read it (`unit` "record", its `records`)."""

    first_line: int
    lines: tuple[str, ...]  # as read; a line longer than reportgen quotes is kept to its start (see `cut`)
    cited: frozenset[int]
    unit: Literal["line", "record"] = "line"
    records: tuple[QuotedRecord, ...] = ()
    cut: frozenset[int] = frozenset()  # lines shown by their start only


@dataclass(frozen=True)
class Problem:
    """What could not be read or does not add up. A damaged line of a file is listed under its
    InputFile (`path` left out); a finding about the campaign names the file and line it cites."""

    line: int | None
    message: str
    path: str | None = None
    code: WarningCode | None = None  # a finding about the campaign: what kind of finding

    @classmethod
    def at(cls, where: Evidence | None, message: str, code: WarningCode) -> Problem:
        """A finding about the campaign, citing `where` (None: it cites no file)."""
        return cls(None if where is None else where.line, message, None if where is None else where.path, code)

    @property
    def evidence(self) -> Evidence | None:
        return None if self.path is None else Evidence(self.path, self.line)


@dataclass
class InputFile:
    """One file under LOGS: what it was recognised as and what could not be read from it.

    A line-based file accounts for each of its lines (docs/formats.md says what each format counts):
    records + skipped + blank + header == lines, and for a text log text_lines + blank == lines
    (its records are the messages found in those lines, not lines). A line is what ends in "\\n",
    and a last line without one.
    """

    path: str
    format: str | None
    records: int = 0
    skipped: int = 0
    lines: int | None = None  # lines read (all, or up to the read budget); None: not line-based, or not text
    blank: int = 0  # lines that carry nothing by the format's definition: empty, whitespace only
    header: int = 0  # a CSV's header row
    text_lines: int = 0  # a text log's lines that are not blank: each is read as text
    problems: list[Problem] = field(default_factory=list)
    problems_not_shown: int = 0
    cut_off: bool = False  # the file ends mid-record: its writer was stopped
    notes: list[str] = field(default_factory=list)  # how the file was read, when that is worth knowing
    # The last problem counted past the display cap, (line, message): a cut-off last record reported there is
    # still known for what it is (a record being written during the lot is no damage: ingest._being_written).
    last_not_shown: tuple[int | None, str] | None = None
    being_written: bool = False  # its last record was being written at a live build's now (ingest._being_written)

    def problem(self, line: int | None, message: str) -> None:
        """Record a damaged or unusable record; the count is kept even past the display cap."""
        if len(self.problems) < MAX_PROBLEMS_PER_FILE:
            if len(message) > MAX_PROBLEM_CHARS:
                message = f"{message[:MAX_PROBLEM_CHARS]} … ({len(message) - MAX_PROBLEM_CHARS:,} more characters)"
            self.problems.append(Problem(line, message))
        else:
            self.problems_not_shown += 1
            self.last_not_shown = (line, message)

    def skip(self, line: int | None, message: str) -> None:
        """A damaged or unusable record that is left out: its problem recorded and the record counted as skipped."""
        self.problem(line, message)
        self.skipped += 1


@dataclass
class RunEvent:
    """A run's start or end as logged."""

    run: str
    kind: EventKind
    at: datetime
    evidence: Evidence
    status: str | None = None
    step: int | None = None
    config: dict | None = None
    variant: str | None = None
    resumes: str | None = None


@dataclass
class CheckpointOp:
    """A checkpoint save, transfer or restore with its measured duration.

    `run` is None for a benchmark record that names no run and whose path matches no known
    checkpoint: its time still counts where no run is needed (the median save cost).
    """

    run: str | None
    op: str  # "save" | "transfer" | "restore"
    at: datetime
    evidence: Evidence
    path: str | None = None
    step: int | None = None
    seconds: float | None = None
    bytes: int | None = None
    state: list[str] | None = None
    destination: str | None = None


@dataclass
class Evaluation:
    """An evaluation pass: its values also sit in the metrics frame as a row of kind `eval`."""

    run: str
    step: int
    at: datetime | None  # None when the format keeps no times (a Trainer's trainer_state.json)
    evidence: Evidence
    metrics: dict[str, float]
    seconds: float | None = None


@dataclass
class ReloadTest:
    run: str | None
    at: datetime
    evidence: Evidence
    path: str | None
    ok: bool
    seconds: float | None = None
    new_process: bool | None = None
    message: str | None = None


@dataclass
class LoggedStop:
    """A stop written by the training script itself (R10: keep its identifier and reason), or the
    training loop's own stop (early stopping), which `by` tells apart."""

    run: str
    rule: str | None
    reason: str
    at: datetime | None  # None when the source keeps no times (a Trainer's trainer_state.json)
    evidence: Evidence
    step: int | None = None
    by: StoppedBy = StoppedBy.SCRIPT


# Who stopped a run: a plan rule (from the logs or logged by the script) or the training loop itself.


@dataclass
class StepMark:
    """The start or end of a schedule step (including human steps) as logged."""

    step_id: str
    kind: EventKind
    at: datetime
    evidence: Evidence
    note: str | None = None


@dataclass
class LoggedDecision:
    point: str
    decision: str
    at: datetime
    evidence: Evidence
    reason: str | None = None
    variant: str | None = None


@dataclass
class RunFacts:
    """What one source says about a whole run, for formats without start/end events.

    A Trainer's trainer_state.json, a Lightning version folder, an MLflow run or a TensorBoard
    folder each give one of these; ingest merges them with the native events into one Run.
    `status` is only set when the source can tell: "completed", "interrupted", or STOPPED_BY_LOOP
    (the training loop ended training before its end, without saying which callback told it to).
    """

    run: str
    format: str
    evidence: Evidence
    status: str | None = None
    reason: str | None = None
    # The status is told by an end not logged (no exit record, a last record cut short): while the run's files are
    # still being written (a live build), that tells nothing yet (ingest._at_work).
    unended: bool = False
    started_at: datetime | None = None
    ended_at: datetime | None = None
    last_seen_at: datetime | None = None  # the run was alive then (a source's last time), not an end
    first_step: int | None = None
    last_step: int | None = None
    config: dict | None = None
    resumes: str | None = None
    best: dict | None = None  # the Trainer's best model: metric, step, checkpoint (under LOGS), checkpoint_as_written
    seconds: float | None = None  # training time the source states (the Trainer's train_runtime), for sources without times
    max_steps: int | None = None  # how many steps a full run takes, as this source states it
    history: tuple[bytes, ...] | None = None  # digests of a Trainer's log_history entries, for continuations
    host: str | None = None  # the machine the run ran on, as the source names it (W&B metadata)
    gpu: str | None = None  # the GPU model, as the source names it ("NVIDIA A100-SXM4-40GB")
    gpu_count: int | None = None  # how many GPUs the machine showed the run (W&B's metadata: all it saw, used or not)
    devices: int | None = None  # how many devices its training loop ran on (the Trainer's data-parallel count)
    exit_code: int | None = None  # the process's exit code, when the source records it
    evaluated: str | None = None  # the folder of the model it evaluated, as the source names it (a loaded adapter)
    # What told that this source's run continues `resumes` (a source key until runs are named), by which rule.
    resume_rule: str | None = None
    resume_reason: str | None = None
    resumed_at_step: int | None = None


@dataclass
class Checkpoint:
    """A checkpoint found on disk, with the parts of the training state it holds (R11, R12).

    `resume_state` maps model, optimizer, scheduler, scaler, rng, data_position and progress to
    True (saved), False (missing) or None (this format cannot tell); `resume_basis` says, for
    each part, what decided it (the file or key present or absent).
    """

    run: str
    path: str
    format: str
    evidence: Evidence
    step: int | None
    resume_state: dict[str, bool | None]
    parts: list[str] = field(default_factory=list)
    resume_basis: dict[str, str] = field(default_factory=dict)
    final: bool = False  # the model saved at the end of training, not a checkpoint taken during it
    history: tuple[bytes, ...] | None = None  # digests of the log_history its trainer_state.json holds


@dataclass
class LogMessage:
    """Something a text log said: a traceback, an out-of-memory error, a non-finite loss..."""

    run: str | None
    kind: MessageKind
    message: str
    evidence: Evidence
    step: int | None = None
    session: int = 0  # which process, when one text log holds several (each start of training)
    target: str | None = None  # "resumed": the checkpoint path named; "non_finite": the metric
    seconds: float | None = None  # "progress": the time the progress bar says has elapsed


@dataclass
class ManifestEntry:
    """One deliverable as a deliverables manifest lists it (what was produced, R15)."""

    id: str
    kind: str
    paths: list[str]
    evidence: Evidence
    variant: str | None = None
    corpus: str | None = None
    run: str | None = None
    sha256: str | None = None
    expected_ids: str | None = None
    id_field: str = "id"
    description: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class FileReport:
    """One path of a deliverable: where it resolves, its size and hash, and what is wrong with it."""

    path: str
    exists: bool = False
    bytes: int | None = None
    sha256: str | None = None
    reloadable: str | None = None  # what the format-level check read, when it passed
    reasons: list[str] = field(default_factory=list)


@dataclass
class DeliverableCheck:
    """What reading a deliverable's files found (reportgen.verify reads them; the analysis judges)."""

    entry: ManifestEntry
    files: list[FileReport]
    reasons: list[str] = field(default_factory=list)  # every failed check, readable
    ids: dict | None = None  # predictions: expected, found, missing, extra, duplicates

    @property
    def file_ok(self) -> bool:
        return not self.reasons and all(not f.reasons for f in self.files)


@dataclass(frozen=True)
class Decision:
    """One identity decision: sources merged into a run, a continuation, an evaluation's training
    run, a text log linked or left apart; with the rule that made it and its evidence."""

    decision: str  # "merged" | "resumes" | "evaluates" | "kind" | "linked" | "separate"
    rule: str  # the rule's name, as docs/formats.md lists them
    text: str
    evidence: tuple[Evidence, ...] = ()
    other: str | None = None  # the other run the decision relates this one to

    def to_json(self) -> dict:
        return {"decision": self.decision, "rule": self.rule, "text": self.text, "other": self.other,
                "evidence": [e.to_json() for e in sorted(set(self.evidence))]}


@dataclass
class UnlinkedSource:
    """A source that is not a run: a captured log no evidence ties to a run (listed with its messages),
    or an MLflow sweep's parent run; never a run of its own."""

    path: str
    reason: str
    lines: tuple[int, int] | None = None  # the part of the file (one process of several), first and last line


@dataclass
class Run:
    """One training or evaluation run, merged from every source that describes it."""

    id: str
    sources: list[str] = field(default_factory=list)
    kind: RunKind = RunKind.TRAINING
    evaluates: str | None = None  # the training run an evaluation run evaluates
    identity: list[Decision] = field(default_factory=list)
    variant: str | None = None
    config: dict | None = None
    config_id: str | None = None
    resumes: str | None = None
    resumed_at_step: int | None = None  # the step of the checkpoint it continues from, when evidence names one
    started_at: datetime | None = None
    ended_at: datetime | None = None
    end_status: str | None = None
    last_seen_at: datetime | None = None  # the last thing logged, for runs with no end marker
    first_step: int | None = None
    last_step: int | None = None
    start_evidence: Evidence | None = None
    end_evidence: Evidence | None = None
    formats: list[str] = field(default_factory=list)
    facts: list[RunFacts] = field(default_factory=list)

    def latest_at(self) -> datetime | None:
        """The latest time the run logged: its end, its last record or its start."""
        return max((t for t in (self.ended_at, self.last_seen_at, self.started_at) if t is not None), default=None)


@dataclass
class Campaign:
    """Everything read from LOGS, before any comparison with the plan."""

    root: str
    inputs: list[InputFile] = field(default_factory=list)
    runs: dict[str, Run] = field(default_factory=dict)
    metrics: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(METRIC_FRAME_COLUMNS)))
    run_events: list[RunEvent] = field(default_factory=list)
    evaluations: list[Evaluation] = field(default_factory=list)
    checkpoint_ops: list[CheckpointOp] = field(default_factory=list)
    reload_tests: list[ReloadTest] = field(default_factory=list)
    stops: list[LoggedStop] = field(default_factory=list)
    step_marks: list[StepMark] = field(default_factory=list)
    decisions: list[LoggedDecision] = field(default_factory=list)
    run_facts: list[RunFacts] = field(default_factory=list)
    checkpoints: list[Checkpoint] = field(default_factory=list)
    messages: list[LogMessage] = field(default_factory=list)
    manifest: list[ManifestEntry] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)  # about the campaign; a file's own are in inputs
    unlinked: list[UnlinkedSource] = field(default_factory=list)
    # Per file, the metrics read under another name than the file spells them (loss -> train/loss).
    spellings: dict[str, dict[str, str]] = field(default_factory=dict)
    # Per file, in a build of `watch`: the modification times the watcher saw it take, oldest first (WriteTimes).
    writes: dict[str, tuple[datetime, ...]] = field(default_factory=dict)

    def training_runs(self) -> list[Run]:
        return [run for run in self.runs.values() if run.kind == RunKind.TRAINING]

    def evaluated_by(self) -> dict[str, list[str]]:
        """For each training run, the evaluation runs attached to it."""
        out: dict[str, list[str]] = {}
        for run in self.runs.values():
            if run.evaluates is not None:
                out.setdefault(run.evaluates, []).append(run.id)
        return out

    def metric_names(self) -> list[str]:
        return [c for c in self.metrics.columns if c not in METRIC_FRAME_COLUMNS]

    def of_run(self, name: str) -> dict[str | None, list]:
        """The items of one of the campaign's lists (`messages`, `stops`, `run_events`...) grouped by their
        run, each group in the list's order. Grouped once, and again when the list was replaced or grew:
        a question about one run does not scan every run's items."""
        items = getattr(self, name)
        held = self.__dict__.setdefault("_of_run", {}).get(name)
        if held is None or held[0] is not items or held[1] != len(items):
            groups: dict[str | None, list] = {}
            for item in items:
                groups.setdefault(item.run, []).append(item)
            held = self.__dict__["_of_run"][name] = (items, len(items), groups)
        return held[2]

    def timed_by_run(self) -> dict[str | None, list[tuple[datetime, float]]]:
        """(end time, seconds) of each run's timed evaluations, checkpoint operations and reload tests,
        in the order they were read; gathered once, and again only when more were added."""
        size = (len(self.evaluations), len(self.checkpoint_ops), len(self.reload_tests))
        cached = self.__dict__.get("_timed_by_run")
        if cached is None or cached[0] != size:
            out: dict[str | None, list[tuple[datetime, float]]] = {}
            for item in (*self.evaluations, *self.checkpoint_ops, *self.reload_tests):
                if item.seconds and item.at is not None:
                    out.setdefault(item.run, []).append((item.at, float(item.seconds)))
            cached = self.__dict__["_timed_by_run"] = (size, out)
        return cached[1]

    def frames_by_run(self) -> dict[str, pd.DataFrame]:
        """Each run's rows of the metrics frame, in a dict of the caller's own: grouped once for the
        analysis and the charts, and again only when the campaign holds another frame (or this one
        with other rows or columns). The frames are shared: read them, never change them in place."""
        if not len(self.metrics):
            return {}
        key = (len(self.metrics), tuple(self.metrics.columns))
        cached = self.__dict__.get("_frames_by_run")
        if cached is None or cached[0] is not self.metrics or cached[1] != key:
            groups = {str(run): group for run, group in self.metrics.groupby("run", sort=True)}
            cached = self.__dict__["_frames_by_run"] = (self.metrics, key, groups)
        return dict(cached[2])

    def run_digests(self) -> dict[str, bytes]:
        """A digest of each run's rows of the metrics frame (recall.frame_digests), worked out once per frame,
        like frames_by_run."""
        if not len(self.metrics):
            return {}
        key = (len(self.metrics), tuple(self.metrics.columns))
        cached = self.__dict__.get("_run_digests")
        if cached is None or cached[0] is not self.metrics or cached[1] != key:
            cached = self.__dict__["_run_digests"] = (self.metrics, key, frame_digests(self.metrics, "run"))
        return cached[2]

    def last_timed_row(self, run_id: str) -> Evidence | None:
        """Where a run's latest timed row of the metrics frame is (None: it has none)."""
        frame = self.frames_by_run().get(run_id)
        timed = frame["ts"].dropna() if frame is not None else None
        if timed is None or not len(timed):
            return None
        last = frame.loc[timed.idxmax()]
        return Evidence(str(last["path"]), None if pd.isna(last["line"]) else int(last["line"]))

    def metrics_by_run(self) -> dict[str, list[str]]:
        """The metrics each run logged at least once, in a dict of the caller's own (each list too): counted
        once per frame, like frames_by_run."""
        if not len(self.metrics):
            return {}
        key = (len(self.metrics), tuple(self.metrics.columns))
        cached = self.__dict__.get("_metrics_by_run")
        if cached is None or cached[0] is not self.metrics or cached[1] != key:
            names = self.metric_names()
            counts = self.metrics.groupby("run")[names].count()
            logged = counts.to_numpy() > 0
            found = {str(run): [m for m, yes in zip(names, row, strict=True) if yes] for run, row in zip(counts.index, logged)}
            cached = self.__dict__["_metrics_by_run"] = (self.metrics, key, found)
        return {run: list(names) for run, names in cached[2].items()}
