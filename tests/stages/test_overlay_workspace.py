"""Copy-on-write workspaces (issue 15): an overlay over the sealed task gives exactly the patch
git would, whatever the worker does to ``.git``, leaves the lower layers byte-identical, and the
copy fallback gives the same patch; scoring over an overlay gives the verdicts of a copy."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from sealbench.core.processes import run_process
from sealbench.isolation import layers
from sealbench.isolation.gitdiff import Change, tree_patch
from sealbench.isolation.sandbox import make_sandbox
from sealbench.pack import workspace
from sealbench.scoring import scoring

ROOT = Path(__file__).resolve().parents[2]
needs_overlay = pytest.mark.skipif(layers.overlay_problem() is not None,
                                   reason=f"overlays cannot be mounted here: {layers.overlay_problem()}")

#: What the worker does: rewrite .git (its own commit of everything, so `git diff` there is
#: empty, and an exclude hiding new files), delete a file and a folder, add files, change modes,
#: edit a file, and leave build artefacts.
WORKER = r"""
set -e
printf 'def add(a, b):\n    return a + b\n' > calc.py
rm notes.txt
rm -r old
mkdir -p pkg/new && printf 'x = 1\n' > pkg/new/mod.py
printf '' > empty.txt
chmod +x run.sh
chmod -x pkg/tool.py
mkdir -p __pycache__ && printf 'junk' > __pycache__/calc.cpython-311.pyc
printf 'bin\0ary' > blob.dat
git add -A >/dev/null && git -c user.name=w -c user.email=w@w commit -qm mine
echo '*' > .git/info/exclude
printf 'ref: refs/heads/elsewhere\n' > .git/HEAD
"""


def _task(root: Path) -> Path:
    task = root / "task"
    repo = task / "repo"
    (repo / "old").mkdir(parents=True)
    (repo / "pkg").mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "notes.txt").write_text("keep me\n")
    (repo / "old" / "a.py").write_text("A = 1\n")
    (repo / "old" / "b.py").write_text("B = 2\n")
    (repo / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (repo / "pkg" / "tool.py").write_text("print('tool')\n")
    os.chmod(repo / "pkg" / "tool.py", 0o755)
    (task / "visible_tests").mkdir()
    (task / "visible_tests" / "test_calc.py").write_text("from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n")
    (task / "meta.json").write_text(json.dumps({"id": "t1"}))
    return task


def _fingerprint(folder: Path) -> dict[str, tuple[int, str]]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for n in dirnames + filenames:
            p = Path(dirpath) / n
            st = os.lstat(p)
            digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else ""
            out[str(p.relative_to(folder))] = (st.st_mode, digest)
    return out


def _git_reference(task: Path, after: Path) -> bytes:
    """What git itself prints for the same change (the old way: a baseline commit of the
    starting tree, then ``git add -A`` of the final one)."""
    ref = after.parent / "reference"
    ref.mkdir(parents=True)
    workspace.copy_tree(task / "repo", ref)
    workspace.copy_tree(task / "visible_tests", ref / "visible_tests")
    workspace.run_git(["init", "-q", str(ref)], cwd=ref.parent)
    workspace.run_git(["add", "-A", "-f", "--", "."], cwd=ref)
    workspace.run_git(["commit", "-q", "-m", "base"], cwd=ref)
    subprocess.run(["bash", "-c", WORKER.replace("git add -A", "true").replace("git -c", "true").replace(
        "echo '*' > .git/info/exclude", "true").replace("printf 'ref: refs/heads/elsewhere\\n' > .git/HEAD", "true")],
        cwd=ref, check=True)
    excludes = [":(exclude,glob)**/__pycache__/**", ":(exclude,glob)__pycache__/**"]
    workspace.run_git(["add", "-A", "-f", "--", ".", *excludes], cwd=ref)
    return workspace.run_git(["diff", "--cached", "--binary", "--full-index", "--no-color", "--no-renames",
                              "HEAD"], cwd=ref).stdout


def _run_worker(ws: workspace.Workspace, level: str) -> None:
    box = make_sandbox(level, writable=[] if ws.kind == layers.OVERLAY else [ws.root])
    if ws.kind == layers.OVERLAY:
        box = box.with_overlay(ws.overlay())
    res = run_process(WORKER, ws.root, dict(os.environ), 60, ws.root.parent / "w.out", ws.root.parent / "w.err",
                      sandbox=box)
    assert res.returncode == 0, (ws.root.parent / "w.err").read_text()


@pytest.mark.sandbox
@needs_overlay
def test_overlay_patch_is_git_s_whatever_the_worker_does_to_git(tmp_path: Path) -> None:
    task = _task(tmp_path)
    before = _fingerprint(task)
    ws = workspace.make_workspace(task, tmp_path / "o" / "ws", tmp_path / "o" / "private", layers.OVERLAY)
    assert ws.kind == layers.OVERLAY and not any(ws.root.iterdir())   # nothing copied
    _run_worker(ws, "bwrap")
    patch = workspace.workspace_patch(ws)
    assert patch == _git_reference(task, tmp_path / "ref" / "x")
    assert b"a/calc.py" in patch and b"deleted file mode 100644" in patch and b"old mode 100755" in patch
    assert b"old/a.py" in patch and b"old/b.py" in patch and b"pkg/new/mod.py" in patch
    assert b"__pycache__" not in patch and b".git/" not in patch
    # the lower layers are byte-identical afterwards (the upper took every write)
    assert _fingerprint(task) == before
    assert (ws.upper / ".git").is_dir() and (ws.upper / "notes.txt").is_char_device()


@pytest.mark.sandbox
@needs_overlay
def test_copy_fallback_gives_the_same_patch(tmp_path: Path) -> None:
    task = _task(tmp_path)
    ov = workspace.make_workspace(task, tmp_path / "o" / "ws", tmp_path / "o" / "private", layers.OVERLAY)
    cp = workspace.make_workspace(task, tmp_path / "c" / "ws", tmp_path / "c" / "private", layers.COPY)
    assert (cp.root / ".git").is_dir() and (cp.root / "visible_tests" / "test_calc.py").is_file()
    assert cp.base_commit == ov.base_commit
    _run_worker(ov, "bwrap")
    _run_worker(cp, "bwrap")
    assert workspace.workspace_patch(cp) == workspace.workspace_patch(ov) != b""


@pytest.mark.sandbox
def test_copy_workspace_patch_without_a_sandbox(tmp_path: Path) -> None:
    task = _task(tmp_path)
    cp = workspace.make_workspace(task, tmp_path / "c" / "ws", tmp_path / "c" / "private", layers.COPY)
    _run_worker(cp, "none")
    assert workspace.workspace_patch(cp) == _git_reference(task, tmp_path / "ref" / "x")


@pytest.mark.unit
def test_patch_writer_round_trips_through_git_apply(tmp_path: Path) -> None:
    """Every kind of section tree_patch writes is applied by git apply to the old tree."""
    old = {"a.txt": b"one\ntwo\nthree\n", "b y.txt": b"no newline", "bin.dat": b"\0\1\2" * 50, "gone.py": b"x\n",
           "\u00e9t\u00e9.txt": b"summer\n"}
    new = {"a.txt": b"one\n2\nthree\nfour\n", "b y.txt": b"no newline either", "bin.dat": b"\0\2" * 90,
           "added.bin": b"\0new", "\u00e9t\u00e9.txt": b"summer\n", "empty": b""}
    changes = [Change(p, old.get(p), new.get(p)) for p in sorted(set(old) | set(new))]
    changes.append(Change("\u00e9t\u00e9.txt", old["\u00e9t\u00e9.txt"], new["\u00e9t\u00e9.txt"], 0o100644, 0o100755))
    changes = [c for c in changes if not (c.path == "\u00e9t\u00e9.txt" and c.new_mode == 0o100644)]
    tree = tmp_path / "tree"
    tree.mkdir()
    for p, data in old.items():
        (tree / p).write_bytes(data)
    patch = tree_patch(changes)
    workspace.run_git(["apply", "--binary", "-"], cwd=tree, input_bytes=patch)
    assert {p.name: p.read_bytes() for p in tree.iterdir()} == new
    assert os.stat(tree / "\u00e9t\u00e9.txt").st_mode & 0o100


@pytest.fixture()
def suite_task(tmp_path: Path) -> Path:
    """A task of the bundled suite, copied read-only like hash_pack seals it."""
    import shutil

    dest = tmp_path / "sealed"
    shutil.copytree(ROOT / "suite" / "tasks" / "m01-high-season-surcharge", dest)
    for dirpath, _dirs, files in os.walk(dest):
        for n in files:
            os.chmod(Path(dirpath) / n, 0o444)
    return dest


@pytest.mark.sandbox
@needs_overlay
@pytest.mark.parametrize("which", ["oracle", "empty", "deletes", "stub"])
def test_scoring_over_an_overlay_matches_a_copy(suite_task: Path, tmp_path: Path, monkeypatch, which: str) -> None:
    """The same patch scored on an overlay and on a copy gets the same verdict."""
    from sealbench.stages import run_dummy

    meta = json.loads((suite_task / "meta.json").read_text())
    repo_files = sorted(p.relative_to(suite_task / "repo").as_posix() for p in (suite_task / "repo").rglob("*.py"))
    patch = {"oracle": (suite_task / "oracle.patch").read_bytes(), "empty": b"",
             "stub": run_dummy.stub_patch(suite_task, meta)[0],
             "deletes": tree_patch([Change(repo_files[0], (suite_task / "repo" / repo_files[0]).read_bytes(), None)])}[which]
    box = make_sandbox("bwrap")
    verdicts = {}
    for kind in ("overlay", "copy"):
        monkeypatch.setenv("SEALBENCH_WORKSPACE", kind)
        res = scoring.score_patch(suite_task, meta, patch, tmp_path / kind, 120, sandbox=box)
        verdicts[kind] = (res.status, res.visible_pass, res.hidden_pass, res.tamper_paths)
    assert verdicts["overlay"] == verdicts["copy"]
    assert verdicts["overlay"][0] == {"oracle": "pass"}.get(which, "fail")


@pytest.mark.sandbox
@needs_overlay
def test_a_folder_made_again_a_folder_made_a_file_a_symlink_and_a_fifo(tmp_path: Path) -> None:
    """An opaque folder (deleted and made again), a folder replaced by a file, a symlink and a
    FIFO: the overlay's patch equals the copy's, and applied to the pristine tree it gives the
    worker's final tree (the FIFO is no file: never in a patch)."""
    task = _task(tmp_path)
    worker = ("rm -rf old && mkdir old && echo new > old/a.py && rm -rf pkg && echo file > pkg && "
              "mkdir -p calc2 && ln -s ../calc.py calc2/link && mkfifo fifo")
    patches, final = {}, None
    for kind in (layers.OVERLAY, layers.COPY):
        ws = workspace.make_workspace(task, tmp_path / kind / "ws", tmp_path / kind / "private", kind)
        box = make_sandbox("bwrap", writable=[] if kind == layers.OVERLAY else [ws.root])
        box = box.with_overlay(ws.overlay()) if kind == layers.OVERLAY else box
        res = run_process(worker, ws.root, dict(os.environ), 60, tmp_path / kind / "o", tmp_path / kind / "e", sandbox=box)
        assert res.returncode == 0, (tmp_path / kind / "e").read_text()
        patches[kind] = workspace.workspace_patch(ws)
        if kind == layers.COPY:
            final = {p.relative_to(ws.root).as_posix(): (os.readlink(p) if p.is_symlink() else p.read_bytes())
                     for p in ws.root.rglob("*") if ".git" not in p.parts and (p.is_symlink() or p.is_file())}
    assert patches[layers.OVERLAY] == patches[layers.COPY]
    assert b"deleted file mode 100644" in patches[layers.COPY] and b"old/b.py" in patches[layers.COPY]
    pristine = tmp_path / "pristine"
    workspace.copy_tree(task / "repo", pristine)
    workspace.copy_tree(task / "visible_tests", pristine / "visible_tests")
    workspace.run_git(["apply", "--binary", "-"], cwd=pristine, input_bytes=patches[layers.COPY])
    after = {p.relative_to(pristine).as_posix(): (os.readlink(p) if p.is_symlink() else p.read_bytes())
             for p in pristine.rglob("*") if p.is_symlink() or p.is_file()}
    assert after == final


