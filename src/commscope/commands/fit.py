"""commscope fit"""

from ..errors import InputError
from ..models.fitting import compare_breakpoints
from ..models.machine_model import DEFAULT_FILE, save_machine_model
from ..models.progress import progress_lines
from ..output import dump_json, print_table
from ..paths import prepare_output
from ..machine_fit import fit_runs, machine_model_table, queue_search_table
from .common_options import add_overwrite_option, number
from ..units import format_bytes, format_seconds


def register(registry):
    p = registry.command(
        "fit",
        help="fit the postal / max-rate / queue-search models to measured runs",
        description="Fit a machine model (Bienz et al. 2018, eqs. 1-3) from ping-pong runs: protocol "
        "breakpoints (short / eager / rendezvous) found from the data and compared "
        "with the eager limits the MPI reports through MPI_T; alpha and beta per "
        "protocol and locality; R_b and the injection limit R_N from multi-pair runs; "
        "gamma from HighVolumePingPong runs and delta from --contention ones when "
        "given. Writes a documented JSON machine model (docs/machine-model.md) with the "
        "relative error per size.\n\n"
        "example:\n  commscope fit runs/ -o machine-model.json",
    )
    p.add_argument(
        "runs", nargs="+", metavar="RUN", help="run directories, or folders holding run directories"
    )
    p.add_argument(
        "-o",
        "--output",
        default=DEFAULT_FILE,
        help="machine-model path (default %(default)s); never overwritten unless --overwrite",
    )
    add_overwrite_option(p, "machine model")
    p.add_argument(
        "--hops",
        type=number,
        default=None,
        help="links each byte crosses in --contention HighVolumePingPong runs, for "
        "delta (Bienz et al. 2018, eq. 7; default N/2 for N nodes in a line, Fig. 6)",
    )
    p.add_argument("--json", action="store_true", help="print the machine model as JSON")
    p.set_defaults(func=_run)


def _run(args):
    out = prepare_output(args.output)
    if out.exists() and not args.overwrite:
        raise InputError(out, None, "exists; not overwriting (use --overwrite or another -o)")
    if args.hops is not None and not args.hops > 0:
        raise InputError("--hops", None, f"must be > 0, got {args.hops}")
    machine_model = fit_runs(args.runs, hops=args.hops)
    save_machine_model(machine_model, out, overwrite=args.overwrite)
    if args.json:
        dump_json(machine_model.to_dict())
        return 0
    print_table(
        machine_model_table(machine_model), title="postal / max-rate fit per locality and protocol"
    )
    print()
    found = compare_breakpoints(machine_model)[["locality", "short_max_bytes", "eager_max_bytes"]]
    print_table(found, title="protocol breakpoints found in the data (largest size of each)")
    limits = ", ".join(
        f"{k} {format_bytes(v)}" for k, v in sorted(machine_model.mpi_eager_limits.items())
    )
    print(f"MPI_T eager/rendezvous limits reported by the MPI: {limits or 'none'}")
    for loc, sizes in machine_model.machine.get("regime_changes_bytes", {}).items():
        modelled = {
            p.capacity_bytes
            for (_, ploc), p in machine_model.params.items()
            if ploc == loc and p.capacity_bytes is not None
        }
        for size in sizes:
            print(
                f"{loc}: slower per byte above {format_bytes(size)} without a protocol change (caches "
                "or memory bandwidth): "
                + (
                    "modelled as a capacity regime"
                    if size in modelled
                    else "not modelled (fewer than 3 sizes beyond it)"
                )
            )
    if machine_model.gamma_s is not None:
        ci = machine_model.machine.get("gamma_ci95_s")
        print(
            f"\ngamma (queue search per element) = {format_seconds(machine_model.gamma_s)}"
            + (
                f" (95 % bootstrap interval {format_seconds(ci[0])} .. {format_seconds(ci[1])})"
                if ci
                else ""
            )
        )
    if machine_model.queue_search is not None:
        qs = machine_model.queue_search
        print()
        print_table(
            queue_search_table(machine_model),
            title=f"queue-search model per order ({qs.mpi or 'MPI unknown'}, "
            f"{format_bytes(qs.size_bytes)} messages): form chosen by fit quality "
            "(BIC)",
        )
    if machine_model.delta_s_per_byte is not None:
        print(
            f"delta (contention per byte on a link) = {format_seconds(machine_model.delta_s_per_byte)}"
        )
    for key in sorted(machine_model.progress or {}):
        print(f"\nprogress ({key}):\n  " + "\n  ".join(progress_lines(machine_model, key)))
    for warning in machine_model.machine.get("warnings", []):
        print(f"warning: {warning}")
    print(f"\nmachine model written to {out}")
    return 0
