"""The documentation's examples are real: they run and read back as documented."""

from __future__ import annotations

import re

from conftest import REPO

from reportgen.ingest import native


def code_blocks(markdown: str, after: str) -> list[str]:
    section = markdown.split(after, 1)[1]
    return re.findall(r"```[a-z]*\n(.*?)```", section, flags=re.DOTALL)


def test_the_event_log_example_reads_without_a_problem(tmp_path):
    example = code_blocks((REPO / "docs" / "events.md").read_text(encoding="utf-8"), "## Example")[0]
    path = tmp_path / "events.jsonl"
    path.write_text(example, encoding="utf-8")
    log = native.read(path, "events.jsonl")
    assert log.input.problems == [] and log.input.skipped == 0
    assert log.input.records == len(example.strip().splitlines())


def test_the_writer_example_in_the_docs_runs(tmp_path, monkeypatch):
    example = code_blocks((REPO / "docs" / "events.md").read_text(encoding="utf-8"), "Write it with")[0]
    monkeypatch.chdir(tmp_path)
    code = example.replace("    ...\n", "    loss, grad_norm = 1.0 / step, 0.5\n")
    exec(compile(code, "docs/events.md", "exec"), {})
    log = native.read(tmp_path / "logs/runs/lora-r16-1/events.jsonl", "events.jsonl")
    assert log.input.problems == []
    assert len(log.metrics[log.metrics["kind"] == "metric"]) == 3000
