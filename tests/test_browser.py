"""The built site in a real browser (headless Chromium), opened from file:// with no network."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time

import pytest
from click.testing import CliRunner
from conftest import SAMPLE_LOGS, SAMPLE_PLAN

from reportgen.cli import cli

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--virtual-time-budget=8000",
]

if CHROMIUM is None and os.environ.get("CI"):
    pytest.fail("CI must run the browser test: install Debian's chromium package (.ci/run does)", pytrace=False)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine")


def rendered_dom(page, tmp_path) -> str:
    result = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def chart_dom(dom: str, figure: str) -> str:
    """The part of the page's DOM that holds one chart (up to the next chart)."""
    start = re.search(rf'data-figure="[^"]*figure-{re.escape(figure)}"', dom)
    assert start, f"no chart {figure}"
    following = dom.find('data-figure="', start.end())
    return dom[start.start(): following if following > 0 else len(dom)]


def test_schedule_gantt_is_drawn_from_the_shipped_plotly_over_file_urls(tmp_path):
    site = tmp_path / "site"
    assert CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(site), "-q"]).exit_code == 0
    dom = rendered_dom(site / "schedule.html", tmp_path)
    assert 'class="main-svg"' in dom, "plotly did not draw the chart"
    gantt = chart_dom(dom, "gantt")
    # 12 planned steps, 11 measured (the dropped exploratory step never ran).
    assert len(re.findall(r'<g class="point"', gantt)) == 12 + 11
    assert "end of rented window" in gantt
    assert "time (UTC+09:00)" in gantt
    waterfall = chart_dom(dom, "waterfall")
    # ten causes, waiting between steps, unexplained, actual (the campaign's span); the bars start at the planned 48 h
    assert len(re.findall(r'<g class="point"', waterfall)) == 13
    assert "52.5 h (+4.5 h)" in waterfall and "+0.7 min" in waterfall and "planned 48.0 h" in waterfall


def test_single_file_report_draws_its_chart_without_any_other_file(tmp_path):
    site = tmp_path / "site"
    result = CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(site), "-q", "--single-file"])
    assert result.exit_code == 0
    alone = tmp_path / "attached" / "report.html"
    alone.parent.mkdir()
    alone.write_bytes((site / "report.html").read_bytes())  # as an attachment: no assets beside it
    dom = rendered_dom(alone, tmp_path)
    assert 'class="main-svg"' in dom
    assert len(re.findall(r'<g class="point"', chart_dom(dom, "gantt"))) == 12 + 11


def test_run_page_draws_every_metric_chart_with_its_stop_markers(tmp_path):
    site = tmp_path / "site"
    assert CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(site), "-q"]).exit_code == 0
    dom = rendered_dom(site / "runs" / "lora-r64-1.html", tmp_path)
    charts = re.findall(r'<div class="chart[^"]*" data-figure="figure-m\d+"', dom)
    assert len(charts) == 5  # eval_rougeL, grad_norm, loss, eval_loss, learning_rate
    assert dom.count('class="main-svg"') >= 2 * len(charts), "plotly did not draw every chart"
    assert "S2-quality (evaluated)" in dom and "S1-nonfinite" in dom  # the stop markers' labels
    assert "all 214 points shown" in dom
    assert "NaN @ 2140" in chart_dom(dom, "m2") and "+Inf @ 2140" in chart_dom(dom, "m1")  # loss, grad_norm
    assert 'aria-label="eval_rougeL of lora-r64-1 by step"' in dom


def test_checkpoints_page_draws_the_save_interval_chart(tmp_path):
    site = tmp_path / "site"
    assert CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(site), "-q"]).exit_code == 0
    dom = rendered_dom(site / "checkpoints.html", tmp_path)
    assert 'class="main-svg"' in dom, "plotly did not draw the interval chart"
    assert "Young:" in dom and "Daly:" in dom and "plan: 30.0 min" in dom


def test_next_campaign_page_draws_planned_measured_and_next_hours(tmp_path):
    site = tmp_path / "site"
    assert CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(site), "-q"]).exit_code == 0
    dom = rendered_dom(site / "next.html", tmp_path)
    chart = chart_dom(dom, "estimates")
    assert 'class="main-svg"' in chart, "plotly did not draw the estimates chart"
    # planned, measured and next for the 10 steps the next campaign keeps: train-r64 (its variant
    # diverged) and explore-len2048 (dropped at a decision point) are left out of the chart
    assert len(re.findall(r'<g class="point"', chart)) == 3 * 10
    assert "next estimate" in chart and "RTX 4090, 3 days" in dom


