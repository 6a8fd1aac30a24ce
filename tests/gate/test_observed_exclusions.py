"""Issue 26 point 3: only what the harness observed removes a run.

The agent writes its own session stamp (``$SEALBENCH_OUT/stamp.json``), so a stamp that says
``route_changed: true``, a missing stamp, an ``exhausted`` quota or another server on each of
its failures used to exclude them and lift its rate (6/9 -> 6/6). Now the stamp is only the
agent's claim (``stamp_notes``); exclusions come from the session the bridge observed
(``run.json`` ``session_observed``), from an ``offline: true`` agent that used a server, and
from the harness's own faults (``infra_fail``). The holdout's server pin reads the observed
server too: two offline agents are the same server (``offline``).
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))

from test_gate_refusals import BASE, CAND, PACK_DIGEST, build_spec, codes, decide, write_experiment  # noqa: E402

from sealbench.agent import bridge  # noqa: E402
from sealbench.core import tables  # noqa: E402
from sealbench.gate import gate  # noqa: E402
from sealbench.provenance.ledger import append_ledger, read_ledger  # noqa: E402
from sealbench.stages.stratify import build_runs  # noqa: E402

pytestmark = pytest.mark.unit

HEALTH = {"allowed_quota_states": ["ok", "unmetered"], "max_queue_ms": 60000, "max_retries": 3,
          "required_server_id": None}
GOOD_STAMP = {"server_id": "srv-1", "queue_ms": 100, "retries": 0, "quota_state": "ok", "route_changed": False}
NO_STAMP = {k: None for k in GOOD_STAMP}
ENDPOINT = "127.0.0.1:8000"


def observed(**over: Any) -> dict:
    """A healthy ``session_observed`` as the bridge writes it (``ObservedSession.as_dict``)."""
    s = {"endpoint": ENDPOINT, "servers": ["srv-1"], "server_id": "srv-1", "route_changed": False, "retries": 0,
         "max_queue_ms": 250, "quota_state": "ok", "replies": 4, "statuses": {"200": 4}, "failed_connects": 0,
         "unreachable_after_reply": False}
    s.update(over)
    return s


def score(tid: str, status: str, stamp: dict, *, solver: str = CAND, session: dict | None = None,
          endpoint: str | None = ENDPOINT, isolation: str = "bwrap", timed_out: bool = False) -> dict:
    """A score record as hidden_score writes it, with its run.json embedded."""
    return {"task_id": tid, "solver": solver, "fingerprint": f"fp-{solver}", "epoch": 1, "status": status,
            "reason": None if status == "pass" else "hidden tests failed", "visible_pass": status == "pass",
            "hidden_pass": status == "pass", "time_to_green_s": None,
            "run": {"role": "agent", "timed_out": timed_out, "end_reason": "time_box" if timed_out else "exit",
                    "exit_code": None if timed_out else 0, "wall_s": 120.0, "time_box_s": 1800.0,
                    "stamp": dict(stamp), "usage": {"steps": 12, "tokens_in": 5000, "tokens_out": 900,
                                                     "cost_usd": 0.01},
                    "isolation": isolation, "attempts": [], "endpoint": endpoint,
                    "session_observed": session if endpoint else None,
                    "usage_metered": None, "tokens_source": "agent", "steer_count": 0, "patch_bytes": 300}}


def rows_of(scores: list[dict], health: dict = HEALTH, offline: tuple[str, ...] = ()) -> list[dict]:
    tids = sorted({s["task_id"] for s in scores})
    exp = {"pack_digest": PACK_DIGEST,
           "config_full": {"agents": {a: {"command": a, "offline": a in offline} for a in (CAND, BASE)}}}
    tasks = [{"task_id": t, "stratum": "xs", "split": "holdout", "task_digest": "d" * 64} for t in tids]
    return build_runs(exp, tasks, [], scores, health)


def one(stamp: dict, status: str = "fail", **kw: Any) -> dict:
    [row] = rows_of([score("t1", status, stamp, **kw)])
    return row


# ------------------------------------------------------------------ 1. the attack: the agent's stamp

FORGED = {
    "route_changed": dict(GOOD_STAMP, route_changed=True),
    "missing": NO_STAMP,
    "quota_exhausted": dict(GOOD_STAMP, quota_state="exhausted"),
    "other_server": dict(GOOD_STAMP, server_id="srv-other"),
    "queue_and_retries": dict(GOOD_STAMP, queue_ms=10 ** 7, retries=99),
}


@pytest.mark.parametrize("stamp", list(FORGED.values()), ids=list(FORGED))
def test_attack_a_stamp_written_on_a_failure_does_not_exclude_it(stamp: dict) -> None:
    """The bridge saw a healthy session; the agent's stamp says otherwise: the row stays a
    failure, the claim is a note."""
    health = dict(HEALTH, required_server_id="srv-1")
    [row] = rows_of([score("t1", "fail", stamp, session=observed())], health)
    assert row["status"] == "fail", row
    assert row["excluded_reason"] is None
    assert row["stamp_notes"], "the stamp's claim must stay visible"
    # the runs table holds what the harness observed, not the claim
    assert (row["server_id"], row["queue_ms"], row["retries"], row["quota_state"], row["route_changed"]) == \
           ("srv-1", 250, 0, "ok", False)


@pytest.mark.parametrize("stamp", [dict(GOOD_STAMP, route_changed=True), NO_STAMP, dict(GOOD_STAMP, quota_state="x")],
                         ids=["route_changed", "missing", "bad_quota"])
def test_attack_a_stamp_does_not_exclude_a_run_without_a_bridge(stamp: dict) -> None:
    """No endpoint, sandboxed: provably no server (``offline``) whatever the stamp says. No
    endpoint, unsandboxed: the server is unknown; the stamp's claim is only a note."""
    row = one(stamp, endpoint=None)
    assert row["status"] == "fail" and row["server_id"] == "offline", row
    row = one(stamp, endpoint=None, isolation="none")
    assert row["status"] == "fail" and row["server_id"] is None and row["route_changed"] is None, row
    assert row["stamp_notes"]


