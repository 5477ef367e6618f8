"""Pages stay light as the campaign grows: the checkpoints page lists a run's checkpoints on the
run's own page once there are too many for one table, and links there."""

from __future__ import annotations

import re
from datetime import timedelta

from click.testing import CliRunner
from conftest import SAMPLE_LOGS, SAMPLE_PLAN, WINDOW_START, ticking

from reportgen.cli import cli
from reportgen.events import EventLog


def many_checkpoints(logs, runs: int, saves: int) -> None:
    for n in range(runs):
        run = f"lora-r16-{n + 1}"
        log = EventLog(logs / "runs" / run / "events.jsonl", run=run,
                       clock=ticking(WINDOW_START + timedelta(hours=10 * n), minutes=1))
        log.run_start(config={"rank": 16}, variant="lora-r16")
        for step in range(10, 10 * saves + 1, 10):
            log.metric(step=step, loss=1.0)
            log.checkpoint_save(step=step, path=f"ckpt/{run}/checkpoint-{step}", seconds=30.0,
                                state=["model", "optimizer", "scheduler", "rng", "progress"])
        log.run_end(status="completed", step=10 * saves)


def test_over_300_checkpoints_are_listed_per_run_with_a_link_to_each_runs_own_table(tmp_path):
    logs = tmp_path / "logs"
    many_checkpoints(logs, runs=2, saves=160)
    site = tmp_path / "site"
    assert CliRunner().invoke(cli, ["build", str(logs), str(SAMPLE_PLAN), "-o", str(site), "-q"]).exit_code == 0
    page = (site / "checkpoints.html").read_text(encoding="utf-8")
    assert "320 checkpoints: too many for one table" in page
    rows = re.findall(r'<tr><td><a href="runs/(lora-r16-\d)\.html#checkpoints">', page)
    assert rows == ["lora-r16-1", "lora-r16-2"]
    assert 'id="checkpoints"' in (site / "runs" / "lora-r16-1.html").read_text(encoding="utf-8")
    # No row per checkpoint here: the 320 not copied off the machine are named 20, then counted.
    assert page.count("<code>ckpt/") == 20 and "and 300 more, in the runs lora-r16-1, lora-r16-2" in page
    assert len(page.encode()) < 100_000


def test_the_sample_checkpoints_page_has_a_row_per_checkpoint(tmp_path):
    """Counter-example: the sample's 14 checkpoints stay in one table, a row each."""
    site = tmp_path / "site"
    assert CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(site), "-q"]).exit_code == 0
    page = (site / "checkpoints.html").read_text(encoding="utf-8")
    assert "too many for one table" not in page
    assert page.count("<code>ckpt/") == 14
