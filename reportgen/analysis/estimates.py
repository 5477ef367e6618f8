"""The next campaign's estimates (R16, R9): what this one measured, turned into the next plan's figures.

For every schedule step and every variant: the planned hours, the measured hours and a suggested
next figure, each with its basis (which runs and measurements). Then the quantities the plan relied
on, measured or not, and the uncertainties: every planned quantity with no measurement behind it.
An uncertainty leaves the list as soon as the logs hold a measurement of it. Last, the suggested
schedule (the next figures, serialised on each GPU as the plan is) and the catalogue lot it fits.

How a next figure is made:
- a measured step keeps its measured hours, except the work lost and the downtime of
  interruptions, which are replaced by an allowance: the interruption hours of the whole campaign
  over the GPU steps' other hours, spread over every GPU step (one crash is not a property of the
  step it happened in). A step of a variant that never finished a run adds the rest of the run,
  extrapolated from the steps it reached to the total its config names;
- a variant's figure is one full run: its completed chain of runs (a resumed run with the run it
  resumes) less the work lost at each interruption, plus the allowance; else its longest run
  scaled to its config's total steps; else the plan's figure, uncertain;
- a step or variant never measured keeps the plan's figure and is an uncertainty.

What is proposed again is decided per variant before any figure (`advise_variants`): the control and
the variants that passed are kept; a variant dropped at a decision point, one that failed, and an
optional one that diverged or that a quality stop rule judged are left out, with their steps, and
said why with the evidence; a required variant that diverged, and any variant stopped by cut inputs
or by a missing resume state, is kept only with the change the user must make first; a variant
stopped by a rule that does not judge its results (a time or budget stop, an interruption) is kept
with a full run's estimate. Left-out items are no uncertainty of the next campaign. Last, the lot:
the one ordered is compared first (see `options.lot_advice`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
import pandas as pd

from reportgen.analysis.checkpoints import CheckpointsReport
from reportgen.analysis.nonfinite import NonFinite
from reportgen.analysis.options import LotAdvice, LotFit, lot_advice
from reportgen.analysis.runmap import Mapper, one_by_one
from reportgen.analysis.runs import RunsReport, chain, plan_total_steps, told
from reportgen.analysis.schedule import (
    ScheduleReport,
    StepReport,
    hours_between,
    planned_hours,
    planned_timeline,
    runs_matching,
)
from reportgen.analysis.stops import Ledger, Stop
from reportgen.analysis.variance import (
    INTERRUPTION_CAUSES,
    TrainingPace,
    VarianceReport,
    lost_work,
    run_timing,
    start_steps,
    training_paces,
)
from reportgen.analysis.verdicts import VariantResult, VariantVerdict
from reportgen.model import Campaign, Evidence, Run, Status, metric_values
from reportgen.numbers import figure, listed, median, plural
from reportgen.plan.schema import Plan, StopKind
from reportgen.recall import Recall

DRAFT_MIN_HOURS = 0.1  # a plan's step takes more than 0 h: the least a draft plan writes


class Quantity(StrEnum):
    """The campaign-wide quantities a plan relies on, measured or not (and the interval made from them)."""

    SAVE = "checkpoint save"
    TRANSFER = "checkpoint transfer"
    RESTORE = "checkpoint restore"
    RELOAD_TEST = "reload test in a new process"
    MTBI = "mean time between interruptions"
    EVALUATION = "evaluation pass"
    SAVE_INTERVAL = "save interval"


class EstimateKind(StrEnum):
    STEP = "step"
    VARIANT = "variant"


@dataclass(frozen=True)
class Estimate:
    kind: EstimateKind
    id: str
    planned_hours: float | None
    measured_hours: float | None
    next_hours: float | None
    basis: str
    measured: bool  # whether the next figure rests on a measurement
    runs: list[str] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    left_out: str | None = None  # why it is not proposed again (its variant's advice); None: proposed
    work_hours: float | None = None  # a variant's full run before the interruption allowance
    measurements: list[Measurement] = field(default_factory=list)  # what its runs measured (pace, saves, evaluations)

    @property
    def item(self) -> str:
        return f"{self.kind} {self.id}"

    @property
    def in_schedule(self) -> bool:
        """Whether the next campaign's suggested schedule holds it."""
        return self.left_out is None

    @property
    def draft_hours(self) -> float | None:
        """The hours the next plan's draft writes: the measured next figure to a tenth of an hour;
        None when the figure rests on no measurement or the step is left out (the plan's stays)."""
        if not (self.measured and self.in_schedule) or self.next_hours is None:
            return None
        return max(DRAFT_MIN_HOURS, round(self.next_hours, 1))


@dataclass(frozen=True)
class Measurement:
    """A quantity the plan relies on: what the plan said, what was measured, from what."""

    quantity: str
    unit: str  # "s" | "h" | "s/step"
    planned: float | None
    measured: float | None
    count: int
    basis: str
    evidence: list[Evidence] = field(default_factory=list)
    variant: str | None = None  # a per-variant quantity (seconds a step)

    @property
    def steps_per_second(self) -> float | None:
        """A measured pace (unit s/step) as a plan writes it."""
        return 1.0 / self.measured if self.unit == "s/step" and self.measured else None


