"""The run-status decision table (docs/stops.md, "Run status"; analysis/status.py), row by row, as a
pure function of the campaign's records: each row's status, its reason and the evidence it names,
with the counter-example where the row must not decide."""

from __future__ import annotations

import pytest
from conftest import first_day

from reportgen.analysis.status import RunStatus, run_status
from reportgen.analysis.stops import Firing, Stop
from reportgen.analysis.verdicts import after_stops, assign_variants
from reportgen.model import (
    STOPPED_BY_LOOP,
    Campaign,
    Decision,
    EventKind,
    Evidence,
    InputFile,
    LoggedStop,
    LogMessage,
    MessageKind,
    Run,
    RunEvent,
    RunFacts,
    Status,
    StoppedBy,
    WarningCode,
)
from reportgen.plan.schema import Plan


def ev(path: str, line: int | None = None) -> Evidence:
    return Evidence(path, line)


def decide(run: Run, *others: Run, **records) -> tuple[Status, str, list[Evidence], StoppedBy | None]:
    campaign = Campaign(root="logs", runs={r.id: r for r in (run, *others)}, **records)
    found = run_status(run, campaign)
    return found.status, found.reason, found.evidence, found.stopped_by


def message(kind: MessageKind, text: str, line: int, run: str = "a-1") -> LogMessage:
    return LogMessage(run, kind, text, ev("a-1.log", line))


# -- row 1: a stop the script logged -------------------------------------------------------------

def test_row1_the_earliest_logged_stop_names_the_reason_and_every_stop_is_evidence():
    stops = [LoggedStop("a-1", "S2", "eval under the floor", first_day(12), ev("e.jsonl", 9)),
             LoggedStop("a-1", "S1", "loss is NaN", first_day(11), ev("e.jsonl", 7)),
             LoggedStop("b-1", "S1", "another run's stop", first_day(10), ev("e.jsonl", 3))]
    assert decide(Run("a-1"), Run("b-1"), stops=stops) == (
        Status.STOPPED, "loss is NaN", [ev("e.jsonl", 7), ev("e.jsonl", 9)], StoppedBy.SCRIPT)


def test_row1_a_script_stop_comes_before_the_training_loop_s_own_even_when_later():
    stops = [LoggedStop("a-1", None, "early stopping patience 3", first_day(10), ev("e.jsonl", 4), by=STOPPED_BY_LOOP),
             LoggedStop("a-1", "S1", "loss is NaN", first_day(11), ev("e.jsonl", 7))]
    status, reason, evidence, by = decide(Run("a-1"), stops=stops)
    assert (status, reason, by) == (Status.STOPPED, "loss is NaN", StoppedBy.SCRIPT)
    assert evidence == [ev("e.jsonl", 7), ev("e.jsonl", 4)]


def test_row1_stops_are_taken_in_time_order_and_a_stop_with_no_time_comes_last():
    # The later stop is written higher in the file: time decides, not the line.
    timed = [LoggedStop("a-1", "S2", "later", first_day(12), ev("e.jsonl", 2)),
             LoggedStop("a-1", "S1", "earlier", first_day(11), ev("e.jsonl", 8))]
    assert decide(Run("a-1"), stops=timed)[1] == "earlier"
    untimed = [LoggedStop("a-1", "S3", "from trainer_state.json, no time", None, ev("a.json")),
               LoggedStop("a-1", "S1", "timed", first_day(11), ev("e.jsonl", 8))]
    assert decide(Run("a-1"), stops=untimed)[:3] == (Status.STOPPED, "timed", [ev("e.jsonl", 8), ev("a.json")])


# -- row 2: the training loop's own stop ----------------------------------------------------------

def test_row2_early_stopping_messages_name_the_last_and_cite_all():
    messages = [message(MessageKind.EARLY_STOP, "patience 1 of 3", 10),
                message(MessageKind.EARLY_STOP, "Early stopping at epoch 4", 20),
                message(MessageKind.EARLY_STOP, "another run's", 30, run="b-1")]
    assert decide(Run("a-1"), Run("b-1"), messages=messages) == (
        Status.STOPPED, "early stopping: Early stopping at epoch 4", [ev("a-1.log", 10), ev("a-1.log", 20)],
        STOPPED_BY_LOOP)


