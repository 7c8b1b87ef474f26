"""commscope bench multirate"""

from ..bench.multirate import DEFAULTS, MODES, config_summary, mode_ratio, run_multirate
from ..errors import InputError
from ..output import dump_json, print_table
from ..units import parse_size
from .common_options import add_launch_options, add_resume_option, launch_kwargs, resume_if_asked

EXAMPLES = """\
examples:
  commscope bench multirate                            # 1, 2, 4 threads; both modes; sizes of Eberius 2020
  commscope bench multirate --threads 2,4 --reps 10    # more repetitions
  commscope bench multirate --modes shared --window 64 -i 20 # one mode, smaller windows
  commscope bench multirate --json                     # summary and ratios as JSON

Thread t of rank 0 sends windows of W messages to thread t of rank 1
(MPI_THREAD_MULTIPLE), all threads in one communicator (tags tell them apart) or one
communicator per thread. Every repetition is kept: <run>/reps.parquet (rate, and Open
MPI's ob1 queue lengths sampled on the receiver) and <run>/threads.parquet (each
sending thread). Under the counter library:
  commscope profile -n 2 --threads 4 -- $(commscope bench multirate --print-binary) \\
      --threads 4 --modes shared --reps 1
"""


def register(registry):
    p = registry.group_command(
        "bench",
        "multirate",
        help="message rate of thread pairs: shared vs per-thread communicators (Eberius 2020, Table 3.4)",
        description="Pairwise multirate pattern (Eberius 2020, Sec. 3.9.1): T threads per rank, thread t "
        "of rank 0 sends windows of messages to thread t of rank 1, either all in "
        "one communicator or each pair in its own; message rate per configuration, "
        "every repetition kept.",
        epilog=EXAMPLES,
    )
    p.add_argument(
        "--threads",
        default=",".join(map(str, DEFAULTS["threads"])),
        metavar="T1,T2,...",
        help="threads per rank (default %(default)s)",
    )
    p.add_argument(
        "--modes",
        default=",".join(MODES),
        metavar="LIST",
        help="shared (one communicator, tag = thread) and/or per-thread (default %(default)s)",
    )
    p.add_argument(
        "-s",
        "--size",
        default=str(DEFAULTS["size_bytes"]),
        help="message size (default %(default)s bytes, as Eberius 2020)",
    )
    p.add_argument(
        "--window",
        type=int,
        default=DEFAULTS["window"],
        help="messages per window (default %(default)s)",
    )
    p.add_argument(
        "-i",
        "--iterations",
        type=int,
        default=DEFAULTS["iterations"],
        help="timed windows per repetition (default %(default)s)",
    )
    p.add_argument(
        "-x",
        "--warmup",
        type=int,
        default=DEFAULTS["warmup"],
        help="untimed windows first (default %(default)s)",
    )
    p.add_argument(
        "--reps",
        type=int,
        default=DEFAULTS["reps"],
        help="repetitions per configuration (default %(default)s)",
    )
    p.add_argument("--json", action="store_true", help="print the summary and ratios as JSON")
    p.add_argument(
        "--print-binary",
        action="store_true",
        help="build the native program for the selected MPI, print its path and exit "
        "(to run it under `commscope profile`)",
    )
    add_resume_option(p, "thread count")
    add_launch_options(p)
    p.set_defaults(func=_run)


def _threads(text):
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise InputError(
            "--threads", None, f"expected thread counts like 1,2,4, got {text!r}"
        ) from None


def _run(args):
    if resume_if_asked(args):
        return 0
    if args.print_binary:
        from .. import mpi as mpimod

        print(mpimod.binary(mpimod.select_mpi(args.mpi), "multirate"))
        return 0
    kw = launch_kwargs(args)
    if args.json:
        kw["echo"] = False
    run = run_multirate(
        threads=_threads(args.threads),
        modes=args.modes,
        size_bytes=parse_size(args.size, "--size"),
        window=args.window,
        iterations=args.iterations,
        warmup=args.warmup,
        reps=args.reps,
        **kw,
    )
    reps = run.table("reps")
    summary, ratio = config_summary(reps), mode_ratio(reps)
    if args.json:
        dump_json(
            {
                "run": str(run.path),
                "summary": summary.to_dict("records"),
                "ratio": ratio.to_dict("records"),
            }
        )
        return 0
    if not args.quiet:
        print_table(summary, title="median over repetitions (rates in messages/s)")
        if len(ratio):
            print_table(ratio, title="rate per thread: shared communicator / one per thread")
    print(run.path)
    return 0
