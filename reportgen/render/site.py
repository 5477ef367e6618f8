"""Render the static site from the report dictionary: jinja2 pages, charts, assets, report.json, order note."""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import jinja2

from reportgen.errors import BuildError
from reportgen.ingest import Excerpt
from reportgen.render import charts
from reportgen.render.note import order_note
from reportgen.render.output import SiteWriter
from reportgen.render.text import markdown_html

# (file, title) in navigation order.
PAGES = [
    ("index.html", "Overview"),
    ("plan.html", "Plan"),
    ("schedule.html", "Schedule"),
    ("runs.html", "Runs"),
    ("inputs.html", "Inputs"),
]
ASSETS = ("style.css", "site.js")


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

    @property
    def json(self) -> str:
        return charts.figure_json(self.figure)


@dataclass
class Page:
    file: str
    title: str
    root: str = ""
    charts: list[Chart] = field(default_factory=list)


def templates_dir() -> Path:
    """The built-in templates: inside the installed package, or the checkout's top-level templates/."""
    try:
        return Path(str(resources.files("reportgen.templates")))
    except ModuleNotFoundError:  # running from a source checkout that was not installed
        return Path(__file__).resolve().parents[2] / "templates"


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
    env.filters["hours"] = lambda v: "—" if v is None else f"{v:,.1f} h"
    env.filters["signed_hours"] = lambda v: "—" if v is None else f"{v:+,.1f} h"
    env.filters["when"] = lambda v: "—" if not v else v.replace("T", " ")
    env.globals["search_path"] = search
    return env


def _render(env: jinja2.Environment, name: str, **context) -> str:
    try:
        return env.get_template(name).render(**context)
    except jinja2.TemplateNotFound as exc:
        raise BuildError(f"template {exc.name} not found; searched: {', '.join(env.globals['search_path'])}") from None
    except jinja2.TemplateError as exc:
        raise BuildError(f"template {name}: {exc}") from None


def write_site(report: dict, plan_source: PlanSource, sources: dict[str, list[Excerpt]], writer: SiteWriter,
               custom_templates: Path | None = None, progress: Callable[[str], None] | None = None) -> None:
    env = _environment(custom_templates)
    nav = [{"file": f, "title": t} for f, t in PAGES]
    extra = {
        "schedule.html": [Chart("gantt", charts.schedule_gantt(report["schedule"]))],
    }
    for file, title in PAGES:
        page = Page(file=file, title=title, charts=extra.get(file, []))
        html = _render(env, file, report=report, page=page, nav=nav, plan_source=plan_source)
        writer.write(file, html)
        if progress:
            progress(file)
    # Evidence pages: the cited lines of each input, so every verdict is a click from its source.
    for path, parts in sorted(sources.items()):
        page = Page(file=f"evidence/{anchor(path)}.html", title=path, root="../")
        html = _render(env, "evidence.html", report=report, page=page, nav=nav, path=path, excerpts=parts)
        writer.write(page.file, html)
    for asset in ASSETS:
        writer.write(f"assets/{asset}", (templates_dir() / "assets" / asset).read_bytes())
    writer.write(charts.PLOTLY_ASSET, charts.plotly_js())
    writer.write("report.json", json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    writer.write("order-note.md", order_note(report))
