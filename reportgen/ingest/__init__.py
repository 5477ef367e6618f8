"""Ingest a campaign folder: find every file, recognise its format by content, merge into one model."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.boundary import inside, open_file, refusal, resolved
from reportgen.errors import InputError, during
from reportgen.ingest import bench, formats, identity
from reportgen.ingest.cache import ParseCache
from reportgen.ingest.excerpts import Excerpt, excerpts  # noqa: F401 (re-exported: build quotes through ingest)
from reportgen.ingest.identity import config_id
from reportgen.model import (
    METRIC_FRAME_COLUMNS,
    Campaign,
    Checkpoint,
    CheckpointOp,
    Evaluation,
    Evidence,
    InputFile,
    LoggedDecision,
    LoggedStop,
    LogMessage,
    ManifestEntry,
    Problem,
    ReloadTest,
    Run,
    RunEvent,
    RunFacts,
    StepMark,
    UnlinkedSource,
    WarningCode,
    same_path,
)
from reportgen.plan.freeze import RECORD_DIR
from reportgen.recall import Recall

SNIFF_BYTES = 64 << 10

# What a long build reports as it goes: the phase, the item at hand, how many are done of how many.
Progress = Callable[[str, str, int, int], None]


MAX_DEPTH = 64  # folders below LOGS; a deeper tree is a damaged or hostile one


def iter_files(root: Path) -> Iterator[tuple[Path, str | None]]:
    """Every file under root in a stable order, with why it is not read (None: it may be read).

    Links to folders are listed and never followed (a file inside LOGS is read once, by its own
    path); folders that cannot be listed, names that are not UTF-8 and folders deeper than
    MAX_DEPTH are listed with why, never skipped in silence."""
    errors: list[OSError] = []
    base = len(root.parts)
    for folder, dirs, files in os.walk(root, onerror=errors.append):
        here = Path(folder)
        for error in errors:
            yield Path(error.filename or folder), f"cannot be listed: {error.strerror or error}"
        errors.clear()
        # reportgen's own record (the frozen plan) is never read as campaign input.
        names = sorted(d for d in dirs if not (here == root and d == RECORD_DIR))
        dirs[:] = []
        for name in names:
            path = here / name
            try:
                link = path.is_symlink()
            except OSError as exc:  # a path past the system's limit (ENAMETOOLONG)
                yield path, f"cannot be read: {exc.strerror or exc}"
                continue
            if link:
                where = "inside" if inside(root, path) else "outside"
                yield path, f"a link to a folder {where} LOGS; not followed"
            elif not _utf8(name):
                yield path, "its name is not valid UTF-8; not read"
            elif len(path.parts) - base >= MAX_DEPTH:
                yield path, f"more than {MAX_DEPTH} folders below LOGS; not read"
            else:
                dirs.append(name)
        for name in sorted(files):
            path = here / name
            yield path, None if _utf8(name) else "its name is not valid UTF-8; not read"
    for error in errors:  # the last folders the walk could not list
        yield Path(error.filename or root), f"cannot be listed: {error.strerror or error}"


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes of the name, kept as surrogates
        return False
    return True


def _printable(rel: str) -> str:
    """A path as it can be shown and written: undecodable bytes replaced."""
    return rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def check_logs(logs: Path) -> None:
    """LOGS is a folder reportgen can list; InputError (exit 1) saying what it is otherwise."""
    try:
        with os.scandir(logs):
            pass
    except FileNotFoundError:
        raise InputError(f"{logs}: no such folder") from None
    except NotADirectoryError:
        raise InputError(f"{logs}: not a folder; LOGS is the campaign's log folder") from None
    except OSError as exc:
        raise InputError(f"{logs}: cannot be read: {exc.strerror or exc}") from None


class WriteTimes:
    """The modification times a long-lived process (`watch`) saw each log take, one a build at most: how often a
    log is written, where its records keep no time (Lightning's and Keras's CSV logs, DVCLive's default,
    torchtune's), as the watcher saw it. A log is seen at every build, and a build is made at every change and
    once a minute during the lot, so a log written more often than the watcher looks is seen at the watcher's
    pace: its times tell how often it was seen changing, never more often than it was written."""

    KEEP = 51  # times kept of each log: its last 50 intervals, as many as the silent alert looks at (SILENT_RECENT)

    def __init__(self) -> None:
        self._seen: dict[str, list[datetime]] = {}

    def look(self, found: dict[str, tuple[Path, bytes]]) -> dict[str, tuple[datetime, ...]]:
        """Each file's modification time now, added to those seen of it; the times seen of each file found (the
        others are forgotten: a log gone, or rotated and back, starts anew)."""
        seen: dict[str, list[datetime]] = {}
        for rel, (path, _head) in found.items():
            times = self._seen.get(rel, [])
            try:
                changed = datetime.fromtimestamp(os.stat(path).st_mtime_ns / 1e9, UTC)
            except OSError:
                continue
            if not times or changed > times[-1]:
                times = [*times[-(self.KEEP - 1):], changed]
            elif changed < times[-1]:  # put back in time: another file at the path
                times = [changed]
            seen[rel] = times
        self._seen = seen
        return {rel: tuple(times) for rel, times in seen.items()}


def ingest(logs: Path, exclude: set[Path] | None = None, progress: Progress | None = None, jobs: int = 1,
           cache: ParseCache | None = None, live: datetime | None = None, recall: Recall | None = None,
           writes: WriteTimes | None = None) -> Campaign:
    """Read every file under LOGS into the campaign model, shared among up to `jobs` worker processes;
    bad records become problems. With `cache`, what is read of each log is kept for the next build, and
    what was kept of the logs unchanged since the last is used instead of reading them again. `live`: the
    wall clock of a build made while the campaign runs (`watch`), when a last record still being written
    is no damage (_being_written). `recall`: what a long-lived process keeps of its last build (recall.py),
    whose runs' traces are taken again for the runs whose rows did not change. `writes` (held by the watcher, with
    `live`): the files' modification times seen from build to build, kept in the campaign's `writes`."""
    check_logs(logs)
    if cache is not None:
        cache.begin()
    root = logs.resolve()
    excluded = {p.resolve() for p in exclude or set()}
    campaign = Campaign(root=str(logs))
    found: dict[str, tuple[Path, bytes]] = {}
    for path, refused in iter_files(logs):
        rel = path.relative_to(logs).as_posix() if path.is_relative_to(logs) else path.as_posix()
        if refused is not None:
            _unread(campaign, _printable(rel), refused)
            continue
        if resolved(path) in excluded:
            continue
        refused = refusal(root, path)
        if refused is not None:
            _unread(campaign, rel, refused)
            continue
        try:
            with open_file(path) as handle:
                head = handle.read(SNIFF_BYTES)
        except OSError as exc:
            _unread(campaign, rel, f"cannot be read: {exc.strerror}")
            continue
        found[rel] = (path, head)
    with during(f"reading {logs}"):
        scanned = formats.read_all_formats(logs, found, progress, jobs, cache)
    if cache is not None:
        cache.forget_the_rest()
    frames = []
    for reading in scanned.readings:
        campaign.inputs.extend(reading.inputs)
        frames.extend(f for f in reading.frames if len(f))
        _add_events(campaign, reading.events)
    campaign.inputs.sort(key=lambda i: i.path)
    if live is not None:
        campaign.writes = writes.look(found) if writes is not None else {}
        _being_written(campaign, found, live)
        _at_work(campaign, scanned.sources, found, live)
    if frames:
        metrics = pd.concat(frames, ignore_index=True, sort=False)
        metrics["path"] = metrics["path"].astype(str)
        metrics["run"] = metrics["run"].astype(str)
        campaign.metrics = metrics
    # Which sources are one run is decided before the runs are built, then what needs whole runs.
    if progress:
        progress("deciding", "which files are one run", 1, 3)
    with during("deciding which files are one run"):
        merged = identity.merge(campaign, scanned.sources, scanned.notes, jobs, recall)
        _set_apart(campaign, merged.containers, scanned.sources)
        identity.rename(campaign, merged.renames, scanned.text_logs)
        _one_name_per_metric(campaign)
    campaign.problems.extend(merged.problems)
    if progress:
        progress("deciding", "the runs' records", 2, 3)
    with during("building the runs"):
        if len(campaign.metrics):
            campaign.metrics = campaign.metrics.sort_values(["run", "step", "path", "line"], kind="mergesort", ignore_index=True)
        _build_runs(campaign)
    if progress:
        progress("deciding", "which run continues which", 3, 3)
    with during("deciding which run continues which"):
        identity.link(campaign, merged, scanned.sources, scanned.text_logs, recall)
    with during("matching evaluations to runs"):
        _one_per_evaluation(campaign)
        _time_evaluations(campaign)
    return campaign


# A file changed this recently before a live build, whose last record is incomplete, is being written.
WRITING_SECONDS = 300


def _being_written(campaign: Campaign, found: dict[str, tuple[Path, bytes]], now: datetime) -> None:
    """While the campaign runs, a log whose last record has no end yet (a line without its newline, a
    record cut short) and that changed less than WRITING_SECONDS before the build is being written: its
    last record is not damage, not counted, and tells nothing of how its run ended; it is read once
    whole. A log that stopped changing longer ago with its last record cut is cut off, as in a build."""
    for info in campaign.inputs:
        if not info.cut_off or info.path not in found:
            continue
        age = _changed_ago(found[info.path][0], now)
        if age is None or age >= WRITING_SECONDS:
            continue
        info.cut_off, info.being_written = False, True
        # The reader's problem for the cut: the last it reported that says so (readers report it last, at the
        # file's last line for a line-based file), with the line or record it counted as skipped. Past the
        # display cap, it is the last problem counted and not shown.
        def the_cut(line: int | None, message: str) -> bool:
            return "cut off" in message and (info.lines is None or line in (None, info.lines))

        shown = next((p for p in reversed(info.problems) if the_cut(p.line, p.message)), None)
        cut: tuple[int | None, str] | None = None
        if shown is not None:
            info.problems.remove(shown)
            cut = (shown.line, shown.message)
        elif info.problems_not_shown and info.last_not_shown is not None and the_cut(*info.last_not_shown):
            info.problems_not_shown -= 1
            cut, info.last_not_shown = info.last_not_shown, None
        if cut is not None:
            info.skipped = max(0, info.skipped - 1)
            if info.lines is not None and cut[0] == info.lines:
                info.lines -= 1
        info.notes.append(f"its last record is being written (the file changed {max(0.0, age):.0f} s before this build): "
                          "read once it is whole")


def _changed_ago(path: Path, now: datetime) -> float | None:
    """Seconds from the file's last change to `now` (None: it cannot be looked at)."""
    try:
        return (now - datetime.fromtimestamp(path.stat().st_mtime, UTC)).total_seconds()
    except OSError:
        return None


