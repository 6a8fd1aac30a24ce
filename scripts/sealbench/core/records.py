"""The three records an attempt's verdict is decided from, typed and versioned.

- :class:`RunRecord`: ``run.json``, what one attempt did (written by ``run_agent``, ``session``,
  ``agent_health``);
- :class:`ScoreRecord`: ``scores/<agent>/<fingerprint>/<epoch>.json``, the attempt's verdict
  (written by ``hidden_score``);
- :class:`ControlsRecord`: ``controls.json``, what the task's controls showed (written by
  ``run_dummy``).

Each class types the fields the verdict (``scoring/verdict.py``) and the stages read; every other
key of the JSON is kept as it was (``extra``), so the JSON keys the tables and tests read do not
change. Each record is written with :data:`SCHEMA_KEY` (its version); a record without one
was written before records were versioned and has the same keys. Reading a record checks the typed
fields: a missing required one, an ill-typed one or an unknown version is a :class:`RecordError`
naming the file and the field, never a default that hides the gap.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from .core import SealbenchError, read_json, write_json

#: The key every record's version is written under.
SCHEMA_KEY = "schema_version"

R = TypeVar("R", bound="_Record")


class RecordError(SealbenchError):
    """A record that cannot be read as its type: the message names the file and the field."""


def _typed(types: tuple[type, ...], required: bool = False) -> Any:
    """A typed field: ``types`` its JSON types (None always allowed when not ``required``)."""
    return field(default=None, metadata={"types": types, "required": required})


def _type_names(types: tuple[type, ...]) -> str:
    return " or ".join(t.__name__ for t in types)


@dataclass
class _Record:
    """Shared reading and writing of the typed records (see the module docstring)."""

    VERSION: ClassVar[int] = 1
    #: what the record is, for messages
    WHAT: ClassVar[str] = "record"
    #: every key of the JSON that is not a typed field, as it was read
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    #: typed fields the JSON had as null (written back as null, not dropped)
    nulls: frozenset[str] = field(default_factory=frozenset, repr=False)

    @classmethod
    def typed_fields(cls) -> list[dataclasses.Field]:
        return [f for f in dataclasses.fields(cls) if "types" in f.metadata]

    @classmethod
    def from_dict(cls: type[R], data: Any, source: str | Path = "<record>") -> R:
        """The record in ``data`` (a parsed JSON object); ``source`` names it in errors."""
        if not isinstance(data, Mapping):
            raise RecordError(f"{source}: a {cls.WHAT} must be a JSON object, not {type(data).__name__}")
        version = data.get(SCHEMA_KEY)
        if version is not None and (isinstance(version, bool) or version != cls.VERSION):
            raise RecordError(f"{source}: field {SCHEMA_KEY!r} is {version!r}; this sealbench reads "
                              f"{cls.WHAT} version {cls.VERSION}")
        values: dict[str, Any] = {}
        for f in cls.typed_fields():
            types, value = f.metadata["types"], data.get(f.name)
            if value is None:
                if f.metadata["required"]:
                    raise RecordError(f"{source}: field {f.name!r} of the {cls.WHAT} is missing")
                continue
            # bool is an int to Python, never to a record
            if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
                raise RecordError(f"{source}: field {f.name!r} of the {cls.WHAT} is {type(value).__name__} "
                                  f"({value!r:.60}), not {_type_names(types)}")
            values[f.name] = value
        names = {f.name for f in cls.typed_fields()}
        extra = {k: v for k, v in data.items() if k not in names and k != SCHEMA_KEY}
        nulls = frozenset(f.name for f in cls.typed_fields() if f.name in data and data[f.name] is None)
        return cls(extra=extra, nulls=nulls, **values)

    @classmethod
    def read(cls: type[R], path: Path | str) -> R:
        """Read the record at ``path`` (errors name the file)."""
        return cls.from_dict(read_json(Path(path)), source=path)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object: every key as read, the typed fields, and the version."""
        out = dict(self.extra)
        for f in self.typed_fields():
            value = getattr(self, f.name)
            if value is not None or f.name in self.nulls:
                out[f.name] = value
        out[SCHEMA_KEY] = self.VERSION
        return out

    def write(self, path: Path | str) -> dict[str, Any]:
        """Write the record to ``path`` (atomically); returns what was written."""
        out = self.to_dict()
        write_json(Path(path), out)
        return out


