"""Matching simulator (issue 12): engines against reference lists, real traces, ob1 pvars, bad input.

The MPI-facing tests profile real programs with `commscope profile --trace`:
tests/programs/known_queues.c (its queues are known at every pause), bench bsp's
2-D halo exchange and bench mtmatch with 8 threads.
"""

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from commscope import mpi
from commscope.models.stencil_plan import build_plan
from commscope.cli import main
from commscope.matching import engines
from commscope.models import queue_sim
from commscope.matching.queue_replay import permute_thread_posts, random_interleave
from commscope.models.stencil import stencil_counts

PROGRAMS = Path(__file__).parent / "programs"


# ---- engines against plain Python lists ---------------------------------------


def _matches(recv, msg):
    return recv[0] == msg[0] and recv[1] in (msg[1], -1) and recv[2] in (msg[2], -1)


def reference(engine, events, bins=engines.DEFAULT_BINS):
    """The three engines written the obvious way: (partner, searched) per event."""
    posted, unexp = [], []  # entries: (index, (comm, src, tag))
    last = {}
    out = []
    for i, (arrive, key) in enumerate(events):
        comp = 0
        if arrive:
            if engine == "mpich":
                cands = posted
            elif (
                engine == "ob1"
            ):  # the source's specific list and the any-source list, merged by age
                cands = [e for e in posted if e[1][0] == key[0] and e[1][1] in (key[1], -1)]
            else:  # the tag's bin and the any-tag list, merged by age
                b = engines_bin(key[0], key[2], bins)
                cands = [
                    e
                    for e in posted
                    if (e[1][2] >= 0 and engines_bin(e[1][0], e[1][2], bins) == b) or e[1][2] < 0
                ]
            hit = None
            for e in cands:
                comp += 1
                if _matches(e[1], key):
                    hit = e
                    break
            if hit:
                posted.remove(hit)
            else:
                unexp.append((i, key))
        else:
            hit = None
            if engine == "mpich" or (engine == "ob1" and key[1] >= 0):
                lists = [[e for e in unexp if engine == "mpich" or (e[1][0], e[1][1]) == key[:2]]]
            elif engine == "ob1":  # any source: sources in turn after the last matched
                n = max([e[1][1] for e in unexp] + [last.get(key[0], 0)]) + 1
                start = last.get(key[0], 0)
                lists = [
                    [e for e in unexp if e[1][0] == key[0] and e[1][1] == (start + k) % n]
                    for k in range(1, n + 1)
                ]
            elif key[2] >= 0:
                b = engines_bin(key[0], key[2], bins)
                lists = [[e for e in unexp if engines_bin(e[1][0], e[1][2], bins) == b]]
            else:
                lists = [
                    [e for e in unexp if engines_bin(e[1][0], e[1][2], bins) == b]
                    for b in range(bins)
                ]
            firsts = []
            for lst in lists:
                for e in lst:
                    comp += 1
                    if _matches(key, e[1]):
                        firsts.append(e)
                        break
                if firsts and engine != "bins":
                    break
            if firsts:
                hit = min(firsts)
                if engine == "ob1" and key[1] < 0:
                    last[key[0]] = hit[1][1]
                unexp.remove(hit)
            else:
                posted.append((i, key))
        out.append((hit[0] if hit else -1, comp))
    return out


def engines_bin(comm, tag, bins):
    return ((tag * 2654435761) % 2**32 ^ (comm * 40503) % 2**32) % bins


def random_events(rng, n, comms=2, sources=3, tags=5, wild=0.2):
    ev = []
    for _ in range(n):
        c, s, t = int(rng.integers(comms)), int(rng.integers(sources)), int(rng.integers(tags))
        if rng.random() < 0.5:
            ev.append((True, (c, s, t)))
        else:
            ev.append(
                (False, (c, -1 if rng.random() < wild else s, -1 if rng.random() < wild else t))
            )
    return ev


