"""Advice that learns (R16, R9, R8, R7): a variant that diverged, failed or was dropped is not proposed
again unchanged; the lot ordered is compared first; each figure names the measurement behind it;
the draft plan and the suggested schedule leave out what is not proposed, and report.json says so
per step."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
import yaml
from click.testing import CliRunner
from conftest import SAMPLE_LOGS, SAMPLE_PLAN

from reportgen.analysis.estimates import (
    Advice,
    Case,
    Divergence,
    advise_variants,
)
from reportgen.analysis.options import lot_advice
from reportgen.analysis.stops import Firing, Stop
from reportgen.analysis.verdicts import VariantResult, VariantVerdict
from reportgen.build import prepare
from reportgen.cli import cli
from reportgen.model import Evidence
from reportgen.plan.load import load_plan
from reportgen.plan.schema import Plan, Variant

# -- advise_variants: one case at a time ------------------------------------------------------------


def result(verdict: VariantVerdict, *, id: str = "v", role: str = "variant", category: str = "useful",
           value: float | None = None, reason: str = "why", runs: tuple[str, ...] = ("v-1",)) -> VariantResult:
    variant = Variant(id=id, role=role, category=category)
    return VariantResult(variant, verdict, reason, list(runs), value, [Evidence("runs/v-1/events.jsonl", 90)])


def stop(kind: str, *, run: str = "v-1", rule: str = "S", step: int = 100, reason: str = "the condition held") -> Stop:
    firing = Firing(step, None, reason, [Evidence(f"runs/{run}/events.jsonl", step)])
    return Stop(f"{run}:{rule}", run, rule, kind, None, firing)


def nan_loss(run: str = "v-1", step: int = 2140) -> dict[str, list[Divergence]]:
    return {run: [Divergence(run, "grad_norm", "infinite", step - 2, [Evidence(f"runs/{run}/events.jsonl", 7)]),
                  Divergence(run, "loss", "NaN", step, [Evidence(f"runs/{run}/events.jsonl", 9)])]}


def advise(one: VariantResult, stops: list[Stop] | None = None, diverged: dict | None = None):
    (advice,) = advise_variants([one], stops or [], diverged or {})
    return advice


def test_an_optional_variant_that_diverged_is_left_out_with_its_value_step_and_the_change_to_try():
    advice = advise(result(VariantVerdict.STOPPED, id="lora-r64"), [stop("non_finite", rule="S1-nonfinite", step=2140)],
                    nan_loss())
    assert (advice.case, advice.advice, advice.proposed) == (Case.DIVERGED, Advice.DROP, False)
    # The loss is cited before the gradient norm that went first: it is what the user watches.
    assert advice.reason == "lora-r64 diverged: loss NaN at step 2,140 of v-1, and S1-nonfinite stopped it."
    assert advice.action.startswith("Left out of the next plan: drop it, or rerun it with a change such as a lower "
                                    "learning rate") and "which change is yours to decide" in advice.action
    assert Evidence("runs/v-1/events.jsonl", 9) in advice.evidence and Evidence("runs/v-1/events.jsonl", 2140) in advice.evidence


def test_a_required_variant_that_diverged_is_kept_only_with_a_change():
    advice = advise(result(VariantVerdict.STOPPED, category="required"), [stop("non_finite")], nan_loss())
    assert (advice.case, advice.advice, advice.proposed) == (Case.DIVERGED, Advice.CHANGE, True)
    assert advice.action.startswith("Kept only with a change you make first, because the question needs it (required)")
    # Counter-example: the same divergence on a useful variant leaves it out.
    assert advise(result(VariantVerdict.STOPPED, category="useful"), [stop("non_finite")], nan_loss()).advice == Advice.DROP


def test_a_non_finite_loss_is_a_divergence_even_when_no_rule_named_it():
    # No non_finite rule in the plan: the run only stopped for quality, but its loss was NaN first.
    advice = advise(result(VariantVerdict.STOPPED), [stop("below_threshold", step=2000)], nan_loss())
    assert advice.case == Case.DIVERGED and "also S fired on v-1 at step 2,000" in advice.reason
    # Counter-example: an infinite gradient norm alone is no divergence; the quality stop decides.
    norm_only = {"v-1": [Divergence("v-1", "grad_norm", "infinite", 50)]}
    assert advise(result(VariantVerdict.STOPPED), [stop("below_threshold")], norm_only).case == Case.STOPPED_BELOW_THRESHOLD


def test_a_non_finite_final_value_is_a_divergence():
    advice = advise(result(VariantVerdict.FAILED, value=float("nan"), reason="final eval_score is nan"))
    assert (advice.case, advice.advice) == (Case.DIVERGED, Advice.DROP)
    assert advice.reason == "v diverged: final eval_score is nan."


def test_a_passed_variant_is_kept():
    advice = advise(result(VariantVerdict.PASSED, value=0.6, reason="final eval_score 0.6 >= 0.5"))
    assert (advice.case, advice.advice, advice.proposed) == (Case.PASSED, Advice.KEEP, True)
    assert advice.reason == "v passed: final eval_score 0.6 >= 0.5."


def test_a_failed_variant_is_left_out_and_a_failed_control_is_kept():
    failed = advise(result(VariantVerdict.FAILED, value=0.4, reason="final eval_score 0.4 is not >= 0.5"))
    assert (failed.case, failed.advice) == (Case.FAILED, Advice.DROP)
    assert "its answer is in, and running it again unchanged would repeat it" in failed.action
    # Counter-example: the control under the threshold is the baseline the variants are compared with.
    control = advise(result(VariantVerdict.FAILED, role="control", category="required", value=0.3))
    assert (control.case, control.advice) == (Case.BASELINE, Advice.KEEP)


def test_a_later_run_that_reached_its_end_stands_over_an_earlier_runs_divergence():
    # v-1 diverged and was stopped; v-2, a new configuration, completed and passed.
    passed = result(VariantVerdict.PASSED, value=0.6, runs=("v-1", "v-2"), reason="final eval_score 0.6 >= 0.5")
    advice = advise(passed, [stop("non_finite")], nan_loss())
    assert (advice.case, advice.advice) == (Case.PASSED, Advice.KEEP)
    assert "earlier, S fired on v-1 at step 100" in advice.reason and "plan the configuration that reached its end" in advice.reason


def test_a_budget_stop_keeps_the_variant_with_a_full_run_and_a_quality_stop_leaves_it_out():
    # A rule of kind `other` (here: stop when the lot has 6 h left) says nothing of the variant's results:
    # the user expects the next lot to hold its whole run, not to lose the variant.
    budget = advise(result(VariantVerdict.STOPPED), [stop("other", rule="B1-budget", reason="6 h left in the lot")])
    assert (budget.case, budget.advice, budget.proposed) == (Case.STOPPED_OTHER, Advice.KEEP, True)
    assert budget.reason == "v was stopped: B1-budget fired on v-1 at step 100: 6 h left in the lot."
    assert "the next lot must hold a whole run" in budget.action
    # Counter-example: a quality rule judged the same run under the bar: not proposed again unchanged.
    quality = advise(result(VariantVerdict.STOPPED), [stop("below_threshold", rule="S2-quality")])
    assert (quality.case, quality.advice) == (Case.STOPPED_BELOW_THRESHOLD, Advice.DROP)
    # When both fired, the quality judgement decides.
    both = advise(result(VariantVerdict.STOPPED), [stop("other", step=50), stop("below_threshold", rule="Q", step=60)])
    assert both.case == Case.STOPPED_BELOW_THRESHOLD


def test_cut_inputs_or_a_missing_resume_state_keep_a_variant_only_with_their_fix():
    cut = advise(result(VariantVerdict.STOPPED), [stop("truncation")])
    assert (cut.case, cut.advice) == (Case.STOPPED_TRUNCATION, Advice.CHANGE)
    assert "every required input must fit the context" in cut.action
    resume = advise(result(VariantVerdict.STOPPED), [stop("no_resume")])
    assert (resume.case, resume.advice) == (Case.STOPPED_NO_RESUME, Advice.CHANGE)
    interrupted = advise(result(VariantVerdict.STOPPED), [stop("interrupted")])
    assert (interrupted.case, interrupted.advice) == (Case.STOPPED_INTERRUPTED, Advice.KEEP)


def test_a_quality_stop_on_the_control_limits_the_rule_instead_of_dropping_the_control():
    advice = advise(result(VariantVerdict.STOPPED, role="control", category="required"), [stop("below_threshold", rule="S2")])
    assert (advice.advice, advice.proposed) == (Advice.CHANGE, True)
    assert "limit S2 to the variants" in advice.action


def test_a_variant_dropped_at_a_decision_point_is_not_proposed_again():
    dropped = result(VariantVerdict.DROPPED, runs=(), reason="dropped at after-pilot: cannot change the choice.")
    advice = advise(dropped)
    assert (advice.case, advice.advice) == (Case.DROPPED, Advice.DROP)
    assert advice.reason == "v was dropped at after-pilot: cannot change the choice."
    # A variant never run (not dropped) keeps its place, with the plan's figure.
    assert advise(result(VariantVerdict.NOT_RUN, runs=())).advice == Advice.KEEP


def test_stops_of_other_variants_runs_do_not_count():
    advice = advise(result(VariantVerdict.STOPPED, runs=("v-1",)), [stop("non_finite", run="w-1"), stop("other")],
                    nan_loss("w-1"))
    assert advice.case == Case.STOPPED_OTHER


# -- lot_advice: the ordered lot first --------------------------------------------------------------


def test_a_schedule_that_fits_the_ordered_lot_orders_it_again_with_the_spare_hours(plan):
    advice = lot_advice(plan, 48.0)  # R6: 48 h in the 72 h window leaves 24 h unused
    assert advice.recommended == advice.ordered and advice.shortfall_hours is None
    assert (advice.ordered.label, advice.ordered.price, advice.ordered.unused_hours) == ("RTX 4090, 3 days", 47.14, 24.0)
    assert advice.message == ("The suggested schedule takes 48.0 h: it fits the RTX 4090, 3 days lot you ordered "
                              "(47.14 USD), with 24.0 h spare (72 h window - 48.0 h). Order the same lot again; the "
                              "spare hours are margin, not time to fill.")


def test_a_schedule_the_ordered_lot_cannot_hold_says_how_far_short_and_finds_the_cheapest_that_can(plan):
    advice = lot_advice(plan, 78.0)  # R8: 48 h + 30 h = 78 h, 6 h over 3 days
    assert advice.ordered.fits is False and advice.shortfall_hours == 6.0
    assert (advice.recommended.label, advice.recommended.price) == ("RTX 4090, 7 days", 110.0)
    assert "the RTX 4090, 3 days lot you ordered falls 6.0 h short (72 h window - 78.0 h = -6.0 h)" in advice.message
    # Counter-example: longer than every lot of the catalogue: no lot, and a reduced protocol is suggested.
    none = lot_advice(plan, 721.0)
    assert none.recommended is None and "reduced protocol that still answers the question" in none.message


def test_an_ordered_longer_lot_is_ordered_again_and_a_cheaper_fitting_lot_is_named(sample_plan_data):
    lot = sample_plan_data["order"]["lots"][0]
    lot.update(label="RTX 4090, 7 days", days=7, price=110)
    advice = lot_advice(Plan.model_validate(sample_plan_data), 44.6)
    assert (advice.recommended.label, advice.recommended.ordered) == ("RTX 4090, 7 days", True)
    assert "fits the RTX 4090, 7 days lot you ordered" in advice.message
    assert "A cheaper lot also holds it: RTX 4090, 3 days at 47.14 USD, with 27.4 h spare." in advice.message
    assert [x.ordered for x in advice.lots] == [False, True, False]


def test_lots_ordered_one_after_another_are_judged_as_ordered_and_the_catalogues_as_side_by_side(tmp_path, sample_plan_data,
                                                                                               write_plan):
    """A 3-day lot on gpu0, then a 1-day lot on gpu1 from its end, with control-preds, train-r16 and evaluate on
    gpu1: the suggested schedule as ordered waits for gpu1's lot (so the ordered lots fall short), while two
    3-day lots of the catalogue, side by side from the start, hold it as gpu1 needs no wait there."""
    def edit(data: dict) -> None:
        first = data["order"]["lots"][0]
        first["gpu_names"] = ["gpu0"]
        data["order"]["lots"].append({**first, "label": "RTX 4090, 1 day", "days": 1, "price": 20,
                                      "start": "2026-11-05T09:00:00+09:00", "gpu_names": ["gpu1"]})
        for step in data["schedule"]["steps"]:
            if step["id"] in ("control-preds", "train-r16", "evaluate"):
                step["resource"] = "gpu1"

    nxt = prepare(SAMPLE_LOGS, write_plan(sample_plan_data, edit)).report["next_campaign"]
    ordered, lots = nxt["ordered_lot"], {lot["label"]: lot for lot in nxt["lots"]}
    assert nxt["suggested_hours"] > 96  # gpu1's steps from its lot's start, 72 h in
    assert not ordered["fits"] and ordered["hours"] == 96.0
    pair = lots["2 × RTX 4090, 3 days"]
    assert (pair["fits"], pair["price"]) == (True, 94.28)
    assert pair["unused_hours"] == pytest.approx(72.0 - 44.6, abs=0.1)  # side by side: the sample's 44.6 h
    assert "The cheapest catalogue lot that holds it is 2 × RTX 4090, 3 days at 94.28 USD" in nxt["lot_advice"]
    assert "h with the lots side by side)" in nxt["lot_advice"]
    # Counter-example: the same lots from one start: one figure, the schedule's, and no "side by side".
    def together(data: dict) -> None:
        edit(data)
        data["order"]["lots"][1]["start"] = data["order"]["lots"][0]["start"]

    same = prepare(SAMPLE_LOGS, write_plan(sample_plan_data, together, name="together.yaml")).report["next_campaign"]
    assert same["suggested_hours"] == pytest.approx(44.6, abs=0.1) and "side by side" not in same["lot_advice"]


def test_two_lots_ordered_are_compared_as_one_at_their_summed_price(sample_plan_data):
    # R7: two 3-day lots cost 94.28 USD; side by side they still give a 72 h window.
    second = dict(sample_plan_data["order"]["lots"][0], gpu_names=["gpu1"], order_ref="IG-2")
    sample_plan_data["order"]["lots"].append(second)
    advice = lot_advice(Plan.model_validate(sample_plan_data), 50.0)
    assert (advice.ordered.label, advice.ordered.price, advice.ordered.hours) == ("2 × RTX 4090, 3 days", 94.28, 72.0)
    assert advice.recommended == advice.ordered


def test_two_lots_ordered_one_after_another_keep_their_own_window_in_the_lots_table(sample_plan_data):
    """Back to back, two 3-day lots span 144 h: the table's row for that catalogue entry is the ordered
    lots with that window, not the 72 h of the same lots side by side."""
    first = sample_plan_data["order"]["lots"][0]
    second = dict(first, start="2026-11-05T09:00:00+09:00", gpu_names=["gpu1"], order_ref="IG-2")
    sample_plan_data["order"]["lots"].append(second)
    advice = lot_advice(Plan.model_validate(sample_plan_data), 100.0)
    assert (advice.ordered.hours, advice.ordered.fits) == (144.0, True)
    row = next(lot for lot in advice.lots if lot.label == "2 × RTX 4090, 3 days")
    assert row is advice.ordered and row.ordered
    # Counter-example: the 7-day entry is a catalogue lot, doubled side by side: 168 h, not ordered.
    week = next(lot for lot in advice.lots if lot.label == "2 × RTX 4090, 7 days")
    assert (week.hours, week.ordered) == (168.0, False)


# -- the sample, end to end -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    site = tmp_path_factory.mktemp("site") / "site"
    before = hashlib.sha256(SAMPLE_PLAN.read_bytes()).hexdigest()
    outcome = CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(site), "-q"])
    assert outcome.exit_code == 0, outcome.output
    assert hashlib.sha256(SAMPLE_PLAN.read_bytes()).hexdigest() == before  # the plan is never modified
    return site, json.loads((site / "report.json").read_text(encoding="utf-8"))


def test_the_sample_leaves_out_the_diverged_and_the_dropped_variant_and_keeps_the_others(built):
    _, report = built
    advice = {v["id"]: v for v in report["next_campaign"]["variants"]}
    assert {v: (a["advice"], a["case"]) for v, a in advice.items()} == {
        "control": ("keep", "baseline"), "lora-r16": ("keep", "passed"),
        "lora-r64": ("drop", "diverged"), "lora-r16-len2048": ("drop", "dropped")}
    assert advice["lora-r64"]["reason"].startswith("lora-r64 diverged: loss NaN at step 2,140 of lora-r64-1, and "
                                                   "S1-nonfinite stopped it")
    assert {"path": "runs/lora-r64-1/events.jsonl", "line": 229} in advice["lora-r64"]["evidence"]
    # The control's first run was stopped for cut inputs; the run that reached its end is the one to plan.
    assert "earlier, S3-truncation fired on control-1" in advice["control"]["reason"]


def test_next_campaign_says_per_step_whether_it_is_still_proposed(built):
    _, report = built
    plan = report["next_campaign"]
    steps = {s["id"]: s for s in plan["steps"]}
    assert [s["id"] for s in plan["steps"]] == [s["id"] for s in report["schedule"]["steps"]]
    assert [i for i, s in steps.items() if not s["proposed"]] == plan["left_out"] == ["train-r64", "explore-len2048"]
    assert steps["train-r64"]["next_hours"] is None and "lora-r64 diverged" in steps["train-r64"]["left_out_reason"]
    assert steps["train-r16"]["next_hours"] == pytest.approx(12.6008, abs=1e-4) and steps["train-r16"]["left_out_reason"] is None
    estimates = {e["id"]: e for e in report["estimates"] if e["kind"] == "step"}
    assert all(estimates[i]["in_suggested_schedule"] is s["proposed"] for i, s in steps.items())
    # The suggested schedule adds up only the proposed steps: 55.25 h with train-r64, 44.62 h without it.
    assert plan["suggested_hours"] == pytest.approx(44.62, abs=0.01)


def test_each_step_names_the_measurements_its_runs_made(built):
    _, report = built
    estimates = {e["item"]: e for e in report["estimates"]}
    pace = {m["quantity"]: m for m in estimates["step train-r16"]["measurements"]}
    assert pace["seconds a step"]["measured"] == pytest.approx(12.3448, abs=1e-4)
    assert pace["seconds a step"]["count"] == 2980 and "of lora-r16-1, lora-r16-2" in pace["seconds a step"]["basis"]
    campaign_wide = {m["quantity"]: m for m in report["next_campaign"]["measurements"]}
    assert pace["seconds a step"]["measured"] == campaign_wide["seconds a step (lora-r16)"]["measured"]
    assert (pace["checkpoint save"]["count"], pace["checkpoint save"]["measured"]) == (7, 31.5)
    assert pace["evaluation pass"]["basis"] == "median of 6 evaluations in lora-r16-1, lora-r16-2"
    resume = {m["quantity"] for m in estimates["step resume-check"]["measurements"]}
    assert resume == {"checkpoint restore", "reload test in a new process"}
    # Counter-example: a step with no runs of its own names none; its basis is its step events.
    assert estimates["step write-outputs"]["measurements"] == [] and "(step events)" in estimates["step write-outputs"]["basis"]


def test_the_draft_plan_comments_out_what_is_left_out_and_still_checks(built):
    site, report = built
    draft = site / report["next_campaign"]["draft_plan"]
    text = draft.read_text(encoding="utf-8")
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "- id: train-r64" in line)
    assert lines[start].lstrip().startswith("# - id: train-r64  # left out by reportgen: lora-r64 diverged: loss NaN")
    assert all(line.lstrip().startswith("# ") for line in lines[start:start + 9])
    assert "depends_on: [control-preds, train-r16]  # train-r64 left out by reportgen" in text
    loaded = load_plan(draft)
    assert [v.id for v in loaded.plan.variants] == ["control", "lora-r16"]
    assert "train-r64" not in {s.id for s in loaded.plan.schedule.steps}
    checked = CliRunner().invoke(cli, ["check", str(draft)])
    assert checked.exit_code == 0, checked.output
    assert "planned 44.6 h of a 72 h window" in checked.output  # the draft's schedule is the suggested one


def test_the_draft_plan_also_leaves_out_what_only_a_left_out_variant_needed(tmp_path, sample_plan_data, write_plan):
    from reportgen.render.nextplan import next_plan

    def needs_r64(d):
        d["deliverables"].append({"id": "adapter-lora-r64", "kind": "adapter", "variant": "lora-r64"})
        d["stop_rules"].append({"id": "S5-r64", "kind": "other", "description": "Only for r64.", "variants": ["lora-r64"]})
        d["stop_rules"][1]["variants"] = ["lora-r16", "lora-r64"]
        d["decision_points"].append({"id": "after-r64", "after": "train-r64", "question": "Keep r64?"})

    path = write_plan(sample_plan_data, needs_r64)
    text = path.read_text(encoding="utf-8")
    # Block-style lists (yaml.safe_dump writes one item a line).
    assert "    depends_on:\n    - control-preds\n    - train-r16\n    - train-r64\n" in text
    analysis = prepare(SAMPLE_LOGS, path).analysis
    draft = next_plan(load_plan(path), analysis.plan.campaign.id, analysis.next)
    header = next(i for i, line in enumerate(draft.splitlines()) if not line.startswith("# "))
    assert len(draft.splitlines()) - header == len(text.splitlines())  # line for line after the header
    out = tmp_path / "draft.yaml"
    out.write_text(draft, encoding="utf-8")
    plan = load_plan(out).plan
    assert [d.id for d in plan.deliverables if d.variant == "lora-r64"] == []
    assert "S5-r64" not in {r.id for r in plan.stop_rules}
    assert next(r for r in plan.stop_rules if r.id == "S2-quality").variants == ["lora-r16"]
    assert [p.id for p in plan.decision_points] == ["after-pilot"]
    assert next(s for s in plan.schedule.steps if s.id == "evaluate").depends_on == ["control-preds", "train-r16"]
    assert CliRunner().invoke(cli, ["check", str(out)]).exit_code == 0


def test_the_user_facing_advice_cites_no_rule_ids(built):
    site, report = built
    plan = report["next_campaign"]
    quoted = [d["reason"] for d in report["decisions"] if d["reason"]]  # the user's own words, quoted
    produced = [plan["lot_advice"], plan["interruption_allowance_basis"], *[u["message"] for u in plan["uncertainties"]],
                *[v["action"] for v in plan["variants"]], *[e["basis"] for e in report["estimates"]]]
    page = re.sub(r"<[^>]+>", " ", (site / "next.html").read_text(encoding="utf-8"))
    for text in quoted:
        page = page.replace(text.replace("'", "&#39;"), "").replace(text, "")
        produced = [p.replace(text.rstrip("."), "") for p in produced]
    rule_id = re.compile(r"\(R\d+\b|\bR\d+:|\bR\d+\)")  # "(R8)", "(R10: ...", "R12:"
    assert not [p for p in produced if rule_id.search(p)]
    assert not rule_id.findall(page)
    assert yaml.safe_load((site / report["next_campaign"]["draft_plan"]).read_text(encoding="utf-8"))


def test_the_report_json_reference_lists_every_advice_and_case():
    from conftest import REPO

    doc = (REPO / "docs" / "report-json.md").read_text(encoding="utf-8")
    section = doc.split("### `next_campaign`", 1)[1].split("\n## ", 1)[0]
    rows = set(re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.MULTILINE))
    assert {a.value for a in Advice} | {c.value for c in Case} <= rows
    for key in ("variants", "steps", "ordered_lot", "ordered_shortfall_hours", "lot_advice"):
        assert f"`{key}`" in section


def test_with_no_variant_left_to_try_the_lot_advice_says_new_variants_come_first(sample_plan_data):
    """Counter-example to "order the same lot again": when every variant is left out, a re-order would
    only run the control again."""
    plan = Plan.model_validate(sample_plan_data)
    said = lot_advice(plan, 20.0, nothing_to_try=True).message
    assert said.startswith("No variant is proposed again, so the question needs new variants before another lot "
                           "is ordered; without them the suggested schedule (the control and the shared steps) takes 20.0 h")
    assert lot_advice(plan, 20.0).message.startswith("The suggested schedule takes 20.0 h: it fits")


def test_a_left_out_step_is_replaced_in_each_dependency_list_by_what_it_waited_for(sample_plan_data):
    """evaluate waits for control-preds, train-r16 and train-r64; train-r64 (left out) waited for
    resume-check, which control-preds already waits for: nothing is added. Counter-example: a step
    whose only dependency is left out inherits that step's own dependencies instead of none."""
    from reportgen.analysis.estimates import kept_dependencies

    plan = Plan.model_validate(sample_plan_data)
    assert kept_dependencies(plan, "evaluate", {"train-r64"}) == ["control-preds", "train-r16"]
    assert kept_dependencies(plan, "evaluate", set()) == ["control-preds", "train-r16", "train-r64"]
    assert kept_dependencies(plan, "write-outputs", {"evaluate"}) == ["control-preds", "train-r16", "train-r64"]
    assert kept_dependencies(plan, "write-outputs", {"evaluate", "train-r64"}) == ["control-preds", "train-r16"]


