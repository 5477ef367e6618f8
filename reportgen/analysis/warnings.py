"""The campaign's warnings: every doubt about what the report says, one list with a code each.

Gathered from the sections that found them (nothing new is decided here): the problems found while
reading and reconciling (a configuration changed under one run id, names the plan does not have...),
what `reportgen check` says of the plan, files with damaged lines, runs whose end no source tells,
captured logs tied to no run, planned deliverables never listed, checkpoints left on the rented
machine (R12) and runs with no checkpoint to resume from (R11).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reportgen.analysis.checkpoints import CheckpointsReport
from reportgen.analysis.deliverables import Costs
from reportgen.analysis.plan_checks import Finding
from reportgen.analysis.runs import RunsReport
from reportgen.model import Campaign, Evidence, Problem, RunKind, Status, WarningCode
from reportgen.numbers import plural
from reportgen.plan.schema import format_key

MAX_EVIDENCE = 20


@dataclass(frozen=True)
class CampaignWarning:
    code: WarningCode
    message: str
    evidence: list[Evidence] = field(default_factory=list)


def campaign_warnings(campaign: Campaign, problems: list[Problem], findings: list[Finding], runs: RunsReport,
                      checkpoints: CheckpointsReport, costs: Costs) -> list[CampaignWarning]:
    out = [CampaignWarning(p.code or WarningCode.UNATTRIBUTED, p.message, [e] if (e := p.evidence) else [])
           for p in problems]
    out += [CampaignWarning(WarningCode.PLAN_CHECK, f"plan {f.level} at {format_key(f.key)}: {f.message}")
            for f in findings]
    for info in campaign.inputs:
        damaged = info.skipped or len(info.problems) + info.problems_not_shown
        if damaged:
            out.append(CampaignWarning(WarningCode.DAMAGED_INPUT, f"{info.path}: {damaged:,} of its lines or records could not be "
                                       "read (the rest of the file was)",
                                       [Evidence(info.path, p.line) for p in info.problems[:MAX_EVIDENCE]] or [Evidence(info.path)]))
    for run_id in runs.order:
        status = runs.statuses[run_id]
        if status.status == Status.UNKNOWN and campaign.runs[run_id].kind == RunKind.TRAINING:
            out.append(CampaignWarning(WarningCode.UNKNOWN_END, f"run {run_id}: {status.reason}", status.evidence[:MAX_EVIDENCE]))
    for item in runs.unlinked:
        out.append(CampaignWarning(WarningCode.UNLINKED_SOURCE, f"{item.source.path}: {item.source.reason}",
                                   [Evidence(item.source.path, item.source.lines[0] if item.source.lines else None)]))
    for missing in costs.missing:
        out.append(CampaignWarning(WarningCode.MISSING_DELIVERABLE,
                                   f"deliverable {missing} is in the plan but no manifest lists it"))
    left = checkpoints.left_on_machine
    if left:
        where = ", ".join(f"{i.checkpoint.run} step {i.checkpoint.step}" if i.checkpoint.step is not None else i.checkpoint.path
                          for i in left[:5])
        more = f" and {len(left) - 5} more" if len(left) > 5 else ""
        out.append(CampaignWarning(WarningCode.LEFT_ON_MACHINE, f"{plural(len(left), 'checkpoint')} not copied off the "
                                   f"machine before the lot ended (R12): {where}{more}",
                                   sorted({e for i in left for e in i.location.evidence})[:MAX_EVIDENCE]))
    for run_id in checkpoints.runs_without_resumable:
        out.append(CampaignWarning(WarningCode.NO_RESUMABLE_CHECKPOINT, f"run {run_id}: no checkpoint holds the state "
                                   "the plan requires to resume (R11)",
                                   sorted({e for i in checkpoints.of_run(run_id) for e in i.checkpoint.evidence})[:MAX_EVIDENCE]))
    return out
