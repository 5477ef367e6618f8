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
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from importlib import resources
from pathlib import Path

import jinja2
from markupsafe import Markup, escape

from reportgen import __version__
from reportgen.errors import BuildError, during
from reportgen.model import Excerpt, QuotedRecord
from reportgen.numbers import duration, figure, listed, money
from reportgen.parallel import ordered_map
from reportgen.render import charts as charts_module
from reportgen.render.memo import CLOCK_SLOT, Asked, PageMemo, Rendered, Tracked
from reportgen.render.nextplan import FILE as NEXT_PLAN
from reportgen.render.note import order_note
from reportgen.render.output import SiteWriter
from reportgen.render.report import run_page
from reportgen.render.runcharts import MetricChart, RunCharts
from reportgen.render.text import markdown_html
from reportgen.usercache import cache_folder, private

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
# a long list (a run's checkpoints, a file's quoted lines, the runs of a campaign) is spread over pages of
# its own, each holding at most PART_BYTES of the list's markup as estimated; on a page with other long
# lists or charts, they share that much. The rest of the budget is the page around the lists and the
# estimates' margin.
PAGE_BYTES = 500_000
PART_BYTES = 350_000

# An evidence list of more links than this (a step measured over hundreds of runs cites each of them) shows
# its first few where it is cited, and the whole list on a page of its own (cited_lists).
CITED_WHOLE = 20


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
    """The page of part `number` (from 1) of a page's list spread over several: the first keeps the page's
    own file, the next are `<page>-2.html`, `<page>-3.html`..."""
    return file if number == 1 else f"{file.removesuffix('.html')}-{number}.html"


