"""Out-of-memory messages in text logs (docs/formats.md, "Text logs"): every spelling the pattern
covers is an `oom`, alone on its line or as the exception that ends a traceback, and a line about
memory that reports no failure is no message at all."""

from __future__ import annotations

import pytest

from reportgen.analysis.status import run_status
from reportgen.ingest import ingest, textlog

# Each line matches one alternative of the pattern and no other (CUDA out of memory | OutOfMemoryError |
# CUBLAS_STATUS_ALLOC_FAILED | out of memory, any case), so narrowing any one of them fails its case.
OOM_LINES = {
    "cuda-oom": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total "
                "capacity of 23.64 GiB of which 1.02 GiB is free.",
    "error-class-only": "torch.cuda.OutOfMemoryError: allocation of 1610612736 bytes failed",
    "cuda-error": "RuntimeError: CUDA error: out of memory",
    "cublas": "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
    "capitalised": "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to "
                   "allocate 17179869184 bytes.",
    "legacy-thc": "RuntimeError: cuda runtime error (2) : out of memory at /pytorch/aten/src/THC/THCCachingHostAllocator.cpp:278",
}

# Lines that talk about memory (they pass the cheap word filter) and report no failure.
NOT_OOM = [
    "GPU memory: 23.64 GiB total, 1.02 GiB free",
    "max_memory_allocated: 20.1 GiB after step 1200",
    "Using memory_efficient_attention for the attention layers",
    "torch.cuda.empty_cache() released 512 MiB of cached memory",
]


def messages_of(tmp_path, text: str) -> list[tuple[str, int, str]]:
    path = tmp_path / "train.log"
    path.write_text(text, encoding="utf-8")
    _info, messages, _sessions = textlog.read(path, "train.log")
    return [(m.kind, m.evidence.line, m.message) for m in messages]


@pytest.mark.parametrize("name", sorted(OOM_LINES))
def test_each_out_of_memory_spelling_on_its_own_line_is_an_oom(tmp_path, name):
    line = OOM_LINES[name]
    assert messages_of(tmp_path, f"step 1320/3000\n{line}\n") == [("oom", 2, line)]


@pytest.mark.parametrize("name", sorted(OOM_LINES))
def test_each_out_of_memory_spelling_ending_a_traceback_is_an_oom(tmp_path, name):
    line = OOM_LINES[name]
    text = f'Traceback (most recent call last):\n  File "train.py", line 214, in <module>\n    trainer.train()\n{line}\n'
    assert messages_of(tmp_path, text) == [("oom", 4, line)]


def test_a_traceback_ending_in_another_error_is_a_traceback_not_an_oom(tmp_path):
    text = 'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\nRuntimeError: boom\n'
    assert messages_of(tmp_path, text) == [("traceback", 3, "RuntimeError: boom")]


@pytest.mark.parametrize("line", NOT_OOM)
def test_a_line_about_memory_that_reports_no_failure_is_no_message(tmp_path, line):
    assert messages_of(tmp_path, f"step 10/3000\n{line}\n") == []


def test_an_oom_in_a_runs_log_makes_the_run_interrupted_and_a_memory_report_does_not(tmp_path):
    logs = tmp_path / "logs"
    for run, last in (("oom-1", OOM_LINES["cuda-error"]), ("fine-1", NOT_OOM[0])):
        (logs / run).mkdir(parents=True)
        (logs / run / "train.log").write_text(f"step 10/3000\nstep 20/3000\n{last}\n", encoding="utf-8")
    campaign = ingest(logs)
    oom = run_status(campaign.runs["oom-1"], campaign)
    assert (oom.status, oom.reason) == ("interrupted", "RuntimeError: CUDA error: out of memory")
    assert run_status(campaign.runs["fine-1"], campaign).status == "unknown"


# Each line matches one alternative of the kill pattern (Killed | SIGKILL | killed by signal 9 | exit code 137).
KILLED_LINES = {
    "shell": "Killed",
    "sigkill": "torch.distributed.elastic.multiprocessing.api: failed (exitcode: -9) local_rank: 0 (pid: 4411) of binary: SIGKILL",
    "signal-9": "Process 4411 was killed by signal 9",
    "exit-137": "Command 'python train.py' returned non-zero exit code 137",
}


@pytest.mark.parametrize("name", sorted(KILLED_LINES))
def test_each_kill_spelling_is_a_kill(tmp_path, name):
    line = KILLED_LINES[name]
    assert messages_of(tmp_path, f"step 10/3000\n{line}\n") == [("killed", 2, line)]


def test_counter_example_a_line_that_mentions_a_kill_switch_or_another_exit_code_is_no_kill(tmp_path):
    assert messages_of(tmp_path, "step 10/3000\nkill_switch=False\nexit code 0\n") == []


@pytest.mark.parametrize(("line", "metric"), [
    ("step 1320: loss nan", "loss"),
    ("step 1318: grad_norm inf, skipping the update", "grad_norm"),
    ("step 1318: grad norm is not finite", "grad_norm"),
])
def test_a_non_finite_loss_or_gradient_norm_is_said_with_its_metric(tmp_path, line, metric):
    path = tmp_path / "train.log"
    path.write_text(f"step 10/3000\n{line}\n", encoding="utf-8")
    _info, messages, _sessions = textlog.read(path, "train.log")
    assert [(m.kind, m.evidence.line, m.target) for m in messages] == [("non_finite", 2, metric)]


def test_counter_example_a_finite_loss_or_a_word_containing_nan_is_not_non_finite(tmp_path):
    assert messages_of(tmp_path, "step 10/3000\nloss 0.4312 on the nanotech split\nloss 1.02 grad_norm 0.9\n") == []


def test_a_printed_dict_with_a_backslash_the_parser_frowns_on_reads_without_a_warning(tmp_path, recwarn):
    """Python 3.11 warns of an "invalid escape sequence" in a literal; a log that prints one is not the
    user's code, and the warning stays off their terminal."""
    messages_of(tmp_path, "{'loss': 0.5, 'note': 'C:\\jobs\\run-1', 'epoch': 1.0}\n")
    assert [str(w.message) for w in recwarn if issubclass(w.category, (SyntaxWarning, DeprecationWarning))] == []
