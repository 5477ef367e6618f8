"""Checkpoints at their boundaries (R11, R12): a save that took no time is no measurement of the
save cost, a file copied off exactly at the lot's end was copied in time, a checkpoint whose
contents no source records cannot be called resumable, and two files of one step hold what
either holds."""

from __future__ import annotations

import io
import pickle
import zipfile
from datetime import datetime, timedelta

import pytest
from conftest import JST, SAMPLE_PLAN

from reportgen.analysis.interval import save_interval
from reportgen.build import prepare
from reportgen.events import EventLog

REQUIRED_STATE = ["model", "optimizer", "scheduler", "rng", "progress"]  # the sample plan's checkpoints.required_state
LOT_END = datetime(2026, 11, 5, 9, 0, tzinfo=JST)  # the sample's 3-day lot from 2026-11-02 09:00 JST


def test_a_save_of_zero_seconds_is_no_measurement_of_the_save_cost():
    interval = save_interval([0.0, 30.0, 40.0], [], interruptions=0, gpu_hours=10.0, assumed_mtbi_hours=6.0,
                             planned_minutes=None)
    # C = median(30, 40) = 35 s, from two saves; M = 6 h = 21,600 s; Young sqrt(2 x 35 x 21,600) = 1,229.6 s.
    assert (interval.save_count, interval.save_cost_s) == (2, 35.0)
    assert interval.young_s == pytest.approx(1229.63, abs=0.01)
    # Counter-example: a save of a tenth of a second is one.
    assert save_interval([0.1, 30.0, 40.0], [], interruptions=0, gpu_hours=10.0, assumed_mtbi_hours=6.0,
                         planned_minutes=None).save_count == 3


@pytest.mark.parametrize(("transfer_at", "status"), [
    (LOT_END, "transferred"),  # at the lot's end: still in time
    (LOT_END + timedelta(seconds=1), "transferred_after_lot_end"),  # counter-example
])
def test_a_deliverable_copied_off_exactly_at_the_lot_end_was_copied_in_time(tmp_path, transfer_at, status):
    logs = tmp_path / "logs"
    (logs / "out").mkdir(parents=True)
    (logs / "out" / "metrics.json").write_text("{}")
    (logs / "manifest.yaml").write_text("deliverables:\n  - id: metrics\n    kind: metrics\n    path: out/metrics.json\n")
    clock_at = [datetime(2026, 11, 2, 10, 0, tzinfo=JST)]
    log = EventLog(logs / "events.jsonl", run="lora-r16-2", clock=lambda: clock_at[0])
    log.run_start(config={}, variant="lora-r16")
    clock_at[0] = transfer_at
    log.checkpoint_transfer(path="/job/out/metrics.json", seconds=3.0, destination="team bucket")
    [deliverable] = prepare(logs, SAMPLE_PLAN).report["deliverables"]
    assert (deliverable["location"]["status"], deliverable["location"]["destination"]) == (status, "team bucket")


@pytest.mark.parametrize(("state", "resumable", "lacking"), [
    (None, None, []),  # the save lists no state: whether it resumes cannot be told
    (REQUIRED_STATE, True, []),
    (["model"], False, ["optimizer", "scheduler", "rng", "progress"]),
    # Each required part missing alone is named: the first of the list as much as the last.
    *((["scaler", *(p for p in REQUIRED_STATE if p != missing)], False, [missing]) for missing in REQUIRED_STATE),
])
def test_a_checkpoint_is_resumable_only_when_every_required_part_is_known_to_be_held(tmp_path, state, resumable, lacking):
    logs = tmp_path / "logs"
    log = EventLog(logs / "runs" / "lora-r16-2" / "events.jsonl", run="lora-r16-2",
                   clock=lambda: datetime(2026, 11, 2, 10, 0, tzinfo=JST))
    log.run_start(config={}, variant="lora-r16")
    log.metric(step=10, loss=1.0)
    log.checkpoint_save(step=10, path="ckpt/step-10", seconds=30.0, state=state)
    log.run_end(status="completed", step=10)
    [run] = prepare(logs, SAMPLE_PLAN).report["runs"]
    [checkpoint] = run["checkpoints"]
    assert (checkpoint["step"], checkpoint["resumable"], checkpoint["lacking"]) == (10, resumable, lacking)


def torch_zip(top_level: dict) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("archive/data.pkl", pickle.dumps(top_level, protocol=2))
    return out.getvalue()


PROGRESS = {"epoch": 0, "global_step": 10, "state_dict": {"w": 1},
            "loops": {"fit_loop": {"epoch_loop.batch_progress": {"is_last_batch": True}}}}
FULL = {**PROGRESS, "optimizer_states": [{"state": 1}], "lr_schedulers": [{"step": 1}], "rng_states": {"torch": 1}}
WEIGHTS_ONLY = PROGRESS


@pytest.mark.parametrize(("step_file", "last_file"), [(WEIGHTS_ONLY, FULL), (FULL, WEIGHTS_ONLY)])
def test_two_lightning_files_of_one_step_hold_what_either_holds(tmp_path, step_file, last_file):
    """ModelCheckpoint's epoch=0-step=10.ckpt and last.ckpt are one checkpoint of step 10, whichever holds more."""
    version = tmp_path / "logs" / "tiny" / "version_0"
    (version / "checkpoints").mkdir(parents=True)
    (version / "metrics.csv").write_text("epoch,step,train_loss\n0,4,1.0\n0,9,0.9\n")
    (version / "hparams.yaml").write_text("lr: 0.05\n")
    (version / "checkpoints" / "epoch=0-step=10.ckpt").write_bytes(torch_zip(step_file))
    (version / "checkpoints" / "last.ckpt").write_bytes(torch_zip(last_file))
    [run] = prepare(tmp_path / "logs", SAMPLE_PLAN).report["runs"]
    [checkpoint] = run["checkpoints"]
    assert checkpoint["resume_state"] == {"model": True, "optimizer": True, "scheduler": True, "scaler": False,
                                          "rng": True, "data_position": True, "progress": True}
    assert checkpoint["resumable"] is True
    assert [e["path"] for e in checkpoint["evidence"]] == ["tiny/version_0/checkpoints/epoch=0-step=10.ckpt",
                                                           "tiny/version_0/checkpoints/last.ckpt"]


def test_counter_example_a_weights_only_file_alone_cannot_resume(tmp_path):
    version = tmp_path / "logs" / "tiny" / "version_0"
    (version / "checkpoints").mkdir(parents=True)
    (version / "metrics.csv").write_text("epoch,step,train_loss\n0,4,1.0\n0,9,0.9\n")
    (version / "checkpoints" / "last.ckpt").write_bytes(torch_zip(WEIGHTS_ONLY))
    [run] = prepare(tmp_path / "logs", SAMPLE_PLAN).report["runs"]
    [checkpoint] = run["checkpoints"]
    assert (checkpoint["resumable"], checkpoint["lacking"]) == (False, ["optimizer", "scheduler", "rng"])
