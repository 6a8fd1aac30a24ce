"""berthwise: a small marina berth booking service (sealbench demo pack)."""

__version__ = "0.3.1"