def test_attack_route_changed_stamps_on_every_failure_count_in_the_headline(tmp_path: Path) -> None:
    """Acceptance: an agent that writes a "route changed" stamp on each of its failures — the
    headline counts them as failures (6/9, not 6/6), and the report says its stamps claimed it."""
    spec = build_spec()
    cols = {c[0] for c in tables.RUNS_COLUMNS}
    failing = 0
    for i, r in enumerate(spec["runs"]):
        if r["role"] != "agent" or r["split"] != "holdout":
            continue
        stamp = dict(GOOD_STAMP, route_changed=True) if r["status"] == "fail" and r["solver"] == CAND else GOOD_STAMP
        failing += r["status"] == "fail" and r["solver"] == CAND
        [built] = build_runs({"pack_digest": PACK_DIGEST, "config_full": spec["cfg"]},
                             [{k: r[k] for k in ("task_id", "stratum", "split", "task_digest")}],
                             [], [score(r["task_id"], r["status"], stamp, solver=r["solver"], session=observed())],
                             spec["cfg"]["health"])
        assert set(built) <= cols
        spec["runs"][i] = {**r, **built}
    assert failing == 3
    d = decide(tmp_path, spec)
    assert d["exclusions"] == 0 and d["n"] == 9 and d["passes"] == 6, (d["exclusions"], d["n"])
    assert d["headline"] == pytest.approx(6 / 9)
    assert "EXCLUSIONS_DECIDE" not in codes(d)
    note = next(n for n in d["notes"] if n["code"] == "STAMP_CLAIMS")
    assert note["sentence"].startswith("3 runs' own stamps reported a problem"), note
    assert "they are counted as scored" in note["sentence"]


# ------------------------------------------------------------- 2. what the harness observed excludes

OBSERVED_BAD = {
    "route_change": (observed(servers=["srv-1", "srv-2"], server_id="srv-1,srv-2", route_changed=True), "route"),
    "unreachable_after_reply": (observed(route_changed=True, unreachable_after_reply=True, failed_connects=1,
                                         retries=1), "route"),
    "quota_429": (observed(quota_state="exhausted", retries=2, statuses={"200": 2, "429": 2}), "quota"),
    "retries": (observed(retries=5, statuses={"200": 1, "503": 5}), "retries"),
    "queue": (observed(max_queue_ms=90000), "queue"),
    "other_server": (observed(servers=["srv-9"], server_id="srv-9"), "server"),
}