def test_row2_a_source_that_says_the_loop_stopped_short_names_its_reason_or_says_so():
    said = RunFacts("a-1", "hf-trainer", ev("out/trainer_state.json"), status=STOPPED_BY_LOOP,
                    reason="global_step 800 of max_steps 1,000, should_training_stop")
    silent = RunFacts("a-1", "lightning", ev("lightning_logs/version_0/hparams.yaml"), status=STOPPED_BY_LOOP)
    assert decide(Run("a-1", facts=[said, silent])) == (
        Status.STOPPED, "global_step 800 of max_steps 1,000, should_training_stop",
        [ev("out/trainer_state.json"), ev("lightning_logs/version_0/hparams.yaml")], STOPPED_BY_LOOP)
    assert decide(Run("a-1", facts=[silent]))[1] == "the training loop stopped itself"


# -- row 3: a native run_end ----------------------------------------------------------------------

@pytest.mark.parametrize(("logged", "status", "reason", "by"), [
    ("completed", Status.COMPLETED, "the run logged its end", None),
    ("stopped", Status.STOPPED, "the run ended with status 'stopped'", StoppedBy.SCRIPT),
    ("failed", Status.INTERRUPTED, "the run ended with status 'failed'", None),
])
def test_row3_a_logged_end_decides_with_its_own_line(logged, status, reason, by):
    run = Run("a-1", end_status=logged, end_evidence=ev("runs/a-1/events.jsonl", 40))
    assert decide(run) == (status, reason, [ev("runs/a-1/events.jsonl", 40)], by)


def test_row3_a_logged_end_without_a_line_cites_nothing_rather_than_an_empty_place():
    assert decide(Run("a-1", end_status="completed")) == (Status.COMPLETED, "the run logged its end", [], None)


def test_row3_a_logged_end_beats_a_crash_message_of_the_same_run():
    run = Run("a-1", end_status="completed", end_evidence=ev("runs/a-1/events.jsonl", 40))
    crash = [message(MessageKind.TRACEBACK, "Traceback (most recent call last):", 5)]
    assert decide(run, messages=crash)[0] == Status.COMPLETED


# -- row 4: an end marker -------------------------------------------------------------------------

def test_row4_an_end_marker_completes_the_run_citing_facts_then_messages():
    fact = RunFacts("a-1", "hf-trainer", ev("out/trainer_state.json"), status="completed",
                    reason="global_step 1,000 reached max_steps")
    printed = message(MessageKind.FINISHED, "{'train_runtime': 3600.1}", 90)
    assert decide(Run("a-1", facts=[fact]), messages=[printed]) == (
        Status.COMPLETED, "global_step 1,000 reached max_steps", [ev("out/trainer_state.json"), ev("a-1.log", 90)], None)
    # A printed summary alone: its text is the reason.
    assert decide(Run("a-1"), messages=[printed])[:3] == (
        Status.COMPLETED, "{'train_runtime': 3600.1}", [ev("a-1.log", 90)])
    fact_without_reason = RunFacts("a-1", "mlflow", ev("mlruns/0/r/meta.yaml"), status="completed")
    assert decide(Run("a-1", facts=[fact_without_reason]))[1] == "a source records the end of training"


# -- row 5: a cut ----------------------------------------------------------------------------------

def test_row5_a_crash_message_interrupts_naming_the_last_and_citing_every_one():
    crash = [message(MessageKind.TRACEBACK, "Traceback (most recent call last):", 5),
             message(MessageKind.OOM, "torch.OutOfMemoryError: CUDA out of memory.", 9),
             message(MessageKind.KILLED, "Killed", 11, run="b-1")]
    assert decide(Run("a-1"), Run("b-1"), messages=crash) == (
        Status.INTERRUPTED, "torch.OutOfMemoryError: CUDA out of memory.", [ev("a-1.log", 5), ev("a-1.log", 9)], None)