@dataclass
class RunRecord(_Record):
    """``run.json``: what one attempt did. Only the fields the verdict or the scorer reads are
    typed; none is required here (a score record's copy, or a test's, may have few):
    :meth:`require` names the ones a reader needs."""

    WHAT: ClassVar[str] = "run record"

    task_id: str | None = _typed((str,))
    solver: str | None = _typed((str,))
    fingerprint: str | None = _typed((str,))
    epoch: int | None = _typed((int,))
    role: str | None = _typed((str,))
    #: how the agent's command ended: ``exit``, ``time_box``, ``green``, ``harness_error`` ...
    end_reason: str | None = _typed((str,))
    #: the worker was killed at its clock
    timed_out: bool | None = _typed((bool,))
    time_box_s: float | None = _typed((int, float))
    #: the resource limit the agent's run hit, in words
    limit_hit: str | None = _typed((str,))
    exit_code: int | None = _typed((int,))
    signal: str | None = _typed((str,))
    #: why the workspace could not be taken as a patch (scored as an empty patch)
    patch_error: str | None = _typed((str,))
    #: what the harness could not do (``end_reason`` ``harness_error``)
    error: str | None = _typed((str,))
    #: the agent version was stopped after its first runs all failed at start
    stopped: dict | None = _typed((dict,))

    def require(self, *names: str, source: str | Path = "run.json") -> RunRecord:
        """This record, or a :class:`RecordError` naming the first of ``names`` it lacks."""
        for name in names:
            if getattr(self, name) is None:
                raise RecordError(f"{source}: field {name!r} of the {self.WHAT} is missing")
        return self


@dataclass
class ControlsRecord(_Record):
    """``controls.json``: what the task's controls (the gold patch, the stub, the empty patch)
    showed. Typed: what scoring an agent's patch reads."""

    WHAT: ClassVar[str] = "controls record"

    task_id: str | None = _typed((str,))
    #: a control could not be scored (the harness or the task is broken)
    control_infra_fail: bool | None = _typed((bool,))
    #: modules every control's tests could not import (``collection.py``)
    missing_modules: list | None = _typed((list,))
    #: each control's row (solver, epoch, status ...)
    results: list | None = _typed((list,))
    #: hidden tests the gold patch ran
    oracle_hidden_ran: int | None = _typed((int,))
    #: the test ids the gold patch's runs collected, per command
    oracle_ids: dict | None = _typed((dict,))
    #: a package under test the controls imported from outside the workspace
    import_outside: str | None = _typed((str,))

    def infra_hit(self) -> list[str]:
        """The controls that hit ``infra_fail``, as ``solver#epoch``."""
        return sorted({f"{r.get('solver')}#{r.get('epoch')}" for r in self.results or []
                       if isinstance(r, Mapping) and r.get("status") == "infra_fail"})


@dataclass
class ScoreRecord(_Record):
    """The score record of one attempt (``hidden_score``): its verdict and what it rests on."""

    WHAT: ClassVar[str] = "score record"

    task_id: str | None = _typed((str,), required=True)
    solver: str | None = _typed((str,), required=True)
    fingerprint: str | None = _typed((str,), required=True)
    epoch: int | None = _typed((int,), required=True)
    status: str | None = _typed((str,), required=True)
    reason: str | None = _typed((str,))
    #: the verdict table's rule that decided (``scoring/verdict.py``); absent in older records
    rule: str | None = _typed((str,))
    visible_pass: bool | None = _typed((bool,))
    hidden_pass: bool | None = _typed((bool,))
    #: the attempt's run record, as hidden_score read it
    run: dict | None = _typed((dict,), required=True)

    def run_record(self, source: str | Path = "<score record>") -> RunRecord:
        """The run record inside, typed (errors name ``source`` and ``run``)."""
        return RunRecord.from_dict(self.run or {}, source=f"{source}: run")



def write_record(cls: type[_Record], path: Path | str, data: Mapping[str, Any]) -> dict[str, Any]:
    """Check ``data`` as a ``cls`` record and write it to ``path`` with its version; returns what
    was written. The writers of run.json and controls.json go through here."""
    return cls.from_dict(data, source=path).write(path)
