from __future__ import annotations

import json
from importlib import resources

import pytest
from click.testing import CliRunner
from conftest import SAMPLE_PLAN
from hypothesis import given, settings
from hypothesis import strategies as st

from reportgen.cli import cli
from reportgen.errors import PlanError
from reportgen.plan.load import load_plan
from reportgen.plan.schema import schema_text


def run(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert "Traceback" not in result.output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)
    return result


def error_lines(path) -> list[str]:
    with pytest.raises(PlanError) as info:
        load_plan(path)
    return info.value.errors


def test_sample_plan_passes_check():
    result = run("check", SAMPLE_PLAN)
    assert result.exit_code == 0, result.output
    assert "planned 48 h of a 72 h window (24 h unused)" in result.output


def test_init_writes_a_plan_that_passes_check(tmp_path):
    assert run("init", tmp_path / "new").exit_code == 0
    result = run("check", tmp_path / "new" / "plan.yaml")
    assert result.exit_code == 0, result.output


def test_init_refuses_to_overwrite_a_plan(tmp_path):
    (tmp_path / "plan.yaml").write_text("mine\n")
    result = run("init", tmp_path)
    assert result.exit_code == 1
    assert "already exists" in result.output
    assert (tmp_path / "plan.yaml").read_text() == "mine\n"


def test_misspelt_key_names_line_key_and_suggestion(tmp_path):
    text = SAMPLE_PLAN.read_text().replace("      resource: gpu0\n      hours: 1\n      depends_on: [data-check]",
                                           "      resorce: gpu0\n      hours: 1\n      depends_on: [data-check]")
    plan = tmp_path / "plan.yaml"
    plan.write_text(text)
    line = text.splitlines().index("      resorce: gpu0") + 1
    result = run("check", plan)
    assert result.exit_code == 1
    assert f"{plan}:{line}: schedule.steps[2].resorce: unknown key; did you mean 'resource'?" in result.output


def test_every_schema_error_is_reported_not_only_the_first(sample_plan_data, write_plan):
    def edit(d):
        d["quality"]["direction"] = "up"
        d["order"]["lots"][0]["price"] = -1
        d["variants"][0]["categry"] = "required"

    errors = error_lines(write_plan(sample_plan_data, edit))
    assert len(errors) == 3
    assert any("quality.direction" in e and "'higher' or 'lower'" in e for e in errors)
    assert any("order.lots[0].price" in e and "greater than 0" in e for e in errors)
    assert any("variants[0].categry: unknown key; did you mean 'category'?" in e for e in errors)


def test_missing_required_section_is_named(sample_plan_data, write_plan):
    path = write_plan(sample_plan_data, lambda d: d.pop("quality"))
    assert error_lines(path) == [f"{path}:1: quality: required key is missing; add it"]


def test_a_missing_key_says_what_it_is_for(sample_plan_data, write_plan):
    path = write_plan(sample_plan_data, lambda d: d["campaign"].pop("question"))
    errors = error_lines(path)
    assert errors == [f"{path}:1: campaign.question: required key is missing; add it: The one question the campaign answers (Markdown)."]


def test_unknown_gpu_lists_the_plans_gpus(sample_plan_data, write_plan):
    path = write_plan(sample_plan_data, lambda d: d["schedule"]["steps"][3].update(resource="gpu1"))
    errors = error_lines(path)
    assert len(errors) == 1
    assert "schedule.steps[3].resource: unknown GPU 'gpu1'; did you mean 'gpu0'? the plan's GPUs are: gpu0" in errors[0]
    assert errors[0].startswith(f"{path}:")


def test_unknown_dependency_and_cycle_are_errors(sample_plan_data, write_plan):
    def edit(d):
        d["schedule"]["steps"][1]["depends_on"] = ["prep-env", "prep-envv"]
        d["schedule"]["steps"][0]["depends_on"] = ["pilot"]

    errors = error_lines(write_plan(sample_plan_data, edit))
    assert any("unknown step 'prep-envv'; did you mean 'prep-env'?" in e for e in errors)
    assert any("dependency cycle" in e for e in errors)


def test_lot_in_another_currency_is_refused_not_converted(sample_plan_data, write_plan):
    errors = error_lines(write_plan(sample_plan_data, lambda d: d["order"]["lots"][0].update(currency="EUR")))
    assert any("EUR differs from the order's USD; reportgen never converts currencies" in e for e in errors)


