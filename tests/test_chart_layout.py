"""Charts a reader can read: labels that never overlap, legible colours, named axes and accessible names.

Every check reads the figure data (the positions and colours plotly.js is given), estimating each
label's box from its text length and font size, at a phone's width and a desktop's.
"""

from __future__ import annotations

import copy
import html
import re

import pytest
from conftest import SAMPLE_LOGS, SAMPLE_PLAN

from reportgen.analysis import analyse
from reportgen.build import build, prepare
from reportgen.ingest import ingest
from reportgen.plan.schema import Plan
from reportgen.render import charts
from reportgen.render.runcharts import run_charts

WIDTHS = (374, 1400)  # a 390 px phone less the page's padding; a desktop


@pytest.fixture(scope="module")
def built():
    return prepare(SAMPLE_LOGS, SAMPLE_PLAN)


@pytest.fixture(scope="module")
def page_figures(built) -> dict[str, dict]:
    """Every chart of the sample's schedule, next-campaign and checkpoints pages, by its id."""
    report = built.report
    figures = {
        "gantt": charts.schedule_gantt(report["schedule"]),
        "waterfall": charts.variance_waterfall(report["schedule"]),
        "estimates": charts.estimates_chart(report["estimates"]),
        "interval": charts.interval_chart(report["checkpoints"]["interval"]),
    }
    for step in report["schedule"]["steps"]:
        if step["explained"]:
            figures[f"waterfall-{step['id']}"] = charts.variance_waterfall(report["schedule"], step["id"])
    return figures


@pytest.fixture(scope="module")
def every_figure(built, page_figures) -> dict[str, dict]:
    run_figures = {f"{run}/{c.metric}": c.figure for run, made in run_charts(built.analysis).items() for c in made}
    return {**page_figures, **run_figures}


# --- label boxes -------------------------------------------------------------------------------------

def _width(text: str, size: float) -> float:
    """Arial averages about 0.5 em a character; 0.6 em leaves room for wide letters."""
    return max(len(line) for line in re.sub(r"<br>", "\n", html.unescape(text)).split("\n")) * size * 0.6


def _height(text: str, size: float) -> float:
    return (text.count("<br>") + 1) * size * 1.3 + 2


def _x_px(layout: dict, width: float, ref: str, x: float) -> float:
    margin = layout["margin"]
    plot = width - margin["l"] - margin["r"]
    if ref == "paper":
        return margin["l"] + x * plot
    lo, hi = layout["xaxis"]["range"]
    return margin["l"] + (x - lo) / (hi - lo) * plot


def _y_px(layout: dict, ref: str, y: float) -> float:
    """Pixels from the figure's top."""
    margin = layout["margin"]
    paper = layout["height"] - margin["t"] - margin["b"]
    if ref == "paper":
        return margin["t"] + (1 - y) * paper
    axis = layout["yaxis" if ref == "y" else "yaxis" + ref[1:]]
    lo, hi = axis["range"]
    bottom, top = axis.get("domain", [0, 1])
    return margin["t"] + (1 - bottom - (y - lo) / (hi - lo) * (top - bottom)) * paper


def label_boxes(figure: dict, width: float) -> list[tuple[str, tuple[float, float, float, float]]]:
    """(text, (left, top, right, bottom)) in pixels of the title and of every annotation, at a figure width."""
    layout = figure["layout"]
    boxes = []
    title = layout.get("title", {})
    if title.get("text"):
        size = title["font"]["size"]
        top, left = title["pad"]["t"], title["pad"]["l"]
        boxes.append((title["text"], (left, top, left + _width(title["text"], size), top + _height(title["text"], size))))
    for note in layout.get("annotations", []):
        size = note["font"]["size"]
        w, h = _width(note["text"], size), _height(note["text"], size)
        x = _x_px(layout, width, note["xref"], note["x"]) + note.get("xshift", 0)
        y = _y_px(layout, note["yref"], note["y"]) - note.get("yshift", 0)
        left = {"left": x, "right": x - w, "center": x - w / 2}[note.get("xanchor", "center")]
        top = {"top": y, "bottom": y - h, "middle": y - h / 2}[note.get("yanchor", "middle")]
        boxes.append((note["text"], (left, top, left + w, top + h)))
    return boxes


def overlapping(boxes: list) -> list[tuple[str, str]]:
    found = []
    for i, (a, (l1, t1, r1, b1)) in enumerate(boxes):
        for b, (l2, t2, r2, b2) in boxes[i + 1:]:
            if l1 < r2 and l2 < r1 and t1 < b2 and t2 < b1:
                found.append((a, b))
    return found


