"""Freeze the plan as written before the order (R16): a verbatim copy and its SHA-256 inside LOGS.

Later builds reconcile against the frozen original, so an edit made to plan.yaml after the
order is shown as an edit instead of silently becoming the plan.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from reportgen.boundary import inside, read_file, resolved
from reportgen.bounded import load_json
from reportgen.errors import InputError, PlanError
from reportgen.plan.load import MAX_PLAN_BYTES, LoadedPlan, load_plan, parse_plan

RECORD_DIR = ".reportgen"
FROZEN_PLAN = "plan.frozen.yaml"
FREEZE_RECORD = "freeze.json"
MAX_RECORD = 64 << 10  # freeze.json holds a hash, a time and a name


@dataclass(frozen=True)
class Freeze:
    sha256: str
    frozen_at: str | None
    source_name: str
    plan: LoadedPlan

    @property
    def time(self) -> datetime | None:
        """When the plan was frozen, if freeze.json says so in a form that reads as a time."""
        if not self.frozen_at:
            return None
        try:
            at = datetime.fromisoformat(self.frozen_at)
        except ValueError:
            return None
        return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _now_iso() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    at = datetime.fromtimestamp(int(epoch), UTC) if epoch and epoch.isdigit() else datetime.now(UTC)
    return at.isoformat(timespec="seconds")


def _write_new(path: Path, data: bytes) -> None:
    """Write a file whole or not at all (temporary file, then rename)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def freeze(plan_path: Path, logs: Path) -> tuple[Freeze, bool]:
    """Record the plan in LOGS; returns the record and whether it was new.

    A plan already frozen with other content is refused: the original is what later builds
    compare against, so it is never overwritten.
    """
    loaded = load_plan(plan_path)
    if not logs.is_dir():
        raise InputError(f"{logs}: no such folder; freeze records the plan inside the campaign's LOGS folder")
    existing = read_freeze(logs)
    if existing is not None:
        if existing.sha256 == loaded.sha256:
            return existing, False
        raise InputError(
            f"{logs / RECORD_DIR / FREEZE_RECORD}: a different plan was frozen on {existing.frozen_at} "
            f"(sha256 {existing.sha256[:12]}); the frozen original is never replaced. "
            f"Builds will show {plan_path.name} as edited since the freeze."
        )
    record_dir = logs / RECORD_DIR
    record_dir.mkdir(exist_ok=True)
    raw = plan_path.read_bytes()
    _write_new(record_dir / FROZEN_PLAN, raw)
    record = {"sha256": loaded.sha256, "frozen_at": _now_iso(), "source_name": plan_path.name}
    _write_new(record_dir / FREEZE_RECORD, (json.dumps(record, indent=2) + "\n").encode())
    return Freeze(loaded.sha256, record["frozen_at"], plan_path.name, parse_plan(record_dir / FROZEN_PLAN, raw, raw.decode())), True


def _inside(logs: Path, *paths: Path) -> None:
    """The freeze record lives in LOGS itself: a link that takes it (or its folder) elsewhere is refused."""
    for path in paths:
        try:
            real = resolved(path)
        except OSError as exc:
            raise InputError(f"{path}: cannot be read: {exc.strerror or exc}") from None
        if real is None:
            raise InputError(f"{path}: a link loop; the freeze record is read only inside LOGS") from None
        if not inside(logs, path):
            raise InputError(f"{path}: a link to {real}, outside LOGS; the freeze record is read and written only "
                             "inside LOGS") from None


def read_freeze(logs: Path) -> Freeze | None:
    """The frozen plan in LOGS, checked against its recorded SHA-256; None if never frozen."""
    record_path = logs / RECORD_DIR / FREEZE_RECORD
    plan_path = logs / RECORD_DIR / FROZEN_PLAN
    _inside(logs, logs / RECORD_DIR, record_path, plan_path)
    if not record_path.exists():
        return None
    try:
        record = load_json(read_file(record_path, MAX_RECORD).data.decode("utf-8"))
        sha = record["sha256"]
        if not isinstance(sha, str):
            raise TypeError
    except (ValueError, KeyError, TypeError, OSError):
        raise InputError(f"{record_path}: damaged freeze record (expected JSON with 'sha256')") from None
    try:
        raw = read_file(plan_path, MAX_PLAN_BYTES + 1).data
    except OSError:
        raise InputError(f"{plan_path}: the frozen plan is missing though {record_path.name} records one") from None
    actual = hashlib.sha256(raw).hexdigest()
    if actual != sha:
        raise InputError(
            f"{plan_path}: its SHA-256 is {actual[:12]}, not the {sha[:12]} recorded at freeze time; "
            "the frozen original was altered"
        )
    try:
        loaded = parse_plan(plan_path, raw, raw.decode("utf-8"))
    except (PlanError, UnicodeDecodeError) as exc:
        raise InputError(f"{plan_path}: the frozen plan no longer validates:\n{exc}") from None
    return Freeze(sha, record.get("frozen_at"), str(record.get("source_name", "plan.yaml")), loaded)
