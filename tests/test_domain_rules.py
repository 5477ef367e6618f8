"""DOMAIN.md's rules R1-R16, one worked figure at a time, against the pure analysis functions.

Every input is built here (a small Plan, a Campaign dataclass with the few records a rule needs),
every expected value is a literal worked out by hand (the arithmetic is in a comment), and every
rule has a counter-example where it must not fire. Functions are called through their module so
that moving helpers inside reportgen.analysis needs few edits here.
"""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone

import pytest
import yaml

from reportgen.analysis import (
    checkpoints,
    decisions,
    deliverables,
    interval,
    nonfinite,
    options,
    plan_checks,
    runs,
    schedule,
    status,
    stops,
    variance,
    verdicts,
)
from reportgen.errors import InputError
from reportgen.ingest import ingest
from reportgen.model import (
    STOPPED_BY_LOOP,
    Campaign,
    CheckpointOp,
    DeliverableCheck,
    Evaluation,
    Evidence,
    FileReport,
    LoggedDecision,
    LoggedStop,
    LogMessage,
    ManifestEntry,
    ReloadTest,
    Run,
    StepMark,
)
from reportgen.plan import freeze
from reportgen.plan.schema import Plan
from reportgen.verify import check_deliverables

JST = timezone(timedelta(hours=9))
LOT_START = datetime(2026, 11, 2, 9, 0, tzinfo=JST)
LOT_END = datetime(2026, 11, 5, 9, 0, tzinfo=JST)  # 3 days after the start
EVENTS = "campaign/events.jsonl"
FULL_STATE = {"model": True, "optimizer": True, "scheduler": True, "scaler": False, "rng": True,
              "data_position": False, "progress": True}
WEIGHTS_ONLY = {"model": True, "optimizer": False, "scheduler": False, "scaler": False, "rng": False,
                "data_position": False, "progress": False}


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, tzinfo=JST)


def ev(line: int, path: str = EVENTS) -> Evidence:
    return Evidence(path, line)


# -- a small plan: DOMAIN.md's 48 h of sequential work in one RTX 4090 3-day lot -------------------

def plan_data() -> dict:
    """48 h from preparation to results (R6): 3 + 2 + 1 + 3 + (10 + 12 + 9 on one GPU) + 4 + 2 + 2 = 48."""
    return {
        "campaign": {"id": "rules", "question": "Does variant a beat the control?",
                     "end_condition": "Compare the control and two variants on corpus-a."},
        "corpus": {"id": "corpus-a"},
        # The outputs the campaign sets out to deliver: only these count for the cost per passed output.
        "deliverables": [{"id": "preds-a", "kind": "predictions", "variant": "var-a"},
                         {"id": "preds-a-dev", "kind": "predictions", "variant": "var-a", "corpus": "corpus-dev"}],
        "quality": {"metric": "eval_score", "direction": "higher", "threshold": 0.5},
        "variants": [
            {"id": "control", "role": "control", "category": "required", "runs": ["control-*"]},
            {"id": "var-a", "role": "variant", "category": "required", "runs": ["a-*"]},
            {"id": "var-b", "role": "variant", "category": "useful", "runs": ["b-*"]},
        ],
        "stop_rules": [
            {"id": "S1-nonfinite", "kind": "non_finite", "description": "loss NaN or infinite", "metrics": ["loss"]},
            {"id": "S3-truncation", "kind": "truncation", "description": "a required input is cut"},
            {"id": "S4-resume", "kind": "no_resume", "description": "no usable way to resume"},
        ],
        "schedule": {"steps": [
            {"id": "prep", "kind": "preparation", "resource": "human", "hours": 3},
            {"id": "data-check", "kind": "data_check", "resource": "cpu", "hours": 2, "depends_on": ["prep"]},
            {"id": "load-model", "kind": "loading", "resource": "gpu0", "hours": 1, "depends_on": ["data-check"]},
            {"id": "pilot", "kind": "pilot", "resource": "gpu0", "hours": 3, "depends_on": ["load-model"]},
            {"id": "train-control", "kind": "training", "resource": "gpu0", "hours": 10, "depends_on": ["pilot"],
             "variant": "control", "runs": ["control-*"]},
            {"id": "train-a", "kind": "training", "resource": "gpu0", "hours": 12, "depends_on": ["pilot"],
             "variant": "var-a", "runs": ["a-*"]},
            {"id": "train-b", "kind": "training", "category": "useful", "resource": "gpu0", "hours": 9,
             "depends_on": ["pilot"], "variant": "var-b", "runs": ["b-*"]},
            {"id": "evaluate", "kind": "evaluation", "resource": "gpu0", "hours": 4,
             "depends_on": ["train-control", "train-a", "train-b"]},
            {"id": "write-outputs", "kind": "outputs", "resource": "cpu", "hours": 2, "depends_on": ["evaluate"]},
            {"id": "analysis", "kind": "analysis", "resource": "human", "hours": 2, "depends_on": ["write-outputs"]},
        ]},
        "decision_points": [{"id": "after-pilot", "after": "pilot"}],
        "order": {"currency": "USD", "lots": [
            {"label": "RTX 4090, 3 days", "gpu": "RTX 4090", "days": 3, "price": 47.14,
             "start": "2026-11-02T09:00:00+09:00"},
        ]},
        "catalogue": [
            {"label": "RTX 4090, 3 days", "gpu": "RTX 4090", "days": 3, "price": 47.14},
            {"label": "RTX 4090, 7 days", "gpu": "RTX 4090", "days": 7, "price": 110},
            {"label": "RTX 4090, 30 days", "gpu": "RTX 4090", "days": 30, "price": 390},
        ],
    }


def make_plan(edit=None) -> Plan:
    data = copy.deepcopy(plan_data())
    if edit is not None:
        edit(data)
    return Plan.model_validate(data)


def step_of(data: dict, step_id: str) -> dict:
    return next(s for s in data["schedule"]["steps"] if s["id"] == step_id)


def overrun_by_30_hours(data: dict) -> None:
    """R8's example: the 48 h schedule grows by 30 h (train-a 12 -> 42 h), 78 h in all."""
    step_of(data, "train-a")["hours"] = 42


def campaign(**records) -> Campaign:
    return Campaign(root="logs", **records)


def empty_schedule(plan: Plan) -> schedule.ScheduleReport:
    return schedule.reconcile(plan, campaign())


def marks(*spans: tuple[str, datetime, datetime]) -> list[StepMark]:
    out = []
    for line, (step_id, start, end) in enumerate(spans, start=1):
        out += [StepMark(step_id, "start", start, ev(2 * line - 1)), StepMark(step_id, "end", end, ev(2 * line))]
    return out


def messages(findings) -> list[str]:
    return [f.message for f in findings]


# -- R1 End condition: a negative result is a complete, valid conclusion --------------------------

def variant(plan: Plan, variant_id: str):
    return next(v for v in plan.variants if v.id == variant_id)


def test_r1_no_variant_meeting_the_threshold_is_a_negative_conclusion_not_a_failure():
    """R1: "A negative result (no variant meets the threshold) is a complete, valid conclusion"."""
    plan = make_plan()
    results = [
        verdicts.VariantResult(variant(plan, "control"), "failed", "final eval_score 0.41 is not >= 0.5", ["control-1"], 0.41),
        verdicts.VariantResult(variant(plan, "var-a"), "failed", "final eval_score 0.47 is not >= 0.5", ["a-1"], 0.47),
        verdicts.VariantResult(variant(plan, "var-b"), "not_run", "no run", []),  # useful, not required
    ]
    verdict = verdicts.campaign_verdict(plan, results)
    assert verdict.verdict == "negative"
    assert "This answers the question" in verdict.conclusion
    # Counter-examples: a required variant stopped (not evaluated) leaves it inconclusive; one pass is positive.
    results = [
        verdicts.VariantResult(variant(plan, "var-a"), "stopped", "a-1: S1-nonfinite", ["a-1"]),
        verdicts.VariantResult(variant(plan, "var-b"), "failed", "0.3 is not >= 0.5", ["b-1"], 0.3),
    ]
    assert verdicts.campaign_verdict(plan, results).verdict == "inconclusive"
    passed = [verdicts.VariantResult(variant(plan, "var-b"), "passed", "0.61 >= 0.5", ["b-1"], 0.61)]
    assert verdicts.campaign_verdict(plan, passed).verdict == "positive"


