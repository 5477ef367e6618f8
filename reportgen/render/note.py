"""order-note.md: the short summary pasted into the provider's order notes (R16), at most 2,000 characters."""

from __future__ import annotations

from reportgen.numbers import money

MAX_CHARS = 2000


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _h(value: float | None) -> str:
    return "not measured" if value is None else f"{value:.1f} h"


def _other_costs(costs: dict) -> list[str]:
    """Other costs as given in the plan: billed with the order, or external and kept apart (R13)."""
    currency = costs["currency"]
    parts = [f"{c['label']} {money(c['amount'], currency)} (with the order)" for c in costs["other_included"]]
    parts += [f"{c['label']} {money(c['amount'], currency)} (external, apart from the rental)" for c in costs["external"]]
    return [f"- Other costs: {_clip('; '.join(parts), 300)}"] if parts else []


def _runs_line(report: dict) -> str | None:
    """How the runs ended, the GPU time the interrupted ones held, and which rules stopped what (R10)."""
    time = report["run_time"]
    counts = time["training_runs_by_status"]
    if not counts:
        return None
    ended = ", ".join(f"{n} {status}" for status, n in counts.items())
    lost = time["gpu_hours_by_status"].get("interrupted")
    if lost:
        ended += f"; interrupted runs held {lost:.1f} GPU h"
    evaluations = time["evaluation_runs"]
    also = f", and {evaluations} evaluation run{'s' if evaluations != 1 else ''}" if evaluations else ""
    text = f"- Runs: {sum(counts.values())} ({ended}){also}"
    if report["stops"]:
        text += ". Stops: " + ", ".join(f"{s['rule'] or 'unnamed'} on {s['run']}" + ("" if s["agrees"] else " (script and logs disagree)")
                                         for s in report["stops"])
    return _clip(text, 400)


def _next_steps(report: dict) -> list[str]:
    """The next campaign in a few lines (R16): the suggested schedule and its lot, unfinished variants, uncertainties."""
    steps = []
    plan = report.get("next_campaign")
    if plan:
        text = plan.get("lot_advice") or f"the suggested schedule takes {plan['suggested_hours']:.1f} h"
        if plan["left_out"]:
            text = text.rstrip(".") + f" (steps left out: {', '.join(plan['left_out'])})"
        steps.append(text)
    steps += [f"{v['id']} ({v['category']}): {v['verdict'].replace('_', ' ')}"
              for v in report["variants"] if v["verdict"] in ("not_run", "stopped")]
    if report["uncertainties"]:
        steps.append(f"{len(report['uncertainties'])} uncertaint{'y' if len(report['uncertainties']) == 1 else 'ies'}: "
                     + "; ".join(u.rstrip(".") for u in report["uncertainties"]))
    return steps


def order_note(report: dict) -> str:
    """Order reference, question, verdict, confirmed cost, cost per passed output, hours, next steps."""
    campaign, costs, schedule = report["campaign"], report["costs"], report["schedule"]
    currency = costs["currency"]
    refs = ", ".join(lot["order_ref"] for lot in costs["lots"] if lot["order_ref"]) or "no order reference in the plan"
    lots = "; ".join(f"{lot['label']} {money(lot['price'], currency)}" for lot in costs["lots"])
    if costs["cost_per_passed_output"] is None:
        per_output = f"undefined ({costs['undefined_reason']})"
    else:
        per_output = (f"{money(costs['cost_per_passed_output'], currency)} over {costs['passed_outputs']} passed "
                      f"output{'s' if costs['passed_outputs'] != 1 else ''} ({', '.join(costs['counted'])})")
    if schedule["actual_hours"] is None:
        window = f"{schedule['window_hours']:g} h window"
    elif schedule["overrun_hours"]:
        window = f"{schedule['window_hours']:g} h window, {schedule['overrun_hours']:.1f} h over"
    else:
        window = f"{schedule['window_hours']:g} h window, {schedule['unused_hours']:.1f} h unused"
    next_steps = _next_steps(report)
    lines = [
        f"# {campaign['id']}: order {refs}",
        "",
        f"- Question: {_clip(campaign['question'], 300)}",
        f"- Verdict: {campaign['verdict']}. {_clip((campaign.get('answer') or {}).get('sentence') or campaign['conclusion'], 400)}",
        f"- Confirmed cost: {money(costs['confirmed_total'], currency)} ({lots})",
        f"- Cost per passed output: {per_output}",
        *_other_costs(costs),
        f"- Hours: planned {_h(schedule['planned_hours'])}, actual {_h(schedule['actual_hours'])} ({window})",
    ]
    runs = _runs_line(report)
    if runs:
        lines.append(runs)
    if report["warnings"]:
        lines.append(f"- Warnings: {len(report['warnings'])}, listed at the top of the report's overview.")
    if report["plan"]["modified_since_freeze"]:
        lines.append("- Plan: edited after it was frozen; reconciled against the frozen original.")
    if next_steps:
        lines.append("- Next: " + _clip("; ".join(step.rstrip(".") for step in next_steps) + ".", 700))
    lines.append("- Full report: index.html and report.json of the published site.")
    note = "\n".join(lines) + "\n"
    return note if len(note) <= MAX_CHARS else note[: MAX_CHARS - 2].rstrip() + "…\n"
