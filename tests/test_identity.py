"""Who is who: which files are one run, which run continues which, how each ended, on campaigns the
real libraries wrote (tests/fixtures/campaigns/, made by tests/fixtures/make_fixtures.py).

Every rule is tested where it must fire and where it must not (a counter-example beside it).
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import inspect_of

from reportgen.analysis import analyse
from reportgen.analysis.checkpoints import run_checkpoints
from reportgen.analysis.runs import total_steps
from reportgen.cli import cli
from reportgen.ingest import ingest
from reportgen.ingest.identity import config_id
from reportgen.plan.schema import Plan

CAMPAIGNS = Path(__file__).parent / "fixtures" / "campaigns"
LIGHTNING = CAMPAIGNS / "lightning-loggers"
TRAINER = CAMPAIGNS / "trainer-mlflow"
V = "lightning_logs/version_{}".format


def runs_of(data: dict) -> dict[str, dict]:
    return {r["id"]: r for r in data["runs"]}


def rules(run: dict, decision: str) -> list[str]:
    return [d["rule"] for d in run["identity"] if d["decision"] == decision]


def copy_without(source: Path, target: Path, *left_out: str) -> Path:
    """A copy of a fixture campaign without some of its files or folders (the fixture is never touched)."""
    shutil.copytree(source, target, ignore=lambda folder, names: [
        n for n in names if (Path(folder) / n).relative_to(source).as_posix() in left_out])
    return target


@pytest.fixture(scope="module")
def lightning() -> dict:
    return inspect_of(ingest(LIGHTNING))


@pytest.fixture(scope="module")
def trainer() -> dict:
    return inspect_of(ingest(TRAINER))


# --- Lightning: CSVLogger and TensorBoardLogger in one Trainer, five versions -----------------

def test_one_fit_logged_by_two_loggers_is_one_run(lightning):
    runs = runs_of(lightning)
    assert sorted(runs) == [V(n) for n in range(5)]  # not ten runs, and no tb_logs/... id
    for n in range(5):
        run = runs[V(n)]
        assert run["formats"][:2] == ["lightning-csv", "tensorboard"]
        assert f"{V(n)}/metrics.csv" in run["sources"]
        assert any(s.startswith(f"tb_logs/{V(n)}/events.out.tfevents.") for s in run["sources"])
        assert rules(run, "merged").count("same-values") == 1
        assert run["started_at"] is not None  # the clock times are TensorBoard's, the steps both loggers'


def test_a_csv_version_and_a_tensorboard_version_of_equal_values_stay_apart_without_a_second_tie(tmp_path):
    """Counter-example: version_4 repeats version_0 (same configuration and seed), so their values are
    equal; with version_0's events and version_4's metrics.csv gone, nothing but the values ties the
    remaining two, and they are not merged."""
    logs = copy_without(LIGHTNING, tmp_path / "logs", f"tb_logs/{V(0)}", V(4))
    runs = runs_of(inspect_of(ingest(logs)))
    assert runs[V(0)]["formats"] == ["lightning-csv"]
    assert runs[V(4)]["formats"] == ["lightning-csv", "tensorboard"]
    assert "same-values" not in rules(runs[V(0)], "merged")


def test_versions_of_other_configurations_are_never_continuations(lightning):
    """CSVLogger's first row is at step 39 or 49, past 0, in every version; version order is no evidence."""
    runs = runs_of(lightning)
    for n in (0, 1, 2, 4):
        assert runs[V(n)]["resumes"] is None, V(n)
        assert runs[V(n)]["first_step"] > 0
    assert runs[V(3)]["resumes"] == V(1)  # the real continuation, same width 64, from its last.ckpt (step 100)


def test_clean_versions_are_completed_and_the_continued_one_interrupted(lightning):
    runs = runs_of(lightning)
    assert {n: runs[V(n)]["status"] for n in range(5)} == {
        0: "completed", 1: "interrupted", 2: "completed", 3: "completed", 4: "completed"}
    assert f"{V(3)} continues it" in runs[V(1)]["status_reason"]


def test_a_continuation_is_found_by_its_steps_when_no_log_says_so(tmp_path):
    logs = copy_without(LIGHTNING, tmp_path / "logs", "killed.log")
    runs = runs_of(inspect_of(ingest(logs)))
    assert runs[V(3)]["resumes"] == V(1)
    assert rules(runs[V(3)], "resumes") == ["step-continuity"]
    assert "follows lightning_logs/version_1's checkpoint at step 100" in runs[V(3)]["identity"][-1]["text"]
    # the repeat of version_0 starts where every run of its configuration starts: no continuation
    assert runs[V(4)]["resumes"] is None and runs[V(1)]["status"] == "interrupted"


def test_captured_stdout_beside_the_versions_is_linked_on_evidence(lightning):
    runs = runs_of(lightning)
    assert rules(runs[V(1)], "linked") == ["clock-times"]  # killed.log, the first process
    assert rules(runs[V(3)], "linked") == ["clock-times"]  # killed.log, the process that resumed it
    assert rules(runs[V(2)], "linked") == ["printed-hparams"]  # wide.log prints width 256
    assert rules(runs[V(4)], "linked") == ["named-path"]  # repeat.log names version_4/checkpoints
    assert "killed.log" in runs[V(1)]["sources"] and "killed.log" in runs[V(3)]["sources"]
    assert rules(runs[V(3)], "resumes") == ["restore-message"]


