"""The pipeline behind `reportgen build`: plan -> ingest -> analysis -> render, written atomically."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from reportgen.analysis import Analysis, analyse
from reportgen.analysis.clock import WALL_CLOCK
from reportgen.errors import during
from reportgen.ingest import Progress, WriteTimes, check_logs, excerpts, ingest
from reportgen.ingest.cache import ParseCache, open_cache
from reportgen.parallel import ordered_map
from reportgen.plan.freeze import Freeze, read_freeze
from reportgen.plan.load import LoadedPlan, load_plan
from reportgen.recall import Recall
from reportgen.render.memo import PageMemo
from reportgen.render.nextplan import next_plan
from reportgen.render.output import SiteWriter, check_output
from reportgen.render.report import build_report, cited_lines
from reportgen.render.runcharts import RunCharts, run_charts
from reportgen.render.site import PlanSource, write_site
from reportgen.verify import check_deliverables


@dataclass
class Built:
    report: dict
    analysis: Analysis
    plan: LoadedPlan
    frozen: Freeze | None


def build_time() -> datetime | None:
    """The build time shown on the site: SOURCE_DATE_EPOCH only, so that builds are reproducible."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    return datetime.fromtimestamp(int(epoch), UTC) if epoch.isdigit() else None


def prepare(logs: Path, plan_path: Path, progress: Progress | None = None, jobs: int = 1,
            now: datetime | None = None, cache: bool | ParseCache = False, recall: Recall | None = None,
            writes: WriteTimes | None = None) -> Built:
    """Everything but the writing: shared by `build` and `note`. The lot clock's now is `now` (`watch`: the
    wall clock), else SOURCE_DATE_EPOCH, else the newest time in the logs. With `cache`, what is read of
    each log is kept in the user's cache folder, and the logs unchanged since the last build are not read
    again (ingest/cache.py); the watcher gives the ParseCache it holds. With `recall` (held by the watcher), what the last build worked out from inputs that
    did not change is taken again (recall.py). `writes` (held by the watcher): the logs' modification times seen
    from build to build (ingest.WriteTimes), which time the runs whose records keep no time."""
    try:
        return _prepare(logs, plan_path, progress, jobs, now, cache, recall, writes)
    finally:
        if recall is not None:
            recall.settle()


def _prepare(logs: Path, plan_path: Path, progress: Progress | None, jobs: int, now: datetime | None,
             cache: bool | ParseCache, recall: Recall | None, writes: WriteTimes | None) -> Built:
    with during(f"reading the plan {plan_path}"):
        current = load_plan(plan_path, recall)
    check_logs(logs)
    with during(f"reading the frozen plan in {logs}"):
        frozen = read_freeze(logs)
    reference = frozen.plan if frozen else current
    parse_cache = cache if isinstance(cache, ParseCache) else open_cache(logs) if cache else None
    campaign = ingest(logs, exclude={plan_path}, progress=progress, jobs=jobs, cache=parse_cache, live=now, recall=recall,
                      writes=writes)
    if progress:
        progress("checking", "deliverables", 0, 1)
    checks = check_deliverables(reference.plan, logs, campaign)
    if progress:
        progress("checking", "deliverables", 1, 1)
    with during("analysing the campaign"):
        epoch = build_time()
        told = (now, WALL_CLOCK) if now is not None else (epoch, "SOURCE_DATE_EPOCH") if epoch is not None else None
        analysis = analyse(reference.plan, campaign, checks, frozen.time if frozen else None, progress,
                           map_runs=partial(ordered_map, jobs=jobs), now=told, recall=recall)
    with during("making report.json"):
        report = build_report(analysis, current, frozen, build_time())
    return Built(report=report, analysis=analysis, plan=current, frozen=frozen)


def build(logs: Path, plan_path: Path, out: Path, templates: Path | None = None,
          progress: Progress | None = None, single_file: bool = False, jobs: int = 1, now: datetime | None = None,
          cache: bool | ParseCache = False, memo: PageMemo | None = None, recall: Recall | None = None,
          writes: WriteTimes | None = None) -> Built:
    """Build the site into `out`, the reading, the charts and the pages shared among up to `jobs` worker
    processes; on any failure the previous site stays as it was. `cache`: see prepare; `memo`: the pages of
    the last build, kept by the watcher (render/memo.py); `recall`, `writes`: see prepare."""
    check_output(out, logs, plan_path)
    built = prepare(logs, plan_path, progress, jobs, now, cache, recall, writes)
    source = PlanSource(
        name=built.plan.path.name,
        text=built.plan.text,
        frozen_text=built.frozen.plan.text if built.frozen else None,
    )
    sources = excerpts(logs, cited_lines(built.report), campaign=built.analysis.campaign, recall=recall,
                       signatures=cache.signatures if isinstance(cache, ParseCache) else None)
    writer = SiteWriter(out)
    try:
        reference = built.frozen.plan if built.frozen else built.plan
        # A run's charts are drawn where its page is rendered; the one-file report, rendered in one piece,
        # takes every run's, drawn beforehand among the workers.
        with during("drawing the run charts"):
            figures = run_charts(built.analysis, progress=progress, jobs=jobs) if single_file else RunCharts(built.analysis)
        with during("writing the next campaign's plan"):
            proposed = next_plan(reference, built.analysis.plan.campaign.id, built.analysis.next)
        write_site(built.report, source, sources, writer, templates, progress, single_file=single_file,
                   run_figures=figures, next_plan=proposed, jobs=jobs, memo=memo)
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    return built
