"""The stop-rule ledger (R10): every plan rule evaluated on every run, beside the stops the scripts logged.

reportgen evaluates each rule from the logs themselves — the first step at which its condition
holds, with the line that shows it — and puts that next to any stop the training script wrote.
Where the two disagree (a different step, a stop with no evidence, a condition that held while
the script went on) the disagreement is itself part of the ledger.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import pandas as pd

from reportgen.analysis.checkpoints import RunCheckpoint
from reportgen.analysis.nonfinite import NonFinite
from reportgen.model import (
    METRIC_FRAME_COLUMNS,
    Campaign,
    Evidence,
    LoggedStop,
    LogMessage,
    MessageKind,
    Run,
    RunKind,
    metric_values,
    same_metric,
)
from reportgen.numbers import compared
from reportgen.plan.schema import Plan, StopKind, StopRule

# Metric names that count inputs cut to fit the context (R10 truncation), unless the rule names its own.
TRUNCATION_COUNTER = re.compile(r"(^|[/_.])(num_|n_)?truncat(ed|ions?)(_inputs|_samples|_examples|_count)?$", re.IGNORECASE)
# Kinds reportgen can decide from the logs; `other` rules are only ever logged.
EVALUATED_KINDS: tuple[StopKind, ...] = ("non_finite", "below_threshold", "truncation", "no_resume", "interrupted")
# Kinds a script can notice while its run is alive, and so could have logged.
LIVE_KINDS: tuple[StopKind, ...] = ("non_finite", "below_threshold", "truncation")


@dataclass
class Firing:
    """The first point at which a rule's condition holds in one run's logs."""

    step: int | None
    at: datetime | None
    reason: str
    evidence: list[Evidence]


@dataclass
class Stop:
    """One ledger entry: a rule that fired on a run, as logged, as evaluated, or both."""

    id: str
    run: str
    rule: str | None
    kind: StopKind
    logged: LoggedStop | None
    evaluated: Firing | None
    disagreement: str | None = None
    note: str | None = None

    @property
    def source(self) -> str:
        if self.logged and self.evaluated:
            return "logged and evaluated"
        return "logged" if self.logged else "evaluated"

    @property
    def step(self) -> int | None:
        """The earlier of the two: the evaluated step when the logs met the rule before the script stopped."""
        steps = [side.step for side in (self.evaluated, self.logged) if side is not None and side.step is not None]
        return min(steps) if steps else None

    @property
    def at(self) -> datetime | None:
        times = [side.at for side in (self.evaluated, self.logged) if side is not None and side.at is not None]
        return min(times) if times else None

    @property
    def reason(self) -> str:
        if self.logged and self.evaluated:
            return f"{self.logged.reason} (reportgen: {self.evaluated.reason})"
        return self.logged.reason if self.logged else self.evaluated.reason  # type: ignore[union-attr]

    @property
    def evidence(self) -> list[Evidence]:
        items = ([self.logged.evidence] if self.logged else []) + (self.evaluated.evidence if self.evaluated else [])
        return sorted(set(items))


@dataclass
class Notice:
    """Something a rule's evaluation saw that is not a stop: a "too long" warning, an unknown resume state."""

    run: str
    rule: str
    message: str
    evidence: list[Evidence] = field(default_factory=list)


@dataclass
class RuleReport:
    rule: StopRule
    applies_to: list[str]
    fired: list[str]
    evaluated: bool
    basis: str  # what was checked, or why it could not be
    checked: list[str] = field(default_factory=list)  # the runs whose logs could show the condition

    @property
    def unchecked(self) -> list[str]:
        """Runs the rule applies to whose logs cannot show its condition: no stop there proves nothing."""
        return [r for r in self.applies_to if r not in self.checked]


@dataclass
class Ledger:
    stops: list[Stop]
    rules: list[RuleReport]
    notices: list[Notice]

    def for_run(self, run: str) -> list[Stop]:
        return [s for s in self.stops if s.run == run]


