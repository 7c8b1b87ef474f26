"""Point-to-point models (paper 004) and machine models: Table 1 by hand, brute force, bad input."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from commscope.paths import DATA_DIR
from commscope.cli import main
from commscope.errors import InputError
from commscope.models.p2p import (
    contention_link_bytes,
    contention_time,
    hvpingpong_time,
    maxrate_time,
    MissingTerm,
    postal_time,
    predict_pattern,
    queue_search_time,
    validate_messages,
)
from commscope.models.message_time import message_seconds, message_time
from commscope.models.machine_model import (
    FitQuality,
    bluewaters_machine_model,
    load_machine_model,
    save_machine_model,
)

REFERENCE_CSV = DATA_DIR / "bluewaters_node_aware_maxrate.csv"
BW = bluewaters_machine_model()


# ---------------------------------------------------------------- Table 1 by hand


@pytest.mark.parametrize(
    "size,locality,ppn,expected",
    [
        # inter-node rendezvous, 16 ppn: injection-limited, R_N = 6.6e9 < 16 * 2.9e9
        (1_000_000, "inter-node", 16, 3.0e-06 + 16 * 1_000_000 / min(6.6e09, 16 * 2.9e09)),
        # inter-node rendezvous, 2 ppn: 2 * 2.9e9 = 5.8e9 < R_N, so R_b limits
        (1_000_000, "inter-node", 2, 3.0e-06 + 2 * 1_000_000 / min(6.6e09, 2 * 2.9e09)),
        # inter-node eager (R_N = inf) reduces to postal whatever ppn
        (4000, "inter-node", 16, 7.0e-06 + 4000 / 7.5e08),
        (100, "inter-node", 16, 2.3e-06 + 100 / 1.3e09),
        # on-node messages are not injected: postal model, ppn ignored
        (64, "intra-socket", 16, 4.4e-07 + 64 / 2.2e09),
        (1000, "intra-node", 16, 1.2e-06 + 1000 / 9.6e08),
        (2**20, "cross-socket", 16, 2.5e-06 + 2**20 / 6.2e09),
        (2**20, "intra-socket", 1, 1.7e-06 + 2**20 / 6.2e09),
    ],
)
def test_node_aware_maxrate_reproduces_table1(size, locality, ppn, expected):
    assert message_seconds(BW, size, locality, ppn) == pytest.approx(expected, rel=1e-12)


def test_breakdown_reports_protocol_and_limit():
    t = message_time(BW, [499, 500, 7999, 8000, 10**6], "inter-node", ppn=16).frame()
    assert list(t["protocol"]) == ["short", "eager", "eager", "rendezvous", "rendezvous"]
    assert list(t["limited_by"]) == ["R_b", "R_b", "R_b", "R_N", "R_N"]
    assert np.allclose(t["time_s"], t["alpha_s"] + t["transport_s"])
    assert t["rate_Bps"].iloc[-1] == pytest.approx(6.6e9 / 16)


def test_postal_and_maxrate_forms():
    assert postal_time(2e-6, 1 / 1e9, 1000) == pytest.approx(2e-6 + 1000 / 1e9)
    # R_N = inf or ppn R_b below R_N: max-rate equals postal
    assert maxrate_time(2e-6, 1 / 1e9, 1000, ppn=8) == pytest.approx(2e-6 + 1000 / 1e9)
    assert maxrate_time(2e-6, 1 / 1e9, 1000, ppn=4, R_N_Bps=5e9) == pytest.approx(2e-6 + 1000 / 1e9)
    # injection-limited: 8 * 1000 bytes at 5e9
    assert maxrate_time(2e-6, 1 / 1e9, 1000, ppn=8, R_N_Bps=5e9) == pytest.approx(2e-6 + 8000 / 5e9)
    v = maxrate_time(1e-6, 1e-9, np.array([0, 10, 100]), ppn=2)
    assert v.shape == (3,) and v[0] == pytest.approx(1e-6)


def test_machine_model_csv_equals_builtin_bluewaters():
    csv = load_machine_model(REFERENCE_CSV)
    assert set(csv.params) == set(BW.params)  # "intra-node" -> cross-socket, "rend" -> rendezvous
    for key, p in BW.params.items():
        q = csv.params[key]
        assert (q.alpha_s, q.Rb_Bps, q.R_N_Bps) == pytest.approx(
            (p.alpha_s, p.Rb_Bps, p.R_N_Bps), rel=1e-12
        )
    assert (
        csv.gamma_s is None and csv.delta_s_per_byte is None
    )  # only the published machine model has them
    assert (BW.gamma_s, BW.delta_s_per_byte) == (8.4e-9, 1.0e-10)
    custom = load_machine_model(
        REFERENCE_CSV, breakpoints={"short_max_bytes": 64, "eager_max_bytes": 4096}
    )
    assert custom.protocol_of(65, "inter-node") == "eager"
    assert custom.protocol_of(4097, "intra-socket") == "rendezvous"


# ---------------------------------------------------------------- queue search


def brute_force_searched(n, reversed_order):
    """Entries inspected when n messages arrive at a posted-receive queue, linear search."""
    queue = list(range(n))  # receives posted with tags 0..n-1
    arrivals = reversed(range(n)) if reversed_order else range(n)
    searched = 0
    for tag in arrivals:
        i = queue.index(tag)
        searched += i + 1
        queue.pop(i)
    return searched


@pytest.mark.parametrize("n", [1, 2, 7, 50])
def test_queue_search_forms_against_brute_force(n):
    g = 8.4e-9
    assert queue_search_time(g, n, "triangular") == pytest.approx(g * brute_force_searched(n, True))
    assert queue_search_time(g, n, "ordered") == pytest.approx(g * brute_force_searched(n, False))
    assert queue_search_time(g, n, "upper") == pytest.approx(g * n * n)
    assert queue_search_time(g, n, "upper") >= queue_search_time(g, n, "triangular")
    with pytest.raises(InputError):
        queue_search_time(g, n, "quadratic")


def test_contention_eq7():
    # l = 2 h^3 b ppn with h = 2 hops, b = 1000 bytes, 16 ppn; T_c = delta l (eqs. 5, 7)
    assert contention_link_bytes(2, 1000, 16) == 2 * 2**3 * 1000 * 16
    assert contention_time(1.0e-10, contention_link_bytes(2, 1000, 16)) == pytest.approx(
        1.0e-10 * 256000
    )


def test_hvpingpong_model():
    n = np.array([1, 10, 100])
    ordered = hvpingpong_time(BW, n, 1024, "intra-socket", "ordered")
    reversed_ = hvpingpong_time(BW, n, 1024, "intra-socket", "reversed")
    one = 5.3e-07 + 1024 / 3.2e09  # eager intra-socket, Table 1
    assert ordered["maxrate_s"].to_numpy() == pytest.approx(n * one)
    assert reversed_["total_s"].to_numpy() == pytest.approx(n * one + 8.4e-9 * n**2)
    assert (reversed_["total_s"] - ordered["total_s"]).to_numpy() == pytest.approx(
        8.4e-9 * (n**2 - n)
    )
    tri = hvpingpong_time(BW, n, 1024, "intra-socket", "reversed", reversed_search="triangular")
    assert tri["queue_s"].to_numpy() == pytest.approx(8.4e-9 * n * (n + 1) / 2)
    with pytest.raises(InputError):
        hvpingpong_time(BW, n, 1024, "intra-socket", "sideways")
    no_gamma = load_machine_model(REFERENCE_CSV)
    with pytest.raises(InputError):
        hvpingpong_time(no_gamma, n, 1024, "intra-socket")


# ---------------------------------------------------------------- patterns

PATTERN = pd.DataFrame(
    {
        "rank": [0, 0, 1, 2],
        "peer_locality": ["inter-node", "intra-socket", "intra-node", "inter-node"],
        "size_bytes": [8000, 100, 1_000_000, 200],
        "count": [10, 5, 2, 1],
    }
)


def test_predict_pattern_per_rank_terms():
    r = predict_pattern(BW, PATTERN, ppn=16, hops=2)
    per = r.per_rank.set_index("rank")
    # rank 0: 10 inter-node rendezvous (8000 > 7999) + 5 intra-socket short
    m0 = 10 * (3.0e-06 + 16 * 8000 / min(6.6e09, 16 * 2.9e09)) + 5 * (4.4e-07 + 100 / 2.2e09)
    m1 = 2 * (2.5e-06 + 1_000_000 / 6.2e09)
    m2 = 1 * (2.3e-06 + 200 / 1.3e09)
    assert per["maxrate_s"].to_numpy() == pytest.approx([m0, m1, m2])
    assert per["queue_s"].to_numpy() == pytest.approx([8.4e-9 * 15**2, 8.4e-9 * 2**2, 8.4e-9 * 1])
    b_avg = (80000 + 0 + 200) / 3  # mean inter-node bytes per rank
    tc = 1.0e-10 * 2 * 2**3 * b_avg * 16
    assert per["contention_s"].to_numpy() == pytest.approx([tc, 0.0, tc])
    totals = per["maxrate_s"] + per["queue_s"] + per["contention_s"]
    assert r.max_total_s == pytest.approx(totals.max())
    assert r.max_rank == int(totals.idxmax())
    assert r.term_max["maxrate_s"] == pytest.approx(max(m0, m1, m2))
    assert r.notes == []


def test_predict_pattern_missing_terms_name_their_benchmark():
    """A term the machine model lacks is an error naming it and the benchmark that measures
    it, never a silent 0 (issue 26); a term left out on purpose leaves a note."""
    csv = load_machine_model(REFERENCE_CSV)  # no gamma, no delta
    with pytest.raises(MissingTerm) as exc:
        predict_pattern(csv, PATTERN.drop(columns="count"))
    assert exc.value.field == "gamma_s" and "commscope bench hvpingpong" in str(exc.value)
    r = predict_pattern(csv, PATTERN.drop(columns="count"), queue_search=None)
    assert (r.per_rank["queue_s"] == 0).all() and (r.per_rank["contention_s"] == 0).all()
    assert len(r.notes) == 2 and "--queue none" in r.notes[0] and "--hops" in r.notes[1]
    assert r.per_rank["n_messages"].tolist() == [2, 1, 1]  # count defaults to 1
    with pytest.raises(MissingTerm) as exc:
        predict_pattern(csv, PATTERN, queue_search=None, hops=2)
    assert exc.value.field == "delta_s_per_byte" and "--contention" in str(exc.value)
    # no inter-node bytes: delta is not needed, hops or not
    on_node = PATTERN[PATTERN["peer_locality"] != "inter-node"]
    assert predict_pattern(csv, on_node, queue_search=None, hops=2).term_max["contention_s"] == 0


def test_missing_parameters_and_gamma_name_their_benchmark():
    intra = bluewaters_machine_model()
    intra.params = {k: v for k, v in intra.params.items() if k[1] == "intra-socket"}
    intra.breakpoints = {"intra-socket": intra.breakpoints["intra-socket"]}
    with pytest.raises(MissingTerm) as exc:
        message_seconds(intra, 1024, "inter-node")
    assert "inter-node" in exc.value.field and "commscope bench pingpong" in str(exc.value)
    with pytest.raises(MissingTerm) as exc:
        hvpingpong_time(load_machine_model(REFERENCE_CSV), [1, 10], 8, "intra-socket")
    assert exc.value.field == "gamma_s" and "commscope bench hvpingpong" in str(exc.value)


def test_cli_missing_term_exits_2_naming_term_and_benchmark(tmp_path, capsys):
    csv = tmp_path / "m.csv"
    PATTERN.to_csv(csv, index=False)
    argv = ["model", "pattern", "--machine-model", str(REFERENCE_CSV), "--messages", str(csv)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "gamma_s" in err and "commscope bench hvpingpong" in err
    assert main([*argv, "--queue", "none"]) == 0
    assert "queue-search term left out" in capsys.readouterr().err
    assert main([*argv, "--queue", "none", "--hops", "2"]) == 2
    err = capsys.readouterr().err
    assert "delta_s_per_byte" in err and "commscope bench hvpingpong --contention" in err


@pytest.mark.parametrize(
    "bad",
    [
        PATTERN.iloc[0:0],
        PATTERN.drop(columns="size_bytes"),
        PATTERN.assign(size_bytes=[1, -5, 2, 3]),
        PATTERN.assign(count=[1, 0, 2, 3]),
        PATTERN.assign(peer_locality=["inter-node", "moon", "intra-node", "inter-node"]),
        PATTERN.assign(rank=["a", 0, 1, 2]),
        PATTERN.assign(size_bytes=[1.5, 2, 3, 4]),
    ],
)
def test_bad_patterns(bad):
    with pytest.raises(InputError):
        validate_messages(bad)


def test_bad_model_arguments():
    with pytest.raises(InputError):
        message_seconds(BW, -1, "inter-node")
    with pytest.raises(InputError):
        message_seconds(BW, 10, "inter-galactic")
    with pytest.raises(InputError):
        message_seconds(BW, 10, "inter-node", ppn=0)
    with pytest.raises(InputError):
        predict_pattern(BW, PATTERN, hops=-1)


# ---------------------------------------------------------------- machine-model files


def test_machine_model_round_trip(tmp_path):
    machine_model = bluewaters_machine_model()
    machine_model.params[("eager", "inter-node")].fit = FitQuality(
        40, 0.05, 0.01, {512: 0.01, 4096: -0.05}
    )
    machine_model.mpi_eager_limits = {"btl_tcp_eager_limit": 65536}
    path = save_machine_model(machine_model, tmp_path / "p.json")
    back = load_machine_model(path)
    assert back.to_dict() == machine_model.to_dict()
    assert back.params[("rendezvous", "inter-node")].R_N_Bps == 6.6e9
    assert math.isinf(back.params[("short", "inter-node")].R_N_Bps)
    assert back.params[("eager", "inter-node")].fit.rel_error_by_size == {512: 0.01, 4096: -0.05}


def test_save_refuses_to_overwrite(tmp_path):
    path = tmp_path / "p.json"
    path.write_text("precious")
    with pytest.raises(InputError):
        save_machine_model(BW, path)
    assert path.read_text() == "precious"
    save_machine_model(BW, path, overwrite=True)
    assert load_machine_model(path).gamma_s == 8.4e-9


def _write(tmp_path, data):
    path = tmp_path / "bad.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def _good():
    return bluewaters_machine_model().to_dict()


def _with(mutator):
    d = _good()
    mutator(d)
    return d


@pytest.mark.parametrize(
    "data,field",
    [
        (json.dumps(_good())[:200], None),  # truncated
        (_with(lambda d: d.update(schema_version=2)), "schema_version"),
        (_with(lambda d: d.update(schema="other")), "schema"),
        (_with(lambda d: d.pop("parameters")), "parameters"),
        (_with(lambda d: d["parameters"][0].pop("alpha_s")), "parameters[0].alpha_s"),
        (
            _with(lambda d: d["parameters"][1].update(beta_s_per_byte=-1e-9)),
            "parameters[1].beta_s_per_byte",
        ),
        (_with(lambda d: d["parameters"][2].update(alpha_s="fast")), "parameters[2].alpha_s"),
        (_with(lambda d: d["parameters"][0].update(locality="moon")), "parameters[0].locality"),
        (_with(lambda d: d.update(gamma_s=-8.4e-9)), "gamma_s"),
        (
            _with(lambda d: d["breakpoints"]["inter-node"].update(short_max_bytes=9000)),
            "breakpoints.inter-node",
        ),
        (
            _with(
                lambda d: d.update(
                    parameters=[p for p in d["parameters"] if p["protocol"] != "short"]
                )
            ),
            "parameters (short/intra-socket)",
        ),
    ],
)
def test_bad_machine_model_files_name_file_and_field(tmp_path, data, field):
    path = _write(tmp_path, data)
    with pytest.raises(InputError) as exc:
        load_machine_model(path)
    assert exc.value.source == str(path)
    assert exc.value.field == field


def test_bad_csv_machine_model_and_missing_file(tmp_path):
    bad = tmp_path / "t.csv"
    bad.write_text("protocol,locality,alpha_s,Rb_Bps\nshort,intra-socket,1e-6,1e9\n")
    with pytest.raises(InputError) as exc:
        load_machine_model(bad)
    assert exc.value.field == "RN_Bps"
    with pytest.raises(InputError):
        load_machine_model(tmp_path / "nope.json")


# ---------------------------------------------------------------- CLI


def test_cli_p2p_json_matches_library(capsys):
    assert (
        main(
            [
                "model",
                "p2p",
                "--machine-model",
                "bluewaters",
                "--sizes",
                "100,1024:4096",
                "--locality",
                "inter-node",
                "--ppn",
                "16",
                "--json",
            ]
        )
        == 0
    )
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["size_bytes"] for r in rows] == [100, 1024, 2048, 4096]
    assert [r["time_s"] for r in rows] == pytest.approx(
        list(message_seconds(BW, np.array([100, 1024, 2048, 4096]), "inter-node", 16))
    )


def test_cli_p2p_with_csv_machine_model_table(capsys):
    assert (
        main(
            [
                "model",
                "p2p",
                "--machine-model",
                str(REFERENCE_CSV),
                "--sizes",
                "65536",
                "--locality",
                "intra-node",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    # no injection limit on the node (Table 1): the pair's bandwidth R_b sets the time
    assert "rendezvous" in out and "R_b" in out and "injection_s" in out


def test_cli_pattern(tmp_path, capsys):
    csv = tmp_path / "m.csv"
    PATTERN.to_csv(csv, index=False)
    assert (
        main(
            [
                "model",
                "pattern",
                "--machine-model",
                "bluewaters",
                "--messages",
                str(csv),
                "--ppn",
                "16",
                "--hops",
                "2",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["max_total_s"] == pytest.approx(
        predict_pattern(BW, PATTERN, ppn=16, hops=2).max_total_s
    )
    assert main(["model", "pattern", "--machine-model", "bluewaters", "--messages", str(csv)]) == 0
    captured = capsys.readouterr()
    assert "max_total_s" in captured.out and "contention term omitted" in captured.err


@pytest.mark.parametrize(
    "argv",
    [
        ["p2p", "--machine-model", "bluewaters", "--sizes", "12q", "--locality", "inter-node"],
        ["p2p", "--machine-model", "bluewaters", "--sizes", "64:8", "--locality", "inter-node"],
        ["p2p", "--machine-model", "bluewaters", "--sizes", "8", "--locality", "mars"],
        [
            "p2p",
            "--machine-model",
            "bluewaters",
            "--sizes",
            "8",
            "--locality",
            "inter-node",
            "--ppn",
            "0",
        ],
        [
            "p2p",
            "--machine-model",
            "/nonexistent/machine-model.json",
            "--sizes",
            "8",
            "--locality",
            "inter-node",
        ],
        ["pattern", "--machine-model", "bluewaters", "--messages", "/nonexistent.csv"],
    ],
)
def test_cli_bad_arguments_exit_2(argv, capsys):
    assert main(["model", *argv]) == 2
    assert "commscope: error:" in capsys.readouterr().err


def test_cli_pattern_stacked_plot(tmp_path, capsys):
    csv = tmp_path / "m.csv"
    PATTERN.to_csv(csv, index=False)
    png = tmp_path / "stacked.png"
    argv = [
        "model",
        "pattern",
        "--machine-model",
        "bluewaters",
        "--messages",
        str(csv),
        "--ppn",
        "16",
        "--hops",
        "2",
        "--plot",
        str(png),
    ]
    assert main(argv) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    before = png.stat().st_mtime_ns
    assert main(argv) == 2  # never overwritten
    assert png.stat().st_mtime_ns == before


def test_every_machine_model_option_takes_the_bluewaters_keyword(capsys):
    assert (
        main(
            [
                "model",
                "partitioned",
                "--machine-model",
                "bluewaters",
                "--locality",
                "inter-node",
                "--threads",
                "4",
                "--compute",
                "0.01",
                "--variability",
                "0.1",
                "--sizes",
                "1MiB",
                "--json",
            ]
        )
        == 0
    )
    assert "1048576" in capsys.readouterr().out
    assert load_machine_model("BlueWaters").gamma_s == BW.gamma_s
