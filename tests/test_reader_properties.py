"""Properties every reader keeps, whatever the file holds.

Every line accounted for: a line-based file's lines are each a record, skipped (with a problem at
its line), blank or a CSV header, and for a text log text or blank; exactly, whatever mix of
valid, damaged and blank lines, line ends ("\r\n", none at the end) and cut-off last line it has.

Any bytes, every reader: a result, never an exception (a damaged file is a problem on its
InputFile), except where a reader's contract is to raise one error type.
"""

from __future__ import annotations

import codecs
import io
import json
import shutil
import zipfile
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import damaged

from reportgen.ingest import (
    bench,
    formats,
    hf,
    ingest,
    lightning,
    manifest,
    mlflow,
    native,
    tensorboard,
    textlog,
)
from reportgen.ingest.torchfile import UnreadablePickle, read_torch_file
from reportgen.model import MAX_PROBLEMS_PER_FILE, InputFile

TESTS = Path(__file__).parent
FORMATS = TESTS / "fixtures" / "formats"
SAMPLE = TESTS.parent / "sample_logs"
WANDB = TESTS / "fixtures" / "wandb"
LF = TESTS / "fixtures" / "llamafactory" / "saves" / "tiny-gpt2" / "lora" / "train-clean"
MLFLOW_RUN = FORMATS / "mlruns" / "140191543709086989" / "dc1e1b85474347259be8c72b0d1bc4d4"

# One real file of each format, as its writer left it.
REAL = {
    "native": SAMPLE / "runs" / "lora-r16-1" / "events.jsonl",
    "bench-csv": SAMPLE / "campaign" / "checkpoint-bench.csv",
    "lightning-metrics": FORMATS / "lightning" / "pl-killed" / "version_0" / "metrics.csv",
    "hparams": FORMATS / "lightning" / "pl-clean" / "version_0" / "hparams.yaml",
    "ckpt": FORMATS / "lightning" / "pl-clean" / "version_0" / "checkpoints" / "epoch=0-step=10.ckpt",
    "text": FORMATS / "hf" / "hf-nan" / "train.log",
    "hf-state": FORMATS / "hf" / "hf-nan" / "trainer_state.json",
    "hf-adapter": FORMATS / "hf" / "hf-clean" / "adapter_config.json",
    "tensorboard": FORMATS / "tensorboard" / "tb-broken" / "events.out.tfevents.1796244583.vm.6803.0",
    "sqlite": FORMATS / "mlflow" / "mlflow.db",
    "manifest": SAMPLE / "outputs" / "manifest.yaml",
    "wandb-log": next((WANDB / "clean" / "wandb").glob("offline-run-*/run-*.wandb")),
    "wandb-summary": next((WANDB / "files-only" / "wandb").glob("offline-run-*/files/wandb-summary.json")),
    "wandb-metadata": next((WANDB / "files-only" / "wandb").glob("offline-run-*/files/wandb-metadata.json")),
    "keras-csv": TESTS / "fixtures" / "keras" / "resumed" / "training.log",
    "dvclive-tsv": TESTS / "fixtures" / "dvclive" / "clean" / "dvclive" / "plots" / "metrics" / "loss.tsv",
    "torchtune": next((TESTS / "fixtures" / "torchtune" / "nan").glob("log_*.txt")),
    "llamafactory-log": LF / "trainer_log.jsonl",
    "llamafactory-running": LF / "running_log.txt",
    "hydra-config": next((TESTS / "fixtures" / "hydra" / "outputs").glob("*/*/.hydra/config.yaml")),
    "hydra-overrides": next((TESTS / "fixtures" / "hydra" / "outputs").glob("*/*/.hydra/overrides.yaml")),
    "wandb-debug": next((WANDB / "clean" / "wandb").glob("offline-run-*/logs/debug.log")),
    "wandb-config": next((WANDB / "files-only" / "wandb").glob("offline-run-*/files/config.yaml")),
    "dvclive-metrics": TESTS / "fixtures" / "dvclive" / "clean" / "dvclive" / "metrics.json",
    "dvclive-params": TESTS / "fixtures" / "dvclive" / "clean" / "dvclive" / "params.yaml",
    "llamafactory-args": LF / "training_args.yaml",
    "hydra-yaml": next((TESTS / "fixtures" / "hydra" / "outputs").glob("*/*/.hydra/hydra.yaml")),
    "kaggle": TESTS / "fixtures" / "stdout" / "kaggle" / "lora-tiny.log",
    "console": TESTS / "fixtures" / "stdout" / "nohup.out",
}
ORIGINAL = {kind: path.read_bytes() for kind, path in REAL.items()}

