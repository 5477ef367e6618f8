"""Per-run figures: wall-clock span, GPU time, resume chains, and configuration ids (R10)."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

from reportgen.analysis.nonfinite import NonFinite
from reportgen.analysis.schedule import hours_between, steps_of
from reportgen.analysis.status import RunStatus
from reportgen.model import (
    Campaign,
    Evaluation,
    Evidence,
    LogMessage,
    MessageKind,
    Problem,
    Run,
    RunKind,
    UnlinkedSource,
    WarningCode,
)
from reportgen.numbers import HOURS_DECIMALS, listed
from reportgen.plan.schema import Plan, ScheduleStep

# Config keys naming how many optimizer steps a full run takes.
TOTAL_STEP_KEYS = ("max_steps", "total_steps", "num_training_steps", "steps")
# Config keys that say how many GPUs one run used (a run on several GPUs costs them all).
GPU_COUNT_KEYS = ("gpus", "num_gpus", "n_gpu", "world_size", "devices")


@dataclass
class RunTime:
    """A run's wall-clock span and the GPU time it held, with how that was decided."""

    wall_hours: float | None
    gpus: int | None
    gpu_hours: float | None
    basis: str


def _gpu_count(run: Run) -> tuple[int, str]:
    """The GPUs a run held: the devices its training loop printed it ran on, else its config's count, else one.
    A machine's GPU count (W&B's metadata) is not used: a run may have seen GPUs it did not use."""
    printed = sorted((f.evidence, f.devices) for f in run.facts if f.devices)
    if printed:
        where, devices = printed[0]
        line = f" line {where.line}" if where.line else ""
        return devices, f"{devices} GPU(s), the devices its training loop ran on ({where.path}{line})"
    for key in GPU_COUNT_KEYS:
        value = (run.config or {}).get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value, f"{value} GPU(s) from the run's config '{key}'"
    return 1, "one GPU (the run's config names no GPU count)"


def _stated_hours(run: Run, messages: list[LogMessage]) -> tuple[float, str] | None:
    """Training time a source states when none logs clock times: the Trainer's train_runtime, or
    the elapsed time of the last progress bar of each process in a captured log."""
    stated = [f for f in run.facts if f.seconds is not None and f.seconds > 0]
    if stated:
        facts = max(stated, key=lambda f: (f.seconds or 0.0, f.evidence))
        return (facts.seconds or 0.0) / 3600.0, f"training time stated by {facts.evidence.path} (train_runtime)"
    last: dict[tuple[str, int], LogMessage] = {}
    for message in messages:
        if message.run == run.id and message.kind == MessageKind.PROGRESS and message.seconds is not None:
            last[(message.evidence.path, message.session)] = message
    if not last:
        return None
    paths = ", ".join(sorted({path for path, _ in last}))
    return sum(m.seconds or 0.0 for m in last.values()) / 3600.0, f"elapsed time of the progress bar in {paths}"


def run_time(run: Run, plan: Plan, messages: list[LogMessage]) -> RunTime:
    """GPU time = wall-clock span x GPUs, for runs on a GPU; runs the plan puts on cpu hold none.

    With no clock times in any source, the training time a source states stands in for the span,
    and the basis says that loading and work outside the training loop are not in it.
    """
    end = run.ended_at or run.last_seen_at
    wall = hours_between(run.started_at, end) if run.started_at and end and end >= run.started_at else None
    steps = [s for s in plan.schedule.steps if any(fnmatch.fnmatchcase(run.id, p) for p in s.runs)]
    gpu_names = set(plan.gpu_names())
    if steps and not any(s.resource in gpu_names for s in steps):
        where = ", ".join(sorted({s.resource for s in steps}))
        return RunTime(wall, None, None, f"the plan runs it on {where}, not on a rented GPU")
    gpus, how = _gpu_count(run)
    if wall is None:
        stated = _stated_hours(run, messages)
        if stated is None:
            why = "no source logs times for this run" if run.started_at is None else "no end or last-seen time"
            return RunTime(None, None, None, f"unknown: {why}")
        hours, basis = stated
        return RunTime(hours, gpus, hours * gpus,
                       f"{basis}; no source logs clock times, so time outside the training loop is not counted; on {how}")
    span = "start to end" if run.ended_at else "start to the last thing logged (no end was logged)"
    return RunTime(wall, gpus, wall * gpus, f"wall-clock {span}, on {how}")


