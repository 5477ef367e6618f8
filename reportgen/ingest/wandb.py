"""Weights & Biases run folders (`wandb/run-<date>_<time>-<id>/`, `wandb/offline-run-...`), read without wandb.

A run folder holds the transaction log `run-<id>.wandb` (everything the run logged), `files/`
(wandb-metadata.json, wandb-summary.json, config.yaml, requirements.txt, and output.log, which is
the text-log reader's) and `logs/` (debug.log, debug-internal.log: W&B's own logs).

The transaction log is a 7-byte header (`:W&B`, the magic 0xBEE1 little-endian, version 0) and then
LevelDB's log framing: 32 KiB blocks (counted from the start of the file, header included) of chunks,
each a 7-byte header (CRC-32 of the type byte and the data: the IEEE polynomial, not LevelDB's
CRC-32C, and not masked; length, uint16 LE; type FULL=1, FIRST=2, MIDDLE=3, LAST=4) and its data.
A block's tail shorter than a header is zeros. W&B's Python writer (before 0.18) and its Go writer
(wandb-core) write the same framing. Each record is a `Record` protocol buffer
(wandb/proto/wandb_internal.proto), decoded here by hand for the fields reportgen needs:

    Record:         2 history, 3 summary, 5 config, 7 stats, 11 telemetry, 17 run, 18 exit, 26 environment
    HistoryRecord:  1 item (repeated), 2 step { 1 num }
    HistoryItem, ConfigItem: 1 key, 2 nested_key (repeated), 16 value_json
    ConfigRecord:   1 update (repeated ConfigItem)
    RunRecord:      1 run_id, 3 project, 4 config, 8 display_name, 13 host, 14 starting_step,
                    17 start_time { 1 seconds, 2 nanos }, 18 resumed, 20 runtime, 24 resume
    RunExitRecord:  1 exit_code, 2 runtime
    EnvironmentRecord: 3 started_at, 5 args, 6 program, 12 host, 18 gpu_type, 19 gpu_count
    MetricRecord:   1 name, 2 glob_name, 4 step_metric   (define_metric)

A run that declared `define_metric("*", step_metric=S)` (the Hugging Face Trainer's WandbCallback
does, with S = train/global_step) plots every metric against S, not against W&B's `_step` (which
counts log calls): its rows are at S's value, and S is the axis, not a metric.
"""

from __future__ import annotations

import json
import math
import re
import struct
import zlib
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path, PurePosixPath

from reportgen.boundary import read_file
from reportgen.bounded import TooComplex, load_json
from reportgen.ingest import cache
from reportgen.ingest.cache import EDGE, ReadTo
from reportgen.ingest.common import (
    EARLIEST,
    LATEST,
    LOG_BUDGET,
    MAX_COUNT,
    TEXT_BUDGET,
    MetricRows,
    Reading,
    decode_text,
    from_epoch,
    is_eval,
    is_number,
    log_time,
    quoted,
    read_log,
    read_mapping,
    text_lines,
)
from reportgen.ingest.protowire import fields, signed, skip, varint
from reportgen.ingest.scan import Kept, Reader, Scan, Source, parents
from reportgen.model import Evaluation, Evidence, InputFile, RunFacts

FORMAT = "wandb"
LOG_KIND = "wandb-log"  # the transaction log, run-<id>.wandb
FILE_KIND = "wandb-file"  # a file of files/ or logs/ that W&B writes

# (offline-)run-YYYYMMDD_HHMMSS-<id>: the folder wandb.init makes for each run (the id: W&B's run id).
RUN_FOLDER = re.compile(r"^(?:offline-)?run-(\d{8})_(\d{6})-([A-Za-z0-9_-]+)$")

HEADER = b":W&B" + struct.pack("<HB", 0xBEE1, 0)
BLOCK = 32768
_CHUNK = struct.Struct("<IHB")
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
# Record's oneof record_type, by field number: named in the counts a transaction log's note gives.
RECORD_KINDS = {
    2: "history", 3: "summary", 4: "output", 5: "config", 6: "files", 7: "stats", 8: "artifact", 9: "tbrecord",
    10: "alert", 11: "telemetry", 12: "metric", 13: "output_raw", 17: "run", 18: "exit", 20: "final", 21: "header",
    22: "footer", 23: "preempting", 24: "noop_link_artifact", 25: "use_artifact", 26: "environment",
    27: "output_logger", 100: "request",
}
_HISTORY, _CONFIG, _METRIC, _RUN, _EXIT, _ENVIRONMENT = 2, 5, 12, 17, 18, 26

FILES = {"wandb-metadata.json", "wandb-summary.json", "config.yaml", "requirements.txt"}
LOGS = {"debug.log", "debug-internal.log"}
# debug.log (and the older debug-internal.log): "2026-12-04 21:00:17,649 INFO    MainThread:7931 [file.py:func():81] ..."
_DEBUG_LINE = re.compile(rb"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) +\S+ *:\d+ \[")
_EXIT_LINE = re.compile(r"\[wandb_run\.py:_atexit_cleanup\(\):\d+\] got exitcode: (-?\d+)\s*$")
_REQUIREMENT = re.compile(rb"^[A-Za-z0-9][A-Za-z0-9._-]*\s*(?:\[[^\]]*\]\s*)?(?:(?:==|>=|<=|~=|!=|===|<|>|@)\s*\S|;|$)")
MAX_LIST = 100  # a config list longer than this is data, not a hyperparameter
DIR_KEYS = ("output_dir", "logging_dir")
_DEBUG_DIR = re.compile(r"'(output_dir|logging_dir)': '([^'\\]{1,4096})'")
_CONFIG_ENTRY = re.compile(rb"(?m)^[A-Za-z_][^\s:#]*:[ \t]*\r?\n[ \t]+(?:value|desc):")
# wandb-core's debug-internal.log: JSON lines {"time":"2026-02-25T15:51:34.00134-05:00","level":...}
_CORE_TIME = re.compile(r'^\{"time":"([^"]{10,40})"')


