"""Deliverables judged and the costs counted (R10, R13, R14) as pure functions of the checks, the
runs' statuses and the variants' verdicts: every rejection says why, and every cost is the plan's."""

from __future__ import annotations

import pytest
from conftest import LOT_END

from reportgen.analysis.deliverables import costs, judge
from reportgen.analysis.verdicts import VariantResult, VariantVerdict
from reportgen.model import (
    Campaign,
    DeliverableCheck,
    Evidence,
    FileReport,
    ManifestEntry,
)
from reportgen.plan.schema import Plan


@pytest.fixture
def plan(sample_plan_data) -> Plan:
    sample_plan_data["order"]["other_costs"] = [
        {"label": "Storage", "amount": 12.5, "kind": "included"},
        {"label": "Egress", "amount": 0.37, "kind": "included"},
        {"label": "Reference summaries", "amount": 120.0, "kind": "external"},
    ]
    # Predictions of lora-r16 on three corpora, as the plan's deliverables: only those count.
    sample_plan_data["deliverables"] += [{"id": f"p{n}", "kind": "predictions", "variant": "lora-r16", "corpus": f"c{n}"}
                                         for n in (1, 2, 3)]
    return Plan.model_validate(sample_plan_data)


def unlisted(plan: Plan, listed: list[str]) -> list[str]:
    return [d.id for d in plan.deliverables if d.id not in listed]


def check(entry_id: str, kind: str, digest: str, line: int, **fields) -> DeliverableCheck:
    entry = ManifestEntry(entry_id, kind, [f"outputs/{entry_id}"], Evidence("outputs/manifest.yaml", line), **fields)
    return DeliverableCheck(entry, [FileReport(f"outputs/{entry_id}", exists=True, bytes=10, sha256=digest)])


def passed_variants(plan: Plan) -> list[VariantResult]:
    return [VariantResult(v, VariantVerdict.PASSED, "", [], 0.33) for v in plan.variants]


def test_a_deliverable_naming_a_run_or_variant_the_logs_and_plan_lack_is_rejected_saying_which(plan):
    found = judge(plan, Campaign(root="logs"), [check("p1", "predictions", "a", 1, run="ghost-1"),
                                                check("p2", "predictions", "b", 2, variant="lora-r61")],
                  {}, passed_variants(plan), LOT_END)
    assert [(r.id, r.passed, r.reasons) for r in found] == [
        ("p1", False, ["produced by run 'ghost-1', which is not in the logs"]),
        ("p2", False, ["the plan's p2 is predictions of lora-r16; the manifest lists predictions of lora-r61",
                       "names variant 'lora-r61', which the plan does not have"])]


def test_a_deliverable_of_a_variant_that_did_not_pass_is_rejected_with_its_verdict_and_value(plan):
    variants = [VariantResult(v, VariantVerdict.NOT_EVALUATED if v.id == "lora-r64" else VariantVerdict.FAILED, "", [],
                              None if v.id == "lora-r64" else 0.301) for v in plan.variants]
    found = judge(plan, Campaign(root="logs"), [check("c", "predictions", "a", 1, variant="control"),
                                                check("r64", "adapter", "b", 2, variant="lora-r64")],
                  {}, variants, LOT_END)
    assert [r.reasons for r in found] == [["variant control did not meet eval_rougeL >= 0.320: failed (0.301)"],
                                          ["variant lora-r64 did not meet eval_rougeL >= 0.32: not evaluated"]]


def test_two_adapters_of_one_variant_with_other_bytes_are_two_deliverables_not_a_duplicate(plan):
    """Only predictions are deduplicated by subject (kind, variant, corpus); an adapter names no corpus."""
    found = judge(plan, Campaign(root="logs"), [check("a1", "adapter", "x", 1, variant="lora-r16"),
                                                check("a2", "adapter", "y", 2, variant="lora-r16")],
                  {}, passed_variants(plan), LOT_END)
    assert [(r.id, r.passed, r.duplicate_of) for r in found] == [("a1", True, None), ("a2", True, None)]
    # Counter-example: the same bytes again is the same deliverable, whatever its kind.
    same = judge(plan, Campaign(root="logs"), [check("a1", "adapter", "x", 1, variant="lora-r16"),
                                               check("a3", "adapter", "x", 3, variant="lora-r16")],
                 {}, passed_variants(plan), LOT_END)
    assert same[1].duplicate_of == "a1"


def test_costs_keep_included_costs_to_the_cent_and_external_ones_apart(plan):
    found = judge(plan, Campaign(root="logs"), [check("p1", "predictions", "a", 1, variant="lora-r16", corpus="c1")],
                  {}, passed_variants(plan), LOT_END)
    total = costs(plan, found)
    assert (total.rental, total.included) == (47.14, 12.87)  # 12.5 + 0.37: not rounded to whole units
    assert [c.label for c in total.other_included] == ["Storage", "Egress"]
    assert [c.label for c in total.external] == ["Reference summaries"]
    # One passed output: 47.14 per output; with the included costs, (47.14 + 12.87) / 1 = 60.01.
    assert (total.passed_outputs, total.per_output, total.per_output_with_included) == (1, 47.14, 60.01)
    assert (total.counted, total.excluded, total.undefined_reason) == (["p1"], [], None)


