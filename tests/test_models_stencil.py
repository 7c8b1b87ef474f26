"""Stencil message counts (paper 002 Sec. 3): closed forms vs lattice enumeration, paper numbers."""

import itertools
import json

import numpy as np
import pytest

from commscope.cli import main
from commscope.errors import InputError
from commscope.models.stencil import (
    linear_z,
    messages_per_thread,
    parse_decomposition,
    per_thread_table,
    stencil_counts,
)


def enumerate_lattice(dims, neighbourhood):
    """Brute force: walk every thread and every stencil direction; count those leaving the process.

    Returns (per-thread receive counts, M_t, T_r, T_s) where T_s counts the distinct
    outside thread positions (threads of neighbouring processes) reached.
    """
    nd = len(dims)
    if neighbourhood == "face":
        dirs = [tuple(s if i == d else 0 for i in range(nd)) for d in range(nd) for s in (-1, 1)]
    else:
        dirs = [d for d in itertools.product((-1, 0, 1), repeat=nd) if any(d)]
    per, senders = {}, set()
    for pos in itertools.product(*(range(n) for n in dims)):
        count = 0
        for d in dirs:
            q = tuple(p + e for p, e in zip(pos, d))
            if any(x < 0 or x >= n for x, n in zip(q, dims)):
                count += 1
                senders.add(q)
        per[pos] = count
    return per, sum(per.values()), sum(1 for c in per.values() if c), len(senders)


@pytest.mark.parametrize(
    "points,nd,hood", [("5", 2, "face"), ("9", 2, "moore"), ("7", 3, "face"), ("27", 3, "moore")]
)
def test_closed_forms_match_enumeration_for_all_small_decompositions(points, nd, hood):
    for dims in itertools.product(range(1, 7), repeat=nd):
        per, m_t, t_r, t_s = enumerate_lattice(dims, hood)
        c = stencil_counts(points, dims)
        assert (c.M_t, c.T_r, c.T_s) == (m_t, t_r, t_s), dims
        arr = messages_per_thread(points, dims)
        assert arr.shape == dims
        assert all(arr[pos] == n for pos, n in per.items()), dims


def test_printed_tr_forms_need_two_threads_per_dimension():
    # Eq. 3 (9pt) T_r = 2Lx + 2Ly - 4 and eq. 7 (27pt) agree with the corrected form for L_d >= 2 ...
    for lx, ly in itertools.product(range(2, 7), repeat=2):
        assert stencil_counts("9", (lx, ly)).T_r == 2 * lx + 2 * ly - 4
    for dims in itertools.product(range(2, 6), repeat=3):
        pairs = sum(a * b for a, b in itertools.combinations(dims, 2))
        assert stencil_counts("27", dims).T_r == 2 * pairs - 4 * sum(dims) + 8
    # ... but not at L_d = 1: a 1x5 strip has 5 boundary threads, eq. 3 gives 8.
    assert stencil_counts("9", (1, 5)).T_r == 5
    assert 2 * 1 + 2 * 5 - 4 == 8


def test_paper_section_4_2_counts():
    # 32x32, 5 point: 124 receiving threads, 128 messages.
    c = stencil_counts("5", (32, 32))
    assert (c.T_r, c.M_t) == (124, 128)
    # 8x8x4: T_r = 184; 7pt M_t = 256; 27pt M_t = 2072, T_s = 344 (Fig. 3 caption).
    assert stencil_counts("7", (8, 8, 4)).T_r == 184
    assert stencil_counts("7", (8, 8, 4)).M_t == 256
    assert (stencil_counts("27", (8, 8, 4)).M_t, stencil_counts("27", (8, 8, 4)).T_s) == (2072, 344)
    # 4x4x4: 56 boundary threads; 7pt M_t = 96; 27pt M_t = 728.
    assert stencil_counts("7", (4, 4, 4)).T_r == 56
    assert stencil_counts("7", (4, 4, 4)).M_t == 96
    assert stencil_counts("27", (4, 4, 4)).M_t == 728
    # Linear z (Fig. 4 caption): 7pt T_s = 514 at 1x1x128; 27pt T_s = 274 at 1x1x32.
    assert stencil_counts("7", linear_z(128)).T_s == 514
    assert stencil_counts("27", linear_z(32)).T_s == 274
    # 1x1x256: T_r = 256; 7pt M_t is 4N + 2 = 1026, not the printed 576 (seeds README).
    c = stencil_counts("7", linear_z(256))
    assert c.T_r == 256
    assert c.M_t == 4 * 256 + 2 == 1026


