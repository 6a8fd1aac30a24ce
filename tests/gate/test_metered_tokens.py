"""Issue 25 point 6: once an agent uses the bridge, its tokens are what the bridge metered.

A reply without usage no longer hands the count back to the agent's usage.json: the tokens stay
the bridge's, flagged ``metered_incomplete`` (a lower bound); a run already over the cap with
them is over the envelope, one under it is flagged (``envelope_unconfirmed``, ``over_envelope``
null in runs.parquet, the gate's ``TOKENS_INCOMPLETE`` note, tokens per pass not complete). The
attack through a real bridge is in test_untrusted.py; these are the rules, unit by unit.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))

from test_gate_refusals import CAND, _rows, build_spec, codes, decide  # noqa: E402

from sealbench.agent import bridge  # noqa: E402
from sealbench.stages import run_agent  # noqa: E402
from sealbench.stages.stratify import build_runs, envelope_flag  # noqa: E402

pytestmark = pytest.mark.unit

ENVELOPE = {"max_wall_s": 60, "max_steps": 5, "max_output_tokens": 1000}
CLAIM = {"tokens_in": 1, "tokens_out": 10, "cost_usd": 0.01, "steps": 2}


def _metered(tin: int, tout: int, responses: int, with_usage: int) -> bridge.MeteredUsage:
    return bridge.MeteredUsage(tokens_in=tin, tokens_out=tout, responses=responses, with_usage=with_usage)


def _record(metered: bridge.MeteredUsage | None, claim: dict = CLAIM) -> dict:
    """The usage fields of run.json as run_agent writes them."""
    usage, source = run_agent.choose_tokens(claim, metered)
    m = None if metered is None else metered.as_dict()
    return {"usage": usage, "tokens_source": source, "usage_agent": dict(claim), "usage_metered": m,
            "over_envelope": run_agent.over_envelope(usage, ENVELOPE),
            "envelope_unconfirmed": run_agent.envelope_unconfirmed(usage, ENVELOPE, source, m)}


def test_a_reply_without_usage_keeps_the_metered_count_flagged_incomplete() -> None:
    """Attack: 1500 output tokens metered over 2 replies, a 3rd reply without usage, 10 claimed.
    The tokens are the bridge's, flagged incomplete; the claim is only usage_agent; over."""
    rec = _record(_metered(150, 1500, responses=3, with_usage=2))
    assert rec["tokens_source"] == "metered_incomplete"
    assert (rec["usage"]["tokens_in"], rec["usage"]["tokens_out"]) == (150, 1500)
    assert rec["usage_agent"]["tokens_out"] == 10
    assert rec["usage"]["steps"] == 2 and rec["usage"]["cost_usd"] == 0.01  # not metered: the agent's
    assert rec["over_envelope"] == ["tokens_out 1500 > max_output_tokens 1000"]
    assert rec["envelope_unconfirmed"] == []  # over is over, incomplete or not
    assert envelope_flag(rec, rec["usage"]) is True


def test_incomplete_and_under_the_cap_is_flagged_never_silently_within() -> None:
    rec = _record(_metered(100, 800, responses=2, with_usage=1))
    assert rec["tokens_source"] == "metered_incomplete" and rec["usage"]["tokens_out"] == 800
    assert rec["over_envelope"] == []
    assert rec["envelope_unconfirmed"] == ["tokens_out 800 is a lower bound (1 of 2 server replies carried no usage): "
                                           "within max_output_tokens 1000 cannot be confirmed"]
    assert envelope_flag(rec, rec["usage"]) is None          # runs.parquet: not False
    # every reply without usage: the count is 0 and still the bridge's, never the claim
    rec = _record(_metered(0, 0, responses=4, with_usage=0))
    assert rec["tokens_source"] == "metered_incomplete" and rec["usage"]["tokens_out"] == 0
    assert envelope_flag(rec, rec["usage"]) is None


def test_honest_metered_run_is_unchanged() -> None:
    """Every reply carried its usage: metered, complete, within — as before."""
    rec = _record(_metered(150, 900, responses=2, with_usage=2))
    assert rec["tokens_source"] == "metered" and (rec["usage"]["tokens_in"], rec["usage"]["tokens_out"]) == (150, 900)
    assert rec["over_envelope"] == [] and rec["envelope_unconfirmed"] == []
    assert envelope_flag(rec, rec["usage"]) is False
    # a bridge that saw no reply: the agent reached no server, 0 tokens metered (as before)
    rec = _record(_metered(0, 0, responses=0, with_usage=0))
    assert rec["tokens_source"] == "metered" and rec["usage"]["tokens_out"] == 0
    # no bridge: the agent's word, as before
    rec = _record(None)
    assert rec["tokens_source"] == "agent" and rec["usage"]["tokens_out"] == 10 and rec["usage_metered"] is None
    assert envelope_flag(rec, rec["usage"]) is False
    assert envelope_flag({"over_envelope": []}, {"steps": None, "tokens_out": None}) is None


