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
- a step or variant never measured keeps the plan's figure and is an uncertainty; a dropped one is
  left out of the suggested schedule, and said so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from reportgen.analysis.checkpoints import CheckpointsReport
from reportgen.analysis.runs import RunsReport, chain, total_steps
from reportgen.analysis.schedule import (
    ScheduleReport,
    StepReport,
    hours_between,
    planned_hours,
    planned_timeline,
    runs_matching,
)
from reportgen.analysis.variance import (
    INTERRUPTION_CAUSES,
    VarianceReport,
    lost_work,
    run_training,
    start_steps,
)
from reportgen.analysis.verdicts import VariantResult, VariantVerdict
from reportgen.model import Campaign, Evidence, Run, Status
from reportgen.numbers import median, plural
from reportgen.plan.schema import Plan

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
    in_schedule: bool = True  # False: left out of the suggested schedule (dropped)
    work_hours: float | None = None  # a variant's full run before the interruption allowance

    @property
    def item(self) -> str:
        return f"{self.kind} {self.id}"

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
    VARIANT_DROPPED = "variant_dropped"
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


@dataclass(frozen=True)
class LotFit:
    label: str
    price: float
    currency: str
    lots: int
    hours: float
    fits: bool
    unused_hours: float


@dataclass(frozen=True)
class NextCampaign:
    estimates: list[Estimate]
    measurements: list[Measurement]
    uncertainties: list[Uncertainty]
    allowance: float | None  # interruption hours per hour of other GPU-step work
    allowance_basis: str
    suggested_hours: float
    left_out: list[str]
    lots: list[LotFit]

    @property
    def lot(self) -> LotFit | None:
        """The cheapest lot the suggested schedule fits in."""
        return next((lot for lot in self.lots if lot.fits), None)


