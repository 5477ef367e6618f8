"""The layer contracts of pyproject.toml ([tool.importlinter]) hold, checked by import-linter.

The checker is run as `lint-imports` runs it, in a new process of this interpreter, on the source
of this repository (PYTHONPATH, never an installed copy). The counter-examples run it on a scratch
copy of the package with one bad import added, and on the contracts turned upside down: a check that
passed whatever the imports were would fail them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
LINT = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def config() -> dict:
    with PYPROJECT.open("rb") as handle:
        return tomllib.load(handle)["tool"]["importlinter"]


def lint(config_file: Path, source_root: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports on `config_file`, reading the package `reportgen` under `source_root`."""
    env = {**os.environ, "PYTHONPATH": str(source_root), "NO_COLOR": "1", "COLUMNS": "200"}
    env.pop("PYTHONSAFEPATH", None)
    return subprocess.run([sys.executable, "-c", LINT, "--no-cache", "--no-logo", str(config_file)],
                          cwd=source_root, env=env, capture_output=True, text=True, timeout=300, check=False)


def write_config(path: Path, importlinter: dict) -> Path:
    """A pyproject.toml holding only `importlinter` as its [tool.importlinter] (TOML by hand: the
    values are strings, booleans and lists of strings)."""

    def value(item: object) -> str:
        if isinstance(item, bool):
            return "true" if item else "false"
        if isinstance(item, str):
            return '"' + item.replace("\\", "\\\\").replace('"', '\\"') + '"'
        assert isinstance(item, list), item
        return "[" + ", ".join(value(x) for x in item) + "]"

    lines = ["[tool.importlinter]"]
    lines += [f"{key} = {value(item)}" for key, item in importlinter.items() if key != "contracts"]
    for contract in importlinter.get("contracts", []):
        lines += ["", "[[tool.importlinter.contracts]]"]
        lines += [f"{key} = {value(item)}" for key, item in contract.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def scratch_copy(tmp_path: Path) -> Path:
    """A copy of the package under tmp_path/src, to break without touching the repository."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "reportgen", src / "reportgen", ignore=shutil.ignore_patterns("__pycache__"))
    return src


def test_every_contract_is_kept():
    contracts = config()["contracts"]
    assert {c["type"] for c in contracts} >= {"layers", "forbidden"}
    result = lint(PYPROJECT, ROOT)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert f"Contracts: {len(contracts)} kept, 0 broken." in out, out
    for contract in contracts:
        assert f"{contract['name']} KEPT" in out, out


def test_the_layers_name_every_module_of_the_package():
    """A module left out of the layers contract is checked by none of its layers: each top-level
    module and package of reportgen is named in one layer."""
    layers = next(c for c in config()["contracts"] if c["type"] == "layers")["layers"]
    named = {part.strip() for layer in layers for part in layer.replace(":", "|").split("|")}
    package = ROOT / "reportgen"
    present = {f"reportgen.{p.stem}" for p in package.glob("*.py") if p.name != "__init__.py"}
    present |= {f"reportgen.{p.parent.name}" for p in package.glob("*/__init__.py")}
    assert present == named


def test_a_subpackage_without_init_is_seen():
    """grimp (under import-linter) does not walk a folder without __init__.py: such a subpackage
    would be outside every contract. Each folder of Python files is a regular package."""
    folders = {p.parent for p in (ROOT / "reportgen").rglob("*.py")}
    assert all((folder / "__init__.py").is_file() for folder in folders), sorted(map(str, folders))


def test_reversed_layers_are_broken(tmp_path):
    """Counter-example: the same layers upside down, so every import that goes down today goes up."""
    importlinter = config()
    layers = next(c for c in importlinter["contracts"] if c["type"] == "layers")
    reversed_layers = {**layers, "name": "upside down", "layers": list(reversed(layers["layers"]))}
    upside_down = {**importlinter, "contracts": [reversed_layers]}
    result = lint(write_config(tmp_path / "pyproject.toml", upside_down), ROOT)
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert "upside down BROKEN" in out, out
    assert "reportgen.analysis is not allowed to import reportgen.model" in out, out


# One bad import added at the end of a module of the scratch copy; the contract that catches it;
# the import chain the report shows (which proves the copy, not the repository, was read).
BAD_IMPORTS = [
    ("model.py", "from reportgen.analysis.status import RunStatus",
     "reportgen's layers, top to bottom", "reportgen.model -> reportgen.analysis.status"),
    ("analysis/runs.py", "from reportgen.verify import check_deliverables",
     "analysis imports no I/O module", "reportgen.analysis.runs -> reportgen.verify"),
    ("analysis/status.py", "import os",
     "analysis imports no I/O module", "reportgen.analysis.status -> os"),
    ("model.py", "from pathlib import Path",
     "analysis imports no I/O module", "reportgen.model -> pathlib"),
    ("render/site.py", "from reportgen.ingest import excerpts",
     "render shows what analysis and model hand it, and reads no logs", "reportgen.render.site -> reportgen.ingest"),
]


@pytest.mark.parametrize(("module", "statement", "contract", "chain"), BAD_IMPORTS,
                         ids=[f"{m}: {s}" for m, s, _c, _ch in BAD_IMPORTS])
def test_a_bad_import_breaks_its_contract(tmp_path, module, statement, contract, chain):
    src = scratch_copy(tmp_path)
    assert lint(PYPROJECT, src).returncode == 0  # the copy as it is keeps them all
    target = src / "reportgen" / module
    target.write_text(target.read_text() + f"\n{statement}  # the bad import of this test\n")
    result = lint(PYPROJECT, src)
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert f"{contract} BROKEN" in out, out
    assert chain in out, out
