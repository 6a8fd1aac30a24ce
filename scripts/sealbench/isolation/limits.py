"""The resource limits of every worker and scoring command, and how they are enforced.

Limits (:class:`Limits`, config ``limits``) hold for every command, sandboxed or not:
processes and memory through a cgroup where one is writable (``pids``/``memory``), else through
rlimits (``RLIMIT_NPROC`` relative to the processes the user already has — not enforceable for
root, whose processes the kernel exempts — and ``RLIMIT_AS``); file size through
``RLIMIT_FSIZE``; the size of the writable folders through a watcher that stops the command
once they exceed ``max_workspace_mb`` and a check after it ends. What was hit, in words, is on
``ProcessResult.limit_hit``; :func:`limit_mechanisms` says which mechanism is in force here.
:class:`Guard` enforces them on one run; a sandbox (``sandbox.Sandbox``) carries its limits and
makes its guard.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import shlex
import signal
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from ..core.core import SealbenchError

#: Every file or folder counts at least this much towards ``max_workspace_mb`` (an inode).
ENTRY_BYTES = 4096


@dataclass(frozen=True)
class Limits:
    """Resource limits of one command (None: no limit). Defaults: the config's defaults."""

    max_processes: int | None = 1024       #: processes and threads at once
    max_memory_mb: int | None = 8192       #: memory of the command's processes (cgroup) or per process (rlimit)
    max_file_mb: int | None = 2048         #: size of any one file written
    max_workspace_mb: int | None = 8192    #: total size of the writable folders (and of /tmp)

    @classmethod
    def of(cls, value: Limits | Mapping[str, Any] | None) -> Limits:
        if value is None:
            return cls()
        if isinstance(value, Limits):
            return value
        unknown = set(value) - set(cls.__dataclass_fields__)
        if unknown:
            raise SealbenchError(f"unknown limits: {', '.join(sorted(unknown))}")
        return replace(cls(), **{k: (None if v is None else int(v)) for k, v in value.items()})

    def to_dict(self) -> dict[str, int | None]:
        return asdict(self)


DEFAULT_LIMITS = Limits()


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _own_cgroup(controller: str) -> Path | None:
    """The folder of this process's cgroup for ``controller`` (v1), or the v2 folder."""
    text = _read(Path("/proc/self/cgroup")) or ""
    v2 = None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if controller in parts[1].split(","):
            return Path("/sys/fs/cgroup") / controller / parts[2].lstrip("/")
        if parts[0] == "0" and parts[1] == "":
            v2 = parts[2]
    if v2 is not None and Path("/sys/fs/cgroup/cgroup.controllers").exists():
        return Path("/sys/fs/cgroup") / v2.lstrip("/")
    return None


_CG_COUNTER = itertools.count()


@dataclass
class _Cgroup:
    path: Path
    v2: bool

    def procs(self) -> list[int]:
        return [int(x) for x in (_read(self.path / "cgroup.procs") or "").split()]

    def remove(self) -> None:
        for _ in range(100):
            pids = self.procs()
            for p in pids:
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.02)


def _make_cgroup(controller: str, settings: Mapping[str, str]) -> _Cgroup | None:
    """A fresh child of this process's cgroup with ``settings`` written, or None where that
    is not possible (read-only cgroup fs, controller not delegated)."""
    base = _own_cgroup(controller)
    if base is None or not base.is_dir():
        return None
    v2 = _is_v2(controller)
    _sweep_stale(base)
    path = base / f"sealbench-{os.getpid()}-{next(_CG_COUNTER)}"
    try:
        path.mkdir()
    except OSError:
        return None
    cg = _Cgroup(path, v2)
    try:
        for name, value in settings.items():
            f = path / name
            if name.endswith(".memsw.limit_in_bytes") or name == "memory.swap.max":
                try:
                    f.write_text(value)
                except OSError:
                    pass  # no swap accounting: the plain limit still holds
                continue
            f.write_text(value)
    except OSError:
        cg.remove()
        return None
    return cg


def _sweep_stale(base: Path) -> None:
    """Remove empty sealbench cgroups left by harness processes that no longer exist."""
    try:
        entries = [e for e in os.listdir(base) if e.startswith("sealbench-")]
    except OSError:
        return
    for e in entries:
        try:
            pid = int(e.split("-")[1])
        except (IndexError, ValueError):
            continue
        if pid != os.getpid() and not Path(f"/proc/{pid}").exists():
            try:
                (base / e).rmdir()
            except OSError:
                pass


