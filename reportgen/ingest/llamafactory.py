"""LLaMA-Factory output folders: trainer_log.jsonl, running_log.txt and training_args.yaml.

LLaMA-Factory trains with the Hugging Face Trainer, so its output folder also holds the Trainer's
own files (trainer_state.json, checkpoint-N/, train_results.json), which the hf-trainer reader
reads; the files read here add to that same run:

- `trainer_log.jsonl`: one JSON object per Trainer log call, written by LLaMA-Factory's LogCallback
  (src/llamafactory/train/callbacks.py, `on_log`): `current_steps` (global_step), `total_steps`
  (max_steps), `loss`, `eval_loss`, `predict_loss`, `reward`, `accuracy`, `lr`, `epoch`,
  `percentage`, `elapsed_time` and `remaining_time` ("H:MM:SS", whole seconds since on_train_begin),
  and `throughput`, `total_tokens`, `vram_allocated`, `vram_reserved` when measured; fields that are
  None are left out;
- `running_log.txt`: its logger's lines, `[LEVEL|YYYY-MM-DD HH:MM:SS] file.py:N >> message`
  (src/llamafactory/extras/logging.py, LoggerHandler), the training machine's clock without a zone;
- `training_args.yaml`: the arguments LLaMA Board saved for the run.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath

from reportgen.ingest.common import (
    EARLIEST,
    LATEST,
    MAX_COUNT,
    TEXT_BUDGET,
    LineRead,
    MetricRows,
    Reading,
    decode_text,
    duration_problem,
    is_number,
    quoted,
    read_lines,
    read_log,
    read_mapping,
    row_kind,
    text_lines,
)
from reportgen.ingest.scan import Kept, Reader, Scan, Source, parents
from reportgen.model import Evaluation, Evidence, InputFile, RunFacts

FORMAT = "llamafactory"
TRAINER_LOG = "trainer_log.jsonl"
RUNNING_LOG = "running_log.txt"
TRAINING_ARGS = "training_args.yaml"

# trainer_log.jsonl fields and the metric each becomes (lr is the Trainer's learning_rate).
METRICS = {"loss": "loss", "eval_loss": "eval_loss", "predict_loss": "predict_loss", "reward": "reward",
           "accuracy": "accuracy", "lr": "learning_rate", "epoch": "epoch", "throughput": "throughput",
           "total_tokens": "total_tokens", "vram_allocated": "vram_allocated", "vram_reserved": "vram_reserved"}
# The fields only a training step's log has: LogCallback's on_prediction_step (predict or evaluate alone)
# writes current_steps over the evaluation batches, with none of them.
TRAINING_FIELDS = ("loss", "eval_loss", "lr", "epoch")

_RUNNING = re.compile(r"^\[(DEBUG|INFO|WARNING|ERROR|CRITICAL)\|(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})\] "
                      r"[^\s:]+:\d+ >> ")
_TRAINER_LOG_LINE = re.compile(rb'^\s*\{.*"current_steps"\s*:\s*\d+.*"total_steps"\s*:\s*\d+')
# timedelta's str: "0:00:05", "1 day, 2:03:04", "3 days, 0:00:00"
_ELAPSED = re.compile(r"^(?:(\d{1,6}) days?, )?(\d{1,2}):(\d{2}):(\d{2})$")
_TRAINING_STARTS = "***** Running training *****"
_TRAINING_DONE = "Training completed."
_PREDICTION_STARTS = "***** Running Prediction *****"
_ADAPTERS = "Loaded adapter(s): "  # src/llamafactory/model/adapter.py, the adapters it loaded, comma-separated
# What LLaMA-Factory's workflows save with trainer.save_metrics("predict", ...): predict_results.json, and
# all_results.json, which gathers every save_metrics call's figures.
PREDICT_RESULTS = ("predict_results.json", "all_results.json")


def recognise(rel: str, head: bytes) -> str | None:
    """The kind of a LLaMA-Factory file by its content: "llamafactory-log" (JSON lines with current_steps
    and total_steps, whatever the name), "llamafactory-running" (its logger's line format), or
    "llamafactory-args" (a training_args.yaml holding a YAML mapping; read_folder takes it only beside
    one of the other two)."""
    first = _first_line(head)
    if first is None:
        return None
    if _TRAINER_LOG_LINE.match(first) and _is_trainer_log_line(first):
        return "llamafactory-log"
    text = first.decode("utf-8", errors="replace")
    if _RUNNING.match(text):
        return "llamafactory-running"
    if PurePosixPath(rel).name == TRAINING_ARGS and re.match(r"^[A-Za-z_][\w.\-]*:(\s|$)", text):
        return "llamafactory-args"
    return None


def _first_line(head: bytes) -> bytes | None:
    """The first complete line of the sniffed bytes that is not blank (the only line, if none ends)."""
    for line in head.split(b"\n")[:-1] or [head]:
        if line.strip():
            return line.strip()
    return None


def _is_trainer_log_line(line: bytes) -> bool:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and _count(value.get("current_steps")) is not None and \
        _count(value.get("total_steps")) is not None


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT else None


@dataclass
class LlamaFactoryRun:
    """What one LLaMA-Factory folder's files say: their InputFiles and metric rows (`reading`, whose
    events are the clock times of running_log.txt, each at its line), the run's facts, and the files read (`claimed`)."""

    reading: Reading
    facts: RunFacts
    claimed: list[str] = field(default_factory=list)


