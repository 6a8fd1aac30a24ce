"""Where a ``sealbench`` command works: the project folder, found from any folder inside it or
from a human session's workspace.

The project is the folder that holds ``Snakefile`` and ``config/config.yaml`` (where
``snakemake --cores 4 gate`` runs). A command run from a folder below it works as if run from
it: the paths given on its command line are read relative to where it was typed, then it moves
to the project folder, so the config's relative ``pack`` and the default ``results/`` are the
project's. From a session's workspace (a scratch folder outside the project, see
:mod:`sealbench.agent.session`) the marker ``session start`` leaves beside the workspace names the
project, the results folder and the session. ``$SEALBENCH_PROJECT`` names the project
explicitly. Nothing found, where a command needs the project: one sentence naming what was
looked for and where (exit 2).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from .core import SealbenchError, read_json

#: What makes a folder the project.
MARKERS = ("Snakefile", "config/config.yaml")
#: The file ``session start`` writes beside a session's workspace (in its scratch folder).
SESSION_MARKER = ".sealbench-session.json"
#: Names the project folder explicitly.
PROJECT_ENV = "SEALBENCH_PROJECT"
#: Commands that read the project's config or results by default (``session shell`` included).
NEEDS_PROJECT = {"validate", "progress", "try", "show", "check", "session"}
#: Each command's default paths, relative to the project folder (as argparse gives them).
DEFAULTS = {"results": {Path("results"), Path("results/latest")}, "config": {Path("config/config.yaml")}}


class ProjectNotFound(SealbenchError):
    """No project folder where a command needs one."""


@dataclass(frozen=True)
class Located:
    """Where the project is, and how it was found (``session``: the session the workspace
    marker names, with its results folder)."""

    root: Path
    how: str
    session: str | None = None
    results: Path | None = None


def is_project(folder: Path) -> bool:
    return all((folder / m).is_file() for m in MARKERS)


def find(start: Path) -> Located | None:
    """The project for a command run in ``start``: ``$SEALBENCH_PROJECT``, else the nearest
    folder at or above ``start`` that is the project or holds a session's marker."""
    env = os.environ.get(PROJECT_ENV)
    if env:
        if not is_project(Path(env)):
            raise ProjectNotFound(f"${PROJECT_ENV} is {env}, which holds no {' and '.join(MARKERS)}: point it at the "
                                  "project folder, or unset it")
        return Located(Path(env).absolute(), f"${PROJECT_ENV}")
    start = Path(start).absolute()
    for folder in (start, *start.parents):
        if is_project(folder):
            return Located(folder, "here" if folder == start else "above")
        marker = folder / SESSION_MARKER
        if marker.is_file():
            try:
                m = read_json(marker)
                root, results = Path(m["project"]), Path(m["results"])
            except (SealbenchError, KeyError, TypeError) as exc:
                raise ProjectNotFound(f"{marker}: not a readable session marker ({exc}); run the command from "
                                      "the project folder instead") from exc
            return Located(root, "session", m.get("session_id"), results)
    return None


def not_found(start: Path) -> ProjectNotFound:
    return ProjectNotFound(
        f"no sealbench project here: looked for {' and '.join(MARKERS)} in {Path(start).absolute()} and every "
        f"folder above it, and for a session workspace's {SESSION_MARKER}; run the command inside the project "
        f"(or a session's workspace), give the paths it needs (--configfile, --results), or set {PROJECT_ENV}")


def _given(args: argparse.Namespace, name: str) -> bool:
    """Whether the path argument ``name`` was given (not left at its project-relative default)."""
    value = getattr(args, name, None)
    if value is None or value == []:
        return False
    return not (isinstance(value, Path) and value in DEFAULTS.get(name, set()))


def _absolute(args: argparse.Namespace, base: Path) -> None:
    """The paths the user typed, made absolute against the folder they typed them in."""
    if getattr(args, "configfile", None):
        args.configfile = [base / f for f in args.configfile]
    cfg = getattr(args, "config", None)
    if isinstance(cfg, Path) and _given(args, "config"):
        args.config = base / cfg
    elif isinstance(cfg, list):  # --config KEY=VALUE …, or one config file (no '=')
        args.config = [str(base / c) if "=" not in c and (base / c).is_file() else c for c in cfg]
    res = getattr(args, "results", None)
    if isinstance(res, Path) and _given(args, "results"):
        args.results = base / res


def enter(args: argparse.Namespace) -> Located | None:
    """Before a command runs: move to its project (see the module docstring). Commands that name
    everything they read (``hash PACK``...) and commands run in the project folder are left as
    they are; ``ProjectNotFound`` when the command leans on a default that needs the project."""
    if args.cmd not in NEEDS_PROJECT or is_project(Path.cwd()):
        return None
    here = Path.cwd()
    found = find(here)
    if found is None:
        # as before: what the command reads is given, or its defaults are right here
        given = any(_given(args, a) for a in ("configfile", "config", "results"))
        defaults = [here / d for name in ("results", "config") for d in DEFAULTS[name] if hasattr(args, name)]
        if given or any(d.exists() for d in defaults):
            return None
        raise not_found(here)
    _absolute(args, here)
    if found.how == "session" and args.cmd == "session":
        if not _given(args, "results") and found.results is not None:
            args.results = found.results
        if getattr(args, "session", None) is None and found.session:
            args.session = found.session
    os.chdir(found.root)
    return found