def run_folder(rel: str) -> str | None:
    """The run folder (its path under LOGS) that holds the file at `rel`, if any: the innermost folder on
    the file's path named like one W&B makes (`.../run-20261204_210017-6agktorp/files/x` -> `.../run-...`)."""
    parts = PurePosixPath(rel).parts
    for i in range(len(parts) - 2, -1, -1):
        if RUN_FOLDER.match(parts[i]):
            return "/".join(parts[:i + 1])
    return None


def recognise(rel: str, head: bytes) -> str | None:
    """LOG_KIND for a transaction log (by its header, whatever its name), FILE_KIND for a file W&B writes
    in a run folder whose content fits it; None for anything else (output.log is the text-log reader's)."""
    if head.startswith(HEADER):
        return LOG_KIND
    folder = run_folder(rel)
    if folder is None:
        path = PurePosixPath(rel)
        # wandb/debug.log, wandb/debug-internal.log: links (or copies) W&B keeps to its latest run's logs.
        if path.name in LOGS and path.parent.name == "wandb" and _is_debug_log(head):
            return FILE_KIND
        return None
    inner = PurePosixPath(rel).relative_to(folder).parts
    if len(inner) != 2:
        return None
    where, name = inner
    if where == "files" and name in FILES and _fits(name, head):
        return FILE_KIND
    if where == "logs" and name in LOGS and _is_debug_log(head):
        return FILE_KIND
    return None


def _fits(name: str, head: bytes) -> bool:
    """Whether the start of a files/ file looks like what W&B writes under that name."""
    text = head.lstrip()
    if name == "wandb-metadata.json":
        return text.startswith(b"{") and b'"startedAt"' in head
    if name == "wandb-summary.json":
        return text.startswith(b"{") and (b'"_wandb"' in head or b'"_runtime"' in head or b'"_step"' in head
                                          or b'"_timestamp"' in head)
    if name == "config.yaml":  # `key:` then `value:` indented (two spaces before 0.19, four after)
        return text.startswith(b"wandb_version:") or _CONFIG_ENTRY.search(head) is not None
    first = [line.strip() for line in head.split(b"\n")[:20] if line.strip() and not line.startswith(b"#")]
    return bool(first) and all(_REQUIREMENT.match(line) for line in first[:-1] or first)


def _is_debug_log(head: bytes) -> bool:
    """W&B's text log format, or wandb-core's JSON lines ({"time": ..., "level": ..., "msg": ...})."""
    first = next((line for line in head.split(b"\n") if line.strip()), b"")
    if _DEBUG_LINE.match(first):
        return True
    return first.startswith(b'{"time":"') and b'"level":"' in first and b'"msg":"' in first


@dataclass
class WandbRun:
    """What one run folder says: its rows and events, the run's facts, W&B's identity of the run."""

    reading: Reading
    facts: RunFacts
    run_id: str | None  # W&B's run id: a resumed run has the same id in a new folder
    name: str | None  # the display name, else the id
    resumed: bool = False
    starting_step: int | None = None
    resume_reason: str | None = None  # what told that the run resumed another (None: nothing did)
    claimed: list[str] = field(default_factory=list)  # the paths under LOGS read as this run's
    ending: RunFacts | None = None  # how it ended, as debug.log tells it (cited at its line)
    dirs: dict[str, str] | None = None  # the folders its configuration names (a Trainer's output_dir)


@dataclass
class _Log:
    """What a transaction log holds, decoded."""

    rows: MetricRows
    evaluations: list[Evaluation] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    last_time: datetime | None = None
    run: dict = field(default_factory=dict)  # RunRecord fields read
    exit: dict | None = None  # RunExitRecord fields, when the run has one
    environment: dict = field(default_factory=dict)
    config: dict = field(default_factory=dict)
    kinds: Counter = field(default_factory=Counter)
    ended_mid_record: int | None = None  # the byte where the cut record starts


def own_files(folder: str, members: list[str]) -> list[str]:
    """The files of a run folder that are W&B's own by their names (the transaction log, files/ and logs/ that W&B
    writes), in path order: the only ones read_run reads (each checked by its content there)."""
    out = []
    for rel in sorted(members):
        inner = PurePosixPath(rel).relative_to(folder).parts if rel.startswith(folder + "/") else ()
        if ((len(inner) == 1 and rel.endswith(".wandb"))
                or (len(inner) == 2 and ((inner[0] == "files" and inner[1] in FILES) or (inner[0] == "logs" and inner[1] in LOGS)))):
            out.append(rel)
    return out


def read_run(logs: Path, folder: str, members: list[str], key: str) -> WandbRun:
    """Read a run folder: `members` are the paths under LOGS of the files in it (only W&B's own files are
    read, each checked by its content); `key` is the run id put on rows and events."""
    return read_run_on(logs, folder, members, key, None, keep=False)[0]


