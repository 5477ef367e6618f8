"""Checks of a valid plan before ordering: window fit with GPU serialisation (R5, R6, R8), categories (R2), end-to-end schedule (R4), lot prices (R7), full grids of variants (R9)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from reportgen.analysis.options import lot_needs, lots_like
from reportgen.analysis.schedule import (
    planned_hours,
    planned_timeline,
    window,
)
from reportgen.plan.schema import KeyPath, Plan, Variant

# R4: a schedule extrapolated from warm training steps forgets these.
END_TO_END_KINDS = {
    "loading": "loading the model and data",
    "evaluation": "validation or evaluation",
    "outputs": "writing outputs",
}


@dataclass(frozen=True)
class Finding:
    level: str  # "error" | "warning"
    key: KeyPath
    message: str


def _lots_over(plan: Plan) -> list[Finding]:
    """R8 for an order of several lots: each lot whose planned work takes longer than the lot from its start
    (options.lot_needs), with the cheapest catalogue lot of its GPU model and count that would hold it."""
    findings = []
    for index, (lot, need) in enumerate(zip(plan.order.lots, lot_needs(plan)[0], strict=True)):
        hours = lot.days * 24.0
        if need <= hours + 1e-9:
            continue
        longer = [c for c in lots_like(plan, lot) if c.days * 24 >= need]
        instead = (f"consider the {longer[0].label} lot in its place ({longer[0].price:g} "
                   f"{longer[0].currency or plan.order.currency})" if longer else "consider a longer lot in its place")
        findings.append(Finding(
            "error", ("order", "lots", index),
            f"the work planned on {lot.label} (its GPUs' steps run one after another, none before it starts; the cpu "
            f"and human steps count against the lot that ends last) takes {need:g} h from its start, {need - hours:g} h over its {hours:g} h: "
            f"{instead}, or a reduced protocol that still answers the question"))
    return findings


def check_plan(plan: Plan) -> list[Finding]:
    findings: list[Finding] = []
    slots = planned_timeline(plan)
    planned = planned_hours(slots)
    win = window(plan)
    if len(plan.order.lots) > 1:
        findings += _lots_over(plan)
    elif planned > win.hours:
        over = planned - win.hours
        longer = [c for c in lots_like(plan, plan.order.lots[0]) if c.days * 24 >= planned]
        options = (
            f"consider the {longer[0].label} lot ({longer[0].price:g} {longer[0].currency or plan.order.currency})"
            if longer
            else "consider a longer lot"
        )
        findings.append(
            Finding(
                "error",
                ("schedule",),
                f"the planned schedule takes {planned:g} h with steps on one GPU run one after another, "
                f"{over:g} h over the {win.hours:g} h window: {options}, or a reduced protocol that still "
                "answers the question",
            )
        )
    kinds = {s.kind for s in plan.schedule.steps}
    for kind, words in END_TO_END_KINDS.items():
        if kind not in kinds and not (kind == "evaluation" and "validation" in kinds):
            findings.append(
                Finding("warning", ("schedule", "steps"), f"no step of kind '{kind}': the schedule leaves out {words}")
            )
    if not any(d.kind == "predictions" for d in plan.deliverables):
        findings.append(Finding("warning", ("deliverables",), "no predictions deliverable is planned: no output can "
                                "count, so the cost per passed output stays undefined"))
    if not any(v.role == "control" for v in plan.variants):
        findings.append(Finding("warning", ("variants",), "no variant has role 'control'; a control isolates the cause"))
    for index, variant in enumerate(plan.variants):
        if variant.role == "control" and variant.category != "required":
            findings.append(
                Finding("warning", ("variants", index, "category"), f"control '{variant.id}' is {variant.category}; controls are normally required")
            )
    for index, step in enumerate(plan.schedule.steps):
        if step.kind in ("data_check", "resume_check") and step.category != "required":
            findings.append(
                Finding("warning", ("schedule", "steps", index, "category"), f"{step.kind.replace('_', ' ')} '{step.id}' is {step.category}; it is normally required")
            )
    findings += _shared_gpu_groups(plan)
    findings += _full_grid(plan)
    for index, rule in enumerate(plan.stop_rules):
        if rule.kind == "below_threshold" and rule.after_step is None:
            findings.append(
                Finding("warning", ("stop_rules", index, "after_step"),
                        f"stop rule '{rule.id}' has no after_step: an early evaluation under the threshold stops the run")
            )
    for index, lot in enumerate(plan.order.lots):
        listed = [c for c in plan.catalogue if (c.gpu, c.gpus, c.days) == (lot.gpu, lot.gpus, lot.days)]
        if listed and all(abs(c.price - lot.price) > 0.005 for c in listed):
            findings.append(
                Finding(
                    "warning",
                    ("order", "lots", index, "price"),
                    f"{lot.price:g} differs from the catalogue's {listed[0].price:g} for {lot.gpu}, {lot.days} days",
                )
            )
    return findings


def _shared_gpu_groups(plan: Plan) -> list[Finding]:
    """R5: steps on one GPU that nothing orders may look parallel in the plan; they run one after another."""
    steps = {s.id: s for s in plan.schedule.steps}
    index = {s.id: i for i, s in enumerate(plan.schedule.steps)}

    def before(step_id: str) -> set[str]:
        seen: set[str] = set()
        stack = list(steps[step_id].depends_on)
        while stack:
            current = stack.pop()
            if current in steps and current not in seen:
                seen.add(current)
                stack.extend(steps[current].depends_on)
        return seen

    ancestors = {s: before(s) for s in steps}
    findings = []
    for gpu in plan.gpu_names():
        on_gpu = [s for s in plan.schedule.steps if s.resource == gpu]
        groups: list[set[str]] = []
        for a in on_gpu:
            for b in on_gpu:
                if index[a.id] < index[b.id] and a.id not in ancestors[b.id] and b.id not in ancestors[a.id]:
                    joined = [g for g in groups if a.id in g or b.id in g]
                    merged = set().union(*joined, {a.id, b.id})
                    groups = [g for g in groups if g not in joined] + [merged]
        for group in groups:
            members = sorted(group, key=index.__getitem__)
            hours = [steps[m].hours for m in members]
            findings.append(Finding(
                "warning", ("schedule", "steps", index[members[0]], "resource"),
                f"{', '.join(members)} share {gpu} and nothing orders them: they run one after another "
                f"({sum(hours):g} h, not the {max(hours):g} h of running them side by side)"))
    return findings


def _settings_table(variants: list[Variant]) -> list[dict[str, object]] | None:
    """Each variant's settings: as written in the plan, else read from ids of one shape (r16-bf16, r64-fp32)."""
    if all(v.settings for v in variants):
        keys = sorted({k for v in variants for k in v.settings or {}})
        return [{k: (v.settings or {}).get(k) for k in keys} for v in variants]
    parts = [re.split(r"[-_]", v.id) for v in variants]
    if len({len(p) for p in parts}) != 1:
        return None
    return [{f"part {i + 1} of the id": token for i, token in enumerate(p)} for p in parts]


