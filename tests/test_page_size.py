"""Pages stay light as the campaign grows: the checkpoints page lists a run's checkpoints on the
run's own page once there are too many for one table, and links there; a run's long tables and a
file's many quoted lines are spread over pages of their own, each under the budget, and every link
lands on the page that holds its target."""

from __future__ import annotations

import math
import re
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest
from click.testing import CliRunner
from conftest import SAMPLE_LOGS, SAMPLE_PLAN, WINDOW_START, ticking

from reportgen.cli import cli
from reportgen.events import EventLog
from reportgen.render.site import PAGE_BYTES, anchor, text_html


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


def built_with_checkpoints(tmp_path, runs: int, saves: int):
    """The site of `runs` runs of `saves` checkpoints each (many_checkpoints), built with the sample plan."""
    logs = tmp_path / "logs"
    many_checkpoints(logs, runs=runs, saves=saves)
    site = tmp_path / "site"
    assert CliRunner().invoke(cli, ["build", str(logs), str(SAMPLE_PLAN), "-o", str(site), "-q"]).exit_code == 0
    return site


def test_over_300_checkpoints_are_listed_per_run_with_a_link_to_each_runs_own_table(tmp_path):
    site = built_with_checkpoints(tmp_path, runs=2, saves=160)
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


LONG_RUN = "lora-r16-1"
LONG_LOG = f"runs/{LONG_RUN}/events.jsonl"
SAVES = 3000


def long_run(logs: Path, saves: int) -> None:
    """One run that saves a checkpoint every 10 steps, `saves` times, logging its metrics only there, with a
    grad_norm that is NaN every other time: every line of its log is cited or beside one, and its run page
    has a checkpoint and half a window of non-finite values per save."""
    log = EventLog(logs / LONG_LOG, run=LONG_RUN, clock=ticking(WINDOW_START, minutes=0.1))
    log.run_start(config={"rank": 16}, variant="lora-r16")
    for n in range(1, saves + 1):
        log.metric(step=10 * n, loss=1.0, grad_norm=math.nan if n % 2 else 1.0)
        log.checkpoint_save(step=10 * n, path=f"ckpt/{LONG_RUN}/checkpoint-{10 * n}", seconds=30.0,
                            state=["model", "optimizer", "scheduler", "rng", "progress"])
    log.run_end(status="completed", step=10 * saves)