def read_run_on(logs: Path, folder: str, members: list[str], key: str, since: dict[str, Transactions] | None,
                keep: bool = True) -> tuple[WandbRun, dict[str, Transactions]]:
    """read_run, its transaction log decoded on from where the last read of the folder stopped (`since`, kept by
    the parse cache) when W&B has only appended to it; with what to keep of it now. The folder's other files are
    read whole."""
    kept: dict[str, Transactions] = {}
    reading = Reading()
    claimed: list[str] = []
    log: _Log | None = None
    log_info: InputFile | None = None
    files: dict[str, str] = {}
    for rel in own_files(folder, members):
        inner = PurePosixPath(rel).relative_to(folder).parts
        if len(inner) == 1 and log is None:
            head = _head(logs / rel)
            if head is not None and head.startswith(HEADER):
                (log_info, log), transactions = read_log_file_on(logs / rel, rel, key, (since or {}).get(rel), keep)
                if transactions is not None:
                    kept[rel] = transactions
                reading.inputs.append(log_info)
                claimed.append(rel)
        elif len(inner) == 2:
            head = _head(logs / rel)
            if head is not None and recognise(rel, head) == FILE_KIND:
                files[inner[1]] = rel
                claimed.append(rel)

    meta = summary = config_file = None
    exit_line: tuple[int, int] | None = None
    debug_ended_early: int | None = None
    dirs: dict[str, str] = {}
    last_seen: tuple[int, datetime] | None = None
    first_seen: tuple[int, datetime] | None = None
    for name, rel in sorted(files.items()):
        info = InputFile(path=rel, format=FORMAT)
        reading.inputs.append(info)
        try:
            if name == "wandb-metadata.json":
                meta = read_mapping(logs / rel, info, "a wandb-metadata.json holds one JSON object")
            elif name == "wandb-summary.json":
                summary = read_mapping(logs / rel, info, "a wandb-summary.json holds one JSON object")
            elif name == "config.yaml":
                config_file = _config_yaml(read_mapping(logs / rel, info, "a config.yaml holds one mapping"), info)
            else:
                lines = _text_file(logs / rel, info)
                if name == "debug.log" and lines is not None:
                    dirs = _debug_dirs(lines)
                    exit_line = _exit_code(lines, info)
                    if exit_line is None:
                        debug_ended_early = len(lines)
                elif name == "debug-internal.log" and lines is not None:
                    first_seen = _core_time(lines, range(1, min(len(lines), 200) + 1))
                    last_seen = _core_time(lines, range(len(lines), max(len(lines) - 200, 0), -1))
        except OSError as exc:
            info.problem(None, f"cannot be read: {exc.strerror or exc}")

    match = RUN_FOLDER.match(PurePosixPath(folder).name)
    run_id = (log.run.get("run_id") if log else None) or (match.group(3) if match else None)
    name = (log.run.get("display_name") if log else None) or run_id
    evidence = Evidence(log_info.path if log_info else files.get("wandb-metadata.json")
                        or files.get("wandb-summary.json") or (claimed[0] if claimed else folder))
    facts = RunFacts(run=key, format=FORMAT, evidence=evidence)
    ending: RunFacts | None = None  # how the run ended, when debug.log tells it
    meta = meta or {}
    meta_info = next((i for i in reading.inputs if i.path == files.get("wandb-metadata.json")), None)
    environment = log.environment if log else {}
    facts.host = _text(environment.get("host")) or _text((log.run if log else {}).get("host")) or _text(meta.get("host"))
    facts.gpu = _text(environment.get("gpu")) or _text(meta.get("gpu")) or _text(meta.get("gpu_type"))
    facts.gpu_count = _count(environment.get("gpu_count")) or _count(meta.get("gpu_count")) or _count(meta.get("gpuCount"))
    started = (log.run.get("start_time") if log else None) or environment.get("started_at")
    if started is None and meta.get("startedAt") is not None and meta_info is not None:
        try:
            started = log_time(meta["startedAt"], "startedAt")
        except ValueError as exc:
            meta_info.problem(None, f"{exc}; the run's start is not read from it")
    facts.started_at = started
    config = dict(log.config) if log and log.config else {}
    for k, v in (config_file or {}).items():
        config.setdefault(k, v)  # the transaction log wins
    facts.config = config or None

    summary = summary or {}
    summary_info = next((i for i in reading.inputs if i.path == files.get("wandb-summary.json")), None)
    if log is not None and log.steps:
        facts.first_step, facts.last_step = min(log.steps), max(log.steps)
    elif summary and summary_info is not None:
        _summary_row(summary, summary_info, key, reading, facts)

    if log is not None and log.exit is not None:
        code = log.exit.get("exit_code", 0)
        facts.exit_code = code
        facts.status = "completed" if code == 0 else "interrupted"
        facts.reason = f"the run's exit record says exit code {code}"
        if started is not None:
            end = started + timedelta(seconds=log.exit.get("runtime", 0))
            facts.ended_at = max(end, log.last_time) if log.last_time else end
    elif exit_line is not None:  # told by debug.log: facts of its own, cited at its line
        code, line = exit_line
        at = from_epoch(summary.get("_timestamp")) if is_number(summary.get("_timestamp")) else None
        ending = RunFacts(run=key, format=FORMAT, evidence=Evidence(files["debug.log"], line), exit_code=code,
                          status="completed" if code == 0 else "interrupted",
                          reason=f"debug.log line {line} says W&B's exit hook got exit code {code}",
                          ended_at=at or (log.last_time if log else None))
    elif log is not None and log.ended_mid_record is not None:
        facts.status, facts.unended = "interrupted", True
        facts.reason = (f"{PurePosixPath(log_info.path).name} ends mid-record (at byte {log.ended_mid_record:,}) "
                        "with no exit record: its writer was stopped")
    elif debug_ended_early is not None:
        ending = RunFacts(run=key, format=FORMAT, evidence=Evidence(files["debug.log"], debug_ended_early),
                          status="interrupted", unended=True,
                          reason=(f"debug.log ends (line {debug_ended_early}) without W&B's 'got exitcode' line"
                                  + (" and the transaction log has no exit record" if log else "")
                                  + ": the process died before W&B's exit hook ran"))
    if last_seen is not None:
        # W&B's service wrote its log to the end of the run, with the time zone: the run was alive then.
        line, at = last_seen
        seen = RunFacts(run=key, format=FORMAT, evidence=Evidence(files["debug-internal.log"], line), last_seen_at=at)
        reading.events.append(seen)
    if first_seen is not None and facts.started_at is None:
        # No run record (a process killed before W&B wrote it): its stream started with wandb.init.
        line, at = first_seen
        reading.events.append(RunFacts(run=key, format=FORMAT, evidence=Evidence(files["debug-internal.log"], line),
                                       started_at=at))

    resumed, starting_step, resume_reason = False, None, None
    if log is not None:
        starting_step = log.run.get("starting_step") or None
        if log.run.get("resumed"):
            resumed = True
            resume_reason = "the run record says W&B resumed the run" + (
                f" at step {starting_step}" if starting_step is not None else "")
        elif log.run.get("resume") and log.steps and min(log.steps) > 0:
            resumed = True
            starting_step = starting_step if starting_step is not None else min(log.steps)
            resume_reason = (f"the run asked to resume its id (wandb.init resume=...) and its history starts at step "
                             f"{min(log.steps)}, not 0")
    reading.events.append(facts)
    if ending is not None:
        reading.events.append(ending)
    if log is not None:
        reading.frames.append(log.rows.frame())
        reading.events.extend(log.evaluations)
    return WandbRun(reading=reading, facts=facts, run_id=run_id, name=name, resumed=resumed,
                    starting_step=starting_step, resume_reason=resume_reason, claimed=claimed, ending=ending,
                    dirs=_dirs(facts.config or {}) or dirs or None), kept