@pytest.mark.parametrize("session,word", list(OBSERVED_BAD.values()), ids=list(OBSERVED_BAD))
def test_an_honest_run_whose_observed_session_left_the_envelope_is_excluded(session: dict, word: str) -> None:
    """The instrument changed under an honest agent (its stamp is healthy): excluded, the
    reason naming what the bridge saw."""
    health = dict(HEALTH, required_server_id="srv-1")
    [row] = rows_of([score("t1", "pass", GOOD_STAMP, session=session)], health)
    assert row["status"] == "excluded", row
    assert word in row["excluded_reason"] and "observed" in row["excluded_reason"], row["excluded_reason"]
    assert row["stamp_notes"] is None


def test_a_healthy_observed_session_is_not_excluded() -> None:
    health = dict(HEALTH, required_server_id="srv-1")
    for status in ("pass", "fail"):
        [row] = rows_of([score("t1", status, GOOD_STAMP, session=observed())], health)
        assert row["status"] == status and row["excluded_reason"] is None and row["stamp_notes"] is None, row
    # a session whose agent never called the server: nothing observed left the envelope
    quiet = observed(servers=[], server_id=None, max_queue_ms=None, quota_state=None, replies=0, statuses={})
    [row] = rows_of([score("t1", "fail", GOOD_STAMP, session=quiet)], health)
    assert row["status"] == "fail" and row["server_id"] is None, row


def test_timeout_and_tamper_keep_their_status_under_an_observed_change() -> None:
    bad = observed(route_changed=True, servers=["a", "b"], server_id="a,b")
    [row] = rows_of([score("t1", "fail", GOOD_STAMP, session=bad, timed_out=True)])
    assert row["status"] == "timeout"
    [row] = rows_of([score("t1", "tamper", GOOD_STAMP, session=bad)])
    assert row["status"] == "tamper"


def test_an_offline_agent_that_used_a_server_is_still_excluded() -> None:
    """``offline: true`` checked against what the harness saw (server_use): unchanged."""
    [row] = rows_of([score("t1", "fail", NO_STAMP, session=observed())], offline=(CAND,))
    assert row["status"] == "excluded" and "declared offline" in row["excluded_reason"], row
    [row] = rows_of([score("t1", "fail", NO_STAMP, endpoint=None)], offline=(CAND,))
    assert row["status"] == "fail" and row["server_id"] == "offline" and row["stamp_notes"] is None, row


# ------------------------------------------------------------------ 3. the holdout's server pin

def test_two_offline_agents_are_the_same_server_for_the_pin(tmp_path: Path) -> None:
    """Issue 27: a holdout first scored with two offline agents (repair and another), then a
    user's own offline agent with its own stamp: every row's observed server is ``offline``,
    so nothing is SERVER_PINNED — whatever server the agents' stamps name."""
    ledger = tmp_path / "ledger.jsonl"
    for k, stamp_server in enumerate(("local", "my-laptop")):
        spec = build_spec()
        for i, r in enumerate(spec["runs"]):
            if r["role"] != "agent":
                continue
            st = dict(GOOD_STAMP, server_id=stamp_server) if r["solver"] == CAND else NO_STAMP
            [built] = build_runs({"pack_digest": PACK_DIGEST, "config_full": spec["cfg"]},
                                 [{k2: r[k2] for k2 in ("task_id", "stratum", "split", "task_digest")}], [],
                                 [score(r["task_id"], r["status"], st, solver=r["solver"], endpoint=None)],
                                 spec["cfg"]["health"])
            assert built["server_id"] == "offline"
            spec["runs"][i] = {**r, **built}
        decision, _, _ = gate.decide(*write_experiment(tmp_path / str(k), spec), ledger=ledger)
        entry = decision.pop("ledger_entry")
        if entry is not None:
            append_ledger(ledger, entry, read_ledger(ledger))
        assert "SERVER_PINNED" not in [n["code"] for n in decision["notes"]], decision["notes"]
        assert decision["exclusions"] == 0


# ------------------------------------------------------------------ 4. the bridge observes the session

