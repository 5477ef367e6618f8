"""A console's printed metric dicts and printed values are kept column by column (issue 18): a metric's
values with the rows that printed it, a session's values per name with their lines and last digits."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow as pa

from reportgen.ingest import textlog
from reportgen.ingest.identity import _printed

KAGGLE = Path(__file__).parent / "fixtures" / "stdout" / "kaggle" / "lora-tiny.log"
# A Trainer's console: a dict, the bar redrawn at the step it was logged; an evaluation between two
# training dicts; a non-finite loss; the final summary.
SPARSE = ("  0%|          | 0/10 [00:00<?, ?it/s]\n"
          "{'loss': 1.5, 'grad_norm': '0.25', 'epoch': 0.1}\n"
          " 10%|#         | 1/10 [00:01<00:09,  1.00it/s]\n"
          "{'eval_loss': 1.25, 'epoch': 0.2}\n"
          "{'loss': 'nan', 'epoch': 0.2}\n"
          " 20%|##        | 2/10 [00:02<00:08,  1.00it/s]\n"
          "{'train_runtime': '2.5', 'train_loss': '1.4', 'epoch': 0.2}\n")


def _read(text: str):
    _messages, sessions, printed = textlog._scan(text, "run.log")
    return printed, sessions, printed.frame(textlog.InputFile(path="run.log", format=textlog.FORMAT))


def test_printed_dicts_are_kept_as_a_column_per_metric_over_the_rows_that_printed_it():
    printed = _read(SPARSE)[0]
    assert len(printed) == len(printed.kinds) == len(printed.steps) == len(printed.epochs) == 4
    rows = {name: list(at) for name, (at, _values) in printed.metrics.items()}
    assert rows == {"loss": [0, 2], "grad_norm": [0], "epoch": [0, 1, 2, 3], "eval_loss": [1],
                    "train_runtime": [3], "train_loss": [3]}


def test_a_metric_is_null_in_the_rows_that_did_not_print_it_and_nan_where_it_printed_nan():
    frame = _read(SPARSE)[2]
    assert frame["line"].tolist() == [2, 4, 5, 7] and frame["kind"].tolist() == ["train", "eval", "train", "summary"]
    assert frame["step"].iloc[:3].tolist() == [1, 2, 2] and frame["step"].isna().iloc[3]  # no bar after the summary
    loss = pa.array(frame["loss"]).to_pylist()
    assert loss[0] == 1.5 and loss[1] is None and math.isnan(loss[2]) and loss[3] is None
    assert pa.array(frame["eval_loss"]).to_pylist() == [None, 1.25, None, None]
    assert all(str(frame[name].dtype) == "double[pyarrow]" for name in ("loss", "grad_norm", "epoch", "eval_loss"))


def test_the_epoch_column_places_a_dict_the_bar_did_not_by_the_steps_per_epoch():
    text = "Num update steps per epoch = 10\n{'loss': 1.5, 'epoch': '0.30'}\n{'loss': 1.4, 'epoch': '0.40'}\n{'loss': 1.3}\n"
    printed, sessions, frame = _read(text)
    assert printed.steps == [3, 4, None] and printed.unplaced == 1  # the last printed no epoch
    assert math.isnan(printed.epochs[2])
    assert (sessions[0].first_step, sessions[0].last_step) == (3, 4)
    assert frame["step"].tolist()[:2] == [3, 4]


def test_a_sessions_printed_values_are_kept_per_name_with_their_lines_and_last_digits():
    sessions = _read(SPARSE)[1]
    values = sessions[0].values
    lines, read, halves = values.columns["loss"]
    assert (list(lines), list(read), list(halves)) == ([2], [1.5], [0.05])  # 'nan' is no value to match
    assert list(values.columns["grad_norm"][2]) == [0.005]
    assert len(values) == sum(len(column[0]) for column in values.columns.values()) == 9


def test_names_printed_two_ways_are_one_metric_to_match_with_its_tolerances():
    session = textlog.Session(0, 1, 3)
    session.values.add(1, "loss", 2.5, 0.05)
    session.values.add(2, "train/loss", 2000.0, 0.5e-6)  # finer than TensorBoard's float32 keeps
    session.values.add(3, "eval/loss", 3.0, 0.5)
    got = {name: [column.tolist() for column in arrays] for name, arrays in _printed(session).items()}
    assert got == {"loss": [[2.5, 2000.0], [0.05 * (1 + 1e-9), 2000.0 * 1e-6 * (1 + 1e-9)], [1, 2]],
                   "eval_loss": [[3.0], [0.5 * (1 + 1e-9)], [3]]}


def test_a_session_stops_keeping_values_at_its_cap_counted_over_every_name():
    dicts = "".join(f"{{'loss': {i}.5, 'grad_norm': 0.{i}, 'learning_rate': {i}e-05, 'epoch': {i}.25}}\n"
                    for i in range(1, 601))
    sessions = _read(dicts)[1]
    values = sessions[0].values
    assert len(values) == textlog.MAX_SESSION_VALUES
    assert {name: len(column[0]) for name, column in values.columns.items()} == {
        "loss": 500, "grad_norm": 500, "learning_rate": 500, "epoch": 500}


def test_a_kaggle_logs_printed_values_are_cited_at_the_lines_of_their_entries():
    session = textlog.read_console(KAGGLE, "lora-tiny.log").sessions[0]
    lines, values, _halves = session.values.columns["loss"]
    assert len(lines) == 6
    file_lines = KAGGLE.read_text().split("\n")
    for line, value in zip(lines, values, strict=True):
        printed = json.loads(file_lines[line - 1].lstrip(",[").rstrip(","))["data"]
        assert f"'loss': '{value:g}'" in printed
