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


def test_the_report_json_reference_names_every_section_and_every_code():
    """docs/report-json.md documents each top-level key of the sample's report and every value of
    each closed list a tool may branch on; a new code without its line in the doc fails here."""
    import json
    from typing import get_args

    from reportgen.analysis.checkpoints import Place
    from reportgen.analysis.decisions import PointState
    from reportgen.analysis.estimates import Advice, Case, Doubt, EstimateKind, Quantity
    from reportgen.analysis.variance import CauseName
    from reportgen.analysis.verdicts import CampaignVerdict, VariantVerdict
    from reportgen.model import RunKind, Status, StoppedBy, WarningCode
    from reportgen.plan.schema import StopKind

    doc = (REPO / "docs" / "report-json.md").read_text(encoding="utf-8")
    table = doc.split("## Sections", 1)[1].split("## ", 1)[0]
    sections = re.findall(r"^\| `([a-z_]+)`(?:, `([a-z_]+)`)? \|", table, flags=re.MULTILINE)
    documented = {key for pair in sections for key in pair if key}
    report = json.loads((REPO / "tests" / "golden" / "sample-report.json").read_text(encoding="utf-8"))
    assert set(report) <= documented, f"undocumented sections: {sorted(set(report) - documented)}"
    assert documented <= set(report), f"documented sections the report lacks: {sorted(documented - set(report))}"

    vocabularies = [RunKind, Status, StoppedBy, WarningCode, CauseName, Place, PointState, EstimateKind, Quantity,
                    Doubt, VariantVerdict, CampaignVerdict, Advice, Case]
    missing = [f"{v.__name__}.{m.name}" for v in vocabularies for m in v if f"`{m.value}`" not in doc]
    missing += [f"StopKind {k}" for k in get_args(StopKind) if f"`{k}`" not in doc]
    assert not missing
