"""Where commscope's own files live: native sources, build trees, run directories."""

import contextlib
import errno
import os
import re
import stat
import tempfile
from pathlib import Path

from .errors import InputError

PACKAGE_DIR = Path(__file__).resolve().parent
DATA_DIR = PACKAGE_DIR / "data"  # the papers' reference tables (OSU, Blue Waters)


@contextlib.contextmanager
def atomic_output(path):
    """Yield a fresh temporary path next to ``path``; on success it replaces ``path``.

    The temporary is created by :func:`tempfile.mkstemp` (O_CREAT|O_EXCL, an
    unpredictable name, in the destination directory so the rename is atomic): a
    symlink planted there cannot redirect the write, two writers never share a
    temporary, and a crash or error leaves neither a half-written ``path`` nor the
    temporary.  ``os.replace`` replaces a symlink at ``path`` itself, never its target.
    """
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:  # name the file asked for, not the temporary
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp's 0600 would hide results from the group
    finally:
        os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename in (None, tmp):
            # e.g. pyarrow's "Error writing bytes to file ... [errno 28]": name the file
            err = exc.errno or _errno_in(str(exc)) or errno.EIO
            raise OSError(err, os.strerror(err), str(path)) from exc
        raise


def write_text_atomic(path, text):
    """Write ``text`` to ``path`` atomically (see :func:`atomic_output`)."""
    with atomic_output(path) as tmp:
        tmp.write_text(text)
    return Path(path)


def _errno_in(message):
    m = re.search(r"errno[ =:]*(\d+)", message, re.IGNORECASE)
    return int(m.group(1)) if m else None


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def require_regular_file(path):
    """``path`` as a Path if it is a regular file (or a link to one), else InputError.

    Decided by ``stat``, never by opening: opening a FIFO blocks until a writer comes,
    and a device can stream forever, so ``report`` or ``stats`` given one would hang.
    """
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError(path, None, "no such file") from None
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror}") from None
    if stat.S_ISDIR(mode) and (path / "meta.json").is_file():
        tables = sorted(t.name for t in path.glob("*.parquet"))
        raise InputError(
            path,
            None,
            "is a run directory; give one of its tables"
            + (f": {', '.join(str(path / t) for t in tables)}" if tables else ""),
        )
    if not stat.S_ISREG(mode):
        kind = (
            "a directory"
            if stat.S_ISDIR(mode)
            else "a FIFO (named pipe)"
            if stat.S_ISFIFO(mode)
            else "a device"
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a socket"
            if stat.S_ISSOCK(mode)
            else "not a regular file"
        )
        raise InputError(path, None, f"is {kind}; only regular files are read")
    return path


def prepare_output(path, option="-o"):
    """Check where a command will write ``path``; returns it as a Path.

    The parent must be an existing directory. A missing parent is created only inside
    the current directory (and said on stderr); elsewhere (``/nonexistent/dir``) it is
    an error, so a typo never creates directories at the filesystem root.
    """
    from .errors import InputError

    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    for above in [parent, *parent.parents]:
        if above.exists() and not above.is_dir():
            raise InputError(
                option, None, f"{above} (a parent of {path}) is a file, not a directory"
            )
    if path.is_dir():
        raise InputError(option, None, f"{path} is a directory; give a file name")
    if not parent.exists():
        here = Path.cwd().resolve()
        if here not in parent.resolve().parents and parent.resolve() != here:
            raise InputError(
                option,
                None,
                f"the directory {parent} does not exist "
                "(only directories inside the current one are "
                "created)",
            )
        parent.mkdir(parents=True)
        import sys

        print(f"commscope: created directory {parent}", file=sys.stderr)
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
