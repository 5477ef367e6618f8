"""Lots against a schedule (R7, R8): the plan options when this campaign's schedule does not fit
its window, and the lot to order for the next campaign's suggested schedule.

Compared by lot price, never by a derived hourly rate: the catalogue's longer lots, two lots
side by side where independent variants exist (they neither shorten a run nor pool memory),
and a reduced protocol that drops useful and exploratory items and keeps what answers the
question. A multi-GPU lot (a B200 lot holds 2 GPUs) is one price. With several lots in the order,
each lot is judged by its own work from its start (lot_needs), and the options are offered for the
lots that run late, in their place.

For the next campaign the lot already ordered is compared first: a user who knows that lot is
told to order it again when the schedule fits it, and by how much it falls short when it does
not; only then is the catalogue searched for the cheapest lot that holds the schedule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal

from reportgen.analysis.schedule import (
    ScheduleReport,
    StepReport,
    hours_between,
    lot_counted,
    lot_spans,
    planned_hours,
    planned_timeline,
    window,
)
from reportgen.numbers import money
from reportgen.plan.schema import CatalogueEntry, Lot, Plan

# A longer lot of the catalogue, two lots side by side, or the plan reduced to what answers the question.
OptionKind = Literal["catalogue", "two_lots", "reduced"]


@dataclass
class PlanOption:
    kind: OptionKind
    label: str
    price: float
    currency: str
    fits: bool | None
    note: str
    hours_needed: float
    hours_available: float | None
    dropped: list[str] = field(default_factory=list)


def lots_like(plan: Plan, lot: Lot) -> list[CatalogueEntry]:
    """The catalogue's lots of `lot`'s GPU model and count (a B200 lot of 2 GPUs is not two of 1), cheapest first,
    then shortest."""
    return sorted((c for c in plan.catalogue if (c.gpu, c.gpus) == (lot.gpu, lot.gpus)), key=lambda c: (c.price, c.days))


def _independent_variant_steps(plan: Plan) -> list[str]:
    """GPU steps of different variants that do not depend on one another (directly or not)."""
    steps = {s.id: s for s in plan.schedule.steps}

    def ancestors(step_id: str, seen: set[str] | None = None) -> set[str]:
        seen = seen if seen is not None else set()
        for dep in steps[step_id].depends_on:
            if dep in steps and dep not in seen:
                seen.add(dep)
                ancestors(dep, seen)
        return seen

    gpus = set(plan.gpu_names())
    candidates = [s for s in plan.schedule.steps if s.variant and s.resource in gpus]
    return [s.id for s in candidates
            if any(o.variant != s.variant and o.id not in ancestors(s.id) and s.id not in ancestors(o.id) for o in candidates)]


def _with_another_lot(plan: Plan, independent: list[str], index: int = 0) -> Plan:
    """The plan with one more lot like its `index`-th, whose GPUs take every other independent variant step."""
    lot = plan.order.lots[index]
    extra = Lot(**{**lot.model_dump(), "gpu_names": [f"{name}-second" for name in lot_spans(plan)[index].gpus]})
    moved = []
    for step in plan.schedule.steps:
        if step.id in independent and independent.index(step.id) % 2 == 1:
            step = step.model_copy(update={"resource": f"{step.resource}-second"})
        moved.append(step)
    return plan.model_copy(update={
        "order": plan.order.model_copy(update={"lots": [*plan.order.lots, extra]}),
        "schedule": plan.schedule.model_copy(update={"steps": moved}),
    })


def _two_lot_hours(plan: Plan, independent: list[str]) -> float:
    """The planned length with a second lot's GPUs taking every other independent variant step."""
    return planned_hours(planned_timeline(_with_another_lot(plan, independent)))


def _without_optional(plan: Plan, optional: list) -> Plan:
    """The plan without its useful and exploratory steps (nothing depends on them any more)."""
    dropped = {o.id for o in optional}
    return plan.model_copy(update={"schedule": plan.schedule.model_copy(update={
        "steps": [s.model_copy(update={"depends_on": [d for d in s.depends_on if d not in dropped]})
                  for s in plan.schedule.steps if s not in optional]})})