# -- R2 Three categories; unused hours are reported plainly ---------------------------------------

def test_r2_a_control_or_a_data_check_outside_required_gets_a_warning():
    """R2: "Controls, data checks and resume checks normally belong to *required*"."""
    def demote(data: dict) -> None:
        data["variants"][0]["category"] = "useful"  # the control
        step_of(data, "data-check")["category"] = "exploratory"

    found = messages(plan_checks.check_plan(make_plan(demote)))
    assert "control 'control' is useful; controls are normally required" in found
    assert "data check 'data-check' is exploratory; it is normally required" in found
    # Counter-example: the same plan with both required has no R2 warning.
    assert not [m for m in messages(plan_checks.check_plan(make_plan())) if "normally required" in m]


def test_r2_unused_hours_are_a_plain_figure_and_never_negative():
    """R2/R6: "unused hours are reported plainly, never as something to use up": 72 - 48 = 24 h unused."""
    plan = make_plan()
    assert empty_schedule(plan).planned_unused_hours == pytest.approx(24.0)  # 72 h window - 48 h planned
    # The whole campaign measured from 2 Nov 09:00 to 4 Nov 09:00: 48 h, 24 h unused, no overrun.
    done = schedule.reconcile(plan, campaign(step_marks=marks(("prep", at(2, 9), at(2, 12)),
                                                               ("analysis", at(4, 7), at(4, 9)))))
    assert (done.actual_hours, done.unused_hours, done.overrun_hours) == (pytest.approx(48.0), pytest.approx(24.0), 0.0)
    # Counter-example: 78 h (to 5 Nov 15:00) leaves 0 h unused, not -6 h; the 6 h are an overrun.
    late = schedule.reconcile(plan, campaign(step_marks=marks(("prep", at(2, 9), at(2, 12)),
                                                               ("analysis", at(5, 13), at(5, 15)))))
    assert (late.actual_hours, late.unused_hours, late.overrun_hours) == (pytest.approx(78.0), 0.0, pytest.approx(6.0))


# -- R3 Decision point after the pilot ------------------------------------------------------------

def test_r3_a_decision_is_recorded_with_its_time_and_reason():
    """R3: "The decision taken is recorded with its time and reason"."""
    plan = make_plan()
    drop = LoggedDecision("after-pilot", "drop_variant", at(2, 19), ev(9), reason="cannot change the choice",
                          variant="var-b")
    logged = campaign(step_marks=marks(("pilot", at(2, 15), at(2, 18))), decisions=[drop])
    (point,) = decisions.decision_points(plan, logged, schedule.reconcile(plan, logged))
    assert point.status == "taken"
    (taken,) = point.decisions
    assert (taken.decision.at, taken.decision.reason) == (at(2, 19), "cannot change the choice")
    assert taken.in_options  # one of continue | drop_variant | revisit_question
    # Counter-examples: the pilot ended and nothing was decided (missed); the pilot never ran (pending).
    ended = campaign(step_marks=marks(("pilot", at(2, 15), at(2, 18))))
    (missed,) = decisions.decision_points(plan, ended, schedule.reconcile(plan, ended))
    assert (missed.status, missed.after_step_ended) == ("missed", at(2, 18))
    (pending,) = decisions.decision_points(plan, campaign(), empty_schedule(plan))
    assert pending.status == "pending"


def test_r3_a_variant_dropped_at_the_decision_point_is_dropped_not_failed():
    """R3: "drop an optional variant" is an option taken, so the variant reads as dropped, not as failed or not run."""
    plan = make_plan()
    drop = LoggedDecision("after-pilot", "drop_variant", at(2, 19), ev(9), reason="cannot change the choice",
                          variant="var-b")
    results = verdicts.variant_results(plan, campaign(decisions=[drop]), {}, {}, stops.Ledger([], [], []))
    by_id = {r.variant.id: r for r in results}
    assert by_id["var-b"].verdict == "dropped"
    assert by_id["var-b"].reason == "dropped at after-pilot: cannot change the choice"
    assert by_id["var-a"].verdict == "not_run"  # counter-example: no decision about it


# -- R4 End-to-end schedule -----------------------------------------------------------------------

def test_r4_a_schedule_without_loading_validation_or_outputs_gets_a_warning():
    """R4: extrapolating from a warm step "forgets loading, long inputs, validation and writing outputs"."""
    def warm_steps_only(data: dict) -> None:
        step_of(data, "load-model")["kind"] = "other"
        step_of(data, "evaluate")["kind"] = "other"
        step_of(data, "write-outputs")["kind"] = "other"

    found = [m for m in messages(plan_checks.check_plan(make_plan(warm_steps_only))) if "the schedule leaves out" in m]
    assert found == [
        "no step of kind 'loading': the schedule leaves out loading the model and data",
        "no step of kind 'evaluation': the schedule leaves out validation or evaluation",
        "no step of kind 'outputs': the schedule leaves out writing outputs",
    ]
    # Counter-example: loading, evaluation (or validation) and outputs all planned: no warning.
    assert not [m for m in messages(plan_checks.check_plan(make_plan())) if "the schedule leaves out" in m]
    plan = make_plan(lambda d: step_of(d, "evaluate").update(kind="validation"))
    assert not [m for m in messages(plan_checks.check_plan(plan)) if "the schedule leaves out" in m]


# -- R5 Machine time vs human time; one GPU is serial ---------------------------------------------

def test_r5_two_steps_on_one_gpu_are_serial_even_as_two_rows():
    """R5: "Two steps on the same GPU are serial even when they are two rows of a table"."""
    slots = {s.step.id: (s.start_h, s.end_h) for s in schedule.planned_timeline(make_plan())}
    # All three depend only on the pilot (ends at 3 + 2 + 1 + 3 = 9 h) and share gpu0: 9-19, 19-31, 31-40.
    assert slots["train-control"] == (9.0, 19.0)
    assert slots["train-a"] == (19.0, 31.0)
    assert slots["train-b"] == (31.0, 40.0)
    found = messages(plan_checks.check_plan(make_plan()))
    # 10 + 12 + 9 = 31 h one after another, not max(10, 12, 9) = 12 h side by side.
    assert ("train-control, train-a, train-b share gpu0 and nothing orders them: they run one after another "
            "(31 h, not the 12 h of running them side by side)") in found

    # Counter-example: "Independent intervals may overlap": a second GPU, and human time beside machine time.
    def two_gpus(data: dict) -> None:
        data["order"]["lots"][0]["gpus"] = 2  # gpu0 and gpu1
        step_of(data, "train-a")["resource"] = "gpu1"
        data["schedule"]["steps"].append({"id": "notes", "kind": "other", "resource": "human", "hours": 5,
                                          "depends_on": ["pilot"]})

    plan = make_plan(two_gpus)
    slots = {s.step.id: (s.start_h, s.end_h) for s in schedule.planned_timeline(plan)}
    assert slots["train-a"] == (9.0, 21.0)  # on gpu1, beside train-control (9-19) on gpu0
    assert slots["notes"] == (9.0, 14.0)  # human time beside the GPU
    kinds = empty_schedule(plan).time_by_resource_kind()
    # human: prep 3 + analysis 2 + notes 5 = 10 h; machine: 2 + 1 + 3 + 10 + 12 + 9 + 4 + 2 = 43 h.
    assert kinds["human"]["planned_hours"] == pytest.approx(10.0)
    assert kinds["machine"]["planned_hours"] == pytest.approx(43.0)


