"""A scripted OpenAI-compatible chat server that drives aider through its own edit formats.

aider is not a tool-calling agent: it edits files through the text of the model's reply, in the
edit format its system prompt asks for. This server reads that format from each request's
``system`` message and answers in it:

- ``whole`` (the ``*file listing*`` format aider picks for a model it does not know): the path
  alone on a line, then the file's entire new content in a fence;
- ``diff`` (``*SEARCH/REPLACE block*``: the path, then a fence holding ``<<<<<<< SEARCH`` /
  ``=======`` / ``>>>>>>> REPLACE``) and ``diff-fenced`` (the path inside the fence).

It plays a script of EDITS, one per model turn: each maps a path to either the file's new full
content (a string) or a list of ``(search, replace)`` pairs. Whichever the script gives, the
reply is rendered in the format asked for, from the file's current content as aider shows it in
the request (its "added these files to the chat" message): a new content in ``diff`` becomes
SEARCH/REPLACE blocks (each changed run of lines with enough context to match once); blocks in
``whole`` become the content they produce. A list whose first search is empty creates a new file.

Aider sees no file until one is added to the chat, and with no repository map the model has to
name the files it wants: when a turn's file (other than a new one) is not in the request, the
reply only names the missing paths (``ask``); aider offers to add them (``--yes-always``: it
does) and sends the request again with their content. After the script every reply is
``FINAL_TEXT`` (it names no file, so aider stops).

The turn is derived from the request itself, not from a global counter, so several clients can
run against one server at once: turn = the number of assistant messages that are this server's
edit replies (they begin ``Edit N of the script.``). A conversation is keyed by its first user
message after aider's own examples and file messages (the task text).

Every reply carries ``usage``, streamed (the last chunk before ``[DONE]``) or not:
``prompt_tokens`` = characters of the request's messages // 4, ``completion_tokens`` = characters
of the reply // 4 (each at least 1). What was reported is recorded per call (``calls``: kind
ask/edit/final/unsupported, turn, format, paths, stream, the numbers) and summed (``totals()``).

Standalone::

    python -m sealbench.testing.scripted_aider --port 8767 --script edits.json
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from . import fake_llm
from .loopback import LoopbackServer

#: One turn of the script: path -> new full content, or (search, replace) pairs.
Edit = Mapping[str, str | Sequence[Sequence[str]]]
FINAL_TEXT = "Done: the scripted edits are complete."
FILES_PREFIX = "I have *added these files to the chat*"      # aider's files_content_prefix
#: aider's own user messages: the end of its examples, then which files the chat holds
EXAMPLES_END = "I switched to a new code base."
AIDER_SAYS = (FILES_PREFIX, "I am not sharing any files", "Don't try and edit any existing code")
EDIT_MARK = re.compile(r"^Edit (\d+) of the script\.")
#: aider's fences (coders/base_coder.py ``all_fences``): opening, closing
FENCES = (("```", "```"), ("````", "````"), *((f"<{t}>", f"</{t}>") for t in
                                              ("source", "code", "pre", "codeblock", "sourcecode")))


def edit_format(system: str) -> str | None:
    """The edit format aider's system prompt asks for: whole, diff, diff-fenced, or None."""
    if "*file listing* format" in system:
        return "whole"
    if "*SEARCH/REPLACE block*" in system:
        return "diff-fenced" if "The opening fence and code language, eg:" in system.split("*FULL* file path")[0] \
            else "diff"
    return None


def chat_files(messages: Sequence[dict], paths: Sequence[str]) -> dict[str, tuple[str, tuple[str, str]]]:
    """The current content and fence of each of ``paths`` aider shows in the request's last
    "added these files to the chat" message (a path not there is left out)."""
    shown = [fake_llm._text_of(m.get("content")) for m in messages if m.get("role") == "user"]
    text = next((t for t in reversed(shown) if t.startswith(FILES_PREFIX)), "")
    out = {}
    for path in paths:
        for fence in FENCES:
            head = f"\n{path}\n{fence[0]}\n"
            start = text.find(head)
            if start < 0:
                continue
            start += len(head)
            end = text.find(fence[1] + "\n", start)
            while end > start and text[end - 1] != "\n":
                end = text.find(fence[1] + "\n", end + 1)
            if end >= start:
                out[path] = (text[start:end], fence)
                break
    return out


