"""The formats users already log in, read from folders written by the real libraries.

tests/fixtures/formats/ was made by tests/fixtures/make_fixtures.py with transformers + peft,
lightning, torch's SummaryWriter and mlflow; see that script for what each scenario does.
"""

from __future__ import annotations

import json
import math
import pickle
import re
import shutil
import sqlite3
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import broken_links, inspect_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reportgen.cli import cli
from reportgen.ingest import ingest, tensorboard, textlog
from reportgen.ingest.torchfile import Opaque, scan
from reportgen.render.site import anchor

FIXTURES = Path(__file__).parent / "fixtures" / "formats"

EXPECTED_STATUS = {
    "hf-clean": "completed",
    "hf-nan": "completed",
    "hf-killed": "unknown",  # killed with no trace of the kill: nothing says it was cut
    "hf-best": "completed",
    "hf-resumed": "completed",
    "pl-clean/version_0": "completed",
    "pl-nan/version_0": "completed",
    "pl-killed/version_0": "interrupted",
    "pl-killed/version_1": "completed",
    "pl-tb/version_0": "completed",
    "tb-clean": "unknown",
    "tb-broken": "interrupted",
    "ml-clean": "completed",
    "ml-killed": "unknown",  # still RUNNING in MLflow: died without ending the run, or still running
    "mlf-clean": "completed",
    "mlf-killed": "unknown",
    "oom-1": "interrupted",
}



@pytest.fixture(scope="module")
def inspected() -> dict:
    return inspect_of(ingest(FIXTURES))


def runs_of(data: dict) -> dict[str, dict]:
    return {r["id"]: r for r in data["runs"]}


def windows(run: dict, metric: str) -> list[dict]:
    return [w for w in run["non_finite"] if w["metric"] == metric]


def test_every_run_is_found_with_its_status(inspected):
    runs = runs_of(inspected)
    assert {r: runs[r]["status"] for r in runs} == EXPECTED_STATUS


def test_no_file_is_missed_and_every_file_is_recognised(inspected):
    on_disk = {p.relative_to(FIXTURES).as_posix() for p in FIXTURES.rglob("*") if p.is_file()}
    listed = {i["path"]: i["format"] for i in inspected["inputs"]}
    assert set(listed) == on_disk
    assert [p for p, fmt in listed.items() if fmt is None] == []


def test_one_run_merges_its_trainer_state_tensorboard_and_train_log(inspected):
    run = runs_of(inspected)["hf-clean"]
    assert run["formats"] == ["hf-trainer", "tensorboard", "text-log"]
    assert "hf/hf-clean/trainer_state.json" in run["sources"]
    assert "hf/hf-clean/train.log" in run["sources"]
    assert any(s.startswith("hf/hf-clean/runs/") for s in run["sources"])
    assert (run["first_step"], run["last_step"]) == (5, 30)
    assert run["started_at"] is not None  # from TensorBoard's wall times; trainer_state has none
    assert {"loss", "eval_loss", "grad_norm"} <= set(run["metrics"])
    assert "train/loss" not in run["metrics"]  # TensorBoard's spelling of the Trainer's loss: one metric
    assert run["non_finite"] == []


def test_trainer_nan_filter_zero_loss_is_reported_as_non_finite(inspected):
    run = runs_of(inspected)["hf-nan"]
    grad = windows(run, "grad_norm")
    assert [(w["step"], w["last_step"]) for w in grad] == [(15, 30)]
    loss = windows(run, "loss")  # logged as 0.0 from step 20 while grad_norm was NaN
    assert [(w["step"], w["last_step"], w["count"]) for w in loss] == [(20, 30, 3)]
    assert "NaN filter" in loss[0]["note"]
    evidence = loss[0]["evidence"][0]
    lines = (FIXTURES / evidence["path"]).read_text().splitlines()
    assert '"step": 20' in "\n".join(lines[evidence["line"] - 1:evidence["line"] + 8])
    assert [w["step"] for w in windows(run, "eval_loss")] == [20]


def test_killed_trainer_run_is_read_from_its_last_checkpoint(inspected):
    run = runs_of(inspected)["hf-killed"]
    assert run["last_step"] == 20
    assert "checkpoint-20/trainer_state.json" in run["status_reason"]
    steps = [c["step"] for c in inspected["checkpoints"] if c["run"] == "hf-killed"]
    assert steps == [10, 20]


