"""Partitioned-communication model (003 Chapter 4) and OSU tables."""

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from commscope.bench.partitioned import default_sizes
from commscope.paths import DATA_DIR
from commscope.cli import main
from commscope.errors import InputError
from commscope.models import partitioned as pm
from commscope.models.osu import load_osu, read_osu_text, read_reference_csv

INTERNODE = str(DATA_DIR / "osu_internode_lassen_quartz.csv")
US = 1e-6
MB = 1e6

# Examples 4.2.1 / 4.3.1: 4 threads, 16 MB, latency 5 us, bandwidth 10,000 MB/s,
# normal thread times with mean 100,000 us and "10%" (sigma = 1,000 us).
EXAMPLE_LINK = pm.ConstantLink(5 * US, 10_000 * MB)


@pytest.fixture(scope="module")
def example():
    single = pm.model_single_send(EXAMPLE_LINK, [16 * MB]).iloc[0]
    part = pm.model_partitioned(EXAMPLE_LINK, 4, [16 * MB], 0.1, variability=0.1).iloc[0]
    return single, part


# (quantity, paper value, function of (single, part) giving commscope's value, tolerance)
PAPER_VALUES = [
    ("last thread finish (us)", 101_121, lambda s, p: p.last_thread_s / US, 1),
    ("first thread finish (us)", 98_878, lambda s, p: (p.last_thread_s - p.overlap_s) / US, 1),
    ("spread T_overlap,avg (us)", 2_243, lambda s, p: p.overlap_s / US, 1),
    ("single-send T_send (us)", 1_605, lambda s, p: s.single_elapsed_s / US, 1e-6),
    ("single-send BW (MB/s)", 9_969, lambda s, p: s.single_bandwidth_Bps / MB, 1),
    ("partition message time (us)", 405, lambda s, p: p.message_s / US, 1e-6),
    ("messages overlapped", 3, lambda s, p: p.messages_overlapped, 1e-9),
    ("partitioned T_extra (us)", 405, lambda s, p: p.elapsed_s / US, 1e-6),
    ("partitioned BW (MB/s)", 39_506, lambda s, p: p.bandwidth_Bps / MB, 1),
]


@pytest.mark.parametrize("name,paper,value,tol", PAPER_VALUES, ids=[v[0] for v in PAPER_VALUES])
def test_examples_421_431_reproduced(example, name, paper, value, tol):
    assert abs(value(*example) - paper) <= tol


def test_example_mib_conversion_corrected(example):
    """The thesis prints 10,453 and 41,425 MiB/s (MB/s x 1.048576); the correct MiB/s
    values are MB/s / 1.048576: 9,507 and 37,676."""
    single, part = example
    assert round(single.single_bandwidth_Bps / pm.MIB) == 9_507
    assert round(part.bandwidth_Bps / pm.MIB) == 37_676
    # ... and the thesis's numbers are the wrong-way conversion of the same values.
    assert abs(single.single_bandwidth_Bps / MB * 1.048576 - 10_453) < 1
    assert abs(part.bandwidth_Bps / MB * 1.048576 - 41_425) < 1


def test_variability_convention_and_direct_sigma():
    assert pm.sigma_from_variability(0.1, 0.1) == pytest.approx(1e-3)
    a = pm.model_partitioned(EXAMPLE_LINK, 4, [16 * MB], 0.1, variability=0.25)
    b = pm.model_partitioned(EXAMPLE_LINK, 4, [16 * MB], 0.1, sigma_s=0.1 * 0.25**2)
    pd.testing.assert_frame_equal(a, b)


def test_buffer_sweep_is_18_times_powers_of_two_mib():
    sweep = pm.buffer_sweep_bytes()
    assert sweep[0] == pytest.approx(0.28125 * pm.MIB)
    assert sweep[-1] == pytest.approx(4608 * pm.MIB)
    assert np.allclose(sweep[1:] / sweep[:-1], 2.0)


