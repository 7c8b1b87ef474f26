"""Drivers for the native benchmarks: build, launch, and land results in a run directory."""