def test_logs_no_evidence_ties_to_one_run_are_listed_apart_never_runs(lightning):
    """baseline.log prints hyperparameters that version_0 and its repeat version_4 share; plot.log is a
    plotting script's crash. Neither becomes a run, and neither is given to a run."""
    apart = {u["path"]: u for u in lightning["unlinked_sources"]}
    assert sorted(apart) == ["baseline.log", "plot.log"]
    assert f"match {V(0)} and {V(4)} alike" in apart["baseline.log"]["reason"]
    assert [m["kind"] for m in apart["plot.log"]["messages"]] == ["traceback"]
    assert not any("baseline.log" in r["sources"] or "plot.log" in r["sources"] for r in lightning["runs"])


def test_inspect_shows_each_decision_with_its_rule(lightning):
    result = CliRunner().invoke(cli, ["inspect", str(LIGHTNING)])
    assert result.exit_code == 0
    assert "Runs (5 training; in the order they started, times in UTC, the zone the logs write)" in result.output
    assert f"resumes [restore-message]: its log says it restored {V(1)}/checkpoints/last.ckpt" in result.output
    assert "Sources that are not runs (2)" in result.output
    data = json.loads(CliRunner().invoke(cli, ["inspect", str(LIGHTNING), "--json"]).output)
    decision = next(d for d in runs_of(data)[V(3)]["identity"] if d["decision"] == "resumes")
    assert decision["other"] == V(1) and decision["evidence"][0]["path"] == "killed.log"


# --- Trainer + PEFT with TensorBoard and MLflow ------------------------------------------------

TRAINING = ["base-a", "base-a2", "base-b", "early", "killed", "killed-resume", "older"]


def test_the_training_runs_are_found_and_evaluate_runs_are_marked(trainer):
    runs = runs_of(trainer)
    assert sorted(r for r, run in runs.items() if run["kind"] == "training") == TRAINING
    evaluations = {r: run for r, run in runs.items() if run["kind"] == "evaluation"}
    assert sorted(run["evaluates"] for run in evaluations.values()) == ["base-a", "base-b"]
    for run in evaluations.values():
        assert rules(run, "kind") == ["no-training-step"] and rules(run, "evaluates") == ["after-training"]


def test_a_trainer_folder_and_its_mlflow_run_are_one_run(trainer):
    runs = runs_of(trainer)
    for name in ("base-a", "base-a2", "base-b", "early", "killed", "killed-resume"):
        assert "mlflow-sqlite" in runs[name]["formats"], name
        assert rules(runs[name], "merged").count("same-values") == 1
    # MLflow named all six 'overjoyed-slug-911' (the seed is set before it picks a name): no problem
    assert not any(r.startswith("overjoyed") for r in runs)
    assert not any("R10" in p["message"] for p in trainer["problems"])


def test_a_run_resumed_into_a_new_output_dir_continues_the_killed_run(trainer):
    runs = runs_of(trainer)
    assert runs["killed-resume"]["resumes"] == "killed"
    assert rules(runs["killed-resume"], "resumes") == ["log-history"]
    assert runs["killed"]["status"] == "interrupted"


def test_a_repeat_with_the_same_history_is_not_a_continuation(trainer):
    """Counter-example: base-a2 repeats base-a (same configuration and seed), so its log_history starts
    with base-a's checkpoints' entries; its own TensorBoard starts at step 5, so it trained them itself."""
    runs = runs_of(trainer)
    assert runs["base-a2"]["resumes"] is None and runs["base-a"]["resumes"] is None


def test_early_stopping_is_a_stop_by_the_training_loop(trainer):
    early = runs_of(trainer)["early"]
    assert early["status"] == "stopped"
    assert early["status_reason"].startswith("EarlyStoppingCallback stopped training at step 30 of 200")
    assert "patience 2" in early["status_reason"]
    assert early["status_evidence"][0]["path"] == "out/early/trainer_state.json"


def test_a_second_events_file_of_the_same_process_is_not_a_restart(trainer):
    base = runs_of(trainer)["base-a"]
    assert not any(m["kind"] == "resumed" for m in base["messages"])
    assert rules(base, "merged").count("same-process") == 1


def test_an_older_trainer_folder_at_max_steps_is_completed(tmp_path):
    logs = copy_without(TRAINER, tmp_path / "logs", "logs/older.log")
    older = runs_of(inspect_of(ingest(logs)))["older"]
    assert older["status"] == "completed"
    assert "global_step 30 reached max_steps 30" in older["status_reason"]


def test_a_checkpoint_only_folder_short_of_max_steps_is_unknown_not_interrupted(tmp_path):
    """Counter-example: with its last checkpoint gone, nothing says how the run ended."""
    logs = copy_without(TRAINER, tmp_path / "logs", "logs/older.log", "out/older/checkpoint-30")
    older = runs_of(inspect_of(ingest(logs)))["older"]
    assert older["status"] == "unknown"
    assert "the last state is at step 20 of 30" in older["status_reason"]


def test_an_evaluation_run_at_no_training_run_s_last_step_is_not_attached(tmp_path):
    logs = copy_without(TRAINER, tmp_path / "logs")
    with sqlite3.connect(logs / "mlflow.db") as db:
        db.execute("update metrics set step = 12 where run_uuid in (select run_uuid from runs where run_uuid not in "
                   "(select run_uuid from params))")
    runs = runs_of(inspect_of(ingest(logs)))
    evaluations = [r for r in runs.values() if r["kind"] == "evaluation"]
    assert len(evaluations) == 2 and all(r["evaluates"] is None for r in evaluations)


