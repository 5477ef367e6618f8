"""LLaMA-Factory's files in a Trainer output folder: trainer_log.jsonl, running_log.txt, training_args.yaml.

The fixtures (tests/fixtures/llamafactory/saves/tiny-gpt2/lora/, made by make_fixtures.py) are two
real transformers 5.24 runs with LLaMA-Factory's LogCallback and LoggerHandler reproduced field for
field: train-clean reaches its 30 steps, train-killed is killed at step 25 (its last log is step 20);
eval-clean (transformers 5.25) is a prediction with train-clean's adapter, as LLaMA Board's Evaluate &
Predict tab runs one: progress every 5 batches, trainer.predict's metrics saved as predict_results.json.
"""

from __future__ import annotations

import json
import math
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import damaged

from reportgen.ingest import llamafactory as lf

LOGS = Path(__file__).parent / "fixtures" / "llamafactory"
CLEAN, KILLED = "saves/tiny-gpt2/lora/train-clean", "saves/tiny-gpt2/lora/train-killed"
PREDICT = "saves/tiny-gpt2/lora/eval-clean"
PROPERTIES = settings(max_examples=60, deadline=None,
                      suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _members(logs: Path, folder: str) -> list[str]:
    return sorted(p.relative_to(logs).as_posix() for p in (logs / folder).rglob("*") if p.is_file())


def _read(folder: str, logs: Path = LOGS) -> lf.LlamaFactoryRun:
    return lf.read_folder(logs, folder, _members(logs, folder), folder.rsplit("/", 1)[-1])


def _entries(folder: str, logs: Path = LOGS) -> list[dict]:
    return [json.loads(line) for line in (logs / folder / lf.TRAINER_LOG).read_text().splitlines()]


def _clock(line: str) -> datetime:
    return datetime.strptime(line[line.index("|") + 1:line.index("]")], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)


def _running(folder: str, logs: Path = LOGS) -> list[str]:
    return [line for line in (logs / folder / lf.RUNNING_LOG).read_text().splitlines() if line.startswith("[")]


def test_each_file_is_recognised_by_its_content():
    kinds = {rel.rsplit("/", 1)[-1]: lf.recognise(rel, (LOGS / rel).read_bytes()[:65536]) for rel in _members(LOGS, CLEAN)}
    assert kinds[lf.TRAINER_LOG] == "llamafactory-log"
    assert kinds[lf.RUNNING_LOG] == "llamafactory-running"
    assert kinds[lf.TRAINING_ARGS] == "llamafactory-args"
    assert {k for name, k in kinds.items() if name not in (lf.TRAINER_LOG, lf.RUNNING_LOG, lf.TRAINING_ARGS)} == {None}


def test_trainer_log_lines_under_another_name_are_recognised():
    head = (LOGS / CLEAN / lf.TRAINER_LOG).read_bytes()
    assert lf.recognise("logs/progress.jsonl", head) == "llamafactory-log"


def test_counter_examples_are_not_llamafactory():
    assert lf.recognise("trainer_log.jsonl", b'{"current_steps": 5, "loss": 1.0}\n') is None  # current_steps alone
    assert lf.recognise("trainer_log.jsonl", b'{"total_steps": 5}\n{"current_steps": 5}\n') is None
    assert lf.recognise("trainer_log.jsonl", b'{"current_steps": "5", "total_steps": 30}\n') is None
    assert lf.recognise("running_log.txt", b"2026-12-04 21:07:44 INFO training\n") is None  # another log format
    assert lf.recognise("running_log.txt", b"[INFO|trainer.py:1618] 2026-12-04 21:03:09,931 >> hi\n") is None  # transformers'
    assert lf.recognise("training_args.yaml", b"- a\n- b\n") is None  # not a mapping
    assert lf.recognise("config.yaml", b"stage: sft\n") is None  # another name


def test_clean_run_rows_are_current_steps_with_their_values():
    got = _read(CLEAN)
    frame = got.reading.frames[0]
    entries = _entries(CLEAN)
    train = frame[frame["kind"] == "train"]
    assert train["step"].tolist() == [5, 10, 15, 20, 25, 30]
    assert train["loss"].tolist() == [e["loss"] for e in entries if "loss" in e]
    assert train["learning_rate"].tolist() == [e["lr"] for e in entries if "lr" in e]
    evals = frame[frame["kind"] == "eval"]
    assert evals["step"].tolist() == [10, 20, 30]
    assert evals["eval_loss"].tolist() == [e["eval_loss"] for e in entries if "eval_loss" in e]
    assert len(frame) == 9  # the last line (the training summary's log) holds progress only: a record, no row


def test_row_times_are_the_training_start_plus_elapsed_time():
    got = _read(CLEAN)
    start = _clock(next(line for line in _running(CLEAN) if "***** Running training *****" in line))
    frame = got.reading.frames[0]
    for entry, at in zip([e for e in _entries(CLEAN) if "loss" in e or "eval_loss" in e], frame["ts"], strict=True):
        h, m, s = (int(x) for x in entry["elapsed_time"].split(":"))
        assert at.to_pydatetime() == start + timedelta(hours=h, minutes=m, seconds=s)


def test_clean_run_completed_with_clock_times_from_running_log():
    facts = _read(CLEAN).facts
    running = _running(CLEAN)
    assert facts.format == "llamafactory" and facts.status == "completed"
    assert "current_steps 30 reached total_steps 30" in facts.reason
    assert facts.started_at == _clock(running[0]) and facts.ended_at == _clock(running[-1])
    assert (facts.first_step, facts.last_step, facts.max_steps) == (5, 30, 30)
    assert facts.config["training_args"]["finetuning_type"] == "lora"
    assert facts.config["training_args"]["max_steps"] == 30


def test_killed_run_has_no_status_and_no_end():
    got = _read(KILLED)
    facts = got.facts
    assert facts.status is None and facts.ended_at is None
    assert "current_steps 20 of total_steps 30" in facts.reason
    assert facts.started_at == _clock(_running(KILLED)[0])
    assert facts.last_step == 20
    assert sorted(p.rsplit("/", 1)[-1] for p in got.claimed) == [lf.RUNNING_LOG, lf.TRAINER_LOG, lf.TRAINING_ARGS]


def test_training_completed_in_running_log_completes_a_run_whose_jsonl_stops_short(tmp_path):
    shutil.copytree(LOGS / CLEAN, tmp_path / "run")
    log = tmp_path / "run" / lf.TRAINER_LOG
    log.write_text("".join(log.read_text().splitlines(keepends=True)[:5]))
    facts = _read("run", tmp_path).facts
    assert facts.status == "completed" and '"Training completed."' in facts.reason


def test_a_run_without_running_log_has_no_clock_times(tmp_path):
    shutil.copytree(LOGS / KILLED, tmp_path / "run")
    (tmp_path / "run" / lf.RUNNING_LOG).unlink()
    got = _read("run", tmp_path)
    assert got.facts.started_at is None and got.reading.frames[0]["ts"].isna().all()


def test_training_args_alone_is_not_claimed(tmp_path):
    (tmp_path / "run").mkdir()
    shutil.copyfile(LOGS / CLEAN / lf.TRAINING_ARGS, tmp_path / "run" / lf.TRAINING_ARGS)
    got = _read("run", tmp_path)
    assert got.claimed == [] and got.facts.config is None


def test_an_appended_process_leaves_the_earlier_rows_untimed(tmp_path):
    shutil.copytree(LOGS / CLEAN, tmp_path / "run")
    log = tmp_path / "run" / lf.TRAINER_LOG
    log.write_text((LOGS / KILLED / lf.TRAINER_LOG).read_text() + log.read_text())
    got = _read("run", tmp_path)
    frame = got.reading.frames[0]
    earlier = len(_entries(KILLED))  # each of its lines is a row
    assert frame["ts"].iloc[:earlier].isna().all() and frame["ts"].iloc[earlier:].notna().all()
    assert "elapsed_time goes back" in got.facts.reason and got.facts.status == "completed"


def test_damaged_lines_are_counted_problems_and_non_finite_is_nan(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / lf.TRAINER_LOG).write_text(
        '{"current_steps": 5, "total_steps": 10, "loss": NaN, "epoch": 0.5}\n'
        "not json\n\n[1, 2]\n"
        '{"current_steps": -1, "total_steps": 10, "loss": 1.0}\n'
        '{"current_steps": 10, "total_steps": 10, "loss": 1e999999, "lr": 1e-5, "epoch": 1.0}\n'
        '{"current_steps": 10, "tot')
    got = _read("run", tmp_path)
    info = got.reading.inputs[0]
    assert (info.lines, info.records, info.skipped, info.blank) == (7, 2, 4, 1)
    assert [p.line for p in info.problems] == [2, 4, 5, 7] and info.cut_off
    frame = got.reading.frames[0]
    assert math.isnan(frame["loss"].iloc[0]) and math.isnan(frame["loss"].iloc[1])
    assert got.facts.status == "completed"


def test_running_log_times_outside_the_calendar_are_problems(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / lf.RUNNING_LOG).write_text("before the first log line\n[INFO|2300-01-01 00:00:00] a.py:1 >> late\n"
                                         "[INFO|2026-13-01 00:00:00] a.py:1 >> no month\n"
                                         "[INFO|2026-12-04 21:00:00] a.py:1 >> ok\n  a message's second line\n")
    got = _read("run", tmp_path)
    info = got.reading.inputs[0]
    assert (info.lines, info.records, info.skipped) == (5, 4, 1)
    assert [p.line for p in info.problems] == [1, 2, 3]
    assert got.facts.started_at == datetime(2026, 12, 4, 21, tzinfo=UTC)


def _lines(data: bytes) -> int:
    parts = data.split(b"\n")
    return len(parts) - (parts[-1] == b"")


def _any(name: str) -> st.SearchStrategy[bytes]:
    return st.one_of(st.binary(max_size=2048), damaged((LOGS / CLEAN / name).read_bytes()))


@PROPERTIES
@given(log=_any(lf.TRAINER_LOG), running=_any(lf.RUNNING_LOG), args=_any(lf.TRAINING_ARGS))
def test_any_bytes_give_a_result_with_every_line_accounted(tmp_path, log, running, args):
    folder = tmp_path / "run"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    for name, data in ((lf.TRAINER_LOG, log), (lf.RUNNING_LOG, running), (lf.TRAINING_ARGS, args)):
        (folder / name).write_bytes(data)
        lf.recognise(f"run/{name}", data[:65536])
    got = _read("run", tmp_path)
    by_name = {info.path.rsplit("/", 1)[-1]: info for info in got.reading.inputs}
    for name, data in ((lf.TRAINER_LOG, log), (lf.RUNNING_LOG, running)):
        info = by_name[name]
        assert info.records + info.skipped + info.blank == info.lines == _lines(data)
        assert len(info.problems) + info.problems_not_shown >= min(1, info.skipped)
    frame = got.reading.frames[0]
    assert frame["step"].between(0, 10**15).all()
    assert got.facts.status in (None, "completed")


# --- in a campaign ---------------------------------------------------------------------------------

def test_a_llamafactory_folder_is_one_run_with_the_trainers_files_and_its_clock_times():
    from reportgen.ingest import ingest
    campaign = ingest(Path(__file__).parent / "fixtures" / "llamafactory")
    assert sorted(campaign.runs) == ["eval-clean", "train-clean", "train-killed"]
    run = campaign.runs["train-clean"]
    assert {"hf-trainer", "llamafactory"} <= set(run.formats)
    assert run.start_evidence.path.endswith("running_log.txt") and run.start_evidence.line == 1
    assert run.end_evidence.path.endswith("running_log.txt") and run.ended_at > run.started_at
    assert campaign.runs["train-killed"].ended_at is None


def test_counter_example_llamafactory_files_alone_are_a_run_of_their_own(tmp_path):
    from reportgen.ingest import ingest
    clean = Path(__file__).parent / "fixtures" / "llamafactory" / "saves" / "tiny-gpt2" / "lora" / "train-clean"
    (tmp_path / "lf-lora").mkdir()
    for name in ("trainer_log.jsonl", "running_log.txt", "training_args.yaml"):
        (tmp_path / "lf-lora" / name).write_bytes((clean / name).read_bytes())
    campaign = ingest(tmp_path)
    assert list(campaign.runs) == ["lf-lora"]
    run = campaign.runs["lf-lora"]
    assert run.formats == ["llamafactory"] and "loss" in campaign.metric_names()
    assert "training_args" in (run.config or {})


# --- a prediction run ------------------------------------------------------------------------------

def test_a_prediction_is_an_evaluation_run_with_its_predict_figures_at_no_step():
    from reportgen.ingest import ingest
    campaign = ingest(LOGS)
    run = campaign.runs["eval-clean"]
    results = json.loads((LOGS / PREDICT / "predict_results.json").read_text())
    assert run.kind == "evaluation" and (run.first_step, run.last_step) == (None, None)
    (evaluation,) = [e for e in campaign.evaluations if e.run == "eval-clean"]
    assert evaluation.step is None and evaluation.metrics == {"predict_loss": results["predict_loss"]}
    assert evaluation.evidence.path == f"{PREDICT}/predict_results.json"
    assert run.ended_at == _clock(_running(PREDICT)[-1])


def test_a_prediction_that_reached_its_last_batch_completed_and_evaluates_the_run_it_loaded():
    from reportgen.analysis.status import run_status
    from reportgen.ingest import ingest
    campaign = ingest(LOGS)
    run = campaign.runs["eval-clean"]
    status = run_status(run, campaign)
    assert status.status == "completed" and "the prediction reached its last batch (20 of 20)" in status.reason
    assert run.evaluates == "train-clean"
    (decision,) = [d for d in run.identity if d.rule == "loaded-model"]
    assert "it loaded saves/tiny-gpt2/lora/train-clean" in decision.text and decision.evidence[0].path.endswith("running_log.txt")


def test_counter_example_a_prediction_cut_short_is_not_completed(tmp_path):
    from reportgen.analysis.status import run_status
    from reportgen.ingest import ingest
    shutil.copytree(LOGS / PREDICT, tmp_path / PREDICT)
    log = tmp_path / PREDICT / lf.TRAINER_LOG
    log.write_text("".join(log.read_text().splitlines(keepends=True)[:-1]))
    campaign = ingest(tmp_path)
    status = run_status(campaign.runs["eval-clean"], campaign)
    assert status.status == "unknown" and "a prediction run" in status.reason


def test_counter_example_a_loaded_model_not_in_logs_is_evaluated_by_no_link(tmp_path):
    from reportgen.ingest import ingest
    shutil.copytree(LOGS / PREDICT, tmp_path / PREDICT)
    shutil.copytree(LOGS / KILLED, tmp_path / KILLED)
    campaign = ingest(tmp_path)
    assert campaign.runs["eval-clean"].evaluates is None
    assert not any(d.rule == "loaded-model" for d in campaign.runs["train-killed"].identity)