def _head(path: Path) -> bytes | None:
    try:
        return read_file(path, 8192).data
    except OSError:
        return None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _count(value: object) -> int | None:
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_COUNT else None


def _text_file(path: Path, info: InputFile) -> list[str] | None:
    """A text file's lines, each accounted as text or blank (a text log's accounting); None if not text."""
    text = decode_text(read_log(path, info, TEXT_BUDGET))
    if text is None:
        info.problem(None, "not UTF-8 text")
        return None
    lines = text_lines(text)
    info.lines = len(lines)
    info.blank = sum(1 for line in lines if not line.strip() or line.lstrip().startswith("#"))
    info.text_lines = info.lines - info.blank
    return lines


def _dirs(config: dict) -> dict[str, str]:
    """The folders a run's configuration names: a Trainer's output_dir and logging_dir (its WandbCallback
    puts the TrainingArguments in the config)."""
    return {k: v for k in DIR_KEYS if isinstance(v := config.get(k), str) and v}


def _debug_dirs(lines: list[str]) -> dict[str, str]:
    """The folders debug.log's `config_cb` lines name (the config a run set, as Python prints a dict): a run
    killed before its transaction log was written keeps its config here only."""
    out: dict[str, str] = {}
    for line in lines:
        if "_config_callback()" in line and "config_cb" in line:
            for key, value in _DEBUG_DIR.findall(line):
                out.setdefault(key, value)
    return out


def _core_time(lines: list[str], numbers: range) -> tuple[int, datetime] | None:
    """(line, time) of the first line, in the order `numbers` gives, of wandb-core's debug-internal.log with a
    time that names its zone (the older Python log's times name none: not read)."""
    for number in numbers:
        match = _CORE_TIME.match(lines[number - 1])
        if match is None:
            continue
        try:
            at = datetime.fromisoformat(match.group(1))
        except ValueError:
            continue
        if at.tzinfo is not None and EARLIEST <= at < LATEST:
            return number, at
    return None


def _exit_code(lines: list[str], info: InputFile) -> tuple[int, int] | None:
    """(exit code, line) of debug.log's `got exitcode: N`, which W&B's exit hook writes when the process ends."""
    for number in range(len(lines), 0, -1):
        line = lines[number - 1]
        if "got exitcode" in line:
            match = _EXIT_LINE.search(line.rstrip("\r"))
            if match and abs(int(match.group(1))) < 1 << 31:
                info.records += 1
                return int(match.group(1)), number
    return None


def _config_yaml(data: dict | None, info: InputFile) -> dict | None:
    """The plain values of W&B's config.yaml, where each key is {value: ..., desc: ...}; `_wandb` is W&B's own."""
    if not data:
        return None
    out: dict = {}
    for key, entry in data.items():
        if key in ("wandb_version", "_wandb"):
            continue
        if not isinstance(entry, dict) or "value" not in entry:
            info.problem(None, f"config.yaml: {quoted(key)} is not {{value: ..., desc: ...}}; left out")
            continue
        _plain(str(key), entry["value"], out)
    return out


def _plain(key: str, value: object, out: dict, depth: int = 0) -> None:
    """Config values as reportgen compares them: nested mappings flattened to `a.b`, lists of plain values kept."""
    if isinstance(value, dict):
        if depth < 8:
            for k, v in value.items():
                _plain(f"{key}.{k}", v, out, depth + 1)
    elif value is None or isinstance(value, (str, int, float, bool)):
        out[key] = value
    elif isinstance(value, list) and len(value) <= MAX_LIST and all(
            v is None or isinstance(v, (str, int, float, bool)) for v in value):
        out[key] = value


def _summary_row(summary: dict, info: InputFile, key: str, reading: Reading, facts: RunFacts) -> None:
    """A run without its transaction log: the summary's last values as one row at its `_step`, of kind
    "summary" (W&B's summary holds each key's last value, or its min or max when define_metric asks)."""
    step = summary.get("_step")
    if step is not None and not (isinstance(step, int) and not isinstance(step, bool) and 0 <= step <= MAX_COUNT):
        info.problem(None, f"_step: {quoted(step)} is not a step count; the summary's values are not read as a row")
        return
    stamp = summary.get("_timestamp")
    at = from_epoch(stamp) if is_number(stamp) else None
    if stamp is not None and at is None:
        info.problem(None, f"_timestamp: {quoted(stamp)} is no Unix time between 1970 and 2199; the row has no time")
    values: dict[str, float] = {}
    _metrics("", summary, values)
    facts.last_step = step
    if not values:
        return
    # One summary row: the last values at the last step, which tell nothing of where the run started
    # (summary rows count for no run's first step).
    rows = MetricRows(info.path)
    rows.add(key, "summary", step, None, at, values)
    reading.frames.append(rows.frame())


def _metrics(prefix: str, data: dict, out: dict[str, float], depth: int = 0) -> None:
    for k, v in data.items():
        name = f"{prefix}{k}"
        if not isinstance(k, str) or k.startswith("_"):
            continue  # W&B's own keys (_step, _runtime, _timestamp, _wandb)
        if is_number(v):
            out[name] = float(v)
        elif isinstance(v, dict) and "_type" not in v and depth < 8:  # a media or histogram summary has a _type
            _metrics(f"{name}/", v, out, depth + 1)


def read_log_file(path: Path, rel: str, run: str) -> tuple[InputFile, _Log]:
    """Read one transaction log: every chunk's CRC checked, records reassembled and decoded."""
    return read_log_file_on(path, rel, run, keep=False)[0]