def test_the_box_estimate_sees_two_labels_that_overlap():
    figure = {"layout": {"height": 300, "margin": {"l": 60, "r": 20, "t": 40, "b": 40}, "xaxis": {"range": [0, 100]},
                         "annotations": [
                             {"text": "S2-quality (evaluated)", "x": 90, "xref": "x", "y": 1, "yref": "paper",
                              "xanchor": "left", "yanchor": "top", "font": {"size": 11}},
                             {"text": "pass threshold 0.32", "x": 1, "xref": "paper", "y": 1, "yref": "paper",
                              "xanchor": "right", "yanchor": "top", "font": {"size": 11}}]}}
    assert overlapping(label_boxes(figure, 1400)) == [("S2-quality (evaluated)", "pass threshold 0.32")]


@pytest.mark.parametrize("width", WIDTHS)
def test_no_two_labels_of_the_lora_r64_1_charts_overlap(built, width):
    made = run_charts(built.analysis)["lora-r64-1"]
    assert {c.metric for c in made} >= {"eval_rougeL", "loss", "grad_norm"}
    for chart in made:
        boxes = label_boxes(chart.figure, width)
        assert overlapping(boxes) == [], (chart.metric, width)
        for text, (left, top, right, bottom) in boxes:
            assert left >= 0 and right <= width and top >= charts.TOOLBAR - 1, (chart.metric, text, width)


def test_stops_close_together_get_a_row_each(built):
    figure = {c.metric: c for c in run_charts(built.analysis)["lora-r64-1"]}["eval_rougeL"].figure
    stops = [a for a in figure["layout"]["annotations"] if a["xref"] == "x"]
    assert [(a["text"], a["x"]) for a in stops] == [("S2-quality (evaluated)", 2000), ("S1-nonfinite", 2140)]
    assert stops[0]["yshift"] < stops[1]["yshift"] and stops[1]["yshift"] - stops[0]["yshift"] >= 15


@pytest.mark.parametrize("limit", [0.3195, 0.318, 0.3215])  # a few pixels from the pass threshold, below and above
def test_threshold_labels_close_together_are_moved_apart(sample_plan_data, limit, width=374):
    data = copy.deepcopy(sample_plan_data)
    rule = next(r for r in data["stop_rules"] if r["kind"] == "below_threshold")
    rule["threshold"] = limit
    made = run_charts(analyse(Plan.model_validate(data), ingest(SAMPLE_LOGS)))["lora-r64-1"]
    figure = {c.metric: c for c in made}["eval_rougeL"].figure
    lines = [a for a in figure["layout"]["annotations"] if a["yref"] == "y"]
    assert len(lines) == 2
    assert overlapping(label_boxes(figure, width)) == []


# --- colours ---------------------------------------------------------------------------------------