class Doubt(StrEnum):
    """Why a figure of the next campaign rests on no measurement (an uncertainty's code)."""

    STEP_NOT_MEASURED = "step_not_measured"
    VARIANT_NOT_RUN = "variant_not_run"
    VARIANT_EXTRAPOLATED = "variant_extrapolated"  # no run completed: a full run scaled from the furthest
    VARIANT_TIME_UNKNOWN = "variant_time_unknown"  # completed, but no source gives the time it took
    VARIANT_NO_TOTAL = "variant_no_total"  # no run completed and none names its total steps
    NOT_MEASURED = "not_measured"  # a checkpoint quantity never timed, or a reload never tested
    NO_INTERRUPTION = "no_interruption"  # the interruption rate rests on none observed
    INTERVAL_INCOMPUTABLE = "interval_incomputable"
    PACE_NOT_MEASURED = "pace_not_measured"  # a planned steps per second never measured


@dataclass(frozen=True)
class Uncertainty:
    item: str
    message: str
    code: Doubt


class Advice(StrEnum):
    """What the next plan does with a variant."""

    KEEP = "keep"  # proposed again as it ran
    CHANGE = "change"  # proposed again only with a change the user makes first
    DROP = "drop"  # left out of the next plan, with its steps


class Case(StrEnum):
    """What happened to a variant in this campaign, which decides the advice."""

    BASELINE = "baseline"  # the control, evaluated at its end
    PASSED = "passed"
    FAILED = "failed"  # evaluated at its end and under the threshold: its answer is in
    DIVERGED = "diverged"  # a non-finite loss, a non-finite stop, or a non-finite final value
    STOPPED_BELOW_THRESHOLD = "stopped_below_threshold"  # a quality stop rule judged it before its end
    STOPPED_TRUNCATION = "stopped_truncation"  # required inputs were cut to fit the context
    STOPPED_NO_RESUME = "stopped_no_resume"  # interrupted with nothing to resume from
    STOPPED_OTHER = "stopped_other"  # a rule of kind `other`: a time or budget stop, say
    STOPPED_INTERRUPTED = "stopped_interrupted"  # a rule that fires on an interruption
    DROPPED = "dropped"  # at a decision point
    NOT_RUN = "not_run"
    NOT_EVALUATED = "not_evaluated"


# Which stop tells what happened when several fired on a variant's runs: inputs cut make any quality
# judgement unreliable, a quality judgement makes a resume question moot, and a stop that judges
# nothing comes last.
_STOP_CASES: dict[StopKind, Case] = {
    "truncation": Case.STOPPED_TRUNCATION,
    "below_threshold": Case.STOPPED_BELOW_THRESHOLD,
    "no_resume": Case.STOPPED_NO_RESUME,
    "other": Case.STOPPED_OTHER,
    "interrupted": Case.STOPPED_INTERRUPTED,
}
_DIVERGENCE_CHANGE = ("rerun it with a change such as a lower learning rate, under a new run id; "
                      "which change is yours to decide from what the run showed")


@dataclass(frozen=True)
class Divergence:
    """A non-finite value in a run's metrics: which metric, what value, from which step."""

    run: str
    metric: str
    value: str  # "NaN", "infinite", "-infinite", or "not finite" when a text log says so without the value
    step: int | None
    evidence: list[Evidence] = field(default_factory=list)

    @property
    def text(self) -> str:
        at = f" at step {self.step:,}" if self.step is not None else ""
        return f"{self.metric} {self.value}{at} of {self.run}"


@dataclass(frozen=True)
class VariantAdvice:
    """Whether the next plan proposes a variant again, why (with the evidence), and what the user does."""

    variant: str
    role: str
    category: str
    verdict: VariantVerdict
    case: Case
    advice: Advice
    reason: str  # what happened, in one sentence with its figures
    action: str  # what the next plan does with it, and any change the user must make
    evidence: list[Evidence] = field(default_factory=list)

    @property
    def proposed(self) -> bool:
        return self.advice != Advice.DROP


def divergences(campaign: Campaign, windows: dict[str, list[NonFinite]]) -> dict[str, list[Divergence]]:
    """Each run's non-finite windows with the value logged at their first row (NaN or infinite)."""
    groups = campaign.frames_by_run() if windows else {}
    out: dict[str, list[Divergence]] = {}
    for run, items in windows.items():
        frame = groups.get(run)
        cited = _cited_rows(frame, [w.evidence[0] for w in items if w.evidence]) if frame is not None else {}
        values: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for window in items:
            value = "not finite"
            first = window.evidence[0] if window.evidence else None
            if frame is not None and first is not None and first.line is not None and window.metric in frame.columns:
                if window.metric not in values:
                    values[window.metric] = metric_values(frame[window.metric])
                logged, numbers = values[window.metric]
                rows = cited.get((first.path, first.line), _NO_ROWS)
                found = numbers[rows[logged[rows]]]
                if len(found):
                    value = "NaN" if math.isnan(found[0]) else ("infinite" if found[0] > 0 else "-infinite")
            out.setdefault(run, []).append(Divergence(run, window.metric, value, window.step, list(window.evidence)))
    return out


_NO_ROWS = np.zeros(0, dtype=np.int64)