class Transactions:
    """A transaction log decoded chunk by chunk: the records so far (the decoder's), and where the next chunk
    starts. Kept between builds (ingest/cache.py) when the log ends between records, so that a log W&B has only
    appended to since is decoded on from there (read_log_file_on)."""

    def __init__(self, rel: str, run: str) -> None:
        self.info = InputFile(path=rel, format=FORMAT)
        self.out = _Log(rows=MetricRows(rel))
        self.decoder = _Decoder(rel, run, self.info, self.out)
        self.pos = len(HEADER)  # the byte of the file where the next chunk starts
        self.record = 0  # records begun, in file order: a problem names its record and byte
        self.dropping = False  # after a damaged chunk: its record's MIDDLE and LAST chunks are dropped too
        self.cut: tuple[int, int, str] | None = None  # (record, byte, what) of a chunk the file's end cut off
        self.at: ReadTo | None = None

    def scan(self, buf: bytes, base: int, whole: bool) -> bool:
        """Decode the chunks of `buf` (the file's bytes from `base`, a block's start, to the end read) from
        self.pos; whether the scan ended between records (nothing begun and not ended: what is kept can be read
        on from). A chunk cut off by the end is said to be (`whole`: the end read is the file's end) on self."""
        info, state = self.info, self.decoder
        pos, record, dropping = self.pos - base, self.record, self.dropping  # pos: in buf, from here on
        end_of_buf = len(buf)
        parts: list[bytes] | None = None  # the chunks of a record begun by a FIRST chunk
        start = 0
        crc32 = zlib.crc32
        unpack = _CHUNK.unpack_from
        cut: tuple[int, int, str] | None = None  # (record, byte, what) of a chunk the end cut off
        while pos < end_of_buf:
            left = BLOCK - pos % BLOCK
            if left < 7:
                if buf[pos:pos + left].strip(b"\x00"):
                    info.problem(record + 1, f"byte {base + pos:,}: the tail of a block is not zeros")
                pos += left
                continue
            if end_of_buf - pos < 7:
                cut = (record + 1, base + pos, f"{end_of_buf - pos} bytes of a chunk header left")
                break
            checksum, length, kind = unpack(buf, pos)
            end = pos + 7 + length
            if checksum == 0 and length == 0 and kind == 0:  # a zeroed block tail, as a preallocated file has
                pos += left
                continue
            if length > left - 7:
                record += 0 if parts is not None else 1
                info.skip(record, f"record {record} at byte {base + pos:,}: a chunk of {length:,} bytes runs past its "
                          "block; the rest of the block is skipped")
                parts, dropping = None, True
                pos += left
                continue
            if end > end_of_buf:
                cut = (record + (0 if parts is not None else 1), base + (start if parts is not None else pos),
                       f"{end_of_buf - pos - 7:,} of its chunk's {length:,} bytes left")
                break
            if crc32(buf[pos + 6:end]) != checksum:
                record += 0 if parts is not None else 1  # a damaged chunk of a record begun is that record's
                info.skip(record, f"record {record} at byte {base + (start if parts is not None else pos):,}: the CRC of "
                          f"its chunk at byte {base + pos:,} does not match; record skipped")
                parts, dropping = None, True  # the damaged record's later chunks are dropped with it
                pos = end if _chunk_ok(buf, end) else pos + left  # a damaged length: on at the next block
                continue
            if kind in (MIDDLE, LAST) and dropping and parts is None:
                dropping = kind == MIDDLE
                pos = end
                continue
            dropping = False
            if kind == FULL:
                if parts is not None:
                    _orphan(info, record, base + start)
                record += 1
                parts = None
                state.record(buf, pos + 7, end, record)
            elif kind == FIRST:
                if parts is not None:
                    _orphan(info, record, base + start)
                record += 1
                parts, start = [buf[pos + 7:end]], pos
            elif kind in (MIDDLE, LAST):
                if parts is None:
                    record += 1
                    info.skip(record, f"record {record} at byte {base + pos:,}: a chunk that continues a record with "
                              "no start; skipped")
                elif kind == MIDDLE:
                    parts.append(buf[pos + 7:end])
                else:
                    parts.append(buf[pos + 7:end])
                    data = b"".join(parts)
                    parts = None
                    state.record(data, 0, len(data), record)
            else:
                record += 1
                info.skip(record, f"record {record} at byte {base + pos:,}: chunk type {kind} is not one W&B writes; skipped")
            pos = end
        else:
            if parts is not None:
                cut = (record, base + start, "the file ends before its last chunk")
        between = parts is None
        self.pos, self.record, self.dropping = base + pos, record, dropping
        self.cut = cut if whole else None
        return between

    def result(self) -> tuple[InputFile, _Log]:
        """The log as read: a chunk the end cut off said so, the decoder's last decisions made."""
        if self.cut is not None:
            _cut(self.info, self.out, *self.cut)
        self.decoder.finish()
        out = self.out
        if out.kinds:
            self.info.notes.append("records: " + ", ".join(f"{n} {k}" for k, n in sorted(out.kinds.items(), key=lambda x: -x[1])))
        return self.info, out


def read_log_file_on(path: Path, rel: str, run: str, since: Transactions | None = None, keep: bool = True
                     ) -> tuple[tuple[InputFile, _Log], Transactions | None]:
    """A transaction log decoded on from `since` (where an earlier read stopped, between records) when W&B has only
    appended to it since, else whole; with what to keep to decode on from next time (None: not kept, when the
    read ended inside a record, or the budget cut the file). Either way the log reads as it does whole."""
    found = None if since is None else cache.grown(path, since.at, LOG_BUDGET)
    if found is not None:
        head, before, more = found
        base = since.pos - since.pos % BLOCK
        held = since.at.end - base  # the bytes read before from the block's start: within the EDGE before the end
        read, buf, whole = since, before[len(before) - held:] + more, True
        first, last = head + more[:EDGE], before + more
    else:
        read = Transactions(rel, run)
        data = read_file(path, LOG_BUDGET)
        if not data.whole:
            read.info.problem(None, data.budget_note("records"))
        if not data.data.startswith(HEADER):
            read.info.problem(None, "no W&B transaction log header (':W&B', magic 0xBEE1, version 0); not read")
            return (read.info, read.out), None
        buf, base, whole = data.data, 0, data.whole
        first = last = buf
        keep = keep and data.whole
    between = read.scan(buf, base, whole)
    kept = None
    if keep and between:
        read.at = ReadTo.of(path, base + len(buf), first, last[max(0, len(last) - EDGE):])
        kept = read
        read = cache.copied(read)
    return read.result(), kept


