"""`reportgen probe`: a checkpoint read and validated in a new process, never unpickled."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import struct
import zipfile
from pathlib import Path

from click.testing import CliRunner

from reportgen.cli import cli
from reportgen.ingest import ingest
from reportgen.probe import check_checkpoint, probe

FIXTURES = Path(__file__).parent / "fixtures" / "formats"


def safetensors(path: Path, tensors: dict[str, tuple[str, list[int], bytes]], cut: int = 0) -> Path:
    header, data, offset = {"__metadata__": {"format": "pt"}}, b"", 0
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        data, offset = data + raw, offset + len(raw)
    text = json.dumps(header).encode()
    blob = struct.pack("<Q", len(text)) + text + data
    path.write_bytes(blob[: len(blob) - cut])
    return path


def torch_zip(path: Path, payload: bytes) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data.pkl", payload)
        archive.writestr("archive/data/0", b"\x00" * 64)
        archive.writestr("archive/version", b"3\n")
    return path


class RunsACommand:
    """A pickle that would run a shell command when loaded."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_valid_safetensors_pass_and_a_truncated_or_inconsistent_one_fails_with_its_reason(tmp_path):
    good = {"w": ("F32", [2, 2], b"\x00" * 16), "b": ("BF16", [3], b"\x01" * 6)}
    [result] = check_checkpoint(safetensors(tmp_path / "ok.safetensors", good), with_torch=False)
    assert result.ok and result.kind == "safetensors" and "2 tensors" in result.reason
    [cut] = check_checkpoint(safetensors(tmp_path / "cut.safetensors", good, cut=5), with_torch=False)
    assert not cut.ok and "cut off" in cut.reason
    wrong = {"w": ("F32", [2, 3], b"\x00" * 16)}
    [size] = check_checkpoint(safetensors(tmp_path / "size.safetensors", wrong), with_torch=False)
    assert not size.ok and "which needs 24" in size.reason
    (tmp_path / "short.safetensors").write_bytes(b"\x10\x00")
    [short] = check_checkpoint(tmp_path / "short.safetensors", with_torch=False)
    assert not short.ok and "too short" in short.reason


def test_a_zip_with_a_damaged_member_or_cut_off_fails_and_a_good_one_passes(tmp_path):
    payload = pickle.dumps({"state": {"step": 3}, "lr": 0.1}, protocol=2)
    good = torch_zip(tmp_path / "optimizer.pt", payload)
    [ok] = check_checkpoint(good, with_torch=False)
    assert ok.ok and "every CRC correct" in ok.reason and "without running it" in ok.reason
    damaged = tmp_path / "damaged.pt"
    blob = bytearray(good.read_bytes())
    blob[blob.index(b"\x00" * 64) + 10] = 0xFF  # one byte of a stored member's data
    damaged.write_bytes(bytes(blob))
    [crc] = check_checkpoint(damaged, with_torch=False)
    assert not crc.ok and "fails its CRC check" in crc.reason
    cut = tmp_path / "cut.pt"
    cut.write_bytes(good.read_bytes()[:-30])
    [short] = check_checkpoint(cut, with_torch=False)
    assert not short.ok and "cut off or damaged" in short.reason


def test_a_pickle_that_would_run_code_fails_and_is_never_run(tmp_path):
    marker = tmp_path / "ran"
    plain = tmp_path / "evil.bin"
    plain.write_bytes(pickle.dumps(RunsACommand(marker), protocol=2))
    zipped = torch_zip(tmp_path / "evil.pt", pickle.dumps({"model": RunsACommand(marker)}, protocol=4))
    for path in (plain, zipped):
        result = probe(path)
        assert not result.ok
        assert "would call" in result.files[0].reason and "system" in result.files[0].reason
    assert not marker.exists()


def test_probe_runs_in_a_new_process_and_records_a_reload_test_into_logs(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(FIXTURES / "hf" / "hf-killed", logs / "hf-killed")
    target = logs / "hf-killed" / "checkpoint-20"
    result = CliRunner().invoke(cli, ["probe", str(target), "--into", str(logs)])
    assert result.exit_code == 0, result.output
    assert "valid; read in a new process" in result.output
    record = json.loads((logs / "checkpoint-probes.jsonl").read_text().splitlines()[0])
    assert record["checkpoint"] == "hf-killed/checkpoint-20" and record["operation"] == "reload_test"
    assert record["ok"] is True and record["new_process"] is True and int(record["process"]) != os.getpid()
    campaign = ingest(logs)
    test = next(t for t in campaign.reload_tests)
    assert test.run == "hf-killed" and test.ok and test.new_process and test.seconds > 0


def test_probe_exits_1_on_a_damaged_checkpoint_and_prints_the_reason(tmp_path):
    folder = tmp_path / "checkpoint-9"
    folder.mkdir()
    safetensors(folder / "adapter_model.safetensors", {"w": ("F16", [4], b"\x00" * 8)}, cut=3)
    (folder / "trainer_state.json").write_text('{"global_step": 9')
    result = CliRunner().invoke(cli, ["probe", str(folder), "--json"])
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert not data["ok"] and {f["path"]: f["ok"] for f in data["files"]} == {
        "adapter_model.safetensors": False, "trainer_state.json": False}
    assert "cut off" in data["summary"]
