"""next-plan.yaml: a draft of the next campaign's plan, with each step's hours at its next estimate (R16).

The draft is a copy of the plan as written (the frozen original when there is one), line for
line. Only the steps' `hours:` change, and `steps_per_second:` where one was planned and measured,
each with a comment saying what was planned and what was measured. Every other line, key and comment stays as the user wrote it. The plan
itself is never touched: the draft is a separate file in the site, to review before the next
order.
"""

from __future__ import annotations

import re

from reportgen.numbers import figure
from reportgen.plan.load import LoadedPlan

FILE = "next-plan.yaml"


def _scalar(key: str) -> re.Pattern[str]:
    """A key's number written in block style, e.g. "      hours: 9" or "    - hours: 9  # comment"."""
    return re.compile(rf"^(?P<head>\s*(?:-\s+)?{key}:[ \t]*)(?P<value>[0-9][0-9_.eE+-]*)(?P<tail>[ \t]*(?:#.*)?)$")


_HOURS = _scalar("hours")
_RATE = _scalar("steps_per_second")


def _comment(estimate: dict, campaign: str) -> str:
    if not estimate["in_suggested_schedule"]:
        return f"not run in {campaign} (dropped): kept as planned"
    if not estimate["measured"]:
        return f"not measured in {campaign}: kept as planned"
    return (f"next estimate from {campaign}: planned {estimate['planned_hours']:g} h, "
            f"measured {estimate['measured_hours']:.2f} h (see next.html)")


def _rewrite(match: re.Match[str], value: str, note: str, ending: str) -> str:
    """The line with its value replaced and a comment saying why, keeping any comment it had."""
    old = match["tail"].strip().lstrip("#").strip()
    return f"{match['head']}{value}  # {note}{f'; was: {old}' if old else ''}{ending}"


def next_plan(loaded: LoadedPlan, report: dict) -> str:
    """The draft's text: the plan's lines with the steps' hours replaced, and a header saying so."""
    campaign = report["campaign"]["id"]
    estimates = {e["id"]: e for e in report["estimates"] if e["kind"] == "step"}
    measured = (report.get("next_campaign") or {}).get("measurements", [])
    paces = {m["quantity"].removeprefix("seconds a step (").removesuffix(")"): m for m in measured
             if m["unit"] == "s/step" and m["measured"]}
    lines = loaded.text.splitlines(keepends=True)
    kept = []
    for index, step in enumerate(loaded.plan.schedule.steps):
        estimate, line = estimates.get(step.id), loaded.lines.get(("schedule", "steps", index, "hours"))
        if estimate is None or line is None or line > len(lines):
            continue
        text = lines[line - 1]
        body = text.rstrip("\r\n")
        match = _HOURS.match(body)
        if match is None:  # flow style ({hours: 3}) or a value on its own line: left as written
            kept.append(step.id)
            continue
        value = match["value"]
        if estimate["measured"] and estimate["in_suggested_schedule"]:
            value = f"{max(0.1, round(estimate['next_hours'], 1)):g}"
        lines[line - 1] = _rewrite(match, value, _comment(estimate, campaign), text[len(body):])
        rate, where = paces.get(step.variant or ""), loaded.lines.get(("schedule", "steps", index, "steps_per_second"))
        if step.steps_per_second and rate and where is not None and where <= len(lines):
            body = lines[where - 1].rstrip("\r\n")
            if (found := _RATE.match(body)) is not None:
                note = f"measured in {campaign}: {figure(rate['measured'])} s a step over {rate['count']:,} steps"
                lines[where - 1] = _rewrite(found, f"{1.0 / rate['measured']:.3g}", note, lines[where - 1][len(body):])
    plan = report.get("next_campaign") or {}
    lot = plan.get("lot")
    fits = (f"{lot['label']} at {lot['price']:.2f} {lot['currency']} fits it with {lot['unused_hours']:.1f} h unused"
            if lot else "no catalogue lot is long enough for it")
    header = [
        f"# Draft plan for the next campaign, written by reportgen from what {campaign} measured.",
        "# Step hours are the next estimates (see next.html for each basis); everything else is the plan as written.",
        f"# The measured schedule takes {plan.get('suggested_hours', 0.0):.1f} h: {fits}.",
        "# Review it, give it a new campaign id and order dates, then run `reportgen check` on it.",
    ]
    if kept:
        header.append(f"# Hours not written in block style were left as planned: {', '.join(kept)}.")
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    return newline.join(header) + newline + "".join(lines)
