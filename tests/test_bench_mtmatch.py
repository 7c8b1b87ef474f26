"""Multithreaded matching benchmark (002 Sec. 4.1), run for real at small sizes."""

import pandas as pd
import pytest

from commscope import cli
from commscope.bench.mtmatch import run_mtmatch, sweep_configs
from commscope.errors import InputError
from commscope.models.queue_sim import orders_from_sequences, prq_search
from commscope.models.stencil_plan import balanced_decomposition, build_plan
from commscope.models.stencil import messages_per_thread, stencil_counts

CONFIGS = [("27", (2, 2, 2), None), ("9", (2, 2), None), ("naive", (3,), 4)]


@pytest.fixture(scope="module")
def stencil_run(tmp_path_factory, default_mpi):
    root = tmp_path_factory.mktemp("runs")
    return run_mtmatch(
        configs=CONFIGS, trials=3, warmup=1, runs_root=root, echo=False, progress=False
    )


def test_plan_counts_match_the_stencil_model():
    for pts, dims, k in [
        ("27", (4, 4, 2), None),
        ("7", (4, 4, 4), None),
        ("9", (32, 32), None),
        ("5", (1, 3), None),
        ("27", (1, 1, 5), None),
        ("naive", (2, 2), 8),
    ]:
        plan = build_plan(pts, dims, k)
        c = stencil_counts(pts, dims, k)
        assert len(plan) == c.M_t
        assert plan["recv_thread"].nunique() == c.T_r
        assert plan["send_thread"].nunique() == c.T_s
        per = sorted(v for v in messages_per_thread(pts, dims, k).ravel() if v)
        assert sorted(plan.groupby("recv_thread").size()) == per
    # the paper's 8x8x4 27-point case: M_t = 2072, T_s = 344 (002 Sec. 4.2, Fig. 3)
    big = build_plan("27", (8, 8, 4))
    assert (len(big), big["send_thread"].nunique()) == (2072, 344)


def test_tags_are_strided_across_receiving_threads():
    plan = build_plan("naive", (4,), 3)
    assert plan["recv_thread"].tolist() == [0, 1, 2, 3] * 3


def test_every_receive_matched_once_and_counts_as_modelled(stencil_run):
    trials = stencil_run.table("trials")
    order = stencil_run.table("order")
    assert stencil_run.meta["status"] == "complete"
    for cfg, (pts, dims, k) in enumerate(CONFIGS):
        c = stencil_counts(pts, dims, k)
        t = trials[trials["config"] == cfg]
        assert sorted(t["trial"]) == [0, 1, 2]  # warm-up trial not recorded
        assert (t["messages"] == c.M_t).all()
        assert (t["threads_recv"] == c.T_r).all()
        assert (t["threads_send"] == c.T_s).all()
        assert (t["drain_time_s"] > 0).all()
        for trial, o in order[order["config"] == cfg].groupby("trial"):
            # each tag exactly once; both sequences are permutations of 0..M_t-1
            assert sorted(o["tag"]) == list(range(c.M_t))
            assert sorted(o["post_seq"]) == list(range(c.M_t))
            assert sorted(o["send_seq"]) == list(range(c.M_t))
            per = sorted(v for v in messages_per_thread(pts, dims, k).ravel() if v)
            assert sorted(o.groupby("recv_thread").size()) == per
            # stored depth is the linked-list simulation of the recorded orders
            res = prq_search(*orders_from_sequences(o))
            row = t[t["trial"] == trial].iloc[0]
            assert row["avg_search_depth"] == pytest.approx(res["depth"].mean())
            assert row["max_search_depth"] == res["depth"].max()
            assert 0 <= row["max_search_depth"] < c.M_t


def test_ob1_queue_length_equals_messages_under_open_mpi(stencil_run):
    if stencil_run.meta["mpi"]["flavor"] != "openmpi":
        pytest.skip("the ob1 pvars exist only under Open MPI")
    trials = stencil_run.table("trials")
    assert (trials["ob1_posted_recvq_length"] == trials["messages"]).all()
    assert (trials["ob1_unexpected_msgq_length"] == 0).all()


def test_oversubscription_is_recorded(stencil_run):
    over = stencil_run.meta["oversubscription"]
    assert [o["threads_send"] for o in over] == [56, 12, 3]
    assert over[0]["oversubscribed"] is True  # 56 sending threads on 2 cores
    trials = stencil_run.table("trials")
    assert trials.loc[trials["config"] == 0, "oversubscribed"].all()


