"""The sample's report.json, compared by meaning with the copy in tests/golden/.

Every figure of the contract is pinned: a change to a rule, a reader or the JSON shape shows here
as the paths that moved. Volatile fields (the build time, the tool's version) are left out;
numbers are compared to 1e-9, so a sum taken in another order is not a change of meaning.

When a change of the report is intended, rewrite the copy and review its diff:

    REPORTGEN_GOLDEN=update python -P -m pytest tests/test_golden.py -p no:cacheprovider
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from conftest import SAMPLE_LOGS

from reportgen.build import build

GOLDEN = Path(__file__).parent / "golden" / "sample-report.json"
VOLATILE = {("generated_at",), ("generator", "version")}


def differences(expected: object, actual: object, path: tuple = ()) -> list[str]:
    """Where two JSON documents differ in meaning: `path: expected != actual`, depth first."""
    if path in VOLATILE:
        return []
    where = "/".join(map(str, path)) or "(root)"
    if isinstance(expected, dict) and isinstance(actual, dict):
        out = [f"{where}: key {k!r} missing" for k in expected.keys() - actual.keys() if (*path, k) not in VOLATILE]
        out += [f"{where}: key {k!r} added" for k in actual.keys() - expected.keys() if (*path, k) not in VOLATILE]
        for key in expected.keys() & actual.keys():
            out += differences(expected[key], actual[key], (*path, key))
        return out
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{where}: {len(expected)} items != {len(actual)}"]
        return [d for i, (e, a) in enumerate(zip(expected, actual, strict=True)) for d in differences(e, a, (*path, i))]
    numbers = (int, float)
    if isinstance(expected, numbers) and isinstance(actual, numbers) and not isinstance(expected, bool) \
            and not isinstance(actual, bool):
        return [] if math.isclose(expected, actual, rel_tol=1e-9, abs_tol=1e-9) else [f"{where}: {expected!r} != {actual!r}"]
    return [] if expected == actual and type(expected) is type(actual) else [f"{where}: {expected!r} != {actual!r}"]


def test_differences_sees_a_changed_figure_and_ignores_the_build_time():
    base = {"generated_at": "a", "costs": {"total": 47.14, "lots": [1, 2]}, "verdict": "positive"}
    assert differences(base, {**base, "generated_at": "b"}) == []
    assert differences(base, {**base, "costs": {"total": 47.14 + 1e-12, "lots": [1, 2]}}) == []
    assert differences(base, {**base, "costs": {"total": 47.15, "lots": [1, 2]}}) == ["costs/total: 47.14 != 47.15"]
    assert differences(base, {**base, "costs": {"total": 47.14, "lots": [1]}}) == ["costs/lots: 2 items != 1"]
    assert differences(base, {**base, "verdict": None}) == ["verdict: 'positive' != None"]
    assert differences({"n": 1}, {"n": True}) == ["n: 1 != True"]


def test_the_sample_report_is_the_golden_one(tmp_path):
    built = build(SAMPLE_LOGS, SAMPLE_LOGS / "plan.yaml", tmp_path / "site")
    actual = json.loads((tmp_path / "site" / "report.json").read_text(encoding="utf-8"))
    if os.environ.get("REPORTGEN_GOLDEN") == "update":
        GOLDEN.write_text(json.dumps(actual, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    found = differences(expected, actual)
    assert not found, f"{len(found)} differences from {GOLDEN.name}:\n" + "\n".join(found[:40])
    assert built.report["schema"] == "reportgen.report/1"
