"""The W&B run-folder reader, on the runs wandb itself wrote (tests/fixtures/wandb) and on damaged copies."""

from __future__ import annotations

import json
import math
import shutil
import struct
import zlib
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reportgen.ingest import wandb
from reportgen.ingest.protowire import fields
from reportgen.model import Evaluation, RunFacts

FIXTURES = Path(__file__).parent / "fixtures" / "wandb"


def _folders(campaign: str) -> list[str]:
    root = FIXTURES / campaign / "wandb"
    return sorted(f"{campaign}/wandb/{p.name}" for p in root.iterdir() if p.is_dir() and not p.is_symlink())


def _members(logs: Path, folder: str) -> list[str]:
    return sorted(p.relative_to(logs).as_posix() for p in (logs / folder).rglob("*") if p.is_file())


def _read(folder: str, logs: Path = FIXTURES, key: str = "run") -> wandb.WandbRun:
    return wandb.read_run(logs, folder, _members(logs, folder), key)


def _frame(run: wandb.WandbRun):
    assert len(run.reading.frames) == 1
    return run.reading.frames[0]


def _log_file(folder: str) -> Path:
    return next((FIXTURES / folder).glob("*.wandb"))


# --- a writer for test-built logs: W&B's framing and a few Record fields, by hand ---------------

def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(number: int, payload: bytes | int) -> bytes:
    if isinstance(payload, int):
        return _varint(number << 3) + _varint(payload)
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _item(key: str, value: object) -> bytes:
    return _field(2, key.encode()) + _field(16, json.dumps(value).encode())


def history(step: int, at: float | None = 1.8e9, **values: object) -> bytes:
    items = [_item(k.replace("__", "/"), v) for k, v in values.items()] + [_item("_step", step)]
    if at is not None:
        items.append(_item("_timestamp", at))
    return _field(2, b"".join(_field(1, i) for i in items) + _field(2, _field(1, step) if step else b""))


def run_record(run_id: str = "abc123", start: int = 1_800_000_000, resume: bool = False, resumed: bool = False,
               starting_step: int = 0) -> bytes:
    body = _field(1, run_id.encode()) + _field(17, _field(1, start))
    body += (_field(24, 1) if resume else b"") + (_field(18, 1) if resumed else b"")
    body += _field(14, starting_step) if starting_step else b""
    return _field(17, body)


def exit_record(code: int = 0, runtime: int = 0) -> bytes:
    return _field(18, (_field(1, code) if code else b"") + (_field(2, runtime) if runtime else b""))


def frame(records: list[bytes]) -> bytes:
    """The transaction log W&B writes for these records: header, 32 KiB blocks, FULL/FIRST/MIDDLE/LAST chunks."""
    out = bytearray(wandb.HEADER)

    def chunk(kind: int, data: bytes) -> None:
        out.extend(struct.pack("<IHB", zlib.crc32(bytes([kind]) + data), len(data), kind) + data)

    for data in records:
        left = wandb.BLOCK - len(out) % wandb.BLOCK
        if left < 7:
            out.extend(b"\x00" * left)
            left = wandb.BLOCK
        if len(data) + 7 <= left:
            chunk(wandb.FULL, data)
            continue
        chunk(wandb.FIRST, data[:left - 7])
        data = data[left - 7:]
        while len(data) + 7 > wandb.BLOCK:
            chunk(wandb.MIDDLE, data[:wandb.BLOCK - 7])
            data = data[wandb.BLOCK - 7:]
        chunk(wandb.LAST, data)
    return bytes(out)


def _built(tmp_path: Path, records: list[bytes], debug: str | None = None) -> tuple[Path, str]:
    folder = "wandb/run-20270101_000000-abc123"
    (tmp_path / folder).mkdir(parents=True)
    (tmp_path / folder / "run-abc123.wandb").write_bytes(frame(records))
    if debug is not None:
        (tmp_path / folder / "logs").mkdir()
        (tmp_path / folder / "logs" / "debug.log").write_text(debug)
    return tmp_path, folder


DEBUG_START = ("2027-01-01 00:00:00,100 INFO    MainThread:7931 [wandb_setup.py:_flush():81] Current SDK version is 0.31.0\n"
               "2027-01-01 00:00:00,200 INFO    MainThread:7931 [wandb_init.py:init():1015] run started\n")
