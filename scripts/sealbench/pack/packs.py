"""Reading a pack: its tasks, each ``meta.json`` validated against the pack contract
(docs/contract.md §1). Errors name the file and the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..core.core import TASK_DIRS, TASK_FILES, PackError, _parsed_schema, _schema_text, schema_errors, sha256_text
from ..isolation.environments import EnvSpec, declared_env
from .task_layout import layout_errors


@dataclass(frozen=True)
class Task:
    """One task of a pack, as read from ``meta.json`` (validated)."""

    id: str
    dir: Path
    meta: dict
    #: the test environment its commands run in (environments.declared_env; None: sealbench's interpreter)
    env: EnvSpec | None = None

    @property
    def stratum(self) -> str:
        return self.meta["stratum"]


def validate_meta(meta_path: Path, strata: Iterable[str] | None = None, schema_ok: set[str] | None = None) -> dict:
    """Read and validate one ``meta.json``; raise :class:`PackError` naming file and field.

    ``schema_ok``: digests of meta.json texts that already passed the schema (with this very
    schema); such a text skips the jsonschema pass, every other check still runs. Texts that
    pass are added to it."""
    meta_path = Path(meta_path)
    task_dir = meta_path.parent
    if not meta_path.is_file():
        raise PackError(f"{meta_path}: missing (every task needs a meta.json)")
    try:
        raw = meta_path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PackError(f"{meta_path}: not UTF-8 text ({exc})") from exc
    try:
        meta = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise PackError(f"{meta_path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from exc
    if not isinstance(meta, dict):
        raise PackError(f"{meta_path}: must be a JSON object")
    key = sha256_text(_schema_text("meta.schema.yaml") + "\0" + raw) if schema_ok is not None else None
    if key is not None and key in schema_ok:
        errors = []
    else:
        errors = schema_errors(meta, _parsed_schema("meta.schema.yaml"), str(meta_path))
        if key is not None and not errors:
            schema_ok.add(key)
    if not errors:
        if "\n" in meta["title"] or "\r" in meta["title"]:
            errors.append(f"{meta_path}: field 'title': must be one line (it contains a line break)")
        if meta["id"] != task_dir.name:
            errors.append(f"{meta_path}: field 'id': '{meta['id']}' does not equal the folder name '{task_dir.name}'")
        strata = list(strata) if strata is not None else None
        if strata is not None and meta["stratum"] not in strata:
            errors.append(
                f"{meta_path}: field 'stratum': '{meta['stratum']}' is not one of the configured strata "
                f"({', '.join(strata)}); add it to 'strata' in the config or fix the task"
            )
    for name in TASK_FILES + TASK_DIRS:
        p = task_dir / name
        if p.is_symlink():
            errors.append(f"{p}: is a symlink; a pack must contain plain files and folders only")
        elif name in TASK_FILES and not p.is_file():
            errors.append(f"{p}: missing (required by the pack contract)")
        elif name in TASK_DIRS and not p.is_dir():
            errors.append(f"{p}/: missing folder (required by the pack contract)")
    if not errors:
        errors += layout_errors(meta_path, meta)
    prompt = task_dir / "prompt.md"
    if prompt.is_file():
        try:
            prompt.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            errors.append(f"{prompt}: not UTF-8 text ({exc})")
    if errors:
        raise PackError("invalid task:\n  " + "\n  ".join(errors))
    return meta


def load_pack(pack: Path, strata: Iterable[str] | None = None, schema_ok: set[str] | None = None) -> list[Task]:
    """All tasks of a pack, validated, sorted by id. Raises :class:`PackError` on any problem.
    ``schema_ok``: see :func:`validate_meta`."""
    pack = Path(pack)
    tasks_dir = pack / "tasks"
    if not tasks_dir.is_dir():
        raise PackError(f"{tasks_dir}: missing (a pack holds its tasks in tasks/<task_id>/)")
    errors: list[str] = []
    tasks: list[Task] = []
    for child in sorted(tasks_dir.iterdir()):
        if child.name.startswith("."):
            continue
        if child.is_symlink():
            errors.append(f"{child}: is a symlink; tasks/ may only hold plain task folders")
            continue
        if not child.is_dir():
            errors.append(f"{child}: not a task folder (tasks/ may only hold task folders)")
            continue
        try:
            meta = validate_meta(child / "meta.json", strata, schema_ok)
            env = declared_env(pack, meta)
        except PackError as exc:
            errors.append(str(exc))
            continue
        tasks.append(Task(child.name, child, meta, env))
    if not tasks and not errors:
        errors.append(f"{tasks_dir}: holds no tasks")
    if errors:
        raise PackError("\n".join(errors))
    return tasks


