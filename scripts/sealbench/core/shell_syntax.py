"""The shell grammar an agent's command is read with: which words bash runs as commands.

:func:`shell_events` splits a command the way bash does (``shlex`` with punctuation characters,
newlines kept as separators, ``\\``-newline joined, here-document bodies left out) and labels
each token with its part in bash's grammar, so that a reader of the command
(:class:`sealbench.provenance.identity._Coverage`) meets only the words of simple commands:

* reserved words at a command's start (``if then else elif fi do done while until for select
  case esac { } ! time function``) are not commands; after ``then``/``do``/``{``/``!`` … a
  command follows, after ``fi``/``done``/``esac``/``}`` none does;
* ``case WORD in PATTERN|PATTERN) … ;; esac``: the subject and the patterns are not commands;
  each branch's words carry the branch (``branch``), since which one runs is known only at run
  time;
* ``for NAME in WORDS; do``: NAME is not a command and WORDS are arguments; ``((…))``,
  ``$((…))`` and ``[[…]]`` hold expressions, not commands;
* ``NAME() {…}`` and ``function NAME {…}`` define NAME (listed in ``functions``): neither the
  definition nor a call runs a file;
* ``$(…)`` runs a command; after its ``)`` the enclosing command's arguments go on.

Anything else is a word (``word``), an operator after which a command follows (``sep``), or a
redirection operator (``redirect``). Syntax this reader does not follow is never a reason to
refuse a command; ``bash -n`` (see :mod:`sealbench.agent.agent_probe`) is the check of the syntax.
"""

from __future__ import annotations

import itertools
import re
import shlex
from dataclasses import dataclass, field

#: Characters that make up shell operators (a newline separates commands like ``;``).
OPERATOR_CHARS = frozenset(";&|()<>\n")
_OPERATOR = re.compile(r";;&|;;|;&|&&|\|\||\|&|\(\(|\)\)|\(\)|&>>|&>|>>|<<<|<<-|<<|<&|>&|<>|>\||[;&|()<>\n]")
#: Reserved words after which a command follows.
_OPENERS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "{", "!", "time"})
#: Reserved words that end a compound command: no command follows them directly.
_CLOSERS = frozenset({"fi", "done", "esac", "}"})
_CASE_ENDS = frozenset({";;", ";&", ";;&"})
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]*$")
_HEREDOC = re.compile(r"<<(-?)[ \t]*(['\"]?)([A-Za-z0-9_.-]+)\2")


@dataclass(frozen=True)
class Event:
    """One token of the command: ``token`` (quotes removed), ``kind`` — ``word``, ``sep`` (a
    command follows), ``redirect``, ``open`` (a reserved word after which a command follows),
    ``close`` (a reserved word — ``fi``, ``done``, ``for`` … — or the ``)`` of ``$(…)``, after
    which no command follows directly) or
    ``skip`` (not a command nor an argument: a case pattern, a loop's variable, an expression) —
    and ``branch``, the case branches it is inside: ((case id, branch number), …), outermost first."""

    token: str
    kind: str
    branch: tuple[tuple[int, int], ...] = ()


@dataclass
class Parse:
    events: list[Event] = field(default_factory=list)
    functions: set[str] = field(default_factory=set)


def _without_heredocs(command: str) -> str:
    """``command`` with each here-document's body (the lines after ``<<WORD`` up to WORD) left out."""
    out, pos = [], 0
    for m in _HEREDOC.finditer(command):
        if m.start() < pos or command[m.start():m.start() + 3] == "<<<":
            continue
        nl = command.find("\n", m.end())
        if nl < 0:
            break
        delim, strip_tabs = m.group(3), m.group(1) == "-"
        end, i = len(command), nl + 1
        while i <= len(command):
            j = command.find("\n", i)
            line = command[i:] if j < 0 else command[i:j]
            if (line.lstrip("\t") if strip_tabs else line) == delim:
                end = len(command) if j < 0 else j
                break
            if j < 0:
                break
            i = j + 1
        out.append(command[pos:nl])
        pos = end
    out.append(command[pos:])
    return "".join(out)


def shell_tokens(command: str) -> list[str]:
    """The command's words and operators as bash splits them (quotes removed, newlines kept as
    ``\\n`` operators). Shell syntax shlex cannot follow (an unbalanced quote) falls back to
    splitting on whitespace and operators, quotes stripped from the ends of each word."""
    text = _without_heredocs(command.replace("\\\n", ""))
    lex = shlex.shlex(text, posix=True, punctuation_chars="".join(sorted(OPERATOR_CHARS)))
    lex.whitespace_split = True
    lex.whitespace = " \t\r"
    try:
        raw = list(lex)
    except ValueError:
        raw = [w.strip("'\"") for w in re.findall(r"[^\s;&|()<>]+|[;&|()<>\n]+", text)]
    out: list[str] = []
    for t in raw:
        if t and set(t) <= OPERATOR_CHARS:
            out += _OPERATOR.findall(t)
        else:
            out.append(t)
    return out


