"""The configuration: its defaults, its validation, and where it comes from.

One place defines the keys and their defaults: ``workflow/schemas/config.schema.yaml``
(:func:`config_defaults`). :func:`validate_config` checks a config against it and against the
rules that join fields (candidate and baseline exist, mde against ψ, the pack exists) and
names every problem with its field.

A config is assembled the way Snakemake assembles it (:func:`sealbench.core.config_sources.effective_config`,
used by the ``sealbench`` commands so they see the config a run sees): the workflow's
``config/config.yaml``, then each ``--configfile`` merged over it key by key (nested mappings
merged, as Snakemake merges them; ``--replace-workflow-config`` starts from the file instead),
then each ``--config KEY=VALUE``. Snakemake reads a value like ``'envelope={max_wall_s: 5}'``
as text, so :func:`coerce_by_schema` turns such strings into the number, boolean or null the
schema asks for, and nothing else.

Which agents run: the candidate, the baseline and the agents named in ``extra_agents``
(:func:`agents_to_run`) — not every entry under ``agents`` (a ``--configfile`` merged over the
workflow's config keeps its agents in the mapping; they are defined, not run).
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from .core import CONTROLS, ConfigError, _parsed_schema, canonical_json, schema_errors, sha256_text

#: The config file the Snakefile names (``configfile:``), relative to the project folder.
WORKFLOW_CONFIG = Path("config/config.yaml")


def config_defaults() -> dict[str, Any]:
    """The config's defaults, read from ``config.schema.yaml`` — the one place they are defined
    (each top-level property's ``default``)."""
    props = _parsed_schema("config.schema.yaml").get("properties", {})
    return {key: copy.deepcopy(p["default"]) for key, p in props.items() if isinstance(p, dict) and "default" in p}


def validate_config(config: Mapping[str, Any], where: str = "config") -> dict:
    """Validate a config mapping against ``config.schema.yaml`` and its cross-field rules.

    Returns a copy with defaults filled in. Raises :class:`ConfigError` listing every problem.
    """
    defaults = config_defaults()
    cfg = {**defaults, **coerce_by_schema(dict(config), _parsed_schema("config.schema.yaml"))}
    if isinstance(cfg.get("limits"), Mapping):  # a key left out keeps its default
        cfg["limits"] = {**defaults["limits"], **cfg["limits"]}
    errors = schema_errors(cfg, _parsed_schema("config.schema.yaml"), where)
    if not errors:
        agents = cfg["agents"]
        for key in ("candidate", "baseline"):
            name = cfg[key]
            if name not in agents and name not in CONTROLS and name not in cfg["humans"]:
                errors.append(
                    f"{where}: field '{key}': '{name}' is neither an agent in 'agents' "
                    f"({', '.join(sorted(agents)) or 'none'}), a person in 'humans', nor a control ({', '.join(CONTROLS)})"
                )
        if cfg["candidate"] in CONTROLS:
            errors.append(f"{where}: field 'candidate': a control ('{cfg['candidate']}') cannot be the candidate")
        if cfg["candidate"] == cfg["baseline"]:
            errors.append(f"{where}: fields 'candidate' and 'baseline' name the same solver")
        for who in cfg["humans"]:
            if who in agents or who in CONTROLS:
                errors.append(f"{where}: field 'humans': '{who}' is already an agent or control name")
        for name in cfg["extra_agents"]:
            if name not in agents:
                errors.append(f"{where}: field 'extra_agents': '{name}' is not an agent in 'agents' "
                              f"({', '.join(sorted(agents)) or 'none'})")
        for name in agents:
            if name in CONTROLS:
                errors.append(f"{where}: field 'agents.{name}': '{name}' is reserved for a control solver")
        pub = cfg.get("public_results")
        if pub is not None and not (Path(pub) / "decision.json").is_file():
            errors.append(f"{where}: field 'public_results': '{pub}' holds no decision.json "
                          "(point it at a finished results/experiments/<id> folder)")
        mde, psi = cfg["mde"], cfg["planning_discordance"]
        if psi <= mde**2:  # the rule of power._check_mde_psi: the paired variance psi - mde^2 must be > 0
            errors.append(
                f"{where}: fields 'mde' ({mde:g}) and 'planning_discordance' ({psi:g}) are impossible together: "
                f"the required number of tasks needs ψ > mde² (planning_discordance > {mde**2:.4g}). Raise "
                f"planning_discordance above {mde**2:.4g}, or lower mde below √ψ = {math.sqrt(psi):.4g}")
        pack = Path(str(cfg["pack"]))
        if not pack.exists():
            errors.append(f"{where}: field 'pack': '{pack}' does not exist")
        elif not (pack / "tasks").is_dir():
            errors.append(f"{where}: field 'pack': '{pack}' has no tasks/ folder (see docs/contract.md §1)")
    if errors:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(errors))
    return cfg


def load_config_file(path: Path) -> dict:
    """One complete config file, validated (as ``snakemake --configfile F --replace-workflow-config``)."""
    return validate_config(_read_mapping(Path(path)), where=str(path))


def envelope_digest(cfg: Mapping[str, Any]) -> str:
    return sha256_text(canonical_json({"envelope": cfg["envelope"], "health": cfg["health"]}))


_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?")


def _types(schema: Mapping[str, Any]) -> set[str]:
    t = schema.get("type")
    return set(t) if isinstance(t, list) else {t} if t else set()


def coerce_by_schema(value: Any, schema: Mapping[str, Any]) -> Any:
    """``value`` with each string the schema does not allow as a string turned into the number,
    boolean or null it spells (``"5"`` -> 5 where an integer is asked); anything else unchanged,
    so a wrong value still fails validation with its field named."""
    types = _types(schema)
    if isinstance(value, Mapping):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        out = {}
        for k, v in value.items():
            sub = props.get(k) if k in props else (extra if isinstance(extra, Mapping) else None)
            out[k] = coerce_by_schema(v, sub) if sub else v
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [coerce_by_schema(v, schema["items"]) for v in value]
    if not isinstance(value, str) or "string" in types or not types:
        return value
    text = value.strip()
    if "integer" in types and _INT.fullmatch(text):
        return int(text)
    if "number" in types and _FLOAT.fullmatch(text):
        number = float(text)
        return int(number) if _INT.fullmatch(text) else number
    if "boolean" in types and text in ("true", "false", "True", "False"):
        return text in ("true", "True")
    if "null" in types and text in ("null", "~", "None", ""):
        return None
    return value


def _read_mapping(path: Path) -> dict:
    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror}); run from the project folder or give "
                          "--configfile with its path") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must be a mapping of keys to values")
    return data


def agents_to_run(cfg: Mapping[str, Any]) -> list[str]:
    """The agents a run schedules: the candidate and the baseline when they are agents, and
    ``extra_agents``; other entries under ``agents`` are defined, not run."""
    names = [cfg["candidate"], cfg["baseline"], *cfg.get("extra_agents", [])]
    return sorted({n for n in names if n in cfg["agents"]})
