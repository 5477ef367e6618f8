"""Who is who: which sources are one run, which run continues which, what each captured log is about.

Readers describe sources: a Trainer output folder, a Lightning version folder, an MLflow run, a
TensorBoard folder outside every run folder, a native run id, a captured log. This stage decides,
from evidence only, which sources are one run (merged), which runs trained no step (kind
`evaluation`) and which training run each evaluates, which run continues which (`resumes`), and
which run each captured log outside every run folder belongs to. Every decision is a `Decision`
on the run with its rule and evidence (run page, `reportgen inspect`, report.json); what no
evidence ties to a run is left apart and listed. Name order, version order and "the first step is
past 0" are never evidence. The rules are listed in docs/formats.md ("Which files are one run").
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import PurePosixPath

import numpy as np
import pandas as pd

from reportgen.ingest.common import PROGRESS_KEYS
from reportgen.ingest.scan import Source, TextLog, path_ends_with, path_parts
from reportgen.ingest.textlog import FORMAT as TEXT_FORMAT
from reportgen.ingest.textlog import Session
from reportgen.model import (
    METRIC_FRAME_COLUMNS,
    Campaign,
    Checkpoint,
    Decision,
    Evidence,
    LogMessage,
    MessageKind,
    Problem,
    Run,
    RunEvent,
    RunFacts,
    RunKind,
    UnlinkedSource,
    WarningCode,
)
from reportgen.parallel import ordered_map, workers_for
from reportgen.recall import Recall, digest, each, frame_digests

# Configuration keys that name or place a run rather than configure it: two runs that differ only
# in these ran the same configuration (R10). Matched at any depth of the configuration.
NAMING_KEYS = frozenset({
    "output_dir", "logging_dir", "run_name", "resume_from_checkpoint", "project",
    "hub_model_id", "hub_token", "hub_revision", "push_to_hub_model_id", "push_to_hub_organization",
    "push_to_hub_token", "trackio_space_id", "trackio_bucket_id", "trackio_static_space_id",
    "save_dir", "log_dir", "default_root_dir", "dirpath", "ckpt_path", "experiment_name",
    "wandb_project", "wandb_run_name", "run_id",
})
# Values logged by two loggers of one run agree to float32 precision (TensorBoard keeps float32).
VALUE_RTOL = 1e-6
# Shared (step, metric) values it takes for two records to be one run's.
MIN_SHARED_VALUES = 3
# Two loggers of one process record a step within this of each other (the same call logs to both).
SAME_MOMENT_S = 2.0
# Preference for naming a merged run: the source a user named most directly first.
NAME_ORDER = ("reportgen-events", "hf-trainer", "lightning-csv", "wandb", "tensorboard", "mlflow-sqlite", "mlflow-files")


def plain_config(config: dict) -> dict:
    """The configuration without the keys that name or place a run (NAMING_KEYS), at any depth; keys as
    text (YAML gives `0:` a number key, and a number beside a text key cannot be sorted)."""
    return {str(k): plain_config(v) if isinstance(v, dict) else _text_keys(v) for k, v in config.items()
            if k not in NAMING_KEYS}


def _text_keys(value: object) -> object:
    """A value with every mapping's keys as text, inside lists too."""
    if isinstance(value, dict):
        return {str(k): _text_keys(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_text_keys(v) for v in value]
    return value


def config_id(config: dict) -> str:
    """A short stable hash of a run's configuration, naming keys left out (R10: a changed config needs a new id)."""
    canonical = json.dumps(plain_config(config), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def _leaves(config: dict, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in config.items():
        if key in NAMING_KEYS:
            continue
        if isinstance(value, dict):
            out.update(_leaves(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def config_differences(a: dict | None, b: dict | None) -> list[str] | None:
    """The configuration keys two runs both set to different values ([] when they agree), or None
    when they share no key to compare (a run whose configuration no source recorded, say)."""
    la, lb = _leaves(a or {}), _leaves(b or {})
    shared = sorted(set(la) & set(lb))
    if not shared:
        return None
    return [k for k in shared if json.dumps(_text_keys(la[k]), sort_keys=True, default=str)
            != json.dumps(_text_keys(lb[k]), sort_keys=True, default=str)]


def canonical_metric(metric: str) -> str:
    """One name for a metric as any logger spells it: TensorBoard's train/loss is loss, eval/loss eval_loss."""
    if metric.startswith("train/"):
        return metric[len("train/"):]
    if metric.startswith("eval/"):
        return "eval_" + metric[len("eval/"):]
    return metric


@dataclass
class _Trace:
    """What one source's (or run's) metric rows show."""

    values: dict[str, np.ndarray]  # canonical metric -> sorted unique (step << 32 | float32 bits) keys
    loggers: frozenset[str]  # formats of the files its rows came from
    first_step: int | None
    last_step: int | None
    t0: datetime | None
    t1: datetime | None
    trained: bool  # it has rows that are not evaluations
    timed_first_step: int | None  # the first step of its rows that carry clock times
    clock: tuple[np.ndarray, np.ndarray] = (np.empty(0, np.int64), np.empty(0, np.int64))  # steps, first time (ns)
    max_gap: int = 0  # the widest gap between two consecutive logged steps

    def timed(self) -> bool:
        return self.t0 is not None and self.t1 is not None


def _traces(frame: pd.DataFrame, formats: dict[str, str | None], values: bool = True, jobs: int = 1,
            recall: Recall | None = None, digests: Callable[[], dict[str, bytes]] | None = None) -> dict[str, _Trace]:
    """Each run's (or source's) trace, the runs shared among up to `jobs` workers; without `values`,
    only its steps, times and loggers (and `trained` is not worked out). With `recall`, the trace of a run
    whose rows are the same as at the last build is that build's; `digests` gives the frame's digests by run
    (recall.frame_digests) when the caller holds them (the campaign's, for its frame), else they are worked out.

    A metric's values are kept as (step, float32 bits) keys: two loggers of one run agree to float32
    precision (TensorBoard keeps float32), and a step may hold several values (a final evaluation
    logged again at the last step)."""
    if not len(frame):
        return {}
    metrics = [c for c in frame.columns if c not in METRIC_FRAME_COLUMNS]
    # Which metrics each run logged, counted once for the whole frame; only those are looked at per run.
    counts = frame.groupby("run", sort=True)[metrics].count() if values and metrics else None
    logged = counts.to_numpy() > 0 if counts is not None else None
    row = {run: at for at, run in enumerate(counts.index)} if counts is not None else {}

    def own(run: object) -> list[str]:
        return [m for m, yes in zip(metrics, logged[row[run]], strict=True) if yes] if logged is not None else []

    by_run = frame.groupby("run", sort=True)
    if recall is None and workers_for(jobs, by_run.ngroups) == 1:  # one group at a time: never a second copy of every row
        return {str(run): _trace(group, own(run), _loggers(group["path"].unique(), formats), values) for run, group in by_run}
    rows = by_run.indices
    codes, paths = pd.factorize(frame["path"], use_na_sentinel=False)  # each file once

    def files(run: object) -> Iterable[object]:
        """The files of a run's rows: their codes counted, not their paths compared."""
        return paths[np.bincount(codes[rows[run]], minlength=len(paths)).nonzero()[0]]

    entries = [(str(run), run, own(run), _loggers(files(run), formats)) for run in sorted(rows)]
    digests = ({} if recall is None else digests() if digests is not None else frame_digests(frame, "run"))

    def make(todo: list[tuple[str, object, list[str], frozenset[str]]]) -> list[_Trace]:
        groups = [(frame.take(rows[run]), mine, loggers) for _name, run, mine, loggers in todo]
        return ordered_map(lambda entry: _trace(entry[0], entry[1], entry[2], values), groups, jobs)

    traces = each(recall, "trace" if values else "steps", entries,
                  lambda entry: digest(digests[entry[0]], entry[2], entry[3]), make)
    return {name: trace for (name, *_), trace in zip(entries, traces, strict=True)}


def _loggers(paths: Iterable[object], formats: dict[str, str | None]) -> frozenset[str]:
    """The formats of the files a run's rows came from."""
    return frozenset(f for p in paths if (f := formats.get(str(p))))


def _distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values of an array of integers or of numbers without NaN, in order: np.unique's result,
    by sorting (np.unique hashes such arrays first, many times slower on a long run's keys)."""
    ordered = np.sort(values)
    return ordered[np.r_[True, ordered[1:] != ordered[:-1]]] if len(ordered) else ordered


def _trace(group: pd.DataFrame, own: list[str], loggers: frozenset[str], values: bool) -> _Trace:
    """One run's trace (see _traces), from its rows, the metrics it logged and the formats of its files."""
    steps = group["step"].to_numpy(dtype="float64", na_value=np.nan)
    logged: dict[str, np.ndarray] = {}
    training = (group["kind"] != "eval").to_numpy()
    trained = False
    for metric in own:
        column = group[metric]
        present = column.notna().to_numpy() & ~np.isnan(steps)
        if not present.any():
            continue
        # Rows that are not evaluations and measured something: a progress counter alone is not training.
        trained = trained or (metric not in PROGRESS_KEYS and bool((present & training).any()))
        v = column.to_numpy(dtype="float64", na_value=np.nan)[present]
        with np.errstate(over="ignore", invalid="ignore"):
            bits = np.where(np.isnan(v), np.float32(np.nan), v).astype(np.float32).view(np.uint32).astype(np.int64)
        bits[np.isnan(v)] = 0x7FC00000  # every NaN alike
        keys = (steps[present].astype(np.int64) << 32) | bits
        name = canonical_metric(str(metric))
        logged[name] = _distinct(np.concatenate([logged[name], keys]) if name in logged else keys)
    ts = group["ts"]
    timed = ts.notna().to_numpy()
    known = steps[~np.isnan(steps)]
    timed_steps = steps[timed & ~np.isnan(steps)]
    clock = (np.empty(0, np.int64), np.empty(0, np.int64))
    distinct = _distinct(known)
    if values and len(timed_steps):
        at = ts[timed & ~np.isnan(steps)].to_numpy(dtype="datetime64[ns]").astype(np.int64)
        order = np.lexsort((at, timed_steps))
        s_sorted, t_sorted = timed_steps[order].astype(np.int64), at[order]
        first = np.r_[True, s_sorted[1:] != s_sorted[:-1]]
        clock = (s_sorted[first], t_sorted[first])
    return _Trace(
        values=logged,
        loggers=loggers,
        first_step=int(known.min()) if len(known) else None,
        last_step=int(known.max()) if len(known) else None,
        t0=ts[timed].min().to_pydatetime() if timed.any() else None,
        t1=ts[timed].max().to_pydatetime() if timed.any() else None,
        trained=trained,
        timed_first_step=int(timed_steps.min()) if len(timed_steps) else None,
        clock=clock,
        max_gap=int(np.diff(distinct).max()) if len(distinct) > 1 else 0,
    )


@dataclass
class _Agreement:
    """How two records' shared (step, metric) points compare: the steps they agree and differ at."""

    agree: int
    differ: int
    agree_steps: list[int]
    differ_steps: list[int]

    def a_lost_tail(self) -> bool:
        """Every difference comes after every agreement: one record's process went on past a checkpoint,
        was cut, and the steps it lost were run again (the other record holds the rerun)."""
        return bool(self.agree_steps and self.differ_steps and self.agree_steps[-1] < self.differ_steps[0])


def _compare(a: _Trace, b: _Trace, stop_at_difference: bool = False) -> _Agreement:
    """A point agrees when the two records hold one value in common at that step and metric;
    `stop_at_difference` returns at the first metric that differs (when no difference is tolerated)."""
    agree = differ = 0
    agree_steps: set[int] = set()
    differ_steps: set[int] = set()
    for metric in sorted(set(a.values) & set(b.values)):
        ka, kb = a.values[metric], b.values[metric]
        agreeing = _distinct(np.intersect1d(ka, kb, assume_unique=True) >> 32)
        shared = np.intersect1d(_distinct(ka >> 32), _distinct(kb >> 32), assume_unique=True)
        differing = np.setdiff1d(shared, agreeing, assume_unique=True)
        agree += len(agreeing)
        differ += len(differing)
        agree_steps.update(int(s) for s in agreeing)
        differ_steps.update(int(s) for s in differing)
        if stop_at_difference and differ:
            break
    # A step where any metric differs is a differing step, though its schedule (epoch, learning rate) agrees.
    return _Agreement(agree, differ, sorted(agree_steps - differ_steps), sorted(differ_steps))


def _same_moments(a: _Trace, b: _Trace) -> tuple[int, float] | None:
    """(steps, median seconds apart) when both records time at least MIN_SHARED_VALUES common steps."""
    common, ia, ib = np.intersect1d(a.clock[0], b.clock[0], assume_unique=True, return_indices=True)
    if len(common) < MIN_SHARED_VALUES:
        return None
    return len(common), float(np.median(np.abs(a.clock[1][ia] - b.clock[1][ib]))) / 1e9


def _contains(path: str, folder: str) -> int:
    """How many parts of `folder` a path names: all of them, contiguous, or 0."""
    inner, outer = path_parts(folder), path_parts(path)
    if not inner:
        return 0
    for i in range(len(outer) - len(inner), -1, -1):
        if outer[i:i + len(inner)] == inner:
            return len(inner)
    return 0


def _span(steps: list[int]) -> str:
    if not steps:
        return ""
    return f"step {steps[0]:,}" if len(steps) == 1 else f"steps {steps[0]:,}–{steps[-1]:,}"


# --- merging sources into runs --------------------------------------------------------------

@dataclass
class _Pair:
    a: str
    b: str
    score: int
    text: str
    rule: str
    evidence: tuple[Evidence, ...]
    named_folder: bool = False  # an MLflow run's output_dir or logging_dir parameter names the folder


@dataclass
class Merged:
    """What merging decided: each source key's run id, the decisions per run, the evaluation runs."""

    renames: dict[str, str]
    containers: dict[str, str] = field(default_factory=dict)  # source key -> why it is not a run
    decisions: dict[str, list[Decision]] = field(default_factory=dict)
    evaluation: dict[str, Decision] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


def merge(campaign: Campaign, sources: dict[str, Source], notes: list[tuple[str, Decision]], jobs: int = 1,
          recall: Recall | None = None) -> Merged:
    """Decide which sources are one run and name each run; nothing is renamed here. `recall`: see _traces."""
    formats = {info.path: info.format for info in campaign.inputs}
    # Not the campaign's digests (Campaign.run_digests): this frame's runs are renamed next, in place.
    traces = _traces(campaign.metrics, formats, jobs=jobs, recall=recall)
    keys = sorted(set(sources) | set(traces))
    for key in keys:  # a key no reader described (a record naming a run no source has): a run of its own
        sources.setdefault(key, Source(key, "reportgen-events", key, Evidence(""), declared=True))
    checkpointed = {c.run for c in campaign.checkpoints}
    trained_for = {f.run for f in campaign.run_facts if f.seconds is not None}
    started = {e.run for e in campaign.run_events}
    evaluation: dict[str, Decision] = {}
    for key in keys:
        trace = traces.get(key)
        source = sources[key]
        if (trace is None or trace.trained or source.declared or key in checkpointed or key in trained_for
                or key in started):
            continue
        names = ", ".join(sorted(trace.values)[:6] or _metric_names(campaign.metrics, key)[:6])
        at = sorted({int(s) for keys in trace.values.values() for s in (keys >> 32).tolist()})
        where = f" at {_span(at)}" if at else " at no step"
        text = f"logged only evaluation metrics ({names}){where} and trained no step: an evaluation run"
        evaluation[key] = Decision("kind", "no-training-step", text, (source.evidence,))

    containers = _containers(keys, sources, traces)
    keys = [k for k in keys if k not in containers]
    configs = {f.run: f.config for f in campaign.run_facts if f.config}
    shared, dissolved = _share_checkpoint_folders(campaign, keys, sources, traces, configs)
    keys = [k for k in keys if k not in dissolved]
    pairs = _pairs(keys, sources, traces, set(evaluation), configs)
    groups = _union(keys, pairs, sources, traces, _process_spans(campaign, traces))
    merged = Merged(renames={}, containers=containers)
    _name(groups, sources, campaign, merged)
    for pair in pairs:
        run = merged.renames[pair.a]
        if run == merged.renames[pair.b]:
            merged.decisions.setdefault(run, []).append(Decision("merged", pair.rule, pair.text, pair.evidence))
    for key in keys:
        source = sources[key]
        run = merged.renames[key]
        if source.folder is not None:
            what = {"hf-trainer": "Trainer output folder", "lightning-csv": "Lightning version folder",
                    "wandb": "W&B run folder",
                    "tensorboard": "TensorBoard folder"}.get(source.format, "folder")
            text = f"the files of the {what} {source.folder or '.'}/ are one run"
            merged.decisions.setdefault(run, []).insert(0, Decision("merged", "run-folder", text, (source.evidence,)))
        elif source.declared and source.evidence.path:
            text = f"the native events name the run '{key}'"
            merged.decisions.setdefault(run, []).insert(0, Decision("merged", "declared", text, (source.evidence,)))
        if key in evaluation:
            merged.evaluation[run] = evaluation[key]
    for key, decision in [*notes, *shared]:
        merged.decisions.setdefault(merged.renames.get(key, key), []).append(decision)
    return merged


def _metric_names(frame: pd.DataFrame, key: str) -> list[str]:
    """The metrics a source's rows hold, rows without a step included."""
    rows = frame[frame["run"] == key]
    return sorted(str(c) for c in rows.columns if c not in METRIC_FRAME_COLUMNS and rows[c].notna().any())


def _share_checkpoint_folders(campaign: Campaign, keys: list[str], sources: dict[str, Source],
                              traces: dict[str, _Trace], configs: dict[str, dict]) -> tuple[list[tuple[str, Decision]], set[str]]:
    """A folder of Lightning checkpoints alone (ModelCheckpoint(dirpath=...) outside the version folder,
    shared by every process that saved there): each checkpoint goes to the one run that records the
    same configuration and logged training steps up to that checkpoint's step (within one logging
    interval). A folder whose checkpoints all went to runs is no run of its own; a checkpoint that
    fits no run, or several alike (a repeat of one configuration), stays with the folder's run."""
    decisions: list[tuple[str, Decision]] = []
    dissolved: set[str] = set()
    folders = [k for k in keys if sources[k].checkpoint_configs is not None]
    if not folders:
        return decisions, dissolved
    runs = [k for k in keys if sources[k].checkpoint_configs is None and k in traces and configs.get(k)]
    for key in folders:
        source = sources[key]
        own = [c for c in campaign.checkpoints if c.run == key]
        given: dict[str, list[Checkpoint]] = {}
        shared_by: dict[str, int] = {}
        for check in own:
            hparams = (source.checkpoint_configs or {}).get(check.path)
            if check.step is None or not hparams:
                continue
            fits = [k for k in runs if _covers(traces[k], check.step)
                    and config_differences({"hparams": hparams}, configs[k]) == []]
            chosen = _by_save_order(check, [traces[k] for k in fits], fits)
            if chosen is not None:
                given.setdefault(chosen, []).append(check)
                shared_by[chosen] = max(shared_by.get(chosen, 0), len(fits) - 1)
        for run, checks in sorted(given.items()):
            for check in checks:
                check.run = run
            trace = traces[run]
            names = ", ".join(PurePosixPath(c.path).name for c in checks)
            text = (f"{names} in {source.folder}/ (a checkpoint folder of its own) are this run's: the same "
                    f"configuration, and {_span(sorted(c.step or 0 for c in checks))} within the steps it logged "
                    f"({trace.first_step:,}–{trace.last_step:,}, every {max(trace.max_gap, 1)} at most)")
            if shared_by.get(run):
                text += (f"; {shared_by[run]} other runs of this configuration trained to the same steps: the files "
                         "are told apart by the -vN ModelCheckpoint adds to a name already taken, in the order the "
                         "runs ran")
            decisions.append((run, Decision("merged", "checkpoint-steps", text, tuple(c.evidence for c in checks))))
        if own and all(c.run != key for c in own):
            dissolved.add(key)
            campaign.run_facts = [f for f in campaign.run_facts if f.run != key]
    return decisions, dissolved


# ModelCheckpoint's suffix for a file name already taken: epoch=1-step=40-v1.ckpt.
_SAVE_SUFFIX = re.compile(r"-v(\d+)\.ckpt$")


def _by_save_order(check: Checkpoint, traces: list[_Trace], keys: list[str]) -> str | None:
    """Runs of one configuration that each trained to a checkpoint's step and saved into one folder:
    ModelCheckpoint names a file whose name is taken `<name>-v1.ckpt`, then `-v2`..., so the run that
    saved it is the one that ran second, third... — when every run keeps clock times and ran after the other."""
    suffix = _SAVE_SUFFIX.search(PurePosixPath(check.path).name)
    index = int(suffix.group(1)) if suffix else 0
    if len(keys) == 1:  # a -v1 file fitting one run was saved by a run that left no other record
        return keys[0] if index == 0 else None
    if not keys or not all(t.timed() for t in traces):
        return None
    order = sorted(zip(traces, keys), key=lambda item: item[0].t0)  # type: ignore[arg-type, return-value]
    if any(a.t1 >= b.t0 for (a, _ka), (b, _kb) in zip(order, order[1:])):  # type: ignore[operator]
        return None
    return order[index][1] if index < len(order) else None



def _covers(trace: _Trace, step: int) -> bool:
    """A run saved a checkpoint at `step` only if it trained to it: between its first logged step and
    one logging interval past its last (a cut process logs its last steps late, or never)."""
    if trace.first_step is None or trace.last_step is None or not trace.trained:
        return False
    return trace.first_step <= step <= trace.last_step + max(trace.max_gap, 1)


def _containers(keys: list[str], sources: dict[str, Source], traces: dict[str, _Trace]) -> dict[str, str]:
    """MLflow parent runs that logged no metric: a sweep's container for its nested runs, not a run."""
    children: dict[str, int] = {}
    for source in sources.values():
        if source.parent:
            children[source.parent] = children.get(source.parent, 0) + 1
    return {k: (f"the MLflow run '{sources[k].name}' ({sources[k].uuid}) holds {children[sources[k].uuid or '']} nested "
                "runs and logged no metric of its own: a container of runs, not a run")
            for k in keys if sources[k].uuid in children and k not in traces}


def _pairs(keys: list[str], sources: dict[str, Source], traces: dict[str, _Trace], evaluation: set[str],
           configs: dict[str, dict]) -> list[_Pair]:
    """Every pair of sources the evidence says are one run, strongest first."""
    empty = _Trace({}, frozenset(), None, None, None, None, False, None)
    out: list[_Pair] = []
    candidates = [k for k in keys if k not in evaluation]
    for i, a in enumerate(candidates):
        for b in candidates[i + 1:]:
            sa, sb = sources[a], sources[b]
            if sa.declared and sb.declared:
                continue
            ta, tb = traces.get(a, empty), traces.get(b, empty)
            la, lb = ta.loggers or {sa.format}, tb.loggers or {sb.format}
            if la & lb:
                continue  # one run has one record per logger
            pair = _pair(sa, sb, ta, tb, _same_config(configs.get(a), configs.get(b)))
            if pair is not None:
                out.append(pair)
    return sorted(out, key=lambda p: (-p.score, p.a, p.b))


def _named_folder(source: Source, other: Source) -> str | None:
    """The parameter of an MLflow run (or the configuration of a W&B run) that names the other source's
    run folder, if one does."""
    named = source.params or source.dirs
    if not named or other.folder is None:
        return None
    for key in ("output_dir", "logging_dir"):
        value = named.get(key)
        if value and _contains(value, other.folder):
            what = "parameter" if source.params else "configuration"
            return f"its {key} {what} ({value}) names {other.folder}/"
    return None


def _label(source: Source) -> str:
    if source.folder is not None:
        return f"{source.folder or '.'}/"
    if source.uuid is not None:
        return f"the MLflow run '{source.name}' ({source.uuid[:8]})"
    return f"'{source.name}'"


def _clocks_overlap(a: _Trace, b: _Trace) -> bool:
    return bool(a.timed() and b.timed() and a.t0 <= b.t1 and b.t0 <= a.t1)  # type: ignore[operator]


def _same_config(a: dict | None, b: dict | None) -> int:
    """How many configuration keys two sources both record, all equal (0 when any differs or none is shared)."""
    differs = config_differences(a, b)
    return len(set(_leaves(a or {})) & set(_leaves(b or {}))) if differs == [] else 0


def _same_first_steps(a: _Trace, b: _Trace) -> bool:
    """Every metric both log starts at the same step in both: the records of one process's loop."""
    shared = set(a.values) & set(b.values)
    return bool(shared) and all(int(a.values[m][0] >> 32) == int(b.values[m][0] >> 32) for m in shared)


def _version(source: Source) -> str | None:
    """A Lightning logger's version folder name (version_3): the loggers of one Trainer each name
    their folders as they are told, and number their versions alike."""
    return PurePosixPath(source.version_name).name if source.version_name else None


def _adjacent_versions(sa: Source, sb: Source) -> bool:
    """Two version folders side by side numbered one apart (version_0 and version_1): two loggers of one
    Trainer writing into one folder each take the next free number, one after the other."""
    if not (sa.version_name and sb.version_name and sa.folder and sb.folder):
        return False
    a, b = PurePosixPath(sa.folder), PurePosixPath(sb.folder)
    na, nb = (PurePosixPath(s.version_name or "").name.removeprefix("version_") for s in (sa, sb))
    return a.parent == b.parent and na.isdigit() and nb.isdigit() and abs(int(na) - int(nb)) == 1


def _pair(sa: Source, sb: Source, ta: _Trace, tb: _Trace, same_config: int = 0) -> _Pair | None:
    """The evidence that two sources are one run, if there is enough; the cheap ties are looked at
    first, so that two records are compared value by value only when something else ties them.
    `same_config` is how many configuration keys both record, all equal (0: none, or one differs)."""
    strong = _named_folder(sa, sb) or _named_folder(sb, sa)
    rule = "output-dir" if strong else ""
    if strong is None and (sa.params is not None or sb.params is not None or sa.declared or sb.declared):
        other = sb if sa.params is not None or sa.declared else sa
        this = sa if other is sb else sb
        if other.folder is not None and this.name == other.name:
            strong, rule = f"its run name is the name of {other.folder or '.'}/", "same-name"
    version = _version(sa) is not None and _version(sa) == _version(sb)
    if not (strong or version or (same_config and _adjacent_versions(sa, sb)) or _clocks_overlap(ta, tb)):
        return None
    moments = _same_moments(ta, tb)
    if moments is not None and moments[1] > SAME_MOMENT_S:
        return None  # both time the same steps, at other moments: two runs
    weak = None
    if version:
        weak = f"both are logger version {_version(sa)}"
    elif moments is not None:
        weak = f"both logged the same {moments[0]} steps at the same moments ({moments[1]:.2f} s apart at the median)"
    config_tie = None
    if same_config and not weak and not strong and _adjacent_versions(sa, sb) and _same_first_steps(ta, tb):
        config_tie = (f"they are the neighbouring versions {_version(sa)} and {_version(sb)} of one folder (two loggers "
                      f"of one Trainer take the next free number each), record the same configuration ({same_config} "
                      "keys) and log each metric from the same first step")
    agreement = _compare(ta, tb, stop_at_difference=rule != "output-dir")
    shared, steps = agreement.agree, agreement.agree_steps
    lost = ""
    if agreement.differ:
        # One run's loggers record the same values; only a process of it that was cut and rerun from a
        # checkpoint differs, after the steps both agree on, and only with the folder named.
        if not (rule == "output-dir" and agreement.a_lost_tail()):
            return None
        lost = (f"; they differ from step {agreement.differ_steps[0]:,} on: that process was cut after its last "
                "checkpoint and those steps were run again")
    evidence = (sa.evidence, sb.evidence)
    names = f"{_label(sa)} and {_label(sb)}"
    if shared >= MIN_SHARED_VALUES and (strong or weak or config_tie):
        because = "; ".join(x for x in (strong, weak, config_tie) if x)
        text = f"{names} are one run: {shared} values logged by both at {_span(steps)} are equal, and {because}{lost}"
        # A configuration is shared by every repeat of a run: the weakest second tie.
        score = 4 if strong else 3 if weak else 2
        return _Pair(sa.key, sb.key, score, text, "same-values", evidence, rule == "output-dir")
    if strong and shared == 0:
        return _Pair(sa.key, sb.key, 2, f"{names} are one run: {strong}", rule, evidence, rule == "output-dir")
    return None


def _process_spans(campaign: Campaign, traces: dict[str, _Trace]) -> dict[str, tuple[datetime, datetime]]:
    """When each source's process was seen, first to last: its timed rows and the start, end and last
    time its facts record."""
    times: dict[str, list[datetime]] = {}
    for key, trace in traces.items():
        if trace.timed():
            times.setdefault(key, []).extend([trace.t0, trace.t1])  # type: ignore[list-item]
    for facts in campaign.run_facts:
        times.setdefault(facts.run, []).extend(t for t in (facts.started_at, facts.ended_at, facts.last_seen_at) if t)
    return {key: (min(seen), max(seen)) for key, seen in times.items() if seen}


def _union(keys: list[str], pairs: list[_Pair], sources: dict[str, Source], traces: dict[str, _Trace],
           spans: dict[str, tuple[datetime, datetime]]) -> list[list[str]]:
    """Groups of sources, one per run: a pair joins two groups unless it would give one run two
    records of one logger, or one of its sources has two equally good partners of one kind."""
    parent = {k: k for k in keys}

    def find(k: str) -> str:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    def loggers(k: str) -> frozenset[str]:
        trace = traces.get(k)
        return trace.loggers if trace is not None and trace.loggers else frozenset({sources[k].format})

    def successive(a: str, b: str) -> bool:
        """Two records of one logger that are successive processes of one folder's run: MLflow (or W&B)
        runs the Trainer started before and after a restart into the same output_dir, one after the other."""
        named = all(sources[k].params is not None or sources[k].dirs is not None for k in (a, b))
        sa, sb = spans.get(a), spans.get(b)
        return named and sa is not None and sb is not None and (sa[1] < sb[0] or sb[1] < sa[0])

    best: dict[str, list[_Pair]] = {}
    for pair in pairs:
        for side in (pair.a, pair.b):
            best.setdefault(side, []).append(pair)
    ambiguous = set()
    for side, found in best.items():
        top = [p for p in found if p.score == found[0].score]
        partners = [p.b if p.a == side else p.a for p in top]
        for i, a in enumerate(partners):
            for b in partners[i + 1:]:
                alike = loggers(a) & loggers(b)
                together = all(p.named_folder for p in top)
                if alike and not (together and successive(a, b)):
                    ambiguous.add(side)
    members: dict[str, list[str]] = {k: [k] for k in keys}
    for pair in pairs:
        if pair.a in ambiguous or pair.b in ambiguous:
            continue
        ra, rb = find(pair.a), find(pair.b)
        if ra == rb:
            continue
        clash = [(x, y) for x in members[ra] for y in members[rb] if loggers(x) & loggers(y)]
        if any(not successive(x, y) for x, y in clash):
            continue
        parent[rb] = ra
        members[ra] += members.pop(rb)
    groups: dict[str, list[str]] = {}
    for k in keys:
        groups.setdefault(find(k), []).append(k)
    return [sorted(g) for _root, g in sorted(groups.items())]


def _name(groups: list[list[str]], sources: dict[str, Source], campaign: Campaign, merged: Merged) -> None:
    """Each run's id: the name its most directly named source proposes; a name two runs propose is
    kept apart by their folders, or by an MLflow run's uuid (with an R10 problem when the runs'
    parameters differ)."""
    started = {f.run: f.started_at for f in campaign.run_facts if f.started_at is not None}

    def naming(group: list[str]) -> Source:
        return min((sources[k] for k in group),
                   key=lambda s: (NAME_ORDER.index(s.format) if s.format in NAME_ORDER else len(NAME_ORDER), s.key))

    by_name: dict[str, list[tuple[Source, list[str]]]] = {}
    for group in groups:
        source = naming(group)
        by_name.setdefault(source.name, []).append((source, group))

    def order(claimant: tuple[Source, list[str]]) -> tuple:
        source = claimant[0]
        at = started.get(source.key)
        return (source.uuid is not None, at is None, at.timestamp() if at else 0.0, source.key)

    taken: set[str] = set()
    for name, claimants in sorted(by_name.items()):
        first_params: dict[str, str] | None = None
        folders = [s for s, _g in claimants if s.uuid is None]
        for source, group in sorted(claimants, key=order):
            if len(claimants) == 1 or (len(folders) == 1 and source is folders[0]):
                run = name
            elif source.uuid is None:
                run = source.folder if source.folder else name
            elif name not in taken:
                run, first_params = name, source.params or {}
            else:
                run = f"{name}-{source.uuid[:8]}"
                if first_params is not None and (source.params or {}) != first_params:
                    merged.problems.append(Problem.at(source.evidence, (
                        f"MLflow run name '{name}' is used again by run {source.uuid} with different parameters: "
                        f"a changed configuration needs a new run name; shown as '{run}'"), WarningCode.CONFIG_CHANGED))
            while run in taken:  # a folder path that is also another run's name
                run = f"{run} ({source.key})"
            taken.add(run)
            for key in group:
                merged.renames[key] = run


def rename(campaign: Campaign, renames: dict[str, str], texts: list[TextLog]) -> None:
    """Give every record the id of the run its source became."""
    if len(campaign.metrics) and renames:
        column = campaign.metrics["run"]
        codes, names = pd.factorize(column)  # each run id renamed once, not once a row
        renamed = np.array([renames.get(name, name) for name in names], dtype=object)
        campaign.metrics["run"] = pd.Series(renamed[codes], index=column.index, dtype=column.dtype)
    lists = (campaign.run_events, campaign.evaluations, campaign.checkpoint_ops, campaign.reload_tests,
             campaign.stops, campaign.run_facts, campaign.checkpoints, campaign.messages)
    for items in lists:
        for item in items:
            if item.run is not None:
                item.run = renames.get(item.run, item.run)
    for facts in campaign.run_facts:  # a reader that saw which source a run continues named its key
        if facts.resumes is not None and facts.resume_rule is not None:
            facts.resumes = renames.get(facts.resumes, facts.resumes)
    for text in texts:
        if text.owner is not None:
            text.owner = renames.get(text.owner, text.owner)


# --- after the runs are built: kinds, captured logs, continuations, evaluations -------------

def link(campaign: Campaign, merged: Merged, sources: dict[str, Source], texts: list[TextLog],
         recall: Recall | None = None) -> None:
    """Decide what needs whole runs: their kind, which run each captured log belongs to, which run
    continues which, and which training run each evaluation run evaluates. `recall`: see _traces."""
    runs = campaign.runs
    for run_id, run in runs.items():
        run.identity = list(merged.decisions.get(run_id, []))
        if run_id in merged.evaluation:
            run.kind = RunKind.EVALUATION
            run.identity.append(merged.evaluation[run_id])
    folders: dict[str, list[str]] = {}
    for key, source in sources.items():
        if source.folder is not None and key in merged.renames:
            folders.setdefault(merged.renames[key], []).append(source.folder)
    for check in campaign.checkpoints:  # a checkpoint folder of its own names the runs whose checkpoints it holds
        where = str(PurePosixPath(check.path).parent)
        if check.run in runs and where not in folders.setdefault(check.run, []) and where != ".":
            folders[check.run].append(where)
    for text in texts:  # a log in a run's folder is one of that run's sources, whether or not it says anything
        if text.owner in runs and text.path not in runs[text.owner].sources:
            runs[text.owner].sources.append(text.path)
    pending = _link_texts(campaign, texts, folders)
    _own_runs(campaign, pending, texts)
    if _continuations(campaign, recall):
        pending = _relink_by_values(campaign, pending)
    pending = _link_by_chain(campaign, pending)
    _evaluated_folders(campaign, folders)
    _attach_evaluations(campaign)
    for (text, session), reason in sorted(pending.items(), key=lambda item: (item[0][0].path, item[0][1].index)):
        lines = (session.first_line, session.last_line) if len(text.sessions) > 1 else None
        campaign.unlinked.append(UnlinkedSource(text.path, reason, lines))
    _printed_rows(campaign, texts)
    _console_setup(campaign, texts)
    for run in runs.values():
        run.formats = sorted(set(run.formats) | {f for f in _formats_of(campaign, run)})


def _printed_rows(campaign: Campaign, texts: list[TextLog]) -> None:
    """The metric rows a log printed (the Trainer's dicts) join the run each process went to, when no
    other file of that run logged metrics: the printed values are a copy, to the digits printed, of
    what a Trainer's own records hold, and only a run without such records needs them. Added after
    every identity decision, so no rule is decided by a log's copy of a run's values."""
    frame = campaign.metrics
    measured = set(frame["run"].unique()) if len(frame) else set()
    inputs = {info.path: info for info in campaign.inputs}
    added: list[pd.DataFrame] = []
    for text in texts:
        rows = text.metrics
        if rows is None or not len(rows):
            continue
        # Each row belongs to the last process started at or before its line.
        firsts = np.array([session.first_line for session in text.sessions])
        of_session = np.searchsorted(firsts, rows["line"].to_numpy(dtype="int64", na_value=0), side="right") - 1
        for index, part in rows.groupby(np.maximum(of_session, 0), sort=True):
            session = text.sessions[int(index)]
            run_id = text.owner or text.linked.get(session.index)
            if run_id is None or run_id not in campaign.runs:
                continue
            if run_id in measured:
                if text.path in inputs:
                    inputs[text.path].notes.append(f"its {len(part)} printed metric dicts are not {run_id}'s metric rows: "
                                                   "other files of the run logged its metrics")
                continue
            part = part.assign(run=run_id)
            added.append(part)
            if text.path in inputs:
                inputs[text.path].notes.extend(n for n in rows.attrs.get("notes", []) if n not in inputs[text.path].notes)
            run = campaign.runs[run_id]
            steps = part["step"].dropna()
            if len(steps) and rows.attrs.get("steps") != "order":  # the order they were printed in is no step span
                first, last = int(steps.min()), int(steps.max())
                run.first_step = first if run.first_step is None else min(run.first_step, first)
                run.last_step = last if run.last_step is None else max(run.last_step, last)
            stamps = part["ts"].dropna()
            if len(stamps) and run.started_at is None:
                run.started_at, run.start_evidence = stamps.min().to_pydatetime(), Evidence(text.path, session.first_line)
            if len(stamps) and run.ended_at is None:
                last_seen = stamps.max().to_pydatetime()
                run.last_seen_at = max(run.last_seen_at or last_seen, last_seen)
    if added:
        metrics = pd.concat([frame, *added] if len(frame) else added, ignore_index=True, sort=False)
        metrics["path"] = metrics["path"].astype(str)
        metrics["run"] = metrics["run"].astype(str)
        campaign.metrics = metrics.sort_values(["run", "step", "path", "line"], kind="mergesort", ignore_index=True)


def _console_setup(campaign: Campaign, texts: list[TextLog]) -> None:
    """What each process printed of its training set-up joins the run it went to, as that log's facts:
    the steps a full run takes, the devices it trained on, and whether its training bar reached those
    steps (completed: the Trainer planned N steps and drew step N)."""
    for text in texts:
        for session in text.sessions:
            run_id = text.owner or text.linked.get(session.index)
            setup = session.setup
            devices = setup.devices()
            if run_id not in campaign.runs or (setup.total_steps is None and devices is None):
                continue
            if devices is not None:
                facts = RunFacts(run=run_id, format=TEXT_FORMAT, evidence=Evidence(text.path, devices[0]), devices=devices[1])
                campaign.run_facts.append(facts)
                campaign.runs[run_id].facts.append(facts)
            if setup.total_steps is None:
                continue
            (line, total), last = setup.total_steps, session.last_step
            facts = RunFacts(run=run_id, format=TEXT_FORMAT, evidence=Evidence(text.path, line), max_steps=total)
            if last is not None and last >= total:
                facts.status = "completed"
                facts.reason = (f"the training loop drew step {last:,} of the {total:,} the Trainer planned "
                                f"(Total optimization steps, line {line})")
            elif last is not None:
                facts.reason = (f"its last training step is {last:,} of the {total:,} the Trainer planned "
                                f"(Total optimization steps, line {line}); nothing in it says why it stopped")
            campaign.run_facts.append(facts)
            campaign.runs[run_id].facts.append(facts)


def _formats_of(campaign: Campaign, run: Run) -> set[str]:
    formats = {info.path: info.format for info in campaign.inputs}
    return {f for p in run.sources if (f := formats.get(p))}


def _session_messages(text: TextLog, session: Session) -> list[LogMessage]:
    if len(text.sessions) == 1:
        return text.messages
    return [m for m in text.messages if m.session == session.index]


def _give(campaign: Campaign, text: TextLog, session: Session, run_id: str, decision: Decision) -> None:
    run = campaign.runs[run_id]
    text.linked[session.index] = run_id
    for message in _session_messages(text, session):
        message.run = run_id
    if text.path not in run.sources:
        run.sources.append(text.path)
    run.identity.append(decision)


def _where(text: TextLog, session: Session) -> str:
    return text.path if len(text.sessions) == 1 else f"{text.path} (lines {session.first_line}–{session.last_line})"


def _span_of(run: Run) -> tuple[datetime, datetime] | None:
    end = run.ended_at or run.last_seen_at
    return (run.started_at, end) if run.started_at is not None and end is not None else None


def _flat(config: dict | None) -> dict[str, list[object]]:
    """Every leaf of a configuration by its own key (hparams.width and params.width are both width)."""
    out: dict[str, list[object]] = {}

    def walk(value: object, key: str | None) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, str(k).rsplit(".", 1)[-1])
        elif key is not None:
            out.setdefault(key, []).append(value)

    walk(config or {}, None)
    return out


def _same_value(printed: object, configured: object) -> bool:
    if printed == configured and type(printed) is type(configured):
        return True
    try:
        return math.isclose(float(str(printed)), float(str(configured)), rel_tol=1e-9)
    except ValueError:
        return str(printed) == str(configured)


def _printed_matches(mapping: dict, run: Run) -> bool:
    flat = _flat(plain_config(run.config or {}))
    shared = [k for k in mapping if k in flat]
    return len(shared) >= 2 and all(any(_same_value(mapping[k], v) for v in flat[k]) for k in shared)


def _by_clock(session: Session, candidates: list[Run]) -> tuple[list[str], str, tuple[Evidence, ...]]:
    counts = {}
    for run in candidates:
        span = _span_of(run)
        if span is not None and session.times:
            # A printed time stands for the interval its digits leave open: 05:30:14,123 is 14.123-14.124.
            start = span[0] - timedelta(seconds=session.clock_resolution)
            counts[run.id] = sum(1 for t in session.times if start < t <= span[1] or t == span[0])
    top = max(counts.values(), default=0)
    if top == 0 or top * 2 < len(session.times):
        return [], "", ()
    best = sorted(r for r, n in counts.items() if n == top)
    text = f"{top} of its {len(session.times)} clock times lie within the run's logged span"
    return best, text, ()


def _by_path(session: Session, candidates: list[Run], folders: dict[str, list[str]],
             path: str) -> tuple[list[str], str, tuple[Evidence, ...]]:
    named: dict[str, tuple[int, str]] = {}
    for line, value in session.paths:
        for run in candidates:
            for folder in folders.get(run.id, []):
                if _contains(value, folder) and run.id not in named:
                    named[run.id] = (line, value)
    if not named:
        return [], "", ()
    hits = sorted(named)
    line, value = named[hits[0]]
    return hits, f"it names {value} (line {line}), inside the run's folder", (Evidence(path, line),)


def _by_version(session: Session, candidates: list[Run], folders: dict[str, list[str]],
                path: str) -> tuple[list[str], str, tuple[Evidence, ...]]:
    """Lightning's progress bar shows its first logger's version number (v_num): the run whose version
    folder has that number."""
    for line, number in session.versions:
        name = f"version_{number}"
        hits = sorted(r.id for r in candidates if any(PurePosixPath(f).name == name for f in folders.get(r.id, [])))
        if hits:
            return hits, f"its Lightning progress bar shows v_num {number} (line {line}), the logger version of {name}", (
                Evidence(path, line),)
    return [], "", ()


def _by_hparams(session: Session, candidates: list[Run], path: str) -> tuple[list[str], str, tuple[Evidence, ...]]:
    for line, mapping in session.mappings:
        hits = sorted(r.id for r in candidates if _printed_matches(mapping, r))
        if hits:
            shown = ", ".join(f"{k}={mapping[k]!r}" for k in list(mapping)[:4])
            return hits, f"the hyperparameters it prints at line {line} ({shown}) are the run's", (Evidence(path, line),)
    return [], "", ()


# Printed values that every run of one schedule shares: they tell runs apart only when they differ.
SCHEDULE_KEYS = frozenset({"learning_rate", "lr", "epoch", "step", "global_step"}) | PROGRESS_KEYS


@dataclass
class LoggedValues:
    """Every run's logged values, by canonical metric name, for matching printed values: per metric
    the values of all runs sorted together with the index of the run each came from."""

    runs: list[str]
    metrics: dict[str, tuple[np.ndarray, np.ndarray]]  # name -> (sorted values, run index of each)
    logs: dict[str, np.ndarray]  # name -> which runs logged it (a bool per run)

    def of(self, run: str, name: str) -> np.ndarray:
        """One run's values of one metric (for tests and checks)."""
        values, owners = self.metrics.get(name, (np.empty(0), np.empty(0, np.int64)))
        return values[owners == self.runs.index(run)] if run in self.runs else np.empty(0)


def logged_values(campaign: Campaign) -> LoggedValues:
    frame = campaign.metrics
    runs = sorted({str(r) for r in frame["run"].unique()}) if len(frame) else []
    index = {r: i for i, r in enumerate(runs)}
    parts: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    if len(frame):
        owner = frame["run"].astype(str).map(index).to_numpy(dtype=np.int64)
        for metric in (c for c in frame.columns if c not in METRIC_FRAME_COLUMNS):
            column = frame[metric].to_numpy(dtype="float64", na_value=np.nan)
            kept = np.isfinite(column)
            if kept.any():
                parts.setdefault(canonical_metric(str(metric)), []).append((column[kept], owner[kept]))
    metrics: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    logs: dict[str, np.ndarray] = {}
    for name, chunks in parts.items():
        values = np.concatenate([v for v, _o in chunks])
        owners = np.concatenate([o for _v, o in chunks])
        order = np.lexsort((owners, values))
        metrics[name] = (values[order], owners[order])
        logs[name] = np.bincount(owners, minlength=len(runs)) > 0
    return LoggedValues(runs, metrics, logs)


def _printed(session: Session) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """A session's printed values by canonical metric name: (values, tolerances, lines). (Names printed
    two ways, loss and train/loss, are one metric; the order of its values does not change a score.)"""
    by_name: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
    for name, (lines, values, halves) in session.values.columns.items():
        by_name.setdefault(canonical_metric(name), []).append(
            (np.frombuffer(values, np.float64), np.frombuffer(halves, np.float64), np.frombuffer(lines, np.int64)))
    out = {}
    for name, columns in by_name.items():
        values, halves, lines = (np.concatenate(parts) for parts in zip(*columns))
        # TensorBoard keeps float32: a value read back may differ from the printed one in its 7th digit.
        out[name] = (values, np.maximum(halves, np.abs(values) * 1e-6) * (1 + 1e-9), lines)
    return out


def _printed_scores(session: Session, logged: LoggedValues) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per run: (values that tell runs apart found, all found, not found, first line found). A printed
    value is found when the run logged that metric with a value that prints the same; one the run
    logged the metric of and no such value is not found."""
    n = len(logged.runs)
    told, found, missed = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
    first = np.full(n, np.iinfo(np.int64).max)
    for name, (values, tolerance, lines) in _printed(session).items():
        if name not in logged.metrics:
            continue
        held, owners = logged.metrics[name]
        lo = np.searchsorted(held, values - tolerance, side="left")
        hi = np.searchsorted(held, values + tolerance, side="right")
        counts = hi - lo
        hits = np.zeros(n, np.int64)
        if counts.sum():
            printed = np.repeat(np.arange(len(values)), counts)  # each (printed value, logged value) in reach
            at = np.repeat(lo, counts) + np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
            pairs = np.unique(printed * n + owners[at])  # a printed value found once per run
            run = pairs % n
            hits = np.bincount(run, minlength=n)
            np.minimum.at(first, run, lines[pairs // n].astype(np.int64))
        found += hits
        if name not in SCHEDULE_KEYS:
            told += hits
        missed += np.where(logged.logs[name], len(values), 0) - hits
    return told, found, missed, first


def _by_values(session: Session, candidates: list[Run], logged: LoggedValues,
               path: str) -> tuple[list[str], str, tuple[Evidence, ...]]:
    """The run whose logged values the session printed: at least MIN_SHARED_VALUES that tell runs apart
    (losses, norms, runtimes; not the learning rate or epoch), at most one in five not found, and
    fewer not found than any other run (a repeat of one configuration prints the same losses, but
    its own runtimes)."""
    if not session.values or not logged.runs:
        return [], "", ()
    told, found, missed, first = _printed_scores(session, logged)
    index = {r: i for i, r in enumerate(logged.runs)}
    scores = {}
    for run in candidates:
        i = index.get(run.id)
        if i is not None and told[i] >= MIN_SHARED_VALUES and missed[i] * 4 <= found[i]:
            scores[run.id] = (int(missed[i]), -int(found[i]), int(first[i]))
    if not scores:
        return [], "", ()
    best = min(score[:2] for score in scores.values())
    hits = sorted(r for r, score in scores.items() if score[:2] == best)
    not_found, shown = best[0], -best[1]
    line = scores[hits[0]][2]
    text = (f"{shown} of the {len(session.values)} values it prints (from line {line}) are the run's logged values"
            + (f", {not_found} are not" if not_found else ""))
    return hits, text, (Evidence(path, line),)


AMBIGUOUS = {"clock-times": "its clock times fit {runs} alike", "named-path": "it names the folders of {runs}",
             "logger-version": "its progress bar's v_num is the version of {runs} alike",
             "printed-hparams": "the hyperparameters it prints match {runs} alike",
             "printed-values": "the values it prints are those of {runs} alike"}


def _link_texts(campaign: Campaign, texts: list[TextLog], folders: dict[str, list[str]]) -> dict[tuple, str]:
    """Each session of a log outside every run folder goes to the one run its clock times, the paths
    it names or the hyperparameters it prints tie it to (in that order, each narrowing the last)."""
    pending: dict[tuple, str] = {}
    runs = [r for r in campaign.runs.values()]
    values = logged_values(campaign) if any(s.values for t in texts if t.owner is None for s in t.sessions) else None
    for text in texts:
        if text.owner is not None:
            continue
        for session in text.sessions:
            candidates = runs
            said: list[str] = []
            chosen: tuple[str, str, str, tuple[Evidence, ...]] | None = None
            for rule, found in (("clock-times", lambda c: _by_clock(session, c)),
                                ("named-path", lambda c: _by_path(session, c, folders, text.path)),
                                ("logger-version", lambda c: _by_version(session, c, folders, text.path)),
                                ("printed-hparams", lambda c: _by_hparams(session, c, text.path)),
                                ("printed-values", lambda c: _by_values(session, c, values, text.path) if values
                                 else ([], "", ()))):
                hits, why, evidence = found(candidates)
                if not hits:
                    continue
                if len(hits) == 1:
                    chosen = (hits[0], rule, why, evidence)
                    break
                said.append(AMBIGUOUS[rule].format(runs=" and ".join(hits)))
                candidates = [r for r in candidates if r.id in hits]
            if chosen is not None:
                run_id, rule, why, evidence = chosen
                decision = Decision("linked", rule, f"{_where(text, session)} is this run's log: {why}",
                                    (Evidence(text.path, session.first_line), *evidence))
                _give(campaign, text, session, run_id, decision)
            else:
                pending[(text, session)] = ("no evidence ties it to one run: " + "; ".join(said) if said else
                                            _nothing_ties(session))
    return pending


def _relink_by_values(campaign: Campaign, pending: dict[tuple, str]) -> dict[tuple, str]:
    """Once a continuation's copy of the records it inherited is given back to the run it continues,
    the values a process printed may tie it to one of the two runs that held them both."""
    values = logged_values(campaign)
    runs = list(campaign.runs.values())
    for text, session in list(pending):
        hits, why, evidence = _by_values(session, runs, values, text.path)
        if len(hits) == 1:
            decision = Decision("linked", "printed-values", f"{_where(text, session)} is this run's log: {why}",
                                (Evidence(text.path, session.first_line), *evidence))
            _give(campaign, text, session, hits[0], decision)
            del pending[(text, session)]
    return pending


def _nothing_ties(session: Session) -> str:
    """Why no rule tied a process's log to a run, by what it has."""
    has = []
    if session.times:
        has.append(f"its {len(session.times)} clock times fall in no run's logged span")
    if session.paths:
        has.append("the paths it names are in no run's folder")
    if session.mappings:
        has.append("the hyperparameters it prints are no run's")
    if session.values:
        has.append("the values it prints are no run's")
    return "; ".join(has) if has else "it has no clock time, no path and no printed hyperparameters to tie it to a run"


def _own_runs(campaign: Campaign, pending: dict[tuple, str], texts: list[TextLog]) -> None:
    """A log that trained (it shows steps), with no run of any other source in its folder, is a run of its own."""
    for text in texts:
        sessions = [s for s in text.sessions if (text, s) in pending]
        if not sessions or len(sessions) != len(text.sessions) or not any(s.steps for s in sessions):
            continue
        logs = {t.path for t in texts}
        if text.name is None or text.name in campaign.runs or _runs_below(campaign, text.folder, text.path, logs):
            continue  # a name another run has is no evidence that the log is that run's
        run = campaign.runs[text.name] = Run(id=text.name)
        decision = Decision("merged", "own-log", f"{text.path} shows training steps and no other source describes "
                            "a run in its folder: a run of its own, named by the log", (Evidence(text.path),))
        for session in sessions:
            _give(campaign, text, session, run.id, decision)
            del pending[(text, session)]
        run.identity = [decision]
        times = sorted(t for session in sessions for t in session.times)
        if times:  # a log of its own keeps the run's only clock times: its start and the last thing it said
            run.started_at, run.last_seen_at = times[0], times[-1]
            run.start_evidence = Evidence(text.path, sessions[0].first_line)
        steps = [s for session in sessions for s in (session.first_step, session.last_step) if s is not None]
        steps += [m.step for m in text.messages if m.step is not None]
        if steps:
            run.first_step, run.last_step = min(steps), max(steps)
    campaign.runs = dict(sorted(campaign.runs.items()))


def _runs_below(campaign: Campaign, folder: str, path: str, ignored: set[str] | None = None) -> list[str]:
    """Runs with a source in `folder` or below it, other than the log itself, the logs linked to a run
    from elsewhere (they do not put their run in the log's folder) and any `ignored` path."""
    prefix = f"{folder}/" if folder else ""
    linked = {d.evidence[0].path for r in campaign.runs.values() for d in r.identity if d.decision == "linked" and d.evidence}
    skip = linked | (ignored or set()) | {path}
    return sorted(r.id for r in campaign.runs.values() if any(p not in skip and p.startswith(prefix) for p in r.sources))


def _link_by_chain(campaign: Campaign, pending: dict[tuple, str]) -> dict[tuple, str]:
    """Sessions still unlinked: the process that restored a run's checkpoint is the run that continues
    it; a log in a folder holding one run, or one chain of continuations with as many processes as
    the log has sessions, belongs to it, session by session in the order the continuations prove."""
    continued_by: dict[str, list[str]] = {}
    for run in campaign.runs.values():
        if run.resumes:
            continued_by.setdefault(run.resumes, []).append(run.id)
    for (text, session) in list(pending):
        for message in _session_messages(text, session):
            if message.kind != MessageKind.RESUMED or not message.target:
                continue
            check = _checkpoint_named(message.target, campaign.checkpoints)
            followers = continued_by.get(check.run, []) if check is not None else []
            if check is not None and len(followers) == 1:
                why = (f"{_where(text, session)} restored {check.path} (line {message.evidence.line}), and this run "
                       f"is the one that continues {check.run}")
                _give(campaign, text, session, followers[0],
                      Decision("linked", "restored-checkpoint", why, (message.evidence,), other=check.run))
                del pending[(text, session)]
                break
    by_text: dict[str, list[tuple[TextLog, Session]]] = {}
    for text, session in pending:
        by_text.setdefault(text.path, []).append((text, session))
    for items in by_text.values():
        text = items[0][0]
        below = [r for r in _runs_below(campaign, text.folder, text.path) if campaign.runs[r].kind == RunKind.TRAINING]
        if len(below) == 1:
            for text_, session in items:
                why = f"{_where(text_, session)} lies in {text.folder or 'LOGS'}/, which holds this run alone"
                _give(campaign, text_, session, below[0], Decision("linked", "only-run-below", why, (Evidence(text.path),)))
                del pending[(text_, session)]
            continue
        order, rule, how = _process_order(campaign, below)
        agrees = order is not None and len(order) == len(text.sessions) and all(
            order[index] == run_id for index, run_id in text.linked.items())
        if order is not None and agrees:
            for text_, session in sorted(items, key=lambda i: i[1].index):
                run_id = order[session.index]
                why = (f"{_where(text_, session)} is process {session.index + 1} of {len(order)} in a log appended to by "
                       f"the {len(order)} runs of its folder, which {how} put in this order ({' → '.join(order)})")
                _give(campaign, text_, session, run_id, Decision("linked", rule, why, (Evidence(text.path),)))
                del pending[(text_, session)]
    return pending


def _process_order(campaign: Campaign, run_ids: list[str]) -> tuple[list[str] | None, str, str]:
    """The runs in the order their processes ran: by their clock times when every one keeps them and
    no two started together, else as one chain of continuations (a continuation comes after)."""
    runs = [campaign.runs[r] for r in run_ids]
    starts = [r.started_at for r in runs]
    if runs and all(starts) and len(set(starts)) == len(starts):
        return [r.id for r in sorted(runs, key=lambda r: r.started_at)], "session-order", "their start times"  # type: ignore[arg-type, return-value]
    return _one_chain(campaign, run_ids), "chain-sessions", "the continuations"


def _one_chain(campaign: Campaign, run_ids: list[str]) -> list[str] | None:
    """The runs as one line of continuations, oldest first, or None."""
    if not run_ids:
        return None
    members = set(run_ids)
    roots = [r for r in run_ids if campaign.runs[r].resumes not in members]
    if len(roots) != 1:
        return None
    chain = [roots[0]]
    while True:
        nxt = [r for r in run_ids if campaign.runs[r].resumes == chain[-1]]
        if len(nxt) > 1:
            return None
        if not nxt:
            break
        chain.append(nxt[0])
    return chain if len(chain) == len(run_ids) else None


def _checkpoint_named(target: str, checkpoints: list[Checkpoint]) -> Checkpoint | None:
    """The checkpoint under LOGS a path from the training machine names: the longest common ending.

    At least the checkpoint's own name and its folder must match (`run-1/checkpoint-20`)."""
    parts = path_parts(target)
    best, best_len = None, 1
    for check in checkpoints:
        own = path_parts(check.path)
        common = 0
        while common < min(len(own), len(parts)) and own[-1 - common] == parts[-1 - common]:
            common += 1
        if common > best_len:
            best, best_len = check, common
    return best


@dataclass
class _Claim:
    rule: str
    other: str
    text: str
    evidence: tuple[Evidence, ...]
    step: int | None = None  # the step of the checkpoint it continues from
    inherited: str | None = None  # the file whose records up to `step` were copied from that checkpoint


def _continuations(campaign: Campaign, recall: Recall | None = None) -> bool:
    """Which run continues which, on positive evidence only; a configuration that differs is a new run (R10).
    True when a continuation's inherited records were given back to the run it continues."""
    gave_back = False
    runs = campaign.runs
    traces = _traces(campaign.metrics, {info.path: info.format for info in campaign.inputs}, values=False, recall=recall,
                     digests=campaign.run_digests)  # the campaign's: worked out once for this frame, the analysis's too
    checkpoints: dict[str, list[Checkpoint]] = {}
    for check in campaign.checkpoints:
        checkpoints.setdefault(check.run, []).append(check)
    # Each run's restore messages and resuming start, gathered once (not every message scanned per run).
    restored: dict[str | None, list[LogMessage]] = {}
    for message in sorted((m for m in campaign.messages if m.kind == MessageKind.RESUMED and m.target), key=lambda m: m.evidence):
        restored.setdefault(message.run, []).append(message)
    resuming: dict[str | None, RunEvent] = {}
    for event in campaign.run_events:
        if event.kind == "start" and event.resumes:
            resuming.setdefault(event.run, event)
    for run_id, run in runs.items():
        if run.kind != RunKind.TRAINING:
            continue
        told = next((f for f in run.facts if f.resume_rule and f.resumes == run.resumes), None)
        if run.resumes is not None and told is not None:
            run.resumed_at_step = told.resumed_at_step
            run.identity.append(Decision("resumes", told.resume_rule or "", told.resume_reason or "", (told.evidence,),
                                         other=run.resumes))
            continue
        if run.resumes is not None:
            start = resuming.get(run_id)
            text = f"its run_start names {run.resumes} as the run it resumes"
            run.identity.append(Decision("resumes", "declared", text, (start.evidence,) if start else (), other=run.resumes))
            continue
        own = _resumed_itself(run, campaign, restored.get(run_id, []), checkpoints.get(run_id, []), traces.get(run_id))
        if own is not None:
            run.identity.append(own)
            continue
        claims = [*_restore_claims(run, campaign, restored.get(run_id, [])), *_history_claims(run, runs, checkpoints, traces),
                  *_step_claims(run, runs, checkpoints, traces)]
        for claim in claims:
            differs = config_differences(run.config, runs[claim.other].config)
            if differs:
                shown = ", ".join(differs[:4]) + (" …" if len(differs) > 4 else "")
                run.identity.append(Decision("separate", claim.rule, (
                    f"{claim.text}, but its configuration differs from {claim.other}'s ({shown}): "
                    "a new run, not a continuation"), claim.evidence, other=claim.other))
                continue
            run.resumes, run.resumed_at_step = claim.other, claim.step
            run.identity.append(Decision("resumes", claim.rule, claim.text, claim.evidence, other=claim.other))
            if claim.inherited is not None and claim.step is not None:
                gave_back = _drop_inherited(campaign, run, claim.inherited, claim.step) or gave_back
            break
    return gave_back


def _drop_inherited(campaign: Campaign, run: Run, path: str, step: int) -> bool:
    """A Trainer resumed into a new folder copies the checkpoint's log_history into its own: those
    records, up to the checkpoint's step, are the run it continues (which holds them already)."""
    metrics = campaign.metrics
    inherited = (metrics["run"] == run.id) & (metrics["path"] == path) & (metrics["step"] <= step)
    if not inherited.any():
        return False
    campaign.metrics = metrics[~inherited].reset_index(drop=True)
    campaign.evaluations = [e for e in campaign.evaluations
                            if not (e.run == run.id and e.evidence.path == path and e.step is not None and e.step <= step)]
    own = campaign.metrics.loc[campaign.metrics["run"] == run.id, "step"].dropna()
    run.first_step = int(own.min()) if len(own) else step + 1
    return True


def _resumed_itself(run: Run, campaign: Campaign, restored: list[LogMessage], own: list[Checkpoint],
                    trace: _Trace | None) -> Decision | None:
    """A run that restored a checkpoint of its own (a resume into the same folder) continues itself,
    not another run: its log names its own checkpoint, or its folder holds a checkpoint older than
    the first step it logged (the logger's file was rewritten by the resumed process)."""
    for message in restored:  # its log's restore messages, in file order
        check = _checkpoint_named(message.target or "", campaign.checkpoints)
        if check is not None and check.run == run.id:
            return Decision("separate", "restore-message", f"its log says it restored {check.path}, its own checkpoint "
                            f"(line {message.evidence.line}): a resume in its own folder, not a continuation of "
                            "another run", (message.evidence,))
    first = trace.first_step if trace is not None else None
    # A fresh run logs its first step within one logging interval; one that starts later than that and
    # after a checkpoint of its own resumed from it.
    late = first is not None and trace is not None and trace.max_gap > 0 and first > trace.max_gap
    earlier = [c for c in own if c.step is not None and not c.final and first is not None and 0 < c.step <= first]
    if late and earlier:
        check = max(earlier, key=lambda c: (c.step or 0, c.path))
        return Decision("separate", "step-continuity", f"its first logged step ({first}) is later than a fresh run logs "
                        f"its first (every {trace.max_gap} steps at most) and follows its own checkpoint at step "  # type: ignore[union-attr]
                        f"{check.step} ({check.path}): it resumed in its own folder", (check.evidence,))
    return None


def _restore_claims(run: Run, campaign: Campaign, restored: list[LogMessage]) -> list[_Claim]:
    claims = []
    for message in restored:
        check = _checkpoint_named(message.target or "", campaign.checkpoints)
        if check is not None and check.run != run.id and check.run in campaign.runs:
            claims.append(_Claim("restore-message", check.run, f"its log says it restored {check.path}, a checkpoint of "
                                 f"{check.run} (line {message.evidence.line})", (message.evidence, check.evidence),
                                 step=check.step))
    return claims


def _history_claims(run: Run, runs: dict[str, Run], checkpoints: dict[str, list[Checkpoint]],
                    traces: dict[str, _Trace]) -> list[_Claim]:
    """A Trainer run resumed into a new output folder starts its log_history with the checkpoint's;
    its own timed records (TensorBoard, MLflow) must start after that checkpoint, else it is a repeat."""
    history = next((f.history for f in run.facts if f.history), None)
    if not history:
        return []
    found: list[tuple[int, Checkpoint]] = []
    for other_id, items in checkpoints.items():
        if other_id == run.id or other_id not in runs:
            continue
        matching = [c for c in items if c.history and not c.final and len(c.history) < len(history)
                    and history[:len(c.history)] == c.history]
        if matching:
            found.append((len(max(matching, key=lambda c: len(c.history or ())).history or ()),
                          max(matching, key=lambda c: len(c.history or ()))))
    if not found:
        return []
    found.sort(key=lambda item: -item[0])
    if len(found) > 1 and found[0][0] == found[1][0]:
        return []  # two runs' checkpoints hold the same history: nothing tells which one it resumed
    check = found[0][1]
    trace = traces.get(run.id)
    own = trace.timed_first_step if trace is not None else None
    if own is None or check.step is None or own <= check.step:
        return []
    text = (f"its log_history starts with the {found[0][0]} entries of {check.path}/trainer_state.json, and its own "
            f"timed records start at step {own}, after that checkpoint's step {check.step}")
    state = next(f.evidence for f in run.facts if f.history)
    return [_Claim("log-history", check.run, text, (check.evidence, state), step=check.step, inherited=state.path)]


def _step_claims(run: Run, runs: dict[str, Run], checkpoints: dict[str, list[Checkpoint]],
                 traces: dict[str, _Trace]) -> list[_Claim]:
    """A run of the same configuration whose first logged step is past the first step every run of it
    logs, at or after a checkpoint of another run, and which starts after that run's last record."""
    trace = traces.get(run.id)
    if trace is None or trace.first_step is None:
        return []
    first = trace.first_step
    options: list[tuple[int, str, Checkpoint, int]] = []
    for other_id, other in runs.items():
        if other_id == run.id or other.kind != RunKind.TRAINING:
            continue
        theirs = traces.get(other_id)
        if theirs is None or theirs.first_step is None:
            continue
        saved = [c for c in checkpoints.get(other_id, [])
                 if c.step is not None and not c.final and theirs.first_step < c.step <= first]
        if not saved:
            continue
        if theirs.timed() and trace.timed() and trace.t0 < theirs.t1:  # type: ignore[operator]
            continue  # it started before the other run's last record: not its continuation
        if config_differences(run.config, other.config) != []:
            continue  # the same configuration, positively: both recorded, no key differs
        check = max(saved, key=lambda c: (c.step or 0, c.path))
        options.append((check.step or 0, other_id, check, theirs.first_step))
    if not options:
        return []
    options.sort(key=lambda o: (-o[0], o[1]))
    if len(options) > 1 and options[0][0] == options[1][0]:
        return []
    step, other_id, check, their_first = options[0]
    text = (f"same configuration; its first logged step ({first}) is past step {their_first}, the first step every "
            f"run of this configuration logs, and follows {other_id}'s checkpoint at step {step} ({check.path})")
    return [_Claim("step-continuity", other_id, text, (check.evidence, Evidence(run.sources[0]) if run.sources else check.evidence),
                   step=check.step)]


def _evaluated_folders(campaign: Campaign, folders: dict[str, list[str]]) -> None:
    """An evaluation run whose source names the model it loaded (LLaMA-Factory's "Loaded adapter(s): ...")
    evaluates the one training run whose folder that path ends with."""
    runs = campaign.runs
    for run in runs.values():
        named = [f for f in run.facts if f.evaluated]
        if run.kind != RunKind.EVALUATION or run.evaluates or not named:
            continue
        facts = named[0]
        hits = sorted(other for other, places in folders.items()
                      if other != run.id and other in runs and runs[other].kind == RunKind.TRAINING
                      and any(path_ends_with(facts.evaluated, place) for place in places if place))  # type: ignore[arg-type]
        if len(hits) != 1:
            continue
        trained = hits[0]
        text = f"it evaluates {trained}: it loaded {facts.evaluated}, {trained}'s folder ({facts.evidence.path} line {facts.evidence.line})"
        run.evaluates = trained
        run.identity.append(Decision("evaluates", "loaded-model", text, (facts.evidence,), other=trained))
        runs[trained].identity.append(Decision("evaluates", "loaded-model", f"evaluated by {run.id}, which loaded its model",
                                               (facts.evidence,), other=run.id))


def _attach_evaluations(campaign: Campaign) -> None:
    """An evaluation run at one step belongs to the training run that ended at that step just before
    it started, with no other run starting in between."""
    runs = campaign.runs
    starts = sorted((r.started_at, r.id) for r in runs.values() if r.started_at is not None)
    for run in runs.values():
        if run.kind != RunKind.EVALUATION or run.started_at is None or run.first_step is None or run.first_step != run.last_step:
            continue
        before = [(end, r.id) for r in runs.values()
                  if r.kind == RunKind.TRAINING and r.last_step == run.first_step
                  and (end := r.ended_at or r.last_seen_at) is not None and end <= run.started_at]
        if not before:
            continue
        end, trained = max(before)
        between = [r for at, r in starts if end < at < run.started_at and r not in (run.id, trained)]
        if between:
            continue
        gap = (run.started_at - end).total_seconds()
        text = (f"it evaluates {trained}: its only step ({run.first_step}) is {trained}'s last, and it started "
                f"{gap:.1f} s after {trained} ended, with no other run in between")
        run.evaluates = trained
        evidence = tuple(e for e in (run.start_evidence, runs[trained].end_evidence) if e is not None)
        run.identity.append(Decision("evaluates", "after-training", text, evidence, other=trained))
        runs[trained].identity.append(Decision("evaluates", "after-training", f"evaluated by {run.id} after training",
                                               evidence, other=run.id))
