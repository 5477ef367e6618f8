"""Write reportgen's native event log from a training script (standard library only).

    from reportgen.events import EventLog

    log = EventLog("logs/runs/control-1/events.jsonl", run="control-1")
    log.run_start(config={"lr": 2e-4, "rank": 16}, variant="control")
    log.metric(step=10, loss=2.31, grad_norm=1.8)
    log.checkpoint_save(step=500, path="ckpt/step-500", seconds=31.2, state=["model", "optimizer"])
    log.run_end(status="completed", step=3000)

Each call appends one JSON line and flushes it, so a crash loses at most the line being
written. Non-finite values are written as bare NaN/Infinity, which reportgen reads back.
The format is documented in docs/events.md.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = ["EventLog"]

# Events about the campaign, not one run: they carry no default run id.
_CAMPAIGN_TYPES = {"step_start", "step_end", "decision"}


def _now() -> datetime:
    return datetime.now(UTC)


def ticking(start: datetime, minutes: float = 10.0) -> Callable[[], datetime]:
    """A clock for EventLog that moves on by `minutes` each time it is read, so every record is later
    than the one before: for writing a campaign's logs after the fact, or replaying one."""
    at = start

    def clock() -> datetime:
        nonlocal at
        at += timedelta(minutes=minutes)
        return at

    return clock


class EventLog:
    """Appends events to a JSONL file; `run` is the default run id for run events."""

    def __init__(self, path: str | os.PathLike, run: str | None = None, clock: Callable[[], datetime] = _now):
        self.path = os.fspath(path)
        self.run = run
        self.clock = clock
        directory = os.path.dirname(self.path)
        if directory:
            os.makedirs(directory, exist_ok=True)

    def write(self, type: str, run: str | None = None, **fields: Any) -> dict:
        """Append one event of `type`; None-valued fields are left out."""
        at = self.clock()
        if at.tzinfo is None:
            raise ValueError("event times need a time zone (use datetime.now(timezone.utc))")
        record: dict[str, Any] = {"ts": at.isoformat(timespec="milliseconds"), "type": type}
        if run is None and type not in _CAMPAIGN_TYPES:
            run = self.run
        if run is not None:
            record["run"] = run
        record.update((key, value) for key, value in fields.items() if value is not None)
        line = json.dumps(record, ensure_ascii=False, allow_nan=True, separators=(",", ":"))
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
        return record

    def run_start(self, config: dict | None = None, variant: str | None = None, resumes: str | None = None,
                  step: int | None = None, run: str | None = None) -> dict:
        return self.write("run_start", run, config=config, variant=variant, resumes=resumes, step=step)

    def run_end(self, status: str = "completed", step: int | None = None, run: str | None = None) -> dict:
        return self.write("run_end", run, status=status, step=step)

    def metric(self, step: int, run: str | None = None, **metrics: float) -> dict:
        return self.write("metric", run, step=step, metrics=metrics)

    def eval(self, step: int, metrics: dict[str, float], seconds: float | None = None, run: str | None = None) -> dict:
        return self.write("eval", run, step=step, metrics=metrics, seconds=seconds)

    def checkpoint_save(self, step: int, path: str, seconds: float, bytes: int | None = None,
                        state: Iterable[str] | None = None, run: str | None = None) -> dict:
        return self.write("checkpoint_save", run, step=step, path=path, seconds=seconds, bytes=bytes,
                          state=list(state) if state is not None else None)

    def checkpoint_transfer(self, path: str, seconds: float, bytes: int | None = None,
                            destination: str | None = None, run: str | None = None) -> dict:
        return self.write("checkpoint_transfer", run, path=path, seconds=seconds, bytes=bytes, destination=destination)

    def checkpoint_restore(self, path: str, seconds: float, step: int | None = None, run: str | None = None) -> dict:
        return self.write("checkpoint_restore", run, path=path, seconds=seconds, step=step)

    def reload_test(self, path: str, ok: bool, seconds: float | None = None, new_process: bool = True,
                    message: str | None = None, run: str | None = None) -> dict:
        return self.write("reload_test", run, path=path, ok=ok, seconds=seconds, new_process=new_process, message=message)

    def stop(self, reason: str, rule: str | None = None, step: int | None = None, run: str | None = None) -> dict:
        return self.write("stop", run, rule=rule, reason=reason, step=step)

    def step_start(self, step_id: str, note: str | None = None) -> dict:
        return self.write("step_start", None, step_id=step_id, note=note)

    def step_end(self, step_id: str, note: str | None = None) -> dict:
        return self.write("step_end", None, step_id=step_id, note=note)

    def decision(self, point: str, decision: str, reason: str | None = None, variant: str | None = None) -> dict:
        return self.write("decision", None, point=point, decision=decision, reason=reason, variant=variant)