def shell_events(command: str) -> Parse:
    """Each token of ``command`` with its part in bash's grammar (see the module's docstring)."""
    tokens = shell_tokens(command)
    parse = Parse()
    stack: list[dict] = []  # open constructs: case, for, ((, [[, $(, (
    ids = itertools.count()
    at_cmd = True  # the next word starts a command (reserved words are recognized only there)
    i = 0

    def emit(tok: str, kind: str) -> None:
        branch = tuple((f["id"], f["branch"]) for f in stack if f["kind"] == "case" and f["phase"] == "body")
        parse.events.append(Event(tok, kind, branch))

    while i < len(tokens):
        t = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        top = stack[-1] if stack else {"kind": None}
        i += 1
        if top["kind"] in ("((", "[["):  # an expression: nothing in it runs
            if t == top["kind"]:
                stack.append({"kind": t})
            elif t == ("))" if top["kind"] == "((" else "]]"):
                stack.pop()
                at_cmd = False
            emit(t, "skip")
            continue
        if t == "((" or (at_cmd and t == "[["):
            if top["kind"] == "for" and top["phase"] == "name":
                top["phase"] = "list"  # for ((…; …; …)); do
            stack.append({"kind": t})
            emit(t, "skip")
            continue
        if t == "))":  # not an expression's end: two closing parentheses
            tokens[i:i] = [")", ")"]
            continue
        if top["kind"] == "case" and top["phase"] != "body":
            if top["phase"] == "subject":
                top["phase"] = "in"
            elif top["phase"] == "in":
                if t == "in":
                    top["phase"] = "pattern"
            elif t == "esac":
                stack.pop()
                emit(t, "close")
                at_cmd = False
                continue
            elif t == ")":
                top["phase"], top["branch"] = "body", top["branch"] + 1
                emit(t, "open")  # the branch's commands follow
                at_cmd = True
                continue
            emit(t, "skip")
            continue
        if top["kind"] == "case" and (t in _CASE_ENDS or (at_cmd and t == "esac")):
            if t == "esac":
                stack.pop()
                emit(t, "close")
                at_cmd = False
            else:
                top["phase"] = "pattern"
                emit(t, "sep")
            continue
        if top["kind"] == "for":
            if top["phase"] == "name":
                top["phase"] = "list"
                emit(t, "skip")
            elif t == "do" and top["sep"]:
                stack.pop()
                emit(t, "open")
                at_cmd = True
            elif t in (";", "\n") or (t == "in" and not top["words"]):
                top["sep"] = top["sep"] or t != "in"
                emit(t, "skip")
            else:
                top["words"] = True
                emit(t, "word")
            continue
        if t and set(t) <= OPERATOR_CHARS:
            if t == "(" and parse.events and parse.events[-1].kind == "word" and parse.events[-1].token.endswith("$"):
                stack.append({"kind": "$("})
                emit(t, "sep")
                at_cmd = True
            elif t == "(":
                stack.append({"kind": "("})
                emit(t, "sep")
                at_cmd = True
            elif t == ")" and top["kind"] in ("$(", "("):
                stack.pop()
                emit(t, "close" if top["kind"] == "$(" else "sep")
                at_cmd = top["kind"] == "("
            elif "<" in t or ">" in t:
                emit(t, "redirect")
                at_cmd = False
            else:
                emit(t, "sep")
                at_cmd = True
            continue
        if at_cmd:
            if nxt == "()" or (nxt == "(" and i + 1 < len(tokens) and tokens[i + 1] == ")"):
                parse.functions.add(t)  # NAME() { …; }: a definition, nothing runs
                i += 1 if nxt == "()" else 2
                emit(t, "skip")
                continue
            if t == "function" and nxt is not None and _NAME.match(nxt):
                parse.functions.add(nxt)
                i += 1
                if i < len(tokens) and tokens[i] == "()":
                    i += 1
                emit(t, "skip")
                continue
            if t == "case":
                stack.append({"kind": "case", "phase": "subject", "id": next(ids), "branch": -1})
                emit(t, "skip")
                continue
            if t in ("for", "select"):
                stack.append({"kind": "for", "phase": "name", "sep": False, "words": False})
                emit(t, "close")  # its words are arguments, not commands
                continue
            if t in _OPENERS:
                emit(t, "open")
                continue
            if t in _CLOSERS:
                emit(t, "close")
                at_cmd = False
                continue
        emit(t, "word")
        at_cmd = False
    return parse


def runtime_word(word: str) -> bool:
    """Whether the shell makes ``word`` at run time (``$`` expansions, backquotes, a filename
    pattern): what it names cannot be known before the run, so it is never refused."""
    return "$" in word or "`" in word or (word not in ("[", "[[") and any(c in word for c in "*?["))
