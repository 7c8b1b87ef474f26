"""The job guard: a tiny parent for an MPI launcher that never outlives commscope.

``python -m commscope.jobguard PARENT_PID GRACE_S -- mpiexec ...`` runs the launcher
as its child and ends the whole job, launcher and every rank, when

* it receives SIGTERM, SIGINT or SIGHUP (commscope forwards its own signals), or
* commscope dies, even by SIGKILL: the kernel then sends the guard SIGTERM
  (``PR_SET_PDEATHSIG``), and a parent pid that changed means it is already gone.

Why a separate process: MPI launchers put ranks out of reach of a process-group kill
(Open MPI gives every rank its own group, MPICH's hydra a new session per proxy and
rank), and a SIGKILLed prterun leaves its ranks running.  The guard registers as a
*child subreaper*, so every rank stays its descendant even when its launcher dies;
ending the job means SIGTERM to the whole descendant tree (the launcher gets the
chance to stop its ranks cleanly), then SIGKILL to what is left after ``GRACE_S``.
A second signal skips the grace period.

At the end it removes the job's own temporary directory (``COMMSCOPE_JOB_TMPDIR``, the
launcher's TMPDIR), which a SIGKILLed commscope could not.

Exit status: the launcher's, or 128 + signal when the guard ended the job.
Linux only (prctl and /proc); elsewhere the launcher runs as a plain child.
Imports are kept to the standard library's smallest pieces: it starts per job.
"""

import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _prctl(option, value):
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def descendants(root):
    """Pids of every live descendant of ``root`` (from /proc; empty if unavailable)."""
    children = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue  # exited meanwhile
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if fields[0] == b"Z":
            continue  # zombies are dead; reaping them is the parent's business
        children.setdefault(int(fields[1]), []).append(int(name))
    found, todo = [], [root]
    while todo:
        for pid in children.get(todo.pop(), ()):
            found.append(pid)
            todo.append(pid)
    return found


def _signal_all(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _reap():
    """Collect every exited child (orphaned ranks become ours as subreaper)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _stop_requested():
    """A stop signal pending right now (they are blocked and collected synchronously)."""
    return signal.sigtimedwait(STOP_SIGNALS, 0) is not None


def end_tree(grace_s, hurry=_stop_requested):
    """SIGTERM every descendant, SIGKILL survivors after ``grace_s``; wait until none is left."""
    me = os.getpid()
    _signal_all(descendants(me), signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while True:
        _reap()
        alive = descendants(me)
        if not alive:
            return
        if time.monotonic() >= deadline or hurry():
            deadline = 0.0
            _signal_all(alive, signal.SIGKILL)
        time.sleep(0.02)


def _remove_session():
    """The job's own TMPDIR (launch.run_job), once nothing of the job runs: a commscope
    that was SIGKILLed cannot remove it itself."""
    session = os.environ.get("COMMSCOPE_JOB_TMPDIR")
    if session:
        import shutil

        shutil.rmtree(session, ignore_errors=True)


def main(argv):
    parent, grace_s = int(argv[0]), float(argv[1])
    command = argv[3:] if argv[2] == "--" else argv[2:]
    # Signals are blocked and taken with sigtimedwait: no handler can race the fork.
    watched = (*STOP_SIGNALS, signal.SIGCHLD)
    # A user's LD_PRELOAD library loads here too: SIGCHLD ignored (or SA_NOCLDWAIT)
    # would reap the launcher before waitpid sees its status (interrupts.default_sigchld).
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_BLOCK, watched)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # commscope died before PDEATHSIG was armed
        return 128 + signal.SIGTERM
    try:
        child = os.fork()
    except OSError as exc:
        print(f"commscope jobguard: cannot fork: {exc}", file=sys.stderr)
        return 127
    if child == 0:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, watched)
        _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)  # the launcher, should the guard be killed
        try:
            os.execvp(command[0], command)
        except OSError as exc:
            print(f"commscope: cannot start {command[0]}: {exc}", file=sys.stderr)
        os._exit(127)
    status = None
    while status is None:
        info = signal.sigtimedwait(watched, 1.0)
        if info is not None and info.si_signo in STOP_SIGNALS:
            end_tree(grace_s)
            _remove_session()
            return 128 + info.si_signo
        pid, wstatus = os.waitpid(child, os.WNOHANG)
        if pid == child:
            status = wstatus
    end_tree(grace_s)  # stragglers of a launcher that exited on its own
    _remove_session()
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
