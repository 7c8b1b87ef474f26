"""Predictions from measured runs: variability at scale (003 Ch. 3), and more."""
