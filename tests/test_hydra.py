"""Hydra run folders: the .hydra/ files are the configuration of the run beside them.

The fixtures (tests/fixtures/hydra/, made by make_fixtures.py with hydra-core 1.3.8) are a real
@hydra.main app run once with two overrides (outputs/<date>/<time>/) and once as a sweep of two
learning rates (multirun/<date>/<time>/0 and 1), under Hydra's default run and sweep folders.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import damaged

from reportgen.ingest import hydra

LOGS = Path(__file__).parent / "fixtures" / "hydra"
RUN = next(p for p in (LOGS / "outputs").glob("*/*") if p.is_dir()).relative_to(LOGS).as_posix()
SWEEP = sorted(p.relative_to(LOGS).as_posix() for p in (LOGS / "multirun").glob("*/*/*") if (p / ".hydra").is_dir())
PROPERTIES = settings(max_examples=60, deadline=None,
                      suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _members(logs: Path, folder: str) -> list[str]:
    return sorted(p.relative_to(logs).as_posix() for p in (logs / folder).rglob("*") if p.is_file())


def _started(folder: str) -> datetime:
    date, time = PurePosixPath(folder).parts[1:3]
    return datetime.strptime(f"{date} {time}", "%Y-%m-%d %H-%M-%S").replace(tzinfo=UTC)


def test_the_three_files_in_a_hydra_folder_are_recognised():
    kinds = {rel: hydra.recognise(rel, (LOGS / rel).read_bytes()) for rel in _members(LOGS, RUN)}
    assert {rel.rsplit("/", 1)[-1] for rel, kind in kinds.items() if kind == "hydra-config"} == {
        "config.yaml", "hydra.yaml", "overrides.yaml"}
    assert kinds[f"{RUN}/train.log"] is None


def test_counter_examples_are_not_hydra_configs():
    config = (LOGS / RUN / ".hydra" / "config.yaml").read_bytes()
    assert hydra.recognise("conf/config.yaml", config) is None  # a config.yaml elsewhere
    assert hydra.recognise("run/config.yaml", config) is None
    assert hydra.recognise("run/.hydra/hydra.yaml", config) is None  # not Hydra's own configuration
    assert hydra.recognise("run/.hydra/overrides.yaml", config) is None  # not a list
    assert hydra.recognise("run/.hydra/config.yaml", b"- a=1\n") is None  # not a mapping
    assert hydra.recognise("run/.hydra/notes.yaml", config) is None
    assert hydra.recognise("run/.hydra/config.yaml", b"\xff\xfe\x00") is None


def test_a_run_folder_gives_its_config_overrides_and_start():
    got = hydra.read_config(LOGS, f"{RUN}/.hydra", _members(LOGS, RUN))
    assert got.folder == RUN
    assert got.config == {"model": {"width": 64, "layers": 2}, "optim": {"lr": 0.02, "name": "adamw"}, "steps": 20,
                          "overrides": ["optim.lr=0.02", "model.width=64"]}
    assert got.job == "train" and got.output_dir.endswith(RUN)
    assert got.started_at == _started(RUN)
    assert "Hydra's default run folder outputs/${now:%Y-%m-%d}/${now:%H-%M-%S}" in got.reason
    assert [(i.format, i.records, i.problems) for i in got.inputs] == [("hydra", 1, [])] * 3


def test_the_run_folder_may_be_named_instead_of_its_hydra_folder():
    got = hydra.read_config(LOGS, RUN, _members(LOGS, RUN))
    assert got.folder == RUN and got.started_at == _started(RUN)


def test_each_job_of_a_sweep_gives_its_own_learning_rate_and_the_sweep_start():
    jobs = [hydra.read_config(LOGS, f"{job}/.hydra", _members(LOGS, job)) for job in SWEEP]
    assert [j.config["optim"]["lr"] for j in jobs] == [0.01, 0.02]
    assert [j.config["overrides"] for j in jobs] == [["optim.lr=0.01"], ["optim.lr=0.02"]]
    assert {j.started_at for j in jobs} == {_started(SWEEP[0])}
    assert all("sweep folder" in j.reason for j in jobs)


def test_a_changed_run_dir_gives_no_start(tmp_path):
    """A folder named like a time is no start time when hydra.yaml says run.dir is not the default."""
    shutil.copytree(LOGS / RUN, tmp_path / RUN)
    config = tmp_path / RUN / ".hydra" / "hydra.yaml"
    config.write_text(config.read_text().replace("dir: outputs/${now:%Y-%m-%d}/${now:%H-%M-%S}", "dir: runs/${model.width}"))
    got = hydra.read_config(tmp_path, RUN, _members(tmp_path, RUN))
    assert got.started_at is None and "not Hydra's default" in got.reason
    assert got.config["optim"]["lr"] == 0.02


def test_without_hydra_yaml_the_folder_name_is_no_start(tmp_path):
    shutil.copytree(LOGS / RUN, tmp_path / RUN)
    (tmp_path / RUN / ".hydra" / "hydra.yaml").unlink()
    got = hydra.read_config(tmp_path, RUN, _members(tmp_path, RUN))
    assert got.started_at is None and "no hydra.yaml" in got.reason


def test_a_default_run_dir_in_a_folder_not_named_by_time_gives_no_start(tmp_path):
    shutil.copytree(LOGS / RUN, tmp_path / "outputs" / "best" / "final")
    got = hydra.read_config(tmp_path, "outputs/best/final", _members(tmp_path, "outputs/best/final"))
    assert got.started_at is None and "does not name a date and a time" in got.reason


def test_damaged_overrides_are_a_problem_and_the_config_is_kept(tmp_path):
    shutil.copytree(LOGS / RUN, tmp_path / RUN)
    (tmp_path / RUN / ".hydra" / "overrides.yaml").write_text("lr: 1\n")
    got = hydra.read_config(tmp_path, RUN, _members(tmp_path, RUN))
    assert "overrides" not in got.config and got.config["steps"] == 20
    assert any("list of overrides" in p.message for i in got.inputs for p in i.problems)


def _damaged(original: bytes) -> st.SearchStrategy[bytes]:
    return st.one_of(st.binary(max_size=1024), damaged(original))


@PROPERTIES
@given(config=_damaged((LOGS / RUN / ".hydra" / "config.yaml").read_bytes()),
       overrides=_damaged((LOGS / RUN / ".hydra" / "overrides.yaml").read_bytes()),
       hydra_yaml=_damaged((LOGS / RUN / ".hydra" / "hydra.yaml").read_bytes()))
def test_any_bytes_give_a_result(tmp_path, config, overrides, hydra_yaml):
    folder = tmp_path / "outputs" / "2026-12-04" / "21-08-05" / ".hydra"
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in (("config.yaml", config), ("overrides.yaml", overrides), ("hydra.yaml", hydra_yaml)):
        (folder / name).write_bytes(data)
        hydra.recognise(f"outputs/x/.hydra/{name}", data)
    got = hydra.read_config(tmp_path, "outputs/2026-12-04/21-08-05/.hydra", _members(tmp_path, "outputs"))
    assert len(got.inputs) == 3 and isinstance(got.config, dict)
    assert all(i.records in (0, 1) and len(i.problems) <= 2 for i in got.inputs)
    assert got.started_at is None or got.started_at == datetime(2026, 12, 4, 21, 8, 5, tzinfo=UTC)


# --- in a campaign ---------------------------------------------------------------------------------

def test_a_hydra_job_folder_is_a_run_with_its_config_and_start():
    from reportgen.ingest import ingest
    campaign = ingest(LOGS)
    assert sorted(campaign.runs) == ["2026-12-04/21-08-05", "2026-12-04/21-08-06/0", "2026-12-04/21-08-06/1"]
    run = campaign.runs["2026-12-04/21-08-05"]
    assert run.config["overrides"] == ["optim.lr=0.02", "model.width=64"]
    assert run.started_at.isoformat() == "2026-12-04T21:08:05+00:00"
    assert campaign.runs["2026-12-04/21-08-06/0"].config != campaign.runs["2026-12-04/21-08-06/1"].config
    assert run.sources == ["outputs/2026-12-04/21-08-05/.hydra/config.yaml", "outputs/2026-12-04/21-08-05/train.log"]


def test_counter_example_a_job_holding_a_lightning_folder_gives_it_its_config(tmp_path):
    from reportgen.ingest import ingest
    job = tmp_path / "outputs" / "2026-12-04" / "21-08-05"
    shutil.copytree(LOGS / "outputs" / "2026-12-04" / "21-08-05" / ".hydra", job / ".hydra")
    shutil.copytree(Path(__file__).parent / "fixtures" / "formats" / "lightning" / "pl-clean" / "version_0",
                    job / "lightning_logs" / "version_0")
    campaign = ingest(tmp_path)
    assert len(campaign.runs) == 1  # no run of the Hydra job beside the Lightning run it wrote
    (run,) = campaign.runs.values()
    assert "lightning-csv" in run.formats and run.config["overrides"] == ["optim.lr=0.02", "model.width=64"]


def test_a_job_folder_under_hydras_date_folders_keeps_its_date():
    assert hydra._job_name(None, "outputs/2026-12-04/21-08-05") == "2026-12-04/21-08-05"  # type: ignore[arg-type]
    assert hydra._job_name(None, "multirun/2026-12-04/21-08-06/3") == "2026-12-04/21-08-06/3"  # type: ignore[arg-type]


def test_counter_example_a_job_folder_of_its_own_name_keeps_that_name():
    """A changed run.dir (runs/lr-0.02) or a sweep under a folder that names no time: no date is added."""
    assert hydra._job_name(None, "runs/lr-0.02") == "lr-0.02"  # type: ignore[arg-type]
    assert hydra._job_name(None, "sweeps/lr/3") == "lr/3"  # type: ignore[arg-type]
    assert hydra._job_name(None, "outputs/21-08-05") == "21-08-05"  # a time without its date folder
