"""Settings shared by every test file, and the test tiers.

Every test belongs to exactly one tier, declared with a marker (registered in pyproject.toml):

- ``unit``: pure Python in the test process (files, git, imports); no sandbox, no pytest or
  agent subprocess, no Snakemake. ``pytest -m unit`` is the fast tier.
- ``sandbox``: starts bwrap, a sealed or sandboxed pytest (scoring, visible runs), an agent or
  another Python subprocess of the harness.
- ``pipeline``: starts Snakemake (``python -m snakemake`` or the ``sealbench`` commands that run
  it), directly or through a fixture. Finished runs that several tests only read come from
  ``tests/pipeline_runs.py``.
- ``clients``: installs real agent clients (Claude Code, Codex CLI, Gemini CLI, aider,
  mini-swe-agent) from their registries and runs them against scripted model servers
  (``tests/clients/``). Not run by a plain ``pytest``: only when ``-m`` names the tier
  (``pytest -m clients``, what ``.ci/run`` runs after the rest).

A module declares its tier with ``pytestmark = pytest.mark.unit`` (or ``sandbox``,
``pipeline``); a module with tests of several tiers marks each test instead. Collection stops
with the list of offenders when a test has no tier or two. ``snakemake``, the older marker,
is kept as an alias: every ``pipeline`` test also carries it (``-m snakemake`` selects the same).
"""

import os

import pytest

from pipeline_runs import default_run  # noqa: F401  (the shared finished runs, as fixtures)


@pytest.fixture(scope="session", autouse=True)
def _task_pytest_without_plugins():
    """The task test suites the tests run (pytest inside workspaces, the repair agent's visible
    runs) start ~1.4 s faster per run without the plugins installed in this environment — exactly
    as the harness runs them (core.harness_env). Set once the session has started, not at import:
    pytest-xdist starts its workers in ``pytest_sessionstart``, and a worker that inherited the
    variable would not load xdist itself."""
    os.environ.setdefault("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (pyproject's addopts): one worker per CPU this process may use (logical CPUs,
    so a 2-core machine gets two), at most 8. The tests are CPU-bound (sandboxed pytest runs,
    Snakemake): on the 2-core machine a third worker did not end the suite sooner."""
    return max(1, min(8, len(os.sched_getaffinity(0))))

TIERS = ("unit", "sandbox", "pipeline", "clients")


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: `-m snakemake` must see the alias
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    bad, rank = [], {}
    for item in items:
        tiers = sorted({m.name for m in item.iter_markers() if m.name in TIERS})
        if len(tiers) != 1:
            bad.append(f"  {item.nodeid}: {', '.join(tiers) if tiers else 'no tier'}")
            continue
        if tiers == ["pipeline"]:
            item.add_marker(pytest.mark.snakemake)
        module = item.nodeid.split("::", 1)[0]
        rank[module] = max(rank.get(module, 0), TIERS.index(tiers[0]))
    asked = getattr(getattr(config, "option", None), "markexpr", "") or ""
    if "clients" not in asked:     # the clients tier runs only when -m names it
        tier_of = {id(i): {m.name for m in i.iter_markers()} for i in items}
        chosen = [i for i in items if "clients" not in tier_of[id(i)]]
        if len(chosen) < len(items):
            config.hook.pytest_deselected(items=[i for i in items if "clients" in tier_of[id(i)]])
            items[:] = chosen
    if bad:
        raise pytest.UsageError(
            f"{len(bad)} test(s) without exactly one tier marker ({', '.join(TIERS)}; see tests/conftest.py):\n"
            + "\n".join(bad[:50]) + ("\n  …" if len(bad) > 50 else ""))
    # The slowest modules first (those with a pipeline test, then those with a sandbox test, then
    # the rest), each module's tests kept together and in their order: the parallel workers
    # (-n auto) start on the long runs and end on short tests, so neither waits long for the
    # other at the end. The sort is stable: the same order in every worker.
    # A test marked `first` before all others of its rank: the clients tier's pipeline run (its
    # longest test by far), so that under --dist load one worker starts on it while the other
    # takes the rest (when it came twelfth, the tier ended a minute after its work was done).
    items.sort(key=lambda item: (-rank[item.nodeid.split("::", 1)[0]], all(m.name != "first" for m in item.iter_markers())))
