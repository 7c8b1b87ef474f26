"""The report says in words where a model is far from the measurement."""

from commscope.report.gaps import model_gap_note


def test_the_worst_gap_beyond_the_factor_is_said():
    rows = [{"n": 1, "m": 1e-6, "p": 1e-6}, {"n": 10000, "m": 1e-2, "p": 1e-3},
            {"n": 100, "m": 3e-5, "p": 1e-5}]
    note = model_gap_note(rows, "m", "p", lambda r: f"n = {r['n']}", "max-rate model alone")
    assert "n = 10000" in note and "10x above" in note and "max-rate model alone" in note


def test_close_or_missing_models_say_nothing():
    rows = [{"m": 1.0, "p": 1.5}, {"m": 2.0, "p": None}, {"m": 1.0, "p": float("nan")}]
    assert model_gap_note(rows, "m", "p", str, "model") is None
    assert "below" in model_gap_note([{"m": 1.0, "p": 5.0}], "m", "p", lambda r: "x", "model")
