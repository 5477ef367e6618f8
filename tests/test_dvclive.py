"""DVCLive folders: values, times, resume and recognition, from folders DVCLive wrote (tests/fixtures/dvclive)."""

from __future__ import annotations

import math
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import damaged

from reportgen.ingest import dvclive
from reportgen.model import Evaluation, InputFile, LogMessage

LOGS = Path(__file__).parent / "fixtures" / "dvclive"
PROPERTIES = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def heads(logs: Path) -> dict[str, bytes]:
    return {p.relative_to(logs).as_posix(): p.read_bytes()[:4096] for p in logs.rglob("*") if p.is_file()}


def read(logs: Path, folder: str) -> dvclive.DvcLiveRun:
    found = heads(logs)
    members = [rel for rel in found if dvclive.live_folder(rel, found) == folder]
    return dvclive.read_folder(logs, folder, members, folder)


def values(run: dvclive.DvcLiveRun, name: str) -> list[tuple[int, float]]:
    out = []
    for frame in run.reading.frames:
        if name in frame.columns:
            rows = frame[frame[name].notna()]
            out += list(zip(rows["step"].astype(int), rows[name].astype(float)))
    return out


def lines_add_up(info: InputFile) -> None:
    if info.lines is not None:
        assert info.records + info.skipped + info.blank + info.header == info.lines


def test_each_folder_is_found_by_its_metric_files():
    found = heads(LOGS)
    assert dvclive.live_folders(found) == {"clean/dvclive", "resumed/dvclive"}
    assert dvclive.live_folder("clean/dvclive/plots/metrics/eval/loss.tsv", found) == "clean/dvclive"
    assert dvclive.live_folder("clean/dvc.yaml", found) == "clean/dvclive"  # beside the folder, naming it


def test_clean_run_values_times_and_params():
    run = read(LOGS, "clean/dvclive")
    loss = values(run, "loss")
    assert [s for s, _v in loss] == list(range(20))
    assert loss[0] == (0, 2.0) and loss[19][1] == pytest.approx(0.18602897842132698)
    assert values(run, "acc")[1][1] == pytest.approx(0.15351827510938587)
    assert values(run, "eval/loss") == [(4, pytest.approx(1.2737143853965303)), (9, pytest.approx(0.6817701814525344)),
                                        (14, pytest.approx(0.3649252812459348)), (19, pytest.approx(0.19533042734239334))]
    facts = run.facts
    assert (facts.first_step, facts.last_step) == (0, 19)
    assert facts.config == {"params": {"lr": 0.01, "batch_size": 16, "model": "tiny-mlp"}}
    assert facts.started_at == datetime.fromtimestamp(1796418339298 / 1000, tz=UTC)
    assert facts.ended_at is None  # the last metric time is when it was last seen: DVCLive logs no end
    assert facts.status is None and "Live.end()" in facts.reason
    assert run.resumed is None


def test_eval_metrics_are_eval_rows_and_evaluations():
    run = read(LOGS, "clean/dvclive")
    frame = next(f for f in run.reading.frames if "eval/loss" in f.columns)
    assert set(frame["kind"]) == {"eval"}
    evals = [e for e in run.reading.events if isinstance(e, Evaluation)]
    assert [e.step for e in evals] == [4, 9, 14, 19]
    assert evals[0].at is not None and evals[0].evidence.line == 2


def test_every_file_of_the_folder_is_claimed_and_accounted():
    run = read(LOGS, "clean/dvclive")
    assert sorted(run.claimed) == ["clean/dvc.yaml", "clean/dvclive/metrics.json", "clean/dvclive/params.yaml",
                                   "clean/dvclive/plots/metrics/acc.tsv", "clean/dvclive/plots/metrics/eval/loss.tsv",
                                   "clean/dvclive/plots/metrics/loss.tsv", "clean/dvclive/report.html"]
    by_path = {i.path: i for i in run.reading.inputs}
    report = by_path["clean/dvclive/report.html"]
    assert report.records == 1 and "not read" in report.notes[0]
    tsv = by_path["clean/dvclive/plots/metrics/loss.tsv"]
    assert (tsv.lines, tsv.header, tsv.records, tsv.problems) == (21, 1, 20, [])
    for info in run.reading.inputs:
        lines_add_up(info)