def test_the_draft_edits_hours_and_dependencies_written_in_a_flow_mapping(tmp_path, sample_plan_data):
    """Steps written as {id: ..., hours: ..., depends_on: [...]} on one line are edited in place too,
    so the draft passes `reportgen check` with the next estimates."""
    text = SAMPLE_PLAN.read_text(encoding="utf-8")
    flow = yaml.safe_load(text)
    lines = ["    - " + yaml.safe_dump(step, default_flow_style=True, width=10_000).strip()
             for step in flow["schedule"]["steps"]]
    start = text.index("  steps:\n") + len("  steps:\n")
    end = text.index("\ndecision_points:")
    written = tmp_path / "plan.yaml"
    written.write_text(text[:start] + "\n".join(lines) + "\n" + text[end + 1:], encoding="utf-8")
    site = tmp_path / "site"
    assert CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(written), "-o", str(site), "-q"]).exit_code == 0
    draft = (site / "next-plan.yaml").read_text(encoding="utf-8")
    evaluate = next(line for line in draft.splitlines() if "id: evaluate" in line)
    assert "depends_on: [control-preds, train-r16]" in evaluate and "# train-r64 left out by reportgen" in evaluate
    assert "hours: next estimate from" in evaluate
    assert "left as planned" not in draft
    checked = CliRunner().invoke(cli, ["check", str(site / "next-plan.yaml")])
    assert checked.exit_code == 0, checked.output


