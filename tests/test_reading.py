"""How files are read: through one boundary (regular files only, never waiting on a pipe), within a
budget per file, with numbers and times bounded at each reader's edge, and an MLflow store's WAL
seen without writing to LOGS. Failures that are reportgen's own name what it was doing."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import struct
import sys
import warnings
from pathlib import Path

import google_crc32c
import pytest
from click.testing import CliRunner

from reportgen import cli as cli_module
from reportgen.boundary import NotRegular, open_file, read_file, refusal
from reportgen.cli import cli
from reportgen.ingest import bench, common, hf, ingest, native, tensorboard, textlog
from reportgen.model import MAX_PROBLEMS_PER_FILE

SAMPLE = Path(__file__).parent.parent / "sample_logs"
FORMATS = Path(__file__).parent / "fixtures" / "formats"
TB_CLEAN = next((FORMATS / "tensorboard" / "tb-clean").glob("events.out.tfevents.*"))


def metric(step: int) -> str:
    return json.dumps({"ts": "2026-11-02T09:00:00Z", "type": "metric", "run": "r1", "step": step, "metrics": {"loss": 1.0}})


def digest(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


# --- the boundary -----------------------------------------------------------------------------

def test_a_pipe_is_refused_at_once_and_a_file_is_opened(tmp_path):
    pipe = tmp_path / "events.jsonl"
    os.mkfifo(pipe)
    with pytest.raises(NotRegular):
        open_file(pipe)  # no writer: a blocking open would wait forever
    assert refusal(tmp_path, pipe) == "not a regular file; not read"
    plain = tmp_path / "train.log"
    plain.write_text("step 1\n")
    with open_file(plain) as handle:
        assert handle.read() == b"step 1\n"
    assert refusal(tmp_path, plain) is None


def test_a_link_out_of_logs_is_refused_and_one_inside_is_not(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (tmp_path / "secret.log").write_text("outside\n")
    (logs / "real.log").write_text("inside\n")
    (logs / "out.log").symlink_to(tmp_path / "secret.log")
    (logs / "in.log").symlink_to(logs / "real.log")
    assert refusal(logs, logs / "out.log") == "a link to a file outside LOGS; not read"
    assert refusal(logs, logs / "in.log") is None


def test_a_budget_cut_ends_at_the_last_whole_line(tmp_path):
    path = tmp_path / "x.log"
    path.write_bytes(b"aaaa\nbbbb\ncccc\n")
    read = read_file(path, 12, whole_lines=True)
    assert read.data == b"aaaa\nbbbb\n" and not read.whole and read.size == 15
    assert read_file(path, 15).whole  # counter-example: a file of exactly the budget is read whole


# --- budgets ----------------------------------------------------------------------------------

def test_an_event_log_past_its_budget_is_read_to_its_last_whole_line_and_says_so(tmp_path, monkeypatch):
    logs = tmp_path / "logs"
    logs.mkdir()
    lines = [metric(step) for step in range(1, 201)]
    (logs / "events.jsonl").write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(common, "LOG_BUDGET", sum(len(line) + 1 for line in lines[:50]) + 10)
    log = native.read(logs / "events.jsonl", "events.jsonl")
    [problem] = log.input.problems
    assert problem.line is None and problem.message.startswith("only the first") and "lines after that are not read" in problem.message
    assert log.input.records == 50 and log.input.skipped == 0 and not log.input.cut_off
    monkeypatch.setattr(common, "LOG_BUDGET", 1 << 20)
    whole = native.read(logs / "events.jsonl", "events.jsonl")  # counter-example: within the budget
    assert whole.input.problems == [] and whole.input.records == 200


def test_a_text_log_past_its_budget_is_not_taken_for_a_cut_off_one(tmp_path, monkeypatch):
    path = tmp_path / "train.log"
    path.write_text("".join(f"step {i}/100 loss={1 / i:.4f}\n" for i in range(1, 101)))
    monkeypatch.setattr(textlog, "TEXT_BUDGET", 300)
    info, _messages, _sessions = textlog.read(path, "train.log")
    assert any(p.message.startswith("only the first") for p in info.problems)
    assert not info.cut_off


def test_a_tensorboard_file_past_its_budget_is_no_writer_stopped_mid_record(tmp_path, monkeypatch):
    monkeypatch.setattr(tensorboard, "LOG_BUDGET", TB_CLEAN.stat().st_size // 2)
    info, frame = tensorboard.read(TB_CLEAN, TB_CLEAN.name, "r")
    [problem] = info.problems
    assert problem.message.startswith(f"only the first {TB_CLEAN.stat().st_size // 2:,} bytes of {TB_CLEAN.stat().st_size:,} bytes were read")
    assert not info.cut_off and info.skipped == 0 and len(frame) > 0
    monkeypatch.setattr(tensorboard, "LOG_BUDGET", 1 << 30)
    whole_info, whole = tensorboard.read(TB_CLEAN, TB_CLEAN.name, "r")
    assert whole_info.problems == [] and len(whole) > len(frame)


def test_a_trainer_state_past_its_budget_keeps_the_entries_before_and_is_not_cut_off(tmp_path, monkeypatch):
    source = FORMATS / "hf" / "hf-clean" / "trainer_state.json"
    size = source.stat().st_size
    monkeypatch.setattr(hf, "TEXT_BUDGET", size // 2)
    info, rows, _events, _state = hf.read_state(source, "trainer_state.json", "r")
    assert any(p.message.startswith("only the first") for p in info.problems)
    assert not info.cut_off and len(rows) > 0
    monkeypatch.setattr(hf, "TEXT_BUDGET", size)
    whole, all_rows, _e, _s = hf.read_state(source, "trainer_state.json", "r")
    assert whole.problems == [] and len(all_rows) > len(rows)


def test_a_document_past_its_budget_is_not_read_at_all(tmp_path, monkeypatch):
    path = tmp_path / "hparams.yaml"
    path.write_text("lr: 0.001\nmax_steps: 100\n")
    monkeypatch.setattr(common, "DOCUMENT_BUDGET", 10)
    info = common.InputFile("hparams.yaml", "x")
    assert common.read_mapping(path, info, "hparams") is None
    assert [p.message for p in info.problems] == ["25 bytes: larger than reportgen reads for one document (10 bytes); not read"]


# --- numbers and times at the readers' edges --------------------------------------------------

def _with_wall_times(source: Path, walls: dict[int, float]) -> bytes:
    """A real event file with the wall time of some records replaced (their CRCs made right again)."""
    data, out, pos, record = source.read_bytes(), bytearray(), 0, 0
    while pos < len(data):
        record += 1
        length = struct.unpack_from("<Q", data, pos)[0]
        body = bytearray(data[pos + 12:pos + 12 + length])
        if record in walls and body[0] == 0x09:
            body[1:9] = struct.pack("<d", walls[record])
        c = google_crc32c.value(bytes(body))
        out += data[pos:pos + 12] + body + struct.pack("<I", (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF)
        pos += 12 + length + 4
    return bytes(out)


def test_tensorboard_wall_times_that_are_no_time_are_one_problem_and_their_values_are_kept(tmp_path):
    path = tmp_path / TB_CLEAN.name
    path.write_bytes(_with_wall_times(TB_CLEAN, {3: 1e300, 4: float("inf"), 5: float("nan"), 6: -5.0}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "invalid value encountered in cast" was one
        info, frame = tensorboard.read(path, path.name, "r")
    [problem] = info.problems
    assert problem.message.startswith("4 value(s) with a wall time that is no time between 1970 and 2199 (first: 1e+300")
    _clean_info, clean = tensorboard.read(TB_CLEAN, TB_CLEAN.name, "r")
    assert len(frame) == len(clean) and frame["ts"].isna().sum() == 4 + clean["ts"].isna().sum()
    assert _clean_info.problems == []  # counter-example: real wall times are no problem


def test_benchmark_records_with_numbers_and_times_out_of_bounds_are_skipped_at_their_line(tmp_path):
    records = [
        {"checkpoint": "a", "operation": "save", "time": "2026-11-02T09:00:00Z", "seconds": 5, "bytes": 10 ** 400},
        {"checkpoint": "a", "operation": "save", "time": "9999-12-31T23:59:59+00:00", "seconds": 5},
        {"checkpoint": "a", "operation": "save", "time": "0001-01-01T00:00:00-05:00", "seconds": 5},
        {"checkpoint": "a", "operation": "save", "time": "2026-11-02T09:00:00Z", "seconds": 5, "step": 10 ** 30},
        {"checkpoint": "a", "operation": "save", "time": "2026-11-02T09:00:00Z", "seconds": 5, "bytes": 10 ** 9, "step": 10},
    ]
    path = tmp_path / "checkpoint-bench.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    [info] = (reading := bench.read(path, path.name)).inputs
    assert [p.line for p in info.problems] == [1, 2, 3, 4]
    assert "larger than any count" in info.problems[0].message and "outside 1970-2199" in info.problems[1].message
    assert info.records == 1 and info.skipped == 4  # the last record, within bounds, is read
    [op] = reading.events
    assert op.bytes == 10 ** 9 and op.step == 10
    csv = tmp_path / "bench.csv"
    csv.write_text("checkpoint,operation,time,seconds,bytes\n"
                   f"a,save,2026-11-02T09:00:00Z,5,{'9' * 500}\na,save,2026-11-02T09:00:00Z,1e400,5\na,save,2026-11-02T09:00:00Z,3,5\n")
    [csv_info] = bench.read(csv, csv.name).inputs
    assert [p.line for p in csv_info.problems] == [2, 3] and csv_info.records == 1


# --- MLflow WAL -------------------------------------------------------------------------------

def _wal_store(logs: Path) -> None:
    """The committed MLflow store, switched to WAL mode, with one more metric value committed to its
    WAL and not checkpointed: copied while the writer holds it open, as a live server leaves it."""
    work = logs.parent / "work"
    work.mkdir()
    shutil.copyfile(FORMATS / "mlflow" / "mlflow.db", work / "mlflow.db")
    db = sqlite3.connect(work / "mlflow.db")
    db.execute("pragma journal_mode=wal")
    db.execute("pragma wal_autocheckpoint=0")
    uuid, key, ts, step = db.execute("select run_uuid, key, timestamp, step from metrics order by step desc limit 1").fetchone()
    db.execute("insert into metrics (key, value, timestamp, run_uuid, step, is_nan) values (?, ?, ?, ?, ?, 0)",
               (key, 0.125, ts + 1000, uuid, step + 1000))
    db.commit()
    logs.mkdir()
    for name in ("mlflow.db", "mlflow.db-wal", "mlflow.db-shm"):
        shutil.copyfile(work / name, logs / name)
    db.close()


def test_an_mlflow_store_in_wal_mode_shows_its_latest_commits_and_logs_stay_unchanged(tmp_path):
    logs = tmp_path / "logs"
    _wal_store(logs)
    assert (logs / "mlflow.db-wal").stat().st_size > 0
    before = digest(logs)
    campaign = ingest(logs)
    assert digest(logs) == before and sorted(p.name for p in logs.iterdir()) == ["mlflow.db", "mlflow.db-shm", "mlflow.db-wal"]
    by_path = {i.path: i for i in campaign.inputs}
    assert "in WAL mode" in by_path["mlflow.db"].notes[0]
    assert by_path["mlflow.db-wal"].notes == ["the write-ahead log of mlflow.db: its commits were read with the database"]
    assert (campaign.metrics.select_dtypes("number").eq(0.125)).any().any()
    # Counter-example: the same store without its WAL reads what the database holds, and says nothing of a WAL.
    (logs / "mlflow.db-wal").unlink()
    (logs / "mlflow.db-shm").unlink()
    bare = ingest(logs)
    assert not any(i.notes for i in bare.inputs)
    assert not (bare.metrics.select_dtypes("number").eq(0.125)).any().any()


# --- what reportgen says when it fails --------------------------------------------------------

def _main(monkeypatch, capsys, *args: str) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["reportgen", *args])
    with pytest.raises(SystemExit) as exited:
        cli_module.main()
    return exited.value.code, capsys.readouterr().err


def test_an_internal_error_names_the_page_being_written(tmp_path, monkeypatch, capsys):
    from reportgen.render import site

    real = site._render

    def render(env, template, **context):
        if template == "run.html":
            raise KeyError("figure")
        return real(env, template, **context)

    monkeypatch.setattr(site, "_render", render)
    code, err = _main(monkeypatch, capsys, "build", str(SAMPLE), str(SAMPLE / "plan.yaml"), "-o", str(tmp_path / "site"), "-q")
    assert code == 70
    assert "internal error while writing runs/" in err and "KeyError" in err and "Traceback" not in err
    assert not (tmp_path / "site").exists()  # nothing half-written


def test_an_internal_error_outside_the_readers_names_the_stage(tmp_path, monkeypatch, capsys):
    from reportgen.ingest import identity

    def broken(*_args, **_kwargs):
        raise ValueError("no such source")

    monkeypatch.setattr(identity, "link", broken)
    code, err = _main(monkeypatch, capsys, "inspect", str(SAMPLE))
    assert code == 70 and "internal error while deciding which run continues which: ValueError" in err


def test_bad_input_is_exit_1_never_an_internal_error(tmp_path, monkeypatch, capsys):
    """Counter-example: a problem of the user's is told as such, with no mark of a bug."""
    code, err = _main(monkeypatch, capsys, "build", str(tmp_path / "nothere"), str(SAMPLE / "plan.yaml"), "-o", str(tmp_path / "s"))
    assert code == 1 and err.strip() == f"{tmp_path / 'nothere'}: no such folder"


