"""The report says in words where a model is far from the measurement."""

from commscope.report.gaps import model_gap_note


def test_the_worst_gap_beyond_the_factor_is_said():
    rows = [
        {"n": 1, "m": 1e-6, "p": 1e-6},
        {"n": 10000, "m": 1e-2, "p": 1e-3},
        {"n": 100, "m": 3e-5, "p": 1e-5},
    ]
    note = model_gap_note(rows, "m", "p", lambda r: f"n = {r['n']}", "max-rate model alone")
    assert "n = 10000" in note and "10x above" in note and "max-rate model alone" in note


def test_close_or_missing_models_say_nothing():
    rows = [{"m": 1.0, "p": 1.5}, {"m": 2.0, "p": None}, {"m": 1.0, "p": float("nan")}]
    assert model_gap_note(rows, "m", "p", str, "model") is None
    assert "below" in model_gap_note([{"m": 1.0, "p": 5.0}], "m", "p", lambda r: "x", "model")


# -- the report never contradicts itself: real runs, real reports ---------------------------

import re
import shutil
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

from commscope.bench.multirate import config_summary
from commscope.cli import main
from commscope.predict.variability import measured_summary
from commscope.report.figures import hold_scale, new_figure, value_text
from commscope.report.tables import html_table
from commscope.runs import open_run
from machine import on_two_cores

SVG = "{http://www.w3.org/2000/svg}"


def _bench(runs, name, *argv):
    assert main(["bench", *argv, "--runs", str(runs), "--name", name, "--quiet"]) == 0
    return runs / name


@pytest.fixture(scope="module")
def report_runs(tmp_path_factory, default_mpi):
    """Small real runs of the kinds whose report sections the defects were found in."""
    with on_two_cores():  # oversubscribed points on any host (tests/machine.py)
        return _report_runs(tmp_path_factory)


def _report_runs(tmp_path_factory):
    runs = tmp_path_factory.mktemp("report") / "runs"
    small = ["-i", "20", "-x", "2", "-I", "5", "-X", "1"]
    made = {
        "pp1": _bench(runs, "pp1", "pingpong", "-m", "1:4M", *small),
        # 2 threads: a process-iteration is 2 values; laggards likely enough to be shown
        "threads": _bench(
            runs,
            "threads",
            "threads",
            "--ranks",
            "2",
            "--threads",
            "2",
            "--iterations",
            "20",
            "--trials",
            "1",
            "--compute",
            "0.002",
            "--compute-mode",
            "sleep",
            "--laggard-prob",
            "0.3",
            "--laggard-extra",
            "0.005",
            "--seed",
            "1",
        ),
        # 1 thread per rank fits 2 cores; 4 per rank time-slice them (oversubscribed)
        "multirate": _bench(
            runs,
            "multirate",
            "multirate",
            "--threads",
            "1,4",
            "--window",
            "32",
            "-i",
            "10",
            "-x",
            "1",
            "--reps",
            "3",
        ),
    }
    for n in (1, 2, 4):  # 4 ranks on 2 cores: an oversubscribed measurement
        made[f"bsp{n}"] = _bench(
            runs,
            f"bsp{n}",
            "bsp",
            "-w",
            "ftq",
            "-n",
            str(n),
            "-k",
            "20",
            "--compute",
            "0.002",
            "--seed",
            "1",
        )
    # the same run twice under two names: figures must still have their own alt text
    shutil.copytree(made["multirate"], runs / "multirate-copy")
    lone = tmp_path_factory.mktemp("lone") / "runs"
    made["pp2"] = _bench(lone, "pp2", "pingpong", "--pairs", "2", "-m", "1:64K", *small)
    return runs, made


@pytest.fixture(scope="module")
def spied_report(report_runs, tmp_path_factory):
    """The report of every run in ``report_runs``, with each figure kept as it was drawn."""
    from commscope.report.sections import multirate, variability

    runs, _ = report_runs
    drawn = {}
    with pytest.MonkeyPatch.context() as mp:
        for mod in (multirate, variability):

            def spy(fig, alt, dpi=110, _orig=mod.figure_html):
                drawn[alt] = fig
                return _orig(fig, alt, dpi)

            mp.setattr(mod, "figure_html", spy)
        out = tmp_path_factory.mktemp("out") / "r.html"
        assert main(["report", str(runs), "-o", str(out)]) == 0
    return out.read_text(), drawn