class _RunRows:
    """One run's rows of the metrics frame, with column access that keeps NaN apart from "not logged"."""

    def __init__(self, frame: pd.DataFrame):
        self.frame = frame
        self.steps = frame["step"].to_numpy(dtype="float64", na_value=np.nan)

    def column(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(logged mask, values) of one metric column."""
        return metric_values(self.frame[name])

    def first(self, mask: np.ndarray) -> int | None:
        """The position of the first row (by step, then file order) where mask holds."""
        hits = np.flatnonzero(mask)
        if not len(hits):
            return None
        steps = np.where(np.isnan(self.steps[hits]), np.inf, self.steps[hits])
        return int(hits[np.argmin(steps)])  # argmin keeps the earliest row among equal steps

    def where(self, position: int) -> tuple[int | None, datetime | None, Evidence]:
        row = self.frame.iloc[position]
        step = None if pd.isna(row["step"]) else int(row["step"])
        at = None if pd.isna(row["ts"]) else row["ts"].to_pydatetime()
        line = None if pd.isna(row["line"]) else int(row["line"])
        return step, at, Evidence(str(row["path"]), line)


def _at_step(step: int | None) -> str:
    return f" at step {step}" if step is not None else " (in a record with no step)"


def _rule_applies(rule: StopRule, variant: str | None) -> bool:
    return rule.variants is None or variant in rule.variants


def _message_order(message: LogMessage) -> tuple:
    return (message.step is None, message.step or 0, message.evidence)


def _non_finite(rule: StopRule, windows: list[NonFinite]) -> Firing | None:
    """Every metric is watched unless the rule names some (text logs can report one no file logs)."""
    hits = [w for w in windows if rule.metrics is None or any(same_metric(m, w.metric) for m in rule.metrics)]
    if not hits:
        return None
    first = min(hits, key=lambda w: (w.step is None, w.step or 0, w.evidence))
    same = sorted({w.metric for w in hits if w.step == first.step})
    where = f"at step {first.step}" if first.step is not None else "(no step given)"
    reason = f"{', '.join(same)} not finite {where}"
    if first.note:
        reason += f" — {first.note}"
    earlier = sorted({w.metric for w in windows if w not in hits and w.step is not None and first.step is not None
                      and w.step < first.step})
    if earlier:  # context, not a cause: the rule watches other metrics
        since = min(w.step for w in windows if w.metric in earlier and w.step is not None)
        reason += f" (not watched by this rule: {', '.join(earlier)} already not finite from step {since})"
    evidence = sorted({e for w in hits if w.step == first.step for e in w.evidence})
    return Firing(first.step, first.at, reason, evidence)


def _below_threshold(rule: StopRule, plan: Plan, rows: _RunRows | None) -> Firing | None:
    if rows is None:
        return None
    metric = rule.metric or plan.quality.metric
    threshold = rule.threshold if rule.threshold is not None else plan.quality.threshold
    # "Below" means worse: under the threshold, or over it for a quality metric where lower is better.
    worse_is_higher = metric == plan.quality.metric and plan.quality.direction == "lower"
    for column in [c for c in rows.frame.columns if c not in METRIC_FRAME_COLUMNS and same_metric(metric, c)]:
        logged, values = rows.column(column)
        finite = logged & np.isfinite(values)
        bad = values > threshold if worse_is_higher else values < threshold
        mask = finite & bad & (rows.steps >= (rule.after_step or 0))
        position = rows.first(mask)
        if position is None:
            continue
        step, at, where = rows.where(position)
        op = ">" if worse_is_higher else "<"
        after = f" (checked from step {rule.after_step})" if rule.after_step else ""
        shown, limit = compared(float(values[position]), threshold)
        return Firing(step, at, f"{column} {shown} {op} {limit}{_at_step(step)}{after}", [where])
    return None


def _truncation(rule: StopRule, rows: _RunRows | None, messages: list[LogMessage]) -> Firing | None:
    candidates: list[Firing] = []
    if rows is not None:
        columns = [c for c in rows.frame.columns if c not in METRIC_FRAME_COLUMNS]
        counters = [c for c in columns if any(same_metric(m, c) for m in rule.metrics)] if rule.metrics else \
            [c for c in columns if TRUNCATION_COUNTER.search(c)]
        for column in counters:
            logged, values = rows.column(column)
            position = rows.first(logged & np.isfinite(values) & (values > 0))
            if position is not None:
                step, at, where = rows.where(position)
                candidates.append(Firing(step, at, f"{column} = {values[position]:g}{_at_step(step)}: inputs were cut", [where]))
    cut = sorted((m for m in messages if m.kind == MessageKind.TRUNCATION), key=_message_order)
    if cut:
        said = cut[0]
        candidates.append(Firing(said.step, None, f"the log reports truncation: {said.message}", [said.evidence]))
    if not candidates:
        return None
    first = min(candidates, key=lambda f: (f.step is None, f.step or 0, f.evidence))
    for other in candidates:  # a counter and a message about the same step are both evidence
        if other is not first and other.step == first.step and first.step is not None:
            first.evidence = sorted(set(first.evidence + other.evidence))
    return first


def _resume_candidates(run: Run, runs: dict[str, Run], checkpoints: dict[str, list[RunCheckpoint]]) -> list[RunCheckpoint]:
    """The run's own checkpoints, then those of the runs it continues (a resume starts from one of them)."""
    found: list[RunCheckpoint] = []
    seen: set[str] = set()
    current: Run | None = run
    while current is not None and current.id not in seen:
        seen.add(current.id)
        found.extend(c for c in checkpoints.get(current.id, [])
                     if not c.final and (run.last_step is None or c.step is None or c.step <= run.last_step))
        current = runs.get(current.resumes) if current.resumes else None
    return found


def _no_resume(plan: Plan, run: Run, runs: dict[str, Run], checkpoints: dict[str, list[RunCheckpoint]],
               interruption: tuple[datetime | None, list[Evidence]]) -> tuple[Firing | None, str | None]:
    """(firing, notice): fires when the interrupted run's last checkpoint cannot resume it."""
    required = list(plan.checkpoints.required_state)
    at, evidence = interruption
    candidates = _resume_candidates(run, runs, checkpoints)
    where = f"interrupted at step {run.last_step}" if run.last_step is not None else "interrupted"
    if not candidates:
        return Firing(run.last_step, at, f"{where} with no checkpoint to resume from", evidence), None
    last = max(candidates, key=lambda c: (c.step is not None, c.step or 0))
    name = f"step {last.step}" if last.step is not None else last.path
    lacking = last.lacking(required)
    if lacking:
        return Firing(run.last_step, at, f"{where}; its last checkpoint ({name}) lacks {', '.join(lacking)}",
                      evidence + last.evidence), None
    failed = last.failed_reload()
    if failed is not None:
        return Firing(run.last_step, at, f"{where}; the reload test of its last checkpoint ({name}) failed: "
                      f"{failed.message or 'not ok'}", evidence + [failed.evidence]), None
    unknown = last.unknown(required)
    if unknown:
        return None, f"{where}; whether its last checkpoint ({name}) holds {', '.join(unknown)} is not recorded"
    return None, None


def _agreement(stop: Stop, run: Run) -> str | None:
    """What the script's stop and reportgen's evaluation disagree about, if anything."""
    logged, evaluated = stop.logged, stop.evaluated
    if logged and evaluated:
        if logged.step is not None and evaluated.step is not None and logged.step != evaluated.step:
            gap = logged.step - evaluated.step
            side = "after" if gap > 0 else "before"
            return (f"the script stopped at step {logged.step}, {abs(gap)} steps {side} the first step at which "
                    f"the logs meet the rule ({evaluated.step})")
        return None
    if logged and stop.kind in EVALUATED_KINDS:
        return f"the script logged this stop, but the logs show no evidence of the {stop.kind.replace('_', ' ')} condition"
    if evaluated and stop.kind in LIVE_KINDS and "reportgen-events" in run.formats:
        ran_to = run.last_step
        later = f"; the run went on to step {ran_to}" if ran_to is not None and evaluated.step is not None and ran_to > evaluated.step else ""
        return f"the condition holds in the logs, but the script logged no stop for this rule{later}"
    return None


def evaluate(plan: Plan, campaign: Campaign, run_variants: dict[str, str | None], interrupted: dict[str, tuple[datetime | None, list[Evidence]]],
             windows: dict[str, list[NonFinite]], checkpoints: dict[str, list[RunCheckpoint]]) -> Ledger:
    """Every plan rule on every run it applies to, merged with the logged stops.

    `interrupted` maps each run that did not reach its end to when it was last seen and the
    evidence of the interruption.
    """
    # An evaluation run has no stops of its own: its values count for the run it evaluates.
    attached = campaign.evaluated_by()
    metrics_by_run = campaign.metrics_by_run()
    frames = campaign.frames_by_run()
    for trained, evaluations in attached.items():
        parts = [frames[r] for r in [trained, *evaluations] if r in frames]
        if parts:
            frames[trained] = pd.concat(parts, ignore_index=True, sort=False)
        metrics_by_run[trained] = sorted({m for r in [trained, *evaluations] for m in metrics_by_run.get(r, [])})
        windows = {**windows, trained: [w for r in [trained, *evaluations] for w in windows.get(r, [])]}
    messages: dict[str, list[LogMessage]] = {}
    for message in campaign.messages:
        if message.run is not None:
            messages.setdefault(message.run, []).append(message)
    evaluated: dict[tuple[str, str], Firing] = {}
    notices: list[Notice] = []
    reports: list[RuleReport] = []
    for rule in plan.stop_rules:
        applies = [r for r, run in campaign.runs.items() if run.kind == RunKind.TRAINING and _rule_applies(rule, run_variants.get(r))]
        fired: list[str] = []
        checked: list[str] = []  # runs whose logs could show the rule's condition
        for run_id in applies:
            run = campaign.runs[run_id]
            rows = _RunRows(frames[run_id]) if run_id in frames else None
            logged = metrics_by_run.get(run_id, [])
            firing: Firing | None = None
            can_tell = False
            if rule.kind == "non_finite":
                firing = _non_finite(rule, windows.get(run_id, []))
                watched = rule.metrics or logged
                can_tell = any(same_metric(w, m) for w in watched for m in logged) or firing is not None
            elif rule.kind == "below_threshold":
                firing = _below_threshold(rule, plan, rows)
                can_tell = any(same_metric(rule.metric or plan.quality.metric, m) for m in logged)
            elif rule.kind == "truncation":
                own = messages.get(run_id, [])
                firing = _truncation(rule, rows, own)
                counters = [m for m in logged if (any(same_metric(c, m) for c in rule.metrics) if rule.metrics
                                                  else TRUNCATION_COUNTER.search(m))]
                can_tell = firing is not None or bool(counters) or any(m.kind == MessageKind.TOO_LONG for m in own)
                for warning in sorted((m for m in own if m.kind == MessageKind.TOO_LONG), key=_message_order):
                    notices.append(Notice(run_id, rule.id, "not a truncation: " + warning.message, [warning.evidence]))
            elif rule.kind in ("no_resume", "interrupted"):
                can_tell = True  # every run's status is known, if only as unknown
                if run_id in interrupted and rule.kind == "interrupted":
                    at, evidence = interrupted[run_id]
                    firing = Firing(run.last_step, at, "the run did not reach its end", evidence)
                elif run_id in interrupted:
                    firing, notice = _no_resume(plan, run, campaign.runs, checkpoints, interrupted[run_id])
                    if notice:
                        notices.append(Notice(run_id, rule.id, notice))
            if can_tell:
                checked.append(run_id)
            if firing is not None:
                evaluated[(run_id, rule.id)] = firing
                fired.append(run_id)
        evaluable = rule.kind in EVALUATED_KINDS and bool(checked)
        reports.append(RuleReport(rule, applies, fired, evaluable, _basis(rule, plan, bool(checked)), checked))

    stops = _merge(plan, campaign, evaluated)
    return Ledger(stops, reports, notices)


def _basis(rule: StopRule, plan: Plan, checked: bool) -> str:
    if rule.kind == "other":
        return "rules of kind 'other' are not evaluated from the logs; only stops the scripts logged are shown"
    if rule.kind == "non_finite":
        watched = ", ".join(rule.metrics) if rule.metrics else "every logged metric"
        return f"watched: {watched}" if checked else "no run logged a watched metric: not evaluated"
    if rule.kind == "below_threshold":
        metric = rule.metric or plan.quality.metric
        threshold = rule.threshold if rule.threshold is not None else plan.quality.threshold
        after = f" from step {rule.after_step}" if rule.after_step else ""
        return f"{metric} against {threshold:g}{after}" if checked else f"no run logged {metric}: not evaluated"
    if rule.kind == "truncation":
        counters = ", ".join(rule.metrics) if rule.metrics else "truncation counters"
        return (f"{counters} and truncation messages in text logs" if checked else
                "no run logs a truncation counter or an input-length message: cannot be evaluated, only logged stops count")
    if rule.kind == "no_resume":
        return f"the last checkpoint of every interrupted run must hold {', '.join(plan.checkpoints.required_state)} and pass any reload test"
    return "every run that did not reach its end"


def _merge(plan: Plan, campaign: Campaign, evaluated: dict[tuple[str, str], Firing]) -> list[Stop]:
    kinds = {rule.id: rule.kind for rule in plan.stop_rules}
    stops: dict[tuple[str, str], Stop] = {}
    for logged in sorted(campaign.stops, key=lambda s: (s.at is None, s.at.timestamp() if s.at else 0.0, s.evidence)):
        rule = logged.rule or "unnamed"
        key = (logged.run, rule)
        n = 2
        while key in stops:  # the same rule logged twice for one run: both are kept
            key, n = (logged.run, f"{rule}#{n}"), n + 1
        stops[key] = Stop(f"{logged.run}:{key[1]}", logged.run, logged.rule, kinds.get(logged.rule or "", "other"),
                          logged, evaluated.pop((logged.run, rule), None))
    for (run_id, rule), firing in evaluated.items():
        stops[(run_id, rule)] = Stop(f"{run_id}:{rule}", run_id, rule, kinds[rule], None, firing)
    for stop in stops.values():
        run = campaign.runs.get(stop.run)
        if run is not None:
            stop.disagreement = _agreement(stop, run)
    return sorted(stops.values(), key=lambda s: (s.at is None, s.at.timestamp() if s.at else 0.0, s.run,
                                                s.step is None, s.step or 0, s.id))


def first_stop(stops: list[Stop]) -> Stop | None:
    """The stop that came first in the run: by step, then by time."""
    live = [s for s in stops if s.kind not in ("no_resume", "interrupted")]
    if not live:
        return None
    return min(live, key=lambda s: (s.step is None, s.step or 0, s.at is None, s.id))

