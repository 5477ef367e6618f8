"""DVCLive folders (`dvclive/` by default, any name: recognised by content), read without DVCLive.

A DVCLive folder (dvclive/live.py, dvclive/plots/metric.py) holds:

    metrics.json                 the last value of each metric, nested by `/`, and `step` (make_summary)
    params.yaml                  log_params()
    plots/metrics/<name>.tsv     one per metric: a header `timestamp<TAB>step<TAB><last part of name>`
                                 (`timestamp` in ms, only with log_metric(timestamp=True); without
                                 it `step<TAB><name>`), then one row per log_metric() call, appended;
                                 `train/loss` is plots/metrics/train/loss.tsv
    report.html, report.md       made from the files above by make_report(); not read
and `dvc.yaml` (make_dvcyaml) in the folder or, by default, in the project folder above it, naming
the folder's files. Live(resume=True) reads metrics.json's `step`, starts at the step after it and
appends to the tsv files (no new header). Live.end() writes the same metrics.json, dvc.yaml and
report that each next_step() writes, so nothing on disk says a run ended.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import numpy as np
import pandas as pd
import pyarrow as pa

from reportgen.ingest.common import (
    EARLIEST,
    EPOCH_END,
    LATEST,
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
    read_mapping,
    text_lines,
)
from reportgen.ingest.scan import Kept, Reader, Scan, Source, folder_name, parent
from reportgen.model import (
    Evaluation,
    Evidence,
    InputFile,
    LogMessage,
    MessageKind,
    RunFacts,
)

FORMAT = "dvclive"
TSV = "dvclive-tsv"
FILE = "dvclive-file"
METRICS_DIR = ("plots", "metrics")
SUMMARY, PARAMS, DVC_YAML = "metrics.json", "params.yaml", "dvc.yaml"
REPORTS = ("report.html", "report.md")
NO_STATUS = ("DVCLive writes nothing that marks an end: Live.end() writes the same metrics.json, dvc.yaml and "
             "report as each next_step()")


@dataclass
class DvcLiveRun:
    """What one DVCLive folder says: its files (in `reading`, with metric rows and evaluations), the
    run's facts, the files it claimed, and why it looks resumed (None: nothing says so)."""

    reading: Reading
    facts: RunFacts
    claimed: list[str] = field(default_factory=list)
    resumed: str | None = None


def _metric_part(rel: str) -> tuple[str, str] | None:
    """(live folder, metric name) of a path `<folder>/plots/metrics/<name>.tsv`."""
    parts = PurePosixPath(rel).parts
    for i in range(len(parts) - 2):
        if parts[i:i + 2] == METRICS_DIR:
            name = "/".join(parts[i + 2:])
            if name.endswith(".tsv") and len(name) > 4:
                return "/".join(parts[:i]), name[:-4]
            return None
    return None


def _header(first: str, name: str) -> bool:
    """A metric file's header as DVCLive writes it: the last part of the metric's name after `step`."""
    last = name.rsplit("/", 1)[-1]
    return first.split("\t") in (["timestamp", "step", last], ["step", last])


def recognise(rel: str, head: bytes) -> str | None:
    """"dvclive-tsv" for a `plots/metrics/**/<name>.tsv` whose header is DVCLive's (`timestamp step
    <name>` or `step <name>`, tab-separated, `<name>` the file's own); "dvclive-file" for a
    metrics.json, params.yaml, dvc.yaml or report a DVCLive folder may hold (only a candidate:
    `live_folder` says whether a DVCLive folder holds it)."""
    name = PurePosixPath(rel).name
    part = _metric_part(rel)
    if part is not None:
        text = decode_text(head[: head.rfind(b"\n") + 1] or head)
        lines = text_lines(text) if text else []
        if lines and _header(lines[0].removesuffix("\r"), part[1]):
            return TSV
        return None
    start = head.lstrip()[:1]
    if (name == SUMMARY and start == b"{") or name == PARAMS or (name == "report.html" and start == b"<"):
        return FILE
    if name == "report.md" or (name == DVC_YAML and any(k in head for k in (b"metrics:", b"plots:", b"params:"))):
        return FILE
    return None


def live_folders(heads: Mapping[str, bytes]) -> set[str]:
    """Every DVCLive folder under LOGS: the folders holding a `plots/metrics` of DVCLive metric files."""
    return {part[0] for rel, head in heads.items()
            if (part := _metric_part(rel)) is not None and recognise(rel, head) == TSV}