class _Estimator:
    """Builds the estimates of one analysed campaign, collecting the uncertainties on the way."""

    def __init__(self, plan: Plan, campaign: Campaign, schedule: ScheduleReport, runs: RunsReport,
                 checkpoints: CheckpointsReport, variance: VarianceReport, variants: list[VariantResult]):
        self.plan, self.campaign, self.schedule, self.runs = plan, campaign, schedule, runs
        self.checkpoints, self.variance, self.variants = checkpoints, variance, variants
        self.gpus = set(self.plan.gpu_names())
        self.dropped = {r.variant.id: r for r in variants if r.verdict == VariantVerdict.DROPPED}
        self.uncertainties: list[Uncertainty] = []
        self.frames = campaign.frames_by_run()
        self.starts = start_steps(campaign)

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

        def keep_plan(why: str) -> Estimate:
            return Estimate(EstimateKind.VARIANT, variant.id, planned, measured, planned, why, False, ids, evidence,
                            in_schedule=variant.id not in self.dropped)

        if variant.id in self.dropped and not runs:
            why = f"{self.dropped[variant.id].reason.rstrip('.')}; never run, so the plan's figure is all there is"
            self._uncertain(Doubt.VARIANT_DROPPED, f"variant {variant.id}", f"Variant {variant.id} ({variant.category}) was dropped and never "
                            f"run: {self._hours_text(planned)} are the plan's guess, unmeasured.")
            return keep_plan(why)
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
                basis += f", plus the interruption allowance of {allowance:.1%}"
            return Estimate(EstimateKind.VARIANT, variant.id, planned, measured, next_hours, basis, True, ids, evidence, work_hours=work)

        # No completed run: scale the run that got furthest to the total its config names.
        reached = [r for r in runs if r.last_step and self.runs.times[r.id].gpu_hours]
        if reached:
            run = max(reached, key=lambda r: (r.last_step or 0, r.id))
            total = total_steps(run)
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
                         f"scaled to the {total[0]:,} steps of its config ('{total[1]}')")
                if allowance:
                    basis += f", plus the interruption allowance of {allowance:.1%}"
                return Estimate(EstimateKind.VARIANT, variant.id, planned, measured, next_hours, basis, True, ids, evidence,
                                work_hours=work)
        completed = [r.id for r in runs if self.runs.statuses[r.id].status == Status.COMPLETED]
        if completed:
            self._uncertain(Doubt.VARIANT_TIME_UNKNOWN, f"variant {variant.id}", f"Variant {variant.id} completed ({', '.join(completed)}), but no "
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
        if item.actual.hours is None:
            if step.variant in self.dropped:
                return Estimate(EstimateKind.STEP, step.id, step.hours, None, step.hours,
                                f"not run: variant {step.variant} was dropped; left out of the suggested schedule",
                                False, runs, in_schedule=False)
            why = (f"its runs ({', '.join(runs)}) keep no clock times" if runs else "no step events and no runs")
            self._uncertain(Doubt.STEP_NOT_MEASURED, f"step {step.id}", f"Step {step.id} ({step.hours:g} h planned) was never measured: {why}.")
            return Estimate(EstimateKind.STEP, step.id, step.hours, None, step.hours, "not measured: the plan's figure is kept",
                            False, runs)
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
                parts.append(f"its {down:.2f} h of lost work and downtime replaced by the allowance of {allowance:.1%}")
            elif allowance:
                parts.append(f"plus the interruption allowance of {allowance:.1%}")
        evidence = list(item.actual.evidence[:4])
        return Estimate(EstimateKind.STEP, step.id, step.hours, actual, next_hours, "; ".join(parts), True, runs, evidence)

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
                                   sorted({o.evidence for o in timed})[:10]))
        tests = [t for t in campaign.reload_tests if t.new_process]
        value = median([t.seconds for t in tests if t.seconds is not None])
        out.append(Measurement(Quantity.RELOAD_TEST, "s", None, value, len(tests),
                               f"{plural(len(tests), 'test')} in a new process" if tests else "never done",
                               sorted({t.evidence for t in tests})[:10]))
        interval = self.checkpoints.interval
        out.append(Measurement(Quantity.MTBI, "h", policy.mean_hours_between_interruptions,
                               interval.mtbi_hours if interval.interruptions else None, interval.interruptions,
                               interval.mtbi_basis))
        evaluations = [e for e in campaign.evaluations if e.seconds]
        value = median([e.seconds for e in evaluations if e.seconds is not None])
        out.append(Measurement(Quantity.EVALUATION, "s", None, value, len(evaluations),
                               f"median of {plural(len(evaluations), 'timed evaluation')}" if evaluations else "never timed",
                               sorted({e.evidence for e in evaluations})[:10]))
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
                                   steps, f"{steps:,} steps of {', '.join(result.runs)}; evaluations, checkpoints "
                                   "and long-input stretches taken out", evidence, variant=result.variant.id))
        return out

    def _pace(self, run_ids: list[str]) -> tuple[float, int, list[Evidence]] | None:
        seconds, steps, evidence = 0.0, 0, []
        for run_id in run_ids:
            run = self.campaign.runs.get(run_id)
            if run is None or run.started_at is None:
                continue
            end = run.ended_at or run.last_seen_at or run.started_at
            pace = run_training(run, self.frames.get(run_id), self.campaign, self.runs.statuses[run_id].status,
                                self.checkpoints.by_run, run.started_at, end)
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
                            "interval (R12), is unknown.")
        if policy.goal == "resume_training" and by_name[Quantity.RESTORE].measured is None:
            self._uncertain(Doubt.NOT_MEASURED, Quantity.RESTORE, "No checkpoint restore was timed: how long a resume takes is unknown.")
        if (policy.location or self.checkpoints.by_run) and by_name[Quantity.TRANSFER].measured is None:
            self._uncertain(Doubt.NOT_MEASURED, Quantity.TRANSFER, "No checkpoint transfer was timed: how long copying checkpoints off "
                            "the machine takes is unknown.")
        if policy.reload_test and by_name[Quantity.RELOAD_TEST].count == 0:
            self._uncertain(Doubt.NOT_MEASURED, Quantity.RELOAD_TEST, "No checkpoint was reloaded in a new process (R12): "
                            "whether resuming works is untested.")
        interval = self.checkpoints.interval
        if not interval.interruptions:
            seen = f" in {interval.observed_gpu_hours:.1f} GPU h of runs" if interval.observed_gpu_hours else ""
            assumed = (f"; the plan's assumption of {policy.mean_hours_between_interruptions:g} h is untested"
                       if policy.mean_hours_between_interruptions else
                       "; the plan states no assumption, so no save interval is computed (R12)")
            self._uncertain(Doubt.NO_INTERRUPTION, Quantity.MTBI, f"No interruption was observed{seen}: the mean "
                            f"time between interruptions is unknown, and with it the interruption rate{assumed}.")
        if interval.incomputable is not None:
            self._uncertain(Doubt.INTERVAL_INCOMPUTABLE, Quantity.SAVE_INTERVAL, interval.incomputable)
        for m in measurements:
            if m.unit == "s/step" and m.measured is None:
                self._uncertain(Doubt.PACE_NOT_MEASURED, m.quantity, f"The planned {m.quantity} was never measured: no run logged timed steps.")

    # -- the suggested schedule ----------------------------------------------------------------
    def suggested(self, estimates: list[Estimate]) -> tuple[float, list[str]]:
        figures = {e.id: e for e in estimates if e.kind == EstimateKind.STEP}
        left_out = [e.id for e in figures.values() if not e.in_schedule]
        steps = []
        for step in self.plan.schedule.steps:
            if step.id in left_out:
                continue
            hours = figures[step.id].next_hours
            steps.append(step.model_copy(update={
                "hours": step.hours if hours is None else hours,
                "depends_on": [d for d in step.depends_on if d not in left_out],
            }))
        trial = self.plan.model_copy(update={"schedule": self.plan.schedule.model_copy(update={"steps": steps})})
        return planned_hours(planned_timeline(trial)), left_out

    def lots(self, hours: float) -> list[LotFit]:
        """Catalogue lots of the ordered GPU, as many as were ordered, cheapest first; else the order's own lot."""
        ordered = self.plan.order.lots
        first, count = ordered[0], len(ordered)
        entries = [(c.label, c.price, c.currency, c.days) for c in self.plan.catalogue if (c.gpu, c.gpus) == (first.gpu, first.gpus)]
        if not entries:
            entries = [(first.label, first.price, first.currency, first.days)]
        out = []
        for label, price, currency, days in sorted(set(entries), key=lambda e: (e[1], e[3], e[0])):
            window = days * 24.0
            out.append(LotFit(label if count == 1 else f"{count} × {label}", round(price * count, 2),
                              currency or self.plan.order.currency, count, window, hours <= window + 1e-9, window - hours))
        return out


def next_campaign(plan: Plan, campaign: Campaign, schedule: ScheduleReport, runs: RunsReport,
                  checkpoints: CheckpointsReport, variance: VarianceReport, variants: list[VariantResult]) -> NextCampaign:
    """The next campaign's figures from the sections they rest on: the schedule as measured, the runs'
    statuses and times, the checkpoints and save interval, the variance's causes and the variants."""
    estimator = _Estimator(plan, campaign, schedule, runs, checkpoints, variance, variants)
    allowance, allowance_basis = estimator.allowance()
    by_variant = {r.variant.id: estimator.variant(r, allowance) for r in variants}
    steps = [estimator.step(item, allowance, by_variant) for item in schedule.steps]
    measurements = estimator.measurements()
    estimator.quantity_uncertainties(measurements)
    hours, left_out = estimator.suggested(steps)
    return NextCampaign(
        estimates=[*steps, *by_variant.values()],
        measurements=measurements,
        uncertainties=estimator.uncertainties,
        allowance=allowance,
        allowance_basis=allowance_basis,
        suggested_hours=hours,
        left_out=left_out,
        lots=estimator.lots(hours),
    )