DEBUG_EXIT = "2027-01-01 00:01:00,000 INFO    MainThread:7931 [wandb_run.py:_atexit_cleanup():2495] got exitcode: {}\n"


# --- the real runs --------------------------------------------------------------------------------

def test_a_clean_run_reads_every_step_metric_and_its_exit():
    (folder,) = _folders("clean")
    run = _read(folder)
    frame_ = _frame(run)
    train = frame_[frame_["kind"] == "train"]
    assert list(train["step"]) == list(range(60))
    assert train["loss"].iloc[0] == pytest.approx(2.1)
    assert train["loss"].iloc[59] == pytest.approx(2.0 * math.exp(-59 / 50) + 0.1)
    assert train["lr"].iloc[40] == pytest.approx(3e-3 * (1 - 40 / 400))
    evals = frame_[frame_["kind"] == "eval"]
    assert list(evals["step"]) == [19, 39, 59]
    assert evals["eval/loss"].iloc[0] == pytest.approx(2.0 * math.exp(-19 / 50) + 0.15)
    assert train["eval/loss"].isna().all() and evals["loss"].isna().all()
    assert train["ts"].notna().all() and train["ts"].is_monotonic_increasing
    assert [e.step for e in run.reading.events if isinstance(e, Evaluation)] == [19, 39, 59]
    facts = run.facts
    assert (facts.first_step, facts.last_step) == (0, 59)
    assert facts.status == "completed" and facts.reason == "the run's exit record says exit code 0"
    assert facts.exit_code == 0
    assert facts.config == {"lr": 3e-3, "batch_size": 8, "model.width": 16, "model.layers": 2}
    assert facts.host == "vm" and facts.format == "wandb"
    assert facts.started_at <= train["ts"].iloc[0] <= train["ts"].iloc[-1] <= facts.ended_at
    assert facts in run.reading.events
    assert run.run_id == folder.rsplit("-", 1)[1] == run.name
    assert not run.resumed and run.starting_step is None
    log = next(i for i in run.reading.inputs if i.path.endswith(".wandb"))
    assert log.problems == [] and log.skipped == 0 and not log.cut_off
    assert "60 history" in log.notes[0] and "1 stats" in log.notes[0]
    assert {"stats", "cpu", "memory"}.isdisjoint(frame_.columns)  # system metrics are counted, not metrics


def test_the_files_read_are_claimed_and_output_log_is_left_to_the_text_reader():
    (folder,) = _folders("clean")
    run = _read(folder)
    names = sorted(p.rsplit("/", 1)[1] for p in run.claimed)
    assert names == ["debug-internal.log", "debug.log", "requirements.txt", f"run-{run.run_id}.wandb"]
    assert sorted(i.path for i in run.reading.inputs) == sorted(run.claimed)
    debug = next(i for i in run.reading.inputs if i.path.endswith("/debug.log"))
    assert debug.lines == debug.text_lines + debug.blank and debug.records == 1  # its `got exitcode: 0`


def test_a_killed_run_keeps_what_was_written_and_is_interrupted():
    killed, _resumed = _folders("resumed")
    run = _read(killed)
    log = next(i for i in run.reading.inputs if i.path.endswith(".wandb"))
    assert log.cut_off and log.skipped == 1
    assert "cut off" in log.problems[0].message and "byte" in log.problems[0].message
    train = _frame(run)[lambda f: f["kind"] == "train"]
    assert list(train["step"]) == list(range(141))  # the block wandb-core had not written when killed at 150 is lost
    assert run.facts.status == "interrupted"
    assert "ends mid-record" in run.facts.reason and "no exit record" in run.facts.reason
    assert run.facts.exit_code is None and run.facts.ended_at is None
    assert not run.resumed


def test_a_record_longer_than_a_block_written_by_wandb_is_read_whole():
    killed, _resumed = _folders("resumed")
    log = next(i for i in _read(killed).reading.inputs if i.path.endswith(".wandb"))
    assert [p.message for p in log.problems if "cut off" not in p.message] == []
    assert "283 summary" in log.notes[0]


