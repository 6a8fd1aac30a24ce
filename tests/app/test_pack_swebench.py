"""``sealbench pack import-swebench``: SWE-bench-style instances from a local git repository into
a verified pack (docs/packs.md "From SWE-bench-style instances"). No network: the repository is
built here, three commits after the base each fixing one bug together with a test change, and
FAIL_TO_PASS/PASS_TO_PASS come from running its tests."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sealbench.builders import pack_swebench, swebench_git  # noqa: E402
from sealbench.builders.swebench_instances import InstancesError, read_instances  # noqa: E402
from sealbench.core.core import SealbenchError  # noqa: E402

OPS0 = ("def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a + b\n\n\n"
        "def neg(x):\n    return x\n\n\ndef ident(x):\n    return x\n")
TEST0 = ("from mathlib.ops import ident\nfrom checks.helpers import twice\n\n\n"
         "def test_ident():\n    assert ident(twice(2)) == 4\n")
FIXES = [  # (source before -> after, the test file changes: path -> new text or (old, new) in place)
    ("    return a - b\n", "    return a + b\n",
     {"checks/test_ops.py": ("", "\n\ndef test_add():\n    from mathlib.ops import add\n    assert add(2, 3) == 5\n")}),
    ("    return a + b\n\n\ndef neg", "    return a * b\n\n\ndef neg",
     {"checks/test_ops.py": ("", "\n\nimport pytest\n\n\n@pytest.mark.parametrize('a, b, c', [pytest.param(2, 3, 6, "
                                "id='two and three'), (1, 1, 1)])\ndef test_mul(a, b, c):\n"
                                "    from mathlib.ops import mul\n    assert mul(a, b) == c\n")}),
    ("def neg(x):\n    return x\n", "def neg(x):\n    return -x\n",
     {"checks/test_neg.py": "from mathlib.ops import neg\n\n\ndef test_neg():\n    assert neg(2) == -2\n",
      "checks/test_ops.py": ("", "\n\ndef test_ident_zero():\n    assert ident(0) == 0\n")}),
]
STATEMENTS = ["add() subtracts\n\nCalling add(2, 3) gives -1.\n", "mul() adds instead of multiplying\n",
              "neg() returns its argument unchanged\n\nExpected neg(2) == -2.\n"]


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env).stdout


def outcomes(folder: Path) -> dict[str, str]:
    """Test id -> PASSED/FAILED/ERROR from one pytest run in ``folder``."""
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "checks"],
                         cwd=folder, capture_output=True, text=True,
                         env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    return {m.group(2): m.group(1) for m in re.finditer(r"^(PASSED|FAILED|ERROR) (.+?)(?: - .*)?$", res.stdout, re.M)}


def make_repo(root: Path) -> tuple[Path, list[dict]]:
    """``root/acme__mathlib``: a base commit, then one commit per fix (source + tests); and the
    three instances, their test ids from running the tests."""
    repo = root / "acme__mathlib"
    (repo / "mathlib").mkdir(parents=True)
    (repo / "checks").mkdir()
    (repo / "mathlib" / "__init__.py").write_text("")
    (repo / "mathlib" / "ops.py").write_text(OPS0)
    (repo / "checks" / "__init__.py").write_text("")
    (repo / "checks" / "helpers.py").write_text("def twice(x):\n    return 2 * x\n")
    (repo / "checks" / "conftest.py").write_text("")
    (repo / "checks" / "test_ops.py").write_text(TEST0)
    (repo / "pyproject.toml").write_text('[project]\nname = "mathlib"\nversion = "0.1"\ndependencies = []\n')
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    instances = []
    for i, (old, new, tests) in enumerate(FIXES):
        base = git(repo, "rev-parse", "HEAD").strip()
        ops = repo / "mathlib" / "ops.py"
        ops.write_text(ops.read_text().replace(old, new, 1))
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", f"fix {i}")
        fixed = git(repo, "rev-parse", "HEAD").strip()
        patch = git(repo, "diff", base, fixed)
        for path, change in tests.items():
            f = repo / path
            f.write_text(f.read_text() + change[1] if isinstance(change, tuple) else change)
        git(repo, "add", "-A")
        git(repo, "commit", "--amend", "-qm", f"fix {i} with tests")
        test_patch = git(repo, "diff", fixed, "HEAD", "--", "checks")
        work = root / f"run{i}"
        shutil.copytree(repo, work, ignore=shutil.ignore_patterns(".git"))
        after = outcomes(work)
        subprocess.run(["git", "apply", "-R", "-"], input=patch, text=True, cwd=work, check=True)
        before = outcomes(work)
        instances.append({
            "instance_id": f"acme__mathlib-{i + 1}", "repo": "acme/mathlib", "base_commit": base, "patch": patch,
            "test_patch": test_patch, "problem_statement": STATEMENTS[i], "version": "0.1",
            "FAIL_TO_PASS": json.dumps(sorted(t for t, o in after.items() if o == "PASSED" and before.get(t) != "PASSED")),
            "PASS_TO_PASS": sorted(t for t, o in after.items() if o == "PASSED" and before.get(t) == "PASSED"),
            "hints_text": "SECRET HINT never shown", "created_at": f"2026-0{i + 1}-01T00:00:00Z"})
    return repo, instances


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> tuple[Path, list[dict]]:
    root = tmp_path_factory.mktemp("clones")
    _repo, instances = make_repo(root)
    return root, instances


@pytest.mark.sandbox
def test_the_repository_gives_three_instances_with_failing_and_passing_tests(source) -> None:
    _root, insts = source
    f2p = [json.loads(i["FAIL_TO_PASS"]) for i in insts]
    assert f2p == [["checks/test_ops.py::test_add"],
                   ["checks/test_ops.py::test_mul[1-1-1]", "checks/test_ops.py::test_mul[two and three]"],
                   ["checks/test_neg.py::test_neg"]]
    assert "checks/test_ops.py::test_ident" in insts[0]["PASS_TO_PASS"]
    assert "checks/test_ops.py::test_ident_zero" in insts[2]["PASS_TO_PASS"]


# ---------------------------------------------------------------------------------------------
# the instances file: every line checked before any work


@pytest.mark.sandbox
def test_bad_lines_are_named_by_line_and_field(tmp_path: Path, source) -> None:
    good = source[1][0]
    rows = [good, "{not json", {**good, "instance_id": "x2", "patch": 5},
            {k: v for k, v in good.items() if k != "base_commit"} | {"instance_id": "x3"},
            {**good, "instance_id": "x4", "FAIL_TO_PASS": "[1, 2"}, {**good, "instance_id": "x5", "PASS_TO_PASS": {}},
            {**good, "instance_id": "bad id!"}, {**good}, {**good, "instance_id": "x6", "repo": "noslash"},
            {**good, "instance_id": "x7", "FAIL_TO_PASS": []}, [1, 2]]
    f = write_jsonl(tmp_path / "inst.jsonl", rows)
    with pytest.raises(InstancesError) as err:
        read_instances(f)
    text = str(err.value)
    for needle in (f"{f}: line 2: not valid JSON", "line 3: field 'patch': must be a string, not int",
                   "line 4: field 'base_commit': missing", "line 5: field 'FAIL_TO_PASS': a string that is not JSON",
                   "line 6: field 'PASS_TO_PASS': must be a list", "line 7: field 'instance_id': 'bad id!'",
                   "line 8: field 'instance_id': 'acme__mathlib-1' repeats line 1", "line 9: field 'repo'",
                   "line 10: field 'FAIL_TO_PASS': empty", "line 11: must be a JSON object, not list",
                   "nothing was written"):
        assert needle in text, (needle, text)
    assert "line 1:" not in text


@pytest.mark.sandbox
def test_json_encoded_and_plain_lists_read_alike(tmp_path: Path, source) -> None:
    insts = read_instances(write_jsonl(tmp_path / "i.jsonl", source[1]))
    assert insts[1].fail_to_pass == ("checks/test_ops.py::test_mul[1-1-1]", "checks/test_ops.py::test_mul[two and three]")
    assert insts[0].pass_to_pass == ("checks/test_ops.py::test_ident",)
    assert insts[0].env_name == "acme__mathlib-0.1" and insts[0].line == 1


# ---------------------------------------------------------------------------------------------
# clones and commits: local only, named when missing


@pytest.mark.sandbox
def test_a_missing_clone_names_every_folder_tried(tmp_path: Path, source) -> None:
    insts = read_instances(write_jsonl(tmp_path / "i.jsonl", [{**source[1][0], "repo": "other/thing"}]))
    with pytest.raises(SealbenchError) as err:
        pack_swebench.locate_sources(insts, source[0])
    text = str(err.value)
    assert "instance acme__mathlib-1 (line 1): no local clone of other/thing" in text
    for tried in ("other__thing (absent)", "/thing (absent)", "other/thing (absent)"):
        assert tried in text


@pytest.mark.sandbox
def test_a_base_commit_missing_from_the_clone_names_the_instance(tmp_path: Path, source) -> None:
    rows = [source[1][0], {**source[1][1], "base_commit": "0123456789abcdef0123456789abcdef01234567"}]
    insts = read_instances(write_jsonl(tmp_path / "i.jsonl", rows))
    with pytest.raises(SealbenchError) as err:
        pack_swebench.locate_sources(insts, source[0])
    assert ("instance acme__mathlib-2 (line 2): base_commit 0123456789abcdef0123456789abcdef01234567 is not in the "
            "clone") in str(err.value)
    assert "acme__mathlib-1" not in str(err.value)


@pytest.mark.sandbox
def test_snapshot_is_the_commit_without_git_and_never_fetches(tmp_path: Path, source) -> None:
    clone = swebench_git.find_clone(source[0], "acme/mathlib")
    snap = swebench_git.snapshot(clone, source[1][0]["base_commit"], tmp_path / "s")
    assert set(snap.files) == {"mathlib/__init__.py", "mathlib/ops.py", "checks/__init__.py", "checks/helpers.py",
                               "checks/conftest.py", "checks/test_ops.py", "pyproject.toml"}
    assert not (tmp_path / "s" / ".git").exists() and (tmp_path / "s" / "mathlib" / "ops.py").read_text() == OPS0
    assert "protocol.allow=never" in swebench_git._LOCAL


# ---------------------------------------------------------------------------------------------
# one task planned: trees, commands, meta; refusals named


def plan(source, tmp_path: Path, i: int, **over) -> pack_swebench.TaskPlan:
    inst = read_instances(write_jsonl(tmp_path / f"p{i}.jsonl", [{**source[1][i], **over}]))[0]
    clone = swebench_git.find_clone(source[0], inst.repo)
    work = tmp_path / f"work{i}"
    work.mkdir()
    return pack_swebench.plan_task(inst, clone, work, ["xs", "s", "m"], 900)


@pytest.mark.sandbox
def test_plan_puts_tests_at_their_paths_and_runs_every_id(tmp_path: Path, source) -> None:
    p = plan(source, tmp_path, 1)
    assert not (p.repo / "checks" / "test_ops.py").exists() and (p.repo / "checks" / "helpers.py").is_file()
    assert set(p.visible) == {"checks/test_ops.py"} and "test_mul" not in p.visible["checks/test_ops.py"]
    assert "def test_mul" in p.hidden["checks/test_ops.py"] and "def test_add" in p.hidden["checks/test_ops.py"]
    m = p.meta
    assert m["hidden_command"] == ("python -m pytest -q -p no:cacheprovider 'checks/test_ops.py::test_mul[1-1-1]' "
                                   "'checks/test_ops.py::test_mul[two and three]' checks/test_ops.py::test_add "
                                   "checks/test_ops.py::test_ident")
    assert m["visible_command"] == "python -m pytest -q -p no:cacheprovider checks/test_ops.py::test_add checks/test_ops.py::test_ident"
    assert m["failing_tests"] == 2 and m["stratum"] == "xs" and m["tests_layout"] == "repo"
    assert m["support_files"] == ["checks/__init__.py", "checks/conftest.py", "checks/helpers.py"]
    assert m["environment"] == "acme__mathlib-0.1" and m["time_box_sec"] == 900 and m["title"] == "mul() adds instead of multiplying"
    assert m["notes"].startswith(f"imported from SWE-bench-style instance acme__mathlib-2 of acme/mathlib@"
                                 f"{source[1][1]['base_commit'][:12]}, created_at 2026-02-01T00:00:00Z")
    assert p.prompt == STATEMENTS[1] and p.oracle == source[1][1]["patch"]


@pytest.mark.sandbox
def test_an_added_test_file_is_hidden_only(tmp_path: Path, source) -> None:
    p = plan(source, tmp_path, 2)
    assert set(p.hidden) == {"checks/test_neg.py", "checks/test_ops.py"} and set(p.visible) == {"checks/test_ops.py"}


@pytest.mark.sandbox
def test_a_patch_that_does_not_apply_is_refused_named(tmp_path: Path, source) -> None:
    with pytest.raises(pack_swebench.Refused, match="the patch does not apply with git apply at base_commit"):
        plan(source, tmp_path, 0, patch=source[1][0]["patch"].replace("return a - b", "return a // b"))


@pytest.mark.sandbox
def test_an_instance_whose_tests_are_all_new_is_refused_with_why(tmp_path: Path, source) -> None:
    only_new = "".join(re.split(r"(?=^diff --git)", source[1][2]["test_patch"], flags=re.M)[:2])
    assert "test_neg.py" in only_new and "test_ops.py" not in only_new
    with pytest.raises(pack_swebench.Refused, match=r"no test can be visible: the test_patch only adds files "
                                                    r"\(checks/test_neg.py\)"):
        plan(source, tmp_path, 2, test_patch=only_new, PASS_TO_PASS=[])


@pytest.mark.sandbox
def test_a_test_id_pytest_cannot_run_is_refused(tmp_path: Path, source) -> None:
    with pytest.raises(pack_swebench.Refused, match="is not a pytest node id"):
        plan(source, tmp_path, 0, PASS_TO_PASS=["test_ident (checks.test_ops.OpsTest)"])


@pytest.mark.sandbox
def test_a_test_patch_that_deletes_a_file_is_refused(tmp_path: Path, source) -> None:
    gone = ("diff --git a/checks/helpers.py b/checks/helpers.py\ndeleted file mode 100644\n--- a/checks/helpers.py\n"
            "+++ /dev/null\n@@ -1,2 +0,0 @@\n-def twice(x):\n-    return 2 * x\n")
    with pytest.raises(pack_swebench.Refused, match="the test_patch deletes or renames checks/helpers.py"):
        plan(source, tmp_path, 0, test_patch=source[1][0]["test_patch"] + gone)


@pytest.mark.sandbox
def test_bad_overrides_and_tasks_already_there_stop_before_any_work(tmp_path: Path, source) -> None:
    insts = read_instances(write_jsonl(tmp_path / "i.jsonl", source[1][:1]))
    (tmp_path / "req.txt").write_text("-e ./local\n")
    for pair, says in (("acme/mathlib", "write it REPO=FILE"), ("other/x=req.txt", "no instance is of other/x"),
                       (f"acme/mathlib={tmp_path / 'req.txt'}", "editable")):
        with pytest.raises(SealbenchError, match=says):
            pack_swebench.requirement_overrides([pair], insts)
    (tmp_path / "pack" / "tasks" / "acme__mathlib-1").mkdir(parents=True)
    opts = pack_swebench.Options(tmp_path / "i.jsonl", source[0], tmp_path / "pack", ["xs"])
    with pytest.raises(SealbenchError, match="already holds acme__mathlib-1; nothing was written"):
        pack_swebench.import_swebench(opts)
    assert not (tmp_path / "pack" / "denylist.txt").exists()


@pytest.mark.unit
def test_strata_follow_the_size_of_the_fix() -> None:
    strata = ["xs", "s", "m"]
    assert [pack_swebench.stratum_for(n, strata) for n in (1, 3, 4, 10, 11, 500)] == ["xs", "xs", "s", "s", "m", "m"]
    assert pack_swebench.stratum_for(50, ["all"]) == "all"


# ---------------------------------------------------------------------------------------------
# the whole import: three verified tasks (offline environment: envgen's wheels)


@pytest.fixture(scope="module")
def imported(tmp_path_factory, source) -> tuple[Path, list, str]:
    from envgen import offline_env_vars, offline_index

    root = tmp_path_factory.mktemp("imp")
    wheels = offline_index(root / "wheels")
    old = {k: os.environ.get(k) for k in offline_env_vars(wheels)}
    os.environ.update(offline_env_vars(wheels))
    try:
        inst = write_jsonl(root / "instances.jsonl", source[1])
        opts = pack_swebench.Options(inst, source[0], root / "pack", ["xs", "s", "m"], env_root=root / "envs",
                                     time_box=600)
        lines: list[str] = []
        outcomes = pack_swebench.import_swebench(opts, log=lines.append)
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    return root / "pack", outcomes, "\n".join(lines)


@pytest.mark.sandbox
def test_import_gives_three_verified_tasks(imported, source) -> None:
    from sealbench.pack.packs import load_pack

    pack, outcomes, log = imported
    assert [(o.id, o.status) for o in outcomes] == [(f"acme__mathlib-{i}", "imported") for i in (1, 2, 3)], log
    # decoys the pipeline's controls will make: some for each task but the one whose prompt quotes its
    # only hidden answer ("Expected neg(2) == -2."; a value the prompt quotes is never changed); a
    # two-test file has words for one decoy name only (names are made from the file's own words)
    decoyed = {o.id: o.decoys for o in outcomes}
    why = [(o.id, o.decoys, o.why) for o in outcomes]
    assert decoyed["acme__mathlib-1"] >= 1 and decoyed["acme__mathlib-2"] >= 1, why
    assert decoyed["acme__mathlib-3"] == 0 and "twin does not fail without the fix" in str(outcomes[2].why), why
    tasks = {t.id: t for t in load_pack(pack, ["xs", "s", "m"])}
    assert sorted(tasks) == ["acme__mathlib-1", "acme__mathlib-2", "acme__mathlib-3"]
    req = (pack / "environments" / "acme__mathlib-0.1" / "requirements.txt").read_text()
    assert req.startswith("# the environment") and "-e" not in req  # no dependency: pytest alone, pinned
    assert sorted(p.name for p in (pack / "environments").iterdir()) == ["acme__mathlib-0.1"]
    deny = (pack / "denylist.txt").read_text()
    assert all(ln.startswith("#") for ln in deny.splitlines()) and "public" in deny


@pytest.mark.sandbox
def test_imported_task_trees_meta_and_prompt(imported, source) -> None:
    pack, _outcomes, _log = imported
    t = pack / "tasks" / "acme__mathlib-3"
    meta = json.loads((t / "meta.json").read_text())
    assert meta["failing_tests"] == 1 and meta["tests_layout"] == "repo" and meta["environment"] == "acme__mathlib-0.1"
    assert meta["title"] == "neg() returns its argument unchanged" and meta["time_box_sec"] == 600
    assert (t / "hidden_tests" / "checks" / "test_neg.py").read_text().startswith("from mathlib.ops import neg")
    assert "test_ident_zero" in (t / "hidden_tests" / "checks" / "test_ops.py").read_text()
    assert "test_ident_zero" not in (t / "visible_tests" / "checks" / "test_ops.py").read_text()
    assert not (t / "visible_tests" / "checks" / "test_neg.py").exists() and not (t / "repo" / "checks" / "test_ops.py").exists()
    assert (t / "repo" / "mathlib" / "ops.py").read_text().count("return x\n") == 2  # neg still buggy
    prompt = (t / "prompt.md").read_text()
    assert prompt == STATEMENTS[2] and "test_neg" not in prompt and "SECRET" not in prompt
    res = subprocess.run(["git", "apply", "--check", str(t / "oracle.patch")], cwd=t / "repo", capture_output=True)
    assert res.returncode == 0, res.stderr
    assert (t / "oracle.patch").read_text() == source[1][2]["patch"]


@pytest.mark.sandbox
def test_a_task_that_does_not_verify_is_removed_with_the_reason(tmp_path: Path, source, monkeypatch) -> None:
    """An instance whose FAIL_TO_PASS test passes before the fix: the empty diff passes, removed."""
    from envgen import offline_env_vars, offline_index

    wheels = offline_index(tmp_path / "wheels")
    for k, v in offline_env_vars(wheels).items():
        monkeypatch.setenv(k, v)
    row = {**source[1][0], "FAIL_TO_PASS": ["checks/test_ops.py::test_ident"], "PASS_TO_PASS": []}
    opts = pack_swebench.Options(write_jsonl(tmp_path / "i.jsonl", [row]), source[0], tmp_path / "pack",
                                 ["xs", "s", "m"], env_root=tmp_path / "envs")
    (o,) = pack_swebench.import_swebench(opts, log=lambda _l: None)
    assert o.status == "not verified" and "the empty diff scored pass" in o.why
    assert not (tmp_path / "pack" / "tasks" / "acme__mathlib-1").exists()
    assert not (tmp_path / "pack" / "environments" / "acme__mathlib-0.1").exists()


# ---------------------------------------------------------------------------------------------
# acceptance: the pipeline runs on an imported pack (12 instances: a split needs 12 tasks)


def make_chain(root: Path, n: int) -> list[dict]:
    """``root/acme__chain``: n buggy functions, then one commit per fix with its test."""
    repo = root / "acme__chain"
    (repo / "chain").mkdir(parents=True)
    (repo / "checks").mkdir()
    (repo / "chain" / "__init__.py").write_text("")
    (repo / "chain" / "ops.py").write_text("".join(f"def f{i}(x):\n    return x - {i + 1}\n\n\n" for i in range(n)))
    (repo / "checks" / "test_ops.py").write_text("from chain import ops\n\n\ndef test_module():\n    assert ops.f0\n")
    (repo / "setup.cfg").write_text("[metadata]\nname = chain\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    rows = []
    for i in range(n):
        base = git(repo, "rev-parse", "HEAD").strip()
        ops = repo / "chain" / "ops.py"
        ops.write_text(ops.read_text().replace(f"    return x - {i + 1}\n", f"    return x + {i + 1}\n"))
        patch = git(repo, "diff")
        test = repo / "checks" / "test_ops.py"
        test.write_text(test.read_text() + f"\n\ndef test_f{i}():\n    assert ops.f{i}(1) == {i + 2}\n")
        test_patch = git(repo, "diff", "--", "checks")
        git(repo, "commit", "-qam", f"fix f{i}")
        rows.append({"instance_id": f"acme__chain-{i}", "repo": "acme/chain", "base_commit": base, "patch": patch,
                     "test_patch": test_patch, "problem_statement": f"f{i}(1) is wrong\n",
                     "FAIL_TO_PASS": [f"checks/test_ops.py::test_f{i}"],
                     "PASS_TO_PASS": ["checks/test_ops.py::test_module"] + [f"checks/test_ops.py::test_f{j}" for j in range(i)]})
    return rows


@pytest.mark.pipeline
def test_the_pipeline_runs_on_an_imported_pack(tmp_path: Path) -> None:
    from envgen import offline_env_vars, offline_index
    from packgen import NOOP_AGENT, STAMP, write_config
    from pipeline_runs import smk
    from sealbench.isolation.sandbox import bwrap_problem

    env = {**os.environ, **offline_env_vars(offline_index(tmp_path / "wheels")), "PYTHONPATH": str(ROOT / "scripts")}
    inst = write_jsonl(tmp_path / "chain.jsonl", make_chain(tmp_path / "clones", 12))
    cli = [sys.executable, "-m", "sealbench.app.cli", "pack", "import-swebench", str(inst), "--repos",
           str(tmp_path / "clones"), "--out", str(tmp_path / "pack"), "--env-root", str(tmp_path / "results" / "envs")]
    res = subprocess.run(cli, cwd=ROOT, env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "12 of 12 instances imported and verified" in res.stdout
    fixer = "sed -i 's/return x - /return x + /' chain/ops.py; " + STAMP
    write_config(tmp_path / "cfg.yaml", tmp_path / "pack", strata=["xs"], batch_size=12,  # every fix here is 2 lines
                 agents={"fixer": {"command": fixer}, "idle": {"command": NOOP_AGENT}})
    res = smk(tmp_path, "--cores", "2", "gate", env=env)
    assert res.returncode == 0, res.stderr[-4000:]
    decision = json.loads((tmp_path / "results" / "latest" / "decision.json").read_text())
    if bwrap_problem():  # without bubblewrap the runs are unsandboxed and the gate says so
        assert [r["code"] for r in decision["reasons"]] == ["UNSANDBOXED"]
    else:
        assert decision["publishable"] is True, decision["reasons"]
        assert decision["headline"] == 1.0
    import pandas as pd

    tasks = pd.read_parquet(tmp_path / "results" / "latest" / "tables" / "tasks.parquet")
    assert len(tasks) == 12 and tasks.oracle_ok.all() and not tasks.weak_test.any()
