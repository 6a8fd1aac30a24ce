"""Local git work for importing SWE-bench-style instances (``pack_swebench``): never the network.

- :func:`find_clone`: the local clone of ``owner/name`` under a folder of clones
  (``DIR/<owner>__<name>``, ``DIR/<name>`` or ``DIR/<owner>/<name>``);
- :func:`has_commit`: whether a commit is in the clone (a missing one is never fetched);
- :func:`snapshot`: the files of a commit, byte for byte as committed, written into a folder
  (no ``.git``; what a checkout gives, without smudge filters or ``export-ignore``: symlinks and
  submodules cannot go into a pack and are listed as left out);
- :func:`apply_patch`: ``git apply`` of a patch on a folder, or why it does not apply;
- :func:`changed_lines`, :func:`patch_paths`: a unified diff's size and the files it touches.

Every git command runs with ``protocol.allow=never`` (no transport at all, so a partial clone
cannot fetch a missing object), no terminal prompt and no system or global config.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..core.core import SealbenchError
from ..pack.patches import split_patch

#: git options that keep every command local and independent of the user's git config.
_LOCAL = ("-c", "protocol.allow=never", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")


class GitError(SealbenchError):
    """A clone, a commit or a patch that cannot be used; the message names it."""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull,
               GIT_ASKPASS="/bin/false", SSH_ASKPASS="/bin/false", GIT_SSH_COMMAND="/bin/false")
    return env


def git(repo: Path, *args: str, data: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``git -C repo ARGS`` locally (bytes in and out)."""
    res = subprocess.run(["git", *_LOCAL, "-C", str(repo), *args], input=data, capture_output=True, env=_env())
    if check and res.returncode != 0:
        raise GitError(f"{repo}: git {' '.join(args)} failed: {res.stderr.decode(errors='replace').strip()}")
    return res


def clone_candidates(clones: Path, repo: str) -> list[Path]:
    """Where the clone of ``owner/name`` may be, in the order tried."""
    owner, name = repo.split("/", 1)
    return [clones / f"{owner}__{name}", clones / name, clones / owner / name]


def find_clone(clones: Path, repo: str) -> Path:
    """The first candidate folder that is a git repository (bare or not), or an error naming
    every folder tried."""
    tried = []
    for cand in clone_candidates(Path(clones), repo):
        if cand.is_dir():
            res = git(cand, "rev-parse", "--git-dir", check=False)
            if res.returncode == 0:
                return cand
            tried.append(f"{cand} (not a git repository)")
        else:
            tried.append(f"{cand} (absent)")
    raise GitError(f"no local clone of {repo}: tried {', '.join(tried)}. Clone it there first "
                   f"(sealbench never uses the network)")


def has_commit(clone: Path, commit: str) -> bool:
    """Whether ``commit`` names a commit present in the clone."""
    return git(clone, "cat-file", "-e", f"{commit}^{{commit}}", check=False).returncode == 0


@dataclass(frozen=True)
class Snapshot:
    """A commit's files written into a folder."""

    files: tuple[str, ...]       # regular files written (repository paths)
    left_out: tuple[str, ...]    # "path (symlink)" / "path (submodule)": not written


def snapshot(clone: Path, commit: str, dest: Path) -> Snapshot:
    """Write the files of ``commit`` into ``dest`` (created), as the blobs stored in git."""
    listing = git(clone, "ls-tree", "-r", "-z", "--full-tree", commit).stdout
    entries, left_out = [], []
    for rec in listing.split(b"\0"):
        if not rec:
            continue
        head, _, path_b = rec.partition(b"\t")
        mode, kind, sha = head.decode().split()
        path = path_b.decode("utf-8", "surrogateescape")
        if kind == "blob" and mode in ("100644", "100755"):
            entries.append((path, sha, mode == "100755"))
        else:
            left_out.append(f"{path} ({'symlink' if mode == '120000' else 'submodule' if kind == 'commit' else mode})")
    blobs = _read_blobs(clone, [sha for _, sha, _ in entries])
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for path, sha, executable in entries:
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(blobs[sha])
        if executable:
            target.chmod(0o755)
    return Snapshot(tuple(p for p, _, _ in entries), tuple(left_out))


def _read_blobs(clone: Path, shas: list[str]) -> dict[str, bytes]:
    """The contents of blobs, read in one ``git cat-file --batch``."""
    unique = sorted(set(shas))
    out = git(clone, "cat-file", "--batch", data="".join(s + "\n" for s in unique).encode()).stdout
    blobs, pos = {}, 0
    for sha in unique:
        end = out.index(b"\n", pos)
        header = out[pos:end].decode().split()
        if len(header) != 3:
            raise GitError(f"{clone}: blob {sha} is missing from the clone ({' '.join(header)})")
        size = int(header[2])
        blobs[sha] = out[end + 1:end + 1 + size]
        pos = end + 1 + size + 1
    return blobs


def apply_patch(folder: Path, patch: str, *, check_only: bool = False) -> str | None:
    """``git apply`` ``patch`` on the files of ``folder`` (not a repository); None when it
    applies, else git's reason."""
    args = ["apply", "--check"] if check_only else ["apply"]
    res = subprocess.run(["git", *_LOCAL, *args, "-"], input=patch.encode(), cwd=folder, capture_output=True,
                         env={**_env(), "GIT_CEILING_DIRECTORIES": str(Path(folder).parent)})
    why = "; ".join(ln.strip() for ln in res.stderr.decode(errors="replace").splitlines() if ln.strip())
    return None if res.returncode == 0 else (why or "git apply failed")


@dataclass(frozen=True)
class Touched:
    """The files one patch touches."""

    changed: tuple[str, ...]   # present before and after (possibly renamed: the new name)
    added: tuple[str, ...]
    deleted: tuple[str, ...]   # deleted, or the old name of a rename


def patch_paths(patch: str) -> Touched:
    """The files a unified diff touches (raises ``ValueError`` on text that is no diff)."""
    changed, added, deleted = set(), set(), set()
    for sec in split_patch(patch.encode()):
        if sec.old_path == "/dev/null":
            added.add(sec.new_path)
        elif sec.new_path == "/dev/null":
            deleted.add(sec.old_path)
        else:
            changed.add(sec.new_path)
            if sec.old_path != sec.new_path:
                deleted.add(sec.old_path)
    return Touched(tuple(sorted(changed)), tuple(sorted(added)), tuple(sorted(deleted)))


def changed_lines(patch: str) -> int:
    """Lines a unified diff adds or removes (its hunks' ``+``/``-`` lines)."""
    n = 0
    for sec in split_patch(patch.encode()):
        in_hunk = False
        for line in sec.text.splitlines():
            if line.startswith(b"@@"):
                in_hunk = True
            elif in_hunk and line[:1] in (b"+", b"-"):
                n += 1
    return n
