"""The lot clock (R6, R8 during the lot): at the build's "now", the time left in the rented window and,
for every step not yet done, when it will end: a running training run from the steps it has left at its
measured pace, any other step from the plan's hours; the steps still to come placed after their
dependencies and one at a time on each GPU, as the plan's timeline places them (R5). When the last
projected end passes the window's end, the overrun and what R8 offers: a longer lot of the catalogue,
or a reduced protocol that leaves out the useful and exploratory steps still to come.

"Now" is the wall clock for `reportgen watch`; a build takes SOURCE_DATE_EPOCH or else the newest time
in the logs, so that two builds of the same logs are the same. Pure: nothing here reads a file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, tzinfo
from functools import cache

import pandas as pd

from reportgen.analysis.options import lots_like
from reportgen.analysis.runs import plan_total_steps, told, total_steps
from reportgen.analysis.schedule import (
    LotSpan,
    ScheduleReport,
    StepReport,
    hours_between,
    lot_counted,
    runs_matching,
)
from reportgen.analysis.status import RunStatus
from reportgen.analysis.variance import (
    RECENT_MARGIN,
    RECENT_SHARE,
    WallPace,
    recent_pace,
    stretch_pace,
)
from reportgen.model import Campaign, Evidence, Run, Status
from reportgen.numbers import duration, figure, listed, median
from reportgen.plan.schema import Plan, ScheduleStep

DONE, RUNNING, PENDING, DROPPED = "done", "running", "pending", "dropped"
OPTIONAL_CATEGORIES = ("useful", "exploratory")


# What the now of a live build (`watch`) is, as report.json names it (clock.now_basis).
WALL_CLOCK = "the wall clock"
NEWEST_LOG_TIME = "the newest time in the logs"  # a build's now without SOURCE_DATE_EPOCH


@dataclass(frozen=True)
class StepForecast:
    """One step at the build's now: done (its end as logged), running or pending (its end as projected)."""

    id: str
    state: str
    end: datetime | None
    basis: str
    evidence: list[Evidence] = field(default_factory=list)
    start: datetime | None = None  # when it started (done, running) or is projected to (pending)
    deadline: datetime | None = None  # when its machine is reclaimed: its GPU's lot's end (else the last lot's)


@dataclass(frozen=True)
class LotOption:
    """What R8 offers when the projection passes the lot's end."""

    kind: str  # "catalogue" (a longer lot) or "reduced" (leave out the optional steps still to come)
    label: str
    fits: bool
    note: str


@dataclass(frozen=True)
class Clock:
    now: datetime
    now_basis: str
    window_start: datetime  # the first lot's start
    window_last: datetime  # the last lot's end
    steps: list[StepForecast]
    options: list[LotOption]
    lots: list[LotSpan] = field(default_factory=list)
    run_deadlines: dict[str, datetime] = field(default_factory=dict)  # a run's machine's lot's end (its GPU step's)

    def seconds_left_for(self, run_id: str | None) -> float:
        """What is left before the machine that holds a run's files is reclaimed: its GPU's lot's end when that
        lot is open now, else (its machine unknown: a deliverable) the first open lot's end."""
        end = self.run_deadlines.get(run_id or "")
        if end is not None and any(lot.end == end for lot in self.holding):
            return max(0.0, (end - self.now).total_seconds())
        return self.hours_left * 3600

    @property
    def holding(self) -> list[LotSpan]:
        """The lots that hold now (none before the first, after the last, or in a gap between two)."""
        return [lot for lot in self.lots if lot.start <= self.now < lot.end]

    @property
    def open(self) -> bool:
        """A lot is open at now: the clock runs; otherwise (no machine rented now) the report is the closing summary."""
        return bool(self.holding)

    @property
    def window_end(self) -> datetime:
        """The end the clock counts down to: the first of the lots open now to end (a machine is reclaimed then),
        else the last lot's."""
        holding = self.holding
        return min(lot.end for lot in holding) if holding else self.window_last

    @property
    def hours_left(self) -> float:
        """What is left of the lot open now until its end: all of the window before it starts, nothing once no lot holds now."""
        if self.now < self.window_start:
            return hours_between(self.window_start, self.window_last)
        return max(0.0, hours_between(self.now, self.window_end)) if self.open else 0.0

    @property
    def projected_end(self) -> datetime | None:
        """When the last step still to do ends as projected; None when every step is done or dropped."""
        ends = [s.end for s in self.steps if s.state in (RUNNING, PENDING) and s.end is not None]
        return max(ends) if ends else None

    @property
    def late(self) -> list[StepForecast]:
        """The steps still to do projected past their deadline (their GPU's lot's end, else the last lot's)."""
        return [s for s in self.steps if s.state in (RUNNING, PENDING) and s.end is not None
                and s.end > (s.deadline or self.window_last)]

    @property
    def overrun_hours(self) -> float:
        """How far the latest step runs past its deadline."""
        return max((hours_between(s.deadline or self.window_last, s.end) for s in self.late if s.end is not None), default=0.0)


