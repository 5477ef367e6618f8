"""Charts that do not lie: reduced series keep every bucket's extremes and every non-finite point."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import plotly.graph_objects as go
import pytest
from conftest import SAMPLE_LOGS, SAMPLE_PLAN
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from reportgen.analysis import analyse
from reportgen.build import prepare
from reportgen.events import EventLog
from reportgen.ingest import ingest
from reportgen.plan.schema import Plan
from reportgen.render.downsample import reduce
from reportgen.render.runcharts import run_charts


def test_a_million_points_with_one_spike_and_one_nan_keep_both():
    values = np.random.default_rng(7).normal(1.0, 0.05, 1_000_000)
    values[612_345] = 40.0  # the spike
    values[98_765] = np.nan
    reduced = reduce(values, points=2000)
    assert reduced.shown <= 2003
    assert 612_345 in reduced.kept and 98_765 in reduced.non_finite
    assert np.nanargmin(values) in reduced.kept and np.nanargmax(values) in reduced.kept
    assert reduced.label().startswith("2,00") and "of 1,000,000 points shown" in reduced.label()


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.integers(1, 3000), elements=st.floats(allow_nan=True, allow_infinity=True, width=64)),
       st.integers(4, 400))
def test_every_bucket_keeps_its_extremes_and_no_non_finite_window_is_lost(values, points):
    reduced = reduce(values, points)
    finite = np.isfinite(values)
    kept = set(reduced.kept.tolist())
    assert kept <= set(np.flatnonzero(finite).tolist())
    if finite.any():  # the drawn line reaches the true extremes of the series
        assert values[list(kept)].min() == values[finite].min()
        assert values[list(kept)].max() == values[finite].max()
    bad = np.flatnonzero(~finite)
    shown_bad = set(reduced.non_finite.tolist())
    assert shown_bad <= set(bad.tolist())
    if reduced.every_window:
        starts = [i for i in bad if i == 0 or finite[i - 1] or not _same_kind(values[i - 1], values[i])]
        assert set(starts) <= shown_bad
    assert len(reduced.non_finite) <= max(points // 2, min(len(bad), points // 2))
    assert reduced.total == len(values) and reduced.non_finite_total == len(bad)


def _same_kind(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def test_short_series_are_drawn_whole():
    reduced = reduce(np.array([1.0, np.inf, 2.0]))
    assert reduced.complete and reduced.label() == "all 3 points shown"


def test_one_point_is_counted_in_the_singular():
    assert reduce(np.array([0.29])).label() == "1 point shown"
    assert reduce(np.array([])).label() == "no point shown"
    assert reduce(np.arange(5000.0), points=100).count() == "100 of 5,000 points shown"


@pytest.fixture
def long_run(tmp_path, sample_plan_data):
    """A run of 1,000,000 logged steps with one spike and one NaN, and a plan that charts it."""
    logs = tmp_path / "logs"
    log = EventLog(logs / "r.jsonl", run="lora-r16-9")
    log.run_start(config={"rank": 16}, variant="lora-r16")
    values = (2.0 + np.random.default_rng(3).normal(0, 0.01, 1_000_000)).tolist()
    values[517_017 - 1] = 9.5
    values[823_456 - 1] = math.nan
    head = '{"ts":"2026-11-02T10:00:00+09:00","type":"metric","run":"lora-r16-9","step":'
    with open(logs / "r.jsonl", "a", encoding="utf-8") as handle:
        handle.write("".join(f'{head}{step},"metrics":{{"loss":{json.dumps(value)}}}}}\n'
                             for step, value in enumerate(values, start=1)))
    return analyse(Plan.model_validate(copy.deepcopy(sample_plan_data)), ingest(logs))


def test_run_chart_keeps_the_spike_and_draws_the_nan_as_a_marker(long_run):
    charts = {c.metric: c for c in run_charts(long_run)["lora-r16-9"]}
    figure = charts["loss"].figure
    go.Figure(figure)  # a valid plotly figure
    line, marker = figure["data"][0], figure["data"][1]
    assert len(line["x"]) <= 2100 and line["mode"] == "lines"
    assert 517_017 in line["x"] and max(v for v in line["y"] if v is not None) == 9.5
    assert marker["name"] == "lora-r16-9: NaN" and marker["x"] == [823_456] and marker["text"] == ["NaN @ 823456"]
    assert None in line["y"]  # the line is broken at the NaN, not drawn across it
    notes = [a["text"] for a in figure["layout"]["annotations"]]
    assert "lora-r16-9: 2,001 of 1,000,000 points shown" in notes  # the count, on the chart; the detail in the caption
    assert "of 1,000,000 points shown (each bucket's minimum and maximum kept" in charts["loss"].caption
    json.dumps(figure, allow_nan=False)  # nothing non-finite reaches the page's JSON


@pytest.fixture(scope="module")
def sample_charts() -> dict[str, dict[str, object]]:
    """The sample's run charts: run id -> metric -> MetricChart."""
    built = prepare(SAMPLE_LOGS, SAMPLE_PLAN)
    return {run: {c.metric: c for c in charts} for run, charts in run_charts(built.analysis).items()}


