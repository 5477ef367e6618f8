"""The campaign's verdict (R1) and the choices behind each variant's (R3, R10) as pure functions:
the sentence each verdict reads as, which evaluation is final, and which drop decision counts."""

from __future__ import annotations

from datetime import datetime

import pytest
from conftest import first_day

from reportgen.analysis.status import RunStatus
from reportgen.analysis.stops import Ledger, Stop
from reportgen.analysis.verdicts import (
    CampaignVerdict,
    VariantResult,
    VariantVerdict,
    Verdict,
    _drop_decision,
    _final_evaluation,
    answer,
    assign_variants,
    campaign_verdict,
    variant_results,
)
from reportgen.model import (
    Campaign,
    Evaluation,
    Evidence,
    LoggedDecision,
    LoggedStop,
    Run,
    RunKind,
    Status,
    StoppedBy,
)
from reportgen.plan.schema import Plan


def results(plan: Plan, verdicts: dict[str, tuple[VariantVerdict, float | None]]) -> list[VariantResult]:
    by_id = {v.id: v for v in plan.variants}
    return [VariantResult(by_id[v], verdict, "", [], value) for v, (verdict, value) in verdicts.items()]


def test_a_positive_verdict_names_every_passed_variant_with_its_value(plan):
    found = campaign_verdict(plan, results(plan, {"control": (VariantVerdict.PASSED, 0.33),
                                                  "lora-r16": (VariantVerdict.PASSED, 0.334),
                                                  "lora-r64": (VariantVerdict.PASSED, 0.3412345)}))
    # The control is the baseline, never one of the variants that answer the question.
    assert (found.verdict, found.conclusion) == (
        CampaignVerdict.POSITIVE, "lora-r16 (0.334), lora-r64 (0.3412) met eval_rougeL >= 0.32.")


def test_a_negative_verdict_is_a_complete_answer_when_every_required_variant_fell_short(plan):
    found = campaign_verdict(plan, results(plan, {"lora-r16": (VariantVerdict.FAILED, 0.30),
                                                  "lora-r64": (VariantVerdict.FAILED, 0.31),
                                                  "lora-r16-len2048": (VariantVerdict.DROPPED, None)}))
    assert (found.verdict, found.conclusion) == (
        CampaignVerdict.NEGATIVE,
        ("No variant met eval_rougeL >= 0.32: every required variant was evaluated and fell short. "
        "This answers the question: the variants tried do not reach the threshold."))


def test_counter_example_a_required_variant_not_evaluated_leaves_it_inconclusive_and_says_which(plan):
    # lora-r16 is the sample's one required variant (lora-r64 is useful, and failing it decides nothing).
    found = campaign_verdict(plan, results(plan, {"lora-r16": (VariantVerdict.NOT_EVALUATED, None),
                                                  "lora-r64": (VariantVerdict.FAILED, 0.31)}))
    assert (found.verdict, found.conclusion) == (
        CampaignVerdict.INCONCLUSIVE,
        "No variant met eval_rougeL >= 0.32, and not every required variant was evaluated: lora-r16 (not evaluated).")
    two = campaign_verdict(plan, results(plan, {"control": (VariantVerdict.NOT_RUN, None),
                                                "lora-r16": (VariantVerdict.STOPPED, None)}))
    assert two.conclusion.endswith("evaluated: lora-r16 (stopped).")  # the control is no variant of the question
    none_required = campaign_verdict(plan, results(plan, {"lora-r64": (VariantVerdict.FAILED, 0.31)}))
    assert none_required.conclusion.endswith("not every required variant was evaluated: no required variant.")


def test_a_lower_is_better_metric_is_said_with_its_own_comparison(sample_plan_data):
    sample_plan_data["quality"].update(metric="eval_loss", direction="lower", threshold=1.5)
    plan = Plan.model_validate(sample_plan_data)
    found = campaign_verdict(plan, results(plan, {"lora-r16": (VariantVerdict.PASSED, 1.42)}))
    assert found.conclusion == "lora-r16 (1.42) met eval_loss <= 1.5."


