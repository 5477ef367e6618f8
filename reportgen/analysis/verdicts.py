"""Runs to variants, run status, variant verdicts against the quality threshold, and the campaign verdict (R1, R10)."""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field
from datetime import datetime

from reportgen.analysis.stops import Stop, first_stop
from reportgen.model import (
    FATAL_MESSAGES,
    Campaign,
    Evaluation,
    Evidence,
    LoggedDecision,
    Run,
)
from reportgen.plan.schema import Plan, Variant

DROP_DECISIONS = {"drop", "drop_variant", "drop_optional_variant"}


@dataclass
class RunStatus:
    status: str  # completed | stopped | interrupted | unknown
    reason: str
    evidence: list[Evidence] = field(default_factory=list)


@dataclass
class VariantResult:
    variant: Variant
    verdict: str  # passed | failed | stopped | not_run | dropped
    reason: str
    runs: list[str]
    value: float | None = None
    evidence: list[Evidence] = field(default_factory=list)


@dataclass
class Verdict:
    verdict: str  # positive | negative | inconclusive
    conclusion: str


def assign_variants(plan: Plan, campaign: Campaign) -> tuple[dict[str, str | None], list[tuple[Evidence | None, str]]]:
    """Which variant each run belongs to: the run's own word first, then the plan's globs."""
    known = {v.id for v in plan.variants}
    mapping: dict[str, str | None] = {}
    problems: list[tuple[Evidence | None, str]] = []
    for run_id, run in campaign.runs.items():
        matches = [v.id for v in plan.variants if any(fnmatch.fnmatchcase(run_id, p) for p in v.runs)]
        where = run.start_evidence or (Evidence(run.sources[0]) if run.sources else None)
        if run.variant is not None:
            if run.variant not in known:
                problems.append((where, f"run '{run_id}' names variant '{run.variant}', which the plan does not have"))
            mapping[run_id] = run.variant if run.variant in known else None
            continue
        if len(matches) > 1:
            problems.append((where, f"run '{run_id}' matches the run patterns of several variants: {', '.join(matches)}"))
        mapping[run_id] = matches[0] if matches else None
    return mapping, problems


def run_status(run: Run, campaign: Campaign) -> RunStatus:
    """completed, stopped (a stop was logged), interrupted (it never reached its end) or unknown.

    Native start/end events decide first; then what other formats say about the whole run
    (a Trainer's final summary, an MLflow status, a Lightning max_steps reached), then text logs
    (a traceback, an out-of-memory error or a kill ends a run that no source saw finish).
    """
    stops = [s for s in campaign.stops if s.run == run.id]
    if stops:
        first = min(stops, key=lambda s: s.at)
        return RunStatus("stopped", first.reason, [s.evidence for s in stops])
    if run.end_status is not None:
        end = [run.end_evidence] if run.end_evidence else []
        if run.end_status == "completed":
            return RunStatus("completed", "the run logged its end", end)
        if run.end_status == "stopped":
            return RunStatus("stopped", "the run ended with status 'stopped'", end)
        return RunStatus("interrupted", f"the run ended with status '{run.end_status}'", end)
    messages = [m for m in campaign.messages if m.run == run.id]
    completed = [f for f in run.facts if f.status == "completed"]
    finished = [m for m in messages if m.kind == "finished"]
    if completed or finished:
        reason = completed[0].reason if completed else finished[0].message
        return RunStatus("completed", reason or "a source records the end of training",
                         [f.evidence for f in completed] + [m.evidence for m in finished])
    fatal = [m for m in messages if m.kind in FATAL_MESSAGES]
    if fatal:
        return RunStatus("interrupted", fatal[-1].message, [m.evidence for m in fatal])
    interrupted = [f for f in run.facts if f.status == "interrupted"]
    if interrupted:
        return RunStatus("interrupted", interrupted[0].reason or "a source shows the run did not finish",
                         [f.evidence for f in interrupted])
    if any(e.kind == "start" for e in campaign.run_events if e.run == run.id):
        seen = [run.start_evidence] if run.start_evidence else []
        return RunStatus("interrupted", "the run started but never logged its end", seen)
    if run.facts or messages:
        formats = ", ".join(run.formats) or "its sources"
        return RunStatus("unknown", f"no source records whether it finished ({formats} keep no end marker)",
                         [f.evidence for f in run.facts])
    return RunStatus("unknown", "neither a start nor an end was logged", [])


