"""The reading boundary: nothing outside LOGS is read, whatever links point there, and everything
under LOGS that is not read is listed with why (links to folders, loops, names that are not UTF-8,
folders that cannot be listed or lie too deep)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from reportgen.cli import cli
from reportgen.errors import InputError
from reportgen.ingest import MAX_DEPTH, ingest
from reportgen.plan.freeze import RECORD_DIR, freeze, read_freeze

FORMATS = Path(__file__).parent / "fixtures" / "formats"
MLRUNS = FORMATS / "mlruns"
SAMPLE = Path(__file__).parent.parent / "sample_logs"
RUN = "140191543709086989/dc1e1b85474347259be8c72b0d1bc4d4"


def problems(campaign) -> dict[str, list[str]]:
    return {i.path: [p.message for p in i.problems] for i in campaign.inputs if i.problems}


def test_mlflow_files_linked_out_of_logs_are_listed_and_never_read(tmp_path):
    """A param and a metric of an MLflow file-store run replaced by links to files outside LOGS."""
    logs = tmp_path / "logs"
    shutil.copytree(MLRUNS, logs / "mlruns")
    secret = tmp_path / "secret"
    secret.write_text("s3cr3t-host\n")
    (tmp_path / "outside-metric").write_text("1796000000000 42.0 1\n1796000001000 43.0 2\n")
    run = logs / "mlruns" / RUN
    (run / "params" / "lr").unlink()
    (run / "params" / "lr").symlink_to(secret)
    (run / "metrics" / "loss").unlink()
    (run / "metrics" / "loss").symlink_to(tmp_path / "outside-metric")
    campaign = ingest(logs)
    found = problems(campaign)
    for name in ("params/lr", "metrics/loss"):
        assert found[f"mlruns/{RUN}/{name}"] == ["a link to a file outside LOGS; not read"]
    assert not any("s3cr3t" in json.dumps(r.config or {}) for r in campaign.runs.values())
    assert "loss" not in campaign.metrics.columns or not (campaign.metrics["loss"] == 42.0).any()
    listed = [i.path for i in campaign.inputs]
    assert listed.count(f"mlruns/{RUN}/params/lr") == 1  # listed once, as not read


def test_a_link_inside_logs_is_read_once_by_its_own_path(tmp_path):
    """Counter-example: a link to a folder inside LOGS is listed and not followed; its files are read
    where they are."""
    logs = tmp_path / "logs"
    shutil.copytree(MLRUNS, logs / "mlruns")
    (logs / "again").symlink_to(logs / "mlruns")
    campaign = ingest(logs)
    assert problems(campaign)["again"] == ["a link to a folder inside LOGS; not followed"]
    assert not any(i.path.startswith("again/") for i in campaign.inputs if i.path != "again")
    assert len(campaign.runs) == len(ingest(MLRUNS.parent / "mlruns").runs)


def test_links_to_folders_outside_logs_loops_and_odd_names_are_listed(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "etc").symlink_to("/etc")
    (logs / "loop-a").symlink_to(logs / "loop-b")
    (logs / "loop-b").symlink_to(logs / "loop-a")
    odd = os.fsdecode(b"bad\xffname.log")
    (logs / odd).write_text("step 1 loss 2.0\n")
    found = problems(ingest(logs))
    assert found["etc"] == ["a link to a folder outside LOGS; not followed"]
    assert found["loop-a"] == found["loop-b"] == ["a link loop; not read"]
    assert found["bad\ufffdname.log"] == ["its name is not valid UTF-8; not read"]


def test_a_build_with_a_name_that_is_not_utf8_writes_its_site(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLE, logs)
    (logs / os.fsdecode(b"notes-\xfe.txt")).write_text("hello\n")
    result = CliRunner().invoke(cli, ["build", str(logs), str(logs / "plan.yaml"), "-o", str(tmp_path / "site"), "-q"])
    assert result.exit_code == 0, result.output
    assert "notes-\ufffd.txt" in (tmp_path / "site" / "report.json").read_text(encoding="utf-8")


def test_a_tree_deeper_than_the_limit_is_listed_where_it_stops(tmp_path):
    logs = tmp_path / "logs"
    deep = logs.joinpath(*["d"] * (MAX_DEPTH + 5))
    deep.mkdir(parents=True)
    (deep / "train.log").write_text("step 1 loss 2.0\n")
    found = problems(ingest(logs))
    assert list(found.values()) == [[f"more than {MAX_DEPTH} folders below LOGS; not read"]]
    assert next(iter(found)).count("/") == MAX_DEPTH - 1


def test_a_folder_that_cannot_be_listed_is_a_problem_not_a_silence(tmp_path, monkeypatch):
    """Run as root, a mode-000 folder can still be listed: the refusal is made by os.scandir here."""
    logs = tmp_path / "logs"
    (logs / "locked").mkdir(parents=True)
    (logs / "open.log").write_text("step 1 loss 2.0\n")
    real = os.scandir

    def scandir(path="."):
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    found = problems(ingest(logs))
    assert found["locked"] == ["cannot be listed: Permission denied"]


def test_a_freeze_record_linked_out_of_logs_is_refused(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (logs / RECORD_DIR).symlink_to(elsewhere)
    with pytest.raises(InputError, match="outside LOGS"):
        read_freeze(logs)
    with pytest.raises(InputError, match="outside LOGS"):
        freeze(SAMPLE / "plan.yaml", logs)
    assert list(elsewhere.iterdir()) == []  # nothing written there either


def test_a_frozen_plan_linked_out_of_logs_is_refused(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    freeze(SAMPLE / "plan.yaml", logs)
    frozen = next(p for p in (logs / RECORD_DIR).iterdir() if p.suffix in (".yaml", ".yml"))
    outside = tmp_path / "plan-copy.yaml"
    shutil.copyfile(frozen, outside)
    frozen.unlink()
    frozen.symlink_to(outside)
    with pytest.raises(InputError, match="outside LOGS"):
        read_freeze(logs)


def test_a_file_a_writer_appends_to_while_it_is_read_is_read_to_the_end_it_had_not_past_the_budget(tmp_path, monkeypatch):
    """A live log grows between the read that reaches its end and the look for more: what was read is the whole
    of it then, with no note of a budget it never reached. Counter-example: a file past the budget is cut there."""
    from reportgen import boundary

    path = tmp_path / "events.out.tfevents.1.vm.1.0"
    path.write_bytes(b"x" * 100)
    opened = boundary.open_file

    class Growing:
        """The file, with a writer appending to it right after the first read reached its end."""

        def __init__(self, handle):
            self.handle, self.reads = handle, 0

        def read(self, n: int = -1) -> bytes:
            self.reads += 1
            data = self.handle.read(n)
            if self.reads == 1:
                with path.open("ab") as writer:
                    writer.write(b"y" * 10)
            return data

        def __getattr__(self, name: str):
            return getattr(self.handle, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc) -> None:
            self.handle.close()

    monkeypatch.setattr(boundary, "open_file", lambda p: Growing(opened(p)))
    read = boundary.read_file(path, 1000)
    assert read.whole and read.data == b"x" * 100 and read.budget_note() is None
    cut = boundary.read_file(path, 50)
    assert not cut.whole and len(cut.data) == 50 and "only the first" in cut.budget_note()