def test_a_trainer_state_cut_off_mid_file_is_a_cut_and_no_reason_says_step_none(tmp_path, trainer, lightning):
    logs = copy_without(TRAINER / "out" / "killed", tmp_path / "logs" / "killed")
    state = logs / "checkpoint-20" / "trainer_state.json"
    text = state.read_text()
    state.write_text(text[:text.index('"log_history"') + 300])  # the writer died inside log_history
    run = runs_of(inspect_of(ingest(tmp_path / "logs")))["killed"]
    assert run["status"] == "interrupted" and "cut off mid-record" in run["status_reason"]
    for data in (trainer, lightning, inspect_of(ingest(tmp_path / "logs"))):
        assert not any("step None" in r["status_reason"] for r in data["runs"])


def test_config_ids_leave_out_keys_that_name_a_run():
    base = {"params": {"learning_rate": "0.005", "output_dir": "/runs/a", "run_name": "a"}, "hparams": {"width": 32}}
    named_otherwise = {"params": {"learning_rate": "0.005", "output_dir": "/x/b", "run_name": "b"}, "hparams": {"width": 32}}
    assert config_id(base) == config_id(named_otherwise)
    assert config_id(base) != config_id({**base, "hparams": {"width": 64}})  # counter-example: a setting differs


def test_one_configuration_has_one_config_id_whatever_names_its_runs(trainer):
    assert "output_dir" in ingest(TRAINER).runs["base-a"].config["params"]  # MLflow's parameters are its config
    runs = runs_of(trainer)
    assert runs["base-a"]["config_id"] == runs["base-a2"]["config_id"]  # output_dir is all they differ in
    assert runs["base-a"]["config_id"] != runs["base-b"]["config_id"]  # LoRA rank 4 and 8
    assert runs["killed"]["config_id"] != runs["base-a"]["config_id"]  # another learning rate


def test_figures_come_from_the_best_evidence():
    campaign = ingest(TRAINER)
    # total steps from trainer_state.json's max_steps, and from MLflow's string parameters alone
    assert total_steps(campaign.runs["early"])[0] == 200
    for fmt, where in (("hf-trainer", "out/early/trainer_state.json"), ("mlflow-sqlite", "mlflow.db")):
        alone = copy.deepcopy(campaign.runs["early"])
        alone.facts = [f for f in alone.facts if f.format == fmt]
        alone.config = None
        assert total_steps(alone) == (200, f"max_steps in {where}")
    # evaluation time from eval_runtime; one evaluation that trainer_state.json and MLflow both record counts
    # once, cited by its trainer_state.json line and timed by the other source
    evaluations = [e for e in campaign.evaluations if e.run == "base-a"]
    assert [e.step for e in evaluations] == [10, 20, 30]
    assert all(e.seconds and e.at is not None and e.evidence.path == "out/base-a/trainer_state.json" for e in evaluations)
    # a checkpoint found on disk is timed by the record of its step (TensorBoard or MLflow)
    checks = {c.step: c for c in run_checkpoints(campaign)["killed"]}
    assert checks[20].at is not None and checks[20].timed_by is not None


def test_a_variant_whose_completed_run_has_no_quality_value_is_not_evaluated(sample_plan_data, lightning):
    """The false negative: a completed run with no value of the quality metric was 'evaluated and fell short'."""
    data = copy.deepcopy(sample_plan_data)
    data["variants"] = [
        {"id": "narrow", "role": "control", "category": "required", "runs": [V(0)]},
        {"id": "wide", "role": "variant", "category": "required", "runs": [V(2)]},
    ]
    data["schedule"] = {"steps": [{"id": "all", "resource": "gpu0", "hours": 10, "runs": ["*"]}]}
    data["decision_points"], data["deliverables"] = [], []
    data["stop_rules"] = [{"id": "S1", "kind": "non_finite", "description": "loss not finite"}]
    analysis = analyse(Plan.model_validate(data), ingest(LIGHTNING))
    verdicts = {v.variant.id: v.verdict for v in analysis.variants}
    assert verdicts == {"narrow": "not_evaluated", "wide": "not_evaluated"}  # no eval_rougeL anywhere
    assert analysis.verdict.verdict == "inconclusive"


# --- Git LFS pointers ---------------------------------------------------------------------------

def test_git_lfs_pointers_are_named_and_never_read_as_the_file():
    data = inspect_of(ingest(CAMPAIGNS / "lfs-clone"))
    pointers = [i for i in data["inputs"] if i["format"] == "git-lfs-pointer"]
    assert len(pointers) == 25
    messages = [p["message"] for i in data["inputs"] for p in i["problems"]]
    assert all(m.startswith("a Git LFS pointer, not the file") for m in messages)
    assert not any("JSON" in m or "CRC" in m for m in messages)
    trainer = [c for c in data["checkpoints"] if c["run"] == "base-a"]
    assert [c["step"] for c in trainer] == [10, 20, 30]  # the final model's weights are a pointer: not listed
    for check in trainer:
        assert not any(check["resume_state"].values())
        assert "a Git LFS pointer, not the file" in check["resume_basis"]["optimizer"]
    lightning = [c for c in data["checkpoints"] if c["run"] == V(0)]
    assert lightning and all(set(c["resume_state"].values()) == {None} for c in lightning)
    assert sorted(c["step"] for c in lightning if c["step"] is not None) == [50, 100, 150]


def test_a_tensorboard_file_that_is_a_git_lfs_pointer_is_named_as_one_and_makes_no_run(tmp_path):
    pointer = next((CAMPAIGNS / "lfs-clone").rglob("events.out.tfevents.*"))
    (tmp_path / "tb" / "exp1").mkdir(parents=True)
    shutil.copyfile(pointer, tmp_path / "tb" / "exp1" / pointer.name)
    data = inspect_of(ingest(tmp_path))
    (info,) = data["inputs"]
    assert info["format"] == "git-lfs-pointer" and info["records"] == 0
    assert info["problems"][0]["message"].startswith("a Git LFS pointer, not the file (354 bytes")
    assert "git lfs pull" in info["problems"][0]["message"]
    assert data["runs"] == []


