"""What each document reader returns, by example: the values read from a good file, and the count
and message of what it could not read in a damaged one.

These readers were covered directly only by the "any bytes" properties of test_reader_properties.py,
which check that a result comes back and its counts are not negative, not what it holds:
lightning.read_hparams, lightning.read_checkpoint, torchfile.read_torch_file, hf.read_adapter,
mlflow.read_sqlite, mlflow.read_file_run and manifest.read.
"""

from __future__ import annotations

import io
import json
import pickle
import sqlite3
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reportgen.ingest import hf, lightning, manifest, mlflow
from reportgen.ingest.torchfile import UnreadablePickle, read_torch_file


def written(tmp_path: Path, name: str, data: str | bytes) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def counts(info) -> tuple[int, int, list[tuple[int | None, str]]]:
    return info.records, info.skipped, [(p.line, p.message) for p in info.problems]


def torch_zip(top_level: object) -> bytes:
    """A torch.save file as torch writes it: a zip archive whose archive/data.pkl is the pickle (protocol 2)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("archive/data.pkl", pickle.dumps(top_level, protocol=2))
    return out.getvalue()


# A Lightning checkpoint saved at the end of an epoch, without AMP or an RNG callback.
CHECKPOINT = {
    "epoch": 0,
    "global_step": 10,
    "state_dict": {"layer.weight": 1},
    "optimizer_states": [{"state": {}}],
    "lr_schedulers": [],
    "loops": {"fit_loop": {"epoch_loop.batch_progress": {"is_last_batch": True}}},
    "hyper_parameters": {"lr": 0.05, "name": "tiny", "layers": [1, 2]},
}


# --- lightning.read_hparams ------------------------------------------------------------------

def test_hparams_are_the_mapping_of_the_file(tmp_path):
    info, hparams = lightning.read_hparams(written(tmp_path, "hparams.yaml", "lr: 0.05\nmax_steps: 40\nname: tiny\n"),
                                           "v0/hparams.yaml")
    assert hparams == {"lr": 0.05, "max_steps": 40, "name": "tiny"}
    assert counts(info) == (1, 0, []) and info.format == "lightning-csv" and info.path == "v0/hparams.yaml"


def test_hparams_that_do_not_parse_or_are_no_mapping_are_a_problem_and_no_values(tmp_path):
    info, hparams = lightning.read_hparams(written(tmp_path, "hparams.yaml", "lr: 0.05\nmax_steps: [40\n"), "hparams.yaml")
    # PyYAML notices the unclosed list at the end of the stream: line 3.
    assert (hparams, counts(info)) == ({}, (0, 0, [(3, "unreadable YAML (expected ',' or ']', but got '<stream end>')")]))
    info, hparams = lightning.read_hparams(written(tmp_path, "list.yaml", "- 1\n- 2\n"), "list.yaml")
    assert (hparams, counts(info)) == ({}, (0, 0, [(1, "hparams.yaml holds a mapping of hyperparameters; this is not one")]))


# --- torchfile.read_torch_file ---------------------------------------------------------------

def test_the_pickle_walk_returns_the_checkpoints_top_level_object(tmp_path):
    assert read_torch_file(written(tmp_path, "last.ckpt", torch_zip(CHECKPOINT))) == CHECKPOINT


@pytest.mark.parametrize("data", [b"not a zip at all", b"PK\x03\x04cut", torch_zip(CHECKPOINT)[:40]])
def test_the_pickle_walk_says_why_it_cannot_read_a_file_that_is_no_zip_archive(tmp_path, data):
    with pytest.raises(UnreadablePickle) as raised:
        read_torch_file(written(tmp_path, "last.ckpt", data))
    assert str(raised.value) == "not a readable zip archive (File is not a zip file); cut off or damaged"


def test_a_pickle_cut_off_inside_the_archive_is_a_damaged_pickle(tmp_path):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        # 8 bytes: PROTO 2, EMPTY_DICT, BINPUT 0, MARK, then BINUNICODE with 1 of its 4 length bytes.
        archive.writestr("archive/data.pkl", pickle.dumps(CHECKPOINT, protocol=2)[:8])
    with pytest.raises(UnreadablePickle) as raised:
        read_torch_file(written(tmp_path, "last.ckpt", out.getvalue()))
    assert str(raised.value) == "damaged pickle (not enough data in stream to read uint4)"


# --- lightning.read_checkpoint ---------------------------------------------------------------

def test_a_lightning_checkpoint_gives_its_step_resume_state_and_plain_hyperparameters(tmp_path):
    path = written(tmp_path, "epoch=0-step=10.ckpt", torch_zip(CHECKPOINT))
    info, checkpoint, hparams = lightning.read_checkpoint(path, "v0/checkpoints/epoch=0-step=10.ckpt", "v0")
    assert counts(info) == (1, 0, [])
    assert (checkpoint.run, checkpoint.step, checkpoint.path) == ("v0", 10, "v0/checkpoints/epoch=0-step=10.ckpt")
    assert checkpoint.resume_state == {"model": True, "optimizer": True, "scheduler": False, "scaler": False,
                                       "rng": False, "data_position": True, "progress": True}
    assert checkpoint.resume_basis["scheduler"] == "lr_schedulers absent or empty"
    assert checkpoint.resume_basis["data_position"] == "saved at the end of an epoch"
    assert checkpoint.parts == ["epoch", "global_step", "hyper_parameters", "loops", "lr_schedulers",
                                "optimizer_states", "state_dict"]
    assert hparams == {"lr": 0.05, "name": "tiny"}  # the list is no plain value


def test_a_damaged_or_foreign_checkpoint_is_a_problem_and_no_checkpoint(tmp_path):
    info, checkpoint, hparams = lightning.read_checkpoint(written(tmp_path, "a.ckpt", b"junk"), "a.ckpt", "v0")
    assert (checkpoint, hparams) == (None, {})
    assert counts(info) == (0, 1, [(None, ("checkpoint cannot be inspected: not a readable zip archive "
                                           "(File is not a zip file); cut off or damaged"))])
    info, checkpoint, _ = lightning.read_checkpoint(written(tmp_path, "b.ckpt", torch_zip([1, 2])), "b.ckpt", "v0")
    assert checkpoint is None
    assert counts(info) == (0, 0, [(None, "not a Lightning checkpoint (its top level is not a dictionary)")])


# --- hf.read_adapter ---------------------------------------------------------------------------

def test_an_adapter_config_gives_its_values_under_adapter(tmp_path):
    config = {"base_model_name_or_path": "org/base", "revision": "4e3f1a9c", "r": 16, "peft_type": "LORA"}
    info, adapter = hf.read_adapter(written(tmp_path, "adapter_config.json", json.dumps(config)), "out/adapter_config.json")
    assert adapter == {"adapter.base_model_name_or_path": "org/base", "adapter.revision": "4e3f1a9c", "adapter.r": 16,
                       "adapter.peft_type": "LORA"}
    assert counts(info) == (1, 0, [])


def test_an_adapter_config_cut_off_is_a_problem_at_its_line_and_no_values(tmp_path):
    info, adapter = hf.read_adapter(written(tmp_path, "adapter_config.json", '{"r": 16,\n "peft_type": '), "adapter_config.json")
    assert (adapter, counts(info)) == ({}, (0, 0, [(2, "unreadable JSON (Expecting value)")]))


# --- mlflow.read_sqlite ------------------------------------------------------------------------

def mlflow_store(path: Path) -> Path:
    """An MLflow SQLite store with the columns reportgen reads: a finished run with three good metric
    values, a NaN and a value that is text; a failed run; a deleted run."""
    db = sqlite3.connect(path)
    db.executescript("""
        create table runs (run_uuid text, name text, status text, start_time integer, end_time integer, lifecycle_stage text);
        create table metrics (key text, value real, timestamp integer, run_uuid text, step integer, is_nan integer);
        create table params (key text, value text, run_uuid text);
        create table tags (key text, value text, run_uuid text);
        insert into runs values ('aaa', 'tiny', 'FINISHED', 1796244583000, 1796248183000, 'active');
        insert into runs values ('bbb', 'gone', 'FINISHED', 1796244583000, 1796248183000, 'deleted');
        insert into runs values ('ccc', 'crashed', 'FAILED', 1796250000000, 1796251000000, 'active');
        insert into params values ('max_steps', '20', 'aaa');
        insert into tags values ('mlflow.runName', 'tiny-run', 'aaa');
        insert into metrics values ('loss', 1.5, 1796244600000, 'aaa', 10, 0);
        insert into metrics values ('loss', 1.25, 1796244700000, 'aaa', 20, 0);
        insert into metrics values ('eval_rougeL', 0.33, 1796244700000, 'aaa', 20, 0);
        insert into metrics values ('loss', 'x', 1796244800000, 'aaa', 30, 0);
        insert into metrics values ('loss', 0, 1796244800000, 'aaa', 40, 1);
    """)
    db.commit()
    db.close()
    return path


def test_an_mlflow_store_gives_its_runs_statuses_and_metric_rows(tmp_path):
    reading, runs = mlflow.read_sqlite(mlflow_store(tmp_path / "mlflow.db"), "mlflow.db")
    assert [(r.key, r.name, r.uuid, r.params) for r in runs] == [
        ("mlflow.db#aaa", "tiny-run", "aaa", {"max_steps": "20"}), ("mlflow.db#ccc", "crashed", "ccc", {})]
    facts = [(f.run, f.status, f.reason, f.max_steps) for f in reading.events if hasattr(f, "status")]
    assert facts == [("mlflow.db#aaa", "completed", "MLflow run status FINISHED", 20),
                     ("mlflow.db#ccc", "interrupted", "MLflow run status FAILED", None)]
    started = next(f for f in reading.events if getattr(f, "run", None) == "mlflow.db#aaa" and hasattr(f, "started_at"))
    # 1796244583000 ms and one hour later.
    assert (started.started_at, started.ended_at) == (datetime(2026, 12, 2, 20, 49, 43, tzinfo=UTC),
                                                      datetime(2026, 12, 2, 21, 49, 43, tzinfo=UTC))
    frame = reading.frames[0]
    assert frame["step"].tolist() == [10, 20, 40]
    assert frame["loss"].tolist()[:2] == [1.5, 1.25] and str(frame["loss"].tolist()[2]) == "nan"  # is_nan: a logged NaN
    assert frame["eval_rougeL"].isna().tolist() == [True, False, True] and frame["eval_rougeL"].tolist()[1] == 0.33
    [info] = reading.inputs
    # Three rows read (steps 10, 20, 40); the text value at step 30 is skipped and said once.
    assert counts(info) == (3, 1, [(None, ("run aaa: 1 metric value with a value, step or time that is not a number "
                                           "(first: loss at step 30); skipped"))])


def test_a_sqlite_database_without_mlflows_tables_is_no_store(tmp_path):
    db = sqlite3.connect(tmp_path / "other.db")
    db.execute("create table runs (run_uuid text)")
    db.commit()
    db.close()
    assert mlflow.read_sqlite(tmp_path / "other.db", "other.db") is None


# --- mlflow.read_file_run ----------------------------------------------------------------------

def test_an_mlflow_file_store_run_gives_its_status_params_and_metric_lines(tmp_path):
    logs = tmp_path / "logs"
    run = logs / "0" / "abc123"
    written(run, "meta.yaml", "run_id: abc123\nexperiment_id: '0'\nlifecycle_stage: active\nstatus: 4\n"
                              "start_time: 1796244583000\nend_time: 1796248183000\nrun_name: tiny\n")
    written(run, "metrics/loss", "1796244600000 1.5 10\n1796244700000 1.25 20\nnot a line\n\n1796244800000 1.0 30\n")
    written(run, "params/lr", "0.05\n")
    written(run, "tags/mlflow.runName", "tiny-run")
    readable = sorted(p.relative_to(logs).as_posix() for p in logs.rglob("*") if p.is_file())
    reading, source = mlflow.read_file_run(run, logs, readable)
    assert (source.key, source.name, source.uuid, source.params) == ("0/abc123", "tiny-run", "abc123", {"lr": "0.05"})
    [facts] = reading.events
    assert (facts.status, facts.reason, facts.config) == ("interrupted", "MLflow run status FAILED", {"params": {"lr": "0.05"}})
    [frame] = reading.frames
    assert (frame["step"].tolist(), frame["line"].tolist(), frame["loss"].tolist()) == ([10, 20, 30], [1, 2, 5], [1.5, 1.25, 1.0])
    infos = {i.path: i for i in reading.inputs}
    metric = infos["0/abc123/metrics/loss"]
    # 5 lines: 3 read, 1 skipped (with its problem at its line), 1 blank.
    assert (metric.lines, metric.records, metric.skipped, metric.blank) == (5, 3, 1, 1)
    assert [(p.line, p.message) for p in metric.problems] == [(3, "not a 'timestamp value step' line: 'not a line'")]
    assert counts(infos["0/abc123/meta.yaml"]) == (1, 0, [])


# --- manifest.read -------------------------------------------------------------------------------

MANIFEST = """deliverables:
  - id: preds
    kind: predictions
    variant: lora-r16
    corpus: jsum-v3
    run: lora-r16-2
    path: outputs/preds.jsonl
    sha256: 3F2A000000000000000000000000000000000000000000000000000000000000
  - id: adapter
    kind: adapter
    paths:
      - outputs/adapter
      - outputs/adapter-extra
    colour: red
  - kind: metrics
    path: outputs/m.json
  - id: preds
    kind: predictions
    path: outputs/again.jsonl
  - id: nopath
    kind: metrics
  - just a string
  - id: badsha
    kind: metrics
    path: m.json
    sha256: xyz