def minute(at: datetime, zone: tzinfo) -> str:
    """A time as the clock's texts tell it: to the minute, in the plan's time zone (the zone of every time on the
    site), whatever zone the log that gave it was in."""
    return f"{at.astimezone(zone):%Y-%m-%d %H:%M}"


def newest_time(campaign: Campaign) -> datetime | None:
    """The latest time the logs hold: a run's end or last record, a step's start or end."""
    times = [t for run in campaign.runs.values() if (t := run.latest_at()) is not None]
    times += [mark.at for mark in campaign.step_marks]
    return max(times) if times else None


def lot_clock(plan: Plan, campaign: Campaign, schedule: ScheduleReport, statuses: dict[str, RunStatus],
              dropped: set[str], now: datetime, now_basis: str, variants: dict[str, str | None] | None = None) -> Clock:
    """Every step's forecast at `now`, in plan order, and the R8 options when the projection passes the end;
    `dropped` are the variants dropped at a decision point, `variants` each run's variant (a step still to come
    of a variant measured already takes its measured pace)."""
    now = now.astimezone(schedule.window.start.tzinfo)  # told in the plan's time zone
    frames = campaign.frames_by_run()
    paces = cache(lambda run_id: stretch_pace(frames.get(run_id)))  # only the runs of steps under way are measured
    recent = cache(lambda run_id: recent_pace(frames.get(run_id)))
    spans = schedule.lots
    lot_of = {gpu: span for span in spans for gpu in span.gpus}  # every rented GPU, with its lot
    gpus = set(lot_of)
    opens = {gpu: span.start for gpu, span in lot_of.items()}  # a GPU runs nothing before its lot starts
    ends: dict[str, datetime] = {}
    free_at: dict[str, datetime] = {}
    forecasts: dict[str, StepForecast] = {}
    pending = []
    for item in schedule.steps:
        step, actual = item.step, item.actual
        if step.variant is not None and step.variant in dropped:
            # Nothing more of a dropped variant runs, begun or not: no end to project.
            forecasts[step.id] = StepForecast(step.id, DROPPED, actual.end, f"variant {step.variant} was dropped")
            continue
        if actual.start is None:
            forecast = _untimed(step, campaign, statuses, frames, now)
            if forecast is None:
                pending.append(item)
                continue
        elif actual.end is not None and not actual.open_ended and not _going(step, campaign, statuses):
            forecasts[step.id] = StepForecast(step.id, DONE, actual.end, f"ended as logged ({actual.basis})", actual.evidence,
                                              actual.start)
            ends[step.id] = actual.end
            continue
        else:
            forecast = replace(_running(step, actual.start, campaign, statuses, paces, recent, now), start=actual.start)
        forecasts[step.id] = forecast
        ends[step.id] = forecast.end or now
        if step.resource in gpus:
            free_at[step.resource] = max(free_at.get(step.resource, now), ends[step.id])
    durations = {item.step.id: _duration(item.step, variants or {}, paces) for item in pending}
    placed = _place(pending, ends, free_at, opens, now, durations, skipped=_dropped(forecasts))
    forecasts.update({f.id: f for f in placed})

    def deadline(step: ScheduleStep) -> datetime:
        """A GPU step must end before its lot does; a cpu or human step before the last lot ends."""
        return lot_of[step.resource].end if step.resource in lot_of else schedule.window.end

    steps = [replace(forecasts[item.step.id], deadline=deadline(item.step)) for item in schedule.steps
             if item.step.id in forecasts]
    optional = [i for i in pending if i.step.category in OPTIONAL_CATEGORIES]
    without = _place([i for i in pending if i not in optional], ends, free_at, opens, now, durations,
                     skipped={i.step.id for i in optional} | _dropped(forecasts)) if optional else []
    by_id = {item.step.id: item.step for item in schedule.steps}
    without = [replace(f, deadline=deadline(by_id[f.id])) for f in without]
    run_deadlines: dict[str, datetime] = {}
    for item in schedule.steps:
        if item.step.resource in lot_of:
            for run in runs_matching(item.step.runs, campaign.runs):
                run_deadlines[run.id] = min(run_deadlines.get(run.id, lot_of[item.step.resource].end),
                                            lot_of[item.step.resource].end)
    clock = Clock(now, now_basis, schedule.window.start, schedule.window.end, steps, [], spans, run_deadlines)
    clock.options.extend(_options(plan, clock, [i.step.id for i in optional], without))
    return clock


