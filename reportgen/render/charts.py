"""Charts as data: each function returns a plotly figure dict; pages embed it, plotly.js draws it.

plotly.js itself is written once into the site's assets (never fetched from a CDN, never
inlined into a page), so the site works offline and from file://.
"""

from __future__ import annotations

import itertools
import json
from datetime import datetime, timezone

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from reportgen.analysis.interval import overhead

PLOTLY_ASSET = "assets/plotly.min.js"
COLORS = {"planned": "#9aa5b1", "actual": "#2f6fb3", "open": "#d9822b", "saved": "#2e8540",
          "projected": "#a9c6e8"}  # bars and lines
TEXT = "#444444"  # every label: 9.7:1 against the white background (WCAG AA asks 4.5:1)
# Fonts of Arial's metrics (on every system), so that a label's width can be estimated when laying charts out.
FONT_FAMILY = "Arial, 'Liberation Sans', Helvetica, sans-serif"
TOOLBAR = 28  # px kept free at the top of a chart for plotly's toolbar, so it covers no title or legend


def text_width(text: str, size: float) -> float:
    """A generous estimate of a label's width in pixels: Arial averages about 0.5 em a character."""
    return len(text) * size * 0.6


def plotly_js() -> str:
    """The plotly.js bundle that ships inside the plotly package (no network)."""
    return get_plotlyjs()


def figure_json(figure: dict) -> str:
    """Deterministic JSON for a <script type="application/json"> block ("<" escaped)."""
    return json.dumps(figure, sort_keys=True, separators=(",", ":")).replace("<", "\\u003c")


def warm(report: dict) -> None:
    """Draw a report's campaign charts, for nothing but what drawing them imports: plotly imports each trace type
    and layout part the first time a figure uses it, so a long-lived process whose page workers are forked at
    every build (the watcher) imports them once, here, and its workers inherit them (instead of each worker
    importing them again at every build)."""
    schedule = report["schedule"]
    schedule_gantt(schedule, report.get("clock"))
    variance_waterfall(schedule)
    interval_chart(report["checkpoints"]["interval"])
    estimates_chart(report["estimates"])


def _to_dict(fig: go.Figure) -> dict:
    return json.loads(pio.to_json(fig, validate=True, engine="json"))


def _layout(**layout) -> dict:
    """What every chart of this module shares: white background, one text colour, the toolbar's band."""
    return {"template": "none", "font": {"color": TEXT, "family": FONT_FAMILY}, "paper_bgcolor": "#ffffff", "plot_bgcolor": "#ffffff", **layout}


def _title(text: str) -> dict:
    """A title under the toolbar's band, left-aligned."""
    return {"text": text, "x": 0, "xref": "container", "xanchor": "left", "y": 1, "yref": "container", "yanchor": "top",
            "pad": {"t": TOOLBAR, "l": 8}, "font": {"size": 14}}


def _legend_below() -> dict:
    """The legend at the foot of the chart, far from the toolbar at its top right."""
    return {"orientation": "h", "x": 0, "xanchor": "left", "y": 0, "yref": "container", "yanchor": "bottom", "traceorder": "normal"}


def hours(value: float) -> str:
    """Hours as the site's headlines show them: one decimal."""
    return f"{value:,.1f} h"


def signed_hours(value: float) -> str:
    """A change in hours, one decimal; under 0.05 h in minutes (or seconds), never "+0.0 h"."""
    if value == 0:
        return "0 h"
    if abs(value) >= 0.05:
        return f"{value:+,.1f} h"
    if abs(value) * 60 >= 0.05:
        return f"{value * 60:+.1f} min"
    return f"{value * 3600:+.0f} s"


def _zone(at: str) -> timezone:
    """The fixed offset a time of the report carries (every one does: they are written in the campaign's zone)."""
    return timezone(datetime.fromisoformat(at).utcoffset())


