"""provenance: Who and what ran: agent fingerprints (identity), a grown pack's slices, the holdout
ledger and the draws it counts.

Modules:

- ``draws``: the draw record: every agent run on it before it starts and its outcome when scored;
  the gate scores a slot's first draw
- ``identity``: an agent's identity: the files its command covers and its fingerprint
- ``ledger``: the holdout's memory, `PACK/ledger.jsonl` (hash-chained)
- ``slices``: a grown pack's slices (`split --extend`): a new task's hashed side, the slice records,
  `CARD_ON_EARLIER_SLICE`
"""