def live_folder(rel: str, heads: Mapping[str, bytes], folders: set[str] | None = None) -> str | None:
    """The DVCLive folder `rel` belongs to ('' is LOGS itself), or None. `heads` maps paths under LOGS
    to their first bytes; `folders` (from live_folders, when deciding for many files) saves a scan."""
    kind = recognise(rel, heads.get(rel, b""))
    if kind == TSV:
        part = _metric_part(rel)
        return part[0] if part else None
    if kind != FILE:
        return None
    folders = live_folders(heads) if folders is None else folders
    parent = PurePosixPath(rel).parent.as_posix()
    parent = "" if parent == "." else parent
    if parent in folders:
        return parent
    if PurePosixPath(rel).name == DVC_YAML:
        # DVCLive writes dvc.yaml in the folder it runs in, by default the project folder above `dvclive/`.
        head = heads.get(rel, b"")
        below = sorted(f for f in folders if PurePosixPath(f).parent.as_posix() in (parent or ".", parent))
        named = [f for f in below if f"{PurePosixPath(f).name}/{SUMMARY}".encode() in head
                 or f"{PurePosixPath(f).name}/plots/metrics".encode() in head]
        if len(named) == 1:
            return named[0]
    return None


def read_folder(logs: Path, folder: str, members: list[str], key: str) -> DvcLiveRun:
    """One DVCLive folder's files (`members`, paths under LOGS): metric rows from its tsv files, the
    configuration from params.yaml, the summary's step, and the files it claims."""
    return read_folder_on(logs, folder, members, key, None, keep=False)[0]


def read_folder_on(logs: Path, folder: str, members: list[str], key: str, since: dict[str, Tsv] | None,
                   keep: bool = True) -> tuple[DvcLiveRun, dict[str, Tsv]]:
    """read_folder, each metric file read on from where the last read of the folder stopped (`since`: what it kept
    of each, kept between builds by the parse cache) when DVCLive has only appended rows to it; with what to keep
    of each now. The folder's other files are small, and read whole."""
    since = since or {}
    kept: dict[str, Tsv] = {}
    facts = RunFacts(run=key, format=FORMAT, evidence=Evidence(f"{folder}/{SUMMARY}" if folder else SUMMARY),
                     reason=NO_STATUS)
    run = DvcLiveRun(Reading(), facts)
    prefix = f"{folder}/" if folder else ""
    steps: list[int] = []
    times: list = []
    evals: dict[int, Evaluation] = {}
    back: list[tuple[str, int, int, int]] = []  # (file, line, step, step before) where a file's step did not rise
    summary_step: int | None = None
    summary_rel: str | None = None
    for rel in sorted(members):
        inside = rel[len(prefix):] if rel.startswith(prefix) else None
        part = _metric_part(rel)
        if part is not None and part[0] == folder:
            (info, frame, seen), tsv = _read_tsv(logs / rel, rel, key, part[1], since.get(rel), keep)
            if tsv is not None:
                kept[rel] = tsv
            run.reading.inputs.append(info)
            run.reading.frames.append(frame)
            if len(frame):
                steps += [int(frame["step"].min()), int(frame["step"].max())]
                stamps = frame["ts"].dropna()
                times += [stamps.min(), stamps.max()] if len(stamps) else []
            back += [(rel, *b) for b in seen]
            if is_eval(part[1]):
                for line, step, ts, value in zip(frame["line"].tolist(), frame["step"].tolist(), frame["ts"].tolist(),
                                                 frame[part[1]].tolist() if len(frame) else []):
                    ev = evals.setdefault(step, Evaluation(key, step, None if pd.isna(ts) else ts.to_pydatetime(),
                                                           Evidence(rel, line), {}))
                    ev.metrics[part[1]] = float(value)
        elif inside == SUMMARY:
            info = InputFile(rel, FORMAT)
            summary = read_mapping(logs / rel, info, "metrics.json holds one JSON object") or {}
            value = summary.get("step")
            if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT:
                summary_step, summary_rel = value, rel
            run.reading.inputs.append(info)
        elif inside == PARAMS:
            info = InputFile(rel, FORMAT)
            params = read_mapping(logs / rel, info, "params.yaml holds a mapping of parameters")
            if params:
                facts.config = {"params": params}
            run.reading.inputs.append(info)
        elif inside in REPORTS or PurePosixPath(rel).name == DVC_YAML:
            what = "DVC's configuration of this folder's metrics and plots" if rel.endswith(DVC_YAML) else \
                "DVCLive's report, made from the files beside it"
            run.reading.inputs.append(InputFile(rel, FORMAT, records=1, notes=[f"{what}; not read"]))
        else:
            continue
        run.claimed.append(rel)
    run.reading.events += [evals[s] for s in sorted(evals)]
    if steps:
        facts.first_step, facts.last_step = min(steps), max(steps)
    if times:  # the last time is when it was last seen, not an end: DVCLive writes no end marker
        facts.started_at = min(times).to_pydatetime()
    if summary_step is not None and facts.last_step is not None and summary_step < facts.last_step:
        info = next(i for i in run.reading.inputs if i.path == summary_rel)
        info.notes.append(f"metrics.json is at step {summary_step} and the metric files reach step {facts.last_step}: "
                          "values were logged after the last next_step() or end() wrote the summary")
    run.reading.events.append(facts)
    run.resumed = _resumed(back)
    if run.resumed is not None:
        rel, line = back[0][0], back[0][1]
        run.reading.events.append(LogMessage(key, MessageKind.RESUMED, run.resumed, Evidence(rel, line), step=back[0][2]))
    return run, kept