def zone_name(zone: timezone) -> str:
    """"UTC+09:00": the campaign's zone as its offset, which is what its times carry."""
    minutes = round(zone.utcoffset(None).total_seconds() / 60)
    sign = "+" if minutes >= 0 else "-"
    return f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def _local(at: str, zone: timezone) -> str:
    """plotly.js dates carry no offset: every time is shown as wall-clock time in the campaign's zone."""
    return datetime.fromisoformat(at).astimezone(zone).strftime("%Y-%m-%d %H:%M:%S")


def _ms(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds() * 1000.0


def schedule_gantt(schedule: dict, clock: dict | None = None) -> dict:
    """Planned and actual bars per step on one time axis, with the rented window marked (R6): with several lots,
    a GPU step's row shows its own lot's span, the other rows the whole window, and each lot's end is named; while
    the lot clock runs, each step still to do as projected (from now for a running one) and a line at now."""
    steps = schedule["steps"]
    zone = _zone(schedule["window_start"])
    labels = [f"{s['id']} ({s['resource']})" for s in steps]
    planned = go.Bar(
        name="planned",
        orientation="h",
        y=labels,
        base=[_local(s["planned_start"], zone) for s in steps],
        x=[_ms(s["planned_start"], s["planned_end"]) for s in steps],
        marker_color=COLORS["planned"],
        offsetgroup="planned",
        customdata=[[s["planned_hours"]] for s in steps],
        hovertemplate="%{y}<br>planned %{customdata[0]:.1f} h<br>%{base} →<extra></extra>",
    )
    measured = [s for s in steps if s["actual_start"] and s["actual_end"]]
    actual = go.Bar(
        name="actual",
        orientation="h",
        y=[labels[steps.index(s)] for s in measured],
        base=[_local(s["actual_start"], zone) for s in measured],
        x=[_ms(s["actual_start"], s["actual_end"]) for s in measured],
        marker_color=COLORS["actual"],
        offsetgroup="actual",
        customdata=[[s["actual_hours"], s["actual_basis"]] for s in measured],
        hovertemplate="%{y}<br>actual %{customdata[0]:.1f} h (%{customdata[1]})<br>%{base} →<extra></extra>",
    )
    bars = [planned, actual]
    running = clock is not None and clock["running"]
    if running:
        ahead = [s for s in clock["steps"] if s["state"] in ("running", "pending") and s["end"]]
        index = {s["id"]: i for i, s in enumerate(steps)}
        starts = [clock["now"] if s["state"] == "running" else s["start"] for s in ahead]
        bars.append(go.Bar(
            name="projected",
            orientation="h",
            y=[labels[index[s["id"]]] for s in ahead],
            base=[_local(start, zone) for start in starts],
            x=[_ms(start, s["end"]) for start, s in zip(starts, ahead)],
            marker_color=COLORS["projected"],
            offsetgroup="actual",
            customdata=[[s["basis"]] for s in ahead],
            hovertemplate="%{y}<br>projected: %{customdata[0]}<br>%{base} →<extra></extra>",
        ))
    fig = go.Figure(bars)
    fig.update_layout(**_layout(
        barmode="group",
        height=TOOLBAR + 14 + 34 * len(steps) + 110,
        margin={"l": 10, "r": 10, "t": TOOLBAR + 14, "b": 110},
        xaxis={"type": "date", "title": {"text": f"time ({zone_name(zone)})"}},
        yaxis={"autorange": "reversed", "automargin": True},
        legend=_legend_below(),
        shapes=_rented(schedule, steps, zone) + ([{"type": "line", "xref": "x", "yref": "paper", "x0": _local(clock["now"], zone), "x1": _local(clock["now"], zone),
               "y0": 0, "y1": 1, "line": {"width": 1.5, "color": COLORS["open"]}}] if running else []),
        annotations=[
            {
                "x": _local(end, zone),
                "y": 1,
                "xref": "x",
                "yref": "paper",
                "text": text,
                "showarrow": False,
                "xanchor": "right",
                "yanchor": "bottom",
                "font": {"size": 11, "color": TEXT},
            }
            for end, text in _lot_ends(schedule)
        ] + ([{"x": _local(clock["now"], zone), "y": 1, "xref": "x", "yref": "paper", "text": "now", "showarrow": False,
               "xanchor": "left", "yanchor": "bottom", "font": {"size": 11, "color": TEXT}}] if running else []),
    ))
    return _to_dict(fig)


def _rented(schedule: dict, steps: list[dict], zone: timezone) -> list[dict]:
    """The rented time behind the bars: the window (R6); with several lots, on each GPU step's row its lot's span
    (a lot bought to follow another holds its GPU from its own start), on the other rows the window."""
    box = {"type": "rect", "xref": "x", "fillcolor": "rgba(47,111,179,0.06)", "layer": "below",
           "line": {"width": 1, "dash": "dot", "color": COLORS["actual"]}}
    window = (_local(schedule["window_start"], zone), _local(schedule["window_end"], zone))
    lots = schedule.get("lots") or []
    if all((lot["start"], lot["end"]) == (schedule["window_start"], schedule["window_end"]) for lot in lots):  # one span
        return [{**box, "yref": "paper", "x0": window[0], "x1": window[1], "y0": 0, "y1": 1}]
    spans = {gpu: (_local(lot["start"], zone), _local(lot["end"], zone)) for lot in lots for gpu in lot["gpus"]}
    shapes = []
    for row, step in enumerate(steps):
        x0, x1 = spans.get(step["resource"], window)
        shapes.append({**box, "yref": "y", "x0": x0, "x1": x1, "y0": row - 0.5, "y1": row + 0.5})
    return shapes


def _lot_ends(schedule: dict) -> list[tuple[str, str]]:
    """Where the rented time ends, named: the window's end, and with several lots each earlier lot's end."""
    last = datetime.fromisoformat(schedule["window_end"])
    earlier: dict[datetime, list[str]] = {}
    for lot in schedule.get("lots") or []:
        end = datetime.fromisoformat(lot["end"])
        if end < last:
            earlier.setdefault(end, []).append(lot["label"])
    return [(schedule["window_end"], "end of rented window")] + [
        (at.isoformat(), f"end of {' and '.join(labels)}") for at, labels in sorted(earlier.items())]


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
        go.Scatter(x=minutes, y=[round(v, 4) for v in saving], name="time spent saving", mode="lines",
                   line={"color": COLORS["planned"], "dash": "dot"}),
        go.Scatter(x=minutes, y=[round(v, 4) for v in lost], name="work an interruption loses", mode="lines",
                   line={"color": COLORS["open"], "dash": "dot"}),
        go.Scatter(x=minutes, y=[round(a + b, 4) for a, b in zip(saving, lost)], name="the two together", mode="lines",
                   line={"color": COLORS["actual"], "width": 2.5}),
    ]
    fig = go.Figure(traces)
    shapes, notes = [], []
    for index, (value, label) in enumerate(marks):
        total = sum(percent(overhead(value, cost, mtbi)))
        shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": value / 60.0, "x1": value / 60.0, "y0": 0, "y1": 1,
                       "line": {"color": "#5f6b7a", "width": 1, "dash": "dash" if label == "plan" else "solid"}})
        # Each mark's label a row (18 px) below the one before, so marks close together stay legible.
        notes.append({"x": value / 60.0, "y": 1, "yshift": -18 * index, "xref": "x", "yref": "paper", "showarrow": False,
                      "xanchor": "left", "yanchor": "top", "font": {"size": 11, "color": TEXT}, "bgcolor": "rgba(255,255,255,0.85)",
                      "text": f"{label}: {value / 60.0:.1f} min, {total:.2f}%"})
    fig.update_layout(**_layout(
        height=400, margin={"l": 60, "r": 20, "t": TOOLBAR + 8, "b": 100},
        xaxis={"title": {"text": "minutes between saves"}},
        # The curve's interesting part is its minimum: show up to three times the lowest overhead.
        yaxis={"title": {"text": "% of GPU time"}, "range": [0, 3.0 * min(a + b for a, b in zip(saving, lost))]},
        legend=_legend_below(), shapes=shapes, annotations=notes,
    ))
    return _to_dict(fig)


