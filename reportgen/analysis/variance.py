"""Variance explained (R16): a step's actual minus planned hours, split into causes with evidence.

For each schedule step that was measured, the runs that worked in it (its `runs` patterns, or
the runs that started inside its span) give the causes, each counted inside the step's span:

- start-up: a run's start to its first logged step;
- evaluation: the seconds its evaluations took;
- checkpoints: the seconds of its saves, transfers, restores and reload tests;
- writing outputs: its last logged step to its end;
- lost work: an interrupted run's last checkpoint to its crash (all of it when nothing was saved);
- downtime: a crash to the next run's start;
- waiting: time in the step when no run was at work (before the first, after the last, gaps);
- long inputs: in stretches of training where the logs show longer inputs (more tokens a step
  than the run's median, or a long-input or truncation message), the time beyond the run's
  median pace;
- throughput: when the step states its planned steps per second, the steps trained times the
  measured seconds a step (evaluations, checkpoints and long-input stretches taken out) less the
  planned ones. It is negative when training ran faster than planned;
- stopped early: a stopped run whose config names its total steps did not run the rest, which
  saves their time (negative): at the planned steps per second, else at the measured pace.

What no cause covers is *unexplained*: planned + causes + unexplained = actual, always.
Between steps, the stretches no measured step covers are waiting too, for the campaign as a whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

import numpy as np
import pandas as pd

from reportgen.analysis.checkpoints import RunCheckpoint
from reportgen.analysis.runmap import Mapper, one_by_one
from reportgen.analysis.runs import told, total_steps
from reportgen.analysis.schedule import (
    ScheduleReport,
    StepReport,
    hours_between,
    run_evidence,
    runs_matching,
)
from reportgen.analysis.status import RunStatus
from reportgen.model import (
    Campaign,
    CheckpointOp,
    Evaluation,
    EventKind,
    Evidence,
    MessageKind,
    ReloadTest,
    Run,
    Status,
    by_run,
)
from reportgen.numbers import figure
from reportgen.plan.schema import ScheduleStep
from reportgen.recall import Recall, digest, each


class CauseName(StrEnum):
    """The causes a variance is split into (the list above), in the order they are shown."""

    START_UP = "start-up"
    EVALUATION = "evaluation"
    CHECKPOINTS = "checkpoints"
    WRITING_OUTPUTS = "writing outputs"
    LOST_WORK = "lost work"
    DOWNTIME = "downtime"
    WAITING = "idle within the step"  # no run of the step was logging
    LONG_INPUTS = "long inputs"
    THROUGHPUT = "throughput"
    STOPPED_EARLY = "stopped early"
    BETWEEN_STEPS = "waiting between steps"  # the campaign's only: no measured step in progress


CAUSES = tuple(c for c in CauseName if c is not CauseName.BETWEEN_STEPS)  # a step's causes
INTERRUPTION_CAUSES = (CauseName.LOST_WORK, CauseName.DOWNTIME)
# Metrics that say how long a step's inputs were: per step, or (num_input_tokens_seen) a running total.
LENGTH_METRICS = ("tokens", "input_tokens", "seq_len", "sequence_length", "input_length", "max_seq_len")
CUMULATIVE_LENGTH_METRICS = ("num_input_tokens_seen",)
LONG_INPUT_MESSAGES = (MessageKind.TOO_LONG, MessageKind.TRUNCATION)
LONG_FACTOR = 1.25  # tokens a step this far above the run's median mark a stretch of long inputs


@dataclass
class Cause:
    cause: CauseName
    hours: float
    evidence: list[Evidence] = field(default_factory=list)
    note: str | None = None


@dataclass
class Variance:
    """Planned to actual hours, split into causes; what no cause covers is unexplained."""

    planned_hours: float
    actual_hours: float
    causes: list[Cause]

    @property
    def unexplained_hours(self) -> float:
        return self.actual_hours - self.planned_hours - sum(c.hours for c in self.causes)


@dataclass
class StepVariance(Variance):
    step: str = ""


def _clip(start: datetime, end: datetime, lo: datetime, hi: datetime) -> float:
    """Hours of [start, end] inside [lo, hi]."""
    a, b = max(start, lo), min(end, hi)
    return hours_between(a, b) if b > a else 0.0


@dataclass(frozen=True)
class Row:
    """A timed metric row: when, at which step, and where it was logged."""

    at: datetime
    step: int
    evidence: Evidence


@dataclass(frozen=True)
class WallPace:
    """A run's first and last timed metric rows and its seconds per step between them."""

    first: Row
    last: Row
    seconds_per_step: float | None


