"""commscope doctor"""

from .. import doctor
from ..output import dump_json


def register(registry):
    p = registry.command(
        "doctor",
        help="check the MPI, launcher, threads, OMPT, topology and MPI_T variables",
        description="What a user checks first: the MPI in use (MPI_Get_library_version), its "
        "launcher, the thread level provided, whether MPI-4 partitioned calls and "
        "OMPT are available, the node topology, and the MPI_T variables "
        "(counts, queue-related performance variables, eager/rendezvous limits).\n\n"
        "OMPT: a probe program runs under the OMPT thread-timing tool; --ompt PROGRAM "
        "also says whether (and how) that program's OpenMP can be timed.\n\n"
        "example:\n  commscope doctor --mpi mpich --json\n"
        "  commscope doctor --ompt ./my_mpi_openmp_app",
    )
    p.add_argument(
        "--mpi",
        default=None,
        metavar="NAME|MPICC",
        help="openmpi (default), mpich, or the path of an mpicc",
    )
    p.add_argument(
        "--ompt",
        metavar="PROGRAM",
        default=None,
        help="check whether OMPT thread timing (profile --ompt) works for PROGRAM",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_run)


def _run(args):
    findings = doctor.diagnose(args.mpi, args.ompt)
    if args.json:
        dump_json(findings)
    else:
        print(doctor.format_report(findings))
    return 0
