"""gate: The decision: the refusal rules, what the holdout remembers, the sensitivity analysis, and the
gate stage itself (``python -m sealbench.gate.gate``).

Modules:

- ``gate``: the decision, the card and the reports; points `results/latest` at the experiment
- ``holdout_memory``: what the ledger says about this holdout: reuse, the pinned pre-registration
  and server
- ``refusal_rules``: one function per refusal rule, and their table (`RULES`)
- ``sensitivity``: the worst case of the exclusions (`EXCLUSIONS_DECIDE`)
"""