def test_a_divergence_takes_the_value_logged_at_the_row_its_window_cites_and_no_other():
    """The value a non-finite window reports is the one at its first cited row: that file and that line, the
    metric logged there. Counter-examples: the same line number in another file of the run, and a row of the
    cited line where the metric was not logged, say nothing of it."""
    import pandas as pd
    import pyarrow as pa

    from reportgen.analysis.estimates import divergences
    from reportgen.analysis.nonfinite import NonFinite
    from reportgen.model import Campaign

    rows = [  # (path, line, step, loss, grad_norm); None: not logged
        ("a/events.jsonl", 7, 70, float("nan"), None),
        ("b/events.jsonl", 7, 70, float("inf"), 1.0),  # the same line number in another file
        ("b/events.jsonl", 9, 90, None, -float("inf")),
        ("b/events.jsonl", 9, 90, float("inf"), None),  # a second row of line 9: loss is logged here
    ]
    campaign = Campaign(root="logs")
    campaign.metrics = pd.DataFrame({
        "path": [r[0] for r in rows], "line": [r[1] for r in rows], "run": "r1", "kind": "train",
        "step": pd.array([r[2] for r in rows], dtype="Int64"), "ts": pd.NaT,
        # NaN logged is kept apart from not logged, as the readers keep it
        "loss": pd.arrays.ArrowExtensionArray(pa.array([r[3] for r in rows], pa.float64(), from_pandas=False)),
        "grad_norm": pd.arrays.ArrowExtensionArray(pa.array([r[4] for r in rows], pa.float64(), from_pandas=False)),
    })
    cited = {"a7": Evidence("a/events.jsonl", 7), "b7": Evidence("b/events.jsonl", 7), "b9": Evidence("b/events.jsonl", 9),
             "c1": Evidence("c/events.jsonl", 1)}
    windows = {"r1": [NonFinite("r1", "loss", 70, 70, 1, [cited["a7"]]),
                      NonFinite("r1", "loss", 70, 70, 1, [cited["b7"]]),
                      NonFinite("r1", "grad_norm", 90, 90, 1, [cited["b9"]]),
                      NonFinite("r1", "loss", 90, 90, 1, [cited["b9"]]),
                      NonFinite("r1", "grad_norm", 70, 70, 1, [cited["a7"]]),  # not logged at a:7
                      NonFinite("r1", "loss", 1, 1, 1, [cited["c1"]])]}  # a file with no rows
    found = [d.value for d in divergences(campaign, windows)["r1"]]
    assert found == ["NaN", "infinite", "-infinite", "infinite", "not finite", "not finite"]
