"""Deliverables (R15): the manifest's entries checked file by file; nothing outside LOGS is read."""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import SAMPLE_PLAN

from reportgen.analysis.options import plan_options
from reportgen.analysis.schedule import reconcile
from reportgen.build import prepare
from reportgen.cli import cli
from reportgen.ingest import ingest
from reportgen.model import Campaign
from reportgen.plan.schema import Plan
from reportgen.verify import check_deliverables, temp_root

COMMIT = "9f6c3d2e8b1a4f7c0d5e2b9a8c7d6e5f4a3b2c1d"


def safetensors_bytes(cut: int = 0) -> bytes:
    header = json.dumps({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}).encode()
    blob = struct.pack("<Q", len(header)) + header + b"\x00" * 16
    return blob[: len(blob) - cut]


def adapter(folder: Path, revision: object = COMMIT, cut: int = 0) -> None:
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "org/base", "revision": revision}))
    (folder / "adapter_model.safetensors").write_bytes(safetensors_bytes(cut))


@pytest.fixture
def logs(tmp_path) -> Path:
    root = tmp_path / "logs"
    (root / "out").mkdir(parents=True)
    (root / "corpus.ids").write_text("a\nb\nc\n")
    (root / "out" / "preds.jsonl").write_text('{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n{"id": "c", "text": "z"}\n')
    (root / "out" / "gaps.jsonl").write_text('{"id": "a"}\n{"id": "a"}\n{"id": "q"}\n')
    (root / "out" / "empty.jsonl").write_text("")
    adapter(root / "out" / "adapter-good")
    adapter(root / "out" / "adapter-null", revision=None)
    adapter(root / "out" / "adapter-branch", revision="main")
    adapter(root / "out" / "adapter-cut", cut=7)
    outside = tmp_path / "secret.txt"
    outside.write_text("outside LOGS")
    (root / "out" / "escape.txt").symlink_to(outside)
    return root


def checks_for(logs: Path, entries: list[dict], plan_data: dict) -> dict:
    (logs / "manifest.yaml").write_text(yaml.safe_dump({"deliverables": entries}, sort_keys=False))
    plan = Plan.model_validate(plan_data)
    return {c.entry.id: c for c in check_deliverables(plan, logs, ingest(logs))}


def reasons(check) -> str:
    return " | ".join(check.reasons + [r for f in check.files for r in f.reasons])


def test_each_bad_path_or_file_is_rejected_with_its_reason(logs, sample_plan_data, monkeypatch):
    monkeypatch.setenv("TMPDIR", "/scratch/tmp")
    entries = [
        {"id": "up", "kind": "metrics", "path": "../secret.txt"},
        {"id": "absolute", "kind": "metrics", "path": str(logs / "out" / "preds.jsonl")},
        {"id": "link", "kind": "metrics", "path": "out/escape.txt"},
        {"id": "empty", "kind": "metrics", "path": "out/empty.jsonl"},
        {"id": "tmp", "kind": "predictions", "path": "/tmp/run/preds.jsonl"},
        {"id": "tmpdir", "kind": "metrics", "path": "/scratch/tmp/x.json"},
        {"id": "truncated", "kind": "adapter", "path": "out/adapter-cut"},
        {"id": "null-revision", "kind": "adapter", "path": "out/adapter-null"},
        {"id": "branch", "kind": "adapter", "path": "out/adapter-branch"},
        {"id": "missing", "kind": "metrics", "path": "out/nope.json"},
        {"id": "good-adapter", "kind": "adapter", "path": "out/adapter-good"},
    ]
    checks = checks_for(logs, entries, sample_plan_data)
    assert "uses '..'" in reasons(checks["up"])
    assert "an absolute path" in reasons(checks["absolute"])
    assert "a link that leads out of LOGS" in reasons(checks["link"])
    assert "out/empty.jsonl is empty" in reasons(checks["empty"])
    assert "under a temporary folder (/tmp)" in reasons(checks["tmp"])
    assert "under a temporary folder (/scratch/tmp)" in reasons(checks["tmpdir"])
    assert "cannot be reloaded" in reasons(checks["truncated"]) and "cut off" in reasons(checks["truncated"])
    assert "revision is null" in reasons(checks["null-revision"])
    assert "'main' is a branch or tag" in reasons(checks["branch"])
    assert "does not exist under LOGS" in reasons(checks["missing"])
    assert checks["good-adapter"].file_ok, reasons(checks["good-adapter"])
    assert all(not checks[name].file_ok for name in checks if name != "good-adapter")
    # Nothing outside LOGS was read: the refused paths have no size or hash.
    for name in ("up", "absolute", "link", "tmp"):
        assert all(f.bytes is None and f.sha256 is None for f in checks[name].files)