@pytest.mark.parametrize("engine", ["mpich", "ob1", "bins"])
def test_engines_equal_plain_lists_with_wildcards(engine):
    rng = np.random.default_rng(7)
    for trial in range(20):
        ev = random_events(rng, 300)
        arrive = np.array([a for a, _ in ev], np.int8)
        c, s, t = (np.array([k[j] for _, k in ev]) for j in range(3))
        partner, searched, plen, ulen, total = engines.run_engine(engine, arrive, c, s, t, bins=4)
        want = reference(engine, ev, bins=4)
        assert partner.tolist() == [p for p, _ in want], (engine, trial)
        assert searched.tolist() == [k for _, k in want], (engine, trial)
        assert total == searched.sum()
        assert (plen - ulen)[-1] == (arrive == 0).sum() - (arrive == 1).sum()


def test_mpich_engine_equals_the_existing_list_simulation():
    rng = np.random.default_rng(3)
    kinds = rng.choice(["post", "arrive"], 2000)
    keys = rng.integers(0, 40, 2000)
    ref = queue_sim.simulate(list(zip(kinds, keys)))
    got = engines.simulate(
        pd.DataFrame({"kind": kinds, "comm": 0, "source": 0, "tag": keys}), "mpich"
    )
    assert got["depth"].tolist() == ref["depth"].tolist()
    assert got["matched"].tolist() == ref["matched"].tolist()


@pytest.mark.parametrize("n", [1, 10, 300])
def test_reversed_posts_search_n_n_plus_1_over_2_and_bins_n(n):
    # 004 Sec. 4.1: receives posted in reverse arrival order search n(n+1)/2 entries, in order n
    ev = pd.DataFrame(
        {
            "kind": ["post"] * n + ["arrive"] * n,
            "comm": 0,
            "source": 1,
            "tag": list(range(n - 1, -1, -1)) + list(range(n)),
        }
    )
    for engine in ("mpich", "ob1"):
        assert engines.simulate(ev, engine)["searched"].sum() == n * (n + 1) // 2
    assert engines.simulate(ev, "bins", bins=1024)["searched"].sum() == n  # one tag per bin
    ordered = ev.assign(tag=list(range(n)) * 2)
    assert engines.simulate(ordered, "mpich")["searched"].sum() == n


def test_ob1_keeps_sources_apart():
    # 3 sources x 4 receives posted source by source, messages arrive round-robin:
    # one list walks past the other sources' receives, ob1's per-source lists do not
    posts = [(s, t) for s in range(3) for t in range(4)]
    arrivals = [(s, t) for t in range(4) for s in range(3)]
    ev = pd.DataFrame(
        {
            "kind": ["post"] * 12 + ["arrive"] * 12,
            "comm": 0,
            "source": [s for s, _ in posts + arrivals],
            "tag": [t for _, t in posts + arrivals],
        }
    )
    assert engines.simulate(ev, "ob1")["depth"].sum() == 0
    assert engines.simulate(ev, "mpich")["depth"].sum() > 0


def test_random_interleave_keeps_each_threads_order():
    rng = np.random.default_rng(0)
    labels = np.repeat([0, 1, 2], [5, 3, 4])
    seen = set()
    for _ in range(50):
        p = random_interleave(labels, rng)
        assert sorted(p) == list(range(12))
        for t in range(3):
            mine = [i for i in p if labels[i] == t]
            assert mine == sorted(mine)
        seen.add(tuple(p))
    assert len(seen) > 40
    ev = pd.DataFrame(
        {
            "kind": ["post"] * 6 + ["arrive"] + ["post"] * 2,
            "thread": [0, 0, 1, 1, 2, 2, -1, 0, 1],
            "x": range(9),
        }
    )
    out = permute_thread_posts(ev, rng)
    assert out["x"].iloc[6:].tolist()[0] == 6 and sorted(out["x"].iloc[:6]) == list(range(6))


def test_bad_engine_and_events():
    from commscope.errors import InputError

    with pytest.raises(InputError, match="--engine"):
        engines.run_engine("lifo", [1], [0], [0], [0])
    with pytest.raises(InputError, match="arrival"):
        engines.run_engine("ob1", [1], [0], [-1], [0])