def _at_work(campaign: Campaign, sources: dict, found: dict[str, tuple[Path, bytes]], now: datetime) -> None:
    """While the campaign runs, a run whose folder (for a source without one, the file that tells its status) has
    a file that changed less than WRITING_SECONDS before the build is at work: an end it has not logged yet (no
    exit record, W&B's exit hook not run, a last row cut short) does not tell that it was interrupted. Its source's
    such status is dropped, with a note on the file that gave it."""
    notes: dict[str, list[str]] = {}
    for facts in campaign.run_facts:
        if not facts.unended or facts.status is None:
            continue
        folder = getattr(sources.get(facts.run), "folder", None)
        prefix = None if folder is None else "" if folder in ("", ".") else folder.rstrip("/") + "/"
        ages = [age for rel, (path, _head) in found.items()
                if (rel.startswith(prefix) if prefix is not None else rel == facts.evidence.path)
                and (age := _changed_ago(path, now)) is not None]
        if not ages or min(ages) >= WRITING_SECONDS:
            continue
        notes.setdefault(facts.evidence.path, []).append(
            f"no end is logged yet and the run's files changed {max(0.0, min(ages)):.0f} s before this build: the run is at "
            f"work, not taken as {facts.status} ({facts.reason})")
        facts.status, facts.reason = None, None
    for info in campaign.inputs:
        info.notes += notes.get(info.path, [])


