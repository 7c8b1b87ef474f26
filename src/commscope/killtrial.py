"""Kill a running commscope command and watch its job go (fault injection for launch.py).

Used by tests/test_faults_signals.py and scripts/measure_stop.py: start a command in its
own session, send one signal at a chosen moment, then poll /proc until no process that
mentions the command's unique marker (its run directory) is left.
"""

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass


def long_pingpong_argv(mpi_name, runs, name="pp"):
    """A ``bench pingpong`` that outlasts every kill moment: 16 s on a quiet 2-core machine
    (a 1 MiB sweep of 20000 repetitions ended before a kill at 2.2 s there)."""
    return [
        sys.executable,
        "-m",
        "commscope",
        "bench",
        "pingpong",
        "--mpi",
        mpi_name,
        "-m",
        "1:4M",
        "-i",
        "100000",
        "-I",
        "10000",
        "--quiet",
        "--runs",
        str(runs),
        "--name",
        name,
    ]


def processes_mentioning(marker):
    """Pids of live (non-zombie) processes whose command line contains ``marker``."""
    found, needle = [], marker.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                cmdline = fh.read()
            with open(f"/proc/{name}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in cmdline and state != b"Z":
            found.append(int(name))
    return found


@dataclass
class KillTrial:
    signal: str
    delay_s: float
    exit_code: int
    job_started: bool  # ranks existed when the signal was sent
    survivors: int  # processes still alive after ``wait_s``
    gone_after_s: float  # from the signal to the last process of the job gone


def kill_at(
    argv, marker, sig, delay_s, *, env=None, wait_s=15.0, job_marker=None, after_ranks_start=False
):
    """Run ``argv``, send ``sig`` after ``delay_s``, and count what survives.

    ``after_ranks_start``: count ``delay_s`` from the moment the ranks exist (the
    command's start-up takes seconds on a loaded machine).

    ``marker`` must appear in the command line of every process of the job (the run
    directory does: it is passed to every rank as ``--out``).  ``job_marker`` tells
    the ranks from the commscope process itself (default: ``cs_``).
    """
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    if after_ranks_start:
        deadline = time.monotonic() + 120
        while (
            not _job_pids(marker, job_marker or "cs_")
            and time.monotonic() < deadline
            and proc.poll() is None
        ):
            time.sleep(0.02)
    time.sleep(delay_s)
    job_started = bool(_job_pids(marker, job_marker or "cs_"))
    proc.send_signal(sig)
    t0 = time.monotonic()
    deadline = t0 + wait_s
    gone_after = None
    while time.monotonic() < deadline:
        alive = [p for p in processes_mentioning(marker) if p != proc.pid]
        if not alive:
            gone_after = time.monotonic() - t0
            break
        time.sleep(0.01)
    try:
        code = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()
        code = proc.wait()
    survivors = [p for p in processes_mentioning(marker) if p != proc.pid]
    for pid in survivors:  # leave the machine clean for the next trial
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return KillTrial(
        signal.Signals(sig).name,
        delay_s,
        code,
        job_started,
        len(survivors),
        gone_after if gone_after is not None else float("nan"),
    )


def _job_pids(marker, job_marker):
    pids = []
    for pid in processes_mentioning(marker):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if job_marker.encode() in fh.read():
                    pids.append(pid)
        except OSError:
            pass
    return pids
