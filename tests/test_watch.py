"""`reportgen watch`: a build after every change of LOGS or the plan, the last good site kept when one
fails, and the site served on loopback with pages that reload themselves after a build."""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from conftest import SAMPLE_LOGS

from reportgen import watch as watch_module
from reportgen.errors import ReportgenError
from reportgen.serve import (
    REFRESH,
    VERSION_PATH,
    Builds,
    parse_address,
    start_server,
    with_refresh,
)
from reportgen.watch import (
    NETWORK_FILE_SYSTEMS,
    Watch,
    collected_after,
    mount_type,
    run,
)

# How long a test waits for a build that a change should cause: a bound on a hang, not a speed target.
PATIENCE = 120.0


def test_an_address_is_a_port_on_loopback_unless_a_host_is_given():
    assert parse_address("8000") == ("127.0.0.1", 8000)
    assert parse_address(":8000") == ("127.0.0.1", 8000)
    assert parse_address("0.0.0.0:8080") == ("0.0.0.0", 8080)
    assert parse_address("[::1]:9000") == ("::1", 9000)
    for bad in ("", "http", "localhost:", "1:99999"):
        with pytest.raises(ReportgenError, match="give a port"):
            parse_address(bad)


MOUNTS = """\
/dev/sda1 / ext4 rw,relatime 0 0
server:/export /mnt/shared nfs4 rw,relatime 0 0
/dev/sdb1 /mnt/shared/local ext4 rw 0 0
host:/home/me /home/me/remote\\040logs fuse.sshfs rw 0 0
host0 /host virtiofs rw 0 0
"""


def test_the_mount_that_holds_a_folder_is_the_longest_mount_point_above_it():
    assert mount_type(Path("/host/campaign/logs"), MOUNTS) == "virtiofs" in NETWORK_FILE_SYSTEMS  # a host's folder in a VM
    assert "ext4" not in NETWORK_FILE_SYSTEMS and "overlay" not in NETWORK_FILE_SYSTEMS
    assert mount_type(Path("/mnt/shared/campaign/logs"), MOUNTS) == "nfs4"
    assert mount_type(Path("/mnt/shared/local/logs"), MOUNTS) == "ext4"  # counter-example: a local disk mounted inside
    assert mount_type(Path("/mnt/sharedx/logs"), MOUNTS) == "ext4"  # a name that only starts like the mount point
    assert mount_type(Path("/home/me/remote logs/run-1"), MOUNTS) == "fuse.sshfs"


def test_the_refresh_script_goes_before_the_last_end_of_body():
    page = b"<html><body><pre>&lt;/body&gt;</pre><p>x</p></BODY ></html>"
    served = with_refresh(page)
    assert served == page.replace(b"</BODY >", REFRESH.encode() + b"</BODY >")
    assert with_refresh(b"<p>no body end") == b"<p>no body end" + REFRESH.encode()


def copied_logs(tmp_path: Path) -> Path:
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS, logs)
    return logs


def plan_outside(tmp_path: Path) -> tuple[Path, Path]:
    """The sample's logs, and its plan beside them (outside LOGS, as many keep it)."""
    logs = copied_logs(tmp_path)
    plan = tmp_path / "plan.yaml"
    shutil.copy(logs / "plan.yaml", plan)
    return logs, plan


class Watching:
    """`run` on a thread of its own, what it says kept, stopped at the end of the test."""

    def __init__(self, watch: Watch, serve: tuple[str, int] | None = None):
        self.said: list[str] = []
        self.stop = threading.Event()
        self.builds = Builds()
        self.thread = threading.Thread(target=run, args=(watch, self.said.append, self.stop, serve, self.builds), daemon=True)
        self.thread.start()

    def until(self, what, done) -> None:
        deadline = time.monotonic() + PATIENCE
        while not done():
            assert self.thread.is_alive(), f"the watcher stopped while waiting for {what}: {self.said}"
            assert time.monotonic() < deadline, f"no {what} after {PATIENCE:.0f} s: {self.said}"
            time.sleep(0.05)

    def version(self, at_least: int) -> None:
        self.until(f"build {at_least}", lambda: self.builds.state()["version"] >= at_least)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(PATIENCE)
        assert not self.thread.is_alive()