@dataclass
class _Clock:
    """running_log.txt's clock times: the first and last line's, and when training started."""

    first: tuple[int, datetime] | None = None
    last: tuple[int, datetime] | None = None
    training: tuple[int, datetime] | None = None
    completed: int | None = None  # the line of the Trainer's "Training completed."
    prediction: int | None = None  # the line of the Trainer's "***** Running Prediction *****"
    adapters: tuple[int, str] | None = None  # (line, path) of the first adapter LLaMA-Factory loaded


def read_folder(logs: Path, folder: str, members: list[str], key: str) -> LlamaFactoryRun:
    """The LLaMA-Factory files among `members` (paths under LOGS) of `folder`, as the run `key` (read_folder_on)."""
    return read_folder_on(logs, folder, members, key, None, keep=False)[0]


def read_folder_on(logs: Path, folder: str, members: list[str], key: str, since: dict[str, TrainerLog] | None,
                   keep: bool = True) -> tuple[LlamaFactoryRun, dict[str, TrainerLog]]:
    """The LLaMA-Factory files among `members` (paths under LOGS) of `folder`, as the run `key`; trainer_log.jsonl
    read on from where the last read of the folder stopped (`since`, kept by the parse cache) when LogCallback has
    only appended to it, with what to keep of it now. The folder's other files are read whole.

    Steps are `current_steps`; a row's time is the training start (running_log.txt's "***** Running
    training *****" line, else its first line) plus its `elapsed_time`, when running_log.txt gives a
    start. Status: "completed" when a training line's current_steps reaches its total_steps (or the
    Trainer logged "Training completed."), else unknown: a log that stops short says nothing of why.
    """
    prefix = f"{folder}/" if folder else ""
    names = {rel[len(prefix):]: rel for rel in members if rel.startswith(prefix) and "/" not in rel[len(prefix):]}
    reading = Reading()
    claimed: list[str] = []
    trainer_log, running, args_file = names.get(TRAINER_LOG), names.get(RUNNING_LOG), names.get(TRAINING_ARGS)
    facts = RunFacts(run=key, format=FORMAT, evidence=Evidence(trainer_log or running or args_file or folder or "."))
    clock = _Clock()
    progress: dict = {}
    kept: dict[str, TrainerLog] = {}
    if running is not None:
        info, clock = read_running_log(logs / running, running)
        reading.inputs.append(info)
        claimed.append(running)
    if trainer_log is not None:
        start = (clock.training or clock.first or (None, None))[1]
        (info, rows, progress), read = read_trainer_log_on(logs / trainer_log, trainer_log, key, start,
                                                           (since or {}).get(trainer_log), keep)
        kept = {trainer_log: read} if read is not None else {}
        reading.inputs.append(info)
        reading.frames.append(rows.frame())
        claimed.append(trainer_log)
        _progress_facts(facts, trainer_log, progress)
    if args_file is not None and (trainer_log or running):
        info = InputFile(args_file, FORMAT)
        args = read_mapping(logs / args_file, info, "a training_args.yaml holds one YAML mapping")
        reading.inputs.append(info)
        claimed.append(args_file)
        if args:
            facts.config = {"training_args": args}
    _clock_facts(facts, running, clock)
    if clock.prediction is not None and facts.first_step is None and running is not None:
        facts.reason = (f"a prediction run ({running} line {clock.prediction}: \"{_PREDICTION_STARTS}\"): it trains no "
                        "step; its trainer_log.jsonl counts prediction batches")
        line, batches, total = progress.get("any", (None, None, None)) if trainer_log is not None else (None, None, None)
        if total and batches is not None and batches >= total:
            facts.status = "completed"
            facts.reason += f"; {trainer_log} line {line}: the prediction reached its last batch ({batches} of {total})"
            facts.evidence = Evidence(trainer_log, line)  # type: ignore[arg-type]
        if facts.status == "completed" and clock.last is not None:
            facts.ended_at = clock.last[1]
        _predict_results(logs, names, key, clock, reading, claimed)
        if clock.adapters is not None:
            line, path = clock.adapters
            reading.events.append(RunFacts(run=key, format=FORMAT, evidence=Evidence(running, line), evaluated=path))
    if running is not None and clock.first is not None:  # the clock times, cited at their own lines
        reading.events.append(RunFacts(run=key, format=FORMAT, evidence=Evidence(running, clock.first[0]),
                                       started_at=facts.started_at))
        if facts.ended_at is not None and clock.last is not None:
            reading.events.append(RunFacts(run=key, format=FORMAT, evidence=Evidence(running, clock.last[0]),
                                           ended_at=facts.ended_at))
    return LlamaFactoryRun(reading, facts, claimed), kept


