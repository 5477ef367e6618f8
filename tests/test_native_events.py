from __future__ import annotations

import json
import math
from datetime import UTC, datetime

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reportgen.events import EventLog
from reportgen.ingest import native
from reportgen.model import Evaluation, LoggedStop, RunEvent

TS = '"ts":"2026-11-02T09:00:00+09:00"'


def metric_line(step: int, run: str = "r1", **values) -> str:
    return json.dumps({"ts": "2026-11-02T09:00:00+09:00", "type": "metric", "run": run, "step": step, "metrics": values})


def read_text(tmp_path, data: bytes):
    path = tmp_path / "events.jsonl"
    path.write_bytes(data)
    return native.read(path, "events.jsonl")


def test_bare_nan_and_infinity_are_read_as_non_finite_values(tmp_path):
    log = read_text(tmp_path, (
        f'{{{TS},"type":"metric","run":"r1","step":1,"metrics":{{"loss":NaN,"grad_norm":Infinity}}}}\n'
        f'{{{TS},"type":"metric","run":"r1","step":2,"metrics":{{"loss":-Infinity}}}}\n'
    ).encode())
    assert log.input.skipped == 0
    loss = log.metrics["loss"].tolist()
    assert math.isnan(loss[0]) and loss[1] == -math.inf
    assert log.metrics["grad_norm"].iloc[0] == math.inf


def test_a_metric_not_logged_at_a_step_is_missing_not_nan(tmp_path):
    log = read_text(tmp_path, (metric_line(1, loss=1.0, grad_norm=2.0) + "\n" + metric_line(2, loss=0.9) + "\n").encode())
    grad = log.metrics["grad_norm"]
    assert grad.isna().tolist() == [False, True]


def test_final_line_cut_off_by_a_crash_is_reported_and_the_rest_kept(tmp_path):
    data = "\n".join(metric_line(s, loss=1.0) for s in range(1, 6)) + '\n{"ts":"2026-11-02T09:00:00+09:00","type":"met'
    log = read_text(tmp_path, data.encode())
    assert log.metrics["step"].tolist() == [1, 2, 3, 4, 5]
    assert log.input.skipped == 1
    assert log.input.problems[0].line == 6
    assert "cut off" in log.input.problems[0].message


def test_junk_bad_utf8_and_wrong_types_are_counted_with_their_lines(tmp_path):
    lines = [
        metric_line(1, loss=1.0),
        "Traceback (most recent call last):",
        '{"ts":"2026-11-02T09:00:00Z","type":"metric","run":"r1","step":"two","metrics":{"loss":1}}',
        "\xff\xfe garbage",
        "[1, 2, 3]",
        '{"ts":"yesterday","type":"metric","run":"r1","step":3,"metrics":{"loss":1}}',
        '{"ts":"2026-11-02T09:00:00Z","type":"bogus","run":"r1"}',
        metric_line(4, loss=0.5),
    ]
    data = b"\n".join(text.encode("latin-1") if "\xff" in text else text.encode() for text in lines) + b"\n"
    log = read_text(tmp_path, data)
    assert log.metrics["step"].tolist() == [1, 4]
    assert log.metrics["line"].tolist() == [1, 8]
    assert log.input.skipped == 6
    by_line = {p.line: p.message for p in log.input.problems}
    assert set(by_line) == {2, 3, 4, 5, 6, 7}
    assert "not JSON" in by_line[2]
    assert "'step' must be an integer" in by_line[3]
    assert "not UTF-8" in by_line[4]
    assert "not a JSON object" in by_line[5]
    assert "'ts' is not an ISO 8601 time" in by_line[6]
    assert "unknown event type 'bogus'" in by_line[7]


def test_line_numbers_survive_blank_lines_and_chunk_boundaries(tmp_path, monkeypatch):
    monkeypatch.setattr(native, "CHUNK_BYTES", 300)
    lines = []
    for step in range(1, 41):
        lines.append(metric_line(step, loss=float(step)))
        if step % 7 == 0:
            lines.append("")
            lines.append("   ")
    log = read_text(tmp_path, ("\n".join(lines) + "\n").encode())
    expected = [i + 1 for i, text in enumerate(lines) if text.strip()]
    assert log.metrics["line"].tolist() == expected
    assert log.metrics["loss"].tolist() == [float(s) for s in range(1, 41)]
    assert log.input.skipped == 0


