"""`commscope compare`: before and after a change, on real profile runs.

tests/programs/compare_spin.c spins U (1 + rank) per iteration then calls MPI_Allreduce;
the change is a smaller U (0.006 s before, 0.001 s after): the run gets faster by
about 0.3 s on 2 ranks and 30 iterations, far beyond this machine's run-to-run noise,
so only the direction and the verdict are asserted, never a timing.  Also: the JSON's
shape and units, single runs (untested against noise), the CI gate's exit statuses,
benchmark runs, `make bench` figures, and bad input (exit 2 naming the run and file).
"""

import contextlib
import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from commscope import units
from commscope.cli import main
from commscope.compare import figures as bench_figures
from commscope.compare import gate, noise
from commscope.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
SPIN = ROOT / "tests" / "programs" / "compare_spin.c"
ALLREDUCE_LINE = next(
    i
    for i, line in enumerate(SPIN.read_text().splitlines(), 1)
    if "MPI_Allreduce(" in line and not line.lstrip().startswith("*")
)
SLOW, FAST = "0.006", "0.001"


# ---- without MPI: the noise test and the gate's grammar -------------------------------


def test_change_with_repeats_and_without():
    c = noise.change([1.0, 1.1, 0.9], [0.5, 0.55, 0.45])
    assert c["difference_s"] == pytest.approx(-0.5) and c["ratio"] == pytest.approx(0.5)
    assert c["beyond_noise"] is True and c["p_value"] < 0.05
    assert c["ci95_s"][0] < -0.5 < c["ci95_s"][1] < 0
    same = noise.change([1.0, 1.2, 0.8], [1.05, 0.85, 1.15])
    assert same["beyond_noise"] is False
    single = noise.change([1.0], [0.5, 0.6])
    assert single["beyond_noise"] is None and single["ci95_s"] is None and single["p_value"] is None
    exact = noise.change([4, 4], [5, 5], "_value")  # counts: no spread, any change is real
    assert exact["beyond_noise"] is True and exact["difference_value"] == 1
    assert noise.change([0.0, 0.0], [1.0, 1.0])["ratio"] is None


def test_the_median_is_not_moved_by_one_stalled_run():
    before = [0.70, 0.74, 0.69, 0.73, 0.72, 0.71, 0.70]
    after = [0.63, 0.66, 1.27, 0.64, 0.65, 0.64, 0.66]  # one run the machine stalled
    mean = noise.change(before, after)
    median = noise.change(before, after, statistic="median")
    assert mean["beyond_noise"] is False and mean["difference_s"] > 0
    assert median["beyond_noise"] is True and median["difference_s"] == pytest.approx(-0.06)
    assert median["ci95_s"][1] < 0
    assert noise.change(before, after, statistic="median") == median  # seeded


@pytest.mark.parametrize(
    "text, level, key, op, amount, relative",
    [
        ("runtime > +5%", "runtime", None, ">", 5.0, True),
        ("runtime>5%", "runtime", None, ">", 5.0, True),
        ("mpi < -10%", "mpi_time", None, "<", -10.0, True),
        ("MPI_Allreduce > +10%", "functions", "MPI_Allreduce", ">", 10.0, True),
        ("callsite halo.c:69 > +1ms", "callsites", "halo.c:69", ">", 1e-3, False),
        ("function MPI_* >= 250us", "functions", "MPI_*", ">=", 250e-6, False),
        ("counter bytes_sent > +1000", "counters", "bytes_sent", ">", 1000.0, False),
        ("finding late_sender > 0.5s", "findings", "late_sender", ">", 0.5, False),
        ("point 4096 > +3%", "points", "4096", ">", 3.0, True),
    ],
)
def test_gate_grammar(text, level, key, op, amount, relative):
    r = gate.parse(text)
    assert (r.level, r.key, r.op, r.relative) == (level, key, op, relative)
    assert r.amount == pytest.approx(amount)


@pytest.mark.parametrize(
    "text, token",
    [
        ("runtime >> 5%", ">"),
        ("runtime > 5 parsecs", "parsecs"),
        ("runtime > five", "five"),
        ("fnction MPI_Send > 1%", "fnction"),
        ("runtme > 5%", "runtme"),
        ("runtime 5%", "5%"),
        ("> 5%", ">"),
        ("runtime >", ">"),
        ("function a b > 1%", "b"),
    ],
)
def test_gate_refuses_what_it_cannot_parse_naming_the_token(text, token):
    with pytest.raises(InputError) as err:
        gate.parse(text)
    assert f"at {token!r}" in str(err.value), str(err.value)