def variance_waterfall(schedule: dict, step_id: str | None = None) -> dict | None:
    """Planned -> each cause -> unexplained -> actual, for one step or (None) the whole campaign's span.

    The bars start at the planned hours, not at zero: beside a plan of days, causes of minutes would be
    slivers. Each bar's length is a change; the last bar, the actual hours, spans the whole variance.
    """
    if step_id is None:
        if schedule["actual_hours"] is None:
            return None
        causes = {c["cause"]: c["hours"] for c in schedule["explained"]}
        planned, unexplained, actual = schedule["planned_hours"], schedule["unexplained_hours"], schedule["actual_hours"]
        name = "The campaign"
    else:
        step = next((s for s in schedule["steps"] if s["id"] == step_id and s["actual_hours"] is not None), None)
        if step is None:
            return None
        causes = {c["cause"]: c["hours"] for c in step["explained"]}
        planned, unexplained, actual = step["planned_hours"], step["unexplained_hours"], step["actual_hours"]
        name = step_id
    changes = [*causes.values(), unexplained]
    labels = [*causes, "unexplained", "actual"]
    running = list(itertools.accumulate(changes, initial=planned))
    lo, hi = min(running), max(running)
    pad = 0.12 * (hi - lo) or 0.5
    trace = go.Waterfall(
        orientation="h",
        y=labels,
        x=[round(v, 4) for v in changes] + [0],  # the total is plotly's sum from the base
        base=planned,
        measure=["relative"] * len(changes) + ["total"],
        text=[signed_hours(v) for v in changes] + [f"{hours(actual)} ({signed_hours(actual - planned)})"],
        textposition="outside",
        textfont={"color": TEXT},
        cliponaxis=False,
        connector={"line": {"color": "#c8ced6"}},
        increasing={"marker": {"color": COLORS["open"]}},
        decreasing={"marker": {"color": COLORS["saved"]}},
        totals={"marker": {"color": COLORS["actual"]}},
        hovertemplate="%{y}: %{text}<extra></extra>",
    )
    fig = go.Figure([trace])
    fig.update_layout(**_layout(
        title=_title(f"{name}: planned {hours(planned)} → actual {hours(actual)}"),
        height=TOOLBAR + 30 + 24 * len(labels) + 60, showlegend=False,
        margin={"l": 10, "r": 50, "t": TOOLBAR + 30, "b": 60},
        xaxis={"title": {"text": "hours"},
               "range": [lo - pad, hi + pad], "zeroline": False},
        yaxis={"autorange": "reversed", "automargin": True},
        shapes=[{"type": "line", "xref": "x", "yref": "paper", "x0": planned, "x1": planned, "y0": 0, "y1": 1,
                 "line": {"color": "#5f6b7a", "width": 1, "dash": "dot"}}],
    ))
    return _to_dict(fig)