def after_stops(logged: RunStatus, stops: list[Stop]) -> RunStatus:
    """The run's status once reportgen's own evaluation of the stop rules is counted (R10).

    A rule whose condition held while the run went on makes a completed run `stopped`: its
    results are not approved. An interrupted run stays interrupted (the rules that fire on
    interruption say whether it can be resumed, not how it ended). A run the script stopped
    says so when the logs met a rule earlier than that.
    """
    first = first_stop([s for s in stops if s.evaluated is not None])
    if first is None or first.evaluated is None:
        return logged
    if logged.status == "stopped":
        logged_steps = [s.logged.step for s in stops if s.logged is not None and s.logged.step is not None]
        if first.evaluated.step is not None and logged_steps and first.evaluated.step < min(logged_steps):
            return RunStatus("stopped", f"{logged.reason}; the logs meet {first.rule} earlier, at step "
                             f"{first.evaluated.step}", logged.evidence + first.evaluated.evidence)
        return logged
    if logged.status not in ("completed", "unknown"):
        return logged
    went_on = "; the run itself went on to its end" if logged.status == "completed" else ""
    return RunStatus("stopped", f"stop rule {first.rule} fired: {first.evaluated.reason}{went_on}",
                     first.evaluated.evidence + logged.evidence)


def meets(value: float, threshold: float, direction: str) -> bool:
    return value >= threshold if direction == "higher" else value <= threshold


def _final_evaluation(evaluations: list[Evaluation], metric: str) -> Evaluation | None:
    with_metric = [e for e in evaluations if metric in e.metrics]
    # Formats without times (trainer_state.json) are ordered by step alone.
    return max(with_metric, key=lambda e: (e.at is not None, e.at or datetime.min, e.step, e.evidence)) if with_metric else None


def _drop_decision(variant_id: str, decisions: list[LoggedDecision]) -> LoggedDecision | None:
    drops = [d for d in decisions if d.variant == variant_id and d.decision in DROP_DECISIONS]
    return min(drops, key=lambda d: d.at) if drops else None


def variant_results(plan: Plan, campaign: Campaign, run_variants: dict[str, str | None],
                    statuses: dict[str, RunStatus]) -> list[VariantResult]:
    """R1/R10: a variant passes on the final evaluation of a completed run; stopped runs never pass."""
    quality = plan.quality
    results = []
    for variant in plan.variants:
        run_ids = [r for r, v in run_variants.items() if v == variant.id]
        drop = _drop_decision(variant.id, campaign.decisions)
        completed = [r for r in run_ids if statuses[r].status == "completed"]
        evaluations = [e for e in campaign.evaluations if e.run in run_ids]
        final = _final_evaluation([e for e in evaluations if e.run in completed], quality.metric)
        shown = final or _final_evaluation(evaluations, quality.metric)
        value = shown.metrics[quality.metric] if shown else None
        evidence = [shown.evidence] if shown else []
        op = ">=" if quality.direction == "higher" else "<="
        if final is None and drop:  # R3: dropped at a decision point, not failed
            verdict, reason = "dropped", f"dropped at {drop.point}: {drop.reason or drop.decision}"
            evidence = evidence + [drop.evidence]
        elif not run_ids:
            verdict, reason = "not_run", "no run of this variant was found in the logs"
        elif final is None:
            if completed:
                verdict, reason = "failed", f"no completed run evaluated {quality.metric}"
            else:
                verdict = "stopped"
                reason = "; ".join(f"{r}: {statuses[r].status} ({statuses[r].reason})" for r in run_ids)
                evidence = evidence + [e for r in run_ids for e in statuses[r].evidence]
        elif not math.isfinite(value):
            verdict, reason = "failed", f"final {quality.metric} is {value}"
        elif meets(value, quality.threshold, quality.direction):
            verdict, reason = "passed", f"final {quality.metric} {value:.4g} {op} {quality.threshold:g}"
        else:
            verdict, reason = "failed", f"final {quality.metric} {value:.4g} is not {op} {quality.threshold:g}"
        results.append(VariantResult(variant, verdict, reason, run_ids, value, evidence))
    return results


def campaign_verdict(plan: Plan, results: list[VariantResult]) -> Verdict:
    """R1: a negative result (no variant meets the threshold) is a complete, valid conclusion."""
    metric, threshold = plan.quality.metric, plan.quality.threshold
    op = ">=" if plan.quality.direction == "higher" else "<="
    variants = [r for r in results if r.variant.role == "variant"]
    passed = [r for r in variants if r.verdict == "passed"]
    if passed:
        names = ", ".join(f"{r.variant.id} ({r.value:.4g})" for r in passed)
        return Verdict("positive", f"{names} met {metric} {op} {threshold:g}.")
    required = [r for r in variants if r.variant.category == "required"]
    undecided = [r for r in required if r.verdict != "failed"]
    if required and not undecided:
        return Verdict(
            "negative",
            f"No variant met {metric} {op} {threshold:g}: every required variant was evaluated and fell short. "
            "This answers the question: the variants tried do not reach the threshold.",
        )
    missing = ", ".join(f"{r.variant.id} ({r.verdict.replace('_', ' ')})" for r in undecided) or "no required variant"
    return Verdict("inconclusive", f"No variant met {metric} {op} {threshold:g}, and not every required variant was evaluated: {missing}.")