def _resumed(back: list[tuple[str, int, int, int]]) -> str | None:
    """Why the folder was written by a second process (Live(resume=True)), or None.

    One process only ever raises the step, so a step that does not rise, once in a metric file,
    is a second writer appending: Live(resume=True) starts after metrics.json's step, which repeats
    the step a killed predecessor logged but never summarised. A file where it happens more than
    once is a script that logs a metric several times a step: then nothing is decided.
    """
    if not back:
        return None
    files: dict[str, int] = {}
    for rel, *_rest in back:
        files[rel] = files.get(rel, 0) + 1
    if any(n > 1 for n in files.values()):
        return None
    rel, line, step, before = back[0]
    again = "again after" if step == before else "after"
    others = len(files) - 1
    also = f" (and in {others} other metric file{'s' if others > 1 else ''})" if others else ""
    return (f"{rel} line {line}: step {step} {again} step {before}{also}: a second process appended, as "
            "Live(resume=True) does, starting after the step metrics.json had")


def _read_tsv(path: Path, rel: str, run: str, name: str, since: Tsv | None = None, keep: bool = False
              ) -> tuple[tuple[InputFile, pd.DataFrame, list[tuple[int, int, int]]], Tsv | None]:
    """One metric file: its metrics frame (a row per line at its step, with its time when the file has a
    timestamp column), and the (line, step, step before) of each row whose step did not rise; read on from
    `since` when DVCLive has only appended rows to it since, else whole, with what to keep to read on from next
    time (common.read_lines)."""
    fresh = Tsv(rel, run, name)
    read, kept = read_lines(path, fresh, since, "not UTF-8 text; a DVCLive metric file is tab-separated text",
                            what="rows", keep=keep)
    if read is None:
        return (fresh.info, fresh.empty(), []), None
    return read.result(), kept


class Tsv(LineRead):
    """A DVCLive metric file read line by line: its rows so far (their cells, parsed when the frame is made), its
    counts and problems, and its header's width once read."""

    def __init__(self, rel: str, run: str, name: str) -> None:
        super().__init__(InputFile(rel, FORMAT))
        self.run, self.name = run, name
        self.width = 0  # the header's cells: 2 or 3 (with timestamps); 0 until the header is read
        self.kept: list[int] = []
        self.steps: list[str] = []
        self.cells_of: list[list[str]] = []
        self.no_header: tuple[int, str] | None = None  # the header's line and why it is no header

    def empty(self) -> pd.DataFrame:
        return metric_frame(self.info.path, [], self.run, "eval" if is_eval(self.name) else "train", [], [], {})

    def feed(self, text: str, first: int, unterminated: bool = False) -> None:
        info, name = self.info, self.name
        for line, cells in csv_lines(text, "\t", first):
            self.lines = line
            if isinstance(cells, list) and not "".join(cells).strip():
                info.blank += 1
                continue
            if self.no_header is not None:  # nothing below a header that is no header is read
                info.skipped += 1
                continue
            if not self.width:
                info.header = 1
                if isinstance(cells, str) or not _header("\t".join(cells), name):
                    shown = cells if isinstance(cells, str) else quoted("\t".join(cells))
                    self.no_header = (line, f"not DVCLive's header for {name} (`step<TAB>{name.rsplit('/', 1)[-1]}`, with a "
                                            f"`timestamp` column first or not): {shown}")
                    continue
                self.width = len(cells)
                continue
            if isinstance(cells, str):
                info.skip(line, f"not a row ({cells}); row skipped")
                continue
            if len(cells) != self.width:
                info.skip(line, f"{len(cells)} cells where the header has {self.width}"
                          + ("; the last line is cut off (a writer stopped mid-line)" if unterminated else "") + "; row skipped")
                info.cut_off = info.cut_off or unterminated
                continue
            step = cells[-2]
            if not (step.isascii() and step.isdigit() and len(step) <= 15):
                info.skip(line, f"step: {quoted(step)} is not a step number; row skipped")
                continue
            self.kept.append(line)
            self.steps.append(step)
            self.cells_of.append(cells)

    def result(self) -> tuple[InputFile, pd.DataFrame, list[tuple[int, int, int]]]:
        info, name, kept, width = self.info, self.name, self.kept, self.width
        info.lines = self.lines
        if self.no_header is not None:
            line, why = self.no_header
            info.problem(line, f"{why}; the {info.skipped} rows below it are not read")
            return info, self.empty(), []
        if not kept:
            return info, self.empty(), []
        table = np.array(self.cells_of, dtype=str).reshape(len(kept), width)
        values, ok = parse_numbers(np.char.rstrip(table[:, -1], "\r"))
        line_numbers = np.array(kept, dtype=np.int64)
        for i in np.flatnonzero(~ok).tolist():
            info.problem(int(line_numbers[i]), f"{name}: {quoted(str(table[i, -1]))} is not a number; row skipped")
        info.skipped += int((~ok).sum())
        info.records = int(ok.sum())
        step_numbers = np.array(self.steps, dtype=np.int64)[ok]
        line_numbers, values = line_numbers[ok], values[ok]
        if width == 3:
            stamps = _times(table[ok, 0], line_numbers, info)
        else:
            stamps = pa.nulls(len(values), pa.timestamp("us", tz="UTC"))
        fell = np.flatnonzero(np.diff(step_numbers) <= 0) + 1
        back = [(int(line_numbers[i]), int(step_numbers[i]), int(step_numbers[i - 1])) for i in fell.tolist()]
        kind = "eval" if is_eval(name) else "train"
        frame = metric_frame(info.path, line_numbers.tolist(), self.run, kind, step_numbers.tolist(), stamps, {name: pa.array(values)})
        return info, frame, back


