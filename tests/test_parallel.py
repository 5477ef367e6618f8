"""Work shared among worker processes: the same results in the same order as one process, failures
reported as in one process, and the same site whatever --jobs says."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SAMPLE_LOGS, SAMPLE_PLAN

from reportgen import parallel
from reportgen.cli import cli
from reportgen.errors import InputError
from reportgen.parallel import LEAST_PER_WORKER, ordered_map, workers_for

needs_fork = pytest.mark.skipif(not parallel.can_fork(), reason="workers are forked on Linux only")


def square_and_pid(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


@needs_fork
def test_results_come_back_in_order_from_the_workers():
    heard = []
    results = ordered_map(square_and_pid, list(range(40)), jobs=2, done=lambda i, r: heard.append(i))
    assert [value for value, _pid in results] == [x * x for x in range(40)]
    assert heard == list(range(40))
    assert {pid for _value, pid in results} - {os.getpid()}, "no item was done by a worker"


def test_one_job_or_little_work_stays_in_this_process():
    """Counter-example: one job, or fewer items than two workers' worth, forks nothing."""
    assert workers_for(1, 1000) == 1
    assert workers_for(8, 2 * LEAST_PER_WORKER - 1) == 1
    results = ordered_map(square_and_pid, list(range(2 * LEAST_PER_WORKER - 1)), jobs=8)
    assert {pid for _value, pid in results} == {os.getpid()}


def refuse_seven(x: int) -> int:
    if x == 7:
        raise InputError(f"item {x}: refused")
    return x


@needs_fork
def test_an_error_in_a_worker_is_raised_here_with_its_own_message():
    with pytest.raises(InputError, match="item 7: refused"):
        ordered_map(refuse_seven, list(range(20)), jobs=2)


def die_in_a_worker(x: int) -> tuple[int, int]:
    if x == 5 and parallel._in_worker:
        os.kill(os.getpid(), signal.SIGKILL)
    return x, os.getpid()


@needs_fork
def test_a_worker_killed_mid_map_loses_nothing():
    results = ordered_map(die_in_a_worker, list(range(30)), jobs=2)
    assert [value for value, _pid in results] == list(range(30))
    assert results[5][1] == os.getpid()  # the killed worker's item was done here


class Unpicklable:
    def __reduce__(self):
        raise TypeError("cannot travel")


def make_unpicklable(x: int) -> object:
    return Unpicklable() if x == 3 else x


@needs_fork
def test_a_result_that_cannot_travel_back_is_made_here():
    results = ordered_map(make_unpicklable, list(range(12)), jobs=2)
    assert isinstance(results[3], Unpicklable) and results[:3] == [0, 1, 2] and results[4:] == list(range(4, 12))


def nested(x: int) -> int:
    return workers_for(2, 1000)


@needs_fork
def test_a_worker_shares_nothing_further():
    assert set(ordered_map(nested, list(range(20)), jobs=2)) == {1}


def site_files(site) -> dict[str, bytes]:
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in sorted(site.rglob("*")) if p.is_file()}


def test_the_site_is_the_same_whatever_the_number_of_jobs(tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "redone", 0)
    sites = {}
    for jobs in (1, 2, 3):
        site = tmp_path / f"site-{jobs}"
        result = CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(site), "-q",
                                          "--single-file", "-j", str(jobs)])
        assert result.exit_code == 0, result.output
        sites[jobs] = site_files(site)
    assert sites[1] == sites[2] == sites[3]
    assert len(sites[1]) > 20
    if parallel.can_fork():
        assert parallel.redone == 0  # every result the workers made travelled back: none was made again here


def test_jobs_must_be_at_least_one(tmp_path):
    result = CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(tmp_path / "s"), "-j", "0"])
    assert result.exit_code == 2 and "--jobs" in result.output


def test_progress_with_workers_is_told_in_order_and_reaches_each_total(tmp_path):
    from reportgen.build import build

    heard: dict[str, list[tuple[int, int]]] = {}
    build(SAMPLE_LOGS, SAMPLE_PLAN, tmp_path / "site", jobs=2,
          progress=lambda phase, item, done, total: heard.setdefault(phase, []).append((done, total)))
    for phase in ("reading", "drawing", "writing"):
        counts = heard[phase]
        assert [done for done, _total in counts] == list(range(1, len(counts) + 1)), phase
        assert counts[-1][0] == counts[-1][1]


FIXTURES = Path(__file__).parent / "fixtures"
READ_AHEAD_FOLDERS = [SAMPLE_LOGS, FIXTURES / "wandb", FIXTURES / "stdout", FIXTURES / "trainer-wandb",
                      FIXTURES / "formats" / "tensorboard", *sorted((FIXTURES / "campaigns").iterdir())]


@needs_fork
@pytest.mark.parametrize("logs", READ_AHEAD_FOLDERS, ids=lambda p: p.name)
def test_every_format_read_by_workers_reads_as_in_one_process(logs, monkeypatch):
    """Native logs, consoles, TensorBoard files and W&B folders are read ahead by workers: what `inspect` finds is the same,
    and every worker's reading travelled back (none was read again here)."""
    monkeypatch.setattr(parallel, "LEAST_PER_WORKER", 1)  # share even a folder of two files
    monkeypatch.setattr(parallel, "redone", 0)
    found = {}
    for jobs in (1, 2):
        result = CliRunner().invoke(cli, ["inspect", str(logs), "--json", "-q", "-j", str(jobs)])
        assert result.exit_code == 0, result.output
        found[jobs] = json.loads(result.output)
    assert found[1] == found[2]
    assert parallel.redone == 0


def test_each_runs_charts_are_drawn_once_where_its_page_is_rendered(tmp_path, monkeypatch):
    """A build draws a run's charts in the task that renders its page (no phase of its own whose charts
    would travel between processes): every run with rows drawn once, none ahead of its page. Counter-example:
    the one-file report, rendered in one piece, takes every run's charts drawn beforehand."""
    from reportgen import build as build_module
    from reportgen.render.runcharts import RunCharts

    drawn: list[str] = []
    real = RunCharts.__getitem__

    def counted(self, run_id):
        drawn.append(run_id)
        return real(self, run_id)

    monkeypatch.setattr(RunCharts, "__getitem__", counted)
    monkeypatch.setattr(build_module, "run_charts", lambda *a, **k: pytest.fail("drawn ahead of the pages"))
    built = build_module.build(SAMPLE_LOGS, SAMPLE_PLAN, tmp_path / "site", jobs=1)
    assert sorted(drawn) == sorted(run["id"] for run in built.report["runs"])  # each run's page asked once
    html = (tmp_path / "site" / "runs" / "lora-r16-1.html").read_text(encoding="utf-8")
    assert 'type="application/json"' in html  # its charts are on its page

    monkeypatch.undo()
    ahead: list[str] = []
    real_run_charts = build_module.run_charts
    monkeypatch.setattr(build_module, "run_charts", lambda *a, **k: ahead.append("all") or real_run_charts(*a, **k))
    build_module.build(SAMPLE_LOGS, SAMPLE_PLAN, tmp_path / "one", single_file=True, jobs=1)
    assert ahead == ["all"]
