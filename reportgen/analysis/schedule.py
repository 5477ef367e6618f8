"""Planned vs actual time (R4-R6, R16): the plan's timeline, the logged one, and their variance.

Pure functions over the plan and the campaign model; nothing here reads files or writes HTML.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from reportgen.model import Campaign, EventKind, Evidence, Run
from reportgen.numbers import listed
from reportgen.plan.schema import HUMAN_RESOURCE, Plan, ScheduleStep


@dataclass(frozen=True)
class Window:
    """The rented window: from the first lot's start to the last lot's end (R6)."""

    start: datetime
    end: datetime

    @property
    def hours(self) -> float:
        return hours_between(self.start, self.end)


@dataclass(frozen=True)
class LotSpan:
    """One rented lot: when it holds its GPUs."""

    label: str
    start: datetime
    end: datetime
    gpus: tuple[str, ...]


@dataclass(frozen=True)
class PlannedSlot:
    step: ScheduleStep
    start_h: float  # hours from the window's start
    end_h: float

    def start_at(self, origin: datetime) -> datetime:
        return origin + timedelta(hours=self.start_h)

    def end_at(self, origin: datetime) -> datetime:
        return origin + timedelta(hours=self.end_h)


@dataclass
class ActualSpan:
    """When a step really ran, and what says so."""

    start: datetime | None = None
    end: datetime | None = None
    hours: float | None = None
    basis: str = "not measured"
    evidence: list[Evidence] = field(default_factory=list)
    open_ended: bool = False  # started but never logged an end


@dataclass
class StepReport:
    step: ScheduleStep
    planned: PlannedSlot
    actual: ActualSpan

    @property
    def variance_hours(self) -> float | None:
        return None if self.actual.hours is None else self.actual.hours - self.step.hours


@dataclass
class ScheduleReport:
    window: Window
    planned_hours: float
    steps: list[StepReport]
    actual_start: datetime | None
    actual_end: datetime | None
    lots: list[LotSpan]  # each lot's span and GPUs, in the order's order

    @property
    def planned_unused_hours(self) -> float:
        return self.window.hours - self.planned_hours

    @property
    def actual_hours(self) -> float | None:
        if self.actual_start is None or self.actual_end is None:
            return None
        return hours_between(self.actual_start, self.actual_end)

    @property
    def unused_hours(self) -> float | None:
        actual = self.actual_hours
        return None if actual is None else max(0.0, self.window.hours - actual)

    @property
    def overrun_hours(self) -> float | None:
        actual = self.actual_hours
        return None if actual is None else max(0.0, actual - self.window.hours)

    def time_by_resource_kind(self) -> dict[str, dict[str, float | None]]:
        """R5: machine time and human time, planned and measured, kept apart."""
        out: dict[str, dict[str, float | None]] = {}
        for kind in ("machine", "human"):
            steps = [s for s in self.steps if (s.step.resource == HUMAN_RESOURCE) == (kind == "human")]
            measured = [s.actual.hours for s in steps if s.actual.hours is not None]
            out[kind] = {
                "planned_hours": sum(s.step.hours for s in steps),
                "actual_hours": sum(measured) if measured else None,
                "steps_measured": len(measured),
                "steps": len(steps),
            }
        return out


def hours_between(start: datetime, end: datetime) -> float:
    return (end - start).total_seconds() / 3600.0


def window(plan: Plan) -> Window:
    starts = [lot.start for lot in plan.order.lots]
    ends = [lot.start + timedelta(days=lot.days) for lot in plan.order.lots]
    return Window(start=min(starts), end=max(ends))


def lot_spans(plan: Plan) -> list[LotSpan]:
    """Each lot of the order with its GPUs' names (the plan's gpu_names, else gpu0, gpu1, ... across lots)."""
    names, spans = plan.gpu_names(), []
    for lot in plan.order.lots:
        spans.append(LotSpan(lot.label, lot.start, lot.start + timedelta(days=lot.days), tuple(names[:lot.gpus])))
        names = names[lot.gpus:]
    return spans


def ending_last(spans: list[LotSpan]) -> int:
    """The lot a cpu or human step is judged against: the one that ends last (the last of them in the order, when
    several end then)."""
    return max(range(len(spans)), key=lambda i: (spans[i].end, i))


def lot_counted(spans: list[LotSpan], resource: str) -> int:
    """The lot a step on `resource` is judged against, by its place in the order: its GPU's lot; for a cpu or
    human step, the one that ends last (ending_last)."""
    own = [i for i, span in enumerate(spans) if resource in span.gpus]
    return own[0] if own else ending_last(spans)


def planned_timeline(plan: Plan) -> list[PlannedSlot]:
    """Earliest start of every step: after its dependencies, one at a time on each GPU (R5), and a step on a GPU
    no earlier than its lot starts (a lot bought to follow another holds its GPUs from its own start).

    Steps are placed in plan order among those whose dependencies are done, so the schedule is
    the one the table reads as; `cpu` and `human` steps are limited only by their dependencies.
    """
    gpus = set(plan.gpu_names())
    first = window(plan).start
    opens = {gpu: hours_between(first, span.start) for span in lot_spans(plan) for gpu in span.gpus}
    pending = list(plan.schedule.steps)
    ends: dict[str, float] = {}
    free_at: dict[str, float] = {}
    slots: list[PlannedSlot] = []
    while pending:
        ready = next((s for s in pending if all(d in ends for d in s.depends_on)), None)
        if ready is None:  # a cycle; the plan loader reports it, the timeline stops there
            break
        pending.remove(ready)
        start = max([ends[d] for d in ready.depends_on], default=0.0)
        if ready.resource in gpus:
            start = max(start, free_at.get(ready.resource, 0.0), opens.get(ready.resource, 0.0))
            free_at[ready.resource] = start + ready.hours
        ends[ready.id] = start + ready.hours
        slots.append(PlannedSlot(step=ready, start_h=start, end_h=start + ready.hours))
    order = {s.id: i for i, s in enumerate(plan.schedule.steps)}
    return sorted(slots, key=lambda slot: order[slot.step.id])


def planned_hours(slots: list[PlannedSlot]) -> float:
    return max((slot.end_h for slot in slots), default=0.0)


def runs_matching(patterns: list[str], runs: dict[str, Run]) -> list[Run]:
    return [run for run_id, run in runs.items() if any(fnmatch.fnmatchcase(run_id, p) for p in patterns)]


def steps_of(plan: Plan, run_id: str) -> list[ScheduleStep]:
    """The plan's steps whose run patterns match the run, in plan order."""
    return [step for step in plan.schedule.steps if any(fnmatch.fnmatchcase(run_id, p) for p in step.runs)]


