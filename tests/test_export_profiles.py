"""`commscope export --format caliper-json|cube`, read back by the real readers.

Real small profiles of the diagnose programs (tests/programs/diagnose: late_sender on 2
ranks, unfixed and fixed, and wait_at_collective on 4, each with --callsites --trace;
late_sender again without --trace), exported and read with llnl-hatchet, llnl-thicket
and pycubexr (the test extra).  Values are checked against the run's own tables
(functions.parquet, callsites.parquet, ranks.parquet) and against the diagnosis' wait
states (commscope.diagnose.waits on the same trace), never against timing.
"""

import shutil
from pathlib import Path
import tarfile

import pandas as pd
import pytest

import commscope
from commscope.cli import main
from commscope.diagnose import timeline as tlm
from commscope.diagnose import waits as wst
from commscope.diagnose.findings import diagnose
from commscope.export.tree import WAIT_KINDS
from commscope.profile.export import load_trace

from diagnose_cases import CASES, compile_case, profile_options, program_args
from needs import need_module, need_ompt_runtime

pytestmark = pytest.mark.mpi
ITERS, UNIT = 3, 0.0005


@pytest.fixture(scope="module")
def runs(default_mpi, tmp_path_factory):
    root = tmp_path_factory.mktemp("export-profiles")
    exe = {
        n: compile_case(CASES[n], default_mpi, root) for n in ("late_sender", "wait_at_collective")
    }
    out = {}
    for key, name, fixed, trace in (
        ("late_sender", "late_sender", False, True),
        ("late_sender_fixed", "late_sender", True, True),
        ("wait_at_collective", "wait_at_collective", False, True),
        ("untraced", "late_sender", False, False),
    ):
        opts = profile_options(CASES[name])
        if not trace:
            opts.remove("--trace")
        code = main(
            ["profile", "--runs", str(root / "runs"), "--quiet", "--name", key, *opts, "--",
             str(exe[name]), *program_args(CASES[name], fixed, ITERS, UNIT)]
        )  # fmt: skip
        assert code == 0
        out[key] = root / "runs" / key
    return out


def export(capsys, run, fmt, *more):
    code = main(["export", str(run), "--format", fmt, *map(str, more)])
    out, err = capsys.readouterr()
    return code, out, err


def site(row):
    return f"{row['file'].rsplit('/', 1)[-1]}:{int(row['line'])}"


def wait_states(run):
    """{(function, site, rank, kind): seconds waited}: the diagnosis' wait states."""
    p = commscope.open(run)
    tl = tlm.build(load_trace(p.run), p.ranks)
    w = wst.find(tl).waits
    return w.groupby(["function", "site", "rank", "kind"])["lost_s"].sum().to_dict()


def program(p):
    """The root's name: the program's file name."""
    return p.meta["parameters"]["program"].rsplit("/", 1)[-1]


def frame(gf):
    """Hatchet's dataframe with each node's path (program, function[, site]) as columns."""
    paths = {}

    def walk(node, above):
        paths[node] = (*above, node.frame["name"])
        for c in node.children:  # (the Caliper reader sets children, not parents)
            walk(c, paths[node])

    for root in gf.graph.roots:
        walk(root, ())
    df = gf.dataframe.reset_index()
    df["path"] = [paths[n] for n in df["node"]]
    return df


# ---- Caliper split JSON: Hatchet ---------------------------------------------------------


