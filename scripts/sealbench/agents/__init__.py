"""Agents that ship with sealbench."""
