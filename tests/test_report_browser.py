"""The report of a real run reads well in a real browser (headless Chromium, issue 24).

scripts/report_browser_check.py opens it at 1024 and 1366 px: no sideways scroll of the
page, nothing cut off, every figure loaded with a size, no raw e-notation outside code.
Without Chromium (Debian: ``apt-get install chromium``, scripts/setup.sh as root) the
browser tests skip and say so.
"""

import importlib.util
from pathlib import Path

import pytest

from commscope.units import human_value
from needs import needs

ROOT = Path(__file__).resolve().parents[1]


def _checker():
    spec = importlib.util.spec_from_file_location(
        "report_browser_check", ROOT / "scripts" / "report_browser_check.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


check = _checker()


def needs_chromium(test):
    return pytest.mark.browser(
        needs(
            check.find_chromium() is not None,
            "no chromium on PATH (Debian: apt-get install chromium; scripts/setup.sh as root)",
        )(test)
    )


@pytest.mark.parametrize(
    "name, value, text",
    [
        ("median_s", 1.234e-6, "1.23 us"),
        ("median_s", 0.0034, "3.4 ms"),
        ("t_s", 2.0, "2 s"),
        ("size_bytes", 1024, "1 KiB"),
        ("size_bytes", 1000, "1000 B"),
        ("bytes", 81920, "80 KiB"),
        ("bw_Bps", 3.4e9, "3.4 GB/s"),
        ("bw_Bps", 8.12e8, "812 MB/s"),
        ("rate_msgs_per_s", 1.23e6, "1.23 M msgs/s"),
        ("beta_s_per_byte", 1.2e-10, "0.12 ns/B"),
        ("share_pct", 12.04, "12 %"),
        ("rel_error", -0.0168, "-1.68 %"),
        ("laggard_share", 0.0192, "1.92 %"),
        ("bytes_per_iteration", 25200, "24.6 KiB"),
        ("value", 1.2e-5, "0.000012"),
        ("value", 123456789.0, "123,456,789"),
        ("value", 2.5e20, "2.5×10²⁰"),
        ("rank", 3, "3"),
        ("ci_s", (1e-6, 2e-6), "1 us .. 2 us"),
        ("protocol", "eager", "eager"),
        ("oversubscribed", True, "yes"),
    ],
)
def test_report_numbers_are_written_in_human_units(name, value, text):
    assert human_value(name, value)[1] == text
    assert "e-" not in human_value(name, value)[1] and "e+" not in human_value(name, value)[1]


@needs_chromium
def test_the_checker_finds_each_kind_of_problem(tmp_path):
    page = tmp_path / "bad.html"
    page.write_text(
        "<!doctype html><html><body><section id='a'><h2>a</h2>"
        "<p>latency 1.2e-06 s</p><pre>1.2e-06 in code is fine</pre>"
        "<div style='width:3000px'>too wide</div>"
        "<div style='overflow:hidden;width:50px;white-space:nowrap'>cut off here, a long line</div>"
        "<img alt='broken' src='data:image/png;base64,AAAA'>"
        "<div style='overflow-x:auto'><table><tr><td style='min-width:3000px'>scrolls in its box"
        "</td></tr></table></div></section></body></html>"
    )
    found = check.check(page, widths=(1024,))[1024]
    kinds = [k for k, _ in check.problems(found)]
    assert kinds.count("e-notation") == 1  # not the one in <pre>
    assert "sideways scroll" in kinds and "cut off" in kinds and "figure" in kinds
    assert found["scrolling"] and not any(
        "table" in d for k, d in check.problems(found) if k == "sideways scroll"
    )


@pytest.fixture(scope="module")
def report(tmp_path_factory, default_mpi):
    return check.build_report(tmp_path_factory.mktemp("browser"))


@pytest.mark.mpi
@needs_chromium
def test_the_report_of_real_runs_reads_well_at_1024_and_1366_px(report, tmp_path):
    results = check.check(report, widths=(1024, 1366), screenshots=tmp_path / "shots")
    for width, found in results.items():
        assert found["figures"] >= 10, (width, found["figures"])
        assert not check.problems(found), (width, check.problems(found))
    shots = sorted(p.stem for p in (tmp_path / "shots").glob("*.png"))
    assert {
        "pingpong",
        "hvpingpong",
        "counters",
        "matching",
        "threads",
        "multirate",
        "variability",
        "partitioned",
        "mtmatch",
    } <= set(shots), shots


def test_queue_lengths_binned_keep_every_peak():
    """Dense queue-length plots draw each bin's maximum: no peak falls between pixels."""
    import numpy as np

    from commscope.report.sections.matching import binned_max

    t = [0.0, 1.0, 1.5, 3.0, 7.0, 8.0]
    y = [1, 2, 0, 5, 0, 9]
    assert binned_max(t, y, np.array([0, 2, 4, 6, 8.0])).tolist() == [2, 5, 5, 9]


# -- every number for a person (issue 38): scripts/report_scan.py over real reports --------


def _scanner():
    spec = importlib.util.spec_from_file_location(
        "report_scan", ROOT / "scripts" / "report_scan.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


scan = _scanner()


def test_the_scan_finds_each_kind_of_problem():
    page = (
        "<section id='s'><table><tr><th>size_bytes</th><th>laggard share</th></tr>"
        "<tr><td>2097152</td><td>0.0192</td></tr></table>"
        "<p>eager &lt;= 1048576 B, at 4194304 B; 10000 messages</p>"
        "<figure class='fig'><svg data-overlaps='[[\"a\", \"b\"]]' "
        "data-outside='[[\"time\", 2]]' viewBox='0 0 10 10'>"
        "<text style='font-size: 6px'>tiny</text><text style='font-size: 10px'>"
        "ratio_median</text></svg></figure></section>"
    )
    found = scan.counts(scan.scan(page))
    assert found == {
        "bare sizes": 3,
        "share fractions": 1,
        "field-name headers": 2,
        "small fonts": 1,
        "overlapping labels": 1,
        "points outside axes": 1,
    }, found
    fine = (
        "<table><tr><th>size</th><th>laggard share</th><th>messages</th></tr>"
        "<tr><td>2 MiB</td><td>1.92 %</td><td>10000</td></tr></table>"
        "<p>MPI_Waitall at bsp.c:240; btl_sm_eager_limit 4 KiB; R_N 5.85 GB/s</p>"
    )
    assert not any(scan.scan(fine).values()), scan.scan(fine)


@pytest.mark.mpi
def test_the_report_of_real_runs_writes_every_number_for_a_person(report, tmp_path):
    """No bare size, share as a fraction, field-name header, small or overlapping figure
    text, or point beyond its axes, in the report of every kind of run and in a profile's
    own report (which opens with its diagnosis)."""
    from commscope.cli import main

    profile = tmp_path / "profile.html"
    assert main(["report", str(Path(report).parent / "runs" / "ring"), "-o", str(profile)]) == 0
    for page in (Path(report), profile):
        found = scan.scan(page.read_text())
        assert not any(found.values()), (page.name, {k: v for k, v in found.items() if v})
    text = profile.read_text()
    assert text.index("<h2>Diagnosis") < text.index("<h2>Application profile")
    whole = Path(report).read_text()
    # the answer first: the summary box, then the measurements, the models' validation below
    assert (
        whole.index("<h2>Summary")
        < whole.index("<h2>Point-to-point")
        < whole.index("<h2>Do the models hold here?")
    )
    assert 'class="toc"' in whole and '<details class="more">' in whole


def test_a_busy_machine_is_said_first_naming_the_rows(tmp_path):
    """Runs measured while others used the CPUs: the summary's banner says so and marks
    the rows those runs measured; without load readings, no banner."""
    from types import SimpleNamespace

    from commscope.machine_load import judge
    from commscope.report.sections import summary

    busy = {"during": {"others_busy_pct": 73.0, "steal_pct": 0.4}}
    idle = {"during": {"others_busy_pct": 2.0, "steal_pct": 0.0}}
    assert judge(busy) == "other programs used 73 % of the CPUs" and judge(idle) is None
    assert "stole 9 %" in judge({"during": {"others_busy_pct": 0.0, "steal_pct": 9.0}})
    assert "load average 6.5 on 2 CPUs" in judge(
        {"start": {"load_average": [6.5, 5, 4], "cpus": 2}}
    )

    def run(name, load, over=False):
        return SimpleNamespace(
            path=Path(name),
            kind="pingpong",
            meta={"load": load, "launch": {"oversubscribed": over, "nranks": 4}},
        )

    runs = [run("pp-busy", busy), run("pp-idle", idle), run("pp-over", idle, over=True)]
    assert set(summary.busy_runs(runs)) == {"pp-busy", "pp-over"}
    rows = [
        summary._Row("latency", "1 us", sources=["pp-busy"]),
        summary._Row("bandwidth", "1 GB/s", sources=["pp-idle"]),
    ]
    banner = summary._banner(rows, summary.busy_runs(runs), runs)
    assert "busy while measuring" in banner and "73 %" in banner and "1 of 3 runs" in banner
    assert "rows marked" in banner and "latency" in banner and "bandwidth" not in banner
    assert summary._banner(rows, {}, runs) == ""
