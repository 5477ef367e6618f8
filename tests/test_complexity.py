"""No analysis step slower than linear: doubling the input doubles the work counted (never the
time, which a shared machine cannot measure reliably). The count is of the path comparisons a
checkpoint match makes; a scan of every checkpoint per operation would quadruple it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import WINDOW_START

from reportgen.analysis import checkpoints
from reportgen.model import Campaign, CheckpointOp, Evidence, ReloadTest


def campaign_with(saves: int) -> Campaign:
    """One run saving `saves` checkpoints, each transferred, every tenth restored and reload-tested."""
    campaign = Campaign(root="logs")
    log = "runs/a-1/events.jsonl"
    for n in range(saves):
        at = WINDOW_START + timedelta(minutes=n)
        path = f"ckpt/a-1/checkpoint-{n * 10}"
        campaign.checkpoint_ops.append(CheckpointOp("a-1", "save", at, Evidence(log, 3 * n + 1), path=path,
                                                    step=n * 10, seconds=30.0))
        campaign.checkpoint_ops.append(CheckpointOp("a-1", "transfer", at, Evidence(log, 3 * n + 2),
                                                    path=f"/scratch/{path}", seconds=40.0, destination="bucket"))
        if n % 10 == 0:
            campaign.checkpoint_ops.append(CheckpointOp("a-2", "restore", at, Evidence(log, 3 * n + 3), path=path,
                                                        seconds=20.0))
            campaign.reload_tests.append(ReloadTest("a-1", at, Evidence(log, 3 * n + 3), path, ok=True))
    return campaign


def counted_matches(monkeypatch, campaign: Campaign) -> tuple[int, dict]:
    """run_checkpoints with every path key made and every path comparison counted."""
    calls = 0

    def counting(real):
        def counted(*args):
            nonlocal calls
            calls += 1
            return real(*args)
        return counted

    for name in ("path_key", "same_path"):  # an index makes keys; a scan would compare paths
        if hasattr(checkpoints, name):
            monkeypatch.setattr(checkpoints, name, counting(getattr(checkpoints, name)))
    found = checkpoints.run_checkpoints(campaign)
    return calls, found


@pytest.mark.parametrize("saves", [200, 800])
def test_matching_saves_transfers_restores_and_reload_tests_grows_linearly(monkeypatch, saves):
    small, found = counted_matches(monkeypatch, campaign_with(saves))
    large, _ = counted_matches(monkeypatch, campaign_with(2 * saves))
    assert large <= 2.1 * small, (small, large)
    # The matching is still right: every save has its transfer, every tenth its restore and reload test.
    items = found["a-1"]
    assert len(items) == saves and all(len(c.transfers) == 1 for c in items)
    assert [c.step for c in items if c.restores] == [n * 10 for n in range(0, saves, 10)]
    assert all(len(c.reload_tests) == (1 if c.restores else 0) for c in items)


def test_a_transfer_goes_to_the_runs_own_checkpoint_before_another_runs_of_the_same_path(monkeypatch):
    """The index keeps the rule of the scan it replaced: the run's own checkpoint first, then any run's."""
    campaign = Campaign(root="logs")
    at = WINDOW_START
    for run, line in (("b-1", 1), ("a-1", 2)):
        campaign.checkpoint_ops.append(CheckpointOp(run, "save", at, Evidence("e.jsonl", line),
                                                    path=f"/{run}/ckpt/checkpoint-10", step=10))
    campaign.checkpoint_ops.append(CheckpointOp("a-1", "transfer", at, Evidence("e.jsonl", 3),
                                                path="ckpt/checkpoint-10", seconds=5.0))
    campaign.checkpoint_ops.append(CheckpointOp("c-1", "restore", at, Evidence("e.jsonl", 4),
                                                path="ckpt/checkpoint-10", seconds=5.0))
    found = checkpoints.run_checkpoints(campaign)
    assert [len(c.transfers) for c in found["a-1"]] == [1] and [len(c.transfers) for c in found["b-1"]] == [0]
    # c-1 has no checkpoint of that path: the restore goes to the first run's that has one (b-1, saved first).
    assert [len(c.restores) for c in found["b-1"]] == [1]


def test_each_runs_timed_operations_are_gathered_once_and_again_only_after_more_were_added():
    """The pace of every run takes out its evaluations and checkpoint operations: gathered once for
    the campaign (a scan of every record per run grew with runs x records), kept up to date."""
    campaign = campaign_with(20)
    first = campaign.timed_by_run()
    assert campaign.timed_by_run() is first
    assert len(first["a-1"]) == 20 + 20 and len(first["a-2"]) == 2  # saves and transfers; a-2's restores
    campaign.checkpoint_ops.append(CheckpointOp("a-3", "save", WINDOW_START, Evidence("e.jsonl", 1), seconds=3.0))
    again = campaign.timed_by_run()
    assert again is not first and again["a-3"] == [(WINDOW_START, 3.0)]


class CountedItems(list):
    """A list that counts the items every pass over it visits."""

    visited = 0

    def __iter__(self):
        CountedItems.visited += len(self)
        return super().__iter__()


def visits_of_every_runs_checkpoints(runs: int, per_run: int) -> int:
    """Every run's checkpoints asked for (as the run pages and the warnings do), items visited counted."""
    from types import SimpleNamespace

    from reportgen.analysis.checkpoints import CheckpointsReport

    items = CountedItems(SimpleNamespace(checkpoint=SimpleNamespace(run=f"r-{n % runs}"), n=n) for n in range(runs * per_run))
    report = CheckpointsReport({}, items, calendar=None, interval=None)
    CountedItems.visited = 0
    for n in range(runs):
        assert len(report.of_run(f"r-{n}")) == per_run
    return CountedItems.visited


