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
from typing import TYPE_CHECKING

from reportgen.analysis.runs import chain, total_steps
from reportgen.analysis.schedule import (
    StepReport,
    planned_hours,
    planned_timeline,
    runs_matching,
)
from reportgen.analysis.variance import last_save_before, run_training
from reportgen.analysis.verdicts import VariantResult
from reportgen.model import Evidence, Run
from reportgen.numbers import median, plural
from reportgen.plan.schema import Plan

if TYPE_CHECKING:
    from reportgen.analysis import Analysis

INTERRUPTION_CAUSES = ("lost work", "downtime")


@dataclass
class Estimate:
    kind: str  # step | variant
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


@dataclass
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


@dataclass
class Uncertainty:
    item: str
    message: str


@dataclass
class LotFit:
    label: str
    price: float
    currency: str
    lots: int
    hours: float
    fits: bool
    unused_hours: float


@dataclass
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

    def __init__(self, analysis: Analysis):
        self.a = analysis
        self.plan: Plan = analysis.plan
        self.gpus = set(self.plan.gpu_names())
        self.dropped = {r.variant.id: r for r in analysis.variants if r.verdict == "dropped"}
        self.uncertainties: list[Uncertainty] = []
        self.frames = analysis.campaign.frames_by_run()

    # -- interruptions -------------------------------------------------------------------------
    def allowance(self) -> tuple[float | None, str]:
        lost, other = 0.0, 0.0
        for item in self.a.schedule.steps:
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
        variance = self.a.variance.get(step_id)
        return sum(c.hours for c in variance.causes if c.cause in INTERRUPTION_CAUSES) if variance else 0.0

    def lost_hours(self, run: Run) -> float:
        """Work an interrupted run lost: its last save to its crash."""
        if self.a.statuses[run.id].status != "interrupted":
            return 0.0
        crash = run.last_seen_at or run.ended_at
        if crash is None:
            return 0.0
        return max(0.0, (crash - last_save_before(run, crash, self.a.checkpoints)).total_seconds() / 3600.0)

    # -- variants ------------------------------------------------------------------------------
    def variant(self, result: VariantResult, allowance: float | None) -> Estimate:
        """One full run of a variant: a completed chain, else the furthest run scaled, else the plan's figure."""
        variant = result.variant
        steps = [s for s in self.plan.schedule.steps if s.variant == variant.id]
        planned = sum(s.hours for s in steps) if steps else None
        runs = [self.a.campaign.runs[r] for r in result.runs if r in self.a.campaign.runs]
        held = [h for r in runs if (h := self.a.run_times[r.id].gpu_hours) is not None]
        measured = sum(held) if held else None
        evidence = [e for r in runs for e in [r.start_evidence, r.end_evidence] if e is not None]
        ids = [r.id for r in runs]

        def keep_plan(why: str) -> Estimate:
            return Estimate("variant", variant.id, planned, measured, planned, why, False, ids, evidence,
                            in_schedule=variant.id not in self.dropped)

        if variant.id in self.dropped and not runs:
            why = f"{self.dropped[variant.id].reason.rstrip('.')}; never run, so the plan's figure is all there is"
            self._uncertain(f"variant {variant.id}", f"Variant {variant.id} ({variant.category}) was dropped and never "
                            f"run: {self._hours_text(planned)} are the plan's guess, unmeasured.")
            return keep_plan(why)
        if not runs:
            self._uncertain(f"variant {variant.id}", f"Variant {variant.id} ({variant.category}) was never run: "
                            f"{self._hours_text(planned)} are the plan's guess, unmeasured.")
            return keep_plan("never run: the plan's figure is kept")

        chains = []
        for run in runs:
            if self.a.statuses[run.id].status != "completed":
                continue
            members = [self.a.campaign.runs[r] for r in chain(run.id, self.a.campaign) if r in self.a.campaign.runs]
            walls = [self.a.run_times[m.id].gpu_hours for m in members]
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
            return Estimate("variant", variant.id, planned, measured, next_hours, basis, True, ids, evidence, work_hours=work)

        # No completed run: scale the run that got furthest to the total its config names.
        reached = [r for r in runs if r.last_step and self.a.run_times[r.id].gpu_hours]
        if reached:
            run = max(reached, key=lambda r: (r.last_step or 0, r.id))
            total = total_steps(run)
            begin = next((e.step for e in self.a.campaign.run_events if e.run == run.id and e.kind == "start" and e.step), 0) or 0
            hours = self.a.run_times[run.id].gpu_hours or 0.0
            done = (run.last_step or 0) - begin
            status = self.a.statuses[run.id].status
            if total is not None and done > 0 and total[0] > (run.last_step or 0):
                work = hours * (total[0] - begin) / done
                next_hours = work * (1.0 + (allowance or 0.0))
                self._uncertain(f"variant {variant.id}", f"Variant {variant.id} never completed a run: a full run "
                                f"({next_hours:.1f} h) is extrapolated from {run.id}, {status} at step {run.last_step:,} "
                                f"of {total[0]:,}.")
                basis = (f"no run completed: {run.id} was {status} at step {run.last_step:,} after {hours:.2f} GPU h; "
                         f"scaled to the {total[0]:,} steps of its config ('{total[1]}')")
                if allowance:
                    basis += f", plus the interruption allowance of {allowance:.1%}"
                return Estimate("variant", variant.id, planned, measured, next_hours, basis, True, ids, evidence,
                                work_hours=work)
        completed = [r.id for r in runs if self.a.statuses[r.id].status == "completed"]
        if completed:
            self._uncertain(f"variant {variant.id}", f"Variant {variant.id} completed ({', '.join(completed)}), but no "
                            "source gives the time its runs took: how long a full run takes is unknown.")
            return keep_plan("completed, but the runs' time is unknown (no clock times, no training time stated): "
                             "the plan's figure is kept")
        self._uncertain(f"variant {variant.id}", f"Variant {variant.id} never completed a run and its runs name no "
                        "total steps: how long a full run takes is unknown.")
        return keep_plan("no run completed and no total steps to scale to: the plan's figure is kept")

    # -- steps ---------------------------------------------------------------------------------
    def step(self, item: StepReport, allowance: float | None, variants: dict[str, Estimate]) -> Estimate:
        """A step's next figure: measured, interruptions replaced by the allowance, an unfinished run completed."""
        step = item.step
        runs = [r.id for r in self._step_runs(item)]
        if item.actual.hours is None:
            if step.variant in self.dropped:
                return Estimate("step", step.id, step.hours, None, step.hours,
                                f"not run: variant {step.variant} was dropped; left out of the suggested schedule",
                                False, runs, in_schedule=False)
            why = (f"its runs ({', '.join(runs)}) keep no clock times" if runs else "no step events and no runs")
            self._uncertain(f"step {step.id}", f"Step {step.id} ({step.hours:g} h planned) was never measured: {why}.")
            return Estimate("step", step.id, step.hours, None, step.hours, "not measured: the plan's figure is kept",
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
        return Estimate("step", step.id, step.hours, actual, next_hours, "; ".join(parts), True, runs, evidence)

    def _step_runs(self, item: StepReport) -> list[Run]:
        return runs_matching(item.step.runs, self.a.campaign.runs) if item.step.runs else []

    def _unfinished(self, variant: str | None, variants: dict[str, Estimate]) -> float:
        """Hours a full run of a variant would add to its step when none of its runs finished."""
        estimate = variants.get(variant or "")
        if estimate is None or estimate.work_hours is None or estimate.measured_hours is None:
            return 0.0
        if any(self.a.statuses[r].status == "completed" for r in estimate.runs):
            return 0.0
        return max(0.0, estimate.work_hours - estimate.measured_hours)

    @staticmethod
    def _hours_text(hours: float | None) -> str:
        return "its hours" if hours is None else f"its {hours:g} h"

    def _uncertain(self, item: str, message: str) -> None:
        self.uncertainties.append(Uncertainty(item, message))

    # -- quantities ----------------------------------------------------------------------------
    def measurements(self) -> list[Measurement]:
        campaign, policy = self.a.campaign, self.plan.checkpoints
        out: list[Measurement] = []
        for op, name in (("save", "checkpoint save"), ("transfer", "checkpoint transfer"), ("restore", "checkpoint restore")):
            timed = [o for o in campaign.checkpoint_ops if o.op == op and o.seconds is not None and o.seconds > 0]
            value = median([o.seconds for o in timed if o.seconds is not None])
            out.append(Measurement(name, "s", None, value, len(timed),
                                   f"median of {plural(len(timed), op)} timed" if timed else "never timed",
                                   sorted({o.evidence for o in timed})[:10]))
        tests = [t for t in campaign.reload_tests if t.new_process]
        value = median([t.seconds for t in tests if t.seconds is not None])
        out.append(Measurement("reload test in a new process", "s", None, value, len(tests),
                               f"{plural(len(tests), 'test')} in a new process" if tests else "never done",
                               sorted({t.evidence for t in tests})[:10]))
        interval = self.a.interval
        out.append(Measurement("mean time between interruptions", "h", policy.mean_hours_between_interruptions,
                               interval.mtbi_hours if interval.interruptions else None, interval.interruptions,
                               interval.mtbi_basis))
        evaluations = [e for e in campaign.evaluations if e.seconds]
        value = median([e.seconds for e in evaluations if e.seconds is not None])
        out.append(Measurement("evaluation pass", "s", None, value, len(evaluations),
                               f"median of {plural(len(evaluations), 'timed evaluation')}" if evaluations else "never timed",
                               sorted({e.evidence for e in evaluations})[:10]))
        for result in self.a.variants:
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
            run = self.a.campaign.runs.get(run_id)
            if run is None or run.started_at is None:
                continue
            end = run.ended_at or run.last_seen_at or run.started_at
            pace = run_training(run, self.frames.get(run_id), self.a.campaign, self.a.statuses[run_id].status,
                                self.a.checkpoints, run.started_at, end)
            if pace is not None:
                seconds += pace.seconds - pace.long_seconds
                steps += pace.steps
                evidence += pace.evidence
        return (seconds, steps, evidence) if steps else None

    def quantity_uncertainties(self, measurements: list[Measurement]) -> None:
        by_name = {m.quantity: m for m in measurements}
        policy = self.plan.checkpoints
        if by_name["checkpoint save"].measured is None:
            self._uncertain("checkpoint save", "No checkpoint save was timed: the save cost, and with it the save "
                            "interval (R12), is unknown.")
        if policy.goal == "resume_training" and by_name["checkpoint restore"].measured is None:
            self._uncertain("checkpoint restore", "No checkpoint restore was timed: how long a resume takes is unknown.")
        if (policy.location or self.a.checkpoints) and by_name["checkpoint transfer"].measured is None:
            self._uncertain("checkpoint transfer", "No checkpoint transfer was timed: how long copying checkpoints off "
                            "the machine takes is unknown.")
        if policy.reload_test and by_name["reload test in a new process"].count == 0:
            self._uncertain("reload test in a new process", "No checkpoint was reloaded in a new process (R12): "
                            "whether resuming works is untested.")
        interval = self.a.interval
        if not interval.interruptions:
            seen = f" in {interval.observed_gpu_hours:.1f} GPU h of runs" if interval.observed_gpu_hours else ""
            assumed = (f"; the plan's assumption of {policy.mean_hours_between_interruptions:g} h is untested"
                       if policy.mean_hours_between_interruptions else
                       "; the plan states no assumption, so no save interval is computed (R12)")
            self._uncertain("mean time between interruptions", f"No interruption was observed{seen}: the mean "
                            f"time between interruptions is unknown, and with it the interruption rate{assumed}.")
        for text in interval.uncertainties:
            if "cannot be computed" in text:
                self._uncertain("save interval", text)
        for m in measurements:
            if m.unit == "s/step" and m.measured is None:
                self._uncertain(m.quantity, f"The planned {m.quantity} was never measured: no run logged timed steps.")

    # -- the suggested schedule ----------------------------------------------------------------
    def suggested(self, estimates: list[Estimate]) -> tuple[float, list[str]]:
        figures = {e.id: e for e in estimates if e.kind == "step"}
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


def next_campaign(analysis: Analysis) -> NextCampaign:
    estimator = _Estimator(analysis)
    allowance, allowance_basis = estimator.allowance()
    variants = {r.variant.id: estimator.variant(r, allowance) for r in analysis.variants}
    steps = [estimator.step(item, allowance, variants) for item in analysis.schedule.steps]
    measurements = estimator.measurements()
    estimator.quantity_uncertainties(measurements)
    hours, left_out = estimator.suggested(steps)
    return NextCampaign(
        estimates=[*steps, *variants.values()],
        measurements=measurements,
        uncertainties=estimator.uncertainties,
        allowance=allowance,
        allowance_basis=allowance_basis,
        suggested_hours=hours,
        left_out=left_out,
        lots=estimator.lots(hours),
    )