def _chunk_ok(buf: bytes, pos: int) -> bool:
    """Whether a valid chunk (or the end of the file, or a block's tail) starts at pos."""
    left = BLOCK - pos % BLOCK
    if pos >= len(buf) or left < 7:
        return True
    if len(buf) - pos < 7:
        return False
    checksum, length, _kind = _CHUNK.unpack_from(buf, pos)
    end = pos + 7 + length
    return length <= left - 7 and end <= len(buf) and zlib.crc32(buf[pos + 6:end]) == checksum


def _cut(info: InputFile, out: _Log, record: int, at: int, what: str) -> None:
    info.skip(record, f"record {record} at byte {at:,} is cut off ({what}): the writer stopped mid-record")
    info.cut_off = True
    out.ended_mid_record = at


def _orphan(info: InputFile, record: int, start: int) -> None:
    info.skip(record, f"record {record} at byte {start:,}: begun by a FIRST chunk and never ended; skipped")


class _Decoder:
    """Decodes records into a _Log; one that is no readable Record is a problem at its number."""

    def __init__(self, rel: str, run: str, info: InputFile, out: _Log):
        self.rel, self.run, self.info, self.out = rel, run, info, out
        self.bad_times: list[tuple[int, object]] = []
        self.bad_steps: list[tuple[int, str]] = []
        self.names: dict[bytes, tuple[str, bool]] = {}  # metric names (and whether eval) by their bytes: once per file
        self.step_metric: str | None = None  # define_metric("*", step_metric=S): every metric's step is S
        self.last_axis: int | None = None  # S's last value (step_sync: a record without S is at its last value)
        self.off_axis: list[int] = []  # records logged before any value of S: no step on its axis
        self.not_whole: tuple[int, float] | None = None  # (record, value): a value of S that is no step count
        self.axes: list[tuple[int, int | None]] = []  # per record kept under a step metric: (_step, S's step)

    def record(self, buf: bytes, start: int, end: int, number: int) -> None:
        try:
            kind = self._record(buf, start, end, number)
        except (ValueError, IndexError, struct.error, UnicodeDecodeError) as exc:
            self.info.skip(number, f"record {number}: not a readable W&B Record ({exc}); skipped")
            return
        self.info.records += 1
        self.out.kinds[kind] += 1

    def _record(self, buf: bytes, start: int, end: int, number: int) -> str:
        for n, wire, a, b in fields(buf, start, end):
            if wire != 2 or n not in RECORD_KINDS:
                continue
            if n == _HISTORY:
                self._history(buf, a, b, number)
            elif n == _RUN:
                self._run(buf, a, b)
            elif n == _EXIT:
                self._exit(buf, a, b)
            elif n == _ENVIRONMENT:
                self._environment(buf, a, b)
            elif n == _CONFIG:
                self._config(buf, a, b)
            elif n == _METRIC:
                self._metric(buf, a, b)
            return RECORD_KINDS[n]
        return "other"

    def _history(self, buf: bytes, start: int, end: int, number: int) -> None:
        values: dict[str, float] = {}
        evals: dict[str, float] = {}
        step = stamp = None
        step_num = 0
        names = self.names
        pos = start
        # The fields of a HistoryRecord walked inline (the most frequent record by far); the common item,
        # {2: one nested_key, 16: value_json} with short lengths, decoded inline too, any other by _item.
        while pos < end:
            if buf[pos] == 0x0A and buf[pos + 1] < 0x80:
                a = pos + 2
                b = a + buf[pos + 1]
            else:
                key, a = varint(buf, pos)
                wire = key & 7
                if wire == 2:
                    size, a = varint(buf, a)
                    b = a + size
                else:
                    b = skip(buf, a, wire)
                if b > end:
                    raise ValueError("field runs past the end of its message")
                if key != 0x0A:
                    if key == 0x12:  # step: HistoryStep { 1 num }
                        for m, w, c, _d in fields(buf, a, b):
                            if m == 1 and w == 0:
                                step_num = signed(varint(buf, c)[0])
                    pos = b
                    continue
            if b > end:
                raise ValueError("field runs past the end of its message")
            pos = b
            ke = a + 2 + buf[a + 1]
            if (buf[a] == 0x12 and buf[a + 1] < 0x80 and ke + 3 <= b and buf[ke] == 0x82 and buf[ke + 1] == 0x01
                    and ke + 3 + buf[ke + 2] == b):
                raw_name = buf[a + 2:ke]
                known = names.get(raw_name)
                if known is None:
                    name = raw_name.decode("utf-8", "replace")
                    known = names[raw_name] = (name, is_eval(name))
                raw: bytes | str | None = buf[ke + 3:b]
            else:
                name, raw = _item(buf, a, b)
                if name is None or raw is None:
                    continue
                known = (name, is_eval(name))
            name = known[0]
            if name[0] == "_":
                if name == "_step":
                    step = raw
                elif name == "_timestamp":
                    stamp = raw
                continue
            try:
                value = float(raw)  # JSON numbers, and W&B's NaN, Infinity, -Infinity
            except ValueError:
                continue  # a string, a boolean, a media object: no metric
            (evals if known[1] else values)[name] = value
        at_step = step_num if step is None else _step(step)
        axis: int | None = None
        if self.step_metric is not None and at_step is not None and 0 <= at_step <= MAX_COUNT:
            axis = self._on_axis(values, evals, number)
            self.axes.append((at_step, axis))
            if axis is None:
                self.off_axis.append(number)
        if at_step is None or not 0 <= at_step <= MAX_COUNT:
            self.bad_steps.append((number, _decoded(step)))
            self.info.skipped += 1
            self.info.records -= 1
            return
        at = None
        if stamp is not None:
            try:
                at = from_epoch(float(stamp))
            except ValueError:
                at = None
            if at is None:
                self.bad_times.append((number, _decoded(stamp)))
        out = self.out
        out.steps.append(at_step)
        if at is not None and (out.last_time is None or at > out.last_time):
            out.last_time = at
        if values:
            out.rows.add(self.run, "train", at_step, number, at, values)
        if evals:
            out.rows.add(self.run, "eval", at_step, number, at, evals)
            out.evaluations.append(Evaluation(self.run, at_step, at, Evidence(self.rel, number), evals))

    def _on_axis(self, values: dict[str, float], evals: dict[str, float], number: int) -> int | None:
        """A history record's step on the declared step metric: its own value of it, else the last one
        logged (W&B's step_sync); None before any. It stays a metric until settle_axis decides."""
        axis = self.step_metric
        value = values.get(axis) if axis in values else evals.get(axis)  # type: ignore[arg-type]
        if value is not None:
            if math.isfinite(value) and value == int(value) and 0 <= value <= MAX_COUNT:
                self.last_axis = int(value)
            elif self.not_whole is None:
                self.not_whole = (number, value)
        return self.last_axis

    def settle_axis(self) -> None:
        """The rows' steps once every record is read: on the step metric when all its values are step counts
        (a record before its first value keeps no step), else on W&B's _step."""
        if self.step_metric is None or not self.axes:
            return
        out, axes = self.out, self.axes
        use_axis = self.not_whole is None and any(a is not None for _own, a in axes)
        chosen = {own: (a if use_axis else own) for own, a in axes}  # W&B's _step is one per history record
        out.rows.step = [chosen.get(s, s) if s is not None else None for s in out.rows.step]
        for evaluation in out.evaluations:
            evaluation.step = chosen.get(evaluation.step, evaluation.step)  # type: ignore[arg-type]
        out.steps = [s for s in (chosen.get(s, s) for s in out.steps) if s is not None]
        if use_axis:  # the step metric is the axis, not a metric
            out.rows.drop_metric(self.step_metric)
            for evaluation in out.evaluations:
                evaluation.metrics.pop(self.step_metric, None)
            out.evaluations = [e for e in out.evaluations if e.metrics]
        else:
            number, value = self.not_whole or (None, None)
            declared = next(i for i, note in enumerate(self.info.notes) if note.startswith("define_metric('*'"))
            self.info.notes[declared] = (f"define_metric('*', step_metric='{self.step_metric}'), but {self.step_metric} "
                                         f"is no step count (record {number}: {value!r}): its rows are at W&B's _step")
            self.off_axis = []

    def _metric(self, buf: bytes, start: int, end: int) -> None:
        """define_metric: a step metric declared for every metric (glob "*") is the run's step."""
        glob = step_metric = None
        for n, wire, a, b in fields(buf, start, end):
            if wire == 2 and n == 2:
                glob = buf[a:b].decode("utf-8", "replace")
            elif wire == 2 and n == 4:
                step_metric = buf[a:b].decode("utf-8", "replace")
        if glob == "*" and step_metric and self.step_metric is None:
            self.step_metric = step_metric
            self.info.notes.append(f"define_metric('*', step_metric='{step_metric}'): its rows are at the value of "
                                   f"{step_metric} each history record logs (the training step), not at W&B's _step "
                                   "(a count of log calls)")

    def _run(self, buf: bytes, start: int, end: int) -> None:
        run = self.out.run
        for n, wire, a, b in fields(buf, start, end):
            if wire == 2 and n in (1, 3, 8, 13):
                run[{1: "run_id", 3: "project", 8: "display_name", 13: "host"}[n]] = buf[a:b].decode("utf-8", "replace")
            elif n == 4 and wire == 2:
                self._config(buf, a, b)
            elif n == 14 and wire == 0:
                step = signed(varint(buf, a)[0])
                if 0 <= step <= MAX_COUNT:
                    run["starting_step"] = step
            elif n == 17 and wire == 2:
                at = _timestamp(buf, a, b)
                if at is None:
                    self.info.problem(None, "the run record's start_time is no time between 1970 and 2199; not read")
                run["start_time"] = at
            elif n in (18, 24) and wire == 0:
                run["resumed" if n == 18 else "resume"] = varint(buf, a)[0] != 0

    def _exit(self, buf: bytes, start: int, end: int) -> None:
        exit = self.out.exit = {"exit_code": 0, "runtime": 0}
        for n, wire, a, _b in fields(buf, start, end):
            if n in (1, 2) and wire == 0:
                value = signed(varint(buf, a)[0])
                value = value - (1 << 32) if n == 1 and value >= 1 << 31 else value  # an int32
                if n == 2 and not 0 <= value <= 366 * 24 * 3600:
                    continue
                exit["exit_code" if n == 1 else "runtime"] = value

    def _environment(self, buf: bytes, start: int, end: int) -> None:
        env = self.out.environment
        for n, wire, a, b in fields(buf, start, end):
            if n == 3 and wire == 2:
                env["started_at"] = _timestamp(buf, a, b)
            elif n == 12 and wire == 2:
                env["host"] = buf[a:b].decode("utf-8", "replace")
            elif n == 18 and wire == 2:
                env["gpu"] = buf[a:b].decode("utf-8", "replace")
            elif n == 19 and wire == 0:
                env["gpu_count"] = varint(buf, a)[0]
            elif n == 6 and wire == 2:
                env["program"] = buf[a:b].decode("utf-8", "replace")

    def _config(self, buf: bytes, start: int, end: int) -> None:
        for n, wire, a, b in fields(buf, start, end):
            if n != 1 or wire != 2:
                continue
            name, raw = _item(buf, a, b, ".")
            if name is None or raw is None or name == "_wandb" or name.startswith("_wandb."):
                continue
            try:
                value = load_json(raw)
            except (json.JSONDecodeError, TooComplex):
                self.info.problem(None, f"config {quoted(name)}: its value is not JSON; left out")
                continue
            _plain(name, value, self.out.config)

    def finish(self) -> None:
        self.settle_axis()
        if self.off_axis:
            self.info.notes.append(f"{len(self.off_axis):,} history record(s) logged before any value of "
                                   f"{self.step_metric}, the run's step metric (first: record {self.off_axis[0]}): "
                                   "kept without a step")
        if self.bad_steps:
            number, step = self.bad_steps[0]
            self.info.problem(number, f"{len(self.bad_steps):,} history record(s) with a _step that is no step count "
                              f"(first: {quoted(step)} at record {number}); skipped")
        if self.bad_times:
            number, stamp = self.bad_times[0]
            self.info.problem(number, f"{len(self.bad_times):,} history record(s) with a _timestamp that is no time "
                              f"between 1970 and 2199 (first: {quoted(stamp)} at record {number}); their values are "
                              "read, their times are not")


