"""A Hugging Face Trainer reporting to W&B: the W&B run and the Trainer's output folder are one run.

The fixtures (tests/fixtures/trainer-wandb/, made by make_fixtures.py with transformers 5.25 and
wandb 0.31 offline, report_to=["wandb"] and nothing else) are three runs: base and wide finish;
lr1e-2 is killed at step 17 (its transaction log holds nothing: wandb-core had not written its
first block) and resumed from its step-10 checkpoint into the same output folder, a new W&B run.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

from reportgen.ingest import ingest, wandb

LOGS = Path(__file__).parent / "fixtures" / "trainer-wandb"
FOLDERS = sorted(p.name for p in (LOGS / "wandb").glob("offline-run-*"))
BASE, WIDE, KILLED, RESUMED = FOLDERS  # in the order they ran


def _state_steps(name: str) -> list[int]:
    state = json.loads((LOGS / "out" / name / "trainer_state.json").read_text())
    return sorted({e["step"] for e in state["log_history"] if "loss" in e})


def test_wandb_rows_are_at_the_trainers_global_step_not_at_wandbs_step():
    info, log = wandb.read_log_file(next((LOGS / "wandb" / BASE).glob("*.wandb")), "x.wandb", "base")
    frame = log.rows.frame()
    train = frame[frame["kind"] == "train"]
    assert sorted(set(train.loc[train["train/loss"].notna(), "step"])) == _state_steps("base") == [5, 10, 15, 20, 25, 30]
    assert "train/global_step" not in frame.columns  # the axis, not a metric
    assert any("step_metric='train/global_step'" in note for note in info.notes)


def test_counter_example_a_run_without_a_step_metric_keeps_wandbs_step():
    clean = Path(__file__).parent / "fixtures" / "wandb" / "clean"
    info, log = wandb.read_log_file(next(clean.glob("wandb/offline-run-*/*.wandb")), "x.wandb", "clean")
    assert sorted(set(log.rows.frame()["step"])) == list(range(60))
    assert not any("step_metric" in note for note in info.notes)


def test_a_trainer_reporting_to_wandb_is_one_run_with_its_output_folder():
    campaign = ingest(LOGS)
    assert sorted(campaign.runs) == ["base", "lr1e-2", "wide"]
    for name in ("base", "wide"):
        run = campaign.runs[name]
        assert "wandb" in run.formats and "hf-trainer" in run.formats
        (decision,) = [d for d in run.identity if d.rule == "same-values"]
        assert f"out/{name}/ and wandb/offline-run-" in decision.text
        assert "its output_dir configuration" in decision.text and f"names out/{name}/" in decision.text
        assert (run.first_step, run.last_step) == (5, 30)


def test_a_killed_wandb_run_with_no_history_joins_its_output_folder_by_the_config_its_debug_log_keeps():
    campaign = ingest(LOGS)
    run = campaign.runs["lr1e-2"]
    rules = {d.rule: d for d in run.identity}
    assert KILLED in rules["output-dir"].text and "names out/lr1e-2/" in rules["output-dir"].text
    assert RESUMED in rules["same-values"].text
    assert (LOGS / "wandb" / KILLED / f"run-{KILLED.rsplit('-', 1)[1]}.wandb").stat().st_size == 7  # the header alone
    # The run started with the killed process: the first time wandb-core logged for it.
    internal = (LOGS / "wandb" / KILLED / "logs" / "debug-internal.log").read_text().splitlines()
    assert run.started_at == datetime.fromisoformat(json.loads(internal[0])["time"])
    assert run.start_evidence.path == f"wandb/{KILLED}/logs/debug-internal.log"


def test_the_folders_a_debug_log_config_names():
    line = ("2026-12-06 05:06:22,667 INFO    MainThread:1033 [wandb_run.py:_config_callback():1280] config_cb None None "
            "{'peft_config': {}, 'output_dir': '/data/out/lr1e-2', 'logging_dir': None, 'run_name': 'lr1e-2'}")
    assert wandb._debug_dirs([line]) == {"output_dir": "/data/out/lr1e-2"}
    # Counter-example: a path printed elsewhere in debug.log is no configuration.
    assert wandb._debug_dirs(["2026-12-06 05:06:22,667 INFO    MainThread:1 [x.py:f():1] 'output_dir': '/a'"]) == {}


def test_counter_example_a_wandb_run_naming_another_folder_stays_apart(tmp_path):
    """W&B's base run (its output_dir names out/base) beside wide's output folder: other values, another folder."""
    shutil.copytree(LOGS / "wandb" / BASE, tmp_path / "wandb" / BASE)
    shutil.copytree(LOGS / "out" / "wide", tmp_path / "out" / "wide")
    campaign = ingest(tmp_path)
    assert len(campaign.runs) == 2
    assert not any(d.rule in ("same-values", "output-dir") for run in campaign.runs.values() for d in run.identity)


def test_counter_example_a_killed_wandb_run_naming_another_folder_stays_apart(tmp_path):
    shutil.copytree(LOGS / "wandb" / KILLED, tmp_path / "wandb" / KILLED)
    shutil.copytree(LOGS / "out" / "wide", tmp_path / "out" / "wide")
    campaign = ingest(tmp_path)
    assert len(campaign.runs) == 2
    killed = next(r for r in campaign.runs.values() if "wandb" in r.formats)
    assert "hf-trainer" not in killed.formats


def _axis_log(folder: str):
    path = next((Path(__file__).parent / "fixtures" / "wandb" / folder).glob("wandb/offline-run-*/*.wandb"))
    return wandb.read_log_file(path, "x.wandb", folder)


def test_a_declared_step_metric_of_whole_numbers_is_the_step():
    info, log = _axis_log("axis")
    frame = log.rows.frame()
    assert frame.loc[frame["loss"].notna(), "step"].tolist() == list(range(10, 201, 10))
    assert frame.loc[frame["setup/params"].notna(), "step"].tolist() == [0]  # W&B puts it at train/step 0
    assert (min(log.steps), max(log.steps)) == (0, 200)


def test_counter_example_a_step_metric_of_fractions_leaves_the_rows_at_wandbs_step():
    info, log = _axis_log("epoch-axis")
    frame = log.rows.frame()
    assert frame.loc[frame["loss"].notna(), "step"].tolist() == list(range(1, 21))
    assert "epoch" in frame.columns  # not the axis: a metric like any other
    assert any("epoch is no step count (record" in note and "at W&B's _step" in note for note in info.notes)
