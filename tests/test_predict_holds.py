"""Do the models hold here? The verdict logic on known truths, and the table over real runs."""

import json
from dataclasses import replace

import pytest

from commscope.cli import main
from commscope.predict.holds import NOT_TESTED, Check, Point, holds_table, judge
from commscope.units import json_unit_problems

QUIET = dict(echo=False, progress=False, timeout=180)


# --- the verdict logic, on inputs whose truth is known ----------------------------------------


@pytest.mark.parametrize(
    "ratios, verdict",
    [
        ([1.0, 1.1, 0.9, 1.45], "holds"),  # median 1.05, worst 1.45
        ([1.3, 1.3, 1.3], "holds within 1.3x"),  # every point within 1.5, median beyond 1.25
        ([1.0, 1.1, 0.5], "holds within 2x"),  # one point 2x below
        ([1.0, 1.0, 3.99], "holds within 3.99x"),
        ([1.0, 1.0, 4.5], "does not hold"),
        ([0.2, 1.0, 1.0], "does not hold"),  # 5x below counts as much as 5x above
        ([], NOT_TESTED),
    ],
)
def test_judge_thresholds(ratios, verdict):
    assert judge(ratios)[0] == verdict


def test_judge_counts_are_exact_and_ratios_are_measured_over_predicted():
    assert judge([1, 1, 1], exact=True)[0] == "holds"
    assert judge([1, 1.01], exact=True)[0] == "does not hold"
    verdict, median, worst = judge([2.0, 0.2, 1.0])
    assert (median, worst) == (1.0, 0.2) and verdict == "does not hold"
    assert judge([2.0, 0.25, 1.0])[0] == "holds within 4x"  # the limit is inclusive


def _sweep(measured_over_model, over=None):
    return [
        Point(f"{n} messages", n, 1e-6 * n, 1e-6 * n * r, excluded=over)
        for n, r in measured_over_model
    ]


def test_reason_says_where_the_model_misses():
    # the queue search: fine up to 100 messages, far above beyond
    row = Check(
        "queue search", "", points=_sweep([(1, 1), (10, 1.1), (100, 1.2), (1000, 3), (10000, 22)])
    ).row()
    assert row["verdict"] == "does not hold"
    assert row["reason"].startswith(
        "measured above the model from 1000 messages on (22x above at 10000 messages)"
    )
    assert row["ratio_worst"] == 22 and row["predicted"] == "10 ms at 10000 messages"
    low = Check("x", "", points=_sweep([(1, 0.3), (10, 0.5), (100, 1.0)])).row()
    assert "measured below the model up to 10 messages" in low["reason"]
    ok = Check("x", "", points=_sweep([(1, 1.0), (10, 1.2)])).row()
    assert (ok["verdict"], ok["reason"]) == ("holds", "all 2 points within 1.2x")


def test_oversubscribed_points_are_shown_never_judged():
    over = "pp: oversubscribed, 4 ranks on 2 cores"
    row = Check("max-rate", "", points=_sweep([(1, 1.0), (10, 9.0)], over=over)).row()
    assert row["verdict"] == NOT_TESTED and row["judged"] == 0 and row["points"] == 2
    assert row["reason"].startswith(over) and row["ratio_median"] is None
    mixed = Check(
        "node-aware", "", points=_sweep([(1, 1.0)]) + _sweep([(10, 9.0)], over=over)
    ).row()
    assert mixed["verdict"] == "holds" and f"not judged: {over}" in mixed["reason"]


def test_a_second_failed_check_keeps_a_close_model_from_holding():
    row = Check(
        "partitioned",
        "",
        points=_sweep([(1, 1.1), (2, 1.2)]),
        extra_fail="partitioned vs single send: ...",
    ).row()
    assert row["verdict"] == "holds within 1.2x" and row["reason"].startswith("partitioned vs")


