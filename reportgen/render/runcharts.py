"""Metric charts of each run page: every logged metric by step, with stops, evaluations and non-finite values.

A run that resumes another is drawn as its continuation: the runs it continues and the runs that
continue it are on the same axes, in grey. Long series are reduced by `downsample.reduce`, which
keeps each bucket's extremes and the non-finite points, and each chart says how many points it shows.
Figures are plain plotly JSON (built as dicts: thousands of points per chart, no validation pass).

Only the width of a chart follows the page; its height is fixed here, so every label is given a
row of its own in pixels and no two labels meet at any width: the toolbar has a band above the
title, stop labels sit in rows above the plot (one row per stop), threshold labels in the right
margin level with their line, non-finite values in a band of their own above the plot, the point
count and the legend below.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from reportgen.analysis import Analysis
from reportgen.analysis.runs import chain
from reportgen.model import metric_values, same_metric
from reportgen.parallel import ordered_map
from reportgen.recall import digest
from reportgen.render.charts import FONT_FAMILY, TEXT, TOOLBAR, figure_json, text_width
from reportgen.render.downsample import DEFAULT_POINTS, Reduced, reduce

# Colours; every text colour keeps 4.5:1 against the white background (WCAG AA).
THIS_RUN = "#2f6fb3"
OTHER_RUN = "#9aa5b1"  # a line only: as text it would be 2.5:1
OTHER_RUN_TEXT = "#5f6b7a"
STOP = "#c0392b"
THRESHOLD = "#a0540f"
NON_FINITE = "#7d3c98"
NOTE = "#5f6b7a"
FONT = 11  # px, every label

# The vertical layout, in pixels.
TITLE = 24
ROW = 19  # one row of labels
LABEL = 17  # the height of one label's box (11 px text, 1.3 em a line, and its padding)
PLOT = 190  # the metric's axis
GAP, STRIP = 8, 24  # the band of non-finite markers above the metric's axis
AXIS = 62  # the step axis' tick labels and title under the plot
NOTE_ROW = 18  # the point count
LEGEND_ROW = 19

SPARSE = 40  # a series of at most this many points has each point marked
LABELLED_WINDOWS = 6  # per trace: windows of non-finite values named on the chart (every one has hover text)
SYMBOLS = {"NaN": "x", "+Inf": "triangle-up", "-Inf": "triangle-down"}


@dataclass
class MetricChart:
    id: str
    metric: str
    figure: dict
    caption: str
    json: str = ""  # the figure as the page embeds it, made where the chart is drawn (a worker, often)

    def __post_init__(self) -> None:
        self.json = self.json or figure_json(self.figure)

    @property
    def label(self) -> str:
        """The chart's accessible name: its metric, its run and what the axes are."""
        return self.figure["label"]


@dataclass
class _Series:
    run: str
    path: str
    steps: np.ndarray
    values: np.ndarray
    eval_rows: bool
    also_in: list[str]
    without_step: int


@dataclass
class _Drawn:
    """One member of the chain as drawn: its series, what was kept of it, its name, whether it is the page's run."""

    series: _Series
    reduced: Reduced
    name: str
    mine: bool

    @property
    def color(self) -> str:
        return THIS_RUN if self.mine else OTHER_RUN

    @property
    def shown(self) -> np.ndarray:
        return np.union1d(self.reduced.kept, self.reduced.non_finite)


@dataclass(frozen=True)
class _Rows:
    """A run's rows as arrays, made once for all of its metrics: file (a code into `names`), kind and
    step of each."""

    files: np.ndarray
    names: np.ndarray
    kinds: np.ndarray
    steps: np.ndarray

    @classmethod
    def of(cls, frame: pd.DataFrame) -> _Rows:
        files, names = pd.factorize(frame["path"].astype(str))
        return cls(files, np.asarray(names, dtype=object), frame["kind"].to_numpy(),
                   frame["step"].to_numpy(dtype="float64", na_value=np.nan))