def _cgroup_settings(kind: str, limits: Limits, v2: bool) -> dict[str, str]:
    if kind == "pids":
        return {"pids.max": str(limits.max_processes)}
    mem = str(limits.max_memory_mb * 1024 * 1024)
    if v2:
        return {"memory.max": mem, "memory.swap.max": "0"}
    return {"memory.limit_in_bytes": mem, "memory.memsw.limit_in_bytes": mem}


def _is_v2(kind: str) -> bool:
    base = _own_cgroup(kind)
    return base is not None and (base / "cgroup.controllers").exists() and not (base / "tasks").exists()


@functools.cache
def _cgroup_works(kind: str) -> bool:
    cg = _make_cgroup(kind, _cgroup_settings(kind, Limits(max_processes=64, max_memory_mb=256), _is_v2(kind)))
    if cg is None:
        return False
    cg.remove()
    return True


def limit_mechanisms() -> dict[str, str]:
    """Which mechanism enforces each limit here (recorded on run records and the card)."""
    root = os.geteuid() == 0
    return {
        "processes": "pids cgroup" if _cgroup_works("pids") else ("none (root is exempt from RLIMIT_NPROC)"
                                                                  if root else "rlimit"),
        "memory": "memory cgroup" if _cgroup_works("memory") else "rlimit (address space, per process)",
        "file_size": "rlimit",
        "workspace": "watcher",
    }


def _user_tasks(uid: int) -> int:
    """Threads the real user ``uid`` has now (what RLIMIT_NPROC counts)."""
    n = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        text = _read(Path(f"/proc/{entry}/status"))
        if not text:
            continue
        m_uid = re.search(r"^Uid:\s+(\d+)", text, re.M)
        m_thr = re.search(r"^Threads:\s+(\d+)", text, re.M)
        if m_uid and int(m_uid.group(1)) == uid:
            n += int(m_thr.group(1)) if m_thr else 1
    return n


def tree_usage(roots: Iterable[Path], stop_at: int | None = None) -> tuple[int, int]:
    """(charged bytes, largest file size) over the trees at ``roots``: each entry counts its
    allocated or apparent size, whichever is larger, and at least :data:`ENTRY_BYTES`.
    Symlinks are not followed. Stops early once ``stop_at`` bytes are counted."""
    total = biggest = 0
    todo = [Path(r) for r in roots]
    while todo:
        d = todo.pop()
        try:
            it = os.scandir(d)
        except OSError:
            continue
        with it:
            for e in it:
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                total += max(st.st_size, st.st_blocks * 512, ENTRY_BYTES)
                if e.is_file(follow_symlinks=False):
                    biggest = max(biggest, st.st_size)
                elif e.is_dir(follow_symlinks=False):
                    todo.append(Path(e.path))
                if stop_at is not None and total > stop_at:
                    return total, biggest
    return total, biggest


_XFSZ_CODES = {128 + signal.SIGXFSZ, -signal.SIGXFSZ}
_FORK_FAILED = re.compile(r"fork: (retry: )?Resource temporarily unavailable|BlockingIOError: \[Errno 11\]")
_OOM_TEXT = re.compile(r"MemoryError|Cannot allocate memory|std::bad_alloc|out of memory", re.I)


