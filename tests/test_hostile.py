"""Hostile and broken inputs: bounded parsing. A few hundred bytes of YAML aliases, a value nested
thousands of levels deep or a self-referencing alias are refused with where they are, and the rest
of the campaign is read."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from reportgen.bounded import MAX_NESTING, MAX_NODES, TooComplex, load_json, load_yaml
from reportgen.cli import cli
from reportgen.ingest import ingest

SAMPLE = Path(__file__).parent.parent / "sample_logs"
FORMATS = Path(__file__).parent / "fixtures" / "formats"


def laughs(levels: int = 9, width: int = 9, prefix: str = "x") -> str:
    """The "billion laughs": each level an anchored list of `width` aliases to the level below."""
    text = f"{prefix}0: &{prefix}0 [lol]\n"
    for level in range(1, levels + 1):
        aliases = ", ".join([f"*{prefix}{level - 1}"] * width)
        text += f"{prefix}{level}: &{prefix}{level} [{aliases}]\n"
    return text


def problems(campaign) -> dict[str, list[tuple[int | None, str]]]:
    return {i.path: [(p.line, p.message) for p in i.problems] for i in campaign.inputs if i.problems}


def test_yaml_aliases_that_expand_past_any_configuration_are_refused_with_their_line():
    with pytest.raises(TooComplex) as refused:
        load_yaml(laughs())
    assert refused.value.line is not None and "more than 100,000 values" in refused.value.message


def test_a_few_aliases_are_a_configuration_like_any_other():
    """Counter-example: anchors shared by a few keys (a common YAML idiom) load as yaml.safe_load does."""
    text = "base: &base {lr: 0.001, rank: 16}\na: *base\nb: *base\nsmall:\n  " + laughs(3, 3, "y").replace("\n", "\n  ")
    assert load_yaml(text)["a"] == {"lr": 0.001, "rank": 16}
    assert MAX_NODES > 3 ** 3


def test_an_alias_inside_what_it_names_is_refused():
    with pytest.raises(TooComplex, match="refers to the value that holds it"):
        load_yaml("a: &a [1, *a]\n")


def test_nesting_deeper_than_the_bound_is_refused_in_yaml_and_json():
    with pytest.raises(TooComplex, match="nested deeper"):
        load_yaml("v: " + "[" * (MAX_NESTING + 5) + "]" * (MAX_NESTING + 5) + "\n")
    with pytest.raises(TooComplex, match="nested"):
        load_yaml("v: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(TooComplex, match="nested too deep"):
        load_json("[" * 100_000 + "]" * 100_000)
    assert load_json("[" * 50 + "]" * 50) == eval("[" * 50 + "]" * 50)  # counter-example: deep enough is read


def test_a_plan_of_aliases_is_refused_at_its_line_by_check_and_build(tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(laughs(prefix="lol_") + (SAMPLE / "plan.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    for args in (["check", str(plan)], ["build", str(SAMPLE), str(plan), "-o", str(tmp_path / "site"), "-q"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 1, result.output
        assert "plan.yaml:" in result.output and "more than 100,000 values" in result.output


def test_hparams_of_aliases_or_a_loop_are_a_problem_and_the_run_is_still_read(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(FORMATS / "lightning" / "pl-clean", logs / "pl-clean")
    version = next((logs / "pl-clean").rglob("hparams.yaml")).parent
    (version / "hparams.yaml").write_text(laughs(), encoding="utf-8")
    campaign = ingest(logs)
    rel = (version / "hparams.yaml").relative_to(logs).as_posix()
    [(line, message)] = problems(campaign)[rel]
    assert line == 6 and message.startswith("not read: its aliases expand it")  # x5: 125,479 values
    assert len(campaign.runs) == 1 and len(campaign.metrics)
    (version / "hparams.yaml").write_text("a: &a [1, *a]\n", encoding="utf-8")
    assert problems(ingest(logs))[rel] == [(1, "not read: an alias refers to the value that holds it (a loop)")]


def test_json_nested_thousands_deep_is_a_problem_in_every_json_reader(tmp_path):
    deep = "[" * 5000 + "]" * 5000
    logs = tmp_path / "logs"
    (logs / "run-a").mkdir(parents=True)
    (logs / "run-a" / "trainer_state.json").write_text('{"global_step": 3, "log_history": ' + deep + "}")
    (logs / "bench.jsonl").write_text(json.dumps({"checkpoint": "x", "operation": "save"})[:-1] + ', "x": ' + deep + "}\n")
    (logs / "run-a" / "adapter_config.json").write_text('{"r": ' + deep + "}")
    campaign = ingest(logs)
    found = problems(campaign)
    assert found["run-a/trainer_state.json"] == [(None, "not read: nested too deep to read")]
    assert found["run-a/adapter_config.json"] == [(None, "not read: nested too deep to read")]
    assert "bench.jsonl" in {i.path for i in campaign.inputs}  # sniffed without a crash, listed


def test_a_native_event_nested_thousands_deep_does_not_crash_the_process(tmp_path):
    """pyarrow's JSON reader takes the whole process down (SIGSEGV) on such a line: reportgen must
    set it aside before pyarrow sees it. Run in a process of its own, so a crash is a failure, not
    the end of the test run."""
    logs = tmp_path / "logs"
    logs.mkdir()
    events = [
        {"ts": "2026-11-02T09:00:00Z", "type": "run_start", "run": "r1"},
        {"ts": "2026-11-02T09:02:00Z", "type": "metric", "run": "r1", "step": 2, "metrics": {"loss": 1.5}},
    ]
    deep = ('{"ts":"2026-11-02T09:01:00Z","type":"metric","run":"r1","step":1,"metrics":{"loss":'
            + "[" * 2600 + "1" + "]" * 2600 + "}}")
    (logs / "events.jsonl").write_text("\n".join([json.dumps(events[0]), deep, json.dumps(events[1])]) + "\n")
    done = subprocess.run([sys.executable, "-m", "reportgen", "inspect", "--json", str(logs)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr[-500:])
    data = json.loads(done.stdout)
    [events_file] = [i for i in data["inputs"] if i["path"] == "events.jsonl"]
    assert [(p["line"], p["message"]) for p in events_file["problems"]] == [(2, "nested too deeply to read; line skipped")]
    assert [r["last_step"] for r in data["runs"]] == [2]


def test_a_prediction_file_whose_predictions_are_not_a_list_is_a_reason_not_a_crash(tmp_path, write_plan, sample_plan_data):
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE, logs)
    target = next((logs / "outputs").rglob("predictions.jsonl"))
    json_file = target.with_suffix(".json")
    target.unlink()
    json_file.write_text('{"predictions": 5}')
    result = CliRunner().invoke(cli, ["build", str(logs), str(logs / "plan.yaml"), "-o", str(tmp_path / "site"), "-q"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("reader", ["native", "textlog", "tensorboard", "hf", "lightning"])
def test_a_reader_that_fails_on_one_file_fails_for_that_file_alone(reader, tmp_path, monkeypatch):
    """Whatever a reader did not foresee (here: it raises) becomes that file's problem, and the rest of
    the campaign is read."""
    from reportgen.ingest import formats

    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE, logs / "sample")
    for name in ("tensorboard/tb-clean", "hf/hf-clean", "lightning/pl-clean"):
        shutil.copytree(FORMATS / name, logs / "formats" / name)
    shutil.copyfile(FORMATS / "text" / "oom-1.log", logs / "formats" / "oom-1.log")
    module = getattr(formats, reader)
    attribute = {"hf": "read_state", "lightning": "read_metrics", "textlog": "read_console", "tensorboard": "read_on"}.get(reader, "read")
    original = getattr(module, attribute)
    broken = {"native": "runs/pilot-1/events.jsonl", "textlog": "oom-1.log", "tensorboard": "tb-clean",
              "hf": "hf-clean", "lightning": "pl-clean"}[reader]

    def fails(path, *args, **kwargs):
        if broken in str(path):
            raise RuntimeError("an input nobody foresaw")
        return original(path, *args, **kwargs)

    monkeypatch.setattr(module, attribute, fails)
    whole = ingest(logs)
    failed = [i.path for i in whole.inputs if any(
        "reportgen could not read this file (RuntimeError: an input nobody foresaw)" in p.message for p in i.problems)]
    assert len(failed) == 1 and broken in failed[0]
    assert "control-1" in whole.runs and "lora-r16-2" in whole.runs  # the sample's runs are read all the same


@pytest.mark.parametrize(("written", "hostile", "said"), [
    ("price: 47.14", "price: .inf", "order.lots[0].price: Input should be a finite number"),
    ("price: 47.14", "price: 1.0e+400", "order.lots[0].price: Input should be a finite number"),
    ("amount: 120.00", "amount: .inf", "order.other_costs[0].amount: Input should be a finite number"),
    ("threshold: 0.32", "threshold: .nan", "quality.threshold: Input should be a finite number"),
    ("hours: 3\n", "hours: 1e300\n", "hours: Input should be less than or equal to 87840"),
    ("hours: 3\n", "hours: .inf\n", "hours: Input should be a finite number"),
    ("days: 3", "days: 5000000", "order.lots[0].days: Input should be less than or equal to 3660"),
    ("gpus: 1", "gpus: 100000000", "order.lots[0].gpus: Input should be less than or equal to 1024"),
    ("start: 2026-11-02T09:00:00+09:00", "start: 9999-12-30T09:00:00+09:00", "a lot starting in 9999 is no rental"),
])
def test_a_plan_value_no_campaign_has_is_refused_at_its_line_by_check_and_build(written, hostile, said, tmp_path):
    text = (SAMPLE / "plan.yaml").read_text(encoding="utf-8")
    assert written in text
    plan = tmp_path / "plan.yaml"
    plan.write_text(text.replace(written, hostile, 1), encoding="utf-8")
    line = text[: text.index(written)].count("\n") + 1
    for args in (["check", str(plan)], ["build", str(SAMPLE), str(plan), "-o", str(tmp_path / "site"), "-q"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 1, result.output
        assert f"plan.yaml:{line}:" in result.output and said in result.output, result.output


def test_a_plan_that_is_a_pipe_is_refused_not_waited_for(tmp_path):
    import os

    os.mkfifo(tmp_path / "plan.yaml")
    result = CliRunner().invoke(cli, ["check", str(tmp_path / "plan.yaml")])
    assert result.exit_code == 1 and "not a regular file" in result.output


def test_a_stray_quote_in_metrics_csv_costs_its_row_alone(tmp_path):
    """csv would read from the quote to the next one, swallowing the rows between: each line is a row."""
    logs = tmp_path / "logs"
    shutil.copytree(FORMATS / "lightning" / "pl-clean", logs / "pl-clean")
    metrics = logs / "pl-clean" / "version_0" / "metrics.csv"
    lines = metrics.read_text(encoding="utf-8").split("\n")
    rows = sum(1 for line in lines[1:] if line.strip())
    lines[2] = lines[2].replace(",", ',"', 1)  # line 3: a quote opened and never closed
    metrics.write_text("\n".join(lines), encoding="utf-8")
    campaign = ingest(logs)
    [info] = [i for i in campaign.inputs if i.path.endswith("metrics.csv")]
    assert [(p.line, p.message) for p in info.problems] == [
        (3, "not a CSV row (a quote opened and not closed on its line); row skipped")]
    assert info.records == rows - 1 and info.skipped == 1


def test_a_stray_quote_in_a_benchmark_csv_costs_its_row_alone(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    source = (SAMPLE / "campaign" / "checkpoint-bench.csv").read_text(encoding="utf-8").rstrip("\n").split("\n")
    header, row = source[0], source[1]
    damaged = row.replace(",reload_test,", ',"reload_test,', 1)
    (logs / "bench.csv").write_text("\n".join([header, row, damaged, row.replace("7311", "7312")]) + "\n", encoding="utf-8")
    campaign = ingest(logs)
    [info] = [i for i in campaign.inputs if i.path == "bench.csv"]
    assert [(p.line, p.message) for p in info.problems] == [
        (3, "not a CSV row (a quote opened and not closed on its line); row skipped")]
    assert len(campaign.reload_tests) == 2  # the rows before and after it


def _events(path: Path, *records: dict) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def test_times_at_the_calendar_s_ends_are_damaged_lines_not_a_crash(tmp_path):
    """A run_start at 9999-12-31 (the careful path) and metric lines at year 1 among good ones (the
    columnar path): each such line is a problem, and the build writes its site."""
    logs = tmp_path / "logs"
    logs.mkdir()
    good = [{"ts": f"2026-11-02T09:{m:02d}:00Z", "type": "metric", "run": "r1", "step": m, "metrics": {"loss": 1.0}}
            for m in range(1, 40)]
    good[6] = {**good[6], "ts": "0001-01-01T00:00:00Z"}
    _events(logs / "events.jsonl", {"ts": "9999-12-31T23:59:59Z", "type": "run_start", "run": "r1"}, *good)
    campaign = ingest(logs)
    [info] = campaign.inputs
    assert sorted((p.line, p.message.split(":")[0]) for p in info.problems) == [(1, "'ts' '9999-12-31T23"), (8, "'ts' is outside 1970-2199")]
    assert campaign.runs["r1"].last_step == 39
    result = CliRunner().invoke(cli, ["build", str(logs), str(SAMPLE / "plan.yaml"), "-o", str(tmp_path / "site"), "-q"])
    assert result.exit_code == 0, result.output


def test_a_run_id_too_long_for_a_file_name_gets_a_page(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    run = "r" * 500
    _events(logs / "events.jsonl", {"ts": "2026-11-02T09:00:00Z", "type": "run_start", "run": run},
            {"ts": "2026-11-02T09:01:00Z", "type": "metric", "run": run, "step": 1, "metrics": {"loss": 1.0}})
    site = tmp_path / "site"
    result = CliRunner().invoke(cli, ["build", str(logs), str(SAMPLE / "plan.yaml"), "-o", str(site), "-q"])
    assert result.exit_code == 0, result.output
    [page] = (site / "runs").glob("r*.html")
    assert len(page.name) < 120 and run in page.read_text(encoding="utf-8")


def test_mlflow_values_of_the_wrong_type_are_problems_and_the_rest_is_read(tmp_path):
    """A metric value 'abc' and a start_time 'yesterday' in the SQLite store, a status [3] in a file
    store's meta.yaml: each is named, and every other run and value is read."""
    import sqlite3

    logs = tmp_path / "logs"
    shutil.copytree(FORMATS / "mlruns", logs / "mlruns")
    shutil.copyfile(FORMATS / "mlflow" / "mlflow.db", logs / "mlflow.db")
    with sqlite3.connect(logs / "mlflow.db") as db:
        db.execute("update metrics set value = 'abc' where rowid = 1")
        db.execute("update runs set start_time = 'yesterday'")
    meta = next((logs / "mlruns").glob("*/*/meta.yaml"))
    meta.write_text(re.sub(r"(?m)^status: .*$", "status: [3]", meta.read_text()))
    clean = ingest(FORMATS)
    campaign = ingest(logs)
    found = problems(campaign)
    messages = [message for _line, message in found["mlflow.db"]]
    assert sum("1 metric value with a value, step or time that is not a number" in m for m in messages) == 1
    starts = [m for m in messages if "start_time 'yesterday' is no time between 1970 and 2199" in m]
    assert len(starts) == len(messages) - 1 == len([r for r in clean.runs.values() if "mlflow/mlflow.db" in r.sources])
    db_runs = [r for r in campaign.runs.values() if "mlflow.db" in r.sources]
    assert len(db_runs) == len([r for r in clean.runs.values() if "mlflow/mlflow.db" in r.sources])
    assert any("MLflow run status [3] is not one MLflow writes" in (f.reason or "") for f in campaign.run_facts)