def test_counter_example_a_real_event_file_in_the_same_place_is_read_as_events(tmp_path):
    """A pointer is known by its text, not by its name or place."""
    from reportgen.ingest.tensorboard import FORMAT as TB
    real = next((CAMPAIGNS / "trainer-tb-only").rglob("events.out.tfevents.*"))
    (tmp_path / "tb" / "exp1").mkdir(parents=True)
    shutil.copyfile(real, tmp_path / "tb" / "exp1" / real.name)
    data = inspect_of(ingest(tmp_path))
    assert [i["format"] for i in data["inputs"]] == [TB]


def test_a_deliverable_that_is_a_git_lfs_pointer_is_not_a_verified_output(tmp_path):
    from reportgen.model import Evidence, ManifestEntry
    from reportgen.verify import check_paths

    logs = copy_without(CAMPAIGNS / "lfs-clone", tmp_path / "logs")
    entry = ManifestEntry("adapter", "adapter", ["base-a/adapter_model.safetensors"], Evidence("manifest.yaml", 2))
    reasons = [r for report in check_paths(logs, entry) for r in report.reasons]
    assert len(reasons) == 1 and "cannot be reloaded: a Git LFS pointer, not the file" in reasons[0]


# --- TensorBoard outside the output folders, early stopping between saves ---------------------

def test_tensorboard_events_outside_the_output_folder_join_it_by_the_trainer_s_arguments():
    """The Trainer writes its TrainingArguments into its events (the text summary "args"): their
    output_dir names the folder, so tb/<name> and out/<name> are one run, not two."""
    runs = runs_of(inspect_of(ingest(CAMPAIGNS / "trainer-tb-outside")))
    assert sorted(r for r, run in runs.items() if run["kind"] == "training") == ["es-nostop", "es-stop"]
    for name in ("es-nostop", "es-stop"):
        assert runs[name]["formats"][:2] == ["hf-trainer", "tensorboard"]
        merged = next(d for d in runs[name]["identity"] if d["rule"] == "same-values")
        assert "its output_dir parameter" in merged["text"] and f"tb/{name}/" in merged["text"]


def test_early_stopping_between_two_saves_is_still_a_stop_by_the_training_loop():
    """The saved state shows the counter of the last checkpoint (1 of 2): the stop is read from training
    ending with its summary short of max_steps while the callback was configured."""
    runs = runs_of(inspect_of(ingest(CAMPAIGNS / "trainer-tb-outside")))
    assert runs["es-stop"]["status"] == "stopped"
    assert runs["es-stop"]["status_reason"].startswith("EarlyStoppingCallback stopped training at step 9 of 30")
    assert runs["es-nostop"]["status"] == "completed"  # counter-example: the callback configured, max_steps reached


def test_an_evaluation_in_a_process_of_its_own_is_an_evaluation_run():
    """Its events hold eval/* and the progress counter train/epoch: a counter is not training."""
    run = runs_of(inspect_of(ingest(CAMPAIGNS / "trainer-tb-outside")))["es-nostop-eval"]
    assert run["kind"] == "evaluation" and run["evaluates"] is None  # step 0: no training run ended there


# --- Lightning: a resume into its own version folder; one log appended by three versions -------

def test_a_resume_into_its_own_folder_is_no_continuation_of_a_repeat():
    """run-a was killed at 33 and resumed from its own step-30 checkpoint into the same folder; run-b has
    the same hyperparameters and ran afterwards: run-a does not continue run-b."""
    runs = runs_of(inspect_of(ingest(CAMPAIGNS / "lightning-own-version")))
    assert runs["run-a"]["resumes"] is None and runs["run-b"]["resumes"] is None
    assert "its own checkpoint" in next(d["text"] for d in runs["run-a"]["identity"] if d["decision"] == "separate")


def test_a_resume_into_its_own_folder_is_found_by_its_steps_without_its_log(tmp_path):
    logs = copy_without(CAMPAIGNS / "lightning-own-version", tmp_path / "logs", "logs")
    runs = runs_of(inspect_of(ingest(logs)))
    assert runs["run-a"]["resumes"] is None
    assert any(d["rule"] == "step-continuity" and "resumed in its own folder" in d["text"]
               for d in runs["run-a"]["identity"])


def test_a_log_appended_by_several_versions_is_split_by_their_start_times():
    runs = runs_of(inspect_of(ingest(CAMPAIGNS / "lightning-appended")))
    for n in range(3):
        assert rules(runs[V(n)], "linked") == ["session-order"]
    assert runs[V(1)]["status"] == "stopped" and "Signaling Trainer to stop" in runs[V(1)]["status_reason"]
    assert runs[V(0)]["status"] == "completed" and runs[V(2)]["status"] == "unknown"  # the kill left no trace


def test_a_log_appended_by_several_versions_without_their_times_is_not_split_by_order(tmp_path):
    """Counter-example: without TensorBoard's clock times nothing orders the runs; the log stays apart."""
    logs = copy_without(CAMPAIGNS / "lightning-appended", tmp_path / "logs",
                        *(f"lightning_logs/version_{n}/{e.name}" for n in range(3)
                          for e in (CAMPAIGNS / "lightning-appended" / f"lightning_logs/version_{n}").glob("events.*")))
    data = inspect_of(ingest(logs))
    assert [u["path"] for u in data["unlinked_sources"]] == ["lightning_logs/train.log"] * 3
    assert runs_of(data)[V(1)]["status"] == "unknown"


