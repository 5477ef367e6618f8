"""Any event log, however odd its story, builds a report: no crash, no NaN in report.json."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from conftest import SAMPLE_PLAN
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reportgen.build import build

START = datetime(2026, 11, 2, 0, 0, tzinfo=UTC)
RUNS = ["control-1", "lora-r16-1", "lora-r16-2", "lora-r64-1", "pilot-1", "other"]
STEPS = ["prep-env", "pilot", "train-r16", "evaluate", "unknown-step"]
numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5))


@st.composite
def event(draw) -> dict:
    kind = draw(st.sampled_from(["metric", "eval", "run_start", "run_end", "stop", "step_start", "step_end",
                                 "decision", "checkpoint_save", "reload_test"]))
    record = {"ts": (START + timedelta(minutes=draw(st.integers(-600, 6000)))).isoformat(), "type": kind}
    if kind not in ("step_start", "step_end", "decision"):
        record["run"] = draw(st.sampled_from(RUNS))
    if kind in ("metric", "eval"):
        record["step"] = draw(st.integers(0, 10_000))
        record["metrics"] = draw(st.dictionaries(st.sampled_from(["loss", "grad_norm", "eval_rougeL"]), numbers, min_size=1))
    elif kind == "run_start":
        record["config"] = draw(st.dictionaries(st.sampled_from(["lr", "rank"]), st.integers(0, 3)))
        record["variant"] = draw(st.sampled_from([None, "control", "lora-r16", "nope"]))
    elif kind == "run_end":
        record["status"] = draw(st.sampled_from(["completed", "stopped", "failed"]))
    elif kind == "stop":
        record.update(rule=draw(st.sampled_from(["S1-nonfinite", "S9"])), reason="why", step=draw(st.integers(0, 9)))
    elif kind in ("step_start", "step_end"):
        record["step_id"] = draw(st.sampled_from(STEPS))
    elif kind == "decision":
        record.update(point="after-pilot", decision=draw(st.sampled_from(["continue", "drop_variant"])),
                      variant=draw(st.sampled_from([None, "lora-r64", "lora-r16-len2048"])))
    elif kind == "checkpoint_save":
        record.update(step=1, path="ckpt/1", seconds=draw(numbers))
    else:
        record.update(path="ckpt/1", ok=draw(st.booleans()))
    return record


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(events=st.lists(event(), max_size=40))
def test_any_story_in_the_logs_builds_a_report(tmp_path_factory, events):
    root = tmp_path_factory.mktemp("prop")
    logs = root / "logs"
    logs.mkdir()
    (logs / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    built = build(logs, SAMPLE_PLAN, root / "site")
    text = (root / "site" / "report.json").read_text()
    json.loads(text, parse_constant=lambda name: (_ for _ in ()).throw(AssertionError(f"{name} in report.json")))
    assert built.report["campaign"]["verdict"] in ("positive", "negative", "inconclusive")
    schedule = built.report["schedule"]
    assert schedule["actual_hours"] is None or schedule["actual_hours"] >= 0
    for step in built.report["schedule"]["steps"]:
        if step["actual_hours"] is not None:
            assert step["actual_hours"] >= 0
            assert abs(step["planned_hours"] + sum(c["hours"] for c in step["explained"]) + step["unexplained_hours"]
                       - step["actual_hours"]) < 1e-3
            assert all(c["evidence"] for c in step["explained"])
    if schedule["actual_hours"] is not None:
        total = schedule["planned_hours"] + sum(c["hours"] for c in schedule["explained"]) + schedule["unexplained_hours"]
        assert abs(total - schedule["actual_hours"]) < 1e-3
    # Next-campaign estimates: a figure with no measurement is the plan's own, and is an uncertainty.
    uncertain = {u["item"] for u in built.report["next_campaign"]["uncertainties"]}
    for estimate in built.report["estimates"]:
        assert estimate["next_hours"] is None or estimate["next_hours"] >= 0
        if not estimate["measured"]:
            assert estimate["next_hours"] == estimate["planned_hours"]
            assert estimate["item"] in uncertain or not estimate["in_suggested_schedule"]
    plan = built.report["next_campaign"]
    for lot in plan["lots"]:
        if abs(plan["suggested_hours"] - lot["hours"]) > 1e-3:  # report.json rounds hours to 4 places
            assert lot["fits"] == (plan["suggested_hours"] < lot["hours"])
