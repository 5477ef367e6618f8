"""Render the static site from the report dictionary: jinja2 pages, charts, assets, report.json, order note."""

from __future__ import annotations

import bisect
import difflib
import hashlib
import itertools
import json
import math
import os
import re
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from importlib import resources
from pathlib import Path

import jinja2
from markupsafe import Markup, escape

from reportgen import __version__
from reportgen.errors import BuildError, during
from reportgen.model import Excerpt, QuotedRecord
from reportgen.numbers import figure, money
from reportgen.parallel import ordered_map
from reportgen.render import charts as charts_module
from reportgen.render.nextplan import FILE as NEXT_PLAN
from reportgen.render.note import order_note
from reportgen.render.output import SiteWriter
from reportgen.render.report import run_page
from reportgen.render.runcharts import MetricChart
from reportgen.render.text import markdown_html

# (file, title) in navigation order.
PAGES = [
    ("index.html", "Overview"),
    ("plan.html", "Plan"),
    ("schedule.html", "Schedule"),
    ("runs.html", "Runs"),
    ("stops.html", "Stops"),
    ("checkpoints.html", "Checkpoints"),
    ("deliverables.html", "Deliverables"),
    ("costs.html", "Costs"),
    ("next.html", "Next campaign"),
    ("inputs.html", "Inputs"),
]
ASSETS = ("style.css", "site.js")
SINGLE_FILE = "report.html"


@dataclass
class PlanSource:
    """The plan as written, shown verbatim, with the edits made since the freeze if any."""

    name: str
    text: str
    frozen_text: str | None = None

    def diff(self) -> str | None:
        if self.frozen_text is None or self.frozen_text == self.text:
            return None
        return "".join(
            difflib.unified_diff(
                self.frozen_text.splitlines(keepends=True),
                self.text.splitlines(keepends=True),
                fromfile="frozen original",
                tofile=self.name,
            )
        )


@dataclass
class Chart:
    id: str
    figure: dict
    title: str = ""
    caption: str = ""
    encoded: str = ""  # the figure's JSON when it was made already (a run's charts: where they were drawn)

    @property
    def json(self) -> str:
        return self.encoded or charts_module.figure_json(self.figure)


@dataclass(frozen=True)
class Pending:
    """A chart a page will show, drawn when the page is rendered; one whose figure is None is left out,
    unless `kept` (the page names it)."""

    id: str
    make: Callable[[], dict | None]
    kept: bool = False


@dataclass(frozen=True)
class Quote:
    """An excerpt as an evidence page shows it: each line's text, a cut line marked, a record's values as text."""

    first_line: int
    lines: tuple[str, ...]
    cited: frozenset[int]
    unit: str


def _value(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return f"{value:.6g}" if math.isfinite(value) else ("Infinity" if value > 0 else "-Infinity")


def _record(record: QuotedRecord) -> str:
    if record.problem is not None:
        return f"not read: {record.problem}"
    step = "" if record.step is None else f"step {record.step}: "
    return step + ", ".join(f"{name} = {_value(value)}" for name, value in record.values)


def text_html(text: str) -> Markup:
    """Text for an element's content, escaped as little as HTML needs there: & < > only. Quotes need
    escaping in attribute values alone, and a quoted JSON log line holds dozens of them."""
    return Markup(text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))


def shown(excerpt: Excerpt) -> Quote:
    """An excerpt as its evidence page shows it, each line already escaped for a text node (text_html)."""
    if excerpt.unit == "record":
        text = "; ".join(_record(r) for r in excerpt.records) or "(cited record)"
        return Quote(excerpt.first_line, (text_html(text),), excerpt.cited, excerpt.unit)
    lines = tuple(text_html(text + " …" if excerpt.first_line + i in excerpt.cut else text)
                  for i, text in enumerate(excerpt.lines))
    return Quote(excerpt.first_line, lines, excerpt.cited, excerpt.unit)


def section_id(file: str) -> str:
    """The id of a page's section in the single-file report."""
    return "p-" + file.removesuffix(".html").replace("/", "-")


