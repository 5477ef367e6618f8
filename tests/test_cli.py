from __future__ import annotations

from click.testing import CliRunner
from conftest import SAMPLE_LOGS, SAMPLE_PLAN

from reportgen import __version__
from reportgen.cli import Progress, cli


def test_usage_errors_exit_2():
    result = CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS)])
    assert result.exit_code == 2
    assert "Missing argument 'PLAN'" in result.output


def test_unknown_command_exits_2():
    assert CliRunner().invoke(cli, ["bild"]).exit_code == 2


def test_version_is_printed():
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0 and __version__ in result.output


def test_build_prints_one_summary_line_and_nothing_with_quiet(tmp_path):
    loud = CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(tmp_path / "a")])
    assert loud.exit_code == 0
    assert loud.output.strip().splitlines() == [
        f"{tmp_path / 'a'}/index.html: jsum-lora-2026-11, verdict positive; 30 files, 9 runs, 1 problem (see inputs.html)"
    ]
    quiet = CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(tmp_path / "b"), "-q"])
    assert quiet.exit_code == 0 and quiet.output == ""


def test_progress_is_silent_when_not_on_a_terminal(capsys):
    progress = Progress(quiet=False)  # pytest's stderr is not a terminal
    progress("runs/a/events.jsonl")
    progress.done()
    assert capsys.readouterr().err == ""


def test_progress_counts_items_on_a_terminal(monkeypatch, capsys):
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    progress = Progress(quiet=False)
    progress("runs/a/events.jsonl")
    progress("index.html")
    err = capsys.readouterr().err
    assert "[1] runs/a/events.jsonl" in err and "[2] index.html" in err
    assert Progress(quiet=True).enabled is False