def wall_pace(frame: pd.DataFrame | None) -> WallPace | None:
    """A run's wall-clock pace: from its first timed row to its last, evaluations, checkpoints and all."""
    timed = _timed_rows(frame)
    if timed is None:
        return None
    at, rows = timed
    return _pace(frame, rows[np.argmin(at[rows])], rows[np.argmax(at[rows])])  # the first of equal times, as idxmin


# The recent part of a run still going: the last quarter of the time it has logged over. Its pace counts when it
# is slower than the whole run's by more than RECENT_MARGIN (a pace that wavers by a few % changes no projection).
RECENT_SHARE = 0.25
RECENT_MARGIN = 1.1


def stretch_pace(frame: pd.DataFrame | None) -> WallPace | None:
    """A run's wall-clock pace over its latest stretch, evaluations and checkpoints included: from the first timed
    row after its steps last went back (a resume from an earlier checkpoint under the same name: the time it was
    down and the steps it did again are no pace of its) to its last row. The whole run's (wall_pace) when its steps
    never went back, or when the stretch since holds fewer than two timed steps."""
    latest = _latest_stretch(frame)
    if latest is None:
        return None
    at, steps, stretch, whole = latest
    if whole or len(np.unique(steps[stretch])) < 2:
        return wall_pace(frame)
    return _pace(frame, stretch[0], stretch[-1])


def _latest_stretch(frame: pd.DataFrame | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool] | None:
    """A run's rows' times and steps, the positions of its timed rows since its steps last went back, in time
    order, and whether those are all of them (its steps never went back); None when no row has a time and a step."""
    timed = _timed_rows(frame)
    if timed is None:
        return None
    at, rows = timed
    steps = frame["step"].to_numpy(dtype="float64", na_value=np.nan)
    rows = rows[np.argsort(at[rows], kind="stable")]  # in time order
    back = np.flatnonzero(np.diff(steps[rows]) < 0)
    return (at, steps, rows[back[-1] + 1:], False) if len(back) else (at, steps, rows, True)


def recent_pace(frame: pd.DataFrame | None) -> WallPace | None:
    """A run's wall-clock pace over the last RECENT_SHARE of the time it has logged over since its steps last went
    back (a resume from an earlier checkpoint under the same name: the rows before it are of another stretch),
    evaluations and checkpoints in it included: from the first timed row of that part with an earlier step to its
    last row. None when that part holds no earlier step (one long gap is no pace) or without two timed steps."""
    latest = _latest_stretch(frame)
    if latest is None:
        return None
    at, steps, rows, _whole = latest
    last = rows[-1]
    since = at[last] - (at[last] - at[rows[0]]) * RECENT_SHARE
    inside = rows[(at[rows] >= since) & (steps[rows] < steps[last])]
    return _pace(frame, inside[0], last) if len(inside) else None


def _timed_rows(frame: pd.DataFrame | None) -> tuple[np.ndarray, np.ndarray] | None:
    """The times of a run's rows and the positions of those with a time and a step; None when none has both."""
    if frame is None or not len(frame):
        return None
    at = frame["ts"].to_numpy(dtype="datetime64[ns]")
    rows = np.flatnonzero(~np.isnat(at) & frame["step"].notna().to_numpy())
    return (at, rows) if len(rows) else None


