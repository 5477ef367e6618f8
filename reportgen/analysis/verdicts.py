"""Runs to variants, run status, variant verdicts against the quality threshold, and the campaign verdict (R1, R10)."""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum

from reportgen.analysis.status import STOPPED_BY_RULE, RunStatus
from reportgen.analysis.stops import Ledger, Stop, first_stop
from reportgen.model import (
    Campaign,
    Evaluation,
    Evidence,
    LoggedDecision,
    Problem,
    RunKind,
    Status,
    WarningCode,
    by_run,
)
from reportgen.numbers import compared
from reportgen.numbers import difference as number_difference
from reportgen.plan.schema import Plan, Variant

DROP_DECISIONS = {"drop", "drop_variant", "drop_optional_variant"}


class VariantVerdict(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    STOPPED = "stopped"  # the ledger names a stop of its runs
    NOT_RUN = "not_run"
    NOT_EVALUATED = "not_evaluated"  # no run that reached its end carries a value of the metric
    DROPPED = "dropped"  # at a decision point (R3), not failed
    BASELINE = "baseline"  # the control's final value: what the variants are compared with, not judged


class CampaignVerdict(StrEnum):
    POSITIVE = "positive"
    NEGATIVE = "negative"  # a complete answer (R1)
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class VariantResult:
    variant: Variant
    verdict: VariantVerdict
    reason: str
    runs: list[str]
    value: float | None = None
    evidence: list[Evidence] = field(default_factory=list)


@dataclass(frozen=True)
class Answer:
    """The question answered in one sentence: the best variant against the control on the quality
    metric, and what to use (a positive result) or what was ruled out (a negative one)."""

    sentence: str
    best: str | None = None  # the variant with the best finite final value
    best_value: float | None = None
    control: str | None = None
    control_value: float | None = None
    difference: float | None = None  # best - control, in the metric's unit
    use: list[str] = field(default_factory=list)  # deliverable ids of the best variant that passed
    ruled_out: list[str] = field(default_factory=list)  # variants evaluated below the threshold
    differences: dict[str, float] = field(default_factory=dict)  # each variant's final value - the control's


@dataclass(frozen=True)
class Verdict:
    verdict: CampaignVerdict
    conclusion: str
    answer: Answer | None = None


def assign_variants(plan: Plan, campaign: Campaign) -> tuple[dict[str, str | None], list[Problem]]:
    """Which variant each run belongs to: the run's own word first, then the plan's globs; an
    evaluation run belongs to the variant of the run it evaluates."""
    known = {v.id for v in plan.variants}
    mapping: dict[str, str | None] = {}
    problems: list[Problem] = []
    for run_id, run in campaign.runs.items():
        if run.evaluates is not None:
            continue
        matches = [v.id for v in plan.variants if any(fnmatch.fnmatchcase(run_id, p) for p in v.runs)]
        where = run.start_evidence or (Evidence(run.sources[0]) if run.sources else None)
        if run.variant is not None:
            if run.variant not in known:
                problems.append(Problem.at(where, f"run '{run_id}' names variant '{run.variant}', which the plan does not have", WarningCode.NOT_IN_PLAN))
            mapping[run_id] = run.variant if run.variant in known else None
            continue
        if len(matches) > 1:
            problems.append(Problem.at(where, f"run '{run_id}' matches the run patterns of several variants: {', '.join(matches)}", WarningCode.AMBIGUOUS_VARIANT))
        mapping[run_id] = matches[0] if matches else None
    for run_id, run in campaign.runs.items():
        if run.evaluates is not None:
            mapping[run_id] = mapping.get(run.evaluates)
    return dict(sorted(mapping.items())), problems


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
    if logged.stopped_by_rule:
        logged_steps = [s.logged.step for s in stops if s.logged is not None and s.logged.step is not None]
        if first.evaluated.step is not None and logged_steps and first.evaluated.step < min(logged_steps):
            return RunStatus(Status.STOPPED, f"{logged.reason}; the logs meet {first.rule} earlier, at step "
                             f"{first.evaluated.step}", logged.evidence + first.evaluated.evidence, by=logged.by)
        return logged
    if logged.status == Status.INTERRUPTED:
        return logged  # completed, unknown, or stopped by the training loop: the rule is what stopped it
    went_on = "; the run itself went on to its end" if logged.status == Status.COMPLETED else ""
    return RunStatus(Status.STOPPED, f"stop rule {first.rule} fired: {first.evaluated.reason}{went_on}",
                     first.evaluated.evidence + logged.evidence, by=STOPPED_BY_RULE)


def meets(value: float, threshold: float, direction: str) -> bool:
    return value >= threshold if direction == "higher" else value <= threshold


def comparison(direction: str) -> str:
    """How `meets` compares, as the verdicts say it."""
    return ">=" if direction == "higher" else "<="


def _final_evaluation(evaluations: list[Evaluation], metric: str) -> Evaluation | None:
    with_metric = [e for e in evaluations if metric in e.metrics]
    # Formats without times (trainer_state.json) are ordered by step alone.
    return max(with_metric, key=lambda e: (e.at is not None, e.at or datetime.min, e.step, e.evidence)) if with_metric else None


def final_values(plan: Plan, campaign: Campaign) -> dict[str, Evaluation]:
    """Each training run's final evaluation of the quality metric, its evaluation runs' included:
    the value the runs table shows beside the run (the verdicts decide which runs count)."""
    evaluated_by = campaign.evaluated_by()
    of_run = by_run(campaign.evaluations)  # grouped once: not every evaluation scanned per run
    out = {}
    for run_id, run in campaign.runs.items():
        if run.kind != RunKind.TRAINING:
            continue
        own = [e for r in (run_id, *evaluated_by.get(run_id, [])) for e in of_run.get(r, [])]
        final = _final_evaluation(own, plan.quality.metric)
        if final is not None:
            out[run_id] = final
    return out


def _drop_decision(variant_id: str, decisions: list[LoggedDecision]) -> LoggedDecision | None:
    drops = [d for d in decisions if d.variant == variant_id and d.decision in DROP_DECISIONS]
    return min(drops, key=lambda d: d.at) if drops else None


def variant_results(plan: Plan, campaign: Campaign, run_variants: dict[str, str | None],
                    statuses: dict[str, RunStatus], ledger: Ledger) -> list[VariantResult]:
    """R1/R10: a variant passes on the final evaluation of a run that reached its end (completed, or
    stopped by its own training loop), its evaluation runs' values included; runs stopped by a rule
    never pass. A variant is `stopped` only when the ledger names a stop of its runs, and
    `not_evaluated` when no run of it that reached its end carries a value of the quality metric."""
    quality = plan.quality
    results = []
    evaluated_by = campaign.evaluated_by()
    for variant in plan.variants:
        run_ids = [r for r, v in run_variants.items() if v == variant.id and campaign.runs[r].kind == RunKind.TRAINING]
        drop = _drop_decision(variant.id, campaign.decisions)
        ended = [r for r in run_ids if statuses[r].status == Status.COMPLETED
                 or (statuses[r].status == Status.STOPPED and not statuses[r].stopped_by_rule)]
        counted = {r: r for r in run_ids} | {e: r for r in run_ids for e in evaluated_by.get(r, [])}
        evaluations = [e for e in campaign.evaluations if e.run in counted]
        final = _final_evaluation([e for e in evaluations if counted[e.run] in ended], quality.metric)
        shown = final or _final_evaluation(evaluations, quality.metric)
        value = shown.metrics[quality.metric] if shown else None
        evidence = [shown.evidence] if shown else []
        op = comparison(quality.direction)
        stops = [s for r in run_ids for s in ledger.for_run(r)]
        if final is None and drop:  # R3: dropped at a decision point, not failed
            verdict, reason = VariantVerdict.DROPPED, f"dropped at {drop.point}: {drop.reason or drop.decision}"
            evidence = evidence + [drop.evidence]
        elif not run_ids:
            verdict, reason = VariantVerdict.NOT_RUN, "no run of this variant was found in the logs"
        elif final is None and stops:
            verdict = VariantVerdict.STOPPED
            reason = "; ".join(f"{s.run}: {s.rule or 'stop'} ({s.reason})" for s in stops)
            evidence = evidence + [e for s in stops for e in s.evidence]
        elif final is None:
            verdict = VariantVerdict.NOT_EVALUATED
            how = "; ".join(f"{r}: {statuses[r].status}" for r in run_ids)
            reason = (f"no run of it that reached its end carries a value of {quality.metric} ({how})" if ended or shown
                      else f"no run of it reached its end with a value of {quality.metric} ({how})")
            evidence = evidence + [e for r in run_ids for e in statuses[r].evidence]
        elif not math.isfinite(value):
            verdict, reason = VariantVerdict.FAILED, f"final {quality.metric} is {value}"
        elif variant.role == "control":
            verdict = VariantVerdict.BASELINE
            reason = (f"final {quality.metric} {value:.4g}, itself {op} {quality.threshold:g}: the threshold does not "
                      "separate the variants from the control" if meets(value, quality.threshold, quality.direction)
                      else f"final {quality.metric} {value:.4g}: the baseline the variants are compared with")
        elif meets(value, quality.threshold, quality.direction):
            shown, limit = compared(value, quality.threshold)
            verdict, reason = VariantVerdict.PASSED, f"final {quality.metric} {shown} {op} {limit}"
        else:
            shown, limit = compared(value, quality.threshold)
            verdict, reason = VariantVerdict.FAILED, f"final {quality.metric} {shown} is not {op} {limit}"
        results.append(VariantResult(variant, verdict, reason, run_ids, value, evidence))
    return results


JUDGED = (VariantVerdict.PASSED, VariantVerdict.FAILED)  # final values of runs that reached their end


def _best(results: list[VariantResult], direction: str) -> VariantResult | None:
    """The result with the best finite value; ties go to the first by name."""
    scored = [r for r in results if r.value is not None and math.isfinite(r.value)]
    if not scored:
        return None
    sign = 1 if direction == "higher" else -1
    return min(scored, key=lambda r: (-sign * r.value, r.variant.id))


def _with_unit(text: str, unit: str | None) -> str:
    return f"{text} {unit}" if unit else text


def answer(plan: Plan, results: list[VariantResult], verdict: Verdict,
           passed_deliverables: dict[str, list[str]] | None = None) -> Answer:
    """One sentence for the top of the report: the best variant's final value against the control's,
    the difference with its sign, the threshold, and what to use or what was ruled out.

    Only variants judged on a run that reached its end are compared (a stopped run's value is no
    result); with several controls the strongest baseline is the one to beat."""
    quality = plan.quality
    unit = quality.unit
    variants = [r for r in results if r.variant.role == "variant"]
    controls = [r for r in results if r.variant.role == "control"]
    control = _best([r for r in controls if r.verdict == VariantVerdict.BASELINE], quality.direction)
    passed = [r for r in variants if r.verdict == VariantVerdict.PASSED]
    best = _best(passed, quality.direction) or _best([r for r in variants if r.verdict in JUDGED], quality.direction)
    differences = {r.variant.id: number_difference(r.value, control.value)
                   for r in variants if control is not None and control.value is not None
                   and r.verdict in JUDGED and r.value is not None and math.isfinite(r.value)}
    difference = differences.get(best.variant.id) if best is not None else None
    ruled_out = [r.variant.id for r in variants if r.verdict in (VariantVerdict.FAILED, VariantVerdict.STOPPED)]
    threshold = f"the pass threshold ({quality.metric} {comparison(quality.direction)} {_with_unit(f'{quality.threshold:g}', unit)})"
    if control is None:
        the_control = "the control"
    elif len(controls) > 1:
        the_control = f"the strongest control, {control.variant.id},"
    else:
        the_control = "the control" if control.variant.id == "control" else f"the control {control.variant.id}"
    better = difference is not None and (difference > 0 if quality.direction == "higher" else difference < 0)
    # What the best variant did, said after its name: "beats the control on eval_rougeL, 0.334 against ...".
    if best is None:
        did = None
    elif difference is None:
        why = next((f" ({c.variant.id}: {c.verdict.replace('_', ' ')})" for c in controls), " (the plan has none)")
        did = f"reached {_with_unit(f'{best.value:.4g}', unit)} and no control has a final value to compare it with{why}"
    else:
        mine, theirs = compared(best.value, control.value)
        relation = "beats" if better else ("equals" if difference == 0 else "does not beat")
        change = "no difference" if difference == 0 else _with_unit(f"{difference:+.4g}", unit)
        did = (f"{relation} {the_control} on {quality.metric}, {_with_unit(mine, unit)} against "
               f"{_with_unit(theirs, unit)} ({change})")
    against = f"{best.variant.id} {did}" if best is not None and did is not None else None
    use = (passed_deliverables or {}).get(best.variant.id, []) if best is not None and passed else []
    if verdict.verdict == CampaignVerdict.POSITIVE and best is not None and (better or difference is None):
        sentence = f"Yes — {against}, and meets {threshold}."
        sentence += (f" Deliver from {best.variant.id}: {', '.join(use)}." if use
                     else f" No deliverable of {best.variant.id} passed its checks.")
    elif verdict.verdict == CampaignVerdict.POSITIVE and best is not None:
        sentence = (f"Not over the control — {best.variant.id} meets {threshold} but {did}: the threshold does not "
                    "separate the variants from the control.")
    elif verdict.verdict == CampaignVerdict.NEGATIVE:
        sentence = f"No — no variant meets {threshold}"
        sentence += f"; the best, {best.variant.id}, {did}." if did else "."
        if ruled_out:
            sentence += f" Ruled out at the settings tried: {', '.join(ruled_out)}."
    else:
        sentence = f"Not answered yet — {verdict.conclusion[0].lower()}{verdict.conclusion[1:]}"
        sentence = sentence.rstrip(".") + (f"; so far {against}." if against else ".")
    return Answer(sentence, best.variant.id if best else None, best.value if best else None,
                  control.variant.id if control else None, control.value if control else None,
                  difference, list(use), ruled_out, differences)


def campaign_verdict(plan: Plan, results: list[VariantResult],
                     passed_deliverables: dict[str, list[str]] | None = None) -> Verdict:
    """R1: a negative result (no variant meets the threshold) is a complete, valid conclusion.
    `passed_deliverables` names, per variant, its deliverables that passed: what to use."""
    verdict = _verdict(plan, results)
    return replace(verdict, answer=answer(plan, results, verdict, passed_deliverables))


def _verdict(plan: Plan, results: list[VariantResult]) -> Verdict:
    """R1: a negative result (no variant meets the threshold) is a complete, valid conclusion."""
    metric, threshold = plan.quality.metric, plan.quality.threshold
    op = comparison(plan.quality.direction)
    variants = [r for r in results if r.variant.role == "variant"]
    passed = [r for r in variants if r.verdict == VariantVerdict.PASSED]
    if passed:
        names = ", ".join(f"{r.variant.id} ({r.value:.4g})" for r in passed)
        return Verdict(CampaignVerdict.POSITIVE, f"{names} met {metric} {op} {threshold:g}.")
    required = [r for r in variants if r.variant.category == "required"]
    undecided = [r for r in required if r.verdict != VariantVerdict.FAILED]
    if required and not undecided:
        return Verdict(CampaignVerdict.NEGATIVE,
            f"No variant met {metric} {op} {threshold:g}: every required variant was evaluated and fell short. "
            "This answers the question: the variants tried do not reach the threshold.",
        )
    missing = ", ".join(f"{r.variant.id} ({r.verdict.replace('_', ' ')})" for r in undecided) or "no required variant"
    return Verdict(CampaignVerdict.INCONCLUSIVE, f"No variant met {metric} {op} {threshold:g}, and not every required variant was evaluated: {missing}.")