def _cited_rows(frame: pd.DataFrame, cited: list[Evidence]) -> dict[tuple[str, int], np.ndarray]:
    """The positions of a run's rows at each cited (file, line), in row order: each file's rows found once,
    however many windows cite it (a long run with many non-finite windows)."""
    out: dict[tuple[str, int], np.ndarray] = {}
    wanted: dict[str, set[int]] = {}
    for evidence in cited:
        if evidence.line is not None:
            wanted.setdefault(evidence.path, set()).add(evidence.line)
    if not wanted:
        return out
    lines = frame["line"].to_numpy(dtype="float64", na_value=np.nan)
    for path, numbers in wanted.items():
        at_path = np.flatnonzero((frame["path"] == path).to_numpy(dtype=bool, na_value=False))
        hit = at_path[np.isin(lines[at_path], np.array(sorted(numbers), dtype="float64"))]
        for line in numbers:
            out[(path, line)] = hit[lines[hit] == line]
    return out


def _is_loss(metric: str) -> bool:
    return "loss" in metric.lower()


def _case(result: VariantResult, stops: list[Stop], diverged: list[Divergence]) -> Case:
    verdict = result.verdict
    if verdict == VariantVerdict.DROPPED:
        return Case.DROPPED
    if verdict == VariantVerdict.NOT_RUN:
        return Case.NOT_RUN
    if verdict not in (VariantVerdict.STOPPED, VariantVerdict.NOT_EVALUATED):
        # A run reached its end with a final value, which stands over an earlier run's trouble.
        if result.value is None or not math.isfinite(result.value):
            return Case.DIVERGED
        if result.variant.role == "control":
            return Case.BASELINE
        return Case.PASSED if verdict == VariantVerdict.PASSED else Case.FAILED
    if any(s.kind == "non_finite" for s in stops) or any(_is_loss(d.metric) for d in diverged):
        return Case.DIVERGED
    if verdict == VariantVerdict.NOT_EVALUATED:
        return Case.NOT_EVALUATED
    kinds = {s.kind for s in stops}
    return next((case for kind, case in _STOP_CASES.items() if kind in kinds), Case.STOPPED_OTHER)


def _stop_text(stop: Stop) -> str:
    """A stop as the ledger has it: the rule, the run, the step and the reason (a condition reportgen found, or
    the script's own words)."""
    at = f" at step {stop.step:,}" if stop.step is not None and f"step {stop.step}" not in stop.reason else ""
    return f"{stop.rule or 'a stop'} fired on {stop.run}{at}: {stop.reason}"


def advise_variants(variants: list[VariantResult], stops: list[Stop],
                    diverged: dict[str, list[Divergence]]) -> list[VariantAdvice]:
    """Per variant: keep, change or drop for the next campaign, with the reason and its evidence.

    `stops` are the stop-rule ledger's entries, `diverged` each run's non-finite values. Decided in
    this order: a dropped variant stays dropped; the control is never left out (the variants are
    compared with it), only changed when something other than its score stopped it; a passed
    variant is kept; a failed one is left out (its answer is in); a diverged one is left out, or, when
    the question needs it (required), kept only with a change; a quality stop leaves it out; cut
    inputs or a missing resume state keep it only with their fix; a stop that judges nothing, an
    interruption, a variant never run or never evaluated keep it with a full run's estimate.
    """
    out = []
    for result in variants:
        variant = result.variant
        own = sorted((s for s in stops if s.run in result.runs), key=lambda s: (s.step is None, s.step or 0, s.id))
        values = sorted((d for r in result.runs for d in diverged.get(r, [])),
                        key=lambda d: (not _is_loss(d.metric), d.step is None, d.step or 0, d.metric))
        case = _case(result, own, values)
        control, required = variant.role == "control", variant.category == "required"
        name = variant.id
        evidence = set(result.evidence)
        if case == Case.DIVERGED:
            stop = next((s for s in own if s.kind == "non_finite"), None)
            if values:
                reason = f"{name} diverged: {values[0].text}"
                evidence.update(values[0].evidence)
            elif stop is not None:
                reason = f"{name} diverged: {stop.reason}"
            else:
                reason = f"{name} diverged: {result.reason}"
            if stop is not None:
                reason += f", and {stop.rule or 'a stop'} stopped it"
                evidence.update(stop.evidence)
            others = [s for s in own if s.kind != "non_finite"]
            if others:
                reason += f" (also {'; '.join(_stop_text(s) for s in others)})"
                evidence.update(e for s in others for e in s.evidence)
            reason += "."
            if control or required:
                advice = Advice.CHANGE
                action = (f"Kept only with a change you make first, because the question needs it ({'the control' if control else 'required'}): "
                          f"{_DIVERGENCE_CHANGE}.")
            else:
                advice = Advice.DROP
                action = f"Left out of the next plan: drop it, or {_DIVERGENCE_CHANGE}."
        elif case in (Case.STOPPED_BELOW_THRESHOLD, Case.STOPPED_TRUNCATION, Case.STOPPED_NO_RESUME, Case.STOPPED_OTHER,
                      Case.STOPPED_INTERRUPTED):
            kind = next((k for k, c in _STOP_CASES.items() if c == case), None)
            stop = next((s for s in own if s.kind == kind), own[0] if own else None)
            reason = f"{name} was stopped: {_stop_text(stop)}." if stop else f"{name} was stopped: {result.reason}."
            evidence.update(stop.evidence if stop else [])
            advice, action = _stopped_advice(case, control, stop.rule if stop else None)
        else:
            advice, reason, action = _plain_advice(case, result, control)
            if advice != Advice.DROP and own:  # an earlier run's stop, fixed by the run that reached its end
                reason = reason.rstrip(".") + f" (earlier, {'; '.join(_stop_text(s) for s in own)}; plan the configuration that reached its end)."
                evidence.update(e for s in own for e in s.evidence)
        out.append(VariantAdvice(name, variant.role, variant.category, result.verdict, case, advice, reason, action,
                                 sorted(evidence)))
    return out