def test_a_resumed_run_has_the_killed_runs_id_in_a_new_folder():
    killed, resumed = _folders("resumed")
    first, second = _read(killed), _read(resumed)
    assert first.run_id == second.run_id == "kill1234"
    assert first.name == second.name == "wandb-fixture"
    assert second.resumed and second.starting_step == 150
    assert "resume" in second.resume_reason and "150" in second.resume_reason
    assert (second.facts.first_step, second.facts.last_step) == (150, 199)
    assert second.facts.status == "completed"


def test_the_older_python_writer_is_read_the_same_way():
    (folder,) = _folders("older")
    run = _read(folder)
    train = _frame(run)
    assert list(train["step"]) == list(range(40))
    assert list(train["loss"]) == pytest.approx([1 / (s + 1) for s in range(40)])
    assert run.facts.status == "completed" and run.facts.config == {"lr": 1e-3, "batch_size": 16, "optimizer": "adamw"}
    log = next(i for i in run.reading.inputs if i.path.endswith(".wandb"))
    assert log.problems == [] and log.records == 51


def test_a_folder_with_only_files_gives_what_its_files_say():
    (folder,) = _folders("files-only")
    run = _read(folder)
    assert run.reading.frames == []
    facts = run.facts
    assert facts.started_at is not None and facts.started_at.tzinfo is not None
    assert facts.host == "vm"
    assert facts.config == {"lr": 1e-3, "batch_size": 16, "optimizer": "adamw"}
    assert facts.status is None and facts.exit_code is None  # the end is debug.log's to tell, at its line:
    ending = run.ending
    assert ending.status == "completed" and ending.exit_code == 0
    assert "debug.log line" in ending.reason and "got exit code 0" in ending.reason
    assert ending.evidence.path.endswith("/logs/debug.log") and ending.evidence.line is not None
    assert ending in run.reading.events
    assert run.run_id == folder.rsplit("-", 1)[1]
    assert all(i.problems == [] for i in run.reading.inputs)


def test_a_summary_without_a_log_is_one_row_at_its_last_step(tmp_path):
    (folder,) = _folders("files-only")
    shutil.copytree(FIXTURES / folder, tmp_path / folder)
    summary = {"_step": 99, "_timestamp": 1.8e9, "_runtime": 12.5, "loss": 0.25, "eval": {"loss": 0.3},
               "samples": {"_type": "table-file", "path": "x"}, "note": "text", "_wandb": {"runtime": 12}}
    (tmp_path / folder / "files" / "wandb-summary.json").write_text(json.dumps(summary))
    run = _read(folder, tmp_path)
    frame_ = _frame(run)
    assert list(frame_["kind"]) == ["summary"] and list(frame_["step"]) == [99]
    assert frame_["loss"].iloc[0] == 0.25 and frame_["eval/loss"].iloc[0] == 0.3
    assert "samples/path" not in frame_.columns and "note" not in frame_.columns
    assert run.facts.last_step == 99


def test_config_yaml_keeps_plain_values_and_leaves_out_wandbs_own(tmp_path):
    (folder,) = _folders("files-only")
    shutil.copytree(FIXTURES / folder, tmp_path / folder)
    (tmp_path / folder / "files" / "config.yaml").write_text(
        "wandb_version: 1\n\n_wandb:\n  desc: null\n  value:\n    cli_version: 0.16.6\n"
        "lr:\n  desc: null\n  value: 0.1\nbetas:\n  desc: null\n  value: [0.9, 0.99]\nbare: 3\n")
    run = _read(folder, tmp_path)
    assert run.facts.config == {"lr": 0.1, "betas": [0.9, 0.99]}
    info = next(i for i in run.reading.inputs if i.path.endswith("config.yaml"))
    assert ["'bare' is not {value: ..., desc: ...}" in p.message for p in info.problems] == [True]


# --- damage -------------------------------------------------------------------------------------

