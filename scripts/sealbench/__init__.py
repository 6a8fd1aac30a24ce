"""sealbench: a sealed, content-addressed evaluation pipeline for coding agents."""
__version__ = "0.1.0"

#: The package's layers, bottom to top: one folder each (scripts/sealbench/<layer>/). A module
#: imports only modules of its own layer or of the layers below (tests/repo/test_layout.py).
LAYERS = ("core", "isolation", "pack", "stats", "leak", "provenance", "scoring", "agent", "stages", "report", "gate", "builders", "app")
#: Folders outside the layers: the built-in agents (they import only the core) and test helpers.
APART = ("agents", "testing")