def _series(frame: pd.DataFrame, run: str, metric: str, rows: _Rows | None = None) -> _Series | None:
    """One run's values of one metric, from the file that logged most of them (of equals, the first by
    name), in step order."""
    logged, every = metric_values(frame[metric])
    if not logged.any():
        return None
    rows = rows or _Rows.of(frame)
    files = rows.files[logged]
    counts = np.bincount(files, minlength=len(rows.names))
    present = np.flatnonzero(counts)
    most = present[counts[present] == counts.max()]
    best_code = min(most, key=lambda code: rows.names[code])
    best = str(rows.names[best_code])
    mine = files == best_code
    steps = rows.steps[logged][mine]
    values = every[logged][mine]
    has_step = ~np.isnan(steps)
    order = np.argsort(steps[has_step], kind="stable")
    kinds = rows.kinds[logged][mine]
    others = sorted(str(rows.names[code]) for code in present if code != best_code)
    return _Series(run, best, steps[has_step][order].astype(np.int64), values[has_step][order],
                   bool((kinds == "eval").mean() > 0.5), others, int((~has_step).sum()))


def _kind(value: float) -> str:
    return "NaN" if np.isnan(value) else ("+Inf" if value > 0 else "-Inf")


def _line(drawn: _Drawn) -> dict:
    """The series as a line, broken where values are not finite; points marked when there are few."""
    shown = drawn.shown
    y = drawn.series.values[shown]
    finite = np.isfinite(y)
    count = int(finite.sum())
    # A line through one point draws nothing, and a line alone hides where a sparse series was measured.
    mode = "markers" if count == 1 else ("lines+markers" if drawn.series.eval_rows or count <= SPARSE else "lines")
    return {
        "type": "scatter",
        "mode": mode,
        "name": drawn.name,
        "legendgroup": drawn.name,
        "x": drawn.series.steps[shown].tolist(),
        "y": _finite_or_none(y, finite),
        "connectgaps": False,
        "line": {"color": drawn.color, "width": 1.5},
        "marker": {"size": 7 if count == 1 else 5, "color": drawn.color},
        "hovertemplate": "step %{x}<br>%{y:.5g}<extra>" + drawn.name + "</extra>",
    }


def _finite_or_none(values: np.ndarray, finite: np.ndarray) -> list[float | None]:
    """The values as floats, None (a gap in the line) where not finite."""
    out: list[float | None] = values.astype(float).tolist()
    for index in np.flatnonzero(~finite).tolist():
        out[index] = None
    return out


def _windows(values: np.ndarray, kept: np.ndarray) -> list[tuple[int, int]]:
    """The kept non-finite points grouped into windows: first and last position in `kept` of each run of
    one kind with no other value between them in the series."""
    code = np.where(np.isnan(values), 0.0, np.sign(values))
    code[np.isfinite(values)] = 2.0
    windows: list[tuple[int, int]] = []
    for position, index in enumerate(kept):
        if windows:
            previous = kept[windows[-1][1]]
            if np.all(code[previous:index + 1] == code[index]):
                windows[-1] = (windows[-1][0], position)
                continue
        windows.append((position, position))
    return windows


def _non_finite(drawn: _Drawn, x_range: tuple[float, float]) -> list[dict]:
    """One trace per kind of non-finite value, in the band above the plot, each window named on the chart."""
    series, kept = drawn.series, drawn.reduced.non_finite
    color, text_color = (NON_FINITE, NON_FINITE) if drawn.mine else (OTHER_RUN, OTHER_RUN_TEXT)
    traces = []
    for kind, symbol in SYMBOLS.items():
        mine = np.asarray([index for index in kept if _kind(series.values[index]) == kind], dtype=np.int64)
        if not len(mine):
            continue
        steps = series.steps[mine]
        text = [""] * len(mine)
        for first, last in _windows(series.values, mine)[:LABELLED_WINDOWS]:
            at = f"{steps[first]}" if first == last else f"{steps[first]}–{steps[last]}"
            text[first] = f"{kind} @ {at}"
        lo, hi = x_range
        # Labels point into the chart: right of a marker in its left half, left of it in its right half.
        sides = ["middle right" if (step - lo) <= (hi - lo) / 2 else "middle left" for step in steps.tolist()]
        traces.append({
            "type": "scatter",
            "mode": "markers+text",
            "name": f"{drawn.name}: {kind}",
            "legendgroup": drawn.name,
            "x": steps.tolist(),
            "y": [0.5] * len(mine),
            "yaxis": "y2",
            "text": text,
            "textposition": sides,
            "textfont": {"size": FONT, "color": text_color},
            "cliponaxis": False,
            "marker": {"symbol": symbol, "size": 11, "color": color, "line": {"width": 1.5, "color": color}},
            "hovertemplate": f"step %{{x}}: {kind}<extra>{drawn.name}</extra>",
        })
    return traces