def test_r5_gpu_time_by_status_adds_the_runs_gpu_hours_as_shown_against_the_rented_hours():
    """R5: how busy the rented GPU was: the runs' GPU hours over the lot's 72 GPU hours. Each run counts
    with its hours as reported (4 decimals), so the rows add up to the totals shown."""
    logged = campaign(runs={r: Run(r) for r in ("a-1", "a-2", "b-1", "e-1")})
    logged.runs["e-1"].kind = "evaluation"
    ended = {"a-1": status.RunStatus("interrupted", "killed"), "a-2": status.RunStatus("completed", "ended"),
             "b-1": status.RunStatus("completed", "ended"), "e-1": status.RunStatus("completed", "ended")}
    times = {"a-1": runs.RunTime(6.00004, 1, 6.00004, "span"), "a-2": runs.RunTime(12.00004, 1, 12.00004, "span"),
             "b-1": runs.RunTime(None, None, None, "unknown: no time"), "e-1": runs.RunTime(1.5, 1, 1.5, "span")}
    found = runs.gpu_time(make_plan(), logged, ["a-1", "a-2", "b-1", "e-1"], ended, times)
    assert found.rented_gpu_hours == 72.0
    assert found.by_status == {"completed": 12.0, "evaluation": 1.5, "interrupted": 6.0}  # 6.00004 shows as 6.0
    assert found.gpu_hours == pytest.approx(19.5, abs=1e-12)  # not 19.50008, which would show as 19.5001
    assert found.busy_fraction == pytest.approx(19.5 / 72.0)
    assert found.training_runs_by_status == {"completed": 2, "interrupted": 1} and found.evaluation_runs == 1
    # Counter-example: a run with no measured time is named, never counted as 0 h.
    assert found.without_gpu_time == ["b-1"]


# -- R6 Window arithmetic -------------------------------------------------------------------------

def test_r6_48_hours_in_a_72_hour_window_leave_24_unused():
    """R6: "48 h of sequential work ... inside a 72 h window leaves 24 h unused"."""
    plan = make_plan()
    win = schedule.window(plan)
    assert (win.start, win.end, win.hours) == (LOT_START, LOT_END, 72.0)  # 3 days x 24 h
    assert schedule.planned_hours(schedule.planned_timeline(plan)) == 48.0
    assert "planned 48 h of a 72 h window (24 h unused)" in plan_checks.summary(plan)
    assert not [f for f in plan_checks.check_plan(plan) if f.level == "error"]
    # Counter-example: the window follows the lot bought: 7 x 24 = 168 h, so 168 - 48 = 120 h unused.
    plan = make_plan(lambda d: d["order"]["lots"][0].update(days=7, price=110, label="RTX 4090, 7 days"))
    assert schedule.window(plan).hours == 168.0
    assert empty_schedule(plan).planned_unused_hours == pytest.approx(120.0)


# -- R7 Lots, not hours ---------------------------------------------------------------------------

def test_r7_two_3_day_lots_cost_94_28_usd():
    """R7: "Two 3-day lots cost 94.28 USD" (2 x 47.14)."""
    plan = make_plan(lambda d: d["order"]["lots"].append(dict(d["order"]["lots"][0])))
    cost = deliverables.costs(plan, [])
    assert (cost.currency, cost.rental) == ("USD", 94.28)
    assert schedule.window(plan).hours == 72.0  # side by side: still one 72 h window
    # Counter-example: one lot is 47.14, not 94.28.
    assert deliverables.costs(make_plan(), []).rental == 47.14


def test_r7_a_b200_lot_holds_two_gpus_at_one_price():
    """R7: "A B200 lot already contains 2 GPUs, so that configuration does not double its price"."""
    def b200(data: dict) -> None:  # illustrative prices: DOMAIN.md gives none for B200
        data["order"]["lots"][0].update(label="B200 x2, 3 days", gpu="B200", gpus=2, price=600.0)
        data["catalogue"] = [{"label": "B200 x2, 3 days", "gpu": "B200", "gpus": 2, "days": 3, "price": 600.0},
                             {"label": "B200 x2, 7 days", "gpu": "B200", "gpus": 2, "days": 7, "price": 1300.0}]
        overrun_by_30_hours(data)

    plan = make_plan(b200)
    assert deliverables.costs(plan, []).rental == 600.0  # one lot, not 2 GPUs x 600 = 1,200
    assert plan.gpu_names() == ["gpu0", "gpu1"]
    catalogue = [o for o in options.plan_options(plan, empty_schedule(plan)) if o.kind == "catalogue"]
    assert [(o.label, o.price) for o in catalogue] == [("B200 x2, 3 days", 600.0), ("B200 x2, 7 days", 1300.0)]
    assert all("2 GPUs in one lot at one price" in o.note for o in catalogue)


def test_r7_a_lot_price_differing_from_the_catalogue_is_flagged():
    """R7: the catalogue's RTX 4090 3 days is 47.14 USD; a plan saying 50 is warned, 47.14 is not."""
    found = messages(plan_checks.check_plan(make_plan(lambda d: d["order"]["lots"][0].update(price=50))))
    assert "50 differs from the catalogue's 47.14 for RTX 4090, 3 days" in found
    assert not [m for m in messages(plan_checks.check_plan(make_plan())) if "differs from the catalogue" in m]


# -- R8 Overrun -----------------------------------------------------------------------------------

def test_r8_78_hours_are_6_hours_over_3_days_and_the_7_day_lot_is_suggested():
    """R8: "If the 48 h example grows by 30 h it reaches 78 h, 6 h over 3 days: consider the 7-day lot"."""
    (error,) = [f for f in plan_checks.check_plan(make_plan(overrun_by_30_hours)) if f.level == "error"]
    # 48 + 30 = 78 h; 78 - 72 = 6 h over; the cheapest lot of at least 78 h is 7 days (168 h) at 110 USD.
    assert error.message == (
        "the planned schedule takes 78 h with steps on one GPU run one after another, 6 h over the 72 h window"
        ": consider the RTX 4090, 7 days lot (110 USD), or a reduced protocol that still answers the question")


def test_r8_the_longer_lot_check_names_has_the_ordered_lots_gpu_count():
    """A lot of 2 GPUs is not one of 1: a cheaper 2-GPU lot in the catalogue is not the longer lot `check` names for
    a plan ordered on one GPU; the catalogue's options (the Costs page) already judge lots by model and count."""
    def with_a_pair(data: dict) -> None:
        overrun_by_30_hours(data)
        data["catalogue"].insert(0, {"label": "RTX 4090 x2, 7 days", "gpu": "RTX 4090", "gpus": 2, "days": 7, "price": 100})

    (error,) = [f for f in plan_checks.check_plan(make_plan(with_a_pair)) if f.level == "error"]
    assert "consider the RTX 4090, 7 days lot (110 USD)" in error.message
    # Counter-example: ordered on two GPUs, the pair's lot is the one named.
    def on_two(data: dict) -> None:
        with_a_pair(data)
        data["order"]["lots"][0]["gpus"] = 2

    found = [f.message for f in plan_checks.check_plan(make_plan(on_two)) if f.level == "error"]
    assert any("consider the RTX 4090 x2, 7 days lot (100 USD)" in m for m in found), found


def test_r8_options_are_catalogue_lots_two_lots_or_a_reduced_protocol_by_lot_price():
    """R8: the 7-day lot, two lots for independent variants, or a reduced protocol; R7: priced by lot, no hourly rate."""
    plan = make_plan(overrun_by_30_hours)
    found = {(o.kind, o.label): o for o in options.plan_options(plan, empty_schedule(plan))}
    assert [(k, o.price, o.fits) for k, o in found.items()] == [
        (("catalogue", "RTX 4090, 3 days"), 47.14, False),  # 72 h < 78 h
        (("catalogue", "RTX 4090, 7 days"), 110.0, True),  # 168 h
        (("catalogue", "RTX 4090, 30 days"), 390.0, True),  # 720 h
        (("two_lots", "two RTX 4090, 3 days lots"), 94.28, True),  # 2 x 47.14
        (("reduced", "reduced protocol"), 47.14, True),
    ]
    # Two lots: train-a (42 h) moves to the second lot's GPU, beside train-control then train-b (10 + 9 = 19 h)
    # on gpu0: 9 + max(42, 19) + 4 + 2 + 2 = 59 h. Train-a itself is still 42 h: a run is not shortened.
    assert found[("two_lots", "two RTX 4090, 3 days lots")].hours_needed == pytest.approx(59.0)
    # Reduced: drop the useful train-b (9 h): 78 - 9 = 69 h <= 72 h.
    reduced = found[("reduced", "reduced protocol")]
    assert (reduced.dropped, reduced.hours_needed) == (["train-b"], pytest.approx(69.0))
    # No price is an hourly rate times hours (47.14 / 72 x 78 = 51.07 would be one).
    assert {o.price for o in found.values()} == {47.14, 110.0, 390.0, 94.28}


