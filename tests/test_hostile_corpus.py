"""The hostile corpus, built case by case: every case of tests/hostile/make_hostile.py through
`reportgen build`, checked for what any input must get: the exit code the case expects (0 or 1,
never 70), no traceback, no death by a signal, every input byte-identical afterwards (nothing
written, added or removed under LOGS or at the plan), nothing from outside LOGS in the site, and
the damage reported where the case says (no silent loss).

Builds run in this process (click's CliRunner, as `reportgen build` runs them; an exception that
escapes is what `reportgen.cli.main` turns into exit 70). The cases marked `isolate` (nesting
thousands deep, pipes, links to endless devices) run in a process of their own with a timeout, in
the background while the others run, so that a crash or a hang fails its case instead of ending
the test run. The big cases (two 300 MB text logs, a metrics.csv of 10,000 columns) are built only
with HOSTILE_BIG=1: they are for benchmarks/hostile_memory.py, which also measures their memory.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
import traceback
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner

from reportgen.cli import cli

_spec = importlib.util.spec_from_file_location("make_hostile", Path(__file__).parent / "hostile" / "make_hostile.py")
hostile = importlib.util.module_from_spec(_spec)
sys.modules["make_hostile"] = hostile
_spec.loader.exec_module(hostile)

SUBPROCESS_TIMEOUT_S = 120
TRACEBACK = "Traceback (most recent call last)"

# Cases that fail today, with what fails: each is a bug of reportgen to fix, not of the case.
# strict: a case that starts passing must leave this list.
KNOWN_FAILURES: dict[str, str] = {}


@dataclass
class Outcome:
    code: int | None  # None: killed by the timeout; negative: died by that signal
    output: str
    seconds: float
    error: str | None = None  # the traceback of an exception that escaped the build
    before: dict = field(default_factory=dict)
    after: dict = field(default_factory=dict)


def build_in_process(logs: Path, plan: Path, out: Path) -> tuple[int, str, str | None]:
    try:
        result = CliRunner().invoke(cli, ["build", str(logs), str(plan), "-o", str(out), "-q"], catch_exceptions=False)
    except Exception:  # noqa: BLE001 - reportgen.cli.main reports any other exception as an internal error, exit 70
        return 70, "", traceback.format_exc()
    return result.exit_code, result.output, None


def build_in_subprocess(logs: Path, plan: Path, out: Path) -> tuple[int | None, str, str | None]:
    env = {k: v for k, v in os.environ.items() if k != "REPORTGEN_DEBUG"}
    try:
        done = subprocess.run([sys.executable, "-m", "reportgen", "build", str(logs), str(plan), "-o", str(out), "-q"],
                              capture_output=True, text=True, errors="replace", timeout=SUBPROCESS_TIMEOUT_S, env=env,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as expired:
        output = (expired.stdout or b"").decode(errors="replace") + (expired.stderr or b"").decode(errors="replace")
        return None, output, f"no exit after {SUBPROCESS_TIMEOUT_S} s"
    return done.returncode, done.stdout + done.stderr, None


class Corpus:
    """The corpus written once for the module, and each case's build."""

    def __init__(self, root: Path, sites: Path, selected: set[str]):
        self.root, self.sites = root, sites
        self.cases = {c.id: c for c in hostile.build_corpus(root)}
        self.outcomes: dict[str, Outcome] = {}
        self.background = ThreadPoolExecutor(max_workers=1)
        self.futures: dict[str, Future] = {
            c.id: self.background.submit(self._build, c, build_in_subprocess)
            for c in self.cases.values() if c.isolate and c.id in selected and not self.skipped(c)}

    @staticmethod
    def skipped(case) -> str | None:
        if case.needs_non_root and os.geteuid() == 0:
            return "root reads files of mode 000: run the tests as another user to check this case"
        return None

    def _build(self, case, how) -> Outcome:
        logs, plan, site = self.root / case.id / case.logs, self.root / case.id / case.plan, self.sites / case.id
        before = {"logs": hostile.snapshot(logs), "plan": hostile.snapshot(plan)}
        start = time.perf_counter()
        code, output, error = how(logs, plan, site)
        seconds = time.perf_counter() - start
        after = {"logs": hostile.snapshot(logs), "plan": hostile.snapshot(plan)}
        return Outcome(code, output, seconds, error, before, after)

    def outcome(self, case_id: str) -> Outcome:
        if case_id not in self.outcomes:
            future = self.futures.get(case_id)
            case = self.cases[case_id]
            self.outcomes[case_id] = future.result() if future else self._build(case, build_in_process)
        return self.outcomes[case_id]

    def close(self) -> None:
        self.background.shutdown(wait=True, cancel_futures=True)
        hostile.remove_tree(self.root)  # a tree 1,100 deep is more than shutil.rmtree (or pytest) can remove
        hostile.remove_tree(self.sites)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, request):
    selected = {item.callspec.params["case_id"] for item in request.session.items
                if getattr(item, "callspec", None) is not None and "case_id" in item.callspec.params}
    made = Corpus(tmp_path_factory.mktemp("hostile-corpus"), tmp_path_factory.mktemp("hostile-sites"), selected)
    yield made
    _summary(made, request.config)
    made.close()


def _summary(made: Corpus, config) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if not made.outcomes or reporter is None:
        return
    if capture is not None:
        with capture.global_and_fixture_disabled():  # a fixture's teardown output is captured otherwise
            _write_summary(made, reporter)
    else:
        _write_summary(made, reporter)