def test_a_flipped_byte_is_a_located_problem_and_the_rest_is_read(tmp_path):
    (folder,) = _folders("clean")
    shutil.copytree(FIXTURES / folder, tmp_path / folder)
    path = next((tmp_path / folder).glob("*.wandb"))
    data = bytearray(path.read_bytes())
    pos, histories = len(wandb.HEADER), 0
    while True:  # to the 21st history record (Record field 2): the file is one block of FULL chunks
        _crc, length, kind = struct.unpack_from("<IHB", data, pos)
        assert kind == wandb.FULL
        histories += any(n == 2 for n, *_ in fields(bytes(data), pos + 7, pos + 7 + length))
        if histories == 21:
            break
        pos += 7 + length
    data[pos + 7 + length // 2] ^= 0x20
    path.write_bytes(bytes(data))
    run = _read(folder, tmp_path)
    log = next(i for i in run.reading.inputs if i.path.endswith(".wandb"))
    assert log.skipped == 1 and len(log.problems) == 1
    message = log.problems[0].message
    assert "CRC" in message and f"record {log.problems[0].line} at byte" in message
    steps = list(_frame(run)[lambda f: f["kind"] == "train"]["step"])
    assert steps == [s for s in range(60) if s != 20]
    assert run.facts.status == "completed"  # the exit record is after the damage


@pytest.mark.parametrize("campaign", ["older", "clean"])
def test_every_prefix_of_a_real_log_keeps_the_records_before_the_cut(tmp_path, campaign):
    folder = _folders(campaign)[0]
    data = _log_file(folder).read_bytes()
    path = tmp_path / "run-x.wandb"
    before = -1
    stride = 1 if len(data) < 8000 else 13
    for cut in [*range(0, len(data), stride), len(data)]:
        path.write_bytes(data[:cut])
        info, log = wandb.read_log_file(path, "run-x.wandb", "x")
        if cut < len(wandb.HEADER):
            assert info.records == 0
            continue
        assert info.records + info.skipped >= before  # never fewer records for a longer prefix
        before = info.records
        assert len(log.steps) <= len(set(log.steps)) and log.steps == sorted(log.steps)
        if cut < len(data):
            assert info.problems == [] or info.cut_off or all("cut off" in p.message for p in info.problems)
    assert not info.cut_off and info.problems == []


def test_a_record_spanning_blocks_is_reassembled(tmp_path):
    big = history(7, loss=0.5, sample="x" * 80_000)  # FIRST, two MIDDLEs, LAST
    logs, folder = _built(tmp_path, [run_record(), history(6, loss=0.6), big, history(8, loss=0.4), exit_record()])
    raw = (logs / folder / "run-abc123.wandb").read_bytes()
    assert raw.count(bytes([wandb.MIDDLE])) >= 1 and len(raw) > 2 * wandb.BLOCK
    run = _read(folder, logs)
    frame_ = _frame(run)
    assert list(frame_["step"]) == [6, 7, 8] and list(frame_["loss"]) == [0.6, 0.5, 0.4]
    assert "sample" not in frame_.columns  # a string is no metric
    log = run.reading.inputs[0]
    assert log.problems == [] and log.records == 5


def test_a_damaged_middle_chunk_skips_only_its_record(tmp_path):
    big = history(7, loss=0.5, sample="x" * 80_000)
    logs, folder = _built(tmp_path, [run_record(), history(6, loss=0.6), big, history(8, loss=0.4), exit_record()])
    path = logs / folder / "run-abc123.wandb"
    data = bytearray(path.read_bytes())
    data[wandb.BLOCK + 5000] ^= 0x01  # inside the first MIDDLE chunk
    path.write_bytes(bytes(data))
    run = _read(folder, logs)
    assert list(_frame(run)["step"]) == [6, 8]
    log = run.reading.inputs[0]
    assert log.skipped == 1 and len(log.problems) == 1 and "record 3 at byte" in log.problems[0].message


def test_non_finite_values_are_kept_and_bad_steps_and_times_are_located(tmp_path):
    records = [run_record(), history(1, loss=float("nan")), history(2, loss=float("inf")),
               history(3, at=1e13, loss=0.3), _field(2, _field(1, _item("_step", "x")) + _field(1, _item("loss", 1)))]
    logs, folder = _built(tmp_path, records)
    run = _read(folder, logs)
    frame_ = _frame(run)
    assert list(frame_["step"]) == [1, 2, 3]
    assert math.isnan(frame_["loss"].iloc[0]) and frame_["loss"].iloc[1] == math.inf
    assert frame_["ts"].isna().iloc[2]
    messages = [(p.line, p.message) for p in run.reading.inputs[0].problems]
    assert any(line == 5 and "_step" in m for line, m in messages)
    assert any(line == 4 and "_timestamp" in m for line, m in messages)


def test_unknown_record_types_are_counted_not_errors(tmp_path):
    logs, folder = _built(tmp_path, [run_record(), _field(150, b"\x08\x01"), history(0, loss=1.0)])
    log = _read(folder, logs).reading.inputs[0]
    assert log.problems == [] and log.records == 3 and "1 other" in log.notes[0]


# --- statuses, and where they must not be set -----------------------------------------------------

def test_a_non_zero_exit_code_is_interrupted(tmp_path):
    logs, folder = _built(tmp_path, [run_record(), history(0, loss=1.0), exit_record(code=3, runtime=60)])
    facts = _read(folder, logs).facts
    assert (facts.status, facts.exit_code) == ("interrupted", 3)
    assert facts.reason == "the run's exit record says exit code 3"
    assert facts.ended_at == facts.started_at.replace(second=facts.started_at.second) + (facts.ended_at - facts.started_at)
    assert (facts.ended_at - facts.started_at).total_seconds() == 60


def test_a_log_ending_between_records_without_debug_log_has_no_status(tmp_path):
    logs, folder = _built(tmp_path, [run_record(), history(0, loss=1.0)])
    facts = _read(folder, logs).facts
    assert facts.status is None and facts.reason is None  # still running, or its end lost: nothing tells


def test_a_debug_log_without_the_exit_hook_says_the_process_died(tmp_path):
    logs, folder = _built(tmp_path, [run_record(), history(0, loss=1.0)], debug=DEBUG_START)
    ending = _read(folder, logs).ending
    assert ending.status == "interrupted" and "without W&B's 'got exitcode' line" in ending.reason
    assert ending.evidence.path.endswith("/logs/debug.log") and ending.evidence.line == 2


def test_a_debug_log_exit_code_stands_when_the_log_has_no_exit_record(tmp_path):
    logs, folder = _built(tmp_path, [run_record(), history(0, loss=1.0)], debug=DEBUG_START + DEBUG_EXIT.format(0))
    ending = _read(folder, logs).ending
    assert ending.status == "completed" and ending.exit_code == 0 and "debug.log line 3" in ending.reason
    assert ending.evidence.path.endswith("/logs/debug.log") and ending.evidence.line == 3


def test_asking_to_resume_is_no_resume_when_history_starts_at_zero(tmp_path):
    logs, folder = _built(tmp_path, [run_record(resume=True), history(0, loss=1.0), history(1, loss=0.9)])
    run = _read(folder, logs)
    assert not run.resumed and run.starting_step is None and run.resume_reason is None


def test_the_run_record_resumed_flag_and_starting_step_are_taken(tmp_path):
    logs, folder = _built(tmp_path, [run_record(resumed=True, starting_step=40), history(40, loss=1.0)])
    run = _read(folder, logs)
    assert run.resumed and run.starting_step == 40 and "W&B resumed the run at step 40" in run.resume_reason


# --- recognition ----------------------------------------------------------------------------------

def test_every_file_read_from_the_fixtures_is_recognised_by_its_content():
    for campaign in ("clean", "resumed", "older", "files-only"):
        for folder in _folders(campaign):
            for rel in _read(folder).claimed:
                kind = wandb.recognise(rel, (FIXTURES / rel).read_bytes()[:8192])
                assert kind == (wandb.LOG_KIND if rel.endswith(".wandb") else wandb.FILE_KIND), rel


def test_a_transaction_log_is_recognised_by_its_header_whatever_its_name():
    data = _log_file(_folders("clean")[0]).read_bytes()[:4096]
    assert wandb.recognise("somewhere/else/copy.bin", data) == wandb.LOG_KIND
    assert wandb.recognise("wandb/run-20270101_000000-x/run-x.wandb", b"PK\x03\x04 not a log") is None
    assert wandb.recognise("run-x.wandb", b":W&B\x00\x00\x00") is None  # the ident without W&B's magic


def test_files_are_recognised_only_inside_a_run_folder_and_with_fitting_content():
    run = "wandb/run-20270101_000000-abc"
    meta = b'{"os": "Linux", "startedAt": "2027-01-01T00:00:00.000000", "host": "gpu-1"}'
    assert wandb.recognise(f"{run}/files/wandb-metadata.json", meta) == wandb.FILE_KIND
    assert wandb.recognise("exports/wandb-metadata.json", meta) is None
    assert wandb.recognise(f"{run}/files/wandb-metadata.json", b'{"name": "a model card"}') is None
    assert wandb.recognise(f"{run}/other/wandb-metadata.json", meta) is None
    assert wandb.recognise(f"{run}/files/wandb-summary.json", b'{"accuracy": 1}') is None
    assert wandb.recognise(f"{run}/files/config.yaml", b"lr: 0.1\nbatch: 8\n") is None
    assert wandb.recognise(f"{run}/files/requirements.txt", b"Please install these by hand, then run it.\n") is None
    assert wandb.recognise(f"{run}/files/requirements.txt", b"torch==2.13.0\nnumpy>=2\n# pinned\nrich\n") == wandb.FILE_KIND
    assert wandb.recognise(f"{run}/files/output.log", b"step 1 loss 0.5\n") is None
    assert wandb.recognise(f"{run}/logs/debug.log", b"plain text that W&B did not write\n") is None


def test_run_folder_is_the_innermost_run_folder_on_the_path():
    assert wandb.run_folder("a/wandb/run-20261204_210017-6agktorp/files/x.json") == "a/wandb/run-20261204_210017-6agktorp"
    assert wandb.run_folder("wandb/offline-run-20261204_210017-ab_c-1/run-ab_c-1.wandb") == \
        "wandb/offline-run-20261204_210017-ab_c-1"
    assert wandb.run_folder("wandb/run-20261204_210017-6agktorp") is None  # the folder itself is no file in it
    assert wandb.run_folder("wandb/latest-run/files/config.yaml") is None
    assert wandb.run_folder("runs/run-12-x/files/config.yaml") is None


# --- any bytes --------------------------------------------------------------------------------------

@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.binary(max_size=3000))
def test_any_bytes_after_a_valid_header_are_read_without_an_exception(tmp_path, body):
    path = tmp_path / "run-x.wandb"
    path.write_bytes(wandb.HEADER + body)
    info, log = wandb.read_log_file(path, "run-x.wandb", "x")
    assert info.records >= 0 and info.skipped >= 0
    log.rows.frame()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damaged_real_logs_are_read_without_an_exception(tmp_path, data):
    folder = data.draw(st.sampled_from([f for c in ("clean", "resumed", "older") for f in _folders(c)]))
    raw = bytearray(_log_file(folder).read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    path = tmp_path / "run-x.wandb"
    path.write_bytes(bytes(raw[:cut]))
    info, log = wandb.read_log_file(path, "run-x.wandb", "x")
    frame_ = log.rows.frame()
    assert len(frame_) >= 0 and all(0 <= s <= 10**15 for s in log.steps)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(sorted(wandb.FILES | wandb.LOGS)), body=st.binary(max_size=2000))
