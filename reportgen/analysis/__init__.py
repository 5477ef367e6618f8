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


def analyse(plan: Plan, campaign: Campaign) -> Analysis:
    run_variants, problems = assign_variants(plan, campaign)
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
