"""An agent's identity is its code, not only its command string (issue 11, point 1), plus two
pre-run checks: an impossible mde/planning_discordance pair is a configuration error before any
job, and ``sealbench validate`` says what difference the scored split can detect.

The attack tests (``test_attack_*``) fail on the code before the change: there the fingerprint
hashed the command string, env, endpoint and readonly_paths *names*, and for built-in agents every
file of ``agents/``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import NOOP_AGENT, make_pack, write_config  # noqa: E402
from pipeline_runs import smk  # noqa: E402
from sealbench.app import cli  # noqa: E402
from sealbench.core import configuration, core  # noqa: E402
from sealbench.core.core import ConfigError  # noqa: E402
from sealbench.pack import packs  # noqa: E402
from sealbench.provenance import identity  # noqa: E402
from sealbench.stages import split  # noqa: E402
from sealbench.stats import power  # noqa: E402

AGENT_PY = '''\
"""A tiny user agent: fixes calc.add, writes a stamp."""
import json, os, pathlib, sys
prompt = pathlib.Path(sys.argv[sys.argv.index("--prompt") + 1]).read_text()
src = pathlib.Path("calc.py")
src.write_text(src.read_text().replace("a - b", "a + b"))
out = pathlib.Path(os.environ["SEALBENCH_OUT"])
(out / "stamp.json").write_text(json.dumps({"server_id": "local", "queue_ms": 0, "retries": 0,
                                            "quota_state": "ok", "route_changed": False}))
(out / "steers.jsonl").write_text("")
'''


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """agent_fingerprint sees the working directory: a throwaway one, so nothing lands in the repo."""
    monkeypatch.chdir(tmp_path)


def fp(name: str, spec: dict) -> str:
    return identity.agent_fingerprint(name, spec)


def user_agent(tmp_path: Path) -> tuple[Path, Path, dict]:
    """A user agent in its own folder: a script and the prompt file its command names."""
    d = tmp_path / "agentsrc" / "fixer"
    d.mkdir(parents=True)
    script, prompt = d / "agent.py", d / "prompt.md"
    script.write_text(AGENT_PY)
    prompt.write_text("Fix the calculator. Be careful.\n")
    return script, prompt, {"command": f"python {script} --prompt {prompt}"}


# ---------------------------------------------------------------------------- attacks (unit)

@pytest.mark.unit
def test_attack_editing_the_agent_script_changes_the_fingerprint(tmp_path: Path) -> None:
    script, _prompt, spec = user_agent(tmp_path)
    before = fp("fixer", spec)
    script.write_text(script.read_text() + "# tuned on the holdout failures\n")
    assert fp("fixer", spec) != before, "the agent's own script changed and the fingerprint did not"


@pytest.mark.unit
def test_attack_editing_the_prompt_file_changes_the_fingerprint(tmp_path: Path) -> None:
    _script, prompt, spec = user_agent(tmp_path)
    specs = [spec, {"command": spec["command"].replace("--prompt ", "--prompt=")}]  # --opt=value form too
    before = [fp("fixer", s) for s in specs]
    prompt.write_text("Fix the calculator. Hint: look at the sign in add().\n")
    after = [fp("fixer", s) for s in specs]
    assert after[0] != before[0], "the prompt file named in the command changed; the fingerprint did not"
    assert after[1] != before[1], "--prompt=FILE: the prompt changed; the fingerprint did not"


@pytest.mark.unit
def test_attack_editing_a_file_under_code_paths_changes_the_fingerprint(tmp_path: Path) -> None:
    lib = tmp_path / "client" / "lib"
    lib.mkdir(parents=True)
    (lib / "policy.py").write_text("RETRIES = 1\n")
    (lib / "sub").mkdir()
    (lib / "sub" / "tools.json").write_text('{"tools": ["ls"]}\n')
    spec = {"command": "my-client --run", "code_paths": [str(tmp_path / "client")]}
    before = fp("client", spec)
    (lib / "sub" / "tools.json").write_text('{"tools": ["ls", "grep"]}\n')
    mid = fp("client", spec)
    assert mid != before, "a file under code_paths changed and the fingerprint did not"
    (lib / "policy.py").write_text("RETRIES = 3\n")
    assert fp("client", spec) not in (before, mid)


@pytest.mark.unit
def test_attack_editing_a_file_under_readonly_paths_changes_the_fingerprint(tmp_path: Path) -> None:
    pkg = tmp_path / "node_modules" / "client"
    pkg.mkdir(parents=True)
    (pkg / "cli.js").write_text("console.log(1)\n")
    spec = {"command": "client -p hi", "readonly_paths": [str(tmp_path / "node_modules")]}
    before = fp("client", spec)
    (pkg / "cli.js").write_text("console.log(2)\n")
    assert fp("client", spec) != before


def _copy_project(dst: Path) -> Path:
    """A throwaway copy of sealbench's package (the real agents/ folder is never touched)."""
    shutil.copytree(ROOT / "scripts" / "sealbench", dst / "scripts" / "sealbench",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dst


def _fp_in_copy(proj: Path, name: str, spec: dict) -> str:
    code = ("import json, sys\nfrom sealbench.provenance import identity\n"
            "assert identity.__file__.startswith(sys.argv[2]), identity.__file__\n"
            "print(identity.agent_fingerprint(sys.argv[3], json.loads(sys.argv[1])))\n")
    env = {**os.environ, "PYTHONPATH": str(proj / "scripts")}
    res = subprocess.run([sys.executable, "-c", code, json.dumps(spec), str(proj), name],
                         cwd=proj, env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


@pytest.mark.sandbox
def test_attack_builtin_agent_hashes_only_the_modules_it_runs(tmp_path: Path) -> None:
    proj = _copy_project(tmp_path / "proj")
    spec = {"command": "python -m sealbench.agents.repair --max-candidates 60"}
    before = _fp_in_copy(proj, "repair", spec)
    # an unrelated client added beside it must not change repair's identity
    (proj / "scripts" / "sealbench" / "agents" / "other_client.py").write_text("print('another client')\n")
    (proj / "scripts" / "sealbench" / "agents" / "mini.py").write_text("# mini changed\n")
    assert _fp_in_copy(proj, "repair", spec) == before, "an unrelated file in agents/ changed repair's fingerprint"
    # repair's own code does
    repair = proj / "scripts" / "sealbench" / "agents" / "repair.py"
    repair.write_text(repair.read_text() + "\n# one more mutation operator\n")
    assert _fp_in_copy(proj, "repair", spec) != before, "repair.py changed and its fingerprint did not"


# ---------------------------------------------------------------------------- wherever it is run from (issue 35.1)


def _agent_project(root: Path) -> Path:
    """A project folder with a user agent: a script, a prompt, a config named in env, a library
    folder in code_paths, the whole source folder in readonly_paths, and a symlink to it."""
    src = root / "agentsrc"
    (src / "lib").mkdir(parents=True)
    (src / "agent.py").write_text(AGENT_PY)
    (src / "prompt.md").write_text("Fix the calculator.\n")
    (src / "cfg.yaml").write_text("temperature: 0\n")
    (src / "lib" / "policy.py").write_text("RETRIES = 1\n")
    (root / "linked").symlink_to(src, target_is_directory=True)
    return src


def _spec(at: str, flag: str = "--fast", model: str = "gpt-x") -> dict:
    """The same agent, its paths written from ``at`` (``agentsrc`` relative, or an absolute
    folder, or a symlink to it)."""
    return {"command": f"python3 {at}/agent.py {flag} --prompt {at}/prompt.md --lib={at}/lib",
            "env": {"AGENT_CFG": f"{at}/cfg.yaml", "MODEL": model},
            "readonly_paths": [at], "code_paths": [f"{at}/lib"]}


def _fp_from(folder: Path, spec: dict, monkeypatch: pytest.MonkeyPatch, name: str = "fixer") -> str:
    """The fingerprint as the pipeline sees it when run from ``folder`` (cwd and base)."""
    monkeypatch.chdir(folder)
    fp_cwd = identity.agent_fingerprint(name, spec)
    assert identity.agent_identity(name, spec, folder, core.HashCache())["fingerprint"] == fp_cwd
    return fp_cwd


@pytest.mark.unit
def test_attack_the_same_agent_has_one_fingerprint_wherever_the_pipeline_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proj = tmp_path / "proj"
    src = _agent_project(proj)
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "deeper").mkdir(parents=True)
    in_project = _fp_from(proj, _spec("agentsrc"), monkeypatch)                       # relative, from the project
    in_project_abs = _fp_from(proj, _spec(str(src)), monkeypatch)                     # absolute, from the project
    from_elsewhere = _fp_from(elsewhere, _spec(str(src)), monkeypatch)               # absolute, another folder
    relative_up = _fp_from(elsewhere / "deeper", _spec("../../proj/agentsrc"), monkeypatch)  # relative, with ..
    via_symlink = _fp_from(elsewhere, _spec(str(proj / "linked")), monkeypatch)       # through a symlink
    assert in_project == in_project_abs == from_elsewhere == relative_up == via_symlink, \
        (in_project, in_project_abs, from_elsewhere, relative_up, via_symlink)
    # the displayed names stay as seen from each folder
    monkeypatch.chdir(proj)
    assert "agentsrc/agent.py" in identity.agent_identity("fixer", _spec("agentsrc"))["files"]


@pytest.mark.unit
def test_attack_a_copy_of_the_agent_in_another_folder_is_the_same_agent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Byte-identical files at another place (a second clone) are the same agent."""
    _agent_project(tmp_path / "one")
    _agent_project(tmp_path / "two")
    (tmp_path / "elsewhere").mkdir()
    assert _fp_from(tmp_path / "one", _spec("agentsrc"), monkeypatch) == \
        _fp_from(tmp_path / "elsewhere", _spec(str(tmp_path / "two" / "agentsrc")), monkeypatch)


@pytest.mark.unit
def test_attack_builtin_repair_has_one_fingerprint_in_the_project_and_elsewhere(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = {"command": "python -m sealbench.agents.repair --max-candidates 60"}
    here = _fp_from(ROOT, spec, monkeypatch, "repair")
    there = _fp_from(tmp_path, spec, monkeypatch, "repair")
    assert here == there, "python -m sealbench.agents.repair: another working folder, another fingerprint"
    # the interpreter written absolute, relative to the project, or through a symlink: the same bytes
    exe = Path(sys.executable)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").symlink_to(exe)
    forms = [_fp_from(tmp_path, {"command": f"{exe} -m sealbench.agents.repair"}, monkeypatch, "repair"),
             _fp_from(tmp_path, {"command": "bin/python -m sealbench.agents.repair"}, monkeypatch, "repair")]
    if exe.is_relative_to(ROOT):  # the project's own venv: written relative to the project too
        forms.append(_fp_from(ROOT, {"command": f"{exe.relative_to(ROOT)} -m sealbench.agents.repair"},
                              monkeypatch, "repair"))
    assert len(set(forms)) == 1, forms


@pytest.mark.unit
def test_honest_differences_still_change_the_fingerprint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = _agent_project(tmp_path)
    base = _fp_from(tmp_path, _spec("agentsrc"), monkeypatch)
    assert _fp_from(tmp_path, _spec("agentsrc", flag="--slow"), monkeypatch) != base, "another flag"
    assert _fp_from(tmp_path, _spec("agentsrc", model="gpt-y"), monkeypatch) != base, "another env value (no path)"
    assert _fp_from(tmp_path, _spec("agentsrc"), monkeypatch, name="other") != base, "another agent name"
    # one byte of each kind of covered file: the script, the prompt, the env config, a code_paths file
    for f in ("agent.py", "prompt.md", "cfg.yaml", "lib/policy.py"):
        p = src / f
        old = p.read_bytes()
        p.write_bytes(old[:-1] + b"!")
        assert _fp_from(tmp_path, _spec("agentsrc"), monkeypatch) != base, f"{f}: one byte changed, fingerprint not"
        p.write_bytes(old)
    assert _fp_from(tmp_path, _spec("agentsrc"), monkeypatch) == base
    # a file renamed inside a covered folder: the folder is another one
    (src / "lib" / "policy.py").rename(src / "lib" / "policy2.py")
    assert _fp_from(tmp_path, _spec("agentsrc"), monkeypatch) != base, "a file renamed in code_paths"
    (src / "lib" / "policy2.py").rename(src / "lib" / "policy.py")
    # two different agents: another script in the same place, or the prompt and script swapped
    other = tmp_path / "other"
    other.mkdir()
    (other / "agent.py").write_text(AGENT_PY.replace("a - b", "a * b"))
    assert _fp_from(tmp_path, {"command": f"python3 {other}/agent.py"}, monkeypatch) != \
        _fp_from(tmp_path, {"command": "python3 agentsrc/agent.py"}, monkeypatch)
    assert _fp_from(tmp_path, {"command": "python3 agentsrc/agent.py --prompt agentsrc/prompt.md"}, monkeypatch) != \
        _fp_from(tmp_path, {"command": "python3 agentsrc/prompt.md --prompt agentsrc/agent.py"}, monkeypatch)


@pytest.mark.unit
def test_builtin_modules_are_named_within_the_package_in_the_fingerprint() -> None:
    cov = identity._Coverage("repair", {}, ROOT, core.HashCache())
    cov.add_command("python -m sealbench.agents.repair")
    names = {n for n, _d in cov.location_free_files()}
    assert {"sealbench/agents/repair.py", "sealbench/core/contract.py"} <= names, sorted(names)
    assert not any(n.startswith(("/", "scripts/")) for n in names), sorted(names)


# ---------------------------------------------------------------------------- identity details

@pytest.mark.unit
def test_builtin_identity_covers_exactly_its_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = {"command": "python -m sealbench.agents.repair --lite"}
    ident = identity.agent_identity("repair", spec, base=ROOT, cache=core.HashCache())  # nothing written in the repo
    files = set(ident["files"])
    # repair writes its reports through the agent contract (contract.py, which reads through untrusted.py)
    mods = {"scripts/sealbench/__init__.py", "scripts/sealbench/agents/__init__.py",
            "scripts/sealbench/agents/repair.py", "scripts/sealbench/core/__init__.py",
            "scripts/sealbench/core/contract.py", "scripts/sealbench/core/untrusted.py"}
    assert mods <= files
    assert not any(f.endswith(("mini.py", "core.py", "gate.py")) for f in files), sorted(files)
    # the rest is the interpreter the shell finds for `python`
    assert len(files - mods) == 1
    monkeypatch.chdir(tmp_path)  # agent_fingerprint: the identity seen from the working directory
    assert identity.agent_fingerprint("repair", spec) == identity.agent_identity("repair", spec, base=tmp_path)["fingerprint"]
    assert ident["lineage"] == "repair" and ident["command"].startswith("python -m")
    for f in files:
        assert re.fullmatch(r"[0-9a-f]{64}", ident["files"][f])


@pytest.mark.unit
@pytest.mark.parametrize("command", ["python -W ignore -X dev -m sealbench.agents.repair",
                                     "PYTHONPATH=scripts exec python3 -msealbench.agents.repair --lite"])
def test_python_module_found_through_options_and_prefixes(command: str) -> None:
    files = identity.agent_identity("r", {"command": command}, base=ROOT, cache=core.HashCache())["files"]
    assert "scripts/sealbench/agents/repair.py" in files, sorted(files)
    assert not any(f.startswith("scripts/") and not f.startswith("scripts/sealbench/") for f in files), \
        "PYTHONPATH=scripts is the module search path, not code"


@pytest.mark.sandbox
def test_builtin_imports_are_followed_statically_within_sealbench(tmp_path: Path) -> None:
    proj = _copy_project(tmp_path / "proj")
    agents = proj / "scripts" / "sealbench" / "agents"
    repair = agents / "repair.py"
    repair.write_text(repair.read_text() + "\n\ndef _later():\n    from .helper import VALUE\n"
                      "    from sealbench.stats.paired import paired_delta\n    return VALUE, paired_delta\n")
    (agents / "helper.py").write_text("from ..core.tables import TABLES\nVALUE = 1\n")
    spec = {"command": "python -m sealbench.agents.repair"}
    code = ("import json, sys\nfrom sealbench.provenance import identity\n"
            "print(json.dumps(identity.agent_identity('repair', json.loads(sys.argv[1]))))\n")
    env = {**os.environ, "PYTHONPATH": str(proj / "scripts")}

    def ident() -> dict:
        res = subprocess.run([sys.executable, "-c", code, json.dumps(spec)], cwd=proj, env=env,
                             capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout)

    first = ident()
    files = set(first["files"])
    for rel in ("agents/helper.py", "core/tables.py", "stats/paired.py", "agents/repair.py"):
        assert f"scripts/sealbench/{rel}" in files, sorted(files)
    assert "scripts/sealbench/gate/gate.py" not in files and "scripts/sealbench/agents/mini.py" not in files
    (agents / "helper.py").write_text("from ..core.tables import TABLES\nVALUE = 2\n")
    assert ident()["fingerprint"] != first["fingerprint"], "a module repair imports changed"


@pytest.mark.unit
def test_command_resolution_and_skipped_tokens(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "mytool"
    tool.write_text("#!/bin/sh\necho hi\n")
    tool.chmod(0o755)
    (tmp_path / "rel.md").write_text("relative to the working directory\n")
    spec = {"command": 'mytool --in rel.md --cfg "$HOME/x.yaml" && true; cat > /dev/null',
            "env": {"PATH": f"{bindir}:/usr/bin:/bin"}}
    ident = identity.agent_identity("t", spec, base=tmp_path)
    assert "bin/mytool" in ident["files"], ident  # the first word, found on the agent's PATH
    assert "rel.md" in ident["files"]  # a token naming a file relative to the working directory
    assert "/bin/cat" in ident["files"] or "/usr/bin/cat" in ident["files"]  # after ';'
    assert not any("true" in f for f in ident["files"]), "a shell builtin is not a file"
    skipped = {s["token"]: s["reason"] for s in ident["skipped"]}
    assert "$HOME/x.yaml" in skipped and "$" in skipped["$HOME/x.yaml"]
    assert "/dev/null" not in ident["files"]
    before = ident["fingerprint"]
    tool.write_text("#!/bin/sh\necho changed\n")
    assert identity.agent_identity("t", spec, base=tmp_path)["fingerprint"] != before


@pytest.mark.unit
def test_unbalanced_quotes_fall_back_to_whitespace(tmp_path: Path) -> None:
    script = tmp_path / "a.py"
    script.write_text("print(1)\n")
    spec = {"command": f"python {script} 'unterminated"}
    ident = identity.agent_identity("t", spec, base=tmp_path)
    assert "a.py" in ident["files"]
    before = ident["fingerprint"]
    script.write_text("print(2)\n")
    assert identity.agent_identity("t", spec, base=tmp_path)["fingerprint"] != before


@pytest.mark.unit
def test_symlinks_hash_their_target_and_artefacts_are_not_code(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "policy.txt").write_text("v1\n")
    code = tmp_path / "code"
    code.mkdir()
    (code / "policy.txt").symlink_to(real / "policy.txt")
    (code / "__pycache__").mkdir()
    (code / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"\0junk")
    spec = {"command": "true", "code_paths": [str(code)]}
    ident = identity.agent_identity("t", spec, base=tmp_path)
    assert set(ident["files"]) == {"code/policy.txt"}
    before = ident["fingerprint"]
    (code / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"\0other junk")
    assert identity.agent_identity("t", spec, base=tmp_path)["fingerprint"] == before
    (real / "policy.txt").write_text("v2\n")
    assert identity.agent_identity("t", spec, base=tmp_path)["fingerprint"] != before


@pytest.mark.unit
def test_lineage_and_code_paths_are_part_of_the_identity(tmp_path: Path) -> None:
    base = {"command": "true"}
    assert identity.agent_identity("a", base, base=tmp_path)["lineage"] == "a"
    assert fp("a", {**base, "lineage": "family-x"}) != fp("a", base)
    ident = identity.agent_identity("a", {**base, "lineage": "family-x"}, base=tmp_path)
    assert ident["lineage"] == "family-x"


@pytest.mark.unit
def test_folder_over_the_cap_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = tmp_path / "node_modules"
    big.mkdir()
    for i in range(12):
        (big / f"f{i}.js").write_text(str(i))
    monkeypatch.setattr(identity, "MAX_CODE_FILES", 10)
    with pytest.raises(ConfigError, match=r"agents\.c\.code_paths.*more than 10 files.*narrower"):
        identity.agent_identity("c", {"command": "true", "code_paths": [str(big)]}, base=tmp_path)
    with pytest.raises(ConfigError, match=r"agents\.c\.code_paths.*does not exist"):
        identity.agent_identity("c", {"command": "true", "code_paths": [str(tmp_path / "nope")]}, base=tmp_path)


@pytest.mark.unit
def test_stat_cache_under_results_is_used_and_content_still_wins(tmp_path: Path) -> None:
    (tmp_path / "results" / ".sealbench").mkdir(parents=True)
    code = tmp_path / "code"
    code.mkdir()
    (code / "a.py").write_text("A = 1\n")
    spec = {"command": "true", "code_paths": ["code"]}
    first = identity.agent_identity("t", spec, base=tmp_path)
    cache = tmp_path / "results" / ".sealbench" / "agent-hashcache.json"
    assert cache.exists() and str(code / "a.py") in json.loads(cache.read_text())
    st = (code / "a.py").stat()
    (code / "a.py").write_text("A = 2\n")  # same size; mtime set back: ctime still differs
    os.utime(code / "a.py", ns=(st.st_atime_ns, st.st_mtime_ns))
    assert identity.agent_identity("t", spec, base=tmp_path)["fingerprint"] != first["fingerprint"]


@pytest.mark.unit
def test_schema_accepts_code_paths_and_lineage(tmp_path: Path) -> None:
    pack = make_pack(tmp_path / "pack")
    cfg = yaml.safe_load(write_config(tmp_path / "cfg.yaml", pack).read_text())
    cfg["agents"]["fixer"].update(code_paths=[str(tmp_path)], lineage="fixer-family")
    assert configuration.validate_config(cfg)["agents"]["fixer"]["lineage"] == "fixer-family"
    cfg["agents"]["fixer"]["code_paths"] = "not-a-list"
    with pytest.raises(ConfigError, match=r"agents\.fixer\.code_paths"):
        configuration.validate_config(cfg)


# ---------------------------------------------------------------------------- mde / psi

def _cfg(tmp_path: Path, **over) -> tuple[dict, Path]:
    pack = make_pack(tmp_path / "pack")
    path = write_config(tmp_path / "cfg.yaml", pack, **over)
    return yaml.safe_load(path.read_text()), path


@pytest.mark.unit
def test_attack_impossible_mde_psi_is_a_config_error(tmp_path: Path) -> None:
    cfg, _ = _cfg(tmp_path, mde=0.6, planning_discordance=0.3)
    with pytest.raises(ConfigError) as err:
        configuration.validate_config(cfg)
    msg = str(err.value)
    assert "'mde'" in msg and "'planning_discordance'" in msg and "mde²" in msg, msg
    assert "0.36" in msg, msg  # the suggestion: the smallest discordance that allows mde 0.6
    cfg.update(mde=0.5, planning_discordance=0.25)  # psi == mde**2 is still impossible
    with pytest.raises(ConfigError):
        configuration.validate_config(cfg)
    cfg.update(planning_discordance=0.6)
    configuration.validate_config(cfg)


@pytest.mark.pipeline
def test_attack_impossible_mde_psi_refused_before_any_job(tmp_path: Path) -> None:
    _, path = _cfg(tmp_path, mde=0.6, planning_discordance=0.3)
    res = smk(tmp_path, "-n", "gate", configfile=path, timeout=120)
    assert res.returncode != 0, res.stdout[-2000:]
    assert "'mde'" in res.stderr and "'planning_discordance'" in res.stderr, res.stderr[-3000:]
    assert "Nothing was run; no result was changed." in res.stderr
    assert "Traceback" not in res.stderr


# ---------------------------------------------------------------------------- sealbench validate / show

@pytest.mark.sandbox
def test_attack_validate_says_what_the_holdout_can_detect(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    _, path = _cfg(tmp_path)
    pack = tmp_path / "pack"
    assert cli.main(["validate", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    n = 6  # 12 tasks, holdout_frac 0.5
    delta = power.observed_mde(n, 0.3)
    need = power.required_n_miller(0.1, 0.3)[1]
    assert need == 228
    assert (f"{n} holdout tasks detect Δ ≈ {delta:.2f} (ψ 0.3, α 0.05, power 0.8); "
            f"the pre-registered MDE 0.1 needs {need}") in out, out
    assert not (pack / split.MANIFEST).exists(), "validate must not write the split manifest"
    # once frozen, the count comes from the manifest
    strata_of = {t.id: t.stratum for t in packs.load_pack(pack)}
    manifest, created = split.ensure(pack, strata_of, 7, 0.5)
    assert created
    assert cli.main(["validate", "--config", str(path)]) == 0
    assert f"{len(manifest['holdout'])} holdout tasks detect" in capsys.readouterr().out


def _decision(exp: str) -> dict:
    return {"experiment": exp, "publishable": False, "headline": None, "headline_metric": "pass_rate",
            "reasons": [], "notes": [], "per_stratum": [], "comparison": {}, "allowed_sentences": []}


@pytest.mark.unit
def test_attack_show_prints_each_agents_fingerprint_and_coverage(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    script, _prompt, spec = user_agent(tmp_path)
    ident = identity.agent_identity("fixer", spec, base=tmp_path)
    exp = tmp_path / "results" / "experiments" / "0123456789abcdef"
    exp.mkdir(parents=True)
    (exp / "decision.json").write_text(json.dumps(_decision(exp.name)))
    (exp / "experiment.json").write_text(json.dumps({"exp_id": exp.name, "agent_fingerprints": {"fixer": ident["fingerprint"]},
                                                     "agent_identity": {"fixer": ident}}))
    assert cli.main(["show", str(exp)]) == 0
    out = capsys.readouterr().out
    assert f"fixer {ident['fingerprint']}" in out, out
    assert f"{len(ident['files'])} files" in out and "agentsrc/fixer/agent.py" in out, out
    # an experiment recorded before identities existed still shows
    (exp / "experiment.json").write_text(json.dumps({"exp_id": exp.name, "agent_fingerprints": {"fixer": "f" * 16}}))
    assert cli.main(["show", str(exp)]) == 0
    assert "not recorded" in capsys.readouterr().out


# ---------------------------------------------------------------------------- the real plan

def planned(wd: Path) -> list[tuple[str, dict]]:
    """The jobs of `snakemake -n gate`: (rule, wildcards)."""
    res = smk(wd, "-n", "gate", timeout=180)
    assert res.returncode == 0, res.stderr[-3000:]
    jobs: list[tuple[str, dict]] = []
    for line in res.stdout.splitlines():
        s = line.strip()
        if s.startswith("rule ") and s.endswith(":"):
            jobs.append((s[5:-1], {}))
        elif s.startswith("wildcards:") and jobs:
            jobs[-1][1].update(kv.strip().split("=", 1) for kv in s[len("wildcards:"):].split(","))
    plan_file = wd / "plans.txt"
    with plan_file.open("a") as fh:  # kept for the report
        fh.write("\n".join(line for line in res.stdout.splitlines() if not line.startswith("[")) + "\n----\n")
    return jobs


def fake_complete_run(wd: Path) -> None:
    """Every output of the current plan, written in plan order: snakemake then sees a finished run."""
    res = smk(wd, "-n", "gate", timeout=180)
    assert res.returncode == 0, res.stderr[-3000:]
    for line in res.stdout.splitlines():
        s = line.strip()
        if s.startswith("output:"):
            for rel in s[len("output:"):].split(","):
                p = wd / rel.strip()
                if p.name == "sealed":
                    p.mkdir(parents=True, exist_ok=True)
                else:
                    p.parent.mkdir(parents=True, exist_ok=True)
                    p.write_text("{}\n")


@pytest.mark.pipeline
def test_attack_dry_run_plans_only_the_edited_agent(tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    make_pack(wd / "pack")
    script, prompt, spec = user_agent(tmp_path)
    folder = script.parent
    spec["readonly_paths"] = [str(folder)]
    notes = folder.parent / "NOTES.md"  # beside the agent's folder: not named, not covered
    notes.write_text("ideas\n")
    (folder / "__pycache__").mkdir()
    pyc = folder / "__pycache__" / "agent.cpython-311.pyc"  # a build artefact in the folder: not code
    pyc.write_bytes(b"\0pyc")
    write_config(wd / "cfg.yaml", wd / "pack", agents={"fixer": spec, "idle": {"command": NOOP_AGENT}})
    fake_complete_run(wd)
    assert planned(wd) == [], "the faked run is complete"
    original = script.read_bytes()
    script.write_text(AGENT_PY + "# tuned after reading the holdout failures\n")
    jobs = planned(wd)
    runs = [w for r, w in jobs if r == "run_agent"]
    assert len(runs) == 12 and {w["agent"] for w in runs} == {"fixer"}, jobs
    assert {w["agent"] for r, w in jobs if r == "hidden_score"} == {"fixer"}
    assert not {r for r, _ in jobs} & {"hash_pack", "leak_check", "run_dummy", "split"}

    script.write_bytes(original)  # the same bytes again: the earlier results are reused
    assert planned(wd) == []

    notes.write_text("ideas, more ideas\n")
    pyc.write_bytes(b"\0pyc, recompiled")
    assert planned(wd) == [], "a file the agent's identity does not cover planned jobs"

    prompt.write_text("Fix the calculator. Hint: the sign.\n")
    runs = [w for r, w in planned(wd) if r == "run_agent"]
    assert len(runs) == 12 and {w["agent"] for w in runs} == {"fixer"}

    # the experiment record (written by its job, planning writes nothing) says what each
    # fingerprint covered (not part of the id itself)
    plan = smk(wd, "-n", "gate", timeout=180).stdout
    records = sorted({w.strip() for line in plan.splitlines() if line.strip().startswith("output:")
                      for w in line.strip()[len("output:"):].split(",") if w.strip().endswith("experiment.json")})
    assert len(records) == 1, plan[-2000:]
    res = smk(wd, "--cores", "1", records[0], timeout=180)
    assert res.returncode == 0, res.stderr[-3000:]
    for f in [wd / records[0]]:
        exp = json.loads(f.read_text())
        ident = exp["agent_identity"]["fixer"]
        assert ident["fingerprint"] == exp["agent_fingerprints"]["fixer"]
        assert str(script) in ident["files"] and str(prompt) in ident["files"]
        assert str(notes) not in ident["files"] and str(pyc) not in ident["files"]
        assert exp["agent_identity"]["idle"]["fingerprint"] == exp["agent_fingerprints"]["idle"]