def _predict_results(logs: Path, names: dict[str, str], key: str, clock: _Clock, reading: Reading,
                     claimed: list[str]) -> None:
    """A prediction run's figures (predict_bleu-4, predict_rouge-l...): one evaluation, at no step (it trained
    none), timed at running_log.txt's last line (LLaMA-Factory saves them as the run ends)."""
    rel = next((names[n] for n in PREDICT_RESULTS if n in names), None)
    if rel is None:
        return
    info = InputFile(rel, FORMAT)
    results = read_mapping(logs / rel, info, f"{PurePosixPath(rel).name} holds one JSON object") or {}
    reading.inputs.append(info)
    claimed.append(rel)
    metrics = {str(k): _number(v) for k, v in results.items() if str(k).startswith("predict_") and is_number(v)
               and not str(k).endswith(("_runtime", "_per_second", "_preparation_time"))}
    if not metrics:
        info.notes.append("no predict_ figure of the prediction's quality in it")
        return
    at = clock.last[1] if clock.last else None
    rows = MetricRows(rel)
    rows.add(key, "eval", None, None, at, metrics)
    reading.frames.append(rows.frame())
    reading.events.append(Evaluation(key, None, at, Evidence(rel), metrics))


def _progress_facts(facts: RunFacts, rel: str, progress: dict) -> None:
    """max_steps, the step range and the status, from trainer_log.jsonl's training lines."""
    last = progress.get("last")
    if last is None:
        facts.reason = f"{rel} has no training line (current_steps with loss, lr, epoch or eval_loss)"
        return
    line, steps, total = last
    facts.first_step, facts.last_step = progress["first_step"], progress["last_step"]
    facts.max_steps = total if total else None
    facts.evidence = Evidence(rel, line)
    if total and steps >= total:
        facts.status = "completed"
        facts.reason = f"{rel} line {line}: current_steps {steps} reached total_steps {total}"
    else:
        facts.reason = (f"{rel} ends at line {line} with current_steps {steps} of total_steps {total}; "
                        "nothing in it says why it stopped")
    if progress.get("restart"):
        facts.reason += f"; {progress['restart']}"


def _clock_facts(facts: RunFacts, rel: str | None, clock: _Clock) -> None:
    """started_at from running_log.txt's first line; ended_at from its last, only for a run that completed."""
    if rel is None or clock.first is None:
        return
    facts.started_at = clock.first[1]
    if clock.completed is not None and facts.status is None:
        facts.status = "completed"
        facts.reason = f"{rel} line {clock.completed}: the Trainer logged \"Training completed.\""
        facts.evidence = Evidence(rel, clock.completed)
    if facts.status == "completed" and clock.last is not None:
        facts.ended_at = clock.last[1]
        facts.reason = (facts.reason or "") + f"; it ends at {rel} line {clock.last[0]} ({clock.last[1]:%Y-%m-%d %H:%M:%S})"


