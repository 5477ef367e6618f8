"""Writes sample_logs/: the bundled campaign, logged with reportgen.events as a training script would.

Run `python tests/sample_campaign.py sample_logs` to regenerate it; a test checks that the
committed folder is exactly what this script writes, so the story below and the files agree.

The story (times JST, one RTX 4090 3-day lot from 2026-11-02 09:00):
- preparation and the data check run longer than planned; the pilot passes and at the
  decision point the exploratory long-context variant is dropped (R3, R9);
- the pilot checkpoint is reloaded in a new process (R12);
- control-1 cuts articles to fit the context (its truncation counter and its log say so) and
  the script stops it by S3; the prompt is shortened, which is a new configuration, so the
  control runs again as control-2 (R10) and falls short of the threshold, as a control may;
- lora-r16-1 is killed at step 1,320 (CUDA out of memory, the log's last line cut off); its
  step-1,200 checkpoint is reloaded in a new process first (a checkpoint benchmark CSV), then
  lora-r16-2 resumes from it, meets a stretch of long articles (its token count shows them)
  and passes the threshold;
- lora-r64-1 diverges: its eval_rougeL falls under S2's 0.20 at step 2,000, which the script
  does not check, then grad_norm goes infinite, the loss NaN, and the script stops it by S1;
- the first full evaluation, eval-all-1, is killed by the host and has no checkpoint (S4);
  eval-all-2 runs it again from the start;
- outputs/manifest.yaml lists what was delivered (R14, R15): lora-r16's predictions on jsum-v3
  and on jsum-v2-dev pass (two outputs: 47.14 / 2 = 23.57 USD each); four timing repeats of the
  jsum-v3 predictions count once; the control's predictions are rejected (it missed the
  threshold), and so is lora-r64's adapter (its run was stopped, its revision a branch name).
"""

from __future__ import annotations

import json
import math
import random
import struct
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import yaml

from reportgen.events import EventLog

JST = timezone(timedelta(hours=9))
START = datetime(2026, 11, 2, 9, 0, tzinfo=JST)