def test_any_bytes_in_a_run_folders_files_give_a_result(tmp_path, name, body):
    folder = "wandb/run-20270101_000000-abc123"
    where = "logs" if name in wandb.LOGS else "files"
    path = tmp_path / folder / where / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(body)
    run = _read(folder, tmp_path)
    for info in run.reading.inputs:
        if info.lines is not None:
            assert info.text_lines + info.blank == info.lines


# --- in a campaign: which folders are which runs --------------------------------------------------

def _campaign(logs: Path):
    from reportgen.ingest import ingest
    return ingest(logs)


def _two_processes(tmp_path: Path, resumed: bool) -> Path:
    """Two folders of W&B run abc123: the second started an hour later, resumed (or not) at step 40."""
    for folder, start, records in (
        ("wandb/run-20270101_000000-abc123", 1_800_000_000, [history(s, 1_800_000_000 + s, loss=2.0 - s / 100)
                                                              for s in range(50)]),
        ("wandb/run-20270101_010000-abc123", 1_800_003_600, [history(s, 1_800_003_600 + s, loss=2.0 - s / 100)
                                                              for s in range(40 if resumed else 0, 60)]),
    ):
        (tmp_path / folder).mkdir(parents=True)
        run = run_record(start=start, resumed=resumed, starting_step=40 if resumed else 0)
        (tmp_path / folder / "run-abc123.wandb").write_bytes(frame([run, *records, exit_record()]))
    return tmp_path