def _pace(frame: pd.DataFrame, first: int, last: int) -> WallPace:
    """The pace from the row at position `first` to the row at `last`."""
    def where(row: int) -> Row:  # read cell by cell: a row of a frame of many types is slow to take whole
        line = frame["line"].iat[row]
        return Row(frame["ts"].iat[row].to_pydatetime(), int(frame["step"].iat[row]),
                    Evidence(str(frame["path"].iat[row]), None if pd.isna(line) else int(line)))

    a, b = where(first), where(last)
    rate = (b.at - a.at).total_seconds() / (b.step - a.step) if b.step > a.step else None
    return WallPace(a, b, rate)


@dataclass(frozen=True)
class RunTiming:
    """What a run's training pace is measured from besides its rows (training_pace reads nothing else)."""

    run: str
    until: datetime | None  # an interrupted run's last save before the crash: the rest is lost work
    timed: tuple[tuple[datetime, float], ...]  # its evaluations, checkpoint operations and reload tests: (end, seconds)
    long_inputs: tuple[tuple[int, Evidence], ...]  # its messages of inputs too long (step, evidence), in step order


def run_timing(run: Run, campaign: Campaign, status: str, checkpoints: dict[str, list[RunCheckpoint]]) -> RunTiming:
    crash = run.last_seen_at or run.ended_at or run.started_at if status == Status.INTERRUPTED else None
    messages = sorted((m.step, m.evidence) for m in campaign.of_run("messages").get(run.id, [])
                      if m.kind in LONG_INPUT_MESSAGES and m.step is not None)
    return RunTiming(run.id, last_save_before(run, crash, checkpoints) if crash is not None else None,
                     tuple(campaign.timed_by_run().get(run.id, [])), tuple(messages))


def training_paces(campaign: Campaign, work: list[tuple[RunTiming, datetime, datetime]], map_runs: Mapper = one_by_one,
                   recall: Recall | None = None) -> list[TrainingPace | None]:
    """Each run's training pace inside [lo, hi] for each (its timing, lo, hi) of `work`, through `map_runs`;
    with `recall`, the pace of a run whose rows and timing are the same as at the last build is that build's."""
    frames = campaign.frames_by_run()

    def make(todo: list[tuple[RunTiming, datetime, datetime]]) -> list[TrainingPace | None]:
        return map_runs(lambda item: training_pace(frames.get(item[0].run), *item), todo)

    return each(recall, "training pace", work, lambda item: digest(campaign.run_digests().get(item[0].run), item), make)


def wall_paces(campaign: Campaign, run_ids: list[str], map_runs: Mapper = one_by_one,
               recall: Recall | None = None) -> list[WallPace | None]:
    """Each run's wall-clock pace (wall_pace), through `map_runs`; with `recall`, see training_paces."""
    frames = campaign.frames_by_run()
    return each(recall, "wall pace", run_ids, lambda run_id: digest(campaign.run_digests().get(run_id)),
                lambda todo: map_runs(lambda run_id: wall_pace(frames.get(run_id)), todo))


@dataclass
class _Step:
    """What the runs of one measured step add up to while their causes are counted."""

    lo: datetime
    hi: datetime
    plan: ScheduleStep  # the plan's step
    totals: dict[str, Cause] = field(default_factory=lambda: {name: Cause(name, 0.0) for name in CAUSES})
    busy: list[tuple[datetime, datetime]] = field(default_factory=list)
    trained_steps: int = 0  # throughput: the steps measured and their seconds
    trained_seconds: float = 0.0

    @property
    def steps_per_second(self) -> float | None:
        return self.plan.steps_per_second

    def add(self, name: str, hours: float, *evidence: Evidence | None) -> None:
        _add(self.totals, name, hours, *evidence)

    def clip(self, start: datetime, end: datetime) -> float:
        return _clip(start, end, self.lo, self.hi)