# Every page of the site stays under PAGE_BYTES (the shared plotly.js asset aside), however long the runs:
# a long list (a run's checkpoints, a file's quoted lines) is spread over pages of its own, each holding
# at most PART_BYTES of the list's markup as estimated; on a run page its charts take their share of that.
# The rest of the budget is the page around the lists and the estimates' margin.
PAGE_BYTES = 500_000
PART_BYTES = 350_000

# The tables of a run page that grow with the run (a row per window of non-finite values, per checkpoint),
# in page order: key in the run's report entry -> (heading, id of the table's heading on every page of it).
RUN_TABLES = {"non_finite": ("Non-finite values", "non-finite"), "checkpoints": ("Checkpoints", "checkpoints")}


@dataclass(frozen=True)
class Part:
    """One page of a list spread over several: where the list starts on it, and what the pager calls it."""

    file: str
    fragment: str
    label: str


@dataclass(frozen=True)
class Listing:
    """The rows of a list that one page shows, with every page of the list (a single one: no pager)."""

    rows: list
    parts: list[Part]
    number: int = 1  # this page's part, from 1


def part_file(file: str, number: int) -> str:
    """The page of part `number` (from 1) of a file quoted over several evidence pages: the first keeps
    the file's own page, the next are `<page>-2.html`, `<page>-3.html`..."""
    return file if number == 1 else f"{file.removesuffix('.html')}-{number}.html"


def run_table_file(run_file: str, table: str, number: int) -> str:
    """The page of part `number` (from 1) of a run page's table: the run page itself, then pages in a
    folder named after the run's (`runs/<run>/checkpoints-2.html`), which no run's own page can take."""
    return run_file if number == 1 else f"{run_file.removesuffix('.html')}/{table.replace('_', '-')}-{number}.html"


def root_of(file: str) -> str:
    """The relative path from a page back to the site's top: one `../` per folder it is in."""
    return "../" * file.count("/")


def split(items: list, weight: Callable[[object], int], budget: int | None, first: int | None = None) -> list[list]:
    """`items` in consecutive parts of at most `budget` total weight, the first of at most `first` if given
    (a part holds at least one item, however heavy); all in one part when there is no budget, as in the
    one-file report."""
    if budget is None:
        return [items]
    parts: list[list] = [[]]
    held = 0
    for item in items:
        size = weight(item)
        room = first if first is not None and len(parts) == 1 else budget
        if parts[-1] and held + size > room:
            parts.append([])
            held = 0
        parts[-1].append(item)
        held += size
    return parts