def test_a_resumed_run_is_a_second_process_that_continues_the_killed_one():
    campaign = _campaign(FIXTURES / "resumed")
    assert sorted(campaign.runs) == ["wandb-fixture", "wandb-fixture-2"]
    first, second = campaign.runs["wandb-fixture"], campaign.runs["wandb-fixture-2"]
    assert first.resumes is None and second.resumes == "wandb-fixture"
    decision = next(d for d in second.identity if d.decision == "resumes")
    assert decision.rule == "wandb-resume" and decision.other == "wandb-fixture"
    assert "kill1234" in decision.text and decision.evidence[0].path.endswith("210432-kill1234/run-kill1234.wandb")
    assert (first.first_step, first.last_step, second.first_step, second.last_step) == (0, 140, 150, 199)
    assert [f.status for f in first.facts if f.status] == ["interrupted"]
    assert [f.status for f in second.facts if f.status] == ["completed"]


def test_the_run_records_resume_flag_ties_two_folders_of_one_id(tmp_path):
    campaign = _campaign(_two_processes(tmp_path, resumed=True))
    assert sorted(campaign.runs) == ["abc123", "abc123-2"]
    assert campaign.runs["abc123-2"].resumes == "abc123" and campaign.runs["abc123-2"].resumed_at_step == 40