# --- the table over real runs ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(tmp_path_factory, default_mpi):
    """Small real runs of every kind the table judges, and a machine model fitted from the
    first ping-pong and the HighVolumePingPong only (the second ping-pong is held out)."""
    from commscope.bench.bsp import run_bsp
    from commscope.bench.hvpingpong import run_hvpingpong
    from commscope.bench.mtmatch import run_mtmatch
    from commscope.bench.partitioned import run_partitioned
    from commscope.bench.pingpong import run_pingpong
    from commscope.machine_fit import fit_runs

    root = tmp_path_factory.mktemp("holds") / "runs"
    kw = dict(runs_root=root, **QUIET)
    pp = dict(min_size=1, max_size=1 << 16, iters=50, warmup=5, large_iters=20, large_warmup=2)
    made = {
        "fit": run_pingpong(run_name="pp-fit", **pp, **kw),
        "heldout": run_pingpong(run_name="pp-heldout", **pp, **kw),
        "hvpp": run_hvpingpong(counts=[1, 10, 100], iters=3, warmup=1, run_name="hvpp", **kw),
        "mtmatch": run_mtmatch("5", "2x2", trials=2, warmup=1, run_name="mtmatch", **kw),
        "bsp1": run_bsp(
            "ftq", ranks=1, intervals=30, mean=1e-3, sd=1e-4, seed=1, run_name="bsp-1", **kw
        ),
        "bsp2": run_bsp(
            "ftq", ranks=2, intervals=30, mean=1e-3, sd=1e-4, seed=1, run_name="bsp-2", **kw
        ),
        "partitioned": run_partitioned(
            threads=2,
            compute_s=1e-3,
            sigma_s=1e-4,
            sizes=[1 << 16],
            runs_per_size=3,
            run_name="part",
            **kw,
        ),
    }
    mm = fit_runs([made["fit"].path, made["hvpp"].path])
    return {"root": root, "mm": mm, **{k: r.path for k, r in made.items()}}


def _rows(table):
    return {r["model"]: r for r in table["rows"]}


def test_table_over_real_runs(runs):
    table = holds_table([runs["root"]], runs["mm"], "fitted in the test")
    rows = _rows(table)
    assert table["thresholds"] == {
        "holds_median_ratio": 1.25,
        "holds_worst_ratio": 1.5,
        "within_worst_ratio": 4.0,
    }
    postal = [r for m, r in rows.items() if m.startswith("postal (")]
    assert postal and all(r["runs"] == ["pp-heldout"] for r in postal)  # held out: a prediction
    assert not any("in-sample" in r["reason"] for r in postal)
    assert sum(r["points"] for r in postal) == 17  # 1 B .. 64 KiB
    for order in ("ordered", "reversed"):
        q = rows[f"queue search, {order}"]
        assert q["points"] == 3 and "in-sample: gamma was fitted from hvpp" in q["reason"]
        assert q["verdict"] != NOT_TESTED and q["ratio_median"] > 0
    # the MPI matched exactly the closed forms' messages (5-point, 2x2: M_t = T_s = 8, T_r = 4)
    st = rows["stencil counts"]
    assert st["verdict"] == "holds" and st["ratio_worst"] == 1
    counts = {p["at"].split()[-1]: p["measured_messages"] for p in st["compared"]}
    assert counts["M_t"] == 8 and counts["T_r"] == 4 and counts["T_s"] == 8
    assert rows["contention"]["verdict"] == NOT_TESTED
    assert rows["contention"]["reason"].startswith("one node")
    assert "one node: only intra-socket measured" in rows["node-aware"]["reason"]
    assert "max-rate" in rows and rows["max-rate"]["verdict"] == NOT_TESTED  # no 2-pair run
    assert rows["partitioned"]["points"] == 1
    var = [r for m, r in rows.items() if m.startswith("variability")]
    assert {r["model"] for r in var} >= {"variability (nonparametric)"}
    assert all(r["points"] == 2 and "1 -> 2 ranks" in r["compared"][0]["at"] for r in var)
    for r in table["rows"]:
        assert r["verdict"] in ("holds", "does not hold", NOT_TESTED) or r["verdict"].startswith(
            "holds within "
        ), r
        assert r["reason"] and r["reason"] != "-", r