def _one_name_per_metric(campaign: Campaign) -> None:
    """One metric of one run logged by two loggers under two spellings (TensorBoard's train/loss, the
    Trainer's loss) is one metric: the rows of the file that spells it otherwise move to the run's own
    name, with a note on that file. Never within one file: a file that logs both names logs two metrics."""
    metrics = campaign.metrics
    if not len(metrics):
        return
    spelled = [c for c in metrics.columns if c not in METRIC_FRAME_COLUMNS and identity.canonical_metric(c) != c
               and identity.canonical_metric(c) in metrics.columns]
    if not spelled:
        return
    respelled: dict[tuple[str, str, str], list[str]] = {}  # (file, run, the files that name it) -> "a as b"
    runs = metrics["run"].to_numpy()
    paths = metrics["path"].astype(str).to_numpy()
    for column in spelled:
        name = identity.canonical_metric(column)
        other, own = metrics[column].notna().to_numpy(), metrics[name].notna().to_numpy()
        for run in sorted(set(runs[other]) & set(runs[own])):
            mine = runs == run
            moved, kept = other & mine, own & mine
            if set(paths[moved]) & set(paths[kept]):
                continue  # one file logs both: two metrics
            metrics[name] = metrics[name].where(~moved, metrics[column])
            metrics[column] = metrics[column].where(~moved, None)
            for path in sorted(set(paths[moved])):
                campaign.spellings.setdefault(path, {})[name] = column
                shown = sorted(set(paths[kept]))
                by = f"{shown[0]}{' and others' if len(shown) > 1 else ''}"
                respelled.setdefault((path, run, by), []).append(f"{column} as {name}")
    empty = [c for c in spelled if not metrics[c].notna().any()]
    campaign.metrics = metrics.drop(columns=empty)
    notes: dict[str, list[str]] = {}
    for (path, run, by), read_as in sorted(respelled.items()):
        notes.setdefault(path, []).append(f"the metrics of run {run} are read by the names used in {by}: "
                                          + ", ".join(read_as))
    for info in campaign.inputs:
        info.notes += notes.get(info.path, [])