@pytest.fixture(scope="module")
def long_site(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("long")
    long_run(root / "logs", SAVES)
    site = root / "site"
    result = CliRunner().invoke(cli, ["build", str(root / "logs"), str(SAMPLE_PLAN), "-o", str(site), "-q", "--single-file"])
    assert result.exit_code == 0, result.output
    return site


def in_order(pages, first: str = "") -> list[Path]:
    """Pages of a list by their number: `first` (if among them) before `<name>-2.html`, `<name>-10.html`..."""
    return sorted(pages, key=lambda p: 1 if p.name == first else int(p.stem.rsplit("-", 1)[1]))


def links(page: Path) -> list[str]:
    return re.findall(r'href="([^"#]+)(?:#[^"]*)?"', page.read_text(encoding="utf-8"))


def test_every_page_of_a_long_run_is_within_budget(long_site):
    sizes = {p.relative_to(long_site).as_posix(): p.stat().st_size for p in long_site.rglob("*") if p.is_file()}
    # plotly.js is one shared asset; report.json is the data itself, every checkpoint in it, not a page; the
    # one-file report holds every page and plotly.js, for attaching.
    pages = {name: size for name, size in sizes.items()
             if not name.startswith("assets/plotly") and name not in ("report.json", "report.html")}
    assert max(pages.values()) <= PAGE_BYTES, sorted(pages.items(), key=lambda item: -item[1])[:3]
    assert sizes["report.json"] > PAGE_BYTES, "the campaign is large enough that its pages had to be split"


def test_a_long_runs_tables_go_on_over_pages_linked_from_its_run_page(long_site):
    run_page = long_site / "runs" / f"{LONG_RUN}.html"
    parts = {table: in_order((long_site / "runs" / LONG_RUN).glob(f"{table}-*.html")) for table in ("checkpoints", "non-finite")}
    for table, pages in parts.items():
        assert pages and [p.name for p in pages] == [f"{table}-{n}.html" for n in range(2, len(pages) + 2)], table
        for page in pages:  # linked from the run page's pager, and linking back to the run page
            assert f"../runs/{LONG_RUN}/{page.name}" in links(run_page)
            assert f"../../runs/{LONG_RUN}.html" in links(page)
            assert f'<h1 id="{table}">' in page.read_text(encoding="utf-8")
    # Every checkpoint is listed once, over the run page and its own pages, in step order.
    listed = [int(step) for page in [run_page, *parts["checkpoints"]]
              for step in re.findall(rf"<code>ckpt/{LONG_RUN}/checkpoint-(\d+)</code>", page.read_text(encoding="utf-8"))]
    assert listed == [10 * n for n in range(1, SAVES + 1)]
    windows = sum(page.read_text(encoding="utf-8").count("<tr><td>grad_norm</td>") for page in [run_page, *parts["non-finite"]])
    assert windows == SAVES // 2


def test_a_file_quoted_at_length_is_split_and_each_cited_line_is_linked_where_it_is(long_site):
    name = anchor(LONG_LOG)
    pages = in_order((long_site / "evidence").glob(f"{name}*.html"), first=f"{name}.html")
    assert [p.name for p in pages] == [f"{name}.html"] + [f"{name}-{n}.html" for n in range(2, len(pages) + 1)]
    assert len(pages) > 1
    where = {}  # every quoted line is on one page only
    for page in pages:
        for line in re.findall(r'<span id="L(\d+)" class="line', page.read_text(encoding="utf-8")):
            assert line not in where, (line, page.name)
            where[line] = page.name
    assert len(where) == 2 * SAVES + 2  # the whole log: every line is cited or beside one
    # The run page cites each save on the evidence page that holds its line.
    cited = re.findall(rf'href="\.\./evidence/({name}(?:-\d+)?\.html)#L(\d+)"',
                       (long_site / "runs" / f"{LONG_RUN}.html").read_text(encoding="utf-8"))
    assert cited and all(where[line] == page for page, line in cited)
    assert len({page for page, _ in cited}) > 1


def unresolved(site: Path, pages: list[Path]) -> list[tuple[str, str]]:
    """Every (page, link) of `pages` whose file or #fragment does not exist (each page's ids read once)."""
    ids: dict[Path, set[str]] = {}

    def ids_of(page: Path) -> set[str]:
        if page not in ids:
            ids[page] = set(re.findall(r'\bid="([^"]+)"', page.read_text(encoding="utf-8")))
        return ids[page]

    missing = []
    for page in pages:
        for href in re.findall(r'(?:href|src)="([^"]+)"', page.read_text(encoding="utf-8")):
            path, _, fragment = href.partition("#")
            target = (page.parent / unquote(path)).resolve() if path else page
            if not target.is_file() or (fragment and target.suffix == ".html" and fragment not in ids_of(target)):
                missing.append((page.relative_to(site).as_posix(), href))
    return missing


def test_every_link_of_a_long_runs_site_lands_on_its_target(long_site):
    """Each local href resolves to a file and its #fragment to an id in it: the summary on the checkpoints
    page, the pagers, the evidence links to lines on split pages."""
    summary = (long_site / "checkpoints.html").read_text(encoding="utf-8")
    assert f'href="runs/{LONG_RUN}.html#checkpoints"' in summary
    pages = [page for page in long_site.rglob("*.html") if page.name != "report.html"]  # that one: below
    assert unresolved(long_site, pages) == []


def test_the_one_file_report_of_a_long_run_keeps_its_lists_whole_and_links_within_itself(long_site):
    html = (long_site / "report.html").read_text(encoding="utf-8")
    links = re.findall(r'href="([^"]*)"', re.sub(r"<script>.*?</script>", "", html, flags=re.DOTALL))
    ids = set(re.findall(r'\bid="([^"]+)"', html))
    assert links and [link for link in links if not link.startswith("#") or link[1:] not in ids] == []
    assert 'class="parts"' not in html and html.count(f"<td><code>ckpt/{LONG_RUN}/checkpoint-") == SAVES
    assert f'href="#p-evidence-{anchor(LONG_LOG)}--L{2 * SAVES}"' in html


class RepeatedAttributes(HTMLParser):
    """Every tag whose attributes repeat a name."""

    def __init__(self) -> None:
        super().__init__()
        self.repeated: list[str] = []

    def handle_starttag(self, tag, attrs):
        names = [name for name, _ in attrs]
        if len(names) != len(set(names)):
            self.repeated.append(self.get_starttag_text())


def test_quoted_lines_are_escaped_only_as_text_needs(long_site):
    pages = list((long_site / "evidence").glob("*.html")) + list((long_site / "runs").rglob("*.html"))
    for page in pages:
        html = page.read_text(encoding="utf-8")
        assert "&#34;" not in html and "&quot;" not in html, page.name
        parser = RepeatedAttributes()
        parser.feed(html)
        assert parser.repeated == [], page.name
    assert '{"ts":"2026-11-02T' in (long_site / "evidence" / f"{anchor(LONG_LOG)}.html").read_text(encoding="utf-8")


def test_text_is_escaped_for_a_text_node_and_nothing_more():
    assert text_html('{"note": "<b> & \'x\'"}') == '{"note": "&lt;b&gt; &amp; \'x\'"}'
    assert text_html("a &amp; b") == "a &amp;amp; b"  # a log's own entity is shown as written


def test_the_sample_keeps_its_pages_whole(tmp_path):
    """Counter-example: the sample's runs and files fit their pages, with no pager and no extra page."""
    site = tmp_path / "site"
    assert CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(site), "-q"]).exit_code == 0
    assert not [p for p in (site / "runs").iterdir() if p.is_dir()]
    assert not [p for p in (site / "evidence").iterdir() if not re.fullmatch(r"f-[0-9a-f]{12}\.html", p.name)]
    pages = list(site.rglob("*.html"))
    assert not [p for p in pages if 'class="parts"' in p.read_text(encoding="utf-8")]
    assert max(p.stat().st_size for p in pages) < 100_000