@dataclass(frozen=True)
class Machine:
    """Where a run ran, as its sources record it: the host, the GPU model, the GPUs the machine showed,
    the devices the training loop ran on, and the process's exit code; each from the first source
    (in evidence order) that records it."""

    host: str | None
    gpu: str | None
    gpu_count: int | None
    devices: int | None
    exit_code: int | None
    evidence: tuple[Evidence, ...]


MACHINE_FIELDS = ("host", "gpu", "gpu_count", "devices", "exit_code")


def machine(run: Run) -> Machine | None:
    """The machine facts of one run; None when no source records any."""
    found: dict[str, object] = {}
    evidence: list[Evidence] = []
    for facts in sorted(run.facts, key=lambda f: f.evidence):
        for name in MACHINE_FIELDS:
            if name not in found and (value := getattr(facts, name)) is not None:
                found[name] = value
                if facts.evidence not in evidence:
                    evidence.append(facts.evidence)
    if not found:
        return None
    return Machine(**{name: found.get(name) for name in MACHINE_FIELDS}, evidence=tuple(evidence))  # type: ignore[arg-type]


@dataclass(frozen=True)
class GpuTime:
    """GPU time per run status against the GPU time rented (R5, R10): interrupted runs cost too.

    Training runs are counted under their status; an evaluation run trained nothing, so its time
    is a line of its own ("evaluation"). Runs with no measured time are named, not counted as zero.
    Each run counts with its GPU hours as reported, so the runs' figures add up to the totals shown."""

    rented_gpu_hours: float
    by_status: dict[str, float]
    gpu_hours: float | None  # held by runs, all statuses; None when no run's time was measured
    busy_fraction: float | None  # gpu_hours over rented_gpu_hours (R5); None when either is unknown or zero
    without_gpu_time: list[str]
    training_runs_by_status: dict[str, int]
    evaluation_runs: int


def gpu_time(plan: Plan, campaign: Campaign, order: list[str], statuses: dict[str, RunStatus],
             times: dict[str, RunTime]) -> GpuTime:
    rented = sum(lot.gpus * lot.days * 24.0 for lot in plan.order.lots)
    by_status: dict[str, float] = {}
    counts: dict[str, int] = {}
    unmeasured = []
    for run_id in order:
        training = campaign.runs[run_id].kind == RunKind.TRAINING
        if training:
            counts[statuses[run_id].status] = counts.get(statuses[run_id].status, 0) + 1
        held = times[run_id].gpu_hours
        if held is None:
            unmeasured.append(run_id)
            continue
        bucket = statuses[run_id].status if training else RunKind.EVALUATION
        by_status[bucket] = by_status.get(bucket, 0.0) + round(held, HOURS_DECIMALS)
    total = sum(by_status.values()) if by_status else None
    return GpuTime(
        rented_gpu_hours=rented,
        by_status=dict(sorted(by_status.items())),
        gpu_hours=total,
        busy_fraction=total / rented if total is not None and rented > 0 else None,
        without_gpu_time=unmeasured,
        training_runs_by_status=dict(sorted(counts.items())),
        evaluation_runs=sum(1 for run_id in order if campaign.runs[run_id].kind != RunKind.TRAINING),
    )


@dataclass(frozen=True)
class Unlinked:
    """A captured log (or a process in one) no evidence ties to a run, with the messages it holds."""

    source: UnlinkedSource
    messages: list[LogMessage]


def unlinked(campaign: Campaign) -> list[Unlinked]:
    out = []
    for item in campaign.unlinked:
        lo, hi = item.lines or (1, None)
        said = [m for m in campaign.messages if m.run is None and m.evidence.path == item.path
                and m.evidence.line is not None and lo <= m.evidence.line and (hi is None or m.evidence.line <= hi)]
        out.append(Unlinked(item, said))
    return out


@dataclass(frozen=True)
class RunsReport:
    """The runs section: each run's variant, status, time, machine and continuations, in chain order."""

    order: list[str]  # by start time, each continuation right after the run it resumes
    variants: dict[str, str | None]
    statuses: dict[str, RunStatus]
    times: dict[str, RunTime]
    continued_by: dict[str, list[str]]
    evaluated_by: dict[str, list[str]]
    machines: dict[str, Machine | None]
    non_finite: dict[str, list[NonFinite]]
    gpu_time: GpuTime
    unlinked: list[Unlinked]
    finals: dict[str, Evaluation] = field(default_factory=dict)  # each training run's final quality value


