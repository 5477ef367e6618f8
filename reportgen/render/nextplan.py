"""next-plan.yaml: a draft of the next campaign's plan, with each step's hours at its next estimate (R16).

The draft is a copy of the plan as written (the frozen original when there is one), line for
line. Only the steps' `hours:` change, and `steps_per_second:` where one was planned and measured,
each with a comment saying what was planned and what was measured. Every other line, key and comment stays as the user wrote it. The plan
itself is never touched: the draft is a separate file in the site, to review before the next
order.
"""

from __future__ import annotations

import re

from reportgen.analysis.estimates import Estimate, EstimateKind, NextCampaign
from reportgen.numbers import figure
from reportgen.plan.load import LoadedPlan

FILE = "next-plan.yaml"


def _scalar(key: str) -> re.Pattern[str]:
    """A key's number written in block style, e.g. "      hours: 9" or "    - hours: 9  # comment"."""
    return re.compile(rf"^(?P<head>\s*(?:-\s+)?{key}:[ \t]*)(?P<value>[0-9][0-9_.eE+-]*)(?P<tail>[ \t]*(?:#.*)?)$")


_HOURS = _scalar("hours")
_RATE = _scalar("steps_per_second")


def _comment(estimate: Estimate, campaign: str) -> str:
    if not estimate.in_schedule:
        return f"not run in {campaign} (dropped): kept as planned"
    if not estimate.measured:
        return f"not measured in {campaign}: kept as planned"
    return (f"next estimate from {campaign}: planned {estimate.planned_hours:g} h, "
            f"measured {estimate.measured_hours:.2f} h (see next.html)")


def _rewrite(lines: list[str], line: int | None, pattern: re.Pattern[str], value: str | None, note: str) -> bool:
    """Set the number on a line (None: keep it) with a comment saying why, keeping any comment it had.
    False when the line does not hold the key in block style, and is left as written."""
    if line is None or line > len(lines):
        return False
    text = lines[line - 1]
    body = text.rstrip("\r\n")
    match = pattern.match(body)
    if match is None:
        return False
    old = match["tail"].strip().lstrip("#").strip()
    lines[line - 1] = f"{match['head']}{value or match['value']}  # {note}{f'; was: {old}' if old else ''}{text[len(body):]}"
    return True


def next_plan(loaded: LoadedPlan, campaign: str, plan: NextCampaign) -> str:
    """The draft's text: the plan's lines with the steps' hours replaced, and a header saying so."""
    estimates = {e.id: e for e in plan.estimates if e.kind == EstimateKind.STEP}
    paces = {m.variant: m for m in plan.measurements if m.variant and m.steps_per_second}
    lines = loaded.text.splitlines(keepends=True)
    kept = []
    for index, step in enumerate(loaded.plan.schedule.steps):
        estimate = estimates.get(step.id)
        if estimate is None:
            continue
        value = None if estimate.draft_hours is None else f"{estimate.draft_hours:g}"
        at = loaded.lines.get(("schedule", "steps", index, "hours"))
        if not _rewrite(lines, at, _HOURS, value, _comment(estimate, campaign)):
            kept.append(step.id)  # flow style ({hours: 3}) or a value on its own line: left as written
            continue
        rate = paces.get(step.variant or "")
        if step.steps_per_second and rate and rate.measured is not None:
            note = f"measured in {campaign}: {figure(rate.measured)} s a step over {rate.count:,} steps"
            _rewrite(lines, loaded.lines.get(("schedule", "steps", index, "steps_per_second")), _RATE,
                     f"{rate.steps_per_second:.3g}", note)
    lot = plan.lot
    fits = (f"{lot.label} at {lot.price:.2f} {lot.currency} fits it with {lot.unused_hours:.1f} h unused"
            if lot else "no catalogue lot is long enough for it")
    header = [
        f"# Draft plan for the next campaign, written by reportgen from what {campaign} measured.",
        "# Step hours are the next estimates (see next.html for each basis); everything else is the plan as written.",
        f"# The measured schedule takes {plan.suggested_hours:.1f} h: {fits}.",
        "# Review it, give it a new campaign id and order dates, then run `reportgen check` on it.",
    ]
    if kept:
        header.append(f"# Hours not written in block style were left as planned: {', '.join(kept)}.")
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    return newline.join(header) + newline + "".join(lines)