def test_naive_decomposition_k_messages_per_thread():
    # Fig. 1: 9pt -> 8 and 27pt -> 26 messages per thread, and the 512-per-thread case.
    for k, dims in [(8, (8, 8)), (26, (4, 4, 4)), (512, (8,))]:
        c = stencil_counts("naive", dims, k=k)
        threads = int(np.prod(dims))
        assert (c.M_t, c.T_r, c.T_s, c.threads) == (k * threads, threads, threads, threads)
        assert (messages_per_thread("naive", dims, k=k) == k).all()


def test_per_thread_table_sums_to_total():
    rows = per_thread_table("27", (3, 2, 4))
    assert len(rows) == 24
    assert sum(r["messages"] for r in rows) == stencil_counts("27", (3, 2, 4)).M_t
    # corner thread of a 3x2x4 block: 26 directions minus the 2*2*2 - 1 = 7 that stay inside
    corner = next(r for r in rows if r["thread"] == (0, 0, 0))
    assert corner["messages"] == 26 - 7 == enumerate_lattice((3, 2, 4), "moore")[0][(0, 0, 0)]


@pytest.mark.parametrize(
    "points,dims,k",
    [
        ("9", (0, 4), None),
        ("27", (8, 8), None),
        ("5", (4, 4, 4), None),
        ("11", (4, 4), None),
        ("naive", (4, 4), None),
        ("naive", (4, 4), 0),
        ("27", (4, 4, 4), 8),
        ("9", (2.5, 4), None),
        ("7", (1, 2, 3, 4), None),
    ],
)
def test_bad_arguments_raise_input_error(points, dims, k):
    with pytest.raises(InputError):
        stencil_counts(points, dims, k)


@pytest.mark.parametrize("text", ["0x4", "8x", "axb", "", "-1x2"])
def test_bad_decomposition_strings(text):
    with pytest.raises(InputError):
        parse_decomposition(text)


def test_parse_decomposition():
    assert parse_decomposition("8x8x4") == (8, 8, 4)
    assert parse_decomposition("32X32") == (32, 32)


def test_cli_json_and_table(capsys):
    assert main(["model", "stencil", "--points", "27", "--decomp", "8x8x4,4x4x4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(r["decomposition"], r["M_t"], r["T_r"], r["T_s"]) for r in out] == [
        ("8x8x4", stencil_counts("27", (8, 8, 4)).M_t, 184, 344),
        ("4x4x4", 728, 56, stencil_counts("27", (4, 4, 4)).T_s),
    ]
    assert main(["model", "stencil", "--points", "9", "--decomp", "3x3", "--per-thread"]) == 0
    text = capsys.readouterr().out
    assert "M_t" in text and "1x1" in text  # centre thread listed
    assert (
        main(["model", "stencil", "--points", "naive", "--k", "512", "--decomp", "8x8", "--json"])
        == 0
    )
    assert json.loads(capsys.readouterr().out)[0]["M_t"] == 512 * 64


def test_cli_per_thread_json_matches_library(capsys):
    assert (
        main(["model", "stencil", "--points", "5", "--decomp", "3x1", "--per-thread", "--json"])
        == 0
    )
    rows = json.loads(capsys.readouterr().out)[0]["per_thread"]
    assert {r["thread"]: r["messages"] for r in rows} == {"0x0": 3, "1x0": 2, "2x0": 3}


@pytest.mark.parametrize(
    "argv",
    [
        ["--points", "9", "--decomp", "0x4"],
        ["--points", "27", "--decomp", "8x8"],
        ["--points", "naive", "--decomp", "8x8"],
    ],
)
def test_cli_bad_arguments_exit_2(argv, capsys):
    assert main(["model", "stencil", *argv]) == 2
    assert "commscope: error:" in capsys.readouterr().err
