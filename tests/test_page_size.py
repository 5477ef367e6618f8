"""Pages stay light as the campaign grows: the checkpoints page lists a run's checkpoints on the
run's own page once there are too many for one table, and links there; a run's long tables, a file's
many quoted lines and, in a campaign of thousands of runs, the lists of runs, files, stops, notices,
warnings and checkpoint times are spread over pages of their own, each under the budget; a figure
cited from many lines lists them on a page of its own; and every link lands on the page that holds
its target."""

from __future__ import annotations

import math
import posixpath
import re
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest
from click.testing import CliRunner
from conftest import SAMPLE_LOGS, SAMPLE_PLAN, WINDOW_START, ticking
from markupsafe import escape

from reportgen.cli import cli
from reportgen.events import EventLog
from reportgen.render.site import PAGE_BYTES, anchor, templates_dir, text_html


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
    """Counter-example: the sample's runs, files, stops, warnings and evidence lists fit their pages, with no
    pager and no extra page: its top-level pages are the site's ten, and no folder but runs/ and evidence/
    holds pages."""
    from reportgen.render.site import PAGES

    site = tmp_path / "site"
    assert CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(site), "-q"]).exit_code == 0
    assert sorted(p.name for p in site.glob("*.html")) == sorted(file for file, _ in PAGES)
    assert sorted(p.name for p in site.iterdir() if p.is_dir()) == ["assets", "evidence", "runs"]
    assert not [p for p in (site / "runs").iterdir() if p.is_dir()]
    assert not [p for p in (site / "evidence").iterdir() if not re.fullmatch(r"f-[0-9a-f]{12}\.html", p.name)]
    pages = list(site.rglob("*.html"))
    assert not [p for p in pages if 'class="parts"' in p.read_text(encoding="utf-8")]
    assert max(p.stat().st_size for p in pages) < 100_000


