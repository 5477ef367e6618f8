"""Each run's checkpoints, merged from the folders on disk and the logged saves, and whether they resume (R11, R12).

A checkpoint is known from what is on disk (a Trainer `checkpoint-N/` folder, a Lightning
`.ckpt`) and from what the training script logged when it saved (`checkpoint_save` with its
`state`). The two describe the same checkpoint when they name the same run and step. Saves,
transfers, restores and reload tests are attached by path: a restore is often logged by the run
that resumes, under the path the saving run wrote.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from functools import cached_property

import pandas as pd

from reportgen.analysis.interval import SaveInterval
from reportgen.model import (
    Campaign,
    CheckpointOp,
    Evidence,
    ReloadTest,
    by_run,
    path_key,
)
from reportgen.numbers import HOURS_DECIMALS
from reportgen.plan.schema import RESUME_PARTS


class Place(StrEnum):
    """Where files are at the lot's end (R12)."""

    TRANSFERRED = "transferred"  # copied off the rented machine before the lot ended
    AFTER_LOT_END = "transferred_after_lot_end"
    COPY_IN_LOGS = "copy_in_logs"  # no transfer logged, but a copy is under LOGS
    NOT_TRANSFERRED = "not_transferred"
    MISSING = "missing"  # a deliverable's files are not there


@dataclass(frozen=True)
class Location:
    """Where files are (R12): copied off the rented machine before the lot ended, or not."""

    status: Place
    at: datetime | None = None
    destination: str | None = None
    evidence: list[Evidence] = field(default_factory=list)


def locate(transfers: list[CheckpointOp], deadline: datetime, on_disk: list[Evidence], otherwise: Location) -> Location:
    """The first transfer before `deadline`, else the first one after it, else a copy under LOGS, else `otherwise`."""
    ordered = sorted(transfers, key=lambda t: (t.at, t.evidence))
    before = [t for t in ordered if t.at <= deadline]
    if before:
        return Location(Place.TRANSFERRED, before[0].at, before[0].destination, [before[0].evidence])
    if ordered:
        return Location(Place.AFTER_LOT_END, ordered[0].at, ordered[0].destination, [ordered[0].evidence])
    if on_disk:
        return Location(Place.COPY_IN_LOGS, evidence=on_disk[:1])
    return otherwise


@dataclass
class RunCheckpoint:
    """One checkpoint of a run: what it holds and how that was decided, its operations and reload tests."""

    run: str
    step: int | None
    path: str
    at: datetime | None
    resume_state: dict[str, bool | None]
    evidence: list[Evidence] = field(default_factory=list)
    reload_tests: list[ReloadTest] = field(default_factory=list)
    resume_basis: dict[str, str] = field(default_factory=dict)
    saves: list[CheckpointOp] = field(default_factory=list)
    transfers: list[CheckpointOp] = field(default_factory=list)
    restores: list[CheckpointOp] = field(default_factory=list)
    final: bool = False  # the model saved at the end of training (weights only, as a rule)
    timed_by: Evidence | None = None  # for a checkpoint found on disk: the record that times its step

    def lacking(self, required: Sequence[str]) -> list[str]:
        """Required parts the checkpoint is known not to hold."""
        return [p for p in required if self.resume_state.get(p) is False]

    def unknown(self, required: Sequence[str]) -> list[str]:
        """Required parts no source says anything about."""
        return [p for p in required if self.resume_state.get(p) is None]

    def failed_reload(self) -> ReloadTest | None:
        failed = [t for t in self.reload_tests if not t.ok]
        return min(failed, key=lambda t: (t.at, t.evidence)) if failed else None

    def resumable(self, required: Sequence[str]) -> bool | None:
        """True when every required part is held and no reload test failed; None when it cannot be told."""
        if self.lacking(required) or self.failed_reload() is not None:
            return False
        return None if self.unknown(required) else True

    def seconds(self, op: str) -> float | None:
        """Measured seconds of one kind of operation on this checkpoint (summed), or None when none was timed."""
        ops = {"save": self.saves, "transfer": self.transfers, "restore": self.restores}[op]
        timed = [o.seconds for o in ops if o.seconds is not None]
        return sum(timed) if timed else None

    def location(self, deadline: datetime) -> Location:
        """Where the checkpoint is at the lot's end (`deadline`): its transfers, or its folder under LOGS."""
        on_disk = [e for e in self.evidence if not any(e == op.evidence for op in self.saves)]
        return locate(self.transfers, deadline, on_disk, Location(Place.NOT_TRANSFERRED, evidence=list(self.evidence)))


def _merge_state(item: RunCheckpoint, state: dict[str, bool | None], basis: dict[str, str], prefer_true: bool) -> None:
    """Fill what is unknown; with `prefer_true`, a part held by either source counts (two files of one step)."""
    for part, held in state.items():
        current = item.resume_state.get(part)
        if current is None or (prefer_true and held is True and current is not True):
            item.resume_state[part] = held
            if part in basis:
                item.resume_basis[part] = basis[part]


