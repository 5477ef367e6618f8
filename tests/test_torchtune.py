"""torchtune DiskLogger files: values, start time and recognition, from files DiskLogger wrote (tests/fixtures/torchtune)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import damaged

from reportgen.ingest import torchtune
from reportgen.model import InputFile

TT = Path(__file__).parent / "fixtures" / "torchtune"
PROPERTIES = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def only(folder: str) -> list[Path]:
    return sorted((TT / folder).glob("log_*.txt"))


def read(path: Path, rel: str | None = None) -> torchtune.TorchtuneLog:
    return torchtune.read(path, rel or f"{path.parent.name}/{path.name}", "run")


def values(log: torchtune.TorchtuneLog, name: str) -> dict[int, float]:
    frame = log.reading.frames[0]
    rows = frame[frame[name].notna()]
    return dict(zip(rows["step"].astype(int), rows[name].astype(float)))


def lines_add_up(info: InputFile) -> None:
    if info.lines is not None:
        assert info.records + info.skipped + info.blank + info.header == info.lines


def test_clean_run_reads_every_step():
    [path] = only("clean")
    log = read(path)
    info = log.reading.inputs[0]
    assert (info.lines, info.records, info.skipped, info.problems) == (10, 10, 0, [])
    loss = values(log, "loss")
    assert list(loss) == list(range(1, 11))  # global_step counts from 1
    assert loss[1] == pytest.approx(9.878992080688477) and loss[10] == pytest.approx(9.875476837158203)
    assert set(values(log, "lr").values()) == {2e-05}
    assert values(log, "grad_norm")[5] == pytest.approx(7.1146345138549805)
    assert "tokens_per_second_per_gpu" in log.reading.frames[0].columns
    assert set(log.reading.frames[0]["kind"]) == {"train"}
    assert (log.facts.first_step, log.facts.last_step) == (1, 10)


def test_started_at_comes_from_the_file_name_with_its_reason():
    [path] = only("clean")
    log = read(path)
    assert log.facts.started_at == datetime.fromtimestamp(int(path.stem.removeprefix("log_")), tz=UTC)
    assert "DiskLogger names its file log_<unix seconds>.txt" in log.facts.reason
    assert log.facts.status is None


def test_the_start_the_file_name_gives_is_the_runs():
    from reportgen.ingest import ingest
    [path] = only("clean")
    run = ingest(TT / "clean").runs["clean"]
    assert run.started_at == datetime.fromtimestamp(int(path.stem.removeprefix("log_")), tz=UTC)
    assert run.start_evidence.path == path.name


def test_a_file_of_another_name_has_no_start(tmp_path):
    [path] = only("clean")
    other = tmp_path / "metrics.txt"
    other.write_bytes(path.read_bytes())
    log = read(other, "metrics.txt")
    assert log.facts.started_at is None and log.reading.inputs[0].records == 10
    assert "started_at" not in log.facts.reason


def test_an_absurd_name_time_is_a_problem(tmp_path):
    path = tmp_path / "log_999999999999.txt"
    path.write_text("Step 1 | loss:1.0 \n")
    log = read(path, path.name)
    assert log.facts.started_at is None
    assert "no time" in log.reading.inputs[0].problems[0].message


def test_a_resumed_run_leaves_a_second_file_continuing_the_steps():
    first, second = only("resumed")
    a, b = read(first), read(second)
    assert (a.facts.first_step, a.facts.last_step) == (1, 6)
    assert (b.facts.first_step, b.facts.last_step) == (7, 10)
    assert b.facts.started_at > a.facts.started_at
    assert a.facts.status is None and b.facts.status is None  # the kill leaves no sign in the file


def test_nan_is_kept():
    [path] = only("nan")
    loss = values(read(path), "loss")
    assert loss[3] == pytest.approx(9.87821102142334)
    assert all(math.isnan(loss[s]) for s in (4, 5, 6))


def test_lines_that_are_no_step_lines_are_skipped_with_a_problem(tmp_path):
    path = tmp_path / "log_1796418366.txt"
    path.write_text("Step 1 | loss:1.5 lr:2e-05 \n\nWriting logs to x\nStep 2 | loss:abc lr:1e-05 \nStep 3 | done\n"
                    "Step 99999999999999999999 | loss:1 \nStep 4 | loss:1.2")
    log = read(path)
    info = log.reading.inputs[0]
    assert (info.lines, info.records, info.blank, info.skipped) == (7, 2, 1, 4)
    assert sorted(p.line for p in info.problems) == [3, 4, 5, 6, 7]
    assert info.cut_off
    assert values(log, "lr") == {1: 2e-05, 2: 1e-05}


def test_single_log_lines_are_read(tmp_path):
    path = tmp_path / "log_1796418366.txt"
    path.write_text("Step 5 | loss:0.5\nStep 5 | lr:1e-05\n")
    log = read(path)
    assert log.reading.inputs[0].records == 2 and values(log, "lr") == {5: 1e-05}


def test_recognised_by_content():
    [path] = only("clean")
    assert torchtune.recognise("any/name.log", path.read_bytes()) == torchtune.FORMAT


@pytest.mark.parametrize("head", [
    b"Step 3 | done\n",
    b"Step 3 | loss:abc\n",
    b"Step 1 | loss:1.0\nEpoch 1: 100%|####| 10/10\n",  # a console log with one such line among others
    b"step 3 loss 0.5\n",
    b"Step 1 | loss:1.0",  # no complete line
    b"\xff\xfe",
])
def test_other_text_is_not_torchtune(head):
    assert torchtune.recognise("log_1796418366.txt", head) is None


def test_a_pickle_is_a_part_never_unpickled():
    assert torchtune.recognise("out/log_dict.pkl", b"\x80\x04\x95") == torchtune.PICKLE
    assert torchtune.recognise("out/log_dict.pkl", b"not a pickle\n") is None
    info = torchtune.pickle_part("out/log_dict.pkl")
    assert info.records == 0 and info.notes == ["a pickle: never unpickled"]


ANY = st.one_of(st.binary(max_size=1024), damaged(only("clean")[0].read_bytes()), damaged(only("nan")[0].read_bytes()))


@PROPERTIES
@given(data=ANY)
def test_any_bytes_give_a_result_with_every_line_accounted(tmp_path, data):
    path = tmp_path / "log_1796418366.txt"
    path.write_bytes(data)
    log = read(path)
    info = log.reading.inputs[0]
    if info.lines is None:
        assert "UTF-8" in info.problems[0].message
    lines_add_up(info)
    assert len(info.problems) >= min(1, info.skipped)
    assert all(0 <= s <= torchtune.MAX_COUNT for s in log.reading.frames[0]["step"]) if log.reading.frames else True
    torchtune.recognise(path.name, data)


# --- in a campaign ---------------------------------------------------------------------------------

def test_one_disklogger_file_is_a_run_named_after_its_folder(tmp_path):
    from reportgen.ingest import ingest
    (source,) = (TT / "clean").glob("log_*.txt")
    (tmp_path / "lora-r16" / "logs").mkdir(parents=True)
    (tmp_path / "lora-r16" / "logs" / source.name).write_bytes(source.read_bytes())
    campaign = ingest(tmp_path)
    assert list(campaign.runs) == ["lora-r16"]  # a generic logs/ folder: the folder above names it
    assert "loss" in campaign.metric_names()


def test_counter_example_a_second_file_from_step_7_continues_nothing_on_that_alone():
    from reportgen.ingest import ingest
    campaign = ingest(TT / "resumed")
    files = sorted(p.stem for p in (TT / "resumed").glob("log_*.txt"))
    assert sorted(campaign.runs) == files  # two files in one folder: each named after itself
    later = campaign.runs[files[1]]
    assert later.first_step == 7 and later.resumes is None
