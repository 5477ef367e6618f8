"""Metric charts of each run page: every logged metric by step, with stops, evaluations and non-finite values.

A run that resumes another is drawn as its continuation: the runs it continues and the runs that
continue it are on the same axes, in grey. Long series are reduced by `downsample.reduce`, which
keeps each bucket's extremes and the non-finite points, and each chart says how many points it shows.
Figures are plain plotly JSON (built as dicts: thousands of points per chart, no validation pass).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from reportgen.analysis import Analysis
from reportgen.analysis.runs import chain
from reportgen.model import METRIC_FRAME_COLUMNS, metric_values, same_metric
from reportgen.render.downsample import DEFAULT_POINTS, Reduced, reduce

THIS_RUN = "#2f6fb3"
OTHER_RUN = "#9aa5b1"
STOP = "#c0392b"
THRESHOLD = "#d9822b"
MARKER_Y = {"NaN": 0.96, "Infinity": 1.0, "-Infinity": 0.02}


@dataclass
class MetricChart:
    id: str
    metric: str
    figure: dict
    caption: str


@dataclass
class _Series:
    run: str
    path: str
    steps: np.ndarray
    values: np.ndarray
    eval_rows: bool
    also_in: list[str]
    without_step: int


def _series(frame: pd.DataFrame, run: str, metric: str) -> _Series | None:
    """One run's values of one metric, from the file that logged most of them, in step order."""
    logged, every = metric_values(frame[metric])
    if not logged.any():
        return None
    rows = frame.loc[logged, ["path", "kind", "step"]]
    counts = rows["path"].astype(str).value_counts(sort=False)
    best = max(sorted(counts.index), key=lambda p: counts[p])
    mine = (rows["path"].astype(str) == best).to_numpy()
    steps = rows["step"].to_numpy(dtype="float64", na_value=np.nan)[mine]
    values = every[logged][mine]
    has_step = ~np.isnan(steps)
    order = np.argsort(steps[has_step], kind="stable")
    kinds = rows["kind"].to_numpy()[mine]
    return _Series(run, best, steps[has_step][order].astype(np.int64), values[has_step][order],
                   bool((kinds == "eval").mean() > 0.5), sorted(set(counts.index) - {best}), int((~has_step).sum()))


def _traces(series: _Series, reduced: Reduced, color: str, name: str) -> list[dict]:
    """The line (broken where values are not finite) and the non-finite markers of one series."""
    shown = np.union1d(reduced.kept, reduced.non_finite)
    y = series.values[shown]
    finite = np.isfinite(y)
    traces = [{
        "type": "scatter",
        "mode": "lines+markers" if series.eval_rows else "lines",
        "name": name,
        "x": series.steps[shown].tolist(),
        "y": [float(v) if ok else None for v, ok in zip(y, finite)],
        "connectgaps": False,
        "line": {"color": color, "width": 1.5},
        "marker": {"size": 6},
        "hovertemplate": "step %{x}<br>%{y:.5g}<extra>" + name + "</extra>",
    }]
    if len(reduced.non_finite):
        bad = series.values[reduced.non_finite]
        labels = ["NaN" if np.isnan(v) else ("Infinity" if v > 0 else "-Infinity") for v in bad]
        traces.append({
            "type": "scatter",
            "mode": "markers",
            "name": f"{name}: not finite",
            "x": series.steps[reduced.non_finite].tolist(),
            "y": [MARKER_Y[label] for label in labels],
            "yaxis": "y2",
            "text": labels,
            "marker": {"symbol": "x-thin-open", "size": 10, "color": STOP, "line": {"width": 2, "color": STOP}},
            "hovertemplate": "step %{x}: %{text}<extra>" + name + "</extra>",
        })
    return traces


def _stop_shapes(analysis: Analysis, run_id: str) -> tuple[list[dict], list[dict]]:
    shapes: list[dict] = []
    notes: list[dict] = []
    for stop in analysis.stops.for_run(run_id):
        marks = []
        if stop.evaluated and stop.evaluated.step is not None:
            marks.append((stop.evaluated.step, "solid", f"{stop.rule} (evaluated)"))
        if stop.logged and stop.logged.step is not None and (not marks or marks[0][0] != stop.logged.step):
            marks.append((stop.logged.step, "dash", f"{stop.rule} (logged)"))
        elif stop.logged and marks:
            marks[0] = (marks[0][0], "solid", f"{stop.rule}")
        for step, dash, text in marks:
            shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": step, "x1": step, "y0": 0, "y1": 1,
                           "line": {"color": STOP, "width": 1.5, "dash": dash}})
            # Labels of nearby stops would overlap: each one sits a line lower than the one before.
            notes.append({"x": step, "y": 1 - 0.1 * len(notes), "xref": "x", "yref": "paper", "text": text,
                          "showarrow": False, "xanchor": "left", "yanchor": "top", "font": {"size": 11, "color": STOP},
                          "bgcolor": "rgba(255,255,255,0.8)"})
    return shapes, notes