def shares(room: int, needs: list[int]) -> list[int]:
    """`room` shared among lists that need `needs`: one that needs less than an equal share takes what it
    needs and leaves the rest to the others."""
    given = [0] * len(needs)
    left = room
    for done, index in enumerate(sorted(range(len(needs)), key=needs.__getitem__)):
        given[index] = min(needs[index], left // (len(needs) - done))
        left -= given[index]
    return given


def _line_bytes(line: tuple[Quote, int]) -> int:
    """The markup of one quoted line: its escaped text, its number twice (id and margin) and the tags
    (a quote's first line also opens the quote's <pre>)."""
    quote, index = line
    return len(quote.lines[index].encode()) + 2 * len(str(quote.first_line + index)) + (96 if index == 0 else 64)


def split_quotes(quotes: list[Quote], budget: int | None) -> list[list[Quote]]:
    """A file's quotes in evidence pages of about `budget` bytes each, in line order; a quote too long
    for one page (cited lines close together make one long excerpt) is cut between two lines."""
    lines = [(quote, index) for quote in quotes for index in range(len(quote.lines))]
    if budget is None or sum(map(_line_bytes, lines)) <= budget:
        return [quotes]
    parts = []
    for part in split(lines, _line_bytes, budget):
        held = []
        for _, group in itertools.groupby(part, key=lambda line: id(line[0])):  # the part's lines of one quote
            of_quote = list(group)
            quote, first = of_quote[0]
            held.append(Quote(quote.first_line + first, quote.lines[first:first + len(of_quote)], quote.cited, quote.unit))
        parts.append(held)
    return parts


def _quotes_label(quotes: list[Quote]) -> str:
    """What an evidence page holds, as its pager says it: "lines 1–9,840" (records, for a binary file)."""
    first, last = quotes[0], quotes[-1]
    unit = "records" if first.unit == "record" else "lines"
    return f"{unit} {first.first_line:,}–{last.first_line + len(last.lines) - 1:,}"


def _row_bytes(row: dict) -> int:
    """A table row's markup, estimated: twice its JSON, which holds every text the row shows (a row of
    the run page's checkpoint table weighs about 1.3 times its JSON)."""
    return 2 * len(json.dumps(row, ensure_ascii=False).encode())


def _rows_label(rows: list[dict], first: int) -> str:
    """What a page of a run's table holds, as its pager says it: "1–356 (steps 2,000–712,000)"."""
    label = f"{first:,}–{first + len(rows) - 1:,}"
    steps = [row["step"] for row in rows if row.get("step") is not None]
    return label + (f" (steps {min(steps):,}–{max(steps):,})" if steps else "")


def _spread(parts: list[list], file_of: Callable[[int], str], label: Callable[[list, int], str],
            fragment: str = "") -> list[tuple[str, Listing]]:
    """Each part of a list spread over pages: the file of its page (`file_of(number)`, from 1) and its
    Listing, whose pager names every part by `label(rows, first row's number)`; no pager for one part."""
    starts = list(itertools.accumulate((len(rows) for rows in parts[:-1]), initial=1))
    files = [file_of(number) for number in range(1, len(parts) + 1)]
    index = [Part(file, fragment, label(rows, first)) for file, rows, first in zip(files, parts, starts)] if len(parts) > 1 else []
    return [(file, Listing(rows, index, number)) for number, (file, rows) in enumerate(zip(files, parts), 1)]


def _paged(page: Page, template: str, key: str, parts: list[list], label: Callable[[list, int], str],
           title: str) -> list[tuple[Page, str, dict]]:
    """A top-level page whose list is spread over it and pages of its own (<page>-2.html...): each page
    with its part as `key` in its context; `title` is the next pages', with "page N of M" added."""
    out = []
    for number, (file, listing) in enumerate(_spread(parts, partial(part_file, page.file), label), 1):
        shown = page if number == 1 else Page(file=file, title=f"{title}, page {number} of {len(parts)}",
                                              single=page.single, line_parts=page.line_parts)
        out.append((shown, template, {key: listing}))
    return out


@dataclass
class Page:
    """One page: templates build every link and id through it, so the same templates serve the
    multi-page site (relative links) and the single-file report (in-document anchors)."""

    file: str
    title: str
    root: str = ""
    charts: list[Chart] = field(default_factory=list)
    single: bool = False
    # For each evidence page split in parts: the first line of each part after the first (see url).
    line_parts: dict[str, tuple[int, ...]] = field(default_factory=dict)
    pending: list[Pending] = field(default_factory=list)  # charts drawn where the page is rendered (see drawn)

    def drawn(self) -> Page:
        """The page with its pending charts drawn, after those it has: done where the page is rendered,
        a worker often, so that drawing one page's charts waits for no other page."""
        for chart in self.pending:
            figure = chart.make()
            if figure is not None or chart.kept:
                self.charts.append(Chart(chart.id, figure))
        self.pending = []
        return self

    def url(self, file: str, fragment: str = "") -> str:
        """A link to `file` (a site path), at `fragment` if given. A line of a file quoted over several
        evidence pages (fragment "L<n>") is linked on the part that holds it."""
        if self.single:
            return "#" + section_id(file) + (f"--{fragment}" if fragment else "")
        return self.root + self.holding(file, fragment) + (f"#{fragment}" if fragment else "")

    def holding(self, file: str, fragment: str) -> str:
        """The page that holds `fragment` of `file`: `file` itself unless it is an evidence page split in parts."""
        starts = self.line_parts.get(file)
        if not starts or not re.fullmatch(r"L\d+", fragment):
            return file
        return part_file(file, bisect.bisect_right(starts, int(fragment[1:])) + 1)

    def id(self, fragment: str) -> str:
        return f"{section_id(self.file)}--{fragment}" if self.single else fragment


def templates_dir() -> Path:
    """The built-in templates: inside the installed package, or the checkout's top-level templates/."""
    try:
        return Path(str(resources.files("reportgen.templates")))
    except ModuleNotFoundError:  # running from a source checkout that was not installed
        return Path(__file__).resolve().parents[2] / "templates"


def breakable(text: str) -> Markup:
    """A path a narrow screen may wrap after each separator (/ _ - .), never inside a name."""
    return Markup("<wbr>").join(escape(part) for part in re.split(r"(?<=[/_.-])", text) if part)


def anchor(path: str | None) -> str:
    """A stable HTML id for an input file."""
    return "f-" + hashlib.sha1((path or "").encode()).hexdigest()[:12]


class _TemplateCache(jinja2.FileSystemBytecodeCache):
    """Compiled templates kept between builds: each page worker, and every later build, loads a template's
    compiled code instead of compiling it again (compiling them all costs about as much as rendering a
    50-run site). Keyed by the template's source, so an edited or overriding template is compiled anew.
    A cache that cannot be read or written is a cache miss, never an error."""

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        if not _private(Path(self._get_cache_filename(bucket)), missing_ok=True):
            return  # another user's, or one others could have written: compiled anew, never run
        try:
            super().load_bytecode(bucket)
        except Exception:  # noqa: BLE001 - a damaged or foreign entry: compile the template instead
            bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass


def _private(path: Path, missing_ok: bool = False) -> bool:
    """The path is this user's and no one else can write to it (nor replace it: not a link)."""
    try:
        held = path.lstat()
    except FileNotFoundError:
        return missing_ok
    except OSError:
        return False
    return (not stat.S_ISLNK(held.st_mode) and held.st_uid == os.getuid()
            and not held.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def _compiler_fingerprint() -> str:
    """What compiled templates depend on besides their source: the environment and its filters (this
    module), reportgen's, Jinja's and Python's versions. Each fingerprint has a cache folder of its own,
    so an upgrade or another checkout never runs code compiled for another environment."""
    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update(f"{__version__}|{jinja2.__version__}|{sys.version}".encode())
    return digest.hexdigest()[:16]


def template_cache() -> jinja2.BytecodeCache | None:
    """The compiled-template cache in the user's cache folder ($XDG_CACHE_HOME, else ~/.cache, then
    reportgen/templates/<fingerprint>); none unless every folder from reportgen/ down is private to this
    user (the cache holds code to run). REPORTGEN_TEMPLATE_CACHE=off turns it off."""
    if os.environ.get("REPORTGEN_TEMPLATE_CACHE", "").strip().lower() in {"off", "0", "no"}:
        return None
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".cache")
    top = Path(base) / "reportgen"
    folder = top / "templates" / _compiler_fingerprint()
    try:
        top.parent.mkdir(parents=True, exist_ok=True)
        for path in (top, top / "templates", folder):
            path.mkdir(exist_ok=True, mode=0o700)
    except OSError:
        return None
    if not all(_private(path) for path in (top, top / "templates", folder)):
        return None
    return _TemplateCache(str(folder))


def environment(custom: Path | None) -> jinja2.Environment:
    """The templates of `custom` (a folder that overrides built-in templates by name), then the built-in ones."""
    search = ([str(custom)] if custom else []) + [str(templates_dir())]
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(search),
        bytecode_cache=template_cache(),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["markdown"] = markdown_html
    env.filters["anchor"] = anchor
    env.filters["breakable"] = breakable
    env.filters["hours"] = lambda v: "—" if v is None else f"{v:,.1f} h"
    env.filters["duration"] = lambda v: "—" if v is None else (f"{v * 60:,.1f} min" if abs(v) < 1 else f"{v:,.1f} h")
    env.filters["signed_hours"] = lambda v: "—" if v is None else f"{v:+,.1f} h"
    env.filters["figure"] = figure
    env.filters["money"] = lambda v, currency: "—" if v is None else money(v, currency)
    env.filters["when"] = lambda v: "—" if not v else v.replace("T", " ")
    env.globals["search_path"] = search
    env.globals["run_page"] = run_page
    return env


def _render(env: jinja2.Environment, name: str, **context) -> str:
    return _render_block(env, name, None, **context)


def _render_block(env: jinja2.Environment, name: str, block: str | None, **context) -> str:
    """A whole template, or one of its blocks (the single-file report takes each page's content)."""
    try:
        template = env.get_template(name)
        if block is None:
            return template.render(**context)
        if block not in template.blocks:
            raise BuildError(f"template {name} has no block '{block}'")
        return "".join(template.blocks[block](template.new_context(context)))
    except jinja2.TemplateNotFound as exc:
        raise BuildError(f"template {exc.name} not found; searched: {', '.join(env.globals['search_path'])}") from None
    except jinja2.TemplateError as exc:
        raise BuildError(f"template {name}: {exc}") from None


def _pages(report: dict, sources: dict[str, list[Excerpt]], single: bool,
           run_figures: dict[str, list[MetricChart]]) -> list[tuple[Page, str, dict]]:
    """(page, template, extra context) for every page of the report."""
    schedule = report["schedule"]
    steps = [step["id"] for step in schedule["steps"] if step["explained"]]
    figures = {
        "schedule.html": [Pending("gantt", partial(charts_module.schedule_gantt, schedule), kept=True),
                          Pending("waterfall", partial(charts_module.variance_waterfall, schedule))]
                         + [Pending(f"waterfall-{step}", partial(charts_module.variance_waterfall, schedule, step), kept=True)
                            for step in steps],
        "next.html": [Pending("estimates", partial(charts_module.estimates_chart, report["estimates"]))],
        "checkpoints.html": [Pending("interval", partial(charts_module.interval_chart, report["checkpoints"]["interval"]))],
    }
    # The one-file report keeps every list whole, each page one section; the site spreads a long one over pages.
    budget = None if single else PART_BYTES
    quoted = {path: split_quotes([shown(part) for part in parts], budget) for path, parts in sorted(sources.items())}
    line_parts = {evidence_file(path): tuple(part[0].first_line for part in parts[1:])
                  for path, parts in quoted.items() if len(parts) > 1}
    pages = [(Page(file=f, title=t, pending=figures.get(f, []), single=single, line_parts=line_parts), f, {})
             for f, t in PAGES]
    expand = {RUNS_PAGE: _runs_pages, CHECKPOINTS_PAGE: _checkpoints_pages}
    pages = [entry for page in pages for entry in (expand[page[1]](report, page[0], budget) if page[1] in expand else [page])]
    for run in report["runs"]:
        charts = [Chart(c.id, c.figure, c.metric, c.caption, c.json) for c in run_figures.get(run["id"], [])]
        pages.extend(_run_pages(run, charts, single, line_parts, budget))
    for path, parts in quoted.items():
        spread = _spread(parts, partial(part_file, evidence_file(path)), lambda quotes, _first: _quotes_label(quotes))
        for number, (file, listing) in enumerate(spread, 1):
            title = path if len(parts) == 1 else f"{path}, part {number} of {len(parts)}"
            page = Page(file=file, title=title, root="../", single=single, line_parts=line_parts)
            pages.append((page, "evidence.html", {"path": path, "excerpts": listing.rows, "listing": listing}))
    return pages


RUNS_PAGE = "runs.html"
# What a run's row on the Runs page shows, besides its id: its estimate (see _run_row_bytes) weighs these.
RUN_ROW_FIELDS = ("resumes", "continued_by", "evaluated_by", "variant", "status", "status_reason", "evidence", "final",
                  "config_id", "stops", "sources", "evaluates", "metrics")


def _run_row_bytes(run: dict) -> int:
    """A run's row on the Runs page, estimated: its fixed markup and twice the JSON of what it shows (a
    row weighs about 800 bytes)."""
    return 600 + 2 * len(json.dumps({key: run.get(key) for key in ("id", *RUN_ROW_FIELDS)}, ensure_ascii=False).encode())


def _runs_pages(report: dict, page: Page, budget: int | None) -> list[tuple[Page, str, dict]]:
    """The Runs page, and when the campaign has too many runs for one page, a page for each next part
    of the list (runs-2.html, runs-3.html...), in start order like the list."""
    parts = split(report["runs"], _run_row_bytes, budget)
    return _paged(page, RUNS_PAGE, "listing", parts, lambda rows, first: f"{first:,}–{first + len(rows) - 1:,}", "Runs")


CHECKPOINTS_PAGE = "checkpoints.html"
CHECKPOINTS_PER_RUN_ABOVE = 300  # above this many checkpoints the page lists them per run


def checkpoints_per_run(report: dict) -> list[dict]:
    """Each run's checkpoints in a line, in the runs' order: how many, resumable, steps, off the rented
    machine and reload-tested."""
    of_run: dict[str, list[dict]] = {}
    for item in report["checkpoints"]["items"]:
        of_run.setdefault(item["run"], []).append(item)
    rows = []
    for run in report["runs"]:
        mine = of_run.get(run["id"])
        if not mine:
            continue
        steps = [item["step"] for item in mine if item["step"] is not None]
        rows.append({
            "run": run["id"],
            "count": len(mine),
            "resumable": sum(1 for item in mine if item["resumable"] is True),
            "first_step": min(steps) if steps else None,
            "last_step": max(steps) if steps else None,
            "off_machine": sum(1 for item in mine if item["location"]["status"] in ("transferred", "copy_in_logs")),
            "reload_tested": sum(1 for item in mine if item["reload_tested"]),
        })
    return rows


def _per_run_row_bytes(row: dict) -> int:
    """A run's line of the per-run checkpoints list, estimated: its markup (about 400 bytes) and its
    run's id, written twice (link and text)."""
    return 450 + 2 * len(row["run"].encode())


def _checkpoints_pages(report: dict, page: Page, budget: int | None) -> list[tuple[Page, str, dict]]:
    """The Checkpoints page; above CHECKPOINTS_PER_RUN_ABOVE checkpoints it lists them per run, and when
    that list is too long for one page, the next parts go on pages of their own (checkpoints-2.html...)."""
    if len(report["checkpoints"]["items"]) <= CHECKPOINTS_PER_RUN_ABOVE:
        return [(page, CHECKPOINTS_PAGE, {"per_run": None})]
    parts = split(checkpoints_per_run(report), _per_run_row_bytes, budget)
    return _paged(page, CHECKPOINTS_PAGE, "per_run", parts, lambda rows, first: f"runs {first:,}–{first + len(rows) - 1:,}",
                  "Checkpoints per run")


def evidence_file(path: str) -> str:
    """The evidence page of an input file (its first, when the file is quoted over several)."""
    return f"evidence/{anchor(path)}.html"


def _run_pages(run: dict, charts: list[Chart], single: bool, line_parts: dict[str, tuple[int, ...]],
               budget: int | None) -> list[tuple[Page, str, dict]]:
    """A run's page, which shows the first part of each of its long tables (as much as its charts leave
    room for), and a page for every other part."""
    tables = {key: [run[key]] for key in RUN_TABLES}
    if budget is not None:
        needs = [sum(map(_row_bytes, run[key])) for key in RUN_TABLES]
        room = max(0, budget - sum(len(chart.json.encode()) for chart in charts))
        if sum(needs) > room:
            tables = {key: split(run[key], _row_bytes, budget, first) for key, first in zip(RUN_TABLES, shares(room, needs))}
    listings = {key: _spread(parts, partial(run_table_file, run["page"], key), _rows_label, RUN_TABLES[key][1])
                for key, parts in tables.items()}
    page = Page(file=run["page"], title=f"Run {run['id']}", root=root_of(run["page"]), charts=charts, single=single,
                line_parts=line_parts)
    pages = [(page, "run.html", {"run": run, "listings": {key: spread[0][1] for key, spread in listings.items()}})]
    for key, spread in listings.items():
        heading, fragment = RUN_TABLES[key]
        for file, listing in spread[1:]:
            title = f"Run {run['id']}: {heading.lower()}, page {listing.number} of {len(spread)}"
            page = Page(file=file, title=title, root=root_of(file), single=single, line_parts=line_parts)
            pages.append((page, "run_table.html", {"run": run, "table": key, "heading": heading, "fragment": fragment,
                                                   "listing": listing}))
    return pages


def write_site(report: dict, plan_source: PlanSource, sources: dict[str, list[Excerpt]], writer: SiteWriter,
               custom_templates: Path | None = None, progress: Callable[[str, str, int, int], None] | None = None,
               single_file: bool = False, run_figures: dict[str, list[MetricChart]] | None = None,
               next_plan: str | None = None, jobs: int = 1) -> None:
    """The multi-page site (run and evidence pages included), its assets, report.json, the order note and
    the next campaign's draft plan; with `single_file`, also report.html: every page in one self-contained
    file for attaching. The pages are rendered by up to `jobs` workers and written in order."""
    env = environment(custom_templates)
    nav = [{"file": f, "title": t} for f, t in PAGES]
    # single_file: the one-file report's name, which every page's header links to, when it is built
    common = {"report": report, "nav": nav, "plan_source": plan_source, "single_file": SINGLE_FILE if single_file else None}
    run_figures = run_figures or {}

    def page_html(entry: tuple[Page, str, dict]) -> str:
        page, template, extra = entry
        return _render(env, template, page=page.drawn(), **common, **extra)

    # Every file made from the report: report.json first so that a worker starts on it at once, the
    # one-file report last (what the workers make waits in this process until its turn to be written).
    made: list[tuple[str, Callable[[], str]]] = [
        ("report.json", lambda: json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n"),
        ("order-note.md", lambda: order_note(report)),
    ]
    with during("writing the site"):
        made += [(entry[0].file, partial(page_html, entry)) for entry in _pages(report, sources, False, run_figures)]
        if single_file:
            made.append((SINGLE_FILE, lambda: _single_file(env, common, sources, run_figures)))

        def text(task: tuple[str, Callable[[], str]]) -> str:
            file, make = task
            with during(f"writing {file}"):
                return make()

        def write(index: int, content: str) -> None:
            with during(f"writing {made[index][0]}"):
                writer.write(made[index][0], content)
            if progress:
                progress("writing", made[index][0], index + 1, len(made))

        ordered_map(text, made, jobs, write)
    for asset in ASSETS:
        writer.write(f"assets/{asset}", (templates_dir() / "assets" / asset).read_bytes())
    writer.write(charts_module.PLOTLY_ASSET, charts_module.plotly_js())
    if next_plan is not None:
        writer.write(NEXT_PLAN, next_plan)


@dataclass
class Section:
    """A page of the site as a section of the one-file report."""

    id: str
    page: Page
    html: Markup
    folded: bool = False
    parts: list[Section] = field(default_factory=list)


# In the one-file report a run page follows the Runs page and an evidence page the Inputs page, and the
# plan (a long file, read last if at all) ends the report, folded.
SECTION_PARENT = {"run.html": "runs.html", "evidence.html": "inputs.html"}
FOLDED_SECTION = "plan.html"


def demote_headings(html: str) -> str:
    """A page's headings one level down (h1 to h2, ..., h5 to h6; h6 stays), for the one-file report whose
    only h1 is the campaign. Text is escaped when rendered, so every `<hN` left is a tag."""
    return re.sub(r"<(/?)h([1-6])(?=[\s>])", lambda m: f"<{m[1]}h{min(int(m[2]) + 1, 6)}", html)


def _single_file(env: jinja2.Environment, common: dict, sources: dict[str, list[Excerpt]],
                 run_figures: dict[str, list[MetricChart]]) -> str:
    sections: dict[str, Section] = {}
    for page, template, extra in _pages(common["report"], sources, True, run_figures):
        html = demote_headings(_render_block(env, template, "content", page=page.drawn(), **common, **extra))
        section = Section(section_id(page.file), page, Markup(html), folded=page.file == FOLDED_SECTION)
        if template in SECTION_PARENT:
            sections[SECTION_PARENT[template]].parts.append(section)
        else:
            sections[page.file] = section
    assets = templates_dir() / "assets"
    return _render(
        env,
        "single.html",
        **common,
        page=Page(file="index.html", title="Report", single=True),
        sections=sorted(sections.values(), key=lambda section: section.folded),
        css=Markup((assets / "style.css").read_text(encoding="utf-8")),
        scripts=[Markup(charts_module.plotly_js()), Markup((assets / "site.js").read_text(encoding="utf-8"))],
    )
