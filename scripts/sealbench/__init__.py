"""sealbench: a sealed, content-addressed evaluation pipeline for coding agents."""
__version__ = "0.1.0"
