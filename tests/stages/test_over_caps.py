"""Numbers over their caps, in words: an agent's reported usage over the envelope
(run_agent.over_envelope) and what the bridge observed over the health envelope
(stratify.observed_problems). Unknown on either side is never over."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from sealbench.stages.run_agent import over_envelope  # noqa: E402
from sealbench.stages.stratify import observed_problems  # noqa: E402

pytestmark = pytest.mark.unit


def test_usage_over_the_envelope_in_words() -> None:
    envelope = {"max_steps": 5, "max_output_tokens": 100}
    assert over_envelope({"steps": 9, "tokens_out": 500}, envelope) == [
        "steps 9 > max_steps 5", "tokens_out 500 > max_output_tokens 100"]
    assert over_envelope({"steps": 5, "tokens_out": 101}, envelope) == ["tokens_out 101 > max_output_tokens 100"]
    assert over_envelope({"steps": None, "tokens_out": 500}, {"max_steps": 5}) == []
    assert over_envelope({}, envelope) == []


def test_observed_waits_and_retries_over_the_health_envelope_in_words() -> None:
    health = {"max_queue_ms": 4000, "max_retries": 1}
    assert observed_problems({"queue_ms": 4500, "retries": 2}, health) == [
        "the bridge observed a queue delay of 4500 ms (request to the reply's first byte) over 4000 ms",
        "the bridge observed 2 retries (429/5xx replies and failed connects) over 1"]
    assert observed_problems({"queue_ms": 4000, "retries": 1}, health) == []
    assert observed_problems({"queue_ms": None, "retries": 9}, {"max_queue_ms": 1, "max_retries": None}) == []