def evaluation(step: int, when: datetime | None, line: int, value: float = 0.3) -> Evaluation:
    return Evaluation("a-1", step, when, Evidence("runs/a-1/events.jsonl", line), {"eval_rougeL": value})


def test_the_final_evaluation_is_the_latest_in_time_and_one_without_a_time_comes_before_timed_ones():
    timed_late, timed_early = evaluation(1000, first_day(12), 30), evaluation(2000, first_day(11), 20)
    assert _final_evaluation([timed_late, timed_early], "eval_rougeL") is timed_late  # time, not step
    untimed = evaluation(3000, None, 90)
    assert _final_evaluation([untimed, timed_early], "eval_rougeL") is timed_early
    # Without times (a Trainer's trainer_state.json), the step decides.
    first, last = evaluation(100, None, 5), evaluation(200, None, 6)
    assert _final_evaluation([last, first], "eval_rougeL") is last
    # Counter-example: an evaluation without the quality metric is never the final one.
    other = Evaluation("a-1", 4000, first_day(13), Evidence("runs/a-1/events.jsonl", 99), {"eval_loss": 1.0})
    assert _final_evaluation([timed_early, other], "eval_rougeL") is timed_early
    assert _final_evaluation([other], "eval_rougeL") is None


def test_the_drop_decision_that_counts_is_the_first_in_time_for_that_variant():
    later = LoggedDecision("pilot", "drop_variant", first_day(12), Evidence("campaign/events.jsonl", 3), "kept for later", "v")
    first = LoggedDecision("pilot", "drop", first_day(10), Evidence("campaign/events.jsonl", 9), "too slow", "v")
    kept = LoggedDecision("pilot", "continue", first_day(9), Evidence("campaign/events.jsonl", 1), None, "v")
    elsewhere = LoggedDecision("pilot", "drop", first_day(8), Evidence("campaign/events.jsonl", 0), None, "w")
    assert _drop_decision("v", [later, first, kept, elsewhere]) is first
    assert _drop_decision("v", [kept]) is None


# -- each variant's verdict (R1, R3, R10) ---------------------------------------------------------

def judge(plan: Plan, runs: list[Run], ended: dict[str, RunStatus], evaluations: list[Evaluation],
          stops: list[Stop] = ()) -> dict[str, tuple[VariantVerdict, str, float | None]]:
    campaign = Campaign(root="logs", runs={r.id: r for r in runs}, evaluations=evaluations)
    mapping, _ = assign_variants(plan, campaign)
    found = variant_results(plan, campaign, mapping, ended, Ledger(list(stops), [], []))
    return {r.variant.id: (r.verdict, r.reason, r.value) for r in found}


def test_an_evaluation_run_s_value_counts_for_the_variant_of_the_run_it_evaluates(plan):
    runs = [Run("lora-r16-2"), Run("eval-r16", kind="evaluation", evaluates="lora-r16-2")]
    ended = {"lora-r16-2": RunStatus(Status.COMPLETED, "ended"), "eval-r16": RunStatus(Status.COMPLETED, "ended")}
    scored = [Evaluation("eval-r16", 0, first_day(12), Evidence("eval/predict_results.json"), {"eval_rougeL": 0.334})]
    assert judge(plan, runs, ended, scored)["lora-r16"] == (
        VariantVerdict.PASSED, "final eval_rougeL 0.334 >= 0.320", 0.334)
    # Counter-example: the same value on an evaluation run of another variant's run does not count here.
    elsewhere = [Run("lora-r16-2"), Run("lora-r64-1"), Run("eval-r64", kind="evaluation", evaluates="lora-r64-1")]
    ended |= {"lora-r64-1": RunStatus(Status.COMPLETED, "ended"), "eval-r64": RunStatus(Status.COMPLETED, "ended")}
    moved = [Evaluation("eval-r64", 0, first_day(12), Evidence("eval/predict_results.json"), {"eval_rougeL": 0.334})]
    assert judge(plan, elsewhere, ended, moved)["lora-r16"][0] == VariantVerdict.NOT_EVALUATED