def _from_marks(step_id: str, campaign: Campaign) -> ActualSpan | None:
    marks = sorted((m for m in campaign.step_marks if m.step_id == step_id), key=lambda m: (m.at, m.evidence))
    if not marks:
        return None
    total = 0.0
    opened: datetime | None = None
    span = ActualSpan(basis="step events", evidence=[m.evidence for m in marks])
    for mark in marks:
        if mark.kind == EventKind.START:
            opened = opened or mark.at
            span.start = span.start or mark.at
        elif opened is not None:
            total += hours_between(opened, mark.at)
            span.end, opened = mark.at, None
    if opened is not None:
        span.open_ended = True
    if span.end is None:
        span.hours = None
        span.basis = "step events (started, never ended)"
        return span
    span.hours = total
    return span


def _from_runs(step: ScheduleStep, campaign: Campaign) -> ActualSpan | None:
    runs = runs_matching(step.runs, campaign.runs)
    intervals = []
    for run in runs:
        end = run.ended_at or run.last_seen_at
        # A run whose end precedes its start has no measurable time (ingest reports it).
        if run.started_at is not None and end is not None and end >= run.started_at:
            intervals.append((run.started_at, end, run))
    if not intervals:
        return None
    intervals.sort(key=lambda item: item[0])
    total, cur_start, cur_end = 0.0, intervals[0][0], intervals[0][1]
    for start, end, _ in intervals[1:]:
        if start > cur_end:
            total += hours_between(cur_start, cur_end)
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    total += hours_between(cur_start, cur_end)
    evidence = sorted({e for _, _, run in intervals for e in run_evidence(run)})
    return ActualSpan(
        start=intervals[0][0],
        end=max(end for _, end, _ in intervals),
        hours=total,
        basis="runs " + listed([run.id for _, _, run in intervals]),
        evidence=evidence,
        open_ended=any(run.ended_at is None for _, _, run in intervals),
    )


def run_evidence(run: Run) -> list[Evidence]:
    """What shows a run's span: its start and end lines, else the files it was read from."""
    marks = [e for e in (run.start_evidence, run.end_evidence) if e is not None]
    return marks or [Evidence(path) for path in run.sources[:2]]


def actual_span(step: ScheduleStep, campaign: Campaign) -> ActualSpan:
    """Step events win over runs: they say what the person or script meant the step to be."""
    return _from_marks(step.id, campaign) or _from_runs(step, campaign) or ActualSpan()


def reconcile(plan: Plan, campaign: Campaign) -> ScheduleReport:
    """Put planned against actual for every step without touching the plan (R16)."""
    slots = planned_timeline(plan)
    steps = [StepReport(step=slot.step, planned=slot, actual=actual_span(slot.step, campaign)) for slot in slots]
    measured = [s.actual for s in steps if s.actual.hours is not None]
    starts = [a.start for a in measured if a.start is not None]
    ends = [a.end for a in measured if a.end is not None]
    return ScheduleReport(
        window=window(plan),
        planned_hours=planned_hours(slots),
        steps=steps,
        actual_start=min(starts) if starts else None,
        actual_end=max(ends) if ends else None,
        lots=lot_spans(plan),
    )
