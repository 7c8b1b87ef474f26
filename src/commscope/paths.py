"""Where commscope's own files live: native sources, build trees, run directories."""

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
DATA_DIR = PACKAGE_DIR / "data"  # the papers' reference tables (OSU, Blue Waters)


def write_text_atomic(path, text):
    """Write ``text`` to ``path`` via a hidden temporary file and a rename.

    A crash never leaves a half-written file behind, and the temporary name
    (``.<name>.<pid>.tmp``) cannot collide with a user's own file.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


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
