"""report.json (schema reportgen.report/1): everything on the site, machine-readable.

The site's pages are rendered from this same dictionary, so the two cannot disagree.
Unknown values are null, never zero; sections a later stage fills are empty, never made up.

This module only shapes: every figure comes computed from reportgen.analysis (one `*_json`
function per typed result); here values are rounded for JSON, times written in the campaign's
time zone, and nothing is summed, compared or decided.
"""

from __future__ import annotations

import hashlib
import math
import re
from datetime import UTC, datetime, tzinfo

from reportgen import __version__
from reportgen.analysis import Analysis
from reportgen.analysis.alerts import OnMachine
from reportgen.analysis.checkpoints import (
    CALENDAR_OPERATIONS,
    Calendar,
    CheckpointFigures,
    CheckpointsReport,
    Location,
)
from reportgen.analysis.clock import Clock, at_work
from reportgen.analysis.deliverables import Costs, DeliverableResult
from reportgen.analysis.estimates import Measurement
from reportgen.analysis.options import LotFit
from reportgen.analysis.runs import GpuTime, Machine, Unlinked
from reportgen.analysis.schedule import LotSpan, ScheduleReport, StepReport
from reportgen.analysis.stops import Stop
from reportgen.analysis.variance import Cause, VarianceReport
from reportgen.analysis.verdicts import Answer
from reportgen.model import Campaign, Evaluation, Evidence, WarningCode
from reportgen.numbers import HOURS_DECIMALS
from reportgen.plan.freeze import Freeze
from reportgen.plan.load import LoadedPlan, format_key
from reportgen.plan.schema import Plan
from reportgen.render.nextplan import FILE as NEXT_PLAN

SCHEMA = "reportgen.report/1"


def iso(at: datetime | None, tz: tzinfo) -> str | None:
    """ISO 8601 with the campaign's time zone (the first lot's), so times read like the order. A pandas
    Timestamp is made a datetime first: its own conversion takes twice as long, and a report holds thousands."""
    if at is None:
        return None
    if at.tzinfo is not None and hasattr(at, "to_pydatetime"):
        at = at.to_pydatetime(warn=False)  # to the microsecond: shown to the second
    return at.astimezone(tz).isoformat(timespec="seconds")


