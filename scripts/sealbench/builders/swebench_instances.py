"""SWE-bench-style instances read and checked (``sealbench pack import-swebench``, docs/packs.md).

An instances file is JSON Lines, one object per line, with the fields of the SWE-bench
datasets: ``instance_id``, ``repo`` (``owner/name``), ``base_commit``, ``patch``,
``test_patch``, ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` (lists of pytest node ids, or JSON text of
such a list as the datasets store them), ``problem_statement``; optional ``version``,
``created_at`` and ``hints_text`` (read, never shown to anyone). Other keys are ignored.

:func:`read_instances` checks every line before any work and raises one error listing every
problem, each naming the file, the line and the field. :func:`test_id_problem` says why a test
id cannot be run by pytest at a repository path.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..core.core import SealbenchError

#: Required fields and their JSON types ("ids": a list of strings, or JSON text of one).
REQUIRED = {"instance_id": str, "repo": str, "base_commit": str, "patch": str, "test_patch": str,
            "FAIL_TO_PASS": "ids", "PASS_TO_PASS": "ids", "problem_statement": str}
OPTIONAL = {"version": str, "created_at": str, "hints_text": str}
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.][A-Za-z0-9_.-]*$")
_SHA = re.compile(r"^[0-9a-fA-F]{7,64}$")


class InstancesError(SealbenchError):
    """The instances file cannot be imported; the message lists every problem, by line and field."""


@dataclass(frozen=True)
class Instance:
    """One instance, checked."""

    instance_id: str
    repo: str
    base_commit: str
    patch: str
    test_patch: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    problem_statement: str
    version: str | None
    created_at: str | None
    line: int

    @property
    def env_name(self) -> str:
        """The environment this instance's repository and version run in."""
        owner, name = self.repo.split("/", 1)
        return f"{owner}__{name}-{self.version or 'base'}"


def _ids(value: object) -> tuple[tuple[str, ...] | None, str | None]:
    """A list of test ids from a list or from JSON text of one; (ids, None) or (None, why)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            return None, f"a string that is not JSON text of a list ({exc.msg})"
    if not isinstance(value, list):
        return None, f"must be a list of test ids (or JSON text of one), not {type(value).__name__}"
    bad = [v for v in value if not isinstance(v, str) or not v.strip()]
    if bad:
        return None, f"every test id must be a non-empty string ({bad[0]!r} is not)"
    if len(set(value)) != len(value):
        dup = sorted({v for v in value if value.count(v) > 1})
        return None, f"repeats test ids: {dup}"
    return tuple(value), None


def _line_problems(obj: object) -> tuple[dict, list[str]]:
    """The fields of one parsed line, and its problems as "field 'x': why"."""
    if not isinstance(obj, dict):
        return {}, [f"must be a JSON object, not {type(obj).__name__}"]
    out, probs = {}, []
    for key, typ in {**REQUIRED, **OPTIONAL}.items():
        if key not in obj or (key in OPTIONAL and obj[key] is None):
            if key in REQUIRED:
                probs.append(f"field '{key}': missing")
            continue
        value = obj[key]
        if typ == "ids":
            value, why = _ids(value)
            if why:
                probs.append(f"field '{key}': {why}")
                continue
        elif not isinstance(value, typ):
            probs.append(f"field '{key}': must be a string, not {type(value).__name__}")
            continue
        out[key] = value
    checks = (("instance_id", _ID, "must be letters, digits, '_', '.', '-' (it becomes the task folder's name)"),
              ("repo", _REPO, "must be 'owner/name'"),
              ("base_commit", _SHA, "must be a commit id (hex)"))
    for key, rx, why in checks:
        if key in out and not rx.match(out[key]):
            probs.append(f"field '{key}': {out[key]!r} {why}")
    for key in ("patch", "test_patch", "problem_statement"):
        if key in out and not out[key].strip():
            probs.append(f"field '{key}': empty")
    if "FAIL_TO_PASS" in out and not out["FAIL_TO_PASS"]:
        probs.append("field 'FAIL_TO_PASS': empty (the hidden tests must fail before the fix)")
    if "FAIL_TO_PASS" in out and "PASS_TO_PASS" in out:
        both = sorted(set(out["FAIL_TO_PASS"]) & set(out["PASS_TO_PASS"]))
        if both:
            probs.append(f"field 'PASS_TO_PASS': also in FAIL_TO_PASS: {both}")
    return out, probs


def read_instances(path: Path) -> list[Instance]:
    """Every instance of a JSON Lines file, or :class:`InstancesError` listing every problem."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise InstancesError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    except UnicodeDecodeError as exc:
        raise InstancesError(f"{path}: not UTF-8 text ({exc})") from exc
    problems, out, seen = [], [], {}
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            problems.append(f"{path}: line {n}: not valid JSON (column {exc.colno}: {exc.msg})")
            continue
        fields, probs = _line_problems(obj)
        problems += [f"{path}: line {n}: {p}" for p in probs]
        iid = fields.get("instance_id")
        if iid is not None:
            if iid in seen:
                problems.append(f"{path}: line {n}: field 'instance_id': {iid!r} repeats line {seen[iid]}")
            seen.setdefault(iid, n)
        if probs:
            continue
        out.append(Instance(fields["instance_id"], fields["repo"], fields["base_commit"], fields["patch"],
                            fields["test_patch"], fields["FAIL_TO_PASS"], fields["PASS_TO_PASS"],
                            fields["problem_statement"], fields.get("version"), fields.get("created_at"), n))
    if not problems and not out:
        problems.append(f"{path}: holds no instances (one JSON object per line)")
    if problems:
        raise InstancesError("the instances cannot be imported; nothing was written:\n  " + "\n  ".join(problems))
    return out


def test_file(test_id: str) -> str:
    """The repository path of a pytest node id (``t/test_x.py::test_a[p]`` -> ``t/test_x.py``)."""
    return test_id.split("::", 1)[0]


def test_id_problem(test_id: str, files: set[str]) -> str | None:
    """Why ``test_id`` is not a pytest node id of one of ``files`` (repository paths), or None."""
    path = test_file(test_id)
    if "::" not in test_id and not path.endswith(".py"):
        return (f"test id {test_id!r} is not a pytest node id ('path/to/test_file.py::test_name'); "
                "sealbench runs the hidden tests with pytest")
    if not path.endswith(".py") or path.startswith("/") or ".." in path.split("/"):
        return f"test id {test_id!r}: {path!r} is not a relative path of a .py file"
    if path not in files:
        return f"test id {test_id!r}: {path} is not in the repository at the base commit with the test_patch applied"
    return None


def test_defined(test_id: str, source: str) -> bool:
    """Whether the test (or the class) a node id names is defined in ``source``."""
    names = [part.split("[", 1)[0] for part in test_id.split("::")[1:]]
    return all(re.search(rf"^\s*(?:async\s+)?(?:def|class)\s+{re.escape(name)}\b", source, re.M)
               for name in names)