def _write_summary(made: Corpus, reporter) -> None:
    codes = Counter("timeout" if o.code is None else f"signal {-o.code}" if o.code < 0 else f"exit {o.code}"
                    for o in made.outcomes.values())
    slowest = max(made.outcomes, key=lambda k: made.outcomes[k].seconds)
    categories = Counter(made.cases[k].category for k in made.outcomes)
    reporter.write_line("")
    reporter.write_line(
        f"hostile corpus: {len(made.outcomes)} of {len(made.cases)} cases built ("
        + ", ".join(f"{k} {v}" for k, v in sorted(categories.items())) + "); "
        + ", ".join(f"{k}: {v}" for k, v in sorted(codes.items())) + f"; {sum(1 for k in made.outcomes if k in KNOWN_FAILURES)} known failures; "
        f"slowest {slowest} ({made.outcomes[slowest].seconds:.1f} s)")


def _params() -> list:
    """One test per case; the cases built in a process of their own come last, so that this process
    builds the others while they run in the background."""
    params = []
    for template, _make in sorted(hostile.REGISTRY, key=lambda t: t[0].isolate):
        if template.big and not hostile.big_enabled():
            continue
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[template.id])] if template.id in KNOWN_FAILURES else []
        params.append(pytest.param(template.id, id=template.id, marks=marks))
    return params


def _report(site: Path) -> dict | None:
    path = site / "report.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _changes(before: dict, after: dict) -> list[str]:
    changed = []
    for key in sorted(set(before) | set(after)):
        if key not in after:
            changed.append(f"removed {key!r}")
        elif key not in before:
            changed.append(f"added {key!r}")
        elif before[key] != after[key]:
            changed.append(f"changed {key!r}: {before[key]} -> {after[key]}")
    return changed


def _last_lines(text: str, count: int = 7, width: int = 300) -> str:
    """The end of a traceback (its last frames and the exception), each line cut to width."""
    return "\n".join(line[:width] for line in text.strip().splitlines()[-count:])


def failures(case, outcome: Outcome, site: Path) -> list[str]:
    """Everything wrong with one build of one case."""
    found = []
    if outcome.code is None:
        found.append(f"hung: {outcome.error}")
    elif outcome.code < 0:
        found.append(f"died by signal {-outcome.code}")
    elif outcome.code == 70:
        found.append("exit 70 (internal error): " + _last_lines(outcome.error or outcome.output))
    elif outcome.code != case.exit:
        found.append(f"exit {outcome.code}, expected {case.exit}: {outcome.output.strip()[-800:]}")
    if TRACEBACK in outcome.output:
        found.append("a traceback in the output: " + _last_lines(outcome.output[outcome.output.index(TRACEBACK):]))
    for what in ("logs", "plan"):
        changes = _changes(outcome.before[what], outcome.after[what])
        if changes:
            found.append(f"the build changed its {what}: " + "; ".join(changes[:5]))
    if case.outside_secret:
        leaked = hostile.files_holding(site, case.outside_secret) if site.is_dir() else []
        if leaked or case.outside_secret in outcome.output:
            found.append(f"what lies outside LOGS reached the site ({', '.join(leaked[:5])}) or the output")
    for text in case.message:
        if text not in outcome.output:
            found.append(f"the output does not say {text!r}: {outcome.output.strip()[-500:]}")
    if case.exit == 1 and outcome.code == 1 and site.exists():
        found.append("a build that failed left a site behind")
    if outcome.code != 0 or not (case.problem or case.reason or case.records or case.runs):
        return found
    report = _report(site)
    if report is None:
        return found + ["no report.json"]
    problems = [f"{p.get('path')}: {p['message']}" for p in report["problems"]]
    problems += [f"{i['path']}: {p['message']}" for i in report["inputs"] for p in i["problems"]]
    for text in case.problem:
        if not any(text in p for p in problems):
            found.append(f"no problem says {text!r} (silent loss?); problems: {problems[:12]}")
    reasons = [f"{d['id']}: {r}" for d in report["deliverables"] for r in d["reasons"]]
    for text in case.reason:
        if not any(text in r for r in reasons):
            found.append(f"no deliverable reason says {text!r}; reasons: {reasons[:12]}")
    records = {i["path"]: i["records"] for i in report["inputs"]}
    for path, count in case.records.items():
        if records.get(path) != count:
            found.append(f"{path}: {records.get(path)} records read, expected {count}")
    runs = {r["id"] for r in report["runs"]}
    missing = [r for r in case.runs if r not in runs]
    if missing:
        found.append(f"runs missing from the report: {[m[:60] for m in missing]}; runs: {sorted(r[:60] for r in runs)}")
    return found


@pytest.mark.parametrize("case_id", _params())
def test_hostile_case(case_id: str, corpus: Corpus) -> None:
    case = corpus.cases[case_id]
    reason = corpus.skipped(case)
    if reason:
        pytest.skip(reason)
    outcome = corpus.outcome(case_id)
    found = failures(case, outcome, corpus.sites / case_id)
    assert not found, f"{case_id} ({case.description}):\n- " + "\n- ".join(found)


def test_the_corpus_covers_every_category_with_enough_cases(corpus: Corpus) -> None:
    counts = Counter(c.category for c in corpus.cases.values())
    assert len(corpus.cases) >= 120
    for category in ("links", "fs", "yaml", "deep", "numbers", "dates", "plan", "csv", "zip", "mlflow", "shapes", "empty", "random"):
        assert counts[category] >= 3, (category, counts)
    assert all(c.exit in (0, 1) for c in corpus.cases.values())
    index = json.loads((corpus.root / "cases.json").read_text(encoding="utf-8"))
    assert [c["id"] for c in index["cases"]] == list(corpus.cases)