def test_start_without_time_zone_is_an_error(sample_plan_data, write_plan):
    errors = error_lines(write_plan(sample_plan_data, lambda d: d["order"]["lots"][0].update(start="2026-11-02T09:00:00")))
    assert any("order.lots[0].start: needs a time zone, e.g. 2026-11-02T09:00:00+09:00" in e for e in errors)


def test_duplicate_key_is_an_error(tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(SAMPLE_PLAN.read_text().replace("  threshold: 0.32\n", "  threshold: 0.32\n  threshold: 0.30\n", 1))
    errors = error_lines(plan)
    assert any("quality.threshold: key written twice" in e for e in errors)


@pytest.mark.parametrize(
    "content, expected",
    [
        (b"campaign: [unclosed\n", "YAML syntax error"),
        (b"\x7fELF\x02\x01\x01\x00\x00\x00", "not a text file"),
        (b"campaign: caf\xe9\n", "not valid UTF-8"),
        (b"- just\n- a list\n", "must be a mapping of sections"),
        (b"", "must be a mapping of sections"),
        (b"campaign: !!python/object/apply:os.system ['true']\n", "YAML syntax error"),
    ],
)
def test_unreadable_plan_exits_1_with_a_message(tmp_path, content, expected):
    plan = tmp_path / "plan.yaml"
    plan.write_bytes(content)
    result = run("check", plan)
    assert result.exit_code == 1
    assert expected in result.output
    assert str(plan) in result.output


def test_missing_plan_file_exits_1(tmp_path):
    result = run("check", tmp_path / "nope.yaml")
    assert result.exit_code == 1
    assert "no such file" in result.output


def test_schedule_over_the_window_fails_check_and_names_the_longer_lot(sample_plan_data, write_plan):
    # R8: the 48 h example grown by 30 h reaches 78 h, 6 h over a 3-day lot.
    path = write_plan(sample_plan_data, lambda d: d["schedule"]["steps"][6].update(hours=39))
    result = run("check", path)
    assert result.exit_code == 1
    assert "takes 78 h" in result.output and "6 h over the 72 h window" in result.output
    assert "RTX 4090, 7 days lot (110 USD)" in result.output


def test_shipped_json_schema_matches_the_model():
    shipped = (resources.files("reportgen.plan") / "plan.schema.json").read_text(encoding="utf-8")
    assert shipped == schema_text(), "regenerate: python -m reportgen.plan.schema > reportgen/plan/plan.schema.json"
    schema = json.loads(shipped)
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) >= {"campaign", "corpus", "quality", "variants", "stop_rules", "schedule", "order"}


def test_check_warns_when_the_schedule_leaves_out_loading_evaluation_or_outputs(sample_plan_data, write_plan):
    def edit(d):
        d["schedule"]["steps"] = [s for s in d["schedule"]["steps"] if s["kind"] not in ("loading", "outputs")]
        for s in d["schedule"]["steps"]:
            s["depends_on"] = [x for x in s.get("depends_on", []) if x not in ("load-model", "write-outputs")]
        d["schedule"]["steps"][2]["depends_on"] = ["data-check"]
        d["decision_points"] = []
        d["schedule"]["steps"][-2]["depends_on"] = ["evaluate"]

    result = run("check", write_plan(sample_plan_data, edit))
    assert result.exit_code == 0, result.output
    assert "warning: schedule.steps: no step of kind 'loading'" in result.output
    assert "no step of kind 'outputs'" in result.output


def test_check_warns_when_a_quality_stop_rule_would_fire_on_the_first_evaluation(sample_plan_data, write_plan):
    assert "after_step" not in run("check", write_plan(sample_plan_data)).output
    result = run("check", write_plan(sample_plan_data, lambda d: d["stop_rules"][1].pop("after_step")))
    assert result.exit_code == 0, result.output
    assert "warning: stop_rules[1].after_step: stop rule 'S2-quality' has no after_step" in result.output


def _grid_variants(d, ids, settings=None):
    extra = [{"id": i, "role": "variant", "category": "useful", **({"settings": settings[n]} if settings else {})}
             for n, i in enumerate(ids)]
    d["variants"] = [v for v in d["variants"] if v["role"] == "control"] + extra
    for s in d["schedule"]["steps"]:
        s.pop("variant", None)
    for item in d["deliverables"]:
        item.pop("variant", None)