def test_caliper_json_reads_back_in_hatchet(runs, capsys, tmp_path):
    ht = need_module("hatchet", "llnl-hatchet, the test extra (scripts/setup.sh)")
    run = runs["late_sender"]
    out = tmp_path / "ls.json"
    code, text, err = export(capsys, run, "caliper-json", "-o", out)
    assert code == 0 and not err, err
    assert text.startswith(f"wrote {out}: ") and "wait states" in text
    gf = ht.GraphFrame.from_caliper(str(out))
    df = frame(gf)
    p = commscope.open(run)
    top = program(p)
    # one root, the program; each function below it; each call site below its function
    assert [r.frame["name"] for r in gf.graph.roots] == [top]
    funcs = set(p.functions["function"])
    assert {x[1] for x in df["path"] if len(x) == 2} == funcs
    # per rank and function: the function and its sites hold functions.parquet's totals
    for (rank, fn), g in p.functions.groupby(["rank", "function"]):
        under = pd.Series([len(x) >= 2 and x[1] == fn for x in df["path"]], index=df.index)
        mine = df[(df["rank"] == rank) & under]
        for m in ("calls", "bytes", "time_s"):
            assert mine[m].sum() == pytest.approx(g[m].sum(), rel=1e-9, abs=1e-12), (fn, m)
    # per call site and rank: callsites.parquet's values
    cs = p.callsites.assign(site=lambda c: [site(r) for r in c.to_dict("records")])
    for (rank, fn, s), g in cs.groupby(["rank", "function", "site"]):
        row = df[(df["rank"] == rank) & (df["path"] == (top, fn, s))]
        assert len(row) == 1
        assert int(row["calls"].iloc[0]) == g["calls"].sum()
        assert row["time_s"].iloc[0] == pytest.approx(g["time_s"].sum(), rel=1e-9)
    # the program node: time outside MPI, per rank
    for r in p.ranks.itertuples():
        row = df[(df["rank"] == r.rank) & (df["path"] == (top,))]
        mpi = p.functions[p.functions["rank"] == r.rank]["time_s"].sum()
        assert row["time_s"].iloc[0] == pytest.approx(r.wall_s - mpi, rel=1e-9)
    # the wait states: the diagnosis', at their call sites
    ws = wait_states(run)
    assert ws, "late_sender has wait states"
    for (fn, s, rank, kind), x in ws.items():
        row = df[(df["rank"] == rank) & (df["path"] == (top, fn, s))]
        assert row[f"{kind}_s"].iloc[0] == pytest.approx(x, rel=1e-9), (fn, s, rank, kind)
    lost = df[[c for c in df.columns if c.endswith("_s") and c[:-2] in WAIT_KINDS]].sum(axis=1)
    assert (df["lost_s"] - lost).abs().max() < 1e-12
    # the diagnosis names rank 1's MPI_Recv at late_sender.c:35 (a late sender, or a load
    # imbalance when the shared machine slowed a rank): the largest late-sender wait
    d = diagnose(p)
    f = next(f for f in d.findings if f.waiting_function == "MPI_Recv" and f.callsite)
    big = df.loc[df["late_sender_s"].idxmax()]
    assert big["path"] == (top, f.waiting_function, f.callsite) and big["rank"] == 1
    direct = sum(x["direct_s"] for x in f.evidence["direct_by_site"] if x["callsite"] == f.callsite)
    assert big["late_sender_s"] >= direct - 1e-12  # direct: what is not passed on
    # meta.json's facts
    md = gf.metadata
    assert md["ranks"] == 2 and md["mpi.world.size"] == 2 and md["mpi"] == p.meta["mpi"]["name"]
    assert md["args"] == " ".join(p.meta["parameters"]["args"]) and md["program"] == top
    assert md["mpi_library"] == p.meta["mpi"]["library_version"] and md["trace"] is True


def test_a_thicket_of_three_runs_groups_by_ranks(runs, capsys, tmp_path):
    th_mod = need_module("thicket", "llnl-thicket, the test extra (scripts/setup.sh)")
    keys = ("late_sender", "late_sender_fixed", "wait_at_collective")
    per_rank, summary = [], []
    for key in keys:
        per_rank.append(str(tmp_path / f"{key}.json"))
        summary.append(str(tmp_path / f"{key}-summary.json"))
        code, _, err = export(capsys, runs[key], "caliper-json", "-o", per_rank[-1])
        assert code == 0, err
        code, _, err = export(
            capsys, runs[key], "caliper-json", "-o", summary[-1], "--rank-summary"
        )
        assert code == 0, err
    # a row per rank: Thicket composes it, indexed by node, profile and rank
    th = th_mod.Thicket.from_caliper(per_rank, disable_tqdm=True)
    assert len(th.profile) == 3 and list(th.dataframe.index.names) == ["node", "profile", "rank"]
    rows = th.dataframe.reset_index().dropna(subset=["calls"])  # the union fills in NaN rows
    assert sorted(rows.groupby("profile")["rank"].nunique()) == [2, 2, 4]
    # summed over the ranks: Thicket groups the runs by meta.json's facts
    th = th_mod.Thicket.from_caliper(summary, disable_tqdm=True)
    md = th.metadata
    assert sorted(md["ranks"]) == [2, 2, 4] and set(md["mpi"]) == {"openmpi"}
    assert sorted(md["args"]) == sorted(
        " ".join(program_args(CASES[n], fx, ITERS, UNIT))
        for n, fx in (("late_sender", False), ("late_sender", True), ("wait_at_collective", False))
    )
    groups = th.groupby("ranks")
    assert sorted(groups) == [2, 4] and len(groups[2].profile) == 2
    df = th.dataframe.reset_index()
    assert {"calls", "time_s", "bytes", "lost_s", "wait_nxn_s", "max_rank_time_s"} <= set(
        df.columns
    )
    for prof in th.profile:
        p = commscope.open(md.loc[prof, "run"])
        sub = df[df["profile"] == prof]
        assert sub["calls"].sum() == p.functions["calls"].sum()
        assert sub["bytes"].sum() == pytest.approx(p.functions["bytes"].sum())
        mpi = sub[[n not in th.graph.roots for n in sub["node"]]]["time_s"].sum()
        assert mpi == pytest.approx(p.functions["time_s"].sum(), rel=1e-9)
    cols = ["name", "calls", "time_s", "bytes", "lost_s", "late_sender_s", "wait_nxn_s"]
    print(th.dataframe[cols].head(12).to_string())  # evidence for the closing note (-s)


