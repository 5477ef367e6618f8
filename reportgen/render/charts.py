"""Charts as data: each function returns a plotly figure dict; pages embed it, plotly.js draws it.

plotly.js itself is written once into the site's assets (never fetched from a CDN, never
inlined into a page), so the site works offline and from file://.
"""

from __future__ import annotations

import json
from datetime import datetime

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from reportgen.analysis.interval import overhead

PLOTLY_ASSET = "assets/plotly.min.js"
COLORS = {"planned": "#9aa5b1", "actual": "#2f6fb3", "open": "#d9822b"}


def plotly_js() -> str:
    """The plotly.js bundle that ships inside the plotly package (no network)."""
    return get_plotlyjs()


def figure_json(figure: dict) -> str:
    """Deterministic JSON for a <script type="application/json"> block ("<" escaped)."""
    return json.dumps(figure, sort_keys=True, separators=(",", ":")).replace("<", "\\u003c")


def _to_dict(fig: go.Figure) -> dict:
    return json.loads(pio.to_json(fig, validate=True, engine="json"))


def _local(at: str) -> str:
    """plotly.js dates carry no offset: times are shown as wall-clock in the campaign's zone."""
    return datetime.fromisoformat(at).strftime("%Y-%m-%d %H:%M:%S")


def _ms(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds() * 1000.0


def schedule_gantt(schedule: dict) -> dict:
    """Planned and actual bars per step on one time axis, with the rented window marked (R6)."""
    steps = schedule["steps"]
    labels = [f"{s['id']} ({s['resource']})" for s in steps]
    planned = go.Bar(
        name="planned",
        orientation="h",
        y=labels,
        base=[_local(s["planned_start"]) for s in steps],
        x=[_ms(s["planned_start"], s["planned_end"]) for s in steps],
        marker_color=COLORS["planned"],
        offsetgroup="planned",
        customdata=[[s["planned_hours"]] for s in steps],
        hovertemplate="%{y}<br>planned %{customdata[0]} h<br>%{base} →<extra></extra>",
    )
    measured = [s for s in steps if s["actual_start"] and s["actual_end"]]
    actual = go.Bar(
        name="actual",
        orientation="h",
        y=[labels[steps.index(s)] for s in measured],
        base=[_local(s["actual_start"]) for s in measured],
        x=[_ms(s["actual_start"], s["actual_end"]) for s in measured],
        marker_color=COLORS["actual"],
        offsetgroup="actual",
        customdata=[[s["actual_hours"], s["actual_basis"]] for s in measured],
        hovertemplate="%{y}<br>actual %{customdata[0]} h (%{customdata[1]})<br>%{base} →<extra></extra>",
    )
    fig = go.Figure([planned, actual])
    fig.update_layout(
        barmode="group",
        height=120 + 34 * len(steps),
        margin={"l": 10, "r": 10, "t": 30, "b": 40},
        xaxis={"type": "date", "title": "time (campaign time zone)"},
        yaxis={"autorange": "reversed", "automargin": True},
        legend={"orientation": "h", "y": 1.08},
        shapes=[
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "x0": _local(schedule["window_start"]),
                "x1": _local(schedule["window_end"]),
                "y0": 0,
                "y1": 1,
                "fillcolor": "rgba(47,111,179,0.06)",
                "line": {"width": 1, "dash": "dot", "color": "#2f6fb3"},
                "layer": "below",
            }
        ],
        annotations=[
            {
                "x": _local(schedule["window_end"]),
                "y": 1,
                "xref": "x",
                "yref": "paper",
                "text": "end of rented window",
                "showarrow": False,
                "xanchor": "right",
                "yanchor": "bottom",
                "font": {"size": 11},
            }
        ],
    )
    return _to_dict(fig)


def percent(fractions: tuple[float, float]) -> tuple[float, float]:
    return 100.0 * fractions[0], 100.0 * fractions[1]


