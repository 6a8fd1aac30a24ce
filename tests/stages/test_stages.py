"""Fast unit tests of the stage functions: digests, config/meta validation, leak check, split,
workspaces, patches, the runner and scoring."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import FIXED, ORACLE, make_pack, write_config  # noqa: E402
from sealbench.core import configuration, core, processes  # noqa: E402
from sealbench.core.core import ConfigError, PackError  # noqa: E402
from sealbench.pack import packs, workspace  # noqa: E402
from sealbench.scoring import scoring, sealed_command  # noqa: E402
from sealbench.stages import hash_pack, leak_check, split  # noqa: E402

# ---------------------------------------------------------------------------- digests

@pytest.mark.unit
def test_task_digest_is_content_addressed(tmp_path: Path) -> None:
    pack = make_pack(tmp_path / "p")
    t = pack / "tasks" / "t00"
    d0 = core.task_digest(t)
    f = t / "repo" / "calc.py"
    f.write_text(f.read_text())
    os.utime(f, (1, 1))
    assert core.task_digest(t) == d0, "mtime alone must not change the digest"
    f.write_text(f.read_text() + " ")
    d1 = core.task_digest(t)
    assert d1 != d0
    (t / "repo" / "calc.py").rename(t / "repo" / "calc2.py")
    assert core.task_digest(t) not in (d0, d1), "a rename changes the digest"


@pytest.mark.unit
def test_hash_cache_catches_content_change_with_old_mtime(tmp_path: Path) -> None:
    pack = make_pack(tmp_path / "p")
    t = pack / "tasks" / "t00"
    cache = core.HashCache(tmp_path / "cache.json")
    d0 = core.task_digest(t, cache)
    cache.save()
    f = t / "repo" / "calc.py"
    st = f.stat()
    f.write_text(FIXED)  # same size as the buggy line? not necessarily; keep mtime old
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    cache2 = core.HashCache(tmp_path / "cache.json")
    assert core.task_digest(t, cache2) != d0


@pytest.mark.unit
def test_symlinks_and_fifos_are_refused_naming_the_path(tmp_path: Path) -> None:
    pack = make_pack(tmp_path / "p")
    link = pack / "tasks" / "t01" / "repo" / "evil.py"
    link.symlink_to("/etc/passwd")
    with pytest.raises(PackError, match=r"t01/repo/evil.py: is a symlink"):
        core.task_digest(pack / "tasks" / "t01")
    link.unlink()
    os.mkfifo(pack / "tasks" / "t01" / "repo" / "pipe")
    with pytest.raises(PackError, match="special file"):
        core.task_digest(pack / "tasks" / "t01")


@pytest.mark.unit
def test_pack_digest_changes_with_one_task_and_denylist(tmp_path: Path) -> None:
    pack = make_pack(tmp_path / "p")
    p0 = hash_pack.plan_pack(pack)
    (pack / "tasks" / "t02" / "prompt.md").write_text("other words\n")
    p1 = hash_pack.plan_pack(pack)
    assert p1.pack_digest != p0.pack_digest
    assert {k for k in p0.task_digests if p0.task_digests[k] != p1.task_digests[k]} == {"t02"}
    (pack / "denylist.txt").write_text("something else\n")
    assert hash_pack.plan_pack(pack).pack_digest != p1.pack_digest


@pytest.mark.unit
def test_seal_task_verifies_digest(tmp_path: Path) -> None:
    pack = make_pack(tmp_path / "p")
    t = pack / "tasks" / "t00"
    d = core.task_digest(t)
    rec = hash_pack.seal_task(t, d, tmp_path / "sealed", tmp_path / "sealed.json")
    assert rec["task_digest"] == d
    assert not os.access(tmp_path / "sealed" / "oracle.patch", os.W_OK) or os.geteuid() == 0
    with pytest.raises(hash_pack.DigestMismatch, match="changed while the workflow ran"):
        hash_pack.seal_task(t, "0" * 64, tmp_path / "sealed2", tmp_path / "sealed2.json")


# ------------------------------------------------------------------ config and meta

def _cfg(tmp_path: Path, **over) -> dict:
    import yaml

    pack = make_pack(tmp_path / "p")
    return yaml.safe_load(write_config(tmp_path / "c.yaml", pack, **over).read_text())


@pytest.mark.unit
def test_config_unknown_key_is_named_with_a_suggestion(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    cfg["epohcs"] = 2
    with pytest.raises(ConfigError, match=r"unknown key 'epohcs' \(did you mean 'epochs'\?\)"):
        configuration.validate_config(cfg)


@pytest.mark.unit
def test_config_nested_unknown_and_type_errors(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    cfg["envelope"]["max_step"] = 3
    cfg["seed"] = "seven"
    with pytest.raises(ConfigError) as exc:
        configuration.validate_config(cfg)
    msg = str(exc.value)
    assert "unknown key 'envelope.max_step'" in msg and "field 'seed'" in msg


@pytest.mark.unit
def test_config_candidate_must_be_an_agent(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, candidate="ghost")
    with pytest.raises(ConfigError, match="field 'candidate': 'ghost' is neither an agent"):
        configuration.validate_config(cfg)
    cfg = _cfg(tmp_path / "b", baseline="empty_diff")
    assert configuration.validate_config(cfg)["baseline"] == "empty_diff"


@pytest.mark.unit
def test_config_missing_key_and_missing_pack(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    del cfg["mde"]
    cfg["pack"] = str(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="missing required key 'mde'"):
        configuration.validate_config(cfg)
    cfg["mde"] = 0.1
    with pytest.raises(ConfigError, match="field 'pack'.*does not exist"):
        configuration.validate_config(cfg)


@pytest.mark.unit
def test_bundled_config_is_valid(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)  # `pack: suite` is relative to the working directory
    cfg = configuration.load_config_file(ROOT / "config" / "config.yaml")
    assert cfg["candidate"] in cfg["agents"] and cfg["baseline"] in cfg["agents"]


@pytest.mark.unit
@pytest.mark.parametrize("mutate,needle", [
    (lambda m: m.pop("title"), "missing required key 'title'"),
    (lambda m: m.update(extra=1), "unknown key 'extra'"),
    (lambda m: m.update(id="other"), "does not equal the folder name"),
    (lambda m: m.update(time_box_sec=0), "field 'time_box_sec'"),
    (lambda m: m.update(loc="12"), "field 'loc'"),
    (lambda m: m.update(stratum="xl"), "field 'stratum': 'xl' is not one of the configured strata"),
])
def test_meta_errors_name_file_and_field(tmp_path: Path, mutate, needle) -> None:
    pack = make_pack(tmp_path / "p")
    meta_path = pack / "tasks" / "t03" / "meta.json"
    meta = json.loads(meta_path.read_text())
    mutate(meta)
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(PackError) as exc:
        packs.load_pack(pack, ["xs", "s", "m"])
    assert "t03/meta.json" in str(exc.value) and needle in str(exc.value)


@pytest.mark.unit
def test_non_utf8_prompt_and_missing_parts(tmp_path: Path) -> None:
    pack = make_pack(tmp_path / "p")
    (pack / "tasks" / "t02" / "prompt.md").write_bytes(b"caf\xe9\n")
    (pack / "tasks" / "t05" / "oracle.patch").unlink()
    with pytest.raises(PackError) as exc:
        packs.load_pack(pack)
    assert "t02/prompt.md: not UTF-8" in str(exc.value)
    assert "t05/oracle.patch: missing" in str(exc.value)


@pytest.mark.unit
def test_empty_tasks_folder(tmp_path: Path) -> None:
    (tmp_path / "p" / "tasks").mkdir(parents=True)
    with pytest.raises(PackError, match="holds no tasks"):
        packs.load_pack(tmp_path / "p")


# ---------------------------------------------------------------------------- leak check

DENY = [leak_check.DenyLine(3, "Modeling's `separability_matrix` does not compute separability correctly for nested CompoundModels"),
        leak_check.DenyLine(4, "https://github.com/astropy/astropy/issues/12906"),
        leak_check.DenyLine(5, "has_close_elements")]


@pytest.mark.unit
def test_leak_token_overlap_of_four() -> None:
    hits = leak_check.leak_hits("x", "separability matrix compute nested models", "", "", set(), DENY)
    assert [h.rule for h in hits] == ["token_overlap"] and hits[0].lineno == 3


@pytest.mark.unit
def test_leak_three_tokens_is_not_enough() -> None:
    assert leak_check.leak_hits("x", "separability compute nested", "", "", set(), DENY) == []


@pytest.mark.unit
def test_leak_containment_and_identifier() -> None:
    hits = leak_check.leak_hits("x", "t", "", "see https://github.com/astropy/astropy/issues/12906", set(), DENY)
    assert {h.rule for h in hits} == {"token_overlap", "contains_line"} and {h.lineno for h in hits} == {4}
    hits = leak_check.leak_hits("x", "t", "", "", {"has_close_elements"}, DENY)
    assert hits[0].rule == "identifier" and "repo/" in hits[0].evidence
    assert leak_check.leak_hits("has_close_elements", "t", "", "", set(), DENY)[0].rule == "identifier"


@pytest.mark.unit
def test_bundled_suite_has_no_leak_suspects() -> None:
    suite = ROOT / "suite"
    deny = leak_check.read_denylist(suite / "denylist.txt")
    assert len(deny) >= 20
    for t in packs.load_pack(suite):
        assert leak_check.check_task(t.dir, deny) == [], t.id


# -------------------------------------------------------------------------------- split

STRATA = {f"t{i:02d}": ("xs", "s", "m")[i % 3] for i in range(24)}


@pytest.mark.unit
def test_split_is_seeded_stratified_and_has_min_holdout() -> None:
    a = split.make_split(STRATA, 1, 0.4)
    assert a == split.make_split(STRATA, 1, 0.4)
    assert a != split.make_split(STRATA, 2, 0.4)
    for s in ("xs", "s", "m"):
        assert sum(STRATA[t] == s for t in a["holdout"]) == round(8 * 0.4)
    small = {k: v for k, v in list(STRATA.items())[:12]}
    b = split.make_split(small, 1, 0.1)
    assert len(b["holdout"]) >= 5


@pytest.mark.unit
def test_split_refuses_fewer_than_twelve() -> None:
    with pytest.raises(split.SplitError, match="11 tasks"):
        split.make_split(dict(list(STRATA.items())[:11]), 1, 0.4)


@pytest.mark.unit
def test_manifest_written_once_and_checked(tmp_path: Path) -> None:
    m, created = split.ensure(tmp_path, STRATA, 5, 0.4)
    assert created
    m2, created2 = split.ensure(tmp_path, STRATA, 5, 0.4)
    assert not created2 and m2["holdout"] == m["holdout"]
    with pytest.raises(split.SplitError, match="refusing to resplit"):
        split.ensure(tmp_path, STRATA, 6, 0.4)
    more = dict(STRATA, t99="xs")
    with pytest.raises(split.SplitError, match=r"no longer matches the pack.*t99"):
        split.ensure(tmp_path, more, 5, 0.4)
    data = json.loads((tmp_path / "split_manifest.json").read_text())
    data["holdout"].append(data["tune"][0])
    (tmp_path / "split_manifest.json").write_text(json.dumps(data))
    with pytest.raises(split.SplitError, match="both tune and holdout"):
        split.ensure(tmp_path, STRATA, 5, 0.4)


# ------------------------------------------------------------------ workspace and scoring

@pytest.fixture()
def sealed(tmp_path: Path) -> tuple[Path, dict]:
    pack = make_pack(tmp_path / "p")
    t = pack / "tasks" / "t00"
    return t, json.loads((t / "meta.json").read_text())


def _git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=ws, capture_output=True, text=True, check=True).stdout


@pytest.mark.sandbox
def test_workspace_has_one_commit_and_visible_tests_only(sealed, tmp_path: Path) -> None:
    t, _ = sealed
    ws = workspace.make_workspace(t, tmp_path / "ws", tmp_path / "shadow")
    assert (ws.root / "visible_tests" / "check_visible.py").exists()
    assert not (ws.root / "hidden_tests").exists() and not (ws.root / "oracle.patch").exists()
    assert _git(ws.root, "rev-list", "--all").split() == [ws.base_commit]
    assert _git(ws.root, "remote") == ""
    assert _git(ws.root, "status", "--porcelain") == ""
    assert not (ws.root / ".git" / "logs").exists()


@pytest.mark.sandbox
def test_patch_ignores_artefacts_and_survives_git_rewrite(sealed, tmp_path: Path) -> None:
    import shutil

    t, _ = sealed
    ws = workspace.make_workspace(t, tmp_path / "ws", tmp_path / "shadow")
    (ws.root / "calc.py").write_text(FIXED)
    (ws.root / "__pycache__").mkdir()
    (ws.root / "__pycache__" / "calc.cpython-311.pyc").write_bytes(b"\0\1")
    (ws.root / ".pytest_cache").mkdir()
    (ws.root / ".pytest_cache" / "x").write_text("y")
    (ws.root / ".gitignore").write_text("calc.py\n")
    shutil.rmtree(ws.root / ".git")
    subprocess.run(["git", "init", "-q"], cwd=ws.root, check=True)
    patch = workspace.workspace_patch(ws).decode()
    assert "b/calc.py" in patch and "return a + b" in patch
    assert "__pycache__" not in patch and ".pytest_cache" not in patch
    assert ".gitignore" in patch  # the worker's own files are part of its patch


@pytest.mark.sandbox
def test_score_oracle_pass_empty_fail(sealed, tmp_path: Path) -> None:
    t, meta = sealed
    assert scoring.score_patch(t, meta, ORACLE.encode(), tmp_path / "l1", 30).status == "pass"
    res = scoring.score_patch(t, meta, b"", tmp_path / "l2", 30)
    assert res.status == "fail" and res.hidden_pass is False


@pytest.mark.sandbox
def test_score_drops_test_changes(sealed, tmp_path: Path) -> None:
    t, meta = sealed
    evil = ("diff --git a/hidden_tests/check_hidden.py b/hidden_tests/check_hidden.py\n"
            "--- a/hidden_tests/check_hidden.py\n+++ b/hidden_tests/check_hidden.py\n"
            "@@ -1 +1 @@\n-x\n+import sys; sys.exit(0)\n"
            "diff --git a/visible_tests/check_visible.py b/visible_tests/check_visible.py\n"
            "--- a/visible_tests/check_visible.py\n+++ b/visible_tests/check_visible.py\n"
            "@@ -1 +1 @@\n-x\n+import sys; sys.exit(0)\n")
    res = scoring.score_patch(t, meta, evil.encode(), tmp_path / "l", 30)
    assert res.status == "tamper"
    assert res.tamper_paths == ["hidden_tests/check_hidden.py", "visible_tests/check_visible.py"]
    assert res.hidden_pass is False, "the dropped test edits must not make the buggy code pass"


@pytest.mark.sandbox
def test_missing_interpreter_is_infra_fail(sealed, tmp_path: Path) -> None:
    t, meta = sealed
    meta = dict(meta, hidden_command="no-such-interpreter hidden_tests/check_hidden.py")
    res = scoring.score_patch(t, meta, ORACLE.encode(), tmp_path / "l", 30)
    assert res.status == "infra_fail" and "command not found" in res.reason


@pytest.mark.unit
def test_patch_with_parent_paths_is_refused(sealed, tmp_path: Path) -> None:
    t, meta = sealed
    bad = "diff --git a/../x b/../x\n--- a/../x\n+++ b/../x\n@@ -0,0 +1 @@\n+hi\n"
    res = scoring.score_patch(t, meta, bad.encode(), tmp_path / "l", 30)
    assert res.status == "fail" and "outside the workspace" in res.reason


@pytest.mark.sandbox
def test_time_box_kills_the_process_group(tmp_path: Path) -> None:
    marker = tmp_path / "alive"
    cmd = f"(sleep 3; touch {marker}) & sleep 30"
    t0 = time.monotonic()
    res = processes.run_process(cmd, tmp_path, dict(os.environ), 1.0, tmp_path / "o", tmp_path / "e")
    assert res.timed_out and res.end_reason == "time_box"
    assert time.monotonic() - t0 < 10
    time.sleep(3.5)
    assert not marker.exists(), "a child of the worker survived the time box"


@pytest.mark.unit
def test_missing_test_runner_is_infra_not_fail() -> None:
    assert sealed_command.classify_exit("python -m pytest -q t", 1, "/usr/bin/python: No module named pytest") is not None
    assert sealed_command.classify_exit("python -m pytest -q t", 1, "1 failed, 2 passed") is None
    assert sealed_command.classify_exit("python -m pytest -q t", 5, "") == "no tests collected"