def test_fig44_lassen_25pct_peak():
    """Fig. 4.4 text: at 25% the model peaks at 144 MB with 186,000 'MiB/s' (thesis
    convention, MB/s x 1.048576) and beats single send from 0.28 MB up to 4,608 MB."""
    osu = load_osu(INTERNODE, "lassen")
    sizes = pm.buffer_sweep_bytes()
    t = pm.compare_partitioned(osu, 20, sizes, 0.1, variability=0.25)
    peak = t["model_bandwidth_Bps"].idxmax()
    assert t["size_bytes"][peak] == pytest.approx(144 * pm.MIB)
    thesis_units = t["model_bandwidth_Bps"][peak] / MB * 1.048576
    assert thesis_units == pytest.approx(186_000, rel=0.005)
    better = t["model_bandwidth_Bps"] > t["single_bandwidth_Bps"]
    assert better.all()


def test_partitioned_collapses_to_n_messages_without_spread():
    # sigma = 0: nothing overlaps, N messages after the last thread (plus T_wait).
    t = pm.model_partitioned(EXAMPLE_LINK, 8, [8 * MB], 0.1, sigma_s=0.0, t_wait_s=2e-5).iloc[0]
    assert t.messages_overlapped == 0
    assert t.elapsed_s == pytest.approx(8 * (5 * US + 1 * MB / (10_000 * MB)) + 2e-5)


def test_link_from_alpha_beta_is_postal():
    link = pm.link_from_alpha_beta(2e-6, 1e-10)
    assert pm.message_time_s(link, 1e6) == pytest.approx(2e-6 + 1e-4)


def test_machine_model_link_matches_node_aware_model():
    from commscope.models.message_time import message_seconds
    from commscope.models.machine_model import bluewaters_machine_model

    machine_model = bluewaters_machine_model()
    sizes = np.array([100.0, 4000.0, 1e5, 1e7])
    link = pm.MachineModelLink(machine_model, "inter-node")
    assert np.allclose(
        pm.message_time_s(link, sizes), message_seconds(machine_model, sizes, "inter-node")
    )


# ------------------------------------------------------------------- Monte Carlo


def _brute_force_elapsed(times, m, t_wait):
    """Event-by-event serial link: partition k starts at max(ready_k, link free)."""
    out = []
    for row in times:
        free = -np.inf
        for r in np.sort(row):
            free = max(r, free) + m
        out.append(free - row.max() + t_wait)
    return np.array(out)


def test_monte_carlo_matches_event_simulation():
    osu = load_osu(INTERNODE, "quartz")
    dist = stats.norm(0.1, 2e-4)
    sizes = [1 * MB, 32 * MB]
    res = pm.simulate_partitioned(osu, 6, sizes, dist, replicas=300, seed=3, t_wait_s=1e-5)
    times = dist.rvs(size=(300, 6), random_state=np.random.default_rng(3))
    for row, size in zip(res.itertuples(), sizes):
        m = pm.message_time_s(osu, size / 6)
        brute = _brute_force_elapsed(times, m, 1e-5)
        assert row.mc_elapsed_s == pytest.approx(brute.mean(), rel=1e-12)
        assert row.mc_bandwidth_mean_Bps == pytest.approx(np.mean(size / brute), rel=1e-12)
        assert row.mc_messages_overlapped == pytest.approx(6 - (brute.mean() - 1e-5) / m)


def test_monte_carlo_limits():
    m = 405 * US
    # Identical thread times: all N messages go after the join.
    res = pm.simulate_partitioned(EXAMPLE_LINK, 4, [16 * MB], np.array([0.1]), replicas=50)
    assert res.mc_elapsed_s[0] == pytest.approx(4 * m)
    assert res.mc_messages_overlapped[0] == pytest.approx(0)
    # Times 1 s apart (>> m): only the copies of the maximum queue after the last thread,
    # so E[elapsed] = m * E[number of draws equal to the max], enumerated exactly.
    values = np.array([0.0, 1.0, 2.0, 3.0])
    outcomes = np.array(np.meshgrid(*[values] * 4)).reshape(4, -1).T
    ties = (outcomes == outcomes.max(axis=1, keepdims=True)).sum(axis=1)
    wide = pm.simulate_partitioned(EXAMPLE_LINK, 4, [16 * MB], values, replicas=20000, seed=1)
    assert wide.mc_elapsed_s[0] == pytest.approx(m * ties.mean(), rel=0.02)


def test_monte_carlo_is_seeded():
    d = stats.norm(0.1, 1e-3)
    a = pm.simulate_partitioned(EXAMPLE_LINK, 8, [1e6, 1e8], d, replicas=500, seed=11)
    b = pm.simulate_partitioned(EXAMPLE_LINK, 8, [1e6, 1e8], d, replicas=500, seed=11)
    pd.testing.assert_frame_equal(a, b)


