from __future__ import annotations

import re
import shutil

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


def test_build_prints_its_warnings_then_one_summary_line_and_nothing_with_quiet(tmp_path):
    loud = CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(tmp_path / "a")])
    assert loud.exit_code == 0
    lines = loud.output.strip().splitlines()
    assert lines[:-1] == [
        "warning: the plan, at schedule.steps[5].resource: control-preds, train-r16, train-r64 share gpu0 and "
        "nothing orders them: they run one after another (26 h, not the 9 h of running them side by side)",
        "warning: runs/lora-r16-1/events.jsonl: 1 of its lines or records could not be read (the rest of the file was) "
        "(runs/lora-r16-1/events.jsonl:142)",
    ]
    assert re.fullmatch(
        rf"{re.escape(str(tmp_path / 'a'))}/index.html: jsum-lora-2026-11, verdict positive; 30 files, 9 runs, "
        r"1 problem \(see inputs.html\), 2 warnings; built in \d+\.\d s", lines[-1]), lines[-1]
    quiet = CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(tmp_path / "b"), "-q"])
    assert quiet.exit_code == 0 and quiet.output == ""


def test_strict_build_writes_the_site_and_exits_1_on_warnings(tmp_path):
    result = CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(tmp_path / "s"), "-q", "--strict"])
    assert result.exit_code == 1
    assert result.output.strip() == f"{tmp_path / 's'}/index.html: 2 warnings and --strict: the site was written, the build fails"
    assert (tmp_path / "s" / "index.html").is_file()


def test_strict_build_without_warnings_exits_0(tmp_path, sample_plan_data, write_plan):
    """The counter-example: the sample with its two doubts mended (the steps sharing gpu0 ordered, the
    damaged line removed) builds under --strict."""
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS, logs)
    damaged = logs / "runs" / "lora-r16-1" / "events.jsonl"
    damaged.write_text("".join(line for n, line in enumerate(damaged.read_text().splitlines(True), 1) if n != 142))

    def order(plan):
        steps = {s["id"]: s for s in plan["schedule"]["steps"]}
        steps["train-r16"]["depends_on"] = ["control-preds"]
        steps["train-r64"]["depends_on"] = ["train-r16"]

    plan = write_plan(sample_plan_data, order)
    result = CliRunner().invoke(cli, ["build", str(logs), str(plan), "-o", str(tmp_path / "s"), "--strict"])
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output


def test_progress_is_silent_when_not_on_a_terminal(capsys):
    progress = Progress(quiet=False)  # pytest's stderr is not a terminal
    progress("reading", "runs/a/events.jsonl", 1, 2)
    progress.done()
    assert capsys.readouterr().err == ""


def test_progress_counts_items_against_their_total_on_a_terminal(monkeypatch, capsys):
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    progress = Progress(quiet=False)
    progress("reading", "runs/a/events.jsonl", 1, 30)
    progress("writing", "index.html", 1, 1200)
    err = capsys.readouterr().err
    assert "[reading 1/30] runs/a/events.jsonl" in err and "[writing 1/1,200] index.html" in err
    assert Progress(quiet=True).enabled is False


def test_a_warning_found_in_several_places_is_printed_once_with_its_places():
    from reportgen.cli import warning_lines

    step = "step event for 'trian', which the plan's schedule does not have; not counted"
    warnings = [{"message": step, "evidence": [{"path": "campaign.jsonl", "line": 3}]},
                {"message": step, "evidence": [{"path": "campaign.jsonl", "line": 4}]},
                {"message": "the plan, at variants: no control", "evidence": []}]
    assert warning_lines(warnings) == [f"warning: {step} (campaign.jsonl:3, campaign.jsonl:4)",
                                       "warning: the plan, at variants: no control"]
    many = [{"message": "m", "evidence": [{"path": "a", "line": n}]} for n in range(1, 6)]
    assert warning_lines(many) == ["warning: m (a:1, a:2, a:3 and 2 more)"]


def test_build_progress_names_every_phase_and_reaches_each_total(tmp_path):
    """Reading, deciding the runs, checking, analysing, drawing and writing: no phase is silent, and each
    ends at its total."""
    from reportgen.build import build

    heard: dict[str, list[tuple[int, int]]] = {}
    build(SAMPLE_LOGS, SAMPLE_PLAN, tmp_path / "site",
          progress=lambda phase, item, done, total: heard.setdefault(phase, []).append((done, total)))
    assert list(heard) == ["reading", "deciding", "checking", "analysing", "drawing", "writing"]
    assert all(counts[-1][0] == counts[-1][1] for counts in heard.values()), heard
    assert heard["analysing"] == [(n, 8) for n in range(1, 9)]  # each part of the analysis as it begins
    assert heard["deciding"] == [(1, 3), (2, 3), (3, 3)]
    assert heard["drawing"][-1] == (9, 9)  # one tick a run
    assert heard["reading"][-1] == (30, 30)  # the sample's files (plan.yaml left out)