def test_r8_counter_no_options_when_the_schedule_fits_and_two_lots_do_not_shorten_a_single_run():
    """R8 counter-examples: 48 h in 72 h needs no option; with one variant step a second lot "does not shorten one run"."""
    plan = make_plan()
    assert options.plan_options(plan, empty_schedule(plan)) == []

    def one_long_run(data: dict) -> None:
        data["schedule"]["steps"] = [s for s in data["schedule"]["steps"] if s["id"] not in ("train-control", "train-b")]
        step_of(data, "train-a")["hours"] = 61  # 3 + 2 + 1 + 3 + 61 + 4 + 2 + 2 = 78 h
        step_of(data, "evaluate")["depends_on"] = ["train-a"]

    single = make_plan(one_long_run)
    (two,) = [o for o in options.plan_options(single, empty_schedule(single)) if o.kind == "two_lots"]
    assert (two.price, two.fits, two.hours_needed) == (94.28, False, pytest.approx(78.0))
    assert "a second lot would not help" in two.note


# -- R9 Prioritise by decision value --------------------------------------------------------------

def test_r9_every_combination_of_rank_and_precision_at_once_gets_a_warning():
    """R9: "Do not run every combination of rank, precision, learning rate and length at once"."""
    def grid(data: dict, combos) -> None:
        data["variants"] = [data["variants"][0]] + [
            {"id": f"r{rank}-{precision}", "role": "variant", "category": "required",
             "settings": {"rank": rank, "precision": precision}} for rank, precision in combos]

    full = [(16, "bf16"), (16, "fp32"), (64, "bf16"), (64, "fp32")]  # 2 ranks x 2 precisions = 4 = all
    found = messages(plan_checks.check_plan(make_plan(lambda d: grid(d, full))))
    assert any("are every combination of precision (bf16, fp32) and rank (16, 64): a full grid run at once" in m
               for m in found)
    # Counter-example: 3 of the 4 combinations is a choice, not a full grid.
    partial = messages(plan_checks.check_plan(make_plan(lambda d: grid(d, full[:3]))))
    assert not [m for m in partial if "full grid" in m]


def test_r9_a_plan_without_a_control_is_warned():
    """R9: "a control that isolates a cause" can tell more than a near-copy of the baseline."""
    no_control = make_plan(lambda d: d["variants"][0].update(role="variant"))
    assert ("no variant has role 'control'; a control isolates the cause"
            in messages(plan_checks.check_plan(no_control)))
    assert not [m for m in messages(plan_checks.check_plan(make_plan())) if "role 'control'" in m]


# -- R10 Stop rules, written before the trials ----------------------------------------------------

def ledger_for(plan: Plan, logged: Campaign, windows=None, interrupted=None, saved=None) -> stops.Ledger:
    run_variants = {run_id: run.variant for run_id, run in logged.runs.items()}
    return stops.evaluate(plan, logged, run_variants, interrupted or {}, windows or {}, saved or {})


def test_r10_a_non_finite_loss_fires_its_rule_with_the_identifier_and_the_step():
    """R10: "non-finite loss ... When a stop fires, keep its identifier and reason"."""
    plan = make_plan()
    logged = campaign(runs={"a-1": Run("a-1", variant="var-a", last_step=2150)})
    nan = nonfinite.NonFinite("a-1", "loss", 2140, 2150, 2, [ev(215, "runs/a-1/events.jsonl")])
    (stop,) = ledger_for(plan, logged, windows={"a-1": [nan]}).for_run("a-1")
    assert (stop.rule, stop.kind, stop.step, stop.source) == ("S1-nonfinite", "non_finite", 2140, "evaluated")
    assert stop.reason == "loss not finite at step 2140"
    # Counter-example: S1 watches loss only; an infinite grad_norm alone does not fire it.
    inf = nonfinite.NonFinite("a-1", "grad_norm", 2138, 2150, 2, [ev(214, "runs/a-1/events.jsonl")])
    assert ledger_for(plan, logged, windows={"a-1": [inf]}).for_run("a-1") == []


def test_r10_truncation_of_a_required_input_fires_but_a_too_long_warning_does_not():
    """R10: "truncation of a required input"; a logged stop keeps the script's identifier and reason beside reportgen's."""
    plan = make_plan()
    cut = LogMessage("control-1", "truncation", "truncated 7 of 80 inputs", ev(3, "runs/control-1/stdout.log"), step=10)
    stop = LoggedStop("control-1", "S3-truncation", "7 articles cut", at(2, 20), ev(4, "runs/control-1/events.jsonl"), step=10)
    logged = campaign(runs={"control-1": Run("control-1", variant="control")}, messages=[cut], stops=[stop])
    (found,) = ledger_for(plan, logged).for_run("control-1")
    assert (found.id, found.rule, found.step, found.source) == ("control-1:S3-truncation", "S3-truncation", 10,
                                                                 "logged and evaluated")
    assert found.reason == "7 articles cut (reportgen: the log reports truncation: truncated 7 of 80 inputs)"
    # Counter-example: "too long" is not a cut: a notice, no stop.
    long = LogMessage("control-2", "too_long", "1187 > 1024 tokens", ev(2, "runs/control-2/stdout.log"), step=10)
    quiet = ledger_for(plan, campaign(runs={"control-2": Run("control-2", variant="control")}, messages=[long]))
    assert quiet.for_run("control-2") == []
    assert [(n.rule, n.message) for n in quiet.notices] == [("S3-truncation", "not a truncation: 1187 > 1024 tokens")]


def test_r10_an_interrupted_or_rule_stopped_run_is_not_an_approved_deliverable():
    """R10: "An interrupted run is not an approved deliverable"; R14: its rental still counts."""
    plan = make_plan()
    check = predictions("predictions-a", "var-a", "corpus-a", "a" * 64, run="a-1")
    for state in (status.RunStatus("interrupted", "CUDA out of memory"),
                  status.RunStatus("stopped", "loss is NaN", by="script")):
        (result,) = judge(plan, [check], statuses={"a-1": state})
        assert not result.passed
        assert result.reasons == [(f"produced by run 'a-1', which was {state.status} ({state.reason}): "
                                   "not an approved result")]
        assert deliverables.costs(plan, [result]).rental == 47.14
    # Counter-example: a run ended by its own training loop (early stopping) is not stopped by a rule.
    early = LogMessage("a-1", "early_stop", "no improvement in 3 evaluations", ev(40, "runs/a-1/stdout.log"))
    loop = status.run_status(Run("a-1", sources=["runs/a-1/stdout.log"]), campaign(messages=[early]))
    assert (loop.status, loop.by, loop.stopped_by_rule) == ("stopped", STOPPED_BY_LOOP, False)
    (result,) = judge(plan, [predictions("predictions-a", "var-a", "corpus-a", "a" * 64, run="a-1")],
                      statuses={"a-1": loop})
    assert (result.passed, result.reasons) == (True, [])
    # ... whereas a stop the script logged is a stop by a rule.
    script = LoggedStop("a-1", "S1-nonfinite", "loss NaN", at(3, 10), ev(99, "runs/a-1/events.jsonl"), step=2140)
    assert status.run_status(Run("a-1"), campaign(stops=[script])).stopped_by_rule is True