def test_counter_example_no_passed_output_leaves_the_cost_per_output_undefined_with_the_reason(plan):
    rejected = judge(plan, Campaign(root="logs"), [check("p1", "predictions", "a", 1, run="ghost-1")],
                     {}, passed_variants(plan), LOT_END)
    total = costs(plan, rejected)
    assert (total.passed_outputs, total.per_output, total.per_output_with_included) == (0, None, None)
    assert total.undefined_reason == "no predictions deliverable passed its checks (see the rejections)"
    assert total.rejections == [("p1", ["produced by run 'ghost-1', which is not in the logs"])]


def test_the_cost_per_output_is_rounded_to_the_cent_over_three_outputs_and_names_what_is_missing(plan):
    checks = [check(f"p{n}", "predictions", str(n), n, variant="lora-r16", corpus=f"c{n}") for n in (1, 2, 3)]
    total = costs(plan, judge(plan, Campaign(root="logs"), checks, {}, passed_variants(plan), LOT_END))
    # 47.14 / 3 = 15.7133 -> 15.71; (47.14 + 12.87) / 3 = 20.0033 -> 20.0.
    assert (total.passed_outputs, total.per_output, total.per_output_with_included) == (3, 15.71, 20.0)
    assert total.missing == unlisted(plan, ["p1", "p2", "p3"])  # the plan's deliverables the manifest does not list


@pytest.mark.parametrize(("listed", "why"), [
    ([], "no deliverables manifest lists what the campaign produced, so no output can pass its checks"),
    ([("a1", "adapter")], "no predictions deliverable was listed, so no complete corpus was delivered"),
])
def test_each_reason_the_cost_per_output_is_undefined_keeps_every_other_figure(plan, listed, why):
    checks = [check(i, kind, i, 1, variant="lora-r16") for i, kind in listed]
    total = costs(plan, judge(plan, Campaign(root="logs"), checks, {}, passed_variants(plan), LOT_END))
    assert (total.per_output, total.undefined_reason) == (None, why)
    assert (total.rental, total.included, [c.label for c in total.external]) == (47.14, 12.87, ["Reference summaries"])
    assert total.missing == unlisted(plan, [i for i, _ in listed])
    assert total.excluded == [(i, "of kind 'adapter': only complete corpora of predictions are outputs") for i, _ in listed]


def test_an_output_the_plan_never_asked_for_is_not_counted_and_says_why(plan):
    """Cost per passed output counts the plan's deliverables: a 300-item file on another corpus that
    no deliverable names does not halve the cost. Counter-example: p1, which the plan names, counts."""
    checks = [check("p1", "predictions", "a", 1, variant="lora-r16", corpus="c1"),
              check("extra-dev", "predictions", "b", 2, variant="lora-r16", corpus="dev-300")]
    found = judge(plan, Campaign(root="logs"), checks, {}, passed_variants(plan), LOT_END)
    assert [(r.id, r.passed, r.planned) for r in found] == [("p1", True, True), ("extra-dev", True, False)]
    total = costs(plan, found)
    assert (total.passed_outputs, total.per_output, total.counted) == (1, 47.14, ["p1"])
    assert total.excluded == [("extra-dev", "not a deliverable of the plan: only outputs the plan set out to deliver are counted")]


def test_predictions_that_pass_but_none_the_plan_names_leave_the_cost_undefined_saying_so(plan):
    found = judge(plan, Campaign(root="logs"), [check("extra", "predictions", "b", 2, variant="lora-r16")],
                  {}, passed_variants(plan), LOT_END)
    total = costs(plan, found)
    assert (total.passed_outputs, total.per_output) == (0, None)
    assert total.undefined_reason == "the predictions that passed are not deliverables the plan names (see the excluded outputs)"


def test_a_planned_deliverable_on_another_corpus_than_the_plan_asks_is_rejected(plan):
    found = judge(plan, Campaign(root="logs"), [check("p2", "predictions", "a", 1, variant="lora-r16", corpus="c3")],
                  {}, passed_variants(plan), LOT_END)
    assert found[0].reasons == ["covers corpus 'c3'; the plan asks for 'c2'"]
    # Counter-example: a manifest entry that names no corpus is checked against the plan's ids instead.
    unnamed = judge(plan, Campaign(root="logs"), [check("p2", "predictions", "a", 1, variant="lora-r16")],
                    {}, passed_variants(plan), LOT_END)
    assert unnamed[0].passed


