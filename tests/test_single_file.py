"""report.html, the file attached to the provider's order notes: one h1 (the campaign), every page a
section with its headings one level down, a table of contents, a way back to it from each section,
and the plan last and folded."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SAMPLE_LOGS, SAMPLE_PLAN

from reportgen.cli import cli
from reportgen.render.site import demote_headings, section_id

SECTION = re.compile(r'<section id="(p-[^"]+)" class="page-section">')


def build(out: Path, *options: str) -> Path:
    result = CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(out), "-q", *options])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("single") / "site", "--single-file")


@pytest.fixture(scope="module")
def report(site) -> str:
    return (site / "report.html").read_text(encoding="utf-8")


def sections(report: str) -> dict[str, str]:
    """Each section's HTML by id, in document order (the sections are siblings in <main>)."""
    main = report[report.index("<main>"): report.index("</main>")]
    starts = list(SECTION.finditer(main))
    ends = [m.start() for m in starts[1:]] + [len(main)]
    return {m.group(1): main[m.start(): end] for m, end in zip(starts, ends, strict=True)}


def headings(html: str) -> list[tuple[int, str]]:
    """(level, text) of every heading, the text without its tags."""
    return [(int(level), " ".join(re.sub(r"<[^>]+>", "", text).split()))
            for level, text in re.findall(r"<h([1-6])\b[^>]*>(.*?)</h\1>", html, flags=re.DOTALL)]


def test_headings_move_one_level_down_and_nothing_else_changes():
    html = '<h1>Runs</h1><h2 id="x">Stops</h2><h5>a</h5><h6>b</h6></h6><header class="top"><hr>&lt;h1&gt; <code>&lt;h2</code>'
    assert demote_headings(html) == '<h2>Runs</h2><h3 id="x">Stops</h3><h6>a</h6><h6>b</h6></h6><header class="top"><hr>&lt;h1&gt; <code>&lt;h2</code>'


def test_the_one_file_report_has_one_h1_and_it_is_the_campaign(report):
    h1 = re.findall(r"<h1\b[^>]*>(.*?)</h1>", report, flags=re.DOTALL)
    assert len(h1) == 1
    assert "jsum-lora-2026-11" in h1[0]


def test_each_section_has_its_page_headings_one_level_down(site, report):
    by_id = sections(report)
    pages = sorted(site.rglob("*.html"))
    pages.remove(site / "report.html")
    assert len(pages) == len(by_id)
    for page in pages:
        html = page.read_text(encoding="utf-8")
        main = html[html.index("<main>"): html.index("</main>")]
        expected = [(min(level + 1, 6), text) for level, text in headings(main)]
        assert expected and expected[0][0] == 2, page.name
        assert headings(by_id[section_id(page.relative_to(site).as_posix())]) == expected, page.name


def test_the_contents_list_every_section_in_document_order(report):
    toc = report[report.index('<nav class="toc"'): report.index("</nav>", report.index('<nav class="toc"'))]
    assert re.findall(r'href="#([^"]+)"', toc) == list(sections(report))


def test_run_pages_follow_the_runs_page_and_evidence_the_inputs_page_and_the_plan_ends_the_report(report):
    order = list(sections(report))
    runs, inputs = order.index("p-runs"), order.index("p-inputs")
    run_pages = [i for i, s in enumerate(order) if s.startswith("p-runs-")]
    evidence = [i for i, s in enumerate(order) if s.startswith("p-evidence-")]
    assert run_pages == list(range(runs + 1, runs + 1 + len(run_pages))) and len(run_pages) == 9
    assert evidence == list(range(inputs + 1, inputs + 1 + len(evidence))) and evidence
    assert order[-1] == "p-plan"


def test_the_plan_is_folded_closed(report):
    plan = sections(report)["p-plan"]
    folded = re.search(r'<details class="folded"><summary>([^<]*)</summary>(.*)</details>', plan, flags=re.DOTALL)
    assert folded, "the plan's section is one closed <details>"
    assert "plan.yaml" in folded.group(1) and "lines" in folded.group(1)
    assert 'id="p-plan--L1"' in folded.group(2) and "The plan as written" in folded.group(2)
    assert plan.index("<details") < plan.index("<h2")


def test_every_section_ends_with_a_link_back_to_the_top(report):
    assert len(re.findall(r'\bid="top"', report)) == 1
    assert re.search(r'<header class="top" id="top">', report), "the top is the header, with the navigation"
    for name, html in sections(report).items():
        assert re.search(r'<p class="to-top"><a href="#top">Back to top</a></p>\s*</section>\s*$', html), name


def test_every_page_links_to_the_one_file_report_only_when_it_is_built(site, tmp_path):
    assert '<a class="one-file" href="report.html">' in (site / "index.html").read_text(encoding="utf-8")
    assert '<a class="one-file" href="../report.html">' in (site / "runs" / "pilot-1.html").read_text(encoding="utf-8")
    assert 'class="one-file"' not in (site / "report.html").read_text(encoding="utf-8")
    plain = build(tmp_path / "site")
    assert not (plain / "report.html").exists()
    assert all("report.html" not in page.read_text(encoding="utf-8") for page in plain.rglob("*.html"))