def test_runs_table_row_of_an_incomplete_run() -> None:
    rec = _record(_metered(100, 800, responses=2, with_usage=1))
    stamp = {"server_id": "srv-1", "queue_ms": 0, "retries": 0, "quota_state": "ok", "route_changed": False}
    score = {"task_id": "t1", "solver": "a", "fingerprint": "f" * 16, "epoch": 1, "status": "pass", "reason": None,
             "visible_pass": True, "hidden_pass": True, "time_to_green_s": 3.0,
             "run": dict(rec, role="agent", timed_out=False, end_reason="exit", exit_code=0, wall_s=5.0,
                         time_box_s=60.0, stamp=stamp, isolation="bwrap", attempts=[], endpoint="127.0.0.1:8000")}
    exp = {"pack_digest": "p" * 64, "config_full": {"agents": {"a": {"command": "a"}}}}
    tasks = [{"task_id": "t1", "stratum": "xs", "split": "holdout", "task_digest": "d" * 64}]
    [row] = build_runs(exp, tasks, [], [score], {"allowed_quota_states": [], "max_queue_ms": None,
                                                 "max_retries": None, "required_server_id": None})
    assert (row["tokens_source"], row["tokens_out"], row["over_envelope"]) == ("metered_incomplete", 800, None)
    assert row["status"] == "pass"


def test_the_gate_notes_incomplete_tokens_and_does_not_count_them_complete(tmp_path: Path) -> None:
    spec = build_spec()
    for r in spec["runs"]:
        if r["solver"] == CAND:
            r["tokens_source"] = "metered"
    _rows(spec, "xs01", CAND)[0].update(tokens_source="metered_incomplete", over_envelope=None)
    d = decide(tmp_path, spec)
    assert codes(d) == []  # a note, not a refusal: under the cap as far as anyone can tell
    [note] = [n for n in d["notes"] if n["code"] == "TOKENS_INCOMPLETE"]
    assert f"{CAND}:xs01#1" in note["sentence"] and "1 of them" in note["sentence"], note
    rows = {(r["solver"], r["stratum"]): r for r in d["cost_per_pass"]}
    assert rows[(CAND, "xs")]["tokens_status"] == ("incomplete (1 of 3 runs without tokens or with metered tokens "
                                                   "incomplete)")
    assert rows[(CAND, "xs")]["tokens_per_pass"] is None
    assert rows[(CAND, "s")]["tokens_status"] == "complete"
    # already over the cap with its incomplete count: over the envelope, the headline refused
    _rows(spec, "xs01", CAND)[0].update(tokens_out=9000, over_envelope=True)
    assert "OVER_ENVELOPE" in codes(decide(tmp_path / "over", spec))


def _headline(d: dict) -> str:
    [sentence] = [s for s in d["allowed_sentences"] if "under a clock" in s]
    return sentence


def test_the_headline_never_states_a_cap_no_run_confirmed(tmp_path: Path) -> None:
    """Issue 34: with 0 tokens metered on every row (a client whose wire format the bridge did not
    read) the decision published "passed 9 of 9 … under … 60 steps and 8192 output tokens". A cap
    is stated only where every counted run confirmed it; otherwise it is said to be unconfirmed."""
    spec = build_spec()
    for r in spec["runs"]:
        if r["solver"] == CAND:
            r.update(steps=None, tokens_out=0, tokens_source="metered_incomplete", over_envelope=None)
    said = _headline(decide(tmp_path / "unconfirmed", spec))
    assert "steps and" not in said and "output tokens;" not in said, said
    assert "(not confirmed: the cap of" in said and "runs reported no step count" in said, said
    assert "have no output-token count, or only a lower bound" in said, said


def test_the_headline_states_the_caps_every_run_confirmed(tmp_path: Path) -> None:
    """The honest case: every run with its steps and complete tokens: the caps stated as before."""
    said = _headline(decide(tmp_path, build_spec()))
    assert "steps and" in said and "output tokens;" in said and "not confirmed" not in said, said
