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