def test_rare_events_keep_their_fields_exactly(tmp_path):
    data = (
        f'{{{TS},"type":"run_start","run":"r1","config":{{"lr":0.0002,"layers":[1,2]}},"variant":"v1"}}\n'
        + metric_line(1, loss=1.0) + "\n"
        + f'{{{TS},"type":"run_start","run":"r2","config":{{"lr":"2e-4"}}}}\n'
        + f'{{{TS},"type":"eval","run":"r1","step":1,"metrics":{{"acc":0.5}},"seconds":12}}\n'
        + f'{{{TS},"type":"stop","run":"r1","rule":"S1","reason":"loss NaN","step":1}}\n'
    )
    log = read_text(tmp_path, data.encode())
    starts = [e for e in log.events if isinstance(e, RunEvent)]
    assert [s.config for s in starts] == [{"lr": 0.0002, "layers": [1, 2]}, {"lr": "2e-4"}]
    assert starts[0].variant == "v1"
    evaluation = next(e for e in log.events if isinstance(e, Evaluation))
    assert (evaluation.metrics, evaluation.seconds, evaluation.evidence.line) == ({"acc": 0.5}, 12.0, 4)
    stop = next(e for e in log.events if isinstance(e, LoggedStop))
    assert (stop.rule, stop.reason, stop.step, stop.evidence.line) == ("S1", "loss NaN", 1, 5)
    evals = log.metrics[log.metrics["kind"] == "eval"]
    assert evals["acc"].tolist() == [0.5]


def test_non_numeric_metric_values_are_reported_not_silently_dropped(tmp_path):
    log = read_text(tmp_path, (metric_line(1, loss=1.0, note="warmup") + "\n").encode())
    assert any("metrics.note is not a number" in p.message for p in log.input.problems)
    assert log.metrics["loss"].tolist() == [1.0]


def test_writer_and_reader_round_trip(tmp_path):
    at = datetime(2026, 11, 2, 0, 0, tzinfo=UTC)
    log = EventLog(tmp_path / "a" / "events.jsonl", run="r1", clock=lambda: at)
    log.run_start(config={"lr": 1e-4}, variant="control")
    log.metric(step=1, loss=float("nan"), grad_norm=float("inf"))
    log.eval(step=1, metrics={"acc": 0.7}, seconds=3.5)
    log.checkpoint_save(step=1, path="ckpt/1", seconds=30.0, bytes=10, state=["model", "optimizer"])
    log.reload_test(path="ckpt/1", ok=True, seconds=4.0)
    log.stop(reason="loss NaN", rule="S1", step=1)
    log.step_start("train")
    log.decision("after-pilot", "continue", reason="fine")
    log.run_end(status="stopped", step=1)
    result = native.read(tmp_path / "a" / "events.jsonl", "a/events.jsonl")
    assert result.input.skipped == 0 and result.input.problems == []
    assert result.input.records == 9
    kinds = sorted(type(e).__name__ for e in result.events)
    assert kinds == sorted(["RunEvent", "Evaluation", "CheckpointOp", "ReloadTest", "LoggedStop", "StepMark", "LoggedDecision", "RunEvent"])
    metric = result.metrics[result.metrics["kind"] == "metric"].iloc[0]
    assert math.isnan(metric["loss"]) and metric["grad_norm"] == math.inf
    step_line = (tmp_path / "a" / "events.jsonl").read_text().splitlines()[6]
    assert '"run"' not in step_line  # campaign events carry no run id


def test_writer_refuses_times_without_a_zone(tmp_path):
    log = EventLog(tmp_path / "e.jsonl", run="r", clock=lambda: datetime(2026, 1, 1))
    with pytest.raises(ValueError):
        log.metric(step=1, loss=1.0)


def test_sniff_recognises_native_events_by_content():
    assert native.sniff(b"\n" + metric_line(1, loss=1.0).encode() + b"\n")
    assert not native.sniff(b"step 1 loss 2.0\n")
    assert not native.sniff(b'{"loss": 1.0}\n')