def test_each_runs_checkpoints_are_found_in_time_linear_in_the_checkpoints():
    """Asking for every run's checkpoints visits each checkpoint once however many runs ask; a scan of
    every checkpoint per run (runs x checkpoints) quadrupled when the runs doubled."""
    small = visits_of_every_runs_checkpoints(100, 20)
    large = visits_of_every_runs_checkpoints(200, 20)
    assert small == 100 * 20 and large == 200 * 20


def test_each_runs_rows_are_grouped_once_and_again_for_another_frame():
    """The analysis and the charts all ask for each run's rows: the frame is grouped once, and again only
    when the campaign holds another frame (counter-example: a changed frame is not served stale)."""
    import pandas as pd

    campaign = Campaign(root="logs")
    campaign.metrics = pd.DataFrame({"path": ["a", "a", "b"], "line": [1, 2, 1], "run": ["x", "x", "y"],
                                     "kind": ["train"] * 3, "step": [1, 2, 1], "ts": [None] * 3, "loss": [1.0, 0.5, 2.0]})
    first = campaign.frames_by_run()
    assert campaign.frames_by_run()["x"] is first["x"] and sorted(first) == ["x", "y"]
    first["x"] = first["y"]  # a caller's dict is its own: the next caller still gets x's rows
    assert len(campaign.frames_by_run()["x"]) == 2
    campaign.metrics = campaign.metrics[campaign.metrics["run"] == "x"]
    again = campaign.frames_by_run()
    assert again["x"] is not first["x"] and sorted(again) == ["x"]


def test_the_metrics_each_run_logged_are_counted_once_and_again_for_another_frame():
    """The stop rules, the report and the charts each ask which metrics each run logged: counted once per
    frame, each caller given lists of its own (counter-example: a changed frame is counted again)."""
    import pandas as pd

    campaign = Campaign(root="logs")
    campaign.metrics = pd.DataFrame({"path": ["a", "a", "b"], "line": [1, 2, 1], "run": ["x", "x", "y"],
                                     "kind": ["train"] * 3, "step": [1, 2, 1], "ts": [None] * 3,
                                     "loss": [1.0, None, 2.0], "acc": [None, 0.5, None]})
    counted = []
    groupby = pd.DataFrame.groupby

    def counting(frame, *args, **kwargs):
        counted.append(args)
        return groupby(frame, *args, **kwargs)

    pd.DataFrame.groupby = counting
    try:
        first = campaign.metrics_by_run()
        first["x"].append("changed by a caller")
        assert campaign.metrics_by_run() == {"x": ["loss", "acc"], "y": ["loss"]} and len(counted) == 1
        campaign.metrics = campaign.metrics.drop(columns="acc")
        assert campaign.metrics_by_run() == {"x": ["loss"], "y": ["loss"]} and len(counted) == 2
    finally:
        pd.DataFrame.groupby = groupby


