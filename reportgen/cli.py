"""The command line: parse options, call one library function, show errors as messages (exit 1)."""

from __future__ import annotations

import os
import sys
import time
from importlib import resources
from pathlib import Path

import click

from reportgen import __version__
from reportgen.errors import ReportgenError, where
from reportgen.parallel import cores

EXAMPLE_PLAN = "example-plan.yaml"


class Progress:
    """One self-overwriting status line on a terminal ("[reading 12/30] runs/a/events.jsonl");
    silent when piped or with --quiet."""

    def __init__(self, quiet: bool):
        self.enabled = not quiet and sys.stderr.isatty()
        self.count = 0
        self.started = time.monotonic()

    def __call__(self, phase: str, item: str, done: int, total: int) -> None:
        if self.enabled:
            self.count += 1
            click.echo(f"\r\033[K[{phase} {done:,}/{total:,}] {item[-60:]}", nl=False, err=True)

    def done(self) -> None:
        if self.enabled and self.count:
            click.echo("\r\033[K", nl=False, err=True)

    def elapsed(self) -> str:
        seconds = time.monotonic() - self.started
        if seconds < 59.95:
            return f"{seconds:.1f} s"
        minutes, rest = divmod(round(seconds), 60)
        return f"{minutes} min {rest} s"


def warning_lines(warnings: list[dict]) -> list[str]:
    """One line per distinct warning, with where it was found ("runs/a/events.jsonl:142"); the same
    message found in several places is said once, with its places counted."""
    places: dict[str, list[str]] = {}
    for warning in warnings:
        cited = [f"{e['path']}:{e['line']}" if e.get("line") else e["path"] for e in warning["evidence"]]
        places.setdefault(warning["message"], []).extend(cited)
    lines = []
    for message, cited in places.items():
        where = ""
        if cited:
            shown = ", ".join(cited[:3]) + (f" and {len(cited) - 3} more" if len(cited) > 3 else "")
            where = f" ({shown})"
        lines.append(f"warning: {message}{where}")
    return lines


quiet_option = click.option("-q", "--quiet", is_flag=True, help="No progress output.")
jobs_option = click.option("-j", "--jobs", type=click.IntRange(min=1), default=cores, show_default="the machine's cores",
                           help="Worker processes that share the reading, the charts and the pages "
                                "(1: all in one process; the site is the same whatever the number).")
logs_argument = click.argument("logs", type=click.Path(path_type=Path, readable=False))  # reportgen says what is wrong (exit 1)
plan_argument = click.argument("plan", type=click.Path(path_type=Path, readable=False))
cache_option = click.option("--cache/--no-cache", default=True, show_default=True,
                            help="Keep what is read of each log in the user's cache folder, so that the next build "
                                 "reads only the logs that changed (and a grown log from where it stopped); "
                                 "REPORTGEN_CACHE=off turns it off too.")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="reportgen")
def cli() -> None:
    """Turn the logs of a rented-GPU campaign into a static report site, reconciled with its plan.

    \b
    Example:
      reportgen check plan.yaml
      reportgen freeze plan.yaml logs/
      reportgen build logs/ plan.yaml -o site/
    """


@cli.command()
@logs_argument
@plan_argument
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), default=Path("site"), show_default=True,
              help="Folder the site is written to (replaced whole, atomically).")
@click.option("--templates", type=click.Path(path_type=Path, file_okay=False, exists=True),
              help="Folder of templates that override the built-in ones by name (e.g. base.html).")
@click.option("--single-file", is_flag=True,
              help="Also write report.html: the whole report in one self-contained file, for attaching.")
@click.option("--strict", is_flag=True,
              help="Exit 1 when the report has warnings (plan and logs that do not match, damaged input...); "
                   "the site is still written.")
@jobs_option
@cache_option
@quiet_option
def build(logs: Path, plan: Path, out: Path, templates: Path | None, single_file: bool, strict: bool,
          jobs: int, cache: bool, quiet: bool) -> None:
    """Ingest LOGS, reconcile with PLAN and write the static site.

    Warnings (the plan and the logs do not match, damaged files, runs whose end no log tells...) are
    printed at the end and listed at the top of the site's overview; with --strict they exit 1.

    \b
    Example:
      reportgen build sample_logs/ sample_logs/plan.yaml -o site/
      reportgen build logs/ plan.yaml -o site/ --single-file   # also site/report.html
      reportgen build logs/ plan.yaml --strict                  # fail on any warning (CI)
    """
    from reportgen.analysis.clock import NEWEST_LOG_TIME
    from reportgen.build import build as run_build

    progress = Progress(quiet)
    built = run_build(logs, plan, out, templates=templates, progress=progress, single_file=single_file, jobs=jobs,
                      cache=cache)
    progress.done()
    report = built.report
    warnings = report["warnings"]
    if not quiet:
        for line in warning_lines(warnings):
            click.echo(line, err=True)
        clock = report.get("clock") or {}
        if clock.get("running") and clock.get("now_basis") == NEWEST_LOG_TIME:
            click.echo(f"the lot is still open at {NEWEST_LOG_TIME} ({clock['now'][:16].replace('T', ' ')}), with work left: "
                       "the site shows the lot clock then, and runs with no end logged at work; for the closing report "
                       "after the lot, set SOURCE_DATE_EPOCH to its time (during the lot, `reportgen watch` keeps the "
                       "clock on the wall clock)", err=True)
        problems = len(report["problems"])
        click.echo(
            f"{out}/index.html: {report['campaign']['id']}, verdict {report['campaign']['verdict']}; "
            f"{len(report['inputs'])} files, {len(report['runs'])} runs"
            + (f", {problems} problem{'s' if problems != 1 else ''} (see inputs.html)" if problems else "")
            + (f", {len(warnings)} warning{'s' if len(warnings) != 1 else ''}" if warnings else "")
            + f"; built in {progress.elapsed()}"
        )
    if strict and warnings:
        raise ReportgenError(f"{out}/index.html: {len(warnings)} warning{'s' if len(warnings) != 1 else ''} "
                             "and --strict: the site was written, the build fails")