def _without_root_powers() -> list[str] | None:
    """A command prefix that drops the capabilities that let root read any file, where the system has one."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    caps = "-dac_override,-dac_read_search"
    return [setpriv, "--bounding-set", caps, "--inh-caps", caps] if setpriv else None


@pytest.mark.skipif(_without_root_powers() is None, reason="running as root without setpriv: every file is readable")
def test_a_plan_or_logs_that_cannot_be_read_is_exit_1_with_the_reason(tmp_path):
    import subprocess

    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE, logs)
    plan = tmp_path / "plan.yaml"
    shutil.copyfile(SAMPLE / "plan.yaml", plan)
    prefix = _without_root_powers()
    run = [*prefix, sys.executable, "-m", "reportgen"]
    plan.chmod(0)
    try:
        checked = subprocess.run([*run, "check", str(plan)], capture_output=True, text=True)
        built = subprocess.run([*run, "build", str(logs), str(plan), "-o", str(tmp_path / "site")], capture_output=True, text=True)
    finally:
        plan.chmod(0o644)
    for result in (checked, built):
        assert result.returncode == 1, result.stderr
        assert f"{plan}: cannot be read: Permission denied" in result.stderr
    logs.chmod(0)
    try:
        built = subprocess.run([*run, "build", str(logs), str(plan), "-o", str(tmp_path / "site")], capture_output=True, text=True)
    finally:
        logs.chmod(0o755)
    assert built.returncode == 1 and built.stderr.strip() == f"{logs}: cannot be read: Permission denied"


def test_a_plan_that_is_a_pipe_or_a_folder_is_refused_without_waiting(tmp_path):
    pipe = tmp_path / "plan.yaml"
    os.mkfifo(pipe)
    result = CliRunner().invoke(cli, ["check", str(pipe)])
    assert result.exit_code == 1 and "not a regular file" in result.output
    result = CliRunner().invoke(cli, ["check", str(tmp_path)])
    assert result.exit_code == 1 and "is a folder" in result.output


# --- long damaged logs are read fast, and nothing is lost on the way --------------------------

def test_a_log_of_thousands_of_damaged_lines_counts_each_and_reads_every_event_among_them(tmp_path):
    """Past the problems shown, damaged lines are counted without parsing them; a valid event that
    the fast paths set aside (it starts with blanks) is still read."""
    rows, junk = [], 0
    for step in range(1, 3001):
        rows.append(metric(step) if step % 7 else "   " + metric(step))  # every 7th indented: set aside, valid
        rows.append("x" * 50 if step % 3 else "[1, 2]")  # junk, and JSON that is no object
        junk += 1
    log = native.read(_write(tmp_path / "events.jsonl", "\n".join(rows) + "\n"), "events.jsonl")
    assert log.input.records == 3000 and sorted(log.metrics["step"]) == list(range(1, 3001))
    assert log.input.skipped == junk
    assert len(log.input.problems) == MAX_PROBLEMS_PER_FILE
    assert len(log.input.problems) + log.input.problems_not_shown == junk
    assert [p.line for p in log.input.problems] == sorted(p.line for p in log.input.problems)
    assert log.input.problems[0].line == 2


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


MESSAGE_LINES = [
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "RuntimeError: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
    "Killed", "srun: error: node1: task 0: Killed by signal 9", "process exited with exit code 137",
    "received SIGKILL", "{'loss': nan, 'grad_norm': nan, 'learning_rate': 0.0001, 'epoch': 0.5}",
    "step 40 loss=inf", "grad norm is not finite at step 12",
    "Token indices sequence length is longer than the specified maximum sequence length for this model (600 > 512)",
    "Truncation was not explicitly activated but `max_length` is provided",
    "`Trainer.fit` stopped: `max_steps=50` reached.",
    "Training completed. Do not forget to share your model on huggingface.co/models =)",
    "Monitored metric val_loss did not improve in the last 3 records. Best score: 0.512. Signaling Trainer to stop.",
    "Restoring states from the checkpoint path at runs/a/checkpoints/epoch=0-step=20.ckpt",
    "Continuing training from checkpoint, will skip to saved global_step",
    "Loading model from out/checkpoint-20.",
]


def test_the_message_words_let_through_every_line_a_message_pattern_finds():
    """_may_say is a filter before the message patterns: it may pass a line none of them find, never
    drop one they would find. Checked on one line of each message and on every line of the text fixtures."""
    patterns = [textlog._OOM, textlog._KILLED, textlog._NON_FINITE, textlog._TOO_LONG, textlog._TRUNCATION,
                textlog._FIT_DONE, textlog._EARLY_STOP, textlog._RESTORE]
    lines = list(MESSAGE_LINES)
    for path in sorted(Path(__file__).parent.joinpath("fixtures").rglob("*")):
        if path.is_file() and path.suffix in (".log", ".txt") and path.stat().st_size < 5 << 20:
            lines += path.read_text(encoding="utf-8", errors="replace").splitlines()
    found = [line for line in lines if any(p.search(line.strip()) or p.match(line.strip()) for p in patterns)]
    assert len(found) >= len(MESSAGE_LINES)
    assert [line for line in found if not textlog._may_say(line.strip().lower())] == []
    assert not textlog._may_say("step 1200/3000 lr=0.0001 tokens/s=5321")  # counter-example: an ordinary line


def test_a_line_longer_than_the_budget_is_named_and_not_read(tmp_path, monkeypatch):
    path = _write(tmp_path / "train.log", "x" * 5000)
    monkeypatch.setattr(textlog, "TEXT_BUDGET", 1000)
    info, messages, _sessions = textlog.read(path, "train.log")
    assert [p.message for p in info.problems] == [
        "its first line is longer than reportgen reads for one file of this kind (5,000 bytes and no line end in "
        "the first 1,000 bytes); not read"]
    assert messages == [] and not info.cut_off


def test_a_problem_quotes_a_huge_value_by_its_start(tmp_path):
    huge = "9" * 100_000
    path = _write(tmp_path / "events.jsonl", json.dumps({"ts": huge, "type": "metric", "run": "r1", "step": 1,
                                                         "metrics": {"loss": 1.0}}) + "\n")
    [problem] = native.read(path, "events.jsonl").input.problems
    assert len(problem.message) < 600 and problem.message.endswith("more characters)")


def test_a_dangling_link_is_listed_with_where_it_points(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "out.log").symlink_to(tmp_path / "gone.log")
    (logs / "in.log").symlink_to(logs / "gone.log")
    found = {i.path: [p.message for p in i.problems] for i in ingest(logs).inputs}
    assert found == {"out.log": ["a link to a file outside LOGS; not read"],
                     "in.log": ["cannot be read: No such file or directory"]}
