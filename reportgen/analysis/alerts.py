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
from reportgen.analysis.clock import Clock, at_work, minute
from reportgen.analysis.deliverables import DeliverableResult
from reportgen.analysis.schedule import hours_between
from reportgen.analysis.status import RunStatus
from reportgen.analysis.stops import Ledger
from reportgen.model import Campaign, Evidence
from reportgen.numbers import duration, figure, median
from reportgen.plan.schema import Plan

# A run at work that has logged nothing for this many of its usual intervals between rows (and at least
# SILENT_AT_LEAST) may be hung. Its usual interval is the median of its last SILENT_RECENT intervals: a run
# that went on to log more rarely (a long evaluation phase, a slower stage) is judged by how it logs now.
SILENT_FACTOR = 10
SILENT_AT_LEAST = timedelta(minutes=5)
SILENT_RECENT = 50
# Transfers still to make are flagged when less than this many times their measured time is left in the lot.
TRANSFER_MARGIN = 2.0


@dataclass(frozen=True)
class Alert:
    code: str  # "stop", "overrun", "not_transferred", "silent"
    key: str  # the same alert from one build to the next
    message: str
    evidence: list[Evidence] = field(default_factory=list)


def alerts(clock: Clock | None, plan: Plan, campaign: Campaign, statuses: dict[str, RunStatus], stops: Ledger,
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
        worst = max(clock.late, key=lambda s: hours_between(s.deadline or clock.window_last, s.end or clock.now))
        deadline = worst.deadline or clock.window_last
        what = "the work left is" if len(clock.lots) == 1 else f"step {worst.id} is"  # each lot has its own end
        out.append(Alert("overrun", "overrun", f"{what} projected to end {minute(worst.end, clock.now.tzinfo)}, "
                         f"{duration(clock.overrun_hours)} past {'the' if len(clock.lots) == 1 else 'its'} lot's end "
                         f"({minute(deadline, clock.now.tzinfo)})"))
    out += _transfers(clock, left_there)
    out += _silent(clock.now, plan, campaign, statuses) if working else []
    return out


@dataclass(frozen=True)
class LeftThere:
    """A checkpoint or deliverable still on the rented machine, with how long copying it off takes as
    measured: the median transfer of its own run's checkpoints, else of the campaign's (None when no
    transfer was timed: unknown, not zero), and what that figure is."""

    kind: str  # "checkpoint" or "deliverable"
    name: str
    evidence: list[Evidence]
    transfer_s: float | None
    basis: str
    run: str | None = None  # the run whose checkpoint it is (its machine's lot: Clock.seconds_left_for)


@dataclass(frozen=True)
class OnMachine:
    """What is still on the rented machine (R12), each item with its own measured transfer time."""

    items: list[LeftThere]
    transfers_timed: int

    @property
    def seconds_needed(self) -> float | None:
        """Copying everything off, one after another, each at its measured transfer; None when one is unknown."""
        times = [item.transfer_s for item in self.items]
        return None if any(t is None for t in times) else sum(t for t in times if t is not None)

    def fits(self, hours_left: float) -> bool | None:
        needed = self.seconds_needed
        return None if needed is None else needed <= hours_left * 3600


def on_machine(campaign: Campaign, checkpoints: CheckpointsReport, deliverables: list[DeliverableResult]) -> OnMachine:
    transfers = [op for op in campaign.checkpoint_ops if op.op == "transfer" and op.seconds]
    of_run: dict[str | None, list[float]] = {}
    for op in transfers:
        of_run.setdefault(op.run, []).append(float(op.seconds or 0.0))
    everyone = median([float(op.seconds or 0.0) for op in transfers])

    def measured(run: str | None, kind: str) -> tuple[float | None, str]:
        own = of_run.get(run, []) if run is not None else []
        if own:
            return median(own), f"the median of its run's {len(own)} timed transfer{'s' if len(own) != 1 else ''}"
        if everyone is not None:
            whose = "the campaign's" if kind == "checkpoint" else "the campaign's checkpoint"
            return everyone, f"no transfer of {'its run' if kind == 'checkpoint' else 'a deliverable'} timed: " \
                             f"the median of {whose} {len(transfers)} timed transfer{'s' if len(transfers) != 1 else ''}"
        return None, "no transfer timed"

    items = [LeftThere("checkpoint", item.checkpoint.path, item.location.evidence, *measured(item.checkpoint.run, "checkpoint"),
                       run=item.checkpoint.run) for item in checkpoints.left_on_machine]
    items += [LeftThere("deliverable", result.id, result.location.evidence, *measured(None, "deliverable"))
              for result in deliverables if result.location is not None and result.location.status in LEFT_ON_MACHINE]
    return OnMachine(items, len(transfers))


def _transfers(clock: Clock, left_there: OnMachine) -> list[Alert]:
    """Each item still on the machine when less than TRANSFER_MARGIN times its own transfer time is left in its
    machine's lot (none for an item whose transfer time is unknown: no transfer was timed)."""
    out = []
    for item in left_there.items:
        left = clock.seconds_left_for(item.run)
        if item.transfer_s is not None and left < TRANSFER_MARGIN * item.transfer_s:
            out.append(Alert("not_transferred", f"transfer:{item.name}",
                             f"{item.kind} {item.name} is still on the rented machine: {duration(left / 3600)} left in the lot, "
                             f"less than {TRANSFER_MARGIN:g} x its transfer time ({figure(item.transfer_s)} s, {item.basis})",
                             item.evidence))
    return out


def _silent(now: datetime, plan: Plan, campaign: Campaign, statuses: dict[str, RunStatus]) -> list[Alert]:
    """Runs at work (no end logged, not at the last of their steps: clock.at_work) silent for SILENT_FACTOR of
    their usual intervals (the median of their last SILENT_RECENT): between their timed rows, else, for a run whose
    rows keep no time, between the changes the watcher saw of its logs (_unwritten)."""
    frames = campaign.frames_by_run()
    out = []
    for run in campaign.runs.values():
        frame = frames.get(run.id)
        if frame is None or not at_work(run, plan, statuses):
            continue
        at = np.sort(frame["ts"].dropna().to_numpy(dtype="datetime64[ns]"))
        if not len(at):
            out += _unwritten(now, run.id, frame, campaign.writes)
            continue
        if run.last_seen_at is None:
            continue
        gaps = np.diff(at)
        gaps = gaps[gaps > np.timedelta64(0, "ns")][-SILENT_RECENT:]
        # A run that logged one row (started, then stuck loading, say) has no usual interval yet: the floor alone.
        usual = pd.Timedelta(np.median(gaps)).to_pytimedelta() if len(gaps) else None
        quiet = now - run.last_seen_at
        if quiet > (SILENT_AT_LEAST if usual is None else max(SILENT_FACTOR * usual, SILENT_AT_LEAST)):
            out.append(Alert("silent", f"silent:{run.id}:{run.last_seen_at.isoformat()}",
                             f"{run.id} has logged nothing for {duration(quiet.total_seconds() / 3600)} ("
                             + (f"it usually logs every {figure(usual.total_seconds())} s" if usual else "one row so far")
                             + "), with no end: is it hung?", [campaign.last_timed_row(run.id)]))
    return out


def _unwritten(now: datetime, run_id: str, frame: pd.DataFrame, writes: dict[str, tuple[datetime, ...]]) -> list[Alert]:
    """A run whose rows keep no time (Lightning's and Keras's CSV logs, DVCLive's default, torchtune's), timed by
    the modification times the watcher saw its logs take (Campaign.writes): silent when none of them changed for
    SILENT_FACTOR of the usual interval between the changes seen of its most often written log (the median of its
    last SILENT_RECENT), and at least SILENT_AT_LEAST. Not judged before a change of one of them was seen: the
    first time seen of a log is when it was last written before the watcher looked, not how often it is (nor in
    a build without a watcher, which sees each log once)."""
    seen = {path: times for path in sorted(set(frame["path"].astype(str))) if len(times := writes.get(path, ())) > 0}
    usual = [(median([(b - a).total_seconds() for a, b in zip(times, times[1:])][-SILENT_RECENT:]), path)
             for path, times in seen.items() if len(times) > 1]
    if not usual:
        return []
    every, often = min(usual)
    last, latest = max((times[-1], path) for path, times in seen.items())
    quiet = now - last
    if quiet <= max(SILENT_FACTOR * timedelta(seconds=every), SILENT_AT_LEAST):
        return []
    return [Alert("silent", f"silent:{run_id}:{last.isoformat()}",
                  f"{run_id} has written nothing for {duration(quiet.total_seconds() / 3600)} (its records keep no time; "
                  f"{often} changed every {figure(every)} s as the watcher saw it), with no end: is it hung?",
                  [Evidence(latest, None)])]