class Clock:
    def __init__(self, at: datetime):
        self.at = at

    def __call__(self) -> datetime:
        return self.at

    def set(self, day: int, hour: int, minute: int = 0, second: int = 0) -> None:
        self.at = datetime(2026, 11, day, hour, minute, second, tzinfo=JST)

    def advance(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


def _train(log: EventLog, clock: Clock, rng: random.Random, first: int, last: int, seconds_per_step: float,
           evals: dict[int, float], ckpt_every: int = 0, overflow_at: int | None = None,
           ckpt_dir: str = "", state: tuple[str, ...] = (), diverge_from: int | None = None,
           long_inputs: tuple[range, float] | None = None, tokens_per_step: int | None = None) -> None:
    """Log metrics every 10 steps, evals at the given steps, checkpoints every `ckpt_every`.

    `long_inputs` (steps, seconds a step) is a stretch of longer articles: with `tokens_per_step`,
    the running token count (num_input_tokens_seen) shows them, 1.7 times as many tokens a step.
    """
    seen = (first - 1) * tokens_per_step if tokens_per_step else 0
    for step in range(first, last + 1):
        slow = long_inputs is not None and step in long_inputs[0]
        clock.advance(long_inputs[1] if slow and long_inputs else seconds_per_step)
        seen += int((tokens_per_step or 0) * (1.7 if slow else 1.0))
        if step % 10 == 0:
            progress = step / 3000
            loss = 2.4 * math.exp(-2.2 * progress) + 0.55 + rng.uniform(-0.04, 0.04)
            if diverge_from is not None and step > diverge_from:
                loss += (step - diverge_from) / 100 * 0.35
            grad_norm = 1.2 + rng.uniform(-0.3, 0.3)
            if overflow_at is not None and step >= overflow_at - 2:
                grad_norm = math.inf
            if overflow_at is not None and step >= overflow_at:
                loss = math.nan
            extra = {"num_input_tokens_seen": seen} if tokens_per_step else {}
            log.metric(step=step, loss=round(loss, 4), grad_norm=grad_norm if not math.isfinite(grad_norm) else round(grad_norm, 4),
                       learning_rate=round(2e-4 * (1 - progress), 8), **extra)
        if step in evals:
            seconds = 540.0
            clock.advance(seconds)
            log.eval(step=step, metrics={"eval_loss": round(2.9 - evals[step] * 4, 4), "eval_rougeL": evals[step]}, seconds=seconds)
        if ckpt_every and step % ckpt_every == 0:
            save = 30.0 + rng.uniform(0, 6)
            clock.advance(save)
            path = f"{ckpt_dir}/checkpoint-{step}"
            log.checkpoint_save(step=step, path=path, seconds=round(save, 1), bytes=1_342_177_280, state=state)
            transfer = 38.0 + rng.uniform(0, 8)
            clock.advance(transfer)
            log.checkpoint_transfer(path=path, seconds=round(transfer, 1), bytes=1_342_177_280, destination="team bucket")


def write_sample(root: Path) -> None:
    rng = random.Random(20261102)
    clock = Clock(START)
    campaign = EventLog(root / "campaign" / "events.jsonl", clock=clock)
    state = ("model", "optimizer", "scheduler", "rng", "progress")

    def step(step_id: str, start: tuple[int, int, int], end: tuple[int, int, int], note: str | None = None) -> None:
        clock.set(*start)
        campaign.step_start(step_id)
        clock.set(*end)
        campaign.step_end(step_id, note=note)

    step("prep-env", (2, 9, 0), (2, 12, 40), note="base model download was slow")
    step("data-check", (2, 12, 40), (2, 14, 10))
    step("load-model", (2, 14, 10), (2, 15, 35))

    clock.set(2, 15, 35)
    campaign.step_start("pilot")
    pilot = EventLog(root / "runs" / "pilot-1" / "events.jsonl", run="pilot-1", clock=clock)
    clock.set(2, 15, 40)
    pilot.run_start(config={"base": "swallow-7b", "rank": 16, "lr": 2e-4, "max_len": 1024, "steps": 300}, variant=None)
    _train(pilot, clock, rng, 1, 300, 33.0, evals={300: 0.281}, ckpt_every=150, ckpt_dir="ckpt/pilot-1", state=state)
    pilot.run_end(status="completed", step=300)
    clock.set(2, 18, 50)
    campaign.step_end("pilot")

    clock.set(2, 19, 0)
    campaign.decision("after-pilot", "continue",
                      reason="Pilot loss falls steadily and a step takes about 11 s against the 10 s planned; keep control, r16 and r64.")
    campaign.decision("after-pilot", "drop_variant", variant="lora-r16-len2048",
                      reason="Only 3% of articles exceed 1,024 tokens: the long-context variant cannot change the choice.")

    campaign.step_start("resume-check")
    check = EventLog(root / "runs" / "resume-check-1" / "events.jsonl", run="resume-check-1", clock=clock)
    clock.set(2, 19, 5)
    check.run_start(config={"restore": "ckpt/pilot-1/checkpoint-300"})
    clock.advance(38.4)
    check.checkpoint_restore(path="ckpt/pilot-1/checkpoint-300", seconds=38.4, step=300)
    clock.advance(95.0)
    check.reload_test(path="ckpt/pilot-1/checkpoint-300", ok=True, seconds=95.0, new_process=True,
                      message="weights, optimizer, scheduler and RNG restored; step 301 loss matches within 1e-3")
    clock.set(2, 19, 45)
    check.run_end(status="completed", step=300)
    clock.set(2, 19, 50)
    campaign.step_end("resume-check")

    campaign.step_start("control-preds")
    control_config = {"base": "swallow-7b", "prompt": "tuned-v4", "max_len": 1024}
    control = EventLog(root / "runs" / "control-1" / "events.jsonl", run="control-1", clock=clock)
    clock.set(2, 19, 55)
    control.run_start(config=control_config, variant="control")
    clock.advance(115.0 * 10)
    control.metric(step=10, items_per_second=0.29, truncated_inputs=7)
    control.stop(rule="S3-truncation", reason="7 of the first 80 articles were cut to 1,024 tokens with the tuned-v4 prompt",
                 step=10)
    control.run_end(status="stopped", step=10)
    (root / "runs" / "control-1" / "stdout.log").write_text(
        "step 10/250\n"
        "Token indices sequence length is longer than the specified maximum sequence length for this model "
        "(1187 > 1024). Running this sequence through the model will result in indexing errors\n"
        "WARNING truncated 7 of 80 inputs to max_len=1024 (prompt tuned-v4 + article)\n"
        "stop rule S3-truncation: required input cut; stopping\n",
        encoding="utf-8",
    )
    control = EventLog(root / "runs" / "control-2" / "events.jsonl", run="control-2", clock=clock)
    clock.set(2, 20, 25)
    control.run_start(config={**control_config, "prompt": "tuned-v4-short"}, variant="control")
    for batch in range(1, 251):
        clock.advance(105.0)
        if batch % 10 == 0:
            control.metric(step=batch, items_per_second=round(0.30 + rng.uniform(-0.02, 0.02), 4), truncated_inputs=0)
    clock.advance(600.0)
    control.eval(step=250, metrics={"eval_rougeL": 0.301, "eval_loss": 1.694}, seconds=600.0)
    control.run_end(status="completed", step=250)
    clock.set(3, 4, 10)
    campaign.step_end("control-preds", note="control-1 cut articles (S3); control-2 ran with the shortened prompt")

    campaign.step_start("train-r16")
    config_r16 = {"base": "swallow-7b", "rank": 16, "lr": 2e-4, "max_len": 1024, "steps": 3000}
    first = EventLog(root / "runs" / "lora-r16-1" / "events.jsonl", run="lora-r16-1", clock=clock)
    clock.set(3, 4, 15)
    first.run_start(config=config_r16, variant="lora-r16")
    _train(first, clock, rng, 1, 1320, 11.2, evals={500: 0.262, 1000: 0.297}, ckpt_every=400,
           ckpt_dir="ckpt/lora-r16-1", state=state)
    # The process was killed while writing: the last event line is cut off mid-way.
    clock.advance(112.0)
    with open(root / "runs" / "lora-r16-1" / "events.jsonl", "a", encoding="utf-8") as handle:
        handle.write(f'{{"ts":"{clock().isoformat(timespec="milliseconds")}","type":"metric","run":"lora-r16-1","step":1330,"metr')
    (root / "runs" / "lora-r16-1" / "stdout.log").write_text(
        "step 1320/3000\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 214, in <module>\n'
        "    trainer.train()\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity "
        "of 23.64 GiB of which 1.02 GiB is free.\n",
        encoding="utf-8",
    )
    (root / "campaign" / "checkpoint-bench.csv").write_text(
        "checkpoint,operation,time,seconds,ok,host,process,new_process,message\n"
        "/mnt/bucket/ckpt/lora-r16-1/checkpoint-1200,reload_test,2026-11-03T09:20:40+09:00,88.0,true,gpu-a,7311,true,"
        "weights optimizer scheduler and RNG restored in a new process; step 1201 loss matches within 1e-3\n",
        encoding="utf-8",
    )
    second = EventLog(root / "runs" / "lora-r16-2" / "events.jsonl", run="lora-r16-2", clock=clock)
    clock.set(3, 9, 30)
    second.run_start(config={**config_r16, "gradient_checkpointing": True}, variant="lora-r16", resumes="lora-r16-1", step=1201)
    clock.advance(45.2)
    second.checkpoint_restore(path="ckpt/lora-r16-1/checkpoint-1200", seconds=45.2, step=1200)
    # Steps 2,201-2,300 meet a stretch of long articles (22 s a step instead of about 13.1).
    _train(second, clock, rng, 1201, 3000, 13.6 - 840 / 1700, evals={1500: 0.309, 2000: 0.322, 2500: 0.330, 3000: 0.334},
           ckpt_every=400, ckpt_dir="ckpt/lora-r16-2", state=state, long_inputs=(range(2201, 2301), 22.0),
           tokens_per_step=7200)
    second.run_end(status="completed", step=3000)
    clock.advance(300)
    campaign.step_end("train-r16")

    campaign.step_start("train-r64")
    r64 = EventLog(root / "runs" / "lora-r64-1" / "events.jsonl", run="lora-r64-1", clock=clock)
    clock.advance(300)
    r64.run_start(config={"base": "swallow-7b", "rank": 64, "lr": 2e-4, "max_len": 1024, "steps": 3000}, variant="lora-r64")
    _train(r64, clock, rng, 1, 2140, 10.4, evals={500: 0.271, 1000: 0.302, 1500: 0.311, 2000: 0.192},
           ckpt_every=400, ckpt_dir="ckpt/lora-r64-1", state=state, overflow_at=2140, diverge_from=1880)
    r64.stop(rule="S1-nonfinite", reason="loss is NaN at step 2140 (grad_norm infinite from step 2138)", step=2140)
    r64.run_end(status="stopped", step=2140)
    clock.advance(600)
    campaign.step_end("train-r64", note="stopped by S1-nonfinite; r64 is useful, not required")
    clock.advance(300)

    campaign.step_start("evaluate")
    evaluation = {"checkpoints": ["control-2", "lora-r16-2/checkpoint-3000"], "corpus": "jsum-v3", "batch": 16}
    first_eval = EventLog(root / "runs" / "eval-all-1" / "events.jsonl", run="eval-all-1", clock=clock)
    clock.advance(180)
    first_eval.run_start(config=evaluation)
    for batch in range(1, 44):
        clock.advance(95.0)
        if batch % 10 == 0:
            first_eval.metric(step=batch, items_per_second=round(0.17 + rng.uniform(-0.01, 0.01), 4))
    (root / "runs" / "eval-all-1" / "stdout.log").write_text(
        "step 40/125\n"
        "Killed\n",
        encoding="utf-8",
    )
    clock.advance(20 * 60)
    second_eval = EventLog(root / "runs" / "eval-all-2" / "events.jsonl", run="eval-all-2", clock=clock)
    second_eval.run_start(config=evaluation)
    for batch in range(1, 126):
        clock.advance(95.0)
        if batch % 10 == 0:
            second_eval.metric(step=batch, items_per_second=round(0.17 + rng.uniform(-0.01, 0.01), 4))
    second_eval.run_end(status="completed", step=125)
    clock.advance(300)
    campaign.step_end("evaluate", note="eval-all-1 was killed with the host; nothing to resume from, so it ran again")

    for step_id, minutes in (("write-outputs", 110), ("error-analysis", 390)):
        campaign.step_start(step_id)
        clock.advance(minutes * 60)
        campaign.step_end(step_id)
    write_outputs(root)


COMMIT = "4e3f1a9c2b7d8e6f5a0b1c2d3e4f5a6b7c8d9e0f"


def _adapter(folder: Path, revision: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "adapter_config.json").write_text(json.dumps(
        {"base_model_name_or_path": "tokyotech-llm/Swallow-7b-hf", "revision": revision, "peft_type": "LORA", "r": 16},
        indent=2) + "\n", encoding="utf-8")
    header = json.dumps({"base_model.lora_A.weight": {"dtype": "F16", "shape": [4, 8], "data_offsets": [0, 64]}}).encode()
    (folder / "adapter_model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + bytes(64))


def _predictions(path: Path, ids: list[str], rng: random.Random, timing: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for ident in ids:
        record = {"id": ident, "rougeL": round(rng.uniform(0.2, 0.45), 3)}
        if timing:
            record["seconds"] = round(rng.uniform(0.9, 1.3), 2)
        lines.append(json.dumps(record, separators=(",", ":")))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_outputs(root: Path) -> None:
    """What the campaign delivered, and the manifest that lists it."""
    rng = random.Random(14)
    v3 = [f"v3-{i:04d}" for i in range(1, 2001)]
    v2 = [f"v2-{i:04d}" for i in range(1, 301)]
    (root / "corpus").mkdir(parents=True, exist_ok=True)
    (root / "corpus" / "jsum-v3.ids").write_text("\n".join(v3) + "\n", encoding="utf-8")
    (root / "corpus" / "jsum-v2-dev.ids").write_text("\n".join(v2) + "\n", encoding="utf-8")
    out = root / "outputs"
    _predictions(out / "control" / "predictions.jsonl", v3, rng)
    _predictions(out / "lora-r16" / "predictions.jsonl", v3, rng)
    _predictions(out / "lora-r16" / "predictions-jsum-v2-dev.jsonl", v2, rng)
    for repeat in range(1, 5):
        _predictions(out / "lora-r16" / f"timing-{repeat}" / "predictions.jsonl", v3, rng, timing=True)
    _adapter(out / "lora-r16" / "adapter", COMMIT)
    _adapter(out / "lora-r64" / "adapter", "main")
    (out / "error-analysis.md").write_text(
        "# Error analysis\n\nlora-r16 loses most on articles over 900 tokens and on numeric facts.\n", encoding="utf-8")
    (out / "stop-reasons.json").write_text(json.dumps([
        {"run": "control-1", "rule": "S3-truncation", "reason": "articles cut with the tuned-v4 prompt"},
        {"run": "lora-r64-1", "rule": "S1-nonfinite", "reason": "loss NaN at step 2140"},
    ], indent=2) + "\n", encoding="utf-8")
    deliverables = [
        {"id": "predictions-control", "kind": "predictions", "variant": "control", "corpus": "jsum-v3", "run": "control-2",
         "path": "outputs/control/predictions.jsonl", "expected_ids": "corpus/jsum-v3.ids"},
        {"id": "predictions-lora-r16", "kind": "predictions", "variant": "lora-r16", "corpus": "jsum-v3", "run": "lora-r16-2",
         "path": "outputs/lora-r16/predictions.jsonl", "expected_ids": "corpus/jsum-v3.ids"},
        {"id": "predictions-lora-r16-jsum-v2-dev", "kind": "predictions", "variant": "lora-r16", "corpus": "jsum-v2-dev",
         "run": "lora-r16-2", "path": "outputs/lora-r16/predictions-jsum-v2-dev.jsonl", "expected_ids": "corpus/jsum-v2-dev.ids"},
        *({"id": f"predictions-lora-r16-timing-{n}", "kind": "predictions", "variant": "lora-r16", "corpus": "jsum-v3",
           "run": "lora-r16-2", "path": f"outputs/lora-r16/timing-{n}/predictions.jsonl", "expected_ids": "corpus/jsum-v3.ids",
           "description": "the same corpus again, for timing"} for n in range(1, 5)),
        {"id": "adapter-lora-r16", "kind": "adapter", "variant": "lora-r16", "run": "lora-r16-2", "path": "outputs/lora-r16/adapter"},
        {"id": "adapter-lora-r64", "kind": "adapter", "variant": "lora-r64", "run": "lora-r64-1", "path": "outputs/lora-r64/adapter"},
        {"id": "error-analysis", "kind": "error_analysis", "path": "outputs/error-analysis.md"},
        {"id": "stop-reasons", "kind": "stop_reasons", "path": "outputs/stop-reasons.json"},
    ]
    (out / "manifest.yaml").write_text(
        "# What the campaign delivered; reportgen checks every entry (docs/deliverables.md).\n"
        + yaml.safe_dump({"deliverables": deliverables}, sort_keys=False, allow_unicode=True), encoding="utf-8")


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "sample_logs")
    for old in sorted(target.glob("*/**/*"), reverse=True):
        if old.is_file() and old.name != "plan.yaml":
            old.unlink()
    write_sample(target)