def test_named_distributions_have_requested_moments():
    for name in pm.DISTRIBUTIONS:
        d = pm.thread_time_distribution(0.1, 2e-3, name)
        assert d.mean() == pytest.approx(0.1, rel=1e-9), name
        assert d.std() == pytest.approx(2e-3, rel=1e-6), name


# ------------------------------------------------------------------- OSU tables


def test_reference_csv_values_and_units():
    t = read_reference_csv(INTERNODE, "lassen")
    row = t[t.size_bytes == 1024].iloc[0]
    assert row.latency_s == pytest.approx(1.91e-6)
    assert row.bandwidth_Bps == pytest.approx(2439.89e6)


def test_interpolation_is_log_log_and_clamped():
    osu = load_osu(INTERNODE, "lassen")
    # Geometric midpoint of 1024 and 2048 gets the geometric mean of their values.
    mid = np.sqrt(1024 * 2048)
    assert osu.latency_s(mid) == pytest.approx(np.sqrt(1.91e-6 * 2.70e-6))
    assert osu.bandwidth_Bps(mid) == pytest.approx(np.sqrt(2439.89e6 * 3843.35e6))
    assert osu.bandwidth_Bps(1e9) == pytest.approx(13891.20e6)
    assert osu.latency_s(0.5) == pytest.approx(1.09e-6)


def test_osu_text_output_equals_reference(tmp_path):
    ref = read_reference_csv(INTERNODE, "quartz")
    lat = tmp_path / "osu_latency.txt"
    bw = tmp_path / "osu_bw.txt"
    lat.write_text(
        "# OSU MPI Latency Test v5.8\n# Size          Latency (us)\n"
        + "".join(f"{int(s):<20d}{v / US:.2f}\n" for s, v in zip(ref.size_bytes, ref.latency_s))
    )
    bw.write_text(
        "# OSU MPI Bandwidth Test v5.8\n# Size      Bandwidth (MB/s)\n"
        + "".join(f"{int(s):<20d}{v / MB:.2f}\n" for s, v in zip(ref.size_bytes, ref.bandwidth_Bps))
    )
    table = load_osu([lat, bw]).table
    assert np.allclose(table.latency_s, ref.latency_s)
    assert np.allclose(table.bandwidth_Bps, ref.bandwidth_Bps)
    only_lat = load_osu([lat])
    with pytest.raises(InputError, match="bandwidth_Bps"):
        only_lat.bandwidth_Bps(100)


# ------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "call",
    [
        lambda: pm.model_partitioned(EXAMPLE_LINK, 0, [1e6], 0.1, variability=0.1),
        lambda: pm.model_partitioned(EXAMPLE_LINK, 4, [-1], 0.1, variability=0.1),
        lambda: pm.model_partitioned(EXAMPLE_LINK, 4, [1e6], 0.1),
        lambda: pm.model_partitioned(EXAMPLE_LINK, 4, [1e6], 0.1, variability=0.1, sigma_s=1e-3),
        lambda: pm.model_partitioned(EXAMPLE_LINK, 4, [1e6], -0.1, variability=0.1),
        lambda: pm.model_partitioned(EXAMPLE_LINK, 4, [1e6], 0.1, variability=0.1, t_wait_s=-1),
        lambda: pm.thread_time_distribution(0.1, 1e-3, "cauchy"),
        lambda: pm.simulate_partitioned(EXAMPLE_LINK, 4, [1e6], stats.norm(), replicas=0),
        lambda: pm.simulate_partitioned(EXAMPLE_LINK, 4, [1e6], np.array([0.1, np.nan])),
        lambda: pm.ConstantLink(1e-6, 0.0),
        lambda: pm.link_from_alpha_beta(1e-6, -1.0),
    ],
)
def test_bad_model_input(call):
    with pytest.raises(InputError):
        call()