def test_the_analysis_leaves_each_runs_rows_as_they_were_read():
    """The stop rules count an evaluation run's rows for the run it evaluates, in a dict of their own:
    the runs' rows the charts and the estimates read afterwards are still each run's own."""
    from pathlib import Path

    from conftest import SAMPLE_PLAN

    from reportgen.analysis import analyse
    from reportgen.ingest import ingest
    from reportgen.plan.load import load_plan

    campaign = ingest(Path(__file__).parent / "fixtures" / "campaigns" / "trainer-mlflow")
    assert campaign.evaluated_by()  # training runs with evaluation runs attached
    before = {run: len(rows) for run, rows in campaign.frames_by_run().items()}
    analyse(load_plan(SAMPLE_PLAN).plan, campaign)
    analyse(load_plan(SAMPLE_PLAN).plan, campaign)
    assert {run: len(rows) for run, rows in campaign.frames_by_run().items()} == before


def visits_of_every_runs_status(runs: int, per_run: int) -> int:
    """Every run's status decided (stops, messages and start events looked up), items visited counted."""
    from reportgen.analysis.status import run_status
    from reportgen.model import (
        EventKind,
        LoggedStop,
        LogMessage,
        MessageKind,
        Run,
        RunEvent,
    )

    campaign = Campaign(root="logs")
    for n in range(runs):
        campaign.runs[f"r-{n}"] = Run(id=f"r-{n}")
    log = Evidence("train.log", 1)
    campaign.messages = CountedItems(LogMessage(f"r-{n % runs}", MessageKind.PROGRESS, "50%", log) for n in range(runs * per_run))
    campaign.stops = CountedItems(LoggedStop(f"r-{n}", "plateau", "flat", WINDOW_START, log) for n in range(0, runs, 2))
    campaign.run_events = CountedItems(RunEvent(f"r-{n % runs}", EventKind.START, WINDOW_START, log) for n in range(runs * per_run))
    CountedItems.visited = 0
    statuses = [run_status(run, campaign) for run in campaign.runs.values()]
    assert [s.status for s in statuses[:2]] == ["stopped", "unknown"]  # r-0 logged a stop; r-1 its start only
    return CountedItems.visited


def test_every_runs_status_is_decided_in_time_linear_in_the_campaigns_messages():
    """Deciding how each run ended looks at its own stops, messages and start events: grouped by run once
    (a scan of every message per run grew with runs x messages, quadrupling when both doubled)."""
    small = visits_of_every_runs_status(100, 10)
    large = visits_of_every_runs_status(200, 10)
    assert large <= 2.1 * small, (small, large)


def test_a_runs_items_are_grouped_again_when_its_list_grows_or_is_replaced():
    """Counter-example: the grouping is never served stale."""
    from reportgen.model import LogMessage, MessageKind

    campaign = Campaign(root="logs")
    said = LogMessage("a", MessageKind.PROGRESS, "1%", Evidence("train.log", 1))
    campaign.messages.append(said)
    first = campaign.of_run("messages")
    assert campaign.of_run("messages") is first and first == {"a": [said]}
    campaign.messages.append(LogMessage("b", MessageKind.PROGRESS, "2%", Evidence("train.log", 2)))
    assert sorted(campaign.of_run("messages")) == ["a", "b"]
    campaign.messages = [said]
    assert campaign.of_run("messages") == {"a": [said]}