def zone_name(tz: tzinfo) -> str:
    """"UTC+09:00", "UTC": how the site, the note and inspect name the campaign's time zone."""
    offset = datetime(2000, 1, 1, tzinfo=tz).utcoffset()
    if not offset:
        return "UTC"
    minutes = int(offset.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    return f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def hours(value: float | None) -> float | None:
    return None if value is None else round(value, HOURS_DECIMALS)


def number(value: float | None) -> float | str | None:
    """JSON has no NaN or infinity: non-finite values are written as strings, never dropped."""
    if value is None:
        return None
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def plain(value: object) -> object:
    """A value read from a config (YAML dates, NaN...) as JSON that report.json can hold."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, float):
        return number(value)
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)


def machine_json(found: Machine | None) -> dict | None:
    """Where a run ran, as its sources record it (null when none does)."""
    if found is None:
        return None
    return {"host": found.host, "gpu": found.gpu, "gpu_count": found.gpu_count, "devices": found.devices,
            "exit_code": found.exit_code, "evidence": evidence(list(found.evidence))}


def evidence(items: list[Evidence]) -> list[dict]:
    return [e.to_json() for e in sorted(set(items))]


def inputs_json(campaign: Campaign) -> list[dict]:
    """The `inputs` list shared by report.json and inspect: every file, its format, what was skipped."""
    return [
        {
            "path": info.path,
            "format": info.format,
            "records": info.records,
            "skipped": info.skipped,
            "lines": info.lines,
            "blank": info.blank,
            "header": info.header,
            "text_lines": info.text_lines,
            "problems": [{"line": p.line, "message": p.message} for p in info.problems],
            "problems_not_shown": info.problems_not_shown,
            "notes": info.notes,
        }
        for info in campaign.inputs  # ingest keeps them in path order
    ]


def unlinked_json(items: list[Unlinked]) -> list[dict]:
    """Captured logs (or processes of one) that no evidence ties to a run, with what they say."""
    return [{"path": item.source.path, "lines": list(item.source.lines) if item.source.lines else None,
             "reason": item.source.reason,
             "messages": [{"kind": m.kind, "message": m.message, "step": m.step, "evidence": evidence([m.evidence])}
                          for m in item.messages]}
            for item in items]


def _frozen_at(frozen: Freeze | None, tz: tzinfo) -> str | None:
    """The freeze time in the campaign's time zone, as every time on the site; as recorded if unreadable."""
    if frozen is None:
        return None
    at = frozen.time
    return iso(at, tz) if at is not None else frozen.frozen_at


def answer_json(answer: Answer | None, plan: Plan) -> dict | None:
    if answer is None:
        return None
    return {
        "sentence": answer.sentence,
        "metric": plan.quality.metric,
        "direction": plan.quality.direction,
        "threshold": plan.quality.threshold,
        "unit": plan.quality.unit,
        "best": answer.best,
        "best_value": answer.best_value,
        "control": answer.control,
        "control_value": answer.control_value,
        "difference": answer.difference,
        "use": answer.use,
        "ruled_out": answer.ruled_out,
    }


def build_report(analysis: Analysis, current: LoadedPlan, frozen: Freeze | None, generated_at: datetime | None) -> dict:
    """The report dictionary; the analysis was made against the frozen plan when there is one."""
    plan = analysis.plan
    campaign = analysis.campaign
    tz: tzinfo = analysis.schedule.window.start.tzinfo or UTC  # the plan's lot start always has a time zone
    per_run_metrics = campaign.metrics_by_run()
    return {
        "schema": SCHEMA,
        "generator": {"name": "reportgen", "version": __version__},
        "generated_at": iso(generated_at, tz),
        "campaign": {
            "id": plan.campaign.id,
            "question": plan.campaign.question,
            "end_condition": plan.campaign.end_condition,
            "notes": plan.campaign.notes,
            "corpus": {"id": plan.corpus.id, "description": plan.corpus.description, "size": plan.corpus.size},
            "time_zone": zone_name(tz),
            "verdict": analysis.verdict.verdict,
            "conclusion": analysis.verdict.conclusion,
            "answer": answer_json(analysis.verdict.answer, plan),
        },
        "plan": {
            "path": current.path.name,
            "sha256": current.sha256,
            "original_sha256": frozen.sha256 if frozen else None,
            "modified_since_freeze": (frozen.sha256 != current.sha256) if frozen else None,
            "frozen_at": _frozen_at(frozen, tz),
            "frozen_after_window_opened": any(w.code == WarningCode.FROZEN_LATE for w in analysis.warnings),
            "reconciled_against": "frozen original" if frozen else "plan as given (not frozen)",
        },
        "plan_warnings": _plan_warnings(analysis, frozen.plan if frozen else current),
        "decision_points": _decision_points(analysis, tz),
        "inputs": inputs_json(campaign),
        "problems": _problems_json(analysis),
        "warnings": [{"code": w.code, "message": w.message, "evidence": evidence(w.evidence)} for w in analysis.warnings],
        "runs": [_run_json(analysis, run_id, tz, per_run_metrics.get(run_id, [])) for run_id in analysis.runs.order],
        "unlinked_sources": unlinked_json(analysis.runs.unlinked),
        "run_time": _gpu_time_json(analysis.runs.gpu_time),
        "stops": [_stop_json(stop, analysis.runs.variants.get(stop.run), tz) for stop in analysis.stops.stops],
        "stop_rules": [
            {
                "id": r.rule.id,
                "kind": r.rule.kind,
                "description": r.rule.description,
                "evaluated": r.evaluated,
                "basis": r.basis,
                "applies_to": r.applies_to,
                "checked": r.checked,
                "not_checked": r.unchecked,
                "fired": r.fired,
            }
            for r in analysis.stops.rules
        ],
        "stop_notices": [
            {"run": n.run, "rule": n.rule, "message": n.message, "evidence": evidence(n.evidence)}
            for n in analysis.stops.notices
        ],
        "variants": [
            {
                "id": r.variant.id,
                "description": r.variant.description,
                "category": r.variant.category,
                "role": r.variant.role,
                "verdict": r.verdict,
                "reason": r.reason,
                "metric": plan.quality.metric,
                "direction": plan.quality.direction,
                "value": number(r.value),
                "difference": (analysis.verdict.answer.differences.get(r.variant.id)
                               if analysis.verdict.answer else None),
                "threshold": plan.quality.threshold,
                "runs": r.runs,
                "evidence": evidence(r.evidence),
            }
            for r in analysis.variants
        ],
        "schedule": _schedule_json(analysis.schedule, analysis.variance, tz),
        "checkpoint_policy": plan.checkpoints.model_dump(mode="json"),
        "checkpoints": _checkpoints_json(analysis.checkpoints, analysis.runs.order, tz),
        "deliverables": [_deliverable_json(r, tz) for r in analysis.deliverables],
        "costs": _costs_json(analysis.costs, plan, tz),
        "plan_options": [
            {"label": o.label, "kind": o.kind, "price": o.price, "currency": o.currency, "fits": o.fits, "note": o.note,
             "hours_needed": hours(o.hours_needed), "hours_available": hours(o.hours_available), "dropped": o.dropped}
            for o in analysis.options
        ],
        "estimates": _estimates_json(analysis),
        # R16: every planned quantity with no measurement behind it; an item leaves once one exists.
        "uncertainties": [u.message for u in analysis.next.uncertainties],
        "next_campaign": _next_campaign_json(analysis),
        "decisions": [
            {
                "point": d.point,
                "decision": d.decision,
                "at": iso(d.at, tz),
                "reason": d.reason,
                "variant": d.variant,
                "evidence": evidence([d.evidence]),
            }
            for d in sorted(campaign.decisions, key=lambda d: (d.at, d.evidence))
        ],
        "clock": _clock_json(analysis.clock, analysis.on_machine, tz),
        "alerts": [{"code": a.code, "key": a.key, "message": a.message, "evidence": evidence(a.evidence)}
                   for a in analysis.alerts],
    }


def _clock_json(clock: Clock | None, left_there: OnMachine, tz: tzinfo) -> dict | None:
    """The lot clock at the build's now (docs/report-json.md): `running` while the lot is open and a step is
    still to do; otherwise the report is the closing summary."""
    if clock is None:
        return None
    return {
        "now": iso(clock.now, tz),
        "now_basis": clock.now_basis,
        "window_end": iso(clock.window_end, tz),
        "open": clock.open,
        "running": clock.open and clock.projected_end is not None,
        "hours_left": hours(clock.hours_left),
        "projected_end": iso(clock.projected_end, tz),
        "overrun_hours": hours(clock.overrun_hours),
        "lots": [{**_lot_span_json(lot, tz), "open": lot in clock.holding} for lot in clock.lots],
        "steps": [{"id": s.id, "state": s.state, "start": iso(s.start, tz), "end": iso(s.end, tz), "deadline": iso(s.deadline, tz),
                   "basis": s.basis, "evidence": evidence(s.evidence)} for s in clock.steps],
        "options": [{"kind": o.kind, "label": o.label, "fits": o.fits, "note": o.note} for o in clock.options],
        "on_machine": {
            "items": [{"kind": item.kind, "name": item.name, "evidence": evidence(item.evidence),
                       "transfer_seconds": item.transfer_s, "basis": item.basis} for item in left_there.items],
            "transfers_timed": left_there.transfers_timed,
            "seconds_needed": left_there.seconds_needed,
            "fits": left_there.fits(clock.hours_left),
        },
    }


def _problems_json(analysis: Analysis) -> list[dict]:
    """The campaign's problems, then each file's damaged lines (in path order)."""
    problems = [{"scope": "campaign", "path": p.path, "line": p.line, "message": p.message} for p in analysis.problems]
    for info in analysis.campaign.inputs:
        problems.extend({"scope": "file", "path": info.path, "line": p.line, "message": p.message} for p in info.problems)
    return problems


def _lot_span_json(lot: LotSpan, tz: tzinfo) -> dict:
    return {"label": lot.label, "start": iso(lot.start, tz), "end": iso(lot.end, tz), "gpus": list(lot.gpus)}


def _step_json(item: StepReport, variance: VarianceReport, tz: tzinfo, start: datetime) -> dict:
    step, planned, actual = item.step, item.planned, item.actual
    return {
        "id": step.id,
        "title": step.title,
        "kind": step.kind,
        "category": step.category,
        "resource": step.resource,
        "planned_hours": hours(step.hours),
        "planned_start": iso(planned.start_at(start), tz),
        "planned_end": iso(planned.end_at(start), tz),
        "actual_hours": hours(actual.hours),
        "actual_start": iso(actual.start, tz),
        "actual_end": iso(actual.end, tz),
        "actual_basis": actual.basis,
        "variance_hours": hours(item.variance_hours),
        "explained": _causes_json(variance.causes(step.id)),
        # What no cause covers stays visible: planned + explained + unexplained = actual.
        "unexplained_hours": hours(variance.unexplained[step.id]),
        "evidence": evidence(actual.evidence),
    }


def _schedule_json(schedule: ScheduleReport, variance: VarianceReport, tz: tzinfo) -> dict:
    total = variance.total
    return {
        "time_zone": zone_name(tz),
        "window_start": iso(schedule.window.start, tz),
        "window_end": iso(schedule.window.end, tz),
        "window_hours": hours(schedule.window.hours),
        "planned_hours": hours(schedule.planned_hours),
        "planned_unused_hours": hours(schedule.planned_unused_hours),
        "actual_start": iso(schedule.actual_start, tz),
        "actual_end": iso(schedule.actual_end, tz),
        "actual_hours": hours(schedule.actual_hours),
        "unused_hours": hours(schedule.unused_hours),
        "overrun_hours": hours(schedule.overrun_hours),
        "time_by_kind": {
            kind: {key: hours(value) if key.endswith("hours") else value for key, value in figures.items()}
            for kind, figures in schedule.time_by_resource_kind().items()
        },
        "lots": [_lot_span_json(lot, tz) for lot in schedule.lots],
        "steps": [_step_json(item, variance, tz, schedule.window.start) for item in schedule.steps],
        # The whole campaign: planned span + explained + unexplained = actual span.
        "explained": _causes_json(total.causes if total else []),
        "unexplained_hours": hours(total.unexplained_hours) if total else None,
        # Waiting between steps: no measured step in progress (a resource or a person not ready).
        "between_steps": {
            "hours": hours(variance.between_steps_hours),
            "gaps": [{"after": g.after, "before": g.before, "start": iso(g.start, tz), "end": iso(g.end, tz),
                      "hours": hours(g.hours), "evidence": evidence(g.evidence)} for g in variance.gaps],
        },
    }


def _costs_json(costs: Costs, plan: Plan, tz: tzinfo) -> dict:
    return {
        "currency": costs.currency,
        "provider": plan.order.provider,
        "lots": [
            {"label": lot.label, "gpu": lot.gpu, "price": lot.price, "days": lot.days, "gpus": lot.gpus,
             "order_ref": lot.order_ref, "start": iso(lot.start, tz)}
            for lot in plan.order.lots
        ],
        "confirmed_total": costs.rental,
        "other_included": [{"label": c.label, "amount": c.amount, "note": c.note} for c in costs.other_included],
        "other_included_total": costs.included,
        "external": [{"label": c.label, "amount": c.amount, "note": c.note} for c in costs.external],
        "rental_total": costs.rental,
        "passed_outputs": costs.passed_outputs,
        "cost_per_passed_output": costs.per_output,
        "cost_per_passed_output_with_included": costs.per_output_with_included,
        "undefined_reason": costs.undefined_reason,
        "counted": costs.counted,
        "excluded": [{"deliverable": d, "reason": reason} for d, reason in costs.excluded],
        "rejections": [{"deliverable": d, "reasons": reasons} for d, reasons in costs.rejections],
        "missing_deliverables": costs.missing,
    }


MAX_PAGE_NAME = 100  # characters of a run id kept in its page's file name (file systems allow 255 bytes)


def run_page(run_id: str) -> str:
    """The site path of a run's page: a safe file name, made unique by a hash when it had to change
    (characters a file name cannot hold, or an id too long for one)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", run_id).strip("._")[:MAX_PAGE_NAME] or "run"
    if safe != run_id:
        safe += "-" + hashlib.sha1(run_id.encode()).hexdigest()[:8]
    return f"runs/{safe}.html"


def _firing_json(step: int | None, at: datetime | None, reason: str, items: list[Evidence], tz: tzinfo) -> dict:
    return {"step": step, "at": iso(at, tz), "reason": reason, "evidence": evidence(items)}


def _stop_json(stop: Stop, variant: str | None, tz: tzinfo) -> dict:
    logged, evaluated = stop.logged, stop.evaluated
    return {
        "id": stop.id,
        "run": stop.run,
        "variant": variant,
        "rule": stop.rule,
        "kind": stop.kind,
        "step": stop.step,
        "at": iso(stop.at, tz),
        "reason": stop.reason,
        "source": stop.source,
        "evidence": evidence(stop.evidence),
        "logged": _firing_json(logged.step, logged.at, logged.reason, [logged.evidence], tz) if logged else None,
        "evaluated": _firing_json(evaluated.step, evaluated.at, evaluated.reason, evaluated.evidence, tz) if evaluated else None,
        "agrees": stop.disagreement is None,
        "disagreement": stop.disagreement,
    }


def _final_json(final: Evaluation | None, metric: str, tz: tzinfo) -> dict | None:
    if final is None:
        return None
    return {"metric": metric, "value": number(final.metrics[metric]), "step": final.step, "run": final.run,
            "at": iso(final.at, tz), "evidence": evidence([final.evidence])}


def _run_json(analysis: Analysis, run_id: str, tz: tzinfo, metrics: list[str]) -> dict:
    run = analysis.campaign.runs[run_id]
    runs = analysis.runs
    status = runs.statuses[run_id]
    time = runs.times[run_id]
    return {
        "id": run_id,
        "page": run_page(run_id),
        "kind": run.kind,
        "variant": runs.variants.get(run_id),
        "status": status.status,
        "status_reason": status.reason,
        # No end logged while a lot is open, and not at the last of its steps: at work, as the clock takes it (its
        # status is decided from its logs once they record an end, or taken as unknown once the lot is over).
        "at_work": analysis.clock is not None and analysis.clock.open and at_work(run, analysis.plan, runs.statuses),
        "stopped_by": status.stopped_by,
        "first_step": run.first_step,
        "last_step": run.last_step,
        "started_at": iso(run.started_at, tz),
        "ended_at": iso(run.ended_at, tz),
        "last_seen_at": iso(run.last_seen_at, tz),
        "final": _final_json(runs.finals.get(run_id), analysis.plan.quality.metric, tz),
        "wall_hours": hours(time.wall_hours),
        "gpus": time.gpus,
        "gpu_hours": hours(time.gpu_hours),
        "time_basis": time.basis,
        "machine": machine_json(runs.machines.get(run_id)),
        "config_id": run.config_id,
        "config": plain(run.config),
        "resumes": run.resumes,
        "resumed_at_step": run.resumed_at_step,
        "continued_by": runs.continued_by.get(run_id, []),
        "evaluates": run.evaluates,
        "evaluated_by": runs.evaluated_by.get(run_id, []),
        "identity": [d.to_json() for d in run.identity],
        "formats": list(run.formats),
        "sources": list(run.sources),
        "metrics": metrics,
        "stops": [s.id for s in analysis.stops.for_run(run_id)],
        "non_finite": [
            {"metric": w.metric, "step": w.step, "last_step": w.last_step, "rows": w.count, "note": w.note,
             "evidence": evidence(w.evidence)}
            for w in runs.non_finite.get(run_id, [])
        ],
        "checkpoints": [
            {"step": c.checkpoint.step, "path": c.checkpoint.path, "at": iso(c.checkpoint.at, tz),
             "resume_state": c.checkpoint.resume_state, "resumable": c.resumable, "lacking": c.lacking,
             "reload_tests": [{"ok": t.ok, "new_process": t.new_process, "message": t.message, "evidence": evidence([t.evidence])}
                              for t in c.checkpoint.reload_tests],
             "evidence": evidence(c.checkpoint.evidence)}
            for c in analysis.checkpoints.of_run(run_id)
        ],
        "evidence": evidence(status.evidence),
    }


def _seconds(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _fraction(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else round(value, 6)


def _location(where: Location | None, tz: tzinfo) -> dict | None:
    if where is None:
        return None
    return {"status": where.status, "at": iso(where.at, tz), "destination": where.destination, "evidence": evidence(where.evidence)}


def _checkpoint_json(item: CheckpointFigures, tz: tzinfo) -> dict:
    check = item.checkpoint
    return {
        "run": check.run,
        "step": check.step,
        "path": check.path,
        "at": iso(check.at, tz),
        "save_s": _seconds(item.save_s),
        "transfer_s": _seconds(item.transfer_s),
        "restore_s": _seconds(item.restore_s),
        "bytes": item.bytes,
        "reload_tested": item.reload_ok is not None,
        "reload_ok": item.reload_ok,
        "reload_new_process": item.reload_new_process,
        "resume_state": check.resume_state,
        "resume_basis": check.resume_basis,
        "resumable": item.resumable,
        "lacking": item.lacking,
        "unknown": item.unknown,
        "location": _location(item.location, tz),
        "evidence": evidence(item.evidence),
    }


def _calendar_json(calendar: Calendar) -> dict:
    totals = calendar.totals
    return {
        "runs": [{"run": row.run, **{f"{k}_hours": hours(v) for k, v in row.hours.items()}, "total_hours": hours(row.total_hours)}
                 for row in calendar.rows],
        **{f"{k}_hours": hours(totals[k]) for k in CALENDAR_OPERATIONS},
        "total_hours": hours(calendar.total_hours),
    }


def _checkpoints_json(report: CheckpointsReport, order: list[str], tz: tzinfo) -> dict:
    """checkpoints: every checkpoint with its costs, reload tests, resume state and location; the save interval."""
    interval = report.interval
    return {
        "items": [_checkpoint_json(item, tz) for item in report.items],
        "recommended_interval_minutes": interval.recommended_minutes,
        "interval_basis": interval.basis,
        "interval": {
            "save_cost_s": _seconds(interval.save_cost_s),
            "saves_measured": interval.save_count,
            "mean_hours_between_interruptions": hours(interval.mtbi_hours),
            "mtbi_basis": interval.mtbi_basis,
            "interruptions": interval.interruptions,
            "observed_gpu_hours": hours(interval.observed_gpu_hours),
            "young_s": _seconds(interval.young_s),
            "daly_s": _seconds(interval.daly_s),
            "planned_minutes": interval.planned_minutes,
            "advice": interval.advice,
            "best_overhead": _fraction(interval.best_overhead),
            "planned_overhead": _fraction(interval.planned_overhead),
            "uncertainties": interval.uncertainties,
            "evidence": evidence(interval.evidence[:20]),
        },
        "calendar": _calendar_json(report.calendar),
        "not_transferred": [
            {"run": item.checkpoint.run, "step": item.checkpoint.step, "path": item.checkpoint.path,
             "status": item.location.status}
            for item in report.left_on_machine
        ],
        "runs_without_resumable_checkpoint": report.runs_without_resumable,
    }


def _plan_warnings(analysis: Analysis, reference: LoadedPlan) -> list[dict]:
    """What `reportgen check` says of the plan the campaign was reconciled against (R2, R4, R5, R8)."""
    return [{"level": f.level, "key": format_key(f.key), "line": reference.line_of(f.key), "message": f.message}
            for f in analysis.plan_findings]


def _decision_points(analysis: Analysis, tz: tzinfo) -> list[dict]:
    """R3: each decision point of the plan, taken (when, what, why) or missed once its step ended."""
    return [
        {
            "id": p.point.id,
            "after": p.point.after,
            "question": p.point.question,
            "options": p.point.options,
            "status": p.status,
            "after_step_ended": iso(p.after_step_ended, tz),
            "decisions": [{"decision": t.decision.decision, "variant": t.decision.variant, "at": iso(t.decision.at, tz),
                           "reason": t.decision.reason, "in_options": t.in_options, "evidence": evidence([t.decision.evidence])}
                          for t in p.decisions],
        }
        for p in analysis.decision_points
    ]


def _causes_json(causes: list[Cause]) -> list[dict]:
    return [{"cause": c.cause, "hours": hours(c.hours), "note": c.note, "evidence": evidence(c.evidence)} for c in causes]


def _measurement_json(m: Measurement) -> dict:
    return {"quantity": m.quantity, "variant": m.variant, "unit": m.unit, "planned": m.planned,
            "measured": None if m.measured is None else round(m.measured, 4), "count": m.count, "basis": m.basis,
            "evidence": evidence(m.evidence)}


def _estimates_json(analysis: Analysis) -> list[dict]:
    """estimates: planned, measured and a suggested next figure for every step and variant, with its basis
    and the measurements its own runs made."""
    return [
        {"item": e.item, "kind": e.kind, "id": e.id, "planned_hours": hours(e.planned_hours),
         "measured_hours": hours(e.measured_hours), "next_hours": hours(e.next_hours), "basis": e.basis,
         "measured": e.measured, "in_suggested_schedule": e.in_schedule, "left_out_reason": e.left_out,
         "runs": e.runs, "evidence": evidence(e.evidence),
         "measurements": [_measurement_json(m) for m in e.measurements]}
        for e in analysis.next.estimates
    ]


def _lot_json(lot: LotFit) -> dict:
    return {"label": lot.label, "price": lot.price, "currency": lot.currency, "lots": lot.lots, "hours": hours(lot.hours),
            "fits": lot.fits, "unused_hours": hours(lot.unused_hours), "ordered": lot.ordered}


def _next_campaign_json(analysis: Analysis) -> dict:
    """The variants proposed again and why, the suggested schedule step by step, the lot to order (the
    ordered one first), the measured quantities and the uncertainties by item."""
    plan = analysis.next
    figures = {e.id: e for e in plan.estimates if e.kind == "step"}
    advice = plan.lot_advice
    return {
        "suggested_hours": hours(plan.suggested_hours),
        "planned_hours": hours(analysis.schedule.planned_hours),
        "left_out": plan.left_out,
        "variants": [
            {"id": a.variant, "role": a.role, "category": a.category, "verdict": a.verdict, "case": a.case,
             "advice": a.advice, "proposed": a.proposed, "reason": a.reason, "action": a.action,
             "evidence": evidence(a.evidence)}
            for a in plan.advice
        ],
        # One row per plan step: a step not proposed keeps no hours in the suggested schedule.
        "steps": [
            {"id": step.id, "variant": step.variant, "proposed": figures[step.id].in_schedule,
             "next_hours": hours(figures[step.id].next_hours) if figures[step.id].in_schedule else None,
             "left_out_reason": figures[step.id].left_out}
            for step in analysis.plan.schedule.steps if step.id in figures
        ],
        "interruption_allowance": None if plan.allowance is None else round(plan.allowance, 4),
        "interruption_allowance_basis": plan.allowance_basis,
        "ordered_lot": _lot_json(advice.ordered),
        "ordered_shortfall_hours": hours(advice.shortfall_hours),
        "lots": [_lot_json(lot) for lot in plan.lots],
        "lot": _lot_json(plan.lot) if plan.lot else None,
        "lot_advice": advice.message,
        "measurements": [_measurement_json(m) for m in plan.measurements],
        "uncertainties": [{"item": u.item, "code": u.code, "message": u.message} for u in plan.uncertainties],
        "draft_plan": NEXT_PLAN,  # the plan as written with each step's hours at its next estimate
    }


def _deliverable_json(result: DeliverableResult, tz: tzinfo) -> dict:
    entry = result.check.entry
    return {
        "id": entry.id,
        "kind": entry.kind,
        "variant": entry.variant,
        "corpus": entry.corpus,
        "run": entry.run,
        "path": entry.paths[0],
        "paths": entry.paths,
        "passed": result.passed,
        "reasons": result.reasons,
        "sha256": result.sha256,
        "duplicate_of": result.duplicate_of,
        "counts_as_output": result.counts,
        "planned": result.planned,
        "files": [{"path": f.path, "exists": f.exists, "bytes": f.bytes, "sha256": f.sha256, "reloadable": f.reloadable,
                   "reasons": f.reasons} for f in result.check.files],
        "ids": result.check.ids,
        "location": _location(result.location, tz),
        "evidence": evidence([entry.evidence]),
    }


def _gpu_time_json(time: GpuTime) -> dict:
    """GPU time per run status against the GPU time rented: interrupted runs cost too (R10)."""
    return {
        "rented_gpu_hours": hours(time.rented_gpu_hours),
        "gpu_hours_by_status": {k: hours(v) for k, v in time.by_status.items()},
        "gpu_hours": hours(time.gpu_hours),
        # R5: how busy the rented GPUs were with runs over the whole window (runs on cpu excluded).
        "busy_fraction": None if time.busy_fraction is None else round(time.busy_fraction, 4),
        "runs_without_gpu_time": time.without_gpu_time,
        "training_runs_by_status": time.training_runs_by_status,
        "evaluation_runs": time.evaluation_runs,
    }


def cited_lines(report: dict) -> dict[str, set[int]]:
    """Every (file, line) the report cites as evidence or as a problem, by file."""
    cited: dict[str, set[int]] = {}

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "evidence" and isinstance(value, list):
                    for item in value:
                        if item.get("line"):
                            cited.setdefault(item["path"], set()).add(item["line"])
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(report)
    for problem in report.get("problems", []):  # a damaged line is shown as it was read
        if problem.get("path") and problem.get("line"):
            cited.setdefault(problem["path"], set()).add(problem["line"])
    return cited