def _set_apart(campaign: Campaign, containers: dict[str, str], sources: dict) -> None:
    """Sources that are not runs (an MLflow sweep's parent) leave the runs and are listed, with why."""
    if not containers:
        return
    campaign.run_facts = [f for f in campaign.run_facts if f.run not in containers]
    for key, reason in sorted(containers.items()):
        campaign.unlinked.append(UnlinkedSource(sources[key].evidence.path, reason))


def _same_values(a: dict[str, float], b: dict[str, float]) -> bool:
    """Two records' values agree to float32 precision (a value past float32's range is infinite there, as a
    float32 logger keeps it), NaN with NaN."""
    shared = set(a) & set(b)
    with np.errstate(over="ignore"):
        return bool(shared) and all(
            (math.isnan(a[k]) and math.isnan(b[k])) or np.float32(a[k]) == np.float32(b[k]) for k in shared)


def _one_per_evaluation(campaign: Campaign) -> None:
    """One evaluation that two loggers of a run recorded (trainer_state.json and MLflow, say) counts once:
    the one that cites a line first, with the time and duration the other holds."""
    kept: dict[tuple[str, int], list[Evaluation]] = {}
    out = []
    for evaluation in sorted(campaign.evaluations, key=lambda e: (e.run, e.step, e.evidence.line is None, e.evidence)):
        twins = kept.setdefault((evaluation.run, evaluation.step), [])
        twin = next((t for t in twins if _same_values(t.metrics, evaluation.metrics)), None)
        if twin is None:
            twins.append(evaluation)
            out.append(evaluation)
            continue
        twin.at = twin.at or evaluation.at
        twin.seconds = twin.seconds if twin.seconds is not None else evaluation.seconds
        twin.metrics = {**evaluation.metrics, **twin.metrics}
    campaign.evaluations = out


def _time_evaluations(campaign: Campaign) -> None:
    """An evaluation from a source that keeps no times (trainer_state.json) takes the clock time
    another source of the run (TensorBoard, MLflow) gives the same evaluation step."""
    untimed = [e for e in campaign.evaluations if e.at is None]
    metrics = campaign.metrics
    if not untimed or not len(metrics):
        return
    timed = metrics[(metrics["kind"] == "eval") & metrics["ts"].notna() & metrics["step"].notna()]
    if not len(timed):
        return
    first = timed.groupby(["run", "step"], sort=False)["ts"].min()
    for evaluation in untimed:
        at = first.get((evaluation.run, evaluation.step))
        if at is not None:
            evaluation.at = at.to_pydatetime()


