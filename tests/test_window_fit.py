"""The schedule against the rented window at its boundaries (R6, R8): a plan exactly as long as a lot
fits it, a plan longer than its lot shows a negative planned unused figure, and each plan option
fits when its hours are equal to the window and not when they are half an hour more.

The sample plan is 48 h long (R6's worked example): prep-env 3 (human), data-check 2 (cpu), then on
gpu0 one after the other load-model 1, pilot 3, resume-check 1, control-preds 8, train-r16 9,
train-r64 9, evaluate 4 (ends at 40 h), then write-outputs 2 (cpu) and error-analysis 6 (human):
3 + 2 + 1 + 3 + 1 + 8 + 9 + 9 + 4 + 2 + 6 = 48; explore-len2048 (5 h on gpu0 after evaluate) ends
at 45 h, inside it. Each test lengthens train-r16 (steps[6]) by `extra` hours; nothing was logged.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen.build import prepare

TRAIN_R16 = 6  # index of train-r16 in the sample plan's schedule


@pytest.fixture
def report_with(tmp_path: Path, sample_plan_data, write_plan):
    """report.json of an empty LOGS against the sample plan with train-r16 `extra` hours longer."""
    logs = tmp_path / "logs"
    logs.mkdir()

    def make(extra: float) -> dict:
        def edit(data: dict) -> None:
            data["schedule"]["steps"][TRAIN_R16]["hours"] += extra

        return prepare(logs, write_plan(sample_plan_data, edit, name=f"plan-{extra}.yaml")).report

    return make


def options(report: dict) -> dict[str, dict]:
    return {o["label"]: o for o in report["plan_options"]}


SECOND_START = "2026-11-05T09:00:00+09:00"  # when the sample's lot ends


def second_lot(start: str | None, on_gpu1: tuple[str, ...] = ()):
    """An edit of the sample plan: the first lot's GPU named gpu0, a second RTX 4090 lot (gpu1) from `start` (None:
    the first lot's start), and the steps `on_gpu1` moved to gpu1."""
    def edit(data: dict) -> None:
        first = data["order"]["lots"][0]
        first["gpu_names"] = ["gpu0"]
        data["order"]["lots"].append({**first, "label": "RTX 4090, 3 days (second)", "start": start or first["start"],
                                      "gpu_names": ["gpu1"]})
        for step in data["schedule"]["steps"]:
            if step["id"] in on_gpu1:
                step["resource"] = "gpu1"
    return edit


def test_a_plan_longer_than_its_lot_shows_a_negative_planned_unused_figure(report_with):
    # 48 + 30 = 78 h planned in the 72 h window of one 3-day lot: 72 - 78 = -6 h (R8's example).
    over = report_with(30)["schedule"]
    assert (over["window_hours"], over["planned_hours"], over["planned_unused_hours"]) == (72.0, 78.0, -6.0)
    # Counter-example: the sample as planned leaves 72 - 48 = 24 h unused (R6).
    fits = report_with(0)["schedule"]
    assert (fits["planned_hours"], fits["planned_unused_hours"]) == (48.0, 24.0)


def test_a_schedule_exactly_as_long_as_the_lot_fits_it(report_with):
    # 48 + 24 = 72 h in a 72 h window: it fits, nothing is left over and no plan option is needed.
    exact = report_with(24)
    assert (exact["schedule"]["planned_hours"], exact["schedule"]["planned_unused_hours"]) == (72.0, 0.0)
    assert exact["plan_options"] == []
    # The next campaign's suggestion (the plan's figures, nothing being measured) fits the same lot exactly.
    lot = exact["next_campaign"]["lot"]
    assert (exact["next_campaign"]["suggested_hours"], lot["label"], lot["fits"], lot["unused_hours"]) == (
        72.0, "RTX 4090, 3 days", True, 0.0)
    # Counter-example: half an hour more (72.5 h) does not fit the 3-day lot; the 7-day lot is next.
    over = report_with(24.5)
    assert over["schedule"]["planned_unused_hours"] == -0.5
    assert options(over)["RTX 4090, 3 days"]["fits"] is False
    three_days = over["next_campaign"]["lots"][0]
    assert (three_days["label"], three_days["fits"], three_days["unused_hours"]) == ("RTX 4090, 3 days", False, -0.5)
    assert over["next_campaign"]["lot"]["label"] == "RTX 4090, 7 days"