def plan_options(plan: Plan, schedule: ScheduleReport) -> list[PlanOption]:
    """The options, when the planned or the actual schedule is longer than the window; none otherwise. With
    several lots in the order, each lot is judged by its own work (_several_lots)."""
    if len(plan.order.lots) > 1:
        return _several_lots(plan, schedule)
    window = schedule.window.hours
    needed = max(schedule.planned_hours, schedule.actual_hours or 0.0)
    if needed <= window + 1e-9:
        return []
    lot = plan.order.lots[0]
    currency = plan.order.currency
    which = "actual" if (schedule.actual_hours or 0.0) > schedule.planned_hours else "planned"
    options: list[PlanOption] = []
    for entry in lots_like(plan, lot):
        hours = entry.days * 24.0
        gpus = f", {entry.gpus} GPUs in one lot at one price" if entry.gpus > 1 else ""
        options.append(PlanOption(
            "catalogue", entry.label, entry.price, entry.currency or currency, hours >= needed,
            f"one lot of {entry.days} days: a {hours:g} h window for the {needed:.1f} h the {which} schedule needs{gpus}",
            needed, hours))
    independent = _independent_variant_steps(plan)
    two_price = round(2 * sum(l.price for l in plan.order.lots[:1]), 2)
    caveat = "two lots run independent variants side by side; they neither shorten a run nor pool memory"
    if independent:
        hours = _two_lot_hours(plan, independent)
        extra = needed - schedule.planned_hours  # an actual overrun the plan did not foresee stays
        options.append(PlanOption(
            "two_lots", f"two {lot.label} lots", two_price, currency, hours + extra <= window,
            f"{caveat}: independent variant steps {', '.join(independent)} split across them give about "
            f"{hours + extra:.1f} h in the {window:g} h window", hours + extra, window))
    else:
        options.append(PlanOption(
            "two_lots", f"two {lot.label} lots", two_price, currency, False,
            f"{caveat}; this plan has no independent variant steps, so a second lot would not help", needed, window))
    optional = [s for s in plan.schedule.steps if s.category in ("useful", "exploratory")]
    if optional:
        saved = schedule.planned_hours - planned_hours(planned_timeline(_without_optional(plan, optional)))
        options.append(PlanOption(
            "reduced", "reduced protocol", round(sum(l.price for l in plan.order.lots), 2), currency,
            needed - saved <= window,
            f"drop {', '.join(f'{s.id} ({s.category})' for s in optional)}: saves {saved:.1f} h, "
            f"{needed - saved:.1f} h left; the required items still answer the question", needed - saved, window,
            [s.id for s in optional]))
    return options


def lot_needs(plan: Plan, steps: list[StepReport] | None = None) -> tuple[list[float], list[float]]:
    """For each lot of the order, the hours from its start to the end of the work on it as planned (each GPU's
    steps one after another, none before its lot starts: planned_timeline by lot) and as it ran (the steps'
    actual ends; 0 when none is measured): a GPU step is its GPU's lot's; a cpu or human step counts against the
    lot that ends last, as the lot clock judges it."""
    spans, start = lot_spans(plan), window(plan).start
    owner = {step.id: lot_counted(spans, step.resource) for step in plan.schedule.steps}
    planned, actual = [0.0] * len(spans), [0.0] * len(spans)
    for slot in planned_timeline(plan):
        i = owner[slot.step.id]
        planned[i] = max(planned[i], hours_between(spans[i].start, start + timedelta(hours=slot.end_h)))
    for report in steps or []:
        i = owner[report.step.id]
        if report.actual.end is not None:
            actual[i] = max(actual[i], hours_between(spans[i].start, report.actual.end))
    return planned, actual