# Where each kind of rare event is kept in the campaign model.
_EVENT_LISTS = {
    RunEvent: "run_events",
    Evaluation: "evaluations",
    CheckpointOp: "checkpoint_ops",
    ReloadTest: "reload_tests",
    LoggedStop: "stops",
    StepMark: "step_marks",
    LoggedDecision: "decisions",
    RunFacts: "run_facts",
    Checkpoint: "checkpoints",
    LogMessage: "messages",
    ManifestEntry: "manifest",
}


def _add_events(campaign: Campaign, events: list) -> None:
    for event in events:
        getattr(campaign, _EVENT_LISTS[type(event)]).append(event)


def _unread(campaign: Campaign, rel: str, message: str) -> None:
    """A file that is listed but not read, with the reason."""
    info = InputFile(path=rel, format=None)
    info.problem(None, message)
    campaign.inputs.append(info)


def _run(campaign: Campaign, run_id: str) -> Run:
    if run_id not in campaign.runs:
        campaign.runs[run_id] = Run(id=run_id)
    return campaign.runs[run_id]


def _source(run: Run, path: str) -> None:
    if path not in run.sources:
        run.sources.append(path)


def _build_runs(campaign: Campaign) -> None:
    """Merge what every file says about each run: start, end, config, step range, sources."""
    for event in sorted(campaign.run_events, key=lambda e: (e.at, e.evidence)):
        run = _run(campaign, event.run)
        _source(run, event.evidence.path)
        if event.kind == "start":
            if event.config is not None:
                new_id = config_id(event.config)
                if run.config_id is not None and run.config_id != new_id:
                    message = (f"run '{run.id}' started again with a different configuration "
                               f"({run.config_id} then {new_id}); a changed configuration needs a new run id")
                    campaign.problems.append(Problem.at(event.evidence, message, WarningCode.CONFIG_CHANGED))
                else:
                    run.config, run.config_id = event.config, new_id
            if run.started_at is None:
                run.started_at, run.start_evidence = event.at, event.evidence
            run.variant = run.variant or event.variant
            run.resumes = run.resumes or event.resumes
            if event.step is not None and (run.first_step is None or event.step < run.first_step):
                run.first_step = event.step
        else:
            run.ended_at, run.end_evidence = event.at, event.evidence
            run.end_status = event.status or "completed"
            if event.step is not None:
                run.last_step = max(run.last_step or event.step, event.step)

    for facts in sorted(campaign.run_facts, key=lambda f: (f.run, f.format, f.evidence)):
        _merge_facts(campaign, _run(campaign, facts.run), facts)
    _attribute_benchmarks(campaign)

    others = [*campaign.evaluations, *(op for op in campaign.checkpoint_ops if op.run is not None), *campaign.stops,
              *(t for t in campaign.reload_tests if t.run is not None)]
    for other in others:
        _source(_run(campaign, str(other.run)), other.evidence.path)
    for item in [*campaign.checkpoints, *(m for m in campaign.messages if m.run is not None)]:
        _source(_run(campaign, item.run), item.evidence.path)

    metrics = campaign.metrics
    if len(metrics):
        grouped = metrics.groupby("run", sort=True)
        spans = grouped.agg(last_step=("step", "max"), first_ts=("ts", "min"), last_ts=("ts", "max"))
        # A summary row (a run's final figures) is at its last step: it tells nothing of its first.
        firsts = metrics[metrics["kind"] != "summary"].groupby("run", sort=True)["step"].min()
        paths = grouped["path"].unique()
        timed = metrics[metrics["ts"].notna()]
        first_paths = timed.loc[timed.groupby("run", sort=True)["ts"].idxmin(), ["run", "path"]].set_index("run")["path"] \
            if len(timed) else pd.Series(dtype=object)
        for run_id, row in spans.iterrows():
            run = _run(campaign, str(run_id))
            for path in sorted(paths[run_id]):
                _source(run, path)
            first = firsts.get(run_id)
            if first is not None and not pd.isna(first):
                run.first_step = int(first) if run.first_step is None else min(run.first_step, int(first))
            if not pd.isna(row.last_step):
                run.last_step = int(row.last_step) if run.last_step is None else max(run.last_step, int(row.last_step))
            if pd.isna(row.first_ts):  # a format without times (trainer_state.json, metrics.csv)
                continue
            first_ts = row.first_ts.to_pydatetime()
            if run.started_at is None or first_ts < run.started_at:
                # A row logged before the start a source records: an earlier process of the same run.
                run.started_at, run.start_evidence = first_ts, Evidence(str(first_paths[run_id]))
            last_seen = row.last_ts.to_pydatetime()
            if run.ended_at is None:
                run.last_seen_at = max(run.last_seen_at or last_seen, last_seen)

    measured_apart = {info.path for info in campaign.inputs if info.format == bench.FORMAT}
    for other in others:
        if other.evidence.path in measured_apart:  # a benchmark of the run's checkpoint, not the run at work
            continue
        run = campaign.runs[str(other.run)]
        if run.ended_at is None and other.at is not None:
            run.last_seen_at = max(run.last_seen_at or other.at, other.at)
    formats = {info.path: info.format for info in campaign.inputs}
    for run in campaign.runs.values():
        run.formats = sorted({formats[p] for p in run.sources if formats.get(p)})
    for run in campaign.runs.values():
        end = run.ended_at or run.last_seen_at
        if run.started_at is not None and end is not None and end < run.started_at:
            campaign.problems.append(Problem.at(
                run.end_evidence or run.start_evidence or Evidence(run.sources[0]),
                f"run '{run.id}' ends ({end.isoformat()}) before it starts ({run.started_at.isoformat()}); its time is not counted",
                WarningCode.TIME_REVERSED))
    campaign.runs = dict(sorted(campaign.runs.items()))


