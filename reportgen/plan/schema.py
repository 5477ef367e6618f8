"""The plan: what the user wrote before ordering (R1-R16), as typed models.

Every section SPEC.md lists is here, including the ones only later stages analyse, so that a
plan written today stays valid. Field descriptions become the shipped JSON Schema's help text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Literal, get_args

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

# Where a key is in the plan: ("variants", 0, "id"); plan.load maps each to the line that wrote it.
# Here, not in plan.load, so that the analysis names keys without importing a reader of files.
KeyPath = tuple[str | int, ...]


def format_key(path: KeyPath) -> str:
    """A key path as a user writes it: variants[0].id."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"

Category = Literal["required", "useful", "exploratory"]
Role = Literal["control", "variant"]
ResumePart = Literal["model", "optimizer", "scheduler", "scaler", "rng", "data_position", "progress"]
# Every part of a training state a checkpoint can hold, in the order reports show them (R11).
RESUME_PARTS: tuple[ResumePart, ...] = get_args(ResumePart)
StopKind = Literal["non_finite", "below_threshold", "truncation", "no_resume", "interrupted", "other"]
StepKind = Literal[
    "preparation",
    "data_check",
    "loading",
    "pilot",
    "training",
    "evaluation",
    "validation",
    "checkpoint",
    "resume_check",
    "outputs",
    "transfer",
    "analysis",
    "other",
]
DeliverableKind = Literal[
    "predictions",
    "adapter",
    "model",
    "metrics",
    "error_analysis",
    "parameters",
    "raw_measurements",
    "stop_reasons",
    "reload_procedure",
    "manifest",
    "other",
]

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
# What no campaign plan holds: figures past these are typing slips or hostile input, refused at their line.
MAX_DAYS = 3_660  # ten years of rental in one lot
MAX_HOURS = MAX_DAYS * 24.0
MAX_GPUS = 1_024
MAX_MONEY = 1e12
MAX_COUNT = 10**15  # items, steps
EARLIEST, LATEST = 1970, 2200  # years a lot may start in
MACHINE_RESOURCES = ("cpu",)
HUMAN_RESOURCE = "human"


