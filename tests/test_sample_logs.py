from __future__ import annotations

from conftest import SAMPLE_LOGS, tree_digest
from sample_campaign import write_sample


def test_committed_sample_logs_are_what_the_generator_writes(tmp_path):
    write_sample(tmp_path)
    committed = {k: v for k, v in tree_digest(SAMPLE_LOGS).items() if k != "plan.yaml"}
    assert tree_digest(tmp_path) == committed