def test_row5_counter_example_a_warning_is_not_a_crash():
    warned = [message(MessageKind.TOO_LONG, "Token indices sequence length is longer than the maximum", 5),
              message(MessageKind.NON_FINITE, "loss is nan", 6)]
    assert decide(Run("a-1", sources=["a-1.log"]), messages=warned)[0] == Status.UNKNOWN


def test_row5_a_source_that_says_the_run_failed_interrupts_it():
    failed = RunFacts("a-1", "mlflow", ev("mlruns/0/r/meta.yaml"), status="interrupted", reason="MLflow status FAILED")
    bare = RunFacts("a-1", "mlflow", ev("mlruns/0/s/meta.yaml"), status="interrupted")
    assert decide(Run("a-1", facts=[failed, bare])) == (
        Status.INTERRUPTED, "MLflow status FAILED", [ev("mlruns/0/r/meta.yaml"), ev("mlruns/0/s/meta.yaml")], None)
    assert decide(Run("a-1", facts=[bare]))[1] == "a source shows the run did not finish"


def test_row5_a_file_of_its_own_cut_off_mid_record_interrupts_it_naming_each_cut_file():
    inputs = [InputFile("runs/a-1/z.jsonl", "reportgen-events", cut_off=True),
              InputFile("runs/a-1/events.jsonl", "reportgen-events", cut_off=True),
              InputFile("runs/a-1/other.jsonl", "reportgen-events")]
    run = Run("a-1", sources=["runs/a-1/events.jsonl", "runs/a-1/z.jsonl", "runs/a-1/other.jsonl"])
    assert decide(run, inputs=inputs) == (
        Status.INTERRUPTED, "runs/a-1/events.jsonl is cut off mid-record: its writer was stopped",
        [ev("runs/a-1/events.jsonl"), ev("runs/a-1/z.jsonl")], None)


def test_row5_counter_example_a_cut_file_another_run_also_reads_from_tells_nothing():
    inputs = [InputFile("shared.jsonl", "reportgen-events", cut_off=True)]
    a, b = Run("a-1", sources=["shared.jsonl"]), Run("b-1", sources=["shared.jsonl"])
    assert decide(a, b, inputs=inputs)[0] == Status.UNKNOWN
    # Nor does a cut file that is not the run's source.
    assert decide(Run("a-1", sources=["own.jsonl"]), inputs=inputs)[0] == Status.UNKNOWN


def resumed(**fields) -> Run:
    return Run("a-2", sources=["runs/a-2/events.jsonl"], resumes="a-1", **fields)


def test_row5_a_later_run_continuing_it_interrupts_it_citing_the_continuation_s_evidence():
    link = Decision("resumes", "logged resume", "a-2 resumes a-1", (ev("runs/a-2/events.jsonl", 1),), other="a-1")
    merged = Decision("merged", "same folder", "one run", (ev("runs/a-2/stdout.log"),))
    later = resumed(resumed_at_step=1200, first_step=1201, identity=[merged, link])
    assert decide(Run("a-1"), later) == (
        Status.INTERRUPTED, "it has no end of its own and a-2 continues it from its checkpoint at step 1200",
        [ev("runs/a-2/events.jsonl", 1)], None)


@pytest.mark.parametrize(("fields", "where"), [
    ({"first_step": 1201}, " (its first logged step is 1201)"),
    ({}, ""),
])
def test_row5_without_the_checkpoint_step_the_reason_says_what_is_known(fields, where):
    # No `resumes` decision with evidence: the continuing run's first source is cited.
    status, reason, evidence, _ = decide(Run("a-1"), resumed(**fields))
    assert (status, reason, evidence) == (
        Status.INTERRUPTED, f"it has no end of its own and a-2 continues it{where}", [ev("runs/a-2/events.jsonl")])


def test_row5_a_continuation_with_no_source_cites_nothing_rather_than_inventing_a_file():
    assert decide(Run("a-1"), Run("a-2", resumes="a-1"))[2] == []


# -- row 6: unknown --------------------------------------------------------------------------------

def test_row6_a_run_with_no_record_at_all_is_unknown_and_says_so():
    assert decide(Run("a-1")) == (Status.UNKNOWN, "neither a start nor an end was logged", [], None)