def test_a_model_ten_times_too_slow_does_not_hold(runs):
    """Known truth: every postal parameter x10 predicts 10x the measured time."""
    mm = runs["mm"]
    slow = replace(
        mm,
        params={
            k: replace(
                p,
                alpha_s=10 * p.alpha_s,
                beta_s_per_byte=10 * p.beta_s_per_byte,
                beta_beyond_s_per_byte=None
                if p.capacity_bytes is None
                else 10 * p.beta_beyond_s_per_byte,
            )
            for k, p in mm.params.items()
        },
    )
    rows = _rows(holds_table([runs["heldout"]], slow))
    # the same runs against the fitted model: every prediction x10 divides every ratio by
    # 10, whatever the held-out run measured (it can be 2x off the fitted one on this VM)
    fitted = _rows(holds_table([runs["heldout"]], mm))
    for m, r in rows.items():
        if m.startswith("postal ("):
            assert r["verdict"] == "does not hold"
            assert r["ratio_median"] == pytest.approx(fitted[m]["ratio_median"] / 10, rel=1e-9)


def test_in_sample_comparisons_say_so(runs):
    from commscope.machine_fit import fit_runs

    both = fit_runs([runs["fit"], runs["heldout"]])
    rows = _rows(holds_table([runs["fit"], runs["heldout"]], both))
    postal = [r for m, r in rows.items() if m.startswith("postal (")]
    assert all(
        "in-sample: the machine model was fitted from pp-fit, pp-heldout" in r["reason"]
        for r in postal
    )


def test_missing_term_is_not_tested_naming_term_and_benchmark(runs):
    # neither queue-search term: 004's gamma nor the form fitted per MPI (queue_search)
    no_gamma = replace(runs["mm"], gamma_s=None, queue_search=None)
    rows = _rows(holds_table([runs["hvpp"]], no_gamma))
    q = rows["queue search, ordered"]
    assert q["verdict"] == NOT_TESTED
    assert "gamma_s" in q["reason"] and "commscope bench hvpingpong" in q["reason"]


def test_cli_json_shape(runs, capsys):
    argv = ["model", "holds", str(runs["root"])]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"machine_model", "thresholds", "rows"}
    assert "fitted from the ping-pong runs given" in out["machine_model"]
    keys = {
        "model",
        "paper",
        "runs",
        "points",
        "judged",
        "predicted",
        "measured",
        "ratio_median",
        "ratio_worst",
        "verdict",
        "reason",
        "compared",
    }
    assert all(set(r) == keys for r in out["rows"])
    untested = next(r for r in out["rows"] if r["model"] == "contention")
    assert untested["ratio_median"] is None and untested["predicted"] is None  # null, not nan
    assert not list(json_unit_problems(out))
    # the table for people: one line per model below it, "-" for what is missing
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert text.startswith("# Do the models hold here?")
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("contention"))
    assert line.split()[1:6] == ["-"] * 5
    assert "stencil counts: holds: all " in text


def test_cli_machine_model_and_bad_input(runs, tmp_path, capsys):
    from commscope.models.machine_model import save_machine_model

    f = tmp_path / "mm.json"
    save_machine_model(runs["mm"], f)
    assert main(["model", "holds", str(runs["heldout"]), "--machine-model", str(f), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["machine_model"].startswith(str(f)) and "pp-fit" in out["machine_model"]
    assert main(["model", "holds", str(tmp_path / "nothing")]) == 2
    assert "no such run directory" in capsys.readouterr().err


def test_report_section_below_the_measurements_when_the_runs_allow_it(runs, tmp_path):
    from commscope.report.build import build_report

    page = build_report([runs["root"]], tmp_path / "r.html", machine_model=runs["mm"]).read_text()
    assert "<h2>Do the models hold here?" in page
    # the answer first (issue 38): the summary, the measurements, then the validation
    assert (
        page.index("<h2>Summary")
        < page.index("<h2>Machine model")
        < page.index("<h2>Do the models hold here?")
    )
    assert "stencil counts" in page and "in-sample" in page
    # the counts need no machine model: an mtmatch run alone has the section
    alone = build_report([runs["mtmatch"]], tmp_path / "m.html").read_text()
    assert "<h2>Do the models hold here?" in alone and "no machine model" in alone
    # nothing these runs can judge (one scale, no machine model): no section
    nothing = build_report([runs["bsp1"]], tmp_path / "b.html").read_text()
    assert "Do the models hold here?" not in nothing