"""


def test_a_manifest_gives_its_entries_each_at_its_line(tmp_path):
    _info, entries = manifest.read(written(tmp_path, "manifest.yaml", MANIFEST), "outputs/manifest.yaml")
    assert [(e.id, e.kind, e.paths, e.evidence.line) for e in entries] == [
        ("preds", "predictions", ["outputs/preds.jsonl"], 2),
        ("adapter", "adapter", ["outputs/adapter", "outputs/adapter-extra"], 9),
        ("badsha", "metrics", ["m.json"], 23),
    ]
    preds = entries[0]
    assert (preds.variant, preds.corpus, preds.run, preds.id_field, preds.expected_ids) == (
        "lora-r16", "jsum-v3", "lora-r16-2", "id", None)
    assert preds.sha256 == "3f2a" + "0" * 60 and preds.notes == []
    assert entries[2].notes == ["sha256 'xyz' is not 64 hexadecimal digits"]


def test_a_manifests_bad_entries_are_skipped_and_reported_at_their_own_line(tmp_path):
    """The lines stay right past an entry whose `paths` is a block list (its `- ` items are no entries)."""
    info, _entries = manifest.read(written(tmp_path, "manifest.yaml", MANIFEST), "outputs/manifest.yaml")
    assert counts(info) == (3, 4, [
        (9, "deliverables[1]: unknown key colour ignored"),
        (15, "deliverables[2]: `id` and `kind` are required strings; skipped"),
        (17, "deliverables[3]: id 'preds' is listed twice; the second entry is skipped"),
        (20, "deliverables[4] (nopath): `path` or `paths` must name at least one file or folder; skipped"),
        (22, "deliverables[5]: not a mapping; skipped"),
    ])


def test_a_json_manifest_gives_each_entry_the_line_of_its_brace(tmp_path):
    text = json.dumps({"deliverables": [{"id": "a", "kind": "metrics", "paths": ["x", "y"]},
                                        {"id": "b", "kind": "metrics"}, {"id": "c", "kind": "metrics", "path": "c"}]}, indent=2)
    info, entries = manifest.read(written(tmp_path, "manifest.json", text), "manifest.json")
    # Lines: 1 "{", 2 "deliverables": [, 3-10 entry a (its paths list on 6-9), 11-14 entry b, 15-19 entry c.
    assert [(e.id, e.evidence.line) for e in entries] == [("a", 3), ("c", 15)]
    assert counts(info) == (2, 1, [(11, "deliverables[1] (b): `path` or `paths` must name at least one file or folder; skipped")])


def test_a_manifest_whose_deliverables_is_no_list_has_no_entries(tmp_path):
    info, entries = manifest.read(written(tmp_path, "manifest.yaml", "deliverables: {a: 1}\n"), "manifest.yaml")
    assert (entries, counts(info)) == ([], (0, 0, [(1, "`deliverables` must be a list of entries")]))
