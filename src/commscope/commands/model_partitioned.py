"""``commscope model partitioned``: a thin shell over :mod:`commscope.models.partitioned`."""

from ..bench.partitioned import default_sizes
from ..errors import InputError
from ..models import partitioned as pm
from ..models.osu import load_osu
from ..output import dump_json, print_table
from ..units import format_seconds, parse_size_list
from ..lazy import lazy
from .common_options import add_machine_model_option, add_monte_carlo_options, number

np = lazy("numpy")

DESCRIPTION = """\
Model a partitioned (Finepoints) send against a single send of the same buffer
(Dominguez-Trujillo 2021, Chapter 4). N threads compute on 1/N of the buffer each, with
compute times of mean --compute seconds and standard deviation --sigma seconds, or
--variability v in the thesis's convention (sigma = compute * v**2: "10%" of 100 ms is
1 ms). Per buffer size it prints the time from the last thread's finish to the end of the
transfer and the effective bandwidth (bytes/s) for: the single send (join, then one
message), Algorithm 1 (analytic, EMMA), and with --monte-carlo a simulation that sends
each partition when its thread finishes, one at a time on the link.

The link is an OSU table (--osu: the thesis's reference CSV with --machine, or the text
output of osu_latency and osu_bw), a machine model (--machine-model, --locality), or a
constant --latency/--bandwidth. Default sizes: the thesis's sweep 18 * 2^j MiB,
j = -6..8. Sizes accept suffixes K, KiB, M, MiB, G, GiB (2^10..) and KB, MB, GB (10^3..).

examples:
  commscope model partitioned --osu src/commscope/data/osu_internode_lassen_quartz.csv \\
      --machine lassen --threads 20 --compute 0.1 --variability 0.25
  commscope model partitioned --latency 5e-6 --bandwidth 1e10 --threads 4 \\
      --compute 0.1 --variability 0.1 --sizes 16MB --monte-carlo --replicas 20000
"""


def parse_sizes(text):
    sizes = parse_size_list(text, "--sizes")
    if min(sizes) <= 0:
        raise InputError("--sizes", None, "sizes must be positive")
    return [float(s) for s in sizes]


def build_link(args):
    """The link chosen on the command line (exactly one source)."""
    chosen = [
        name
        for name, on in (
            ("--osu", args.osu),
            ("--machine-model", args.machine_model),
            ("--latency/--bandwidth", args.latency is not None or args.bandwidth is not None),
        )
        if on
    ]
    if len(chosen) != 1:
        raise InputError(
            "link", None, "give exactly one of --osu, --machine-model or --latency with --bandwidth"
        )
    if args.osu:
        return load_osu(args.osu, args.machine)
    if args.machine_model:
        from ..models.machine_model import load_machine_model

        return pm.MachineModelLink(load_machine_model(args.machine_model), args.locality, args.ppn)
    if args.latency is None or args.bandwidth is None:
        raise InputError("--latency/--bandwidth", None, "give both")
    return pm.ConstantLink(args.latency, args.bandwidth)


def read_samples(path):
    """Measured compute times: the ``compute_time_s`` column of a CSV or Parquet file."""
    import pandas as pd

    from ..tablefile import read_table

    frame = read_table(path)
    if "compute_time_s" not in frame.columns:
        raise InputError(path, "compute_time_s", "column missing")
    values = pd.to_numeric(frame["compute_time_s"], errors="coerce").to_numpy(float)
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise InputError(path, "compute_time_s", "empty or non-numeric values")
    return values