def test_a_catalogue_lot_exactly_as_long_as_the_schedule_fits_it(report_with):
    # 48 + 120 = 168 h = 7 days x 24 h: the 7-day lot fits exactly; the 3-day lot (72 h) does not.
    exact = options(report_with(120))
    assert (exact["RTX 4090, 7 days"]["fits"], exact["RTX 4090, 7 days"]["hours_needed"]) == (True, 168.0)
    assert exact["RTX 4090, 3 days"]["fits"] is False and exact["RTX 4090, 30 days"]["fits"] is True
    # Counter-example: 168.5 h is half an hour past the 7-day lot; only the 30-day lot (720 h) fits.
    over = options(report_with(120.5))
    assert [label for label, o in over.items() if o["kind"] == "catalogue" and o["fits"]] == ["RTX 4090, 30 days"]


def test_two_lots_fit_when_the_split_schedule_is_exactly_the_window(report_with):
    # Independent variant steps: control-preds, train-r16, train-r64; the second lot takes every other
    # one, train-r16 (9 + 41 = 50 h). gpu0: load 5-6, pilot 6-9, resume-check 9-10, control-preds 10-18,
    # train-r64 18-27; the second GPU: train-r16 10-60; evaluate 60-64, write-outputs 64-66,
    # error-analysis 66-72: 72 h in the 72 h window. (One lot needs 48 + 41 = 89 h.)
    exact = options(report_with(41))
    two = exact["two RTX 4090, 3 days lots"]
    assert (two["kind"], two["price"], two["hours_needed"], two["fits"]) == ("two_lots", 94.28, 72.0, True)
    # Counter-example: 41.5 h more makes the split schedule 72.5 h, past the window.
    over = options(report_with(41.5))["two RTX 4090, 3 days lots"]
    assert (over["hours_needed"], over["fits"]) == (72.5, False)


def test_a_reduced_protocol_fits_when_it_is_exactly_the_window(report_with):
    # Dropping train-r64 (useful, 9 h) and explore-len2048 (exploratory, after evaluate) saves 9 h:
    # 48 + 33 = 81 h planned, 81 - 9 = 72 h without them.
    exact = options(report_with(33))["reduced protocol"]
    assert (exact["price"], exact["hours_needed"], exact["fits"]) == (47.14, 72.0, True)
    assert exact["dropped"] == ["train-r64", "explore-len2048"] and "saves 9.0 h, 72.0 h left" in exact["note"]
    # Counter-example: 33.5 h more leaves 72.5 h, which does not fit.
    over = options(report_with(33.5))["reduced protocol"]
    assert (over["hours_needed"], over["fits"]) == (72.5, False)