def explain(schedule: ScheduleReport, campaign: Campaign, statuses: dict[str, RunStatus],
            checkpoints: dict[str, list[RunCheckpoint]], map_runs: Mapper = one_by_one,
            recall: Recall | None = None) -> dict[str, StepVariance]:
    """Every measured step's variance split into causes; steps with no actual time are left out. Each
    run's paces in its step are measured first, through `map_runs` (shared among workers by a build);
    `recall`: see training_paces."""
    starts = start_steps(campaign)
    evaluations, operations, tests = by_run(campaign.evaluations), by_run(campaign.checkpoint_ops), by_run(campaign.reload_tests)
    measured = [item for item in schedule.steps
                if item.actual.hours is not None and item.actual.start is not None and item.actual.end is not None]
    step_runs = {item.step.id: _step_runs(item, campaign) for item in measured}

    work = [(run, item.actual.start, item.actual.end) for item in measured for run, _started in step_runs[item.step.id]]
    ids = sorted({run.id for run, _lo, _hi in work})
    walls = dict(zip(ids, wall_paces(campaign, ids, map_runs, recall), strict=True))
    runs = {run.id: run for run, _lo, _hi in work}  # a run in several steps is timed once
    timings = {run_id: run_timing(run, campaign, statuses[run_id].status, checkpoints) for run_id, run in runs.items()}
    trained = training_paces(campaign, [(timings[run.id], lo, hi) for run, lo, hi in work], map_runs, recall)
    measured_paces = {(run.id, lo, hi): (walls[run.id], pace) for (run, lo, hi), pace in zip(work, trained, strict=True)}
    out: dict[str, StepVariance] = {}
    for item in measured:
        span = item.actual
        lo, hi = span.start, span.end
        timed_runs = step_runs[item.step.id]
        step = _Step(lo, hi, item.step)
        for index, (run, started) in enumerate(timed_runs):
            following = timed_runs[index + 1] if index + 1 < len(timed_runs) else None
            timed: list[Evaluation | CheckpointOp | ReloadTest] = [
                *evaluations.get(run.id, []), *operations.get(run.id, []), *tests.get(run.id, [])]
            _run_causes(step, run, started, following, measured_paces[(run.id, lo, hi)], starts.get(run.id, 0), timed,
                        statuses[run.id], checkpoints)
        if timed_runs:
            step.add(CauseName.WAITING, _idle(lo, hi, step.busy), *span.evidence[:2])
        if step.trained_steps:
            measured = figure(step.trained_seconds / step.trained_steps)
            step.totals[CauseName.THROUGHPUT].note = (
                f"{measured} s a step measured over {step.trained_steps:,} steps (evaluations, checkpoints "
                f"and long-input stretches taken out) against the planned {figure(1.0 / (step.steps_per_second or 1.0))} s")
        causes = [c for c in step.totals.values() if c.hours > 0 or (c.cause == CauseName.THROUGHPUT and step.trained_steps)
                  or (c.cause == CauseName.STOPPED_EARLY and c.hours < 0)]
        for cause in causes:
            cause.evidence = Evidence.first(cause.evidence, 20)
        out[item.step.id] = StepVariance(item.step.hours, span.hours, causes, step=item.step.id)
    return out


def _step_runs(item: StepReport, campaign: Campaign) -> list[tuple[Run, datetime]]:
    """The runs of a measured step, with when each started, in start order: those it names, else those
    that started inside its actual span."""
    lo, hi = item.actual.start, item.actual.end
    runs = runs_matching(item.step.runs, campaign.runs) if item.step.runs else []
    if not runs:
        runs = [r for r in campaign.runs.values() if r.started_at is not None and lo <= r.started_at < hi]
    return sorted(((r, r.started_at) for r in runs if r.started_at is not None), key=lambda rs: (rs[1], rs[0].id))