# ---- Cube 4: pycubexr --------------------------------------------------------------------

METRIC_TREE = [
    ("time_s", 0),
    ("mpi_time_s", 1),
    ("communication_s", 2),
    ("p2p_s", 3),
    ("late_sender_s", 4),
    ("late_receiver_s", 4),
    ("wrong_order_s", 4),
    ("collective_s", 3),
    ("wait_nxn_s", 4),
    ("late_broadcast_s", 4),
    ("late_scatter_s", 4),
    ("early_reduce_s", 4),
    ("early_gather_s", 4),
    ("load_imbalance_s", 0),
    ("calls", 0),
    ("bytes", 0),
]


def metric_tree(cube):
    out = []

    def walk(ms, depth):
        for m in ms:
            out.append((m.name, depth))
            assert m.units in ("sec", "occ", "bytes") and m.description
            walk(m.childs, depth + 1)

    walk(cube.get_metrics(), 0)
    return out


def cube_values(cube, name):
    """{(call path of region names, rank, thread): value} of a metric."""
    vals = cube.get_metric_values(cube.get_metric_by_name(name))
    locs = cube.get_locations()
    out = {}
    for cn in cube.all_cnodes():
        path, c = [], cn
        while c is not None:
            path.insert(0, cube.get_region(c).name)
            c = c.parent
        for loc, x in zip(locs, vals.cnode_values(cn)):
            out[(tuple(path), int(loc.rank_group), int(loc.rank))] = float(x)
    return out


def test_cube_reads_back_with_pycubexr(runs, capsys, tmp_path):
    pycubexr = need_module("pycubexr", "pycubexr, the test extra (scripts/setup.sh)")
    run = runs["wait_at_collective"]
    out = tmp_path / "wac.cubex"
    code, _, err = export(capsys, run, "cube", "-o", out)
    assert code == 0 and not err, err
    assert tarfile.open(out).getnames()[0] == "anchor.xml"
    p = commscope.open(run)
    top = program(p)
    with pycubexr.CubexParser(out) as cube:
        assert metric_tree(cube) == METRIC_TREE
        # the call tree: program > MPI function > call site
        root = cube.get_root_cnodes()[0]
        assert cube.get_region(root).name == top
        assert sorted(cube.get_region(c).name for c in root.get_children()) == sorted(
            set(p.functions["function"])
        )
        # the system tree: machine > node > rank > thread
        locs = cube.get_locations()
        for loc in locs:  # a location's group is its rank's
            loc.rank_group = next(
                g.rank for g in cube._anchor_result.system_tree_nodes[0].all_location_groups()
                if loc in g.all_locations()
            )  # fmt: skip
        assert sorted(int(loc.rank_group) for loc in locs) == list(range(4))
        node = cube._anchor_result.system_tree_nodes[0]
        assert node.clazz == "machine" and [c.clazz for c in node._system_tree_node_children] == [
            "node"
        ]
        calls = cube_values(cube, "calls")
        waits = {k: cube_values(cube, f"{k}_s") for k in WAIT_KINDS}
        coll = cube_values(cube, "collective_s")
        time = cube_values(cube, "time_s")
        imbalance = cube_values(cube, "load_imbalance_s")
    # calls per call site and rank: callsites.parquet's
    cs = p.callsites.assign(site=lambda c: [site(r) for r in c.to_dict("records")])
    for (rank, fn, s), g in cs.groupby(["rank", "function", "site"]):
        assert calls[((top, fn, s), rank, 0)] == g["calls"].sum()
    # wait states: the diagnosis'; a collective's time = its own part + its waits
    ws = wait_states(run)
    assert any(k[3] == "wait_nxn" for k in ws)
    for (fn, s, rank, kind), x in ws.items():
        assert waits[kind][((top, fn, s), rank, 0)] == pytest.approx(x, rel=1e-9)
    for (rank, fn, s), g in cs.groupby(["rank", "function", "site"]):
        if fn in ("MPI_Barrier", "MPI_Allreduce"):
            key = ((top, fn, s), rank, 0)
            total = coll[key] + sum(w[key] for w in waits.values())
            assert total == pytest.approx(g["time_s"].sum(), rel=1e-6, abs=1e-9)
    for r in p.ranks.itertuples():
        mpi = p.functions[p.functions["rank"] == r.rank]["time_s"].sum()
        assert time[((top,), r.rank, 0)] == pytest.approx(r.wall_s - mpi, rel=1e-9)
    # load imbalance: the diagnosis' useful time above the mean
    from commscope.diagnose.efficiency import useful_times

    u = useful_times(p, tlm.build(load_trace(p.run), p.ranks))[0].set_index("rank")["useful_s"]
    for rank, x in (u - u.mean()).clip(lower=0).items():
        assert imbalance[((top,), rank, 0)] == pytest.approx(x, rel=1e-9, abs=1e-12)