@pytest.mark.parametrize("poll", [False, True], ids=["events", "polling"])
def test_a_line_appended_to_a_log_builds_the_site_again(tmp_path, poll):
    logs = copied_logs(tmp_path)
    site = tmp_path / "site"
    watch = Watch(logs, logs / "plan.yaml", site, interval=0.2, poll=poll)
    watching = Watching(watch)
    try:
        watching.version(1)
        assert watch.warmed  # the charts drawn once in the watcher, before its page workers fork again
        first = json.loads((site / "report.json").read_text(encoding="utf-8"))
        log = logs / "runs" / "control-1" / "events.jsonl"
        with log.open("a", encoding="utf-8") as out:
            out.write('{"ts":"2026-11-02T20:15:10.000+09:00","type":"metric","run":"control-1","step":11,"metrics":{"loss":1.5}}\n')
        watching.version(2)
        again = json.loads((site / "report.json").read_text(encoding="utf-8"))
        lines = {item["path"]: item["lines"] for item in again["inputs"]}
        assert lines["runs/control-1/events.jsonl"] == {i["path"]: i["lines"] for i in first["inputs"]}["runs/control-1/events.jsonl"] + 1
        assert any("changed: runs/control-1/events.jsonl: built" in line for line in watching.said), watching.said
        # A polled file system's times are not trusted to tell an unchanged file (ingest/cache.py Signatures).
        assert watch.parse_cache.signatures.trusted is not poll
    finally:
        watching.close()


def test_drawing_the_charts_once_imports_every_part_of_plotly_a_later_drawing_needs(tmp_path):
    """What the watcher's warming buys: once the campaign's charts have been drawn in a process, drawing them
    again imports nothing more (so page workers forked after it import nothing at each build)."""
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "reportgen", "build", str(SAMPLE_LOGS), str(SAMPLE_LOGS / "plan.yaml"), "-o", str(site),
                    "-q"], check=True)
    code = f"""
import json, sys
from reportgen.render import charts
report = json.load(open({str(site / "report.json")!r}, encoding="utf-8"))
def plotly_modules():
    return {{name for name in sys.modules if name.startswith("plotly.graph_objs.")}}
before = plotly_modules()
charts.warm(report)
warmed = plotly_modules()
charts.schedule_gantt(report["schedule"], report.get("clock"))
charts.variance_waterfall(report["schedule"])
charts.interval_chart(report["checkpoints"]["interval"])
charts.estimates_chart(report["estimates"])
print(json.dumps([len(warmed - before), sorted(plotly_modules() - warmed)]))
"""
    imported, later = json.loads(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout)
    assert imported > 10 and later == []


def test_a_build_that_fails_keeps_the_last_good_site_and_says_why(tmp_path):
    logs, plan = plan_outside(tmp_path)
    site = tmp_path / "site"
    watching = Watching(Watch(logs, plan, site, interval=0.2))
    try:
        watching.version(1)
        good = (site / "index.html").read_bytes()
        text = plan.read_text(encoding="utf-8")
        plan.write_text(text + "variants: [\n", encoding="utf-8")
        watching.until("the failure", lambda: watching.builds.state()["failure"] is not None)
        assert (site / "index.html").read_bytes() == good
        state = watching.builds.state()
        assert state["version"] == 1 and state["failure"].endswith(f"YAML syntax error: expected the node content, but found "
                                                                  f"'<stream end>'\n{plan}: 1 error in the plan")
        assert any("the build failed (the last good site stays)" in line and "YAML syntax error" in line
                   for line in watching.said), watching.said
        plan.write_text(text, encoding="utf-8")  # mended: built again
        watching.version(2)
        assert watching.builds.state()["failure"] is None
    finally:
        watching.close()


def test_a_site_folder_inside_logs_is_refused_before_anything_is_watched(tmp_path):
    logs = copied_logs(tmp_path)
    with pytest.raises(ReportgenError, match="inside LOGS"):
        run(Watch(logs, logs / "plan.yaml", logs / "site"), print)
    assert not (logs / "site").exists()