def test_trainer_checkpoint_resume_parts(inspected):
    check = next(c for c in inspected["checkpoints"] if c["path"] == "hf/hf-clean/checkpoint-20")
    assert check["resume_state"] == {"model": True, "optimizer": True, "scheduler": True, "scaler": False,
                                     "rng": True, "data_position": True, "progress": True}
    assert "adapter_model.safetensors" in check["parts"]


def test_peft_adapter_config_is_part_of_the_run_config():
    campaign = ingest(FIXTURES)
    config = campaign.runs["hf-clean"].config
    assert config["adapter.base_model_name_or_path"] == "tiny-gpt2-fixture"
    assert config["adapter.revision"] == "0123abc"
    assert config["adapter.peft_type"] == "LORA"


def test_resumed_trainer_run_shows_its_restart(inspected):
    run = runs_of(inspected)["hf-resumed"]
    assert any(m["kind"] == "resumed" for m in run["messages"])


def test_lightning_versions_resume_and_checkpoints_are_read_without_unpickling(inspected):
    runs = runs_of(inspected)
    assert runs["pl-killed/version_1"]["resumes"] == "pl-killed/version_0"
    # one stdout.log holds both processes: each version is a source of it
    assert "lightning/pl-killed/stdout.log" in runs["pl-killed/version_0"]["sources"]
    assert "lightning/pl-killed/stdout.log" in runs["pl-killed/version_1"]["sources"]
    assert runs["pl-killed/version_1"]["first_step"] > 0
    last = next(c for c in inspected["checkpoints"] if c["path"] == "lightning/pl-killed/version_0/checkpoints/last.ckpt")
    assert last["step"] == 20
    state = last["resume_state"]
    assert state["model"] and state["optimizer"] and state["scheduler"] and state["progress"]
    assert state["rng"] is False  # Lightning does not save RNG state by default
    assert state["data_position"] is False  # mid-epoch, with a data loader that keeps no state
    assert {"state_dict", "optimizer_states", "lr_schedulers", "loops", "global_step"} <= set(last["parts"])
    # on_step and on_epoch logging: Lightning writes train_loss_step and train_loss_epoch columns
    nan_run = runs["pl-nan/version_0"]
    assert [w["step"] for w in windows(nan_run, "train_loss_step")] == [19]
    assert [w["step"] for w in windows(nan_run, "train_loss_epoch")] == [39]
    assert {"train_loss_step", "train_loss_epoch", "val_loss", "epoch"} <= set(runs["pl-clean/version_0"]["metrics"])


def test_lightning_with_tensorboard_logger_is_one_run_ended_by_its_events(inspected, tmp_path):
    """TensorBoardLogger (Lightning's default) writes events and hparams.yaml, no metrics.csv."""
    run = runs_of(inspected)["pl-tb/version_0"]
    assert run["formats"] == ["lightning-csv", "tensorboard", "text-log"]
    assert "train_loss_step" in run["metrics"] and run["last_step"] == 40
    # Without the captured stdout ("max_steps=40 reached"), the events reaching max_steps say it completed.
    shutil.copytree(FIXTURES / "lightning" / "pl-tb", tmp_path / "pl-tb", ignore=shutil.ignore_patterns("stdout.log"))
    result = CliRunner().invoke(cli, ["inspect", str(tmp_path), "--json"])
    alone = json.loads(result.output)["runs"][0]
    assert (alone["id"], alone["status"]) == ("pl-tb/version_0", "completed")
    assert "reached max_steps 40" in alone["status_reason"] and ".tfevents." in alone["status_reason"]
    assert ingest(tmp_path).runs["pl-tb/version_0"].config == {"hparams": {"lr": 0.05, "max_steps": 40}}


def test_tensorboard_damage_is_reported_and_the_rest_is_read(inspected):
    broken = next(i for i in inspected["inputs"] if i["path"].startswith("tensorboard/tb-broken/"))
    messages = [p["message"] for p in broken["problems"]]
    assert any("CRC does not match" in m for m in messages)
    assert any("cut off" in m for m in messages)
    assert broken["skipped"] == 2 and broken["records"] > 100
    run = runs_of(inspected)["tb-broken"]
    assert [w["step"] for w in windows(run, "train/loss")] == [30]
    clean = runs_of(inspected)["tb-clean"]
    assert "train/tokens_per_s" in clean["metrics"]  # a tensor summary (new_style) is read too
    assert (clean["first_step"], clean["last_step"]) == (1, 50)