def read_running_log(path: Path, rel: str) -> tuple[InputFile, _Clock]:
    """running_log.txt: every line that is not blank is a record (a log line, or a line of a message
    that spans several); its clock times, read as UTC (the log writes the machine's local time without
    a zone, as reportgen reads every clock time without an offset)."""
    info = InputFile(rel, FORMAT)
    raw = read_log(path, info, TEXT_BUDGET)
    text = decode_text(raw)
    if text is None:
        text = raw.decode("utf-8", errors="replace")
        info.problem(None, "not valid UTF-8; undecodable bytes were replaced")
    lines = text_lines(text)
    info.lines = len(lines)
    clock = _Clock()
    started = False
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            info.blank += 1
            continue
        match = _RUNNING.match(line) if line.startswith("[") else None
        if match is None:
            if started:
                info.records += 1  # a message that goes on over several lines
                if line.startswith(_TRAINING_DONE):
                    clock.completed = number  # the Trainer logs "\n\nTraining completed. ..." after its prefix
                elif line.startswith(_PREDICTION_STARTS):
                    clock.prediction = number  # "\n***** Running Prediction *****" after its prefix
            else:
                info.skip(number, f"not a log line ([LEVEL|date time] file:N >> message): {quoted(line)}")
            continue
        started = True
        info.records += 1
        try:
            year, month, day, hour, minute, second = (int(g) for g in match.group(2, 3, 4, 5, 6, 7))
            at = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
        except ValueError:
            info.problem(number, f"{quoted(line[1:line.find(']')])}: not a clock time")
            continue
        if not EARLIEST <= at < LATEST:
            info.problem(number, f"{at:%Y-%m-%d %H:%M:%S}: outside {EARLIEST.year}-{LATEST.year - 1}, no campaign logged then")
            continue
        clock.first = clock.first or (number, at)
        clock.last = (number, at)
        message = line[match.end():]
        if message.startswith(_TRAINING_STARTS):
            clock.training = (number, at)
        elif message.startswith(_TRAINING_DONE):
            clock.completed = number
        elif message.startswith(_PREDICTION_STARTS):
            clock.prediction = number
        elif message.startswith(_ADAPTERS) and clock.adapters is None:
            first = message[len(_ADAPTERS):].split(",")[0].strip()
            clock.adapters = (number, first) if first else None
    return info, clock


def read_trainer_log(path: Path, rel: str, run: str, start: datetime | None) -> tuple[InputFile, MetricRows, dict]:
    """trainer_log.jsonl: one metric row per line that has a metric (kind by is_eval: eval_loss rows are
    eval rows); a line with progress only counts as a record. The dict says how far training got:
    "last" (line, current_steps, total_steps of the last training line), first/last step, "restart"."""
    return read_trainer_log_on(path, rel, run, start, keep=False)[0]


def read_trainer_log_on(path: Path, rel: str, run: str, start: datetime | None, since: TrainerLog | None = None,
                        keep: bool = True) -> tuple[tuple[InputFile, MetricRows, dict], TrainerLog | None]:
    """read_trainer_log, on from `since` when LogCallback has only appended lines since, else whole; with what to
    keep to read on from next time (common.read_lines). Either way the file reads as it does whole."""
    read, kept = read_lines(path, TrainerLog(rel, run), since, None, keep=keep)
    return read.result(start), kept


class TrainerLog(LineRead):
    """trainer_log.jsonl read line by line: its rows so far (untimed: a row's time is the training start, which
    running_log.txt gives, plus its elapsed_time, put on when the rows are given), counts, problems and progress."""

    def __init__(self, rel: str, run: str) -> None:
        super().__init__(InputFile(rel, FORMAT))
        self.run = run
        self.rows = MetricRows(rel)
        self.elapsed: list[float | None] = []  # each row's elapsed_time
        self.timed_from = 0  # the first row of the last process (the rows before it are an earlier process's: untimed)
        self.progress: dict = {}
        self.previous_elapsed: float | None = None

    def feed(self, text: bytes, first: int, unterminated: bool = False) -> None:
        info, progress = self.info, self.progress
        lines = text.split(b"\n")
        if lines[-1] == b"":
            lines.pop()
        for number, data in enumerate(lines, start=first):
            self.lines = number
            if not data.strip():
                info.blank += 1
                continue
            entry, why = _entry(data)
            if entry is None:  # a last line cut off mid-object: its writer was stopped
                info.skip(number, ("the last line is cut off: " if unterminated else "") + (why or "not a LogCallback record"))
                info.cut_off = info.cut_off or unterminated
                continue
            steps, total = entry["current_steps"], entry.get("total_steps")
            elapsed = _elapsed(entry.get("elapsed_time"))
            if elapsed is not None and self.previous_elapsed is not None and elapsed < self.previous_elapsed:
                # LogCallback restarts its clock in each process: an appended log holds another process from here.
                progress["restart"] = (f"line {number}'s elapsed_time goes back ({_hms(self.previous_elapsed)} to "
                                       f"{_hms(elapsed)}): another process appended from there; only the last process's rows are timed")
                self.timed_from = len(self.rows)
            self.previous_elapsed = elapsed if elapsed is not None else self.previous_elapsed
            values = {METRICS[k]: _number(v) for k, v in entry.items() if k in METRICS and is_number(v)}
            info.records += 1
            progress["any"] = (number, steps, _count(total))
            if any(k in entry for k in TRAINING_FIELDS):
                total = _count(total)
                progress["last"] = (number, steps, total)
                progress["first_step"] = min(progress.get("first_step", steps), steps)
                progress["last_step"] = max(progress.get("last_step", steps), steps)
            if any(name != "epoch" for name in values):
                self.rows.add(self.run, row_kind(list(values)), steps, number, None, values)
                self.elapsed.append(elapsed)

    def result(self, start: datetime | None) -> tuple[InputFile, MetricRows, dict]:
        """The rows timed from `start` (the last process's rows: its start plus their elapsed_time)."""
        self.info.lines = self.lines
        if start is not None:
            for row in range(self.timed_from, len(self.rows)):
                if (elapsed := self.elapsed[row]) is not None:
                    at = start + timedelta(seconds=elapsed)
                    self.rows.ts[row] = at if at < LATEST else None
        return self.info, self.rows, self.progress


