"""Where commscope's own files live: native sources, build trees, run directories."""

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
DATA_DIR = PACKAGE_DIR / "data"  # the papers' reference tables (OSU, Blue Waters)


def project_root():
    """The checkout holding native/ (the package is installed editable from it)."""
    env = os.environ.get("COMMSCOPE_HOME")
    if env:
        return Path(env)
    return PACKAGE_DIR.parents[1]


def native_dir():
    return project_root() / "native"


def build_root():
    """Build trees, one per MPI: <checkout>/build, or ~/.cache if not writable."""
    env = os.environ.get("COMMSCOPE_BUILD_DIR")
    if env:
        return Path(env)
    root = project_root() / "build"
    if os.access(project_root(), os.W_OK):
        return root
    return Path.home() / ".cache" / "commscope" / "build"


def default_runs_root():
    return Path(os.environ.get("COMMSCOPE_RUNS", "runs"))
