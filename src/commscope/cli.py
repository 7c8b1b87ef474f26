"""The ``commscope`` command line: a thin shell over the library.

Every module in ``commscope.commands`` defines ``register(registry)`` and adds its
commands; this file only wires them together, so a new command never edits it.
Command handlers take the parsed ``args`` and return an exit status.
"""

import argparse
import difflib
import importlib
import pkgutil
import re
import signal
import sys

from . import __version__
from .errors import EnvironmentProblem, InputError
from .interrupts import default_sigchld, raise_interrupted, stop_signals_to

GROUP_HELP = {
    "bench": "run an MPI benchmark into a run directory",
    "model": "evaluate the papers' models (tables or --json)",
    "stats": "statistics: extreme values, bootstrap, thread arrivals",
    "predict": "predict from measured runs with the models",
}


START_HERE = """\
start here:
  commscope profile -n 4 -- ./my_app                   # profile an MPI program: counters, time in MPI
  commscope report runs/<time>-profile -o report.html  # report it: one HTML file with the figures
  commscope study -o studies/first                     # run the study: every benchmark, fit, report

Every command has --help with examples; commscope doctor checks the MPI and this machine.
"""


class Parser(argparse.ArgumentParser):
    """argparse with commscope's errors: a mistake in a command's options shows that
    command's usage (not the top level's), and a mistyped option or command gets its
    close match ("did you mean --trace?")."""

    def error(self, message):
        super().error(message + _close_match(self, message))

    def parse_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:  # an option no (sub)command knows: said by the command it was given to
            where = _command_parser(self, args)
            where.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed


def _command_parser(parser, argv):
    """The parser of the (sub)command named by the words of ``argv`` (``stats bootstrap``)."""
    words = iter(argv)
    while True:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        name = next((w for w in words if sub is not None and w in sub.choices), None)
        if name is None:
            return parser
        parser = sub.choices[name]


def _close_match(parser, message):
    """`` (did you mean X?)`` for a mistyped command, choice or option, else ""."""
    m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if m:
        choices = re.findall(r"'([^']*)'", m.group(2))
        found = difflib.get_close_matches(m.group(1), choices, n=1, cutoff=0.6)
        return f" (did you mean {found[0]}?)" if found else ""
    m = re.match(r"unrecognized arguments: (.*)", message)
    if m:
        known = [
            o
            for a in parser._actions
            for o in a.option_strings
            if o.startswith("--") and a.help != argparse.SUPPRESS
        ]
        guesses = []
        for word in m.group(1).split():
            if word.startswith("--"):
                found = difflib.get_close_matches(word.split("=", 1)[0], known, n=1, cutoff=0.6)
                if found:
                    guesses.append(found[0])
        return f" (did you mean {' or '.join(dict.fromkeys(guesses))}?)" if guesses else ""
    return ""


class Registry:
    """Hands out parsers to command modules; groups (``bench``, ``model`` ...) are shared."""

    def __init__(self, parser):
        self._sub = parser.add_subparsers(dest="command", metavar="COMMAND")
        self._sub.required = True
        self._groups = {}

    def command(self, name, help, description=None, **kw):
        return self._sub.add_parser(
            name,
            help=help,
            description=description or help,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            **kw,
        )

    def group_command(self, group, name, help, description=None, **kw):
        if group not in self._groups:
            gp = self.command(group, GROUP_HELP.get(group, group))
            sub = gp.add_subparsers(dest="subcommand", metavar="KIND")
            sub.required = True
            self._groups[group] = sub
        return self._groups[group].add_parser(
            name,
            help=help,
            description=description or help,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            **kw,
        )


def build_parser():
    parser = Parser(
        prog="commscope",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=START_HERE + "\nMeasure, instrument and model MPI communication in "
        "multithreaded codes.",
    )
    parser.add_argument("--version", action="version", version=f"commscope {__version__}")
    registry = Registry(parser)
    from . import commands

    for mod in sorted(m.name for m in pkgutil.iter_modules(commands.__path__)):
        module = importlib.import_module(f"{commands.__name__}.{mod}")
        if hasattr(module, "register"):
            module.register(registry)
    return parser


def main(argv=None):
    from .launch import set_aside_user_preload

    default_sigchld()  # a user's LD_PRELOAD library is loaded here too
    set_aside_user_preload()
    with stop_signals_to(raise_interrupted):
        return _dispatch(argv)


def _one_voice(message, category, filename, lineno, file=None, line=None):
    """warnings.showwarning: a warning (a library's too) is one ``commscope: warning:``
    line, never Python's form with its source line."""
    from .errors import warn

    text = str(message).strip().splitlines()
    warn(text[0] if text else category.__name__)


def _dispatch(argv):
    import warnings

    warnings.showwarning = _one_voice
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"commscope: error: {_as_option(exc, parser, argv)}", file=sys.stderr)
        return 2
    except EnvironmentProblem as exc:
        print(f"commscope: {exc}", file=sys.stderr)
        return 3
    except BrokenPipeError:  # output piped into head & co.
        sys.stderr.close()
        return 0
    except OSError as exc:  # unreadable input, unwritable output, full disk
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"commscope: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # Interrupted (a signal) or Ctrl-C outside a job
        signum = getattr(exc, "signum", signal.SIGINT)
        print(
            f"commscope: interrupted by {signal.Signals(signum).name}; samples already "
            "written are kept",
            file=sys.stderr,
        )
        return 128 + signum


def _as_option(exc, parser, argv):
    """A library check names its parameter (``target_ranks``); the user gave an option
    (``--target-ranks``): say the option's name. The command's parser is found by the
    words of ``argv`` (``stats bootstrap``)."""
    if exc.field not in (None, exc.source):
        return exc
    words = iter(argv)
    while True:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        name = next((w for w in words if sub is not None and w in sub.choices), None)
        if name is None:
            break
        parser = sub.choices[name]
    option = next(
        (
            max(a.option_strings, key=len)
            for a in parser._actions
            if a.dest == exc.source and a.option_strings
        ),
        None,
    )
    return InputError(option, None, exc.message) if option else exc


if __name__ == "__main__":
    sys.exit(main())