def run(args):
    link = build_link(args)
    sizes = parse_sizes(args.sizes) if args.sizes else default_sizes()
    if args.variability is None and args.sigma is None:
        raise InputError("--variability", None, "give --variability or --sigma")
    table = pm.compare_partitioned(
        link,
        args.threads,
        sizes,
        args.compute,
        variability=args.variability,
        sigma_s=args.sigma,
        t_wait_s=args.t_wait,
        dist=args.dist,
        monte_carlo=args.monte_carlo,
        samples=read_samples(args.samples) if args.samples else None,
        replicas=args.replicas,
        seed=args.seed,
    )
    sigma = (
        args.sigma
        if args.sigma is not None
        else pm.sigma_from_variability(args.compute, args.variability)
    )
    params = {
        "threads": args.threads,
        "compute_s": args.compute,
        "sigma_s": sigma,
        "variability": args.variability,
        "t_wait_s": args.t_wait,
        "dist": args.dist,
        "monte_carlo": bool(args.monte_carlo or args.samples),
        "replicas": args.replicas,
        "seed": args.seed,
        "samples": args.samples,
    }
    sizes_out = table["size_bytes"].to_numpy()
    if np.all(sizes_out == np.round(sizes_out)):
        table["size_bytes"] = sizes_out.astype(np.int64)
    if args.json:
        dump_json({"parameters": params, "rows": table.to_dict("records")})
        return 0
    cols = ["size_bytes", "single_elapsed_s", "model_elapsed_s"]
    if "mc_elapsed_s" in table:
        cols.append("mc_elapsed_s")
    cols += ["single_bandwidth_Bps", "model_bandwidth_Bps"]
    if "mc_bandwidth_Bps" in table:
        cols.append("mc_bandwidth_Bps")
    cols.append("model_messages_overlapped")
    if "mc_messages_overlapped" in table:
        cols.append("mc_messages_overlapped")
    title = (
        f"partitioned vs single send: {args.threads} threads, compute "
        f"{format_seconds(args.compute)}, sigma {format_seconds(sigma)}, T_wait "
        f"{format_seconds(args.t_wait)}"
    )
    print_table(table, cols, title=title)
    return 0


def register(registry):
    p = registry.group_command(
        "model",
        "partitioned",
        help="partitioned vs single-send model (Algorithm 1 + Monte Carlo)",
        description=DESCRIPTION,
    )
    link = p.add_argument_group("link (choose one)")
    link.add_argument(
        "--osu",
        nargs="+",
        metavar="FILE",
        help="OSU reference CSV, or osu_latency and osu_bw text outputs",
    )
    link.add_argument(
        "--machine", help="with --osu: the machine column pair of a reference CSV (e.g. lassen)"
    )
    add_machine_model_option(
        link, help="machine model JSON (commscope fit), or bluewaters (Bienz et al. 2018, Table 1)"
    )
    link.add_argument(
        "--locality", default="inter-node", help="machine-model locality (default: %(default)s)"
    )
    link.add_argument(
        "--ppn",
        type=int,
        default=1,
        help="processes per node sending (machine model; default %(default)s)",
    )
    link.add_argument("--latency", type=number, metavar="S", help="constant latency, seconds")
    link.add_argument(
        "--bandwidth", type=number, metavar="B_PER_S", help="constant bandwidth, bytes per second"
    )
    w = p.add_argument_group("workload")
    w.add_argument("--threads", type=int, required=True, help="threads (= partitions)")
    w.add_argument(
        "--compute",
        type=number,
        required=True,
        metavar="S",
        help="mean thread compute time, seconds",
    )
    sd = w.add_mutually_exclusive_group()
    sd.add_argument(
        "--variability", type=number, metavar="V", help="thesis convention: sigma = compute * V**2"
    )
    sd.add_argument("--sigma", type=number, metavar="S", help="standard deviation, seconds")
    w.add_argument(
        "--t-wait",
        type=number,
        default=0.0,
        metavar="S",
        help="MPIX_Wait overhead added to the partitioned send (default 0)",
    )
    w.add_argument(
        "--sizes",
        metavar="S1,S2,...",
        help="buffer sizes, comma-separated, A:B doubling: 18MiB = 18M = 18 * 2^20, "
        "16MB = 16 * 10^6 (default: 18 * 2^j MiB, j = -8..2, 72K..72M, as "
        "`bench partitioned`; the thesis's figures go to j = 8)",
    )
    mc = p.add_argument_group("Monte Carlo")
    mc.add_argument("--monte-carlo", action="store_true", help="add the simulated columns")
    mc.add_argument(
        "--dist",
        default="normal",
        choices=pm.DISTRIBUTIONS,
        help="thread-time distribution with the given mean and sd (default normal)",
    )
    mc.add_argument(
        "--samples",
        metavar="FILE",
        help="resample measured compute times (the compute_time_s column of a "
        "CSV/Parquet file); implies --monte-carlo",
    )
    add_monte_carlo_options(mc, replicas=2000)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run)
