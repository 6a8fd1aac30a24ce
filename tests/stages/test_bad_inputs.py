"""Bad-input corpus: malformed packs, configs, manifests, ledgers and patches.

Every case starts from a valid generated pack + config (``packgen``) and applies ONE mutation.
The pre-job checks are run the way ``workflow/rules/common.smk`` runs them, as plain function
calls (``preflight``): config -> pack (load + digest) -> split -> denylist, plus the pack's
ledger (``read_ledger``). Each case then asserts one of:

* ``Err``: a clear error of the given type whose text names the file and the field (or line);
* ``Score``: the inputs are accepted and the problem surfaces as a task-level outcome of
  ``scoring.score_patch`` (status plus a reason in words);
* ``Ok``: the product accepts the input on purpose (the check documents what it does).

Three cases also go through a real ``snakemake -n`` to show that the refusal happens before
any job and that no earlier result under ``results/`` is deleted or changed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import BUGGY, ORACLE, make_pack, write_config, write_task  # noqa: E402
from pipeline_runs import smk  # noqa: E402
from sealbench.core import configuration, core  # noqa: E402
from sealbench.core.core import ConfigError, PackError  # noqa: E402
from sealbench.pack import packs  # noqa: E402
from sealbench.provenance.ledger import LEDGER, read_ledger  # noqa: E402
from sealbench.scoring import patch_apply, scoring  # noqa: E402
from sealbench.stages import hash_pack, leak_check, split  # noqa: E402
from sealbench.stages.split import SplitError  # noqa: E402

TASK = "t03"  # the task most mutations touch
DEL = object()  # sentinel: delete this meta key


# ---------------------------------------------------------------------------- the harness

@dataclass
class Ctx:
    root: Path
    pack: Path
    cfg: dict
    cfg_path: Path
    patch: bytes | None = None  # for Score cases: the patch scored on TASK
    notes: dict = field(default_factory=dict)

    @property
    def task(self) -> Path:
        return self.pack / "tasks" / TASK

    def meta(self, tid: str = TASK) -> dict:
        return json.loads((self.pack / "tasks" / tid / "meta.json").read_text())


def new_ctx(root: Path) -> Ctx:
    pack = make_pack(root / "pack")
    cfg_path = write_config(root / "cfg.yaml", pack)
    return Ctx(root, pack, yaml.safe_load(cfg_path.read_text()), cfg_path)


def preflight(ctx: Ctx) -> hash_pack.PackPlan:
    """What common.smk checks before any job, as direct calls; returns the pack plan."""
    ctx.cfg_path.write_text(yaml.safe_dump(ctx.cfg, sort_keys=False))
    cfg = configuration.load_config_file(ctx.cfg_path)
    plan = hash_pack.plan_pack(Path(cfg["pack"]), cfg["strata"], ctx.root / "hashcache.json")
    strata_of = {tid: t.stratum for tid, t in plan.tasks.items()}
    split.check(plan.pack, strata_of, cfg["seed"], cfg["holdout_frac"])
    leak_check.read_denylist(plan.pack / "denylist.txt")
    read_ledger(plan.pack / LEDGER)
    return plan


@dataclass(frozen=True)
class Err:
    exc: type
    needles: tuple[str, ...]

    def __init__(self, exc: type, *needles: str) -> None:
        object.__setattr__(self, "exc", exc)
        object.__setattr__(self, "needles", needles)


@dataclass(frozen=True)
class Score:
    status: str
    needles: tuple[str, ...] = ()
    after: Callable[[Ctx], None] | None = None


@dataclass(frozen=True)
class Ok:
    check: Callable[[Ctx, hash_pack.PackPlan], None]


# ---------------------------------------------------------------------------- mutation helpers

def set_meta(tid: str = TASK, **changes: Any) -> Callable[[Ctx], None]:
    def mutate(ctx: Ctx) -> None:
        meta = ctx.meta(tid)
        for k, v in changes.items():
            if v is DEL:
                meta.pop(k, None)
            else:
                meta[k] = v
        (ctx.pack / "tasks" / tid / "meta.json").write_text(json.dumps(meta, indent=2))
    return mutate


def write_bytes(rel: str, data: bytes) -> Callable[[Ctx], None]:
    def mutate(ctx: Ctx) -> None:
        (ctx.pack / rel).write_bytes(data)
    return mutate


def remove(rel: str) -> Callable[[Ctx], None]:
    def mutate(ctx: Ctx) -> None:
        p = ctx.pack / rel
        shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
    return mutate


def set_cfg(**changes: Any) -> Callable[[Ctx], None]:
    def mutate(ctx: Ctx) -> None:
        ctx.cfg.update(changes)
    return mutate


def edit_manifest(fn: Callable[[dict], None]) -> Callable[[Ctx], None]:
    """Freeze the split of the valid pack, then edit the manifest by hand."""
    def mutate(ctx: Ctx) -> None:
        strata_of = {t.id: t.stratum for t in packs.load_pack(ctx.pack, ctx.cfg["strata"])}
        split.ensure(ctx.pack, strata_of, ctx.cfg["seed"], ctx.cfg["holdout_frac"])
        path = ctx.pack / split.MANIFEST
        man = json.loads(path.read_text())
        fn(man)
        path.write_text(json.dumps(man, indent=2))
    return mutate


LEDGER_LINE = json.dumps({"holdout": {"t00": "d" * 64}, "agents": {"fixer": "0" * 16},
                          "envelope_digest": "e" * 64, "card_name": "default", "time": "2026-01-01"})


def write_ledger(text: str) -> Callable[[Ctx], None]:
    return write_bytes(LEDGER, text.encode())


# --- specific mutations

def empty_tasks(ctx: Ctx) -> None:
    for d in (ctx.pack / "tasks").iterdir():
        shutil.rmtree(d)


def symlink_in_repo(ctx: Ctx) -> None:
    outside = ctx.root / "outside.py"
    outside.write_text("SECRET = 1\n")
    (ctx.task / "repo" / "evil.py").symlink_to(outside)


def symlink_task_folder(ctx: Ctx) -> None:
    elsewhere = ctx.root / "elsewhere"
    write_task(elsewhere, "t12", "xs")
    (ctx.pack / "tasks" / "t12").symlink_to(elsewhere / "t12", target_is_directory=True)


def symlink_repo_folder(ctx: Ctx) -> None:
    outside = ctx.root / "outside_repo"
    shutil.move(str(ctx.task / "repo"), outside)
    (ctx.task / "repo").symlink_to(outside, target_is_directory=True)


def fifo_in_repo(ctx: Ctx) -> None:
    os.mkfifo(ctx.task / "repo" / "pipe")


def case_twin(ctx: Ctx) -> None:
    twin = ctx.pack / "tasks" / TASK.upper()
    if twin.exists():  # case-insensitive file system: the twin cannot exist beside t03
        pytest.skip("case-insensitive file system")
    shutil.copytree(ctx.task, twin)
    set_meta(TASK.upper(), id=TASK.upper())(ctx)


def check_case_twin(ctx: Ctx, plan: hash_pack.PackPlan) -> None:
    # Accepted as two distinct tasks (13 in all) with identical content digests: nothing warns
    # that results/tasks/t03 and results/tasks/T03 would be one folder on a case-insensitive FS.
    assert {TASK, TASK.upper()} <= set(plan.tasks) and len(plan.tasks) == 13
    assert plan.task_digests[TASK] != plan.task_digests[TASK.upper()]  # meta id differs


BIG = 50 * 1024 * 1024


def huge_file(ctx: Ctx) -> None:
    ctx.notes["before"] = core.task_digest(ctx.task)
    with open(ctx.task / "repo" / "big.bin", "wb") as fh:
        fh.truncate(BIG)  # sparse: no disk used


def check_huge_file(ctx: Ctx, plan: hash_pack.PackPlan) -> None:
    # No size limit: the whole 50 MB is read and hashed like any file; the digest changes.
    entries = {e.relpath: e for e in core.tree_entries(ctx.task)}
    assert entries["repo/big.bin"].size == BIG
    import hashlib
    assert entries["repo/big.bin"].sha256 == hashlib.sha256(b"\0" * BIG).hexdigest()
    assert plan.task_digests[TASK] != ctx.notes["before"]


def bad_oracle(ctx: Ctx) -> None:
    # The gold patch's context no longer matches repo/calc.py (e.g. the repo was edited later).
    (ctx.task / "oracle.patch").write_text(ORACLE.replace("a - b", "a * b"))
    ctx.patch = (ctx.task / "oracle.patch").read_bytes()


def parent_path_patch(ctx: Ctx) -> None:
    ctx.patch = (ORACLE + "diff --git a/sub/../../escape.py b/sub/../../escape.py\nnew file mode 100644\n"
                 "--- /dev/null\n+++ b/sub/../../escape.py\n@@ -0,0 +1 @@\n+x = 1\n").encode()


BLOB = bytes(range(256)) * 3 + b"\x00\xff\x00"


def _binary_diff(tmp: Path, with_full_index: bool) -> bytes:
    repo = tmp / "bin_src"
    repo.mkdir()
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(git + ["init", "-q", "."], cwd=repo, check=True)
    (repo / "calc.py").write_text(BUGGY)
    subprocess.run(git + ["add", "."], cwd=repo, check=True)
    subprocess.run(git + ["commit", "-qm", "i"], cwd=repo, check=True)
    (repo / "blob.bin").write_bytes(BLOB)
    subprocess.run(git + ["add", "-N", "blob.bin"], cwd=repo, check=True)
    args = ["diff", "--binary"] if with_full_index else ["diff"]
    return subprocess.run(git + args, cwd=repo, check=True, capture_output=True).stdout


def binary_patch(ctx: Ctx) -> None:
    ctx.patch = ORACLE.encode() + _binary_diff(ctx.root, True)
    assert b"GIT binary patch" in ctx.patch


def check_binary_applied(ctx: Ctx) -> None:
    ws = ctx.root / "ws"
    shutil.copytree(ctx.task / "repo", ws)
    app = patch_apply.apply_patch_details(ws, ctx.patch, allow_binary=True)
    assert app.applied and (ws / "blob.bin").read_bytes() == BLOB


def binary_patch_no_index(ctx: Ctx) -> None:
    ctx.patch = ORACLE.encode() + _binary_diff(ctx.root, False)
    assert b"Binary files" in ctx.patch


def stray_file(ctx: Ctx) -> None:
    (ctx.pack / "tasks" / "README.md").write_text("notes\n")


def nested_typo(ctx: Ctx) -> None:
    env = ctx.cfg["envelope"]
    env["max_step"] = env.pop("max_steps")


def public_without_decision(ctx: Ctx) -> None:
    folder = ctx.root / "results" / "experiments" / "0123456789abcdef"
    folder.mkdir(parents=True)
    (folder / "experiment.json").write_text("{}\n")
    ctx.cfg["public_results"] = str(folder)


def endpoint_not_loopback(ctx: Ctx) -> None:
    ctx.cfg["agents"]["fixer"]["endpoint"] = "8.8.8.8:53"


def move_to_both(man: dict) -> None:
    man["holdout"].append(man["tune"][0])


def add_unknown(man: dict) -> None:
    man["tune"].append("t99")


def seed_as_string(man: dict) -> None:
    man["seed"] = str(man["seed"])


def drop_holdout(man: dict) -> None:
    del man["holdout"]


M = f"tasks/{TASK}/meta.json"

CASES: list = [
    # --- meta.json: missing / extra keys
    ("meta_missing_title", set_meta(title=DEL), Err(PackError, M, "missing required key 'title'")),
    ("meta_missing_stratum", set_meta(stratum=DEL), Err(PackError, M, "missing required key 'stratum'")),
    ("meta_missing_hidden_command", set_meta(hidden_command=DEL),
     Err(PackError, M, "missing required key 'hidden_command'")),
    ("meta_extra_key", set_meta(difficulty="hard"), Err(PackError, M, "unknown key 'difficulty'")),
    # --- meta.json: wrong types and values
    ("meta_time_box_string", set_meta(time_box_sec="60"),
     Err(PackError, M, "field 'time_box_sec'", "is not of type 'integer'")),
    ("meta_failing_tests_float", set_meta(failing_tests=1.5),
     Err(PackError, M, "field 'failing_tests'", "is not of type 'integer'")),
    ("meta_loc_negative", set_meta(loc=-3), Err(PackError, M, "field 'loc'", "-3 is less than the minimum of 0")),
    ("meta_tags_not_list", set_meta(tags="bug"), Err(PackError, M, "field 'tags'", "is not of type 'array'")),
    ("meta_title_newline", set_meta(title="wrong total\nsecond line"),
     Err(PackError, M, "field 'title'", "does not match")),
    ("meta_title_trailing_newline", set_meta(title="wrong total\n"), Err(PackError, M, "field 'title'")),
    ("meta_time_box_negative", set_meta(time_box_sec=-5),
     Err(PackError, M, "field 'time_box_sec'", "-5 is less than or equal to the minimum of 0")),
    ("meta_time_box_zero", set_meta(time_box_sec=0),
     Err(PackError, M, "field 'time_box_sec'", "0 is less than or equal to the minimum of 0")),
    ("meta_id_not_dir_name", set_meta(id="t33"),
     Err(PackError, M, "field 'id'", "'t33' does not equal the folder name 't03'")),
    ("meta_stratum_not_in_config", set_meta(stratum="xl"),
     Err(PackError, M, "field 'stratum'", "'xl' is not one of the configured strata")),
    # --- meta.json / prompt.md: encoding and shape
    ("meta_not_utf8", write_bytes(M, b'{"id": "t03", "title": "caf\xe9"}'), Err(PackError, M, "not UTF-8 text")),
    ("meta_not_json", write_bytes(M, b'{"id": "t03",\n "title": }\n'),
     Err(PackError, M, "not valid JSON (line 2")),
    ("meta_json_list", write_bytes(M, b'["t03"]\n'), Err(PackError, M, "must be a JSON object")),
    ("prompt_not_utf8", write_bytes(f"tasks/{TASK}/prompt.md", b"caf\xe9 \xff\n"),
     Err(PackError, f"tasks/{TASK}/prompt.md", "not UTF-8 text")),
    # --- pack layout
    ("tasks_empty", empty_tasks, Err(PackError, "pack/tasks", "holds no tasks")),
    ("tasks_missing", remove("tasks"), Err(ConfigError, "cfg.yaml", "field 'pack'", "has no tasks/ folder")),
    ("tasks_stray_file", stray_file, Err(PackError, "tasks/README.md", "not a task folder")),
    ("task_folder_symlink_outside", symlink_task_folder, Err(PackError, "tasks/t12", "is a symlink")),
    ("repo_symlink_outside", symlink_in_repo, Err(PackError, f"tasks/{TASK}/repo/evil.py", "is a symlink")),
    ("repo_folder_symlink_outside", symlink_repo_folder,
     Err(PackError, f"tasks/{TASK}/repo", "is a symlink")),
    ("repo_fifo", fifo_in_repo, Err(PackError, f"tasks/{TASK}/repo/pipe", "special file")),
    ("missing_repo", remove(f"tasks/{TASK}/repo"), Err(PackError, f"tasks/{TASK}/repo/", "missing folder")),
    ("missing_hidden_tests", remove(f"tasks/{TASK}/hidden_tests"),
     Err(PackError, f"tasks/{TASK}/hidden_tests/", "missing folder")),
    ("missing_oracle_patch", remove(f"tasks/{TASK}/oracle.patch"),
     Err(PackError, f"tasks/{TASK}/oracle.patch", "missing")),
    ("ids_differ_only_by_case", case_twin, Ok(check_case_twin)),
    ("huge_sparse_file", huge_file, Ok(check_huge_file)),
    ("denylist_not_utf8", write_bytes("denylist.txt", b"# list\nna\xefve\n"),
     Err(PackError, "denylist.txt", "not UTF-8 text")),
    # --- split manifest edited by hand
    ("split_task_in_both_lists", edit_manifest(move_to_both),
     Err(SplitError, "split_manifest.json", "tasks in both tune and holdout")),
    ("split_unknown_id", edit_manifest(add_unknown),
     Err(SplitError, "split_manifest.json", "in the manifest but not in the pack: ['t99']")),
    ("split_seed_wrong_type", edit_manifest(seed_as_string),
     Err(SplitError, "split_manifest.json", "field 'seed' has the wrong type")),
    ("split_missing_field", edit_manifest(drop_holdout),
     Err(SplitError, "split_manifest.json", "missing field 'holdout'")),
    ("split_not_json", write_bytes(split.MANIFEST, b'{"seed": 7,'),
     Err(PackError, "split_manifest.json", "not valid JSON (line 1")),
    # --- ledger
    ("ledger_truncated", write_ledger(LEDGER_LINE + "\n" + LEDGER_LINE[:40]),
     Err(ValueError, "ledger.jsonl:2:", "not a JSON line", "truncated")),
    ("ledger_line_not_object", write_ledger(LEDGER_LINE + "\n[1, 2]\n"),
     Err(ValueError, "ledger.jsonl:2:", "not a ledger entry")),
    # --- config
    ("config_top_level_typo", set_cfg(holdout_frc=0.5),
     Err(ConfigError, "cfg.yaml", "unknown key 'holdout_frc'", "did you mean 'holdout_frac'")),
    ("config_nested_typo", nested_typo,
     Err(ConfigError, "cfg.yaml", "unknown key 'envelope.max_step'", "(did you mean 'max_steps'?)",
         "missing required key 'envelope.max_steps'")),
    ("config_wrong_enum", set_cfg(score_split="holdot"),
     Err(ConfigError, "cfg.yaml", "field 'score_split'", "'holdot' is not one of")),
    ("config_candidate_unknown", set_cfg(candidate="ghost"),
     Err(ConfigError, "cfg.yaml", "field 'candidate'", "'ghost' is neither an agent")),
    ("config_candidate_is_control", set_cfg(candidate="oracle"),
     Err(ConfigError, "cfg.yaml", "field 'candidate'", "a control ('oracle') cannot be the candidate")),
    ("config_sandbox_maybe", set_cfg(sandbox="maybe"),
     Err(ConfigError, "cfg.yaml", "field 'sandbox'", "'maybe' is not one of")),
    ("config_endpoint_not_loopback", endpoint_not_loopback,
     Err(ConfigError, "cfg.yaml", "field 'agents.fixer.endpoint'", "'8.8.8.8:53' does not match")),
    ("config_human_clashes_with_agent", set_cfg(humans=["idle"]),
     Err(ConfigError, "cfg.yaml", "field 'humans'", "'idle' is already an agent")),
    ("config_public_results_no_decision", public_without_decision,
     Err(ConfigError, "cfg.yaml", "field 'public_results'", "holds no decision.json")),
    # --- task-level outcomes (the inputs pass every pre-job check)
    ("oracle_does_not_apply", bad_oracle, Score("fail", ("git apply failed", "calc.py"))),
    ("patch_parent_paths", parent_path_patch,
     Score("fail", ("patch touches a path outside the workspace", "'sub/../../escape.py'"))),
    # binary files are refused unless the task opts in (meta allow_binary); when it does, git
    # applies them byte for byte
    ("patch_git_binary", binary_patch, Score("tamper", ("blob.bin", "binary"), check_binary_applied)),
    ("patch_binary_without_full_index", binary_patch_no_index, Score("tamper", ("blob.bin", "binary"))),
]


def _ids(cases: list) -> list[str]:
    return [c.values[0] if hasattr(c, "values") else c[0] for c in cases]


@pytest.mark.unit
def test_corpus_is_large_and_ids_unique() -> None:
    ids = _ids(CASES)
    assert len(ids) == len(set(ids)) and len(ids) >= 30


@pytest.mark.sandbox
@pytest.mark.parametrize("case_id,mutate,expected", CASES, ids=_ids(CASES))
def test_bad_input(tmp_path: Path, case_id: str, mutate: Callable[[Ctx], None], expected: Any) -> None:
    ctx = new_ctx(tmp_path)
    preflight(ctx)  # the generated pack and config are valid before the mutation
    mutate(ctx)
    if isinstance(expected, Err):
        try:
            preflight(ctx)
        except expected.exc as exc:
            msg = str(exc)
        else:
            pytest.fail(f"{case_id}: accepted; expected {expected.exc.__name__} naming {expected.needles}")
        assert "Traceback" not in msg
        for needle in expected.needles:
            assert needle in msg, f"{case_id}: {needle!r} not in error:\n{msg}"
    elif isinstance(expected, Score):
        preflight(ctx)  # task-level problem: no pre-job check refuses it
        res = scoring.score_patch(ctx.task, ctx.meta(), ctx.patch, tmp_path / "logs", 30)
        assert res.status == expected.status, (res.status, res.reason)
        for needle in expected.needles:
            assert needle in (res.reason or ""), f"{case_id}: {needle!r} not in reason: {res.reason!r}"
        if expected.status != "pass":
            assert res.reason
        if expected.after:
            expected.after(ctx)
    else:
        expected.check(ctx, preflight(ctx))


# ---------------------------------------------------------------------------- through snakemake -n

def _results_snapshot(wd: Path) -> dict[str, bytes | None]:
    res = wd / "results"
    return {p.relative_to(wd).as_posix(): (p.read_bytes() if p.is_file() and not p.is_symlink() else None)
            for p in sorted(res.rglob("*"))}


SMK_CASES = {
    "config_wrong_enum": ["field 'score_split'", "'holdot' is not one of"],
    "meta_not_utf8": [M, "not UTF-8 text"],
    "split_unknown_id": ["split_manifest.json", "in the manifest but not in the pack: ['t99']"],
}


@pytest.mark.pipeline
@pytest.mark.parametrize("case_id", sorted(SMK_CASES))
def test_refused_before_any_job_and_results_kept(tmp_path: Path, case_id: str) -> None:
    mutate = {cid: fn for cid, fn, _ in (c for c in CASES if not hasattr(c, "values"))}[case_id]
    ctx = new_ctx(tmp_path)
    # Earlier results of a previous experiment that must survive the refused run.
    earlier = tmp_path / "results" / "experiments" / "0123456789abcdef"
    earlier.mkdir(parents=True)
    (earlier / "decision.json").write_text('{"publishable": false}\n')
    scores = tmp_path / "results" / "tasks" / TASK / ("a" * 64) / "scores" / "fixer" / ("b" * 16)
    scores.mkdir(parents=True)
    (scores / "1.json").write_text('{"status": "pass"}\n')
    mutate(ctx)
    ctx.cfg_path.write_text(yaml.safe_dump(ctx.cfg, sort_keys=False))
    before = _results_snapshot(tmp_path)
    res = smk(tmp_path, "-n", "gate", configfile=ctx.cfg_path, timeout=120)
    assert res.returncode != 0
    for needle in SMK_CASES[case_id]:
        assert needle in res.stderr, res.stderr[-3000:]
    assert "Nothing was run; no result was changed." in res.stderr
    assert "Traceback" not in res.stderr, res.stderr[-3000:]
    after = _results_snapshot(tmp_path)
    assert {k: v for k, v in after.items() if k in before} == before, "an earlier result was deleted or changed"
    assert all(k.startswith("results/.sealbench") for k in set(after) - set(before)), sorted(set(after) - set(before))


# ---------------------------------------------------------------------------- defaults


@pytest.mark.unit
def test_config_defaults_come_from_the_schema_only(tmp_path: Path, monkeypatch) -> None:
    """Every default a validated config gets is the schema's; changing the schema changes it."""
    cfg = yaml.safe_load(write_config(tmp_path / "cfg.yaml", make_pack(tmp_path / "pack")).read_text())
    for key in ("oracle_runs", "score_timeout_s", "sandbox", "limits", "batch_size"):
        cfg.pop(key, None)
    schema = core.load_schema("config.schema.yaml")
    filled = configuration.validate_config(cfg)
    for key in ("oracle_runs", "score_timeout_s", "sandbox", "limits", "batch_size"):
        assert filled[key] == schema["properties"][key]["default"], key
    schema["properties"]["score_timeout_s"]["default"] = 123
    schema["properties"]["limits"]["default"]["max_processes"] = 77
    monkeypatch.setattr(configuration, "_parsed_schema", lambda name: schema)
    filled = configuration.validate_config(dict(cfg, limits={"max_memory_mb": 100}))
    assert filled["score_timeout_s"] == 123 and filled["limits"]["max_processes"] == 77
    assert filled["limits"]["max_memory_mb"] == 100
    assert not hasattr(core, "CONFIG_DEFAULTS") and not hasattr(configuration, "CONFIG_DEFAULTS")
