"""Decision points (R3): each point of the plan taken (what, when, why), missed, or still pending."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from reportgen.analysis.schedule import ScheduleReport
from reportgen.model import Campaign, LoggedDecision
from reportgen.plan.schema import DecisionPoint, Plan


class PointState(StrEnum):
    TAKEN = "taken"
    MISSED = "missed"  # its step ended with no decision
    PENDING = "pending"


@dataclass(frozen=True)
class Taken:
    """A decision logged at a point, and whether it is one of the options the plan wrote for it."""

    decision: LoggedDecision
    in_options: bool


@dataclass(frozen=True)
class PointStatus:
    point: DecisionPoint
    status: PointState
    after_step_ended: datetime | None
    decisions: list[Taken]


def decision_points(plan: Plan, campaign: Campaign, schedule: ScheduleReport) -> list[PointStatus]:
    ends = {item.step.id: item.actual.end for item in schedule.steps}
    out = []
    for point in plan.decision_points:
        taken = sorted((d for d in campaign.decisions if d.point == point.id), key=lambda d: (d.at, d.evidence))
        ended = ends.get(point.after)
        status = PointState.TAKEN if taken else (PointState.MISSED if ended is not None else PointState.PENDING)
        out.append(PointStatus(point, status, ended, [Taken(d, d.decision in point.options) for d in taken]))
    return out
