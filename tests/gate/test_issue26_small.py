"""Issue 26, point 6: the smaller points. Each is written as an attack on the code before the
change, next to an honest case that must keep its verdict:

1. the agent start check reads shell syntax (``case … in a|b) …;; esac``, ``if/then/fi``,
   ``for/do/done``, ``while``, ``{ }``, subshells, functions, ``[[ ]]``, several lines) the way
   bash does: a case pattern is not a command; a missing command in any case branch is still
   found; a command word known only at run time is never refused;
2. a file an agent's ``env:`` value names is covered by its fingerprint, like a command word;
3. the t interval of a difference of pass rates is clamped to [-1, 1] (the raw bounds kept);
4. the winner sentence states both agents' timeout rates on the scored split;
5. docs/results.md says what seed 001's example does with the bundled ``min_kept_tasks``.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats as st

HERE = Path(__file__).resolve().parents[1]
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(HERE))

from test_gate_refusals import BASE, CAND, _dominant_candidate, _set_status, build_spec, codes, decide  # noqa: E402
from test_gate_seeds import seed1_spec  # noqa: E402

from sealbench.agent import agent_probe  # noqa: E402
from sealbench.agent.agent_command import command_plan  # noqa: E402
from sealbench.isolation import sandbox  # noqa: E402
from sealbench.provenance import identity  # noqa: E402
from sealbench.stats import decision_rule, paired, power  # noqa: E402

BWRAP = sandbox.bwrap_problem()
needs_bwrap = pytest.mark.skipif(bool(BWRAP) and not os.environ.get("CI"), reason=f"bubblewrap unavailable: {BWRAP}")

# ------------------------------------------------------------------ 1. the start check reads shell syntax

CASE = 'case "$SEALBENCH_TASK_ID" in a|b) python3 x.py ;; *) python3 y.py ;; esac'


@pytest.fixture()
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder with two agent scripts, x.py and y.py (the working directory)."""
    for name in ("x.py", "y.py"):
        (tmp_path / name).write_text("print('hi')\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def probe(proj: Path, command: str) -> agent_probe.Probe:
    return agent_probe.probe_agent("x", {"command": command}, "required", proj, ())


@pytest.mark.unit
def test_attack_a_case_pattern_is_not_the_first_command(proj: Path) -> None:
    plan = command_plan("x", {"command": CASE}, proj)
    assert plan.first is not None and plan.first["word"] == "python3", plan.first
    assert plan.first["script"] == "x.py", plan.first
    # both branches are where the command may start: each is checked
    assert [(e["word"], e["script"]) for e in plan.entries] == [("python3", "x.py"), ("python3", "y.py")]


@pytest.mark.sandbox
@needs_bwrap
@pytest.mark.parametrize("command", [
    CASE,
    'case $SEALBENCH_TASK_ID in\n  (t0*|t1*)\n    python3 x.py\n    ;;\n  *) python3 y.py;;\nesac',
    'case "$X" in a) python3 x.py ;& b) python3 y.py ;;& *) echo other; exit 0 ;; esac',
    'if [ -n "$SEALBENCH_TASK_ID" ]; then python3 x.py; else python3 y.py; fi',
    'for i in 1 2; do python3 x.py --try "$i" && break; done',
    'for ((i = 0; i < 2; i++)); do python3 x.py; done',
    'n=0; while [ "$n" -lt 1 ]; do n=$((n + 1)); python3 x.py; done',
    'until python3 x.py; do sleep 1; done',
    '{ python3 x.py; python3 y.py; } > log.txt 2>&1',
    '(cd /tmp && python3 "$OLDPWD/x.py") || (python3 y.py)',
    'run() { python3 x.py "$@"; }; run --fast',
    'function go { python3 y.py; }\ngo',
    '[[ -f x.py && -n "$X" ]] && python3 x.py',
    'python3 x.py \\\n  --flag\npython3 y.py',
    'if command -v no_such_uv_xyz >/dev/null 2>&1; then no_such_uv_xyz run x.py; else python3 x.py; fi',
    'type no_such_uv_xyz >/dev/null && no_such_uv_xyz run x.py || python3 x.py',
    'python3 - <<EOF\nimport sys\nprint(sys.argv)\nEOF',
])
def test_honest_shell_syntax_passes_the_start_check(proj: Path, command: str) -> None:
    res = probe(proj, command)
    assert res.ok, res.line()


@pytest.mark.sandbox
@needs_bwrap
@pytest.mark.parametrize("command", [
    'case "$SEALBENCH_TASK_ID" in a|b) nonexistent_tool_xyz --go ;; *) python3 y.py ;; esac',
    'case "$SEALBENCH_TASK_ID" in a|b) python3 x.py ;; *) nonexistent_tool_xyz --go ;; esac',
    'case $X in\n  a) echo skip; exit 0 ;;\n  *) nonexistent_tool_xyz ;;\nesac',
    'for i in 1 2; do nonexistent_tool_xyz "$i"; done',
    'if true; then nonexistent_tool_xyz; fi',
    '{ nonexistent_tool_xyz; }',
    'export A=1\nnonexistent_tool_xyz --go',
])
def test_attack_a_missing_command_inside_shell_syntax_is_still_found(proj: Path, command: str) -> None:
    res = probe(proj, command)
    assert not res.ok and "command not found: nonexistent_tool_xyz" in res.reason, res.line()
    assert res.exit_code == 127, res.line()


@pytest.mark.sandbox
@needs_bwrap
@pytest.mark.parametrize("command", [
    'case "$X" in a) $TOOL --go ;; *) "$OTHER" ;; esac',
    '$(command -v python3) x.py',
    'eval "$AGENT_CMD"',
])
def test_honest_a_command_word_known_only_at_run_time_is_not_refused(proj: Path, command: str) -> None:
    res = probe(proj, command)
    assert res.ok, res.line()


@pytest.mark.sandbox
@needs_bwrap
def test_attack_a_command_bash_cannot_parse_is_refused(proj: Path) -> None:
    res = probe(proj, 'case "$X" in a) python3 x.py ;; *) python3 y.py ;;')  # no esac
    assert not res.ok and "syntax error" in res.reason, res.line()


# ------------------------------------------------------------------ 2. a file named only in env: is covered


@pytest.mark.unit
def test_attack_editing_a_script_named_only_in_env_changes_the_fingerprint(tmp_path: Path) -> None:
    script = tmp_path / "agentsrc" / "agent.py"
    script.parent.mkdir()
    script.write_text("print('v1')\n")
    spec = {"command": "python3 $AGENT_SCRIPT", "env": {"AGENT_SCRIPT": str(script)}}
    before = identity.agent_identity("a", spec, tmp_path)
    assert "agentsrc/agent.py" in before["covered"], before
    script.write_text("print('v2: tuned on the holdout')\n")
    assert identity.agent_identity("a", spec, tmp_path)["fingerprint"] != before["fingerprint"]


@pytest.mark.unit
def test_attack_editing_a_config_named_relatively_in_env_changes_the_fingerprint(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("import os; print(open(os.environ['AGENT_CFG']).read())\n")
    (tmp_path / "conf").mkdir()
    cfg = tmp_path / "conf" / "agent.yaml"
    cfg.write_text("temperature: 0\n")
    spec = {"command": "python3 agent.py", "env": {"AGENT_CFG": "conf/agent.yaml"}}
    before = identity.agent_identity("a", spec, tmp_path)["fingerprint"]
    cfg.write_text("temperature: 0\nhint: look at add()\n")
    assert identity.agent_identity("a", spec, tmp_path)["fingerprint"] != before


@pytest.mark.unit
def test_attack_a_folder_named_in_env_is_covered_like_a_command_word_folder(tmp_path: Path) -> None:
    lib = tmp_path / "agentlib"
    lib.mkdir()
    (lib / "policy.py").write_text("RETRIES = 1\n")
    spec = {"command": "python3 -c 'import os; print(os.environ[\"AGENT_LIB\"])'", "env": {"AGENT_LIB": str(lib)}}
    before = identity.agent_identity("a", spec, tmp_path)
    assert "agentlib/" in before["covered"], before
    (lib / "policy.py").write_text("RETRIES = 3\n")
    assert identity.agent_identity("a", spec, tmp_path)["fingerprint"] != before["fingerprint"]


@pytest.mark.unit
def test_honest_env_values_that_are_not_paths_cover_nothing_and_stay_stable(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("print('hi')\n")
    spec = {"command": "python3 agent.py",
            "env": {"MODEL": "gpt-x", "N": 3, "URL": "http://127.0.0.1:8000/v1", "EMPTY": "", "FLAG": True}}
    one = identity.agent_identity("a", spec, tmp_path)
    bare = identity.agent_identity("a", {"command": "python3 agent.py"}, tmp_path)
    assert one["covered"] == bare["covered"] and one["files"] == bare["files"], one
    (tmp_path / "unrelated.txt").write_text("x\n")
    assert identity.agent_identity("a", spec, tmp_path)["fingerprint"] == one["fingerprint"]


@pytest.mark.unit
def test_honest_search_paths_and_the_working_folder_in_env_are_not_hashed(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("print('hi')\n")
    bin_dir = tmp_path / "tools" / "bin"
    bin_dir.mkdir(parents=True)
    spec = {"command": "python3 agent.py",
            "env": {"PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHONPATH": str(tmp_path / "tools"), "WORK": str(tmp_path)}}
    one = identity.agent_identity("a", spec, tmp_path)
    assert not any(c.startswith("tools") for c in one["covered"]), one["covered"]
    (bin_dir / "helper").write_text("echo\n")  # a new tool on the agent's PATH: not code the command names
    assert identity.agent_identity("a", spec, tmp_path)["fingerprint"] == one["fingerprint"]


# ------------------------------------------------------------------ 3. a difference of rates stays in [-1, 1]

#: Two strata of three tasks, the candidate passing two of three more in each: the stratified t
#: interval's upper bound is delta + t(4) * se = 0.667 + 0.654 > 1.
STRATA = ["easy"] * 3 + ["hard"] * 3
CAND_PASS = [1, 1, 1, 1, 1, 1]
BASE_PASS = [0, 0, 1, 0, 0, 1]


@pytest.mark.unit
def test_attack_the_stratified_t_interval_of_rates_never_leaves_minus_one_one() -> None:
    r = paired.paired_delta(STRATA, CAND_PASS, BASE_PASS, n_resamples=2000)
    assert r.method == "stratified_t"
    # the raw bounds are what scipy's t quantile gives (kept for checking), the printed ones clamped
    half = st.t.ppf(0.975, 4) * np.sqrt(2 * 0.5 ** 2 * np.var([1, 1, 0], ddof=1) / 3)
    assert np.allclose(r.ci_raw, (2 / 3 - half, 2 / 3 + half), atol=1e-12) and r.ci_raw[1] > 1, r.ci_raw
    assert (r.ci_low, r.ci_high) == (pytest.approx(r.ci_raw[0], abs=1e-15), 1.0), r
    assert r.delta == pytest.approx(2 / 3) and r.paired_t_p == pytest.approx(st.ttest_1samp([1, 1, 0] * 2, 0).pvalue)
    assert decision_rule.verdict(r) == decision_rule.verdict(
        paired.PairedResult(**{**r.__dict__, "ci_low": r.ci_raw[0], "ci_high": r.ci_raw[1]}))


@pytest.mark.unit
def test_attack_the_paired_t_interval_of_rates_never_leaves_minus_one_one() -> None:
    r = paired.paired_delta(["all"] * 3, [1, 1, 0], [0, 0, 0], n_resamples=2000)
    want = st.ttest_1samp([1, 1, 0], 0).confidence_interval(0.95)
    assert r.method == "paired_t" and want.high > 1
    assert np.allclose(r.ci_raw, (want.low, want.high)) and np.allclose(r.paired_t_ci_raw, (want.low, want.high))
    assert r.ci_high == 1.0 and r.paired_t_ci[1] == 1.0 and r.ci_low == pytest.approx(want.low), r
    low = paired.paired_delta(["all"] * 3, [0, 0, 0], [1, 1, 0], n_resamples=2000)
    assert low.ci_low == -1.0 and low.ci_raw[0] < -1 and low.ci_high == pytest.approx(-want.low), low
    # the functions themselves, for a caller naming the limits
    assert paired.stratified_t(STRATA, np.subtract(CAND_PASS, BASE_PASS), limits=(-1, 1))[3][1] == 1.0
    assert paired.stratified_t(STRATA, np.subtract(CAND_PASS, BASE_PASS))[3][1] > 1


@pytest.mark.unit
def test_honest_an_interval_inside_minus_one_one_is_unchanged() -> None:
    rng = np.random.default_rng(5)
    strata = ["a"] * 20 + ["b"] * 20
    cand, base = rng.integers(0, 2, 40).tolist(), rng.integers(0, 2, 40).tolist()
    r = paired.paired_delta(strata, cand, base, n_resamples=2000)
    assert -1 < r.ci_low < r.ci_high < 1
    assert (r.ci_low, r.ci_high) == r.ci_raw and r.paired_t_ci == r.paired_t_ci_raw


# ------------------------------------------------------------------ 4. the winner sentence states both timeout rates


def _winner_spec(base_timeouts: list[str]) -> dict:
    spec = build_spec()
    _dominant_candidate(spec)
    spec["cfg"].update(mde=0.5, planning_discordance=0.5)
    assert power.required_n_miller(0.5, 0.5)[1] <= 9
    for r in spec["runs"]:
        if r["solver"] == BASE and r["task_id"] in base_timeouts:
            _set_status(r, "timeout")
            r.update(end_reason="timeout", wall_s=1800.0)
    return spec


def _winner_sentence(d: dict) -> str:
    found = [s for s in d["allowed_sentences"] if s.startswith(f"On these 9 holdout tasks, {CAND} passed more than")]
    assert len(found) == 1, d["allowed_sentences"]
    return found[0]


@pytest.mark.unit
def test_attack_the_winner_sentence_states_both_agents_timeout_rates(tmp_path: Path) -> None:
    d = decide(tmp_path, _winner_spec(["xs01", "s03"]))  # two of the baseline's 9 holdout runs hit the clock
    assert d["publishable"] and d["comparison"]["verdict"] == decision_rule.VERDICT_CANDIDATE, d["reasons"]
    s = _winner_sentence(d)
    assert re.search(rf"timeouts \(counted as failures\): {CAND} 0 of 9 runs \(0%\), {BASE} 2 of 9 runs \(22%\)", s), s
    # the same count the headline states for the candidate
    headline = next(x for x in d["allowed_sentences"] if x.startswith("On this sealed pack"))
    assert "timeouts 0 (counted as failures)" in headline, headline


@pytest.mark.unit
def test_honest_without_timeouts_the_winner_sentence_says_none_and_keeps_its_verdict(tmp_path: Path) -> None:
    d = decide(tmp_path, _winner_spec([]))
    s = _winner_sentence(d)
    assert f"timeouts (counted as failures): {CAND} 0 of 9 runs (0%), {BASE} 0 of 9 runs (0%)" in s, s
    assert d["comparison"]["exclusion_rates"][BASE]["timeouts"] == 0


# ------------------------------------------------------------------ 5. what docs/results.md says of seed 001


def _seed1_passage() -> str:
    text = (ROOT / "docs" / "results.md").read_text()
    start = text.index("Seed 001's example report")
    return " ".join(text[start:text.index("\n\n", start)].split())


@pytest.mark.unit
def test_attack_the_docs_say_what_seed_001_does_with_the_bundled_min_kept_tasks(tmp_path: Path) -> None:
    bundled = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["min_kept_tasks"]
    spec = seed1_spec()
    fixture_floor = spec["cfg"]["min_kept_tasks"]
    published = decide(tmp_path / "fixture", spec)
    assert published["publishable"] and published["headline"] == pytest.approx(3 / 7)
    spec = seed1_spec()
    spec["cfg"]["min_kept_tasks"] = bundled
    refused = decide(tmp_path / "bundled", spec)
    passage = _seed1_passage()
    # the passage names the floor it publishes with, the bundled default and what that default does
    assert f"`min_kept_tasks: {fixture_floor}`" in passage, passage
    if refused["publishable"]:
        assert "with the bundled default" not in passage
    else:
        assert refused["headline"] is None and f"bundled default of {bundled}" in passage, passage
        for code in codes(refused):
            assert f"`{code}`" in passage, (code, passage)