def test_each_variant_verdict_says_why(plan):
    runs = [Run("control-1"), Run("lora-r16-1"), Run("lora-r16-2")]
    ended = {"control-1": RunStatus(Status.COMPLETED, "ended"),
             "lora-r16-1": RunStatus(Status.INTERRUPTED, "killed"), "lora-r16-2": RunStatus(Status.UNKNOWN, "no end")}
    scores = [Evaluation("control-1", 100, first_day(11), Evidence("c.jsonl", 4), {"eval_rougeL": float("nan")})]
    found = judge(plan, runs, ended, scores)
    assert found["control"] == (VariantVerdict.FAILED, "final eval_rougeL is nan", pytest.approx(float("nan"), nan_ok=True))
    assert found["lora-r16"] == (VariantVerdict.NOT_EVALUATED, ("no run of it reached its end with a value of eval_rougeL "
                                                                "(lora-r16-1: interrupted; lora-r16-2: unknown)"), None)
    assert found["lora-r64"] == (VariantVerdict.NOT_RUN, "no run of this variant was found in the logs", None)


def test_a_variant_whose_runs_a_rule_stopped_names_each_stop_and_an_unnamed_rule_as_stop(plan):
    runs = [Run("lora-r64-1"), Run("lora-r64-2")]
    ended = {r.id: RunStatus(Status.STOPPED, "stopped", by=StoppedBy.SCRIPT) for r in runs}
    stops = [Stop("lora-r64-1:S1", "lora-r64-1", "S1", "non_finite",
                  LoggedStop("lora-r64-1", "S1", "loss NaN", first_day(11), Evidence("a.jsonl", 3)), None),
             Stop("lora-r64-2:?", "lora-r64-2", None, "other",
                  LoggedStop("lora-r64-2", None, "operator stop", first_day(12), Evidence("b.jsonl", 5)), None)]
    assert judge(plan, runs, ended, [], stops)["lora-r64"] == (
        VariantVerdict.STOPPED, "lora-r64-1: S1 (loss NaN); lora-r64-2: stop (operator stop)", None)


def test_a_lower_is_better_variant_is_judged_and_said_with_its_comparison(sample_plan_data):
    sample_plan_data["quality"].update(metric="eval_loss", direction="lower", threshold=1.5)
    plan = Plan.model_validate(sample_plan_data)
    runs = [Run("lora-r16-2"), Run("lora-r64-1")]
    ended = {r.id: RunStatus(Status.COMPLETED, "ended") for r in runs}
    scores = [Evaluation("lora-r16-2", 100, first_day(11), Evidence("a.jsonl", 4), {"eval_loss": 1.42}),
              Evaluation("lora-r64-1", 100, first_day(11), Evidence("b.jsonl", 4), {"eval_loss": 1.61})]
    found = judge(plan, runs, ended, scores)
    assert found["lora-r16"][:2] == (VariantVerdict.PASSED, "final eval_loss 1.42 <= 1.50")
    assert found["lora-r64"][:2] == (VariantVerdict.FAILED, "final eval_loss 1.61 is not <= 1.50")


def test_every_required_variant_left_undecided_is_named(sample_plan_data):
    sample_plan_data["variants"][2]["category"] = "required"  # lora-r64
    plan = Plan.model_validate(sample_plan_data)
    found = campaign_verdict(plan, results(plan, {"lora-r16": (VariantVerdict.NOT_EVALUATED, None),
                                                  "lora-r64": (VariantVerdict.STOPPED, None)}))
    assert found.conclusion.endswith("evaluated: lora-r16 (not evaluated), lora-r64 (stopped).")

# -- The question answered in one sentence ---------------------------------------------------------
# The best variant against the control on the quality metric (both values, the signed difference,
# the threshold), and what to use or what was ruled out. The control is the baseline, never failed.