def test_oversubscription_entry_without_its_threads_is_refused(stencil_run, tmp_path, capsys):
    # the report names the threads of an oversubscribed configuration: a meta.json that
    # lost one is refused where the run is opened, not a KeyError in the report
    import json
    import shutil

    copy = tmp_path / stencil_run.path.name
    shutil.copytree(stencil_run.path, copy)
    meta = json.loads((copy / "meta.json").read_text())
    meta["oversubscription"][0]["threads_sent"] = meta["oversubscription"][0].pop("threads_send")
    (copy / "meta.json").write_text(json.dumps(meta))
    assert cli.main(["report", str(copy), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "meta.json" in err and "threads_send" in err
    assert not (tmp_path / "r.html").exists()


def test_single_thread_each_side_in_order_has_depth_zero(runs_root, default_mpi):
    run = run_mtmatch(
        "naive", (1,), 16, trials=2, warmup=1, runs_root=runs_root, echo=False, progress=False
    )
    trials, order = run.table("trials"), run.table("order")
    assert (trials["messages"] == 16).all()
    assert (trials["avg_search_depth"] == 0).all() and (trials["max_search_depth"] == 0).all()
    assert (order["post_seq"] == order["tag"]).all() and (order["send_seq"] == order["tag"]).all()


def test_hvpp_style_reversed_posts_search_triangular_total(runs_root, default_mpi):
    n = 50
    plan = pd.DataFrame({"tag": range(n - 1, -1, -1), "recv_thread": 0, "send_thread": 0})
    run = run_mtmatch(
        plan=plan, trials=2, warmup=0, runs_root=runs_root, echo=False, progress=False
    )
    trials, order = run.table("trials"), run.table("order")
    assert (order["post_seq"] == n - 1 - order["tag"]).all()  # posted in reverse
    assert (order["send_seq"] == order["tag"]).all()  # sent in tag order
    assert (trials["total_searched"] == n * (n + 1) // 2).all()
    assert (trials["max_search_depth"] == n - 1).all()
    if run.meta["mpi"]["flavor"] == "openmpi":
        assert (trials["ob1_posted_recvq_length"] == n).all()


def test_mpich_has_no_ob1_pvars(runs_root, mpich_mpi):
    run = run_mtmatch(
        "naive",
        (2,),
        3,
        trials=1,
        warmup=0,
        runs_root=runs_root,
        mpi_spec="mpich",
        echo=False,
        progress=False,
    )
    trials = run.table("trials")
    assert (trials["messages"] == 6).all()
    assert trials["ob1_posted_recvq_length"].isna().all()
    assert sorted(run.table("order")["tag"]) == list(range(6))


def test_sweep_decompositions():
    assert [balanced_decomposition(t, 3) for t in (1, 8, 32, 256)] == [
        (1, 1, 1),
        (2, 2, 2),
        (4, 4, 2),
        (8, 8, 4),
    ]
    assert [d for _, d, _ in sweep_configs("27", [4, 32], "linear")] == [(1, 1, 4), (1, 1, 32)]
    assert [d for _, d, _ in sweep_configs("9", [16], "cube")] == [(4, 4)]
    with pytest.raises(InputError, match="3-D"):
        sweep_configs("9", [4], "linear")


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--points", "11", "--decomp", "2x2"], "expected 5, 7, 9, 27 or naive"),
        (["--points", "27", "--decomp", "2x2"], "3-D decomposition"),
        (["--points", "naive", "--decomp", "4"], "k >= 1"),
        (["--points", "27", "--decomp", "2x0x2"], "whole number >= 1"),
        (["--points", "27", "--decomp", "2x2x2", "--trials", "0"], "--trials"),
        (["--points", "27"], "exactly one of --decomp and --sweep"),
        (["--points", "7", "--sweep", "2,x"], "--sweep"),
    ],
)
def test_bad_options_exit_2_with_a_clear_message(argv, needle, runs_root, capsys):
    assert cli.main(["bench", "mtmatch", *argv, "--runs", str(runs_root)]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert list(runs_root.iterdir()) == []  # nothing launched, no run directory


def test_report_section_renders(stencil_run, tmp_path):
    from commscope.report.build import build_report

    page = build_report([stencil_run.path], tmp_path / "r.html").read_text()
    assert "Multithreaded message matching" in page and '<figure class="fig"' in page
    assert "Oversubscribed" in page and "cannot show" not in page