# ---- real traces ------------------------------------------------------------------


def _profile(runs_root, name, *argv):
    code = main(["profile", "--runs", str(runs_root), "--name", name, "--quiet", "--trace", *argv])
    assert code == 0
    return runs_root / name


@pytest.fixture(scope="module")
def traced(tmp_path_factory, default_mpi):
    """Real traces: known_queues (3 ranks), bsp's halo (4 ranks), mtmatch (2 ranks x 8 threads)."""
    root = tmp_path_factory.mktemp("runs")
    exe = root / "known_queues"
    subprocess.run(
        [default_mpi.mpicc, "-O2", str(PROGRAMS / "known_queues.c"), "-o", str(exe)], check=True
    )
    runs = {"known": _profile(root, "known", "-n", "3", "--snapshot-every", "50ms", "--", str(exe))}
    bsp = mpi.binary(default_mpi, "bsp")
    runs["bsp"] = _profile(
        root,
        "bsp",
        "-n",
        "4",
        "--",
        str(bsp),
        "--workload",
        "ftq",
        "--dist",
        "constant",
        "--mean",
        "0.001",
        "--sd",
        "0",
        "--intervals",
        "10",
        "--warmup",
        "1",
        "--halo-bytes",
        "4096",
        "--out",
        str(root / "bsp-out"),
    )
    plan = build_plan("9", (2, 2)).assign(config=0, points="9", decomposition="2x2")
    plan[["config", "points", "decomposition", "tag", "recv_thread", "send_thread"]].to_csv(
        root / "plan.csv", index=False
    )
    runs["mtmatch"] = _profile(
        root,
        "mtmatch",
        "-n",
        "2",
        "--threads",
        "8",
        "--",
        str(mpi.binary(default_mpi, "mtmatch")),
        "--plan",
        str(root / "plan.csv"),
        "--trials",
        "4",
        "--warmup",
        "1",
        "--out",
        str(root / "mt-out"),
    )
    return runs