def _item(buf: bytes, start: int, end: int, sep: str = "/") -> tuple[str | None, str | None]:
    """(key, value_json) of a HistoryItem or ConfigItem; a nested key (a logged dict) is joined with `sep`:
    `/` for metrics, as reportgen names a metric's namespace (eval/loss), `.` for config, as W&B shows it."""
    key = None
    nested: list[str] = []
    raw = None
    for n, wire, a, b in fields(buf, start, end):
        if wire != 2:
            continue
        if n == 1:
            key = buf[a:b].decode("utf-8", "replace")
        elif n == 2:
            nested.append(buf[a:b].decode("utf-8", "replace"))
        elif n == 16:
            raw = buf[a:b].decode("utf-8", "replace")
    return (key or sep.join(nested) or None), raw


def _decoded(raw: bytes | str | None) -> str:
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)


def _step(raw: bytes | str) -> int | None:
    if raw.isdigit():
        return int(raw)
    try:
        value = float(raw)
    except ValueError:
        return None
    return int(value) if math.isfinite(value) and value == int(value) else None


def _timestamp(buf: bytes, start: int, end: int) -> datetime | None:
    """A google.protobuf.Timestamp (1 seconds, 2 nanos) as a time; None when it is no time reportgen keeps."""
    seconds = nanos = 0
    for n, wire, a, _b in fields(buf, start, end):
        if n == 1 and wire == 0:
            seconds = signed(varint(buf, a)[0])
        elif n == 2 and wire == 0:
            nanos = varint(buf, a)[0] % 1_000_000_000
    return from_epoch(seconds + nanos / 1e9)