POSITIVE = Verdict(CampaignVerdict.POSITIVE, "")
B, P, F, S, D = (VariantVerdict.BASELINE, VariantVerdict.PASSED, VariantVerdict.FAILED, VariantVerdict.STOPPED,
                 VariantVerdict.DROPPED)


def test_a_positive_result_states_both_values_the_signed_difference_the_threshold_and_what_to_deliver(plan):
    found = results(plan, {"control": (B, 0.301), "lora-r16": (P, 0.334), "lora-r64": (S, 0.192),
                           "lora-r16-len2048": (D, None)})
    verdict = campaign_verdict(plan, found, {"lora-r16": ["adapter-lora-r16", "predictions-lora-r16"]})
    said = verdict.answer
    assert said.sentence == (
        "Yes — lora-r16 beats the control on eval_rougeL, 0.334 against 0.301 (+0.033), and meets the pass threshold "
        "(eval_rougeL >= 0.32). Deliver from lora-r16: adapter-lora-r16, predictions-lora-r16.")
    assert (said.best, said.best_value, said.control, said.control_value, said.difference) == (
        "lora-r16", 0.334, "control", 0.301, 0.033)  # 0.033 exactly, not 0.03300000000000003
    assert said.differences == {"lora-r16": 0.033}  # lora-r64's 0.192 is a stopped run's, not a result
    assert said.ruled_out == ["lora-r64"]


def test_the_best_of_two_passing_variants_is_the_one_compared_and_lower_is_better_is_judged_so(plan, sample_plan_data):
    found = results(plan, {"control": (B, 0.301), "lora-r16": (P, 0.334), "lora-r64": (P, 0.351)})
    assert answer(plan, found, POSITIVE).best == "lora-r64"
    sample_plan_data["quality"] = {"metric": "eval_loss", "direction": "lower", "threshold": 1.0, "unit": "nats"}
    lower = Plan.model_validate(sample_plan_data)
    found = results(lower, {"control": (B, 1.2), "lora-r16": (P, 0.9), "lora-r64": (P, 0.95)})
    said = answer(lower, found, POSITIVE)
    assert said.best == "lora-r16" and said.difference == pytest.approx(-0.3)
    assert "lora-r16 beats the control on eval_loss, 0.9 nats against 1.2 nats (-0.3 nats)" in said.sentence
    assert "(eval_loss <= 1 nats)" in said.sentence


def test_a_passing_variant_that_does_not_beat_the_control_is_not_a_yes(plan):
    """Counter-example to "beats": the threshold met, the control higher still."""
    found = results(plan, {"control": (B, 0.34), "lora-r16": (P, 0.334)})
    said = answer(plan, found, POSITIVE).sentence
    assert said == ("Not over the control — lora-r16 meets the pass threshold (eval_rougeL >= 0.32) but does not beat "
                    "the control on eval_rougeL, 0.334 against 0.340 (-0.006): the threshold does not separate the "
                    "variants from the control.")


def test_a_stopped_variants_value_is_no_result_to_compare(plan):
    """lora-r64's 0.40 came from a run a rule stopped: the best judged variant is lora-r16, and the
    answer does not call a ruled-out variant the best."""
    found = results(plan, {"control": (B, 0.301), "lora-r16": (F, 0.31), "lora-r64": (S, 0.40)})
    said = answer(plan, found, Verdict(CampaignVerdict.NEGATIVE, ""))
    assert said.best == "lora-r16" and said.ruled_out == ["lora-r16", "lora-r64"]
    assert "the best, lora-r16, beats the control on eval_rougeL, 0.310 against 0.301 (+0.009)" in said.sentence


def test_with_several_controls_the_strongest_baseline_is_the_one_to_beat(plan, sample_plan_data):
    sample_plan_data["variants"].append({"id": "prompt-v2", "role": "control", "category": "required",
                                         "runs": ["prompt-v2-*"]})
    two = Plan.model_validate(sample_plan_data)
    found = results(two, {"control": (B, 0.30), "prompt-v2": (B, 0.36), "lora-r16": (P, 0.334)})
    said = answer(two, found, POSITIVE)
    assert (said.control, said.control_value, said.difference) == ("prompt-v2", 0.36, -0.026)
    assert said.sentence.startswith("Not over the control — lora-r16 meets the pass threshold (eval_rougeL >= 0.32) "
                                    "but does not beat the strongest control, prompt-v2, on eval_rougeL")