def _save_basis(op: CheckpointOp) -> tuple[dict[str, bool | None], dict[str, str]]:
    where = f"{op.evidence.path}:{op.evidence.line}" if op.evidence.line else op.evidence.path
    if op.state is None:
        return {p: None for p in RESUME_PARTS}, {p: f"the save logged at {where} lists no state" for p in RESUME_PARTS}
    state = {p: p in op.state for p in RESUME_PARTS}
    basis = {p: (f"listed in the state of the save logged at {where}" if held else
                 f"not in the state of the save logged at {where}") for p, held in state.items()}
    return state, basis


def run_checkpoints(campaign: Campaign) -> dict[str, list[RunCheckpoint]]:
    """Per run, its checkpoints in step order: disk and logged saves merged by step, operations attached."""
    out: dict[str, dict[int | str, RunCheckpoint]] = {}
    for found in campaign.checkpoints:
        # The final model shares its step with the last checkpoint but not its contents: kept apart.
        key: int | str = found.step if found.step is not None and not found.final else found.path
        item = out.setdefault(found.run, {}).get(key)
        if item is None:
            out[found.run][key] = RunCheckpoint(found.run, found.step, found.path, None, dict(found.resume_state),
                                                [found.evidence], resume_basis=dict(found.resume_basis), final=found.final)
        else:  # two files of one step (Lightning's epoch=…-step=N.ckpt and last.ckpt): a part held by either counts
            _merge_state(item, found.resume_state, found.resume_basis, prefer_true=True)
            item.evidence.append(found.evidence)
    for op in campaign.checkpoint_ops:
        if op.op != "save" or op.run is None:
            continue
        key = op.step if op.step is not None else (op.path or "")
        state, basis = _save_basis(op)
        item = out.setdefault(op.run, {}).get(key)
        if item is None:
            item = out[op.run][key] = RunCheckpoint(op.run, op.step, op.path or "", op.at, state, [op.evidence],
                                                    resume_basis=basis)
        else:
            item.at = item.at or op.at
            _merge_state(item, state, basis, prefer_true=False)
            item.evidence.append(op.evidence)
        item.saves.append(op)
    # Saves, transfers and reload tests are matched by path through an index: linear in each, where
    # a scan of every checkpoint per operation grew with their product (2,500 saves x 2,500 transfers).
    by_path: dict[tuple[str, ...], list[RunCheckpoint]] = {}
    for item in (c for items in out.values() for c in items.values()):
        if item.path:
            by_path.setdefault(path_key(item.path), []).append(item)
    for op in campaign.checkpoint_ops:
        if op.op in ("transfer", "restore") and op.path:
            target = _find(op.path, op.run, by_path)
            if target is not None:
                (target.transfers if op.op == "transfer" else target.restores).append(op)
    tests_by_path: dict[tuple[str, ...], list[ReloadTest]] = {}
    for test in campaign.reload_tests:
        if test.path:
            tests_by_path.setdefault(path_key(test.path), []).append(test)
    result: dict[str, list[RunCheckpoint]] = {}
    frames = campaign.frames_by_run()
    for run, items in out.items():
        ordered = sorted(items.values(), key=lambda c: (c.step is None, c.step or 0, c.final, c.path))
        for check in ordered:
            check.reload_tests = list(tests_by_path.get(path_key(check.path), [])) if check.path else []
            check.evidence.sort()
        _time_from_records(ordered, frames.get(run))
        result[run] = ordered
    return result


def _time_from_records(checkpoints: list[RunCheckpoint], frame: pd.DataFrame | None) -> None:
    """A checkpoint found on disk keeps no time; the record of its step in any source that keeps clock
    times (TensorBoard, MLflow) does: the save came right after that step."""
    if frame is None or not any(c.at is None and c.step is not None for c in checkpoints):
        return
    timed = frame[frame["ts"].notna() & frame["step"].notna()]
    if not len(timed):
        return
    # The latest record of each step, found once (not one scan of the records per checkpoint).
    timed = timed.reset_index(drop=True)  # one label a row, whatever the frames' concatenation left
    latest = timed["ts"].groupby(timed["step"].to_numpy(dtype="int64")).idxmax()
    for check in checkpoints:
        if check.at is not None or check.step is None or check.final or check.step not in latest.index:
            continue
        row = timed.loc[latest[check.step]]
        check.at = row["ts"].to_pydatetime()
        check.timed_by = Evidence(str(row["path"]), None if pd.isna(row["line"]) else int(row["line"]))


def _find(path: str, run: str, by_path: dict[tuple[str, ...], list[RunCheckpoint]]) -> RunCheckpoint | None:
    """The checkpoint a logged path names: the run's own first, then any run's (a restore by the resuming run)."""
    named = by_path.get(path_key(path), [])
    return next((c for c in named if c.run == run), named[0] if named else None)


CALENDAR_OPERATIONS = ("save", "transfer", "restore", "reload_test")
# Where a checkpoint is at the lot's end that leaves it on the rented machine when the lot ends (R12).
LEFT_ON_MACHINE = (Place.NOT_TRANSFERRED, Place.AFTER_LOT_END)