def task_text(message: str, system: str) -> str:
    """A user message without the reminder aider appends to the latest one (the system prompt's
    closing rules: from the first blank line whose every following paragraph is in ``system``)."""
    for m in re.finditer("\n\n", message):
        tail = message[m.end():].strip()
        if tail and tail in system:
            return message[:m.start()]
    return message


def _is_new(edit: Any) -> bool:
    return not isinstance(edit, str) and bool(edit) and not edit[0][0]


def apply_blocks(content: str, blocks: Sequence[Sequence[str]]) -> str:
    """``content`` with each (search, replace) applied once, in order (an empty search appends)."""
    for search, replace in blocks:
        if search and search not in content:
            raise ValueError(f"search text not in the file: {search[:80]!r}")
        content = content.replace(search, replace, 1) if search else content + replace
    return content


def blocks_between(old: str, new: str) -> list[tuple[str, str]]:
    """SEARCH/REPLACE pairs turning ``old`` into ``new``: each changed run of lines with the
    fewest context lines around it that make its search text occur once in ``old``."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    out = []
    for _tag, i1, i2, j1, j2 in (op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
                                 if op[0] != "equal"):
        for n in range(len(a) + 1):
            lo, hi = max(0, i1 - n), min(len(a), i2 + n)
            search = "".join(a[lo:hi])
            if search and old.count(search) == 1:
                break
        out.append((search, "".join(a[lo:i1] + b[j1:j2] + a[i2:hi])))
    return out


def render(fmt: str, path: str, edit: Any, current: tuple[str, tuple[str, str]] | None) -> str:
    """One file's edit as aider's ``fmt`` writes it."""
    old, fence = current if current else ("", FENCES[0])
    if fmt == "whole":
        new = edit if isinstance(edit, str) else apply_blocks(old, edit)
        return f"{path}\n{fence[0]}\n{new}{'' if not new or new.endswith(chr(10)) else chr(10)}{fence[1]}\n"
    blocks = blocks_between(old, edit) if isinstance(edit, str) else [tuple(b) for b in edit]
    out = []
    for search, replace in blocks:
        body = (f"<<<<<<< SEARCH\n{search}{'' if not search or search.endswith(chr(10)) else chr(10)}=======\n"
                f"{replace}{'' if not replace or replace.endswith(chr(10)) else chr(10)}>>>>>>> REPLACE\n")
        out.append(f"{fence[0]}\n{path}\n{body}{fence[1]}\n" if fmt == "diff-fenced"
                   else f"{path}\n{fence[0]}\n{body}{fence[1]}\n")
    return "\n".join(out)


def edits_from_patch(repo: Path, patch: str) -> dict[str, str]:
    """path -> new full content of every file ``patch`` (a git diff) leaves in ``repo``: the
    edit that has the patch's result (``git apply`` in a temporary copy)."""
    with tempfile.TemporaryDirectory(prefix="sealbench-gold-") as tmp:
        work = Path(tmp) / "repo"
        shutil.copytree(repo, work, symlinks=True)
        names = subprocess.run(["git", "apply", "--numstat", "-z", "-"], input=patch.encode(), cwd=work,
                               capture_output=True, check=True).stdout.decode().split("\0")
        subprocess.run(["git", "apply", "--whitespace=nowarn", "-"], input=patch.encode(), cwd=work,
                       capture_output=True, check=True)
        paths = [n.split("\t", 2)[2] for n in names if n.count("\t") >= 2]
        return {p: (work / p).read_text() for p in paths if (work / p).is_file()}


