"""HighVolumePingPong (004 Algorithm 1) run for real at small sizes; contention fit."""

import numpy as np
import pandas as pd
import pytest

from commscope import cli
from commscope.bench.hvpingpong import count_grid, model_table, planned_counts, run_hvpingpong
from commscope.errors import InputError
from commscope.models import p2p
from commscope.models.contention_fit import fit_delta
from commscope.models.machine_model import bluewaters_machine_model
from commscope.models.message_time import message_seconds

COUNTS = [1, 7, 60]
SIZES = [8, 2048]
REPS = {1: 20, 7: 3, 60: 3}  # max(iters = 3, ceil(min_messages = 20 / n))


@pytest.fixture(scope="module")
def hvpp_run(tmp_path_factory, default_mpi):
    root = tmp_path_factory.mktemp("runs")
    return run_hvpingpong(
        counts=COUNTS,
        sizes=SIZES,
        iters=3,
        warmup=1,
        min_messages=20,
        runs_root=root,
        echo=False,
        progress=False,
    )


def test_every_repetition_of_every_cell_is_kept(hvpp_run):
    s = hvpp_run.table("samples")
    assert hvpp_run.meta["status"] == "complete"
    assert len(s) == sum(REPS.values()) * len(SIZES) * 2
    cells = s.groupby(["n_messages", "size_bytes", "order"])["rep"].apply(sorted)
    assert set(cells.index) == {
        (n, b, o) for n in COUNTS for b in SIZES for o in ("ordered", "reversed")
    }
    # a few-message cell times at least min_messages messages
    assert all(reps == list(range(REPS[n])) for (n, _, _), reps in cells.items())
    assert [rows for _, rows in planned_counts(hvpp_run.meta["parameters"])] == [
        REPS[n] * len(SIZES) * 2 for n in COUNTS
    ]
    assert (s["time_s"] > 0).all() and (s["pairs"] == 1).all()
    assert set(s["locality"]) <= {"intra-socket", "cross-socket"}  # one node
    assert hvpp_run.meta["parameters"]["counts"] == COUNTS


def test_model_table_uses_machine_model_and_fitted_gamma(hvpp_run):
    s = hvpp_run.table("samples")
    machine_model = bluewaters_machine_model()
    tab = model_table(s, machine_model, gamma_s=2e-9)
    row = tab[
        (tab["n_messages"] == 60) & (tab["size_bytes"] == 2048) & (tab["order"] == "reversed")
    ].iloc[0]
    one = message_seconds(machine_model, 2048, row["locality"])
    assert row["maxrate_s"] == pytest.approx(60 * one)
    assert row["queue_s"] == pytest.approx(2e-9 * 60**2)  # eq. 3, upper bound
    ordered = tab[
        (tab["n_messages"] == 60) & (tab["size_bytes"] == 2048) & (tab["order"] == "ordered")
    ].iloc[0]
    assert ordered["queue_s"] == pytest.approx(2e-9 * 60)
    assert row["ordered_plus_queue_s"] == pytest.approx(ordered["median_s"] + 2e-9 * (3600 - 60))
    # without gamma given, it is fitted from the run's own ordered/reversed samples
    assert model_table(s).attrs["gamma_s"] is not None


def test_total_bytes_keeps_n_times_s_constant(runs_root, default_mpi):
    run = run_hvpingpong(
        counts=[1, 4, 16],
        total_bytes=4096,
        orders=["reversed"],
        iters=2,
        warmup=0,
        runs_root=runs_root,
        echo=False,
        progress=False,
    )
    s = run.table("samples")
    assert set(s["order"]) == {"reversed"}
    assert dict(zip(s["n_messages"], s["size_bytes"])) == {1: 4096, 4: 1024, 16: 256}


def test_runs_under_mpich(runs_root, mpich_mpi):
    run = run_hvpingpong(
        counts=[1, 30],
        sizes=[8],
        iters=2,
        warmup=0,
        min_messages=0,
        runs_root=runs_root,
        mpi_spec="mpich",
        echo=False,
        progress=False,
    )
    s = run.table("samples")
    assert len(s) == 2 * 2 * 2 and run.meta["mpi"]["flavor"] == "mpich"


def test_count_grid():
    assert count_grid(1, 10000, 1) == [1, 10, 100, 1000, 10000]
    assert count_grid(1, 100, 2) == [1, 3, 10, 32, 100]
    assert count_grid(5, 5) == [5]