def test_a_resumed_run_repeats_the_step_its_killed_process_never_summarised():
    run = read(LOGS, "resumed/dvclive")
    assert run.resumed is not None and "step 12 again after step 12" in run.resumed
    assert "1 other metric file)" in run.resumed
    message = next(e for e in run.reading.events if isinstance(e, LogMessage))
    assert message.kind == "resumed" and message.evidence.line == 15 and message.step == 12
    loss = values(run, "loss")
    assert [s for s, _v in loss].count(12) == 2 and loss[-1][0] == 19
    assert run.facts.started_at is None  # DVCLive's default: no timestamp column
    assert run.facts.status is None


def test_steps_that_always_rise_say_no_resume(tmp_path):
    run = read(LOGS, "clean/dvclive")
    assert run.resumed is None and not any(isinstance(e, LogMessage) for e in run.reading.events)


def test_a_metric_logged_twice_a_step_is_no_resume(tmp_path):
    folder = tmp_path / "live" / "plots" / "metrics"
    folder.mkdir(parents=True)
    (folder / "loss.tsv").write_text("step\tloss\n0\t1.0\n0\t0.9\n1\t0.8\n1\t0.7\n")
    run = read(tmp_path, "live")
    assert run.resumed is None


def test_a_summary_behind_the_metric_files_says_so(tmp_path):
    shutil.copytree(LOGS / "clean", tmp_path / "clean")
    (tmp_path / "clean" / "dvclive" / "metrics.json").write_text('{"loss": 0.5, "step": 12}\n')
    run = read(tmp_path, "clean/dvclive")
    summary = next(i for i in run.reading.inputs if i.path.endswith("metrics.json"))
    assert "at step 12 and the metric files reach step 19" in summary.notes[0]
    assert run.facts.status is None


def test_nan_and_a_bad_row_and_a_bad_time(tmp_path):
    folder = tmp_path / "live" / "plots" / "metrics"
    folder.mkdir(parents=True)
    (folder / "loss.tsv").write_text("timestamp\tstep\tloss\n1796418339298\t0\tnan\nx\t1\t0.5\n99\tx\t0.4\n"
                                     "1796418339400\t3\tabc\n\n1796418339500\t4\t0.3")
    run = read(tmp_path, "live")
    info = run.reading.inputs[0]
    assert (info.lines, info.records, info.skipped, info.blank, info.header) == (7, 3, 2, 1, 1)
    loss = values(run, "loss")
    assert math.isnan(loss[0][1]) and loss[1] == (1, 0.5)
    assert sorted(p.line for p in info.problems) == [3, 4, 5]
    assert run.facts.started_at == datetime.fromtimestamp(1796418339.298, tz=UTC)


def test_recognised_by_content():
    found = heads(LOGS)
    assert dvclive.recognise("clean/dvclive/plots/metrics/loss.tsv", found["clean/dvclive/plots/metrics/loss.tsv"]) == dvclive.TSV
    assert dvclive.recognise("any/name/plots/metrics/loss.tsv", b"step\tloss\n0\t1.0\n") == dvclive.TSV
    assert dvclive.recognise("run/dvclive/metrics.json", found["clean/dvclive/metrics.json"]) == dvclive.FILE


@pytest.mark.parametrize("rel, head", [
    ("live/plots/metrics/loss.tsv", b"step\tvalue\n0\t1.0\n"),  # not the file's metric
    ("live/plots/metrics/loss.tsv", b"time\tstep\tloss\n0\t1\t1.0\n"),
    ("live/plots/metrics/loss.tsv", b"step,loss\n0,1.0\n"),
    ("live/data/loss.tsv", b"step\tloss\n0\t1.0\n"),  # not under plots/metrics
    ("live/plots/metrics/loss.csv", b"step\tloss\n0\t1.0\n"),
    ("x/metrics.json", b"[1, 2]"),
    ("x/dvc.yaml", b"stages: {}\n"),
])
def test_other_files_are_not_dvclive(rel, head):
    assert dvclive.recognise(rel, head) is None