# ---- without a trace; damaged runs; refusals -------------------------------------------


def test_without_a_trace_the_wait_states_are_absent_and_said_once(runs, capsys, tmp_path):
    ht = need_module("hatchet", "llnl-hatchet, the test extra (scripts/setup.sh)")
    pycubexr = need_module("pycubexr", "pycubexr, the test extra (scripts/setup.sh)")
    run = runs["untraced"]
    for fmt, name in (("caliper-json", "u.json"), ("cube", "u.cubex")):
        code, _, err = export(capsys, run, fmt, "-o", tmp_path / name)
        assert code == 0, err
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("commscope: warning: ")
        assert (
            "no event trace" in lines[0]
            and "wait-state metrics" in lines[0]
            and str(run) in lines[0]
        )
    df = ht.GraphFrame.from_caliper(str(tmp_path / "u.json")).dataframe
    assert not [c for c in df.columns if c == "lost_s" or c.endswith(("sender_s", "nxn_s"))]
    assert df["calls"].sum() == commscope.open(run).functions["calls"].sum()
    with pycubexr.CubexParser(tmp_path / "u.cubex") as cube:
        names = [n for n, _ in metric_tree(cube)]
    assert "late_sender_s" not in names and "wait_nxn_s" not in names and "p2p_s" in names


@pytest.mark.parametrize("fmt", ["caliper-json", "cube"])
def test_a_damaged_run_is_one_error_and_nothing_written(runs, capsys, tmp_path, fmt):
    for damage, name in (
        ("functions.parquet", "functions.parquet"),
        ("raw/trace.0.0.bin", "trace.0.0.bin"),
    ):
        broken = tmp_path / f"broken-{name}"
        shutil.copytree(runs["late_sender"], broken, ignore=shutil.ignore_patterns("export"))
        f = broken / damage
        f.write_bytes(
            b"NOTTRACE" + f.read_bytes()[8:] if name.endswith(".bin") else b"PAR1 not really"
        )
        code, out, err = export(capsys, broken, fmt)
        assert code == 2 and name in err and err.count("\n") == 1 and not out, err
        assert not (broken / "export").exists() or not list((broken / "export").iterdir())


def test_an_existing_output_is_kept_and_a_wrong_name_refused(runs, capsys, tmp_path):
    target = tmp_path / "mine.json"
    target.write_text("precious")
    code, _, err = export(capsys, runs["late_sender"], "caliper-json", "-o", target)
    assert code == 2 and str(target) in err and "--overwrite" in err
    assert target.read_text() == "precious"
    code, _, err = export(capsys, runs["late_sender"], "caliper-json", "-o", target, "--overwrite")
    assert code == 0, err
    code, _, err = export(capsys, runs["late_sender"], "cube", "-o", tmp_path / "x.json")
    assert code == 2 and ".cubex" in err