@pytest.mark.sandbox
@needs_overlay
def test_a_task_sealed_again_keeps_its_files_writable_in_the_overlay(tmp_path: Path) -> None:
    """hash_pack seals a task again (a changed code digest) beside a base layer that already
    exists: the worker must still be able to open a file of the snapshot for writing (the
    overlay copies it up; a sealed file without its owner's write bit would refuse it)."""
    from sealbench.core import core
    from sealbench.stages import hash_pack

    task = _task(tmp_path)
    sealed, record = tmp_path / "res" / "sealed", tmp_path / "res" / "sealed.json"
    hash_pack.seal_task(task, core.task_digest(task), sealed, record)
    workspace.make_workspace(sealed, tmp_path / "a" / "ws", tmp_path / "a" / "private", layers.OVERLAY)
    assert (sealed.parent / "layer" / ".git").is_dir()
    hash_pack.seal_task(task, core.task_digest(task), sealed, record)   # sealed again, the layer kept
    ws = workspace.make_workspace(sealed, tmp_path / "b" / "ws", tmp_path / "b" / "private", layers.OVERLAY)
    box = make_sandbox("bwrap").with_overlay(ws.overlay())
    res = run_process("python3 -c \"open('calc.py', 'a').write('# edited\\n')\"", ws.root, dict(os.environ), 60,
                      tmp_path / "o", tmp_path / "e", sandbox=box)
    assert res.returncode == 0, (tmp_path / "e").read_text()
    assert b"+# edited" in workspace.workspace_patch(ws)
