"""Pure analysis of the campaign against its plan: schedule, runs, verdicts. No I/O, no HTML."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from reportgen.analysis import stops as stop_rules
from reportgen.analysis.alerts import Alert, OnMachine, alerts, on_machine
from reportgen.analysis.checkpoints import (
    CheckpointsReport,
    checkpoints_report,
    run_checkpoints,
)
from reportgen.analysis.clock import (
    NEWEST_LOG_TIME,
    WALL_CLOCK,
    Clock,
    lot_clock,
    newest_time,
)
from reportgen.analysis.decisions import PointStatus, decision_points
from reportgen.analysis.deliverables import (
    OUTPUT_KIND,
    Costs,
    DeliverableResult,
    costs,
    judge,
)
from reportgen.analysis.estimates import NextCampaign, next_campaign
from reportgen.analysis.interval import save_interval
from reportgen.analysis.nonfinite import NonFinite, non_finite
from reportgen.analysis.options import PlanOption, plan_options
from reportgen.analysis.plan_checks import Finding, check_plan
from reportgen.analysis.runmap import Mapper, one_by_one
from reportgen.analysis.runs import (
    Machine,
    RunsReport,
    Unlinked,
    chain_order,
    config_problems,
    continuations,
    gpu_time,
    machine,
    run_time,
    unlinked,
)
from reportgen.analysis.schedule import ScheduleReport, reconcile
from reportgen.analysis.status import RunStatus, run_status
from reportgen.analysis.stops import Ledger
from reportgen.analysis.variance import VarianceReport, variance_report
from reportgen.analysis.verdicts import (
    VariantResult,
    VariantVerdict,
    Verdict,
    after_stops,
    assign_variants,
    campaign_verdict,
    final_values,
    variant_results,
)
from reportgen.analysis.warnings import (
    CampaignWarning,
    ahead_of_clock,
    campaign_warnings,
    plan_mismatches,
)
from reportgen.model import (
    Campaign,
    DeliverableCheck,
    Evidence,
    Problem,
    Status,
    WarningCode,
)
from reportgen.plan.schema import Plan
from reportgen.recall import Recall


@dataclass(frozen=True)
class Analysis:
    """The campaign reconciled with its plan, one typed section per part of the report; every
    figure the site shows is computed here, once (render only shapes these for report.json)."""

    plan: Plan
    campaign: Campaign
    schedule: ScheduleReport
    runs: RunsReport
    stops: Ledger
    checkpoints: CheckpointsReport
    deliverables: list[DeliverableResult]
    costs: Costs
    variance: VarianceReport
    variants: list[VariantResult]
    verdict: Verdict
    decision_points: list[PointStatus]
    options: list[PlanOption]
    next: NextCampaign  # the next campaign's estimates, made from all of the above
    clock: Clock | None  # the lot clock at the build's now; None when the logs hold no time
    on_machine: OnMachine  # what is still on the rented machine, and how long copying it off takes
    alerts: list[Alert]  # what needs a look now, while the clock runs
    plan_findings: list[Finding]  # what `reportgen check` says of the plan reconciled against
    problems: list[Problem]
    warnings: list[CampaignWarning]  # every doubt above in one list, with a code each


@dataclass(frozen=True)
class Survey:
    """What can be said of a campaign folder without a plan (`reportgen inspect`): how each run ended,
    its non-finite values and machine, and the captured logs tied to no run."""

    campaign: Campaign
    statuses: dict[str, RunStatus]
    non_finite: dict[str, list[NonFinite]]
    machines: dict[str, Machine | None]
    unlinked: list[Unlinked]


def survey(campaign: Campaign) -> Survey:
    return Survey(
        campaign=campaign,
        statuses={run_id: run_status(run, campaign) for run_id, run in campaign.runs.items()},
        non_finite=non_finite(campaign),
        machines={run_id: machine(run) for run_id, run in campaign.runs.items()},
        unlinked=unlinked(campaign),
    )


def unplanned_references(plan: Plan, campaign: Campaign) -> list[Problem]:
    """Logged steps, decision points, variants and stop rules the plan does not have: shown, not dropped."""
    steps = {s.id for s in plan.schedule.steps}
    points = {p.id for p in plan.decision_points}
    variants = {v.id for v in plan.variants}
    rules = {r.id for r in plan.stop_rules}
    problems: list[Problem] = []
    for mark in campaign.step_marks:
        if mark.step_id not in steps:
            problems.append(Problem.at(mark.evidence, f"step event for '{mark.step_id}', which the plan's schedule does not have; not counted", WarningCode.NOT_IN_PLAN))
    for decision in campaign.decisions:
        if decision.point not in points:
            problems.append(Problem.at(decision.evidence, f"decision at '{decision.point}', which is not one of the plan's decision points", WarningCode.NOT_IN_PLAN))
        if decision.variant is not None and decision.variant not in variants:
            problems.append(Problem.at(decision.evidence, f"decision about variant '{decision.variant}', which the plan does not have", WarningCode.NOT_IN_PLAN))
    for stop in campaign.stops:
        if stop.rule is not None and stop.rule not in rules:
            problems.append(Problem.at(stop.evidence, f"stop by rule '{stop.rule}', which is not one of the plan's stop rules (rules are written before the trials)", WarningCode.NOT_IN_PLAN))
    return problems


def _dropped_steps(schedule: ScheduleReport, dropped: set[str]) -> ScheduleReport:
    """A step of a dropped variant (`dropped`: their ids) that never ran says why it has no actual time."""
    steps = [replace(item, actual=replace(item.actual, basis=f"not run: variant {item.step.variant} was dropped"))
             if item.actual.hours is None and item.step.variant in dropped else item for item in schedule.steps]
    return replace(schedule, steps=steps)


def _passed_by_variant(results: list[DeliverableResult]) -> dict[str, list[str]]:
    """The deliverables of each variant that passed their checks, repeats left out: what to use."""
    passed: dict[str, list[DeliverableResult]] = {}
    for result in results:
        variant = result.check.entry.variant
        if result.passed and result.duplicate_of is None and variant is not None:
            passed.setdefault(variant, []).append(result)
    # The plan's deliverables first; of those, the adapter or model, then its predictions.
    return {variant: [r.id for r in sorted(found, key=lambda r: (not r.planned, r.check.entry.kind == OUTPUT_KIND))]
            for variant, found in passed.items()}


ANALYSIS_PARTS = ("variants", "run ends", "stop rules", "runs", "checkpoints", "deliverables", "time variance",
                  "next campaign")


def analyse(plan: Plan, campaign: Campaign, checks: list[DeliverableCheck] | None = None,
            frozen_at: datetime | None = None, progress: Callable[[str, str, int, int], None] | None = None,
            map_runs: Mapper = one_by_one, now: tuple[datetime, str] | None = None,
            recall: Recall | None = None) -> Analysis:
    """The whole analysis; `checks` are the deliverables' file-level checks (reportgen.verify), done where LOGS is at hand;
    `frozen_at` is when the plan was frozen, if it was; `progress` hears of each of ANALYSIS_PARTS as it begins;
    `map_runs` does the work that is the same for every run (each run's paces), one by one unless a build
    shares it among workers; `now` is the lot clock's now and what it is (the wall clock, SOURCE_DATE_EPOCH),
    else the newest time in the logs; `recall` (held by the watcher) keeps each run's paces between builds, for the
    runs whose rows and timings did not change (recall.py)."""
    def part(name: str) -> None:
        if progress:
            progress("analysing", name, ANALYSIS_PARTS.index(name) + 1, len(ANALYSIS_PARTS))

    part("variants")
    run_variants, problems = assign_variants(plan, campaign)
    problems += unplanned_references(plan, campaign)
    problems += config_problems(campaign, run_variants)
    # What the logs say about each run's end first; then the rules, some of which need it (no_resume).
    part("run ends")
    logged = {run_id: run_status(run, campaign) for run_id, run in campaign.runs.items()}
    interrupted: dict[str, tuple[datetime | None, list[Evidence]]] = {
        run_id: (campaign.runs[run_id].ended_at or campaign.runs[run_id].last_seen_at, status.evidence)
        for run_id, status in logged.items()
        if status.status == Status.INTERRUPTED
    }
    part("stop rules")
    by_run = run_checkpoints(campaign)
    windows = non_finite(campaign)
    ledger = stop_rules.evaluate(plan, campaign, run_variants, interrupted, windows, by_run)
    statuses: dict[str, RunStatus] = {run_id: after_stops(status, ledger.for_run(run_id)) for run_id, status in logged.items()}
    results = variant_results(plan, campaign, run_variants, statuses, ledger)
    part("runs")
    times = {run_id: run_time(run, plan, campaign.messages) for run_id, run in campaign.runs.items()}
    continued_by = continuations(campaign)
    order = chain_order(campaign, continued_by)
    runs = RunsReport(
        order=order,
        variants=run_variants,
        statuses=statuses,
        times=times,
        continued_by=continued_by,
        evaluated_by=campaign.evaluated_by(),
        machines={run_id: machine(run) for run_id, run in campaign.runs.items()},
        non_finite=windows,
        gpu_time=gpu_time(plan, campaign, order, statuses, times),
        unlinked=unlinked(campaign),
        finals=final_values(plan, campaign),
    )
    part("checkpoints")
    saves = [op for op in campaign.checkpoint_ops if op.op == "save" and op.seconds is not None]
    measured = [t.gpu_hours for t in times.values() if t.gpu_hours is not None]
    interval = save_interval(
        [op.seconds for op in saves if op.seconds is not None], [op.evidence for op in saves],
        interruptions=sum(1 for s in statuses.values() if s.status == Status.INTERRUPTED),
        gpu_hours=sum(measured) if measured else None,
        assumed_mtbi_hours=plan.checkpoints.mean_hours_between_interruptions,
        planned_minutes=plan.checkpoints.interval_minutes,
    )
    schedule = reconcile(plan, campaign)
    checkpoints = checkpoints_report(campaign, by_run, order, plan.checkpoints.required_state, schedule.window.end,
                                     interval)
    part("deliverables")
    deliverables = judge(plan, campaign, checks or [], statuses, results, schedule.window.end)
    part("time variance")
    variance = variance_report(schedule, campaign, statuses, by_run, map_runs, recall)
    dropped = {r.variant.id for r in results if r.verdict == VariantVerdict.DROPPED}
    schedule = _dropped_steps(schedule, dropped)
    findings = check_plan(plan)
    problems = [*campaign.problems, *problems]
    spent = costs(plan, deliverables)
    part("next campaign")
    upcoming = next_campaign(plan, campaign, schedule, runs, checkpoints, variance, results, ledger, map_runs, recall)
    newest = newest_time(campaign)
    when, basis = now or (newest, NEWEST_LOG_TIME)
    if when is not None and newest is not None and basis == "SOURCE_DATE_EPOCH" and when < newest:
        when, basis = newest, f"{NEWEST_LOG_TIME} (SOURCE_DATE_EPOCH is older)"  # the logs went on past it
    clock = lot_clock(plan, campaign, schedule, statuses, dropped, when, basis, run_variants) if when is not None else None
    left_there = on_machine(campaign, checkpoints, deliverables)
    return Analysis(
        plan=plan,
        campaign=campaign,
        schedule=schedule,
        runs=runs,
        stops=ledger,
        checkpoints=checkpoints,
        deliverables=deliverables,
        costs=spent,
        variance=variance,
        variants=results,
        verdict=campaign_verdict(plan, results, _passed_by_variant(deliverables)),
        decision_points=decision_points(plan, campaign, schedule),
        options=plan_options(plan, schedule),
        next=upcoming,
        clock=clock,
        on_machine=left_there,
        alerts=alerts(clock, plan, campaign, statuses, ledger, left_there),
        plan_findings=findings,
        problems=problems,
        warnings=[*plan_mismatches(plan, campaign, run_variants, dropped, frozen_at, schedule.window),
                  *campaign_warnings(campaign, problems, findings, runs, checkpoints, spent,
                                     lot_open=clock is not None and clock.open),
                  *(ahead_of_clock(campaign, when.astimezone(schedule.window.start.tzinfo))
                    if basis == WALL_CLOCK and when is not None else [])],
    )