def estimates_chart(estimates: list[dict]) -> dict | None:
    """Planned, measured and suggested next hours for every step the next campaign keeps, side by side
    (R16); a step left out (a dropped or diverged variant's) is listed on the page with its reason instead."""
    steps = [e for e in estimates if e["kind"] == "step" and e.get("in_suggested_schedule", True)]
    if not steps:
        return None
    names = [e["id"] for e in steps]
    traces = []
    for key, label, color in (("planned_hours", "planned", COLORS["planned"]), ("measured_hours", "measured", COLORS["actual"]),
                              ("next_hours", "next estimate", COLORS["open"])):
        traces.append(go.Bar(
            y=names, x=[e[key] for e in steps], name=label, orientation="h", marker_color=color,
            hovertemplate=f"%{{y}} {label}: %{{x:.1f}} h<extra></extra>",
        ))
    fig = go.Figure(traces)
    # The y axis runs top-down: the first step on top and, in each group, the bars in the legend's order.
    fig.update_layout(**_layout(
        barmode="group", height=TOOLBAR + 30 + 42 * len(steps) + 90, title=_title("Hours per step"),
        margin={"l": 120, "r": 20, "t": TOOLBAR + 30, "b": 90}, xaxis={"title": {"text": "hours"}},
        yaxis={"autorange": "reversed", "automargin": True}, legend=_legend_below(),
    ))
    return _to_dict(fig)
