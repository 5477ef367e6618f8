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
    assert len(line["x"]) <= 2100
    assert 517_017 in line["x"] and max(v for v in line["y"] if v is not None) == 9.5
    assert marker["x"] == [823_456] and marker["text"] == ["NaN"]
    assert None in line["y"]  # the line is broken at the NaN, not drawn across it
    notes = [a["text"] for a in figure["layout"]["annotations"]]
    assert any("of 1,000,000 points shown" in text for text in notes)
    assert "of 1,000,000 points shown" in charts["loss"].caption
    json.dumps(figure, allow_nan=False)  # nothing non-finite reaches the page's JSON


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