def test_r10_a_rule_stopped_run_never_passes_its_variant_even_above_the_threshold():
    """R10: a run stopped by a rule is not approved: its 0.9 (>= 0.5) does not make the variant pass."""
    plan = make_plan()
    logged = campaign(runs={"a-1": Run("a-1", variant="var-a")},
                      evaluations=[Evaluation("a-1", 1000, at(3, 8), ev(100, "runs/a-1/events.jsonl"), {"eval_score": 0.9})])
    nan = stops.Stop("a-1:S1-nonfinite", "a-1", "S1-nonfinite", "non_finite", None,
                     stops.Firing(1100, at(3, 9), "loss not finite at step 1100", [ev(110, "runs/a-1/events.jsonl")]))
    stopped = {"a-1": status.RunStatus("stopped", "loss not finite", by="stop rule")}
    results = verdicts.variant_results(plan, logged, {"a-1": "var-a"}, stopped, stops.Ledger([nan], [], []))
    assert {r.variant.id: r.verdict for r in results}["var-a"] == "stopped"
    # Counter-example: the same run ended by its own loop passes: 0.9 >= 0.5.
    ended = {"a-1": status.RunStatus("stopped", "early stopping", by=STOPPED_BY_LOOP)}
    results = verdicts.variant_results(plan, logged, {"a-1": "var-a"}, ended, stops.Ledger([], [], []))
    (a,) = [r for r in results if r.variant.id == "var-a"]
    assert (a.verdict, a.value, a.reason) == ("passed", 0.9, "final eval_score 0.9 >= 0.5")


def test_r10_a_completed_run_on_which_a_rule_held_is_stopped_by_that_rule():
    """R10: the rule written before the trials decides, even when the script went on to its end."""
    firing = stops.Firing(2000, at(3, 12), "eval_score 0.19 < 0.2 at step 2000", [ev(200, "runs/b-1/events.jsonl")])
    held = stops.Stop("b-1:S2-quality", "b-1", "S2-quality", "below_threshold", None, firing)
    completed = status.RunStatus("completed", "the run logged its end")
    after = verdicts.after_stops(completed, [held])
    assert (after.status, after.by) == ("stopped", "stop rule")
    assert after.reason == ("stop rule S2-quality fired: eval_score 0.19 < 0.2 at step 2000; "
                            "the run itself went on to its end")
    assert verdicts.after_stops(completed, []) is completed  # counter-example: no rule held


def test_r10_a_logged_stop_met_earlier_in_the_logs_still_names_who_stopped_the_run():
    """R10: the script stopped the run at step 2140 and the logs meet the plan's rule earlier, at 2000: the
    reason gains the earlier step and the run stays stopped by its script (report.json's `stopped_by`)."""
    firing = stops.Firing(2000, at(3, 12), "eval_score 0.19 < 0.2 at step 2000", [ev(200, "runs/b-1/events.jsonl")])
    logged = LoggedStop("b-1", "S2-quality", "below threshold", at(3, 13), ev(210, "runs/b-1/events.jsonl"), step=2140)
    held = stops.Stop("b-1:S2-quality", "b-1", "S2-quality", "below_threshold", logged, firing)
    by_script = status.RunStatus("stopped", "below threshold", [logged.evidence], by="script")
    after = verdicts.after_stops(by_script, [held])
    assert (after.status, after.stopped_by) == ("stopped", "script")
    assert after.reason == "below threshold; the logs meet S2-quality earlier, at step 2000"
    # Counter-example: a logged stop at or before the rule's step is the logged status itself.
    early = stops.Stop("b-1:S2-quality", "b-1", "S2-quality", "below_threshold",
                       LoggedStop("b-1", "S2-quality", "below threshold", at(3, 11), ev(190, "runs/b-1/events.jsonl"),
                                  step=1900), firing)
    assert verdicts.after_stops(by_script, [early]) is by_script


def test_r10_the_same_run_id_with_a_changed_configuration_is_an_error_to_report(tmp_path, event_log):
    """R10: "the same run id with a different configuration is an error to report" (found while reading the logs,
    so this one campaign is read from two small event files)."""
    log = event_log("a-1.jsonl", run="a-1")
    log.run_start(config={"lr": 1e-4})
    log.run_start(config={"lr": 3e-4})
    # Counter-example: the fixed configuration under a new id, a-2, is no problem.
    event_log("a-2.jsonl", run="a-2").run_start(config={"lr": 3e-4})
    problems = [p.message for p in ingest(tmp_path / "logs").problems if "configuration" in p.message]
    assert len(problems) == 1
    assert problems[0].startswith("run 'a-1' started again with a different configuration")
    assert problems[0].endswith("a changed configuration needs a new run id")


# -- R11 Resume needs more than weights -----------------------------------------------------------

REQUIRED = ["model", "optimizer", "scheduler", "progress"]  # the plan's default required_state


def test_r11_a_weights_only_checkpoint_is_not_resumable():
    """R11: "Model parameters and optimizer state are distinct; progress (step/epoch) must be saved too"."""
    assert make_plan().checkpoints.required_state == REQUIRED
    weights = checkpoints.RunCheckpoint("a-1", 1000, "ckpt/a-1/final", at(3, 9), dict(WEIGHTS_ONLY))
    assert weights.resumable(REQUIRED) is False
    assert weights.lacking(REQUIRED) == ["optimizer", "scheduler", "progress"]
    # Counter-example: weights, optimizer, scheduler and progress saved: resumable.
    full = checkpoints.RunCheckpoint("a-1", 1200, "ckpt/a-1/checkpoint-1200", at(3, 9), dict(FULL_STATE))
    assert (full.resumable(REQUIRED), full.lacking(REQUIRED)) == (True, [])
    # A part no source describes leaves it unknown (None, not True); a failed reload test (R12) is False.
    unknown = checkpoints.RunCheckpoint("a-1", 400, "ckpt/a-1/checkpoint-400", None, {"model": True, "optimizer": True})
    assert (unknown.resumable(REQUIRED), unknown.unknown(REQUIRED)) == (None, ["scheduler", "progress"])
    failed = checkpoints.RunCheckpoint("a-1", 1200, "ckpt/a-1/checkpoint-1200", None, dict(FULL_STATE), reload_tests=[
        ReloadTest("a-1", at(3, 10), ev(5, "campaign/bench.csv"), "ckpt/a-1/checkpoint-1200", ok=False,
                   new_process=True, message="optimizer state shape mismatch")])
    assert failed.resumable(REQUIRED) is False


def test_r11_the_logged_save_state_decides_what_a_checkpoint_holds():
    """R11: "depending on the loop also the LR scheduler, the AMP grad scaler, RNG states and the data-loader position"."""
    save = CheckpointOp("a-1", "save", at(3, 9), ev(120, "runs/a-1/events.jsonl"), path="ckpt/a-1/checkpoint-1200",
                        step=1200, seconds=31.0, state=["model", "optimizer", "scheduler", "rng", "progress"])
    (ckpt,) = checkpoints.run_checkpoints(campaign(checkpoint_ops=[save]))["a-1"]
    assert ckpt.resume_state == FULL_STATE
    assert ckpt.resumable(REQUIRED) is True
    assert ckpt.resumable([*REQUIRED, "scaler"]) is False  # a plan using AMP also needs the grad scaler
    # Counter-example: a save that lists the model only.
    weights = CheckpointOp("a-1", "save", at(3, 9), ev(120, "runs/a-1/events.jsonl"), path="ckpt/a-1/checkpoint-1200",
                           step=1200, seconds=31.0, state=["model"])
    (only,) = checkpoints.run_checkpoints(campaign(checkpoint_ops=[weights]))["a-1"]
    assert only.resumable(REQUIRED) is False


def test_r11_runs_with_no_resumable_checkpoint_are_named_in_run_order():
    """R11: a run every checkpoint of which cannot resume is named, in the report's run order (time),
    not in the order its files were found; a run with one resumable checkpoint is not named."""
    def saved(run: str, step: int, state: dict) -> checkpoints.RunCheckpoint:
        return checkpoints.RunCheckpoint(run, step, f"ckpt/{run}/checkpoint-{step}", at(3, 8), dict(state))

    by_run = {"z-late": [saved("z-late", 100, WEIGHTS_ONLY)], "b-mixed": [saved("b-mixed", 100, WEIGHTS_ONLY),
                                                                       saved("b-mixed", 200, FULL_STATE)],
              "a-early": [saved("a-early", 100, WEIGHTS_ONLY), saved("a-early", 200, WEIGHTS_ONLY)]}
    found = checkpoints.checkpoints_report(campaign(), by_run, ["a-early", "b-mixed", "z-late"], REQUIRED, LOT_END,
                                           interval.save_interval([], [], 0, None, None, None))
    assert found.runs_without_resumable == ["a-early", "z-late"]
    reordered = checkpoints.checkpoints_report(campaign(), by_run, ["z-late", "b-mixed", "a-early"], REQUIRED, LOT_END,
                                               interval.save_interval([], [], 0, None, None, None))
    assert reordered.runs_without_resumable == ["z-late", "a-early"]


