"""next-plan.yaml: a draft of the next campaign's plan, with each step's hours at its next estimate (R16).

The draft is a copy of the plan as written (the frozen original when there is one), line for
line. The steps' `hours:` change, and `steps_per_second:` where one was planned and measured,
each with a comment saying what was planned and what was measured. A variant not proposed again
is commented out, with its reason, together with everything that exists only for it: its steps,
its deliverables, a decision point after one of its steps, a stop rule that applied to it alone;
the lists that name it (`depends_on`, a stop rule's `variants`) lose its entries. Every other line,
key and comment stays as the user wrote it, and the draft keeps the plan's line count, so the
two compare line by line. The plan itself is never touched: the draft is a separate file in the
site, to review before the next order.
"""

from __future__ import annotations

import re

from reportgen.analysis.estimates import EstimateKind, NextCampaign, kept_dependencies
from reportgen.numbers import figure
from reportgen.plan.load import LoadedPlan
from reportgen.plan.schema import KeyPath

FILE = "next-plan.yaml"


def _scalar(key: str) -> re.Pattern[str]:
    """A key's number written in block style, e.g. "      hours: 9" or "    - hours: 9  # comment"."""
    return re.compile(rf"^(?P<head>\s*(?:-\s+)?{key}:[ \t]*)(?P<value>[0-9][0-9_.eE+-]*)(?P<tail>[ \t]*(?:#.*)?)$")


_HOURS = _scalar("hours")
_RATE = _scalar("steps_per_second")


def _flow_list(key: str) -> re.Pattern[str]:
    """A key's list written in flow style on its line, e.g. "      depends_on: [a, b]  # comment"."""
    return re.compile(rf"^(?P<head>\s*(?:-\s+)?{key}:[ \t]*)\[(?P<items>[^\]\[#]*)\](?P<tail>[ \t]*(?:#.*)?)$")


def _in_flow_map(key: str, value: str) -> re.Pattern[str]:
    """A key inside a flow mapping on one line, e.g. "    - {id: pilot, hours: 1.5, depends_on: [a]}"."""
    return re.compile(rf"(?P<pre>[{{,][ \t]*{key}:[ \t]*)(?P<value>{value})(?=[ \t]*[,}}])")


def _with_note(body: str, note: str) -> str:
    """The line with a comment added at its end (after any it has)."""
    return f"{body}  # {note}" if "#" not in body else f"{body}; {note}"


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" "))


class _Draft:
    """The plan's lines, edited in place without adding or removing one."""

    def __init__(self, loaded: LoadedPlan):
        self.loaded = loaded
        self.lines = loaded.text.splitlines(keepends=True)
        self.kept_as_written: list[str] = []  # what could not be edited (flow-style items), for the header

    def _body(self, number: int) -> tuple[str, str]:
        text = self.lines[number - 1]
        body = text.rstrip("\r\n")
        return body, text[len(body):]

    def line(self, path: KeyPath) -> int | None:
        found = self.loaded.lines.get(path)
        return found if found is not None and found <= len(self.lines) else None

    def rewrite(self, path: KeyPath, pattern: re.Pattern[str], value: str | None, note: str) -> bool:
        """Set the number on a key's line (None: keep it) with a comment saying why, keeping any comment it had.
        False when the line does not hold the key in block style, and is left as written."""
        number = self.line(path)
        if number is None:
            return False
        body, end = self._body(number)
        match = pattern.match(body)
        if match is None:
            return self._rewrite_in_flow_map(number, path[-1], value, note)
        old = match["tail"].strip().lstrip("#").strip()
        self.lines[number - 1] = f"{match['head']}{value or match['value']}  # {note}{f'; was: {old}' if old else ''}{end}"
        return True

    def _rewrite_in_flow_map(self, number: int, key: object, value: str | None, note: str) -> bool:
        """The same for a number inside a flow mapping ("{id: pilot, hours: 1.5}"): set in place, noted at the line's end."""
        body, end = self._body(number)
        found = list(_in_flow_map(str(key), r"[0-9][0-9_.eE+-]*").finditer(body))
        if len(found) != 1:
            return False
        match = found[0]
        edited = f"{body[:match.start('value')]}{value or match['value']}{body[match.end('value'):]}"
        self.lines[number - 1] = _with_note(edited, f"{key}: {note}") + end
        return True

    def comment_out(self, path: KeyPath, why: str) -> None:
        """Turn a list item (its first line and every line indented under it) into comments, the reason on its first line."""
        first = self.line(path)
        if first is None:
            return
        dash = _indent(self._body(first)[0])
        last = first
        for number in range(first + 1, len(self.lines) + 1):
            body = self._body(number)[0]
            if not body.strip() or body.lstrip().startswith("#"):
                continue
            if _indent(body) <= dash:
                break
            last = number
        for number in range(first, last + 1):
            body, end = self._body(number)
            if not body.strip() or body.lstrip().startswith("#"):
                continue
            note = f"  # {why}" if number == first else ""
            self.lines[number - 1] = f"{' ' * _indent(body)}# {body.lstrip(' ')}{note}{end}"

    def drop_from_list(self, path: KeyPath, key: str, items: list[str], kept: list[str], why: str) -> None:
        """Make the list at `path` read `kept`, written in [brackets] (also inside a flow mapping) or one item
        a line; a list of one item a line can only lose items (the draft keeps the plan's line count)."""
        gone = set(items) - set(kept)
        number = self.line(path)
        if kept == items or number is None:
            return
        body, end = self._body(number)
        match = _flow_list(key).match(body)
        if match is not None:
            old = match["tail"].strip().lstrip("#").strip()
            note = f"  # {why}{f'; was: {old}' if old else ''}"
            self.lines[number - 1] = f"{match['head']}[{', '.join(kept)}]{note}{end}"
            return
        inside = list(_in_flow_map(key, r"\[[^\]\[#]*\]").finditer(body))
        if len(inside) == 1:  # a [list] in a flow mapping on this line
            edited = f"{body[:inside[0].start('value')]}[{', '.join(kept)}]{body[inside[0].end('value'):]}"
            self.lines[number - 1] = _with_note(edited, why) + end
            return
        entries = [self.line((*path, index)) for index in range(len(items))]
        if not (body.rstrip().endswith(f"{key}:") and all(e is not None and e != number for e in entries)
                and set(kept) <= set(items)):
            self.kept_as_written.append(f"{key} at line {number} of the plan as written")
            return
        for index, item in enumerate(items):
            if item in gone:
                self.comment_out((*path, index), why)
        if not kept:
            self.lines[number - 1] = f"{body.rstrip()} []  # {why}{end}"

    def text(self) -> str:
        return "".join(self.lines)