class ScriptedAider(LoopbackServer):
    """The server. Use as a context manager, or ``start()`` / ``close()``."""

    def __init__(self, edits: Sequence[Edit], port: int = 0, final_text: str = FINAL_TEXT) -> None:
        self.edits, self.final_text = [dict(e) for e in edits], final_text
        self.calls: list[dict] = []
        super().__init__(_Handler, port)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def totals(self, kind: str | None = None) -> dict[str, int]:
        """Sums of the reported usage over all calls (of one ``kind`` when given)."""
        calls = [c for c in self.calls if kind is None or c["kind"] == kind]
        return {"prompt_tokens": sum(c["prompt_tokens"] for c in calls),
                "completion_tokens": sum(c["completion_tokens"] for c in calls), "calls": len(calls)}

    def finished(self) -> bool:
        """Whether every scripted edit was sent."""
        return sum(1 for c in self.calls if c["kind"] == "edit") >= len(self.edits)

    def reply(self, body: dict) -> tuple[dict, dict]:
        """(assistant message, usage) for one request; records the call."""
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        system = "".join(fake_llm._text_of(m.get("content")) for m in messages if m.get("role") == "system")
        fmt = edit_format(system)
        turn = sum(1 for m in messages if m.get("role") == "assistant"
                   and EDIT_MARK.match(fake_llm._text_of(m.get("content"))))
        edit = self.edits[turn] if turn < len(self.edits) else {}
        shown = chat_files(messages, list(edit))
        missing = [p for p in edit if p not in shown and not _is_new(edit[p])]
        if fmt is None:
            kind, text = "unsupported", "This server speaks aider's whole, diff and diff-fenced formats only."
        elif not edit:
            kind, text = "final", self.final_text
        elif missing:
            kind, text = "ask", "To make this change I need to edit these files:\n\n" + "\n".join(missing) + "\n"
        else:
            kind = "edit"
            text = f"Edit {turn} of the script.\n\n" + "\n".join(render(fmt, p, e, shown.get(p))
                                                                 for p, e in edit.items())
        usage = {"prompt_tokens": fake_llm.prompt_tokens(messages), "completion_tokens": max(1, len(text) // 4)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        users = [fake_llm._text_of(m.get("content")) for m in messages if m.get("role") == "user"]
        after = next((i + 1 for i, u in enumerate(users) if u.startswith(EXAMPLES_END)), 0)   # past aider's examples
        task = task_text(next((u for u in users[after:] if not u.startswith(AIDER_SAYS)), ""), system)
        with self.lock:
            self.calls.append({"kind": kind, "turn": turn, "format": fmt, "paths": missing if kind == "ask" else
                               list(edit) if kind == "edit" else [], "stream": bool(body.get("stream")),
                               "conversation": hashlib.sha256(task.encode()).hexdigest()[:16], **usage})
        return {"role": "assistant", "content": text}, usage


class _Handler(fake_llm._Handler):
    """fake_llm's chat completions handler (JSON or SSE, usage in both), replying from
    :meth:`ScriptedAider.reply`."""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="sealbench.testing.scripted_aider", description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0, help="0 = a free port")
    ap.add_argument("--script", required=True,
                    help="JSON file: a list of edits, each {path: new content, or [[search, replace], ...]}")
    args = ap.parse_args(argv)
    with open(args.script, encoding="utf-8") as f:
        edits = json.load(f)
    if not isinstance(edits, list) or not all(isinstance(e, dict) for e in edits):
        ap.error("--script must hold a JSON list of objects (path -> content or [[search, replace], ...])")
    fake = ScriptedAider(edits, args.port)
    print(f"scripted_aider: {len(edits)} edits, serving {fake.api_base}", flush=True)
    fake.serve_until_stopped(lambda: print("scripted_aider: reported", json.dumps(fake.totals()), flush=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
