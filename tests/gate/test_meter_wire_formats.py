"""Issue 34 point 3: the bridge meters every wire format its clients speak, streamed and not.

Measured before: Codex CLI (OpenAI Responses API: usage only in the ``response.completed``
event) and Gemini CLI (``usageMetadata``, cumulative on every chunk of a stream) were metered
0/0 and so ``metered_incomplete``; Claude Code's prompt-cache tokens (``cache_creation_input_tokens``,
``cache_read_input_tokens``) were dropped; a side call such as Anthropic's
``/v1/messages/count_tokens`` (``{"input_tokens": N}``, no ``usage``) made a run incomplete.

Each test feeds the meter the bytes a server sends (literal bodies shaped as the providers
send them), through the bridge's request and reply taps, and asserts the exact totals:
``tokens_in`` = every input token the server counted (uncached + cache creation + cache read),
``tokens_out`` = every output token (reasoning/thoughts included); the cache parts beside them.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from sealbench.agent import bridge  # noqa: E402
from sealbench.stages import run_agent  # noqa: E402
from sealbench.stages.stratify import build_runs  # noqa: E402

pytestmark = pytest.mark.unit


# ---------------------------------------------------------------------------------------------
# the bytes on the wire


def post(target: str, body: dict | None = None, method: str = "POST") -> bytes:
    data = b"" if body is None else json.dumps(body).encode()
    head = f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode()
    if body is None:
        return head + b"\r\n"
    return head + b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(data) + data


def reply(body: bytes | str, ctype: str = "application/json", chunked: bool = False, status: str = "200 OK") -> bytes:
    data = body.encode() if isinstance(body, str) else body
    head = f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\n".encode()
    if not chunked:
        return head + b"Content-Length: %d\r\n\r\n" % len(data) + data
    parts = [data[i:i + 37] for i in range(0, len(data), 37)]
    return head + b"Transfer-Encoding: chunked\r\n\r\n" + b"".join(
        b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def sse(*events: tuple[str | None, dict | str], crlf: bool = False) -> str:
    nl = "\r\n" if crlf else "\n"
    out = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}{nl}" if name else "") + f"data: {text}{nl}{nl}")
    return "".join(out)


class Wire:
    """One connection through the bridge's taps: requests in, replies out (in small pieces)."""

    def __init__(self) -> None:
        self.total, self.lock = bridge.MeteredUsage(), threading.Lock()
        self.session = bridge.ObservedSession(endpoint="127.0.0.1:8000")
        self.exchange = bridge._Exchange()
        self.requests = bridge.RequestMeter(self.exchange)
        self.replies = bridge.ResponseMeter(self.total, self.lock, self.session, self.exchange)

    def call(self, request: bytes, answer: bytes) -> Wire:
        for i in range(0, len(request), 11):
            self.requests.feed(request[i:i + 11])
        for i in range(0, len(answer), 7):
            self.replies.feed(answer[i:i + 7])
        return self

    def numbers(self) -> tuple[int, int, int, int]:
        t = self.total
        return t.tokens_in, t.tokens_out, t.cache_creation, t.cache_read

    def source(self) -> str:
        return run_agent.choose_tokens({}, self.total)[1]


# ---------------------------------------------------------------------------------------------
# Anthropic Messages (Claude Code)

CLAUDE = "claude-sonnet-4-20250514"
ANTHROPIC_STREAM = sse(
    ("message_start", {"type": "message_start", "message": {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant", "model": CLAUDE,
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 7, "cache_creation_input_tokens": 1210, "cache_read_input_tokens": 14688,
                  "output_tokens": 1, "service_tier": "standard"}}}),
    ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ("ping", {"type": "ping"}),
    ("content_block_delta", {"type": "content_block_delta", "index": 0,
                             "delta": {"type": "text_delta", "text": "I'll run the tests."}}),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {
        "type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {}}}),
    ("content_block_delta", {"type": "content_block_delta", "index": 1,
                             "delta": {"type": "input_json_delta", "partial_json": "{\"command\": \"pytest -q\"}"}}),
    ("content_block_stop", {"type": "content_block_stop", "index": 1}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                       "usage": {"output_tokens": 96}}),
    ("message_stop", {"type": "message_stop"}),
)


def test_anthropic_stream_keeps_the_prompt_cache_tokens() -> None:
    """Attack (measured: 15,894 metered vs 79,464 reported): the cache tokens of
    ``message_start`` were dropped. input 7 + creation 1210 + read 14688 = 15905 in; the final
    ``message_delta`` output (96), not 1 + 96."""
    w = Wire().call(post("/v1/messages?beta=true", {"model": CLAUDE, "stream": True, "max_tokens": 32000}),
                    reply(ANTHROPIC_STREAM, "text/event-stream; charset=utf-8", chunked=True))
    assert w.numbers() == (15905, 96, 1210, 14688)
    assert (w.total.responses, w.total.with_usage) == (1, 1) and w.source() == "metered"
    assert w.session.answers == {CLAUDE: [CLAUDE]}


