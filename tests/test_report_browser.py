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

ROOT = Path(__file__).resolve().parents[1]


def _checker():
    spec = importlib.util.spec_from_file_location(
        "report_browser_check", ROOT / "scripts" / "report_browser_check.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


check = _checker()
needs_chromium = pytest.mark.skipif(
    check.find_chromium() is None,
    reason="no chromium on PATH (Debian: apt-get install chromium; scripts/setup.sh as root)")


@pytest.mark.parametrize("name, value, text", [
    ("median_s", 1.234e-6, "1.23 us"), ("median_s", 0.0034, "3.4 ms"), ("t_s", 2.0, "2 s"),
    ("size_bytes", 1024, "1 KiB"), ("size_bytes", 1000, "1000 B"), ("bytes", 81920, "80 KiB"),
    ("bw_Bps", 3.4e9, "3.4 GB/s"), ("bw_Bps", 8.12e8, "812 MB/s"),
    ("rate_msgs_per_s", 1.23e6, "1.23 M msgs/s"), ("beta_s_per_byte", 1.2e-10, "0.12 ns/B"),
    ("share_pct", 12.04, "12 %"), ("rel_error", -0.0168, "-1.68 %"),
    ("laggard_share", 0.0192, "1.92 %"), ("bytes_per_iteration", 25200, "24.6 KiB"), ("value", 1.2e-5, "0.000012"),
    ("value", 123456789.0, "123,456,789"), ("value", 2.5e20, "2.5×10²⁰"), ("rank", 3, "3"),
    ("ci_s", (1e-6, 2e-6), "1 us .. 2 us"), ("protocol", "eager", "eager"),
    ("oversubscribed", True, "yes")])
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
        "</td></tr></table></div></section></body></html>")
    found = check.check(page, widths=(1024,))[1024]
    kinds = [k for k, _ in check.problems(found)]
    assert kinds.count("e-notation") == 1  # not the one in <pre>
    assert "sideways scroll" in kinds and "cut off" in kinds and "figure" in kinds
    assert found["scrolling"] and not any("table" in d for k, d in check.problems(found)
                                          if k == "sideways scroll")


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
    assert {"pingpong", "hvpingpong", "counters", "matching", "threads", "multirate",
            "variability", "partitioned", "mtmatch"} <= set(shots), shots


def test_queue_lengths_binned_keep_every_peak():
    """Dense queue-length plots draw each bin's maximum: no peak falls between pixels."""
    import numpy as np

    from commscope.report.sections.matching import binned_max
    t = [0.0, 1.0, 1.5, 3.0, 7.0, 8.0]
    y = [1, 2, 0, 5, 0, 9]
    assert binned_max(t, y, np.array([0, 2, 4, 6, 8.0])).tolist() == [2, 5, 5, 9]