def _several_lots(plan: Plan, schedule: ScheduleReport) -> list[PlanOption]:
    """R8 for an order of several lots: for each lot whose work, planned or as it ran, takes longer than the lot
    from its start, the catalogue's lots of its GPU model and count in its place, one more lot like it where its
    independent variant steps can be split, and the reduced protocol, each judged against that lot."""
    lots, currency = plan.order.lots, plan.order.currency
    planned, actual = lot_needs(plan, schedule.steps)
    needed = [max(p, a) for p, a in zip(planned, actual, strict=True)]
    own = [lot.days * 24.0 for lot in lots]  # each lot's window, from its start
    late = [i for i in range(len(lots)) if needed[i] > own[i] + 1e-9]
    total = round(sum(lot.price for lot in lots), 2)
    options: list[PlanOption] = []
    for i in late:
        lot, which = lots[i], "as it ran" if actual[i] > planned[i] else "as planned"
        for entry in lots_like(plan, lot):
            if entry.days == lot.days and abs(entry.price - lot.price) < 0.005:
                continue  # the lot itself (whatever the order calls it): no option in its own place
            hours = entry.days * 24.0
            options.append(PlanOption(
                "catalogue", f"{entry.label} in place of {lot.label}", round(total - lot.price + entry.price, 2),
                entry.currency or currency, hours >= needed[i],
                f"one lot of {entry.days} days in place of {lot.label}: a {hours:g} h window for the {needed[i]:.1f} h its "
                f"work takes from its start ({which}); the price is the order's with it, its other lots as they are",
                needed[i], hours))
    caveat = "two lots run independent variants side by side; they neither shorten a run nor pool memory"
    independent = _independent_variant_steps(plan)
    resource, spans = {step.id: step.resource for step in plan.schedule.steps}, lot_spans(plan)
    for i in late:
        lot, span = lots[i], own[i]
        mine = [step for step in independent if resource[step] in spans[i].gpus]
        label, price = f"one more {lot.label} lot", round(total + lot.price, 2)
        if len(mine) < 2:  # one lot each for two of them at least: with one, the other lot would take nothing
            options.append(PlanOption("two_lots", label, price, currency, False,
                                      f"{caveat}; {lot.label} runs "
                                      + (f"one independent variant step ({mine[0]})" if mine else "no independent variant steps")
                                      + ", so another lot like it would not help", needed[i], span))
            continue
        trial = _with_another_lot(plan, mine, i)
        split, _ = lot_needs(trial)
        # The lot and the one like it (last in the trial's order); an actual overrun the plan did not foresee stays.
        hours = max(split[i], split[-1]) + max(0.0, actual[i] - planned[i])
        options.append(PlanOption(
            "two_lots", label, price, currency, hours <= span,
            f"{caveat}: the independent variant steps on {lot.label} ({', '.join(mine)}) split across it and one more "
            f"like it give about {hours:.1f} h of its {span:g} h", hours, span))
    optional = [s for s in plan.schedule.steps if s.category in ("useful", "exploratory")]
    if optional and late:
        kept, _ = lot_needs(_without_optional(plan, optional))
        left = {i: needed[i] - (planned[i] - kept[i]) for i in late}
        worst = max(late, key=lambda i: (left[i] - own[i], -i))
        each = "; ".join(f"{lots[i].label}: saves {planned[i] - kept[i]:.1f} h, {left[i]:.1f} h left of its {own[i]:g} h"
                         for i in late)
        options.append(PlanOption(
            "reduced", "reduced protocol", total, currency, all(left[i] <= own[i] + 1e-9 for i in late),
            f"drop {', '.join(f'{s.id} ({s.category})' for s in optional)}: {each}; the required items still answer the "
            "question", left[worst], own[worst], [s.id for s in optional]))
    return options


@dataclass(frozen=True)
class LotFit:
    """One lot (or as many as were ordered) against a schedule's hours."""

    label: str
    price: float
    currency: str
    lots: int
    hours: float  # the lot's window
    fits: bool
    unused_hours: float  # window - schedule; negative when the schedule does not fit
    ordered: bool = False  # the lot this campaign ordered


@dataclass(frozen=True)
class LotAdvice:
    """Which lot to order for a schedule: the one ordered when it fits, else the cheapest that does."""

    schedule_hours: float
    ordered: LotFit
    lots: list[LotFit]  # the catalogue's lots of the ordered GPU, cheapest first (the ordered lot when none)
    recommended: LotFit | None  # None: no lot is long enough
    shortfall_hours: float | None  # how far the ordered lot falls short; None when it fits
    message: str


def _fits(hours: float, window_hours: float) -> bool:
    return hours <= window_hours + 1e-9