def _run_causes(step: _Step, run: Run, started: datetime, following: tuple[Run, datetime] | None,
                measured: tuple[WallPace | None, TrainingPace | None], begins: int,
                timed: list[Evaluation | CheckpointOp | ReloadTest], status: RunStatus,
                checkpoints: dict[str, list[RunCheckpoint]]) -> None:
    """One run's share of its step's causes; `following` is the next run in the step and when it started;
    `measured` its pace over all its rows and its training pace inside the step."""
    end = run.ended_at or run.last_seen_at or started
    step.busy.append((started, end))
    pace, training = measured
    if pace is not None and (pace.seconds_per_step is not None or pace.first.step <= begins + 1):
        # The first logged step came after some steps of work; the time before those is start-up.
        # Without a pace (one timed row) that split is unknown, and nothing is counted.
        worked = max(0, pace.first.step - begins) * (pace.seconds_per_step or 0.0)
        ready = pace.first.at - timedelta(seconds=worked)
        step.add(CauseName.START_UP, step.clip(started, ready), run.start_evidence, pace.first.evidence)
    for record in timed:
        if record.seconds and record.at is not None and step.lo <= record.at <= step.hi:
            cause = CauseName.EVALUATION if isinstance(record, Evaluation) else CauseName.CHECKPOINTS
            step.add(cause, _ended(record.seconds, record.at, step.lo), record.evidence)
    lost = lost_work(run, status, checkpoints)
    if lost is not None:
        saved, crash = lost
        step.add(CauseName.LOST_WORK, step.clip(saved, crash),
                 *(status.evidence or run_evidence(run)), *_save_evidence(run, crash, checkpoints))
        if following is not None and following[1] > crash:
            step.add(CauseName.DOWNTIME, step.clip(crash, following[1]),
                     *([following[0].start_evidence] if following[0].start_evidence else run_evidence(following[0])))
            step.busy.append((crash, following[1]))  # counted as downtime, not waiting
    elif run.ended_at is not None and pace is not None:
        # Steps after the last logged one (to the run's last step) were work, not output writing.
        remaining = ((run.last_step or pace.last.step) - pace.last.step) * (pace.seconds_per_step or 0.0)
        done = pace.last.at + timedelta(seconds=max(0.0, remaining))
        step.add(CauseName.WRITING_OUTPUTS, step.clip(done, run.ended_at), pace.last.evidence, run.end_evidence)
    rate = step.steps_per_second
    if training is not None:
        step.add(CauseName.LONG_INPUTS, training.long_seconds / 3600.0, *training.long_evidence)
        if rate is not None:
            throughput = step.totals[CauseName.THROUGHPUT]
            throughput.hours += (training.seconds - training.long_seconds - training.steps / rate) / 3600.0
            throughput.evidence += training.evidence
            step.trained_steps += training.steps
            step.trained_seconds += training.seconds - training.long_seconds
    total = total_steps(run, step.plan)
    if status.status == Status.STOPPED and total is not None and run.last_step is not None and total[0] > run.last_step:
        # A stop saves the steps it did not run: at the planned pace when the step states one, else the measured.
        per_step = 1.0 / rate if rate else (training.seconds_per_step if training is not None else None)
        if per_step is not None:
            stopped = step.totals[CauseName.STOPPED_EARLY]
            stopped.hours -= (total[0] - run.last_step) * per_step / 3600.0
            stopped.evidence += status.evidence or run_evidence(run)
            stopped.note = ((stopped.note + "; ") if stopped.note else "") + (
                f"{run.id} stopped at step {run.last_step:,} of {total[0]:,} ({told(total[1])}): "
                f"{total[0] - run.last_step:,} steps at {figure(per_step)} s "
                f"({'planned' if rate else 'measured'}) not run")


def campaign_variance(schedule: ScheduleReport, steps: dict[str, StepVariance], gaps: list[Gap]) -> Variance | None:
    """The whole campaign, planned span to actual span: each step's causes summed, the waiting between
    steps, and the rest unexplained (steps side by side, steps never measured, each step's own rest)."""
    if schedule.actual_hours is None:
        return None
    totals: dict[str, Cause] = {}
    for variance in steps.values():
        for cause in variance.causes:
            total = totals.setdefault(cause.cause, Cause(cause.cause, 0.0))
            total.hours += cause.hours
            total.evidence += cause.evidence
    if gaps:
        totals[CauseName.BETWEEN_STEPS] = Cause(CauseName.BETWEEN_STEPS, sum(g.hours for g in gaps), [e for g in gaps for e in g.evidence])
    causes = [c for name in (*CAUSES, CauseName.BETWEEN_STEPS) if (c := totals.get(name)) is not None]
    for cause in causes:
        cause.evidence = Evidence.first(cause.evidence, 20)
    return Variance(schedule.planned_hours, schedule.actual_hours, causes)


