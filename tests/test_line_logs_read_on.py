"""Line logs their writer appends to are read on from where the last read stopped (kept by the parse cache):
metrics.csv files written by Lightning's CSVLogger, Keras's CSVLogger files, torchtune's DiskLogger files,
DVCLive's metric files,
LLaMA-Factory's trainer_log.jsonl and an MLflow file store's metric files (tests/fixtures/make_fixtures.py)
read on from any point read as they do whole, nothing read twice and nothing lost; a file that did more than
grow (CSVLogger writes the file again, header and all, when a new metric appears) is read whole.

The rows appended here are written by hand in the layout of the file they are appended to (its own header's
columns, DiskLogger's `Step N | name:value`, LogCallback's JSON lines, MLflow's `timestamp value step`): the
files themselves are the libraries'."""

from __future__ import annotations

import math
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest
from conftest import changed, ingest_warm, noting

from reportgen.ingest import (
    common,
    dvclive,
    ingest,
    keras,
    lightning,
    llamafactory,
    mlflow,
    torchtune,
)
from reportgen.ingest.cache import open_cache

FIXTURES = Path(__file__).parent / "fixtures"
METRICS = sorted((FIXTURES / "formats" / "lightning").glob("*/version_*/metrics.csv")) + \
    sorted((FIXTURES / "campaigns" / "lightning-loggers").rglob("metrics.csv"))
DISK_LOGS = sorted((FIXTURES / "torchtune").rglob("log_*.txt"))


def plain(value) -> object:
    """A read's state or result as plain data, comparable (NaN as 'nan')."""
    if isinstance(value, float):
        return repr(value) if math.isnan(value) else value
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if hasattr(value, "__dict__"):
        return {"type": type(value).__name__, **{key: plain(item) for key, item in vars(value).items()}}
    return value


def kept_state(read) -> object:
    """What a read keeps to read on from, comparable (`at` left out: it holds the file's clock)."""
    return plain({**vars(read), "at": None})


def whole(path: Path) -> tuple:
    return lightning.read_metrics(path, path.name, "r")


def same(a: tuple, b: tuple) -> None:
    (info_a, rows_a, evals_a), (info_b, rows_b, evals_b) = a, b
    pd.testing.assert_frame_equal(rows_a.frame(), rows_b.frame())
    assert info_a == info_b and plain(evals_a) == plain(evals_b)


def cuts(data: bytes) -> list[int]:
    """Every line end, the byte before and after each, and every 13th byte."""
    ends = [i + 1 for i, byte in enumerate(data) if byte == 10]
    return sorted({0, len(data), *ends, *(e - 1 for e in ends), *(e + 1 for e in ends if e < len(data)), *range(0, len(data), 13)})


def read_on_from_every_cut(path: Path, data: bytes, read, same, check=None) -> None:
    """Every way a growing line log can have been seen (cut at `cuts(data)`) then read on gives what reading the
    whole log gives, and what is kept is the read of its complete lines alone (a last line without its newline,
    read as cut off, leaves no trace). `read(path, since, keep)` -> (result, kept); `same(a, b)` asserts two
    results are one; `check(seen, result)` asserts what a reader's read of the bytes seen must say."""
    path.write_bytes(data)
    expected = read(path, None, False)[0]
    kept = 0
    for cut in cuts(data):
        path.write_bytes(data[:cut])
        first, since = read(path, None, True)
        same(first, read(path, None, False)[0])
        if check is not None:
            check(data[:cut], first)
        if since is None:  # no complete line yet
            assert b"\n" not in data[:cut]
            continue
        kept += 1
        path.write_bytes(data[: data.rfind(b"\n", 0, cut) + 1])
        assert kept_state(since) == kept_state(read(path, None, True)[1])
        path.write_bytes(data)
        again, after = read(path, since, True)
        same(again, expected)
        assert after.at.end == len(data) and after.lines == data.count(b"\n")
    assert kept > len(cuts(data)) // 2