def interval_chart(interval: dict) -> dict | None:
    """Expected overhead against the save interval (R12): time spent saving (C/tau) plus work lost to
    interruptions (tau/2M), with Young's and Daly's optimum and the plan's interval marked."""
    cost, mtbi_h = interval["save_cost_s"], interval["mean_hours_between_interruptions"]
    values = (cost, mtbi_h, interval["young_s"], interval["daly_s"])
    if any(v is None or not v > 0 for v in values):  # nothing to draw (report.json rounds to milliseconds)
        return None
    mtbi = mtbi_h * 3600.0
    marks = [(interval["young_s"], "Young"), (interval["daly_s"], "Daly")]
    if interval["planned_minutes"]:
        marks.append((interval["planned_minutes"] * 60.0, "plan"))
    top = max(v for v, _ in marks) * 3.0
    xs = [top * (i + 1) / 200.0 for i in range(200)]
    saving, lost = (list(part) for part in zip(*(percent(overhead(x, cost, mtbi)) for x in xs)))
    minutes = [round(x / 60.0, 3) for x in xs]
    traces = [
        go.Scatter(x=minutes, y=[round(v, 4) for v in saving], name="saving (C / interval)", mode="lines",
                   line={"color": COLORS["planned"], "dash": "dot"}),
        go.Scatter(x=minutes, y=[round(v, 4) for v in lost], name="work lost (interval / 2M)", mode="lines",
                   line={"color": COLORS["open"], "dash": "dot"}),
        go.Scatter(x=minutes, y=[round(a + b, 4) for a, b in zip(saving, lost)], name="expected overhead", mode="lines",
                   line={"color": COLORS["actual"], "width": 2.5}),
    ]
    fig = go.Figure(traces)
    shapes, notes = [], []
    for index, (value, label) in enumerate(marks):
        total = sum(percent(overhead(value, cost, mtbi)))
        shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": value / 60.0, "x1": value / 60.0, "y0": 0, "y1": 1,
                       "line": {"color": "#5f6b7a", "width": 1, "dash": "dash" if label == "plan" else "solid"}})
        notes.append({"x": value / 60.0, "y": 1 - 0.1 * index, "xref": "x", "yref": "paper", "showarrow": False,
                      "xanchor": "left", "yanchor": "top", "font": {"size": 11},
                      "text": f"{label}: {value / 60.0:.1f} min, {total:.2f}%"})
    fig.update_layout(
        height=340, margin={"l": 60, "r": 20, "t": 30, "b": 50},
        xaxis={"title": "minutes between saves"},
        # The curve's interesting part is its minimum: show up to three times the lowest overhead.
        yaxis={"title": "% of GPU time", "range": [0, 3.0 * min(a + b for a, b in zip(saving, lost))]},
        legend={"orientation": "h", "y": 1.12}, shapes=shapes, annotations=notes,
    )
    return _to_dict(fig)


def variance_waterfall(schedule: dict, step_id: str | None = None) -> dict | None:
    """Planned -> each cause -> unexplained -> actual, for one step or (None) the whole campaign's span."""
    if step_id is None:
        if schedule["actual_hours"] is None:
            return None
        causes = {c["cause"]: c["hours"] for c in schedule["explained"]}
        planned, unexplained, actual = schedule["planned_hours"], schedule["unexplained_hours"], schedule["actual_hours"]
        title = "The campaign: planned span to actual span"
    else:
        step = next((s for s in schedule["steps"] if s["id"] == step_id and s["actual_hours"] is not None), None)
        if step is None:
            return None
        causes = {c["cause"]: c["hours"] for c in step["explained"]}
        planned, unexplained, actual = step["planned_hours"], step["unexplained_hours"], step["actual_hours"]
        title = f"{step_id}: planned to actual"
    labels = ["planned", *causes, "unexplained", "actual"]
    values = [planned, *causes.values(), unexplained, actual]
    trace = go.Waterfall(
        x=labels,
        y=[round(v, 4) for v in values],
        measure=["absolute", *(["relative"] * (len(causes) + 1)), "total"],
        text=[f"{v:+.2f} h" if 0 < i < len(values) - 1 else f"{v:.2f} h" for i, v in enumerate(values)],
        textposition="outside",
        connector={"line": {"color": "#c8ced6"}},
        increasing={"marker": {"color": COLORS["open"]}},
        decreasing={"marker": {"color": "#2e8540"}},
        totals={"marker": {"color": COLORS["actual"]}},
        hovertemplate="%{x}: %{y:.2f} h<extra></extra>",
    )
    fig = go.Figure([trace])
    fig.update_layout(title={"text": title, "x": 0, "font": {"size": 14}}, height=340, showlegend=False,
                      margin={"l": 60, "r": 20, "t": 40, "b": 60}, yaxis={"title": "hours"})
    return _to_dict(fig)


def estimates_chart(estimates: list[dict]) -> dict | None:
    """Planned, measured and suggested next hours for every step, side by side (R16)."""
    steps = [e for e in estimates if e["kind"] == "step"]
    if not steps:
        return None
    names = [e["id"] for e in steps][::-1]  # first step on top
    traces = []
    for key, label, color in (("planned_hours", "planned", COLORS["planned"]), ("measured_hours", "measured", COLORS["actual"]),
                              ("next_hours", "next estimate", COLORS["open"])):
        values = [e[key] for e in steps][::-1]
        traces.append(go.Bar(
            y=names, x=values, name=label, orientation="h", marker_color=color,
            hovertemplate=f"%{{y}} {label}: %{{x:.2f}} h<extra></extra>",
        ))
    fig = go.Figure(traces)
    fig.update_layout(barmode="group", height=120 + 42 * len(steps), title={"text": "Hours per step", "x": 0, "font": {"size": 14}},
                      margin={"l": 120, "r": 20, "t": 40, "b": 40}, xaxis={"title": "hours"},
                      legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.0, "yanchor": "bottom"})
    return _to_dict(fig)