PROPERTIES = settings(max_examples=60, deadline=None,
                      suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def any_bytes(kind: str) -> st.SearchStrategy[bytes]:
    """Arbitrary bytes, and the real file of this kind damaged."""
    return st.one_of(st.binary(max_size=2048), damaged(ORIGINAL[kind]))


def written(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def assert_lines_add_up(info: InputFile) -> None:
    """records + skipped + blank + header == lines; a text log's lines are text or blank."""
    if info.lines is None:
        return
    # A file read as text (a text log, W&B's debug.log) counts its lines as text; others as records.
    per_line = info.text_lines if info.format == textlog.FORMAT or info.text_lines else info.records
    assert per_line + info.skipped + info.blank + info.header == info.lines
    assert min(info.records, info.skipped, info.blank, info.header, info.text_lines) >= 0


def assert_a_result(info: InputFile, line_based: bool = False) -> None:
    """What every reader returns for any file: an InputFile whose counts add up."""
    assert isinstance(info, InputFile)
    assert info.records >= 0 and info.skipped >= 0
    assert len(info.problems) + info.problems_not_shown >= min(1, info.skipped)
    if line_based:
        assert info.lines is not None or any(p.line is None and "UTF-8" in p.message for p in info.problems)
        assert_lines_add_up(info)
    else:
        assert info.lines is None


@PROPERTIES
@given(data=any_bytes("native"))
def test_native_reads_any_bytes(tmp_path, data):
    log = native.read(written(tmp_path, "events.jsonl", data), "events.jsonl")
    assert_a_result(log.input, line_based=True)


@PROPERTIES
@given(data=st.one_of(any_bytes("bench-csv"), damaged(ORIGINAL["native"])))
def test_bench_reads_any_bytes(tmp_path, data):
    reading = bench.read(written(tmp_path, "bench.csv", data), "bench.csv")
    [info] = reading.inputs
    assert_a_result(info, line_based=True)


@PROPERTIES
@given(data=any_bytes("lightning-metrics"))
def test_lightning_metrics_reads_any_bytes(tmp_path, data):
    info, rows, _evals = lightning.read_metrics(written(tmp_path, "metrics.csv", data), "metrics.csv", "r")
    rows.frame()
    assert_a_result(info, line_based=True)


@PROPERTIES
@given(data=any_bytes("hparams"))
def test_lightning_hparams_reads_any_bytes(tmp_path, data):
    info, hparams = lightning.read_hparams(written(tmp_path, "hparams.yaml", data), "hparams.yaml")
    assert isinstance(hparams, dict)
    assert_a_result(info)


def zipped_pickle(data: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("archive/data.pkl", data)
    return out.getvalue()


CHECKPOINT_BYTES = st.one_of(any_bytes("ckpt"), st.binary(max_size=512).map(zipped_pickle))


@PROPERTIES
@given(data=CHECKPOINT_BYTES)
def test_lightning_checkpoint_reads_any_bytes(tmp_path, data):
    info, _checkpoint, hparams = lightning.read_checkpoint(written(tmp_path, "last.ckpt", data), "last.ckpt", "r")
    assert isinstance(hparams, dict)
    assert_a_result(info)


@PROPERTIES
@given(data=CHECKPOINT_BYTES)
def test_the_pickle_walk_reads_any_bytes_or_says_it_cannot(tmp_path, data):
    """read_torch_file's contract: the checkpoint's top-level object, or UnreadablePickle."""
    try:
        read_torch_file(written(tmp_path, "last.ckpt", data))
    except UnreadablePickle:
        pass


@PROPERTIES
@given(data=any_bytes("text"))
def test_text_log_reads_any_bytes(tmp_path, data):
    info, messages, sessions = textlog.read(written(tmp_path, "train.log", data), "train.log")
    assert sessions and info.records == len(messages)
    assert_a_result(info, line_based=True)


@PROPERTIES
@given(data=any_bytes("hf-state"))
def test_trainer_state_reads_any_bytes(tmp_path, data):
    info, rows, _events, parsed = hf.read_state(written(tmp_path, "trainer_state.json", data), "trainer_state.json", "r")
    rows.frame()
    hf.state_facts("r", "trainer_state.json", parsed, {})
    assert_a_result(info)


@PROPERTIES
@given(data=any_bytes("hf-adapter"))
def test_adapter_config_reads_any_bytes(tmp_path, data):
    info, adapter = hf.read_adapter(written(tmp_path, "adapter_config.json", data), "adapter_config.json")
    assert isinstance(adapter, dict)
    assert_a_result(info)


@PROPERTIES
@given(data=any_bytes("tensorboard"))
def test_tensorboard_reads_any_bytes(tmp_path, data):
    texts: dict[str, str] = {}
    info, frame = tensorboard.read(written(tmp_path, "events.out.tfevents.1.vm.1.0", data), "events.out.tfevents", "r", texts)
    assert len(frame) >= 0
    assert_a_result(info)


@PROPERTIES
@given(data=any_bytes("sqlite"))
def test_mlflow_sqlite_reads_any_bytes(tmp_path, data):
    """read_sqlite's contract: None when the file is no MLflow store, else the store's runs."""
    result = mlflow.read_sqlite(written(tmp_path, "mlflow.db", data), "mlflow.db")
    if result is not None:
        reading, _runs = result
        for info in reading.inputs:
            assert_a_result(info)


MLFLOW_FILES = sorted(p.relative_to(MLFLOW_RUN).as_posix() for p in MLFLOW_RUN.rglob("*") if p.is_file())


@PROPERTIES
@given(member=st.sampled_from(MLFLOW_FILES), data=st.data())
def test_mlflow_file_store_reads_any_bytes(tmp_path, member, data):
    """One file of a file-store run (meta.yaml, a metric, a param, a tag) holds anything."""
    logs = tmp_path / "logs"
    shutil.rmtree(logs, ignore_errors=True)
    folder = logs / "0" / "run"
    shutil.copytree(MLFLOW_RUN, folder)
    original = (folder / member).read_bytes()
    (folder / member).write_bytes(data.draw(st.one_of(st.binary(max_size=1024), damaged(original))))
    readable = sorted(p.relative_to(logs).as_posix() for p in logs.rglob("*") if p.is_file())
    reading, _run = mlflow.read_file_run(folder, logs, readable)
    for frame in reading.frames:
        assert len(frame) >= 0
    for info in reading.inputs:
        assert_a_result(info, line_based="/metrics/" in info.path)


@PROPERTIES
@given(data=any_bytes("manifest"))
def test_manifest_reads_any_bytes(tmp_path, data):
    info, entries = manifest.read(written(tmp_path, "manifest.yaml", data), "manifest.yaml")
    assert info.records == len(entries)
    assert_a_result(info)


NAMES = ["events.jsonl", "bench.csv", "metrics.csv", "hparams.yaml", "last.ckpt", "train.log", "trainer_state.json",
         "adapter_config.json", "events.out.tfevents.1.vm.1.0", "mlflow.db", "meta.yaml", "manifest.yaml", "notes.bin"]


@PROPERTIES
@given(name=st.sampled_from(NAMES), head=st.one_of(st.binary(max_size=1024), *(damaged(o) for o in ORIGINAL.values())))
def test_sniffing_any_bytes_names_a_kind_or_none(name, head):
    assert formats.kind_of(f"runs/version_0/{name}", head) in (None, "lfs", "native", "bench", "manifest", "tensorboard",
                                                             "sqlite", "ckpt", "hf-state", "hf-adapter", "mlflow-run-meta",
                                                             "lightning-metrics", "hparams", "text", "wandb-log", "wandb-file",
                                                             "keras-csv", "dvclive-tsv", "dvclive-file", "torchtune",
                                                             "torchtune-pickle", "llamafactory-log",
                                                             "llamafactory-running", "llamafactory-args",
                                                             "hydra-config")


W_RUN = "wandb/run-20270101_000000-abc123"
# Files a file is read with: an adapter_config.json is read in a Trainer's output folder only.
COMPANIONS = {"hf-adapter": [("hf-state", "")]}  # kind -> the files written beside it: (kind, folder below its own)
FOLDERS = {"native": "runs/r", "bench-csv": "campaign", "lightning-metrics": "lightning_logs/version_0",
           "hparams": "lightning_logs/version_0", "ckpt": "lightning_logs/version_0/checkpoints", "text": "out",
           "hf-state": "out", "hf-adapter": "out", "tensorboard": "out/runs/x", "sqlite": "", "manifest": "outputs",
           "wandb-log": W_RUN, "wandb-summary": f"{W_RUN}/files", "wandb-metadata": f"{W_RUN}/files",
           "wandb-debug": f"{W_RUN}/logs", "keras-csv": "keras", "dvclive-tsv": "p/dvclive/plots/metrics", "torchtune": "tt/logs",
           "llamafactory-log": "saves/lf", "llamafactory-running": "saves/lf", "hydra-config": "outputs/job/.hydra",
           "hydra-overrides": "outputs/job/.hydra", "wandb-config": f"{W_RUN}/files", "dvclive-metrics": "p/dvclive",
           "dvclive-params": "p/dvclive", "llamafactory-args": "saves/lf", "hydra-yaml": "outputs/job/.hydra",
           "kaggle": "", "console": ""}
# Files a reader takes only beside another (a DVCLive folder's metric file, a LLaMA-Factory log, Hydra's config).
COMPANIONS.update({"dvclive-metrics": [("dvclive-tsv", "plots/metrics")], "dvclive-params": [("dvclive-tsv", "plots/metrics")],
                   "llamafactory-args": [("llamafactory-log", "")], "hydra-yaml": [("hydra-config", "")]})


@pytest.mark.parametrize("kind", sorted(REAL))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_ingest_reads_any_file_without_a_reader_failing(tmp_path_factory, kind, data):
    """A damaged file, wherever it lies, is that file's problem: no reader fails on it (ingest would
    list a failure as "reportgen could not read this file")."""
    logs = tmp_path_factory.mktemp("logs")
    target = logs / FOLDERS[kind] / REAL[kind].name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data.draw(any_bytes(kind)))
    for companion, below in COMPANIONS.get(kind, []):
        beside = target.parent / below / REAL[companion].name
        beside.parent.mkdir(parents=True, exist_ok=True)
        beside.write_bytes(ORIGINAL[companion])
    campaign = ingest(logs)
    failed = [p.message for info in campaign.inputs for p in info.problems if "could not read this file" in p.message]
    assert failed == []
    for info in campaign.inputs:
        assert_lines_add_up(info)


@pytest.mark.parametrize("kind", sorted(REAL))
def test_every_real_file_the_damage_starts_from_is_recognised(tmp_path, kind):
    """The damaged files above start from files every reader reads."""
    logs = tmp_path / "logs"
    target = logs / FOLDERS[kind] / REAL[kind].name
    target.parent.mkdir(parents=True)
    target.write_bytes(ORIGINAL[kind])
    for companion, below in COMPANIONS.get(kind, []):
        beside = target.parent / below / REAL[companion].name
        beside.parent.mkdir(parents=True, exist_ok=True)
        beside.write_bytes(ORIGINAL[companion])
    campaign = ingest(logs)
    assert [i.format for i in campaign.inputs if i.path == target.relative_to(logs).as_posix()] != [None]


# Every line accounted for -------------------------------------------------------------------------

JST = timezone(timedelta(hours=9))
TIMES = st.datetimes(datetime(2024, 1, 1), datetime(2030, 1, 1)).map(
    lambda at: at.replace(tzinfo=JST).isoformat(timespec="milliseconds"))
RUNS = st.sampled_from(["lora-r16-1", "control-2", "pilot-1", "ラン-1"])
STEPS = st.integers(0, 10**6)
VALUES = st.one_of(st.floats(), st.integers(-10**20, 10**20))
PATHS = st.sampled_from(["ckpt/lora-r16-1/checkpoint-400", "/scratch/ckpt/r-1/checkpoint-100", "/mnt/bucket/ckpt/c-2/last"])
WORDS = st.text(st.sampled_from("abcdefghij klmnopq-_.:/ü日本"), min_size=1, max_size=30).map(str.strip).filter(bool)


@dataclass
class LineFile:
    """A generated file and what each of its lines is: record, skipped, blank or header (text logs: text, blank)."""

    data: bytes
    kinds: list[str]

    def numbers(self, kind: str) -> set[int]:
        return {n for n, k in enumerate(self.kinds, start=1) if k == kind}


def cut(line: str, before: int) -> st.SearchStrategy[str]:
    """A line cut off by a writer that stopped: its first 1 .. before-1 characters."""
    return st.integers(1, max(1, before - 1)).map(lambda n: line[:n])


@st.composite
def line_file(draw, lines: st.SearchStrategy[tuple[str, str | bytes]], cut_off: st.SearchStrategy[str | bytes] | None,
              first: st.SearchStrategy[tuple[str, str | bytes]] | None = None, bom: bool = True) -> LineFile:
    """Lines of (kind, text) joined by "\\n", "\\r\\n" or both; the last one with or without its line end,
    or followed by a line cut off mid-way (a kind of skipped line)."""
    items = ([draw(first)] if first is not None else []) + draw(st.lists(lines, max_size=40))
    ends = draw(st.sampled_from([["\n"], ["\r\n"], ["\n", "\r\n"]]))
    out, kinds = [], []
    for kind, text in items:
        end = draw(st.sampled_from(ends))
        out.append(text if isinstance(text, bytes) else text.encode())
        out.append(end.encode())
        kinds.append(kind)
    how = draw(st.sampled_from(["ended", "unended", "cut"]))
    if how == "unended" and items and out[-2].strip():
        out.pop()  # the last line has no line end (an empty last line would then be no line at all)
    elif how == "cut" and cut_off is not None:
        tail = draw(cut_off)
        out.append(tail if isinstance(tail, bytes) else tail.encode())
        kinds.append("skipped")
    data = b"".join(out)
    if bom and kinds and draw(st.booleans()):
        data = codecs.BOM_UTF8 + data
    return LineFile(data, kinds)


def count_lines(data: bytes) -> int:
    data = data.removeprefix(codecs.BOM_UTF8)
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def assert_every_line_accounted_for(info: InputFile, built: LineFile, record_lines: set[int] | None = None) -> None:
    """Each line is what it was made as, and each skipped line has its problem at its line."""
    assert info.lines == len(built.kinds) == count_lines(built.data)
    assert (info.records, info.skipped, info.blank, info.header) == (
        len(built.numbers("record")), len(built.numbers("skipped")), len(built.numbers("blank")), len(built.numbers("header")))
    assert info.records + info.skipped + info.blank + info.header == info.lines
    assert built.numbers("skipped") <= {p.line for p in info.problems}
    if record_lines is not None:
        assert record_lines == built.numbers("record")


BLANK = st.sampled_from(["", " ", "\t", "  \t "]).map(lambda text: ("blank", text))


def compact(record: dict) -> str:
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False)


# The native event log (docs/events.md), shaped as sample_logs writes it.
NATIVE_EVENTS = st.one_of(
    st.builds(lambda ts, run, step, values: {"ts": ts, "type": "metric", "run": run, "step": step, "metrics": values},
              TIMES, RUNS, STEPS, st.dictionaries(st.sampled_from(["loss", "grad_norm", "learning_rate"]), VALUES, min_size=1)),
    st.builds(lambda ts, run, step, loss, seconds: {"ts": ts, "type": "eval", "run": run, "step": step,
                                                    "metrics": {"eval_loss": loss, "eval_rougeL": 0.262}, "seconds": seconds},
              TIMES, RUNS, STEPS, st.floats(0, 10), st.floats(0, 3600)),
    st.builds(lambda ts, run: {"ts": ts, "type": "run_start", "run": run, "config": {"base": "swallow-7b", "rank": 16},
                               "variant": "lora-r16"}, TIMES, RUNS),
    st.builds(lambda ts, run, step: {"ts": ts, "type": "run_end", "run": run, "status": "completed", "step": step},
              TIMES, RUNS, STEPS),
    st.builds(lambda ts, run, step, path, seconds: {"ts": ts, "type": "checkpoint_save", "run": run, "step": step, "path": path,
                                                    "seconds": seconds, "bytes": 1342177280, "state": ["model", "optimizer"]},
              TIMES, RUNS, STEPS, PATHS, st.floats(0, 3600)),
    st.builds(lambda ts, run, path: {"ts": ts, "type": "checkpoint_transfer", "run": run, "path": path, "seconds": 41.6,
                                     "destination": "team bucket"}, TIMES, RUNS, PATHS),
    st.builds(lambda ts, run, ok: {"ts": ts, "type": "reload_test", "run": run, "path": "ckpt/pilot-1/checkpoint-300", "ok": ok,
                                   "seconds": 95.0, "new_process": True}, TIMES, RUNS, st.booleans()),
    st.builds(lambda ts, run, reason: {"ts": ts, "type": "stop", "run": run, "rule": "S3-truncation", "reason": reason, "step": 10},
              TIMES, RUNS, WORDS),
    st.builds(lambda ts, kind: {"ts": ts, "type": kind, "step_id": "prep-env"}, TIMES, st.sampled_from(["step_start", "step_end"])),
    st.builds(lambda ts, reason: {"ts": ts, "type": "decision", "point": "after-pilot", "decision": "continue", "reason": reason},
              TIMES, WORDS),
).map(compact)
NATIVE_DAMAGED = st.one_of(
    st.sampled_from([
        "step 1 loss 2.31",
        "[1, 2]",
        "null",
        '{"ts":"2026-11-02T09:00:00Z","type":"metric","run":"r","step":"x","metrics":{"loss":1}}',
        '{"ts":"2026-11-02T09:00:00Z","type":"metric","step":1,"metrics":{"loss":1}}',
        '{"ts":"yesterday","type":"metric","run":"r","step":1,"metrics":{"loss":1}}',
        '{"ts":"9999-12-31T00:00:00Z","type":"run_start","run":"r"}',
        '{"ts":"2026-11-02T09:00:00Z","type":"heartbeat","run":"r"}',
        '{"ts":"2026-11-02T09:00:00Z","type":"metric","run":"r","step":18446744073709551616,"metrics":{"loss":1}}',
        '{"ts":"2026-11-02T09:00:00Z","type":"eval","run":"r","step":-18446744073709551616,"metrics":{"eval_loss":1}}',
        '{"ts":"2026-11-02T09:00:00Z","type":"checkpoint_save","run":"r","seconds":-3}',
        '{"x":' + "[" * 3000 + "]" * 3000 + "}",
    ]),
    NATIVE_EVENTS.flatmap(lambda line: cut(line, len(line))),
    NATIVE_EVENTS.map(lambda line: line.encode().replace(b'"type"', b'"ty\xecpe"')),  # a byte that is not UTF-8
).map(lambda text: ("skipped", text))


@PROPERTIES
@given(built=line_file(st.one_of(NATIVE_EVENTS.map(lambda text: ("record", text)), NATIVE_DAMAGED, BLANK),
                       NATIVE_EVENTS.flatmap(lambda line: cut(line, len(line)))))
def test_native_events_account_for_every_line(tmp_path, built):
    log = native.read(written(tmp_path, "events.jsonl", built.data), "events.jsonl")
    evidence = {int(n) for n in log.metrics["line"]} | {e.evidence.line for e in log.events}
    assert_every_line_accounted_for(log.input, built, evidence)


# Checkpoint benchmark records (docs/formats.md), as JSONL and as CSV.
BENCH_RECORDS = st.builds(
    lambda path, op, ts, seconds, size, ok, process: {
        "checkpoint": path, "operation": op, "time": ts, "seconds": seconds, "bytes": size, "ok": ok,
        "host": "gpu-a", "process": process},
    PATHS, st.sampled_from(["save", "transfer", "restore", "reload_test"]), TIMES, st.floats(0, 3600), st.integers(0, 2**40),
    st.booleans(), st.integers(1000, 9999))
BENCH_JSON = BENCH_RECORDS.map(json.dumps)
BENCH_JSON_DAMAGED = st.one_of(
    st.sampled_from([
        "checkpoint saved",
        "[1, 2]",
        '{"operation": "save", "time": "2026-11-02T02:10:00Z"}',
        '{"checkpoint": "c/1", "operation": "defrag", "time": "2026-11-02T02:10:00Z"}',
        '{"checkpoint": "c/1", "operation": "save", "time": "not a time"}',
        '{"checkpoint": "c/1", "operation": "save", "time": "2026-11-02T02:10:00Z", "seconds": -1}',
        '{"checkpoint": "c/1", "operation": "reload_test", "time": "2026-11-02T02:10:00Z"}',
        '{"checkpoint":' + "[" * 3000 + "]" * 3000 + "}",
    ]),
    BENCH_JSON.flatmap(lambda line: cut(line, len(line))),
).map(lambda text: ("skipped", text))


@PROPERTIES
@given(built=line_file(st.one_of(BENCH_JSON.map(lambda text: ("record", text)), BENCH_JSON_DAMAGED, BLANK),
                       BENCH_JSON.flatmap(lambda line: cut(line, len(line))),
                       first=BENCH_JSON.map(lambda text: ("record", text))))
def test_benchmark_jsonl_accounts_for_every_line(tmp_path, built):
    reading = bench.read(written(tmp_path, "bench.jsonl", built.data), "bench.jsonl")
    assert_every_line_accounted_for(reading.inputs[0], built, {e.evidence.line for e in reading.events})


BENCH_HEADER = "checkpoint,operation,time,seconds,bytes,ok,host,process"
BENCH_CSV = BENCH_RECORDS.map(lambda r: ",".join("true" if v is True else "false" if v is False else str(v) for v in r.values()))
BENCH_CSV_DAMAGED = st.one_of(
    BENCH_CSV.map(lambda row: row + ",one too many"),
    BENCH_CSV.map(lambda row: row.replace(",", ',"', 1)),  # a quote opened and not closed
    BENCH_CSV.map(lambda row: row.replace(",", "\r,", 1)),  # a carriage return inside the row
    BENCH_CSV.map(lambda row: row.replace("+09:00", " or so", 1)),  # not an ISO 8601 time
    st.just("c/1,defrag,2026-11-02T02:10:00Z,1,1,true,gpu-a,1"),
    st.just("c/1,save,2026-11-02T02:10:00Z,-1,1,true,gpu-a,1"),
    st.just("c/1,reload_test,2026-11-02T02:10:00Z,1,1,,gpu-a,1"),
).map(lambda text: ("skipped", text))


@PROPERTIES
@given(built=line_file(st.one_of(BENCH_CSV.map(lambda text: ("record", text)), BENCH_CSV_DAMAGED, BLANK,
                                 st.just(("blank", ",,, ,,,,"))),  # a row with no value
                       BENCH_CSV.flatmap(lambda row: cut(row, row.rindex(","))),
                       first=st.one_of(st.just(("header", BENCH_HEADER)), BLANK)))
def test_benchmark_csv_accounts_for_every_line(tmp_path, built):
    if "header" not in built.kinds:  # a blank first line: the header is the first row that is not blank
        built = LineFile(BENCH_HEADER.encode() + b"\n" + built.data.removeprefix(codecs.BOM_UTF8), ["header", *built.kinds])
    reading = bench.read(written(tmp_path, "bench.csv", built.data), "bench.csv")
    assert_every_line_accounted_for(reading.inputs[0], built, {e.evidence.line for e in reading.events})


# Lightning's CSVLogger metrics.csv: sparse rows under the header.
LIGHTNING_HEADER = "epoch,step,train_loss_epoch,train_loss_step,val_loss"
CELLS = st.one_of(st.just(""), st.floats().map(str), st.just("abc"))  # "abc": that cell is left out, the row is read
LIGHTNING_ROWS = st.builds(lambda epoch, step, cells: ",".join([str(epoch), str(step), *cells]),
                           st.integers(0, 99), STEPS, st.lists(CELLS, min_size=3, max_size=3))
LIGHTNING_DAMAGED = st.one_of(
    LIGHTNING_ROWS.map(lambda row: row + ",0.5"),
    LIGHTNING_ROWS.map(lambda row: row.replace(",", ',"', 1)),
    LIGHTNING_ROWS.map(lambda row: row.replace(",", "\r,", 1)),
    st.builds(lambda step, row: ",".join([row.split(",")[0], step, *row.split(",")[2:]]),
              st.sampled_from(["x", "", "nan", "inf", "-inf", "1e30", "9223372036854775808"]), LIGHTNING_ROWS),
).map(lambda text: ("skipped", text))


@PROPERTIES
@given(built=line_file(st.one_of(LIGHTNING_ROWS.map(lambda text: ("record", text)), LIGHTNING_DAMAGED, BLANK),
                       LIGHTNING_ROWS.flatmap(lambda row: cut(row, row.rindex(","))),
                       first=st.just(("header", LIGHTNING_HEADER))))
def test_lightning_metrics_account_for_every_line(tmp_path, built):
    info, rows, _evals = lightning.read_metrics(written(tmp_path, "metrics.csv", built.data), "metrics.csv", "r")
    assert_every_line_accounted_for(info, built, {int(n) for n in rows.frame()["line"]})


# An MLflow file store's metrics/<key>: "timestamp value step" lines.
MLFLOW_LINES = st.builds(lambda ts, value, step: f"{ts} {value!r} {step}" if step is not None else f"{ts} {value!r}",
                         st.integers(1_700_000_000_000, 1_900_000_000_000), st.floats(), st.none() | STEPS)
MLFLOW_DAMAGED = st.sampled_from([
    "x 1.0 2", "1796244595720 1.0 2 3", "1796244595720", "1796244595720.5 1.0 2", "1796244595720 one 2",
    "1796244595720 1.0 18446744073709551616",
]).map(lambda text: ("skipped", text))
NO_TIME = ("record", "1" + "0" * 400 + " 1.0 2")  # a value with a time that is no time: read, without its time


@PROPERTIES
@given(built=line_file(st.one_of(MLFLOW_LINES.map(lambda text: ("record", text)), MLFLOW_DAMAGED, BLANK, st.just(NO_TIME)),
                       MLFLOW_LINES.flatmap(lambda line: cut(line, line.index(" ") + 1)), bom=False))
def test_mlflow_metric_files_account_for_every_line(tmp_path, built):
    logs = tmp_path / "logs"
    shutil.rmtree(logs, ignore_errors=True)
    folder = logs / "0" / "run"
    (folder / "metrics").mkdir(parents=True)
    (folder / "meta.yaml").write_bytes((MLFLOW_RUN / "meta.yaml").read_bytes())
    (folder / "metrics" / "loss").write_bytes(built.data)
    reading, _run = mlflow.read_file_run(folder, logs, ["0/run/meta.yaml", "0/run/metrics/loss"])
    [info] = [i for i in reading.inputs if i.path == "0/run/metrics/loss"]
    [frame] = reading.frames
    assert_every_line_accounted_for(info, built, {int(n) for n in frame["line"]})


# Captured stdout: every line of the real logs, damaged and cut off.
REAL_TEXT_LINES = sorted({line for path in [*FORMATS.rglob("*.log"), *(TESTS / "fixtures" / "campaigns").rglob("*.log"),
                                            *SAMPLE.rglob("*.log")]
                          for line in path.read_bytes().decode("utf-8").split("\n") if line.strip()})
TEXT_LINES = st.sampled_from(REAL_TEXT_LINES)
TEXT_DAMAGED = st.one_of(
    TEXT_LINES.map(lambda line: line.encode()[:7] + b"\xff\xfe" + line.encode()[7:]),  # bytes that are not UTF-8
    TEXT_LINES.map(lambda line: "\x1b[A\x00" + line),
)


def cut_text(line: str) -> st.SearchStrategy[str]:
    """A line cut off mid-way, past its indent (a cut that leaves only spaces is a blank line)."""
    return st.integers(len(line) - len(line.lstrip()) + 1, len(line)).map(lambda n: line[:n])


@PROPERTIES
@given(built=line_file(st.one_of(TEXT_LINES, TEXT_DAMAGED).map(lambda text: ("text", text)) | BLANK,
                       TEXT_LINES.flatmap(cut_text)))
def test_text_logs_account_for_every_line(tmp_path, built):
    built.kinds = ["text" if k == "skipped" else k for k in built.kinds]  # a cut-off line of text is text
    info, messages, _sessions = textlog.read(written(tmp_path, "train.log", built.data), "train.log")
    assert info.lines == len(built.kinds) == count_lines(built.data)
    assert (info.text_lines, info.blank, info.skipped, info.header) == (len(built.numbers("text")), len(built.numbers("blank")), 0, 0)
    assert info.text_lines + info.blank == info.lines
    assert info.records == len(messages)
    assert all(1 <= m.evidence.line <= info.lines for m in messages)


# Each reader's file: a first line, then a line the reader skips.
CAPPED = {
    "events.jsonl": ("", "not an event", lambda path: native.read(path, "events.jsonl").input),
    "bench.jsonl": (compact({"checkpoint": "c/1", "operation": "save", "time": "2026-11-02T02:10:00Z"}) + "\n", "{not json",
                    lambda path: bench.read(path, "bench.jsonl").inputs[0]),
    "metrics.csv": ("epoch,step,loss\n", "0,x,1.0", lambda path: lightning.read_metrics(path, "metrics.csv", "r")[0]),
}


@pytest.mark.parametrize("name", sorted(CAPPED))
def test_past_the_problem_cap_skipped_lines_are_still_counted(tmp_path, name):
    """Problems shown stop at MAX_PROBLEMS_PER_FILE; the lines skipped beyond it are counted, and said."""
    first, line, read = CAPPED[name]
    damaged_lines = MAX_PROBLEMS_PER_FILE + 50
    info = read(written(tmp_path, name, (first + (line + "\n") * damaged_lines).encode()))
    assert info.skipped == damaged_lines and len(info.problems) == MAX_PROBLEMS_PER_FILE
    assert info.problems_not_shown == damaged_lines - MAX_PROBLEMS_PER_FILE
    assert_lines_add_up(info)


# What the properties found, as plain cases ---------------------------------------------------------

GOOD_EVENT = b'{"ts":"2026-11-03T04:48:36.000+09:00","type":"metric","run":"lora-r16-1","step":180,"metrics":{"loss":2.6543}}'


def read_events(tmp_path: Path, *lines: bytes) -> native.NativeLog:
    return native.read(written(tmp_path, "events.jsonl", b"\n".join(lines) + b"\n"), "events.jsonl")


def test_a_native_line_with_bytes_that_are_not_utf8_in_a_string_is_a_damaged_line(tmp_path):
    """pyarrow's reader does not check strings: a run id or metric name that is not UTF-8 made the whole
    file fail later ("ArrowException: Unknown error: Wrapping \\ufffdora-r16-1 failed")."""
    in_run = (b'{"ts":"2026-11-03T04:50:28.000+09:00","type":"metric","run":"\xecora-r16-1","step":190,'
              b'"metrics":{"loss":2.6631,"grad_norm":1.2853,"learning_rate":0.00018733}}')
    in_name = b'{"ts":"2026-11-03T04:52:20.000+09:00","type":"metric","run":"lora-r16-1","step":200,"metrics":{"\xf4oss":2.6}}'
    log = read_events(tmp_path, GOOD_EVENT, in_run, in_name, GOOD_EVENT)
    assert log.metrics["line"].tolist() == [1, 4]
    assert [(p.line, p.message.split(" (")[0]) for p in log.input.problems] == [(2, "not UTF-8 text"), (3, "not UTF-8 text")]
    assert (log.input.lines, log.input.records, log.input.skipped) == (4, 2, 2)


def test_a_native_step_past_64_bits_is_a_damaged_line(tmp_path):
    """It made the whole file fail when the metric rows were built ("OverflowError: Python int too large to convert to C long")."""
    log = read_events(tmp_path, GOOD_EVENT,
                      b'{"ts":"2026-11-02T09:00:00Z","type":"metric","run":"r","step":18446744073709551616,"metrics":{"loss":1}}')
    assert (log.input.records, log.input.skipped) == (1, 1)
    assert [(p.line, p.message) for p in log.input.problems] == [
        (2, "'step' 18446744073709551616 is past any step a campaign logged (1e+15); line skipped")]


def test_a_native_metric_integer_past_2_53_is_read_as_its_nearest_float(tmp_path):
    """pyarrow's safe cast refused it and the whole file failed ("ArrowInvalid: Integer value
    9007199254740993 not in range: -9007199254740992 to 9007199254740992")."""
    log = read_events(tmp_path, b'{"ts":"2024-01-01T00:00:00.000+09:00","type":"metric","run":"lora-r16-1","step":0,'
                                b'"metrics":{"loss":9007199254740993}}')
    assert log.metrics["loss"].tolist() == [9007199254740992.0] and log.input.records == 1


def test_a_benchmark_jsonl_line_nested_too_deep_is_a_damaged_line(tmp_path):
    """It made the reader fail ("AttributeError: 'TooComplex' object has no attribute 'msg'")."""
    first = (b'{"checkpoint": "ckpt/lora-r16-1/checkpoint-400", "operation": "save", "time": "2024-01-01T00:00:00.000+09:00", '
             b'"seconds": 0.0, "bytes": 0, "ok": false, "host": "gpu-a", "process": 1000}')
    deep = b'{"checkpoint":' + b"[" * 3000 + b"]" * 3000 + b"}"
    info = bench.read(written(tmp_path, "bench.jsonl", first + b"\n" + deep + b"\n"), "bench.jsonl").inputs[0]
    assert (info.records, info.skipped) == (1, 1)
    assert [(p.line, p.message) for p in info.problems] == [(2, "not JSON (nested too deep to read); line skipped")]


def test_a_metrics_csv_step_that_is_infinite_or_past_64_bits_is_a_damaged_row(tmp_path):
    """`inf` made the reader fail ("OverflowError: cannot convert float infinity to integer"), `1e30` the frame."""
    path = written(tmp_path, "metrics.csv", b"epoch,step,loss\n0,inf,1.0\n0,1e30,1.0\n0,4,2.5\n")
    info, rows, _evals = lightning.read_metrics(path, "metrics.csv", "r")
    assert rows.frame()["step"].tolist() == [4]
    assert [(p.line, p.message) for p in info.problems] == [
        (2, "step: 'inf' is not a step count; row skipped"), (3, "step: '1e30' is not a step count; row skipped")]
    assert (info.lines, info.header, info.records, info.skipped) == (4, 1, 1, 2)


def test_an_mlflow_metric_line_with_a_timestamp_or_step_past_64_bits_is_no_failure(tmp_path):
    """A 401-digit timestamp made the reader fail ("OverflowError: integer division result too large for a
    float"), a step past 64 bits the frame. The value with no time is read without one, and its line says so;
    the step is damage."""
    folder = tmp_path / "logs" / "0" / "run"
    (folder / "metrics").mkdir(parents=True)
    (folder / "meta.yaml").write_bytes((MLFLOW_RUN / "meta.yaml").read_bytes())
    (folder / "metrics" / "loss").write_bytes(b"1" + b"0" * 400 + b" 1.0 2\n1796244595720 1.0 18446744073709551616\n"
                                              b"1796244595720 1.5 3\n")
    reading, _run = mlflow.read_file_run(folder, tmp_path / "logs", ["0/run/meta.yaml", "0/run/metrics/loss"])
    [frame] = reading.frames
    assert frame["step"].tolist() == [2, 3] and frame["ts"].isna().tolist() == [True, False]
    [info] = [i for i in reading.inputs if i.path.endswith("loss")]
    assert (info.lines, info.records, info.skipped) == (3, 2, 1) and [p.line for p in info.problems] == [1, 2]
    assert info.problems[0].message.startswith("timestamp 1000000000") and "read without a time" in info.problems[0].message


def test_a_csv_holding_a_quote_counts_no_line_past_its_last(tmp_path):
    """Read line by line for its quote, a CSV gave one more (empty) row than it has lines."""
    data = (b"checkpoint,operation,time,seconds,bytes,ok,host,process\n"
            b'ckpt/lora-r16-1/checkpoint-400,"save,2024-01-01T00:00:00.000+09:00,0.0,0,false,gpu-a,1000\n')
    info = bench.read(written(tmp_path, "bench.csv", data), "bench.csv").inputs[0]
    assert (info.lines, info.header, info.skipped, info.blank) == (2, 1, 1, 0)


def test_a_carriage_return_inside_a_csv_row_costs_that_row_and_moves_no_line_number(tmp_path):
    """csv split the row at a "\\r" alone: one line gave two rows, and every row after it was reported a line too far."""
    path = written(tmp_path, "metrics.csv", b"epoch,step,loss\n0,1\r,2.0\n0,2,x\n")
    info, rows, _evals = lightning.read_metrics(path, "metrics.csv", "r")
    assert [(p.line, p.message) for p in info.problems] == [
        (2, "not a CSV row (a carriage return inside the row); row skipped"), (3, "loss: 'x' is not a number; that cell is left out")]
    assert rows.frame()["line"].tolist() == [3] and (info.lines, info.records, info.skipped) == (3, 1, 1)


def test_a_text_log_that_is_not_utf8_leaves_its_byte_order_mark_out(tmp_path):
    """Read with its undecodable bytes replaced, a log kept its byte order mark: a blank first line was
    counted as text, and a traceback on the first line was not recognised."""
    data = (b"\xef\xbb\xbf\n\x1b[A{'ev\xff\xfeal_loss': '3.902', 'eval_runtime': '0.0108', 'eval_samples_per_second': '2977', "
            b"'eval_steps_per_second': '372.1', 'epoch': '0.1562'}\n")
    info = textlog.read(written(tmp_path, "train.log", data), "train.log")[0]
    assert (info.lines, info.blank, info.text_lines) == (2, 1, 1)
    crash = b"\xef\xbb\xbfTraceback (most recent call last):\n  File \"train.py\", line 1\nValueError: \xff\n"
    _info, messages, _sessions = textlog.read(written(tmp_path, "train.log", crash), "train.log")
    assert [(m.kind, m.evidence.line) for m in messages] == [("traceback", 3)]


def test_a_manifest_counts_its_entries_as_its_records(tmp_path):
    """The mapping that holds the entries counted as one more record ("$:" read as 1 record, no entry)."""
    info, entries = manifest.read(written(tmp_path, "manifest.yaml", b"$:"), "manifest.yaml")
    assert (info.records, entries) == (0, [])
    info, entries = manifest.read(REAL["manifest"], "outputs/manifest.yaml")
    assert info.records == len(entries) == 11


def test_a_metrics_csv_without_a_step_column_counts_the_rows_below_it_as_skipped(tmp_path):
    info, _rows, _evals = lightning.read_metrics(written(tmp_path, "metrics.csv", b"\nepoch,loss\n0,1.0\n\n0,2.0"), "metrics.csv", "r")
    assert (info.lines, info.blank, info.header, info.records, info.skipped) == (5, 2, 1, 0, 2)
    assert [(p.line, p.message) for p in info.problems] == [(2, "no 'step' column in the header; the 2 rows below it are not read")]


@pytest.mark.parametrize("name, read", [
    ("bench.csv", lambda path: bench.read(path, "bench.csv").inputs[0]),
    ("metrics.csv", lambda path: lightning.read_metrics(path, "metrics.csv", "r")[0]),
])
def test_a_csv_that_is_not_utf8_is_not_read_as_lines_and_says_so(tmp_path, name, read):
    info = read(written(tmp_path, name, b"epoch,step,checkpoint,operation\n0,1,\xff,save\n"))
    assert info.lines is None and info.records == 0
    assert [p.line for p in info.problems] == [None] and "not UTF-8 text" in info.problems[0].message


# Every reader's facts reach the run its files are: a run of that format has facts of it.
FACT_FOLDERS = {
    "keras-csv": TESTS / "fixtures" / "keras" / "clean", "dvclive": TESTS / "fixtures" / "dvclive" / "clean",
    "torchtune": TESTS / "fixtures" / "torchtune" / "clean", "llamafactory": LF, "wandb": WANDB / "clean",
    "hydra": TESTS / "fixtures" / "hydra", "hf-trainer": FORMATS / "hf" / "hf-clean",
    "lightning-csv": FORMATS / "lightning" / "pl-clean", "mlflow-sqlite": FORMATS / "mlflow",
}


@pytest.mark.parametrize("fmt", sorted(FACT_FOLDERS))
def test_every_readers_facts_reach_its_runs(fmt):
    campaign = ingest(FACT_FOLDERS[fmt])
    runs = [run for run in campaign.runs.values() if fmt in run.formats]
    assert runs
    for run in runs:
        assert any(f.format == fmt for f in run.facts), run.id