@cli.command()
@logs_argument
@plan_argument
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), default=Path("site"), show_default=True,
              help="Folder the site is written to (replaced whole, atomically, at each build).")
@click.option("--serve", metavar="[HOST:]PORT",
              help="Also serve the site over HTTP at this port (on 127.0.0.1 unless a host is given); open pages "
                   "reload themselves after each build.")
@click.option("--interval", type=click.FloatRange(min=0.1), default=1.0, show_default=True,
              help="Seconds for changes to settle before a build; when polling, seconds between looks at LOGS.")
@click.option("--poll", is_flag=True,
              help="Look at LOGS every --interval seconds instead of waiting for change events (chosen by itself "
                   "when LOGS is on a network mount: NFS, SMB, SSHFS...).")
@click.option("--templates", type=click.Path(path_type=Path, file_okay=False, exists=True),
              help="Folder of templates that override the built-in ones by name.")
@click.option("--single-file", is_flag=True, help="Also write report.html at each build.")
@jobs_option
@cache_option
def watch(logs: Path, plan: Path, out: Path, serve: str | None, interval: float, poll: bool, templates: Path | None,
          single_file: bool, jobs: int, cache: bool) -> None:
    """Keep the site of LOGS and PLAN up to date while the campaign runs.

    Builds once, then again whenever a file under LOGS or the plan changes, and after a minute
    without changes while a lot is still to end or a log's last line is being written (the time
    left, a run gone silent and a line cut off for good move with the clock): each build is the
    same atomic, deterministic build as `reportgen build`; one that fails keeps the last good site
    and prints why. Ctrl-C stops.

    \b
    Example:
      reportgen watch logs/ plan.yaml -o site/ --serve 8000   # http://127.0.0.1:8000/
    """
    import signal
    import threading

    from reportgen.serve import parse_address
    from reportgen.watch import Watch, run

    address = parse_address(serve) if serve is not None else None
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda _signal, _frame: stop.set())  # a service manager's stop: after the build running
    try:
        run(Watch(logs, plan, out, interval, poll, templates, single_file, jobs, cache=cache), lambda line: click.echo(line, err=True),
            stop=stop, serve=address)
    except KeyboardInterrupt:
        pass  # a build cut short leaves the last good site (builds are atomic)
    click.echo("reportgen watch: stopped", err=True)


@cli.command()
@plan_argument
def check(plan: Path) -> None:
    """Validate PLAN before ordering: schema, references, window fit, categories, prices.

    Exits 1 when the plan has errors; warnings are printed but do not fail.

    \b
    Example:
      reportgen check plan.yaml
    """
    from reportgen.analysis.plan_checks import check_plan, summary
    from reportgen.plan.load import format_key, load_plan

    loaded = load_plan(plan)
    findings = check_plan(loaded.plan)
    for finding in findings:
        line = loaded.line_of(finding.key) or 1
        click.echo(f"{plan}:{line}: {finding.level}: {format_key(finding.key)}: {finding.message}", err=True)
    errors = [f for f in findings if f.level == "error"]
    if errors:
        raise ReportgenError(f"{plan}: {len(errors)} error{'s' if len(errors) != 1 else ''}; the plan does not pass")
    click.echo(f"{plan}: ok: {summary(loaded.plan)}")


@cli.command()
@plan_argument
@logs_argument
def freeze(plan: Path, logs: Path) -> None:
    """Record PLAN as written (verbatim copy and SHA-256) inside LOGS.

    Later builds reconcile against this original and show any edit made after it.

    \b
    Example:
      reportgen freeze plan.yaml logs/
    """
    from reportgen.plan.freeze import FREEZE_RECORD, RECORD_DIR
    from reportgen.plan.freeze import freeze as run_freeze

    record, new = run_freeze(plan, logs)
    where = logs / RECORD_DIR / FREEZE_RECORD
    if new:
        click.echo(f"{where}: froze {plan} (sha256 {record.sha256})")
    else:
        click.echo(f"{where}: {plan} was already frozen with the same content (sha256 {record.sha256})")