def sample_report_of(tmp_path, runs: int) -> dict:
    """The sample's report.json with `runs` runs: its own, copied under new ids (x-copyN), each with
    copies of its checkpoints."""
    import copy
    import json

    site = tmp_path / "site"
    assert CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(site), "-q"]).exit_code == 0
    report = json.loads((site / "report.json").read_text(encoding="utf-8"))
    own_runs, own_items = report["runs"], report["checkpoints"]["items"]
    copied, items = [], []
    for n in range(runs):
        run = copy.deepcopy(own_runs[n % len(own_runs)])
        old = run["id"]
        run["id"], run["page"] = f"{old}-copy{n}", f"runs/{old}-copy{n}.html"
        copied.append(run)
        items += [{**copy.deepcopy(item), "run": run["id"]} for item in own_items if item["run"] == old]
    report["runs"], report["checkpoints"]["items"] = copied, items
    return report


def rendered(report: dict, template: str) -> list[tuple[str, str]]:
    """(file, html) of every page the site renders from `template` for this report."""
    from reportgen.render.site import _pages, _render, environment

    env = environment(None)
    common = {"report": report, "nav": [], "plan_source": None, "single_file": None}
    return [(page.file, _render(env, template, page=page.drawn(), **common, **extra))
            for page, name, extra in _pages(report, {}, False, {}) if name == template]


def test_a_campaign_of_thousands_of_runs_lists_them_over_runs_pages_each_within_budget(tmp_path):
    """The sample's report with 3,000 runs (its own, copied under new ids): the Runs page lists the first
    stretch, runs-2.html... the next, each under the page budget, each run once and in order, with a pager
    on every page; the counts in the text are the whole campaign's."""
    report = sample_report_of(tmp_path, 3000)
    runs = report["runs"]
    pages = rendered(report, "runs.html")
    assert [file for file, _ in pages][:2] == ["runs.html", "runs-2.html"] and len(pages) > 2
    listed = []
    for file, html in pages:
        assert len(html.encode()) <= PAGE_BYTES, file
        assert html.count('class="parts"') == 1 and all(f'href="{other}"' in html for other, _ in pages)
        training = sum(1 for r in runs if r["kind"] == "training")
        assert f"{training:,} training runs" in html or f"{training} training runs" in html
        listed += re.findall(r'<tr id="run-([^"]+)">', html)
    assert listed == [run["id"] for run in runs]


def test_the_sample_runs_page_is_one_page():
    """Counter-example: the sample's nine runs stay on runs.html, with no pager."""
    import json

    from reportgen.render.site import _pages

    report = json.loads((Path(__file__).parent / "golden" / "sample-report.json").read_text(encoding="utf-8"))
    entries = [entry for entry in _pages(report, {}, False, {}) if entry[1] == "runs.html"]
    assert [page.file for page, _t, _e in entries] == ["runs.html"]
    assert entries[0][2]["listing"].parts == []


def test_checkpoints_of_thousands_of_runs_are_listed_per_run_over_pages_each_within_budget(tmp_path):
    """The sample's report with 3,000 runs and their checkpoints (copied under new ids): the per-run list
    of checkpoints is spread over checkpoints.html, checkpoints-2.html..., each under the budget, each run
    once and in order, with its counts; the first page keeps the rest of the Checkpoints page."""
    report = sample_report_of(tmp_path, 3000)
    pages = rendered(report, "checkpoints.html")
    assert [file for file, _ in pages][:2] == ["checkpoints.html", "checkpoints-2.html"]
    listed = []
    for number, (file, html) in enumerate(pages, 1):
        assert len(html.encode()) <= PAGE_BYTES, file
        assert ("Save interval" in html) == (number == 1)  # the rest of the page, on the first only
        listed += re.findall(r'<tr><td><a href="runs/([^"]+)\.html#checkpoints">', html)
    saved = {item["run"].rsplit("-copy", 1)[0] for item in report["checkpoints"]["items"]}
    assert listed == [run["id"] for run in report["runs"] if run["id"].rsplit("-copy", 1)[0] in saved]


def test_a_measurement_over_many_runs_names_five_and_counts_the_rest(tmp_path):
    """A sentence about the runs of a large campaign stays a sentence (at 1,000 runs the next-campaign
    page listed every run's id in its measurements, 235 KB of them): five named, the rest counted."""
    from reportgen.numbers import listed

    assert listed(["a", "b"]) == "a, b" and listed([str(n) for n in range(1, 1001)]) == "1, 2, 3, 4, 5 and 995 more"
    page = (built_with_checkpoints(tmp_path, runs=12, saves=3) / "next.html").read_text(encoding="utf-8")
    assert "steps of lora-r16-1, lora-r16-10, lora-r16-11, lora-r16-12, lora-r16-2 and 7 more" in page
    assert "lora-r16-9," not in page