def test_contention_on_one_node_exits_with_the_explanation(runs_root, capsys):
    assert cli.main(["bench", "hvpingpong", "--contention", "--runs", str(runs_root)]) == 2
    err = capsys.readouterr().err
    assert "--contention" in err and "1 node" in err and "network link" in err
    assert "Traceback" not in err
    assert list(runs_root.iterdir()) == []  # nothing launched
    with pytest.raises(InputError, match="at least 4"):
        run_hvpingpong(contention=True, hosts=["a", "b"], runs_root=runs_root)


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--order", "sideways"], "--order"),
        (["--messages", "10:1"], "larger than MAX"),
        (["--messages", "a:b"], "--messages"),
        (["--counts", "1,20000000"], "--counts"),
        (["-i", "0"], "--iterations"),
        (["-x", "-1"], "--warmup"),
        (["--min-messages", "-1"], "--min-messages"),
        (["--counts", "1,0"], ">= 1"),
        (["--total-bytes", "100", "--messages", "1:1000"], "less than 1 byte"),
        (["--sizes", "1G", "--messages", "1:10000"], "2 GiB"),
    ],
)
def test_bad_options_exit_2_with_a_clear_message(argv, needle, runs_root, capsys):
    assert cli.main(["bench", "hvpingpong", *argv, "--runs", str(runs_root)]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_fit_delta_recovers_the_papers_delta():
    machine_model = bluewaters_machine_model()
    rows = []
    rng = np.random.default_rng(3)
    for n in (1, 10, 100, 1000):
        for s in (8, 4096, 65536):
            for order in ("ordered", "reversed"):
                base = p2p.hvpingpong_time(machine_model, n, s, "inter-node", order, ppn=16)[
                    "total_s"
                ][0]
                extra = 1.0e-10 * p2p.contention_link_bytes(2, n * s, 16)[()]  # eqs. 5, 7
                for _ in range(3):
                    rows.append(
                        dict(
                            n_messages=n,
                            size_bytes=s,
                            order=order,
                            time_s=(base + extra) * rng.uniform(0.999, 1.001),
                        )
                    )
    fit = fit_delta(pd.DataFrame(rows), machine_model, hops=2, ppn=16)
    assert fit.delta_s_per_byte == pytest.approx(1.0e-10, rel=0.02)
    # a given l instead of eq. 7
    fit2 = fit_delta(
        pd.DataFrame(rows), machine_model, ppn=16, link_bytes=lambda n, s: 2 * 2**3 * n * s * 16
    )
    assert fit2.delta_s_per_byte == pytest.approx(fit.delta_s_per_byte)
    with pytest.raises(InputError, match="hops and ppn"):
        fit_delta(pd.DataFrame(rows), machine_model)


def test_report_section_renders(hvpp_run, tmp_path):
    from commscope.report.build import build_report

    page = build_report(
        [hvpp_run.path], tmp_path / "r.html", machine_model=bluewaters_machine_model()
    ).read_text()
    figures = page.count("data:image/png") + page.count('<figure class="fig"')
    assert "HighVolumePingPong" in page and figures == len(SIZES)
    assert "gamma fitted from this run" in page and "cannot show" not in page


def _write_run(root, kind, params, rows, hosts=("a",), nranks=2):
    from commscope.runs import Run

    run = Run.create(root, kind, params, argv=["test"])
    run.meta["placement"] = [
        {"rank": r, "host": hosts[r * len(hosts) // nranks]} for r in range(nranks)
    ]
    pd.DataFrame(rows).to_csv(run.raw_dir / "samples.csv", index=False)
    return run.finish()


def test_fit_command_gets_gamma_and_delta_from_the_right_runs(runs_root, tmp_path, capsys):
    """Plain HVPP runs give gamma, --contention runs delta: neither leaks into the other."""
    from dataclasses import replace

    machine_model = replace(bluewaters_machine_model(), gamma_s=0.0)  # queue search added below
    rng = np.random.default_rng(5)
    noise = lambda: rng.uniform(0.999, 1.001)  # noqa: E731
    sizes = [2**k for k in range(23)]
    pingpong = dict(
        pairs=1, min_size=1, max_size=sizes[-1], iters=3, warmup=0, large_iters=3, large_warmup=0
    )
    _write_run(
        runs_root,
        "pingpong",
        pingpong,
        [
            dict(
                size_bytes=s,
                pair=0,
                rep=r,
                time_s=message_seconds(machine_model, s, "inter-node") * noise(),
                locality="inter-node",
                pairs=1,
            )
            for s in sizes
            for r in range(3)
        ],
    )
    gamma, delta, ppn = 2e-9, 1e-10, 16
    plain, cont = [], []
    for n in (1, 10, 100, 1000):
        for s in (8, 4096, 65536):
            for order in ("ordered", "reversed"):
                base = p2p.hvpingpong_time(machine_model, n, s, "inter-node", order)["total_s"][0]
                search = gamma * (n * n if order == "reversed" else n)
                on_link = delta * p2p.contention_link_bytes(2, n * s, ppn)[()]
                for r in range(3):
                    cell = dict(
                        n_messages=n,
                        size_bytes=s,
                        order=order,
                        pair=0,
                        rep=r,
                        locality="inter-node",
                        pairs=1,
                    )
                    plain.append(dict(cell, time_s=(base + search) * noise()))
                    # no multi-pair ping-pong run, so the fitted machine model has no R_N: the
                    # synthetic machine has no injection limit either
                    cont.append(dict(cell, pairs=32, time_s=(base + search + on_link) * noise()))
    _write_run(runs_root, "hvpingpong", {"pairs": 1, "contention": False}, plain)
    _write_run(
        runs_root,
        "hvpingpong",
        {"pairs": 32, "contention": True},
        cont,
        hosts=("a", "b", "c", "d"),
        nranks=64,
    )
    out = tmp_path / "p.json"
    assert cli.main(["fit", str(runs_root), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    import json

    got = json.loads(out.read_text())
    assert got["gamma_s"] == pytest.approx(gamma, rel=0.05)
    assert got["delta_s_per_byte"] == pytest.approx(delta, rel=0.05)
    assert got["machine"]["delta_fit"]["hops"] == 2 and got["machine"]["delta_fit"]["ppn"] == 16
    assert "delta (contention per byte on a link)" in printed
    # without a plain run there is no gamma, and delta cannot be fitted
    for run in runs_root.iterdir():
        meta = json.loads((run / "meta.json").read_text())
        if meta["kind"] == "hvpingpong" and not meta["parameters"]["contention"]:
            import shutil

            shutil.rmtree(run)
    assert cli.main(["fit", str(runs_root), "-o", str(tmp_path / "q.json")]) == 2
    assert "needs gamma" in capsys.readouterr().err