def table_file(page_file: str, table: str, number: int) -> str:
    """The page of part `number` (from 1) of one of a page's tables: the page itself, then pages in a folder
    named after the page's (`runs/<run>/checkpoints-2.html`, `stops/notices-2.html`), which no page of the
    site can take."""
    return page_file if number == 1 else f"{page_file.removesuffix('.html')}/{table.replace('_', '-')}-{number}.html"


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
    the run page's checkpoint table weighs about 1.3 times its JSON), and 64 bytes more for each line it
    cites, whose link holds its path twice."""
    text = json.dumps(row, ensure_ascii=False)
    return 2 * len(text.encode()) + 64 * text.count('"line": ')


def _numbered(rows: list, first: int) -> str:
    """What a page of a list holds, as its pager says it: "1,001–2,000"."""
    return f"{first:,}–{first + len(rows) - 1:,}"


def _rows_label(rows: list[dict], first: int) -> str:
    """What a page of a table holds, as its pager says it: "1–356", with the steps of a run's table
    "1–356 (steps 2,000–712,000)"."""
    label = _numbered(rows, first)
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


def split_lists(lists: list[tuple[list, Callable[[object], int]]], budget: int | None,
                 room: int | None = None) -> list[list[list]]:
    """Each of a page's long lists (rows, a row's weight) in parts: whole when they fit the page's `room`
    (`budget` unless given) together, as always in the one-file report (no budget); else the first part of
    each takes its share of the room (shares) and the next parts at most `budget` each."""
    if budget is None:
        return [[rows] for rows, _ in lists]
    room = budget if room is None else room
    needs = [sum(map(weight, rows)) for rows, weight in lists]
    if sum(needs) <= room:
        return [[rows] for rows, _ in lists]
    return [split(rows, weight, budget, first) for (rows, weight), first in zip(lists, shares(room, needs))]


def _paged(page: Page, template: str, key: str, parts: list[list], label: Callable[[list, int], str],
           title: str, extra: dict | None = None) -> list[tuple[Page, str, dict]]:
    """A top-level page whose list is spread over it and pages of its own (<page>-2.html...): each page
    with its part as `key` in its context, the first with `extra` too; `title` is the next pages', with
    "page N of M" added."""
    out = []
    for number, (file, listing) in enumerate(_spread(parts, partial(part_file, page.file), label), 1):
        if number == 1:
            out.append((page, template, {key: listing, **(extra or {})}))
        else:
            shown = Page(file=file, title=f"{title}, page {number} of {len(parts)}", single=page.single)
            out.append((shown, template, {key: listing}))
    return out


@dataclass(frozen=True)
class Table:
    """A table of a page that goes on over pages of its own (table_file) when the page has no room for all
    of it, as a run's checkpoints do: its heading, the id of that heading on each page of it, and the macro
    of _macros.html that draws some of its rows, called as macro(rows, page, report)."""

    heading: str
    fragment: str
    macro: str


def _continued(page: Page, name: str, table: Table, parts: list[list], heading: str,
               crumbs: list[tuple[str, str]]) -> tuple[Listing, list[tuple[Page, str, dict]]]:
    """A table of `page` in `parts`: the Listing of the part the page shows, and a page (table.html) for
    each next part, headed `heading`, under the links `crumbs` ((file, text) each) back to `page`."""
    spread = _spread(parts, partial(table_file, page.file, name), _rows_label, table.fragment)
    total = sum(map(len, parts))
    entries = []
    for file, listing in spread[1:]:
        shown = Page(file=file, title=f"{heading}, page {listing.number} of {len(spread)}", root=root_of(file),
                     single=page.single)
        entries.append((shown, "table.html", {"table": table, "heading": heading, "crumbs": crumbs, "total": total,
                                              "listing": listing}))
    return spread[0][1], entries


@dataclass(frozen=True)
class Links:
    """Where the targets of links are once long lists are spread over pages, the same for every page of a
    build: the part of a file's quoted lines or of a page's list that holds a target, and the long
    evidence lists that have a page of their own."""

    # For each evidence page split in parts: the first line of each part after the first.
    line_parts: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # For each page whose list is spread over parts: the id of each row on a part after the first -> that part.
    moved: dict[str, dict[str, str]] = field(default_factory=dict)
    cited: frozenset[str] = frozenset()  # the keys (cited_key) of the evidence lists with a page of their own


@dataclass
class Page:
    """One page: templates build every link and id through it, so the same templates serve the
    multi-page site (relative links) and the single-file report (in-document anchors)."""

    file: str
    title: str
    root: str = ""
    charts: list[Chart] = field(default_factory=list)
    single: bool = False
    links: Links = field(default_factory=Links)
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
        """A link to `file` (a site path), at `fragment` if given, on the part of a list spread over
        pages that holds it (holding)."""
        if self.single:
            return "#" + section_id(file) + (f"--{fragment}" if fragment else "")
        return self.root + self.holding(file, fragment) + (f"#{fragment}" if fragment else "")

    def holding(self, file: str, fragment: str) -> str:
        """The page that holds `fragment` of `file`: `file` itself, unless it is split in parts: an evidence
        page (fragment "L<n>", a line) or a page whose list goes on over pages of its own (a row's id)."""
        moved = self.links.moved.get(file)
        if moved and fragment in moved:
            return moved[fragment]
        starts = self.links.line_parts.get(file)
        if not starts or not re.fullmatch(r"L\d+", fragment):
            return file
        return part_file(file, bisect.bisect_right(starts, int(fragment[1:])) + 1)

    def cited(self, items: list[dict]) -> str | None:
        """The page of its own of an evidence list too long to show whole (cited_lists); none for a
        shorter list, and in the one-file report, which keeps every list whole."""
        if self.single or len(items) <= CITED_WHOLE:
            return None
        key = cited_key(items)
        return cited_file(key, 1) if key in self.links.cited else None

    def id(self, fragment: str) -> str:
        return f"{section_id(self.file)}--{fragment}" if self.single else fragment


def cited_key(items: list[dict]) -> str:
    """An evidence list's name, from what it holds: the same list cited in two places has one page."""
    return hashlib.sha1(json.dumps(items, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:12]


def cited_file(key: str, number: int) -> str:
    """The page of part `number` (from 1) of the evidence list `key`: `cited/<key>.html`, `cited/<key>-2.html`..."""
    return part_file(f"cited/{key}.html", number)


# What names an item of a list in report.json, in this order: "step train-r16", "train-r16", "seconds a step"...
NAMED_BY = ("item", "id", "quantity", "cause", "code", "run", "metric")


@dataclass
class Cited:
    """An evidence list too long to show where it is cited: what it is the evidence of, in words and by
    where report.json holds it (each place, when the same list is cited in several)."""

    key: str
    items: list[dict]
    about: str
    places: list[str] = field(default_factory=list)


def _is_evidence(items: list) -> bool:
    """A list of {path, line}: the lines a figure or finding rests on (docs/report-json.md)."""
    return all(isinstance(item, dict) and item.keys() == {"path", "line"} for item in items)


def cited_lists(report: dict) -> dict[str, Cited]:
    """Every evidence list of the report longer than CITED_WHOLE, by its key (cited_key), in report order.
    Where a list is, and what it is the evidence of, is worked out for the lists found only."""
    found: dict[str, Cited] = {}
    path: list[tuple[dict | list, str | int]] = []  # (container, key or index) from the report down

    def visit(value: dict | list) -> None:
        if isinstance(value, list) and len(value) > CITED_WHOLE and _is_evidence(value):
            key = cited_key(value)
            found.setdefault(key, Cited(key, value, _about(path))).places.append(_place(path))
            return
        for key, item in value.items() if isinstance(value, dict) else enumerate(value):
            if isinstance(item, (dict, list)):
                path.append((value, key))
                visit(item)
                path.pop()

    visit(report)
    return found


def _place(path: list[tuple[dict | list, str | int]]) -> str:
    """Where report.json holds a value: "schedule.steps[2].evidence"."""
    return "".join(f"[{key}]" if isinstance(container, list) else (f".{key}" if n else str(key))
                   for n, (container, key) in enumerate(path))


def _about(path: list[tuple[dict | list, str | int]]) -> str:
    """What a value is about, in words: the report's part holding it, then the name of each item on the way."""
    about: list[str] = []
    for container, key in path:
        if isinstance(container, dict):
            about = about or [str(key).replace("_", " ")]
            continue
        item = container[key]  # type: ignore[index]
        name = next((item[k] for k in NAMED_BY if isinstance(item, dict) and isinstance(item.get(k), str)), None)
        if name:
            about.append(name.replace("_", " "))
    return ", ".join(about)


def _cited_bytes(line: tuple[dict, bool]) -> int:
    """A cited line's markup on its list's page: its link, and a row for its file when it starts one."""
    item, opens = line
    return 64 + len(str(item["line"])) + (200 + 4 * len(item["path"].encode()) if opens else 0)


def _by_file(items: list[dict]) -> list[dict]:
    """Cited lines as rows of their list's page: one row per run of lines of one file, in the list's order,
    with the file's lines (none: the whole file is cited)."""
    return [{"path": path, "lines": [item["line"] for item in group if item["line"] is not None]}
            for path, group in itertools.groupby(items, key=lambda item: item["path"])]


def _cited_pages(cited: dict[str, Cited], budget: int | None) -> list[tuple[Page, str, dict]]:
    """A page for each long evidence list (cited.html), spread over pages of its own when it is too long for one."""
    pages = []
    for key, whole in cited.items():
        lines = [(item, index == 0 or item["path"] != whole.items[index - 1]["path"]) for index, item in enumerate(whole.items)]
        parts = [[item for item, _ in part] for part in split(lines, _cited_bytes, budget)]
        for file, listing in _spread(parts, partial(cited_file, key), _numbered):
            title = f"Evidence: {whole.about}" + (f", page {listing.number} of {len(parts)}" if len(parts) > 1 else "")
            page = Page(file=file, title=title, root=root_of(file))
            pages.append((page, "cited.html", {"cited": whole, "listing": listing, "files": _by_file(listing.rows)}))
    return pages


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
        if not private(Path(self._get_cache_filename(bucket)), missing_ok=True):
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
    folder = cache_folder("templates", _compiler_fingerprint())
    if folder is None:
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
    env.filters["duration"] = duration
    env.filters["signed_hours"] = lambda v: "—" if v is None else f"{v:+,.1f} h"
    env.filters["figure"] = figure
    env.filters["money"] = lambda v, currency: "—" if v is None else money(v, currency)
    env.filters["when"] = lambda v: "—" if not v else v.replace("T", " ")
    env.filters["listed"] = lambda names, shown: listed(list(names), shown)
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
           run_figures: Mapping[str, list[MetricChart]], runs: bool = True) -> list[tuple[Page, str, dict]]:
    """(page, template, extra context) for every page of the report; the run pages left out unless `runs`
    (a build renders each run's where its charts are drawn: run_pages)."""
    schedule = report["schedule"]
    steps = [step["id"] for step in schedule["steps"] if step["explained"]]
    figures = {
        "schedule.html": [Pending("gantt", partial(charts_module.schedule_gantt, schedule, report.get("clock")), kept=True),
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
    pages = [(Page(file=f, title=t, pending=figures.get(f, []), single=single), f, {}) for f, t in PAGES]
    expand = {INDEX_PAGE: _index_pages, RUNS_PAGE: _runs_pages, STOPS_PAGE: _stops_pages, CHECKPOINTS_PAGE: _checkpoints_pages,
              INPUTS_PAGE: _inputs_pages}
    pages = [entry for page in pages for entry in (expand[page[1]](report, page[0], budget) if page[1] in expand else [page])]
    if runs:
        relations = RunRelations.of(report)
        pages += [entry for run in report["runs"] for entry in run_pages(run, run_figures, single, relations)]
    for path, parts in quoted.items():
        spread = _spread(parts, partial(part_file, evidence_file(path)), lambda quotes, _first: _quotes_label(quotes))
        for number, (file, listing) in enumerate(spread, 1):
            title = path if len(parts) == 1 else f"{path}, part {number} of {len(parts)}"
            page = Page(file=file, title=title, root="../", single=single)
            pages.append((page, "evidence.html", {"path": path, "excerpts": listing.rows, "listing": listing}))
    cited = {} if single else cited_lists(report)
    pages += _cited_pages(cited, budget)
    # Where a link lands is known once every list is spread: the same for every page, set before any is rendered.
    links = Links(line_parts, _moved(pages), frozenset(cited))
    for page, _template, _extra in pages:
        page.links = links
    return pages


# The id of a row of a page's list, for the pages whose list other pages link into: when the list goes on
# over pages of its own (<page>-2.html...), a link to a row there goes to the part that holds it.
ROW_IDS: dict[str, Callable[[dict], str]] = {
    "inputs.html": lambda row: anchor(row["path"]),
    "stops.html": lambda row: f"stop-{row['id']}",
}


def _moved(pages: list[tuple[Page, str, dict]]) -> dict[str, dict[str, str]]:
    """For each page whose list (its `listing`) goes on over pages of its own: the id of each row there -> its page."""
    moved: dict[str, dict[str, str]] = {}
    for page, template, extra in pages:
        listing = extra.get("listing")
        if template in ROW_IDS and listing is not None and listing.number > 1:
            moved.setdefault(listing.parts[0].file, {}).update({ROW_IDS[template](row): page.file for row in listing.rows})
    return moved


INDEX_PAGE = "index.html"
OVERVIEW_ROWS = 20  # the Overview names at most this many warnings and stops; the rest are a link away
WARNINGS_TABLE = Table("Warnings", "warnings", "warnings_list")


def _index_pages(report: dict, page: Page, budget: int | None) -> list[tuple[Page, str, dict]]:
    """The Overview: the first OVERVIEW_ROWS warnings, the others on pages of their own (index/warnings-2.html...),
    and the first OVERVIEW_ROWS stops, with a link to the ledger for the others. The one-file report shows
    them all."""
    warnings, stops = report["warnings"], report["stops"]
    if budget is not None and len(warnings) > OVERVIEW_ROWS:
        parts = [warnings[:OVERVIEW_ROWS], *split(warnings[OVERVIEW_ROWS:], _row_bytes, budget)]
    else:
        parts = [warnings]
    listing, more = _continued(page, "warnings", WARNINGS_TABLE, parts, "Warnings", [(INDEX_PAGE, "Overview")])
    shown_stops = stops if budget is None else stops[:OVERVIEW_ROWS]
    return [(page, INDEX_PAGE, {"listings": {"warnings": listing}, "stops_shown": shown_stops}), *more]


RUNS_PAGE = "runs.html"
# What a run's row on the Runs page shows, besides its id: its estimate (see _run_row_bytes) weighs these.
RUN_ROW_FIELDS = ("resumes", "continued_by", "evaluated_by", "variant", "status", "status_reason", "at_work", "evidence", "final",
                  "config_id", "stops", "sources", "evaluates", "metrics")


def _run_row_bytes(run: dict) -> int:
    """A run's row on the Runs page, estimated: its fixed markup and twice the JSON of what it shows (a
    row weighs about 800 bytes)."""
    return 600 + 2 * len(json.dumps({key: run.get(key) for key in ("id", *RUN_ROW_FIELDS)}, ensure_ascii=False).encode())


def _runs_pages(report: dict, page: Page, budget: int | None) -> list[tuple[Page, str, dict]]:
    """The Runs page, and when the campaign has too many runs for one page, a page for each next part
    of the list (runs-2.html, runs-3.html...), in start order like the list."""
    return _paged(page, RUNS_PAGE, "listing", split(report["runs"], _run_row_bytes, budget), _numbered, "Runs")


STOPS_PAGE = "stops.html"
NOTICES_TABLE = Table("Seen, but not a stop", "notices", "notices_list")


def _stops_pages(report: dict, page: Page, budget: int | None) -> list[tuple[Page, str, dict]]:
    """The Stops page; when the campaign has too many stops for one page, the ledger goes on over pages of
    its own (stops-2.html...), and so do the notices (stops/notices-2.html...)."""
    ledger, notices = split_lists([(report["stops"], _row_bytes), (report["stop_notices"], _row_bytes)], budget)
    listing, more = _continued(page, "notices", NOTICES_TABLE, notices, "Stops: seen, but not a stop", [(STOPS_PAGE, "Stops")])
    return _paged(page, STOPS_PAGE, "listing", ledger, _numbered, "Stops", {"listings": {"notices": listing}}) + more


CHECKPOINTS_PAGE = "checkpoints.html"
CHECKPOINTS_PER_RUN_ABOVE = 300  # above this many checkpoints the page lists them per run
CALENDAR_TABLE = Table("Time in the calendar", "calendar", "calendar_table")


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
    that list is too long for one page, the next parts go on pages of their own (checkpoints-2.html...),
    as do those of the time each run's checkpoints took (checkpoints/calendar-2.html...)."""
    per_run = checkpoints_per_run(report) if len(report["checkpoints"]["items"]) > CHECKPOINTS_PER_RUN_ABOVE else None
    calendar, runs = split_lists([(report["checkpoints"]["calendar"]["runs"], _row_bytes), (per_run or [], _per_run_row_bytes)],
                                 budget)
    listing, more = _continued(page, "calendar", CALENDAR_TABLE, calendar, "Checkpoints: time in the calendar",
                               [(CHECKPOINTS_PAGE, "Checkpoints")])
    extra = {"listings": {"calendar": listing}}
    if per_run is None:
        return [(page, CHECKPOINTS_PAGE, {"per_run": None, **extra}), *more]
    return _paged(page, CHECKPOINTS_PAGE, "per_run", runs, lambda rows, first: f"runs {_numbered(rows, first)}",
                  "Checkpoints per run", extra) + more


INPUTS_PAGE = "inputs.html"
UNLINKED_TABLE = Table("Sources that are not runs", "unlinked", "unlinked_table")


def _input_row_bytes(row: dict) -> int:
    """A file's row on the Inputs page, estimated: its markup (about 200 bytes) and twice the text it shows."""
    return 200 + _row_bytes({key: row[key] for key in ("path", "format", "problems", "notes")})


def _inputs_pages(report: dict, page: Page, budget: int | None) -> list[tuple[Page, str, dict]]:
    """The Inputs page; when LOGS holds too many files for one page, their table goes on over pages of its
    own (inputs-2.html...), and so does that of the sources that are not runs (inputs/unlinked-2.html...).
    Links to a file's row (inputs.html#f-...) open the page that holds it (ROW_IDS)."""
    files, unlinked = split_lists([(report["inputs"], _input_row_bytes), (report["unlinked_sources"], _row_bytes)], budget)
    listing, more = _continued(page, "unlinked", UNLINKED_TABLE, unlinked, "Inputs: sources that are not runs",
                               [(INPUTS_PAGE, "Inputs")])
    return _paged(page, INPUTS_PAGE, "listing", files, _numbered, "Inputs", {"listings": {"unlinked": listing}}) + more


def evidence_file(path: str) -> str:
    """The evidence page of an input file (its first, when the file is quoted over several)."""
    return f"evidence/{anchor(path)}.html"


# The tables of a run page that grow with the run (a row per window of non-finite values, per checkpoint),
# in page order, by their key in the run's report entry.
RUN_TABLES = {
    "non_finite": Table("Non-finite values", "non-finite", "non_finite_table"),
    "checkpoints": Table("Checkpoints", "checkpoints", "checkpoints_table"),
}


@dataclass(frozen=True)
class RunRelations:
    """What a run's page shows of the other runs and of the stops, looked up once for every run page: each
    run's stops, and each run's first step (the runs it continues, is continued by or names)."""

    stops: dict[str, list[dict]]
    first_steps: dict[str, int | None]

    @staticmethod
    def of(report: dict) -> RunRelations:
        stops: dict[str, list[dict]] = {}
        for stop in report["stops"]:
            stops.setdefault(stop["run"], []).append(stop)
        return RunRelations(stops, {run["id"]: run["first_step"] for run in report["runs"]})

    def context(self, run: dict) -> dict:
        """run.html's `run_stops` and `linked` (the runs it names that are in the logs -> their first step)."""
        named = [run["resumes"], *run["continued_by"], *(d.get("other") for d in run["identity"])]
        return {"run_stops": self.stops.get(run["id"], []),
                "linked": {other: self.first_steps[other] for other in named if other in self.first_steps}}


def run_pages(run: dict, run_figures: Mapping[str, list[MetricChart]], single: bool,
              relations: RunRelations) -> list[tuple[Page, str, dict]]:
    """A run's page with its charts, which shows the first part of each of its long tables (as much as its
    charts leave room for), and a page for every other part."""
    charts = [Chart(c.id, c.figure, c.metric, c.caption, c.json) for c in run_figures.get(run["id"], [])]
    budget = None if single else PART_BYTES
    room = None if budget is None else max(0, budget - sum(len(chart.json.encode()) for chart in charts))
    parts = split_lists([(run[key], _row_bytes) for key in RUN_TABLES], budget, room)
    page = Page(file=run["page"], title=f"Run {run['id']}", root=root_of(run["page"]), charts=charts, single=single)
    kind = "Evaluation run" if run["kind"] == "evaluation" else "Run"
    crumbs = [(RUNS_PAGE, "Runs"), (run["page"], run["id"])]
    listings, pages = {}, []
    for (key, table), table_parts in zip(RUN_TABLES.items(), parts):
        listings[key], more = _continued(page, key, table, table_parts, f"{kind} {run['id']}: {table.heading.lower()}", crumbs)
        pages += more
    return [(page, "run.html", {"run": run, "listings": listings, **relations.context(run)}), *pages]


def _linked(entries: list[tuple[Page, str, dict]], links: Links) -> list[tuple[Page, str, dict]]:
    """Pages with where this build's links land."""
    for page, _template, _extra in entries:
        page.links = links
    return entries


def _templates_fingerprint() -> bytes:
    """The built-in templates, as one digest: an edit to any of them renders every page anew."""
    folder = templates_dir()
    return hashlib.blake2b(b"".join(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes()
                                    for path in sorted(folder.rglob("*")) if path.is_file()), digest_size=16).digest()


def write_site(report: dict, plan_source: PlanSource, sources: dict[str, list[Excerpt]], writer: SiteWriter,
               custom_templates: Path | None = None, progress: Callable[[str, str, int, int], None] | None = None,
               single_file: bool = False, run_figures: Mapping[str, list[MetricChart]] | None = None,
               next_plan: str | None = None, jobs: int = 1, memo: PageMemo | None = None) -> None:
    """The multi-page site (run and evidence pages included), its assets, report.json, the order note and
    the next campaign's draft plan; with `single_file`, also report.html: every page in one self-contained
    file for attaching. The pages are rendered by up to `jobs` workers and written in order: a run's pages
    where its charts are drawn, when `run_figures` draws them as they are asked for (RunCharts)."""
    env = environment(custom_templates)
    nav = [{"file": f, "title": t} for f, t in PAGES]
    # single_file: the one-file report's name, which every page's header links to, when it is built
    common = {"report": report, "nav": nav, "plan_source": plan_source, "single_file": SINGLE_FILE if single_file else None}
    run_figures = {} if run_figures is None else run_figures

    def page_html(entry: tuple[Page, str, dict]) -> list[tuple[str, str]]:
        page, template, extra = entry
        return [(page.file, _render(env, template, page=page.drawn(), **common, **extra))]

    def runs_html(run: dict, links: Links) -> list[tuple[str, str]]:
        """A run's pages, its charts drawn here (where the pages are rendered)."""
        return [file_and_html for entry in _linked(run_pages(run, run_figures, False, relations), links)
                for file_and_html in page_html(entry)]

    def for_memo(entries: list[tuple[Page, str, dict]]) -> Rendered:
        """Pages rendered for the page memo: the report's entries they read and what they asked of the cited
        lists noted, the clock's banner left as a slot."""
        tracked, asked = Tracked(report), Asked(links.cited)
        context = {**common, "report": tracked, "clock_html": CLOCK_SLOT}
        files = [(page.file, _render(env, template, page=page.drawn(), **context, **extra))
                 for page, template, extra in _linked(entries, replace(links, cited=asked))]
        return Rendered(files, tracked.read, asked.answers)

    # Every file made from the report, each task making one or a run's several: the runs first, each
    # drawing its charts; report.json next, so that a worker takes it early; the one-file report last
    # (what the workers make waits in this process until its turn to be written).
    with during("writing the site"):
        pages = _pages(report, sources, False, run_figures, runs=False)
        relations = RunRelations.of(report)
        links = pages[0][0].links
        # With a page memo (watch), a run's pages and a file's evidence pages whose inputs are those of the last
        # build are written as they were; the others are rendered and kept. Not with templates of the user's.
        kept = None
        if memo is not None and custom_templates is None and isinstance(run_figures, RunCharts):
            kept = memo.begin(report, links.cited, _templates_fingerprint(), nav, plan_source, single_file, links.line_parts,
                              links.moved)
        banners: dict[str, str] = {}

        def filled(file: str, html: str) -> str:
            """A memo page with this build's clock banner (rendered once for each depth of page) in its slot."""
            root = root_of(file)
            if root not in banners:
                banners[root] = _render(env, "_clock.html", page=Page(file=file, title="", root=root, links=links), **common)
            return html.replace(CLOCK_SLOT, banners[root], 1)

        keys: dict[str, bytes] = {}  # task -> its memo key, for the tasks rendered anew

        def reused(name: str, key: bytes) -> bool:
            """Whether a task's pages are the memo's: if so they are written now; if not its key is noted."""
            files = kept.lookup(name, key) if kept is not None else None
            if files is None:
                keys[name] = key
                return False
            for file, html in files:
                with during(f"writing {file}"):
                    writer.write(file, filled(file, html))
            return True

        runs: list[tuple[str, Callable[[], list[tuple[str, str]] | Rendered]]] = []
        for run in report["runs"]:
            if kept is None:
                runs.append((run["page"], partial(runs_html, run, links)))
            elif not reused(run["page"], kept.key("run", kept.of(run), relations.context(run), run_figures.key(run["id"]))):
                runs.append((run["page"], partial(lambda run: for_memo(run_pages(run, run_figures, False, relations)), run)))
        others: list[tuple[str, Callable[[], list[tuple[str, str]] | Rendered]]] = []
        for entry in pages:
            page, template, extra = entry
            if kept is None or template != "evidence.html":
                others.append((page.file, partial(page_html, entry)))
            elif not reused(page.file, kept.key("page", page.file, page.title, page.root, template, extra)):
                others.append((page.file, partial(for_memo, [entry])))
        if kept is not None:  # the memo's parts of it: quick enough here
            with during("writing report.json"):
                writer.write("report.json", kept.report_json())
        whole_json = [] if kept is not None else [
            ("report.json", lambda: [("report.json", json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n")])]
        made = runs + whole_json + [("order-note.md", lambda: [("order-note.md", order_note(report))]), *others]
        if single_file:
            made.append((SINGLE_FILE, lambda: [(SINGLE_FILE, _single_file(env, common, sources, run_figures))]))
        drawing = len(runs) if isinstance(run_figures, RunCharts) else 0  # the run tasks draw the charts

        def text(task: tuple[str, Callable[[], list[tuple[str, str]] | Rendered]]) -> list[tuple[str, str]] | Rendered:
            file, make = task
            with during(f"writing {file}"):
                return make()

        def write(index: int, made_files: list[tuple[str, str]] | Rendered) -> None:
            files = made_files
            if isinstance(made_files, Rendered):
                name = made[index][0]
                kept.keep(name, keys[name], made_files)
                files = [(file, filled(file, html)) for file, html in made_files.files]
            for file, content in files:
                with during(f"writing {file}"):
                    writer.write(file, content)
            if progress and index < drawing:
                progress("drawing", made[index][0], index + 1, drawing)
            elif progress:
                progress("writing", made[index][0], index + 1 - drawing, len(made) - drawing)

        ordered_map(text, made, jobs, write)
        if kept is not None:
            kept.end()
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
                 run_figures: Mapping[str, list[MetricChart]]) -> str:
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