def _attribute_benchmarks(campaign: Campaign) -> None:
    """A benchmark record that names no run belongs to the run whose checkpoint its path names."""
    owners = [(c.path, c.run) for c in campaign.checkpoints]
    owners += [(op.path, op.run) for op in campaign.checkpoint_ops if op.op == "save" and op.path and op.run]
    for item in [*campaign.checkpoint_ops, *campaign.reload_tests]:
        if item.run is not None or not item.path:
            continue
        runs = sorted({run for path, run in owners if same_path(item.path, path)})
        if len(runs) == 1:
            item.run = runs[0]
        elif isinstance(item, CheckpointOp):  # a reload test may stay unattributed: it is matched by path
            why = f"several runs ({', '.join(runs)})" if runs else "no checkpoint or save in the logs"
            message = f"checkpoint '{item.path}' matches {why}: its {item.op} is not counted for any run; give the record a 'run'"
            campaign.problems.append(Problem.at(item.evidence, message, WarningCode.UNATTRIBUTED))


def _merge_facts(campaign: Campaign, run: Run, facts: RunFacts) -> None:
    """What a source says about a whole run joins what the others said; each keeps its source."""
    run.facts.append(facts)
    _source(run, facts.evidence.path)
    if facts.started_at is not None and (run.started_at is None or facts.started_at < run.started_at):
        run.started_at, run.start_evidence = facts.started_at, facts.evidence
    if facts.ended_at is not None and (run.ended_at is None or facts.ended_at > run.ended_at):
        run.ended_at, run.end_evidence = facts.ended_at, facts.evidence
    if facts.last_seen_at is not None:
        run.last_seen_at = max(run.last_seen_at or facts.last_seen_at, facts.last_seen_at)
    if facts.first_step is not None:
        run.first_step = facts.first_step if run.first_step is None else min(run.first_step, facts.first_step)
    if facts.last_step is not None:
        run.last_step = facts.last_step if run.last_step is None else max(run.last_step, facts.last_step)
    run.resumes = run.resumes or facts.resumes
    if facts.config:
        merged = {**(run.config or {}), **facts.config}
        run.config, run.config_id = merged, config_id(merged)