def _stops(analysis: Analysis, run_id: str) -> list[tuple[int, str, str]]:
    """(step, line dash, label) of every stop of the run, in step order."""
    marks = []
    for stop in analysis.stops.for_run(run_id):
        rule = stop.rule or "unnamed stop"
        mine = []
        if stop.evaluated and stop.evaluated.step is not None:
            mine.append((stop.evaluated.step, "solid", f"{rule} (evaluated)"))
        if stop.logged and stop.logged.step is not None and (not mine or mine[0][0] != stop.logged.step):
            mine.append((stop.logged.step, "dash", f"{rule} (logged)"))
        elif stop.logged and mine:
            mine[0] = (mine[0][0], "solid", rule)
        marks.extend(mine)
    return sorted(marks, key=lambda mark: mark[0])


def _stop_marks(stops: list[tuple[int, str, str]], x_range: tuple[float, float], paper: float) -> tuple[list[dict], list[dict]]:
    """Each stop a line through the plot up to its label, each label in a row of its own above the plot."""
    lo, hi = x_range
    shapes, notes = [], []
    for row, (step, dash, text) in enumerate(stops):
        lift = 3 + row * ROW
        shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": step, "x1": step, "y0": 0,
                       "y1": 1 + (lift + LABEL / 2) / paper, "line": {"color": STOP, "width": 1.5, "dash": dash}})
        notes.append({"x": step, "y": 1, "xref": "x", "yref": "paper", "yshift": lift, "text": text,
                      "showarrow": False, "xanchor": "left" if step - lo <= (hi - lo) / 2 else "right",
                      "yanchor": "bottom", "font": {"size": FONT, "color": STOP}, "bgcolor": "#ffffff"})
    return shapes, notes


def _threshold_marks(lines: list[tuple[float, str]], y_range: tuple[float, float]) -> tuple[list[dict], list[dict]]:
    """Each threshold a dotted line, its label in the right margin level with it; labels that would meet
    are moved apart (upwards from the lowest, then down from the plot's top), so none covers another."""
    lo, hi = y_range
    ordered = sorted(lines)
    centres = [(value - lo) / (hi - lo) * PLOT for value, _ in ordered]
    bottoms: list[float] = []  # of each label's box, in pixels from the bottom of the plot
    for centre in centres:
        bottoms.append(max(centre - LABEL / 2, bottoms[-1] + LABEL + 1) if bottoms else centre - LABEL / 2)
    for index in reversed(range(len(bottoms))):
        ceiling = PLOT - LABEL if index == len(bottoms) - 1 else bottoms[index + 1] - LABEL - 1
        bottoms[index] = min(bottoms[index], ceiling)
    shapes, notes = [], []
    for (value, text), centre, bottom in zip(ordered, centres, bottoms):
        shapes.append({"type": "line", "xref": "paper", "yref": "y", "x0": 0, "x1": 1, "y0": value, "y1": value,
                       "line": {"color": THRESHOLD, "width": 1, "dash": "dot"}})
        notes.append({"x": 1, "y": value, "xref": "paper", "yref": "y", "xshift": 4, "yshift": round(bottom + LABEL / 2 - centre, 2),
                      "text": text, "showarrow": False, "xanchor": "left", "yanchor": "middle",
                      "font": {"size": FONT, "color": THRESHOLD}})
    return shapes, notes


def _thresholds(analysis: Analysis, metric: str) -> list[tuple[float, str]]:
    plan = analysis.plan
    lines = []
    if same_metric(plan.quality.metric, metric):
        meets = "≥" if plan.quality.direction == "higher" else "≤"
        lines.append((plan.quality.threshold, f"pass {meets} {plan.quality.threshold:g}"))
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


def _x_range(drawn: list[_Drawn], stops: list[tuple[int, str, str]]) -> tuple[float, float]:
    steps = [int(s) for d in drawn for s in d.series.steps[d.shown]] + [step for step, _, _ in stops]
    if not steps:
        return (0.0, 1.0)
    lo, hi = min(steps), max(steps)
    pad = max(0.5, 0.02 * (hi - lo))
    return (lo - pad, hi + pad)