# --- the reader's scan steps -----------------------------------------------------------------

def claim_folders(scan: Scan) -> None:
    """A W&B run folder (the folder of a transaction log, or one named run-<date>_<time>-<id> holding
    W&B's files) is a run folder: what else it holds (files/output.log, media) belongs to its run."""
    folders = {run_folder(rel) or parents(rel)[0] for rel in scan.files(LOG_KIND)}
    folders |= {f for f in (run_folder(rel) for rel in scan.files(FILE_KIND)) if f is not None}
    for folder in sorted(folders):
        if folder not in scan.run_dirs:
            key = f"{FORMAT}:{folder or '.'}"
            scan.run_folder(folder, Source(key, FORMAT, scan.name_of(folder), scan.shown_by(folder, ()), folder=folder))


def read_files(scan: Scan) -> None:
    read: list[tuple[Source, WandbRun]] = []
    folders = scan.run_folders(FORMAT)
    keys = dict(folders)

    def own_of(folder: str) -> list[str]:
        """The folder's own files (own_files) that no reader has taken."""
        return own_files(folder, [rel for rel in scan.members(folder) if rel not in scan.claimed])

    def read_folder(folder: str) -> tuple[list[str], WandbRun]:
        own = own_of(folder)
        return own, read_run(scan.logs, folder, own, keys[folder])

    def read_folder_on(folder: str, since: dict[str, Transactions] | None) -> tuple[tuple[list[str], WandbRun], dict]:
        own = own_of(folder)
        run, kept = read_run_on(scan.logs, folder, own, keys[folder], since)
        return (own, run), kept

    # A folder's result is kept between builds while its own files are unchanged (ingest/cache.py); a transaction
    # log that only grew is decoded on from where the last read stopped.
    read_ahead = scan.read_ahead([folder for folder, _key in folders], read_folder,
                                 Kept(FORMAT, context=lambda folder: keys[folder], members=own_of, resume=read_folder_on))
    for folder, key in folders:
        source = scan.sources[key]
        with scan.contained(source.evidence.path, FORMAT):
            own = own_of(folder)
            ahead = read_ahead.pop(folder, None)
            # Read ahead with the same files, unless a folder read before it took some of them.
            run = ahead[1] if ahead is not None and ahead[0] == own else read_run(scan.logs, folder, own, key)
            scan.add(run.reading)
            for rel in run.claimed:
                scan.done(rel)
            source.evidence = run.facts.evidence
            source.dirs = run.dirs
            read.append((source, run))
    _processes(read)
    for rel in scan.files(FILE_KIND):  # wandb/debug.log outside every run folder: W&B's link to the latest run's
        info = InputFile(rel, FORMAT, records=0)
        info.notes.append("W&B's link to (or copy of) the latest run's log of that name; read in that run's folder")
        scan.add(Reading([info]))
        scan.done(rel)


def _processes(read: list[tuple[Source, WandbRun]]) -> None:
    """Each folder is one process of a W&B run, named after the run's display name (else its id). The
    folders of one W&B run id, in the order their run records say they started: the first keeps the
    name, the n-th is <name>-n; a folder whose run record says it resumed continues the one before it."""
    by_id: dict[str, list[tuple[Source, WandbRun]]] = {}
    for source, run in read:
        if run.name:
            source.name = run.name
        by_id.setdefault(run.run_id or source.key, []).append((source, run))
    for run_id, processes in by_id.items():
        processes.sort(key=lambda p: (p[1].facts.started_at is None, p[1].facts.started_at or datetime.min, p[0].key))
        for n, (source, run) in enumerate(processes, start=1):
            if n > 1:
                source.name = f"{source.name}-{n}"
            if not run.resumed:
                continue
            log = run.facts.evidence.path
            if n == 1:
                info = next((i for i in run.reading.inputs if i.path == log), None)
                if info is not None:
                    info.notes.append(f"W&B resumed run {run_id} here ({run.resume_reason}); no earlier folder of that "
                                      "run is in LOGS")
                continue
            before = processes[n - 2][0]
            run.facts.resumes = before.key
            run.facts.resume_rule = "wandb-resume"
            run.facts.resume_reason = (f"{run.resume_reason}, and {before.folder}/ is the folder of W&B run {run_id} "
                                       "started before it")
            run.facts.resumed_at_step = run.starting_step


READER = Reader(FORMAT, recognise, read_files, claim_folders)
