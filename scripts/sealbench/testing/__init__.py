"""Test helpers that ship with sealbench (standard library only)."""