def sample_report_of(tmp_path, runs: int) -> dict:
    """The sample's report.json grown to at least `runs` runs: its nine runs copied again and again under new
    ids (copy N of a run is <id>-copyN), each copy with a copy of whatever in the report belongs to its run
    (its checkpoints, stops and notices, input files and their problems, the lines it is cited by, the
    warnings about its files, its id in a rule's list...), naming the runs of its own copy of the campaign.
    So every list that grows with the runs grows, as it would in a campaign of that many; the deliverables,
    which a manifest lists, do not (they name the runs of the first copy)."""
    import json

    site = tmp_path / "site"
    assert CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(site), "-q"]).exit_code == 0
    report = json.loads((site / "report.json").read_text(encoding="utf-8"))
    own = [run["id"] for run in report["runs"]]
    named = re.compile("|".join(rf"(?<![\w.-]){re.escape(run)}(?![\w-])" for run in sorted(own, key=len, reverse=True)))
    in_folder = re.compile(r"runs/([^/]+)/")

    def owner(item) -> str | None:
        """The run an item of a list belongs to: a run's id, a file in its folder, an entry with its id,
        its file or a message about it alone."""
        if isinstance(item, str):
            folder = in_folder.match(item)
            return item if item in own else folder[1] if folder and folder[1] in own else None
        if not isinstance(item, dict):
            return None
        for key in ("run", "id", "path"):
            if isinstance(item.get(key), str) and (run := owner(item[key])):
                return run
        message = item.get("message")
        runs = set(named.findall(message)) if isinstance(message, str) else set()
        return runs.pop() if len(runs) == 1 else None

    def copy(item, n: int):
        """`item` with the runs it names renamed as in the campaign's copy `n`."""
        text = json.dumps(item, ensure_ascii=False)
        return json.loads(named.sub(lambda m: f"{m[0]}-copy{n * len(own) + own.index(m[0])}", text))

    def copies(item) -> list:
        return [copy(item, n) for n in range(-(-runs // len(own)))]

    def grown(value):
        if isinstance(value, dict):
            return {key: grown(item) for key, item in value.items()}
        if isinstance(value, list):
            return [copy for item in value for copy in (copies(item) if owner(item) else [grown(item)])]
        return value

    return {key: copy(value, 0) if key in ("deliverables", "costs") else grown(value) for key, value in report.items()}


@pytest.fixture(scope="module")
def thousands(tmp_path_factory) -> dict:
    """The sample's report with 3,006 runs (sample_report_of)."""
    return sample_report_of(tmp_path_factory.mktemp("thousands"), 3000)


def rendered(report: dict) -> list[tuple[str, str, str]]:
    """(file, template, html) of every page the site renders for this report, but the evidence pages (no log
    is read here)."""
    from reportgen.render.site import PlanSource, _pages, _render, environment

    env = environment(None)
    plan = PlanSource(SAMPLE_PLAN.name, SAMPLE_PLAN.read_text(encoding="utf-8"))
    common = {"report": report, "nav": [], "plan_source": plan, "single_file": None}
    return [(page.file, name, _render(env, name, page=page.drawn(), **common, **extra))
            for page, name, extra in _pages(report, {}, False, {})]


@pytest.fixture(scope="module")
def thousands_site(thousands) -> list[tuple[str, str, str]]:
    """Every page of the site of `thousands` (rendered)."""
    return rendered(thousands)


def of_template(site: list[tuple[str, str, str]], template: str) -> list[tuple[str, str]]:
    """(file, html) of the pages of `site` made from `template`."""
    return [(file, html) for file, name, html in site if name == template]


def test_a_campaign_of_thousands_of_runs_lists_them_over_runs_pages_each_within_budget(thousands, thousands_site):
    """The sample's report with 3,006 runs (its own, copied under new ids): the Runs page lists the first
    stretch, runs-2.html... the next, each under the page budget, each run once and in order, with a pager
    on every page; the counts in the text are the whole campaign's."""
    report = thousands
    runs = report["runs"]
    pages = of_template(thousands_site, "runs.html")
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


def test_checkpoints_of_thousands_of_runs_are_listed_per_run_over_pages_each_within_budget(thousands, thousands_site):
    """The sample's report with 3,006 runs and their checkpoints (copied under new ids): the per-run list
    of checkpoints is spread over checkpoints.html, checkpoints-2.html..., each under the budget, each run
    once and in order, with its counts; the first page keeps the rest of the Checkpoints page."""
    report = thousands
    pages = of_template(thousands_site, "checkpoints.html")
    assert [file for file, _ in pages][:2] == ["checkpoints.html", "checkpoints-2.html"]
    listed = []
    for number, (file, html) in enumerate(pages, 1):
        assert len(html.encode()) <= PAGE_BYTES, file
        assert ("Save interval" in html) == (number == 1)  # the rest of the page, on the first only
        listed += re.findall(r'<tr><td><a href="runs/([^"]+)\.html#checkpoints">', html)
    saved = {item["run"].rsplit("-copy", 1)[0] for item in report["checkpoints"]["items"]}
    assert listed == [run["id"] for run in report["runs"] if run["id"].rsplit("-copy", 1)[0] in saved]


# Every template that makes a page of the site: all but the base, its partials and the one-file report.
PAGE_TEMPLATES = {p.name for p in templates_dir().glob("*.html") if not p.name.startswith("_")} - {"base.html", "single.html"}
# What the pages rendered here link to but do not render (no log is read: no evidence page).
NOT_RENDERED = ("evidence/", "assets/", "report.json", "order-note.md", "next-plan.yaml")


def part_number(file: str) -> int:
    """The part of a list a page holds, from its name: 1 for `<page>.html`, N for `<page>-N.html`."""
    number = re.search(r"-(\d+)\.html$", file)
    return int(number[1]) if number else 1


def test_every_page_of_a_campaign_of_thousands_of_runs_is_within_budget(thousands_site):
    """At 3,006 runs (and 4,026 files, 1,336 stops...) every page of every template the site renders stays
    under the budget: each list that grows with the runs or the files goes on over pages of its own, and a
    figure's evidence cited from hundreds of runs is listed on a page of its own."""
    sizes = {file: len(html.encode()) for file, _, html in thousands_site}
    assert max(sizes.values()) <= PAGE_BYTES, sorted(sizes.items(), key=lambda item: -item[1])[:5]
    # Every page template at this size; a file's evidence pages grow with the file, not the campaign (the long run's, above).
    assert {name for _, name, _ in thousands_site} == PAGE_TEMPLATES - {"evidence.html"}
    spread = {"inputs-2.html", "stops-2.html", "stops/notices-2.html", "checkpoints/calendar-2.html", "index/warnings-2.html"}
    assert spread <= sizes.keys(), spread - sizes.keys()
    assert any(file.startswith("cited/") for file in sizes)


def landings(site: list[tuple[str, str, str]]) -> list[tuple[str, str, str, str]]:
    """(page, href, file it opens, fragment) of every link between the pages of `site`."""
    out = []
    for file, _, html in site:
        for href in re.findall(r'href="([^"]+)"', html):
            path, _, fragment = href.partition("#")
            target = posixpath.normpath(posixpath.join(posixpath.dirname(file), unquote(path))) if path else file
            if not target.startswith(NOT_RENDERED):
                out.append((file, href, target, fragment))
    return out


def test_every_link_between_the_pages_of_thousands_of_runs_lands_on_its_target(thousands_site):
    """Pagers, the parts of a long table, the pages of long evidence lists, and the links to a stop in the
    ledger: each opens a page of the site, at an id it holds."""
    ids = {file: set(re.findall(r'\bid="([^"]+)"', html)) for file, _, html in thousands_site}
    links = landings(thousands_site)
    missing = [(page, href) for page, href, target, fragment in links if target not in ids or (fragment and fragment not in ids[target])]
    assert missing == []
    stops = {target for _, _, target, fragment in links if fragment.startswith("stop-")}
    assert "stops.html" in stops and "stops-2.html" in stops  # a stop on a later page of the ledger is linked there


def test_every_link_to_an_input_file_lands_on_the_inputs_page_that_holds_its_row(thousands, thousands_site):
    """The Inputs page of 4,026 files goes on over inputs-2.html...: the Runs page, the run pages and the
    pages of cited lines link each file on the page that holds its row."""
    ids = {file: set(re.findall(r'\bid="([^"]+)"', html)) for file, _, html in thousands_site}
    holding = {anchor(f["path"]): file for file, _, _ in thousands_site if file.startswith("inputs")
               for f in thousands["inputs"] if anchor(f["path"]) in ids[file]}
    assert len(holding) == len(thousands["inputs"]) and len(set(holding.values())) > 1
    to_files = [(page, target, fragment) for page, _, target, fragment in landings(thousands_site) if fragment.startswith("f-")]
    assert [(page, target, fragment) for page, target, fragment in to_files if holding[fragment] != target] == []
    assert {target for _, target, _ in to_files} == set(holding.values())  # links reach every part
    assert {page.split("/")[0] for page, _, _ in to_files} >= {"runs.html", "runs", "cited"}


def test_a_long_evidence_list_shows_its_first_links_and_every_line_on_a_page_of_its_own(thousands, thousands_site):
    """The checkpoints' share of step train-r16, cited from thousands of lines: the schedule shows the first
    two links and links the rest to a page of its own, which lists every line once, in order, by file, over
    as many parts as it needs."""
    from reportgen.render.site import cited_key

    step = next(s for s in thousands["schedule"]["steps"] if s["id"] == "train-r16")
    items = next(c for c in step["explained"] if c["cause"] == "checkpoints")["evidence"]
    key = cited_key(items)
    html = dict((file, html) for file, _, html in thousands_site)
    row = re.search(r'<tr id="step-train-r16">.*?</tr>', html["schedule.html"], re.DOTALL)[0]
    cause = re.search(r"checkpoints [^<]* <div class=\"sub\">(.*?)</div>", row)[1]
    assert cause.count('class="evidence"') == 2
    assert cause.endswith(f'<a class="more-evidence" href="cited/{key}.html">and {len(items) - 2:,} more</a>')
    parts = sorted((f for f in html if f.startswith(f"cited/{key}")), key=part_number)
    assert len(parts) > 1 and all("Evidence: schedule, train-r16, checkpoints" in html[f] for f in parts)
    listed = [(name, int(line)) for f in parts for name, line in re.findall(r'href="\.\./evidence/(f-\w+)\.html#L(\d+)"', html[f])]
    assert listed == [(anchor(e["path"]), e["line"]) for e in items]


def render_evidence(count: int, registered: bool = True, single: bool = False) -> str:
    from reportgen.render.site import Links, Page, cited_key, environment

    env = environment(None)
    template = env.from_string('{% from "_macros.html" import evidence %}{{ evidence(items, page) }}')
    items = [{"path": f"runs/r{n}/events.jsonl", "line": n} for n in range(1, count + 1)]
    links = Links(cited=frozenset([cited_key(items)] if registered else []))
    return template.render(items=items, page=Page(file="index.html", title="Overview", single=single, links=links))


def test_an_evidence_list_longer_than_twenty_links_is_listed_on_a_page_of_its_own():
    html = render_evidence(21)
    assert html.count('class="evidence"') == 5 and re.search(r'<a class="more-evidence" href="cited/\w{12}\.html">and 16 more</a>$', html)


def test_an_evidence_list_of_twenty_links_and_any_in_the_one_file_report_are_shown_whole():
    """Counter-examples: twenty links stay where they are cited (the sample's longest list), as does every
    list in the one-file report, which has no page of its own for them; so does a list made by a template,
    which has none either."""
    for html in (render_evidence(20), render_evidence(300, single=True), render_evidence(300, registered=False)):
        assert "more-evidence" not in html and html.count('class="evidence"') == int(re.findall(r":(\d+)</a>$", html)[0])


def test_the_site_gives_a_long_evidence_list_a_page_the_one_file_report_keeps_it_whole(tmp_path):
    """Twelve runs of step train-r16 cite 24 lines for its span: the site's schedule shows five and links
    to a page that lists all 24 on the pages that hold them, and every link of the site lands; the one-file
    report shows the 24 where they are cited and links only within itself."""
    import json

    from reportgen.render.site import cited_key

    logs, site = tmp_path / "logs", tmp_path / "site"
    many_checkpoints(logs, runs=12, saves=2)
    result = CliRunner().invoke(cli, ["build", str(logs), str(SAMPLE_PLAN), "-o", str(site), "-q", "--single-file"])
    assert result.exit_code == 0, result.output
    items = next(s for s in json.loads((site / "report.json").read_text(encoding="utf-8"))["schedule"]["steps"]
                 if s["id"] == "train-r16")["evidence"]
    row = re.search(r'<tr id="step-train-r16">.*?</tr>', (site / "schedule.html").read_text(encoding="utf-8"), re.DOTALL)[0]
    measured = row.rsplit("<td>", 1)[1]  # the step's last cell: what its span was measured from
    assert len(items) == 24 and measured.count('class="evidence"') == 5
    assert f'<a class="more-evidence" href="cited/{cited_key(items)}.html">and 19 more</a>' in measured
    cited = (site / "cited" / f"{cited_key(items)}.html").read_text(encoding="utf-8")
    assert re.findall(r'href="\.\./evidence/(f-\w+)\.html#L(\d+)"', cited) == [(anchor(e["path"]), str(e["line"])) for e in items]
    assert unresolved(site, [page for page in site.rglob("*.html") if page.name != "report.html"]) == []
    html = (site / "report.html").read_text(encoding="utf-8")
    measured = re.search(r'<tr id="p-schedule--step-train-r16">.*?</tr>', html, re.DOTALL)[0].rsplit("<td>", 1)[1]
    assert measured.count('class="evidence"') == 24 and "more-evidence" not in measured and "cited/" not in html


def test_the_overview_names_its_first_warnings_and_stops_and_the_rest_are_a_link_away(thousands, thousands_site):
    """335 warnings and 1,336 stops: the Overview shows the first twenty of each; the other warnings go on
    over index/warnings-2.html..., and the other stops are in the ledger."""
    from reportgen.render.site import OVERVIEW_ROWS

    html = dict((file, html) for file, _, html in thousands_site)
    pages = ["index.html", *sorted((f for f in html if f.startswith("index/warnings-")), key=part_number)]
    shown = [re.search(r"<ul><li>.*?</ul>", html[page])[0].count("<li>") for page in pages]
    assert shown[0] == OVERVIEW_ROWS and len(shown) > 1 and sum(shown) == len(thousands["warnings"])
    assert f"<ul><li>{escape(thousands['warnings'][OVERVIEW_ROWS]['message'])} — " in html[pages[1]]
    stops = re.search(r"<h2>Stops</h2>.*?</ul>", html["index.html"], re.DOTALL)[0]
    assert stops.count('<li data-seen="stop|') == OVERVIEW_ROWS
    assert f'<li>and {len(thousands["stops"]) - OVERVIEW_ROWS:,} more, in <a href="stops.html">the stop ledger</a></li>' in stops


def test_a_measurement_over_many_runs_names_five_and_counts_the_rest(tmp_path):
    """A sentence about the runs of a large campaign stays a sentence (at 1,000 runs the next-campaign
    page listed every run's id in its measurements, 235 KB of them): five named, the rest counted."""
    from reportgen.numbers import listed

    assert listed(["a", "b"]) == "a, b" and listed([str(n) for n in range(1, 1001)]) == "1, 2, 3, 4, 5 and 995 more"
    page = (built_with_checkpoints(tmp_path, runs=12, saves=3) / "next.html").read_text(encoding="utf-8")
    assert "steps of lora-r16-1, lora-r16-10, lora-r16-11, lora-r16-12, lora-r16-2 and 7 more" in page
    assert "lora-r16-9," not in page