@dataclass(frozen=True)
class Duration:
    """How long a step still to come will take: the plan's hours, or those hours at its variant's measured pace."""

    hours: float
    basis: str
    evidence: list[Evidence] = field(default_factory=list)


def _duration(step: ScheduleStep, variants: dict[str, str | None], paces: Callable[[str], WallPace | None]) -> Duration:
    """A step still to come: when the plan gives its pace (steps_per_second) and runs of its variant were
    measured already (a pilot, an earlier step, the run going now), its hours at their median wall-clock
    pace; otherwise the plan's hours."""
    planned = Duration(step.hours, f"the plan's {figure(step.hours)} h")
    if step.variant is None or not step.steps_per_second:
        return planned
    measured = sorted((run_id, pace) for run_id, variant in variants.items()
                      if variant == step.variant and (pace := paces(run_id)) is not None and pace.seconds_per_step)
    if not measured:
        return planned
    seconds = median([pace.seconds_per_step or 0.0 for _run, pace in measured]) or 0.0
    hours = step.hours * seconds * step.steps_per_second
    runs = listed([run_id for run_id, _pace in measured])
    return Duration(hours, f"the plan's {figure(step.hours)} h at {figure(1 / step.steps_per_second)} s a step, at "
                           f"{step.variant}'s measured {figure(seconds)} s a step (over {runs}; evaluations and "
                           f"checkpoints included): {figure(hours)} h",
                    [e for _run, pace in measured[:3] for e in (pace.first.evidence, pace.last.evidence)])


def _place(pending: list[StepReport], ends: dict[str, datetime], free_at: dict[str, datetime], opens: dict[str, datetime],
           now: datetime, durations: dict[str, Duration], skipped: set[str] | None = None) -> list[StepForecast]:
    """The steps still to come from `now`, each `durations` long, in plan order among those whose dependencies
    have an end (the rule of planned_timeline), one at a time on each GPU and not before its lot starts
    (`opens`: each GPU's lot's start); a dependency `skipped` (dropped, or left out) is no wait."""
    gpus = set(opens)
    ends, free_at, pending = dict(ends), dict(free_at), list(pending)
    skipped = skipped or set()
    placed = []
    while pending:
        ready = next((i for i in pending if all(d in ends or d in skipped for d in i.step.depends_on)), None)
        if ready is None:  # a cycle: the plan's check reports it
            break
        pending.remove(ready)
        step = ready.step
        start = max([now, *(ends[d] for d in step.depends_on if d in ends)])
        if step.resource in gpus:
            start = max(start, free_at.get(step.resource, now), opens[step.resource])
        duration = durations[step.id]
        end = start + timedelta(hours=duration.hours)
        if step.resource in gpus:
            free_at[step.resource] = end
        ends[step.id] = end
        placed.append(StepForecast(step.id, PENDING, end, f"not started: {duration.basis} from {minute(start, now.tzinfo)}",
                                   duration.evidence, start=start))
    return placed


