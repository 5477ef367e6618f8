"""Keras CSVLogger files: values, attempts and recognition, from files Keras 3 wrote (tests/fixtures/keras)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import damaged

from reportgen.ingest import keras
from reportgen.model import Evaluation, InputFile

KERAS = Path(__file__).parent / "fixtures" / "keras"
LIGHTNING_METRICS = Path(__file__).parent / "fixtures" / "formats" / "lightning" / "pl-clean" / "version_0" / "metrics.csv"
CLEAN = KERAS / "clean" / "training.log"
PROPERTIES = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def read(path: Path) -> keras.KerasLog:
    return keras.read(path, path.name, "run")


def column(log: keras.KerasLog, name: str, kind: str) -> dict[int, float]:
    out = {}
    for frame in log.reading.frames:
        if name in frame.columns:
            rows = frame[(frame["kind"] == kind) & frame[name].notna()]
            out.update(zip(rows["step"].astype(int), rows[name].astype(float)))
    return out


def lines_add_up(info: InputFile) -> None:
    assert info.records + info.skipped + info.blank + info.header == info.lines


def test_clean_run_reads_each_epoch_as_a_train_row_and_an_eval_row():
    log = read(CLEAN)
    info = log.reading.inputs[0]
    assert (info.lines, info.records, info.header, info.skipped, info.problems) == (6, 5, 1, 0, [])
    assert column(log, "val_accuracy", "eval") == {0: 0.75, 1: 0.9375, 2: 1.0, 3: 0.9375, 4: 0.9375}
    assert column(log, "loss", "train")[4] == pytest.approx(0.4148416817188263)
    assert column(log, "accuracy", "train")[0] == 0.609375
    assert set(log.reading.frames[0]["kind"]) == {"train", "eval"}
    evals = [e for e in log.reading.events if isinstance(e, Evaluation)]
    assert [e.step for e in evals] == [0, 1, 2, 3, 4]
    assert log.facts in log.reading.events  # the run's facts reach its run
    assert evals[2].metrics == {"val_accuracy": 1.0, "val_loss": pytest.approx(0.3909270465373993)}
    assert evals[2].evidence.line == 4


def test_steps_are_epochs_and_say_so():
    log = read(CLEAN)
    assert (log.facts.first_step, log.facts.last_step) == (0, 4)
    assert keras.STEPS_ARE_EPOCHS in log.reading.inputs[0].notes
    assert log.reading.frames[0]["ts"].isna().all()  # the file keeps no times


def test_no_status_without_evidence():
    for name in ("clean", "resumed", "forgot"):
        log = read(KERAS / name / "training.log")
        assert log.facts.status is None
        assert "tells no status" in log.facts.reason


def test_a_resume_with_initial_epoch_reads_as_one_attempt():
    """Killed after epoch 2, resumed with initial_epoch=3: epochs 0-4 follow one another, as in one fit()."""
    log = read(KERAS / "resumed" / "training.log")
    assert log.attempts == [(1, 6)]
    assert "looks the same" in log.attempt_reasons[0]
    assert column(log, "val_accuracy", "eval")[3] == 1.0  # the second process's epoch 3


def test_epochs_restarting_at_zero_are_a_new_attempt():
    log = read(KERAS / "forgot" / "training.log")
    assert log.attempts == [(1, 4), (5, 9)]
    assert "start again at 0 after epoch 2" in log.attempt_reasons[1]
    assert "not a continuation" in log.attempt_reasons[1]
    info = log.reading.inputs[0]
    assert (info.records, info.header, info.lines) == (8, 1, 9)


def test_epochs_going_back_or_skipping_are_new_attempts(tmp_path):
    rows = "epoch,loss\r\n0,1.0\r\n1,0.9\r\n2,0.8\r\n1,0.85\r\n2,0.75\r\n5,0.5\r\n"
    path = tmp_path / "training.log"
    path.write_text(rows, newline="")
    log = read(path)
    assert log.attempts == [(1, 4), (5, 6), (7, 7)]
    assert "from initial_epoch 1, training epochs 1-2 again" in log.attempt_reasons[1]
    assert "epochs 3-4 are not in the file" in log.attempt_reasons[2]


def test_a_gap_after_a_damaged_row_is_no_new_attempt(tmp_path):
    path = tmp_path / "training.log"
    path.write_text("epoch,loss\r\n0,1.0\r\n1,0.9,7\r\n2,0.8\r\n", newline="")
    log = read(path)
    assert log.attempts == [(1, 4)]
    info = log.reading.inputs[0]
    assert info.skipped == 1 and info.problems[0].line == 3


def test_a_second_header_starts_a_new_attempt_with_its_own_columns(tmp_path):
    path = tmp_path / "training.log"
    path.write_text("epoch,loss\r\n0,1.0\r\n1,0.9\r\nepoch,accuracy,loss\r\n0,0.5,1.1\r\n", newline="")
    log = read(path)
    info = log.reading.inputs[0]
    assert (info.header, info.records, info.lines) == (2, 3, 5)
    assert log.attempts == [(1, 3), (4, 5)]
    assert "a second header at line 4" in log.attempt_reasons[1]
    assert column(log, "accuracy", "train") == {0: 0.5}


def test_na_is_not_logged_and_the_separator_comes_from_the_header():
    log = read(KERAS / "semicolon" / "training.log")
    frame = log.reading.frames[0]
    assert "val_loss" not in frame.columns  # every val_ cell is NA: no validation data
    assert column(log, "loss", "train") == {0: pytest.approx(0.6073211431503296), 1: pytest.approx(0.5546424984931946),
                                             2: pytest.approx(0.5019375681877136)}
    assert log.reading.events == [log.facts]  # no evaluation: no validation data


def test_tab_separator_and_nan_kept(tmp_path):
    path = tmp_path / "log.tsv"
    path.write_text("epoch\tloss\tval_loss\r\n0\tnan\t1.5\r\n", newline="")
    assert keras.recognise("log.tsv", path.read_bytes()) == keras.FORMAT
    log = read(path)
    frame = log.reading.frames[0]
    loss = frame.loc[frame["kind"] == "train", "loss"]
    assert loss.notna().all() and math.isnan(float(loss.iloc[0]))  # NaN logged: kept as NaN, not null
    assert column(log, "val_loss", "eval") == {0: 1.5}


def test_a_row_cut_off_mid_row_is_skipped_and_interrupts(tmp_path):
    data = CLEAN.read_bytes()[:-9]
    path = tmp_path / "training.log"
    path.write_bytes(data)
    log = read(path)
    info = log.reading.inputs[0]
    assert info.cut_off and info.skipped == 1 and info.records == 4
    assert log.facts.status == "interrupted" and "cut off mid-row" in log.facts.reason
    assert log.facts.last_step == 3
    lines_add_up(info)


def test_a_file_cut_off_mid_row_makes_its_run_interrupted(tmp_path):
    """The reader's facts reach the run (they were once left out of its reading)."""
    from reportgen.analysis.status import run_status
    from reportgen.ingest import ingest
    (tmp_path / "lr-sweep").mkdir()
    (tmp_path / "lr-sweep" / "training.log").write_bytes(CLEAN.read_bytes()[:-9])
    campaign = ingest(tmp_path)
    status = run_status(campaign.runs["lr-sweep"], campaign)
    assert status.status == "interrupted" and "cut off mid-row" in status.reason