# ---- `make bench` figures: kept, compared, gated (no MPI) ----------------------------------


def _figures_dir(path, samples, wall=10.0, script="bench_startup"):
    path.mkdir(parents=True)
    rec = path / "rec.jsonl"
    rec.write_text(
        "".join(
            json.dumps({"name": n, "unit": "s", "samples": s}) + "\n" for n, s in samples.items()
        )
    )
    doc = bench_figures.collect(rec, script, "ok", wall, "full")
    (path / f"{script}.figures.json").write_text(json.dumps(doc))
    return path


def test_bench_figures_flag_a_figure_beyond_its_noise(tmp_path, capsys):
    old = _figures_dir(
        tmp_path / "previous",
        {"--help": [0.20, 0.21, 0.19, 0.20, 0.205], "--version": [0.10, 0.12, 0.09, 0.11, 0.10]},
    )
    new = _figures_dir(
        tmp_path / "full",
        {"--help": [0.30, 0.31, 0.29, 0.30, 0.305], "--version": [0.11, 0.09, 0.12, 0.10, 0.10]},
    )
    assert main(["compare", "--bench", str(old), str(new), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out)[0] == "runtime"
    by = {f["figure"]: f for f in out["figures"]}
    assert by["bench_startup:--help"]["beyond_noise"] is True
    assert by["bench_startup:--help"]["difference_value"] == pytest.approx(0.1, rel=0.05)
    assert by["bench_startup:--version"]["beyond_noise"] is False
    assert by["bench_startup:wall"]["beyond_noise"] is None  # one sample a pass
    assert not list(units.json_unit_problems(out))
    # the gate: --help moved beyond its noise, --version within it
    assert (
        main(
            [
                "compare",
                "--bench",
                str(old),
                str(new),
                "--fail-if",
                "figure bench_startup:--version > +5%",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert (
        main(
            [
                "compare",
                "--bench",
                str(old),
                str(new),
                "--fail-if",
                "figure bench_startup:--* > +20%",
            ]
        )
        == 1
    )
    captured = capsys.readouterr()
    assert "bench_startup:--help" in captured.err and "--version" not in captured.err
    assert "FAILED" in captured.out


def test_bench_figures_bad_input(tmp_path, capsys):
    old = _figures_dir(tmp_path / "previous", {"--help": [0.2, 0.21]})
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.figures.json").write_text('{"schema": "commscope.bench-figures", "schema_')
    assert main(["compare", "--bench", str(old), str(bad)]) == 2
    assert "x.figures.json" in capsys.readouterr().err
    assert main(["compare", "--bench", str(old), str(tmp_path / "none")]) == 2
    assert "none" in capsys.readouterr().err


def test_record_is_a_no_op_outside_make_bench(tmp_path, monkeypatch):
    monkeypatch.delenv(bench_figures.ENV, raising=False)
    bench_figures.record("x", [1.0])  # nothing to write to: nothing happens
    target = tmp_path / "f.jsonl"
    monkeypatch.setenv(bench_figures.ENV, str(target))
    bench_figures.record("x", [1.0, 2.0], unit="s")
    assert json.loads(target.read_text()) == {"name": "x", "unit": "s", "samples": [1.0, 2.0]}


# ---- real profile runs --------------------------------------------------------------------


@pytest.fixture(scope="module")
def spin(default_mpi, tmp_path_factory):
    exe = tmp_path_factory.mktemp("compare") / "compare_spin"
    subprocess.run(
        [
            default_mpi.mpicc,
            "-O2",
            "-g",
            "-I",
            str(ROOT / "tests" / "programs"),
            str(SPIN),
            "-o",
            str(exe),
        ],
        check=True,
    )
    return exe


def _profile(exe, root, name, unit, ranks=2):
    with contextlib.redirect_stdout(io.StringIO()):  # capsys is per test: drop the output
        code = main(
            [
                "profile",
                "-n",
                str(ranks),
                "--callsites",
                "--runs",
                str(root),
                "--name",
                name,
                "--quiet",
                "--",
                str(exe),
                "--iters",
                "30",
                "--unit",
                unit,
            ]
        )
    assert code == 0
    return root / name


@pytest.fixture(scope="module")
def spin_runs(spin, tmp_path_factory):
    """Three profile runs before the change (U = 6 ms) and three after (U = 1 ms),
    alternating, so a slow phase of the shared machine hits both sides."""
    root = tmp_path_factory.mktemp("compare-runs")
    runs = {"before": [], "after": []}
    for k in range(3):
        runs["before"].append(_profile(spin, root, f"slow{k}", SLOW))
        runs["after"].append(_profile(spin, root, f"fast{k}", FAST))
    return runs


def _compare_json(capsys, *argv):
    code = main(["compare", *map(str, argv), "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


@pytest.mark.mpi
def test_a_faster_change_is_faster_beyond_the_noise(spin_runs, capsys):
    out = _compare_json(capsys, "--before", *spin_runs["before"], "--after", *spin_runs["after"])
    assert list(out)[0] == "runtime"
    rt = out["runtime"]
    assert set(rt) >= {"before_s", "after_s", "difference_s", "ratio", "beyond_noise"}
    assert rt["difference_s"] < -0.1 and rt["ratio"] < 0.6 and rt["beyond_noise"] is True
    assert rt["runs_before"] == rt["runs_after"] == 3
    assert rt["ci95_s"][1] < 0
    # the finer levels, in the same shape
    for level, field in (
        ("ranks", "rank"),
        ("functions", "function"),
        ("callsites", "callsite"),
        ("counters", "counter"),
    ):
        assert out[level], level
        for rec in out[level]:
            assert field in rec and "beyond_noise" in rec and "ratio" in rec
    fn = {r["function"]: r for r in out["functions"]}
    assert fn["MPI_Allreduce"]["difference_s"] < 0  # rank 0 waits U per iteration less
    sites = {r["callsite"] for r in out["callsites"]}
    assert f"compare_spin.c:{ALLREDUCE_LINE}" in sites
    # the same program, with other arguments: said, and compared on what they share
    assert [d["what"] for d in out["differs"]] == ["arguments"]
    assert not list(units.json_unit_problems(out))


@pytest.mark.mpi
def test_single_runs_are_untested_against_noise(spin_runs, capsys):
    out = _compare_json(capsys, spin_runs["before"][0], spin_runs["after"][0])
    assert out["runtime"]["difference_s"] < 0
    assert out["runtime"]["beyond_noise"] is None
    assert all(r["beyond_noise"] is None for r in out["functions"])
    assert any("untested" in n for n in out["notes"])


@pytest.mark.mpi
def test_other_rank_counts_are_compared_on_what_they_share(spin, spin_runs, tmp_path, capsys):
    three = _profile(spin, tmp_path, "three", FAST, ranks=3)
    out = _compare_json(capsys, spin_runs["after"][0], three)
    assert {d["what"] for d in out["differs"]} == {"ranks"}
    assert sorted(r["rank"] for r in out["ranks"]) == [0, 1]  # rank 2: one side only
    assert any("ranks 2 are on one side only" in n for n in out["notes"])
    assert out["runtime"]["difference_s"] is not None and out["functions"]


@pytest.mark.mpi
def test_text_ranks_the_changes(spin_runs, capsys, tmp_path):
    report = tmp_path / "compare.html"
    code = main(
        [
            "compare",
            "--before",
            *map(str, spin_runs["before"]),
            "--after",
            *map(str, spin_runs["after"]),
            "-o",
            str(report),
        ]
    )
    text = capsys.readouterr().out
    assert code == 0
    line = next(ln for ln in text.splitlines() if ln.startswith("run time:"))
    assert "beyond noise" in line and " -> " in line and "-" in line.split("(")[1]
    assert "MPI_Allreduce" in text and f"compare_spin.c:{ALLREDUCE_LINE}" in text
    assert "# differs: arguments" in text
    page = report.read_text()
    assert "Before and after" in page and "faster" in page
    assert not re.search(r"\d[eE][-+]\d", re.sub(r"<svg.*?</svg>|<[^>]+>", " ", page, flags=re.S))
    assert (
        main(
            ["compare", str(spin_runs["before"][0]), str(spin_runs["after"][0]), "-o", str(report)]
        )
        == 2
    )  # never overwritten unasked
    assert "exists" in capsys.readouterr().err


@pytest.mark.mpi
def test_the_gate_fails_a_slower_change_and_passes_a_faster_one(spin_runs, capsys):
    slow, fast = spin_runs["before"], spin_runs["after"]
    site = f"compare_spin.c:{ALLREDUCE_LINE}"
    gates = [
        "--fail-if",
        "runtime > +5%",
        "--fail-if",
        "MPI_Allreduce > +10%",
        "--fail-if",
        f"callsite {site} > +1ms",
        "--fail-if",
        "counter collective_bytes > +1%",
    ]
    # after is the slow side: a regression, beyond the noise
    code = main(["compare", "--before", *map(str, fast), "--after", *map(str, slow), *gates])
    captured = capsys.readouterr()
    assert code == 1
    assert "fail-if runtime > +5%" in captured.err
    assert "FAILED" in captured.out
    # the change that helps passes every gate
    code = main(["compare", "--before", *map(str, slow), "--after", *map(str, fast), *gates])
    captured = capsys.readouterr()
    assert code == 0 and "FAILED" not in captured.out and not captured.err.strip()
    # in the JSON too
    out = _compare_json(capsys, "--before", *slow, "--after", *fast, "--fail-if", "runtime > +5%")
    assert out["gate"]["passed"] is True and out["gate"]["failed"] == []
    # a gate that does not parse, or names nothing there: exit 2, before any work
    for bad, token in (
        ("runtime >> 5%", "'>'"),
        ("MPI_Bcast > +10%", "MPI_Bcast"),
        ("callsite nowhere.c:1 > 1ms", "nowhere.c:1"),
    ):
        assert main(["compare", str(slow[0]), str(fast[0]), "--fail-if", bad]) == 2
        assert token in capsys.readouterr().err


@pytest.mark.mpi
def test_bad_input_is_one_error_naming_the_run_and_file(spin_runs, tmp_path, capsys):
    from commscope.bench.pingpong import run_pingpong

    run = spin_runs["before"][0]
    pp = run_pingpong(
        min_size=1,
        max_size=64,
        iters=20,
        warmup=2,
        runs_root=tmp_path / "pp",
        echo=False,
        progress=False,
        timeout=120,
    ).path
    # a benchmark and a profile
    assert main(["compare", str(run), str(pp)]) == 2
    err = capsys.readouterr().err
    assert str(pp / "meta.json") in err and "profile" in err and "pingpong" in err
    # a missing side
    assert main(["compare", str(run)]) == 2
    assert "BEFORE AFTER" in capsys.readouterr().err
    assert main(["compare", "--before", str(run)]) == 2
    assert "--after" in capsys.readouterr().err
    assert main(["compare", str(run), str(tmp_path / "nothing")]) == 2
    assert "nothing" in capsys.readouterr().err
    # a damaged table
    broken = tmp_path / "broken"
    shutil.copytree(run, broken)
    (broken / "functions.parquet").write_bytes(b"PAR1 not really")
    assert main(["compare", str(run), str(broken), "--no-findings"]) == 2
    err = capsys.readouterr().err
    assert str(broken / "functions.parquet") in err and err.count("\n") == 1
    # repeats of two configurations on one side
    assert (
        main(["compare", "--before", str(run), str(spin_runs["after"][0]), "--after", str(run)])
        == 2
    )
    assert "one configuration" in capsys.readouterr().err


@pytest.mark.mpi
def test_benchmark_runs_compare_their_figure_per_point(tmp_path, capsys):
    from commscope.bench.pingpong import run_pingpong

    quiet = dict(runs_root=tmp_path, echo=False, progress=False, timeout=120)
    a = run_pingpong(min_size=1, max_size=1024, iters=50, warmup=5, **quiet).path
    b = run_pingpong(min_size=1, max_size=1024, iters=50, warmup=5, **quiet).path
    out = _compare_json(capsys, a, b)
    assert list(out)[0] == "runtime" and out["runtime"]["before_s"] is None
    assert "runtime" in out["not_compared"]
    sizes = sorted(p["size_bytes"] for p in out["points"])
    assert sizes == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    assert all(p["before_s"] > 0 and p["after_s"] > 0 for p in out["points"])
    assert not list(units.json_unit_problems(out))
    assert main(["compare", str(a), str(b), "--fail-if", "point 1024 > +10000%"]) == 0
    capsys.readouterr()
