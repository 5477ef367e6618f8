"""The campaign's warnings: every doubt about what the report says, one list with a code each.

Gathered from the sections that found them (nothing new is decided here): the problems found while
reading and reconciling (a configuration changed under one run id, names the plan does not have...),
what `reportgen check` says of the plan, files with damaged lines, runs whose end no source tells,
captured logs tied to no run, planned deliverables never listed, checkpoints left on the rented
machine (R12) and runs with no checkpoint to resume from (R11); and where the plan and the logs do
not match: no run at all, no run of any variant, run patterns that match nothing, training runs
no variant claims, a plan frozen after the rented window opened.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from reportgen.analysis.checkpoints import CheckpointsReport
from reportgen.analysis.deliverables import Costs
from reportgen.analysis.plan_checks import Finding
from reportgen.analysis.runs import RunsReport
from reportgen.analysis.schedule import Window
from reportgen.model import Campaign, Evidence, Problem, RunKind, Status, WarningCode
from reportgen.numbers import listed, plural
from reportgen.plan.schema import Plan, format_key

MAX_EVIDENCE = 20


@dataclass(frozen=True)
class CampaignWarning:
    code: WarningCode
    message: str
    evidence: list[Evidence] = field(default_factory=list)


def campaign_warnings(campaign: Campaign, problems: list[Problem], findings: list[Finding], runs: RunsReport,
                      checkpoints: CheckpointsReport, costs: Costs, lot_open: bool = False) -> list[CampaignWarning]:
    """Everything the report warns of. While the lot is open (`lot_open`: the lot clock runs), a run with no
    end logged is one still at work, not a run whose end is unknown: no warning (a run silent far longer than
    it usually logs is an alert of the clock's)."""
    out = [CampaignWarning(p.code or WarningCode.UNATTRIBUTED, p.message, [e] if (e := p.evidence) else [])
           for p in problems]
    out += [CampaignWarning(WarningCode.PLAN_CHECK, f"the plan, at {format_key(f.key)}: {f.message}")
            for f in findings]
    for info in campaign.inputs:
        damaged = info.skipped or len(info.problems) + info.problems_not_shown
        if damaged:
            out.append(CampaignWarning(WarningCode.DAMAGED_INPUT, f"{info.path}: {damaged:,} of its lines or records could not be "
                                       "read (the rest of the file was)",
                                       [Evidence(info.path, p.line) for p in info.problems[:MAX_EVIDENCE]] or [Evidence(info.path)]))
    for run_id in runs.order:
        status = runs.statuses[run_id]
        if status.status == Status.UNKNOWN and campaign.runs[run_id].kind == RunKind.TRAINING and not lot_open:
            out.append(CampaignWarning(WarningCode.UNKNOWN_END, f"run {run_id}: {status.reason}", status.evidence[:MAX_EVIDENCE]))
    for item in runs.unlinked:
        out.append(CampaignWarning(WarningCode.UNLINKED_SOURCE, f"{item.source.path}: {item.source.reason}",
                                   [Evidence(item.source.path, item.source.lines[0] if item.source.lines else None)]))
    for missing in costs.missing:
        out.append(CampaignWarning(WarningCode.MISSING_DELIVERABLE,
                                   f"deliverable {missing} is in the plan but no manifest lists it"))
    left = checkpoints.left_on_machine
    if left:
        where = listed([f"{i.checkpoint.run} step {i.checkpoint.step}" if i.checkpoint.step is not None else i.checkpoint.path
                        for i in left])
        out.append(CampaignWarning(WarningCode.LEFT_ON_MACHINE, f"{plural(len(left), 'checkpoint')} not copied off the "
                                   f"machine before the lot ended: {where}",
                                   Evidence.first((e for i in left for e in i.location.evidence), MAX_EVIDENCE)))
    for run_id in checkpoints.runs_without_resumable:
        out.append(CampaignWarning(WarningCode.NO_RESUMABLE_CHECKPOINT, f"run {run_id}: no checkpoint holds the state "
                                   "the plan requires to resume",
                                   Evidence.first((e for i in checkpoints.of_run(run_id) for e in i.checkpoint.evidence), MAX_EVIDENCE)))
    return out


def _matches(pattern: str, run_ids: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(run_id, pattern) for run_id in run_ids)


def plan_mismatches(plan: Plan, campaign: Campaign, run_variants: dict[str, str | None], dropped: set[str],
                    frozen_at: datetime | None, window: Window) -> list[CampaignWarning]:
    """Where the plan and the logs do not describe the same campaign. Each is a doubt on every
    figure after it: a verdict over no run of the plan's variants, or a schedule whose steps matched
    nothing, must not read as an answer. Variants dropped at a decision point, and their steps,
    are expected to have no run."""
    out: list[CampaignWarning] = []
    run_ids = sorted(campaign.runs)
    training = [r for r in run_ids if campaign.runs[r].kind == RunKind.TRAINING]
    if not run_ids:
        inputs = f"{plural(len(campaign.inputs), 'file')} read" if campaign.inputs else "no file read"
        out.append(CampaignWarning(WarningCode.NO_RUNS, f"no run was found in the logs ({inputs}): every figure "
                                   "below is the plan's, nothing was measured"))
    elif training and not any(run_variants.get(r) for r in training):
        out.append(CampaignWarning(WarningCode.PLAN_MISMATCH, f"none of the {plural(len(training), 'training run')} "
                                   "belongs to a variant of the plan: is this the plan of these logs?",
                                   _first_evidence(campaign, training)))
    if run_ids:
        owners = [(f"variant {v.id}", v.runs) for v in plan.variants if v.id not in dropped]
        owners += [(f"schedule step {s.id}", s.runs) for s in plan.schedule.steps if s.variant not in dropped]
        out += [CampaignWarning(WarningCode.UNMATCHED_PATTERN, f"{owner}: its run pattern '{pattern}' matches no run "
                                "in the logs")
                for owner, patterns in owners for pattern in patterns if not _matches(pattern, run_ids)]
    step_patterns = [p for step in plan.schedule.steps for p in step.runs]
    # A run that names a variant the plan lacks is already warned about (not_in_plan): not twice.
    unclaimed = [r for r in training if run_variants.get(r) is None and campaign.runs[r].variant is None
                 and not any(fnmatch.fnmatchcase(r, p) for p in step_patterns)]
    if unclaimed and any(run_variants.get(r) for r in training):  # none claimed at all is the mismatch above
        out.append(CampaignWarning(WarningCode.UNCLAIMED_RUN, f"{plural(len(unclaimed), 'run')} that neither a variant "
                                   f"nor a schedule step of the plan claims: {listed(unclaimed, 10)}; "
                                   "their results count for no verdict",
                                   _first_evidence(campaign, unclaimed)))
    if training and plan.quality.metric not in campaign.metric_names():
        logged = campaign.metric_names()
        have = (f"the logs have {', '.join(logged[:8])}{' and more' if len(logged) > 8 else ''}" if logged
                else "the logs have no metric at all")
        out.append(CampaignWarning(WarningCode.METRIC_NOT_LOGGED, f"no run logged the plan's quality metric "
                                   f"{plan.quality.metric}, so no variant can be judged: {have}"))
    outside = [r for r in training if (at := campaign.runs[r].started_at) is not None
               and not window.start <= at <= window.end]
    if outside:
        out.append(CampaignWarning(WarningCode.OUTSIDE_WINDOW, f"{plural(len(outside), 'run')} started outside the "
                                   f"rented window ({window.start.isoformat(sep=' ')} to {window.end.isoformat(sep=' ')}): "
                                   f"{listed(outside, 10)}; their time is not the rental's, or the plan's "
                                   "lots are not the ones these runs used", _first_evidence(campaign, outside)))
    if frozen_at is not None and frozen_at > window.start:
        out.append(CampaignWarning(WarningCode.FROZEN_LATE, f"the plan was frozen {_after(frozen_at - window.start)} "
                                   f"after the rented window opened ({window.start.isoformat(sep=' ')}): edits made "
                                   "before the freeze cannot be told from the plan as first written"))
    return out


# Logs a little ahead of the wall clock are two machines' clocks a little apart, not worth a warning.
AHEAD_TOLERANCE = timedelta(minutes=5)


def ahead_of_clock(campaign: Campaign, now: datetime) -> list[CampaignWarning]:
    """A warning when the logs hold times later than the wall clock's `now` (a live build: `watch`): the training
    machine's clock, or the time zone its logs were read in, is off; the lot clock counts from `now`, the steps'
    ends and the runs' last records from the logs, so the time left and the projections are off by as much."""
    ahead = {run_id: latest for run_id, run in campaign.runs.items()
             if (latest := run.latest_at()) is not None and latest > now + AHEAD_TOLERANCE}
    if not ahead:
        return []
    run_ids = sorted(ahead, key=lambda run_id: (-ahead[run_id].timestamp(), run_id))
    return [CampaignWarning(
        WarningCode.AHEAD_OF_CLOCK,
        f"{plural(len(run_ids), 'run')} ({listed(run_ids, 5)}) logged times up to {_after(ahead[run_ids[0]] - now)} after "
        f"this build's clock ({now:%Y-%m-%d %H:%M %Z}): the training machine's clock or the time zone of its logs is "
        "off, and the time left in the lot, the projections and the alerts with it", _latest_evidence(campaign, run_ids))]


def _latest_evidence(campaign: Campaign, run_ids: list[str]) -> list[Evidence]:
    """Where each run logged its latest time: its end as logged, else its last timed row, else where it started."""
    found = []
    for run_id in run_ids[:MAX_EVIDENCE]:
        run = campaign.runs[run_id]
        ended = run.end_evidence if run.ended_at is not None and run.ended_at == run.latest_at() else None
        where = ended or campaign.last_timed_row(run_id)
        found.extend([where] if where is not None else _first_evidence(campaign, [run_id]))
    return found


def _after(delta: timedelta) -> str:
    hours = delta.total_seconds() / 3600
    if hours < 0.1:
        return f"{delta.total_seconds() / 60:.0f} min"
    return f"{hours:,.1f} h" if hours < 48 else f"{hours / 24:,.1f} days"


def _first_evidence(campaign: Campaign, run_ids: list[str]) -> list[Evidence]:
    found = []
    for run_id in run_ids[:MAX_EVIDENCE]:
        run = campaign.runs[run_id]
        where = run.start_evidence or (Evidence(run.sources[0]) if run.sources else None)
        if where is not None:
            found.append(where)
    return found