line_strategy = st.one_of(
    st.builds(lambda s, v: metric_line(s, loss=v), st.integers(0, 10**6), st.floats(allow_nan=False, allow_infinity=False)),
    st.just('{"ts":"2026-11-02T09:00:00Z","type":"metric","run":"r","step":1,"metrics":{"loss":NaN}}'),
    st.just('{"ts":"2026-11-02T09:00:00Z","type":"run_start","run":"r","config":{"a":1}}'),
    st.just('{"ts":"2026-11-02T09:00:00Z","type":"metric","run":"r","step":"x","metrics":{}}'),
    st.text(max_size=40),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(line_strategy, max_size=30), tail=st.binary(max_size=20))
def test_any_input_gives_a_result_and_every_line_is_accounted_for(tmp_path, lines, tail):
    data = "\n".join(lines).encode("utf-8", "surrogatepass") + b"\n" + tail
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(data)
    log = native.read(path, "fuzz.jsonl")
    non_blank = sum(1 for raw in data.split(b"\n") if raw.strip())
    assert log.input.records + log.input.skipped == non_blank
    assert len(log.input.problems) + log.input.problems_not_shown >= log.input.skipped
    assert isinstance(log.metrics, pd.DataFrame)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(line_strategy, min_size=1, max_size=40))
def test_fast_and_line_by_line_paths_agree(tmp_path, lines):
    data = ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
    path = tmp_path / "agree.jsonl"
    path.write_bytes(data)
    fast = native.read(path, "agree.jsonl")
    collector = native._Collector(native.InputFile(path="agree.jsonl", format=native.FORMAT))
    for offset, raw in enumerate(data.split(b"\n")):
        native._read_line(raw, 1 + offset, collector)
    collector.flush_rows()
    slow_rows = sum(t.num_rows for t in collector.tables)
    assert len(fast.metrics) == slow_rows
    assert fast.input.skipped == collector.info.skipped


@pytest.mark.parametrize("chunk, small", [(1 << 20, 150), (700, 150), (1 << 20, 1 << 20)])
def test_damaged_lines_are_isolated_in_large_pieces(tmp_path, monkeypatch, chunk, small):
    monkeypatch.setattr(native, "CHUNK_BYTES", chunk)
    monkeypatch.setattr(native, "SMALL_PIECE_BYTES", small)
    lines = [metric_line(step, loss=float(step)) for step in range(1, 201)]
    bad_at = {17: "junk", 90: '{"ts":"2026-11-02T09:00:00Z","type":"metric","run":"r1","step":"x","metrics":{"loss":1}}',
              91: "", 150: '{"ts":"2026-11-02T09:00:00Z","type":"run_start","run":"r1","config":{"lr":"fast"}}'}
    for index in sorted(bad_at, reverse=True):
        lines.insert(index, bad_at[index])
    log = read_text(tmp_path, ("\n".join(lines) + "\n").encode())
    expected_lines = [i + 1 for i, text in enumerate(lines) if text.startswith('{"ts": ')]
    assert log.metrics["line"].tolist() == expected_lines
    assert log.metrics["loss"].tolist() == [float(s) for s in range(1, 201)]
    assert [p.line for p in log.input.problems] == [18, 92]
    assert log.input.skipped == 2
    assert [e.config for e in log.events] == [{"lr": "fast"}]


@pytest.mark.parametrize("small", [1 << 20, 10])
def test_a_metric_named_like_a_reserved_column_is_reported_and_ignored(tmp_path, monkeypatch, small):
    monkeypatch.setattr(native, "SMALL_PIECE_BYTES", small)
    data = metric_line(7, loss=1.0, ts=99) + "\n" + metric_line(8, loss=0.5) + "\n"
    if small == 10:  # force the line-by-line path with a damaged line
        data += "junk\n"
    log = read_text(tmp_path, data.encode())
    assert log.metrics["step"].tolist() == [7, 8]
    assert any("metrics.ts has the name of a reserved column" in p.message for p in log.input.problems)
    assert log.metrics["ts"].notna().all()


