"""Issue 25 point 4: whatever sandboxed code leaves behind can only make its own run ``fail``,
never ``infra_fail``, never a host read or write.

The attack: a folder thousands of levels deep (left by the agent in its workspace or output
folder, by a patch, or by the tested code in the scoring workspace, the report folder or
``$TMPDIR``) made every recursive walk or removal of the harness (``os.walk``, ``shutil.rmtree``,
``copytree``, ``rglob``) raise ``RecursionError``, and the run left the denominator as
``infra_fail``; links planted there were followed (``chmod`` through a link to a host file, a
JUnit file turned into a link copied by following it). Every walk, copy and removal of what the
sandbox produced is now iterative, follows no link, and is capped where it reads
(``untrusted.walk_tree``/``remove_tree``).

Unit tests call the functions directly; one test runs sandboxed commands (an agent and the
scoring of a patch whose tested code leaves deep folders).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import BUGGY, FIX_AGENT, FIXED, ORACLE, make_pack  # noqa: E402
from sealbench.core import core  # noqa: E402
from sealbench.core.untrusted import copy_untrusted_tree  # noqa: E402
from sealbench.isolation import layers, sandbox  # noqa: E402
from sealbench.isolation.gitdiff import Change, tree_patch  # noqa: E402
from sealbench.pack import workspace  # noqa: E402
from sealbench.scoring import scoring  # noqa: E402
from sealbench.stages import hash_pack, hidden_score, run_agent, task_batch  # noqa: E402

ENVELOPE = {"max_wall_s": 30, "max_steps": 5, "max_output_tokens": 1000}
SECRET = b"host secret: never read, never written\n"


def chain(top: Path, depth: int, name: str = "d", leaf: bytes | None = b"bottom\n") -> None:
    """``depth`` nested folders under ``top`` (made fd-relative: the path is longer than
    PATH_MAX), with a file ``leaf.txt`` at the bottom."""
    top.mkdir(parents=True, exist_ok=True)
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        if leaf is not None:
            f = os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
            os.write(f, leaf)
            os.close(f)
    finally:
        os.close(fd)


def max_depth(folder: Path) -> int:
    """The deepest nesting under ``folder`` (iterative; follows no link)."""
    deepest, stack = 0, [(str(folder), 0)]
    while stack:
        path, d = stack.pop()
        deepest = max(deepest, d)
        with os.scandir(path) as it:
            stack += [(e.path, d + 1) for e in it if e.is_dir(follow_symlinks=False)]
    return deepest


@pytest.fixture()
def tmp(tmp_path: Path):
    """``tmp_path``, emptied afterwards (pytest's own clean-up recurses); GNU rm for anything
    the remover under test would leave."""
    yield tmp_path
    layers.remove_tree(tmp_path)
    if os.path.lexists(tmp_path):
        subprocess.run(["chmod", "-R", "u+rwX", str(tmp_path)], capture_output=True)
        subprocess.run(["rm", "-rf", str(tmp_path)], capture_output=True)


@pytest.fixture()
def host(tmp: Path) -> dict:
    """Host files a planted link points at: a read-only secret and a folder."""
    d = tmp / "host"
    d.mkdir()
    (d / "secret.txt").write_bytes(SECRET)
    os.chmod(d / "secret.txt", 0o400)
    (d / "folder").mkdir()
    (d / "folder" / "keep.txt").write_bytes(b"keep\n")
    return {"dir": d, "secret": d / "secret.txt", "folder": d / "folder"}


def host_untouched(host: dict) -> bool:
    st = os.lstat(host["secret"])
    return (host["secret"].read_bytes() == SECRET and stat.S_IMODE(st.st_mode) == 0o400
            and (host["folder"] / "keep.txt").read_bytes() == b"keep\n")


def plant(folder: Path, host: dict) -> None:
    """Links to the host, a FIFO (an open would block), a root-only 000 folder holding files."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "secret-link").symlink_to(host["secret"])
    (folder / "folder-link").symlink_to(host["folder"])
    (folder / "zero").symlink_to("/dev/zero")
    os.mkfifo(folder / "fifo")
    locked = folder / "locked"
    (locked / "work").mkdir(parents=True)
    (locked / "work" / "f").write_bytes(b"f")
    os.chmod(locked / "work", 0)
    os.chmod(locked, 0)


# ---------------------------------------------------------------------------------------------
# (a) unit: removal, reading, copying of a hostile tree


@pytest.mark.sandbox
def test_remove_tree_takes_down_a_5000_deep_tree_and_follows_no_link(tmp: Path, host: dict) -> None:
    tree = tmp / "tree"
    chain(tree, 5000)
    plant(tree, host)
    assert layers.remove_tree(tree) == []
    assert not os.path.lexists(tree) and host_untouched(host)
    # the same as an unprivileged harness (where a 000 folder cannot even be listed until chmod)
    mine = tmp / "nobody"
    chain(mine, 300)
    for d in ("locked/work/work", "ro/sub"):
        (mine / d).mkdir(parents=True)
        (mine / d / "f").write_bytes(b"f")
    for d, mode in (("locked/work/work", 0), ("locked/work", 0), ("locked", 0), ("ro/sub", 0o500), ("ro", 0o500)):
        os.chmod(mine / d, mode)
    if os.geteuid() == 0:   # root lists anything: take the tree down as an unprivileged user
        subprocess.run(["chown", "-R", "65534:65534", str(mine)], check=True)
        base = Path(tempfile.mkdtemp(prefix="sealbench-test-"))    # (tmp_path's parents are root-only)
        try:
            os.chmod(base, 0o777)
            os.rename(mine, base / "nobody")
            assert as_user(65534, lambda: layers.remove_tree(base / "nobody")) == []
            assert not os.path.lexists(base / "nobody")
        finally:
            subprocess.run(["rm", "-rf", str(base)], capture_output=True)
    else:
        assert layers.remove_tree(mine) == [] and not os.path.lexists(mine)


def as_user(uid: int, fn):
    """``fn()`` run in a forked child under ``uid`` (its result back through a pipe)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:   # pragma: no cover - the child
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            os.write(w, json.dumps(fn()).encode())
        except BaseException as exc:  # noqa: BLE001
            os.write(w, json.dumps(f"{type(exc).__name__}: {exc}").encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    return json.loads(data)


def _ws(root: Path, lowers: tuple[Path, ...], kind: str = layers.COPY, upper: Path | None = None):
    return workspace.Workspace(root, lowers, "0" * 40, kind, upper, None)


@pytest.mark.sandbox
def test_a_3000_deep_workspace_is_the_agent_s_fail_not_a_crash(tmp: Path, host: dict) -> None:
    low = tmp / "low"
    low.mkdir()
    (low / "calc.py").write_text(BUGGY)
    for kind, folder in ((layers.COPY, tmp / "copy"), (layers.OVERLAY, tmp / "upper")):
        folder.mkdir()
        (folder / "calc.py").write_text(FIXED)
        plant(folder, host)
        chain(folder / "deep", 3000)
        ws = _ws(folder, (low,), kind, folder if kind == layers.OVERLAY else None)
        with pytest.raises(workspace.WorkspaceError, match=r"deeper than \d+ levels"):
            workspace.workspace_patch(ws)
        assert host_untouched(host)


@pytest.mark.unit
def test_links_fifos_and_locked_folders_in_a_workspace_are_read_as_what_they_are(tmp: Path, host: dict) -> None:
    """(c) beside it: no depth, the same patch as before — a link is a link (its target the
    bytes, never the host file), a FIFO is nothing, the edit is there."""
    low = tmp / "low"
    low.mkdir()
    (low / "calc.py").write_text(BUGGY)
    root = tmp / "copy"
    root.mkdir()
    (root / "calc.py").write_text(FIXED)
    plant(root, host)
    os.chmod(root / "locked", 0o755)
    os.chmod(root / "locked" / "work", 0o755)
    patch = workspace.workspace_patch(_ws(root, (low,)))
    assert SECRET not in patch and host_untouched(host)
    assert b"+    return a + b" in patch and b"new file mode 120000" in patch
    assert str(host["secret"]).encode() in patch and b"b/fifo" not in patch and b"locked/work/f" in patch


@pytest.mark.sandbox
def test_copy_untrusted_tree_leaves_out_what_is_too_deep_and_names_it(tmp: Path, host: dict) -> None:
    out = tmp / "out"
    (out / "sub").mkdir(parents=True)
    (out / "traj.json").write_bytes(b'{"steps": 3}')
    (out / "sub" / "a.bin").write_bytes(bytes(range(256)) * 3)
    plant(out, host)
    chain(out / "deep", 3000)
    dst = tmp / "dst"
    skipped = copy_untrusted_tree(out, dst)
    assert (dst / "traj.json").read_bytes() == b'{"steps": 3}'
    assert (dst / "sub" / "a.bin").read_bytes() == bytes(range(256)) * 3
    assert any(s.startswith("deep/") and "deeper than" in s for s in skipped), skipped
    assert any(s.startswith("secret-link:") for s in skipped) and any(s.startswith("fifo:") for s in skipped)
    assert not (dst / "secret-link").exists() and not (dst / "folder-link").exists()
    assert max_depth(dst) < 300 and host_untouched(host)


@pytest.mark.unit
def test_copy_untrusted_tree_copies_an_honest_out_folder_byte_for_byte(tmp: Path) -> None:
    """(c): a normal output folder comes out identical (files, folders, bytes)."""
    out = tmp / "out"
    files = {"traj.json": b'{"a": 1}\n', "empty": b"", "logs/run.log": b"line\n" * 1000,
             "logs/deeper/x/y/z.bin": os.urandom(70_000), "notes.md": "é ü\n".encode()}
    for rel, data in files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
    assert copy_untrusted_tree(out, tmp / "dst") == []
    got = {p.relative_to(tmp / "dst").as_posix(): p.read_bytes() for p in (tmp / "dst").rglob("*") if p.is_file()}
    assert got == files


@pytest.mark.unit
def test_copy_untrusted_file_opens_no_link_nor_fifo_and_caps(tmp: Path, host: dict) -> None:
    from sealbench.core.untrusted import copy_untrusted_file

    src = tmp / "reports"
    plant(src, host)
    (src / "visible.junit.xml").write_bytes(b"<testsuites/>")
    (src / "big.xml").write_bytes(b"x" * 5000)
    dst = tmp / "logs"
    dst.mkdir()
    for name, why in (("secret-link", "symbolic link"), ("zero", "symbolic link"), ("fifo", "not a regular file"),
                      ("folder-link", "symbolic link"), ("locked", "not a regular file"), ("big.xml", "cap")):
        reason = copy_untrusted_file(src / name, dst / name, 4096)
        assert reason is not None and why in reason, (name, reason)
        assert not os.path.lexists(dst / name)
    assert copy_untrusted_file(src / "visible.junit.xml", dst / "visible.junit.xml", 4096) is None
    assert (dst / "visible.junit.xml").read_bytes() == b"<testsuites/>" and host_untouched(host)


@pytest.mark.sandbox
def test_removing_a_step_s_outputs_follows_no_link(tmp: Path, host: dict) -> None:
    """task_batch gave back write permission by chmod through every link (a host write)."""
    run_dir = tmp / "results" / "run"
    (run_dir / "out").mkdir(parents=True)
    plant(run_dir / "out", host)
    chain(run_dir / "out" / "deep", 3000)
    task_batch.remove_outputs([str(run_dir)])
    assert not os.path.lexists(run_dir) and host_untouched(host)


# ---------------------------------------------------------------------------------------------
# patches and tested code at scoring time (copy workspace, no sandbox: the host walks all of it)


@pytest.fixture()
def sealed(tmp: Path) -> Path:
    pack = make_pack(tmp / "pack")
    t = pack / "tasks" / "t00"
    out = tmp / "results" / "sealed"
    hash_pack.seal_task(t, core.task_digest(t), out, tmp / "results" / "sealed.json")
    return out


#: calc.py fixed, and at import a 1500-deep folder in the working directory, the report folder
#: and $TMPDIR (each time the tests import it).
DIGGER = FIXED + r'''

import os as _os
import shlex as _shlex
import tempfile as _tempfile


def _dig(top):
    fd = _os.open(top, _os.O_RDONLY | _os.O_DIRECTORY)
    for _ in range(1500):
        try:
            _os.mkdir("d", dir_fd=fd)
        except FileExistsError:
            pass
        nfd = _os.open("d", _os.O_RDONLY | _os.O_DIRECTORY, dir_fd=fd)
        _os.close(fd)
        fd = nfd
    _os.close(fd)


_junit = [w.split("=", 1)[1] for w in _shlex.split(_os.environ.get("PYTEST_ADDOPTS", "")) if w.startswith("--junitxml=")]
for _top in [".", _tempfile.gettempdir()] + [_os.path.dirname(j) for j in _junit]:
    try:
        _dig(_top)
    except OSError:
        pass
'''


@pytest.mark.sandbox
def test_a_patch_adding_a_file_1200_levels_deep_is_fail_not_a_crash(sealed: Path, tmp: Path) -> None:
    meta = json.loads((sealed / "meta.json").read_text())
    patch = ORACLE.encode() + tree_patch([Change("a/" * 1200 + "x.py", None, b"x = 1\n")])
    res = scoring.score_patch(sealed, meta, patch, tmp / "logs", 60)
    assert res.status == "fail" and "deeper than" in (res.reason or ""), res


@pytest.mark.sandbox
def test_tested_code_leaving_deep_folders_keeps_its_verdict(sealed: Path, tmp: Path) -> None:
    meta = json.loads((sealed / "meta.json").read_text())
    (tmp / "tmpdir").mkdir()
    # the folder named in the code itself: an unsandboxed scoring command gets no TMPDIR of the
    # harness (its environment is an allowlist), and a dig into the real /tmp would outlive the test
    digger = DIGGER.replace("_tempfile.gettempdir()", repr(str(tmp / "tmpdir")))
    patch = tree_patch([Change("calc.py", BUGGY.encode(), digger.encode())])
    res = scoring.score_patch(sealed, meta, patch, tmp / "logs", 60)
    assert res.status == "pass", res
    assert max_depth(tmp / "tmpdir") >= 1500        # it really dug (and only there is it left)


# ---------------------------------------------------------------------------------------------
# (b) the one sandboxed test: an agent, then scoring in the sandbox


@pytest.mark.sandbox
@pytest.mark.skipif(bool(sandbox.bwrap_problem()) and not os.environ.get("CI"),
                    reason="needs the sandbox")   # (CI: a missing sandbox fails the test)
def test_deep_leftovers_of_an_agent_and_of_tested_code_are_never_infra_fail(sealed: Path, tmp: Path) -> None:
    dig = (f"{sys.executable} -c \"import os\nfor top in ('.', os.environ['SEALBENCH_OUT']):\n"
           f"    os.chdir(top)\n    for _ in range(1500):\n        os.mkdir('d'); os.chdir('d')\n"
           f"    open('leaf.txt', 'w').write('x')\"")
    rd = tmp / "results" / "run"
    options = run_agent.RunOptions(sandbox_mode="required", hide=(tmp / "pack", tmp / "results"))
    rec = run_agent.run_agent(sealed, rd, "digger", "0" * 16, f"{FIX_AGENT}; {dig}", {}, 1, ENVELOPE, options)
    assert rec["end_reason"] != "harness_error" and "deeper than" in (rec["patch_error"] or ""), rec
    assert any("deeper than" in p for p in rec["report_problems"]), rec["report_problems"]
    assert (rd / "out" / "stamp.json").is_file() and max_depth(rd / "out") < 300
    score = hidden_score.score_run(sealed, rd, tmp / "results" / "score.json", 60)
    assert score["status"] == "fail" and "deeper than" in score["reason"], score
    # the tested code digs at scoring time, in the sandbox: the verdict stays the patch's own
    meta = json.loads((sealed / "meta.json").read_text())
    box = sandbox.make_sandbox("bwrap", hide=[tmp / "pack", tmp / "results"])
    patch = tree_patch([Change("calc.py", BUGGY.encode(), DIGGER.encode())])
    res = scoring.score_patch(sealed, meta, patch, tmp / "logs", 60, sandbox=box)
    assert res.status == "pass", res
