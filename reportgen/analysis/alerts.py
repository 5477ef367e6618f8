"""What needs a look now, while the lot is open (the lot clock running): a stop rule fired (R10), the work
left projected past the lot's end (R8), a checkpoint or deliverable still on the rented machine with less
than twice its transfer time left (R12), a run silent for much longer than it usually logs (a hung job).
Each alert has a key that stays the same from build to build, so that `reportgen watch` says it once.
Pure: nothing here reads a file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np
import pandas as pd

from reportgen.analysis.checkpoints import LEFT_ON_MACHINE, CheckpointsReport
from reportgen.analysis.clock import Clock, still_going
from reportgen.analysis.deliverables import DeliverableResult
from reportgen.analysis.status import RunStatus
from reportgen.analysis.stops import Ledger
from reportgen.model import Campaign, Evidence
from reportgen.numbers import figure, median

# A run still going that has logged nothing for this many of its usual intervals between rows (and at least
# SILENT_AT_LEAST) may be hung.
SILENT_FACTOR = 10
SILENT_AT_LEAST = timedelta(minutes=5)
# Transfers still to make are flagged when less than this many times their measured time is left in the lot.
TRANSFER_MARGIN = 2.0


@dataclass(frozen=True)
class Alert:
    code: str  # "stop", "overrun", "not_transferred", "silent"
    key: str  # the same alert from one build to the next
    message: str
    evidence: list[Evidence] = field(default_factory=list)


def alerts(clock: Clock | None, campaign: Campaign, statuses: dict[str, RunStatus], stops: Ledger,
           left_there: OnMachine) -> list[Alert]:
    """Every alert at the clock's now while the lot is open: the stops, the overrun and the silent runs while
    work is left; what is still on the machine whether or not (it matters most at the end). None once the lot
    is over."""
    if clock is None or not clock.open:
        return []
    working = clock.projected_end is not None  # a step still to do: its stops and its runs matter now
    out = [Alert("stop", f"stop:{stop.id}", f"stop {stop.rule or stop.kind} fired on {stop.run}"
                 + (f" at step {stop.step:,}" if stop.step is not None else "") + f": {stop.reason}", stop.evidence)
           for stop in (stops.stops if working else [])]
    if clock.overrun_hours > 0:
        out.append(Alert("overrun", "overrun", f"the work left is projected to end {clock.projected_end:%Y-%m-%d %H:%M}, "
                         f"{figure(clock.overrun_hours)} h past the lot's end ({clock.window_end:%Y-%m-%d %H:%M})"))
    out += _transfers(clock, left_there)
    out += _silent(clock.now, campaign, statuses) if working else []
    return out


@dataclass(frozen=True)
class OnMachine:
    """What is still on the rented machine (R12): each checkpoint and deliverable not copied off, and how
    long copying one takes as measured (the median transfer; None when none was timed: unknown, not zero)."""

    items: list[tuple[str, str, list[Evidence]]]  # (kind: "checkpoint" or "deliverable", name, evidence)
    transfer_s: float | None
    transfers_timed: int

    @property
    def seconds_needed(self) -> float | None:
        """Copying everything off, one after another, at the median measured transfer."""
        return None if self.transfer_s is None else self.transfer_s * len(self.items)

    def fits(self, hours_left: float) -> bool | None:
        needed = self.seconds_needed
        return None if needed is None else needed <= hours_left * 3600


def on_machine(campaign: Campaign, checkpoints: CheckpointsReport, deliverables: list[DeliverableResult]) -> OnMachine:
    timed = [op.seconds for op in campaign.checkpoint_ops if op.op == "transfer" and op.seconds]
    items = [("checkpoint", item.checkpoint.path, item.location.evidence) for item in checkpoints.left_on_machine]
    items += [("deliverable", result.id, result.location.evidence) for result in deliverables
              if result.location is not None and result.location.status in LEFT_ON_MACHINE]
    return OnMachine(items, median(timed), len(timed))


def _transfers(clock: Clock, left_there: OnMachine) -> list[Alert]:
    """Each item still on the machine when less than TRANSFER_MARGIN times a transfer is left in the lot."""
    seconds = left_there.transfer_s
    left = clock.hours_left * 3600
    if seconds is None or left >= TRANSFER_MARGIN * seconds:
        return []  # no transfer was timed (how long one takes is unknown, not zero), or time enough
    why = (f"{_spoken(left)} left in the lot, less than {TRANSFER_MARGIN:g} x the median transfer "
           f"({figure(seconds)} s over {left_there.transfers_timed})")
    return [Alert("not_transferred", f"transfer:{name}", f"{kind} {name} is still on the rented machine: {why}", evidence)
            for kind, name, evidence in left_there.items]


def _silent(now: datetime, campaign: Campaign, statuses: dict[str, RunStatus]) -> list[Alert]:
    """Runs still going (no end logged, status unknown) silent for SILENT_FACTOR of their usual intervals."""
    frames = campaign.frames_by_run()
    out = []
    for run in campaign.runs.values():
        if run.last_seen_at is None or not still_going(run, statuses):
            continue
        frame = frames.get(run.id)
        if frame is None:
            continue
        at = np.sort(frame["ts"].dropna().to_numpy(dtype="datetime64[ns]"))
        if not len(at):
            continue
        gaps = np.diff(at)
        gaps = gaps[gaps > np.timedelta64(0, "ns")]
        # A run that logged one row (started, then stuck loading, say) has no usual interval yet: the floor alone.
        usual = pd.Timedelta(np.median(gaps)).to_pytimedelta() if len(gaps) else None
        quiet = now - run.last_seen_at
        if quiet > (SILENT_AT_LEAST if usual is None else max(SILENT_FACTOR * usual, SILENT_AT_LEAST)):
            last = frame.loc[frame["ts"].idxmax()]  # its last timed row
            line = None if pd.isna(last["line"]) else int(last["line"])
            out.append(Alert("silent", f"silent:{run.id}:{run.last_seen_at.isoformat()}",
                             f"{run.id} has logged nothing for {_spoken(quiet.total_seconds())} ("
                             + (f"it usually logs every {figure(usual.total_seconds())} s" if usual else "one row so far")
                             + "), with no end: is it hung?", [Evidence(str(last["path"]), line)]))
    return out


def _spoken(seconds: float) -> str:
    """A length of time as it is said: minutes below two hours, hours above."""
    return f"{figure(seconds / 60)} min" if seconds < 7200 else f"{figure(seconds / 3600)} h"
