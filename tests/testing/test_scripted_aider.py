"""The scripted aider server (sealbench.testing.scripted_aider) on its own: the edit format read
from the system prompt, files asked for before they are edited, the edit rendered from the
file's content as aider shows it, the turn and the conversation taken from the request, usage
streamed and not. The real aider against it: tests/clients/test_presets_live.py."""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from sealbench.testing.scripted_aider import (  # noqa: E402
    FILES_PREFIX,
    ScriptedAider,
    blocks_between,
    edit_format,
    edits_from_patch,
    render,
)

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
WHOLE = "To suggest changes to a file you MUST return the entire content of the updated file.\n" \
        "You MUST use this *file listing* format:\n\nReply in English.\n"
DIFF = "# *SEARCH/REPLACE block* Rules:\n\nEvery *SEARCH/REPLACE block* must use this format:\n" \
       "1. The *FULL* file path alone on a line, verbatim.\n2. The opening fence and code language, eg: ```python\n"
FENCED = "# *SEARCH/REPLACE block* Rules:\n\nEvery *SEARCH/REPLACE block* must use this format:\n" \
         "1. The opening fence and code language, eg: ```python\n2. The *FULL* file path alone on a line, verbatim.\n"
OLD = "def f(text):\n    text = text.lower()\n    return text\n\n\ndef g():\n    return 1\n"
NEW = OLD.replace("text.lower()", "text.strip().lower()")


def _request(system: str, task: str, files: dict[str, str] | None = None, done: list[dict] | None = None) -> dict:
    """Messages laid out as aider 0.86 sends them: system, its examples, the files, the history,
    the task with the system prompt's closing rules appended."""
    shown = (FILES_PREFIX + "\n" + "".join(f"\n{p}\n```\n{c}```\n" for p, c in files.items())) if files \
        else "I am not sharing any files that you can edit yet."
    return {"model": "m", "messages": [
        {"role": "system", "content": system},
        {"role": "user", "content": "Change the greeting to be more casual"},
        {"role": "assistant", "content": "Ok, I will:\n\nshow_greeting.py\n```\nprint('hey')\n```\n"},
        {"role": "user", "content": "I switched to a new code base. Please don't consider the above files."},
        {"role": "assistant", "content": "Ok."},
        {"role": "user", "content": shown}, {"role": "assistant", "content": "Ok."},
        *(done or []), {"role": "user", "content": task + "\n\n" + system.strip().splitlines()[-1]}]}


def test_the_format_is_read_from_the_system_prompt() -> None:
    assert (edit_format(WHOLE), edit_format(DIFF), edit_format(FENCED), edit_format("hi")) == \
        ("whole", "diff", "diff-fenced", None)


def test_a_file_is_asked_for_then_edited_whole_and_the_script_ends() -> None:
    srv = ScriptedAider([{"pkg/a.py": NEW}])
    ask, _ = srv.reply(_request(WHOLE, "Fix f"))
    assert ask["content"].splitlines()[-1] == "pkg/a.py" and srv.calls[-1]["kind"] == "ask"
    history = [{"role": "user", "content": "Fix f"}, ask]
    edit, usage = srv.reply(_request(WHOLE, "I added these files to the chat: pkg/a.py", {"pkg/a.py": OLD}, history))
    assert edit["content"] == f"Edit 0 of the script.\n\npkg/a.py\n```\n{NEW}```\n"
    assert usage["completion_tokens"] == len(edit["content"]) // 4
    final, _ = srv.reply(_request(WHOLE, "lint ok", {"pkg/a.py": NEW}, [*history, edit]))
    assert final["content"].startswith("Done") and srv.finished()
    assert [c["kind"] for c in srv.calls] == ["ask", "edit", "final"]
    assert len({c["conversation"] for c in srv.calls}) == 1       # the reminder aider appends is no part of it


def test_a_new_content_becomes_the_smallest_unique_search_replace_block() -> None:
    assert blocks_between(OLD, NEW) == [("    text = text.lower()\n", "    text = text.strip().lower()\n")]
    twice = "x = 1\ny = 2\nx = 1\n"
    assert blocks_between(twice, "x = 1\ny = 2\nx = 3\n") == [("y = 2\nx = 1\n", "y = 2\nx = 3\n")]
    current = (OLD, ("```", "```"))
    diff = render("diff", "a.py", NEW, current)
    assert diff == ("a.py\n```\n<<<<<<< SEARCH\n    text = text.lower()\n=======\n    text = text.strip().lower()\n"
                    ">>>>>>> REPLACE\n```\n")
    assert render("diff-fenced", "a.py", NEW, current) == "```\na.py\n" + diff.split("```\n", 1)[1]
    assert render("whole", "a.py", [("text.lower()", "text.strip().lower()")], current) == f"a.py\n```\n{NEW}```\n"


def test_a_new_file_is_not_asked_for_and_replies_stream_with_usage() -> None:
    with ScriptedAider([{"new.txt": [("", "hello\n")]}]) as srv:
        req = urllib.request.Request(f"{srv.api_base}/chat/completions",
                                     json.dumps({**_request(DIFF, "Add new.txt"), "stream": True}).encode(),
                                     {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            events = [json.loads(ln[6:]) for ln in resp.read().decode().splitlines()
                      if ln.startswith("data: {")]
    text = "".join(c["delta"].get("content") or "" for e in events for c in e["choices"])
    assert "new.txt\n```\n<<<<<<< SEARCH\n=======\nhello\n>>>>>>> REPLACE\n```" in text
    usage = events[-1]["usage"]
    assert srv.totals() == {"prompt_tokens": usage["prompt_tokens"], "completion_tokens": usage["completion_tokens"],
                            "calls": 1} and srv.calls[0]["stream"]


def test_the_gold_edit_is_the_patched_file() -> None:
    task = ROOT / "suite" / "tasks" / "xs03-cargo-amount-whitespace"
    edits = edits_from_patch(task / "repo", (task / "oracle.patch").read_text())
    assert list(edits) == ["berthwise/units.py"]
    assert "text = text.strip().lower()" in edits["berthwise/units.py"]
    assert edits["berthwise/units.py"].replace("text.strip().lower()", "text.lower()") == \
        (task / "repo" / "berthwise" / "units.py").read_text()