def test_counter_example_a_whole_file_leaves_its_run_unknown(tmp_path):
    from reportgen.analysis.status import run_status
    from reportgen.ingest import ingest
    (tmp_path / "lr-sweep").mkdir()
    (tmp_path / "lr-sweep" / "training.log").write_bytes(CLEAN.read_bytes())
    campaign = ingest(tmp_path)
    status = run_status(campaign.runs["lr-sweep"], campaign)
    assert status.status == "unknown" and "CSVLogger writes nothing at the end of training" in status.reason


def test_a_row_cut_before_its_newline_keeps_its_cells(tmp_path):
    path = tmp_path / "training.log"
    path.write_bytes(CLEAN.read_bytes()[:-1])  # "\r" kept, "\n" lost
    log = read(path)
    assert log.reading.inputs[0].records == 5


def test_a_cell_that_is_no_number_is_left_out(tmp_path):
    path = tmp_path / "training.log"
    path.write_text('epoch,loss,val_loss\r\n0,"""[1, 2]""",0.5\r\n', newline="")
    log = read(path)
    info = log.reading.inputs[0]
    assert info.records == 1 and "loss" in info.problems[0].message
    assert column(log, "val_loss", "eval") == {0: 0.5}


def test_recognised_by_content_under_any_name():
    assert keras.recognise("runs/a/history.csv", CLEAN.read_bytes()) == keras.FORMAT
    assert keras.recognise("x/training.log", (KERAS / "semicolon" / "training.log").read_bytes()) == keras.FORMAT