def test_a_series_of_one_point_is_drawn_as_a_marker_on_whole_step_ticks(sample_charts):
    chart = sample_charts["control-1"]["items_per_second"]
    line = chart.figure["data"][0]
    assert line["x"] == [10] and line["mode"] == "markers"  # a line through one point draws nothing
    xaxis = chart.figure["layout"]["xaxis"]
    assert xaxis["dtick"] == 1 and xaxis["tick0"] == 0 and xaxis["range"][0] < 10 < xaxis["range"][1]
    assert "control-1: 1 point shown" in [a["text"] for a in chart.figure["layout"]["annotations"]]
    assert chart.caption.startswith("control-1: 1 point shown, from ")


def test_sparse_series_mark_their_points_and_long_ones_are_lines(sample_charts):
    assert sample_charts["pilot-1"]["loss"].figure["data"][0]["mode"] == "lines+markers"  # 30 points
    assert sample_charts["lora-r64-1"]["loss"].figure["data"][0]["mode"] == "lines"  # 214 points
    assert sample_charts["lora-r64-1"]["eval_rougeL"].figure["data"][0]["mode"] == "lines+markers"  # evaluations
    assert "dtick" not in sample_charts["lora-r64-1"]["loss"].figure["layout"]["xaxis"]  # plotly's ticks are whole there


def test_non_finite_values_are_named_markers_in_a_band_above_the_plot(sample_charts):
    loss = sample_charts["lora-r64-1"]["loss"].figure
    nan = next(t for t in loss["data"] if t["name"] == "lora-r64-1: NaN")
    assert nan["x"] == [2140] and nan["text"] == ["NaN @ 2140"] and nan["yaxis"] == "y2"
    assert nan["marker"]["size"] >= 10 and nan["marker"]["symbol"] == "x" and "text" in nan["mode"]
    layout = loss["layout"]
    assert layout["yaxis2"]["domain"][0] > layout["yaxis"]["domain"][1]  # its own band, not on the line
    assert layout["yaxis2"]["ticktext"] == ["not finite"] and layout["showlegend"] is True
    grad = sample_charts["lora-r64-1"]["grad_norm"].figure
    inf = next(t for t in grad["data"] if t["name"] == "lora-r64-1: +Inf")
    assert inf["text"] == ["+Inf @ 2140"] and inf["marker"]["symbol"] == "triangle-up"
    assert "yaxis2" not in sample_charts["lora-r64-1"]["eval_rougeL"].figure["layout"]  # nothing non-finite there


def test_a_window_of_non_finite_values_is_named_once_by_its_first_and_last_step(tmp_path, sample_plan_data):
    logs = tmp_path / "logs"
    log = EventLog(logs / "r.jsonl", run="lora-r16-9")
    log.run_start(config={"rank": 16}, variant="lora-r16")
    values = [1.0, 1.1, math.nan, math.nan, math.nan, 1.2, math.inf, 1.3, -math.inf, 1.4]
    head = '{"ts":"2026-11-02T10:00:00+09:00","type":"metric","run":"lora-r16-9","step":'
    with open(logs / "r.jsonl", "a", encoding="utf-8") as handle:
        handle.write("".join(f'{head}{step},"metrics":{{"loss":{json.dumps(value)}}}}}\n'
                             for step, value in enumerate(values, start=1)))
    analysis = analyse(Plan.model_validate(copy.deepcopy(sample_plan_data)), ingest(logs))
    figure = run_charts(analysis)["lora-r16-9"][0].figure
    marks = {t["name"]: (t["x"], t["text"], t["marker"]["symbol"]) for t in figure["data"] if t.get("yaxis") == "y2"}
    assert marks == {
        "lora-r16-9: NaN": ([3, 4, 5], ["NaN @ 3–5", "", ""], "x"),
        "lora-r16-9: +Inf": ([7], ["+Inf @ 7"], "triangle-up"),
        "lora-r16-9: -Inf": ([9], ["-Inf @ 9"], "triangle-down"),
    }


def test_small_values_are_in_scientific_notation(sample_charts):
    assert sample_charts["lora-r64-1"]["learning_rate"].figure["layout"]["yaxis"]["exponentformat"] == "e"  # not "200μ"
    assert "exponentformat" not in sample_charts["lora-r64-1"]["loss"].figure["layout"]["yaxis"]


def test_each_run_chart_is_named_by_its_metric_and_run(sample_charts):
    assert sample_charts["lora-r64-1"]["eval_rougeL"].label == "eval_rougeL of lora-r64-1 by step"
    assert sample_charts["lora-r16-2"]["loss"].label == "loss of lora-r16-2 by step, with lora-r16-1 (before the resume)"


def test_stop_markers_and_thresholds_are_drawn_on_the_run_charts(tmp_path, sample_plan_data):
    built = prepare(SAMPLE_LOGS, SAMPLE_PLAN)
    charts = {c.metric: c for c in run_charts(built.analysis)["lora-r64-1"]}
    shapes = charts["eval_rougeL"].figure["layout"]["shapes"]
    stops = sorted(s["x0"] for s in shapes if s["xref"] == "x")
    assert stops == [2000, 2140]
    thresholds = sorted(s["y0"] for s in shapes if s["yref"] == "y")
    assert thresholds == [0.2, 0.32]
    resumed = {c.metric: c for c in run_charts(built.analysis)["lora-r16-2"]}
    names = [t["name"] for t in resumed["loss"].figure["data"]]
    assert names == ["lora-r16-1 (before the resume)", "lora-r16-2"]