def _dropped(forecasts: dict[str, StepForecast]) -> set[str]:
    return {step_id for step_id, f in forecasts.items() if f.state == DROPPED}


def still_going(run: Run, statuses: dict[str, RunStatus]) -> bool:
    """A run with no end logged and no status found for it: still running, as far as the logs tell."""
    status = statuses.get(run.id)
    return run.ended_at is None and status is not None and status.status == Status.UNKNOWN


def at_work(run: Run, plan: Plan, statuses: dict[str, RunStatus]) -> bool:
    """A run still going (still_going) that is not at the last of its steps: at work, as the clock takes it while a
    lot is open (a run at its last step with no end logged is no work left)."""
    if not still_going(run, statuses):
        return False
    total = plan_total_steps(run, plan)
    return total is None or not at_last_step(run, total[0])


def _going(step: ScheduleStep, campaign: Campaign, statuses: dict[str, RunStatus]) -> bool:
    """A run of the step logged no end yet: the step goes on, whatever its step events said."""
    return any(still_going(run, statuses) for run in runs_matching(step.runs, campaign.runs))


def _running(step: ScheduleStep, started: datetime, campaign: Campaign, statuses: dict[str, RunStatus],
             paces: Callable[[str], WallPace | None], recent: Callable[[str], WallPace | None], now: datetime) -> StepForecast:
    """A step under way: each run still going ends when its steps left are done at its wall-clock pace (its
    own, the slower of its whole and recent paces, else that of another run of the step: the run it resumes,
    say); without such a run, the step ends the plan's hours after it started, now at the earliest. A run at the
    last of its steps (at_last_step) with no end logged has none left; when every run still going is, the step is
    done, at their last records."""
    runs = runs_matching(step.runs, campaign.runs)
    going = [run for run in runs if still_going(run, statuses)]
    others = [(run.id, pace) for run in runs if (pace := paces(run.id)) is not None and pace.seconds_per_step]
    ends, said, evidence, unknown, finished = [], [], [], [], []
    for run in going:
        total = total_steps(run, step)
        if total is not None and at_last_step(run, total[0]) and run.last_seen_at is not None:
            finished.append(run.last_seen_at)
            said.append(f"{run.id} has logged step {run.last_step:,}, the last of its {total[0]:,} ({told(total[1])}), "
                        f"with no end logged: its last record at {minute(run.last_seen_at, now.tzinfo)}")
            evidence += [e for e in [campaign.last_timed_row(run.id)] if e is not None]
            continue
        projected = _run_end(run, step, paces(run.id), recent(run.id), others, now)
        if isinstance(projected, str):
            unknown.append(projected)
            continue
        end, text, cited = projected
        ends.append(end)
        said.append(text)
        evidence += cited
    if ends:  # a run whose end cannot be told is said beside those projected: the step may end later
        return StepForecast(step.id, RUNNING, max(ends), "; ".join(said + unknown), evidence)
    if finished and not unknown:  # every run still going is at the last of its steps: no work left
        return StepForecast(step.id, DONE, max(finished), "; ".join(said), evidence)
    planned = started + timedelta(hours=step.hours)
    if going:
        why = "; ".join(unknown)
    elif any(run.started_at is not None for run in runs):
        why = "its runs ended but its own end is not logged"
    else:
        why = "no run of it logged yet"
    basis = (f"under way since {minute(started, now.tzinfo)}, {why}: the plan's {figure(step.hours)} h"
             + (", already past: now at the earliest" if planned < now else ""))
    return StepForecast(step.id, RUNNING, max(planned, now), basis)


