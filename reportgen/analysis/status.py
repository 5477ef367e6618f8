"""How each run ended, from evidence only: one decision table (docs/stops.md, "Run status").

| order | evidence | status |
|---|---|---|
| 1 | a stop the script logged (a native `stop` event) | stopped (by the script) |
| 2 | the training loop's own stop: EarlyStoppingCallback's state, Lightning's EarlyStopping message, a Trainer's final summary short of max_steps | stopped (by the training loop) |
| 3 | a native `run_end` | its status (`completed`, `stopped`; any other is interrupted) |
| 4 | an end marker: the Trainer's final summary, global_step at max_steps, Lightning's max_steps reached or "`Trainer.fit` stopped", MLflow FINISHED | completed |
| 5 | a cut: a crash message (traceback, out of memory, killed), MLflow FAILED or KILLED, a source file cut off mid-record, a later run that continues it | interrupted |
| 6 | none of these | unknown, with what each source shows and what is missing |

Nothing else decides: a newer folder, a later version or a run that started and logged no end
never make a run interrupted; such a run is unknown until evidence says how it ended.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reportgen.model import (
    FATAL_MESSAGES,
    STOPPED_BY_LOOP,
    Campaign,
    EventKind,
    Evidence,
    MessageKind,
    Run,
    Status,
    StoppedBy,
)

STOPPED_BY_RULE = StoppedBy.STOP_RULE


@dataclass(frozen=True)
class RunStatus:
    status: Status
    reason: str
    evidence: list[Evidence] = field(default_factory=list)
    by: StoppedBy | None = None  # for `stopped`: who stopped it

    @property
    def stopped_by(self) -> StoppedBy | None:
        """Who stopped a stopped run; None for any other status."""
        return self.by if self.status == Status.STOPPED else None

    @property
    def stopped_by_rule(self) -> bool:
        """Stopped by a rule of the plan (logged or found in the logs): its results are not approved (R10).
        A run the training loop stopped (early stopping) ended as its configuration asked."""
        return self.status == Status.STOPPED and self.by != STOPPED_BY_LOOP


def run_status(run: Run, campaign: Campaign) -> RunStatus:
    """The decision table above, for one run."""
    stops = sorted(campaign.of_run("stops").get(run.id, []),
                   key=lambda s: (s.by == STOPPED_BY_LOOP, s.at is None, s.at.timestamp() if s.at else 0.0, s.evidence))
    if stops:
        first = stops[0]
        return RunStatus(Status.STOPPED, first.reason, [s.evidence for s in stops], by=first.by)
    messages = campaign.of_run("messages").get(run.id, [])
    early = [m for m in messages if m.kind == MessageKind.EARLY_STOP]
    if early:
        return RunStatus(Status.STOPPED, f"early stopping: {early[-1].message}", [m.evidence for m in early], by=STOPPED_BY_LOOP)
    loop = [f for f in run.facts if f.status == STOPPED_BY_LOOP]
    if loop:
        return RunStatus(Status.STOPPED, loop[0].reason or "the training loop stopped itself", [f.evidence for f in loop],
                         by=STOPPED_BY_LOOP)
    if run.end_status is not None:
        end = [run.end_evidence] if run.end_evidence else []
        if run.end_status == Status.COMPLETED:
            return RunStatus(Status.COMPLETED, "the run logged its end", end)
        if run.end_status == Status.STOPPED:
            return RunStatus(Status.STOPPED, "the run ended with status 'stopped'", end, by=StoppedBy.SCRIPT)
        return RunStatus(Status.INTERRUPTED, f"the run ended with status '{run.end_status}'", end)
    completed = [f for f in run.facts if f.status == Status.COMPLETED]
    finished = [m for m in messages if m.kind == MessageKind.FINISHED]
    if completed or finished:
        reason = completed[0].reason if completed else finished[0].message
        return RunStatus(Status.COMPLETED, reason or "a source records the end of training",
                         [f.evidence for f in completed] + [m.evidence for m in finished])
    cut = _cut(run, campaign, messages)
    if cut is not None:
        return cut
    return _unknown(run, campaign, messages)


def _cut(run: Run, campaign: Campaign, messages: list) -> RunStatus | None:
    """Evidence that the run was cut before its end, strongest first."""
    fatal = [m for m in messages if m.kind in FATAL_MESSAGES]
    if fatal:
        return RunStatus(Status.INTERRUPTED, fatal[-1].message, [m.evidence for m in fatal])
    failed = [f for f in run.facts if f.status == Status.INTERRUPTED]
    if failed:
        return RunStatus(Status.INTERRUPTED, failed[0].reason or "a source shows the run did not finish",
                         [f.evidence for f in failed])
    # A file cut off mid-record tells of its own run only: a log shared by several runs could be cut by any.
    shared = {p for other in campaign.runs.values() if other.id != run.id for p in other.sources}
    sources = set(run.sources) - shared
    cut_off = sorted(info.path for info in campaign.inputs if info.cut_off and info.path in sources)
    if cut_off:
        return RunStatus(Status.INTERRUPTED, f"{cut_off[0]} is cut off mid-record: its writer was stopped",
                         [Evidence(p) for p in cut_off])
    later = sorted(r.id for r in campaign.runs.values() if r.resumes == run.id)
    if later:
        after = campaign.runs[later[0]]
        where = (f" from its checkpoint at step {after.resumed_at_step}" if after.resumed_at_step is not None else
                 f" (its first logged step is {after.first_step})" if after.first_step is not None else "")
        evidence = [e for d in after.identity if d.decision == "resumes" for e in d.evidence]
        if not evidence and after.sources:
            evidence = [Evidence(after.sources[0])]
        return RunStatus(Status.INTERRUPTED, f"it has no end of its own and {later[0]} continues it{where}", evidence)
    return None


def _unknown(run: Run, campaign: Campaign, messages: list) -> RunStatus:
    shown = [f"{f.reason} ({f.evidence.path})" for f in run.facts if f.status is None and f.reason]
    started = any(e.kind == EventKind.START for e in campaign.of_run("run_events").get(run.id, []))
    if started:
        shown.insert(0, "it logged its start but no end")
    if not run.facts and not messages and not started and not run.sources:
        return RunStatus(Status.UNKNOWN, "neither a start nor an end was logged", [])
    what = "; ".join(shown) if shown else f"its sources ({', '.join(run.formats) or 'none'}) record no end"
    evidence = [f.evidence for f in run.facts if f.status is None and f.reason]
    if started and run.start_evidence is not None:
        evidence.insert(0, run.start_evidence)
    return RunStatus(Status.UNKNOWN, f"no source records how it ended: {what}; no crash message, cut-off file or later "
                     "continuation says it was cut", evidence)