def _stopped_advice(case: Case, control: bool, rule: str | None) -> tuple[Advice, str]:
    rule = rule or "the stop"
    if case == Case.STOPPED_BELOW_THRESHOLD:
        if control:
            return Advice.CHANGE, (f"Kept with a change: the control is the baseline and may score under the bar; "
                                   f"limit {rule} to the variants (its `variants:` list).")
        return Advice.DROP, (f"Left out: {rule} judged it under the bar before its end, so running it again unchanged "
                             "would repeat that. To try it again, add it as a changed variant with a new id.")
    if case == Case.STOPPED_TRUNCATION:
        return Advice.CHANGE, ("Kept only with a change you make first: every required input must fit the context "
                               "(a shorter prompt, or a longer context) before it runs again, under a new run id.")
    if case == Case.STOPPED_NO_RESUME:
        return Advice.CHANGE, ("Kept only with a change you make first: save checkpoints with the state a resume needs "
                               "and reload an early one in a new process, so an interruption costs only the work since "
                               "the last save.")
    if case == Case.STOPPED_INTERRUPTED:
        return Advice.KEEP, ("Kept: an interruption says nothing of its results; its estimate is a full run, "
                             "with the interruption allowance.")
    return Advice.KEEP, (f"Kept with a full run's estimate: {rule} does not say its results fell short (a time or "
                         "budget stop, for example), so the next lot must hold a whole run. If the rule did judge "
                         "its results, drop it instead.")


def _plain_advice(case: Case, result: VariantResult, control: bool) -> tuple[Advice, str, str]:
    name = result.variant.id
    if case == Case.DROPPED:
        return Advice.DROP, f"{name} was {result.reason.rstrip('.')}.", "Left out, as decided; the decision stands until the question changes."
    if control:
        return Advice.KEEP, f"{name} (the control): {result.reason}.", \
            "Kept: the variants are compared with it."
    if case == Case.PASSED:
        return Advice.KEEP, f"{name} passed: {result.reason}.", "Kept."
    if case == Case.FAILED:
        return Advice.DROP, f"{name} failed: {result.reason}.", (
            "Left out: its answer is in, and running it again unchanged would repeat it. To try it again, add it "
            "as a changed variant with a new id, with the change written in its description.")
    if case == Case.NOT_EVALUATED:
        return Advice.KEEP, f"{name} has no result: {result.reason}.", (
            "Kept: it still needs a run that reaches its end with a value of the quality metric.")
    return Advice.KEEP, f"{name} was never run.", "Kept as planned; its hours are the plan's guess."


@dataclass(frozen=True)
class NextCampaign:
    estimates: list[Estimate]
    measurements: list[Measurement]
    uncertainties: list[Uncertainty]
    allowance: float | None  # interruption hours per hour of other GPU-step work
    allowance_basis: str
    suggested_hours: float
    left_out: list[str]  # the steps not proposed again
    advice: list[VariantAdvice]
    lot_advice: LotAdvice

    @property
    def lots(self) -> list[LotFit]:
        return self.lot_advice.lots

    @property
    def lot(self) -> LotFit | None:
        """The lot to order: the one ordered when the suggested schedule fits it, else the cheapest that holds it."""
        return self.lot_advice.recommended


