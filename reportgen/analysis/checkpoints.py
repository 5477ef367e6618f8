"""Each run's checkpoints, merged from the folders on disk and the logged saves, and whether they resume (R11, R12).

A checkpoint is known from what is on disk (a Trainer `checkpoint-N/` folder, a Lightning
`.ckpt`) and from what the training script logged when it saved (`checkpoint_save` with its
`state`). The two describe the same checkpoint when they name the same run and step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePosixPath

from reportgen.model import Campaign, Evidence, ReloadTest

PARTS = ("model", "optimizer", "scheduler", "scaler", "rng", "data_position", "progress")


@dataclass
class RunCheckpoint:
    """One checkpoint of a run: what it holds, where it was seen, and its reload tests."""

    run: str
    step: int | None
    path: str
    at: datetime | None
    resume_state: dict[str, bool | None]
    evidence: list[Evidence] = field(default_factory=list)
    reload_tests: list[ReloadTest] = field(default_factory=list)

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


def same_path(a: str, b: str) -> bool:
    """Whether two spellings name one checkpoint: equal, or the same last two path parts
    (a path on the training machine against the copy under LOGS)."""
    pa, pb = PurePosixPath(a.replace("\\", "/")).parts, PurePosixPath(b.replace("\\", "/")).parts
    if pa == pb:
        return True
    return len(pa) >= 2 and len(pb) >= 2 and pa[-2:] == pb[-2:]


def run_checkpoints(campaign: Campaign) -> dict[str, list[RunCheckpoint]]:
    """Per run, its checkpoints in step order: disk and logged saves merged by step."""
    out: dict[str, dict[int | str, RunCheckpoint]] = {}
    for found in campaign.checkpoints:
        key: int | str = found.step if found.step is not None else found.path
        item = out.setdefault(found.run, {}).get(key)
        if item is None:
            out[found.run][key] = RunCheckpoint(found.run, found.step, found.path, None, dict(found.resume_state), [found.evidence])
        else:  # two files of one step (Lightning's epoch=…-step=N.ckpt and last.ckpt): a part held by either counts
            for part, held in found.resume_state.items():
                if held is True or item.resume_state.get(part) is None:
                    item.resume_state[part] = held
            item.evidence.append(found.evidence)
    for op in campaign.checkpoint_ops:
        if op.op != "save":
            continue
        key = op.step if op.step is not None else (op.path or "")
        state = {p: (p in op.state) if op.state is not None else None for p in PARTS}
        item = out.setdefault(op.run, {}).get(key)
        if item is None:
            out[op.run][key] = RunCheckpoint(op.run, op.step, op.path or "", op.at, state, [op.evidence])
        else:
            item.at = item.at or op.at
            for part, held in state.items():
                if item.resume_state.get(part) is None:
                    item.resume_state[part] = held
            item.evidence.append(op.evidence)
    result: dict[str, list[RunCheckpoint]] = {}
    for run, items in out.items():
        ordered = sorted(items.values(), key=lambda c: (c.step is None, c.step or 0, c.path))
        for check in ordered:
            check.reload_tests = [t for t in campaign.reload_tests if t.path and same_path(t.path, check.path)]
            check.evidence.sort()
        result[run] = ordered
    return result