def test_r11_r10_an_interrupted_run_whose_last_checkpoint_lacks_optimizer_state_fires_no_resume():
    """R10 "no usable way to resume" with R11: the last checkpoint must hold the required state."""
    plan = make_plan()
    crash = (at(3, 9), [ev(6, "runs/a-1/stdout.log")])
    logged = campaign(runs={"a-1": Run("a-1", variant="var-a", last_step=1320)})
    weights = checkpoints.RunCheckpoint("a-1", 1200, "ckpt/a-1/checkpoint-1200", at(3, 8), dict(WEIGHTS_ONLY))
    (stop,) = ledger_for(plan, logged, interrupted={"a-1": crash}, saved={"a-1": [weights]}).for_run("a-1")
    assert (stop.rule, stop.step) == ("S4-resume", 1320)
    assert stop.reason == ("interrupted at step 1320; its last checkpoint (step 1200) lacks optimizer, scheduler, "
                           "progress")
    # Counter-example: the same interruption with a full checkpoint can resume: no stop.
    full = checkpoints.RunCheckpoint("a-1", 1200, "ckpt/a-1/checkpoint-1200", at(3, 8), dict(FULL_STATE))
    assert ledger_for(plan, logged, interrupted={"a-1": crash}, saved={"a-1": [full]}).for_run("a-1") == []


# -- R12 Checkpoint cost and the save interval ----------------------------------------------------

def test_r12_young_interval_is_sqrt_2CM_and_daly_refines_it():
    """R12: "interval ~ sqrt(2 x save_cost x mean_time_between_interruptions) (Young 1974); Daly 2006 refines it"."""
    # C = 30 s, M = 6 h = 21,600 s: sqrt(2 x 30 x 21,600) = sqrt(1,296,000) = 1,138.42 s.
    assert interval.young(30.0, 21_600.0) == pytest.approx(1138.42, abs=0.01)
    # Daly: C/2M = 30/43,200 = 0.000694; sqrt = 0.02635; 1,138.42 x (1 + 0.02635/3 + 0.000694/9) - 30
    #     = 1,138.42 x 1.008861 - 30 = 1,148.51 - 30 = 1,118.51 s.
    assert interval.daly(30.0, 21_600.0) == pytest.approx(1118.51, abs=0.01)
    # Daly's range: when a save costs at least 2M (here C = 100 s, M = 40 s) the interval is M itself.
    assert interval.daly(100.0, 40.0) == 40.0


def test_r12_the_interval_comes_from_the_measured_save_cost_and_observed_interruptions():
    """R12: "the work you accept to lose is close to the observed cost of saving"."""
    # C = median(28, 30, 95) = 30 s; M = 12 GPU h / 2 interruptions = 6 h: Young 1,138.42 s = 18.97 -> 19.0 min.
    found = interval.save_interval([28.0, 30.0, 95.0], [ev(1), ev(2), ev(3)], interruptions=2, gpu_hours=12.0,
                                   assumed_mtbi_hours=24.0, planned_minutes=30.0)
    assert (found.save_cost_s, found.mtbi_hours, found.recommended_minutes) == (30.0, 6.0, 19.0)
    assert found.daly_s == pytest.approx(1118.51, abs=0.01)
    # Before any interruption the plan's assumption stands: M = 24 h: sqrt(2 x 30 x 86,400) = 2,276.84 s = 37.9 min.
    assumed = interval.save_interval([30.0], [ev(1)], interruptions=0, gpu_hours=12.0, assumed_mtbi_hours=24.0,
                                     planned_minutes=30.0)
    assert (assumed.mtbi_hours, assumed.recommended_minutes) == (24.0, 37.9)
    # Counter-example: no save timed, or no M observed or assumed: no interval, an uncertainty instead.
    unmeasured = interval.save_interval([], [], interruptions=2, gpu_hours=12.0, assumed_mtbi_hours=None,
                                        planned_minutes=None)
    assert (unmeasured.young_s, unmeasured.recommended_minutes) == (None, None)
    assert any("save cost was never measured" in u for u in unmeasured.uncertainties)
    no_rate = interval.save_interval([30.0], [ev(1)], interruptions=0, gpu_hours=12.0, assumed_mtbi_hours=None,
                                     planned_minutes=None)
    assert (no_rate.mtbi_hours, no_rate.recommended_minutes) == (None, None)


def test_r12_write_transfer_restore_and_reload_time_go_in_the_calendar():
    """R12: "Count write, transfer and restore time in the calendar" (and the reload test in a new process)."""
    path = "ckpt/a-1/checkpoint-400"
    logged = campaign(
        checkpoint_ops=[CheckpointOp("a-1", "save", at(3, 1), ev(40), path=path, step=400, seconds=36.0),
                        CheckpointOp("a-1", "transfer", at(3, 1), ev(41), path=path, seconds=54.0),
                        CheckpointOp("a-2", "restore", at(3, 5), ev(50), path=path, seconds=45.0),
                        CheckpointOp("b-1", "save", at(3, 6), ev(60), path="ckpt/b-1/checkpoint-400", seconds=18.0)],
        reload_tests=[ReloadTest("a-2", at(3, 5), ev(51), path, ok=True, seconds=90.0, new_process=True)])
    table = checkpoints.calendar(logged, ["a-1", "a-2", "b-1"])
    rows = {row.run: row.hours for row in table.rows}
    # 36 s = 0.01 h, 54 s = 0.015 h; 45 s = 0.0125 h, 90 s = 0.025 h; 18 s = 0.005 h.
    assert rows["a-1"] == {"save": pytest.approx(0.01), "transfer": pytest.approx(0.015), "restore": None,
                           "reload_test": None}
    assert rows["a-2"] == {"save": None, "transfer": None, "restore": pytest.approx(0.0125),
                           "reload_test": pytest.approx(0.025)}
    # Counter-example: b-1 timed only its save: transfer and restore are unknown (None), never 0 h.
    assert rows["b-1"] == {"save": pytest.approx(0.005), "transfer": None, "restore": None, "reload_test": None}
    # The campaign's checkpoint time: 36 + 54 + 45 + 90 + 18 = 243 s = 0.0675 h.
    assert table.total_hours == pytest.approx(0.0675)


def test_r12_the_calendar_adds_up_as_shown():
    """Each figure is the operation's time to the reported 4 decimals, and totals add the shown figures:
    61.1 s = 0.016972 -> 0.0170 h and 85.2 s = 0.023667 -> 0.0237 h make 0.0407 h, where the unrounded
    146.3 s would show 0.0406 h beside parts that add to 0.0407."""
    logged = campaign(checkpoint_ops=[CheckpointOp("a-1", "save", at(3, 1), ev(40), path="c", step=400, seconds=61.1),
                                      CheckpointOp("a-1", "transfer", at(3, 1), ev(41), path="c", seconds=85.2)])
    table = checkpoints.calendar(logged, ["a-1"])
    assert table.rows[0].hours["save"] == 0.017 and table.rows[0].hours["transfer"] == 0.0237
    assert table.rows[0].total_hours == pytest.approx(0.0407, abs=1e-12)
    assert table.total_hours == pytest.approx(0.0407, abs=1e-12)


