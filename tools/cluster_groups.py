"""The one definition of the cluster group jobs; writes the `groups:` block of every executor profile.

    python tools/cluster_groups.py          # rewrite the blocks from GROUPS
    python tools/cluster_groups.py --check  # exit 1 when a profile's block differs

Snakemake reads `groups:` from the profile (a profile cannot include a shared file), and a
`group:` directive in a rule would also group the jobs of a dry run (`snakemake -n` prints group
jobs then), so the definition lives here and the profiles hold generated copies.
tests/repo/test_one_definition.py checks the copies and that every rule of the workflow is either
grouped or named in UNGROUPED with the reason.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The executor profiles that submit jobs (each holds a generated copy of the `groups:` block).
PROFILES = ("profiles/slurm", "profiles/cluster-generic-local", "profiles/kubernetes")

#: Rule -> group job. `prepare`: sealing and leak-checking the whole pack (one group job: the leak
#: verdict joins every task, and every control and agent run waits for it); `task`: the controls,
#: agent runs and scores of one task (jobs of different tasks are not connected, so each task is
#: its own group job); `aggregate`: the pack-level jobs.
GROUPS: dict[str, str] = {
    "hash_pack": "prepare",
    "leak_check": "prepare",
    "leak_verdict": "prepare",
    "run_dummy": "task",
    "run_agent": "task",
    "hidden_score": "task",
    "hidden_score_session": "task",
    "split": "aggregate",
    "pack_digests": "aggregate",
    "stratify": "aggregate",
    "decide": "aggregate",
}

#: Rules deliberately in no group, with the reason.
UNGROUPED: dict[str, str] = {
    "experiment_record": "a local rule: runs in the main process, never submitted",
    "task_list": "a local rule: runs in the main process, never submitted",
    "batch_spec": "a local rule: runs in the main process, never submitted",
    "gate": "a local rule: runs in the main process, never submitted",
    "build_env": "a checkpoint, one per distinct test environment: its own job (an install)",
    "task_batch": "already K tasks in one job (batch_size)",
    "batch_prepare": "already every task's sealing and leak check in one job (batch_size)",
}


def block() -> str:
    """The `groups:` block of a profile's config.yaml."""
    return "groups:\n" + "".join(f"  {rule}: {group}\n" for rule, group in GROUPS.items())


_BLOCK = re.compile(r"^groups:\n(?:  \S+: \S+\n)+", re.M)


def rewritten(text: str) -> str:
    """``text`` (a profile's config.yaml) with its one `groups:` block replaced by :func:`block`."""
    new, n = _BLOCK.subn(lambda _m: block(), text)
    if n != 1:
        raise ValueError(f"expected one `groups:` block, found {n}")
    return new


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    check = args == ["--check"]
    stale = []
    for prof in PROFILES:
        path = ROOT / prof / "config.yaml"
        text = path.read_text(encoding="utf-8")
        new = rewritten(text)
        if new != text:
            stale.append(prof)
            if not check:
                path.write_text(new, encoding="utf-8")
    verb = "differ from tools/cluster_groups.py" if check else "rewritten"
    print(f"{', '.join(stale)}: {verb}" if stale else "every profile's groups: block is current")
    return 1 if check and stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