def test_bad_osu_files(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_osu(tmp_path / "none.csv")
    with pytest.raises(InputError, match="summit_latency_us"):
        load_osu(INTERNODE, "summit")
    bad = tmp_path / "bad.csv"
    bad.write_text("size_bytes,x_latency_us,x_bandwidth_MBps\n1,abc,3\n")
    with pytest.raises(InputError, match="x_latency_us|latency_s"):
        load_osu(bad)
    neg = tmp_path / "neg.csv"
    neg.write_text("size_bytes,x_latency_us,x_bandwidth_MBps\n1,1.0,-3\n")
    with pytest.raises(InputError, match="positive"):
        load_osu(neg)
    txt = tmp_path / "osu.txt"
    txt.write_text("# OSU MPI Latency Test\n# Size  Latency (us)\n8 1.0\n16 oops\n")
    with pytest.raises(InputError, match="line 4"):
        read_osu_text(txt)
    txt.write_text("1 2\n")
    with pytest.raises(InputError, match="header"):
        read_osu_text(txt)


# ------------------------------------------------------------------- CLI


def test_cli_json_side_by_side(capsys):
    rc = main(
        [
            "model",
            "partitioned",
            "--latency",
            "5e-6",
            "--bandwidth",
            "1e10",
            "--threads",
            "4",
            "--compute",
            "0.1",
            "--variability",
            "0.1",
            "--sizes",
            "16MB",
            "--monte-carlo",
            "--replicas",
            "200",
            "--json",
        ]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    row = out["rows"][0]
    assert row["size_bytes"] == 16_000_000
    assert row["model_elapsed_s"] == pytest.approx(405e-6)
    assert row["single_elapsed_s"] == pytest.approx(1605e-6)
    assert row["mc_elapsed_s"] >= 405e-6
    assert out["parameters"]["sigma_s"] == pytest.approx(1e-3)


def test_cli_table_default_sweep(capsys):
    rc = main(
        [
            "model",
            "partitioned",
            "--osu",
            INTERNODE,
            "--machine",
            "lassen",
            "--threads",
            "20",
            "--compute",
            "0.1",
            "--sigma",
            "1e-3",
        ]
    )
    assert rc == 0
    lines = capsys.readouterr().out.strip().splitlines()
    # printed tables write bandwidth with its unit (docs/conventions.md); the sweep is bench's
    assert "model_bandwidth_Bps" in lines[1] and "single_bandwidth_Bps" in lines[1]
    assert "B/s" in lines[2] and "e+" not in lines[2]
    assert len(lines) == 2 + len(default_sizes())


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--osu", INTERNODE], "--machine"),
        (["--latency", "5e-6"], "both"),
        (["--latency", "5e-6", "--bandwidth", "1e10", "--sizes", "12parsecs"], "--sizes"),
        (["--latency", "5e-6", "--bandwidth", "1e10", "--samples", "/no/such.csv"], "no such file"),
    ],
)
def test_cli_bad_input_exit_2(capsys, argv, needle):
    rc = main(
        [
            "model",
            "partitioned",
            "--threads",
            "4",
            "--compute",
            "0.1",
            "--variability",
            "0.1",
            *argv,
        ]
    )
    assert rc == 2
    assert needle in capsys.readouterr().err


def test_cli_machine_model_link(tmp_path, capsys):
    from commscope.models.message_time import message_seconds
    from commscope.models.machine_model import bluewaters_machine_model, save_machine_model

    path = tmp_path / "bw.json"
    save_machine_model(bluewaters_machine_model(), path)
    rc = main(
        [
            "model",
            "partitioned",
            "--machine-model",
            str(path),
            "--threads",
            "8",
            "--compute",
            "0.01",
            "--sigma",
            "1e-4",
            "--sizes",
            "1MiB",
            "--json",
        ]
    )
    assert rc == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert row["single_elapsed_s"] == pytest.approx(
        message_seconds(bluewaters_machine_model(), 2**20, "inter-node")
    )


def test_cli_huge_replicas_refused_naming_the_limit(capsys):
    assert (
        main(
            [
                "model",
                "partitioned",
                "--latency",
                "5e-6",
                "--bandwidth",
                "1e10",
                "--threads",
                "64",
                "--compute",
                "0.1",
                "--variability",
                "0.1",
                "--sizes",
                "16MB",
                "--monte-carlo",
                "--replicas",
                str(10**10),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "--replicas" in err and "64 threads" in err and "limit" in err
    assert "refused when its arrays would exceed" in _help(capsys, "model", "partitioned")


def _help(capsys, *command):
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    return " ".join(capsys.readouterr().out.split())