def test_r12_files_must_be_copied_off_before_the_lot_ends():
    """R12: "Know where the files are and how they come back before the lot ends" (3-day lot: ends 5 Nov 09:00)."""
    deadline = schedule.window(make_plan()).end
    assert deadline == LOT_END

    def moved(when: datetime) -> checkpoints.Location:
        copy_op = CheckpointOp("a-1", "transfer", when, ev(41), path="ckpt/a-1/checkpoint-400", destination="bucket")
        ckpt = checkpoints.RunCheckpoint("a-1", 400, "ckpt/a-1/checkpoint-400", at(3, 1), dict(FULL_STATE),
                                         transfers=[copy_op])
        return ckpt.location(deadline)

    assert (moved(at(5, 8)).status, moved(at(5, 8)).destination) == ("transferred", "bucket")
    assert moved(at(5, 10)).status == "transferred_after_lot_end"  # counter-example: one hour too late
    never = checkpoints.RunCheckpoint("a-1", 400, "ckpt/a-1/checkpoint-400", at(3, 1), dict(FULL_STATE),
                                      saves=[CheckpointOp("a-1", "save", at(3, 1), ev(40))], evidence=[ev(40)])
    assert never.location(deadline).status == "not_transferred"


# -- R13/R14 Budget against useful results; cost per passed output --------------------------------

def predictions(entry_id: str, variant_id: str | None, corpus: str | None, sha: str, run: str | None = None,
                reasons: tuple[str, ...] = ()) -> DeliverableCheck:
    path = f"outputs/{entry_id}.jsonl"
    entry = ManifestEntry(entry_id, "predictions", [path], ev(3, "outputs/manifest.yaml"), variant=variant_id,
                          corpus=corpus, run=run)
    return DeliverableCheck(entry, [FileReport(path, exists=True, bytes=120, sha256=sha, reloadable="every line parses as JSON")],
                            reasons=list(reasons))


def judge(plan: Plan, checks: list[DeliverableCheck], statuses=None, passed=("control", "var-a", "var-b")):
    results = [verdicts.VariantResult(v, "passed" if v.id in passed else "failed", "", []) for v in plan.variants]
    return deliverables.judge(plan, campaign(), checks, statuses or {}, results, LOT_END)


def test_r14_a_47_14_usd_lot_with_two_distinct_complete_corpora_is_23_57_usd_each():
    """R14: "If a 47.14 USD lot delivers two distinct complete corpora at the passing level, the rental per corpus is 23.57 USD"."""
    plan = make_plan()
    results = judge(plan, [predictions("preds-a", "var-a", "corpus-a", "a" * 64),
                           predictions("preds-a-dev", "var-a", "corpus-dev", "b" * 64)])
    cost = deliverables.costs(plan, results)
    assert (cost.rental, cost.passed_outputs, cost.per_output) == (47.14, 2, 23.57)  # 47.14 / 2 = 23.57
    # Counter-example: the second corpus misses ids, so one output passed: 47.14 / 1 = 47.14 USD, not 23.57.
    results = judge(plan, [predictions("preds-a", "var-a", "corpus-a", "a" * 64),
                           predictions("preds-a-dev", "var-a", "corpus-dev", "b" * 64, reasons=("3 ids missing: x, y, z",))])
    cost = deliverables.costs(plan, results)
    assert (cost.passed_outputs, cost.per_output) == (1, 47.14)
    assert cost.rejections == [("preds-a-dev", ["3 ids missing: x, y, z"])]


def test_r14_five_timing_repeats_of_one_corpus_are_one_useful_corpus():
    """R14: "Repeating the same corpus five times for timing is still one useful corpus"."""
    plan = make_plan()
    checks = [predictions("preds-a", "var-a", "corpus-a", "a" * 64)] + [
        predictions(f"preds-a-timing-{n}", "var-a", "corpus-a", str(n) * 64) for n in range(1, 5)]  # other bytes each
    results = judge(plan, checks)
    assert [r.duplicate_of for r in results] == [None, "preds-a", "preds-a", "preds-a", "preds-a"]
    cost = deliverables.costs(plan, results)
    assert (cost.passed_outputs, cost.per_output) == (1, 47.14)  # 47.14 / 1, not 47.14 / 5 = 9.43


def test_r14_timing_repeats_that_name_no_corpus_are_still_one_corpus():
    """R14: "Repeating the same corpus five times for timing is still one useful corpus", also when the manifest
    leaves `corpus` to the plan's fixed corpus (verify checks such predictions against the plan's ids)."""
    plan = make_plan()
    checks = [predictions("preds-a", "var-a", None, "a" * 64)] + [
        predictions(f"preds-a-timing-{n}", "var-a", None, str(n) * 64) for n in range(1, 5)]
    results = judge(plan, checks)
    cost = deliverables.costs(plan, results)
    assert (cost.passed_outputs, cost.per_output) == (1, 47.14)  # not 5 outputs at 47.14 / 5 = 9.43
    assert {r.id: r.duplicate_of for r in results} == {"preds-a": None} | {
        f"preds-a-timing-{n}": "preds-a" for n in range(1, 5)}
    # Counter-example: the plan's corpus named once and a second corpus named by the manifest are two outputs.
    other = [predictions("preds-a", "var-a", None, "a" * 64), predictions("preds-a-dev", "var-a", "corpus-dev", "b" * 64)]
    assert deliverables.costs(plan, judge(plan, other)).passed_outputs == 2


def test_r14_r13_zero_passed_outputs_leave_the_ratio_undefined_never_zero_and_the_cost_stands():
    """R14: "With zero passed outputs the ratio is *undefined*: show the confirmed cost and the rejection reasons";
    R13: "A negative result does not cancel the campaign's cost"."""
    plan = make_plan()
    results = judge(plan, [predictions("preds-a", "var-a", "corpus-a", "a" * 64)], passed=())
    cost = deliverables.costs(plan, results)
    assert (cost.rental, cost.passed_outputs, cost.per_output, cost.per_output_with_included) == (47.14, 0, None, None)
    assert cost.undefined_reason == "no predictions deliverable passed its checks (see the rejections)"
    assert cost.rejections == [("preds-a", ["variant var-a did not meet eval_score >= 0.5: failed"])]
    # Nothing listed at all is undefined too, with its own reason.
    assert deliverables.costs(plan, []).per_output is None
    # Counter-example: the same deliverable with its variant passing is one output at 47.14 / 1 = 47.14 USD.
    assert deliverables.costs(plan, judge(plan, [predictions("preds-a", "var-a", "corpus-a", "a" * 64)])).per_output == 47.14


def test_r13_external_costs_stay_apart_from_the_rental_and_no_fee_is_invented():
    """R13: "External costs stay apart from the rental price. Never invent a tax rate or a transfer fee"."""
    def other_costs(kinds):
        return lambda d: d["order"].update(other_costs=[{"label": label, "amount": amount, "kind": kind}
                                                        for label, amount, kind in kinds])

    checks = [predictions("preds-a", "var-a", "corpus-a", "a" * 64),
              predictions("preds-a-dev", "var-a", "corpus-dev", "b" * 64)]
    external = make_plan(other_costs([("reference summaries", 120.0, "external")]))
    cost = deliverables.costs(external, judge(external, checks))
    # 47.14 / 2 = 23.57; the 120 USD vendor bill is not (47.14 + 120) / 2 = 83.57; nothing is added for tax.
    assert (cost.rental, cost.included, cost.per_output, cost.per_output_with_included) == (47.14, 0.0, 23.57, None)
    included = make_plan(other_costs([("storage billed with the order", 10.0, "included")]))
    cost = deliverables.costs(included, judge(included, checks))
    # Billed with the order: shown beside, (47.14 + 10) / 2 = 28.57; the rental ratio stays 23.57.
    assert (cost.rental, cost.included, cost.per_output, cost.per_output_with_included) == (47.14, 10.0, 23.57, 28.57)


# -- R15 Reloadable output folder -----------------------------------------------------------------

