"""A Hugging Face Trainer's captured stdout and a Kaggle notebook log: their printed dicts as metric rows.

The fixtures (tests/fixtures/stdout/, made by make_fixtures.py from real transformers 5.24 runs)
are a Trainer's console with nothing else of its run: nohup.out (progress bar, clock-timed INFO
lines), nobar/train.out (no bar, INFO lines without clock), killed.out (killed at step 17) and
kaggle/lora-tiny.log (the JSON array of a notebook's writes).
"""

from __future__ import annotations

import json
import math
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import damaged

from reportgen.ingest import formats, ingest, textlog
from reportgen.ingest.common import text_lines

STDOUT = Path(__file__).parent / "fixtures" / "stdout"
NOHUP, NOBAR, KILLED, KAGGLE = (STDOUT / "nohup.out", STDOUT / "nobar" / "train.out", STDOUT / "killed.out",
                                STDOUT / "kaggle" / "lora-tiny.log")
PROPERTIES = settings(max_examples=60, deadline=None,
                      suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
TRAIN_STEPS = [5, 10, 15, 20, 25, 30]
LOSSES = [3.906, 3.895, 3.909, 3.906, 3.9, 3.915]  # as the Trainer printed them (transformers 5: '%.4g' strings)


def _train(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["kind"] == "train"]


def test_nohup_dicts_are_rows_at_the_step_of_the_bar_redrawn_after_them():
    got = textlog.read_console(NOHUP, "nohup.out")
    rows = got.metrics
    assert _train(rows)["step"].tolist() == TRAIN_STEPS
    assert _train(rows)["loss"].tolist() == LOSSES
    evals = rows[rows["kind"] == "eval"]
    assert evals["step"].tolist() == [10, 20, 30]
    assert evals["eval_loss"].tolist() == [3.908, 3.903, 3.903]
    summary = rows[rows["kind"] == "summary"]
    assert summary["step"].tolist() == [30] and summary["train_runtime"].notna().all()
    assert got.info.notes == []  # every step came from the bar


def test_without_a_bar_the_step_is_the_epoch_times_the_steps_per_epoch():
    got = textlog.read_console(NOBAR, "train.out")
    assert "Num update steps per epoch = 64" in NOBAR.read_text()
    assert _train(got.metrics)["step"].tolist() == TRAIN_STEPS  # epoch 0.07812 x 64 = 5, ...
    assert got.sessions[0].first_step == 5 and got.sessions[0].last_step == 30


def test_without_bar_or_steps_per_epoch_the_rows_are_numbered_in_order_and_a_note_says_so(tmp_path):
    lines = [line for line in NOBAR.read_text().split("\n") if "per epoch" not in line]
    path = tmp_path / "train.out"
    path.write_text("\n".join(lines))
    got = textlog.read_console(path, "train.out")
    assert got.metrics["step"].tolist() == list(range(1, 11))
    assert any("in the order printed, not by training step" in note for note in got.metrics.attrs["notes"])


def test_rows_numbered_in_order_give_their_run_no_step_span(tmp_path):
    lines = [line for line in NOBAR.read_text().split("\n") if "per epoch" not in line]
    logs = tmp_path / "lr-sweep"  # a generic name at the top of LOGS: the run is named after LOGS
    logs.mkdir()
    (logs / "train.out").write_text("\n".join(lines))
    campaign = ingest(logs)
    run = campaign.runs["lr-sweep"]
    assert _train(campaign.metrics)["loss"].tolist() == LOSSES
    assert (run.first_step, run.last_step) == (None, None)
    log = next(i for i in campaign.inputs if i.path == "train.out")
    assert any("in the order printed, not by training step" in note for note in log.notes)


def test_a_kaggle_log_alone_is_a_timed_run_with_loss(tmp_path):
    shutil.copyfile(KAGGLE, tmp_path / "lora-tiny.log")
    campaign = ingest(tmp_path)
    run = campaign.runs["lora-tiny"]
    assert (run.first_step, run.last_step) == (0, 30)
    rows = _train(campaign.metrics)
    assert rows["loss"].tolist() == LOSSES and rows["ts"].notna().all()
    assert run.started_at <= rows["ts"].min().to_pydatetime() and run.last_seen_at >= rows["ts"].max().to_pydatetime()


def test_an_epoch_printed_too_coarsely_gives_no_step():
    printed = textlog.Printed()
    session = textlog.Session(0, 1, 2)
    printed.per_epoch[0] = 5000
    printed.dict({"loss": "3.9", "epoch": "0.0014"}, 1, 0, session)
    printed.bar(7)  # the bar places the first dict
    printed.dict({"loss": "3.8", "epoch": "1.23"}, 2, 0, session)  # 1.23 ± 0.005 epochs is ± 25 steps
    printed.settle([session])
    assert printed.steps == [7, None] and printed.unplaced == 1


def test_an_epoch_printed_finely_enough_gives_its_step():
    printed = textlog.Printed()
    session = textlog.Session(0, 1, 2)
    printed.per_epoch[0] = 64
    printed.dict({"loss": "3.9", "epoch": "0.07812"}, 1, 0, session)  # ± 0.000005 x 64: well under half a step
    printed.settle([session])
    assert printed.steps == [5]


def test_the_killed_run_keeps_its_rows_to_the_last_dict():
    got = textlog.read_console(KILLED, "killed.out")
    assert _train(got.metrics)["step"].tolist() == [5, 10, 15]
    last_bar = int(re.findall(r"\| (\d+)/30 \[", KILLED.read_text())[-1])
    assert 15 <= last_bar < 17 and got.sessions[0].last_step == last_bar  # the bar's last redraw before the kill
    assert not any(m.kind == "finished" for m in got.messages)


def test_a_dict_printed_by_other_code_is_not_a_metric_row(tmp_path):
    path = tmp_path / "run.log"
    path.write_text("{'a': 1, 'b': 2}\n{'lr': 0.1, 'batch': 8}\n{'loss': 0.5, 'epoch': 1.0}\n")
    got = textlog.read_console(path, "run.log")
    assert got.metrics["line"].tolist() == [3]
    assert textlog.trainer_metrics({"a": 1}) is None
    assert textlog.trainer_metrics({"eval_acc": "0.5"}) == {"eval_acc": (0.5, 0.05)}


def test_a_non_finite_printed_value_is_kept_as_nan(tmp_path):
    path = tmp_path / "run.log"
    path.write_text("{'loss': 'nan', 'grad_norm': 'inf', 'epoch': '0.5'}\n")
    got = textlog.read_console(path, "run.log")
    assert math.isnan(got.metrics["loss"].iloc[0]) and math.isnan(got.metrics["grad_norm"].iloc[0])
    assert any(m.kind == "non_finite" for m in got.messages)


def test_the_bar_of_another_loop_gives_no_step(tmp_path):
    """The first bar of a process is its training loop; an evaluation bar (another total) is not a step."""
    path = tmp_path / "run.log"
    path.write_text(" 10%|#   | 10/100 [00:10<01:30, 1.0it/s]\n{'loss': 1.5, 'epoch': 0.1}\n"
                    " 50%|#####  | 2/4 [00:01<00:01, 2.0it/s]\n 20%|##   | 20/100 [00:20<01:20, 1.0it/s]\n")
    got = textlog.read_console(path, "run.log")
    assert got.metrics["step"].tolist() == [20]


def test_a_trainer_stdout_alone_at_the_root_of_logs_is_a_run_with_loss(tmp_path):
    logs = tmp_path / "lora-r16"  # a generic name at the top of LOGS: the run is named after LOGS
    logs.mkdir()
    shutil.copyfile(NOHUP, logs / "train.out")
    campaign = ingest(logs)
    assert list(campaign.runs) == ["lora-r16"]
    run = campaign.runs["lora-r16"]
    assert (run.first_step, run.last_step) == (0, 30)
    first_clock = re.search(r"\] (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}),(\d{3}) >>", NOHUP.read_text())
    assert run.started_at == datetime.strptime(first_clock.group(1), "%Y-%m-%d %H:%M:%S").replace(
        microsecond=int(first_clock.group(2)) * 1000, tzinfo=UTC)
    assert [d.rule for d in run.identity] == ["own-log"]
    rows = campaign.metrics[campaign.metrics["run"] == "lora-r16"]
    assert _train(rows)["loss"].tolist() == LOSSES
    assert campaign.unlinked == []


def test_printed_rows_do_not_join_a_run_whose_own_files_logged_metrics(tmp_path):
    """A Trainer folder's train.log: trainer_state.json holds the values the log printed, to more digits."""
    shutil.copytree(Path(__file__).parent / "fixtures" / "formats" / "hf" / "hf-clean", tmp_path / "hf-clean")
    campaign = ingest(tmp_path)
    assert set(campaign.metrics["path"]) & {"hf-clean/train.log"} == set()
    log = next(i for i in campaign.inputs if i.path == "hf-clean/train.log")
    assert any("other files of the run logged its metrics" in note for note in log.notes)


def test_each_process_of_an_appended_log_is_judged_with_the_run_it_went_to():
    """campaigns/trainer-tb-only/nohup.out: two runs' consoles appended, each linked to its run, whose
    TensorBoard events and trainer_state.json hold the values the console printed."""
    campaign = ingest(Path(__file__).parent / "fixtures" / "campaigns" / "trainer-tb-only")
    log = next(i for i in campaign.inputs if i.path == "nohup.out")
    assert [n.split(" metric rows")[0] for n in log.notes] == [
        "its 10 printed metric dicts are not baseline-try1's", "its 10 printed metric dicts are not baseline-try2's"]
    assert "nohup.out" not in set(campaign.metrics["path"])


def test_kaggle_log_is_recognised_by_content_and_read_as_its_console(tmp_path):
    head = KAGGLE.read_bytes()[:65536]
    assert formats.kind_of("kernel-output", head) == "text"  # no text suffix: recognised by content
    assert textlog.sniff_kaggle(head)
    assert not textlog.sniff_kaggle(b'[{"name": "stdout"}]') and not textlog.sniff_kaggle(b"{'loss': 1}\n")
    got = textlog.read_console(KAGGLE, "lora-tiny.log")
    rows = got.metrics
    assert _train(rows)["step"].tolist() == TRAIN_STEPS
    assert _train(rows)["loss"].tolist() == LOSSES
    # Each row cites the line of the entry that printed it.
    entries = KAGGLE.read_text().split("\n")
    for line, loss in zip(_train(rows)["line"], LOSSES, strict=True):
        assert f"'loss': '{loss}'" in json.loads(entries[line - 1].lstrip("[,"))["data"]


def test_kaggle_times_are_the_kernel_start_plus_the_entry_time():
    got = textlog.read_console(KAGGLE, "lora-tiny.log")
    entries = [json.loads(line.lstrip("[,")) for line in KAGGLE.read_text().split("\n") if line.startswith(("[", ","))]
    clock = next(e for e in entries if "starting the fine-tune" in e["data"])
    printed = datetime.strptime(clock["data"][:19], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    first = _train(got.metrics).iloc[0]
    entry = entries[int(first["line"]) - 1]
    assert first["ts"].to_pydatetime() == printed - pd.Timedelta(seconds=clock["time"]) + pd.Timedelta(seconds=entry["time"])


def test_kaggle_log_without_a_clock_time_has_relative_times_only(tmp_path):
    path = tmp_path / "k.log"
    path.write_text('[{"stream_name":"stdout","time":1.5,"data":"{\'loss\': 0.5, \'epoch\': 0.1}\\n"}\n]')
    got = textlog.read_console(path, "k.log")
    assert got.metrics["ts"].isna().all()
    assert any("relative to the kernel start" in note for note in got.info.notes)


def test_a_kaggle_entry_without_data_is_a_problem_at_its_line(tmp_path):
    path = tmp_path / "k.log"
    path.write_text('[{"stream_name":"stdout","time":1.0,"data":"hello\\n"}\n,{"stream_name":"stdout","time":2.0}\n'
                    ',{"stream_name":"stdout","time":3.0,"data":"{\'loss\': 0.5, \'epoch\': 0.1}\\n"}\n]')
    got = textlog.read_console(path, "k.log")
    assert [(p.line, "without text 'data'" in p.message) for p in got.info.problems] == [(2, True)]
    assert (got.info.lines, got.info.text_lines, got.info.skipped) == (4, 4, 0)
    assert got.metrics["line"].tolist() == [3]


def test_kaggle_log_cut_off_keeps_its_complete_entries(tmp_path):
    data = KAGGLE.read_bytes()
    path = tmp_path / "k.log"
    path.write_bytes(data[: len(data) // 2])
    got = textlog.read_console(path, "k.log")
    assert got.info.cut_off and any("cut off" in p.message for p in got.info.problems)
    assert got.info.text_lines + got.info.blank == got.info.lines


@PROPERTIES
@given(data=st.one_of(st.binary(max_size=2048), damaged(NOHUP.read_bytes()), damaged(KAGGLE.read_bytes()),
                      damaged(NOBAR.read_bytes())))
def test_any_console_bytes_give_a_result_with_every_line_accounted(tmp_path, data):
    path = tmp_path / "train.log"
    path.write_bytes(data)
    got = textlog.read_console(path, "train.log")
    info = got.info
    assert info.text_lines + info.blank == info.lines and info.skipped == 0
    assert info.records == len(got.messages)
    assert info.lines == len(text_lines(data.removeprefix(b"\xef\xbb\xbf").decode("utf-8", errors="replace")))
    lines = got.metrics["line"].dropna()
    assert ((lines >= 1) & (lines <= max(info.lines, 1))).all()
    assert all(1 <= m.evidence.line <= max(info.lines, 1) for m in got.messages if m.evidence.line)
    steps = got.metrics["step"].dropna()
    assert (steps >= 0).all()


# --- the training set-up a console prints -----------------------------------------------------------

def _console(tmp_path: Path, replace: dict[str, str] | None = None, drop: tuple[str, ...] = (), upto: str | None = None) -> Path:
    """nohup.out edited as another run would have printed it: lines replaced, lines dropped, cut after a line."""
    text = NOHUP.read_text()
    if upto is not None:
        text = text[: text.index(upto) + len(upto)] + "\n"
    for old, new in (replace or {}).items():
        assert old in text
        text = text.replace(old, new)
    lines = [line for line in text.split("\n") if not any(d in line for d in drop)]
    logs = tmp_path / "lora-r16"
    logs.mkdir()
    (logs / "nohup.out").write_text("\n".join(lines))
    return logs


def test_the_trainer_block_gives_the_planned_steps_and_the_devices():
    (session,) = textlog.read_console(NOHUP, "nohup.out").sessions
    assert session.setup.total_steps == (21, 30)
    line, devices, how = session.setup.devices()
    assert (line, devices) == (19, 1) and "4 per device x 1 accumulation steps x 1 devices" in how


def test_devices_are_the_total_batch_over_per_device_and_accumulation(tmp_path):
    logs = _console(tmp_path, {"Instantaneous batch size per device = 4": "Instantaneous batch size per device = 8",
                               "Gradient Accumulation steps = 1": "Gradient Accumulation steps = 2",
                               "accumulation) = 4": "accumulation) = 1,024"})
    (session,) = textlog.read_console(logs / "nohup.out", "nohup.out").sessions
    assert session.setup.devices()[1] == 64


def test_counter_example_sizes_that_do_not_divide_give_no_devices(tmp_path):
    logs = _console(tmp_path, {"Instantaneous batch size per device = 4": "Instantaneous batch size per device = 3"})
    (session,) = textlog.read_console(logs / "nohup.out", "nohup.out").sessions
    assert session.setup.devices() is None


def test_accelerates_process_count_gives_the_devices_without_the_trainer_block(tmp_path):
    path = tmp_path / "accelerate.log"
    path.write_text("Distributed environment: MULTI_GPU  Backend: nccl\nNum processes: 2\nProcess index: 0\n"
                    "Step 1 loss 0.5\n")
    (session,) = textlog.read_console(path, "accelerate.log").sessions
    assert session.setup.devices()[:2] == (2, 2)


def test_a_console_whose_bar_reaches_the_planned_steps_completes_its_run(tmp_path):
    logs = _console(tmp_path, drop=("Training completed", "train_runtime"))
    campaign = ingest(logs)
    from reportgen.analysis.status import run_status
    status = run_status(campaign.runs["lora-r16"], campaign)
    assert status.status == "completed"
    assert status.reason.startswith("the training loop drew step 30 of the 30 the Trainer planned")
    assert [(e.path, e.line) for e in status.evidence] == [("nohup.out", 21)]


def test_counter_example_a_console_cut_short_of_the_planned_steps_is_not_completed(tmp_path):
    logs = _console(tmp_path, upto="{'loss': '3.909', 'grad_norm': '0.6718', 'learning_rate': '0.002667', 'epoch': '0.2344'}")
    campaign = ingest(logs)
    from reportgen.analysis.status import run_status
    status = run_status(campaign.runs["lora-r16"], campaign)
    assert status.status == "unknown"
    assert "its last training step is 15 of the 30 the Trainer planned" in status.reason


def test_the_devices_a_console_printed_are_the_runs_gpus(tmp_path):
    from reportgen.analysis.runs import machine, run_time
    from reportgen.plan.load import load_plan
    logs = _console(tmp_path, {"accumulation) = 4": "accumulation) = 16"})
    campaign = ingest(logs)
    run = campaign.runs["lora-r16"]
    found = machine(run)
    assert found is not None and found.devices == 4 and found.gpu is None
    time = run_time(run, load_plan(Path(__file__).parents[1] / "sample_logs" / "plan.yaml").plan, campaign.messages)
    assert time.gpus == 4 and "the devices its training loop ran on (nohup.out line 19)" in time.basis
    assert time.gpu_hours == pytest.approx(time.wall_hours * 4)
