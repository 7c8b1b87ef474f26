"""No nan or inf shown to a person: every table the CLI prints and the report, over real
small runs of every kind and runs whose values are undefined.

Undefined values print as "-" (commscope.output.MISSING) in text, as null in --json;
the report's tables and prose never show nan, inf, NaN or Infinity outside code blocks.
The runs: one of every kind (tests/fuzzkit.py's originals, shared with the mutation
test), and runs where values cannot be computed: a profile without the timers (no time
in MPI), a ping-pong stopped by SIGTERM after a few sizes, a ping-pong whose placement
file lacks a column, a ping-pong of three sizes (the fewest a fit takes), a threads run of one
iteration (too few arrivals for the tests).
"""

import json
import re
import shutil
import signal
import subprocess

import pytest

from fuzzkit import NAN_TOKEN, PROGRAMS, fork_cli
from test_faults_runstate import _killed_after_first_sizes, _until_quiet
from needs import OMPT_RUNTIME, need

pytestmark = [pytest.mark.mpi, pytest.mark.slow]


@pytest.fixture(scope="module")
def degenerate(tmp_path_factory, default_mpi, fuzz_originals):
    """Real runs whose values are undefined, by name."""
    from commscope.bench.pingpong import run_pingpong
    from commscope.bench.threads import run_threads

    root = tmp_path_factory.mktemp("degenerate")
    runs = root / "runs"
    exe = root / "exact_threads"
    subprocess.run(
        [default_mpi.mpicc, "-O2", "-pthread", str(PROGRAMS / "exact_threads.c"), "-o", str(exe)],
        check=True,
    )
    status, out, err = fork_cli(
        [
            "profile",
            "-n",
            "2",
            "--runs",
            str(runs / "p"),
            "--quiet",
            "--counters",
            "bytes,peers,bins,requests,pvars",
            "--snapshot-every",
            "20ms",
            "--",
            str(exe),
            "2",
        ],
        root,
        120,
    )
    assert status == 0, err
    made = {"profile-no-timers": out.strip().splitlines()[-1]}
    assert _killed_after_first_sizes(runs, "pp-stopped", sig=signal.SIGTERM) != 0
    _until_quiet(runs / "pp-stopped" / "raw" / "samples.csv")
    made["pingpong-stopped"] = runs / "pp-stopped"
    placement = root / "pp-placement"
    shutil.copytree(fuzz_originals["pingpong"], placement)
    csv = placement / "raw" / "placement.csv"
    lines = [ln.split(",") for ln in csv.read_text().splitlines()]
    drop = lines[0].index("numa") if "numa" in lines[0] else len(lines[0]) - 1
    csv.write_text(
        "".join(",".join(c for i, c in enumerate(ln) if i != drop) + "\n" for ln in lines)
    )
    made["pingpong-placement"] = placement
    made["pingpong-three-sizes"] = run_pingpong(
        min_size=1, max_size=4, iters=5, warmup=1, runs_root=runs, echo=False
    ).path
    made["threads-one-iteration"] = run_threads(
        ranks=2,
        threads=2,
        iterations=1,
        trials=1,
        warmup=0,
        work=1e-3,
        compute="sleep",
        runs_root=runs,
        echo=False,
    ).path
    return {k: str(v) for k, v in made.items()}


def _tables(o, d):
    """(label, argv) of every command printing a table, text and --json."""
    mm = str(o["machine-model"])
    out = [
        (
            "model p2p",
            [
                "model",
                "p2p",
                "--machine-model",
                mm,
                "--sizes",
                "1,1K,1M",
                "--locality",
                "intra-socket",
            ],
        ),
        (
            "predict partitioned",
            [
                "predict",
                "partitioned",
                str(o["partitioned"]),
                "--machine-model",
                mm,
                "--model",
                "postal",
                "--replicas",
                "200",
            ],
        ),
        (
            "predict variability",
            [
                "predict",
                "variability",
                str(o["bsp"]),
                "--target-ranks",
                "4,64",
                "--replicas",
                "200",
                "--seed",
                "1",
            ],
        ),
        ("stats gev", ["stats", "gev", f"{o['bsp']}/maxima.parquet", "--column", "max_interval_s"]),
        (
            "stats bootstrap",
            [
                "stats",
                "bootstrap",
                f"{o['bsp']}/intervals.parquet",
                "--target-ranks",
                "4",
                "--replicas",
                "200",
                "--seed",
                "1",
            ],
        ),
        ("model matching", ["model", "matching", str(o["profile"]), "-t", "2"]),
        (
            "export",
            ["export", str(o["profile"]), "--format", "perfetto", "-o", "t.json", "--overwrite"],
        ),
    ]
    for name in ("profile", "profile-ompt", "profile-no-timers"):
        run = o.get(name) or d.get(name)
        if run:
            out.append((f"top {name}", ["top", str(run), "--once"]))
            out.append((f"stats imbalance {name}", ["stats", "imbalance", str(run)]))
    for name in ("pingpong", "pingpong-three-sizes", "pingpong-placement", "pingpong-stopped"):
        run = o.get(name) or d.get(name)
        out.append((f"fit {name}", ["fit", str(run), "-o", f"{name}.json", "--overwrite"]))
    for name in ("threads", "threads-one-iteration"):
        run = o.get(name) or d.get(name)
        out.append((f"stats arrivals {name}", ["stats", "arrivals", f"{run}/compute.parquet"]))
    if "profile-ompt" in o:
        out += [
            ("advise", ["advise", str(o["threads"]), "--replicas", "200", "--size", "64K"]),
            (
                "stats imbalance --by-region",
                ["stats", "imbalance", str(o["profile-ompt"]), "--by-region"],
            ),
        ]
    return out + [(f"{label} --json", [*argv, "--json"]) for label, argv in out]