def _y_range(drawn: list[_Drawn], thresholds: list[tuple[float, str]]) -> tuple[float, float]:
    values = [d.series.values[d.reduced.kept] for d in drawn] + [np.asarray([v for v, _ in thresholds], dtype="float64")]
    every = np.concatenate(values)
    if not len(every):
        return (0.0, 1.0)
    lo, hi = float(every.min()), float(every.max())
    pad = 0.08 * (hi - lo) if hi > lo else (abs(lo) * 0.1 or 1.0)
    return (lo - pad, hi + pad)


def _chart(analysis: Analysis, run_id: str, metric: str, drawn: list[_Drawn]) -> dict:
    """One metric's figure: its series, stops, thresholds and non-finite values, laid out in rows."""
    stops = _stops(analysis, run_id)
    thresholds = _thresholds(analysis, metric)
    x_range, y_range = _x_range(drawn, stops), _y_range(drawn, thresholds)
    data = [_line(d) for d in drawn]
    data += [trace for d in drawn for trace in _non_finite(d, x_range)]
    strip = any(trace.get("yaxis") == "y2" for trace in data)
    paper = PLOT + (GAP + STRIP if strip else 0)
    top = TOOLBAR + TITLE + len(stops) * ROW + 6
    bottom = AXIS + NOTE_ROW + len(data) * LEGEND_ROW + 8
    stop_shapes, stop_notes = _stop_marks(stops, x_range, paper)
    line_shapes, line_notes = _threshold_marks(thresholds, y_range)
    mine = next((d.reduced.count() for d in drawn if d.mine), "no point shown")
    count = {"x": 0, "y": 0, "xref": "paper", "yref": "paper", "yshift": -AXIS, "text": f"{run_id}: {mine}",
             "showarrow": False, "xanchor": "left", "yanchor": "top", "font": {"size": FONT, "color": NOTE}}
    magnitude = max(abs(y_range[0]), abs(y_range[1]))
    yaxis = {"zeroline": False, "automargin": True, "range": list(y_range), "domain": [0, PLOT / paper]}
    if magnitude < 1e-2:  # learning rates and the like: 2e-4, not plotly's "200μ"
        yaxis["exponentformat"] = "e"
    xaxis = {"title": {"text": "step"}, "zeroline": False, "range": list(x_range)}
    if x_range[1] - x_range[0] < 10:  # steps are whole numbers: no tick at 9.5
        xaxis.update(tick0=0, dtick=1)
    layout = {
        "title": {"text": metric, "x": 0, "xref": "container", "xanchor": "left", "y": 1, "yref": "container",
                  "yanchor": "top", "pad": {"t": TOOLBAR, "l": 8}, "font": {"size": 14}},
        "font": {"color": TEXT, "family": FONT_FAMILY},
        "height": top + paper + bottom,
        "margin": {"l": 60, "r": round(max([20.0] + [text_width(text, FONT) + 12 for _, text in thresholds])), "t": top, "b": bottom},
        "xaxis": xaxis,
        "yaxis": yaxis,
        "showlegend": True,
        "legend": {"orientation": "v", "x": 0, "xanchor": "left", "y": -(AXIS + NOTE_ROW) / paper, "yanchor": "top",
                   "font": {"size": FONT}, "tracegroupgap": 0},
        "shapes": stop_shapes + line_shapes,
        "annotations": stop_notes + line_notes + [count],
    }
    if strip:
        layout["yaxis2"] = {"domain": [(PLOT + GAP) / paper, 1], "range": [0, 1], "fixedrange": True, "anchor": "x",
                            "showgrid": False, "zeroline": False, "tickvals": [0.5], "ticktext": ["not finite"]}
    others = [d.name for d in drawn if not d.mine]
    label = f"{metric} of {run_id} by step" + (f", with {' and '.join(others)}" if others else "")
    return {"data": data, "layout": layout, "label": label}