@dataclass
class Gap:
    """A stretch of the campaign in which no measured step was in progress: waiting for a resource or a person."""

    after: str
    before: str
    start: datetime
    end: datetime
    evidence: list[Evidence]

    @property
    def hours(self) -> float:
        return hours_between(self.start, self.end)


def between_steps(schedule: ScheduleReport) -> list[Gap]:
    """Waiting between steps: the gaps in the actual span that no measured step covers."""
    spans = sorted(((i.actual.start, i.actual.end, i) for i in schedule.steps
                    if i.actual.hours is not None and i.actual.start is not None and i.actual.end is not None),
                   key=lambda span: (span[0], span[2].step.id))
    gaps: list[Gap] = []
    reach: tuple[datetime, StepReport] | None = None
    for start, end, item in spans:
        if reach is not None and start > reach[0]:
            before = reach[1]
            evidence = [*before.actual.evidence[-1:], *item.actual.evidence[:1]]
            gaps.append(Gap(before.step.id, item.step.id, reach[0], start, evidence))
        if reach is None or end > reach[0]:
            reach = (end, item)
    return gaps


@dataclass(frozen=True)
class VarianceReport:
    """The variance section: each step's planned to actual hours split into causes, the waiting
    between steps, and the whole campaign's (planned span + explained + unexplained = actual span)."""

    steps: dict[str, StepVariance]  # measured steps only
    gaps: list[Gap]
    total: Variance | None  # None until the campaign's actual span is known
    unexplained: dict[str, float | None]  # every step: what no cause covers (a step not measured: None)

    @property
    def between_steps_hours(self) -> float:
        return sum(g.hours for g in self.gaps)

    def causes(self, step_id: str) -> list[Cause]:
        found = self.steps.get(step_id)
        return found.causes if found is not None else []


def variance_report(schedule: ScheduleReport, campaign: Campaign, statuses: dict[str, RunStatus],
                    checkpoints: dict[str, list[RunCheckpoint]], map_runs: Mapper = one_by_one,
                    recall: Recall | None = None) -> VarianceReport:
    steps = explain(schedule, campaign, statuses, checkpoints, map_runs, recall)
    gaps = between_steps(schedule)
    unexplained = {item.step.id: steps[item.step.id].unexplained_hours if item.step.id in steps else item.variance_hours
                   for item in schedule.steps}
    return VarianceReport(steps, gaps, campaign_variance(schedule, steps, gaps), unexplained)


def start_steps(campaign: Campaign) -> dict[str, int]:
    """The step each run logged at its first start (a resumed run starts past 0); runs that logged none are left out."""
    out: dict[str, int] = {}
    for event in sorted(campaign.run_events, key=lambda e: (e.at, e.evidence)):
        if event.kind == EventKind.START and event.step is not None:
            out.setdefault(event.run, event.step)
    return out


def lost_work(run: Run, status: RunStatus, checkpoints: dict[str, list[RunCheckpoint]]) -> tuple[datetime, datetime] | None:
    """The work an interrupted run lost (R11): from its last save (else its start) to its crash, the
    last thing it logged; None for a run that was not interrupted or has no time at all."""
    if status.status != Status.INTERRUPTED:
        return None
    crash = run.last_seen_at or run.ended_at or run.started_at
    if crash is None:
        return None
    return last_save_before(run, crash, checkpoints), crash