def test_predictions_must_cover_exactly_the_corpus_ids(logs, sample_plan_data):
    sample_plan_data["corpus"]["expected_ids"] = "corpus.ids"
    checks = checks_for(logs, [
        {"id": "complete", "kind": "predictions", "variant": "lora-r16", "path": "out/preds.jsonl"},
        {"id": "gaps", "kind": "predictions", "variant": "lora-r16", "path": "out/gaps.jsonl"},
    ], sample_plan_data)
    assert checks["complete"].file_ok and checks["complete"].ids["missing"] == []
    gaps = checks["gaps"]
    assert gaps.ids == {"expected": 3, "found": 2, "missing": ["b", "c"], "extra": ["q"], "duplicates": ["a"]}
    text = reasons(gaps)
    assert "2 ids missing: b, c" in text and "1 id not in the corpus: q" in text and "1 id predicted twice: a" in text


def test_a_sha256_that_does_not_match_is_a_rejection(logs, sample_plan_data):
    digest = hashlib.sha256((logs / "out" / "preds.jsonl").read_bytes()).hexdigest()
    checks = checks_for(logs, [
        {"id": "right", "kind": "metrics", "path": "out/preds.jsonl", "sha256": digest},
        {"id": "wrong", "kind": "metrics", "path": "out/preds.jsonl", "sha256": "0" * 64},
    ], sample_plan_data)
    assert checks["right"].file_ok and checks["right"].files[0].sha256 == digest
    assert "SHA-256 does not match" in reasons(checks["wrong"])


def test_temporary_roots():
    assert temp_root("/tmp/x") == "/tmp" and temp_root("/dev/shm/a/b") == "/dev/shm" and temp_root("/var/tmp") == "/var/tmp"
    assert temp_root("/tmpfoo/x") is None and temp_root("out/tmp/x") is None


def test_a_plan_inside_logs_is_not_read_as_a_manifest(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "plan.yaml").write_bytes(SAMPLE_PLAN.read_bytes())
    campaign = ingest(logs)
    assert campaign.manifest == [] and campaign.inputs[0].format is None


def test_sample_reproduces_r14_two_passed_corpora_at_23_57_and_repeats_count_once():
    report = prepare(SAMPLE_PLAN.parent, SAMPLE_PLAN).report
    costs = report["costs"]
    assert costs["cost_per_passed_output"] == 23.57 and costs["passed_outputs"] == 2
    deliverables = {d["id"]: d for d in report["deliverables"]}
    counted = sorted(d["id"] for d in deliverables.values() if d["counts_as_output"])
    assert counted == ["predictions-lora-r16", "predictions-lora-r16-jsum-v2-dev"]
    repeats = [d for d in deliverables.values() if d["id"].startswith("predictions-lora-r16-timing-")]
    assert len(repeats) == 4 and all(d["passed"] and d["duplicate_of"] == "predictions-lora-r16" for d in repeats)
    rejected = {r["deliverable"]: r["reasons"] for r in costs["rejections"]}
    assert set(rejected) == {"adapter-lora-r64"}
    # The control's predictions pass their checks: the baseline, delivered for comparison and not counted.
    assert deliverables["predictions-control"]["passed"] and not deliverables["predictions-control"]["counts_as_output"]
    excluded = {e["deliverable"]: e["reason"] for e in costs["excluded"]}
    assert excluded["predictions-control"] == ("the control's output, the baseline (0.301), below the passing level "
                                               "eval_rougeL >= 0.320")
    assert any("which was stopped" in r for r in rejected["adapter-lora-r64"])
    assert any("'main' is a branch or tag" in r for r in rejected["adapter-lora-r64"])
    assert deliverables["predictions-lora-r16"]["ids"]["missing"] == [] and deliverables["predictions-lora-r16"]["ids"]["expected"] == 2000


def test_when_nothing_passed_the_cost_is_undefined_with_the_confirmed_cost_and_every_rejection(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE_PLAN.parent, logs)
    manifest = yaml.safe_load((logs / "outputs" / "manifest.yaml").read_text())
    kept = [d for d in manifest["deliverables"] if d["id"] in ("predictions-control", "adapter-lora-r64")]
    (logs / "outputs" / "manifest.yaml").write_text(yaml.safe_dump({"deliverables": kept}))
    report = prepare(logs, logs / "plan.yaml").report
    costs = report["costs"]
    assert costs["cost_per_passed_output"] is None and costs["passed_outputs"] == 0
    assert costs["confirmed_total"] == 47.14
    assert costs["undefined_reason"] == ("only the control's predictions passed their checks, and they are the "
                                         "baseline, below the passing level")
    assert [r["deliverable"] for r in costs["rejections"]] == ["adapter-lora-r64"]
    assert set(costs["missing_deliverables"]) == {"predictions-lora-r16", "predictions-lora-r16-jsum-v2-dev",
                                                  "adapter-lora-r16", "error-analysis", "stop-reasons"}