def _shown_text(html):
    """What a person reads in the report: tags, scripts, styles and code blocks removed."""
    html = re.sub(r"(?is)<(script|style|pre|code)\b.*?</\1>", " ", html)
    html = re.sub(r"(?s)<[^>]+>", " ", html)
    return re.sub(r"&[a-z]+;", " ", html)


def _no_nan_in_json(doc, where, machine_model=False):
    """No string nan/inf for a number; a machine model (fit --json) writes an unbounded
    rate or interval end as "inf" (its documented format, docs/machine-model.md)."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            _no_nan_in_json(v, f"{where}.{k}", machine_model)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            _no_nan_in_json(v, f"{where}[{i}]", machine_model)
    elif isinstance(doc, str) and not (machine_model and doc == "inf"):
        assert not NAN_TOKEN.fullmatch(doc.strip()), f"{where}: {doc!r}"


def test_cli_tables_show_no_nan_or_inf(fuzz_originals, degenerate, tmp_path):
    shown = []
    for label, argv in _tables(fuzz_originals, degenerate):
        status, out, err = fork_cli(argv, tmp_path, 120)
        assert status == 0, f"{label}: exit {status}\n{err[-2000:]}"
        shown.append(label)
        if "--json" in argv:

            def refuse(token):
                raise AssertionError(f"{label}: bare {token} in --json")

            _no_nan_in_json(json.loads(out, parse_constant=refuse), label, argv[0] == "fit")
        else:
            bad = NAN_TOKEN.search(out)
            assert bad is None, f"{label} shows {bad.group()!r}:\n{out[:3000]}"
    assert len(shown) >= 30


def test_undefined_values_are_dash_in_text_and_null_in_json(degenerate, tmp_path):
    """A profile without the timers has no time in MPI: top says "not measured" in the
    time columns and names the option that adds the timers (null in JSON, never 0);
    stats imbalance likewise; a threads run of one iteration has arrival tests that
    cannot be computed: "-" in the table, null in --json."""
    run = degenerate["profile-no-timers"]
    status, out, err = fork_cli(["top", run, "--json"], tmp_path)
    assert status == 0, err
    rows = json.loads(out)
    assert rows and all(r["mpi_pct"] is None and r["mpi_time_s"] is None for r in rows), rows
    assert all(r["wall_s"] > 0 and r["msgs_per_s"] > 0 for r in rows), rows  # those are measured
    status, out, err = fork_cli(["top", run, "--once"], tmp_path)
    header, *lines = [ln for ln in out.splitlines() if ln.strip() and not ln.startswith("#")]
    assert {"mpi_time_s", "mpi_pct"} <= set(header.split()), out
    assert lines and all(ln.count("not measured") == 2 for ln in lines), out
    assert "not measured" in out and "--counters default" in out.splitlines()[-1], out
    status, out, err = fork_cli(["stats", "imbalance", run, "--json"], tmp_path)
    assert status == 0, err
    process = json.loads(out)["process"]
    assert process["imbalance_pct"] is None and "--counters" in process["not_measured"]
    assert all(r["load_s"] is None and r["total_s"] > 0 for r in process["ranks"])
    table = f"{degenerate['threads-one-iteration']}/compute.parquet"
    status, out, err = fork_cli(["stats", "arrivals", table, "--json"], tmp_path)
    assert status == 0, err
    nulls = [row["test"] for row in json.loads(out)["normality"] if row["fraction_pass"] is None]
    assert nulls, out[:2000]  # tests that need more samples than one iteration gives
    status, text, err = fork_cli(["stats", "arrivals", table], tmp_path)
    assert status == 0 and " - " in text, text[:2000]


@pytest.mark.parametrize(
    "name",
    [
        "pingpong",
        "hvpingpong",
        "mtmatch",
        "multirate",
        "threads",
        "partitioned",
        "bsp",
        "profile",
        "profile-ompt",
        "profile-no-timers",
        "pingpong-stopped",
        "pingpong-placement",
        "pingpong-three-sizes",
        "threads-one-iteration",
    ],
)
def test_report_shows_no_nan_or_inf(fuzz_originals, degenerate, tmp_path, name):
    run = fuzz_originals.get(name) or degenerate.get(name)
    need(run is not None, f"no {name} run here (needs the OpenMP runtime: {OMPT_RUNTIME})")
    argv = ["report", str(run), "-o", str(tmp_path / "r.html")]
    if name == "pingpong":
        argv += ["--machine-model", str(fuzz_originals["machine-model"])]
    status, out, err = fork_cli(argv, tmp_path, 180)
    assert status == 0, err
    text = _shown_text((tmp_path / "r.html").read_text())
    bad = NAN_TOKEN.search(text)
    assert bad is None, (
        f"report of {name} shows {bad.group()!r}: "
        f"...{text[max(0, bad.start() - 200) : bad.end() + 100]}..."
    )
