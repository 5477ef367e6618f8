"""next-plan.yaml: a draft of the next campaign's plan, with each step's hours at its next estimate (R16).

The draft is a copy of the plan as written (the frozen original when there is one), line for
line. Only the `hours:` values of the steps change, each with a comment saying what was planned
and what was measured. Every other line, key and comment stays as the user wrote it. The plan
itself is never touched: the draft is a separate file in the site, to review before the next
order.
"""

from __future__ import annotations

import re

from reportgen.plan.load import LoadedPlan

FILE = "next-plan.yaml"
# A step's `hours:` written in block style, e.g. "      hours: 9" or "    - hours: 9  # comment".
_HOURS = re.compile(r"^(?P<head>\s*(?:-\s+)?hours:[ \t]*)(?P<value>[0-9][0-9_.eE+-]*)(?P<tail>[ \t]*(?:#.*)?)$")


def _comment(estimate: dict, campaign: str) -> str:
    if not estimate["in_suggested_schedule"]:
        return f"not run in {campaign} (dropped): kept as planned"
    if not estimate["measured"]:
        return f"not measured in {campaign}: kept as planned"
    return (f"next estimate from {campaign}: planned {estimate['planned_hours']:g} h, "
            f"measured {estimate['measured_hours']:.2f} h (see next.html)")


def next_plan(loaded: LoadedPlan, report: dict) -> str:
    """The draft's text: the plan's lines with the steps' hours replaced, and a header saying so."""
    campaign = report["campaign"]["id"]
    estimates = {e["id"]: e for e in report["estimates"] if e["kind"] == "step"}
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
        old = match["tail"].strip().lstrip("#").strip()
        note = _comment(estimate, campaign) + (f"; was: {old}" if old else "")
        lines[line - 1] = f"{match['head']}{value}  # {note}{text[len(body):]}"
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