def _ordered_lot(plan: Plan, hours: float) -> LotFit:
    """The lots this campaign ordered, as one: their prices added, their window from first start to last end."""
    lots = plan.order.lots
    labels = [lot.label for lot in lots]
    label = labels[0] if len(labels) == 1 else (f"{len(labels)} × {labels[0]}" if len(set(labels)) == 1 else " + ".join(labels))
    available = window(plan).hours
    return LotFit(label, round(sum(lot.price for lot in lots), 2), lots[0].currency or plan.order.currency, len(lots),
                  available, _fits(hours, available), available - hours, ordered=True)


def _catalogue_lots(plan: Plan, hours: float, ordered: LotFit) -> list[LotFit]:
    """Catalogue lots of the ordered GPU, as many as were ordered, cheapest first, against a schedule of `hours`
    with them side by side; the entry the ordered lots were bought from (same label, days and price) is the
    ordered lot itself, with its own window (lots ordered one after another span longer than the same lots side
    by side, and their schedule waits for each one's start)."""
    first, count = plan.order.lots[0], len(plan.order.lots)
    same = {(c.label, c.price, c.currency, c.days) for c in plan.catalogue if (c.gpu, c.gpus) == (first.gpu, first.gpus)}
    out = []
    for label, price, currency, days in sorted(same, key=lambda e: (e[1], e[3], e[0])):
        if all((lot.label, lot.days) == (label, days) and abs(lot.price - price) < 0.005 for lot in plan.order.lots):
            out.append(ordered)
            continue
        available, total = days * 24.0, round(price * count, 2)
        out.append(LotFit(label if count == 1 else f"{count} × {label}", total, currency or plan.order.currency, count,
                          available, _fits(hours, available), available - hours,
                          ordered=(available, total) == (ordered.hours, ordered.price)))
    return out


def lot_advice(plan: Plan, hours: float, nothing_to_try: bool = False, together: float | None = None) -> LotAdvice:
    """The lot for a schedule of `hours`: the ordered one first, then the cheapest catalogue lot that holds it.
    `together`: the schedule's length with the lots side by side, against which the catalogue's lots are judged
    (`hours` when the ordered lots start together). `nothing_to_try`: no variant is proposed again, so no lot
    should be ordered before new variants are written."""
    together = hours if together is None else together
    ordered = _ordered_lot(plan, hours)
    lots = _catalogue_lots(plan, together, ordered) or [ordered]
    apart = abs(together - hours) > 0.05  # the ordered lots do not start together: their schedule waits
    side = f"{together:.1f} h with the lots side by side" if apart else f"{hours:.1f} h"
    what = f"The suggested schedule takes {hours:.1f} h"
    if nothing_to_try:
        what = ("No variant is proposed again, so the question needs new variants before another lot is ordered; "
                f"without them the suggested schedule (the control and the shared steps) takes {hours:.1f} h")
    if ordered.fits:
        cheaper = next((lot for lot in lots if lot.fits and lot.price < ordered.price), None)
        also = (f" A cheaper lot also holds it: {cheaper.label} at {money(cheaper.price, cheaper.currency)}, with "
                f"{cheaper.unused_hours:.1f} h spare" + (f" ({cheaper.hours:g} h window - {side})" if apart else "") + "."
                if cheaper else "")
        return LotAdvice(hours, ordered, lots, ordered, None, (
            f"{what}: it fits the {ordered.label} lot you ordered ({money(ordered.price, ordered.currency)}), with "
            f"{ordered.unused_hours:.1f} h spare ({ordered.hours:g} h window - {hours:.1f} h). Order the same lot again; "
            f"the spare hours are margin, not time to fill.{also}"))
    shortfall = hours - ordered.hours
    short = (f"{what}: the {ordered.label} lot you ordered falls {shortfall:.1f} h short "
             f"({ordered.hours:g} h window - {hours:.1f} h = {-shortfall:.1f} h).")
    cheapest = next((lot for lot in lots if lot.fits), None)
    if cheapest is None:
        return LotAdvice(hours, ordered, lots, None, shortfall, (
            f"{short} No lot of the catalogue is long enough either: drop useful or exploratory items for a "
            "reduced protocol that still answers the question."))
    return LotAdvice(hours, ordered, lots, cheapest, shortfall, (
        f"{short} The cheapest catalogue lot that holds it is {cheapest.label} at {money(cheapest.price, cheapest.currency)}"
        f", with {cheapest.unused_hours:.1f} h spare ({cheapest.hours:g} h window - {side})."))