def test_r15_expected_ids_empty_files_temp_paths_and_a_moving_base_revision_are_rejected(tmp_path):
    """R15: "Check expected identifiers, empty files, and paths that depend on temporary folders. For an adapter,
    keep the exact base-model revision. A file that exists but cannot be reloaded is not a verified output"."""
    logs = tmp_path / "logs"
    (logs / "out" / "adapter").mkdir(parents=True)
    (logs / "corpus.ids").write_text("a\nb\nc\n")
    (logs / "out" / "complete.jsonl").write_text('{"id": "a"}\n{"id": "b"}\n{"id": "c"}\n')
    (logs / "out" / "partial.jsonl").write_text('{"id": "a"}\n{"id": "b"}\n')
    (logs / "out" / "empty.jsonl").write_text("")
    (logs / "out" / "broken.jsonl").write_text('{"id": "a"}\n{"id": \n')
    (logs / "out" / "adapter" / "adapter_config.json").write_text(
        '{"base_model_name_or_path": "org/base", "revision": "main"}')
    (logs / "out" / "adapter" / "adapter_model.bin").write_bytes(b"\x80weights")

    def entry(entry_id: str, kind: str, path: str) -> ManifestEntry:
        return ManifestEntry(entry_id, kind, [path], ev(1, "manifest.yaml"), corpus="corpus-a", expected_ids="corpus.ids")

    listed = [entry("complete", "predictions", "out/complete.jsonl"), entry("partial", "predictions", "out/partial.jsonl"),
              entry("empty", "predictions", "out/empty.jsonl"), entry("broken", "predictions", "out/broken.jsonl"),
              entry("tmp", "predictions", "/tmp/run-7/preds.jsonl"), entry("adapter", "adapter", "out/adapter")]
    found = {c.entry.id: c for c in check_deliverables(make_plan(), logs, campaign(manifest=listed))}

    def reasons(entry_id: str) -> str:
        check = found[entry_id]
        return " | ".join(check.reasons + [r for f in check.files for r in f.reasons])

    assert reasons("complete") == ""  # counter-example: every expected id, reloadable
    assert found["complete"].file_ok
    assert reasons("partial") == "1 id missing: c"  # 3 expected - 2 found
    assert reasons("empty") == "out/empty.jsonl is empty"
    assert reasons("broken").startswith("out/broken.jsonl cannot be reloaded: line 2 is not JSON")
    assert "is under a temporary folder (/tmp): it does not survive the machine" in reasons("tmp")
    assert "revision 'main' is a branch or tag, not a commit hash: it can move" in reasons("adapter")


def test_r15_a_deliverable_failing_a_file_check_does_not_pass():
    """R15: a file-level reason keeps the deliverable from passing; R14 counts only passed outputs."""
    plan = make_plan()
    (result,) = judge(plan, [predictions("preds-a", "var-a", "corpus-a", "a" * 64,
                                         reasons=("out/preds-a.jsonl cannot be reloaded: line 2 is not JSON",))])
    assert (result.passed, result.counts) == (False, False)
    (clean,) = judge(plan, [predictions("preds-a", "var-a", "corpus-a", "a" * 64)])
    assert (clean.passed, clean.counts, clean.location.status) == (True, True, "copy_in_logs")


# -- R16 Reconcile without rewriting --------------------------------------------------------------

def test_r16_planned_against_actual_without_editing_the_plan():
    """R16: "Put planned against actual without editing the original plan: reserved time, actual time, the variance"."""
    plan = make_plan()
    before = plan.model_dump()
    report = schedule.reconcile(plan, campaign(step_marks=marks(("prep", at(2, 9), at(2, 12, 40)),
                                                                 ("data-check", at(2, 12, 40), at(2, 14, 10)))))
    steps = {s.step.id: s for s in report.steps}
    # prep: 3 h 40 min = 3.667 h against 3 h planned: +0.667 h; data-check 1.5 h against 2 h: -0.5 h.
    assert steps["prep"].variance_hours == pytest.approx(0.6667, abs=1e-4)
    assert steps["data-check"].variance_hours == pytest.approx(-0.5)
    assert steps["pilot"].variance_hours is None  # counter-example: not measured is not 0 h of variance
    assert plan.model_dump() == before and plan.schedule.steps[0].hours == 3  # the plan is untouched
    with pytest.raises(ValueError):  # and cannot be edited: a frozen model
        plan.schedule.steps[0].hours = 3.667


def test_r16_the_variance_is_explained_by_causes_and_the_rest_is_unexplained():
    """R16: "the variance and its explanation": planned + causes + unexplained = actual, always."""
    plan = make_plan()
    runs = {"a-1": Run("a-1", variant="var-a", started_at=at(3, 0), last_seen_at=at(3, 4), last_step=520),
            "a-2": Run("a-2", variant="var-a", resumes="a-1", started_at=at(3, 5), ended_at=at(3, 15),
                       end_status="completed")}
    logged = campaign(runs=runs, step_marks=marks(("train-a", at(3, 0), at(3, 15)), ("prep", at(2, 9), at(2, 13))))
    saved = {"a-1": [checkpoints.RunCheckpoint("a-1", 400, "ckpt/a-1/checkpoint-400", at(3, 3), dict(FULL_STATE))]}
    statuses = {"a-1": status.RunStatus("interrupted", "CUDA out of memory"), "a-2": status.RunStatus("completed", "ended")}
    explained = variance.explain(schedule.reconcile(plan, logged), logged, statuses, saved)
    train = explained["train-a"]
    # 15 h actual against 12 h planned: +3 h. Lost work: last save 03:00 to the crash at 04:00 = 1 h;
    # downtime: crash 04:00 to a-2's start 05:00 = 1 h; no idle time; unexplained 15 - 12 - 2 = 1 h.
    assert {c.cause: c.hours for c in train.causes} == {"lost work": pytest.approx(1.0), "downtime": pytest.approx(1.0)}
    assert train.unexplained_hours == pytest.approx(1.0)
    # Counter-example: prep has no run at work in it: no cause is invented, all 4 - 3 = 1 h is unexplained.
    assert (explained["prep"].causes, explained["prep"].unexplained_hours) == ([], pytest.approx(1.0))


def test_r16_the_frozen_original_plan_is_never_replaced(tmp_path):
    """R16: the original plan is not rewritten: once frozen in LOGS, an edited plan is refused, not swapped in."""
    logs = tmp_path / "logs"
    logs.mkdir()
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan_data(), sort_keys=False), encoding="utf-8")
    assert freeze.read_freeze(logs) is None  # counter-example: an unfrozen plan has no original to compare
    record, new = freeze.freeze(path, logs)
    assert new and freeze.read_freeze(logs).sha256 == record.sha256
    edited = plan_data()
    step_of(edited, "train-a")["hours"] = 18  # rewritten after the order
    path.write_text(yaml.safe_dump(edited, sort_keys=False), encoding="utf-8")
    with pytest.raises(InputError, match="the frozen original is never replaced"):
        freeze.freeze(path, logs)
    assert step_of(freeze.read_freeze(logs).plan.plan.model_dump(), "train-a")["hours"] == 12


def test_r16_the_next_campaign_starts_with_measured_estimates_and_fewer_uncertainties():
    """R16: "The next campaign starts with better estimates and a shorter list of uncertainties"."""
    from reportgen.analysis import analyse

    plan = make_plan()
    measured = analyse(plan, campaign(step_marks=marks(("data-check", at(2, 12), at(2, 15, 30))))).next
    figures = {e.id: e for e in measured.estimates if e.kind == "step"}
    # data-check (a cpu step, no interruption allowance) took 3.5 h against 2 h planned: the next figure is 3.5 h.
    assert (figures["data-check"].next_hours, figures["data-check"].measured) == (3.5, True)
    assert (figures["prep"].next_hours, figures["prep"].measured) == (3.0, False)  # never measured: the plan's 3 h
    # The suggested schedule: 48 - 2 + 3.5 = 49.5 h, which still fits the 3-day lot at its catalogue price.
    assert measured.suggested_hours == pytest.approx(49.5)
    assert (measured.lot.label, measured.lot.price) == ("RTX 4090, 3 days", 47.14)
    items = {u.item for u in measured.uncertainties}
    assert "step prep" in items and "step data-check" not in items
    # Counter-example: with nothing measured, data-check is still an uncertainty and 48 h are suggested.
    unmeasured = analyse(plan, campaign()).next
    assert "step data-check" in {u.item for u in unmeasured.uncertainties}
    assert unmeasured.suggested_hours == pytest.approx(48.0)
