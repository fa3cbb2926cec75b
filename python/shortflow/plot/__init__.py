"""Figures (matplotlib, drawn off-screen)."""
