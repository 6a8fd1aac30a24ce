"""How an agent's command runs in the sandbox: the files and folders its words name (found the
way :mod:`sealbench.provenance.identity` finds them for the fingerprint) mounted read-only at the same
absolute path, and relative words rewritten to those absolute paths, since the agent's working
folder is its workspace (``command: agents/my_agent.py`` just works).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..provenance.identity import _PUNCT, NamedPath, _Coverage


@dataclass(frozen=True)
class CommandPlan:
    """What running an agent's command needs (:func:`command_plan`): the files and folders its
    words name, the command with those words made absolute, and its first command."""

    command: str
    base: str
    named: tuple[NamedPath, ...]
    #: the first command the shell runs, builtins aside: ``word`` (as written), ``path`` (where it
    #: was found here, or None), ``python`` (whether it is a Python), ``script``/``script_path``
    #: (the script that Python runs) and ``module`` (``-m``); None when the command runs builtins only
    first: Mapping[str, Any] | None
    #: the commands one of which runs first, like ``first``: ``first`` and, when it is in a
    #: ``case`` branch, the first command of each other branch (``_Coverage.entries``)
    entries: tuple[Mapping[str, Any], ...] = ()

    def without(self, drop: Callable[[NamedPath], bool]) -> CommandPlan:
        """The plan without the named paths ``drop`` selects: neither mounted nor rewritten."""
        return replace(self, named=tuple(n for n in self.named if not drop(n)))

    @property
    def mounts(self) -> tuple[Path, ...]:
        """The paths to make readable in the sandbox, at the same absolute paths."""
        out: list[Path] = []
        for n in self.named:
            if Path(n.path) not in out:
                out.append(Path(n.path))
        return tuple(out)

    def command_for(self, workspace: Path | str | None = None) -> str:
        """The command as the sandbox runs it: every relative word naming a covered file or folder
        made absolute. An argument word that also names a path in ``workspace`` is left as written
        (the agent meant the task's file); the command word and Python's script never are."""
        swap: dict[str, str] = {}
        for n in self.named:
            if not n.relative or n.word in swap:
                continue
            if (n.role == "argument" and workspace is not None and not n.cand.startswith("~")
                    and os.path.lexists(os.path.join(workspace, n.cand))):
                continue
            swap[n.word] = n.replacement()
        return rewrite_words(self.command, swap) if swap else self.command


def _word_spans(command: str) -> list[tuple[int, int, str]]:
    """(start, end, value) of each word of ``command`` as the shell splits it (quotes removed;
    operators, comments and anything after an unbalanced quote left out)."""
    out: list[tuple[int, int, str]] = []
    i, n = 0, len(command)
    while i < n:
        c = command[i]
        if c.isspace() or c in _PUNCT:
            i += 1
            continue
        if c == "#":  # a comment, to the end of the line
            j = command.find("\n", i)
            i = n if j < 0 else j
            continue
        start, value = i, []
        while i < n and not (command[i].isspace() or command[i] in _PUNCT):
            c = command[i]
            if c == "'":
                j = command.find("'", i + 1)
                if j < 0:
                    return out
                value.append(command[i + 1:j])
                i = j + 1
            elif c == '"':
                i += 1
                while i < n and command[i] != '"':
                    if command[i] == "\\" and i + 1 < n and command[i + 1] in '"\\$`\n':
                        value.append(command[i + 1])
                        i += 2
                    else:
                        value.append(command[i])
                        i += 1
                if i >= n:
                    return out
                i += 1
            elif c == "\\" and i + 1 < n:
                value.append(command[i + 1])
                i += 2
            else:
                value.append(c)
                i += 1
        out.append((start, i, "".join(value)))
    return out


def rewrite_words(command: str, swap: Mapping[str, str]) -> str:
    """``command`` with each word whose value is a key of ``swap`` replaced by its value (already
    quoted for the shell); everything else — quoting, operators, spacing — kept as written."""
    parts, last = [], 0
    for start, end, value in _word_spans(command):
        if value in swap:
            parts += [command[last:start], swap[value]]
            last = end
    return "".join(parts) + command[last:]


def command_plan(name: str, spec: Mapping[str, Any], base: Path | str | None = None) -> CommandPlan:
    """The files and folders ``spec``'s command names, resolved exactly as :func:`agent_identity`
    resolves them from ``base`` (default: the working directory) but without hashing, and its
    first command. Modules of ``python -m`` are not listed (they are found on Python's path)."""
    base = Path(os.path.abspath(base if base is not None else Path.cwd()))
    cov = _Coverage(name, spec, base, None, hash_files=False)
    cov.add_module = lambda module, token: None  # type: ignore[method-assign]  # found by Python, not mounted
    cov.add_command(spec["command"])
    entries = tuple(dict(e) for e in cov.entries())
    return CommandPlan(command=spec["command"], base=str(base), named=tuple(cov.named),
                       first=entries[0] if entries else None, entries=entries)