def last_save_before(run: Run, crash: datetime, checkpoints: dict[str, list[RunCheckpoint]]) -> datetime:
    """When the work an interrupted run lost began: its last checkpoint before the crash (a save's
    logged time, or the time any source gives that checkpoint's step), else its start."""
    saved = [c.at for c in checkpoints.get(run.id, []) if c.at is not None and c.at <= crash]
    return max(saved, default=run.started_at or crash)


def _save_evidence(run: Run, crash: datetime, checkpoints: dict[str, list[RunCheckpoint]]) -> list[Evidence]:
    """The record that times the last checkpoint before the crash, when the checkpoint itself keeps no time."""
    saved = [c for c in checkpoints.get(run.id, []) if c.at is not None and c.at <= crash]
    last = max(saved, key=lambda c: c.at or crash, default=None)
    return [last.timed_by] if last is not None and last.timed_by is not None else []


@dataclass
class TrainingPace:
    """A run's training inside a step: steps, seconds with evaluations and checkpoints taken out,
    and the part of those seconds beyond the median pace in stretches of long inputs."""

    steps: int
    seconds: float
    long_seconds: float
    evidence: list[Evidence]
    long_evidence: list[Evidence]

    @property
    def seconds_per_step(self) -> float:
        return self.seconds / self.steps


def _row_evidence(path: object, line: object) -> Evidence:
    return Evidence(str(path), None if pd.isna(line) else int(line))  # type: ignore[call-overload]


