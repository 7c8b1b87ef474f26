"""Damaged runs of every kind through every command that reads them: exit 0 with sane
output, or exit 2 with one error naming the damaged file; never a traceback or a hang.

The quick pass of tests/fuzzkit.py (the long one: scripts/fuzz_runs.py, totals in
docs/robustness.md).  Hypothesis draws mutants of real small runs (every benchmark kind,
a profile run with trace and snapshots, a `profile --ompt` run, a machine model): one
file damaged, an absurd option value, or an output already there; every command reading
that kind runs on it in a forked child with a time limit.  COMMSCOPE_MUTANTS sets the
number of mutants (8 here, each through all its commands: about a minute).
"""

import os
import shutil

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import fuzzkit

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

MUTANTS = int(os.environ.get("COMMSCOPE_MUTANTS", "8"))
LIMIT_S = 90  # a report of a damaged profile run takes up to 30 s on a loaded machine


def _explain(cases):
    return "\n".join(
        f"{c.command} on {c.mutant}: {c.outcome}: {c.signature or c.detail}"
        for c in cases
        if c.outcome not in fuzzkit.GOOD
    )


@settings(
    max_examples=MUTANTS,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: a case says what it did
    suppress_health_check=list(HealthCheck),
)
@given(data=st.data())
def test_damaged_runs_exit_0_or_2_naming_the_file(fuzz_originals, tmp_path_factory, data):
    work = tmp_path_factory.mktemp("mutant")
    mutant = fuzzkit.draw_mutant(fuzzkit.HypothesisDraw(data), fuzz_originals, work)
    cases = fuzzkit.run_mutant(mutant, limit_s=LIMIT_S)
    assert cases and all(c.outcome in fuzzkit.GOOD for c in cases), _explain(cases)
    shutil.rmtree(work)


class Scripted(fuzzkit.Draw):
    """Answers given in advance (a mutant chosen by hand, through the same code)."""

    def __init__(self, **answers):
        self.answers = answers

    def choice(self, options, label=None):
        want = self.answers[label]
        options = list(options)
        return next(
            o for o in options if want == o or (hasattr(o, "name") and str(o).endswith(str(want)))
        )


@pytest.mark.parametrize("victim", ["raw/trace.0.1.bin", "peers.parquet", "raw/summary.json"])
@pytest.mark.parametrize("special", ["fifo", "fifo elsewhere", "/dev/zero"])
def test_pipes_and_devices_are_refused_by_name_never_read(
    fuzz_originals, tmp_path, victim, special
):
    """model matching hung on a trace file that was a named pipe (issue 25)."""
    d = Scripted(kind="profile", mutation="file", file=victim, how="special", special=special)
    mutant = fuzzkit.draw_mutant(d, fuzz_originals, tmp_path)
    cases = fuzzkit.run_mutant(mutant, limit_s=LIMIT_S)
    assert len(cases) >= 8
    assert all(c.outcome == "exit 2 naming" for c in cases), _explain(cases) or [
        (c.command, c.outcome, c.detail) for c in cases
    ]


def test_the_runner_kills_a_command_over_its_time_limit(fuzz_originals, tmp_path):
    """A hang fails the case: the child (and its process group) is killed at the limit."""
    r = fuzzkit.run_forked(
        ["report", str(fuzz_originals["profile"]), "-o", str(tmp_path / "r.html")],
        tmp_path,
        limit_s=0.2,
    )
    assert r.status is None and r.seconds < 10


def test_forked_and_real_entry_point_agree(fuzz_originals, tmp_path):
    """The forked child runs what `python -m commscope` runs: same outcome, same message."""
    for seed in (3, 11):
        results = []
        for runner, where in ((fuzzkit.run_forked, "f"), (fuzzkit.run_subprocess, "s")):
            mutant = fuzzkit.draw_mutant(fuzzkit.Draw(seed), fuzz_originals, tmp_path / where)
            mutant.commands = [c for c in mutant.commands if c[0] != "report"][
                :2
            ] or mutant.commands[:1]
            results.append(
                [
                    (c.command, c.outcome, c.detail.replace(str(tmp_path / where), ""))
                    for c in fuzzkit.run_mutant(mutant, runner=runner, limit_s=LIMIT_S)
                ]
            )
            shutil.rmtree(tmp_path / where)
        assert results[0] == results[1]
