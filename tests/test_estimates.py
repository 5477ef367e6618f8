"""Next-campaign estimates (R16, R9): planned, measured and next figures with their basis; the
uncertainties, which shrink as measurements exist; and the lot the suggested schedule fits, the
ordered one first. What is proposed again, and the draft plan's left-out items: test_next_advice.py."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner
from conftest import SAMPLE_LOGS, SAMPLE_PLAN

from reportgen.build import prepare
from reportgen.cli import cli


@pytest.fixture(scope="module")
def report() -> dict:
    return prepare(SAMPLE_LOGS, SAMPLE_PLAN).report


def by_item(report: dict) -> dict[str, dict]:
    return {e["item"]: e for e in report["estimates"]}


def uncertain_items(report: dict) -> set[str]:
    return {u["item"] for u in report["next_campaign"]["uncertainties"]}


def test_every_step_and_variant_has_planned_measured_next_and_a_basis(report):
    estimates = by_item(report)
    steps = [s["id"] for s in report["schedule"]["steps"]]
    variants = [v["id"] for v in report["variants"]]
    assert sorted(estimates) == sorted([f"step {s}" for s in steps] + [f"variant {v}" for v in variants])
    for step in report["schedule"]["steps"]:
        e = estimates[f"step {step['id']}"]
        assert e["planned_hours"] == step["planned_hours"] and e["measured_hours"] == step["actual_hours"]
        assert e["basis"] and e["next_hours"] is not None
        assert e["measured"] is (step["actual_hours"] is not None)


def test_interruptions_become_an_allowance_spread_over_the_gpu_steps(report):
    estimates, steps = by_item(report), {s["id"]: s for s in report["schedule"]["steps"]}
    plan = report["next_campaign"]
    gpu = [s for s in steps.values() if s["resource"] == "gpu0" and s["actual_hours"] is not None]
    down = {s["id"]: sum(c["hours"] for c in s["explained"] if c["cause"] in ("lost work", "downtime")) for s in gpu}
    allowance = sum(down.values()) / sum(s["actual_hours"] - down[s["id"]] for s in gpu)
    assert plan["interruption_allowance"] == pytest.approx(allowance, abs=1e-4)
    assert allowance > 0  # lora-r16-1 and eval-all-1 were interrupted
    # train-r16 lost 1.16 h to lora-r16-1's crash: the next estimate replaces it with the allowance.
    r16 = estimates["step train-r16"]
    assert r16["next_hours"] == pytest.approx((steps["train-r16"]["actual_hours"] - down["train-r16"]) * (1 + allowance), abs=1e-3)
    assert "lost work and downtime replaced" in r16["basis"]
    # Human and cpu steps keep what they measured.
    assert estimates["step error-analysis"]["next_hours"] == steps["error-analysis"]["actual_hours"]


def test_a_variant_is_one_full_run_without_the_work_lost(report):
    estimates, runs = by_item(report), {r["id"]: r for r in report["runs"]}
    allowance = report["next_campaign"]["interruption_allowance"]
    r16 = estimates["variant lora-r16"]
    # lora-r16-1 saved at step 1,200 (08:20:07.268) and crashed at 08:43:10; lora-r16-2 resumed it and completed.
    lost = (23 * 60 + 2.732) / 3600
    work = runs["lora-r16-1"]["gpu_hours"] + runs["lora-r16-2"]["gpu_hours"] - lost
    assert r16["next_hours"] == pytest.approx(work * (1 + allowance), abs=2e-3)
    assert r16["measured_hours"] == pytest.approx(runs["lora-r16-1"]["gpu_hours"] + runs["lora-r16-2"]["gpu_hours"], abs=1e-3)
    assert "lora-r16-1 then lora-r16-2" in r16["basis"] and r16["runs"] == ["lora-r16-1", "lora-r16-2"]
    # control-1 was stopped and rerun with a new config: one full run is control-2.
    assert estimates["variant control"]["next_hours"] == pytest.approx(runs["control-2"]["gpu_hours"] * (1 + allowance), abs=1e-3)


def test_a_variant_that_never_finished_is_scaled_to_its_configured_steps(report):
    estimates, runs = by_item(report), {r["id"]: r for r in report["runs"]}
    allowance = report["next_campaign"]["interruption_allowance"]
    r64 = estimates["variant lora-r64"]
    work = runs["lora-r64-1"]["gpu_hours"] * 3000 / 2140  # stopped at 2,140 of the config's 3,000 steps
    assert r64["next_hours"] == pytest.approx(work * (1 + allowance), abs=1e-3)
    assert "scaled to the 3,000 steps (its config's steps)" in r64["basis"]
    assert f"× 3,000 / 2,140 steps = {work:.2f} h" in r64["basis"]  # the formula, with its figures
    # Its step gets the rest of the run too.
    step = estimates["step train-r64"]
    assert "for the rest of a full run of lora-r64" in step["basis"]
    assert step["next_hours"] > step["measured_hours"] * (1 + allowance)
    # lora-r64 diverged and is useful: it is not proposed again, so it is no uncertainty of the next campaign.
    assert "variant lora-r64" not in uncertain_items(report)


def test_an_extrapolated_variant_still_proposed_stays_uncertain(sample_plan_data, write_plan):
    def required(d):
        next(v for v in d["variants"] if v["id"] == "lora-r64")["category"] = "required"

    report = prepare(SAMPLE_LOGS, write_plan(sample_plan_data, required)).report
    # A required variant that diverged is kept with a change, so its extrapolated full run is a doubt to keep.
    assert by_item(report)["step train-r64"]["in_suggested_schedule"] is True
    message = next(u["message"] for u in report["next_campaign"]["uncertainties"] if u["item"] == "variant lora-r64")
    assert message.startswith("Variant lora-r64 never completed a run: a full run (10.4 h) is extrapolated from lora-r64-1")


def test_a_dropped_variant_is_left_out_of_the_suggested_schedule_and_said_so(report):
    estimates = by_item(report)
    dropped = estimates["step explore-len2048"]
    assert dropped["in_suggested_schedule"] is False and dropped["measured"] is False
    assert "dropped at after-pilot" in dropped["left_out_reason"]
    # The diverged lora-r64 goes too (test_next_advice.py); the dropped variant's step after it.
    assert report["next_campaign"]["left_out"] == ["train-r64", "explore-len2048"]
    assert "dropped at after-pilot" in estimates["variant lora-r16-len2048"]["basis"]
    # Neither is an uncertainty of the next campaign, which does not plan them.
    assert not {"variant lora-r16-len2048", "step explore-len2048", "variant lora-r64"} & uncertain_items(report)


def test_the_suggested_schedule_fits_the_ordered_lot(report):
    plan = report["next_campaign"]
    estimates = by_item(report)
    # Every step on gpu0 runs one after another; the chain ends with the human error analysis. train-r64 is left out.
    chain = ["prep-env", "data-check", "load-model", "pilot", "resume-check", "control-preds", "train-r16",
             "evaluate", "write-outputs", "error-analysis"]
    assert plan["suggested_hours"] == pytest.approx(sum(estimates[f"step {s}"]["next_hours"] for s in chain), abs=1e-3)
    assert plan["suggested_hours"] == pytest.approx(44.62, abs=0.01)
    # It fits the 3-day lot ordered (72 h) with 72 - 44.62 = 27.38 h spare: that lot again, said so.
    assert (plan["lot"]["label"], plan["lot"]["price"], plan["lot"]["ordered"]) == ("RTX 4090, 3 days", 47.14, True)
    assert plan["lot"]["unused_hours"] == pytest.approx(72 - plan["suggested_hours"], abs=1e-3)
    assert plan["ordered_lot"] == plan["lot"] and plan["ordered_shortfall_hours"] is None
    assert plan["lot_advice"].startswith("The suggested schedule takes 44.6 h: it fits the RTX 4090, 3 days lot you "
                                         "ordered (47.14 USD), with 27.4 h spare (72 h window - 44.6 h).")
    assert [lot["label"] for lot in plan["lots"]] == ["RTX 4090, 3 days", "RTX 4090, 7 days", "RTX 4090, 30 days"]
    assert [lot["ordered"] for lot in plan["lots"]] == [True, False, False]
    assert report["uncertainties"] == [u["message"] for u in plan["uncertainties"]]


def test_an_unmeasured_step_keeps_the_plan_figure_and_can_need_a_longer_lot(sample_plan_data, write_plan):
    def longer(d):
        d["schedule"]["steps"].append({"id": "ablation", "kind": "training", "resource": "gpu0", "hours": 40,
                                       "depends_on": ["evaluate"], "category": "useful"})

    report = prepare(SAMPLE_LOGS, write_plan(sample_plan_data, longer)).report
    ablation = by_item(report)["step ablation"]
    assert ablation["next_hours"] == 40 and ablation["measured"] is False and "plan's figure is kept" in ablation["basis"]
    assert "step ablation" in uncertain_items(report)
    plan = report["next_campaign"]
    # The measured chain up to evaluate ends at 36.29 h; the 40 h ablation after it ends at 76.29 h, past 72 h
    # (write-outputs and error-analysis, 8.33 h after evaluate, end earlier).
    assert plan["suggested_hours"] == pytest.approx(76.29, abs=0.01)
    assert plan["ordered_lot"]["fits"] is False
    assert plan["ordered_shortfall_hours"] == pytest.approx(plan["suggested_hours"] - 72, abs=1e-3)
    assert "the RTX 4090, 3 days lot you ordered falls 4.3 h short" in plan["lot_advice"]
    assert plan["lot"]["label"] == "RTX 4090, 7 days" and plan["lot"]["price"] == 110
    assert "cheapest catalogue lot that holds it is RTX 4090, 7 days at 110.00 USD" in plan["lot_advice"]
    assert plan["lots"][0]["fits"] is False and plan["lots"][0]["unused_hours"] < 0
    assert "cheapest catalogue lot that holds it is RTX 4090, 7 days at 110.00 USD" in CliRunner().invoke(
        cli, ["note", str(SAMPLE_LOGS), str(write_plan(sample_plan_data, longer, name="longer.yaml"))]).output


def test_a_variant_with_nothing_measured_is_uncertain_until_its_runs_are_added(tmp_path, report):
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS, logs)
    for run in ("lora-r16-1", "lora-r16-2"):
        shutil.rmtree(logs / "runs" / run)
    without = prepare(logs, SAMPLE_PLAN).report
    assert "variant lora-r16" in uncertain_items(without)
    assert any(u.startswith("Variant lora-r16 (required) was never run") for u in without["uncertainties"])
    assert by_item(without)["variant lora-r16"]["measured"] is False
    # With its runs (the sample as shipped), the item has a measurement and leaves the list.
    assert "variant lora-r16" not in uncertain_items(report)
    assert by_item(report)["variant lora-r16"]["measured"] is True


def test_quantities_never_measured_are_uncertain_and_leave_once_timed(tmp_path, sample_plan_data, write_plan, event_log, clock):
    plan = write_plan(sample_plan_data)
    log = event_log("runs/lora-r16-1/events.jsonl", run="lora-r16-1")
    log.run_start(variant="lora-r16", config={"steps": 100})
    for step in range(10, 101, 10):
        clock.hours(0.1)
        log.metric(step=step, loss=1.0)
    log.checkpoint_save(step=100, path="ckpt/lora-r16-1/checkpoint-100", seconds=30.0)
    log.run_end(status="completed", step=100)
    first = prepare(tmp_path / "logs", plan).report
    items = uncertain_items(first)
    assert {"checkpoint restore", "checkpoint transfer", "reload test in a new process",
            "mean time between interruptions"} <= items
    assert "checkpoint save" not in items  # 30 s was timed
    assert "untested" in next(u["message"] for u in first["next_campaign"]["uncertainties"]
                              if u["item"] == "mean time between interruptions")
    assert first["next_campaign"]["interruption_allowance"] == 0

    clock.hours(0.1)
    log.checkpoint_transfer(path="ckpt/lora-r16-1/checkpoint-100", seconds=40.0, destination="bucket")
    log.checkpoint_restore(path="ckpt/lora-r16-1/checkpoint-100", seconds=20.0, run="lora-r16-1")
    log.reload_test(path="ckpt/lora-r16-1/checkpoint-100", ok=True, seconds=60.0, new_process=True)
    second = prepare(tmp_path / "logs", plan).report
    assert not {"checkpoint restore", "checkpoint transfer", "reload test in a new process"} & uncertain_items(second)
    measured = {m["quantity"]: m for m in second["next_campaign"]["measurements"]}
    assert measured["checkpoint restore"]["measured"] == 20.0 and measured["checkpoint transfer"]["measured"] == 40.0
    assert measured["reload test in a new process"]["count"] == 1


def test_the_order_note_gives_the_next_steps(report):
    from reportgen.render.note import order_note

    note = order_note(report)
    line = next(x for x in note.splitlines() if x.startswith("- Next:"))
    assert f"{report['next_campaign']['suggested_hours']:.1f} h" in line
    assert "it fits the RTX 4090, 3 days lot you ordered (47.14 USD)" in line
    assert "(steps left out: train-r64, explore-len2048)" in line
    assert report["uncertainties"] == [] and "uncertaint" not in line
    assert len(note) <= 2000


def test_total_steps_come_from_the_config_or_lightning_hyperparameters():
    from reportgen.analysis.runs import total_steps
    from reportgen.model import Run

    assert total_steps(Run(id="a", config={"max_steps": 3000, "steps": 10})) == (3000, "max_steps")
    assert total_steps(Run(id="b", config={"hparams": {"lr": 0.05, "max_steps": 40}})) == (40, "hparams.max_steps")
    assert total_steps(Run(id="c", config={"steps": True, "hparams": "not a dict"})) is None
    assert total_steps(Run(id="d")) is None


def test_a_run_that_logs_no_total_of_steps_is_measured_against_the_plans_steps_for_its_step(tmp_path, sample_plan_data,
                                                                                           write_plan):
    """lora-r64-1's config without its `steps`: with the plan's `steps: 3000` for train-r64, the never-completed
    variant is scaled to them and the stop's saving counted against them, each saying where the total comes from;
    without them (the counter-example) nothing is scaled and no saving counted."""
    import json
    import shutil

    from conftest import SAMPLE_LOGS

    from reportgen.build import prepare
    from reportgen.plan.load import load_plan

    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE_LOGS, logs)
    log = logs / "runs" / "lora-r64-1" / "events.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines()
    start = json.loads(lines[0])
    del start["config"]["steps"]
    log.write_text("\n".join([json.dumps(start), *lines[1:]]) + "\n", encoding="utf-8")

    def with_steps(data: dict) -> None:
        next(s for s in data["schedule"]["steps"] if s["id"] == "train-r64")["steps"] = 3000

    for edit, scaled in ((with_steps, True), (None, False)):
        plan = write_plan(sample_plan_data, edit, name=f"plan-{scaled}.yaml")
        assert [s.steps for s in load_plan(plan).plan.schedule.steps if s.id == "train-r64"] == [3000 if scaled else None]
        report = prepare(logs, plan).report
        r64 = by_item(report)["variant lora-r64"]
        step = next(s for s in report["schedule"]["steps"] if s["id"] == "train-r64")
        notes = [c.get("note") or "" for c in step["explained"]]
        if scaled:
            assert "scaled to the 3,000 steps (the steps of train-r64 in the plan)" in r64["basis"], r64["basis"]
            assert any("stopped at step 2,140 of 3,000 (the steps of train-r64 in the plan)" in n for n in notes), notes
        else:
            assert "scaled to" not in r64["basis"], r64["basis"]
            assert not any("stopped at step" in n for n in notes), notes


def test_the_draft_plan_is_the_plan_as_written_with_next_hours(tmp_path):
    from reportgen.plan.load import load_plan

    site = tmp_path / "site"
    result = CliRunner().invoke(cli, ["build", str(SAMPLE_LOGS), str(SAMPLE_PLAN), "-o", str(site), "-q"])
    assert result.exit_code == 0, result.output
    report = json.loads((site / "report.json").read_text(encoding="utf-8"))
    draft = site / report["next_campaign"]["draft_plan"]
    text = draft.read_text(encoding="utf-8")
    original = SAMPLE_PLAN.read_text(encoding="utf-8")
    # Same lines as written, after a header: the steps' hours lines, a list that loses a left-out step, and the
    # left-out items turned into comments.
    header = len(text.splitlines()) - len(original.splitlines())
    assert header >= 4 and all(line.startswith("# ") for line in text.splitlines()[:header])
    changed = [(a, b) for a, b in zip(original.splitlines(), text.splitlines()[header:], strict=True) if a != b]
    commented = [(a, b) for a, b in changed if b.lstrip().startswith("# ")]
    assert all(b.lstrip().removeprefix("# ").startswith(a.strip()) for a, b in commented)
    keys = [a.strip().split(":")[0] for a, b in changed if (a, b) not in commented]
    assert sorted(set(keys)) == ["depends_on", "hours", "steps_per_second"]
    assert keys.count("hours") == 10 and keys.count("steps_per_second") == 1 and keys.count("depends_on") == 1
    loaded = load_plan(draft)
    estimates = by_item(report)
    assert [s.id for s in loaded.plan.schedule.steps] == [s["id"] for s in report["next_campaign"]["steps"] if s["proposed"]]
    for step in loaded.plan.schedule.steps:
        e = estimates[f"step {step.id}"]
        expected = round(e["next_hours"], 1) if e["measured"] else e["planned_hours"]
        assert step.hours == pytest.approx(expected), step.id
    # The planned throughput becomes the measured one, where both exist.
    pace = {m["quantity"]: m["measured"] for m in report["next_campaign"]["measurements"]}
    r16 = next(s for s in loaded.plan.schedule.steps if s.id == "train-r16")
    assert r16.steps_per_second == float(f"{1 / pace['seconds a step (lora-r16)']:.3g}")
    assert "; was: 3,000 steps at 10 s a step" in text
    assert CliRunner().invoke(cli, ["check", str(draft)]).exit_code == 0


def test_the_draft_plan_keeps_windows_line_endings_and_edits_flow_style_hours_in_place(tmp_path, sample_plan_data):
    import yaml

    from reportgen.plan.load import load_plan
    from reportgen.render.nextplan import next_plan

    data = dict(sample_plan_data, schedule={"steps": list(sample_plan_data["schedule"]["steps"])})
    data["schedule"]["steps"][1] = "FLOW"
    text = yaml.safe_dump(data, sort_keys=False).replace("  hours: 3\n", "  hours: 3 # prep\n", 1)
    text = text.replace("- FLOW\n", "- {id: data-check, kind: data_check, resource: cpu, hours: 2, depends_on: [prep-env]}\n")
    path = tmp_path / "plan.yaml"
    path.write_bytes(text.replace("\n", "\r\n").encode())
    plan = load_plan(path)
    assert [s.id for s in plan.plan.schedule.steps][:2] == ["prep-env", "data-check"]
    analysis = prepare(SAMPLE_LOGS, path).analysis
    draft = next_plan(plan, analysis.plan.campaign.id, analysis.next)
    assert "\r\n" in draft and "\n" not in draft.replace("\r\n", "")
    assert "hours: 3.7  # next estimate" in draft and "; was: prep" in draft
    estimate = next(e for e in analysis.next.estimates if e.id == "data-check")
    flow = next(line for line in draft.split("\r\n") if "id: data-check" in line)
    assert flow == (f"  - {{id: data-check, kind: data_check, resource: cpu, hours: {estimate.draft_hours:g}, "
                    "depends_on: [prep-env]}  # hours: next estimate from jsum-lora-2026-11: planned 2 h, measured "
                    "1.50 h (see next.html)")
    assert "left as planned" not in draft
    out = tmp_path / "draft.yaml"
    out.write_text(draft, encoding="utf-8", newline="")
    assert load_plan(out).plan.schedule.steps[1].hours == estimate.draft_hours != 2


def test_a_completed_variant_without_times_is_uncertain_for_the_right_reason(tmp_path, sample_plan_data, write_plan):
    """A Trainer folder keeps no clock times; without train_runtime its run's time is unknown, not unfinished."""
    run = tmp_path / "logs" / "lora-r16-1"
    run.mkdir(parents=True)
    history = [{"step": s, "loss": 1.0 / s, "epoch": s / 100} for s in range(10, 101, 10)]
    control = {"TrainerControl": {"args": {"should_training_stop": True}}}
    (run / "trainer_state.json").write_text(json.dumps({
        "global_step": 100, "max_steps": 100, "stateful_callbacks": control, "log_history": history}), encoding="utf-8")
    report = prepare(tmp_path / "logs", write_plan(sample_plan_data)).report
    assert {r["id"]: r["status"] for r in report["runs"]} == {"lora-r16-1": "completed"}
    message = next(u["message"] for u in report["next_campaign"]["uncertainties"] if u["item"] == "variant lora-r16")
    assert message.startswith("Variant lora-r16 completed (lora-r16-1), but no source gives the time")
    assert by_item(report)["variant lora-r16"]["next_hours"] == 9
    step = next(u["message"] for u in report["next_campaign"]["uncertainties"] if u["item"] == "step train-r16")
    assert step == "Step train-r16 (9 h planned) was never measured: its runs (lora-r16-1) keep no clock times."
