"""Which deliverables count as passed outputs (R10, R14): identical bytes count once, and a
deliverable whose producing run was interrupted or stopped is never approved, while one whose
run's end is merely unknown is not rejected as if it had stopped.

Each campaign here is a few native runs of the sample plan's variants (threshold eval_rougeL
>= 0.32), a two-id corpus and a manifest; the rental is the sample's one 47.14 USD lot.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import yaml
from conftest import JST, SAMPLE_PLAN

from reportgen.build import prepare
from reportgen.events import EventLog

PREDICTIONS = b'{"id": "a", "summary": "x"}\n{"id": "b", "summary": "y"}\n'
OTHER_PREDICTIONS = b'{"id": "a", "summary": "x2"}\n{"id": "b", "summary": "y2"}\n'


class Clock:
    def __init__(self) -> None:
        self.at = datetime(2026, 11, 2, 10, 0, tzinfo=JST)

    def __call__(self) -> datetime:
        self.at += timedelta(minutes=10)
        return self.at


def logged_run(logs: Path, run: str, variant: str, rouge: float, end: str | None) -> None:
    """A native run: start, three metric rows, one evaluation, and its end (`None`: no end logged)."""
    log = EventLog(logs / "runs" / run / "events.jsonl", run=run, clock=Clock())
    log.run_start(config={"run": run}, variant=variant)
    for step in (10, 20, 30):
        log.metric(step=step, loss=1.0)
    log.eval(step=30, metrics={"eval_rougeL": rouge})
    if end is not None:
        log.run_end(status=end, step=30)


def report(logs: Path, files: dict[str, bytes], deliverables: list[dict]) -> dict:
    """Build with the sample plan, its deliverables those the manifest lists (only those a plan names count)."""
    (logs / "corpus").mkdir(parents=True, exist_ok=True)
    (logs / "corpus" / "jsum-v3.ids").write_text("a\nb\n")
    for rel, data in files.items():
        (logs / rel).parent.mkdir(parents=True, exist_ok=True)
        (logs / rel).write_bytes(data)
    (logs / "outputs" / "manifest.yaml").write_text(yaml.safe_dump({"deliverables": deliverables}, sort_keys=False))
    plan = yaml.safe_load(SAMPLE_PLAN.read_text(encoding="utf-8"))
    plan["deliverables"] = [{key: d[key] for key in ("id", "kind", "variant", "corpus") if d.get(key) is not None}
                            for d in deliverables]
    plan_path = logs.parent / "plan.yaml"
    plan_path.write_text(yaml.safe_dump(plan, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return prepare(logs, plan_path).report


def predictions(ident: str, path: str, run: str, corpus: str, variant: str = "lora-r16") -> dict:
    return {"id": ident, "kind": "predictions", "variant": variant, "corpus": corpus, "run": run, "path": path}


def by_id(built: dict) -> dict[str, dict]:
    return {d["id"]: d for d in built["deliverables"]}


def test_a_second_file_with_the_same_bytes_is_a_duplicate_and_counts_once(tmp_path):
    logs = tmp_path / "logs"
    logged_run(logs, "lora-r16-2", "lora-r16", 0.33, "completed")
    built = report(logs, {"outputs/a.jsonl": PREDICTIONS, "outputs/same.jsonl": PREDICTIONS,
                          "outputs/other.jsonl": OTHER_PREDICTIONS}, [
        predictions("preds-a", "outputs/a.jsonl", "lora-r16-2", "jsum-v3"),
        # Another corpus label, so only the content can tell it is the same output.
        predictions("preds-same-bytes", "outputs/same.jsonl", "lora-r16-2", "jsum-v3-mirror"),
        # Counter-example: the same ids with other predictions is a distinct output.
        predictions("preds-other-bytes", "outputs/other.jsonl", "lora-r16-2", "jsum-v3-second-pass"),
    ])
    found = by_id(built)
    assert all(d["passed"] for d in found.values()), [d["reasons"] for d in found.values()]
    assert found["preds-same-bytes"]["sha256"] == found["preds-a"]["sha256"]
    assert found["preds-same-bytes"]["duplicate_of"] == "preds-a"
    assert found["preds-a"]["duplicate_of"] is None and found["preds-other-bytes"]["duplicate_of"] is None
    # Two distinct passed outputs of one 47.14 USD lot: 47.14 / 2 = 23.57 USD each (R14).
    assert (built["costs"]["passed_outputs"], built["costs"]["cost_per_passed_output"]) == (2, 23.57)


def test_identical_bytes_after_a_rejected_deliverable_still_count(tmp_path):
    """Only a passed deliverable can be the original a duplicate points to."""
    logs = tmp_path / "logs"
    logged_run(logs, "lora-r16-1", "lora-r16", 0.30, "failed")  # interrupted
    logged_run(logs, "lora-r16-2", "lora-r16", 0.33, "completed")
    built = report(logs, {"outputs/a.jsonl": PREDICTIONS, "outputs/same.jsonl": PREDICTIONS}, [
        predictions("preds-killed-run", "outputs/a.jsonl", "lora-r16-1", "jsum-v3"),
        predictions("preds-good-run", "outputs/same.jsonl", "lora-r16-2", "jsum-v3-mirror"),
    ])
    found = by_id(built)
    assert found["preds-killed-run"]["passed"] is False
    assert found["preds-good-run"]["passed"] is True and found["preds-good-run"]["duplicate_of"] is None
    # One passed output: the whole 47.14 USD lot.
    assert (built["costs"]["passed_outputs"], built["costs"]["cost_per_passed_output"]) == (1, 47.14)


def test_a_deliverable_of_an_interrupted_run_is_not_approved(tmp_path):
    logs = tmp_path / "logs"
    logged_run(logs, "lora-r16-1", "lora-r16", 0.30, "failed")  # a run_end status other than completed/stopped
    logged_run(logs, "lora-r16-2", "lora-r16", 0.33, "completed")  # the variant passes on this one
    built = report(logs, {"outputs/killed.jsonl": PREDICTIONS, "outputs/good.jsonl": OTHER_PREDICTIONS}, [
        predictions("preds-killed-run", "outputs/killed.jsonl", "lora-r16-1", "jsum-v3"),
        # Counter-example: the same variant, its completed run.
        predictions("preds-completed-run", "outputs/good.jsonl", "lora-r16-2", "jsum-v3-dev"),
    ])
    assert {r["id"]: r["status"] for r in built["runs"]} == {"lora-r16-1": "interrupted", "lora-r16-2": "completed"}
    found = by_id(built)
    assert found["preds-killed-run"]["passed"] is False
    assert found["preds-killed-run"]["reasons"] == [
        ("produced by run 'lora-r16-1', which was interrupted (the run ended with status 'failed'): "
         "not an approved result")]
    assert found["preds-completed-run"]["passed"] is True and found["preds-completed-run"]["reasons"] == []
    assert built["costs"]["passed_outputs"] == 1
    assert [r["deliverable"] for r in built["costs"]["rejections"]] == ["preds-killed-run"]


def test_a_deliverable_of_a_stopped_run_is_not_approved(tmp_path):
    logs = tmp_path / "logs"
    logged_run(logs, "lora-r16-1", "lora-r16", 0.30, "stopped")
    logged_run(logs, "lora-r16-2", "lora-r16", 0.33, "completed")
    built = report(logs, {"outputs/stopped.jsonl": PREDICTIONS}, [
        predictions("preds-stopped-run", "outputs/stopped.jsonl", "lora-r16-1", "jsum-v3")])
    [rejected] = built["deliverables"]
    assert rejected["passed"] is False and rejected["reasons"] == [
        "produced by run 'lora-r16-1', which was stopped (the run ended with status 'stopped'): not an approved result"]
    assert built["costs"]["passed_outputs"] == 0 and built["costs"]["cost_per_passed_output"] is None


def test_a_deliverable_of_a_run_whose_end_is_unknown_is_not_rejected_as_stopped(tmp_path):
    """Unknown is no stop and no interruption (docs/deliverables.md: the run check rejects those only)."""
    logs = tmp_path / "logs"
    logged_run(logs, "lora-r16-1", "lora-r16", 0.30, None)  # a start and no end: unknown
    logged_run(logs, "lora-r16-2", "lora-r16", 0.33, "completed")
    built = report(logs, {"outputs/unknown.jsonl": PREDICTIONS}, [
        predictions("preds-unknown-run", "outputs/unknown.jsonl", "lora-r16-1", "jsum-v3")])
    assert {r["id"]: r["status"] for r in built["runs"]}["lora-r16-1"] == "unknown"
    [unknown] = built["deliverables"]
    assert unknown["passed"] is True and unknown["reasons"] == []
    assert built["costs"]["passed_outputs"] == 1


def test_a_rejected_deliverable_with_the_bytes_of_a_passed_one_is_no_duplicate(tmp_path):
    """A duplicate is a repeat of a passed output; a rejected deliverable stays a rejection with its reasons."""
    logs = tmp_path / "logs"
    logged_run(logs, "lora-r16-1", "lora-r16", 0.30, "failed")  # interrupted
    logged_run(logs, "lora-r16-2", "lora-r16", 0.33, "completed")
    built = report(logs, {"outputs/a.jsonl": PREDICTIONS, "outputs/same.jsonl": PREDICTIONS}, [
        predictions("preds-good-run", "outputs/a.jsonl", "lora-r16-2", "jsum-v3"),
        predictions("preds-killed-run", "outputs/same.jsonl", "lora-r16-1", "jsum-v3-mirror"),
    ])
    found = by_id(built)
    assert (found["preds-good-run"]["passed"], found["preds-good-run"]["duplicate_of"]) == (True, None)
    assert (found["preds-killed-run"]["passed"], found["preds-killed-run"]["duplicate_of"]) == (False, None)
    assert [r["deliverable"] for r in built["costs"]["rejections"]] == ["preds-killed-run"]