def _cli_json(capsys, *argv):
    code = main(["model", "matching", *argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


@pytest.mark.mpi
def test_simulated_ob1_queues_equal_the_pvars_of_a_program_with_known_queues(capsys, traced):
    out = _cli_json(capsys, str(traced["known"]))
    pv = pd.DataFrame(out["pvars"]["rows"])
    quiet = pv[pv["quiet"] & (pv["rank"] == 0)]
    assert out["pvars"]["quiet_snapshots_equal"] == out["pvars"]["quiet_snapshot_values"] > 0
    assert quiet["equal"].all()
    # every pause of known_queues.c is seen by quiet snapshots, with its known contents
    seen = {
        (r.queue, r.peer, int(r.measured_length)) for r in quiet.itertuples() if r.measured_length
    }
    assert {
        ("posted", 1, 6),
        ("posted", 1, 4),
        ("unexpected", 1, 4),
        ("unexpected", 1, 1),
        ("unexpected", 2, 2),
    } <= seen
    s = pd.DataFrame(out["summary"]).set_index("engine")
    assert set(s["arrivals"]) == {"send"}
    assert (s["messages"] == 14).all() and (s["receives"] == 14).all()
    # 8 receives were posted before the first message; 6 messages waited unexpected at most
    assert (s["max_posted"] == 8).all() and (s["max_unexpected"] == 6).all()
    # ob1's per-source lists skip rank 2's receives: fewer entries compared than one list
    assert s.loc["ob1", "searched"] < s.loc["mpich", "searched"]


@pytest.mark.mpi
def test_completion_order_arrivals_leave_no_unexpected_messages(capsys, traced):
    out = _cli_json(capsys, str(traced["known"]), "--arrivals", "completion", "--engine", "ob1")
    row = out["summary"][0]
    assert row["arrivals"] == "completion" and row["max_unexpected"] == 0


@pytest.mark.mpi
def test_mtmatch_thread_interleavings_spread_the_search_depth(capsys, traced):
    out = _cli_json(capsys, str(traced["mtmatch"]), "--trials", "50", "--engine", "mpich,bins")
    t = pd.DataFrame(out["trials"]).set_index("engine")
    assert t.loc["mpich", "trials"] == 50
    assert t.loc["mpich", "prq_avg_depth_min"] < t.loc["mpich", "prq_avg_depth_max"]
    assert t.loc["bins", "prq_avg_depth_max"] == 0
    s = pd.DataFrame(out["summary"])
    # 5 trials of M_t = 20 (9-point, 2x2) on WORLD plus the 5 order messages on its own communicator
    assert (s["messages"] == 5 * 20 + 5).all()


@pytest.mark.mpi
def test_mtmatch_orders_give_the_ob1_lengths_it_measured(capsys, tmp_path, default_mpi):
    from commscope.bench.mtmatch import run_mtmatch

    run = run_mtmatch(
        "5", (2, 2), trials=3, warmup=1, runs_root=tmp_path, echo=False, progress=False
    )
    code = main(["model", "matching", str(run.path), "--json"])
    rows = json.loads(capsys.readouterr().out)["mtmatch"]
    assert code == 0 and len(rows) == 3
    for r in rows:
        assert (
            r["simulated_posted_length"]
            == r["measured_posted_length"]
            == stencil_counts("5", (2, 2)).M_t
        )
        assert r["simulated_unexpected_length"] == r["measured_unexpected_length"] == 0
        assert r["equal"]


@pytest.mark.mpi
def test_whatif_rethreads_the_bsp_halo_with_the_stencil_counts(capsys, traced):
    out = _cli_json(
        capsys,
        str(traced["bsp"]),
        "--threads-send",
        "16",
        "--points",
        "5",
        "--machine-model",
        "bluewaters",
        "--trials",
        "20",
    )
    rows = pd.DataFrame(out["whatif"]["rows"])
    c = stencil_counts("5", (4, 4))
    new = rows[rows["threads"] == "16"].set_index(["rank", "engine"])
    old = rows[rows["threads"] == "traced"].set_index(["rank", "engine"])
    assert set(new.index.get_level_values(0)) == {0, 1, 2, 3}
    assert (
        (new["M_t"] == c.M_t).all() and (new["T_s"] == c.T_s).all() and (new["T_r"] == c.T_r).all()
    )
    assert (new["message_bytes"] == 4 * 4096 // c.M_t).all()  # 4 neighbours x 4 KiB per step
    assert (old["M_t"] == 4).all()
    for r in range(4):
        assert new.loc[(r, "mpich"), "avg_depth"] > new.loc[(r, "ob1"), "avg_depth"] > 0
        assert new.loc[(r, "bins"), "searched_per_step"] == c.M_t  # one message per bin: no search
        assert new.loc[(r, "mpich"), "drain_s"] > old.loc[(r, "mpich"), "drain_s"]


# ---- bad input -------------------------------------------------------------------


def _copy(run, tmp_path):
    dst = tmp_path / "copy"
    shutil.copytree(run, dst)
    return dst


def _expect_error(capsys, run, *needles):
    code = main(["model", "matching", str(run)])
    err = capsys.readouterr().err
    assert code == 2, err
    for n in needles:
        assert n in err, err
    assert err.count("\n") <= 2


def _edit_record(path, i, **fields):
    from commscope.collect.trace import HEADER_BYTES, RECORD

    data = bytearray(path.read_bytes())
    rec = np.frombuffer(data, RECORD, offset=HEADER_BYTES).copy()
    for k, v in fields.items():
        rec[i][k] = v
    path.write_bytes(bytes(data[:HEADER_BYTES]) + rec.tobytes())


@pytest.mark.mpi
def test_bad_traces_name_the_file_and_record(capsys, traced, tmp_path):
    run = _copy(traced["known"], tmp_path)
    t0 = run / "raw" / "trace.0.0.bin"
    good = t0.read_bytes()

    _edit_record(t0, 3, comm=9)
    _expect_error(capsys, run, "trace.0.0.bin", "record 3", "communicator id 9 was never created")

    t0.write_bytes(good)
    _edit_record(t0, 5, t_end=1, t_begin=0)
    _expect_error(capsys, run, "trace.0.0.bin", "record 5", "out of order: ends before record 4")

    from commscope.collect.trace import RECORD

    first = int(np.flatnonzero(np.frombuffer(good, RECORD, offset=64)["event"] == 4)[0])
    size = RECORD.itemsize
    cut = 64 + size * first
    t0.write_bytes(
        good[:cut] + good[cut + size :]
    )  # the first IRECV is missing: a whole run's trace is refused as incomplete first
    _expect_error(capsys, run, "trace.0.0.bin", "rank 0", "1 missing", "the run is damaged")

    t0.write_bytes(good[:40])
    _expect_error(capsys, run, "trace.0.0.bin", "header", "cut short")

    t0.write_bytes(b"NOTTRACE" + good[8:])
    _expect_error(capsys, run, "trace.0.0.bin", "magic")

    t0.write_bytes(good)
    _edit_record(t0, 2, event=42)
    _expect_error(capsys, run, "trace.0.0.bin", "record 2", "unknown event code 42")


@pytest.mark.mpi
def test_a_record_cut_short_in_a_whole_run_is_refused(capsys, traced, tmp_path):
    """Every rank reached MPI_Finalize, so the trace's bytes past its records are damage
    (the completeness check, docs/robustness.md), named, not left out in silence."""
    run = _copy(traced["known"], tmp_path)
    t1 = run / "raw" / "trace.1.0.bin"
    t1.write_bytes(t1.read_bytes() + b"\0" * 20)  # every record whole, 20 bytes more
    _expect_error(capsys, run, "trace.1.0.bin", "rank 1", "20 bytes more", "the run is damaged")


def test_a_run_that_is_not_a_profile_is_refused(capsys, new_run):
    run = new_run("pingpong")
    _expect_error(capsys, run.path, "meta.json", "kind")


@pytest.mark.mpi
def test_report_shows_the_matching_section_of_a_traced_run(capsys, traced, tmp_path):
    out = tmp_path / "report.html"
    assert main(["report", str(traced["known"]), "-o", str(out)]) == 0
    page = out.read_text()
    assert "Matching queues of traced programs" in page
    assert (
        "queue lengths over time per rank" in page
        and "search depth distributions per engine" in page
    )
    assert "Simulated ob1 queue lengths equal the ob1 pvars at" in page


@pytest.mark.mpi
def test_queue_lengths_over_time_are_written_once(capsys, traced, tmp_path):
    csv = tmp_path / "queues.csv"
    assert (
        main(["model", "matching", str(traced["known"]), "--engine", "ob1", "--lengths", str(csv)])
        == 0
    )
    df = pd.read_csv(csv)
    assert (
        len(df) == 28 and df["posted_length"].max() == 8 and df["unexpected_length"].iloc[-1] == 0
    )
    assert (np.diff(df["time_s"]) >= 0).all()
    capsys.readouterr()
    code = main(["model", "matching", str(traced["known"]), "--lengths", str(csv)])
    assert code == 2 and "exists; not overwriting" in capsys.readouterr().err


@pytest.mark.mpi
def test_a_trace_of_collectives_only_has_no_queues_to_replay(tmp_path, default_mpi, capsys):
    """cs_bsp without a halo calls only collectives: the trace has records (collectives
    are traced) but no message; model matching says so (exit 2), the report says so."""
    from commscope.profile.run import run_profile

    run, status = run_profile(
        mpi.binary(mpi.select_mpi(None), "bsp"),
        ["--workload", "ftq", "--intervals", "3", "--mean", "0.001"],
        nranks=2,
        trace=True,
        runs_root=tmp_path / "runs",
        echo=False,
    )
    assert status == 0 and any(run.raw_dir.glob("trace.*.bin"))
    assert main(["model", "matching", str(run.path)]) == 2
    assert "no point-to-point message" in capsys.readouterr().err
    assert main(["report", str(run.path), "-o", str(tmp_path / "r.html")]) == 0
    assert "no point-to-point message" in (tmp_path / "r.html").read_text()
