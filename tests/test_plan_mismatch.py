"""Plan and logs that do not describe the same campaign are warned about, never silently reported:
no run at all, no run of any variant (an unrelated plan), run patterns that match nothing, runs no
variant or step claims, a plan frozen after the rented window opened. Each rule has its
counter-example; `build --strict` turns the warnings into exit 1."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
from click.testing import CliRunner
from conftest import LOT_END, SAMPLE_LOGS, WINDOW_START

from reportgen.analysis.schedule import Window
from reportgen.analysis.warnings import plan_mismatches
from reportgen.cli import cli
from reportgen.model import (
    METRIC_FRAME_COLUMNS,
    Campaign,
    Evidence,
    Run,
    RunKind,
    WarningCode,
)
from reportgen.plan.schema import Plan


def campaign_of(*run_ids: str, kind: RunKind = RunKind.TRAINING) -> Campaign:
    """Runs that started an hour into the rented window and logged the plan's quality metric."""
    campaign = Campaign(root="logs")
    campaign.metrics = pd.DataFrame(columns=[*METRIC_FRAME_COLUMNS, "loss", "eval_rougeL"])
    for run_id in run_ids:
        campaign.runs[run_id] = Run(run_id, kind=kind, start_evidence=Evidence(f"runs/{run_id}/events.jsonl", 1),
                                    started_at=WINDOW_START + timedelta(hours=1))
    return campaign


# Every run pattern of the sample plan matched: pilot, resume-check, control, lora-r16, lora-r64, eval-all.
MATCHED = ("pilot-1", "resume-check-1", "control-1", "lora-r16-1", "lora-r64-1", "eval-all-1")


def codes(warnings) -> list[str]:
    return [w.code for w in warnings]


def found(plan: Plan, campaign: Campaign, variants: dict[str, str | None], dropped=frozenset({"lora-r16-len2048"}),
          frozen_at=None):
    return plan_mismatches(plan, campaign, variants, set(dropped), frozen_at, Window(WINDOW_START, LOT_END))


def test_logs_whose_every_run_matches_the_plan_give_no_warning(plan):
    variants = {"control-1": "control", "lora-r16-1": "lora-r16", "lora-r64-1": "lora-r64"}
    assert found(plan, campaign_of(*MATCHED), variants) == []


def test_no_run_at_all_is_a_warning_and_the_patterns_are_not_listed_one_by_one(plan):
    warnings = found(plan, campaign_of(), {})
    assert codes(warnings) == [WarningCode.NO_RUNS]
    assert warnings[0].message == "no run was found in the logs (no file read): every figure below is the plan's, nothing was measured"


def test_an_unrelated_plan_is_one_mismatch_warning_plus_each_pattern_that_matched_nothing(plan):
    campaign = campaign_of("resnet-a", "resnet-b")
    warnings = found(plan, campaign, {"resnet-a": None, "resnet-b": None})
    assert codes(warnings)[0] == WarningCode.PLAN_MISMATCH
    assert warnings[0].message == ("none of the 2 training runs belongs to a variant of the plan: is this the plan of "
                                   "these logs?")
    assert warnings[0].evidence == [Evidence("runs/resnet-a/events.jsonl", 1), Evidence("runs/resnet-b/events.jsonl", 1)]
    unmatched = [w.message for w in warnings if w.code == WarningCode.UNMATCHED_PATTERN]
    assert "variant control: its run pattern 'control-*' matches no run in the logs" in unmatched
    assert "schedule step pilot: its run pattern 'pilot-*' matches no run in the logs" in unmatched
    # Every run is unclaimed: that is the mismatch, not a second warning per run.
    assert WarningCode.UNCLAIMED_RUN not in codes(warnings)


def test_a_dropped_variant_and_its_step_are_expected_to_have_no_run(plan):
    """The exploratory variant dropped at a decision point has pattern 'len2048-*' on the variant and
    its step: no warning. Counter-example: not dropped, both patterns are reported."""
    variants = {"control-1": "control", "lora-r16-1": "lora-r16", "lora-r64-1": "lora-r64"}
    assert found(plan, campaign_of(*MATCHED), variants, dropped=set()) and codes(
        found(plan, campaign_of(*MATCHED), variants, dropped=set())) == [WarningCode.UNMATCHED_PATTERN] * 2


def test_a_run_that_neither_a_variant_nor_a_step_claims_is_named(plan):
    variants = {"control-1": "control", "lora-r16-1": "lora-r16", "lora-r64-1": "lora-r64", "stray-7": None}
    warnings = found(plan, campaign_of(*MATCHED, "stray-7"), variants)
    assert codes(warnings) == [WarningCode.UNCLAIMED_RUN]
    assert warnings[0].message == ("1 run that neither a variant nor a schedule step of the plan claims: stray-7; "
                                   "their results count for no verdict")
    # Counter-example: pilot-1 belongs to no variant but the pilot step claims it; an evaluation run is not training.
    assert found(plan, campaign_of(*MATCHED), {**variants, "pilot-1": None}) == []


