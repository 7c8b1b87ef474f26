"""Errors that the CLI turns into one clear message and exit status 2, and warnings."""

import sys


def warn(message):
    """One line on stderr, ``commscope: warning: MESSAGE``: the form of every warning."""
    print(f"commscope: warning: {message}", file=sys.stderr)


class InputError(Exception):
    """Bad user input: a malformed file, an unknown schema version, a nonsense parameter.

    ``source`` names the file (or option) and ``field`` the offending field, so the
    message a user sees says exactly where to look.
    """

    def __init__(self, source, field, message):
        self.source = str(source) if source is not None else None
        self.field = field
        self.message = message
        super().__init__(str(self))

    def __str__(self):
        where = ": ".join(str(p) for p in (self.source, self.field) if p)
        return f"{where}: {self.message}" if where else self.message


class EnvironmentProblem(Exception):
    """Something missing on this machine (no MPI, a failed build, a launch that died)."""


class Interrupted(KeyboardInterrupt):
    """commscope was told to stop (SIGINT, SIGTERM, SIGHUP); exit status 128 + signal.

    A KeyboardInterrupt, so ``except Exception`` never swallows it.
    """

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum

    @property
    def signal_name(self):
        import signal

        return signal.Signals(self.signum).name