class _Tables(HTMLParser):
    """Every <table>: its rows as lists of cell texts."""

    def __init__(self):
        super().__init__()
        self.tables, self._row, self._cell = [], None, None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self._row = []
            self.tables[-1].append(self._row)
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append(self._cell.strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def _figures(page):
    """(alt text, parsed SVG) of every inline SVG figure."""
    return [
        (alt, ET.fromstring(svg))
        for alt, svg in re.findall(
            r'<figure class="fig" role="img" aria-label="([^"]*)">(<svg.*?</svg>)\s*</figure>',
            page,
            re.S,
        )
    ]


def _groups(node, prefix):
    return [g for g in node.iter(f"{SVG}g") if g.get("id", "").startswith(prefix)]


@pytest.mark.mpi
def test_no_table_has_an_empty_column_or_python_text(spied_report):
    page, _ = spied_report
    parser = _Tables()
    parser.feed(page)
    headed = [t for t in parser.tables if len(t) > 1 and len(t[0]) > 1]
    assert len(headed) >= 8
    for table in headed:
        head, rows = table[0], table[1:]
        for i, name in enumerate(head):
            assert any(r[i] not in ("", "-") for r in rows if len(r) == len(head)), (
                f"column {name!r} is empty in every row of {head}"
            )
        assert not any("None" in c or "{'" in c for r in table for c in r), table
    # the bootstrap table had a 'note' column no row filled
    assert any("inside" in t[0] for t in headed)
    assert "<pre>" not in page  # every table goes through the one renderer


def test_the_renderer_drops_only_columns_empty_everywhere():
    rows = [
        {"a": 1.0, "note": None, "b": float("nan"), "c": ""},
        {"a": 2.0, "note": float("nan"), "b": 3.0, "c": "-"},
    ]
    out = html_table(rows, ["a", "note", "b", "c"])
    assert "<th>a</th>" in out and "<th>b</th>" in out
    assert "note" not in out and "<th>c</th>" not in out
    assert "<td>-</td>" in out  # a missing value among present ones is shown as missing
    assert "no rows" in html_table([], ["a"], caption="empty")
    assert "no values" in html_table([{"a": None}], ["a"], caption="blank")  # never an empty grid


@pytest.mark.mpi
def test_the_laggard_figure_shows_every_thread_with_two_threads(spied_report):
    page, _ = spied_report
    ((alt, svg),) = [f for f in _figures(page) if "example per-process-iteration" in f[0]]
    panels = _groups(svg, "axes_")
    assert panels  # the injected laggards (p = 0.3) make the laggard class
    for ax in panels:
        marks = [
            u
            for line in ax.findall(f"{SVG}g")
            if line.get("id", "").startswith("line2d_")
            for u in line.iter(f"{SVG}use")
        ]
        assert len(marks) == 2, "one point per thread of the process-iteration"
    assert "too few for a histogram" in "".join(svg.itertext())


@pytest.mark.mpi
def test_oversubscribed_multirate_points_are_marked_and_drawn_or_labelled(
    spied_report, report_runs
):
    page, drawn = spied_report
    summ = config_summary(open_run(report_runs[1]["multirate"]).table("reps"))
    assert summ["oversubscribed"].any()  # 2 x 4 threads on at most 2 cores (tests/machine.py)
    alt = next(a for a in drawn if a.startswith("message rate") and a.endswith(", multirate"))
    fig = drawn[alt]
    ax = next(a for a in fig.axes if a.get_ylabel().startswith("rate per thread"))
    lo, hi = ax.get_ylim()
    texts = [t.get_text() for t in ax.texts]
    for y, over in zip(summ["rate_per_thread_msgs_per_s"], summ["oversubscribed"]):
        # a trusted point is always on the axis; an oversubscribed one unless it would
        # stretch it, and then its value is written at the edge
        assert lo <= y <= hi or (over and value_text(y, "msgs/s") in texts), (y, over, lo, hi)
    open_markers = [
        line
        for line in ax.get_lines()
        if line.get_marker() == "o" and line.get_markerfacecolor() == "white"
    ]
    assert open_markers, "oversubscribed points are drawn with open markers"
    assert "open markers: oversubscribed" in "".join(dict(_figures(page))[alt].itertext())


@pytest.mark.mpi
def test_variability_oversubscribed_runs_are_drawn_or_labelled(spied_report, report_runs):
    _, drawn = spied_report
    meas = measured_summary([open_run(report_runs[1][f"bsp{n}"]) for n in (1, 2, 4)])
    assert meas["oversubscribed"].any()  # 4 ranks on at most 2 cores (tests/machine.py)
    fig = drawn[next(a for a in drawn if a.startswith("predicted vs measured"))]
    for ax in fig.axes:
        lo, hi = ax.get_ylim()
        texts = [t.get_text() for t in ax.texts]
        for y, over in zip(meas["runtime_s"], meas["oversubscribed"]):
            assert lo <= y <= hi or (over and value_text(y, "s") in texts), (y, over, lo, hi)


def test_hold_scale_clips_only_oversubscribed_outliers_both_ways():
    fig, axes = new_figure(ncols=3)
    a, b, c = axes[0]
    pts = [(1, 1.0, False, "k"), (2, 2.0, False, "k"), (3, 50.0, True, "r"), (4, -40.0, True, "r")]
    for ax in (a, b, c):
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o")
    drawn = hold_scale(a, pts, unit="s")
    assert a.get_ylim()[1] < 50 and a.get_ylim()[0] > -40
    assert sorted(drawn) == [(3, 50.0), (4, -40.0)]
    assert sorted(t.get_text() for t in a.texts) == ["-40 s", "50 s"]
    # within a factor STRETCH of the others: shown on the axis, not clipped
    near = [(1, 1.0, False, "k"), (2, 2.0, False, "k"), (3, 6.0, True, "r")]
    assert hold_scale(b, near) == [] and b.get_ylim()[1] >= 6
    # every point oversubscribed: judged from their middle, the outliers still clipped
    d = new_figure()[1][0][0]
    assert sorted(hold_scale(d, [(x, y, True, col) for x, y, _, col in pts])) == [
        (3, 50.0),
        (4, -40.0),
    ]
    # two oversubscribed points alone: neither can be called the outlier
    e = new_figure()[1][0][0]
    e.set_yscale("log")
    assert hold_scale(e, [(1, 1.0, True, "r"), (2, 1000.0, True, "r")]) == []
    assert e.get_ylim()[0] <= 1 and e.get_ylim()[1] >= 1000
    # on a log axis "5x beyond" is a ratio: 1e3 is far below 1e6 .. 2e6, 5e5 is not
    f = new_figure()[1][0][0]
    f.set_yscale("log")
    rates = [(1, 1e6, False, "k"), (2, 2e6, False, "k"), (3, 5e5, True, "r"), (4, 1e3, True, "r")]
    assert hold_scale(f, rates, unit="msgs/s") == [(4, 1e3)]
    assert f.get_ylim()[0] <= 5e5 and [t.get_text() for t in f.texts] == ["1 k msgs/s"]
    # a point that was not oversubscribed is never clipped, however far
    assert hold_scale(c, [(x, y, False, col) for x, y, _, col in pts]) == []
    assert c.get_ylim()[0] <= -40 and c.get_ylim()[1] >= 50


@pytest.mark.mpi
def test_figures_have_their_own_alt_text_and_no_legend_on_the_data(spied_report):
    page, _ = spied_report
    alts = re.findall(r'(?:aria-label|alt)="([^"]*)"', page)
    assert len(alts) >= 6
    assert len(alts) == len(set(alts)), [a for a in alts if alts.count(a) > 1]
    for alt, svg in _figures(page):
        for ax in _groups(svg, "axes_"):
            assert not _groups(ax, "legend_"), f"a legend inside a panel of {alt!r}"


@pytest.mark.mpi
def test_the_report_names_one_source_for_its_model_parameters(spied_report):
    page, _ = spied_report
    assert "fitted from the ping-pong runs in this report" in page
    assert "machine model given to the report" not in page  # no --machine-model was given


@pytest.mark.mpi
def test_a_lone_multi_pair_pingpong_run_gets_a_report(report_runs, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", str(report_runs[1]["pp2"]), "-o", str(out)]) == 0
    page = out.read_text()
    assert "<h2>Point-to-point" in page
    assert "the postal fit needs single-pair ping-pong data" in page
    alt, svg = next(f for f in _figures(page) if f[0].startswith("ping-pong"))
    assert "2 pair(s)" in alt and "bandwidth view, per pair" in "".join(svg.itertext())
    parser = _Tables()
    parser.feed(page)
    head = next(t[0] for t in parser.tables if t and "measured" in t[0])
    assert "bandwidth" in head and "model" not in head