@pytest.mark.parametrize("head", [
    LIGHTNING_METRICS.read_bytes(),
    b"epoch,step,train_loss,val_loss\n0,9,1.0,\n",  # Lightning: a step column
    b"epoch,checkpoint,operation,seconds\n0,a,save,1\n",  # benchmark records
    b"epoch,val_loss,loss\n0,1,2\n",  # not CSVLogger's order
    b"epoch,loss\nfirst,1.0\n",  # a row that does not start with an epoch
    b"loss,epoch\n1.0,0\n",
    b"epoch\n0\n",
    b"epoch,0.5\n0,1\n",
    b"Epoch 1/5\n4/4 - 0s - loss: 0.6\n",
    b"\xff\xfe\x00",
])
def test_other_files_are_not_keras(head):
    assert keras.recognise("training.log", head) is None


def test_a_file_with_the_name_but_other_content_is_not_read_as_rows(tmp_path):
    path = tmp_path / "training.log"
    path.write_text("Epoch 1/5\n\nloss: 0.6\n")
    info = read(path).reading.inputs[0]
    assert (info.records, info.skipped, info.blank) == (0, 2, 1)
    assert "no CSVLogger header" in info.problems[0].message
    lines_add_up(info)


def test_not_utf8_is_one_problem(tmp_path):
    path = tmp_path / "training.log"
    path.write_bytes(b"epoch,loss\n0,\xff\n")
    info = read(path).reading.inputs[0]
    assert info.lines is None and "UTF-8" in info.problems[0].message


ANY = st.one_of(st.binary(max_size=1024), damaged((KERAS / "forgot" / "training.log").read_bytes()),
                damaged((KERAS / "semicolon" / "training.log").read_bytes()))


@PROPERTIES
@given(data=ANY)
def test_any_bytes_give_a_result_with_every_line_accounted(tmp_path, data):
    path = tmp_path / "training.log"
    path.write_bytes(data)
    log = read(path)
    info = log.reading.inputs[0]
    if info.lines is None:
        assert any("UTF-8" in p.message for p in info.problems)
    else:
        lines_add_up(info)
    assert len(info.problems) >= min(1, info.skipped)
    assert len(log.attempts) == len(log.attempt_reasons)
    for first, last in log.attempts:
        assert 1 <= first <= last <= (info.lines or 0)
    for frame in log.reading.frames:
        assert all(0 <= s <= keras.MAX_COUNT for s in frame["step"])
        assert list(frame["line"]) == sorted(frame["line"])
    keras.recognise("training.log", data)


# --- in a campaign ---------------------------------------------------------------------------------

def test_a_training_log_is_a_run_named_after_its_folder_with_val_accuracy():
    from reportgen.ingest import ingest
    campaign = ingest(KERAS / "clean")
    assert list(campaign.runs) == ["clean"]
    names = campaign.metric_names()
    assert {"val_accuracy", "accuracy", "loss", "val_loss"} <= set(names)
    assert [i.format for i in campaign.inputs if i.path == "training.log"] == ["keras-csv"]


def test_a_csv_logger_file_with_its_own_name_names_its_run(tmp_path):
    from reportgen.ingest import ingest
    (tmp_path / "control-lr3e-4.csv").write_bytes(CLEAN.read_bytes())
    assert list(ingest(tmp_path).runs) == ["control-lr3e-4"]


def test_epochs_starting_again_at_zero_are_a_second_run_continuing_nothing():
    from reportgen.ingest import ingest
    campaign = ingest(KERAS / "forgot")
    assert sorted(campaign.runs) == ["forgot", "forgot-2"]
    first, second = campaign.runs["forgot"], campaign.runs["forgot-2"]
    assert (first.first_step, first.last_step, second.first_step, second.last_step) == (0, 2, 0, 4)
    assert second.resumes is None
    decision = next(d for d in second.identity if d.rule == "keras-attempt")
    assert decision.decision == "separate" and "start again at 0" in decision.text
    assert decision.evidence[0].line == 5


def test_counter_example_a_resume_from_initial_epoch_stays_one_run():
    from reportgen.ingest import ingest
    campaign = ingest(KERAS / "resumed")
    assert list(campaign.runs) == ["resumed"]
    run = campaign.runs["resumed"]
    assert (run.first_step, run.last_step) == (0, 4)
    assert not any(d.rule == "keras-attempt" for d in run.identity)