def _stretch_of(steps: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """For each step in `wanted`, the stretch (steps[i], steps[i + 1]] holding it; -1 outside."""
    index = np.searchsorted(steps, wanted, side="left") - 1
    return np.where((index >= 0) & (index < len(steps) - 1), index, -1)


@dataclass(frozen=True)
class _Points:
    """A run's timed rows inside a window, the last of each step, in step order, as arrays: steps,
    times (ns), file and line of each, and the length metrics a long stretch is told by (their rows,
    taken whole so that a value logged as NaN stays apart from none)."""

    steps: np.ndarray
    ts: np.ndarray
    paths: np.ndarray
    lines: np.ndarray
    lengths: dict[str, pd.Series]


def _last_of_each_step(frame: pd.DataFrame, lo: datetime, hi: datetime) -> _Points | None:
    """The timed rows inside [lo, hi], the last (by time, then line) of each step; None with fewer than
    two timed rows. Sorted as arrays: a run of millions of rows is not sorted as a frame, and a run of
    a thousand is not copied as one."""
    at = frame["ts"].to_numpy(dtype="datetime64[ns]")
    steps = frame["step"].to_numpy(dtype="float64", na_value=np.nan)
    ns = at.astype(np.int64)
    rows = np.flatnonzero(~np.isnat(at) & ~np.isnan(steps) & (ns >= pd.Timestamp(lo).value) & (ns <= pd.Timestamp(hi).value))
    if len(rows) < 2:
        return None
    lines = frame["line"].to_numpy()
    order = np.lexsort((lines[rows], ns[rows], steps[rows]))  # by step, then time, then line
    ordered = steps[rows][order]
    kept = rows[order[np.append(ordered[1:] != ordered[:-1], True)]]
    lengths = {name: frame[name].iloc[kept] for name in (*CUMULATIVE_LENGTH_METRICS, *LENGTH_METRICS) if name in frame.columns}
    return _Points(steps[kept].astype(np.int64), ns[kept], frame["path"].to_numpy()[kept], lines[kept], lengths)


def training_pace(frame: pd.DataFrame | None, timing: RunTiming, lo: datetime, hi: datetime) -> TrainingPace | None:
    """Training pace from a run's timed rows inside [lo, hi] (an interrupted run's only to its last save):
    one point a step (its last time).

    The training is cut into stretches between consecutive points; each stretch's seconds lose
    the evaluations, checkpoint operations and reload tests that ended in it.
    """
    if frame is not None and timing.until is not None:
        frame = frame[frame["ts"].notna() & (frame["ts"] <= timing.until)]
    if frame is None or not len(frame):
        return None
    points = _last_of_each_step(frame, lo, hi)
    if points is None or len(points.steps) < 2:
        return None
    steps, ts = points.steps, points.ts
    at = np.array([pd.Timestamp(a).value for a, _ in timing.timed], dtype=np.int64)
    seconds_taken = np.array([sec for _, sec in timing.timed], dtype=float)
    overhead = np.zeros(len(steps) - 1)
    if len(at):
        holder = np.searchsorted(ts, at, side="left") - 1  # stretch (ts[i], ts[i + 1]] the operation ended in
        inside = (holder >= 0) & (holder < len(overhead))
        np.add.at(overhead, holder[inside], seconds_taken[inside])
    step_counts = np.diff(steps)
    seconds = np.maximum(0.0, np.diff(ts) / 1e9 - overhead)
    valid = step_counts > 0
    if not valid.any():
        return None
    pace = seconds[valid] / step_counts[valid]
    typical = float(np.median(pace))
    tokens = _tokens_per_step(points, steps)
    longer = np.zeros(len(seconds), dtype=bool)
    if np.isfinite(tokens).any():
        longer = np.nan_to_num(tokens, nan=-np.inf) > LONG_FACTOR * float(np.nanmedian(tokens))
    messages = timing.long_inputs
    said = _stretch_of(steps, np.array([step for step, _ in messages], dtype=np.int64))
    hit = np.zeros(len(seconds), dtype=bool)
    hit[said[said >= 0]] = True
    excess = seconds - step_counts * typical
    flagged = np.flatnonzero(valid & (longer | hit) & (excess > 0))
    paths, lines = points.paths, points.lines
    shown = set(flagged[:50].tolist())
    long_evidence = [evidence for (_, evidence), where in zip(messages, said, strict=True) if where in shown]
    long_evidence += [_row_evidence(paths[i + 1], lines[i + 1]) for i in flagged[:20]]
    return TrainingPace(
        steps=int(step_counts[valid].sum()),
        seconds=float(seconds[valid].sum()),
        long_seconds=float(excess[flagged].sum()),
        evidence=[_row_evidence(paths[0], lines[0]), _row_evidence(paths[-1], lines[-1])],
        long_evidence=long_evidence,
    )


def _tokens_per_step(points: _Points, steps: np.ndarray) -> np.ndarray:
    """Tokens a step in each stretch between points (NaN where unknown): from a running total
    (the stretch's difference over its steps) or a per-step length logged at the stretch's end."""
    gaps = np.diff(steps).astype(float)
    for name in CUMULATIVE_LENGTH_METRICS:
        if name in points.lengths and points.lengths[name].notna().sum() >= 2:
            seen = pd.to_numeric(points.lengths[name], errors="coerce").to_numpy(dtype=float)
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(gaps > 0, np.diff(seen) / gaps, np.nan)
    for name in LENGTH_METRICS:
        if name in points.lengths and points.lengths[name].notna().any():
            return pd.to_numeric(points.lengths[name], errors="coerce").to_numpy(dtype=float)[1:]
    return np.full(len(gaps), np.nan)


def _ended(seconds: float, at: datetime, lo: datetime) -> float:
    """Hours of an operation that took `seconds` and ended at `at`, counted from the step's start only."""
    return min(seconds / 3600.0, hours_between(lo, at))


def _add(totals: dict[str, Cause], name: str, hours: float, *evidence: Evidence | None) -> None:
    if hours > 0:
        totals[name].hours += hours
        totals[name].evidence += [e for e in evidence if e is not None]


def _idle(lo: datetime, hi: datetime, busy: list[tuple[datetime, datetime]]) -> float:
    """Hours of [lo, hi] not covered by any busy interval."""
    covered, cursor = 0.0, lo
    for start, end in sorted(busy):
        start, end = max(start, cursor), min(end, hi)
        if end > start:
            covered += hours_between(start, end)
            cursor = end
    return max(0.0, hours_between(lo, hi) - covered)