@pytest.fixture
def two_lots_with(tmp_path: Path, sample_plan_data, write_plan):
    """report.json of an empty LOGS against the sample plan ordered as two lots: an A100 lot (gpuA) beside the RTX
    4090 lot (gpu0), both from the sample's start, train-r64 on gpuA and train-r16 `extra` hours longer; or
    (`after`) a second RTX 4090 lot (gpu1) that starts when the first ends, with train-r64 `extra` hours longer,
    evaluate and explore-len2048 on gpu1."""
    logs = tmp_path / "logs"
    logs.mkdir()

    def make(extra: float, after: bool = False) -> dict:
        def edit(data: dict) -> None:
            steps = {step["id"]: step for step in data["schedule"]["steps"]}
            rtx = {**data["order"]["lots"][0], "gpu_names": ["gpu0"]}
            if after:
                other = {**rtx, "label": "RTX 4090, 3 days (second)", "start": "2026-11-05T09:00:00+09:00", "gpu_names": ["gpu1"]}
                data["order"]["lots"] = [rtx, other]
                steps["train-r64"]["hours"] += extra
                for moved in ("evaluate", "explore-len2048"):
                    steps[moved]["resource"] = "gpu1"
            else:
                data["schedule"]["steps"][TRAIN_R16]["hours"] += extra
                other = {"label": "A100, 3 days", "gpu": "A100", "gpus": 1, "gpu_names": ["gpuA"], "days": 3, "price": 200.0,
                         "start": rtx["start"]}
                data["order"]["lots"] = [other, rtx]  # the lot that runs late is not the first
                data["catalogue"] += [{"label": "A100, 3 days", "gpu": "A100", "gpus": 1, "days": 3, "price": 200},
                                      {"label": "A100, 7 days", "gpu": "A100", "gpus": 1, "days": 7, "price": 400}]
            next(s for s in data["schedule"]["steps"] if s["id"] == "train-r64")["resource"] = other["gpu_names"][0]

        return prepare(logs, write_plan(sample_plan_data, edit, name=f"plan-{extra}-{after}.yaml")).report

    return make


def test_with_two_lots_the_longer_lots_offered_are_those_of_the_lot_whose_work_runs_late(two_lots_with):
    # The RTX lot holds gpu0's steps and the cpu and human ones (it ends last, with the A100 lot, and is listed
    # after it): 48 + 40 - 9 (train-r64, on gpuA now) = 79 h from the lots' start, past its 72 h. The A100 lot
    # (train-r64, 9 h) fits: nothing is offered for it, though it is the order's first lot. Each price is the
    # order's: 200 for the A100 lot + the RTX lot offered; the 3-day RTX lot is no option in its own place.
    late = two_lots_with(40)
    catalogue = [(o["label"], o["price"], o["fits"], o["hours_needed"]) for o in late["plan_options"] if o["kind"] == "catalogue"]
    assert catalogue == [("RTX 4090, 7 days in place of RTX 4090, 3 days", 310.0, True, 79.0),
                         ("RTX 4090, 30 days in place of RTX 4090, 3 days", 590.0, True, 79.0)]
    more = options(late)["one more RTX 4090, 3 days lot"]
    assert (more["kind"], more["price"], more["hours_available"]) == ("two_lots", 294.28, 72.0)
    assert options(late)["reduced protocol"]["price"] == 247.14
    # Counter-example: 7 h less leaves the RTX lot's work at 72 h, which fits: no option.
    assert two_lots_with(33)["plan_options"] == []


def test_lots_one_after_another_a_lot_whose_work_runs_past_its_own_end_has_options_within_the_orders_span(two_lots_with):
    # The second lot starts when the first ends, and its GPU takes no step before then: train-r64 (9 + 60 h), then
    # evaluate (4 h), then write-outputs and error-analysis (cpu and human, 8 h: against the second lot, which ends
    # last) take 81 h from its start, past its 72 h, though the order's span (144 h) is more than the hours planned.
    # The first lot (gpu0: up to train-r16, 27 h) fits: nothing in its place.
    late = two_lots_with(60, after=True)
    assert late["schedule"]["window_hours"] == 144.0
    catalogue = [(o["label"], o["price"], o["fits"], o["hours_needed"]) for o in late["plan_options"] if o["kind"] == "catalogue"]
    assert catalogue == [("RTX 4090, 7 days in place of RTX 4090, 3 days (second)", 157.14, True, 81.0),
                         ("RTX 4090, 30 days in place of RTX 4090, 3 days (second)", 437.14, True, 81.0)]
    more = options(late)["one more RTX 4090, 3 days (second) lot"]  # train-r64 is its only independent variant step
    assert (more["fits"], more["price"]) == (False, 141.42) and "one independent variant step (train-r64)" in more["note"]
    reduced = options(late)["reduced protocol"]  # train-r64 (useful) and explore-len2048 (exploratory) dropped
    assert (reduced["price"], reduced["hours_needed"], reduced["fits"]) == (94.28, 12.0, True)
    # Counter-example: 9 h less leaves the second lot's work at 72 h from its start: it fits, no option.
    assert two_lots_with(51, after=True)["plan_options"] == []