def _times(cells: np.ndarray, lines: np.ndarray, info: InputFile) -> pa.Array:
    """DVCLive timestamps (integer milliseconds since 1970) as UTC times; a cell that is no time is
    null, and one problem for the file."""
    digits = np.char.isdigit(cells) & (np.char.str_len(cells) <= 15)
    ms = np.zeros(len(cells), dtype=np.int64)
    ms[digits] = cells[digits].astype(np.int64)
    good = digits & (ms > 0) & (ms < int(EPOCH_END * 1000))
    bad = np.flatnonzero(~good)
    if len(bad):
        first = int(bad[0])
        info.problem(int(lines[first]), f"timestamp: {quoted(str(cells[first]))} is no time in milliseconds from "
                                        f"{EARLIEST.year} to {LATEST.year - 1}; its value is read without a time"
                     + (f" ({len(bad)} timestamps in all)" if len(bad) > 1 else ""))
    return pa.array(ms * 1000, type=pa.timestamp("us", tz="UTC"), mask=~good)


# --- the reader's scan steps -----------------------------------------------------------------

def _heads(scan: Scan) -> dict[str, bytes]:
    return {rel: head for rel, (_path, head) in scan.found.items()}


def claim_folders(scan: Scan) -> None:
    """A DVCLive folder (one holding DVCLive's plots/metrics files) is a run folder, named after the
    project folder above it when it has DVCLive's default name `dvclive`."""
    for folder in sorted(live_folders(_heads(scan))):
        if folder not in scan.run_dirs:
            named = parent(folder) if folder and folder_name(folder) == "dvclive" else folder
            source = Source(f"{FORMAT}:{folder or '.'}", FORMAT, scan.name_of(named), scan.shown_by(folder, (SUMMARY,)),
                            folder=folder)
            scan.run_folder(folder, source)


def read_files(scan: Scan) -> None:
    heads = _heads(scan)
    folders = {folder for folder, _key in scan.run_folders(FORMAT)}
    yamls = [rel for rel in scan.files(FILE) if PurePosixPath(rel).name == DVC_YAML]
    for folder, key in scan.run_folders(FORMAT):
        with scan.contained(scan.sources[key].evidence.path, FORMAT):
            members = [rel for rel in scan.members(folder) if rel not in scan.claimed]
            members += [rel for rel in yamls if rel not in members and live_folder(rel, heads, folders) == folder]
            # Kept between builds while the folder's files are unchanged (ingest/cache.py).
            run = scan.read_one(folder, lambda folder, members=members, key=key: read_folder(scan.logs, folder, members, key),
                                Kept(FORMAT, context=lambda _folder, key=key: key, members=lambda _folder, members=members: members,
                                     resume=lambda folder, since, members=members, key=key:
                                         read_folder_on(scan.logs, folder, members, key, since)))
            scan.add(run.reading)
            for rel in run.claimed:
                scan.done(rel)


READER = Reader(FORMAT, recognise, read_files, claim_folders)