class RunCharts(Mapping[str, list[MetricChart]]):
    """Per run id, one chart per metric it logged, each run's drawn when asked for: a build draws a run's
    charts where its page is rendered (a worker, often), so none waits for the others' or travels between
    processes. The runs' rows are grouped, and the metrics each logged counted, once, before any is drawn."""

    def __init__(self, analysis: Analysis, points: int = DEFAULT_POINTS):
        campaign = analysis.campaign
        self.analysis, self.points = analysis, points
        self.groups = campaign.frames_by_run() if len(campaign.metrics) else {}
        self.logged = campaign.metrics_by_run() if self.groups else {}
        self.arrays: dict[str, _Rows] = {}  # each run's rows converted once, for its own charts and its family's
        self.plan_digest: bytes | None = None

    def __getitem__(self, run_id: str) -> list[MetricChart]:
        if run_id not in self.groups:
            raise KeyError(run_id)
        return _run_charts(self.analysis, run_id, self.groups, self.logged, self.arrays, self.points)

    def key(self, run_id: str) -> bytes:
        """What a run's charts are drawn from, as one digest (the page memo's): the runs of its chain, their
        rows (columns and values) and the metrics each logged, its stops, the plan and the points drawn. Equal
        keys, equal charts."""
        family = _family(self.analysis, run_id)
        return digest(family, [self._rows(member) for member in family], self.analysis.stops.for_run(run_id),
                      self._plan(), self.points)

    def _rows(self, run_id: str) -> bytes | None:
        """A run's rows (every cell, their order, the columns and their types: Campaign.run_digests, worked out
        once for the campaign's frame and shared with the analysis) and the metrics it logged, as one digest."""
        if run_id not in self.groups:
            return None
        return digest(self.analysis.campaign.run_digests().get(run_id), self.logged.get(run_id))

    def _plan(self) -> bytes:
        if self.plan_digest is None:
            self.plan_digest = digest(self.analysis.plan)
        return self.plan_digest

    def __iter__(self) -> Iterator[str]:
        return (run_id for run_id in self.analysis.campaign.runs if run_id in self.groups)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def run_charts(analysis: Analysis, points: int = DEFAULT_POINTS,
               progress: Callable[[str, str, int, int], None] | None = None, jobs: int = 1) -> dict[str, list[MetricChart]]:
    """Every run's charts drawn at once (RunCharts), the runs shared among `jobs` workers; `progress`
    hears of each run drawn."""
    charts = RunCharts(analysis, points)
    runs = list(charts)

    def heard(index: int, _charts: list[MetricChart]) -> None:
        if progress:
            progress("drawing", f"runs/{runs[index]}", index + 1, len(runs))

    return dict(zip(runs, ordered_map(charts.__getitem__, runs, jobs, heard), strict=True))


def _run_charts(analysis: Analysis, run_id: str, groups: dict[str, pd.DataFrame], logged: dict[str, list[str]],
                arrays: dict[str, _Rows], points: int) -> list[MetricChart]:
    """One chart per metric the run logged, with the runs it continues and that continue it."""
    family = _family(analysis, run_id)
    charts = []
    for index, metric in enumerate(_order(analysis, logged[run_id])):
        drawn: list[_Drawn] = []
        caption = []
        for member in family:
            if member not in groups or metric not in logged.get(member, []):
                continue
            if member not in arrays:
                arrays[member] = _Rows.of(groups[member])
            series = _series(groups[member], member, metric, arrays[member])
            if series is None:
                continue
            reduced = reduce(series.values, points)
            mine = member == run_id
            relation = "" if mine else (" (before the resume)" if member in family[:family.index(run_id)] else " (after the resume)")
            drawn.append(_Drawn(series, reduced, member + relation, mine))
            text = f"{member}: {reduced.label()}, from {series.path}"
            if series.also_in:
                text += f" (also logged in {', '.join(series.also_in)})"
            if series.without_step:
                text += f"; {series.without_step:,} value{'s' if series.without_step != 1 else ''} without a step not drawn"
            caption.append(text)
        charts.append(MetricChart(f"m{index}", metric, _chart(analysis, run_id, metric, drawn), "; ".join(caption)))
    return charts


def _family(analysis: Analysis, run_id: str) -> list[str]:
    """The runs a run's charts draw: those it continues, itself, those that continue it."""
    return chain(run_id, analysis.campaign)[:-1] + [run_id] + _descendants(analysis, run_id)


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