def test_anthropic_stream_whose_message_delta_repeats_the_cumulative_usage_is_not_double_counted() -> None:
    """Newer API versions repeat every usage field, cumulative, in ``message_delta``."""
    stream = ANTHROPIC_STREAM.replace('"usage": {"output_tokens": 96}', json.dumps({"usage": {
        "input_tokens": 7, "cache_creation_input_tokens": 1210, "cache_read_input_tokens": 14688,
        "output_tokens": 96}})[1:-1])
    assert stream != ANTHROPIC_STREAM
    w = Wire().call(post("/v1/messages", {"model": CLAUDE, "stream": True}), reply(stream, "text/event-stream"))
    assert w.numbers() == (15905, 96, 1210, 14688)


def test_anthropic_message_not_streamed() -> None:
    body = {"id": "msg_02", "type": "message", "role": "assistant", "model": CLAUDE,
            "content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 3, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 20480,
                      "output_tokens": 41}}
    w = Wire().call(post("/v1/messages", {"model": CLAUDE}), reply(json.dumps(body)))
    assert w.numbers() == (20483, 41, 0, 20480) and w.source() == "metered"


def test_side_calls_count_apart_and_never_make_a_run_incomplete() -> None:
    """Attack: Claude Code's ``count_tokens`` reply (``{"input_tokens": N}``, no ``usage``) made
    every run ``metered_incomplete``; model listings and probes likewise. They are side calls:
    counted apart (``responses_side``), never added to the totals, never a reply without usage."""
    w = Wire()
    w.call(post("/v1/messages/count_tokens?beta=true", {"model": CLAUDE, "messages": []}),
           reply('{"input_tokens":2095}'))
    w.call(post("/v1/models", None, method="GET"),
           reply(json.dumps({"data": [{"type": "model", "id": CLAUDE}], "has_more": False})))
    w.call(post("/", None, method="HEAD"), b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 10\r\n\r\n")
    w.call(post("/v1beta/models/gemini-2.5-pro:countTokens", {"contents": []}), reply('{"totalTokens": 31}'))
    # a stored response fetched again: its usage was metered when it was generated
    w.call(post("/v1/responses/resp_1", None, method="GET"),
           reply(json.dumps({"id": "resp_1", "object": "response", "model": "gpt-5",
                             "usage": {"input_tokens": 900, "output_tokens": 90}})))
    w.call(post("/v1/messages?beta=true", {"model": CLAUDE, "stream": True}),
           reply(ANTHROPIC_STREAM, "text/event-stream", chunked=True))
    assert w.numbers() == (15905, 96, 1210, 14688)
    assert (w.total.responses, w.total.side, w.total.with_usage) == (6, 5, 1)
    assert w.source() == "metered"
    d = w.total.as_dict()
    assert (d["responses"], d["responses_side"], d["responses_with_usage"]) == (6, 5, 1)
    # a generation request that gets a reply without usage still makes the run incomplete
    w.call(post("/v1/messages", {"model": CLAUDE}), reply('{"type":"message","content":[]}'))
    assert w.source() == "metered_incomplete"
    rec = w.total.as_dict()
    assert run_agent.envelope_unconfirmed({"tokens_out": 96}, {"max_output_tokens": 1000},
                                          "metered_incomplete", rec) == [
        "tokens_out 96 is a lower bound (1 of 2 server replies carried no usage): within max_output_tokens 1000 "
        "cannot be confirmed"]


def test_a_side_call_cut_short_is_no_reply_without_usage() -> None:
    w = Wire()
    w.call(post("/v1/models", None, method="GET"),
           b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"data\":")
    w.replies.close()
    assert (w.total.responses, w.total.side, w.total.with_usage) == (1, 1, 0) and w.source() == "metered"


# ---------------------------------------------------------------------------------------------
# OpenAI Responses (Codex CLI)

CODEX = "gpt-5-codex"
RESPONSES_USAGE = {"input_tokens": 9120, "input_tokens_details": {"cached_tokens": 8064},
                   "output_tokens": 310, "output_tokens_details": {"reasoning_tokens": 192}, "total_tokens": 9430}


def _response(status: str, usage: dict | None) -> dict:
    return {"id": "resp_68af", "object": "response", "created_at": 1756000000, "status": status,
            "model": CODEX, "output": [] if usage is None else [
                {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
                 "content": [{"type": "output_text", "text": "Hi", "annotations": []}]}],
            "usage": usage}


RESPONSES_STREAM = sse(
    ("response.created", {"type": "response.created", "sequence_number": 0,
                          "response": _response("in_progress", None)}),
    ("response.in_progress", {"type": "response.in_progress", "sequence_number": 1,
                              "response": _response("in_progress", None)}),
    ("response.output_item.added", {"type": "response.output_item.added", "sequence_number": 2, "output_index": 0,
                                    "item": {"id": "msg_1", "type": "message", "status": "in_progress",
                                             "role": "assistant", "content": []}}),
    ("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": 3,
                                    "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "Hi"}),
    ("response.completed", {"type": "response.completed", "sequence_number": 4,
                            "response": _response("completed", RESPONSES_USAGE)}),
)


def test_responses_stream_is_metered_from_response_completed() -> None:
    """Attack (measured: Codex CLI metered 0/0): the usage is only in ``response.completed``,
    as ``response.usage``. ``input_tokens`` already holds the cached ones (8064 of 9120)."""
    w = Wire().call(post("/v1/responses", {"model": CODEX, "stream": True, "input": []}),
                    reply(RESPONSES_STREAM, "text/event-stream", chunked=True))
    assert w.numbers() == (9120, 310, 0, 8064)
    assert w.total.reasoning == 192
    assert (w.total.responses, w.total.with_usage) == (1, 1) and w.source() == "metered"
    assert w.session.answers == {CODEX: [CODEX]}


def test_responses_object_not_streamed() -> None:
    w = Wire().call(post("/v1/responses", {"model": CODEX, "input": "hi"}),
                    reply(json.dumps(_response("completed", RESPONSES_USAGE))))
    assert w.numbers() == (9120, 310, 0, 8064) and w.source() == "metered"


# ---------------------------------------------------------------------------------------------
# Gemini (Gemini CLI)

GEMINI = "gemini-2.5-pro"


def _chunk(text: str, usage: dict, finish: bool = False) -> dict:
    cand: dict = {"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}
    if finish:
        cand["finishReason"] = "STOP"
    return {"candidates": [cand], "usageMetadata": usage, "modelVersion": GEMINI, "responseId": "aBcD-xyz"}


GEMINI_CHUNKS = [
    _chunk("Let me", {"promptTokenCount": 5321, "candidatesTokenCount": 2, "totalTokenCount": 5421,
                      "cachedContentTokenCount": 4096, "thoughtsTokenCount": 98,
                      "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 5321}]}),
    _chunk(" look at the failing test", {"promptTokenCount": 5321, "candidatesTokenCount": 9, "totalTokenCount": 5428,
                                         "cachedContentTokenCount": 4096, "thoughtsTokenCount": 98}),
    _chunk(".", {"promptTokenCount": 5321, "candidatesTokenCount": 40, "totalTokenCount": 5459,
                 "cachedContentTokenCount": 4096, "thoughtsTokenCount": 98,
                 "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 5321}],
                 "cacheTokensDetails": [{"modality": "TEXT", "tokenCount": 4096}]}, finish=True),
]
#: the last chunk's usageMetadata: 5321 in (4096 of them cached), 40 + 98 thoughts out = 5459
GEMINI_TOTALS = (5321, 138, 0, 4096)


def test_gemini_sse_stream_takes_the_last_cumulative_usage_not_the_sum() -> None:
    """Attack (measured: Gemini CLI metered 0/0): ``?alt=sse``, each chunk's ``usageMetadata``
    cumulative; the model in the URL path and the reply's ``modelVersion``."""
    body = sse(*((None, c) for c in GEMINI_CHUNKS), crlf=True)
    w = Wire().call(post(f"/v1beta/models/{GEMINI}:streamGenerateContent?alt=sse", {"contents": []}),
                    reply(body, "text/event-stream", chunked=True))
    assert w.numbers() == GEMINI_TOTALS and w.total.reasoning == 98
    assert sum(GEMINI_TOTALS[:2]) == GEMINI_CHUNKS[-1]["usageMetadata"]["totalTokenCount"]
    assert (w.total.responses, w.total.with_usage) == (1, 1) and w.source() == "metered"
    assert w.session.models_requested == [GEMINI] and w.session.answers == {GEMINI: [GEMINI]}


def test_gemini_json_array_stream() -> None:
    """``streamGenerateContent`` without ``alt=sse``: one JSON array, chunk by chunk."""
    body = "[" + ",\r\n".join(json.dumps(c) for c in GEMINI_CHUNKS) + "]"
    w = Wire().call(post(f"/v1beta/models/{GEMINI}:streamGenerateContent", {"contents": []}),
                    reply(body, "application/json; charset=UTF-8", chunked=True))
    assert w.numbers() == GEMINI_TOTALS and w.source() == "metered"
    assert w.session.answers == {GEMINI: [GEMINI]}


def test_gemini_generate_content_not_streamed() -> None:
    w = Wire().call(post("/v1beta/models/gemini-2.5-flash:generateContent", {"contents": []}),
                    reply(json.dumps({**GEMINI_CHUNKS[-1], "modelVersion": "gemini-2.5-flash"})))
    assert w.numbers() == GEMINI_TOTALS and w.source() == "metered"
    assert w.session.answers == {"gemini-2.5-flash": ["gemini-2.5-flash"]}


# ---------------------------------------------------------------------------------------------
# OpenAI Chat Completions


def test_chat_completions_cached_prompt_tokens_are_a_part_of_tokens_in() -> None:
    body = {"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-2024-08-06", "choices": [],
            "usage": {"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
                      "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
                      "completion_tokens_details": {"reasoning_tokens": 0}}}
    w = Wire().call(post("/v1/chat/completions", {"model": "gpt-4o"}), reply(json.dumps(body)))
    assert w.numbers() == (2006, 300, 0, 1920) and w.source() == "metered"


def test_honest_chat_completions_metering_is_unchanged() -> None:
    """The formats metered before give the numbers they gave before (tests/stages/test_untrusted.py
    has the same through a real bridge): a JSON reply plus a stream whose last chunk says the total."""
    stream = sse((None, {"choices": [{"delta": {"content": "x"}}]}),
                 (None, {"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 700}}), (None, "[DONE]"))
    w = Wire()
    w.call(post("/v1/chat/completions", {"model": "m"}),
           reply(json.dumps({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 800}})))
    w.call(post("/v1/chat/completions", {"model": "m", "stream": True}), reply(stream, "text/event-stream", chunked=True))
    assert w.numbers() == (150, 1500, 0, 0)
    assert (w.total.responses, w.total.with_usage, w.total.side) == (2, 2, 0) and w.source() == "metered"


def test_event_stream_data_over_several_lines_and_events_without_the_empty_line() -> None:
    """SSE: an event's ``data:`` lines are joined; a server that leaves out the empty line
    between two one-line events is still read event by event."""
    usage = {"type": "message_delta", "delta": {}, "usage": {"output_tokens": 96}}
    start = json.loads(ANTHROPIC_STREAM.split("data: ", 1)[1].split("\n", 1)[0])
    split = json.dumps(start, indent=1).replace("\n", "\ndata: ")
    body = f"event: message_start\ndata: {split}\n\ndata: {json.dumps(usage)}\ndata: [DONE]\n"
    w = Wire().call(post("/v1/messages", {"model": CLAUDE}), reply(body, "text/event-stream"))
    assert w.numbers() == (15905, 96, 1210, 14688)
    assert bridge.model_in_body(body.encode(), "text/event-stream") == CLAUDE


# ---------------------------------------------------------------------------------------------
# run.json and the runs table


def test_cache_tokens_reach_run_json_and_the_runs_table() -> None:
    metered = bridge.MeteredUsage(tokens_in=15905, tokens_out=96, cache_creation=1210, cache_read=14688,
                                  responses=2, with_usage=1, side=1)
    usage, source = run_agent.choose_tokens({"tokens_in": 1, "tokens_out": 2, "steps": 3}, metered)
    m = metered.as_dict()
    assert (m["tokens_cache_creation"], m["tokens_cache_read"], m["responses_side"]) == (1210, 14688, 1)
    run = {"usage": usage, "tokens_source": source, "usage_metered": m, "role": "agent", "end_reason": "exit",
           "exit_code": 0, "wall_s": 5.0, "time_box_s": 60.0, "isolation": "bwrap", "attempts": [],
           "over_envelope": [], "envelope_unconfirmed": []}
    score = {"task_id": "t1", "solver": "a", "fingerprint": "f" * 16, "epoch": 1, "status": "pass", "reason": None,
             "visible_pass": True, "hidden_pass": True, "time_to_green_s": 3.0, "run": run}
    exp = {"pack_digest": "p" * 64, "config_full": {"agents": {"a": {"command": "a"}}}}
    tasks = [{"task_id": "t1", "stratum": "xs", "split": "holdout", "task_digest": "d" * 64}]
    health = {"allowed_quota_states": [], "max_queue_ms": None, "max_retries": None, "required_server_id": None}
    [row] = build_runs(exp, tasks, [], [score], health)
    assert (row["tokens_in"], row["tokens_out"], row["tokens_cache_creation"], row["tokens_cache_read"]) == \
        (15905, 96, 1210, 14688)
    assert row["tokens_source"] == "metered"
    # the agent's word (no bridge): no cache count is known
    run2 = dict(run, tokens_source="agent", usage_metered=None, usage={"tokens_in": 1, "tokens_out": 2})
    [row2] = build_runs(exp, tasks, [], [dict(score, run=run2)], health)
    assert (row2["tokens_in"], row2["tokens_cache_creation"], row2["tokens_cache_read"]) == (1, None, None)
