"""Fault injection: stop signals at random moments of real ping-pong jobs.

Every trial runs ``commscope bench pingpong`` (2 real ranks), sends SIGINT, SIGTERM,
SIGHUP or SIGKILL at a random moment (before, while and after the ranks start), and
counts the processes of the job still alive afterwards: there must be none.
"""

import json
import random
import signal

import pytest

from commscope.killtrial import kill_at, long_pingpong_argv
from commscope.runs import open_run

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL)


@pytest.mark.mpi
@pytest.mark.parametrize("which", ["openmpi", "mpich"])
def test_random_kills_leave_no_process(which, tmp_path, request):
    request.getfixturevalue("default_mpi" if which == "openmpi" else "mpich_mpi")
    rng = random.Random(14)
    trials = []
    for i, sig in enumerate(SIGNALS * 2):
        runs = tmp_path / f"runs{i}"
        running = i >= len(SIGNALS)  # first round: any moment; second: ranks running
        delay = rng.uniform(0, 1.5) if running else rng.uniform(0.3, 3.0)
        trial = kill_at(
            long_pingpong_argv(which, runs), str(runs), sig, delay, after_ranks_start=running
        )
        trials.append(trial)
        assert trial.survivors == 0, trial
        if sig != signal.SIGKILL and not (runs / "pp").exists():
            # stopped while Python was still starting: nothing was launched
            assert trial.exit_code in (128 + sig, -sig), trial
        elif sig != signal.SIGKILL:
            assert trial.exit_code == 128 + sig, trial
            meta = json.loads((runs / "pp" / "meta.json").read_text())
            if trial.job_started:
                assert meta["status"] == "interrupted", trial
                assert meta["interrupted"]["signal"] == signal.Signals(sig).name
        else:
            assert trial.exit_code == -signal.SIGKILL
            if (runs / "pp" / "meta.json").exists():
                # the reader sees through the stale "running"
                assert open_run(runs / "pp").status in ("interrupted", "complete")
    assert all(t.job_started for t in trials[len(SIGNALS) :])