def test_reportgen_check_names_the_lot_whose_planned_work_runs_past_it_and_a_longer_lot_of_its_gpu(two_lots_with):
    # The A100 lot is listed first; the RTX 4090 lot's work (79 h) runs past it: the finding is the RTX lot's, at
    # its place in the order, with the RTX 4090 lot that holds it.
    late = [w for w in two_lots_with(40)["plan_warnings"] if w["level"] == "error"]
    assert [w["key"] for w in late] == ["order.lots[1]"] and late[0]["line"] is not None
    assert late[0]["message"].startswith("the work planned on RTX 4090, 3 days (")
    assert "takes 79 h from its start, 7 h over its 72 h: consider the RTX 4090, 7 days lot in its place (110 USD)" in late[0]["message"]
    # Lots one after the other: the order's span (144 h) holds the hours planned; the second lot, whose GPU takes no
    # step before it starts, does not hold the 81 h of its work.
    [after] = [w for w in two_lots_with(60, after=True)["plan_warnings"] if w["level"] == "error"]
    assert after["key"] == "order.lots[1]" and "takes 81 h from its start, 9 h over its 72 h" in after["message"]
    # Counter-examples: work that fits each lot is no finding, whatever the lots' order.
    assert not [w for w in two_lots_with(33)["plan_warnings"] if w["level"] == "error"]
    assert not [w for w in two_lots_with(51, after=True)["plan_warnings"] if w["level"] == "error"]


def test_the_costs_page_says_which_does_not_fit_the_schedule_or_a_lot_of_several(tmp_path, sample_plan_data, write_plan):
    """One lot: the schedule does not fit the rented window. Several: a lot's own work does not fit it (the
    order's span may hold the whole schedule)."""
    from reportgen.build import build

    logs = tmp_path / "logs"
    logs.mkdir()

    def longer(data: dict) -> None:
        data["schedule"]["steps"][TRAIN_R16]["hours"] += 40

    def and_a_second_lot(data: dict) -> None:
        longer(data)
        first = data["order"]["lots"][0]
        first["gpu_names"] = ["gpu0"]
        data["order"]["lots"].append({**first, "label": "RTX 4090, 3 days (second)", "start": "2026-11-05T09:00:00+09:00",
                                      "gpu_names": ["gpu1"]})

    for edit, said in ((longer, "The schedule does not fit the rented window."),
                       (and_a_second_lot, "The work on a lot does not fit it, from its start to its end.")):
        build(logs, write_plan(sample_plan_data, edit, name=f"{edit.__name__}.yaml"), tmp_path / edit.__name__)
        assert said in (tmp_path / edit.__name__ / "costs.html").read_text(encoding="utf-8")


def test_the_planned_timeline_places_a_later_lots_steps_from_that_lots_start(tmp_path, sample_plan_data, write_plan):
    """A lot bought to follow another holds its GPUs from its own start: the schedule page's planned start of a step
    on its GPU is no earlier, and the planned hours count the wait."""
    logs = tmp_path / "logs"
    logs.mkdir()

    moved = ("train-r64", "evaluate", "explore-len2048")
    def steps(report: dict) -> dict[str, tuple[str, str]]:
        return {s["id"]: (s["planned_start"], s["planned_end"]) for s in report["schedule"]["steps"]}

    after = prepare(logs, write_plan(sample_plan_data, second_lot(SECOND_START, moved), name="after.yaml")).report
    # gpu1's lot starts when gpu0's ends (72 h in): train-r64 (9 h) from then, evaluate (4 h) after it, then
    # write-outputs (2 h, cpu) and error-analysis (6 h, human): 72 + 9 + 4 + 2 + 6 = 93 h of the order's 144.
    assert steps(after)["train-r64"] == ("2026-11-05T09:00:00+09:00", "2026-11-05T18:00:00+09:00")
    assert steps(after)["evaluate"] == ("2026-11-05T18:00:00+09:00", "2026-11-05T22:00:00+09:00")
    assert (after["schedule"]["window_hours"], after["schedule"]["planned_hours"]) == (144.0, 93.0)
    # Counter-example: a second lot from the first one's start holds its GPU from the start: train-r64 waits only
    # for what it depends on (resume-check, 10 h in), beside control-preds on gpu0; evaluate follows train-r16 (27 h
    # in): 27 + 4 + 2 + 6 = 39 h.
    beside = prepare(logs, write_plan(sample_plan_data, second_lot(None, moved), name="beside.yaml")).report
    assert steps(beside)["train-r64"] == ("2026-11-02T19:00:00+09:00", "2026-11-03T04:00:00+09:00")
    assert beside["schedule"]["planned_hours"] == 39.0