def _entry(data: bytes) -> tuple[dict | None, str | None]:
    """One line's object, or why it is no LogCallback record."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    try:
        entry = json.loads(text)
    except RecursionError:
        return None, "nested too deep to read"
    except ValueError as exc:
        return None, f"not JSON ({getattr(exc, 'msg', exc)}): {quoted(text)}"
    if not isinstance(entry, dict):
        return None, f"not a JSON object: {quoted(text)}"
    if _count(entry.get("current_steps")) is None:
        return None, f"'current_steps' must be a whole number 0..{MAX_COUNT:.0e}, got {quoted(entry.get('current_steps'))}"
    return entry, None


def _number(value: float) -> float:
    """A logged number as a float: NaN for a non-finite one, or an integer past any float."""
    try:
        number = float(value)
    except OverflowError:
        return math.nan
    return number if math.isfinite(number) else math.nan


def _elapsed(value: object) -> float | None:
    """LogCallback's elapsed_time ("H:MM:SS", "1 day, H:MM:SS") in seconds; None when it is no such time."""
    if not isinstance(value, str) or not (match := _ELAPSED.match(value)):
        return None
    days, hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    total = float(days * 86400 + hours * 3600 + minutes * 60 + seconds)
    return total if duration_problem(total, "elapsed_time") is None else None


def _hms(seconds: float) -> str:
    return str(timedelta(seconds=int(seconds)))


# --- the reader's scan steps -----------------------------------------------------------------

def _folders(scan: Scan) -> list[str]:
    """The folders holding a trainer_log.jsonl or a running_log.txt."""
    return sorted({parents(rel)[0] for kind in ("llamafactory-log", "llamafactory-running") for rel in scan.files(kind)})


def claim_folders(scan: Scan) -> None:
    """A LLaMA-Factory output folder is a run folder; when the Trainer's own files made it one already
    (it is also a Trainer output folder), its LLaMA-Factory files add to that run."""
    for folder in _folders(scan):
        if folder not in scan.run_dirs:
            key = f"{FORMAT}:{folder or '.'}"
            evidence = scan.shown_by(folder, (TRAINER_LOG, RUNNING_LOG))
            scan.run_folder(folder, Source(key, FORMAT, scan.name_of(folder), evidence, folder=folder))


def read_files(scan: Scan) -> None:
    for folder in _folders(scan):
        key = scan.run_dirs[folder]
        prefix = f"{folder}/" if folder else ""
        with scan.contained(prefix + TRAINER_LOG if prefix + TRAINER_LOG in scan.found else prefix + RUNNING_LOG, FORMAT):
            members = [rel for rel in scan.members(folder) if rel not in scan.claimed]
            # Kept between builds while the folder's own files (those read_folder reads from) are unchanged.
            own = [rel for rel in members if "/" not in rel[len(prefix):]]
            run = scan.read_one(folder, lambda folder, members=members, key=key: read_folder(scan.logs, folder, members, key),
                                Kept(FORMAT, context=lambda _folder, key=key: key, members=lambda _folder, own=own: own,
                                     resume=lambda folder, since, members=members, key=key:
                                         read_folder_on(scan.logs, folder, members, key, since)))
            run.reading.events.append(run.facts)
            scan.add(run.reading)
            for rel in run.claimed:
                scan.done(rel)


READER = Reader(FORMAT, recognise, read_files, claim_folders)
