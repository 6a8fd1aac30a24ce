"""Task test environments (issue 14, point 1): declaration, build, lock (sealbench.isolation.environments)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from envgen import offline_env_vars, offline_index, write_wheel
from sealbench.core.core import PackError
from sealbench.isolation import environments as E

TINY = {"tinypkg==1.0": {"tinypkg/__init__.py": "VALUE = 42\n"}}


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> Path:
    return offline_index(tmp_path_factory.mktemp("wheels"), TINY)


@pytest.fixture
def offline(wheels, monkeypatch) -> Path:
    for k, v in offline_env_vars(wheels).items():
        monkeypatch.setenv(k, v)
    return wheels


# ---------------------------------------------------------------------------------------------
# declaration


@pytest.mark.unit
def test_requirement_lines_that_need_more_than_their_text_are_refused(tmp_path: Path) -> None:
    src = tmp_path / "requirements.txt"
    for line, says in [("-e ./pkg", "editable"), ("--index-url https://example.org/simple", "option lines"),
                       ("-r other.txt", "option lines"), ("./pkg", "local paths"), ("/abs/pkg.whl", "local paths"),
                       ("tinypkg @ file:///tmp/tinypkg-1.0-py3-none-any.whl", "local paths"),
                       ("tinypkg==${VERSION}", "environment variables"), ("tinypkg==1.0 --no-deps", "option --no-deps"),
                       ("not a requirement !!", "not a requirement")]:
        with pytest.raises(PackError) as e:
            E.env_from_requirements(f"# comment\nattrs\n{line}\n", src)
        assert f"{src}: line 3" in str(e.value) and says in str(e.value), (line, str(e.value))
    ok = E.env_from_requirements("attrs==23.1 --hash=sha256:abc  # pinned\nrequests[socks]>=2 ; python_version>'3'\n",
                                 src)
    assert ok.name == "default" and ok.source == src


@pytest.mark.unit
def test_declared_env_default_named_unknown_and_none(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    (pack / "tasks" / "t1").mkdir(parents=True)
    assert E.declared_env(pack, {"id": "t1"}) is None  # no environment: sealbench's interpreter
    (pack / "environment").mkdir()
    with pytest.raises(PackError, match="environment.*requirements.txt"):
        E.declared_env(pack, {"id": "t1"})
    (pack / "environment" / "requirements.txt").write_text("tinypkg==1.0\n")
    spec = E.declared_env(pack, {"id": "t1"})
    assert spec and spec.name == "default" and spec.requirements == "tinypkg==1.0\n"
    (pack / "environments" / "np").mkdir(parents=True)
    (pack / "environments" / "np" / "requirements.txt").write_text("tinypkg==2.0\n")
    named = E.declared_env(pack, {"id": "t1", "environment": "np"})
    assert named and named.name == "np" and named.digest != spec.digest
    with pytest.raises(PackError) as e:
        E.declared_env(pack, {"id": "t1", "environment": "nope"})
    assert str(pack / "tasks" / "t1" / "meta.json") in str(e.value) and "'environment'" in str(e.value)
    assert "declared: np" in str(e.value)


@pytest.mark.unit
def test_spec_digest_follows_the_text_and_pytest_is_pinned_unless_named(tmp_path: Path) -> None:
    a = E.env_from_requirements("tinypkg==1.0\n", tmp_path / "r.txt")
    b = E.env_from_requirements("tinypkg==2.0\n", tmp_path / "r.txt")
    assert a.digest != b.digest and a.digest == E.env_from_requirements("tinypkg==1.0\n", tmp_path / "x").digest
    assert E.pytest_pin() in a.install_lines
    own = E.env_from_requirements("pytest>=8\n", tmp_path / "r.txt")
    assert E.pytest_pin() not in own.install_lines


# ---------------------------------------------------------------------------------------------
# build


@pytest.mark.sandbox
def test_build_env_offline_installs_the_requirements_apart_from_the_harness(tmp_path: Path, offline: Path) -> None:
    spec = E.env_from_requirements("tinypkg==1.0\n", tmp_path / "requirements.txt")
    root = tmp_path / "envs"
    env = E.build_env(spec, root)
    assert env.path == root / spec.digest and env.python == env.path / "bin" / "python"
    run = subprocess.run([str(env.python), "-c", "import tinypkg, pytest; print(tinypkg.VALUE, pytest.__version__)"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["42", E.pytest_pin().split("==")[1]]
    own = subprocess.run([sys.executable, "-c", "import tinypkg"], capture_output=True, text=True)
    assert own.returncode != 0 and "tinypkg" in own.stderr  # sealbench's interpreter is untouched
    record = json.loads((env.path / "env.json").read_text())
    assert record["spec_digest"] == spec.digest and record["digest"] == env.digest
    assert "tinypkg==1.0" in record["lock"] and any(x.startswith("pytest==") for x in record["lock"])
    assert (env.path / "lock.txt").read_text() == env.lock and env.installer.split()[0] in ("uv", "pip")
    # built sandboxed where bwrap works (issue 25.7), at its own path: the venv's scripts name it
    assert record["sandbox"] == env.sandbox == ("bwrap" if _sandbox_works() else "none")
    assert str(env.path / "bin" / "python") in (env.path / "bin" / "pytest").read_text()
    assert subprocess.run([str(env.path / "bin" / "pytest"), "--version"], capture_output=True).returncode == 0
    assert env.lock.splitlines() == sorted(env.lock.splitlines(), key=str.lower)
    # installed with its bytecode: task commands run with PYTHONDONTWRITEBYTECODE, so without it
    # every test run in the environment compiled pytest anew (about a third of a small run's time)
    site = next(env.path.glob("lib/python*/site-packages"))
    assert list((site / "_pytest").glob("__pycache__/*.pyc")), "pytest installed without its bytecode"
    ce = env.command_env()
    assert ce["PATH"].split(os.pathsep)[0] == str(env.path / "bin") and ce["VIRTUAL_ENV"] == str(env.path)
    assert E.load_env(env.path) == env
    # a second build is a no-op (same folder, same record, nothing reinstalled)
    stamp = (env.path / "env.json").stat().st_mtime_ns
    assert E.build_env(spec, root) == env and (env.path / "env.json").stat().st_mtime_ns == stamp
    # another requirements text is another environment
    other = E.env_from_requirements("tinypkg==1.0\n# another comment\n", tmp_path / "requirements.txt")
    assert other.digest != spec.digest


@pytest.mark.sandbox
def test_a_crashed_build_is_never_reused_and_a_failed_install_names_the_file(tmp_path: Path, offline: Path) -> None:
    spec = E.env_from_requirements("tinypkg==1.0\n", tmp_path / "requirements.txt")
    root = tmp_path / "envs"
    half = root / spec.digest / "bin"
    half.mkdir(parents=True)
    (half / "python").write_text("not an interpreter")
    with pytest.raises(E.SealbenchError, match="env.json"):
        E.load_env(root / spec.digest)
    env = E.build_env(spec, root)
    assert subprocess.run([str(env.python), "-c", "import tinypkg"]).returncode == 0
    bad = E.env_from_requirements("nosuchpkg==9.9\n", tmp_path / "bad" / "requirements.txt")
    with pytest.raises(E.EnvironmentBuildError) as e:
        E.build_env(bad, root)
    assert str(tmp_path / "bad" / "requirements.txt") in str(e.value) and "nosuchpkg" in str(e.value)
    assert not (root / bad.digest).exists()  # never a half environment


@pytest.mark.sandbox
def test_concurrent_builders_of_one_digest_build_it_once(tmp_path: Path, offline: Path) -> None:
    spec = E.env_from_requirements("tinypkg==1.0\n", tmp_path / "requirements.txt")
    root = tmp_path / "envs"
    out: list = []
    threads = [threading.Thread(target=lambda: out.append(E.build_env(spec, root))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(out) == 2 and out[0] == out[1]
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == [spec.digest]


# ---------------------------------------------------------------------------------------------
# what makes a task's jobs rerun


@pytest.mark.sandbox
def test_a_package_installed_into_sealbenchs_venv_reruns_nothing_of_a_task_with_its_own_env() -> None:
    from sealbench.isolation.toolchain import toolchain, toolchain_digest
    from sealbench.stages import steps

    # a package only a task imports (hypothesis stands for it: installed here, imported by no stage)
    # moves sealbench's toolchain; the harness's own toolchain (stages and agents) does not see it
    before, after = toolchain_digest(toolchain()), toolchain_digest(toolchain(task_modules=["hypothesis"]))
    assert before != after
    harness = toolchain_digest(toolchain())
    cfg = dict(oracle_runs=1, decoys_per_task=2, score_timeout_s=60, sandbox="auto", limits="{}", envelope="{}", stop_on_green=False,
               log_cap_bytes=1000, max_wall_s=60, denylist_digest="d" * 64, corpus_sha="",
               harness_toolchain_digest=harness)
    old, new = steps.StepConfig(toolchain_digest=before, **cfg), steps.StepConfig(toolchain_digest=after, **cfg)
    spec = {"command": "true", "fingerprint": "0" * 16}
    env = "e" * 64
    for make in (lambda c, e: steps.run_dummy(c, "t1", "a" * 64, e),
                 lambda c, e: steps.run_agent(c, "t1", "a" * 64, "x", spec, 1, e),
                 lambda c, e: steps.hidden_score(c, "t1", "a" * 64, "x", "0" * 16, 1, e)):
        assert make(old, env).toolchain == make(new, env).toolchain      # own environment: no rerun
        assert make(old, None).toolchain != make(new, None).toolchain    # sealbench's interpreter: reruns
        assert make(old, None).toolchain == before                       # no environment: exactly as before
        assert make(old, env).toolchain != make(old, "f" * 64).toolchain  # another environment: reruns
        assert make(old, env).argv[-2:] == ("--env", f"results/envs/{env}")
        assert "--env" not in make(old, None).argv


# ---------------------------------------------------------------------------------------------
# the card and the report


@pytest.mark.unit
def test_the_card_and_report_name_each_environment_with_its_lock(tmp_path: Path) -> None:
    from test_gate_refusals import build_spec, write_experiment

    from sealbench.core import core
    from sealbench.gate import gate

    exp_dir, split_path, pack_hash = write_experiment(tmp_path, build_spec())
    _d, plain_card, plain_report = gate.decide(exp_dir, split_path, pack_hash)
    assert "environments" not in plain_card and "## Test environments" not in plain_report  # none: as before
    exp = core.read_json(exp_dir / "experiment.json")
    exp["environments"] = [{"name": "default", "digest": "9" * 64, "spec_digest": "8" * 64, "installer": "uv 0.13.8",
                            "python": "3.11.7", "requirements": "environment/requirements.txt", "sandbox": "bwrap",
                            "tasks": ["a01", "a02"], "lock": ["pytest==9.2.0", "tinypkg==1.0"]},
                           {"name": "loose", "digest": "7" * 64, "spec_digest": "6" * 64, "installer": "uv 0.13.8",
                            "python": "3.11.7", "requirements": "environments/loose/requirements.txt",
                            "sandbox": "none",
                            "tasks": ["a03"], "lock": ["pytest==9.2.0"]}]
    core.write_json(exp_dir / "experiment.json", exp)
    _d, card, report = gate.decide(exp_dir, split_path, pack_hash)
    env = card["environments"][0]
    assert (env["name"], env["digest"], env["installer"], env["python"]) == ("default", "9" * 64, "uv 0.13.8", "3.11.7")
    assert env["lock"] == ["pytest==9.2.0", "tinypkg==1.0"] and env["tasks"] == ["a01", "a02"]
    line = next(x for x in report.splitlines() if x.startswith("- `default`"))
    assert "999999999999" in line and "uv 0.13.8" in line and "Python 3.11.7" in line and "2 packages" in line
    # how each was built (issue 25.7): the card says, the report names an unsandboxed build
    assert [e["sandbox"] for e in card["environments"]] == ["bwrap", "none"] and "UNSANDBOXED" not in line
    assert "built UNSANDBOXED" in next(x for x in report.splitlines() if x.startswith("- `loose`"))


@pytest.mark.unit
def test_hash_pack_refuses_an_unknown_environment_and_a_bad_requirements_file_naming_them(tmp_path: Path) -> None:
    from packgen import make_pack
    from sealbench.stages.hash_pack import plan_pack

    pack = make_pack(tmp_path / "p", n=2)
    meta_file = pack / "tasks" / "t00" / "meta.json"
    meta = json.loads(meta_file.read_text())
    meta["environment"] = "numeric"
    meta_file.write_text(json.dumps(meta))
    with pytest.raises(PackError) as e:
        plan_pack(pack)
    assert f"{meta_file}: field 'environment'" in str(e.value) and "environments/numeric/requirements.txt" in str(e.value)
    (pack / "environments" / "numeric").mkdir(parents=True)
    (pack / "environments" / "numeric" / "requirements.txt").write_text("numpy==2.0\n--index-url https://x.org/simple\n")
    with pytest.raises(PackError, match=r"environments/numeric/requirements.txt: line 2 .*option lines are refused"):
        plan_pack(pack)
    (pack / "environments" / "numeric" / "requirements.txt").write_text("numpy==2.0\n")
    plan = plan_pack(pack)
    assert plan.tasks["t00"].env.name == "numeric" and plan.tasks["t01"].env is None


# ---------------------------------------------------------------------------------------------
# pack-supplied code (issue 25, point 7): a requirements file names released packages only, and
# what it installs runs sandboxed


#: lines that would make the installer fetch or run something other than a released package
#: from the operator's configured sources: each refused at hash_pack, naming the file and line
HOSTILE_LINES = [
    ("evil @ http://127.0.0.1:9/evil-1.0-py3-none-any.whl", "direct references"),
    ("evil@https://example.org/evil-1.0.tar.gz ; python_version > '3'", "direct references"),
    ("evil @ file:///tmp/evil-1.0-py3-none-any.whl", "local paths"),
    ("evil @ git+https://example.org/evil.git@v1", "version control"),
    ("https://example.org/evil-1.0-py3-none-any.whl", "URLs"),
    ("git+https://example.org/evil.git#egg=evil", "version control"),
    ("file:///tmp/evil-1.0-py3-none-any.whl", "local paths"),
    ("-e git+https://example.org/evil.git#egg=evil", "editable"),
    ("--editable ./evil", "editable"),
    ("./evil", "local paths"),
    ("/abs/evil-1.0-py3-none-any.whl", "local paths"),
    ("evil-1.0-py3-none-any.whl", "local paths"),
    ("-i https://evil.example/simple", "where packages come from"),
    ("--index-url=https://evil.example/simple", "where packages come from"),
    ("--extra-index-url https://evil.example/simple", "where packages come from"),
    ("-f /tmp/wheels", "where packages come from"),
    ("--find-links https://evil.example/wheels", "where packages come from"),
    ("--trusted-host evil.example", "where packages come from"),
    ("-r other.txt", "other files"),
    ("-c constraints.txt", "other files"),
    ("--requirement=../elsewhere/requirements.txt", "other files"),
    ("--only-binary :all:", "option lines"),
    ("evil==1.0 --config-settings=x=y", "option --config-settings"),
    ("evil==${VERSION}", "environment variables"),
]
#: what a requirements file may say: released packages with pins, ranges, extras, markers, hashes
HONEST_TEXT = ("# test dependencies\n"
               "tinypkg==1.2\n"
               "attrs>=1,<2  # a range\n"
               "requests[socks]==2.31.0 ; python_version < '3.99'\n"
               "pluggy==1.5.0 \\\n    --hash=sha256:" + "a" * 64 + "\n"
               "Some_Name.Dotted~=1.0\n")


@pytest.mark.unit
def test_hash_pack_refuses_a_direct_reference_url_or_source_option_naming_the_file_and_line(tmp_path: Path) -> None:
    from packgen import make_pack
    from sealbench.stages.hash_pack import plan_pack

    pack = make_pack(tmp_path / "p", n=1)
    req = pack / "environment" / "requirements.txt"
    req.parent.mkdir()
    accepted = []
    for line, says in HOSTILE_LINES:
        req.write_text(f"# comment\ntinypkg==1.0\n{line}\n")
        try:
            plan_pack(pack)
        except PackError as exc:
            msg = str(exc)
            assert f"{req}: line 3 ({line!r})" in msg and says in msg, (line, msg)
        else:
            accepted.append(line)
    assert not accepted, f"accepted at hash_pack: {accepted}"
    req.write_text(HONEST_TEXT)
    plan = plan_pack(pack)
    assert plan.tasks["t00"].env is not None and plan.tasks["t00"].env.requirements == HONEST_TEXT


def _evil_index(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    """A find-links folder with the pytest closure and ``evil==1.0``: a wheel whose ``.pth`` runs
    ``evil_hook`` at every interpreter start. The hook writes a marker to a host path outside the
    environment's folder, tries to plant a file in the wheel folder and beside the environment, and
    records (inside the environment, in ``sys.prefix``) who it ran as and what it could see."""
    wheels = offline_index(tmp_path / "wheels")
    where = {"marker": tmp_path / "host-marker", "planted": wheels / "planted", "beside": tmp_path / "envs" / "planted",
             "pack": tmp_path / "pack", "home": tmp_path / "home" / ".netrc", "wheels": wheels}
    (tmp_path / "pack").mkdir()
    (tmp_path / "home").mkdir()
    where["home"].write_text("machine example.org password secret\n")
    hook = (f"import json, os, sys\nW = {json.dumps({k: str(v) for k, v in where.items()})}\n"
            "for key in ('marker', 'planted', 'beside'):\n"
            "    try:\n"
            "        open(W[key], 'w').write('pack code was here')\n"
            "    except OSError:\n"
            "        pass\n"
            "cap = [ln.split()[1] for ln in open('/proc/self/status') if ln.startswith('CapEff')][0]\n"
            "seen = {'uid': os.getuid(), 'cap_eff': cap, 'pack': os.path.exists(W['pack']),\n"
            "        'home': os.path.exists(W['home']), 'wheels': os.path.isdir(W['wheels'])}\n"
            "try:\n"
            "    open(os.path.join(sys.prefix, 'seen-%d.json' % os.getpid()), 'w').write(json.dumps(seen))\n"
            "except OSError:\n"
            "    pass\n")
    write_wheel(wheels, "evil", "1.0", {"evil_hook.py": hook.encode(), "evil.pth": b"import evil_hook\n",
                                         "evil/__init__.py": b"VALUE = 1\n"})
    return wheels, where


def _sandbox_works() -> bool:
    from sealbench.isolation.sandbox import bwrap_problem

    return bwrap_problem() is None


@pytest.mark.sandbox
@pytest.mark.skipif(not _sandbox_works(), reason="bwrap cannot run here")
def test_a_wheels_pth_runs_sandboxed_during_the_build_never_as_the_harness(tmp_path: Path, monkeypatch) -> None:
    wheels, where = _evil_index(tmp_path)
    for k, v in offline_env_vars(wheels).items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("HOME", str(where["home"].parent))  # the harness's home, holding a credential
    spec = E.env_from_requirements("evil==1.0\n", tmp_path / "pack" / "environment" / "requirements.txt")
    env = E.build_env(spec, tmp_path / "envs")
    # the hook did run during the build (reading the lock starts the environment's interpreter)...
    seen = [json.loads(p.read_text()) for p in env.path.glob("seen-*.json")]
    assert seen, "the .pth never ran during the build"
    # ...but not on the host: no marker outside the environment, nothing planted in the wheel
    # folder (read-only) or beside the environment (not mounted)
    for key in ("marker", "planted", "beside"):
        assert not where[key].exists(), f"pack code wrote {where[key]} on the host"
    # unprivileged, no capabilities, no pack, no home; the operator's wheel folder readable
    for s in seen:
        assert s["uid"] != 0 and int(s["cap_eff"], 16) == 0, s
        assert s["pack"] is False and s["home"] is False and s["wheels"] is True, s
    assert env.sandbox == "bwrap" and json.loads((env.path / "env.json").read_text())["sandbox"] == "bwrap"
    assert "evil==1.0" in env.lock.splitlines()


@pytest.mark.sandbox
def test_with_the_sandbox_off_the_build_runs_as_before_and_its_record_says_unsandboxed(tmp_path: Path,
                                                                                      monkeypatch) -> None:
    wheels, where = _evil_index(tmp_path)
    for k, v in offline_env_vars(wheels).items():
        monkeypatch.setenv(k, v)
    spec = E.env_from_requirements("evil==1.0\n", tmp_path / "pack" / "environment" / "requirements.txt")
    env = E.build_env(spec, tmp_path / "envs", sandbox="off")
    assert where["marker"].read_text() == "pack code was here"  # today's behaviour: nothing contains it
    record = json.loads((env.path / "env.json").read_text())
    assert env.sandbox == record["sandbox"] == "none" and env.card()["sandbox"] == "none"


@pytest.mark.unit
def test_the_build_sandbox_mounts_the_operators_installer_files_read_only_and_only_the_env_writable(
        tmp_path: Path, monkeypatch) -> None:
    from sealbench.isolation.sandbox import SCRIPTS_DIR

    monkeypatch.chdir(tmp_path)
    (tmp_path / "wheels").mkdir()
    (tmp_path / "idx").mkdir()
    env, mounts = E._local_paths({"UV_FIND_LINKS": "wheels,https://example.org/wheels",
                                  "PIP_FIND_LINKS": f"{tmp_path / 'wheels'} /no/such/folder",
                                  "UV_INDEX": f"local=file://{tmp_path / 'idx'}",
                                  "PIP_INDEX_URL": "https://x.org/simple",
                                  "HOME": str(tmp_path)})
    assert mounts == [tmp_path / "wheels", tmp_path / "wheels", tmp_path / "idx"]
    # a relative wheel folder is made absolute (the build runs in the environment's folder)
    assert env["UV_FIND_LINKS"] == f"{tmp_path / 'wheels'},https://example.org/wheels" and env["HOME"] == str(tmp_path)
    folder = tmp_path / "envs" / ("0" * 64)
    box = E.build_sandbox(folder, "bwrap", E._uv(), mounts)
    assert box.writable == (folder,) and box.network is True
    assert tmp_path / "wheels" in box.readable and SCRIPTS_DIR not in box.readable and tmp_path not in box.readable
    assert E.build_sandbox(folder, "none", E._uv(), mounts) is None