@cli.command()
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False), default=Path("."))
@click.option("--force", is_flag=True, help="Overwrite an existing plan.yaml.")
def init(directory: Path, force: bool) -> None:
    """Write a commented example plan.yaml into DIRECTORY to start from.

    \b
    Example:
      reportgen init my-campaign/
      reportgen check my-campaign/plan.yaml
    """
    target = directory / "plan.yaml"
    if target.exists() and not force:
        raise ReportgenError(f"{target}: already exists; use --force to overwrite it")
    directory.mkdir(parents=True, exist_ok=True)
    target.write_bytes((resources.files("reportgen.plan") / EXAMPLE_PLAN).read_bytes())
    click.echo(f"{target}: written; edit it, then run: reportgen check {target}")


@cli.command()
@logs_argument
@plan_argument
def note(logs: Path, plan: Path) -> None:
    """Print the order note (at most 2,000 characters) for the provider's order notes.

    \b
    Example:
      reportgen note logs/ plan.yaml > order-note.md
    """
    from reportgen.build import prepare
    from reportgen.render.note import order_note

    click.echo(order_note(prepare(logs, plan).report), nl=False)


@cli.command()
@logs_argument
@click.option("--json", "as_json", is_flag=True, help="Print the reportgen.inspect/1 JSON instead of tables.")
@jobs_option
@quiet_option
def inspect(logs: Path, as_json: bool, jobs: int, quiet: bool) -> None:
    """Show what reportgen recognises in LOGS, without a plan.

    Files and their formats, runs merged across sources with their status, step range, times and
    metrics, non-finite values with the line they were logged on, checkpoints with the parts of
    the training state they hold, and every problem found.

    \b
    Example:
      reportgen inspect logs/
      reportgen inspect logs/ --json > inspect.json
    """
    import json

    from reportgen.analysis import survey
    from reportgen.ingest import ingest
    from reportgen.render.inspect import build_inspect, render_text

    progress = Progress(quiet)
    data = build_inspect(survey(ingest(logs, progress=progress, jobs=jobs)))
    progress.done()
    if as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False))
    else:
        click.echo(render_text(data), nl=False)


@cli.command()
@click.argument("checkpoint", type=click.Path(path_type=Path, exists=True))
@click.option("--into", "into", type=click.Path(path_type=Path, file_okay=False, exists=True),
              help="LOGS folder to append the result to, as a reload_test record in checkpoint-probes.jsonl.")
@click.option("--torch", "with_torch", is_flag=True,
              help="Also load .pt/.bin/.pth/.ckpt files with torch.load(weights_only=True), if torch is installed.")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
def probe(checkpoint: Path, into: Path | None, with_torch: bool, as_json: bool) -> None:
    """Read and validate a checkpoint file or folder in a new process, and time it (R12).

    Safetensors headers and offsets, zip archives and their CRCs, pickles walked without running
    them, JSON files. Exit 0 when every file is valid, 1 when one is not.

    \b
    Example:
      reportgen probe logs/lora-r16-1/checkpoint-1200
      reportgen probe logs/lora-r16-1/checkpoint-1200 --into logs/
    """
    import json
    from dataclasses import asdict

    from reportgen import probe as probing

    result = probing.probe(checkpoint, with_torch=with_torch)
    if as_json:
        click.echo(json.dumps({**asdict(result), "summary": result.summary}, indent=2, ensure_ascii=False))
    else:
        width = max((len(f.path) for f in result.files), default=4)
        for item in result.files:
            mark = "ok  " if item.ok else "FAIL"
            click.echo(f"{mark} {item.path:<{width}}  {item.kind:<11} {item.reason}")
            for note in item.notes:
                click.echo(f"     {'':<{width}}  {'':<11} note: {note}")
        click.echo(f"{checkpoint}: {'valid' if result.ok else 'NOT valid'}; read in a new process "
                   f"(pid {result.pid}) in {result.seconds:.2f} s")
    if into is not None:
        written = probing.record(result, into)
        if not as_json:
            click.echo(f"recorded as a reload_test in {written}")
    if not result.ok:
        sys.exit(1)


def main() -> None:
    """Entry point: domain errors exit 1 with their message; a bug says so instead of a traceback."""
    try:
        cli.main(prog_name="reportgen", standalone_mode=True)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        click.echo("reportgen: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # a bug, not bad input: keep the message, hide the traceback unless asked
        if os.environ.get("REPORTGEN_DEBUG"):
            raise
        click.echo(f"reportgen: internal error{where(exc)}: {type(exc).__name__}: {exc} (a bug in reportgen; please report it "
                   "with the file named; set REPORTGEN_DEBUG=1 for details)", err=True)
        sys.exit(70)