def test_row6_an_unknown_end_lists_what_each_source_shows_with_the_start_first():
    start = RunEvent("a-1", EventKind.START, first_day(10), ev("runs/a-1/events.jsonl", 1))
    seen = RunFacts("a-1", "tensorboard", ev("tb/a-1/events.out.tfevents.1.h.1.0"),
                    reason="scalars up to step 400, no end marker")
    told = RunFacts("a-1", "mlflow", ev("mlruns/0/r/meta.yaml"), status="completed", reason="not this one")
    run = Run("a-1", sources=["runs/a-1/events.jsonl"], facts=[seen], start_evidence=ev("runs/a-1/events.jsonl", 1))
    status, reason, evidence, by = decide(run, run_events=[start])
    assert (status, by) == (Status.UNKNOWN, None)
    assert reason == ("no source records how it ended: it logged its start but no end; scalars up to step 400, "
                      "no end marker (tb/a-1/events.out.tfevents.1.h.1.0); no crash message, cut-off file or later "
                      "continuation says it was cut")
    assert evidence == [ev("runs/a-1/events.jsonl", 1), ev("tb/a-1/events.out.tfevents.1.h.1.0")]
    # Counter-example: a fact that decides (completed) is not listed among what leaves the end unknown.
    assert decide(Run("a-1", facts=[told]))[0] == Status.COMPLETED


def test_row6_a_run_known_only_from_its_messages_is_not_one_with_no_record():
    warned = [message(MessageKind.TOO_LONG, "Token indices sequence length is longer than the maximum", 5)]
    assert decide(Run("a-1"), messages=warned)[1].startswith("no source records how it ended: its sources (none)")


def test_row6_a_start_with_no_line_is_said_but_not_cited():
    start = RunEvent("a-1", EventKind.START, first_day(10), ev("runs/a-1/events.jsonl", 1))
    status, reason, evidence, _ = decide(Run("a-1"), run_events=[start])
    assert status == Status.UNKNOWN and "it logged its start but no end" in reason and evidence == []


def test_row6_sources_that_record_no_end_are_named_by_format():
    run = Run("a-1", sources=["a-1/metrics.csv"], formats=["lightning-csv", "hparams"])
    assert decide(run) == (
        Status.UNKNOWN, ("no source records how it ended: its sources (lightning-csv, hparams) record no end; "
                         "no crash message, cut-off file or later continuation says it was cut"), [], None)
    assert decide(Run("a-1", sources=["a-1/metrics.csv"]))[1].startswith(
        "no source records how it ended: its sources (none) record no end;")


# -- after the plan's stop rules (R10): what reportgen's own evaluation changes ------------------

def fired(rule: str, step: int, line: int, logged: LoggedStop | None = None) -> Stop:
    evaluated = Firing(step, first_day(11), f"eval_rougeL under 0.20 at step {step}", [ev("runs/a-1/events.jsonl", line)])
    return Stop(f"a-1:{rule}", "a-1", rule, "below_threshold", logged, evaluated)


def test_after_stops_a_completed_run_whose_logs_meet_a_rule_is_stopped_by_the_rule():
    done = RunStatus(Status.COMPLETED, "the run logged its end", [ev("runs/a-1/events.jsonl", 90)])
    found = after_stops(done, [fired("S2", 2000, 40), fired("S1", 2140, 50)])
    assert (found.status, found.stopped_by, found.stopped_by_rule) == (Status.STOPPED, StoppedBy.STOP_RULE, True)
    assert found.reason == "stop rule S2 fired: eval_rougeL under 0.20 at step 2000; the run itself went on to its end"
    assert found.evidence == [ev("runs/a-1/events.jsonl", 40), ev("runs/a-1/events.jsonl", 90)]


@pytest.mark.parametrize("before", [
    RunStatus(Status.UNKNOWN, "no source records how it ended", []),
    RunStatus(Status.STOPPED, "early stopping: patience 3", [ev("a-1.log", 7)], by=STOPPED_BY_LOOP),
])
def test_after_stops_an_unknown_or_loop_stopped_run_meeting_a_rule_is_stopped_by_the_rule(before):
    found = after_stops(before, [fired("S2", 2000, 40)])
    assert (found.status, found.stopped_by) == (Status.STOPPED, StoppedBy.STOP_RULE)
    assert found.reason == "stop rule S2 fired: eval_rougeL under 0.20 at step 2000"  # it did not go on to its end
    assert found.evidence == [ev("runs/a-1/events.jsonl", 40), *before.evidence]