class Section(BaseModel):
    """Base of every plan section: unknown keys are errors, values are not coerced silently."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class CampaignInfo(Section):
    id: str = Field(pattern=ID_PATTERN, description="Stable identifier of the campaign.")
    question: str = Field(min_length=1, description="The one question the campaign answers (Markdown).")
    end_condition: str = Field(
        min_length=1,
        description="When the campaign is finished, e.g. what is compared and delivered (R1, Markdown).",
    )
    notes: str | None = Field(None, description="Free text shown on the plan page (Markdown).")


class Corpus(Section):
    id: str = Field(min_length=1, description="Identifier of the fixed corpus every variant uses.")
    description: str | None = None
    size: int | None = Field(None, ge=1, le=MAX_COUNT, description="Number of items in the corpus, if known.")
    expected_ids: str | None = Field(
        None, description="File under LOGS listing the ids predictions must cover, one per line."
    )


class Quality(Section):
    metric: str = Field(min_length=1, description="Metric deciding whether a variant passes, e.g. eval_accuracy.")
    direction: Literal["higher", "lower"] = Field("higher", description="Whether higher or lower values are better.")
    threshold: float = Field(allow_inf_nan=False, description="A variant passes when its final value meets this threshold.")
    unit: str | None = Field(None, min_length=1, max_length=20, description="The metric's unit as the report should say it, e.g. '%' or 'points'.")


class Variant(Section):
    id: str = Field(pattern=ID_PATTERN)
    role: Role = Field(description="`control` isolates a cause; `variant` is what is being tried.")
    category: Category = Field(description="R2: required to conclude, useful if time allows, or exploratory.")
    description: str | None = None
    runs: list[str] = Field(
        default_factory=list,
        description="Glob patterns of run ids belonging to this variant (runs may also name it themselves).",
    )
    settings: dict[str, str | int | float | bool] | None = Field(
        None,
        description="What this variant sets, e.g. {rank: 16, precision: bf16}: shown on the plan page; "
        "variants covering every combination of two or more settings get a full-grid warning (R9).",
    )


class StopRule(Section):
    id: str = Field(pattern=ID_PATTERN)
    kind: StopKind
    description: str = Field(min_length=1, description="The rule as written before the trials (R10).")
    metrics: list[str] | None = Field(
        None,
        description="non_finite: metrics watched (default: every metric logged). truncation: counters of inputs "
        "cut (default: metrics named like truncated_inputs). `loss` also matches TensorBoard's `train/loss`.",
    )
    metric: str | None = Field(None, description="below_threshold: the metric checked (default: the quality metric).")
    threshold: float | None = Field(None, allow_inf_nan=False, description="below_threshold: the limit (default: the quality threshold).")
    after_step: int | None = Field(
        None, ge=0, le=MAX_COUNT, description="below_threshold: only evaluations at or after this step (default: every evaluation)."
    )
    variants: list[str] | None = Field(None, description="Variants the rule applies to (default: all).")


class ScheduleStep(Section):
    id: str = Field(pattern=ID_PATTERN)
    title: str | None = None
    kind: StepKind = Field("other", description="What the time is spent on; R4 warns when loading, validation or outputs are missing.")
    resource: str = Field(
        min_length=1,
        description="A GPU named in the order's lots, `cpu`, or `human` (R5: human time is not machine time).",
    )
    hours: float = Field(gt=0, le=MAX_HOURS, allow_inf_nan=False, description="Planned duration in hours.")
    depends_on: list[str] = Field(default_factory=list, description="Steps that must finish before this one starts.")
    category: Category = "required"
    variant: str | None = Field(None, description="Variant this step trains or evaluates, if any.")
    runs: list[str] = Field(
        default_factory=list,
        description="Glob patterns of run ids whose time is this step's actual time (when no step events exist).",
    )
    steps_per_second: float | None = Field(
        None,
        gt=0,
        le=1e9,
        allow_inf_nan=False,
        description="Planned training throughput in optimizer steps per second (33 s a step is 0.0303): "
        "the variance then shows measured against planned throughput as a cause.",
    )
    steps: int | None = Field(
        None,
        gt=0,
        le=10**12,
        description="Optimizer steps a full run of this step trains (3000), for runs whose logs name no total "
        "(a TensorBoard or console log of a training loop of one's own): the lot clock projects their steps left "
        "at their measured pace, and a run stopped early or never completed is measured against it.",
    )


class Schedule(Section):
    steps: list[ScheduleStep] = Field(min_length=1)


class DecisionPoint(Section):
    id: str = Field(pattern=ID_PATTERN)
    after: str = Field(description="Schedule step after which the decision is taken (R3).")
    question: str | None = None
    options: list[str] = Field(
        default_factory=lambda: ["continue", "drop_variant", "revisit_question"],
        description="Choices available at this point.",
    )


class CheckpointPolicy(Section):
    goal: Literal["resume_training", "inference_only"] = Field(
        "resume_training", description="R11: resume training, or only re-run inference."
    )
    interval_minutes: float | None = Field(None, gt=0, le=MAX_HOURS * 60, allow_inf_nan=False,
                                           description="Planned time between checkpoint saves.")
    required_state: list[ResumePart] = Field(
        default_factory=lambda: ["model", "optimizer", "scheduler", "progress"],
        description="R11: what a checkpoint must hold to count as resumable.",
    )
    reload_test: bool = Field(True, description="R12: reload an early checkpoint in a new process.")
    mean_hours_between_interruptions: float | None = Field(
        None, gt=0, le=MAX_HOURS * 100, allow_inf_nan=False, description="Assumed mean time between interruptions, used until one is observed (R12)."
    )
    location: str | None = Field(None, description="Where checkpoints are copied off the rented machine.")


class Deliverable(Section):
    id: str = Field(pattern=ID_PATTERN)
    kind: DeliverableKind
    variant: str | None = None
    corpus: str | None = Field(
        None, min_length=1,
        description="The corpus a predictions deliverable covers; default: the campaign's corpus. "
                    "A plan may ask for predictions on further corpora.",
    )
    category: Category = "required"
    description: str | None = None


class Lot(Section):
    label: str = Field(min_length=1, description="e.g. 'RTX 4090, 3 days'.")
    gpu: str = Field(min_length=1, description="GPU model, e.g. RTX 4090.")
    gpus: int = Field(1, ge=1, le=MAX_GPUS, description="GPUs in one lot (a B200 lot holds 2; its price is not doubled, R7).")
    gpu_names: list[str] | None = Field(
        None, description="Names schedule steps use as resource; default gpu0, gpu1, ... across lots."
    )
    days: int = Field(ge=1, le=MAX_DAYS, description="Length of the rented period in days.")
    price: float = Field(gt=0, le=MAX_MONEY, allow_inf_nan=False, description="Price of the whole lot (R7: lots, not hours).")
    currency: str | None = Field(None, description="Default: the order's currency.")
    order_ref: str | None = Field(None, description="The provider's order reference.")
    start: AwareDatetime = Field(description="Start of the rented window, with its time zone.")

    @field_validator("start")
    @classmethod
    def _a_real_date(cls, start: datetime) -> datetime:
        if not EARLIEST <= start.year < LATEST:
            raise ValueError(f"a lot starting in {start.year} is no rental; give its real start ({EARLIEST}-{LATEST})")
        return start


class OtherCost(Section):
    label: str = Field(min_length=1)
    amount: float = Field(ge=0, le=MAX_MONEY, allow_inf_nan=False)
    currency: str | None = None
    kind: Literal["included", "external"] = Field(
        description="`included`: billed with the order; `external`: outside the rental, kept apart (R13)."
    )
    note: str | None = None


class Order(Section):
    provider: str = "IteraGPU"
    currency: str = Field("USD", min_length=3, max_length=3)
    lots: list[Lot] = Field(min_length=1)
    other_costs: list[OtherCost] = Field(default_factory=list)


class CatalogueEntry(Section):
    label: str = Field(min_length=1)
    gpu: str
    gpus: int = Field(1, ge=1, le=MAX_GPUS)
    days: int = Field(ge=1, le=MAX_DAYS)
    price: float = Field(gt=0, le=MAX_MONEY, allow_inf_nan=False)
    currency: str | None = None


class Plan(Section):
    """A campaign plan (plan.yaml), written before the order and never rewritten (R16)."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        json_schema_extra={"$id": "https://reportgen.invalid/plan.schema.json", "title": "reportgen plan"},
    )

    campaign: CampaignInfo
    corpus: Corpus
    quality: Quality
    variants: list[Variant] = Field(min_length=1)
    stop_rules: list[StopRule] = Field(min_length=1, description="R10: written before the trials.")
    schedule: Schedule
    decision_points: list[DecisionPoint] = Field(default_factory=list)
    checkpoints: CheckpointPolicy = Field(default_factory=CheckpointPolicy)
    deliverables: list[Deliverable] = Field(default_factory=list)
    order: Order
    catalogue: list[CatalogueEntry] = Field(default_factory=list, description="Alternative lots for plan comparison (R8).")

    def gpu_names(self) -> list[str]:
        """Names of every rented GPU, in lot order."""
        return gpu_names((lot.gpus, lot.gpu_names) for lot in self.order.lots)


def gpu_names(lots: Iterable[tuple[int, list[str] | None]]) -> list[str]:
    """GPU names from (GPUs per lot, names given) pairs: the given names, else gpu0, gpu1, ... across lots."""
    names: list[str] = []
    for count, given in lots:
        if given is not None:
            names.extend(given)
        else:
            first = len(names)
            names.extend(f"gpu{first + i}" for i in range(count))
    return names


def json_schema() -> dict:
    """The JSON Schema shipped as plan.schema.json (editors validate plan.yaml with it)."""
    schema = Plan.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # regenerate the shipped file: python -m reportgen.plan.schema > reportgen/plan/plan.schema.json
    print(schema_text(), end="")
