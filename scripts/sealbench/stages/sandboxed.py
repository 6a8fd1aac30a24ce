"""What the stages that run a task's code share (``run_dummy``, ``run_agent``, ``hidden_score``):
their isolation flags (``--timeout``, ``--sandbox``, ``--limits``, ``--env``: the argv
:mod:`sealbench.stages.steps` writes), the wrapper of their ``main`` (a sandbox that cannot be
had fails the job; any other error is recorded as the harness's and the job succeeds) and the
sandbox their scoring runs in.

Not a stage: the stages import it (they never import each other).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ..isolation.environments import BuiltEnv, load_env
from ..isolation.sandbox import MODES as SANDBOX_MODES
from ..isolation.sandbox import Sandbox, SandboxUnavailable, make_sandbox, resolve_level

R = TypeVar("R")


def add_isolation_args(ap: argparse.ArgumentParser, *, timeout: bool = True) -> None:
    """``--sandbox``, ``--limits``, ``--env`` and (with ``timeout``) ``--timeout`` on a stage's parser."""
    if timeout:
        ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--sandbox", default="auto", choices=SANDBOX_MODES)
    ap.add_argument("--limits", default=None, help="JSON: the config's limits (limits.Limits)")
    ap.add_argument("--env", type=Path, default=None, help="the task's built test environment (results/envs/…)")


def limits_arg(args: argparse.Namespace) -> dict | None:
    """The ``--limits`` JSON, parsed (None: not given)."""
    return json.loads(args.limits) if args.limits else None


def env_arg(args: argparse.Namespace) -> BuiltEnv | None:
    """The built environment ``--env`` names (None: not given: sealbench's interpreter)."""
    return load_env(args.env) if args.env else None


def run_guarded(stage: str, work: Callable[[], R],
                harness_error: Callable[[Exception], R]) -> tuple[R, bool] | None:
    """Run a stage's ``work``: ``(its result, False)``. The sandbox the config asks for cannot be
    had (``SandboxUnavailable``): said on stderr and None (the job exits 1: nothing of it is a
    result). Any other error is the harness's on this one job: ``(harness_error(exc), True)``,
    whose record says so, and the other jobs go on."""
    try:
        return work(), False
    except SandboxUnavailable as exc:
        print(f"{stage}: {exc}", file=sys.stderr)
        return None
    except Exception as exc:  # noqa: BLE001 - recorded by harness_error
        return harness_error(exc), True


def scoring_sandbox(sealed: Path, sandbox_mode: str, limits: dict | None,
                    env: BuiltEnv | None) -> tuple[str, Sandbox]:
    """The isolation level and the sandbox a sealed task's tests are scored in: the tasks' folder
    (``results/tasks/``, above ``sealed``'s digest folder) hidden, the environment readable."""
    level = resolve_level(sandbox_mode)
    box = make_sandbox(level, hide=[sealed.parent.parent.parent], limits=limits)
    return level, (box if env is None else box.with_readable(env.path))


def env_card(env: BuiltEnv) -> dict[str, Any]:
    """What a record says of the environment it ran in (its card without the lock)."""
    return {k: v for k, v in env.card().items() if k != "lock"}