def test_after_stops_counter_examples_an_interrupted_run_stays_interrupted_and_no_firing_changes_nothing():
    crashed = RunStatus(Status.INTERRUPTED, "CUDA out of memory", [ev("a-1.log", 9)])
    assert after_stops(crashed, [fired("S2", 2000, 40)]) is crashed
    done = RunStatus(Status.COMPLETED, "the run logged its end", [])
    assert after_stops(done, []) is done
    logged_only = Stop("a-1:S1", "a-1", "S1", "non_finite", LoggedStop("a-1", "S1", "NaN", first_day(11), ev("e.jsonl", 3)), None)
    assert after_stops(done, [logged_only]) is done


def test_after_stops_a_script_stop_later_than_the_logs_meet_the_rule_says_so_and_keeps_who_stopped_it():
    script = LoggedStop("a-1", "S1", "loss is NaN", first_day(12), ev("runs/a-1/events.jsonl", 60), step=2140)
    stopped = RunStatus(Status.STOPPED, "loss is NaN", [ev("runs/a-1/events.jsonl", 60)], by=StoppedBy.SCRIPT)
    found = after_stops(stopped, [fired("S2", 2000, 40), Stop("a-1:S1", "a-1", "S1", "non_finite", script, None)])
    assert (found.status, found.stopped_by) == (Status.STOPPED, StoppedBy.SCRIPT)
    assert found.reason == "loss is NaN; the logs meet S2 earlier, at step 2000"
    assert found.evidence == [ev("runs/a-1/events.jsonl", 60), ev("runs/a-1/events.jsonl", 40)]
    # Counter-example: the logs meet the rule only after the script's stop: the script's word stands.
    assert after_stops(stopped, [fired("S2", 2200, 70), Stop("a-1:S1", "a-1", "S1", "non_finite", script, None)]) is stopped


# -- which variant a run belongs to ---------------------------------------------------------------

def test_variants_come_from_the_run_s_own_word_then_the_patterns_and_an_evaluation_takes_its_run_s(sample_plan_data):
    plan = Plan.model_validate(sample_plan_data)
    runs = [Run("eval-1", evaluates="lora-r16-2"), Run("lora-r16-2"), Run("mine", variant="lora-r64"),
            Run("typo", variant="lora-r61", start_evidence=ev("runs/typo/events.jsonl", 1)),
            Run("stray", sources=["stray/stdout.log"])]
    mapping, problems = assign_variants(plan, Campaign(root="logs", runs={r.id: r for r in runs}))
    assert mapping == {"eval-1": "lora-r16", "lora-r16-2": "lora-r16", "mine": "lora-r64", "stray": None, "typo": None}
    assert [(p.code, p.path, p.line, p.message) for p in problems] == [
        (WarningCode.NOT_IN_PLAN, "runs/typo/events.jsonl", 1,
         "run 'typo' names variant 'lora-r61', which the plan does not have")]


def test_a_run_matching_several_variants_takes_the_first_and_is_warned_citing_its_first_source(sample_plan_data):
    data = sample_plan_data
    data["variants"][1]["runs"] = [*data["variants"][1]["runs"], "lora-*"]  # now lora-r64-1 matches two variants
    plan = Plan.model_validate(data)
    runs = {"lora-r64-1": Run("lora-r64-1", sources=["runs/lora-r64-1/events.jsonl", "runs/lora-r64-1/stdout.log"])}
    mapping, problems = assign_variants(plan, Campaign(root="logs", runs=runs))
    (problem,) = problems
    assert (problem.code, problem.path, problem.line) == (WarningCode.AMBIGUOUS_VARIANT, "runs/lora-r64-1/events.jsonl", None)
    assert mapping["lora-r64-1"] == "lora-r16"  # the plan's order decides, and the warning says so
    assert problem.message == "run 'lora-r64-1' matches the run patterns of several variants: lora-r16, lora-r64"