def test_the_schedule_chart_shows_each_gpu_steps_row_against_its_own_lot(tmp_path, sample_plan_data, write_plan):
    """With lots one after another, the Gantt's rented time behind a gpu1 step starts with gpu1's lot, the first
    lot's end is named beside the window's, and report.json lists the lots; one lot keeps one window box."""
    from reportgen.render.charts import schedule_gantt

    logs = tmp_path / "logs"
    logs.mkdir()

    schedule = prepare(logs, write_plan(sample_plan_data, second_lot(SECOND_START, ("train-r64",)), name="after.yaml")
                       ).report["schedule"]
    assert [(lot["label"], lot["start"], lot["end"], lot["gpus"]) for lot in schedule["lots"]] == [
        ("RTX 4090, 3 days", "2026-11-02T09:00:00+09:00", "2026-11-05T09:00:00+09:00", ["gpu0"]),
        ("RTX 4090, 3 days (second)", "2026-11-05T09:00:00+09:00", "2026-11-08T09:00:00+09:00", ["gpu1"])]
    layout = schedule_gantt(schedule)["layout"]
    # One box a row, on the row of its step (category i of the y axis is the i-th step).
    assert [(s["yref"], s["y0"], s["y1"]) for s in layout["shapes"]] == [("y", i - 0.5, i + 0.5) for i in range(len(schedule["steps"]))]
    rows = {step["id"]: (shape["x0"], shape["x1"])
            for step, shape in zip(schedule["steps"], layout["shapes"], strict=True)}
    assert rows["train-r64"] == ("2026-11-05 09:00:00", "2026-11-08 09:00:00")  # gpu1's lot
    assert rows["pilot"] == ("2026-11-02 09:00:00", "2026-11-05 09:00:00")  # gpu0's lot
    assert rows["prep-env"] == ("2026-11-02 09:00:00", "2026-11-08 09:00:00")  # human: the window
    assert [a["text"] for a in layout["annotations"]] == ["end of rented window", "end of RTX 4090, 3 days"]
    # Counter-examples: one lot, or two over one span: one box over every row and the window's end alone.
    for name, change in (("one.yaml", None), ("beside.yaml", second_lot(None, ("train-r64",)))):
        one = schedule_gantt(prepare(logs, write_plan(sample_plan_data, change, name=name)).report["schedule"])["layout"]
        assert [(s["yref"], s["x0"], s["x1"]) for s in one["shapes"]] == [("paper", "2026-11-02 09:00:00", "2026-11-05 09:00:00")]
        assert [a["text"] for a in one["annotations"]] == ["end of rented window"]


def test_the_schedule_page_says_no_step_starts_before_its_lot_only_when_the_lots_start_apart(tmp_path, sample_plan_data,
                                                                                           write_plan):
    from reportgen.build import build

    logs = tmp_path / "logs"
    logs.mkdir()

    said = "steps on one GPU one after another, none before its lot starts,"
    for name, start, shown in (("after", SECOND_START, True), ("beside", None, False)):
        build(logs, write_plan(sample_plan_data, second_lot(start), name=f"{name}.yaml"), tmp_path / name)
        page = " ".join((tmp_path / name / "schedule.html").read_text(encoding="utf-8").split())
        assert (said in page) is shown, name