def _luminance(colour: str) -> float:
    colour = colour.strip().lower()
    if colour.startswith("rgb"):
        channels = [float(v) / 255 for v in re.findall(r"[\d.]+", colour)[:3]]
    else:
        colour = colour.lstrip("#")
        colour = "".join(c * 2 for c in colour) if len(colour) == 3 else colour
        channels = [int(colour[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str = "#ffffff") -> float:
    """WCAG 2 contrast ratio of two colours."""
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def text_colours(node: object, inherited: str, key: str = "") -> list[tuple[str, str]]:
    """(where, colour) of every text in a figure: each font's colour, or the one it inherits."""
    found = []
    if isinstance(node, dict):
        if "font" in key.lower():
            found.append((key, node.get("color", inherited)))
        for k, v in node.items():
            found += text_colours(v, inherited, k)
    elif isinstance(node, list):
        for item in node:
            found += text_colours(item, inherited, key)
    return found


def test_the_contrast_of_the_old_threshold_orange_fails():
    assert contrast("#d9822b") < 3.0  # the orange a user could not read
    assert contrast("#444444") > 9.0


def test_every_text_colour_of_the_sample_charts_meets_wcag_aa(every_figure):
    assert len(every_figure) > 30
    for name, figure in every_figure.items():
        layout = figure["layout"]
        assert layout.get("plot_bgcolor", "#ffffff") == "#ffffff" and layout.get("paper_bgcolor", "#ffffff") == "#ffffff"
        base = layout["font"]["color"]  # every figure names its text colour: nothing left to plotly's template
        colours = text_colours(figure, base)
        assert colours, name
        for where, colour in colours:
            assert contrast(colour) >= 4.5, (name, where, colour, round(contrast(colour), 2))
        for note in layout.get("annotations", []):  # a label's own background is white too
            assert note.get("bgcolor", "#ffffff").replace(" ", "") in ("#ffffff", "rgba(255,255,255,0.85)"), (name, note)


# --- the page charts ------------------------------------------------------------------------------

@pytest.mark.parametrize(("hours", "text"), [
    (2.1777, "+2.2 h"), (-2.3889, "-2.4 h"), (0.05, "+0.1 h"), (0.0115, "+0.7 min"), (-0.0194, "-1.2 min"),
    (0.0004, "+1 s"), (0.0, "0 h"), (1234.5, "+1,234.5 h"),
])
def test_a_change_of_hours_is_shown_with_one_decimal_and_small_ones_in_minutes(hours, text):
    assert charts.signed_hours(hours) == text


def test_the_campaign_waterfall_starts_at_the_planned_hours_not_at_zero(page_figures):
    figure = page_figures["waterfall"]
    trace = figure["data"][0]
    assert trace["base"] == 48.0 and trace["orientation"] == "h"
    lo, hi = figure["layout"]["xaxis"]["range"]
    assert 45 < lo < 48 and 56.9 < hi < 60  # the causes, not 0-60 h
    assert trace["y"][0] == "start-up" and trace["y"][-2:] == ["unexplained", "actual"]
    assert trace["text"][0] == "+0.7 min" and trace["text"][-1] == "52.5 h (+4.5 h)"
    assert figure["layout"]["title"]["text"] == "The campaign: planned 48.0 h → actual 52.5 h"
    for text in trace["text"]:
        assert re.fullmatch(r"[+-][\d,]+\.\d h|[+-]\d+\.\d min|[+-]\d+ s|0 h|[\d,]+\.\d h \([+-][\d,]+\.\d h\)", text), text
        assert text not in ("+0.0 h", "-0.0 h")


def test_every_step_waterfall_follows_the_same_precision(page_figures):
    steps = [f for name, f in page_figures.items() if name.startswith("waterfall-")]
    assert steps
    for figure in steps:
        for text in figure["data"][0]["text"]:
            assert not re.search(r"\d\.\d\d", text), text


def test_the_gantt_axis_names_the_campaign_zone(page_figures, built):
    assert page_figures["gantt"]["layout"]["xaxis"]["title"]["text"] == "time (UTC+09:00)"
    schedule = copy.deepcopy(built.report["schedule"])
    schedule["steps"][0]["planned_start"] = "2026-11-02T00:00:00+00:00"  # the same instant written in UTC
    first = charts.schedule_gantt(schedule)["data"][0]["base"][0]
    assert first == "2026-11-02 09:00:00"  # shown in the campaign's zone, like every other time


def test_the_estimates_legend_reads_in_the_order_of_the_bars(page_figures):
    figure = page_figures["estimates"]
    assert [t["name"] for t in figure["data"]] == ["planned", "measured", "next estimate"]
    layout = figure["layout"]
    # top-down y axis: the first step on top, and in each group the first trace on top, as the legend lists them
    assert layout["yaxis"]["autorange"] == "reversed" and layout["legend"]["traceorder"] == "normal"
    assert figure["data"][0]["y"][0] == "prep-env"


def test_no_legend_is_where_the_toolbar_is(every_figure):
    """The toolbar sits at a chart's top right: every legend is at the foot, every title below the toolbar's band."""
    for name, figure in every_figure.items():
        layout = figure["layout"]
        legend = layout.get("legend")
        if legend is not None and layout.get("showlegend", True):
            assert legend["yanchor"] in ("top", "bottom") and legend["y"] <= 0, name
        if layout.get("title", {}).get("text"):
            assert layout["title"]["yref"] == "container" and layout["title"]["pad"]["t"] >= charts.TOOLBAR, name
        assert layout["margin"]["t"] >= charts.TOOLBAR, name


def test_chart_json_is_the_same_in_two_builds(built, every_figure):
    again = run_charts(prepare(SAMPLE_LOGS, SAMPLE_PLAN).analysis)
    for run, made in again.items():
        for chart in made:
            assert charts.figure_json(chart.figure) == charts.figure_json(every_figure[f"{run}/{chart.metric}"])


# --- accessible names -------------------------------------------------------------------------------

def test_every_chart_of_the_site_has_an_accessible_name_saying_what_it_shows(tmp_path):
    site = tmp_path / "site"
    build(SAMPLE_LOGS, SAMPLE_PLAN, site)
    names = {}
    for page in sorted(site.rglob("*.html")):
        for figure, label in re.findall(r'<div class="chart" data-figure="([^"]+)" role="img" aria-label="([^"]*)"',
                                        page.read_text(encoding="utf-8")):
            names[(page.relative_to(site).as_posix(), figure)] = html.unescape(label)
    assert names[("runs/lora-r64-1.html", "figure-m0")] == "eval_rougeL of lora-r64-1 by step"
    assert names[("schedule.html", "figure-gantt")] == "Schedule: planned against actual, per step"
    assert ("next.html", "figure-estimates") in names and ("checkpoints.html", "figure-interval") in names
    for where, label in names.items():
        assert not label.startswith("chart "), where


def test_the_estimates_chart_draws_only_the_steps_the_next_campaign_keeps(page_figures, built):
    """train-r64 (its variant diverged) and explore-len2048 (dropped at a decision point) are left
    out of the suggested schedule: no planned bar is drawn for them. Counter-example: train-r16 is."""
    drawn = page_figures["estimates"]["data"][0]["y"]
    kept = [e["id"] for e in built.report["estimates"] if e["kind"] == "step" and e["in_suggested_schedule"]]
    assert list(drawn) == kept
    assert "train-r16" in drawn and "train-r64" not in drawn and "explore-len2048" not in drawn