def _thresholds(analysis: Analysis, metric: str) -> list[tuple[float, str]]:
    plan = analysis.plan
    lines = []
    if same_metric(plan.quality.metric, metric):
        lines.append((plan.quality.threshold, f"pass threshold {plan.quality.threshold:g}"))
    for rule in plan.stop_rules:
        if rule.kind == "below_threshold" and same_metric(rule.metric or plan.quality.metric, metric):
            value = rule.threshold if rule.threshold is not None else plan.quality.threshold
            if all(value != v for v, _ in lines):
                lines.append((value, f"{rule.id} {value:g}"))
    return lines


def _order(analysis: Analysis, metrics: list[str]) -> list[str]:
    """The quality metric first, then the metrics a stop rule watches, evaluations, the rest."""
    plan = analysis.plan
    watched = [m for r in plan.stop_rules if r.kind == "non_finite" for m in (r.metrics or [])]

    def rank(name: str) -> tuple:
        if same_metric(plan.quality.metric, name):
            return (0, name)
        if any(same_metric(w, name) for w in watched):
            return (1, name)
        return (2 if "eval" in name else 3, name)

    return sorted(metrics, key=rank)


def run_charts(analysis: Analysis, points: int = DEFAULT_POINTS) -> dict[str, list[MetricChart]]:
    """Per run id, one chart per metric it logged."""
    frame = analysis.campaign.metrics
    if not len(frame):
        return {}
    groups = analysis.campaign.frames_by_run()
    names = [c for c in frame.columns if c not in METRIC_FRAME_COLUMNS]
    logged = {run: [m for m in names if group[m].notna().any()] for run, group in groups.items()}
    out: dict[str, list[MetricChart]] = {}
    for run_id in analysis.campaign.runs:
        if run_id not in groups:
            continue
        family = chain(run_id, analysis.campaign)[:-1] + [run_id] + _descendants(analysis, run_id)
        charts = []
        for index, metric in enumerate(_order(analysis, logged[run_id])):
            data: list[dict] = []
            caption = []
            for member in family:
                if member not in groups or metric not in logged.get(member, []):
                    continue
                series = _series(groups[member], member, metric)
                if series is None:
                    continue
                reduced = reduce(series.values, points)
                mine = member == run_id
                relation = "" if mine else (" (before the resume)" if member in family[:family.index(run_id)] else " (after the resume)")
                data.extend(_traces(series, reduced, THIS_RUN if mine else OTHER_RUN, member + relation))
                text = f"{member}: {reduced.label()}, from {series.path}"
                if series.also_in:
                    text += f" (also logged in {', '.join(series.also_in)})"
                if series.without_step:
                    text += f"; {series.without_step:,} values without a step not drawn"
                caption.append(text)
            shapes, notes = _stop_shapes(analysis, run_id)
            for value, label in _thresholds(analysis, metric):
                shapes.append({"type": "line", "xref": "paper", "yref": "y", "x0": 0, "x1": 1, "y0": value, "y1": value,
                               "line": {"color": THRESHOLD, "width": 1, "dash": "dot"}})
                notes.append({"x": 1, "y": value, "xref": "paper", "yref": "y", "text": label, "showarrow": False,
                              "xanchor": "right", "yanchor": "bottom", "font": {"size": 11, "color": THRESHOLD}})
            mine_caption = next((c for c in caption if c.startswith(run_id + ":")), caption[0] if caption else "")
            notes.append({"x": 0, "y": -0.28, "xref": "paper", "yref": "paper", "text": mine_caption.split(", from ")[0],
                          "showarrow": False, "xanchor": "left", "yanchor": "top", "font": {"size": 11, "color": "#5f6b7a"}})
            figure = {
                "data": data,
                "layout": {
                    "title": {"text": metric, "x": 0, "font": {"size": 14}},
                    "height": 300,
                    "margin": {"l": 60, "r": 20, "t": 40, "b": 70},
                    "xaxis": {"title": {"text": "step"}, "zeroline": False},
                    "yaxis": {"zeroline": False, "automargin": True},
                    "yaxis2": {"overlaying": "y", "range": [0, 1.05], "visible": False, "fixedrange": True},
                    "showlegend": len(family) > 1,
                    "legend": {"orientation": "h", "y": 1.12, "x": 1, "xanchor": "right"},
                    "shapes": shapes,
                    "annotations": notes,
                },
            }
            charts.append(MetricChart(f"m{index}", metric, figure, "; ".join(caption)))
        out[run_id] = charts
    return out


def _descendants(analysis: Analysis, run_id: str) -> list[str]:
    found: list[str] = []
    queue = list(analysis.runs.continued_by.get(run_id, []))
    while queue:
        current = queue.pop(0)
        if current in found or current == run_id:
            continue
        found.append(current)
        queue.extend(analysis.runs.continued_by.get(current, []))
    return found