def test_check_warns_of_a_full_grid_of_variants_from_their_settings(sample_plan_data, write_plan):
    assert "full grid" not in run("check", write_plan(sample_plan_data)).output
    grid = [{"rank": r, "precision": p} for r in (16, 64) for p in ("bf16", "fp32")]
    result = run("check", write_plan(sample_plan_data, lambda d: _grid_variants(d, ["a", "b", "c", "d"], grid)))
    assert result.exit_code == 0, result.output
    assert "warning: variants: a, b, c, d are every combination of precision (bf16, fp32) and rank (16, 64)" in result.output
    assert "(R9)" not in result.output  # plain words: the rule id stays in the docs
    # Three of the four combinations is a choice, not a grid.
    partial = run("check", write_plan(sample_plan_data, lambda d: _grid_variants(d, ["a", "b", "c", "d"], grid[:3] + [{"rank": 32, "precision": "bf16"}])))
    assert "full grid" not in partial.output


def test_check_reads_a_full_grid_from_variant_ids_of_one_shape(sample_plan_data, write_plan):
    ids = ["r16-bf16", "r16-fp32", "r64-bf16", "r64-fp32", "r256-bf16", "r256-fp32"]
    result = run("check", write_plan(sample_plan_data, lambda d: _grid_variants(d, ids)))
    assert "every combination of part 1 of the id (r16, r256, r64) and part 2 of the id (bf16, fp32)" in result.output
    mixed = run("check", write_plan(sample_plan_data, lambda d: _grid_variants(d, ["lora-r16", "lora-r64", "lora-r16-len2048", "full-ft"])))
    assert "full grid" not in mixed.output


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.binary(max_size=300), st.text(max_size=300).map(str.encode)))
def test_any_plan_bytes_give_a_plan_or_a_plan_error(tmp_path_factory, content):
    path = tmp_path_factory.mktemp("fuzz") / "plan.yaml"
    path.write_bytes(content)
    try:
        load_plan(path)
    except PlanError as error:
        assert error.errors and all(line.startswith(str(path)) for line in error.errors)


@settings(max_examples=100, deadline=None)
@given(key=st.sampled_from(["campaign", "quality", "order", "schedule", "variants"]),
       value=st.one_of(st.none(), st.integers(), st.text(max_size=20), st.lists(st.integers(), max_size=3)))
def test_wrong_section_values_are_plan_errors_naming_the_key(tmp_path_factory, key, value):
    import yaml

    data = yaml.safe_load(SAMPLE_PLAN.read_text())
    data[key] = value
    path = tmp_path_factory.mktemp("fuzz") / "plan.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(PlanError) as info:
        load_plan(path)
    assert any(f": {key}" in line for line in info.value.errors)


def test_reference_errors_are_reported_together_with_field_errors(sample_plan_data, write_plan):
    def edit(d):
        d["quality"]["threshold"] = "high"
        d["schedule"]["steps"][4]["depends_on"] = ["pilott"]

    errors = error_lines(write_plan(sample_plan_data, edit))
    assert any("quality.threshold" in e for e in errors)
    assert any("schedule.steps[4].depends_on[0]: unknown step 'pilott'; did you mean 'pilot'?" in e for e in errors)


def _as_json(node):
    """YAML values as an editor's schema validator sees them (dates are strings)."""
    from datetime import date

    if isinstance(node, dict):
        return {key: _as_json(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_as_json(item) for item in node]
    return node.isoformat() if isinstance(node, date) else node


@pytest.mark.parametrize("plan_file", [SAMPLE_PLAN, resources.files("reportgen.plan") / "example-plan.yaml"])
def test_valid_plans_validate_against_the_shipped_json_schema(plan_file):
    import jsonschema
    import yaml

    schema = json.loads((resources.files("reportgen.plan") / "plan.schema.json").read_text(encoding="utf-8"))
    data = _as_json(yaml.safe_load(plan_file.read_text(encoding="utf-8")))
    jsonschema.validate(data, schema, format_checker=jsonschema.FormatChecker())
    data["schedule"]["steps"][0]["resorce"] = "gpu0"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, schema)


def test_a_plan_nested_too_deeply_is_an_error_not_a_crash(tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text("campaign: " + "[" * 50_000 + "\n")
    result = run("check", plan)
    assert result.exit_code == 1
    assert f"{plan}" in result.output and ("nested deeper than" in result.output or "YAML syntax error" in result.output)


def test_a_plan_saved_with_a_byte_order_mark_and_windows_line_endings_loads(tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_bytes(b"\xef\xbb\xbf" + SAMPLE_PLAN.read_bytes().replace(b"\n", b"\r\n"))
    assert load_plan(plan).plan.campaign.id == "jsum-lora-2026-11"