# --- logs of a loop of its own; an MLflow sweep's parent -------------------------------------

def test_clock_timed_step_lines_make_a_run_of_their_own_with_its_times():
    runs = runs_of(inspect_of(ingest(CAMPAIGNS / "plain-prints")))
    assert (runs["baseline"]["first_step"], runs["baseline"]["last_step"]) == (1, 40)
    assert runs["baseline"]["started_at"] is not None and runs["baseline"]["last_seen_at"] is not None
    assert runs["wide"]["status"] == "interrupted" and runs["wide"]["last_step"] == 25


def test_an_mlflow_sweep_parent_that_logged_nothing_is_not_a_run(tmp_path):
    logs = copy_without(TRAINER, tmp_path / "logs")
    with sqlite3.connect(logs / "mlflow.db") as db:  # the eval run of base-a becomes the parent of two runs
        parent = db.execute("select run_uuid from runs where run_uuid not in (select run_uuid from params) "
                            "order by start_time").fetchone()[0]
        db.execute("delete from metrics where run_uuid = ?", (parent,))
        children = [r[0] for r in db.execute("select run_uuid from runs where run_uuid != ? limit 2", (parent,))]
        db.executemany("insert into tags (key, value, run_uuid) values ('mlflow.parentRunId', ?, ?)",
                       [(parent, child) for child in children])
    data = inspect_of(ingest(logs))
    assert not any(r["id"].startswith("rambunctious") and r["first_step"] is None for r in data["runs"])
    apart = [u for u in data["unlinked_sources"] if u["path"] == "mlflow.db"]
    assert len(apart) == 1 and "holds 2 nested runs and logged no metric of its own" in apart[0]["reason"]


def test_a_restart_into_the_same_output_dir_is_one_run_with_both_its_mlflow_runs():
    """Killed at step 17 and resumed with resume_from_checkpoint=True into the same folder: MLflow holds
    two runs of one output_dir, one after the other; they are the two processes of the folder's one run
    (counter-example to 'one record per logger', which keeps two records of one time span apart)."""
    data = inspect_of(ingest(CAMPAIGNS / "trainer-restart"))
    runs = runs_of(data)
    assert sorted(runs) == ["lr1e-2"]
    assert runs["lr1e-2"]["status"] == "completed"
    assert rules(runs["lr1e-2"], "merged").count("same-values") == 2


def test_a_log_beside_a_run_of_its_own_log_joins_that_run(tmp_path):
    """stdout and stderr captured apart: the steps are in one, the other shows none and lies in the
    folder that run alone holds."""
    folder = tmp_path / "logs" / "exp8"
    folder.mkdir(parents=True)
    shutil.copyfile(CAMPAIGNS / "plain-prints" / "logs" / "baseline.log", folder / "stderr.log")
    (folder / "stdout.log").write_text("loading data\nTraceback (most recent call last):\n  File \"t.py\", line 3\nOSError: disk full\n")
    runs = runs_of(inspect_of(ingest(tmp_path / "logs")))
    assert sorted(runs) == ["exp8"]
    assert rules(runs["exp8"], "linked") == ["only-run-below"]
    assert runs["exp8"]["status"] == "interrupted"  # the crash is in stdout.log


# --- loggers named apart, loggers in one folder, a Trainer with TensorBoard alone ------------

NAMED = CAMPAIGNS / "lightning-named-loggers"
ONE_ROOT = CAMPAIGNS / "lightning-one-root"
TB_ONLY = CAMPAIGNS / "trainer-tb-only"


def test_loggers_named_apart_are_one_run_by_their_version_number():
    """CSVLogger(name="csv") and TensorBoardLogger(name="tb"): csv/version_N and tb/version_N of one fit.
    version_3 repeats version_0 (same configuration and seed, equal values): the number keeps them apart."""
    runs = runs_of(inspect_of(ingest(NAMED)))
    assert sorted(runs) == [f"csv/version_{n}" for n in range(4)]
    for n in range(4):
        run = runs[f"csv/version_{n}"]
        assert any(s.startswith(f"tb/version_{n}/events.out.tfevents.") for s in run["sources"])
        assert f"both are logger version version_{n}" in next(
            d["text"] for d in run["identity"] if d["rule"] == "same-values")
    assert runs["csv/version_0"]["resumes"] is None and runs["csv/version_3"]["resumes"] is None
    assert runs["csv/version_2"]["resumes"] == "csv/version_1"


def test_a_continuation_names_the_step_it_resumed_from_not_its_first_logged_one():
    runs = runs_of(inspect_of(ingest(NAMED)))
    assert runs["csv/version_2"]["resumed_at_step"] == 100  # last.ckpt; its first logged step is later
    assert runs["csv/version_1"]["status"] == "interrupted"
    assert runs["csv/version_1"]["status_reason"].endswith("csv/version_2 continues it from its checkpoint at step 100")


def test_the_run_page_says_from_which_checkpoint_step_a_run_continues(tmp_path, write_plan, sample_plan_data):
    site = tmp_path / "site"
    result = CliRunner().invoke(cli, ["build", str(NAMED), str(write_plan(sample_plan_data)), "-o", str(site), "-q"])
    assert result.exit_code == 0, result.output
    page = next((site / "runs").glob("csv_version_2-*.html")).read_text(encoding="utf-8")
    assert re.search(r"Continues <a [^>]*>csv/version_1</a> from its checkpoint at step 100\.", page)