def test_counter_example_one_id_in_two_folders_without_a_resume_is_not_a_continuation(tmp_path):
    campaign = _campaign(_two_processes(tmp_path, resumed=False))
    assert sorted(campaign.runs) == ["abc123", "abc123-2"]
    assert all(run.resumes is None for run in campaign.runs.values())
    assert not any(d.decision == "resumes" for run in campaign.runs.values() for d in run.identity)


def test_counter_example_a_resumed_folder_alone_continues_nothing_and_says_so(tmp_path):
    shutil.copytree(FIXTURES / "resumed", tmp_path / "logs", symlinks=True)
    shutil.rmtree(tmp_path / "logs" / "wandb" / "offline-run-20261204_210431-kill1234")
    campaign = _campaign(tmp_path / "logs")
    (run,) = campaign.runs.values()
    assert run.id == "wandb-fixture" and run.resumes is None
    log = next(i for i in campaign.inputs if i.path.endswith(".wandb"))
    assert any("no earlier folder of that run is in LOGS" in note for note in log.notes)


def test_wandbs_links_beside_the_run_folders_are_listed_not_read_as_text_logs():
    campaign = _campaign(FIXTURES / "clean")
    listed = {i.path: i for i in campaign.inputs}
    assert listed["wandb/debug.log"].format == "wandb" and listed["wandb/debug.log"].records == 0
    assert "latest run" in listed["wandb/debug.log"].notes[0]
    assert listed["wandb/latest-run"].format is None  # a link to a folder: listed, never followed
    (run,) = campaign.runs.values()
    assert [f.exit_code for f in run.facts if f.exit_code is not None] == [0]
    assert all(f.evidence.path.startswith("wandb/offline-run-") for f in run.facts)  # never from the links