class _Upstream:
    """A local fake model server: each POST gets the next scripted (status, model, delay) reply."""

    def __init__(self, script: list[tuple[int, str | None, float, bool]]) -> None:
        self.script = list(script)
        outer = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, model, delay, stream = outer.script.pop(0)
                time.sleep(delay)
                obj: dict = {"usage": {"prompt_tokens": 3, "completion_tokens": 2}}
                if model is not None:
                    obj["model"] = model
                if stream:
                    body = (f"data: {json.dumps({'model': model, 'choices': []})}\n\n"
                            f"data: {json.dumps(obj)}\n\ndata: [DONE]\n\n").encode()
                    ctype = "text/event-stream"
                else:
                    body, ctype = json.dumps(obj).encode(), "application/json"
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _ask(sock_path: str, n: int) -> list[int]:
    """``n`` requests on one keep-alive connection through the bridge's unix socket."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock_path)
    f = s.makefile("rb")
    got = []
    for _ in range(n):
        body = b'{"model": "whatever"}'
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body) + body)
        status = int(f.readline().split()[1])
        length = 0
        while True:
            line = f.readline()
            if line in (b"\r\n", b""):
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        f.read(length)
        got.append(status)
    f.close()  # the makefile holds the connection open: close both, or the bridge waits for it
    s.close()
    return got


def _through_bridge(tmp_path: Path, script: list, n: int, then_stop: bool = False) -> dict:
    up = _Upstream(script)
    b = bridge.UnixToTcp(str(tmp_path / "endpoint.sock"), "127.0.0.1", up.port)
    try:
        assert _ask(str(tmp_path / "endpoint.sock"), n) == [st for st, *_ in script[:n]] if script else True
        if then_stop:
            up.close()
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(tmp_path / "endpoint.sock"))
            s.settimeout(5)
            assert s.recv(10) == b""  # the bridge could not reach the server and hung up
            s.close()
    finally:
        b.close()
        if not then_stop:
            up.close()
    return b.observed().as_dict()


def test_bridge_observes_a_healthy_session(tmp_path: Path) -> None:
    got = _through_bridge(tmp_path, [(200, "srv-1", 0.0, False), (200, "srv-1", 0.15, True)], 2)
    assert got["servers"] == ["srv-1"] and got["server_id"] == got["endpoint"] and got["endpoint"].startswith("127.0.0.1:")
    assert got["route_changed"] is False and got["retries"] == 0 and got["quota_state"] == "ok"
    assert got["replies"] == 2 and got["statuses"] == {"200": 2}
    assert 150 <= got["max_queue_ms"] < 5000, got  # the wait is on the harness's clock


def test_bridge_observes_a_route_change_429s_and_5xx(tmp_path: Path) -> None:
    got = _through_bridge(tmp_path, [(200, "srv-1", 0.0, False), (429, None, 0.0, False),
                                     (503, None, 0.0, False), (200, "srv-2", 0.0, True)], 4)
    assert got["servers"] == ["srv-1", "srv-2"] and got["route_changed"] is True
    assert got["retries"] == 2 and got["quota_state"] == "exhausted"
    assert got["statuses"] == {"200": 2, "429": 1, "503": 1}


def test_bridge_observes_the_server_unreachable_after_it_answered(tmp_path: Path) -> None:
    got = _through_bridge(tmp_path, [(200, "srv-1", 0.0, False)], 1, then_stop=True)
    assert got["failed_connects"] == 1 and got["retries"] == 1
    assert got["unreachable_after_reply"] is True and got["route_changed"] is True


def test_bridge_without_replies_observes_no_server(tmp_path: Path) -> None:
    got = _through_bridge(tmp_path, [], 0)
    assert got["server_id"] is None and got["quota_state"] is None and got["max_queue_ms"] is None
    assert got["route_changed"] is False and got["retries"] == 0


def test_an_infra_fail_run_keeps_its_status_and_has_no_stamp_note() -> None:
    """The harness's own fault: infra_fail (left out of the rates as before); the stamp it never
    got to write is not the agent's claim."""
    [row] = rows_of([score("t1", "infra_fail", NO_STAMP, endpoint=None, isolation="none")])
    assert row["status"] == "infra_fail" and row["stamp_notes"] is None and row["excluded_reason"] is None