def test_a_plan_frozen_after_the_window_opened_is_warned_and_one_frozen_before_is_not(plan):
    variants = {"control-1": "control", "lora-r16-1": "lora-r16", "lora-r64-1": "lora-r64"}
    late = found(plan, campaign_of(*MATCHED), variants, frozen_at=WINDOW_START + timedelta(days=30))
    assert codes(late) == [WarningCode.FROZEN_LATE]
    assert late[0].message.startswith("the plan was frozen 30.0 days after the rented window opened (2026-11-02 09:00:00+09:00)")
    assert found(plan, campaign_of(*MATCHED), variants, frozen_at=WINDOW_START - timedelta(days=1)) == []


def test_a_quality_metric_no_run_logged_is_warned_with_the_metrics_the_logs_have(plan):
    variants = {"control-1": "control", "lora-r16-1": "lora-r16", "lora-r64-1": "lora-r64"}
    campaign = campaign_of(*MATCHED)
    campaign.metrics = pd.DataFrame(columns=[*METRIC_FRAME_COLUMNS, "loss", "eval_accuracy"])
    warnings = found(plan, campaign, variants)
    assert codes(warnings) == [WarningCode.METRIC_NOT_LOGGED]
    assert warnings[0].message == ("no run logged the plan's quality metric eval_rougeL, so no variant can be judged: "
                                   "the logs have loss, eval_accuracy")


def test_runs_that_started_outside_the_rented_window_are_warned(plan):
    """Counter-example: the runs of campaign_of start an hour into the window (no warning above);
    here one starts a day before it opened and one after it closed."""
    variants = {"control-1": "control", "lora-r16-1": "lora-r16", "lora-r64-1": "lora-r64"}
    campaign = campaign_of(*MATCHED)
    campaign.runs["control-1"].started_at = WINDOW_START - timedelta(days=1)
    campaign.runs["lora-r64-1"].started_at = LOT_END + timedelta(minutes=1)
    campaign.runs["lora-r16-1"].started_at = LOT_END  # the window's last instant is still inside
    warnings = found(plan, campaign, variants)
    assert codes(warnings) == [WarningCode.OUTSIDE_WINDOW]
    assert warnings[0].message.startswith("2 runs started outside the rented window (2026-11-02 09:00:00+09:00 to "
                                          "2026-11-05 09:00:00+09:00): control-1, lora-r64-1;")


def test_an_unrelated_plan_warns_at_the_end_of_build_and_strict_exits_1(tmp_path, write_plan, sample_plan_data):
    def unrelated(data):
        for variant in data["variants"]:
            variant["id"] = f"resnet-{variant['id']}"
            variant["runs"] = [f"resnet-{variant['id']}-*"]
        for step in data["schedule"]["steps"]:
            step.pop("variant", None)
            step["runs"] = [f"resnet-{step['id']}-*"]
        for point in data.get("decision_points", []):
            point.pop("options", None)
        data["deliverables"] = [d for d in data["deliverables"] if "variant" not in d]
        for rule in data["stop_rules"]:
            rule.pop("variants", None)

    plan = write_plan(sample_plan_data, unrelated)
    result = CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(plan), "-o", str(tmp_path / "site")])
    assert result.exit_code == 0, result.output
    assert ("warning: none of the 9 training runs belongs to a variant of the plan: is this the plan of these logs?"
            in result.output)
    index = (tmp_path / "site" / "index.html").read_text()
    assert index.index("is this the plan of these logs?") < index.index("<h2>Question</h2>")  # at the top
    strict = CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(plan), "-o", str(tmp_path / "s2"), "--strict", "-q"])
    assert strict.exit_code == 1 and "--strict: the site was written, the build fails" in strict.output


def test_an_empty_logs_folder_warns_that_no_run_was_found(tmp_path, write_plan, sample_plan_data):
    logs = tmp_path / "logs"
    logs.mkdir()
    plan = write_plan(sample_plan_data)
    result = CliRunner().invoke(cli, ["build", str(logs), str(plan), "-o", str(tmp_path / "site")])
    assert result.exit_code == 0, result.output
    assert "warning: no run was found in the logs (no file read)" in result.output
    assert CliRunner().invoke(cli, ["build", str(logs), str(plan), "-o", str(tmp_path / "s2"), "--strict"]).exit_code == 1


def test_a_run_naming_a_variant_the_plan_lacks_is_not_warned_again_as_unclaimed(plan):
    """assign_variants already says "names variant 'lora-r61', which the plan does not have"."""
    variants = {"control-1": "control", "lora-r16-1": "lora-r16", "lora-r64-1": "lora-r64", "stray-7": None}
    campaign = campaign_of(*MATCHED, "stray-7")
    campaign.runs["stray-7"].variant = "lora-r61"
    assert found(plan, campaign, variants) == []