def _untimed(step: ScheduleStep, campaign: Campaign, statuses: dict[str, RunStatus], frames: dict[str, pd.DataFrame],
             now: datetime) -> StepForecast | None:
    """A step with no time logged whose runs still going have logged steps and no time, or none after their start
    (DVCLive without timestamps, Lightning's CSVLogger, torchtune's DiskLogger, say): it is under way, not to
    come. With no time there is no pace: each run's steps left take their share of the plan's hours (a total of
    steps known), else the plan's hours, from now. A run at the last of its steps (at_last_step) has none left
    (no end logged: it is not taken as work left); when every such run is, the step is done, with no time. None
    when no run of it has logged a step."""
    # A run with no time, or with a start and no time after it (torchtune's file name dates its start, its lines
    # keep none): it has no span, and no pace.
    going = [run for run in runs_matching(step.runs, campaign.runs)
             if still_going(run, statuses) and run.last_step is not None
             and (run.started_at is None or (run.ended_at or run.last_seen_at) is None)]
    if not going:
        return None
    said, longest, evidence, left = [], 0.0, [], False
    for run in going:
        total = total_steps(run, step)
        since = f" since its start at {minute(run.started_at, now.tzinfo)}" if run.started_at is not None else ""
        logged = (f"{run.id} has logged steps {run.first_step:,} to {run.last_step:,} and no time{since}"
                  if run.first_step is not None else f"{run.id} has logged no time{since}")
        evidence += [e for e in [_last_step_row(frames.get(run.id))] if e is not None]
        if total is None:
            said.append(f"{logged}, so no pace, and no total of steps: the plan's {figure(step.hours)} h from now")
            longest, left = max(longest, step.hours), True
        elif at_last_step(run, total[0]):
            said.append(f"{logged}: step {run.last_step:,} is the last of its {total[0]:,} ({told(total[1])}), "
                        "with no end logged")
        else:
            hours = step.hours * (total[0] - run.last_step) / total[0]
            said.append(f"{logged}, so no pace: its {total[0] - run.last_step:,} steps left of {total[0]:,} ({told(total[1])}) "
                        f"at the plan's {figure(step.hours)} h for the whole step: {duration(hours)}")
            longest, left = max(longest, hours), True
    started = min((run.started_at for run in going if run.started_at is not None), default=None)
    if not left:
        return StepForecast(step.id, DONE, None, "; ".join(said), evidence, started)
    return StepForecast(step.id, RUNNING, now + timedelta(hours=longest), "; ".join(said), evidence, started)


def at_last_step(run: Run, total: int) -> bool:
    """Whether a run has logged the last of its `total` steps: step total - 1 or later, since steps counted from 0
    (DVCLive's, Keras's epochs, Lightning's rows) end at total - 1 and the Trainer's, counted from 1, at total. A
    run counted from 1 is so taken one step early, when its end is due anyway."""
    return run.last_step is not None and run.last_step >= total - 1


def _last_step_row(frame: pd.DataFrame | None) -> Evidence | None:
    """Where a run's furthest step is logged (its first row of that step)."""
    if frame is None or not len(frame) or not frame["step"].notna().any():
        return None
    row = frame.loc[frame["step"].idxmax()]
    return Evidence(str(row["path"]), None if pd.isna(row["line"]) else int(row["line"]))


