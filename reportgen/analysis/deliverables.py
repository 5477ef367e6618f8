"""Which deliverables passed their checks, which are duplicates, and what each passed output cost (R13-R15).

The file-level checks come from reportgen.verify; here the plan and the runs add theirs: the
producing run neither stopped nor interrupted (R10) and the variant met the quality threshold.
A passed output is a passed `predictions` deliverable; the same variant and corpus delivered
again (timing repeats) or identical content counts once (R14). The rental divided by the passed
outputs is the cost per passed output, undefined — never zero — when none passed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from reportgen.analysis.checkpoints import Location, Place, locate
from reportgen.analysis.status import RunStatus
from reportgen.analysis.verdicts import VariantResult, VariantVerdict, comparison, meets
from reportgen.model import Campaign, DeliverableCheck, Evidence, Status, same_path
from reportgen.numbers import compared
from reportgen.plan.schema import OtherCost, Plan

OUTPUT_KIND = "predictions"


@dataclass
class DeliverableResult:
    check: DeliverableCheck
    passed: bool
    reasons: list[str]
    duplicate_of: str | None = None
    planned: bool = False
    location: Location | None = None
    below_passing: str | None = None  # the control's output: delivered for comparison, below the threshold
    corpus: str | None = None  # the corpus its predictions cover: the manifest's word, else the plan's

    @property
    def id(self) -> str:
        return self.check.entry.id

    @property
    def sha256(self) -> str | None:
        """The content digest of the deliverable's first hashed file."""
        return next((f.sha256 for f in self.check.files if f.sha256), None)

    @property
    def counts(self) -> bool:
        """A passed output in the R14 sense: a deliverable the plan names, passed, a complete corpus of
        predictions, not a repeat. Outputs the plan never asked for do not lower the cost per output."""
        return (self.passed and self.planned and self.below_passing is None and self.check.entry.kind == OUTPUT_KIND
                and self.duplicate_of is None)