def continuations(campaign: Campaign) -> dict[str, list[str]]:
    """For each run, the runs that resume it (R11: a resumed run continues the one it resumes)."""
    out: dict[str, list[str]] = {}
    for run in campaign.runs.values():
        if run.resumes:
            out.setdefault(run.resumes, []).append(run.id)
    return out


def chain_order(campaign: Campaign, continued_by: dict[str, list[str]]) -> list[str]:
    """Run ids in the order they started (then by name; runs with no start time last), each followed by
    the runs that resume it (R11: a continuation, not a new run)."""
    runs = campaign.runs
    ordered: list[str] = []

    def place(run_id: str) -> None:
        if run_id in ordered:
            return
        ordered.append(run_id)
        for child in sorted(continued_by.get(run_id, []), key=started):
            place(child)

    def started(run_id: str) -> tuple:
        at = runs[run_id].started_at
        return (at is None, at.timestamp() if at is not None else 0.0, run_id)

    for run_id in sorted(runs, key=started):
        parent = runs[run_id].resumes
        if parent is None or parent not in runs or parent == run_id:
            place(run_id)
    for run_id in sorted(runs):  # a cycle of resumes has no root: keep every run anyway
        place(run_id)
    return ordered


def chain(run_id: str, campaign: Campaign) -> list[str]:
    """The run and every run it continues, oldest first."""
    ids: list[str] = []
    current: str | None = run_id
    while current is not None and current not in ids:
        ids.append(current)
        run = campaign.runs.get(current)
        current = run.resumes if run is not None else None
    return ids[::-1]


def config_problems(campaign: Campaign, run_variants: dict[str, str | None]) -> list[Problem]:
    """One configuration under several ids is fine within a variant (repeats), not across variants."""
    by_config: dict[str, list[str]] = {}
    for run_id, run in campaign.runs.items():
        if run.config_id is not None:
            by_config.setdefault(run.config_id, []).append(run_id)
    problems: list[Problem] = []
    for config, run_ids in sorted(by_config.items()):
        variants = sorted({v for r in run_ids if (v := run_variants.get(r)) is not None})
        if len(variants) > 1:
            run = campaign.runs[run_ids[0]]
            where = run.start_evidence or (Evidence(run.sources[0]) if run.sources else None)
            of_variant = "; ".join(f"{variant}: {listed([r for r in run_ids if run_variants.get(r) == variant])}"
                                   for variant in variants)
            message = (f"{len(run_ids):,} runs have the same configuration ({config}) but belong to different "
                       f"variants ({of_variant}): the variants do not differ in what was run")
            problems.append(Problem.at(where, message, WarningCode.SAME_CONFIG_ACROSS_VARIANTS))
    return problems


def total_steps(run: Run, step: ScheduleStep | None = None) -> tuple[int, str] | None:
    """How many steps a full run takes, from every source that names it: a Trainer's trainer_state.json,
    Lightning hyperparameters, MLflow parameters (strings), the run's own config; else the `steps` the plan
    gives `step`, the run's step (a log of a training loop that names no total). With where it is said: a
    config's key, or a phrase that says where ("max_steps in trainer_state.json")."""
    stated = sorted(((f.max_steps, f.evidence) for f in run.facts if f.max_steps), key=lambda s: (s[1], s[0]))
    if stated:
        return stated[0][0], f"max_steps in {stated[0][1].path}"
    config = run.config or {}
    for where in ("", "hparams.", "params."):
        source = config.get(where.rstrip(".")) if where else config
        if not isinstance(source, dict):
            continue
        for key in TOTAL_STEP_KEYS:
            value = _steps(source.get(key))
            if value is not None:
                return value, where + key
    if step is not None and step.steps:
        return step.steps, f"the steps of {step.id} in the plan"
    return None


def plan_total_steps(run: Run, plan: Plan) -> tuple[int, str] | None:
    """total_steps of a run, the plan's `steps` taken from the first of the run's steps (steps_of) that gives them."""
    return total_steps(run, next((s for s in steps_of(plan, run.id) if s.steps), None))


def told(source: str) -> str:
    """Where a run's total of steps is said (total_steps), as a text reads it."""
    return source if " in " in source else f"its config's {source}"


def _steps(value: object) -> int | None:
    """A positive whole number of steps, also as MLflow writes every parameter: a string."""
    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            return None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None
