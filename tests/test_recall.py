"""What the watcher keeps of its last build's work (reportgen/recall.py): a result is taken again only when
every input it is worked out from is the same, and what a build did not use is forgotten."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import pyarrow as pa
from conftest import SAMPLE_LOGS

from reportgen.analysis.variance import RunTiming, training_paces
from reportgen.ingest.identity import _traces
from reportgen.model import Campaign, Evidence
from reportgen.recall import Recall, each, frame_digests

T0 = datetime(2026, 11, 3, tzinfo=UTC)


def metrics(runs: int = 3, steps: int = 5) -> pd.DataFrame:
    rows = [{"path": f"runs/r{r}/events.jsonl", "line": s + 1, "run": f"r{r}", "kind": "metric", "step": s * 10,
             "ts": T0 + timedelta(seconds=30 * s + r), "loss": 2.0 - s / 10 - r / 100}
            for r in range(runs) for s in range(steps)]
    frame = pd.DataFrame(rows)
    frame["step"] = frame["step"].astype("Int64")
    frame["loss"] = frame["loss"].astype("float64[pyarrow]")
    return frame


def changed(frame: pd.DataFrame, row: int, column: str, value: object) -> pd.DataFrame:
    copy = frame.copy()
    if column == "loss":  # as the readers make it: a NaN logged stays a NaN, apart from a value not logged (null)
        values = copy["loss"].tolist()
        values[row] = value
        copy["loss"] = pd.Series(pd.arrays.ArrowExtensionArray(pa.array(values, type=pa.float64())), index=copy.index)
    else:
        copy.loc[row, column] = value
    return copy


def test_a_group_s_digest_changes_with_any_of_its_cells_and_no_other_group_s():
    frame = metrics()
    before = frame_digests(frame, "run")
    assert set(before) == {"r0", "r1", "r2"} and len(set(before.values())) == 3
    assert frame_digests(frame.copy(), "run") == before  # equal rows, equal digests
    for column, value in [("loss", 1.2345), ("loss", float("nan")), ("loss", None), ("ts", T0), ("path", "other"),
                          ("line", 99), ("step", None)]:
        after = frame_digests(changed(frame, 7, column, value), "run")  # row 7 is r1's
        assert after["r1"] != before["r1"], (column, value)
        assert after["r0"] == before["r0"] and after["r2"] == before["r2"], (column, value)


def test_a_nan_logged_is_not_a_value_not_logged_and_order_counts():
    frame = metrics()
    nan, missing = changed(frame, 7, "loss", float("nan")), changed(frame, 7, "loss", None)
    assert missing["loss"].isna()[7] and not nan["loss"].isna()[7]  # pyarrow keeps NaN apart from null
    assert frame_digests(nan, "run")["r1"] != frame_digests(missing, "run")["r1"]
    swapped = pd.concat([frame.iloc[[6, 5]], frame.drop(index=[5, 6])], ignore_index=True)
    assert frame_digests(swapped, "run")["r1"] != frame_digests(frame, "run")["r1"]
    assert frame_digests(swapped, "run")["r0"] == frame_digests(frame, "run")["r0"]
    widened = frame.assign(accuracy=pd.Series([None] * len(frame), dtype="float64[pyarrow]"))
    assert frame_digests(widened, "run")["r0"] != frame_digests(frame, "run")["r0"]  # the columns are part of it


def test_recall_gives_back_what_was_made_from_the_same_key_and_forgets_what_a_build_did_not_use():
    recall, calls = Recall(), []

    def make(todo: list[str]) -> list[str]:
        calls.append(list(todo))
        return [item.upper() for item in todo]

    assert each(recall, "part", ["a", "b"], str.encode, make) == ["A", "B"]
    recall.settle()
    assert each(recall, "part", ["b", "c"], str.encode, make) == ["B", "C"]
    assert calls == [["a", "b"], ["c"]] and (recall.reused, recall.made) == (1, 3)
    assert each(recall, "other part", ["b"], str.encode, make) == ["B"] and calls[-1] == ["b"]  # parts apart
    recall.settle()  # "a" was not used by the last build: forgotten
    assert each(recall, "part", ["a", "c"], str.encode, make) == ["A", "C"] and calls[-1] == ["a"]
    assert each(None, "part", ["a"], str.encode, make) == ["A"] and calls[-1] == ["a"]  # no recall: made


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(repr(a[k]) == repr(b[k]) for k in a)


def test_a_trace_is_worked_out_again_only_for_the_run_whose_rows_changed():
    recall, frame = Recall(), metrics()
    formats = {path: "reportgen-events" for path in frame["path"].unique()}
    first = _traces(frame, formats, recall=recall)
    assert same(first, _traces(frame, formats))  # the same traces as without the recall
    recall.settle()
    grown = pd.concat([frame, changed(frame, 14, "step", 50).iloc[[14]]], ignore_index=True)  # r2 logs one more row
    again = _traces(grown, formats, recall=recall)
    assert recall.made == 3 + 1 and recall.reused == 2
    assert again["r0"] is first["r0"] and again["r2"] is not first["r2"] and again["r2"].last_step == 50
    assert same(again, _traces(grown, formats))
    recall.settle()
    relabelled = {**formats, "runs/r0/events.jsonl": "tensorboard"}  # the same rows from a file read otherwise
    assert _traces(grown, relabelled, recall=recall)["r0"].loggers == frozenset({"tensorboard"})


def test_a_pace_is_worked_out_again_when_its_timing_changed_though_its_rows_did_not():
    campaign, recall = Campaign(root="logs"), Recall()
    campaign.metrics = metrics()
    lo, hi = T0, T0 + timedelta(hours=1)
    plain = RunTiming("r1", None, (), ())
    first = training_paces(campaign, [(plain, lo, hi)], recall=recall)[0]
    recall.settle()
    recall.made = 0
    evaluated = RunTiming("r1", None, ((T0 + timedelta(seconds=61), 20.0),), ())  # an evaluation of 20 s in a stretch
    again = training_paces(campaign, [(plain, lo, hi), (evaluated, lo, hi)], recall=recall)
    assert again[0] is first and recall.made == 1
    assert np.isclose(first.seconds - again[1].seconds, 20.0)
    cut = RunTiming("r1", T0 + timedelta(seconds=62), (), ())  # interrupted: its pace ends at its last save
    assert training_paces(campaign, [(cut, lo, hi)], recall=recall)[0].steps == 20
    assert training_paces(campaign, [(plain, lo, hi)])[0] == first  # the same pace as without the recall
    assert Evidence("runs/r1/events.jsonl", 1) in first.evidence


def test_the_plan_is_parsed_again_only_when_its_text_changed(tmp_path, monkeypatch):
    """The watcher's builds read the plan at each build: its YAML is parsed once while the text is the same; an
    edit (counter-example) is parsed again."""
    from reportgen.plan import load

    plan = tmp_path / "plan.yaml"
    plan.write_bytes((SAMPLE_LOGS / "plan.yaml").read_bytes())
    parsed = []
    real = load._parse_yaml
    monkeypatch.setattr(load, "_parse_yaml", lambda path, text: parsed.append(text) or real(path, text))
    recall = Recall()
    first = load.load_plan(plan, recall)
    recall.settle()
    again = load.load_plan(plan, recall)
    recall.settle()
    assert len(parsed) == 1 and again.plan == first.plan == load.load_plan(plan).plan
    plan.write_text("# edited\n" + plan.read_text(encoding="utf-8"), encoding="utf-8")
    load.load_plan(plan, recall)
    assert len(parsed) == 3  # the edited plan parsed (and the plain load above)


def test_a_builds_frame_is_digested_once_before_the_runs_are_renamed_and_once_after(monkeypatch):
    """The digests of the runs' rows are worked out for the frame merging looks at, then once for the sorted frame
    of the built runs, which the continuations and the analysis's paces share (Campaign.run_digests). Counter-
    example: without a recall nothing is digested."""
    from reportgen import model
    from reportgen.analysis import analyse
    from reportgen.ingest import identity, ingest
    from reportgen.plan.load import load_plan

    frames: list[int] = []

    def counted(frame, by):
        frames.append(id(frame))
        return frame_digests(frame, by)

    monkeypatch.setattr(identity, "frame_digests", counted)
    monkeypatch.setattr(model, "frame_digests", counted)
    plan = load_plan(SAMPLE_LOGS / "plan.yaml").plan
    for recall, digested in ((None, 0), (Recall(), 2)):
        frames.clear()
        campaign = ingest(SAMPLE_LOGS, exclude={SAMPLE_LOGS / "plan.yaml"}, recall=recall)
        analyse(plan, campaign, recall=recall)
        assert len(frames) == digested and len(set(frames)) == digested