def test_a_tie_and_values_close_to_each_other_are_said_exactly(plan):
    tie = answer(plan, results(plan, {"control": (B, 0.334), "lora-r16": (P, 0.334)}), POSITIVE)
    assert "equals the control on eval_rougeL, 0.334 against 0.334 (no difference)" in tie.sentence
    close = answer(plan, results(plan, {"control": (B, 0.33401), "lora-r16": (P, 0.33404)}), POSITIVE)
    assert close.difference == 3e-05  # not 2.9999999999974492e-05
    assert "beats the control on eval_rougeL, 0.33404 against 0.33401 (+3e-05)" in close.sentence


def test_a_negative_result_names_the_best_attempt_and_what_was_ruled_out(plan):
    found = results(plan, {"control": (B, 0.301), "lora-r16": (F, 0.31), "lora-r64": (S, 0.25),
                           "lora-r16-len2048": (D, None)})
    verdict = campaign_verdict(plan, found)
    assert verdict.verdict == CampaignVerdict.NEGATIVE
    assert verdict.answer.sentence == (
        "No — no variant meets the pass threshold (eval_rougeL >= 0.32); the best, lora-r16, beats the control on "
        "eval_rougeL, 0.310 against 0.301 (+0.009). Ruled out at the settings tried: lora-r16, lora-r64.")
    assert verdict.answer.use == []


def test_without_a_control_value_the_answer_says_there_is_nothing_to_compare_with(plan):
    found = results(plan, {"control": (VariantVerdict.NOT_RUN, None), "lora-r16": (P, 0.334)})
    said = answer(plan, found, POSITIVE)
    assert (said.control, said.difference) == (None, None)
    assert ("lora-r16 reached 0.334 and no control has a final value to compare it with (control: not run)"
            in said.sentence)
    assert said.sentence.endswith("No deliverable of lora-r16 passed its checks.")


def test_an_undecided_campaign_is_not_answered_yet(plan):
    found = results(plan, {"control": (B, 0.301), "lora-r16": (VariantVerdict.NOT_EVALUATED, None),
                           "lora-r64": (F, 0.28)})
    verdict = campaign_verdict(plan, found)
    assert verdict.verdict == CampaignVerdict.INCONCLUSIVE
    assert verdict.answer.sentence.startswith("Not answered yet — no variant met eval_rougeL >= 0.32, and not every "
                                              "required variant was evaluated: lora-r16 (not evaluated); so far")
    assert "so far lora-r64 does not beat the control" in verdict.answer.sentence


def _control_run(plan: Plan, value: float) -> list[VariantResult]:
    """The control's one completed run, evaluated at `value`."""
    campaign = Campaign(root="logs")
    campaign.runs["control-1"] = Run("control-1", kind=RunKind.TRAINING)
    campaign.evaluations.append(Evaluation("control-1", 100, first_day(12), Evidence("runs/control-1/events.jsonl", 9),
                                           {"eval_rougeL": value}))
    statuses = {"control-1": RunStatus(Status.COMPLETED, "the run logged its end", [])}
    return variant_results(plan, campaign, {"control-1": "control"}, statuses, Ledger([], [], []))


def test_the_control_is_the_baseline_never_failed_and_says_when_it_meets_the_threshold_itself(plan):
    below = _control_run(plan, 0.301)[0]
    assert (below.verdict, below.reason) == (B, "final eval_rougeL 0.301: the baseline the variants are compared with")
    above = _control_run(plan, 0.35)[0]
    assert above.verdict == B
    assert above.reason == ("final eval_rougeL 0.35, itself >= 0.32: the threshold does not separate the variants "
                            "from the control")