# ---- the notebook ------------------------------------------------------------------------


def test_the_notebook_runs_on_three_profiles(runs, monkeypatch, tmp_path):
    """docs/notebook.ipynb, executed cell by cell by a real kernel (nbclient)."""
    nbformat = need_module("nbformat", "nbformat, the test extra (scripts/setup.sh)")
    nbclient = need_module("nbclient", "nbclient, the test extra (scripts/setup.sh)")
    need_module("ipykernel", "ipykernel, the test extra (scripts/setup.sh)")
    keys = ("late_sender", "late_sender_fixed", "wait_at_collective")
    monkeypatch.setenv("COMMSCOPE_RUNS", ":".join(str(runs[k]) for k in keys))
    path = Path(__file__).parents[1] / "docs" / "notebook.ipynb"
    nb = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = [c.get("outputs", []) for c in nb.cells if c.cell_type == "code"]
    assert all(o for o in outputs), "every code cell shows something"
    errors = [o for out in outputs for o in out if o.get("output_type") == "error"]
    assert not errors
    text = "\n".join(o.get("data", {}).get("text/plain", "") for out in outputs for o in out)
    assert "MPI_Recv" in text and "mpi_time_s" in text  # the tables, the diagnosis, the plot's data
    assert "{2: 2, 4: 1}" in text  # the Thicket grouped by ranks
    for out in outputs:
        for o in out:
            if "text/plain" in o.get("data", {}):
                print(o["data"]["text/plain"][:2000])  # the execution, in the test log (-s)


# ---- OpenMP regions (--ompt) -------------------------------------------------------------


def test_openmp_regions_are_nodes_with_their_threads_time(default_mpi, tmp_path, capsys):
    """load_imbalance (4 ranks x 2 OpenMP threads) with --ompt: one node per region below
    the program, openmp_s and openmp_barrier_s per rank the threads table's sums."""
    need_ompt_runtime()
    ht = need_module("hatchet", "llnl-hatchet, the test extra (scripts/setup.sh)")
    pycubexr = need_module("pycubexr", "pycubexr, the test extra (scripts/setup.sh)")
    case = CASES["load_imbalance"]
    exe = compile_case(case, default_mpi, tmp_path)
    code = main(
        ["profile", "--runs", str(tmp_path / "runs"), "--quiet", "--name", "li",
         *profile_options(case), "--", str(exe), *program_args(case, False, ITERS, UNIT)]
    )  # fmt: skip
    assert code == 0
    run = tmp_path / "runs" / "li"
    t = commscope.open(run).threads
    work = (t["arrival_s"] - t["start_s"]).clip(lower=0).groupby([t["rank"], t["region"]]).sum()
    wait = (t["leave_s"] - t["arrival_s"]).clip(lower=0).groupby([t["rank"], t["region"]]).sum()
    assert export(capsys, run, "caliper-json", "-o", tmp_path / "li.json")[0] == 0
    assert export(capsys, run, "cube", "-o", tmp_path / "li.cubex")[0] == 0
    df = frame(ht.GraphFrame.from_caliper(str(tmp_path / "li.json")))
    with pycubexr.CubexParser(tmp_path / "li.cubex") as cube:
        names = [n for n, _ in metric_tree(cube)]
        assert "openmp_s" in names and "openmp_barrier_s" in names
        cube_work = cube.get_metric_values(cube.get_metric_by_name("openmp_s"))
        regions = {cube.get_region(c).name: c for c in cube.all_cnodes()}
        per_loc = {name: cube_work.cnode_values(c) for name, c in regions.items()}
        groups = cube._anchor_result.system_tree_nodes[0].all_location_groups()
        rank_of = [int(g.rank) for g in groups for _ in g.all_locations()]
    for (rank, region), x in work.items():
        label = f"OpenMP region {region}"
        row = df[(df["rank"] == rank) & (df["path"] == (df["path"].iloc[0][0], label))]
        assert row["openmp_s"].iloc[0] == pytest.approx(x, rel=1e-9)
        assert row["openmp_barrier_s"].iloc[0] == pytest.approx(wait[(rank, region)], rel=1e-9)
        on_rank = sum(v for v, r in zip(per_loc[label], rank_of) if r == rank)
        assert on_rank == pytest.approx(x, rel=1e-9)