def test_a_served_page_reloads_itself_after_the_site_is_built_again(tmp_path):
    """`reportgen watch --serve`: the page open in the browser asks for the build's number; the plan is
    edited while it is open, the watcher builds again, and the page reloads itself to the new site."""
    import threading

    from reportgen.serve import Builds, start_server
    from reportgen.watch import Watch, run

    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS, logs)
    plan = logs / "plan.yaml"
    site = tmp_path / "site"

    class EditedWhileOpen(Builds):
        """The page's second question is answered once the plan was edited and the site built again."""

        asked = 0

        def state(self) -> dict:
            EditedWhileOpen.asked += 1
            if EditedWhileOpen.asked == 2:
                plan.write_text(plan.read_text(encoding="utf-8").replace("Does a LoRA adapter", "Does a small LoRA adapter"),
                                encoding="utf-8")
                deadline = time.monotonic() + 120
                while super().state()["version"] < 2 and time.monotonic() < deadline:
                    time.sleep(0.05)
            return super().state()

    builds = EditedWhileOpen()
    stop = threading.Event()
    watcher = threading.Thread(target=run, args=(Watch(logs, plan, site, interval=0.2), print, stop, None, builds), daemon=True)
    watcher.start()
    server = start_server(site, ("127.0.0.1", 0), builds)
    try:
        deadline = time.monotonic() + 120
        while Builds.state(builds)["version"] < 1:
            assert time.monotonic() < deadline and watcher.is_alive()
            time.sleep(0.05)
        assert "Does a small LoRA adapter" not in (site / "index.html").read_text(encoding="utf-8")
        host, port = server.server_address[:2]
        result = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                                 f"http://{host}:{port}/"], capture_output=True, text=True, timeout=180)
        assert result.returncode == 0, result.stderr[-2000:]
        assert EditedWhileOpen.asked >= 3  # the reloaded page asked again
        assert "Does a small LoRA adapter" in result.stdout  # the DOM is the new site's
    finally:
        stop.set()
        watcher.join(120)
        server.shutdown()
        server.server_close()


def test_stops_new_since_the_reader_last_marked_them_seen_are_marked(tmp_path):
    """The first look at a campaign marks nothing; after a build that found more stops, the same browser
    marks exactly those as new, and keeps marking them on the next look (until "Mark as seen")."""
    from test_clock import live_logs

    early = live_logs(tmp_path / "early")
    first, later = tmp_path / "first", tmp_path / "later"
    assert CliRunner().invoke(cli, ["build", str(early), str(early / "plan.yaml"), "-o", str(first), "-q"]).exit_code == 0
    assert CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(later), "-q"]).exit_code == 0
    before = set(re.findall(r'data-seen="([^"]+)"', (first / "stops.html").read_text(encoding="utf-8")))
    after = set(re.findall(r'data-seen="([^"]+)"', (later / "stops.html").read_text(encoding="utf-8")))
    assert before and after - before and before <= after
    # The same address for both sites (the browser keeps what was seen per campaign, not per folder).
    shown = tmp_path / "shown"
    shutil.copytree(first, shown)
    dom = rendered_dom(shown / "stops.html", tmp_path)
    assert 'class="tag tag-new"' not in dom and "seen-notice" not in dom  # the first look: everything counts as seen
    shutil.rmtree(shown)
    shutil.copytree(later, shown)
    for _look in range(2):
        dom = rendered_dom(shown / "stops.html", tmp_path)
        marked = set(re.findall(r'<tr id="[^"]*" data-seen="([^"]+)" class="new"', dom))
        assert marked == after - before
        assert f"{len(marked)} stop" in dom and "new since you last marked them seen" in dom


def test_an_alert_gone_and_back_is_new_again_to_the_reader_who_saw_it(tmp_path):
    """The schedule page lists every alert of its build: a look at a build without the overrun forgets that it
    was seen, so the overrun back at the next build is marked new (the watcher says it again too); looked at
    only while it lasts (the counter-example), it stays seen."""
    from test_clock import live_logs

    logs = live_logs(tmp_path / "live")
    written = (logs / "plan.yaml").read_text(encoding="utf-8")
    sites = {}
    for name, text in (("past", written.replace("hours: 6\n", "hours: 100\n", 1)), ("within", written)):
        plan = tmp_path / f"plan-{name}.yaml"
        plan.write_text(text, encoding="utf-8")
        sites[name] = tmp_path / name
        assert CliRunner().invoke(cli, ["build", str(logs), str(plan), "-o", str(sites[name]), "-q"]).exit_code == 0
    keys = {name: set(re.findall(r'data-seen="(alert\|[^"]+)"', (site / "schedule.html").read_text(encoding="utf-8")))
            for name, site in sites.items()}
    assert "alert|overrun" in keys["past"] - keys["within"], keys

    def look(name: str, profile: str) -> set[str]:
        shown = tmp_path / "shown"  # one address for every build, as the watcher serves them
        shutil.rmtree(shown, ignore_errors=True)
        shutil.copytree(sites[name], shown)
        dom = rendered_dom(shown / "schedule.html", tmp_path / profile)
        return set(re.findall(r'<li data-seen="([^"]+)" class="new"', dom))

    assert look("past", "a") == set()  # the first look: everything counts as seen
    assert look("within", "a") == set()
    assert look("past", "a") == {"alert|overrun"}  # gone, then back: new again
    # Counter-example: a reader who looked only while it lasted has seen it.
    assert look("past", "b") == set() and look("past", "b") == set()
