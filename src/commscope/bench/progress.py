"""The progress probe's driver: the run as its descriptor says (benchspec/progress.py),
then the verdict per size and case (:func:`verdict_table`) for what the command prints."""

import os

from ..benchspec.progress import BENCHMARK, CASES, RECEIVERS, SENDERS  # noqa: F401 (re-exported)
from ..models.progress import classify_rows
from .driver import run_described
from ..lazy import lazy

pd = lazy("pandas")


def progress_env(environ=None):
    """The settings of the environment that change an MPI's progress (MPICH's progress
    thread, Open MPI's MCA progress parameters): {name: value}."""
    environ = os.environ if environ is None else environ
    return {
        k: v
        for k, v in environ.items()
        if k.startswith(("MPIR_CVAR_ASYNC_PROGRESS", "MPICH_ASYNC_PROGRESS"))
        or (k.startswith("OMPI_MCA_") and "progress" in k.lower())
    }


def run_progress(**kw):
    """Run the progress probe on 2 ranks; returns the finished Run.  Parameters as the
    descriptor names them (sizes, cases, sender, receiver, partitions, reps, warmup,
    compute_factor, min_compute_s), the rest :func:`run_benchmark`'s launch options.
    The environment's progress settings (:func:`progress_env`) go into meta.json's
    ``progress_env``: the same library behaves otherwise with them."""
    env = progress_env()
    run = run_described("progress", **kw)
    run.meta["progress_env"] = env
    run.save_meta()
    return run


def overlap_rows(run):
    """Per size, case, sender and receiver: repetitions, median T, transfer alone, wait
    after T and overlap fraction (NaN where the case did not run)."""
    return overlap_rows_of(run.table("samples"))


def overlap_rows_of(df):
    """:func:`overlap_rows` of a samples table (several runs' pooled)."""
    g = df.groupby(["size_bytes", "case", "sender", "receiver"], sort=False)
    out = g.agg(
        reps=("overlap_fraction", "count"),
        compute_s=("compute_s", "median"),
        transfer_s=("transfer_s", "median"),
        wait_after_s=("wait_after_s", "median"),
        sender_wait_s=("sender_wait_s", "median"),
        overlap_fraction=("overlap_fraction", "median"),
    ).reset_index()
    return out.sort_values(["size_bytes", "case", "sender", "receiver"], kind="stable")


def case_notes(run):
    """{case: (status, note)} of the run's ``cases`` table."""
    df = run.table("cases")
    notes = df["note"].astype(object).fillna("")
    return {c: (s, str(n)) for c, s, n in zip(df["case"], df["status"], notes)}


def verdict_table(run):
    """:func:`overlap_rows` with each row's verdict (models/progress.py)."""
    rows = overlap_rows(run).to_dict("records")
    supported = {c: s == "run" for c, (s, _) in case_notes(run).items()}
    return pd.DataFrame(classify_rows(rows, supported))


def show_progress(run, quiet=False, json=False):
    """What ``commscope bench progress`` prints: the verdicts (as JSON with ``json``),
    then the run directory."""
    from ..output import dump_json, print_table

    table = verdict_table(run)
    if json:
        dump_json({"run": str(run.path), "verdicts": table.to_dict("records")})
        return
    if not quiet:
        print_table(table, title="does data move before the wait? (medians over repetitions)")
    print(run.path)
