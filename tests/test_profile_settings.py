"""Settings and counter-file records declared once (issue 34, item 5).

native/profiler/settings.def and layout.def are the tables; the C code is generated from
them (gen_tables.py), Python reads them with the same parser (deftable.py).  The fast
tests check that every consumer follows the tables; the MPI tests that the library
honours every setting and that what the synthetic writer writes reads back.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from commscope.collect import native_tables as nt
from commscope.profile import settings as st

ROOT = Path(__file__).resolve().parents[1]
PROFILER = ROOT / "native" / "profiler"
PROGRAMS = Path(__file__).parent / "programs"


def _deftable():
    return nt._parser()


# ---- the parser -----------------------------------------------------------------------


def test_the_parser_reads_c_macro_tables_as_c_reads_them():
    d = _deftable()
    text = """/* a comment with CS_X(a) in it */
#ifndef CS_X
#define CS_X(a, b, c) \\
    nothing
#endif
CS_X(name, 0x10, "one " "two"  // continued
     "\\"three\\"")
CS_Y(-1, f(x) + 1)
"""
    got = d.parse(text)
    assert [e.macro for e in got] == ["CS_X", "CS_Y"]
    assert got[0].args == ("name", 16, 'one two"three"') and got[0].line == 6
    assert isinstance(got[0].args[0], d.Ident) and not isinstance(got[0].args[2], d.Ident)
    assert got[1].args == (-1, "f(x) + 1") and isinstance(got[1].args[1], d.Expr)


@pytest.mark.parametrize(
    "text, says",
    [
        ('CS_X(a "b")', "strings mixed"),
        ("CS_X(a,)", "an empty argument"),
        ("CS_X(a", "never closed"),
        ('"stray"', "expected NAME(...)"),
        ("CS_X(@)", "unexpected"),
    ],
)
def test_the_parser_names_the_line_of_what_it_cannot_read(text, says):
    d = _deftable()
    with pytest.raises(d.TableError, match=says) as e:
        d.parse("\n" + text, "t.def")
    assert "t.def:2" in str(e.value)


def test_the_catalog_is_counters_def_through_the_one_parser():
    from commscope.profile.catalog import counter_catalog

    entries = _deftable().entries(PROFILER / "counters.def")
    assert [c["name"] for c in counter_catalog()] == [e.args[0] for e in entries]


# ---- settings -------------------------------------------------------------------------


def test_every_counter_names_a_set_of_the_table():
    sets = {n for n, *_ in st.counter_sets()}
    for args in nt.rows("counters", "CS_COUNTER"):
        assert args[3].lower() in sets | {"calls"}, args[0]
    for args in nt.rows("counters", "CS_PEER_ARRAY"):
        assert args[1].lower() in sets, args[0]


def test_the_cli_takes_its_sets_and_defaults_from_the_table():
    from commscope.cli import build_parser
    from commscope.profile.run import parse_interval
    from commscope.units import parse_size

    names = [n for n, *_ in st.counter_sets()]
    assert list(st.COUNTER_SETS) == [n for n in names if n != "trace"]  # trace: --trace
    assert st.parse_counter_sets("default") == st.parse_counter_sets("all") == st.DEFAULT_SETS
    assert st.parse_counter_sets("pvars,bytes") == ("bytes", "pvars")  # table order
    args = build_parser().parse_args(["profile", "--", "prog"])
    assert parse_interval(args.snapshot_every) * 1000 == st.default("COMMSCOPE_SNAPSHOT_MS")
    assert parse_size(args.trace_limit) == st.default("COMMSCOPE_TRACE_LIMIT")


def test_the_environment_profile_sets_is_named_by_the_table():
    from commscope.profile.run import callsite_collector, counter_collector

    env = counter_collector("lib.so", ("bytes",), 0.2, True, 8192).env
    assert env == {
        "COMMSCOPE_COUNTERS": "bytes,trace",
        "COMMSCOPE_SNAPSHOT_MS": "200",
        "COMMSCOPE_TRACE_LIMIT": "8192",
    }
    assert callsite_collector(2).env == {"COMMSCOPE_CALLSITES": "2"}
    assert set(env) <= set(st.settings())
    with pytest.raises(KeyError, match="settings.def"):
        st.library_env(SNAPSHOT_S=1)


def test_the_chosen_sets_are_read_from_meta_json_only():
    meta = {"parameters": {"counters": ["bytes", "timers"], "trace": True}}
    assert st.chosen_sets(meta) == ("bytes", "timers", "trace")
    assert st.chosen_sets({"parameters": {"counters": "default"}}) == st.DEFAULT_SETS
    from commscope.collect.node_files import _META_FIELDS

    assert "sets" not in _META_FIELDS  # the node files do not repeat them


def test_the_docs_settings_table_is_current():
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_counter_docs.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr + " (run scripts/gen_counter_docs.py)"
    assert st.settings_markdown() in (ROOT / "docs" / "profile.md").read_text()


def test_the_generated_c_parser_reads_every_setting_of_the_table(tmp_path):
    subprocess.run([sys.executable, str(PROFILER / "gen_tables.py"), str(tmp_path)], check=True)
    source = (tmp_path / "cs_settings.c").read_text()
    header = (tmp_path / "cs_settings.h").read_text()
    reader = {"LONG": "env_long", "SECONDS": "env_seconds", "TEXT": "env_text", "SETS": "env_text"}
    for s in st.settings().values():
        assert f'{reader[s.type]}("{s.env}"' in source, s.env
    for i, (name, in_default, *_) in enumerate(st.counter_sets()):
        assert f"CS_SET_{name.upper()} = 1 << {i}," in header
    default = header.split("#define CS_DEFAULT_SETS")[1].splitlines()[0]
    assert {n for n, d, *_ in st.counter_sets() if d} == {
        w.removeprefix("CS_SET_").lower() for w in default.strip(" ()").split(" | ")
    }
    # no C file reads a COMMSCOPE_* variable of the table by hand
    for c in sorted(PROFILER.glob("*.[ch]")):
        for env in st.settings():
            assert f'getenv("{env}")' not in c.read_text(), (c.name, env)


def test_every_library_variable_named_in_code_and_docs_is_in_the_table():
    """The profiler's sources, its docs and the scripts that preload it by hand name no
    COMMSCOPE_* variable the table lacks (a misspelt one the library would ignore)."""
    import re

    files = [
        *PROFILER.glob("*.[ch]"),
        *PROFILER.glob("*.def"),
        ROOT / "docs" / "profile.md",
        ROOT / "docs" / "counters.md",
        ROOT / "scripts" / "hotpath_instructions.py",
        ROOT / "scripts" / "profile_overhead.py",
        ROOT / "src" / "commscope" / "profile" / "run.py",
    ]
    named = {(m, f.name) for f in files for m in re.findall(r"COMMSCOPE_[A-Z0-9_]+", f.read_text())}
    assert {(m, f) for m, f in named if m not in st.settings()} == set()


# ---- the counter-file records ----------------------------------------------------------


def test_records_have_one_size_in_c_numpy_and_struct(tmp_path):
    subprocess.run([sys.executable, str(PROFILER / "gen_tables.py"), str(tmp_path)], check=True)
    header = (tmp_path / "cs_layout.h").read_text()
    for record, ctype, _ in nt.rows("layout", "CS_RECORD"):
        size = nt.record_struct(record).size
        assert np.dtype(nt.record_dtype(record)).itemsize == size
        assert f"_Static_assert(sizeof({ctype}) == {size}," in header
    assert nt.record_struct("snap_header").size == 64  # the header the C side wrote before
    assert nt.record_struct("snap_record").size == 40
    assert nt.metadata_keys("layout")[:2] == ("page", "dir_at")
    assert nt.metadata_keys("canonical")[0] == "words"


# ---- with the library ------------------------------------------------------------------

#: Non-default values given through the environment, and settings commscope profile sets
#: from its options (the test passes those options).  What the library used is in
#: node.<n>.json "settings"; the effects are checked below.
ENV_VALUES = {
    "COMMSCOPE_SLABS": 3,
    "COMMSCOPE_MAX_REQUESTS": 1000,
    "COMMSCOPE_COLL_SMALL_BYTES": 8,
    "COMMSCOPE_COLL_SMALL_COMM": 1,
    "COMMSCOPE_TRACE_BUFFER": 32,
    "COMMSCOPE_SUMMARY_TIMEOUT_S": 12.5,
}
OPTION_VALUES = {
    "COMMSCOPE_SNAPSHOT_MS": (["--snapshot-every", "200ms"], 200),
    "COMMSCOPE_TRACE_LIMIT": (["--trace", "--trace-limit", "2M"], 2 << 20),
    "COMMSCOPE_CALLSITES": (["--callsites", "--callsite-depth", "2"], 2),
}
#: Settings whose effect other tests check (text settings are not echoed).
ELSEWHERE = {
    "COMMSCOPE_PROFILE_DIR": "every profile test (the run's raw/ holds the files)",
    "COMMSCOPE_COUNTERS": "test_profile.py::test_counter_sets_select_what_is_counted",
    "COMMSCOPE_TEST_CLOCK_SKEW_NS": "test_profile.py::test_trace_clock_alignment_undoes_...",
}


def test_every_setting_of_the_table_has_a_check():
    assert set(ENV_VALUES) | set(OPTION_VALUES) | set(ELSEWHERE) == set(st.settings())
    for env, value in ENV_VALUES.items():
        assert value != st.default(env)
    for env, (_, value) in OPTION_VALUES.items():
        assert value != st.default(env)


@pytest.fixture(scope="module")
def alltoall(default_mpi, tmp_path_factory):
    exe = tmp_path_factory.mktemp("progs") / "alltoall_small"
    subprocess.run(
        [default_mpi.mpicc, "-O2", str(PROGRAMS / "alltoall_small.c"), "-o", str(exe)], check=True
    )
    return exe


def _profile(runs_root, *argv):
    from commscope.cli import main
    from commscope.runs import open_run

    code = main(["profile", "--runs", str(runs_root), "--quiet", *argv])
    return code, open_run(sorted(runs_root.iterdir())[-1])


@pytest.mark.mpi
def test_the_library_honours_every_setting(runs_root, alltoall, monkeypatch):
    from commscope.collect.node_files import NodeFile, node_keys

    for env, value in ENV_VALUES.items():
        monkeypatch.setenv(env, str(value))
    options = [o for opts, _ in OPTION_VALUES.values() for o in opts]
    code, run = _profile(runs_root, *options, "--", str(alltoall))
    assert code == 0
    (key,) = node_keys(run.raw_dir)
    meta = json.loads((run.raw_dir / f"node.{key}.json").read_text())
    want = {**ENV_VALUES, **{k: v for k, (_, v) in OPTION_VALUES.items()}}
    assert meta["settings"] == want
    assert "sets" not in meta  # meta.json holds them
    assert run.meta["parameters"]["counters"] == list(st.DEFAULT_SETS)
    # the effects: slabs mapped at the start, collective bins, snapshots, call sites
    nf = NodeFile(run.raw_dir, key)
    try:
        assert (nf.read().headers["slabs_mapped"] >= 3).all()  # one thread, 3 slabs
    finally:
        nf.close()
    assert meta["snapshot_interval_s"] == 0.2
    assert meta["collective_bins"]["small_bytes_max"] == 8
    assert meta["collective_bins"]["small_comm_max"] == 1
    bins = run.table("collective_bins")
    a2a = bins[bins["function"] == "MPI_Alltoall"]
    assert set(zip(a2a["message_size"], a2a["communicator_size"])) == {("large", "large")}
    assert "callsites" in run.tables()


@pytest.mark.mpi
def test_synthetic_runs_read_back_through_the_reader(runs_root, alltoall, tmp_path):
    """The synthetic writer lays files out from layout.def as the library does: what it
    wrote converts to the counts it meant, snapshots included."""
    from commscope.collect.node_files import node_keys, read_snapshots, load_node_meta
    from commscope.profile.run import convert_run
    from commscope.profile.synthetic import write_run

    code, real = _profile(runs_root, "--", str(alltoall))
    assert code == 0
    template = real.raw_dir / f"node.{node_keys(real.raw_dir)[0]}.json"
    ranks, per_node, iterations, snaps = 24, 8, 10, 4
    path = write_run(
        tmp_path / "syn",
        template,
        ranks=ranks,
        ranks_per_node=per_node,
        threads=2,
        iterations=iterations,
        snapshots=snaps,
        laggards=(5,),
    )
    run = convert_run(path)
    assert run.meta["profile"]["ranks"]["count"] == ranks
    c = run.table("counters")
    sent = c[c["counter"] == "messages_sent"].groupby("rank")["value"].sum()
    want = np.full(ranks, iterations * 6)
    want[5] *= 2
    assert sent.to_numpy().tolist() == want.tolist()
    keys = node_keys(run.raw_dir)
    assert len(keys) == ranks // per_node
    meta = load_node_meta(run.raw_dir / f"node.{keys[0]}.json")
    s, dropped = read_snapshots(run.raw_dir, meta)
    assert dropped == 0 and len(s.rank) == snaps * per_node
    off = next(x["offset"] for x in meta["counters"] if x["name"] == "messages_sent")
    last = s.values([off])[s.seq == snaps][:, 0]
    assert last.tolist() == want[:per_node].tolist()  # the last record holds the totals


@pytest.mark.parametrize("name", ["counters", "settings", "layout"])
def test_tables_reach_worker_processes(name):
    """The converter sends what it read from the tables to worker processes (a 4-node
    profile converts node files in parallel): everything must pickle, and the parser's
    own str subclasses, from a module loaded by path, do not."""
    import pickle

    entries = nt.table(name)
    assert pickle.loads(pickle.dumps(entries)) == entries
