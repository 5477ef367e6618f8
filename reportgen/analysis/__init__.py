"""Pure analysis of the campaign against its plan: schedule, runs, verdicts. No I/O, no HTML."""

from __future__ import annotations

from dataclasses import dataclass

from reportgen.analysis.schedule import ScheduleReport, reconcile
from reportgen.analysis.verdicts import (
    RunStatus,
    VariantResult,
    Verdict,
    assign_variants,
    campaign_verdict,
    run_status,
    variant_results,
)
from reportgen.model import Campaign, Evidence
from reportgen.plan.schema import Plan


@dataclass
class Analysis:
    plan: Plan
    campaign: Campaign
    schedule: ScheduleReport
    run_variants: dict[str, str | None]
    statuses: dict[str, RunStatus]
    variants: list[VariantResult]
    verdict: Verdict
    problems: list[tuple[Evidence | None, str]]


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


def analyse(plan: Plan, campaign: Campaign) -> Analysis:
    run_variants, problems = assign_variants(plan, campaign)
    problems += unplanned_references(plan, campaign)
    statuses = {run_id: run_status(run, campaign) for run_id, run in campaign.runs.items()}
    results = variant_results(plan, campaign, run_variants, statuses)
    return Analysis(
        plan=plan,
        campaign=campaign,
        schedule=reconcile(plan, campaign),
        run_variants=run_variants,
        statuses=statuses,
        variants=results,
        verdict=campaign_verdict(plan, results),
        problems=[*campaign.problems, *problems],
    )
