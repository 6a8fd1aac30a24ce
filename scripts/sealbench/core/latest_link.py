"""The ``results/latest`` link: which experiment folder is the current, finished one."""

from __future__ import annotations

import os
from pathlib import Path


def point_latest(latest: Path, exp_dir: Path) -> None:
    """Atomically point ``results/latest`` at the experiment folder (relative symlink)."""
    latest = Path(latest)
    target = os.path.relpath(exp_dir, latest.parent)
    tmp = latest.with_name(".latest.tmp")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    os.symlink(target, tmp)
    os.replace(tmp, latest)