def test_a_trainer_continuation_gives_back_the_history_it_copied(trainer):
    """A Trainer resumed into a new folder copies checkpoint-20's log_history into its own: those
    steps are the killed run's; the continuation's own steps start after 20."""
    runs = runs_of(trainer)
    assert runs["killed-resume"]["resumed_at_step"] == 20
    assert runs["killed-resume"]["first_step"] > 20
    assert runs["killed"]["status_reason"].endswith("from its checkpoint at step 20")
    assert runs["base-a2"]["first_step"] <= 5  # counter-example: a repeat keeps the steps it trained itself


def test_two_loggers_in_one_folder_are_one_run_by_neighbouring_versions():
    """Both loggers in lightning_logs/: each fit takes two numbers (0+1, 2+3, 4+5); the third fit repeats
    the first, so versions 0, 1, 4 and 5 hold equal values and one configuration."""
    runs = runs_of(inspect_of(ingest(ONE_ROOT)))
    assert sorted(runs) == [V(0), V(2), V(4)]
    for n in (0, 2, 4):
        assert any(s.startswith(f"{V(n + 1)}/events.out.tfevents.") for s in runs[V(n)]["sources"])
        merged = next(d["text"] for d in runs[V(n)]["identity"] if d["rule"] == "same-values")
        assert f"neighbouring versions version_{n} and version_{n + 1}" in merged


def test_equal_values_in_versions_that_are_not_neighbours_stay_two_runs(tmp_path):
    """Counter-example: without version_1 (the first fit's events) and version_4 (the repeat's metrics.csv),
    version_0 and version_5 hold equal values and one configuration, but nothing else ties them."""
    runs = runs_of(inspect_of(ingest(copy_without(ONE_ROOT, tmp_path / "logs", V(1), V(4)))))
    assert sorted(runs) == [V(0), V(2), V(5)]
    assert runs[V(0)]["formats"] == ["lightning-csv"] and runs[V(5)]["formats"] == ["lightning-csv", "tensorboard"]


def test_tensorboard_in_the_trainer_s_default_folder_is_that_folder_s_run():
    """save_strategy="no" and no save_state(): out/nosave/runs/<date>_<host> holds the only records; its
    logged arguments name out/nosave, and the final summary at max_steps says it completed."""
    runs = runs_of(inspect_of(ingest(TB_ONLY)))
    assert sorted(runs) == ["baseline-try1", "baseline-try2", "big-batch", "crashy", "huge-batch", "nosave", "retry"]
    assert runs["nosave"]["status"] == "completed"
    assert "final training summary (train/train_runtime) is at step 25, max_steps 25" in runs["nosave"]["status_reason"]


def test_a_trainer_summary_short_of_max_steps_is_a_stop_by_the_training_loop(tmp_path):
    """The events of an early-stopped run without its output folder: the summary at step 9 of 30."""
    logs = tmp_path / "logs"
    shutil.copytree(CAMPAIGNS / "trainer-tb-outside" / "tb" / "es-stop", logs / "tb" / "es-stop")
    runs = runs_of(inspect_of(ingest(logs)))
    assert sorted(runs) == ["es-stop"]  # its output_dir (out/es-stop) holds no events: no folder to name it
    assert runs["es-stop"]["status"] == "stopped"
    assert "is at step 9 of max_steps 30: the training loop stopped itself" in runs["es-stop"]["status_reason"]


def test_a_path_names_a_folder_only_by_its_last_parts():
    from reportgen.ingest.scan import path_ends_with

    assert path_ends_with("/home/u/exp/out/nosave", "out/nosave")
    assert not path_ends_with("/data/runs/exp1", "runs")  # runs/<date>_<host> is not that output_dir
    assert not path_ends_with("/data/runs/exp1", "")


def test_a_log_whose_printed_values_are_one_run_s_joins_it_and_its_crash_ends_it():
    runs = runs_of(inspect_of(ingest(TB_ONLY)))
    assert rules(runs["crashy"], "linked") == ["printed-values"]
    assert runs["crashy"]["status"] == "interrupted"
    assert "OutOfMemoryError" in runs["crashy"]["status_reason"]
    assert rules(runs["nosave"], "linked") == ["printed-values"]


def test_a_log_appended_by_two_repeats_is_split_and_each_process_goes_to_its_run():
    """baseline-try1 and -try2 run one configuration and seed one after the other into nohup.out: their
    losses are equal, the runtimes each printed in its final summary are its own."""
    data = inspect_of(ingest(TB_ONLY))
    runs = runs_of(data)
    linked = {name: next(d for d in runs[name]["identity"] if d["decision"] == "linked")
              for name in ("baseline-try1", "baseline-try2")}
    assert {d["rule"] for d in linked.values()} == {"printed-values"}
    lines = {name: d["evidence"][0]["line"] for name, d in linked.items()}
    assert lines["baseline-try1"] == 1 < lines["baseline-try2"]
    assert runs["baseline-try1"]["resumes"] is None and runs["baseline-try2"]["resumes"] is None
    assert not any(u["path"] == "nohup.out" for u in data["unlinked_sources"])


def test_an_evaluation_bar_nested_in_training_starts_no_new_process(tmp_path):
    """Counter-example, from the real nohup.out: its first process's evaluation bars (nested: drawn with
    ESC[A) given the training bar's total of 30. A bar at 0 of that total is still no new process."""
    from reportgen.ingest import textlog

    real = (TB_ONLY / "nohup.out").read_text(encoding="utf-8")
    _info, _messages, sessions = textlog.read(TB_ONLY / "nohup.out", "nohup.out")
    assert len(sessions) == 2
    first = "\n".join(real.split("\n")[: sessions[1].first_line - 1])
    nested = re.sub(r"(\d+)/4 (\[[^\r\n\x1b]*\])\x1b\[A", lambda m: f"{m[1]}/30 {m[2]}\x1b[A", first)
    assert "| 0/30 [00:00<?, ?it/s]\x1b[A" in nested  # the change the test relies on
    (tmp_path / "nohup.out").write_text(nested, encoding="utf-8")
    _info, _messages, sessions = textlog.read(tmp_path / "nohup.out", "nohup.out")
    assert len(sessions) == 1