@dataclass(frozen=True)
class CalendarRow:
    """The hours checkpoints took for one run (None: records no run could be found for), by operation;
    an operation never timed for the run is None, not zero (R12: they belong in the calendar).
    Each figure is rounded as reported, so a row's total and the campaign's totals add up as shown."""

    run: str | None
    hours: dict[str, float | None]

    @property
    def total_hours(self) -> float:
        return sum(h for h in self.hours.values() if h is not None)


@dataclass(frozen=True)
class Calendar:
    """The checkpoint calendar (R12): hours per run and operation, with the campaign's totals
    (None when no operation was timed at all)."""

    rows: list[CalendarRow]

    @property
    def totals(self) -> dict[str, float | None]:
        return {name: sum(row.hours[name] or 0.0 for row in self.rows) if self.rows else None
                for name in CALENDAR_OPERATIONS}

    @property
    def total_hours(self) -> float | None:
        return sum(row.total_hours for row in self.rows) if self.rows else None


def calendar(campaign: Campaign, run_order: Sequence[str]) -> Calendar:
    """Save, transfer, restore and reload-test hours per run, in run order, then the unattributed ones."""
    operations, tests = by_run(campaign.checkpoint_ops), by_run(campaign.reload_tests)
    rows = []
    for run_id in [*run_order, None]:
        timed: dict[str, list[float]] = {name: [] for name in CALENDAR_OPERATIONS}
        for op in operations.get(run_id, []):
            if op.seconds is not None:
                timed[op.op].append(op.seconds)
        timed["reload_test"] = [t.seconds for t in tests.get(run_id, []) if t.seconds is not None]
        if any(timed.values()):
            rows.append(CalendarRow(run_id, {name: round(sum(s) / 3600.0, HOURS_DECIMALS) if s else None
                                             for name, s in timed.items()}))
    return Calendar(rows)


@dataclass(frozen=True)
class CheckpointFigures:
    """One checkpoint as the report shows it: its measured costs, reload tests, resumability against
    the plan's required state (R11) and where it was at the lot's end (R12)."""

    checkpoint: RunCheckpoint
    save_s: float | None
    transfer_s: float | None
    restore_s: float | None
    bytes: int | None
    reload_ok: bool | None  # None: never reload-tested
    reload_new_process: bool | None
    resumable: bool | None
    lacking: list[str]
    unknown: list[str]
    location: Location
    evidence: list[Evidence]

    @property
    def left_on_machine(self) -> bool:
        return self.location.status in LEFT_ON_MACHINE


def figures(check: RunCheckpoint, required: Sequence[str], deadline: datetime) -> CheckpointFigures:
    tests = check.reload_tests
    return CheckpointFigures(
        checkpoint=check,
        save_s=check.seconds("save"),
        transfer_s=check.seconds("transfer"),
        restore_s=check.seconds("restore"),
        bytes=next((op.bytes for op in check.saves if op.bytes is not None), None),
        reload_ok=all(t.ok for t in tests) if tests else None,
        reload_new_process=any(t.new_process for t in tests) if tests else None,
        resumable=check.resumable(required),
        lacking=check.lacking(required),
        unknown=check.unknown(required),
        location=check.location(deadline),
        evidence=check.evidence + [t.evidence for t in tests],
    )


@dataclass(frozen=True)
class CheckpointsReport:
    """The checkpoints section: every checkpoint's figures in run order, the calendar, the save interval."""

    by_run: dict[str, list[RunCheckpoint]]
    items: list[CheckpointFigures]
    calendar: Calendar
    interval: SaveInterval

    def of_run(self, run_id: str) -> list[CheckpointFigures]:
        return self._by_run.get(run_id, [])

    @cached_property
    def _by_run(self) -> dict[str, list[CheckpointFigures]]:
        """The items indexed by run once: a scan of every item for each run grew with runs x checkpoints."""
        out: dict[str, list[CheckpointFigures]] = {}
        for item in self.items:
            out.setdefault(item.checkpoint.run, []).append(item)
        return out

    @property
    def left_on_machine(self) -> list[CheckpointFigures]:
        """Checkpoints still on the rented machine when the lot ended, or never copied off (R12)."""
        return [item for item in self.items if item.left_on_machine]

    @property
    def runs_without_resumable(self) -> list[str]:
        """Runs every checkpoint of which is known not to resume (R11)."""
        runs: dict[str, list[CheckpointFigures]] = {}
        for item in self.items:
            runs.setdefault(item.checkpoint.run, []).append(item)
        return [run for run, items in runs.items() if all(i.resumable is False for i in items)]


def checkpoints_report(campaign: Campaign, by_run_id: dict[str, list[RunCheckpoint]], order: Sequence[str],
                       required: Sequence[str], deadline: datetime, interval: SaveInterval) -> CheckpointsReport:
    items = [figures(check, required, deadline) for run_id in order for check in by_run_id.get(run_id, [])]
    return CheckpointsReport(by_run_id, items, calendar(campaign, order), interval)
