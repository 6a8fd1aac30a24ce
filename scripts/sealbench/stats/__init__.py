"""stats: The statistics, free of I/O: rate intervals, the bootstrap, the paired comparison, the
decision rule, power (required n, MDE) and epochs (pass@k).

Modules:

- ``bootstrap``: the blocked and the exact stratified bootstrap
- ``decision_rule``: the gate's call on a comparison: interval, power, exact test, MDE (`gate_call`)
- ``epoch_stats``: epochs: per-task means, clustered standard errors, variance components, pass@k
- ``paired``: the paired comparison: stratified t (the decision interval), McNemar, Newcombe, the
  blocked bootstrap beside it
- ``power``: the required number of tasks and the observed MDE
- ``rate_intervals``: Wilson and Clopper–Pearson intervals of a rate
"""

from types import ModuleType


def scipy_stats() -> ModuleType:
    """``scipy.stats``, imported when a statistic is first computed, not when a module of this
    package is: Snakemake imports the gate's modules to plan every run (the start check foresees
    holdout refusals) and computes no statistic there; scipy.stats alone takes a second to import."""
    from scipy import stats

    return stats
