"""Decision points (R3): each point of the plan taken (what, when, why), missed, or still pending."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from reportgen.analysis.schedule import ScheduleReport
from reportgen.model import Campaign, LoggedDecision
from reportgen.plan.schema import DecisionPoint, Plan


@dataclass
class PointStatus:
    point: DecisionPoint
    status: str  # taken | missed (its step ended with no decision) | pending
    after_step_ended: datetime | None
    decisions: list[LoggedDecision]

    def in_options(self, decision: LoggedDecision) -> bool:
        return decision.decision in self.point.options


def decision_points(plan: Plan, campaign: Campaign, schedule: ScheduleReport) -> list[PointStatus]:
    ends = {item.step.id: item.actual.end for item in schedule.steps}
    out = []
    for point in plan.decision_points:
        taken = sorted((d for d in campaign.decisions if d.point == point.id), key=lambda d: (d.at, d.evidence))
        ended = ends.get(point.after)
        status = "taken" if taken else ("missed" if ended is not None else "pending")
        out.append(PointStatus(point, status, ended, taken))
    return out