class _Estimator:
    """Builds the estimates of one analysed campaign, collecting the uncertainties on the way."""

    def __init__(self, plan: Plan, campaign: Campaign, schedule: ScheduleReport, runs: RunsReport,
                 checkpoints: CheckpointsReport, variance: VarianceReport, variants: list[VariantResult],
                 advice: list[VariantAdvice]):
        self.plan, self.campaign, self.schedule, self.runs = plan, campaign, schedule, runs
        self.checkpoints, self.variance, self.variants = checkpoints, variance, variants
        self.gpus = set(self.plan.gpu_names())
        # The variants not proposed again, with the reason each of their estimates carries.
        self.left_out = {a.variant: f"{a.reason} {a.action}" for a in advice if not a.proposed}
        self.uncertainties: list[Uncertainty] = []
        self.starts = start_steps(campaign)
        self.paces: dict[str, TrainingPace | None] = {}

    # -- interruptions -------------------------------------------------------------------------
    def allowance(self) -> tuple[float | None, str]:
        lost, other = 0.0, 0.0
        for item in self.schedule.steps:
            if item.step.resource not in self.gpus or item.actual.hours is None:
                continue
            down = self._interruption_hours(item.step.id)
            lost += down
            other += item.actual.hours - down
        if other <= 0:
            return None, "no GPU step was measured"
        if lost <= 0:
            return 0.0, f"no interruption cost work in the {other:.1f} h of measured GPU steps"
        return lost / other, (f"{lost:.2f} h of lost work and downtime over {other:.1f} h of other work "
                              f"in the measured GPU steps ({lost / other:.1%})")

    def _interruption_hours(self, step_id: str) -> float:
        variance = self.variance.steps.get(step_id)
        return sum(c.hours for c in variance.causes if c.cause in INTERRUPTION_CAUSES) if variance else 0.0

    def lost_hours(self, run: Run) -> float:
        """Work an interrupted run lost: its last save to its crash."""
        lost = lost_work(run, self.runs.statuses[run.id], self.checkpoints.by_run)
        return 0.0 if lost is None else max(0.0, hours_between(*lost))

    # -- variants ------------------------------------------------------------------------------
    def variant(self, result: VariantResult, allowance: float | None) -> Estimate:
        """One full run of a variant: a completed chain, else the furthest run scaled, else the plan's figure."""
        variant = result.variant
        steps = [s for s in self.plan.schedule.steps if s.variant == variant.id]
        planned = sum(s.hours for s in steps) if steps else None
        runs = [self.campaign.runs[r] for r in result.runs if r in self.campaign.runs]
        held = [h for r in runs if (h := self.runs.times[r.id].gpu_hours) is not None]
        measured = sum(held) if held else None
        evidence = [e for r in runs for e in [r.start_evidence, r.end_evidence] if e is not None]
        ids = [r.id for r in runs]
        left_out = self.left_out.get(variant.id)
        figures = self.run_measurements(ids)

        def keep_plan(why: str) -> Estimate:
            return Estimate(EstimateKind.VARIANT, variant.id, planned, measured, planned, why, False, ids, evidence,
                            left_out=left_out, measurements=figures)

        if result.verdict == VariantVerdict.DROPPED and not runs:
            return keep_plan(f"{result.reason.rstrip('.')}; never run, so the plan's figure is all there is")
        if not runs:
            self._uncertain(Doubt.VARIANT_NOT_RUN, f"variant {variant.id}", f"Variant {variant.id} ({variant.category}) was never run: "
                            f"{self._hours_text(planned)} are the plan's guess, unmeasured.")
            return keep_plan("never run: the plan's figure is kept")

        chains = []
        for run in runs:
            if self.runs.statuses[run.id].status != Status.COMPLETED:
                continue
            members = [self.campaign.runs[r] for r in chain(run.id, self.campaign) if r in self.campaign.runs]
            walls = [self.runs.times[m.id].gpu_hours for m in members]
            if any(w is None for w in walls):
                continue
            lost = sum(self.lost_hours(m) for m in members)
            chains.append((sum(w for w in walls if w is not None) - lost, [m.id for m in members], lost))
        if chains:
            chains.sort()
            work, chain_ids, lost = chains[len(chains) // 2]
            next_hours = work * (1.0 + (allowance or 0.0))
            basis = f"one full run: {' then '.join(chain_ids)} took {work:.2f} GPU h"
            if lost:
                basis += f" once the {lost:.2f} h lost at an interruption are taken out"
            if len(chains) > 1:
                basis += f" (the median of {len(chains)} completed runs)"
            if allowance:
                basis += f", plus the interruption allowance of {allowance:.1%}: {work:.2f} h × {1 + allowance:.3f} = {next_hours:.2f} h"
            return Estimate(EstimateKind.VARIANT, variant.id, planned, measured, next_hours, basis, True, ids, evidence,
                            left_out=left_out, work_hours=work, measurements=figures)

        # No completed run: scale the run that got furthest to the total its config names.
        reached = [r for r in runs if r.last_step and self.runs.times[r.id].gpu_hours]
        if reached:
            run = max(reached, key=lambda r: (r.last_step or 0, r.id))
            total = plan_total_steps(run, self.plan)
            begin = self.starts.get(run.id, 0)
            hours = self.runs.times[run.id].gpu_hours or 0.0
            done = (run.last_step or 0) - begin
            status = self.runs.statuses[run.id].status
            if total is not None and done > 0 and total[0] > (run.last_step or 0):
                work = hours * (total[0] - begin) / done
                next_hours = work * (1.0 + (allowance or 0.0))
                self._uncertain(Doubt.VARIANT_EXTRAPOLATED, f"variant {variant.id}", f"Variant {variant.id} never completed a run: a full run "
                                f"({next_hours:.1f} h) is extrapolated from {run.id}, {status} at step {run.last_step:,} "
                                f"of {total[0]:,}.")
                basis = (f"no run completed: {run.id} was {status} at step {run.last_step:,} after {hours:.2f} GPU h; "
                         f"scaled to the {total[0]:,} steps ({told(total[1])}): {hours:.2f} h × "
                         f"{total[0] - begin:,} / {done:,} steps = {work:.2f} h")
                if allowance:
                    basis += f", plus the interruption allowance of {allowance:.1%}: {work:.2f} h × {1 + allowance:.3f} = {next_hours:.2f} h"
                return Estimate(EstimateKind.VARIANT, variant.id, planned, measured, next_hours, basis, True, ids, evidence,
                                left_out=left_out, work_hours=work, measurements=figures)
        completed = [r.id for r in runs if self.runs.statuses[r.id].status == Status.COMPLETED]
        if completed:
            self._uncertain(Doubt.VARIANT_TIME_UNKNOWN, f"variant {variant.id}", f"Variant {variant.id} completed ({listed(completed)}), but no "
                            "source gives the time its runs took: how long a full run takes is unknown.")
            return keep_plan("completed, but the runs' time is unknown (no clock times, no training time stated): "
                             "the plan's figure is kept")
        self._uncertain(Doubt.VARIANT_NO_TOTAL, f"variant {variant.id}", f"Variant {variant.id} never completed a run and its runs name no "
                        "total steps: how long a full run takes is unknown.")
        return keep_plan("no run completed and no total steps to scale to: the plan's figure is kept")

    # -- steps ---------------------------------------------------------------------------------
    def step(self, item: StepReport, allowance: float | None, variants: dict[str, Estimate]) -> Estimate:
        """A step's next figure: measured, interruptions replaced by the allowance, an unfinished run completed."""
        step = item.step
        runs = [r.id for r in self._step_runs(item)]
        left_out = self.left_out.get(step.variant or "")
        figures = self.run_measurements(runs)
        if item.actual.hours is None:
            if left_out is not None:
                return Estimate(EstimateKind.STEP, step.id, step.hours, None, step.hours,
                                f"not run; variant {step.variant} is not proposed again", False, runs,
                                left_out=left_out, measurements=figures)
            why = (f"its runs ({listed(runs)}) keep no clock times" if runs else "no step events and no runs")
            self._uncertain(Doubt.STEP_NOT_MEASURED, f"step {step.id}", f"Step {step.id} ({step.hours:g} h planned) was never measured: {why}.")
            return Estimate(EstimateKind.STEP, step.id, step.hours, None, step.hours, "not measured: the plan's figure is kept",
                            False, runs, measurements=figures)
        actual = item.actual.hours
        down = self._interruption_hours(step.id)
        parts = [f"measured {actual:.2f} h ({item.actual.basis})"]
        work = actual
        extra = self._unfinished(step.variant, variants)
        if extra:
            work += extra
            parts.append(f"plus {extra:.2f} h for the rest of a full run of {step.variant} (see the variant)")
        next_hours = work
        if step.resource in self.gpus and allowance is not None:
            next_hours = (work - down) * (1.0 + allowance)
            if down:
                parts.append(f"its {down:.2f} h of lost work and downtime replaced by the interruption allowance: "
                             f"({work:.2f} h - {down:.2f} h) × {1 + allowance:.3f} = {next_hours:.2f} h")
            elif allowance:
                parts.append(f"plus the interruption allowance of {allowance:.1%}: {work:.2f} h × {1 + allowance:.3f} = {next_hours:.2f} h")
        evidence = list(item.actual.evidence[:4])
        return Estimate(EstimateKind.STEP, step.id, step.hours, actual, next_hours, "; ".join(parts), True, runs, evidence,
                        left_out=left_out, measurements=figures)

    def _step_runs(self, item: StepReport) -> list[Run]:
        return runs_matching(item.step.runs, self.campaign.runs) if item.step.runs else []

    def _unfinished(self, variant: str | None, variants: dict[str, Estimate]) -> float:
        """Hours a full run of a variant would add to its step when none of its runs finished."""
        estimate = variants.get(variant or "")
        if estimate is None or estimate.work_hours is None or estimate.measured_hours is None:
            return 0.0
        if any(self.runs.statuses[r].status == Status.COMPLETED for r in estimate.runs):
            return 0.0
        return max(0.0, estimate.work_hours - estimate.measured_hours)

    @staticmethod
    def _hours_text(hours: float | None) -> str:
        return "its hours" if hours is None else f"its {hours:g} h"

    def _uncertain(self, code: Doubt, item: str, message: str) -> None:
        self.uncertainties.append(Uncertainty(item, message, code))

    # -- quantities ----------------------------------------------------------------------------
    def measurements(self) -> list[Measurement]:
        campaign, policy = self.campaign, self.plan.checkpoints
        out: list[Measurement] = []
        for op, name in (("save", Quantity.SAVE), ("transfer", Quantity.TRANSFER), ("restore", Quantity.RESTORE)):
            timed = [o for o in campaign.checkpoint_ops if o.op == op and o.seconds is not None and o.seconds > 0]
            value = median([o.seconds for o in timed if o.seconds is not None])
            out.append(Measurement(name, "s", None, value, len(timed),
                                   f"median of {plural(len(timed), op)} timed" if timed else "never timed",
                                   Evidence.first((o.evidence for o in timed), 10)))
        tests = [t for t in campaign.reload_tests if t.new_process]
        value = median([t.seconds for t in tests if t.seconds is not None])
        out.append(Measurement(Quantity.RELOAD_TEST, "s", None, value, len(tests),
                               f"{plural(len(tests), 'test')} in a new process" if tests else "never done",
                               Evidence.first((t.evidence for t in tests), 10)))
        interval = self.checkpoints.interval
        out.append(Measurement(Quantity.MTBI, "h", policy.mean_hours_between_interruptions,
                               interval.mtbi_hours if interval.interruptions else None, interval.interruptions,
                               interval.mtbi_basis))
        evaluations = [e for e in campaign.evaluations if e.seconds]
        value = median([e.seconds for e in evaluations if e.seconds is not None])
        out.append(Measurement(Quantity.EVALUATION, "s", None, value, len(evaluations),
                               f"median of {plural(len(evaluations), 'timed evaluation')}" if evaluations else "never timed",
                               Evidence.first((e.evidence for e in evaluations), 10)))
        for result in self.variants:
            planned_rates = [s.steps_per_second for s in self.plan.schedule.steps
                             if s.variant == result.variant.id and s.steps_per_second]
            pace = self._pace(result.runs)
            if pace is None and not planned_rates:
                continue
            planned = 1.0 / planned_rates[0] if planned_rates else None
            if pace is None:
                out.append(Measurement(f"seconds a step ({result.variant.id})", "s/step", planned, None, 0,
                                       "no run logged timed steps", variant=result.variant.id))
                continue
            seconds, steps, evidence = pace
            out.append(Measurement(f"seconds a step ({result.variant.id})", "s/step", planned, seconds / steps,
                                   steps, f"{steps:,} steps of {listed(result.runs)}; evaluations, checkpoints "
                                   "and long-input stretches taken out", evidence, variant=result.variant.id))
        return out

    def run_measurements(self, run_ids: list[str]) -> list[Measurement]:
        """What these runs measured themselves: their pace, checkpoint saves, transfers and restores,
        evaluation passes (their evaluation runs' too) and reload tests; only what was timed."""
        if not run_ids:
            return []
        ids = set(run_ids) | {e for r in run_ids for e in self.runs.evaluated_by.get(r, [])}
        out: list[Measurement] = []
        pace = self._pace(run_ids)
        if pace is not None:
            seconds, steps, evidence = pace
            out.append(Measurement("seconds a step", "s/step", None, seconds / steps, steps,
                                   f"{seconds:,.0f} s of training over {steps:,} steps of {listed(run_ids)} "
                                   f"(evaluations, checkpoints and long-input stretches taken out): "
                                   f"{seconds:,.0f} / {steps:,} = {figure(seconds / steps)} s a step", evidence[:10]))

        def timed(quantity: str, items: list, what: str) -> None:
            values = [i.seconds for i in items if i.seconds is not None and i.seconds > 0]
            if values:
                runs = sorted({i.run for i in items if i.run})
                out.append(Measurement(quantity, "s", None, median(values), len(values),
                                       f"median of {plural(len(values), what)} in {listed(runs)}",
                                       Evidence.first((i.evidence for i in items), 10)))

        for op, quantity in (("save", Quantity.SAVE), ("transfer", Quantity.TRANSFER), ("restore", Quantity.RESTORE)):
            timed(quantity, [o for o in self.campaign.checkpoint_ops if o.op == op and o.run in ids], op)
        timed(Quantity.EVALUATION, [e for e in self.campaign.evaluations if e.run in ids], "evaluation")
        timed(Quantity.RELOAD_TEST, [t for t in self.campaign.reload_tests if t.new_process and t.run in ids], "test")
        return out

    def _run_pace(self, run_id: str) -> TrainingPace | None:
        """One run's training pace over its whole span, measured once however many estimates ask."""
        if run_id not in self.paces:
            self.paces[run_id] = self.measure_pace(run_id)
        return self.paces[run_id]

    def measure_pace(self, run_id: str) -> TrainingPace | None:
        return self.measure_paces([run_id])[0]

    def measure_paces(self, run_ids: list[str], map_runs: Mapper = one_by_one,
                      recall: Recall | None = None) -> list[TrainingPace | None]:
        """Each run's training pace over its whole span, through `map_runs` (recall: see training_paces)."""
        work = {}
        for run_id in run_ids:
            run = self.campaign.runs.get(run_id)
            if run is not None and run.started_at is not None:
                timing = run_timing(run, self.campaign, self.runs.statuses[run_id].status, self.checkpoints.by_run)
                work[run_id] = (timing, run.started_at, run.ended_at or run.last_seen_at or run.started_at)
        paces = dict(zip(work, training_paces(self.campaign, list(work.values()), map_runs, recall), strict=True))
        return [paces.get(run_id) for run_id in run_ids]

    def _pace(self, run_ids: list[str]) -> tuple[float, int, list[Evidence]] | None:
        seconds, steps, evidence = 0.0, 0, []
        for run_id in run_ids:
            pace = self._run_pace(run_id)
            if pace is not None:
                seconds += pace.seconds - pace.long_seconds
                steps += pace.steps
                evidence += pace.evidence
        return (seconds, steps, evidence) if steps else None

    def quantity_uncertainties(self, measurements: list[Measurement]) -> None:
        by_name = {m.quantity: m for m in measurements}
        policy = self.plan.checkpoints
        if by_name[Quantity.SAVE].measured is None:
            self._uncertain(Doubt.NOT_MEASURED, Quantity.SAVE, "No checkpoint save was timed: the save cost, and with it the save "
                            "interval, is unknown.")
        if policy.goal == "resume_training" and by_name[Quantity.RESTORE].measured is None:
            self._uncertain(Doubt.NOT_MEASURED, Quantity.RESTORE, "No checkpoint restore was timed: how long a resume takes is unknown.")
        if (policy.location or self.checkpoints.by_run) and by_name[Quantity.TRANSFER].measured is None:
            self._uncertain(Doubt.NOT_MEASURED, Quantity.TRANSFER, "No checkpoint transfer was timed: how long copying checkpoints off "
                            "the machine takes is unknown.")
        if policy.reload_test and by_name[Quantity.RELOAD_TEST].count == 0:
            self._uncertain(Doubt.NOT_MEASURED, Quantity.RELOAD_TEST, "No checkpoint was reloaded in a new process: "
                            "whether resuming works is untested.")
        interval = self.checkpoints.interval
        if not interval.interruptions:
            seen = f" in {interval.observed_gpu_hours:.1f} GPU h of runs" if interval.observed_gpu_hours else ""
            assumed = (f"; the plan's assumption of {policy.mean_hours_between_interruptions:g} h is untested"
                       if policy.mean_hours_between_interruptions else
                       "; the plan states no assumption, so no save interval is computed")
            self._uncertain(Doubt.NO_INTERRUPTION, Quantity.MTBI, f"No interruption was observed{seen}: the mean "
                            f"time between interruptions is unknown, and with it the interruption rate{assumed}.")
        if interval.incomputable is not None:
            self._uncertain(Doubt.INTERVAL_INCOMPUTABLE, Quantity.SAVE_INTERVAL, interval.incomputable)
        for m in measurements:
            if m.unit == "s/step" and m.measured is None:
                self._uncertain(Doubt.PACE_NOT_MEASURED, m.quantity, f"The planned {m.quantity} was never measured: no run logged timed steps.")

    # -- the suggested schedule ----------------------------------------------------------------
    def suggested(self, estimates: list[Estimate]) -> tuple[float, float, list[str]]:
        """The suggested schedule's length with the lots as ordered (a GPU waits for its lot's start), its length
        with the lots side by side (every one from the first's start: how the catalogue's lots of as many are
        judged), and the steps left out."""
        figures = {e.id: e for e in estimates if e.kind == EstimateKind.STEP}
        left_out = [e.id for e in figures.values() if not e.in_schedule]
        steps = []
        for step in self.plan.schedule.steps:
            if step.id in left_out:
                continue
            hours = figures[step.id].next_hours
            steps.append(step.model_copy(update={
                "hours": step.hours if hours is None else hours,
                "depends_on": kept_dependencies(self.plan, step.id, set(left_out)),
            }))
        trial = self.plan.model_copy(update={"schedule": self.plan.schedule.model_copy(update={"steps": steps})})
        first = min(lot.start for lot in trial.order.lots)  # the window's start
        together = trial.model_copy(update={"order": trial.order.model_copy(update={
            "lots": [lot.model_copy(update={"start": first}) for lot in trial.order.lots]})})
        return planned_hours(planned_timeline(trial)), planned_hours(planned_timeline(together)), left_out


def kept_dependencies(plan: Plan, step_id: str, left_out: set[str]) -> list[str]:
    """A step's dependencies once `left_out` steps are gone: each one left out is replaced by what it
    depended on, so "evaluate after train-r64 after train-r16" stays "evaluate after train-r16"
    instead of losing its order; a replacement another kept dependency already waits for is not
    added. In the plan's order, each once."""
    by_id = {s.id: s for s in plan.schedule.steps}

    def ancestors(start: str) -> set[str]:
        found: set[str] = set()
        pending = list(by_id[start].depends_on) if start in by_id else []
        while pending:
            dep = pending.pop()
            if dep not in found and dep in by_id:
                found.add(dep)
                pending += by_id[dep].depends_on
        return found

    own = set(by_id[step_id].depends_on)
    kept: list[str] = []
    pending = list(by_id[step_id].depends_on)
    seen: set[str] = set()
    while pending:
        dep = pending.pop(0)
        if dep in seen or dep not in by_id:
            continue
        seen.add(dep)
        if dep in left_out:
            pending[:0] = by_id[dep].depends_on
        else:
            kept.append(dep)
    implied = {a for dep in kept for a in ancestors(dep)}
    return [dep for dep in kept if dep in own or dep not in implied]


def next_campaign(plan: Plan, campaign: Campaign, schedule: ScheduleReport, runs: RunsReport,
                  checkpoints: CheckpointsReport, variance: VarianceReport, variants: list[VariantResult],
                  stops: Ledger, map_runs: Mapper = one_by_one, recall: Recall | None = None) -> NextCampaign:
    """The next campaign's figures from the sections they rest on: the schedule as measured, the runs'
    statuses and times, the checkpoints and save interval, the variance's causes, the variants and the
    stop-rule ledger. Every run's pace is measured first, through `map_runs` (recall: see training_paces)."""
    advice = advise_variants(variants, stops.stops, divergences(campaign, runs.non_finite))
    estimator = _Estimator(plan, campaign, schedule, runs, checkpoints, variance, variants, advice)
    ids = [run_id for run_id, run in campaign.runs.items() if run.started_at is not None]
    estimator.paces.update(zip(ids, estimator.measure_paces(ids, map_runs, recall), strict=True))
    allowance, allowance_basis = estimator.allowance()
    by_variant = {r.variant.id: estimator.variant(r, allowance) for r in variants}
    steps = [estimator.step(item, allowance, by_variant) for item in schedule.steps]
    measurements = estimator.measurements()
    estimator.quantity_uncertainties(measurements)
    hours, together, left_out = estimator.suggested(steps)
    estimates = [*steps, *by_variant.values()]
    # R16: an item the next campaign does not propose is no uncertainty of it.
    gone = {e.item for e in estimates if not e.in_schedule}
    gone |= {m.quantity for m in measurements if m.variant in estimator.left_out}
    return NextCampaign(
        estimates=estimates,
        measurements=measurements,
        uncertainties=[u for u in estimator.uncertainties if u.item not in gone],
        allowance=allowance,
        allowance_basis=allowance_basis,
        suggested_hours=hours,
        left_out=left_out,
        advice=advice,
        lot_advice=lot_advice(plan, hours, together=together, nothing_to_try=not any(
            a.proposed for a in advice if a.variant in {r.variant.id for r in variants if r.variant.role == "variant"})),
    )
