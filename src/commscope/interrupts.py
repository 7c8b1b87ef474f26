"""Stop signals: SIGINT, SIGTERM and SIGHUP (Ctrl-C, ``timeout``/``scancel``, a closed terminal).

The CLI turns each into :class:`~commscope.errors.Interrupted` so every run directory
being written is marked interrupted on the way out; while a job runs, the launcher
routes them to its own handler, which ends the job first.
"""

import contextlib
import signal
import threading

from .errors import Interrupted

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def default_sigchld():
    """SIGCHLD back to its default in this process: a user's LD_PRELOAD library (which
    commscope's own process loads too) that ignores it, or reaps children in a handler,
    would take the exit status of the job (``waitpid`` then fails with ECHILD and the
    job seems to exit 0).  The launcher and the ranks inherit the default."""
    if threading.current_thread() is threading.main_thread():
        if signal.getsignal(signal.SIGCHLD) != signal.SIG_DFL:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)


def raise_interrupted(signum, frame):
    raise Interrupted(signum)


@contextlib.contextmanager
def stop_signals_to(handler):
    """Route the stop signals to ``handler`` inside the block; restore them afterwards.

    Only the main thread may set handlers; elsewhere signals keep their meaning.  A
    handler installed outside Python (a user's LD_PRELOAD library: ``signal.signal``
    returns None for it) cannot be put back from Python; the default is restored.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, signal.SIG_DFL if old is None else old)
