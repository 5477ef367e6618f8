"""Render the static site from the report dictionary: jinja2 pages, charts, assets, report.json, order note."""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import jinja2
from markupsafe import Markup, escape

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

    @property
    def json(self) -> str:
        return charts_module.figure_json(self.figure)


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


def shown(excerpt: Excerpt) -> Quote:
    if excerpt.unit == "record":
        text = "; ".join(_record(r) for r in excerpt.records) or "(cited record)"
        return Quote(excerpt.first_line, (text,), excerpt.cited, excerpt.unit)
    lines = tuple(text + " …" if excerpt.first_line + i in excerpt.cut else text for i, text in enumerate(excerpt.lines))
    return Quote(excerpt.first_line, lines, excerpt.cited, excerpt.unit)


def section_id(file: str) -> str:
    """The id of a page's section in the single-file report."""
    return "p-" + file.removesuffix(".html").replace("/", "-")


@dataclass
class Page:
    """One page: templates build every link and id through it, so the same templates serve the
    multi-page site (relative links) and the single-file report (in-document anchors)."""

    file: str
    title: str
    root: str = ""
    charts: list[Chart] = field(default_factory=list)
    single: bool = False

    def url(self, file: str, fragment: str = "") -> str:
        if self.single:
            return "#" + section_id(file) + (f"--{fragment}" if fragment else "")
        return self.root + file + (f"#{fragment}" if fragment else "")

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


def _environment(custom: Path | None) -> jinja2.Environment:
    search = ([str(custom)] if custom else []) + [str(templates_dir())]
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(search),
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
    figures = {"schedule.html": [Chart("gantt", charts_module.schedule_gantt(report["schedule"]))]}
    waterfall = charts_module.variance_waterfall(report["schedule"])
    if waterfall is not None:
        figures["schedule.html"].append(Chart("waterfall", waterfall))
    for step in report["schedule"]["steps"]:
        if step["explained"]:
            figures["schedule.html"].append(Chart(f"waterfall-{step['id']}", charts_module.variance_waterfall(report["schedule"], step["id"])))
    estimates = charts_module.estimates_chart(report["estimates"])
    if estimates is not None:
        figures["next.html"] = [Chart("estimates", estimates)]
    interval = charts_module.interval_chart(report["checkpoints"]["interval"])
    if interval is not None:
        figures["checkpoints.html"] = [Chart("interval", interval)]
    pages = [(Page(file=f, title=t, charts=figures.get(f, []), single=single), f, {}) for f, t in PAGES]
    for run in report["runs"]:
        charts = [Chart(c.id, c.figure, c.metric, c.caption) for c in run_figures.get(run["id"], [])]
        page = Page(file=run["page"], title=f"Run {run['id']}", root="../", charts=charts, single=single)
        pages.append((page, "run.html", {"run": run}))
    for path, parts in sorted(sources.items()):
        page = Page(file=f"evidence/{anchor(path)}.html", title=path, root="../", single=single)
        pages.append((page, "evidence.html", {"path": path, "excerpts": [shown(part) for part in parts]}))
    return pages


def write_site(report: dict, plan_source: PlanSource, sources: dict[str, list[Excerpt]], writer: SiteWriter,
               custom_templates: Path | None = None, progress: Callable[[str, str, int, int], None] | None = None,
               single_file: bool = False, run_figures: dict[str, list[MetricChart]] | None = None,
               next_plan: str | None = None, jobs: int = 1) -> None:
    """The multi-page site (run and evidence pages included), its assets, report.json, the order note and
    the next campaign's draft plan; with `single_file`, also report.html: every page in one self-contained
    file for attaching. The pages are rendered by up to `jobs` workers and written in order."""
    env = _environment(custom_templates)
    nav = [{"file": f, "title": t} for f, t in PAGES]
    # single_file: the one-file report's name, which every page's header links to, when it is built
    common = {"report": report, "nav": nav, "plan_source": plan_source, "single_file": SINGLE_FILE if single_file else None}
    run_figures = run_figures or {}
    with during("writing the site"):
        pages = _pages(report, sources, False, run_figures)

        def rendered(entry: tuple[Page, str, dict]) -> str:
            page, template, extra = entry
            with during(f"writing {page.file}"):
                return _render(env, template, page=page, **common, **extra)

        def write(index: int, html: str) -> None:
            writer.write(pages[index][0].file, html)
            if progress:
                progress("writing", pages[index][0].file, index + 1, len(pages))

        ordered_map(rendered, pages, jobs, write)
    for asset in ASSETS:
        writer.write(f"assets/{asset}", (templates_dir() / "assets" / asset).read_bytes())
    writer.write(charts_module.PLOTLY_ASSET, charts_module.plotly_js())
    with during("writing report.json"):
        writer.write("report.json", json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    with during("writing order-note.md"):
        writer.write("order-note.md", order_note(report))
    if next_plan is not None:
        writer.write(NEXT_PLAN, next_plan)
    if single_file:
        with during(f"writing {SINGLE_FILE}"):
            writer.write(SINGLE_FILE, _single_file(env, common, sources, run_figures))
        if progress:
            progress("writing", SINGLE_FILE, 1, 1)


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
        html = demote_headings(_render_block(env, template, "content", page=page, **common, **extra))
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