@pytest.mark.parametrize("source", METRICS, ids=lambda p: "/".join(p.parts[-3:-1]))
def test_a_file_read_on_from_where_it_stopped_reads_as_the_whole_file_wherever_it_was_cut(tmp_path, source):
    """Every way a growing metrics.csv can have been seen (at a row's end, inside a row, before or inside its
    header) then read on gives what reading the whole file gives; what is kept is the read of the complete
    lines alone (a last line without its newline, read as cut off, leaves no trace)."""
    read_on_from_every_cut(tmp_path / "metrics.csv", source.read_bytes(),
                           lambda path, since, keep: lightning.read_metrics_on(path, path.name, "r", since, keep), same)


def disk_log(path: Path, since: torchtune.Lines | None = None, keep: bool = True) -> tuple:
    log, kept = torchtune.read_on(path, path.name, "r", since, keep)
    return (log.reading.inputs[0], log.reading.frames, log.facts), kept


def same_disk_log(a: tuple, b: tuple) -> None:
    (info_a, frames_a, facts_a), (info_b, frames_b, facts_b) = a, b
    assert len(frames_a) == len(frames_b)
    for frame_a, frame_b in zip(frames_a, frames_b, strict=True):
        pd.testing.assert_frame_equal(frame_a, frame_b)
    assert info_a == info_b and facts_a == facts_b


@pytest.mark.parametrize("source", DISK_LOGS, ids=lambda p: p.parent.name + "/" + p.name)
def test_a_disk_log_read_on_from_where_it_stopped_reads_as_the_whole_file_wherever_it_was_cut(tmp_path, source):
    """The same for torchtune's DiskLogger files: its Step lines, a NaN loss, a resumed run's second file."""
    read_on_from_every_cut(tmp_path / source.name, source.read_bytes(), disk_log, same_disk_log)  # the name dates the run


def test_rows_appended_are_read_from_where_the_read_stopped_not_from_the_start(tmp_path, monkeypatch):
    source = FIXTURES / "formats" / "lightning" / "pl-clean" / "version_0" / "metrics.csv"
    data = source.read_bytes()
    path = tmp_path / "metrics.csv"
    path.write_bytes(data)
    (info, _rows, _evals), since = lightning.read_metrics_on(path, path.name, "r")
    header = data.split(b"\n", 1)[0].decode().split(",")
    row = ["" for _ in header]
    row[header.index("step")] = "999"
    row[header.index("epoch")] = "9"
    metric = next(name for name in header if name not in ("step", "epoch"))
    row[header.index(metric)] = "0.125"
    with path.open("a", encoding="utf-8") as handle:
        handle.write(",".join(row) + "\n" + ",".join(row[:2]) + "\n")  # and a damaged row
    fed = noting(monkeypatch, lightning.MetricsCsv, "feed", lambda self, text, first, *_: (text.count("\n"), first))
    got, after = lightning.read_metrics_on(path, path.name, "r", since)
    monkeypatch.undo()
    lines = data.count(b"\n")
    assert fed == [(2, lines + 1)]  # the two new lines alone
    got_info, rows, _evals = got
    frame = rows.frame()
    assert frame["step"].iloc[-1] == 999 and frame[metric].iloc[-1] == 0.125 and frame["line"].iloc[-1] == lines + 1
    assert got_info.records == info.records + 1 and got_info.skipped == info.skipped + 1
    assert got_info.problems[-1].line == lines + 2 and after.lines == lines + 2
    same(got, whole(path))


def test_a_row_being_written_is_read_as_cut_off_while_it_is_and_as_a_row_once_whole(tmp_path):
    data = (FIXTURES / "formats" / "lightning" / "pl-clean" / "version_0" / "metrics.csv").read_bytes()
    path = tmp_path / "metrics.csv"
    cut = data.rfind(b",", 0, len(data) - 1)
    path.write_bytes(data[:cut])
    (info, rows, _evals), since = lightning.read_metrics_on(path, path.name, "r")
    lines = data.count(b"\n")
    assert info.problems[-1].line == lines and "the last line is cut off" in info.problems[-1].message
    assert info.skipped == 1 and len(rows) == lines - 2 and since.lines == lines - 1
    path.write_bytes(data)
    (info, rows, _evals), _ = lightning.read_metrics_on(path, path.name, "r", since)
    assert info.skipped == 0 and len(rows) == lines - 1 and not info.problems