def _comment(measured: bool, planned: float | None, hours: float | None, campaign: str) -> str:
    if not measured:
        return f"not measured in {campaign}: kept as planned"
    return f"next estimate from {campaign}: planned {planned:g} h, measured {hours:.2f} h (see next.html)"


def _short(reason: str) -> str:
    """A reason on one comment line: its first sentence."""
    first = reason.split(". ", 1)[0].rstrip(".")
    return first.replace("\n", " ")


def next_plan(loaded: LoadedPlan, campaign: str, plan: NextCampaign) -> str:
    """The draft's text: the plan's lines with the steps' hours replaced, what is left out commented out,
    and a header saying so."""
    draft = _Draft(loaded)
    source = loaded.plan
    estimates = {e.id: e for e in plan.estimates if e.kind == EstimateKind.STEP}
    paces = {m.variant: m for m in plan.measurements if m.variant and m.steps_per_second}
    gone_variants = {a.variant: a for a in plan.advice if not a.proposed}
    gone_steps = {i: e.left_out for i, e in estimates.items() if e.left_out is not None}

    def why(variant: str) -> str:
        return f"left out by reportgen: {_short(gone_variants[variant].reason)}"

    for index, variant in enumerate(source.variants):
        if variant.id in gone_variants:
            draft.comment_out(("variants", index), why(variant.id))
    for index, step in enumerate(source.schedule.steps):
        if step.id in gone_steps:
            draft.comment_out(("schedule", "steps", index), f"left out by reportgen: {_short(gone_steps[step.id])}")
        elif set(step.depends_on) & set(gone_steps):
            left = ", ".join(d for d in step.depends_on if d in gone_steps)
            kept = kept_dependencies(source, step.id, set(gone_steps))
            inherited = [d for d in kept if d not in step.depends_on]
            note = f"{left} left out by reportgen" + (f", replaced by {', '.join(inherited)}, which "
                                                      f"{'it' if ',' not in left else 'they'} waited for" if inherited else "")
            draft.drop_from_list(("schedule", "steps", index, "depends_on"), "depends_on", list(step.depends_on),
                                 kept, note)
    for index, point in enumerate(source.decision_points):
        if point.after in gone_steps:
            draft.comment_out(("decision_points", index), f"left out by reportgen: it follows {point.after}, which is left out")
    for index, deliverable in enumerate(source.deliverables):
        if deliverable.variant in gone_variants:
            draft.comment_out(("deliverables", index), why(deliverable.variant))
    for index, rule in enumerate(source.stop_rules):
        named = [v for v in rule.variants or [] if v in gone_variants]
        if not named:
            continue
        left = ", ".join(named)
        if len(named) == len(rule.variants or []):  # nothing left for it to stop
            draft.comment_out(("stop_rules", index), f"left out by reportgen: it applied only to {left}")
        else:
            draft.drop_from_list(("stop_rules", index, "variants"), "variants", list(rule.variants or []),
                                 [v for v in rule.variants or [] if v not in gone_variants], f"{left} left out by reportgen")

    not_block = []
    for index, step in enumerate(source.schedule.steps):
        estimate = estimates.get(step.id)
        if estimate is None or step.id in gone_steps:
            continue
        value = None if estimate.draft_hours is None else f"{estimate.draft_hours:g}"
        note = _comment(estimate.measured, estimate.planned_hours, estimate.measured_hours, campaign)
        if not draft.rewrite(("schedule", "steps", index, "hours"), _HOURS, value, note):
            not_block.append(step.id)  # a value on its own line, or written some other way: left as written
            continue
        rate = paces.get(step.variant or "")
        if step.steps_per_second and rate and rate.measured is not None:
            note = f"measured in {campaign}: {figure(rate.measured)} s a step over {rate.count:,} steps"
            draft.rewrite(("schedule", "steps", index, "steps_per_second"), _RATE, f"{rate.steps_per_second:.3g}", note)

    header = [
        f"# Draft plan for the next campaign, written by reportgen from what {campaign} measured.",
        "# Step hours are the next estimates (see next.html for each basis); everything else is the plan as written.",
        f"# {plan.lot_advice.message}".replace("\n", " "),
        "# Review it, give it a new campaign id and order dates, then run `reportgen check` on it.",
    ]
    if gone_variants:
        header.append("# Not proposed again, and commented out below with their steps: "
                      + "; ".join(f"{v} ({a.advice})" for v, a in gone_variants.items()) + ".")
    if not_block:
        header.append(f"# Hours reportgen could not find on their step's line were left as planned: {', '.join(not_block)}.")
    if draft.kept_as_written:
        header.append(f"# Lists not written one per line or in [brackets] still name what is left out: "
                      f"{', '.join(draft.kept_as_written)}; edit them before `reportgen check`.")
    lines = draft.lines
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    return newline.join(header) + newline + draft.text()