def test_the_plans_deliverable_is_the_original_when_an_unplanned_repeat_is_listed_first(plan):
    checks = [check("timing-1", "predictions", "x", 1, variant="lora-r16", corpus="c1"),
              check("p1", "predictions", "x", 2, variant="lora-r16", corpus="c1")]
    found = {r.id: r for r in judge(plan, Campaign(root="logs"), checks, {}, passed_variants(plan), LOT_END)}
    assert (found["p1"].duplicate_of, found["timing-1"].duplicate_of) == (None, "p1")
    assert costs(plan, list(found.values())).counted == ["p1"]


def test_the_controls_predictions_are_the_baseline_delivered_not_rejected_and_not_counted(plan):
    """The control's final value is the baseline: its predictions pass their checks but, below the
    threshold, are no passed output. Counter-example: a control at the passing level counts."""
    def with_control(value: float) -> list[VariantResult]:
        return [VariantResult(v, VariantVerdict.BASELINE if v.role == "control" else VariantVerdict.PASSED, "", [],
                              value if v.role == "control" else 0.33) for v in plan.variants]

    entry = [check("predictions-control", "predictions", "a", 1, variant="control")]
    below = judge(plan, Campaign(root="logs"), entry, {}, with_control(0.301), LOT_END)
    assert (below[0].passed, below[0].reasons, below[0].counts) == (True, [], False)
    assert costs(plan, below).excluded == [("predictions-control", "the control's output, the baseline (0.301), below "
                                                                   "the passing level eval_rougeL >= 0.320")]
    at_level = judge(plan, Campaign(root="logs"), entry, {}, with_control(0.33), LOT_END)
    assert at_level[0].counts and costs(plan, at_level).counted == ["predictions-control"]


def test_a_planned_id_listed_twice_counts_once_and_the_second_listing_is_rejected(plan):
    checks = [check("p1", "predictions", "a", 1, variant="lora-r16", corpus="c1"),
              check("p1", "predictions", "b", 9, variant="lora-r16", corpus="c1")]
    found = judge(plan, Campaign(root="logs"), checks, {}, passed_variants(plan), LOT_END)
    assert found[1].reasons == ["deliverable p1 is listed again (first at outputs/manifest.yaml:1): one id, one output"]
    assert costs(plan, found).counted == ["p1"]  # 47.14 over one output, not 23.57 over "two"


def test_a_planned_id_of_another_kind_in_the_manifest_is_rejected_saying_both(plan):
    """The plan's adapter-lora-r16 is an adapter: a manifest entry of that id holding predictions is
    not counted as an output. Counter-example: the same id of the plan's kind passes."""
    wrong = judge(plan, Campaign(root="logs"), [check("adapter-lora-r16", "predictions", "a", 1, variant="lora-r16")],
                  {}, passed_variants(plan), LOT_END)
    assert wrong[0].reasons == ["the plan's adapter-lora-r16 is adapter of lora-r16; the manifest lists predictions of lora-r16"]
    assert costs(plan, wrong).counted == []
    right = judge(plan, Campaign(root="logs"), [check("adapter-lora-r16", "adapter", "a", 1, variant="lora-r16")],
                  {}, passed_variants(plan), LOT_END)
    assert right[0].passed


def test_predictions_the_manifest_lists_without_a_corpus_take_the_corpus_the_plan_names(plan):
    """p2 is planned on corpus c2: listed without `corpus`, it is still p2's corpus, not the campaign's,
    and so not a repeat of the campaign-corpus predictions listed before it."""
    checks = [check("predictions-lora-r16", "predictions", "a", 1, variant="lora-r16"),
              check("p2", "predictions", "b", 2, variant="lora-r16")]
    found = {r.id: r for r in judge(plan, Campaign(root="logs"), checks, {}, passed_variants(plan), LOT_END)}
    assert (found["p2"].corpus, found["p2"].duplicate_of) == ("c2", None)
    assert costs(plan, list(found.values())).counted == ["predictions-lora-r16", "p2"]


def test_a_plan_that_plans_no_predictions_is_told_that_no_output_can_count(sample_plan_data):
    from reportgen.analysis.plan_checks import check_plan

    sample_plan_data["deliverables"] = [d for d in sample_plan_data["deliverables"] if d["kind"] != "predictions"]
    found = [f.message for f in check_plan(Plan.model_validate(sample_plan_data)) if f.key == ("deliverables",)]
    assert found == ["no predictions deliverable is planned: no output can count, so the cost per passed output "
                     "stays undefined"]
    # A plan with no deliverables at all (the key is optional) is told the same.
    del sample_plan_data["deliverables"]
    assert [f for f in check_plan(Plan.model_validate(sample_plan_data)) if f.key == ("deliverables",)]


def test_the_sample_plan_is_not_warned_about_its_deliverables(sample_plan_data):
    from reportgen.analysis.plan_checks import check_plan

    assert not [f for f in check_plan(Plan.model_validate(sample_plan_data)) if f.key == ("deliverables",)]