def _full_grid(plan: Plan) -> list[Finding]:
    """R9: variants covering every combination of two or more settings run them all at once."""
    variants = [v for v in plan.variants if v.role == "variant"]
    table = _settings_table(variants) if len(variants) >= 4 else None
    if table is None:
        return []
    values = {k: sorted({repr(row[k]) for row in table}) for k in table[0]}
    varied = [k for k, seen in values.items() if len(seen) > 1]
    combos = {tuple(repr(row[k]) for k in varied) for row in table}
    if len(varied) < 2 or len(combos) != math.prod(len(values[k]) for k in varied):
        return []
    axes = " and ".join(f"{k} ({', '.join(s.strip(chr(39)) for s in values[k])})" for k in varied)
    return [Finding(
        "warning", ("variants",),
        f"{', '.join(v.id for v in variants)} are every combination of {axes}: a full grid run at once. "
        "After the pilot, keep the variants whose result would change the choice, and a control that isolates a cause")]


def summary(plan: Plan) -> str:
    """One line for `check`: what the plan holds and how it fits its window (R6)."""
    win = window(plan)
    hours = planned_hours(planned_timeline(plan))
    lots = len(plan.order.lots)
    total = sum(lot.price for lot in plan.order.lots)
    return (
        f"{plan.campaign.id}; {len(plan.variants)} variants, {len(plan.stop_rules)} stop rules, "
        f"{len(plan.schedule.steps)} steps; planned {hours:g} h of a {win.hours:g} h window "
        f"({win.hours - hours:g} h unused); {lots} lot{'s' if lots != 1 else ''}, {total:.2f} {plan.order.currency}"
    )