def test_the_seed_overrun_lists_the_7_day_lot_two_lots_with_the_caveat_and_a_reduced_protocol(sample_plan_data):
    sample_plan_data["schedule"]["steps"][6]["hours"] += 30  # train-r16: the 48 h plan grows by 30 h to 78 h
    plan = Plan.model_validate(sample_plan_data)
    schedule = reconcile(plan, Campaign(root="."))
    assert schedule.planned_hours == 78 and schedule.window.hours == 72
    options = {o.label: o for o in plan_options(plan, schedule)}
    week = options["RTX 4090, 7 days"]
    assert week.price == 110 and week.fits and week.kind == "catalogue"
    assert not options["RTX 4090, 3 days"].fits
    two = options["two RTX 4090, 3 days lots"]
    assert two.price == 94.28 and "neither shorten a run nor pool memory" in two.note
    reduced = options["reduced protocol"]
    assert reduced.price == 47.14 and reduced.dropped == ["train-r64", "explore-len2048"] and reduced.fits
    assert "saves" in reduced.note and reduced.hours_needed < 72
    assert plan_options(Plan.model_validate(yaml.safe_load(SAMPLE_PLAN.read_text())), reconcile(
        Plan.model_validate(yaml.safe_load(SAMPLE_PLAN.read_text())), Campaign(root="."))) == []  # 48 h fits


def test_an_overrun_campaign_shows_its_plan_options_on_the_costs_page(tmp_path, sample_plan_data, write_plan):
    def edit(data):
        data["schedule"]["steps"][6]["hours"] += 30

    logs = tmp_path / "logs"
    logs.mkdir()
    result = CliRunner().invoke(cli, ["build", str(logs), str(write_plan(sample_plan_data, edit)), "-o", str(tmp_path / "site"), "-q"])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "site" / "costs.html").read_text()
    assert "Plan options" in page and "110.00 USD" in page and "94.28 USD" in page and "reduced protocol" in page


def test_a_deliverable_transfer_logged_before_or_after_the_lot_end_is_its_location(logs, sample_plan_data, event_log, clock):
    log = event_log("transfers.jsonl", run="lora-r16-2")
    log.run_start(config={})
    clock.hours(5)
    log.checkpoint_transfer(path="/job/out/preds.jsonl", seconds=3.0, destination="team bucket")
    clock.at += timedelta(days=4)
    log.checkpoint_transfer(path="/job/out/gaps.jsonl", seconds=3.0, destination="team bucket")
    log.run_end(status="completed", step=1)
    (logs / "manifest.yaml").write_text(yaml.safe_dump({"deliverables": [
        {"id": "early", "kind": "metrics", "path": "out/preds.jsonl"},
        {"id": "late", "kind": "metrics", "path": "out/gaps.jsonl"},
        {"id": "here", "kind": "metrics", "path": "corpus.ids"},
        {"id": "gone", "kind": "metrics", "path": "out/missing.json"},
    ]}))
    report = prepare(logs, write_plan_file(logs.parent, sample_plan_data)).report
    where = {d["id"]: d["location"]["status"] for d in report["deliverables"]}
    assert where == {"early": "transferred", "late": "transferred_after_lot_end", "here": "copy_in_logs", "gone": "missing"}


def write_plan_file(folder: Path, data: dict) -> Path:
    path = folder / "plan.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_a_folder_deliverable_never_reads_through_links_that_leave_it(logs, sample_plan_data, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "weights.bin").write_bytes(b"\x00" * 10)
    (logs / "out" / "adapter-good" / "linked").symlink_to(outside, target_is_directory=True)
    (logs / "out" / "adapter-good" / "leak.json").symlink_to(tmp_path / "secret.txt")
    checks = checks_for(logs, [{"id": "a", "kind": "adapter", "path": "out/adapter-good"}], sample_plan_data)
    folder = logs / "out" / "adapter-good"
    inside = (folder / "adapter_model.safetensors").stat().st_size + (folder / "adapter_config.json").stat().st_size
    assert checks["a"].file_ok and checks["a"].files[0].bytes == inside  # neither link was read