def _run_end(run: Run, step: ScheduleStep, own: WallPace | None, recent: WallPace | None,
             others: list[tuple[str, WallPace]], now: datetime) -> tuple[datetime, str, list[Evidence]] | str:
    """When a run still going ends: its steps left at its pace (else another run's of its step), with what says
    so; else why it cannot be told. Its own pace is the slower of its whole run's (since its steps last went
    back: stretch_pace) and its recent one's (recent_pace, when slower by more than RECENT_MARGIN): a run that
    slowed down (a slower stage, a GPU shared or throttled) is projected at the pace it goes now, not at an
    average its fast start holds down; one that sped up after a slow start keeps its whole run's pace, the later
    end, until that pace catches up; one resumed under its own name from an earlier checkpoint is not slowed by
    the time it was down."""
    total = total_steps(run, step)
    if total is None or run.last_step is None:
        return (f"{run.id} logs no total of steps (no max_steps or like it in its sources or config, no steps for "
                f"{step.id} in the plan), so its steps left are unknown" if total is None else f"{run.id} has logged no step yet")
    slower = (recent is not None and recent.seconds_per_step and own is not None and own.seconds_per_step
              and recent.seconds_per_step > RECENT_MARGIN * own.seconds_per_step)
    if slower:
        pace, whose = recent, "its recent"
    elif own is not None and own.seconds_per_step:
        pace, whose = own, "its"
    elif others:
        name, pace = others[0]
        whose = f"{name}'s (its own rows are too few)"
    else:
        return f"{run.id} has too few timed steps for a pace, and no other run of the step has one"
    steps, source = total
    per_step = pace.seconds_per_step or 0.0
    # Counted from the step it is at: its latest timed row's (after a resume under its own name from an earlier
    # checkpoint, not its highest), else its highest.
    at = own.last.step if own is not None else run.last_step
    left = max(0, steps - at)
    end = now + timedelta(seconds=left * per_step)
    span = (f"steps {pace.first.step:,} to {pace.last.step:,}, the last {RECENT_SHARE:.0%} of its logged time; "
            f"{figure(own.seconds_per_step)} s a step over steps {own.first.step:,} to {own.last.step:,}" if slower else
            f"steps {pace.first.step:,} to {pace.last.step:,}")
    text = (f"{run.id}: {left:,} steps left of {steps:,} ({told(source)}) at {whose} {figure(per_step)} s a step "
            f"({span}, evaluations and checkpoints included): {duration(left * per_step / 3600)}")
    return end, text, [pace.first.evidence, pace.last.evidence]


def _late_lots(plan: Plan, clock: Clock) -> dict[int, datetime]:
    """The lots whose work is projected past their end (by their place in the order, in order), each with the
    latest projected end of its late steps: a GPU step is its GPU's lot's; a cpu or human step, judged against
    the end of the lot that ends last (the window's), that lot's (the last of them in the order, when several
    end then)."""
    resource = {step.id: step.resource for step in plan.schedule.steps}
    late: dict[int, datetime] = {}
    for step in clock.late:
        if step.end is None:
            continue
        index = lot_counted(clock.lots, resource.get(step.id, ""))
        late[index] = max(late.get(index, step.end), step.end)
    return dict(sorted(late.items()))


def _options(plan: Plan, clock: Clock, optional: list[str], without: list[StepForecast]) -> list[LotOption]:
    """R8, when the projection passes the lot's end: for each lot whose work is projected past its end, the lots
    of the catalogue for its GPUs, each saying whether it is long enough for that lot's projected span (from the
    lot's start to its late work's end); and the projection without the useful and exploratory steps still to
    come (`without`: the others placed again)."""
    if clock.projected_end is None or clock.overrun_hours <= 0:
        return []
    options = []
    several = len(plan.order.lots) > 1
    for index, end in _late_lots(plan, clock).items():
        lot, start = plan.order.lots[index], clock.lots[index].start
        span = hours_between(start, end)
        instead = f" in place of {lot.label}" if several else ""  # which lot it would replace, when there are several
        options += [LotOption("catalogue", entry.label + instead, entry.days * 24.0 >= span,
                              f"{entry.days} days{instead}: a {entry.days * 24:g} h window for the {figure(span)} h "
                              "projected" + (f" from its start ({minute(start, clock.now.tzinfo)})"
                                             if several else ""))
                    for entry in lots_like(plan, lot)]
    if optional:
        rest = [s for s in clock.steps if s.state == RUNNING and s.end is not None] + [f for f in without if f.end]
        last = max((s.end for s in rest if s.end is not None), default=clock.now)
        late = [hours_between(s.deadline or clock.window_last, s.end) for s in rest if s.end is not None]
        fits = all(hours <= 0 for hours in late)
        categories = {s.id: s.category for s in plan.schedule.steps}
        options.append(LotOption("reduced", "reduced protocol", fits,
                                 f"leave out {listed(optional)} ({', '.join(sorted({categories[s] for s in optional}))}), "
                                 f"not started: the rest ends {minute(last, clock.now.tzinfo)}"
                                 + ("" if fits else f", still {figure(max(late))} h past the end")))
    return options