@dataclass(frozen=True)
class Costs:
    """The costs section (R13, R14): the confirmed rental (the lots' prices), the other costs as the
    plan gives them, and the rental over the passed outputs, undefined (never zero) when none passed."""

    currency: str
    rental: float  # the confirmed total: the lots' prices summed
    included: float  # other costs billed with the order, summed
    passed_outputs: int
    per_output: float | None
    per_output_with_included: float | None
    undefined_reason: str | None
    rejections: list[tuple[str, list[str]]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # planned deliverables the manifest does not list
    other_included: list[OtherCost] = field(default_factory=list)
    external: list[OtherCost] = field(default_factory=list)  # kept apart from the rental (R13)
    counted: list[str] = field(default_factory=list)  # the passed outputs, by deliverable id
    excluded: list[tuple[str, str]] = field(default_factory=list)  # passed, but not a passed output: why


def judge(plan: Plan, campaign: Campaign, checks: list[DeliverableCheck], statuses: dict[str, RunStatus],
          variants: list[VariantResult], deadline: datetime) -> list[DeliverableResult]:
    """Each deliverable's verdict; `deadline` is the end of the last lot, for where its files are."""
    by_variant = {v.variant.id: v for v in variants}
    planned = {d.id: d for d in plan.deliverables}
    op = comparison(plan.quality.direction)
    results = []
    listed: dict[str, Evidence] = {}
    for check in checks:
        entry = check.entry
        reasons = list(check.reasons) + [r for f in check.files for r in f.reasons]
        below = None
        if entry.id in listed:  # two manifests naming one deliverable: the first stands
            first = listed[entry.id]
            reasons.append(f"deliverable {entry.id} is listed again (first at {first.path}"
                           f"{f':{first.line}' if first.line else ''}): one id, one output")
        listed.setdefault(entry.id, entry.evidence)
        asked = planned.get(entry.id)
        corpus = entry.corpus
        if asked is not None:
            other_variant = None not in (asked.variant, entry.variant) and entry.variant != asked.variant
            if entry.kind != asked.kind or other_variant:
                reasons.append(f"the plan's {entry.id} is {asked.kind.replace('_', ' ')}"
                               f"{f' of {asked.variant}' if asked.variant else ''}; the manifest lists "
                               f"{entry.kind.replace('_', ' ')}{f' of {entry.variant}' if entry.variant else ''}")
            if asked.kind == OUTPUT_KIND:
                wanted = asked.corpus or plan.corpus.id
                if entry.corpus is not None and entry.corpus != wanted:
                    reasons.append(f"covers corpus '{entry.corpus}'; the plan asks for '{wanted}'")
                corpus = corpus or wanted
        if entry.run is not None:
            status = statuses.get(entry.run)
            if status is None:
                reasons.append(f"produced by run '{entry.run}', which is not in the logs")
            elif status.status == Status.INTERRUPTED or status.stopped_by_rule:
                reasons.append(f"produced by run '{entry.run}', which was {status.status} ({status.reason}): "
                               "not an approved result")
        if entry.variant is not None:
            result = by_variant.get(entry.variant)
            if result is None:
                reasons.append(f"names variant '{entry.variant}', which the plan does not have")
            elif result.verdict == VariantVerdict.BASELINE:
                if not meets(result.value, plan.quality.threshold, plan.quality.direction):
                    shown, limit = compared(result.value, plan.quality.threshold)
                    below = (f"the control's output, the baseline ({shown}), below the passing level "
                             f"{plan.quality.metric} {op} {limit}")
            elif result.verdict != VariantVerdict.PASSED:
                shown, limit = (compared(result.value, plan.quality.threshold) if isinstance(result.value, float)
                                else (None, f"{plan.quality.threshold:g}"))
                reasons.append(f"variant {entry.variant} did not meet {plan.quality.metric} {op} {limit}: "
                               f"{result.verdict.replace('_', ' ')}{f' ({shown})' if shown else ''}")
        results.append(DeliverableResult(check, not reasons, reasons, planned=entry.id in planned,
                                         location=_location(check, campaign, deadline), below_passing=below,
                                         corpus=corpus))
    _mark_duplicates(results, plan.corpus.id)
    return results


def _location(check: DeliverableCheck, campaign: Campaign, deadline: datetime) -> Location:
    """A transfer logged for one of the deliverable's paths, else whether its files are under LOGS."""
    transfers = [op for op in campaign.checkpoint_ops
                 if op.op == "transfer" and op.path and any(same_path(op.path, p) for p in check.entry.paths)]
    present = bool(check.files) and all(f.exists for f in check.files)
    return locate(transfers, deadline, [check.entry.evidence] if present else [], Location(Place.MISSING))


def _mark_duplicates(results: list[DeliverableResult], plan_corpus: str) -> None:
    """Identical content, or the same kind, variant and corpus again, is one output (R14). Predictions
    that name no corpus are of the plan's fixed corpus: verify checks them against its ids. The
    deliverables the plan names are the originals, whatever the manifest's order."""
    first_by_content: dict[str, str] = {}
    first_by_subject: dict[tuple, str] = {}
    for result in sorted(results, key=lambda r: not r.planned):
        entry = result.check.entry
        digests = [f.sha256 for f in result.check.files if f.sha256]
        content = digests[0] if len(digests) == 1 and len(result.check.files) == 1 else None
        corpus = result.corpus if result.corpus is not None or entry.kind != OUTPUT_KIND else plan_corpus
        subject = (entry.kind, entry.variant, corpus) if corpus is not None else None
        original = (first_by_content.get(content) if content else None) or (first_by_subject.get(subject) if subject else None)
        if original is not None and result.passed:
            result.duplicate_of = original
            continue
        if result.passed:
            if content:
                first_by_content.setdefault(content, result.id)
            if subject:
                first_by_subject.setdefault(subject, result.id)


def _not_counted(result: DeliverableResult) -> str:
    """Why a passed deliverable is not a passed output (R14)."""
    if result.duplicate_of is not None:
        return f"the same output as {result.duplicate_of} (identical content, or its kind, variant and corpus again)"
    if result.below_passing is not None:
        return result.below_passing
    if result.check.entry.kind != OUTPUT_KIND:
        return f"of kind '{result.check.entry.kind}': only complete corpora of {OUTPUT_KIND} are outputs"
    return "not a deliverable of the plan: only outputs the plan set out to deliver are counted"


def costs(plan: Plan, results: list[DeliverableResult]) -> Costs:
    rental = round(sum(lot.price for lot in plan.order.lots), 2)
    included = round(sum(c.amount for c in plan.order.other_costs if c.kind == "included"), 2)
    passed = sum(1 for r in results if r.counts)
    listed = {r.id for r in results}
    missing = [d.id for d in plan.deliverables if d.id not in listed]
    rejections = [(r.id, r.reasons) for r in results if not r.passed]
    others = {"other_included": [c for c in plan.order.other_costs if c.kind == "included"],
              "external": [c for c in plan.order.other_costs if c.kind == "external"],
              "counted": [r.id for r in results if r.counts],
              "excluded": [(r.id, _not_counted(r)) for r in results if r.passed and not r.counts]}
    if passed:
        return Costs(plan.order.currency, rental, included, passed, round(rental / passed, 2),
                     round((rental + included) / passed, 2) if included else None, None, rejections, missing, **others)
    if not results:
        why = "no deliverables manifest lists what the campaign produced, so no output can pass its checks"
    elif not any(r.check.entry.kind == OUTPUT_KIND for r in results):
        why = "no predictions deliverable was listed, so no complete corpus was delivered"
    elif not (passed_predictions := [r for r in results if r.passed and r.check.entry.kind == OUTPUT_KIND]):
        why = "no predictions deliverable passed its checks (see the rejections)"
    elif all(r.below_passing is not None for r in passed_predictions):
        why = "only the control's predictions passed their checks, and they are the baseline, below the passing level"
    else:
        why = "the predictions that passed are not deliverables the plan names (see the excluded outputs)"
    return Costs(plan.order.currency, rental, included, 0, None, None, why, rejections, missing, **others)
