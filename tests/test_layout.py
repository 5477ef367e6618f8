"""The built site fits a phone (390 px) and a laptop (1,400 px): no page scrolls sideways, a wide table
scrolls in its own box, a path wraps after a separator, and evidence beyond the first few unfolds in place.

The page widths are measured in headless Chromium driven over the DevTools protocol on a pipe:
`--window-size` cannot make a headless window narrower than 500 px, the protocol's device metrics can,
and one browser visits every page (a process per page would take minutes)."""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import shutil
import subprocess
import time
from html import unescape
from pathlib import Path
from typing import Self

import pytest
from click.testing import CliRunner
from conftest import SAMPLE_LOGS, SAMPLE_PLAN

from reportgen.cli import cli
from reportgen.render.site import Page, breakable, environment

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
PHONE, LAPTOP = 390, 1400
TIMEOUT_S = 60


@pytest.fixture(scope="module")
def chromium() -> str:
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("CI must run the browser tests: install Debian's chromium package (.ci/run does)", pytrace=False)
        pytest.skip("no Chromium on this machine")
    return CHROMIUM


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("layout") / "site"
    result = CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(out), "-q", "--single-file"])
    assert result.exit_code == 0, result.output
    return out


class Browser:
    """One headless Chromium tab, driven with DevTools protocol messages (JSON, each ended by a NUL byte)
    on the pipe that --remote-debugging-pipe opens as the browser's fds 3 (in) and 4 (out)."""

    def __init__(self, executable: str, profile: Path, width: int, height: int = 900):
        to_browser, self._send_fd = os.pipe()
        self._read_fd, from_browser = os.pipe()
        # The browser's ends, numbered 10 or above so that neither is 3 or 4 when the child moves them there;
        # the copies at 3 and 4 are the only ones left open across exec (os.pipe's are close-on-exec).
        browser_in, browser_out = (fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (to_browser, from_browser))
        for fd in (to_browser, from_browser):
            os.close(fd)

        def as_fds_3_and_4():
            os.dup2(browser_in, 3)
            os.dup2(browser_out, 4)

        self._process = subprocess.Popen(
            [executable, *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={profile}", "about:blank"],
            close_fds=False, preexec_fn=as_fds_3_and_4,  # noqa: PLW1509 - the child only calls dup2 before exec
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        for fd in (browser_in, browser_out):
            os.close(fd)
        self._buffer, self._last_id = b"", 0
        target = self._call("Target.createTarget", url="about:blank")["targetId"]
        self._session = self._call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        try:
            self._call("Browser.close")
            self._process.wait(timeout=TIMEOUT_S)
        finally:
            if self._process.poll() is None:
                self._process.kill()
            os.close(self._send_fd)
            os.close(self._read_fd)

    def call(self, method: str, **params) -> dict:
        return self._call(method, self._session, **params)

    def open(self, url: str) -> None:
        """Load a page (afresh: a #fragment of the open file loads it again) and wait until it has loaded
        and drawn two frames."""
        for address in ("about:blank", url) if "#" in url else (url,):
            self.call("Page.navigate", url=address)
            deadline = time.monotonic() + TIMEOUT_S
            while self._run("document.readyState === 'complete' && location.href") != address:
                assert time.monotonic() < deadline, f"{address} did not load in {TIMEOUT_S} s"
                time.sleep(0.02)
        self._run("new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")

    def evaluate(self, expression: str):
        """The value of a script run in the open page."""
        return self._run(expression)

    def _run(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def _call(self, method: str, session: str | None = None, **params) -> dict:
        self._last_id += 1
        message = {"id": self._last_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._send_fd, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._last_id:  # anything else is an event, and none is asked for
                assert "error" not in reply, f"{method}: {reply['error']}"
                return reply["result"]

    def _read(self) -> dict:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._read_fd], [], [], TIMEOUT_S)
            assert ready, f"Chromium sent nothing for {TIMEOUT_S} s"
            chunk = os.read(self._read_fd, 1 << 16)
            assert chunk, "Chromium closed the DevTools pipe"
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)


@pytest.fixture(scope="module")
def phone(chromium, tmp_path_factory):
    with Browser(chromium, tmp_path_factory.mktemp("phone"), PHONE) as browser:
        yield browser


@pytest.fixture(scope="module")
def laptop(chromium, tmp_path_factory):
    with Browser(chromium, tmp_path_factory.mktemp("laptop"), LAPTOP) as browser:
        yield browser


# The page's width, the viewport's, and the outermost elements that stick out of the viewport.
MEASURE = """(() => {
  const root = document.documentElement, edge = root.clientWidth;
  const out = [...document.body.querySelectorAll("*")]
    .filter(e => e.getBoundingClientRect().right > edge + 0.5 && e.parentElement.getBoundingClientRect().right <= edge + 0.5)
    .map(e => `<${e.tagName.toLowerCase()}${e.className ? " class=" + e.className : ""}> to ${Math.round(e.getBoundingClientRect().right)} px`);
  return {scroll: root.scrollWidth, client: edge, inner: window.innerWidth, out: out.slice(0, 3)};
})()"""


@pytest.mark.parametrize("window", ["phone", "laptop"])
def test_no_page_is_wider_than_the_window(request, site, window):
    browser, width = request.getfixturevalue(window), {"phone": PHONE, "laptop": LAPTOP}[window]
    pages = sorted(site.rglob("*.html"))
    names = {p.relative_to(site).as_posix() for p in pages}
    assert {"index.html", "schedule.html", "runs.html", "stops.html", "checkpoints.html", "deliverables.html",
            "costs.html", "next.html", "inputs.html", "plan.html", "report.html"} <= names
    assert any(n.startswith("runs/") for n in names) and any(n.startswith("evidence/") for n in names)
    too_wide = []
    for page in pages:
        browser.open(page.as_uri())
        m = browser.evaluate(MEASURE)
        assert m["inner"] == width, f"the window is {m['inner']} px wide, not {width}: the measure is void"
        if m["scroll"] > m["client"]:
            too_wide.append(f"{page.relative_to(site)}: {m['scroll']} px in {m['client']} px ({'; '.join(m['out'])})")
    assert not too_wide, f"{len(too_wide)} pages scroll sideways at {width} px:\n" + "\n".join(too_wide)


def test_a_table_wider_than_a_phone_scrolls_inside_its_own_box(phone, site):
    phone.open((site / "checkpoints.html").as_uri())
    tables = phone.evaluate("""[...document.querySelectorAll("main table")].map(t => ({
        box: Math.round(t.getBoundingClientRect().width), content: t.scrollWidth, scrolls: getComputedStyle(t).overflowX}))""")
    wide = [t for t in tables if t["content"] > t["box"]]
    assert wide, "the checkpoint table is wider than a phone: it must scroll"
    assert all(t["scrolls"] == "auto" and t["box"] <= PHONE for t in wide), wide


# Halfway down the one-file report: whether the contents are open, and where they are against the sections.
CONTENTS = """(() => { window.scrollTo(0, document.body.scrollHeight / 2);
  const toc = document.querySelector("nav.toc"), box = toc.getBoundingClientRect();
  const main = document.querySelector("main").getBoundingClientRect();
  return {open: toc.querySelector("details").open, top: box.top, right: box.right, mainLeft: main.left,
          mainTop: main.top + window.scrollY, tocBottom: box.bottom + window.scrollY}; })()"""


def test_the_contents_of_the_one_file_report_stay_beside_it_on_a_laptop(laptop, site):
    laptop.open((site / "report.html").as_uri())
    contents = laptop.evaluate(CONTENTS)
    assert contents["open"] and contents["top"] == 0, "halfway down, the contents are still on screen"
    assert contents["right"] <= contents["mainLeft"], "beside the sections, not over them"


def test_the_contents_of_the_one_file_report_fold_above_it_on_a_phone(phone, site):
    phone.open((site / "report.html").as_uri())
    contents = phone.evaluate(CONTENTS)
    assert not contents["open"]
    assert contents["tocBottom"] <= contents["mainTop"], "above the sections"


def test_a_link_to_a_line_of_the_folded_plan_opens_it(laptop, site):
    report = site / "report.html"
    assert 'id="p-plan--L12"' in report.read_text(encoding="utf-8")
    laptop.open(report.as_uri() + "#p-plan--L12")
    shown = laptop.evaluate("""(() => { const line = document.getElementById("p-plan--L12"), box = line.getBoundingClientRect();
        return {open: line.closest("details").open, visible: box.height > 0 && box.bottom > 0 && box.top < window.innerHeight}; })()""")
    assert shown == {"open": True, "visible": True}
    laptop.open(report.as_uri())
    assert laptop.evaluate('document.getElementById("p-plan--L12").closest("details").open') is False, \
        "without a link into it, the plan stays folded"


def test_a_path_may_wrap_after_each_separator_and_nowhere_else():
    assert breakable("runs/lora-r16-1/events.jsonl") == "runs/<wbr>lora-<wbr>r16-<wbr>1/<wbr>events.<wbr>jsonl"
    assert breakable("a<b>&c/") == "a&lt;b&gt;&amp;c/"  # escaped, and no break after the last character
    assert breakable("stdout") == "stdout"


def test_evidence_links_wrap_at_separators_and_read_as_the_path(site):
    html = (site / "index.html").read_text(encoding="utf-8")
    links = re.findall(r'<a class="evidence" href="[^"]*">(.*?)</a>', html)
    assert links and any("<wbr>" in text for text in links)
    for text in links:
        assert all(part[-1] in "/_.-" for part in text.split("<wbr>")[:-1]), f"a break inside a name: {text}"
        assert breakable(unescape(text.replace("<wbr>", ""))) == text, f"a separator with no break after it: {text}"


def render_evidence(count: int, shown: int | None) -> str:
    env = environment(None)
    template = env.from_string('{% from "_macros.html" import evidence %}{{ evidence(items, page, shown) }}')
    items = [{"path": f"runs/r{n}/events.jsonl", "line": n} for n in range(1, count + 1)]
    return template.render(items=items, page=Page(file="index.html", title="Overview"), shown=shown)


def test_evidence_beyond_the_first_few_unfolds_in_place():
    html = render_evidence(5, 2)
    first, folded = html.split("<details", 1)
    assert first.count('class="evidence"') == 2
    assert re.search(r'^ class="more-evidence"><summary>\+3 more</summary>', folded)
    assert folded.count('class="evidence"') == 3 and 'href="evidence/' in folded
    assert "<details" not in render_evidence(2, 2) and render_evidence(2, 2).count('class="evidence"') == 2
    assert "<details" not in render_evidence(5, None) and render_evidence(5, None).count('class="evidence"') == 5


def test_no_page_shows_a_count_of_further_evidence_as_plain_text(site):
    """A '+N' alone is the summary of a fold that holds the N links, never text that leads nowhere."""
    report = json.loads((site / "report.json").read_text(encoding="utf-8"))
    folds = 0
    for page in sorted(site.rglob("*.html")):
        html = page.read_text(encoding="utf-8")
        for summary, rest in re.findall(r'<details class="more-evidence"><summary>\+(\d+) more</summary>(.*?)</details>', html):
            assert rest.count('class="evidence"') == int(summary), page.name
            folds += 1
        text = re.sub(r'<summary>\+\d+ more</summary>', "", html)
        assert not re.findall(r"(?<=[\s>])\+\d+(?=[\s<;,])", text), page.name
    interval = report["checkpoints"]["interval"]["evidence"]
    assert len(interval) > 3 and folds >= 1, "the sample's save-cost evidence is folded after three links"