def test_a_candidate_outside_a_live_folder_belongs_to_none():
    found = {"a/metrics.json": b"{}", "a/params.yaml": b"lr: 1\n", "b/plots/metrics/loss.tsv": b"step\tx\n"}
    assert all(dvclive.live_folder(rel, found) is None for rel in found)


def test_a_dvc_yaml_that_names_no_single_folder_belongs_to_none():
    found = {"p/dvc.yaml": b"metrics:\n- other/metrics.json\n", "p/dvclive/plots/metrics/loss.tsv": b"step\tloss\n"}
    assert dvclive.live_folder("p/dvc.yaml", found) is None


def test_a_header_that_is_not_dvclives_skips_the_rows(tmp_path):
    folder = tmp_path / "live" / "plots" / "metrics"
    folder.mkdir(parents=True)
    (folder / "loss.tsv").write_text("step\tloss\n0\t1\n")
    (folder / "acc.tsv").write_text("step\tloss\n0\t1\n\n1\t2\n")
    run = dvclive.read_folder(tmp_path, "live", ["live/plots/metrics/acc.tsv"], "live")
    info = run.reading.inputs[0]
    assert (info.header, info.skipped, info.blank, info.records) == (1, 2, 1, 0)
    assert "not DVCLive's header for acc" in info.problems[0].message


TSV_FILE = LOGS / "clean" / "dvclive" / "plots" / "metrics" / "loss.tsv"
ANY = st.one_of(st.binary(max_size=1024), damaged(TSV_FILE.read_bytes()),
                damaged((LOGS / "resumed" / "dvclive" / "plots" / "metrics" / "acc.tsv").read_bytes()))


@PROPERTIES
@given(tsv=ANY, summary=st.one_of(st.binary(max_size=64), damaged((LOGS / "clean" / "dvclive" / "metrics.json").read_bytes())))
def test_any_bytes_give_a_result_with_every_line_accounted(tmp_path, tsv, summary):
    folder = tmp_path / "live" / "plots" / "metrics"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "loss.tsv").write_bytes(tsv)
    (tmp_path / "live" / "metrics.json").write_bytes(summary)
    run = dvclive.read_folder(tmp_path, "live", ["live/plots/metrics/loss.tsv", "live/metrics.json"], "live")
    for info in run.reading.inputs:
        lines_add_up(info)
        assert len(info.problems) >= min(1, info.skipped)
    tsv_info = next(i for i in run.reading.inputs if i.path.endswith(".tsv"))
    assert tsv_info.lines is not None or "UTF-8" in tsv_info.problems[0].message
    for frame in run.reading.frames:
        assert all(0 <= s <= dvclive.MAX_COUNT for s in frame["step"])
    dvclive.recognise("live/plots/metrics/loss.tsv", tsv)
    dvclive.live_folder("live/metrics.json", {"live/metrics.json": summary, "live/plots/metrics/loss.tsv": tsv})


# --- in a campaign ---------------------------------------------------------------------------------

def test_a_dvclive_folder_is_a_run_named_after_its_project_with_loss():
    from reportgen.ingest import ingest
    campaign = ingest(LOGS / "clean")
    assert list(campaign.runs) == ["clean"]  # dvclive/ is DVCLive's default name: the project folder names it
    run = campaign.runs["clean"]
    assert "loss" in campaign.metric_names() and (run.first_step, run.last_step) == (0, 19)
    assert run.config == {"params": {"lr": 0.01, "batch_size": 16, "model": "tiny-mlp"}} and run.config_id
    assert run.started_at == datetime.fromtimestamp(1796418339298 / 1000, tz=UTC)
    assert run.ended_at is None and run.last_seen_at == datetime.fromtimestamp(1796418339427 / 1000, tz=UTC)
    assert [f.format for f in run.facts] == ["dvclive"]
    assert {i.path: i.format for i in campaign.inputs}["dvc.yaml"] == "dvclive"  # the dvc.yaml above it is its


def test_counter_example_a_live_folder_of_another_name_names_itself(tmp_path):
    from reportgen.ingest import ingest
    shutil.copytree(LOGS / "clean" / "dvclive", tmp_path / "project" / "wide-lr")
    assert list(ingest(tmp_path).runs) == ["wide-lr"]
