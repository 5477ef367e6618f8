"""Pure analysis of the campaign against its plan: schedule, runs, verdicts. No I/O, no HTML."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from reportgen.analysis import stops as stop_rules
from reportgen.analysis.checkpoints import RunCheckpoint, run_checkpoints
from reportgen.analysis.decisions import PointStatus, decision_points
from reportgen.analysis.deliverables import Costs, DeliverableResult, costs, judge
from reportgen.analysis.estimates import NextCampaign, next_campaign
from reportgen.analysis.interval import SaveInterval, save_interval
from reportgen.analysis.nonfinite import NonFinite, non_finite
from reportgen.analysis.options import PlanOption, plan_options
from reportgen.analysis.runs import (
    RunTime,
    chain_order,
    config_problems,
    continuations,
    run_time,
)
from reportgen.analysis.schedule import ScheduleReport, reconcile
from reportgen.analysis.status import RunStatus, run_status
from reportgen.analysis.stops import Ledger
from reportgen.analysis.variance import (
    Gap,
    StepVariance,
    Variance,
    between_steps,
    campaign_variance,
    explain,
)
from reportgen.analysis.verdicts import (
    VariantResult,
    Verdict,
    after_stops,
    assign_variants,
    campaign_verdict,
    variant_results,
)
from reportgen.model import Campaign, Evidence
from reportgen.plan.schema import Plan
from reportgen.verify import DeliverableCheck


@dataclass
class Analysis:
    plan: Plan
    campaign: Campaign
    schedule: ScheduleReport
    run_variants: dict[str, str | None]
    statuses: dict[str, RunStatus]
    ledger: Ledger
    run_times: dict[str, RunTime]
    continued_by: dict[str, list[str]]
    run_order: list[str]  # by name, each continuation right after the run it resumes
    checkpoints: dict[str, list[RunCheckpoint]]
    non_finite: dict[str, list[NonFinite]]
    interval: SaveInterval
    deliverables: list[DeliverableResult]
    costs: Costs
    options: list[PlanOption]
    variance: dict[str, StepVariance]
    gaps: list[Gap]  # waiting between steps
    total_variance: Variance | None  # the whole campaign, planned span to actual span
    decision_points: list[PointStatus]
    variants: list[VariantResult]
    verdict: Verdict
    problems: list[tuple[Evidence | None, str]]

    @cached_property
    def next(self) -> NextCampaign:
        """The next campaign's estimates, made from all of the above."""
        return next_campaign(self)


def unplanned_references(plan: Plan, campaign: Campaign) -> list[tuple[Evidence | None, str]]:
    """Logged steps, decision points, variants and stop rules the plan does not have: shown, not dropped."""
    steps = {s.id for s in plan.schedule.steps}
    points = {p.id for p in plan.decision_points}
    variants = {v.id for v in plan.variants}
    rules = {r.id for r in plan.stop_rules}
    problems: list[tuple[Evidence | None, str]] = []
    for mark in campaign.step_marks:
        if mark.step_id not in steps:
            problems.append((mark.evidence, f"step event for '{mark.step_id}', which the plan's schedule does not have; not counted"))
    for decision in campaign.decisions:
        if decision.point not in points:
            problems.append((decision.evidence, f"decision at '{decision.point}', which is not one of the plan's decision points"))
        if decision.variant is not None and decision.variant not in variants:
            problems.append((decision.evidence, f"decision about variant '{decision.variant}', which the plan does not have"))
    for stop in campaign.stops:
        if stop.rule is not None and stop.rule not in rules:
            problems.append((stop.evidence, f"stop by rule '{stop.rule}', which is not one of the plan's stop rules (R10: rules are written before the trials)"))
    return problems


def analyse(plan: Plan, campaign: Campaign, checks: list[DeliverableCheck] | None = None) -> Analysis:
    """The whole analysis; `checks` are the deliverables' file-level checks (reportgen.verify), done where LOGS is at hand."""
    run_variants, problems = assign_variants(plan, campaign)
    problems += unplanned_references(plan, campaign)
    problems += config_problems(campaign, run_variants)
    # What the logs say about each run's end first; then the rules, some of which need it (no_resume).
    logged = {run_id: run_status(run, campaign) for run_id, run in campaign.runs.items()}
    interrupted: dict[str, tuple[datetime | None, list[Evidence]]] = {
        run_id: (campaign.runs[run_id].ended_at or campaign.runs[run_id].last_seen_at, status.evidence)
        for run_id, status in logged.items()
        if status.status == "interrupted"
    }
    checkpoints = run_checkpoints(campaign)
    windows = non_finite(campaign)
    ledger = stop_rules.evaluate(plan, campaign, run_variants, interrupted, windows, checkpoints)
    statuses = {run_id: after_stops(status, ledger.for_run(run_id)) for run_id, status in logged.items()}
    results = variant_results(plan, campaign, run_variants, statuses, ledger)
    run_times = {run_id: run_time(run, plan, campaign.messages) for run_id, run in campaign.runs.items()}
    saves = [op for op in campaign.checkpoint_ops if op.op == "save" and op.seconds is not None]
    measured = [t.gpu_hours for t in run_times.values() if t.gpu_hours is not None]
    interval = save_interval(
        [op.seconds for op in saves if op.seconds is not None], [op.evidence for op in saves],
        interruptions=sum(1 for s in statuses.values() if s.status == "interrupted"),
        gpu_hours=sum(measured) if measured else None,
        assumed_mtbi_hours=plan.checkpoints.mean_hours_between_interruptions,
        planned_minutes=plan.checkpoints.interval_minutes,
    )
    schedule = reconcile(plan, campaign)
    continued_by = continuations(campaign)
    deliverables = judge(plan, campaign, checks or [], statuses, results, schedule.window.end)
    variance = explain(schedule, campaign, statuses, checkpoints)
    gaps = between_steps(schedule)
    return Analysis(
        plan=plan,
        campaign=campaign,
        schedule=schedule,
        run_variants=run_variants,
        statuses=statuses,
        ledger=ledger,
        run_times=run_times,
        continued_by=continued_by,
        run_order=chain_order(campaign, continued_by),
        checkpoints=checkpoints,
        non_finite=windows,
        interval=interval,
        deliverables=deliverables,
        costs=costs(plan, deliverables),
        options=plan_options(plan, schedule),
        variance=variance,
        gaps=gaps,
        total_variance=campaign_variance(schedule, variance, gaps),
        decision_points=decision_points(plan, campaign, schedule),
        variants=results,
        verdict=campaign_verdict(plan, results),
        problems=[*campaign.problems, *problems],
    )