def test_printed_learning_rates_and_epochs_alone_tie_no_run():
    """Counter-example: every run of one schedule logs the same learning rates and epochs."""
    from reportgen.ingest.identity import _by_values, logged_values
    from reportgen.ingest.textlog import Session

    campaign = ingest(TB_ONLY)
    values = logged_values(campaign)
    session = Session(0, 1, 9)
    for name in ("learning_rate", "epoch"):
        for v in values.of("nosave", name)[:5]:
            session.values.add(1, name, float(v), 1e-9)
    assert len(session.values) == 10
    assert _by_values(session, list(campaign.runs.values()), values, "x.log")[0] == []
    for v in values.of("nosave", "loss")[:3]:  # values that tell runs apart
        session.values.add(2, "loss", float(v), 1e-9)
    assert _by_values(session, list(campaign.runs.values()), values, "x.log")[0] == ["nosave"]


# --- checkpoints saved outside the version folders, Lightning's progress bar, crashes mid-bar ----

DIRPATH = CAMPAIGNS / "lightning-dirpath"


def checkpoints_by_run(data: dict, folder: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for check in data["checkpoints"]:
        if check["path"].startswith(folder):
            out.setdefault(check["run"], []).append(check["path"].rsplit("/", 1)[1])
    return {run: sorted(names) for run, names in out.items()}


def test_checkpoints_saved_outside_the_version_folders_go_to_the_runs_that_saved_them():
    """ModelCheckpoint(dirpath=ckpts/<name>): big is killed at step 45 and continued from step 40 into a new
    version, saving into the same folder; twin-a and twin-b are one configuration and seed in one folder."""
    data = inspect_of(ingest(DIRPATH))
    runs = runs_of(data)
    assert sorted(runs) == [V(n) for n in range(5)]  # ckpts/small, ckpts/big, ckpts/twin are no runs
    assert checkpoints_by_run(data, "ckpts/small/") == {V(0): [
        "epoch=0-step=20.ckpt", "epoch=1-step=40.ckpt", "epoch=2-step=60.ckpt", "epoch=3-step=80.ckpt"]}
    assert checkpoints_by_run(data, "ckpts/big/") == {
        V(1): ["epoch=0-step=20.ckpt", "epoch=1-step=40.ckpt"], V(2): ["epoch=2-step=60.ckpt", "epoch=3-step=80.ckpt"]}
    twins = checkpoints_by_run(data, "ckpts/twin/")
    assert all("-v1" not in name for name in twins[V(3)]) and all("-v1" in name for name in twins[V(4)])
    assert runs[V(2)]["resumes"] == V(1) and runs[V(2)]["resumed_at_step"] == 40
    assert {n: runs[V(n)]["status"] for n in range(5)} == {
        0: "completed", 1: "interrupted", 2: "completed", 3: "completed", 4: "completed"}


def test_a_checkpoint_of_no_run_s_configuration_stays_with_its_folder(tmp_path):
    """Counter-example: without version_0 (width 16) no run records ckpts/small's configuration; the
    runs of width 64 and 32 trained to the same steps, and are not given its checkpoints."""
    data = inspect_of(ingest(copy_without(DIRPATH, tmp_path / "logs", V(0))))
    assert set(checkpoints_by_run(data, "ckpts/small/")) == {"small"}
    assert "small" in runs_of(data)


def test_a_repeat_s_checkpoint_with_no_other_record_is_not_given_to_the_first(tmp_path):
    """Counter-example: without version_4 (the second twin's events and hyperparameters), its -v1 files
    fit version_3 by configuration and steps, but the suffix says another run saved them."""
    data = inspect_of(ingest(copy_without(DIRPATH, tmp_path / "logs", V(4))))
    twins = checkpoints_by_run(data, "ckpts/twin/")
    assert all("-v1" not in name for name in twins[V(3)]) and len(twins[V(3)]) == 4
    assert all("-v1" in name for name in twins["twin"]) and len(twins["twin"]) == 4


def test_lightning_s_progress_bar_version_ties_a_log_to_its_version():
    runs = runs_of(inspect_of(ingest(DIRPATH)))
    assert rules(runs[V(0)], "linked") == ["logger-version"]  # small.log names no path of the run
    assert rules(runs[V(3)], "linked") == rules(runs[V(4)], "linked") == ["logger-version"]  # twin.log, split


def test_a_progress_bar_version_several_runs_have_ties_none():
    """Counter-example: two runs with a version_0 folder (two logger roots)."""
    from reportgen.ingest.identity import _by_version
    from reportgen.ingest.textlog import Session
    from reportgen.model import Run

    session = Session(0, 1, 20, versions=[(19, 0)])
    candidates = [Run("exp-a/version_0"), Run("exp-b/version_0"), Run("exp-b/version_1")]
    folders = {r.id: [r.id] for r in candidates}
    assert _by_version(session, candidates, folders, "x.log")[0] == ["exp-a/version_0", "exp-b/version_0"]
    session.versions = [(19, 1)]
    assert _by_version(session, candidates, folders, "x.log")[0] == ["exp-b/version_1"]


def test_lightning_s_hp_metric_placeholder_is_no_logged_step():
    """TensorBoardLogger writes hp_metric = -1 at step 0; the first step the run logged is 4."""
    runs = runs_of(inspect_of(ingest(DIRPATH)))
    assert {runs[V(n)]["first_step"] for n in (0, 1, 3, 4)} == {4}
    assert "hp_metric" not in runs[V(0)]["metrics"]


def test_a_traceback_on_a_progress_bar_s_line_ends_that_process():
    """retry.log: big-batch's out-of-memory traceback continues its progress bar's line at step 11;
    huge-batch fails on its first batch, its bar still at 0; then the retry's bar starts at 0 again:
    three processes, each crash its own process's."""
    from reportgen.ingest import textlog

    _info, messages, sessions = textlog.read(TB_ONLY / "retry.log", "retry.log")
    assert len(sessions) == 3
    crashes = [(m.session, m.kind) for m in messages if m.kind in ("oom", "traceback")]
    assert crashes == [(0, "oom"), (1, "oom")]
    data = inspect_of(ingest(TB_ONLY))
    runs = runs_of(data)
    assert runs["big-batch"]["status"] == "interrupted" and "OutOfMemoryError" in runs["big-batch"]["status_reason"]
    assert runs["retry"]["status"] == "completed"
    assert not any(m["kind"] == "oom" for m in runs["retry"]["messages"])
    # huge-batch left only its TensorBoard arguments: nothing ties the process that crashed to it, so
    # that process is listed apart with its error, and the run says it does not know how it ended
    apart = [u for u in data["unlinked_sources"] if u["path"] == "retry.log"]
    assert [[m["kind"] for m in u["messages"] if m["kind"] == "oom"] for u in apart] == [["oom"]]
    assert runs["huge-batch"]["status"] == "unknown"


def test_a_printed_clock_time_stands_for_the_interval_its_digits_leave_open():
    """logging's 05:30:14,123 is any moment of that millisecond: one that began before a run's first record
    and ends inside it counts; one a millisecond earlier does not."""
    from datetime import UTC, datetime, timedelta

    from reportgen.ingest.identity import _by_clock
    from reportgen.ingest.textlog import Session
    from reportgen.model import Run

    first = datetime(2026, 11, 3, 5, 30, 14, 123400, tzinfo=UTC)
    run = Run("r", started_at=first, last_seen_at=first + timedelta(seconds=5))
    printed = datetime(2026, 11, 3, 5, 30, 14, 123000, tzinfo=UTC)
    session = Session(0, 1, 2, times=[printed], clock_resolution=0.001)
    assert _by_clock(session, [run])[0] == ["r"]
    session.times = [printed - timedelta(milliseconds=1)]
    assert _by_clock(session, [run])[0] == []


def test_a_configuration_with_number_and_text_keys_has_an_id():
    """YAML reads `0:` as a number key: beside text keys it cannot be sorted as it is (a training_args.yaml
    of any bytes found this)."""
    from reportgen.ingest.identity import config_differences, config_id
    assert config_id({0: 1, "lr": 2, "nested": [{1: "a", "b": 2}]}) == config_id({"0": 1, "lr": 2, "nested": [{"1": "a", "b": 2}]})
    assert config_differences({"x": [{1: "a", "b": 2}]}, {"x": [{1: "a", "b": 3}]}) == ["x"]


# --- successive records of one logger in one folder's run ------------------------------------------

def _spans_union(first_end: int, second_start: int) -> list[list[str]]:
    """A Trainer folder and two W&B runs whose config names it, seen over [0, first_end] and
    [second_start, 100] seconds: are they one run?"""
    from datetime import UTC, datetime, timedelta

    from reportgen.ingest.identity import _Pair, _union
    from reportgen.ingest.scan import Source
    from reportgen.model import Evidence
    t0 = datetime(2026, 12, 6, tzinfo=UTC)
    sources = {"hf": Source("hf", "hf-trainer", "lr1e-2", Evidence("out/lr1e-2/trainer_state.json"), folder="out/lr1e-2")}
    for key in ("w1", "w2"):
        sources[key] = Source(key, "wandb", key, Evidence(f"wandb/{key}/run.wandb"), folder=f"wandb/{key}",
                              dirs={"output_dir": "out/lr1e-2"})
    pairs = [_Pair("hf", k, 2, "its output_dir configuration names out/lr1e-2/", "output-dir", (), True) for k in ("w1", "w2")]
    spans = {"w1": (t0, t0 + timedelta(seconds=first_end)), "w2": (t0 + timedelta(seconds=second_start), t0 + timedelta(seconds=100))}
    return _union(["hf", "w1", "w2"], pairs, sources, {}, spans)


def test_successive_wandb_runs_naming_one_folder_are_its_records():
    assert _spans_union(first_end=40, second_start=50) == [["hf", "w1", "w2"]]


def test_counter_example_wandb_runs_naming_one_folder_that_overlap_are_not_one_run():
    """Two processes alive at once are two runs, whatever folder they name: none is joined."""
    assert _spans_union(first_end=60, second_start=50) == [["hf"], ["w1"], ["w2"]]


def test_the_distinct_values_of_a_trace_are_numpys_unique_by_sorting():
    """identity._distinct stands for np.unique on integer keys and NaN-free steps (sorted, each once)."""
    import numpy as np

    from reportgen.ingest.identity import _distinct

    rng = np.random.default_rng(7)
    for values in (rng.integers(-2**62, 2**62, 5000), rng.integers(0, 40, 5000), np.arange(0), np.array([3, 3, 3]),
                   rng.integers(0, 100, 3000).astype("float64"), np.array([-0.0, 0.0, 1.5, 1.5])):
        assert np.array_equal(_distinct(values), np.unique(values))