@pytest.mark.parametrize("change", ["new metric: written again", "truncated", "edited", "replaced by another file"])
def test_a_file_that_did_not_only_grow_is_read_whole(tmp_path, monkeypatch, change):
    """Counter-examples: CSVLogger's rewrite with a wider header when a metric first appears, a file cut short,
    one edited before where the read stopped, another file moved to the path: each is read from its first line."""
    source = FIXTURES / "formats" / "lightning" / "pl-clean" / "version_0" / "metrics.csv"
    data = source.read_bytes()
    path = tmp_path / "metrics.csv"
    path.write_bytes(data)
    _first, since = lightning.read_metrics_on(path, path.name, "r")
    lines = data.decode().splitlines(keepends=True)
    edited = {
        "new metric: written again": lines[0].rstrip("\n") + ",lr\n" + "".join(line.rstrip("\n") + ",\n" for line in lines[1:])
        + "999,9" + "," * (lines[0].count(",") - 1) + ",0.5\n",
        "truncated": "".join(lines[: len(lines) // 2]),
        "edited": lines[0] + lines[1].replace("0", "1", 1) + "".join(lines[2:]) + lines[-1],
        "replaced by another file": data.decode() + lines[-1],
    }[change].encode()
    changed(path, edited, replaced=change == "replaced by another file")
    fed = noting(monkeypatch, lightning.MetricsCsv, "feed", lambda self, text, first, *_: first)
    got, _ = lightning.read_metrics_on(path, path.name, "r", since)
    monkeypatch.undo()
    assert fed[0] == 1
    same(got, whole(path))


def test_a_file_whose_header_is_no_header_reads_on_and_counts_every_row_below_it(tmp_path):
    data = (FIXTURES / "formats" / "lightning" / "pl-clean" / "version_0" / "metrics.csv").read_bytes()
    path = tmp_path / "metrics.csv"
    path.write_bytes(data.replace(b"step", b"stage", 1))
    (info, _rows, _evals), since = lightning.read_metrics_on(path, path.name, "r")
    lines = data.count(b"\n")
    assert info.problems[-1].message.endswith(f"the {lines - 1} rows below it are not read") and info.records == 0
    with path.open("ab") as handle:
        handle.write(data.splitlines(keepends=True)[-1])
    got, _ = lightning.read_metrics_on(path, path.name, "r", since)
    assert got[0].problems[-1].message.endswith(f"the {lines} rows below it are not read") and got[0].skipped == lines
    same(got, whole(path))


@pytest.mark.parametrize("case", ["not UTF-8", "past the budget"])
def test_a_file_read_whole_each_time_keeps_nothing_to_read_on_from(tmp_path, monkeypatch, case):
    """Counter-examples: a file that is not text, and one the budget cut (its end never reached): read whole each
    time."""
    data = (FIXTURES / "formats" / "lightning" / "pl-clean" / "version_0" / "metrics.csv").read_bytes()
    path = tmp_path / "metrics.csv"
    if case == "not UTF-8":
        data += b"\xff\xfe\n"
    else:
        monkeypatch.setattr("reportgen.ingest.common.LOG_BUDGET", 200)
    path.write_bytes(data)
    got, since = lightning.read_metrics_on(path, path.name, "r")
    assert since is None and got[0].problems
    same(got, whole(path))


def test_a_campaign_whose_metrics_grew_reads_that_file_on_and_as_a_build_without_the_cache(tmp_path, monkeypatch):
    """ingest with the parse cache: the other files are loaded, the grown metrics.csv is read on from where it
    stopped, and the campaign is the one a build without the cache reads."""
    logs = tmp_path / "lightning-loggers"
    shutil.copytree(FIXTURES / "campaigns" / "lightning-loggers", logs)
    ingest(logs, cache=open_cache(logs))
    grown = sorted(logs.rglob("metrics.csv"))[0]
    data = grown.read_bytes()
    last = data.decode().splitlines()[-1].split(",")
    header = data.decode().splitlines()[0].split(",")
    last[header.index("step")] = str(int(float(last[header.index("step")])) + 1)
    with grown.open("a", encoding="utf-8") as handle:
        handle.write(",".join(last) + "\n")
    got, warm, fed = ingest_warm(logs, monkeypatch, lightning.MetricsCsv, "feed",
                                 lambda self, text, first, *_: first)
    assert warm.reads == 1 and fed == [data.count(b"\n") + 1]


def test_step_lines_appended_to_a_disk_log_are_read_from_where_the_read_stopped(tmp_path, monkeypatch):
    source = FIXTURES / "torchtune" / "clean" / "log_1796418366.txt"
    data = source.read_bytes()
    path = tmp_path / source.name
    path.write_bytes(data)
    (info, _frames, facts), since = disk_log(path)
    with path.open("a", encoding="utf-8") as handle:
        handle.write("Step 1000 | loss:0.125 lr:1e-05 \nStep 1001 | loss:abc \n")
    fed = noting(monkeypatch, torchtune.Lines, "feed", lambda self, text, first, *_: (text.count("\n"), first))
    got, after = disk_log(path, since)
    monkeypatch.undo()
    lines = data.count(b"\n")
    assert fed == [(2, lines + 1)]
    got_info, frames, got_facts = got
    assert frames[0]["step"].iloc[-1] == 1000 and frames[0]["loss"].iloc[-1] == 0.125
    assert got_facts.last_step == 1000 and got_facts.started_at == facts.started_at
    assert got_info.records == info.records + 1 and got_info.skipped == info.skipped + 1 and after.lines == lines + 2
    assert [p.line for p in got_info.problems][-1:] == [lines + 2]
    log = torchtune.read(path, path.name, "r")
    same_disk_log(got, (log.reading.inputs[0], log.reading.frames, log.facts))


@pytest.mark.parametrize("case", ["not UTF-8", "past the budget"])
def test_a_disk_log_read_whole_each_time_keeps_nothing_to_read_on_from(tmp_path, monkeypatch, case):
    """Counter-examples: a file that is not text, and one the budget cut (its end never reached)."""
    source = FIXTURES / "torchtune" / "clean" / "log_1796418366.txt"
    data = source.read_bytes()
    path = tmp_path / source.name
    if case == "not UTF-8":
        data += b"\xff\xfe\n"
    else:
        monkeypatch.setattr("reportgen.ingest.common.LOG_BUDGET", 300)
    path.write_bytes(data)
    got, since = disk_log(path)
    assert since is None and got[0].problems
    log = torchtune.read(path, path.name, "r")
    same_disk_log(got, (log.reading.inputs[0], log.reading.frames, log.facts))


TSVS = sorted((FIXTURES / "dvclive").rglob("*.tsv"))


def metric_name(source: Path) -> str:
    return source.relative_to(next(p for p in source.parents if p.name == "metrics")).with_suffix("").as_posix()


@pytest.mark.parametrize("source", TSVS, ids=lambda p: f"{p.parts[-6 if p.parent.name == 'eval' else -5]}/{metric_name(p)}")
def test_a_dvclive_metric_file_read_on_from_where_it_stopped_reads_as_the_whole_file_wherever_it_was_cut(tmp_path, source):
    """The same for DVCLive's metric files (timestamp, step, value; a resumed run's step that falls back)."""
    name = metric_name(source)

    def read(path: Path, since, keep: bool) -> tuple:
        (info, frame, back), kept = dvclive._read_tsv(path, path.name, "r", name, since, keep)
        return (info, [frame], back), kept

    read_on_from_every_cut(tmp_path / source.name, source.read_bytes(), read, same_disk_log)


def test_a_dvclive_folder_whose_metric_files_grew_reads_each_on_and_as_a_build_without_the_cache(tmp_path, monkeypatch):
    """A live DVCLive folder: next_step() appends a row to each metric file and writes metrics.json again. With the
    parse cache, each metric file is read on from where it stopped (the one that did not grow reads no line), and
    the campaign is the one a build without the cache reads."""
    logs = tmp_path / "dvclive-clean"
    shutil.copytree(FIXTURES / "dvclive" / "clean", logs)
    ingest(logs, cache=open_cache(logs))
    lines = {}
    for name in ("loss", "acc"):
        grown = logs / "dvclive" / "plots" / "metrics" / f"{name}.tsv"
        data = grown.read_text(encoding="utf-8")
        lines[grown.relative_to(logs).as_posix()] = data.count("\n")
        stamp, step, _value = data.splitlines()[-1].split("\t")
        with grown.open("a", encoding="utf-8") as handle:
            handle.write(f"{int(stamp) + 1000}\t{int(step) + 1}\t0.125\n")
    got, warm, fed = ingest_warm(logs, monkeypatch, dvclive.Tsv, "feed",
                                 lambda self, text, first, *_: (self.info.path, text.count("\n"), first))
    assert warm.reads == 1
    assert sorted(f for f in fed if f[1]) == sorted((rel, 1, count + 1) for rel, count in lines.items())
    new = got.metrics[got.metrics["path"] == "dvclive/plots/metrics/loss.tsv"].iloc[-1]
    assert (new["line"], new["loss"]) == (lines["dvclive/plots/metrics/loss.tsv"] + 1, 0.125)


def test_a_dvclive_row_being_written_is_read_as_cut_off_while_it_is_and_as_a_row_once_whole(tmp_path):
    source = FIXTURES / "dvclive" / "clean" / "dvclive" / "plots" / "metrics" / "loss.tsv"
    data = source.read_bytes()
    path = tmp_path / "loss.tsv"
    path.write_bytes(data[: data.rfind(b"\t")])
    (info, frame, _back), since = dvclive._read_tsv(path, path.name, "r", "loss", keep=True)
    lines = data.count(b"\n")
    assert info.cut_off and info.problems[-1].line == lines and "the last line is cut off" in info.problems[-1].message
    assert len(frame) == lines - 2
    path.write_bytes(data)
    (info, frame, _back), _ = dvclive._read_tsv(path, path.name, "r", "loss", since, keep=True)
    assert not info.cut_off and not info.problems and len(frame) == lines - 1


LLAMA = FIXTURES / "llamafactory" / "saves" / "tiny-gpt2" / "lora"
TRAINER_LOGS = sorted(LLAMA.glob("*/trainer_log.jsonl"))
START = datetime(2026, 12, 4, 21, 0, tzinfo=UTC)


def trainer_log(path: Path, since=None, keep: bool = True) -> tuple:
    (info, rows, progress), kept = llamafactory.read_trainer_log_on(path, path.name, "r", START, since, keep)
    return (info, [rows.frame()], progress), kept


def same_trainer_log(a: tuple, b: tuple) -> None:
    (info_a, frames_a, progress_a), (info_b, frames_b, progress_b) = a, b
    pd.testing.assert_frame_equal(frames_a[0], frames_b[0])
    assert info_a == info_b and progress_a == progress_b


def restarted(tmp_path: Path) -> bytes:
    """train-clean's log with a second process's lines appended (LogCallback's clock starts again): LLaMA-Factory's
    own lines, train-killed's, as a resume appends them."""
    return (LLAMA / "train-clean" / "trainer_log.jsonl").read_bytes() + (LLAMA / "train-killed" / "trainer_log.jsonl").read_bytes()


@pytest.mark.parametrize("source", [*TRAINER_LOGS, "restarted"], ids=lambda p: p if isinstance(p, str) else p.parent.name)
def test_a_llamafactory_trainer_log_read_on_from_where_it_stopped_reads_as_the_whole_file_wherever_it_was_cut(tmp_path, source):
    """The same for LLaMA-Factory's trainer_log.jsonl (LogCallback's lines), a second process's lines and all: the
    rows of the first are untimed however the log was cut."""
    data = restarted(tmp_path) if source == "restarted" else source.read_bytes()
    path = tmp_path / "trainer_log.jsonl"
    path.write_bytes(data)
    expected = trainer_log(path, keep=False)[0]
    if source == "restarted":  # the first process's rows (train-clean's) untimed, the second's timed
        frame = expected[1][0]
        first_process = int((frame["line"] <= (LLAMA / "train-clean" / "trainer_log.jsonl").read_bytes().count(b"\n")).sum())
        assert "restart" in expected[2] and 0 < first_process < len(frame)
        assert frame["ts"].isna().tolist() == [True] * first_process + [False] * (len(frame) - first_process)

    def check(seen: bytes, read: tuple) -> None:
        tail = seen.rsplit(b"\n", 1)[-1]
        if tail.strip() and not tail.rstrip().endswith(b"}"):  # a line cut mid-object: its writer stopped
            assert read[0].cut_off and read[0].problems[-1].message.startswith("the last line is cut off")

    read_on_from_every_cut(path, data, trainer_log, same_trainer_log, check)


def test_a_llamafactory_folder_whose_trainer_log_grew_reads_it_on_and_as_a_build_without_the_cache(tmp_path, monkeypatch):
    logs = tmp_path / "llamafactory"
    shutil.copytree(FIXTURES / "llamafactory", logs)
    ingest(logs, cache=open_cache(logs))
    grown = logs / "saves" / "tiny-gpt2" / "lora" / "train-killed" / "trainer_log.jsonl"
    data = grown.read_bytes()
    with grown.open("ab") as handle:
        handle.write(b'{"current_steps": 25, "total_steps": 30, "loss": 0.125, "lr": 0.001, "epoch": 0.39, '
                     b'"percentage": 83.33, "elapsed_time": "0:00:09", "remaining_time": "0:00:02"}\n')
    got, warm, fed = ingest_warm(logs, monkeypatch, llamafactory.TrainerLog, "feed",
                                 lambda self, text, first, *_: (self.info.path, text.count(b"\n"), first))
    assert warm.reads == 1 and fed == [(grown.relative_to(logs).as_posix(), 1, data.count(b"\n") + 1)]
    new = got.metrics[got.metrics["path"] == grown.relative_to(logs).as_posix()].iloc[-1]
    assert (new["line"], new["step"], new["loss"]) == (data.count(b"\n") + 1, 25, 0.125)


MLRUNS = FIXTURES / "formats" / "mlruns"
MLFLOW_METRICS = sorted(p for p in MLRUNS.rglob("metrics/*") if p.is_file())


def mlflow_metric(path: Path, key: str, since=None, keep: bool = True) -> tuple:
    read, kept = common.read_lines(path, mlflow.MetricFile(path.name, "r", key), since, "not text", keep=keep)
    read.info.lines = read.lines
    return (read.info, [read.rows.frame()], plain(read.events)), kept


@pytest.mark.parametrize("source", MLFLOW_METRICS, ids=lambda p: f"{p.parts[-3][:6]}/{p.name}")
def test_an_mlflow_metric_file_read_on_from_where_it_stopped_reads_as_the_whole_file_wherever_it_was_cut(tmp_path, source):
    """The same for the MLflow file store's metric files (`timestamp value step` lines, appended by log_metric)."""

    def check(seen: bytes, read: tuple) -> None:
        if len(seen.rsplit(b"\n", 1)[-1].split()) == 1:  # a line cut before its value
            assert read[0].problems[-1].message.endswith("; the last line is cut off")

    read_on_from_every_cut(tmp_path / source.name, source.read_bytes(),
                           lambda path, since, keep: mlflow_metric(path, source.name, since, keep), same_trainer_log, check)


def test_an_mlflow_run_folder_whose_metric_grew_reads_it_on_and_as_a_build_without_the_cache(tmp_path, monkeypatch):
    logs = tmp_path / "mlruns"
    shutil.copytree(MLRUNS, logs)
    ingest(logs, cache=open_cache(logs))
    grown = sorted(logs.rglob("metrics/loss"))[0]
    data = grown.read_text(encoding="utf-8")
    stamp, _value, step = data.splitlines()[-1].split()
    with grown.open("a", encoding="utf-8") as handle:
        handle.write(f"{int(stamp) + 1000} 0.125 {int(step) + 1}\n")
    got, warm, fed = ingest_warm(logs, monkeypatch, mlflow.MetricFile, "feed",
                                 lambda self, text, first, *_: (self.info.path, text.count("\n"), first))
    rel = grown.relative_to(logs).as_posix()
    assert warm.reads == 1 and [f for f in fed if f[1]] == [(rel, 1, data.count("\n") + 1)]
    new = got.metrics[got.metrics["path"] == rel].iloc[-1]
    assert (new["line"], new["step"], new["loss"]) == (data.count("\n") + 1, int(step) + 1, 0.125)


KERAS_LOGS = sorted((FIXTURES / "keras").glob("*/training.log"))


def keras_log(path: Path, since=None, keep: bool = True) -> tuple:
    log, kept = keras.read_on(path, path.name, "r", since, keep)
    return (log.reading.inputs[0], log.reading.frames, (plain(log.reading.events), log.attempts, log.attempt_reasons)), kept


@pytest.mark.parametrize("source", [*KERAS_LOGS, "no header"], ids=lambda p: p if isinstance(p, str) else p.parent.name)
def test_a_keras_csv_log_read_on_from_where_it_stopped_reads_as_the_whole_file_wherever_it_was_cut(tmp_path, source):
    """The same for Keras's CSVLogger files: a header, a resumed fit() appending without one, a fit() that
    forgot initial_epoch, another separator; and a first line that is no header (nothing read, every line counted)."""
    data = b"loss;acc\n" + KERAS_LOGS[0].read_bytes() if source == "no header" else source.read_bytes()
    path = tmp_path / "training.log"
    path.write_bytes(data)
    expected = keras_log(path, keep=False)[0]
    if source == "no header":
        assert expected[0].skipped == data.count(b"\n") and "no CSVLogger header" in expected[0].problems[0].message

    def check(seen: bytes, read: tuple) -> None:
        tail = seen.rsplit(b"\n", 1)[-1]
        if source != "no header" and b"\n" in seen and tail.strip() and not tail.endswith(b"\r"):
            assert read[0].cut_off and read[0].problems[-1].message.startswith("the last row has no line end")

    read_on_from_every_cut(path, data, keras_log, same_disk_log, check)


def test_a_campaign_whose_keras_log_grew_reads_it_on_and_as_a_build_without_the_cache(tmp_path, monkeypatch):
    logs = tmp_path / "keras"
    shutil.copytree(FIXTURES / "keras" / "clean", logs)
    ingest(logs, cache=open_cache(logs))
    grown = logs / "training.log"
    data = grown.read_bytes()
    last = data.decode().splitlines()[-1].split(",")
    last[0] = str(int(last[0]) + 1)
    with grown.open("ab") as handle:
        handle.write(",".join(last).encode() + b"\r\n")  # CSVLogger's excel dialect
    got, warm, fed = ingest_warm(logs, monkeypatch, keras.CsvLog, "feed",
                                 lambda self, text, first, *_: (text.count("\n"), first))
    assert warm.reads == 1 and [f for f in fed if f[0]] == [(1, data.count(b"\n") + 1)]
    assert int(got.metrics["step"].max()) == int(last[0])