def test_tensorboard_reader_rejects_a_flipped_byte_in_every_record(tmp_path):
    source = next((FIXTURES / "tensorboard" / "tb-clean").glob("events.out.tfevents.*"))
    data = bytearray(source.read_bytes())
    length = int.from_bytes(data[:8], "little")
    data[12 + length // 2] ^= 0x01  # inside the first record's data
    path = tmp_path / "events.out.tfevents.x"
    path.write_bytes(bytes(data))
    info, frame = tensorboard.read(path, path.name, "r")
    assert info.skipped == 1 and info.problems[0].line == 1
    _original_info, original = tensorboard.read(source, source.name, "r")
    assert len(frame) == len(original)  # the first record holds no scalar: nothing else was lost


def test_mlflow_sqlite_and_file_store_keep_nan_and_times(inspected):
    runs = runs_of(inspected)
    for run_id in ("ml-killed", "mlf-killed"):
        run = runs[run_id]
        assert [w["step"] for w in windows(run, "loss")] == [25]
        assert run["ended_at"] is None and run["started_at"] is not None
    assert runs["ml-clean"]["ended_at"] is not None
    assert runs["ml-clean"]["metrics"] == ["eval_loss", "loss"]


def test_text_log_oom_and_too_long_inputs_are_told_apart_from_truncation(inspected, tmp_path):
    run = runs_of(inspected)["oom-1"]
    kinds = {m["kind"] for m in run["messages"]}
    assert {"oom", "too_long"} <= kinds and "truncation" not in kinds
    log = tmp_path / "run.log"
    log.write_text("Truncation was not explicitly activated but `max_length` is provided\n"
                   "Token indices sequence length is longer than the specified maximum sequence length "
                   "for this model (600 > 512). Running this sequence through the model will result in indexing errors\n"
                   "step 10 loss: nan\n")
    _info, messages, _sessions = textlog.read(log, "run.log")
    assert [m.kind for m in messages] == ["truncation", "too_long", "non_finite"]
    assert [m.evidence.line for m in messages] == [1, 2, 3]


def test_pickle_walk_never_runs_code(tmp_path):
    marker = tmp_path / "ran"

    class Exploit:
        def __reduce__(self):
            return (Path.touch, (marker,))

    data = pickle.dumps({"global_step": 7, "evil": Exploit(), "nested": {"a": [1, 2.5, None]}}, protocol=4)
    result = scan(data)
    assert not marker.exists()
    assert result["global_step"] == 7 and result["nested"] == {"a": [1, 2.5, None]}
    assert isinstance(result["evil"], Opaque) and "touch" in result["evil"].name


def test_cut_off_trainer_state_keeps_complete_entries(tmp_path):
    source = (FIXTURES / "hf" / "hf-clean" / "trainer_state.json").read_text()
    folder = tmp_path / "logs" / "cut-run"
    folder.mkdir(parents=True)
    cut_at = source.index('"step": 20')
    (folder / "trainer_state.json").write_text(source[:cut_at])
    data = inspect_of(ingest(tmp_path / "logs"))
    run = runs_of(data)["cut-run"]
    assert run["status"] == "interrupted"
    assert run["last_step"] == 15  # the last complete entry before the cut (step 20 is cut)
    problems = [p["message"] for p in data["problems"]]
    assert any("complete log_history entries before it are read" in m for m in problems)


def test_inspect_command_json_and_table():
    runner = CliRunner()
    result = runner.invoke(cli, ["inspect", str(FIXTURES), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["schema"] == "reportgen.inspect/1"
    assert {"inputs", "runs", "checkpoints", "problems"} <= set(data)
    table = runner.invoke(cli, ["inspect", str(FIXTURES)])
    assert table.exit_code == 0
    assert "hf-killed" in table.output and "interrupted" in table.output
    assert "Checkpoints (" in table.output and "Non-finite values (" in table.output


def test_inspect_of_a_missing_folder_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(cli, ["inspect", str(tmp_path / "nope")])
    assert result.exit_code == 1
    assert "no such folder" in result.output


def test_build_with_a_plan_mapping_the_runs_writes_the_site(tmp_path, sample_plan_data):
    logs = tmp_path / "logs"
    shutil.copytree(FIXTURES, logs)
    plan = sample_plan_data
    plan["quality"]["metric"] = "eval_loss"
    plan["quality"]["direction"] = "lower"
    plan["quality"]["threshold"] = 5.0
    for variant in plan["variants"]:
        variant["runs"] = []
    plan["variants"][0]["runs"] = ["hf-clean", "ml-clean"]
    plan["variants"][1]["runs"] = ["hf-nan", "pl-*"]
    plan_path = tmp_path / "plan.yaml"
    plan_path.write_text(yaml.safe_dump(plan, sort_keys=False))
    result = CliRunner().invoke(cli, ["build", str(logs), str(plan_path), "-o", str(tmp_path / "site"), "-q"])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "site" / "report.json").read_text())
    by_id = {r["id"]: r for r in report["runs"]}
    assert by_id["hf-clean"]["variant"] == plan["variants"][0]["id"]
    assert by_id["pl-killed/version_0"]["status"] == "interrupted"
    control = next(v for v in report["variants"] if v["id"] == plan["variants"][0]["id"])
    assert control["verdict"] == "baseline" and math.isfinite(control["value"])
    pages = {p.name for p in (tmp_path / "site").rglob("*.html")}
    assert {"index.html", "runs.html", "inputs.html"} <= pages
    # Every cited line opens, also in binary files: a TensorBoard record is shown as it was read.
    assert broken_links(tmp_path / "site") == []
    record = next(s for s in report["stops"] if s["run"] == "hf-nan" and any(".tfevents." in e["path"] for e in s["evidence"]))
    cited = next(e for e in record["evidence"] if ".tfevents." in e["path"])
    page = (tmp_path / "site" / "evidence" / f"{anchor(cited['path'])}.html").read_text()
    assert re.search(r'id="L%d" class="line cited"><span class="ln">%d</span>step 15: train/grad_norm = NaN' % (cited["line"], cited["line"]), page)


def test_records_written_by_torch_pass_the_crc_check():
    # The CRCs in this file were written by torch's SummaryWriter: all of them must check out.
    source = next((FIXTURES / "tensorboard" / "tb-clean").glob("events.out.tfevents.*"))
    info, frame = tensorboard.read(source, source.name, "r")
    assert info.problems == [] and info.skipped == 0
    assert info.records == 1 + 50 * 3 + 5 * 2  # file_version, 3 scalars a step, eval/loss and a histogram every 10
    assert tensorboard.masked_crc(b"123456789") == ((((0xE3069283 >> 15) | (0xE3069283 << 17)) + 0xA282EAD8) & 0xFFFFFFFF)


def test_trainer_best_model_points_into_the_logs(inspected):
    best = runs_of(inspected)["hf-best"]["best"]
    assert best["step"] == 10 and best["checkpoint"] == "hf/hf-best/checkpoint-10"
    assert best["checkpoint_as_written"].endswith("checkpoint-10")  # a path on the training machine
    state = json.loads((FIXTURES / "hf" / "hf-best" / "trainer_state.json").read_text())
    assert best["metric"] == state["best_metric"]
    assert runs_of(inspected)["hf-clean"]["best"] is None  # no metric_for_best_model: nothing invented


def test_older_trainer_state_layout_with_infinity_is_read(tmp_path):
    """Older Trainer releases wrote no stateful_callbacks, best_global_step or logging_steps keys."""
    state = json.loads((FIXTURES / "hf" / "hf-clean" / "trainer_state.json").read_text())
    for key in ("stateful_callbacks", "best_global_step", "logging_steps", "eval_steps", "save_steps",
                "train_batch_size", "num_input_tokens_seen"):
        state.pop(key, None)
    state["log_history"][2]["grad_norm"] = math.inf
    folder = tmp_path / "logs" / "old-run"
    folder.mkdir(parents=True)
    text = json.dumps(state, indent=2)
    assert "Infinity" in text  # a bare literal, as Python's json writes it
    (folder / "trainer_state.json").write_text(text)
    run = runs_of(inspect_of(ingest(tmp_path / "logs")))["old-run"]
    assert run["status"] == "completed" and (run["first_step"], run["last_step"]) == (5, 30)
    assert [(w["metric"], w["step"]) for w in run["non_finite"]] == [("grad_norm", state["log_history"][2]["step"])]


def test_an_mlflow_run_named_like_a_trainer_folder_is_the_same_run(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(FIXTURES, logs)
    with sqlite3.connect(logs / "mlflow" / "mlflow.db") as db:  # the copy, not the fixture
        uuid = db.execute("select run_uuid from runs where name = 'ml-clean'").fetchone()[0]
        db.execute("update runs set name = 'hf-clean' where name = 'ml-clean'")
        db.execute("update tags set value = 'hf-clean' where key = 'mlflow.runName' and value = 'ml-clean'")
        db.execute("delete from metrics where run_uuid = ?", (uuid,))  # no value to contradict the name
    runs = runs_of(inspect_of(ingest(logs)))
    assert "ml-clean" not in runs
    merged = runs["hf-clean"]
    assert merged["formats"] == ["hf-trainer", "mlflow-sqlite", "tensorboard", "text-log"]
    assert "mlflow/mlflow.db" in merged["sources"] and "hf/hf-clean/trainer_state.json" in merged["sources"]
    assert merged["status"] == "completed" and merged["ended_at"] is not None  # the end time is MLflow's
    same = [d for d in merged["identity"] if d["rule"] == "same-name"]
    assert len(same) == 1 and "its run name is the name of hf/hf-clean/" in same[0]["text"]


def test_an_mlflow_run_named_like_a_folder_whose_values_differ_stays_apart(tmp_path):
    """Counter-example: the name alone does not merge two records that disagree."""
    logs = tmp_path / "logs"
    shutil.copytree(FIXTURES, logs)
    with sqlite3.connect(logs / "mlflow" / "mlflow.db") as db:
        db.execute("update runs set name = 'hf-clean' where name = 'ml-clean'")
        db.execute("update tags set value = 'hf-clean' where key = 'mlflow.runName' and value = 'ml-clean'")
    runs = runs_of(inspect_of(ingest(logs)))
    assert "mlflow-sqlite" not in runs["hf-clean"]["formats"]  # its loss at steps 5-30 is not the Trainer's
    apart = [r for r in runs.values() if r["id"].startswith("hf-clean-")]
    assert len(apart) == 1 and apart[0]["formats"] == ["mlflow-sqlite"]


def test_a_traceback_in_a_run_folder_interrupts_that_run(tmp_path):
    folder = tmp_path / "logs" / "run-a"
    folder.mkdir(parents=True)
    (folder / "train.log").write_text(
        "step 1 loss 2.3\nTraceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
        "    batch = next(it)\nKeyError: 'input_ids'\n")
    data = inspect_of(ingest(tmp_path / "logs"))
    run = runs_of(data)["run-a"]
    assert run["status"] == "interrupted" and run["status_reason"] == "KeyError: 'input_ids'"
    assert run["status_evidence"] == [{"path": "run-a/train.log", "line": 5}]


def test_mlflow_params_become_the_run_config():
    campaign = ingest(FIXTURES)
    assert campaign.runs["ml-clean"].config == {"params": {"lr": "0.001", "lora_r": "16", "max_steps": "40"}}
    assert campaign.runs["mlf-clean"].config == campaign.runs["ml-clean"].config


def test_two_mlflow_runs_of_one_name_stay_apart(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(FIXTURES / "mlflow", logs)
    with sqlite3.connect(logs / "mlflow.db") as db:
        uuid = db.execute("select run_uuid from runs where name = 'ml-killed'").fetchone()[0]
        db.execute("update runs set name = 'ml-clean' where name = 'ml-killed'")
        db.execute("update tags set value = 'ml-clean' where key = 'mlflow.runName' and value = 'ml-killed'")
    inspected = inspect_of(ingest(logs))
    runs = runs_of(inspected)
    assert sorted(runs) == sorted(["ml-clean", f"ml-clean-{uuid[:8]}"])
    assert {r["status"] for r in runs.values()} == {"completed", "unknown"}  # the killed one is still RUNNING
    assert not any("needs a new run name" in p["message"] for p in inspected["problems"])  # the same parameters: a repeat
    with sqlite3.connect(logs / "mlflow.db") as db:
        db.execute("update params set value = '0.01' where key = 'lr' and run_uuid = ?", (uuid,))
    problems = [p for p in inspect_of(ingest(logs))["problems"] if "needs a new run name" in p["message"]]
    assert len(problems) == 1 and problems[0]["path"] == "mlflow.db"
    assert f"used again by run {uuid} with different parameters" in problems[0]["message"]


def test_a_log_naming_the_checkpoint_it_restored_links_the_runs(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(FIXTURES / "hf" / "hf-killed", logs / "run-1")
    (logs / "run-2").mkdir()
    (logs / "run-2" / "train.log").write_text(
        "Restoring states from the checkpoint path at /mnt/jobs/run-1/checkpoint-20\n"
        "step 25/30\nstep 30/30\n"
        "{'train_runtime': '0.4', 'train_loss': '3.9', 'epoch': '0.46'}\n")
    data = inspect_of(ingest(logs))
    runs = runs_of(data)
    assert runs["run-2"]["resumes"] == "run-1"
    assert runs["run-2"]["status"] == "completed"
    assert runs["run-1"]["resumes"] is None
    assert runs["run-1"]["status"] == "interrupted"  # continued by run-2, with no end of its own
    assert [d["rule"] for d in runs["run-2"]["identity"] if d["decision"] == "resumes"] == ["restore-message"]


def test_a_log_with_no_steps_beside_no_run_is_not_a_run(tmp_path):
    """A captured log that shows no training and no evidence of its run is listed apart, never a run."""
    logs = tmp_path / "logs"
    shutil.copytree(FIXTURES / "hf" / "hf-killed", logs / "run-1")
    (logs / "run-2").mkdir()
    (logs / "run-2" / "train.log").write_text(
        "Restoring states from the checkpoint path at /mnt/jobs/run-1/checkpoint-20\n"
        "{'train_runtime': '0.4', 'train_loss': '3.9', 'epoch': '0.46'}\n")
    data = inspect_of(ingest(logs))
    assert sorted(runs_of(data)) == ["run-1"]
    assert [u["path"] for u in data["unlinked_sources"]] == ["run-2/train.log"]
    assert [m["kind"] for m in data["unlinked_sources"][0]["messages"]] == ["resumed", "finished"]


FIXTURE_FILES = sorted(p.relative_to(FIXTURES).as_posix() for p in FIXTURES.rglob("*") if p.is_file())


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rel=st.sampled_from(FIXTURE_FILES), cut=st.floats(0, 1), flip=st.integers(0, 2**31))
def test_any_file_cut_or_damaged_anywhere_never_crashes_ingest(tmp_path_factory, rel, cut, flip):
    """A file cut off by a crash, or with one damaged byte, is reported, never a traceback."""
    logs = tmp_path_factory.mktemp("logs")
    data = bytearray((FIXTURES / rel).read_bytes())
    data = data[: int(len(data) * cut)]
    if data and flip % 2:
        data[flip % len(data)] ^= 0xFF
    target = logs / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(bytes(data))
    inspect_of(ingest(logs))


def test_a_logs_folder_that_is_one_run_is_named_after_the_folder(tmp_path):
    """A Trainer output folder given as LOGS itself is named after that folder, never "logs"."""
    logs = tmp_path / "lora-r8-lr2e-4"
    shutil.copytree(FIXTURES / "hf" / "hf-clean", logs)
    campaign = ingest(logs)
    assert list(campaign.runs) == ["lora-r8-lr2e-4"]


def test_a_run_folder_below_logs_keeps_its_own_name(tmp_path):
    """Counter-example: LOGS's name is used only for a run whose folder is LOGS itself."""
    logs = tmp_path / "campaign"
    shutil.copytree(FIXTURES / "hf" / "hf-clean", logs / "hf-clean")
    assert list(ingest(logs).runs) == ["hf-clean"]


MLFLOW_EXPERIMENT = FIXTURES / "mlruns" / "140191543709086989"
TB_FILE = next((FIXTURES / "tensorboard" / "tb-clean").glob("events.out.tfevents.*"))


def test_tensorboard_in_an_mlflow_runs_artifacts_belongs_to_that_run(tmp_path):
    """mlflow.log_artifacts(tb_dir) puts the events in mlruns/<exp>/<run>/artifacts/: one run, two sources."""
    logs = tmp_path / "logs"
    shutil.copytree(MLFLOW_EXPERIMENT, logs / "mlruns" / MLFLOW_EXPERIMENT.name)
    run_folder = logs / "mlruns" / MLFLOW_EXPERIMENT.name / "dc1e1b85474347259be8c72b0d1bc4d4"
    (run_folder / "artifacts" / "tb").mkdir(parents=True)
    shutil.copy(TB_FILE, run_folder / "artifacts" / "tb" / TB_FILE.name)
    alone = ingest(logs).runs
    owners = [r for r in alone.values() if any("artifacts/tb" in s for s in r.sources)]
    assert len(owners) == 1
    assert "tensorboard" in owners[0].formats and "mlflow-files" in owners[0].formats
    assert not any(r.formats == ["tensorboard"] for r in alone.values())


def test_tensorboard_beside_mlflow_runs_but_outside_them_is_its_own_source(tmp_path):
    """Counter-example: events in the experiment's folder, outside every run folder, are not given to a run."""
    logs = tmp_path / "logs"
    shutil.copytree(MLFLOW_EXPERIMENT, logs / "mlruns" / MLFLOW_EXPERIMENT.name)
    (logs / "mlruns" / MLFLOW_EXPERIMENT.name / "tb").mkdir()
    shutil.copy(TB_FILE, logs / "mlruns" / MLFLOW_EXPERIMENT.name / "tb" / TB_FILE.name)
    runs = ingest(logs).runs
    assert any(r.formats == ["tensorboard"] for r in runs.values())


def test_tensorboard_train_loss_and_the_trainers_loss_are_one_metric(tmp_path):
    """The Trainer's TensorBoard writer logs train/loss, its trainer_state.json loss: one metric, two sources."""
    logs = tmp_path / "logs"
    shutil.copytree(FIXTURES / "hf" / "hf-clean", logs / "hf-clean")
    campaign = ingest(logs)
    frame = campaign.metrics
    assert "train/loss" not in frame.columns
    logged = frame.loc[frame["loss"].notna(), "path"].astype(str)
    assert any(p.endswith("trainer_state.json") for p in logged)
    tb = sorted({p for p in logged if "tfevents" in p})
    assert tb, "the TensorBoard rows are rows of loss"
    notes = {i.path: i.notes for i in campaign.inputs}
    assert any(n.startswith("the metrics of run hf-clean are read by the names used in") and "train/loss as loss" in n
               for n in notes[tb[0]])


def test_one_file_logging_both_spellings_keeps_two_metrics(tmp_path):
    """Counter-example: a file that logs loss and train/loss logs two metrics; neither is folded into the other."""
    logs = tmp_path / "logs"
    (logs / "runs" / "r1").mkdir(parents=True)
    lines = ['{"ts":"2026-11-03T04:15:00Z","type":"run_start","run":"r1"}']
    for step in (10, 20, 30):
        lines.append(json.dumps({"ts": f"2026-11-03T04:{15 + step // 10:02d}:00Z", "type": "metric", "run": "r1",
                                 "step": step, "metrics": {"loss": 1.0 / step, "train/loss": 2.0 / step}}))
    (logs / "runs" / "r1" / "events.jsonl").write_text("\n".join(lines) + "\n")
    frame = ingest(logs).metrics
    assert frame["loss"].notna().sum() == 3 and frame["train/loss"].notna().sum() == 3
    assert frame["train/loss"].dropna().tolist() == [0.2, 0.1, 2.0 / 30]


PRINTS = Path(__file__).parent / "fixtures" / "campaigns" / "plain-prints" / "logs" / "baseline.log"


def test_a_generic_log_at_the_top_of_logs_is_a_run_named_after_logs(tmp_path):
    """A train.log alone at the top of LOGS (its steps printed, no other source) is LOGS's run."""
    logs = tmp_path / "width-64"
    logs.mkdir()
    shutil.copy(PRINTS, logs / "train.log")
    assert list(ingest(logs).runs) == ["width-64"]


def test_a_named_log_at_the_top_of_logs_keeps_its_own_name(tmp_path):
    """Counter-example: a log whose name is not generic names its run, wherever it lies."""
    logs = tmp_path / "width-64"
    logs.mkdir()
    shutil.copy(PRINTS, logs / "baseline.log")
    assert list(ingest(logs).runs) == ["baseline"]


def test_a_file_of_a_run_folder_that_no_reader_takes_is_listed_as_not_read(tmp_path):
    shutil.copytree(Path(__file__).parent / "fixtures" / "formats" / "hf" / "hf-clean", tmp_path / "hf-clean")
    (tmp_path / "hf-clean" / "notes.bin").write_bytes(b"\x00\x01")
    (tmp_path / "elsewhere.bin").write_bytes(b"\x00\x01")
    listed = {i.path: i for i in ingest(tmp_path).inputs}
    inside, outside = listed["hf-clean/notes.bin"], listed["elsewhere.bin"]
    assert inside.format == "hf-trainer"
    assert inside.notes == ["not read: a file of the run folder hf-clean/, listed as part of that run's output"]
    assert (outside.format, outside.records, outside.notes) == (None, 0, [])  # counter-example: no run's folder