def test_the_machine_a_run_ran_on_comes_from_its_metadata_but_not_its_gpu_time(tmp_path):
    """wandb-metadata.json on a GPU machine names the model and how many GPUs the machine showed (the
    fixture ran on a CPU: the two fields are added as wandb writes them). That count is not the run's:
    a run may see GPUs it does not use, so its GPU time stays on the config's count."""
    from reportgen.analysis.runs import machine, run_time
    from reportgen.ingest import ingest
    from reportgen.plan.load import load_plan
    (folder,) = _folders("clean")
    shutil.copytree(FIXTURES / folder, tmp_path / folder)
    meta = tmp_path / folder / "files" / "wandb-metadata.json"
    written = FIXTURES / _folders("files-only")[0] / "files" / "wandb-metadata.json"
    meta.write_text(json.dumps({**json.loads(written.read_text()), "gpu": "NVIDIA A100-SXM4-40GB", "gpu_count": 8}))
    campaign = ingest(tmp_path)
    (run,) = campaign.runs.values()
    found = machine(run)
    assert (found.gpu, found.gpu_count, found.host, found.exit_code, found.devices) == (
        "NVIDIA A100-SXM4-40GB", 8, "vm", 0, None)
    assert [e.path for e in found.evidence] == [f"{folder}/run-{folder.rsplit('-', 1)[1]}.wandb"]
    plan = load_plan(Path(__file__).parents[1] / "sample_logs" / "plan.yaml").plan
    assert run_time(run, plan, campaign.messages).gpus == 1


# The shapes of a public W&B folder (wandb 0.25, online): config.yaml indented by four spaces, a
# summary without a transaction log, wandb-core's debug-internal.log with zoned times.
CONFIG_025 = """_wandb:
    value:
        cli_version: 0.25.0
        m: []
batch_size:
    value: 8
hidden_dim:
    value: 128
optim:
    value:
        lr: 0.001
"""


def test_a_config_yaml_indented_by_four_spaces_is_read(tmp_path):
    (folder,) = _folders("files-only")
    shutil.copytree(FIXTURES / folder, tmp_path / folder)
    (tmp_path / folder / "files" / "config.yaml").write_text(CONFIG_025)
    assert wandb.recognise(f"{folder}/files/config.yaml", CONFIG_025.encode()) == wandb.FILE_KIND
    assert _read(folder, tmp_path).facts.config == {"batch_size": 8, "hidden_dim": 128, "optim.lr": 0.001}


def test_counter_example_a_plain_yaml_named_config_yaml_is_not_wandbs():
    (folder,) = _folders("files-only")
    assert wandb.recognise(f"{folder}/files/config.yaml", b"batch_size: 8\nhidden_dim: 128\noptim:\n  lr: 0.001\n") is None


def test_a_summary_alone_gives_the_last_step_and_no_first_step(tmp_path):
    from reportgen.ingest import ingest
    (folder,) = _folders("files-only")
    shutil.copytree(FIXTURES / folder, tmp_path / folder)
    (tmp_path / folder / "files" / "wandb-summary.json").write_text(json.dumps({"_step": 68559, "loss": 0.25}))
    (run,) = ingest(tmp_path).runs.values()
    assert (run.first_step, run.last_step) == (None, 68559)


def test_counter_example_a_history_gives_its_first_step():
    from reportgen.ingest import ingest
    (run,) = ingest(FIXTURES / "clean").runs.values()
    assert (run.first_step, run.last_step) == (0, 59)


def test_a_killed_run_is_last_seen_at_the_last_time_of_wandb_cores_log():
    from reportgen.ingest import ingest
    campaign = ingest(FIXTURES / "resumed")
    killed = campaign.runs["wandb-fixture"]
    internal = sorted((FIXTURES / "resumed").glob("wandb/offline-run-*-kill1234/logs/debug-internal.log"))[0]
    lines = internal.read_text().strip().splitlines()
    last = datetime.fromisoformat(json.loads(lines[-1])["time"])
    (seen,) = [f for f in killed.facts if f.last_seen_at is not None]
    assert seen.last_seen_at == last and seen.evidence.line == len(lines)
    assert seen.evidence.path == internal.relative_to(FIXTURES / "resumed").as_posix()
    assert killed.ended_at is None and killed.last_seen_at >= last  # its last history row may come later


def test_counter_example_an_older_debug_internal_log_without_zones_gives_no_last_seen(tmp_path):
    logs, folder = _built(tmp_path, [run_record(), history(0, loss=1.0)], debug=DEBUG_START)
    (logs / folder / "logs" / "debug-internal.log").write_text(
        "2027-01-01 00:00:05,000 INFO    HandlerThread:7931 [handler.py:handle_request():146] handle_request: status\n")
    run = _read(folder, logs)
    assert [f for f in run.reading.events if isinstance(f, RunFacts) and f.last_seen_at is not None] == []