@pytest.mark.parametrize("chunk", [1 << 20, 120])
def test_lines_that_are_not_objects_never_reach_the_bulk_parser(tmp_path, monkeypatch, chunk):
    # pyarrow's JSON reader crashes the process on a bare `null` at the start of a block.
    monkeypatch.setattr(native, "CHUNK_BYTES", chunk)
    lines = ["null", metric_line(1, loss=1.0), "null x", "  " + metric_line(2, loss=2.0), "[1]", "\r", metric_line(3, loss=3.0), "nulle0N"]
    log = read_text(tmp_path, ("\n".join(lines) + "\n").encode())
    assert log.metrics["step"].tolist() == [1, 2, 3]
    assert log.metrics["line"].tolist() == [2, 4, 7]
    assert sorted(p.line for p in log.input.problems) == [1, 3, 5, 8]


def test_a_line_nested_too_deeply_is_a_problem_not_a_crash(tmp_path):
    deep = '{"ts":"2026-11-02T09:00:00Z","type":"run_start","run":"r","config":' + "[" * 100_000
    log = read_text(tmp_path, (deep + "\n" + metric_line(1, loss=1.0) + "\n").encode())
    assert log.metrics["step"].tolist() == [1]
    assert log.input.problems[0].line == 1
    assert native.sniff(("[" * 100_000 + "\n").encode()) is False


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 130), st.integers(0, 400), st.sampled_from("{[")), min_size=1, max_size=30))
def test_lines_crowded_with_brackets_are_exactly_those_with_more_than_the_bound(lines):
    """Property: the set-aside check finds the lines holding more than MAX_OPEN_BRACKETS `{` or `[`,
    and no other, whatever the lengths around them (a long line elsewhere in the chunk included)."""
    bound = native.MAX_OPEN_BRACKETS
    texts = [(bracket + "x") * opens + "." * filler for opens, filler, bracket in lines]
    buf = ("\n".join(texts) + "\n").encode()
    found = native._Lines(buf, 0, len(buf))
    crowded = native._crowded(buf, found.starts(0, len(buf)), found.ends, 0, len(buf))
    assert crowded.tolist() == [i for i, text in enumerate(texts) if text.count("{") + text.count("[") > bound]


def test_a_line_of_exactly_the_bound_of_brackets_is_parsed_in_bulk():
    """Counter-example: MAX_OPEN_BRACKETS brackets on a line, and more spread over the lines around it, set nothing aside."""
    bound = native.MAX_OPEN_BRACKETS
    buf = ("{" * bound + "\n" + "[" * (bound // 2) + "\n" + "{" * bound + "\n").encode()
    found = native._Lines(buf, 0, len(buf))
    assert native._crowded(buf, found.starts(0, len(buf)), found.ends, 0, len(buf)).tolist() == []


def test_windows_line_endings_and_a_byte_order_mark_are_read(tmp_path):
    lines = [metric_line(1, loss=1.0), "", metric_line(2, loss=2.0)]
    data = b"\xef\xbb\xbf" + ("\r\n".join(lines) + "\r\n").encode()
    assert native.sniff(data)
    log = read_text(tmp_path, data)
    assert log.input.problems == []
    assert log.metrics["line"].tolist() == [1, 3]


def _start_and_metric(tmp_path, metric_first: bool):
    from reportgen.ingest import ingest
    times = iter([datetime(2026, 1, 1, 10, 0, tzinfo=UTC), datetime(2026, 1, 1, 10, 5, tzinfo=UTC)])
    log = EventLog(tmp_path / "runs" / "r1" / "events.jsonl", run="r1", clock=lambda: next(times))
    if metric_first:
        log.metric(step=1, loss=0.5)
        log.run_start(config={"lr": 1e-4})
    else:
        log.run_start(config={"lr": 1e-4})
        log.metric(step=1, loss=0.5)
    return ingest(tmp_path).runs["r1"]


def test_a_row_logged_before_the_recorded_start_moves_the_start_back(tmp_path):
    run = _start_and_metric(tmp_path, metric_first=True)
    assert run.started_at == datetime(2026, 1, 1, 10, 0, tzinfo=UTC)
    assert run.start_evidence.path == "runs/r1/events.jsonl"


def test_counter_example_rows_after_the_recorded_start_leave_it(tmp_path):
    run = _start_and_metric(tmp_path, metric_first=False)
    assert run.started_at == datetime(2026, 1, 1, 10, 0, tzinfo=UTC)
    assert (run.start_evidence.path, run.start_evidence.line) == ("runs/r1/events.jsonl", 1)
