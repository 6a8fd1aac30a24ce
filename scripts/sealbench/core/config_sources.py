"""Where the ``sealbench`` commands' config comes from: assembled as Snakemake assembles it.

Kept apart from :mod:`sealbench.core.configuration` because it uses Snakemake's own parser and merge
(so the semantics are Snakemake's, not a copy): the stages import the configuration module,
and the workflow engine is no part of what a score depends on (:mod:`sealbench.isolation.toolchain`).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .configuration import WORKFLOW_CONFIG, _read_mapping, validate_config
from .core import ConfigError


def effective_config(configfiles: Iterable[Path] = (), overrides: Iterable[str] = (),
                     replace_workflow_config: bool = False) -> tuple[dict, str]:
    """The config a ``snakemake`` run in this folder with the same ``--configfile``/``--config``
    arguments sees, validated, and where it came from (for messages). As Snakemake does: the
    workflow's ``config/config.yaml`` (relative to the working folder; skipped when absent and
    other config is given), each ``--configfile`` merged over it (nested mappings merged), then
    the ``--config`` entries; ``--replace-workflow-config`` drops the workflow's file."""
    from snakemake.cli import parse_config
    from snakemake.utils import update_config

    files = [Path(f) for f in configfiles]
    entries = list(overrides)
    if not replace_workflow_config and WORKFLOW_CONFIG.exists():
        files.insert(0, WORKFLOW_CONFIG)
    if not files and not entries:
        raise ConfigError(f"no config: {WORKFLOW_CONFIG} is not in {Path.cwd()}; run from the project folder, or "
                          "give --configfile FILE (and --config KEY=VALUE) as you would to snakemake")
    raw: dict[str, Any] = {}
    for f in files:
        update_config(raw, _read_mapping(f))
    if entries:
        try:
            update_config(raw, parse_config(entries))
        except ValueError as exc:
            raise ConfigError(f"--config {' '.join(entries)}: {exc} (a nested key: --config "
                              "'envelope={max_wall_s: 5}', or a --configfile holding only that key)") from exc
    where = "config (" + " + ".join(str(f) for f in files) + (" + --config" if entries else "") + ")"
    return validate_config(raw, where=where), where


def add_config_args(p: argparse.ArgumentParser) -> None:
    """The config arguments snakemake takes, with the same meaning (docs/configuration.md)."""
    p.add_argument("--configfile", type=Path, action="append", default=[], metavar="FILE",
                   help="as snakemake --configfile: merged over config/config.yaml (repeatable)")
    p.add_argument("--config", nargs="+", default=[], metavar="KEY=VALUE",
                   help="as snakemake --config; a nested key: --config 'envelope={max_wall_s: 5}'")
    p.add_argument("--replace-workflow-config", action="store_true",
                   help="as snakemake: the --configfile files replace config/config.yaml instead of merging over it")


def config_of(args: argparse.Namespace) -> dict:
    """The config a snakemake run with these arguments sees (validated). ``--config FILE`` (no
    ``=``, an existing file: how these commands took a config before) reads that whole file, as
    ``--configfile FILE --replace-workflow-config`` does."""
    files, entries, replace = list(args.configfile), list(args.config), args.replace_workflow_config
    if len(entries) == 1 and "=" not in entries[0] and Path(entries[0]).is_file():
        files, entries, replace = files + [Path(entries[0])], [], True
    cfg, args.config_where = effective_config(files, entries, replace)
    return cfg