def get(url: str) -> tuple[int, dict, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def test_the_served_site_is_the_built_one_with_the_refresh_script_added_to_pages(tmp_path):
    logs = copied_logs(tmp_path)
    site = tmp_path / "site"
    builds = Builds()
    server = start_server(site, ("127.0.0.1", 0), builds)  # before the first build, as `watch --serve` starts
    try:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1"
        status, _headers, body = get(f"http://{host}:{port}/")
        assert status == 503 and b"No site yet" in body and REFRESH.encode() in body
        watching_stop = threading.Event()
        thread = threading.Thread(target=run, args=(Watch(logs, logs / "plan.yaml", site, interval=0.2), print,
                                                    watching_stop, None, builds), daemon=True)
        thread.start()
        deadline = time.monotonic() + PATIENCE
        while builds.state()["version"] < 1:
            assert time.monotonic() < deadline and thread.is_alive()
            time.sleep(0.05)
        status, headers, body = get(f"http://{host}:{port}/")
        assert status == 200 and headers["Cache-Control"] == "no-store"
        assert body == with_refresh((site / "index.html").read_bytes())
        assert REFRESH.encode() not in (site / "index.html").read_bytes()  # the file on disk is the build's
        status, _headers, body = get(f"http://{host}:{port}/assets/site.js")
        assert status == 200 and body == (site / "assets" / "site.js").read_bytes()  # not a page: as it is
        status, _headers, body = get(f"http://{host}:{port}/runs/control-1.html")
        assert status == 200 and body.endswith(REFRESH.encode() + b"</body>\n</html>\n")
        assert json.loads(get(f"http://{host}:{port}{VERSION_PATH}")[2]) == {"version": 1, "failure": None}
        head = urllib.request.Request(f"http://{host}:{port}/runs/control-1.html", method="HEAD")
        with urllib.request.urlopen(head, timeout=30) as response:  # the length of what GET sends
            assert int(response.headers["Content-Length"]) == len(get(f"http://{host}:{port}/runs/control-1.html")[2])
        assert list(site.glob(".*")), "a marker file to ask for"
        for hidden in [f"/{p.name}" for p in site.glob(".*")] + ["/runs/", "/evidence/", "/runs/none.json"]:
            status, _headers, body = get(f"http://{host}:{port}{hidden}")
            assert status == 404 and REFRESH.encode() not in body, hidden  # no marker files, no folder listings
        # A page not built yet (a run's, before its first rows) reloads itself when a build makes it.
        status, _headers, body = get(f"http://{host}:{port}/runs/lora-r16-3.html")
        assert status == 404 and body.endswith(REFRESH.encode() + b"</body>")
        watching_stop.set()
        thread.join(PATIENCE)
    finally:
        server.shutdown()
        server.server_close()


def test_each_alert_is_said_once_however_many_builds_still_find_it(tmp_path):
    """The lot open at the watcher's clock (ten minutes before its end), nothing logged for hours: the first
    build says the alerts; a line appended elsewhere builds again and says none of them twice."""
    from datetime import datetime

    from test_clock import live_logs

    logs = live_logs(tmp_path)
    late = datetime.fromisoformat("2026-11-05T08:50:00+09:00")
    watching = Watching(Watch(logs, logs / "plan.yaml", tmp_path / "site", interval=0.2, clock=lambda: late))
    try:
        watching.version(1)
        first = [line for line in watching.said if line.startswith("alert: ")]
        assert any(line.startswith("alert: lora-r16-2 has logged nothing for") for line in first), watching.said
        assert any(line.startswith("alert: the work left is projected to end") for line in first)
        with (logs / "runs" / "control-1" / "events.jsonl").open("a", encoding="utf-8") as out:
            out.write('{"ts":"2026-11-02T20:15:10.000+09:00","type":"metric","run":"control-1","step":11,"metrics":{"loss":1.5}}\n')
        watching.version(2)
        assert [line for line in watching.said if line.startswith("alert: ")] == first
    finally:
        watching.close()


def test_replayed_live_the_projection_crosses_the_lots_end_when_the_pace_drops_and_the_alert_fires_once(tmp_path):
    """The sample's logs as they stood during train-r16, then lora-r16-2's next rows appended one by one with
    the watcher running, its clock at each row's time: at 13 s a step the work left ends within the lot;
    when the pace drops to 600 s a step the projection passes the lot's end, and the watcher says so once."""
    from datetime import datetime, timedelta

    from test_clock import live_logs

    logs = live_logs(tmp_path)
    log = logs / "runs" / "lora-r16-2" / "events.jsonl"
    now = [datetime.fromisoformat("2026-11-03T09:59:08.964+09:00")]
    watching = Watching(Watch(logs, logs / "plan.yaml", tmp_path / "site", interval=0.2, clock=lambda: now[0]))
    site = tmp_path / "site"
    try:
        watching.version(1)
        assert json.loads((site / "report.json").read_text(encoding="utf-8"))["clock"]["overrun_hours"] == 0

        def lines_read() -> int | None:
            """The lines of lora-r16-2's log the site's build read (a build may come between two appends)."""
            report = json.loads((site / "report.json").read_text(encoding="utf-8"))
            return next(i["lines"] for i in report["inputs"] if i["path"] == "runs/lora-r16-2/events.jsonl")

        overruns = []
        for n, step in enumerate(range(1340, 1400, 10), start=1):
            now[0] += timedelta(seconds=6000)  # ten steps in 100 minutes: 600 s a step
            row = {"ts": now[0].isoformat(timespec="milliseconds"), "type": "metric", "run": "lora-r16-2", "step": step,
                   "metrics": {"loss": 1.48, "grad_norm": 1.2, "learning_rate": 0.00011, "num_input_tokens_seen": 9576000 + 72000 * n}}
            with log.open("a", encoding="utf-8") as out:
                out.write(json.dumps(row) + "\n")
            lines = len(log.read_bytes().splitlines())
            watching.until(f"the build with step {step}", lambda lines=lines: lines_read() == lines)
            overruns.append(json.loads((site / "report.json").read_text(encoding="utf-8"))["clock"]["overrun_hours"])
        assert overruns[0] > 0 and overruns == sorted(overruns), overruns  # past the end, later with each slow row
        said = [line for line in watching.said if line.startswith("alert: the work left is projected to end")]
        assert len(said) == 1, watching.said
    finally:
        watching.close()


def test_an_alert_that_went_away_and_comes_back_is_said_again(tmp_path):
    """The projection past the lot's end (error-analysis planned 100 h), back within it (the plan's 6 h again), then
    past it once more: the watcher says the overrun twice, once for each time it crossed; the builds between, with
    nothing past the end, say none."""
    from datetime import datetime

    from test_clock import live_logs

    logs = live_logs(tmp_path)
    plan = logs / "plan.yaml"
    written = plan.read_text(encoding="utf-8")
    longer = written.replace("hours: 6\n", "hours: 100\n", 1)
    assert longer != written
    now = datetime.fromisoformat("2026-11-03T09:59:08.964+09:00")
    watching = Watching(Watch(logs, plan, tmp_path / "site", interval=0.2, clock=lambda: now))
    site = tmp_path / "site"

    def overrun() -> float:
        return json.loads((site / "report.json").read_text(encoding="utf-8"))["clock"]["overrun_hours"]

    def said() -> int:
        return len([line for line in watching.said if line.startswith("alert: the work left is projected to end")])

    try:
        watching.version(1)
        assert overrun() == 0 and said() == 0
        for version, text, past, times in ((2, longer, True, 1), (3, written, False, 1), (4, longer, True, 2), (5, longer + "\n", True, 2)):
            plan.write_text(text, encoding="utf-8")
            watching.version(version)
            assert (overrun() > 0) is past and said() == times, (version, watching.said)
    finally:
        watching.close()


def test_why_the_first_build_failed_is_served_escaped_and_whole(tmp_path):
    """The 503 page before any site: the build's whole message, as text (a plan's name is no markup)."""
    builds = Builds()
    builds.failed("logs/<img src=x onerror=alert(1)>.yaml:3: YAML syntax error\nlogs/x.yaml: 1 error in the plan")
    server = start_server(tmp_path / "site", ("127.0.0.1", 0), builds)
    try:
        host, port = server.server_address[:2]
        status, _headers, body = get(f"http://{host}:{port}/")
        assert status == 503
        assert b"<pre>logs/&lt;img src=x onerror=alert(1)&gt;.yaml:3: YAML syntax error\nlogs/x.yaml: 1 error in the plan</pre>" in body
        assert b"<img" not in body
    finally:
        server.shutdown()
        server.server_close()


def test_a_plan_saved_by_renaming_a_new_file_over_it_is_heard_every_time(tmp_path):
    """Editors save by writing a new file and renaming it over the old: an event watch of the old file hears
    the first save only. Three saves, three builds."""
    logs, plan = plan_outside(tmp_path)
    watching = Watching(Watch(logs, plan, tmp_path / "site", interval=0.2))
    try:
        watching.version(1)
        text = plan.read_text(encoding="utf-8")
        for n in range(1, 4):
            saved = tmp_path / f".plan.yaml.save{n}"
            saved.write_text(text.replace("Does a LoRA adapter", f"Does a LoRA adapter ({n})"), encoding="utf-8")
            os.replace(saved, plan)
            watching.version(1 + n)
            assert f"Does a LoRA adapter ({n})" in (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    finally:
        watching.close()


def test_logs_that_disappear_and_come_back_are_watched_again(tmp_path):
    logs, plan = plan_outside(tmp_path)
    watching = Watching(Watch(logs, plan, tmp_path / "site", interval=0.2))
    try:
        watching.version(1)
        shutil.rmtree(logs)
        watching.until("the wait for LOGS", lambda: any("gone; waiting for it to come back" in line for line in watching.said))
        shutil.copytree(SAMPLE_LOGS, logs)
        watching.until("the build of LOGS back", lambda: any(" is back: built " in line for line in watching.said))
        built = watching.builds.state()["version"]
        with (logs / "runs" / "control-1" / "events.jsonl").open("a", encoding="utf-8") as out:
            out.write('{"ts":"2026-11-02T20:15:10.000+09:00","type":"metric","run":"control-1","step":11,"metrics":{"loss":1.5}}\n')
        watching.version(built + 1)  # heard again
        assert sum("gone; waiting" in line for line in watching.said) == 1
    finally:
        watching.close()


def test_a_changed_template_builds_the_site_again_and_times_are_told_in_the_plans_zone(tmp_path):
    """--templates: a template edited while watching is used by the next build. The terminal tells each build's
    time in the plan's time zone (UTC+09:00 here), as the site does, whatever the machine's."""
    from datetime import UTC, datetime

    logs, plan = plan_outside(tmp_path)
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "plan.html").write_text('{% extends "base.html" %}{% block content %}<p>first</p>{% endblock %}',
                                         encoding="utf-8")
    site = tmp_path / "site"
    watching = Watching(Watch(logs, plan, site, interval=0.2, templates=templates,
                              clock=lambda: datetime(2026, 11, 3, 0, 59, 8, tzinfo=UTC)))
    try:
        watching.version(1)
        assert "<p>first</p>" in (site / "plan.html").read_text(encoding="utf-8")
        (templates / "plan.html").write_text('{% extends "base.html" %}{% block content %}<p>second</p>{% endblock %}',
                                             encoding="utf-8")
        watching.until("the edited template's build", lambda: "<p>second</p>" in (site / "plan.html").read_text(encoding="utf-8"))
        assert watching.said[0].startswith("09:59:08 first build: built ")
    finally:
        watching.close()


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
def test_ctrl_c_and_a_service_managers_stop_end_the_watch_at_once(tmp_path, signal_name):
    """The whole command in a process of its own, stopped while it waits for changes: it ends within seconds,
    says so, and exits 0 (Ctrl-C is how a watch is meant to end); no second Ctrl-C is needed."""
    import signal
    import subprocess
    import sys

    logs = copied_logs(tmp_path)
    process = subprocess.Popen([sys.executable, "-m", "reportgen", "watch", str(logs), str(logs / "plan.yaml"), "-o",
                                str(tmp_path / "site"), "--interval", "0.2", "-j", "1"],
                               stderr=subprocess.PIPE, text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + PATIENCE
        while not (tmp_path / "site" / "index.html").exists():
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        time.sleep(1.0)  # waiting for changes now
        process.send_signal(getattr(signal, signal_name))
        _out, said = process.communicate(timeout=PATIENCE)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, said
    assert said.rstrip().endswith("reportgen watch: stopped") and "KeyboardInterrupt" not in said and "Traceback" not in said


def test_logs_not_there_yet_are_waited_for_and_built_when_they_appear(tmp_path):
    """A watch started before the trainer made its log folder: it says it waits, then makes its first build."""
    logs, plan = plan_outside(tmp_path)
    shutil.rmtree(logs)
    watching = Watching(Watch(logs, plan, tmp_path / "site", interval=0.2))
    try:
        watching.until("the wait", lambda: any("no such folder yet; waiting for it" in line for line in watching.said))
        shutil.copytree(SAMPLE_LOGS, logs)
        (logs / "plan.yaml").unlink()
        watching.version(1)
        assert any(" first build: built " in line for line in watching.said)
        assert not any("gone" in line for line in watching.said)
    finally:
        watching.close()


def test_what_the_watcher_held_of_the_logs_is_in_the_cache_when_it_stops(tmp_path):
    """The watcher holds back the parse cache's entries of logs that grow at every build (ingest/cache.py); when
    it stops they are written: a build after it loads every log, reading none."""
    from reportgen.ingest import ingest
    from reportgen.ingest.cache import open_cache

    logs, plan = plan_outside(tmp_path)
    watching = Watching(Watch(logs, plan, tmp_path / "site", interval=0.2))
    try:
        watching.version(1)
        for step in (11, 12):
            with (logs / "runs" / "control-1" / "events.jsonl").open("a", encoding="utf-8") as out:
                out.write('{"ts":"2026-11-02T20:15:10.000+09:00","type":"metric","run":"control-1","step":%d,'
                          '"metrics":{"loss":1.5}}\n' % step)
            watching.version(step - 9)
    finally:
        watching.close()
    after = open_cache(logs)
    ingest(logs, cache=after)
    assert after.reads == 0 and after.hits > 0


class _Cycle:
    """An object in a reference cycle, which only the cycle collector frees; `freed` hears when it is."""

    def __init__(self, freed: list[str]):
        self.me, self.freed = self, freed

    def __del__(self):
        self.freed.append("freed")


def test_the_cycle_collector_is_held_during_a_build_and_run_once_after_it():
    freed: list[str] = []
    assert gc.isenabled()
    with collected_after():
        assert not gc.isenabled()
        _Cycle(freed)
        for _ in range(10_000):  # allocations that would set off automatic collections
            _ = [[] for _ in range(10)]
        assert freed == []
    assert gc.isenabled() and freed == ["freed"]  # collected at the end


def test_a_caller_that_holds_the_collector_itself_keeps_it_held():
    """Counter-example: where the collector was off before (a page worker), it stays off and nothing is collected."""
    freed: list[str] = []
    gc.disable()
    try:
        with collected_after():
            _Cycle(freed)
        assert not gc.isenabled() and freed == []
    finally:
        gc.enable()
        gc.collect()


def test_the_watchers_builds_run_with_the_collector_held(tmp_path, monkeypatch):
    logs = copied_logs(tmp_path)
    held: list[bool] = []
    real = watch_module.build

    def build(*args, **kwargs):
        held.append(not gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(watch_module, "build", build)
    watching = Watching(Watch(logs, logs / "plan.yaml", tmp_path / "site", interval=0.2, jobs=1))
    try:
        watching.version(1)
    finally:
        watching.close()
    assert held == [True] and gc.isenabled()


def test_a_run_gone_silent_is_alerted_by_a_build_the_clock_makes_though_no_log_changes(tmp_path):
    """During the lot nothing has to change for the site to: the time left runs down and a run that stops logging
    (a hung job) is silent only later. With nothing written, the watcher builds again after `tick` seconds and says
    the silent run's alert. lora-r16-2 logs a row every 2 minutes or so; the clock moves on by two hours."""
    from datetime import datetime, timedelta

    from test_clock import live_logs

    logs = live_logs(tmp_path)
    now = [datetime.fromisoformat("2026-11-03T09:59:10+09:00")]  # just after lora-r16-2's last row
    watching = Watching(Watch(logs, logs / "plan.yaml", tmp_path / "site", interval=0.2, clock=lambda: now[0], tick=0.3))
    try:
        watching.version(1)
        assert not [line for line in watching.said if "has logged nothing" in line], watching.said
        hours_left = json.loads((tmp_path / "site" / "report.json").read_text(encoding="utf-8"))["clock"]["hours_left"]
        now[0] += timedelta(hours=2)
        watching.until("the silent run's alert", lambda: any(line.startswith("alert: lora-r16-2 has logged nothing for 2.0 h")
                                                            for line in watching.said))
        assert any("the clock moved on: built" in line for line in watching.said), watching.said
        later = json.loads((tmp_path / "site" / "report.json").read_text(encoding="utf-8"))["clock"]["hours_left"]
        assert later == pytest.approx(hours_left - 2, abs=1e-3)
    finally:
        watching.close()


def test_once_every_lot_is_over_the_site_is_built_again_only_when_something_changes(tmp_path):
    """Counter-example: the lot over and no log being written (the sample's cut last line was written an hour before
    the watcher's now, as its copy's time says), nothing moves with the clock: no build comes without a change,
    however many ticks pass."""
    from datetime import UTC, datetime, timedelta

    over = datetime.now(UTC) + timedelta(hours=1)  # weeks after the sample's lot; the copied logs' times an hour before
    watching = Watching(Watch(copied_logs(tmp_path), tmp_path / "logs" / "plan.yaml", tmp_path / "site", interval=0.1,
                              clock=lambda: over, tick=0.1))
    try:
        watching.version(1)
        took = float(watching.said[0].split(" in ")[1].split(" s:")[0])
        time.sleep(1.5 + 2 * took)  # the rest after the build (as long as it took), then fifteen ticks at least
        assert watching.builds.state()["version"] == 1, watching.said
    finally:
        watching.close()


def test_a_last_line_being_written_becomes_damage_by_a_build_the_clock_makes_once_the_log_is_still(tmp_path):
    """After the lot, a log whose last line has no end yet and changed moments ago is being written: no damage.
    Left that way for longer than ingest.WRITING_SECONDS, the watcher's next build (made by the clock alone: the
    lot is over and nothing changes) counts the cut line, as a build does."""
    from datetime import datetime, timedelta

    from reportgen.ingest import WRITING_SECONDS

    logs = copied_logs(tmp_path)
    log = logs / "runs" / "control-1" / "events.jsonl"
    with log.open("a", encoding="utf-8") as out:
        out.write('{"ts":"2026-11-02T20:15:10.000+09:00","type":"metric","run":"con')
    now = [datetime.fromisoformat("2026-11-06T09:00:00+09:00")]  # the lot over
    os.utime(log, (now[0].timestamp() - 10, now[0].timestamp() - 10))
    watching = Watching(Watch(logs, logs / "plan.yaml", tmp_path / "site", interval=0.2, clock=lambda: now[0], tick=0.3))

    def skipped() -> int:
        report = json.loads((tmp_path / "site" / "report.json").read_text(encoding="utf-8"))
        return next(i["skipped"] for i in report["inputs"] if i["path"] == "runs/control-1/events.jsonl")

    try:
        watching.version(1)
        assert skipped() == 0
        now[0] += timedelta(seconds=WRITING_SECONDS)
        watching.until("the cut line counted", lambda: watching.builds.state()["version"] >= 2 and skipped() == 1)
        assert len(watching.said) == 1, watching.said  # a build the clock made, with no alert: not said
    finally:
        watching.close()


def test_a_build_the_clock_makes_that_fails_is_said_once_and_the_clock_goes_on_building(tmp_path, monkeypatch):
    """During the lot, builds the clock makes that fail (the same way each time) are said once, and the clock keeps
    building: once a build succeeds again, without any log changing, the site is back."""
    from datetime import datetime

    from test_clock import live_logs

    logs = live_logs(tmp_path)
    now = datetime.fromisoformat("2026-11-03T10:00:00+09:00")  # the lot open
    build, failing = watch_module.build, threading.Event()

    def flaky(*args, **kwargs):
        if failing.is_set():
            raise ReportgenError("the disk is full")
        return build(*args, **kwargs)

    monkeypatch.setattr(watch_module, "build", flaky)
    watching = Watching(Watch(logs, logs / "plan.yaml", tmp_path / "site", interval=0.1, clock=lambda: now, tick=0.1))
    try:
        watching.version(1)
        failing.set()
        watching.until("a failed build", lambda: watching.builds.state()["failure"] is not None)
        time.sleep(2)  # more builds the clock makes, failing the same way
        failed = [line for line in watching.said if "the build failed" in line]
        assert len(failed) == 1 and failed[0].startswith("10:00:00 the clock moved on: the build failed"), watching.said
        failing.clear()
        watching.version(2)
    finally:
        watching.close()