class Guard:
    """Enforces a sandbox's :class:`Limits` on one command run: cgroups created before it
    starts, rlimits set by the launcher shell, the watcher on its writable folders, and the
    verdict after it ends (:meth:`finish`). Made by :meth:`Sandbox.guard`; used by
    ``processes.run_process``."""

    def __init__(self, sandbox: Any) -> None:  # a sandbox.Sandbox (which imports this module)
        self.sandbox = sandbox
        self.limits = sandbox.limits
        self.cgroups: dict[str, _Cgroup] = {}
        self.hit: str | None = None
        self._watch_stop = threading.Event()
        self._watcher: threading.Thread | None = None
        lim = self.limits
        if lim.max_processes is not None:
            cg = _make_cgroup("pids", _cgroup_settings("pids", lim, False)) if _cgroup_works("pids") else None
            if cg:
                self.cgroups["pids"] = cg
        if lim.max_memory_mb is not None:
            cg = _make_cgroup("memory", _cgroup_settings("memory", lim, _is_v2("memory"))) if _cgroup_works("memory") else None
            if cg:
                self.cgroups["memory"] = cg

    def argv(self, inner: Sequence[str]) -> list[str]:
        """``inner`` started through a launcher shell that joins the cgroups and sets rlimits
        (hard and soft: without capabilities they cannot be raised again)."""
        lim = self.limits
        steps = []
        for cg in self.cgroups.values():
            steps.append(f"echo $$ > {shlex.quote(str(cg.path / 'cgroup.procs'))}")
        ulimits = []
        if lim.max_file_mb is not None:
            ulimits.append(f"-f {lim.max_file_mb * 1024}")  # bash: 1024-byte blocks
        if lim.max_memory_mb is not None and "memory" not in self.cgroups:
            ulimits.append(f"-v {lim.max_memory_mb * 1024}")  # KiB
        if lim.max_processes is not None and "pids" not in self.cgroups and os.geteuid() != 0:
            ulimits.append(f"-u {_user_tasks(os.getuid()) + lim.max_processes}")
        if ulimits:
            steps.append("ulimit -H -S " + " ".join(ulimits))
        if not steps:
            return list(inner)
        script = " && ".join(steps) + ' && exec "$@"'
        return ["/bin/bash", "-c", script, "sealbench-limits", *inner]

    def start_watch(self, on_hit: Callable[[], None]) -> None:
        """Watch the writable folders; past ``max_workspace_mb`` record it and call ``on_hit``."""
        cap = self.limits.max_workspace_mb
        roots = self.sandbox.usage_roots()
        if cap is None or not roots:
            return
        cap_bytes = cap * 1024 * 1024

        def watch() -> None:
            interval = 0.25
            while not self._watch_stop.wait(interval):
                t0 = time.monotonic()
                used, _ = tree_usage(roots, stop_at=cap_bytes)
                if used > cap_bytes:
                    self.hit = self.hit or self._words("workspace", used)
                    on_hit()
                    return
                interval = min(2.0, max(0.25, 20 * (time.monotonic() - t0)))

        self._watcher = threading.Thread(target=watch, daemon=True, name="sealbench-workspace-watch")
        self._watcher.start()

    def _words(self, what: str, used: int | None = None) -> str:
        lim = self.limits
        if what == "workspace":
            size = f" ({used / 1048576:.0f} MB written)" if used is not None else ""
            return f"hit the workspace limit (max_workspace_mb={lim.max_workspace_mb}){size}"
        if what == "file":
            return f"hit the file-size limit (max_file_mb={lim.max_file_mb})"
        if what == "processes":
            return f"hit the process limit (max_processes={lim.max_processes})"
        return f"hit the memory limit (max_memory_mb={lim.max_memory_mb})"

    def finish(self, returncode: int | None, stderr_path: Path | None = None) -> str | None:
        """After the command ended: what limit it hit, in words (None: none). Kills whatever
        is left in its cgroups and removes them."""
        self._watch_stop.set()
        if self._watcher is not None:
            self._watcher.join(timeout=10)
        lim = self.limits
        hits: list[str] = [self.hit] if self.hit else []
        pids = self.cgroups.get("pids")
        if pids is not None:
            events = _read(pids.path / "pids.events") or ""
            m = re.search(r"^max (\d+)", events, re.M)
            if m and int(m.group(1)) > 0:
                hits.append(self._words("processes"))
        mem = self.cgroups.get("memory")
        if mem is not None:
            name = "memory.events" if mem.v2 else "memory.oom_control"
            m = re.search(r"^oom_kill (\d+)", _read(mem.path / name) or "", re.M)
            if m and int(m.group(1)) > 0:
                hits.append(self._words("memory"))
        for cg in self.cgroups.values():
            cg.remove()
        tail = ""
        if stderr_path is not None and returncode not in (0, None):
            try:
                with open(stderr_path, "rb") as fh:
                    fh.seek(0, 2)
                    fh.seek(max(0, fh.tell() - 8192))
                    tail = fh.read().decode("utf-8", "replace")
            except OSError:
                tail = ""
        if pids is None and lim.max_processes is not None and _FORK_FAILED.search(tail):
            hits.append(self._words("processes"))
        if mem is None and lim.max_memory_mb is not None and _OOM_TEXT.search(tail):
            hits.append(self._words("memory"))
        roots = self.sandbox.usage_roots()
        if roots and (lim.max_file_mb is not None or lim.max_workspace_mb is not None):
            used, biggest = tree_usage(roots)
            if lim.max_workspace_mb is not None and used > lim.max_workspace_mb * 1048576 and not self.hit:
                hits.append(self._words("workspace", used))
            if lim.max_file_mb is not None and biggest >= lim.max_file_mb * 1048576:
                hits.append(self._words("file"))
        if lim.max_file_mb is not None and returncode in _XFSZ_CODES:
            hits.append(self._words("file"))
        seen: list[str] = []
        for h in hits:
            if h not in seen:
                seen.append(h)
        return "; ".join(seen) or None
