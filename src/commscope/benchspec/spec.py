"""What a benchmark is, declared once: its C program, options, tables and resume rule.

One :class:`Benchmark` per native benchmark (``commscope/benchspec/<name>.py``) is the
single table that the CLI options (``commands/bench.py``), the C program's arguments
(:meth:`Benchmark.native_args`), the C program's option parser (the header
:mod:`commscope.benchspec.cgen` generates for ``native/bench/<name>.c``, parsed by
``native/common/cs_options.c``), the options' documentation (docs/benchmarks-options.md)
and the run directory's table checks (:mod:`commscope.kinds`) are made from.

Pure data and small pure functions only: this module sits below :mod:`commscope.kinds`.
"""

from dataclasses import dataclass, field
from typing import Callable, Optional

from ..errors import InputError
from ..units import parse_size, parse_size_list, parse_size_range

#: Option kinds, and the C type each becomes in the generated options struct.
C_TYPES = {
    "int": "long",
    "float": "double",
    "size": "long long",
    "range": "long long",  # two fields: the option's two parameters (MIN, MAX)
    "sizes": "long long",  # an array and its count (<field>_count)
    "ints": "long",  # an array and its count
    "choice": "int",  # the index of the value in ``choices``
    "choices": "int",  # an array of indices and its count
    "flag": "int",
    "text": "const char *",
}
#: Most items a list option takes (the C arrays' length).
MAX_ITEMS = 64


@dataclass(frozen=True)
class Option:
    """One option of a benchmark, as the CLI, the C program and the docs know it.

    ``params`` are the meta.json parameters it sets (one, or two for a range: MIN, MAX),
    except for an ``output`` option (e.g. ``--json``: the command's own, passed to the
    driver's ``show_<name>``, never to the run);
    ``default`` is given as a user would type it; ``native``: passed to the C program
    (False for options that only shape the launch, such as ``--pairs``).
    """

    name: str  # long option, without "--"
    kind: str  # a key of C_TYPES
    help: str
    default: object = None
    short: Optional[str] = None
    params: tuple = ()  # default: the name with "-" -> "_"
    minimum: Optional[float] = None
    choices: tuple = ()
    unit: str = ""  # for the docs: "bytes", "s", ...
    metavar: Optional[str] = None
    native: bool = True
    cli: bool = True  # False: set by commscope only (e.g. the point a resume starts from)
    required: bool = True  # False: runs made before the option existed lack it
    max_items: int = MAX_ITEMS  # list kinds: most items (the C array's length)
    # True: shapes what the command prints after the run (--json, a summary's threshold),
    # passed to the driver's show_<name>, not a parameter
    output: bool = False
    recorded: Optional[tuple] = None  # meta.json's names when not ``params`` (() : none)

    def __post_init__(self):
        if self.kind not in C_TYPES:
            raise ValueError(f"option --{self.name}: unknown kind {self.kind!r}")
        if not self.params:
            object.__setattr__(self, "params", (self.name.replace("-", "_"),))

    @property
    def flag(self):
        return f"--{self.name}"

    def parse(self, text):
        """The parameter value(s) of ``text`` as typed on a command line: a dict."""
        value = _PARSERS[self.kind](self, text)
        params = dict(zip(self.params, value if self.kind == "range" else (value,)))
        self.check(params)
        return params

    def check(self, params):
        """Refuse values below ``minimum`` and lists longer than ``max_items`` (from a
        command line or a Python caller)."""
        for p in self.params:
            v = params.get(p)
            if isinstance(v, (list, tuple)) and len(v) > self.max_items:
                raise InputError(self.flag, None, f"at most {self.max_items} values, got {len(v)}")
        if self.minimum is None:
            return
        for p in self.params:
            v = params.get(p)
            for item in v if isinstance(v, (list, tuple)) else (v,):
                if isinstance(item, (int, float)) and item < self.minimum:
                    raise InputError(
                        self.flag, None, f"must be at least {self.minimum:g}, got {item}"
                    )

    def defaults(self):
        """The parameters of the default (none for an option without one)."""
        if self.kind == "flag":
            return {self.params[0]: bool(self.default)}
        if self.default is None:
            return {self.params[0]: None}
        return self.parse(self.default)

    def argv(self, params):
        """This option on the C program's command line for ``params`` (a list)."""
        values = [params.get(p) for p in self.params]
        if self.kind == "flag":
            return [self.flag] if values[0] else []
        if values[0] is None:
            return []
        if self.kind == "range":
            text = f"{values[0]}:{values[1]}"
        elif self.kind in ("sizes", "ints", "choices"):
            text = ",".join(str(v) for v in values[0])
        elif self.kind == "text":
            text = values[0]  # as it is: a path, or a file the driver writes (RunFile)
        else:
            text = str(values[0])
        return [self.flag, text]


def _number(kind):
    def parse(opt, text):
        try:
            return kind(text)
        except (TypeError, ValueError):
            raise InputError(opt.flag, None, f"not a {kind.__name__}: {text!r}") from None

    return parse


def _choice(opt, text):
    if text not in opt.choices:
        raise InputError(opt.flag, None, f"unknown value {text!r} ({', '.join(opt.choices)})")
    return text


def _choices(opt, text):
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if not items:
        raise InputError(opt.flag, None, f"no values in {text!r} ({', '.join(opt.choices)})")
    return [_choice(opt, t) for t in items]


def _ints(opt, text):
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if not items:
        raise InputError(opt.flag, None, f"no numbers in {text!r}")
    return [_number(int)(opt, t) for t in items]


_PARSERS = {
    "int": _number(int),
    "float": _number(float),
    "size": lambda opt, text: parse_size(text, opt.flag),
    "range": lambda opt, text: parse_size_range(text, opt.flag),
    "sizes": lambda opt, text: parse_size_list(text, opt.flag),
    "ints": _ints,
    "choice": _choice,
    "choices": _choices,
    "flag": lambda opt, text: bool(text),
    "text": lambda opt, text: str(text),
}


@dataclass(frozen=True)
class Check:
    """A rule between columns that readers rely on: ``bad(df)`` marks the rows that break
    it (columns it names may be absent: a stopped run has no derived ones yet)."""

    column: str  # the column an error names
    rule: str  # what must hold, in words
    bad: Callable


@dataclass
class Points:
    """The measurement points a benchmark plans, so a stopped run knows what is complete.

    ``planned(parameters)`` lists ``(key, rows)``: the values of the ``key`` columns
    of one point, in measuring order, and how many rows of ``table`` it has when done.
    """

    table: str
    key: tuple
    unit: str  # plural noun: "sizes", "message counts"
    planned: Callable


@dataclass(frozen=True)
class Table:
    """A table of the run directory: columns (name -> dtype kind, see commscope.kinds),
    the columns that identify a row, the checks between columns and the columns whose
    values come from a fixed list."""

    columns: dict
    key: tuple
    checks: tuple = ()
    values: dict = field(default_factory=dict)
    # columns the driver derives once the job has ended (required of a complete run only)
    derived: dict = field(default_factory=dict)
    # columns typed when present, absent from runs of an earlier commscope
    optional: dict = field(default_factory=dict)


@dataclass(frozen=True)
class StudyRun:
    """One run the default study (``commscope study``) makes of a benchmark.

    ``phase``: "fit" runs come first and the machine model is fitted from them;
    "held-out" runs come right after the fit and are never fitted from (a model's test
    on a run it has not seen); "measure" runs come last.  ``says``: the progress line
    printed before it (none: it belongs to the line before).
    """

    name: str  # the run directory's name in <study>/runs/
    params: dict  # the run function's keywords
    phase: str = "measure"
    says: str = ""


@dataclass(frozen=True)
class Benchmark:
    """One native benchmark: ``native/bench/<program>.c`` and everything said about it.

    ``resume_from(parameters, first_key)``: the parameters that measure from the point
    ``first_key`` on (None: the kind restarts instead of resuming); ``ranks(parameters)``:
    how many ranks a run needs; ``report_section``: the module of
    commscope.report.sections that renders it; ``constants``: numbers the C program and
    Python share (``#define CS_<NAME>_<KEY>`` in the generated header).
    """

    name: str
    summary: str  # one line: the CLI's help
    description: str
    options: tuple
    tables: dict
    points: Optional[Points] = None
    resume_from: Optional[Callable] = None
    ranks: Optional[Callable] = None
    examples: str = ""
    report_section: str = ""
    constants: dict = field(default_factory=dict)
    rules: Optional[Callable] = None  # rules(parameters): raise InputError past the minima
    # JSON Schema {"properties": ..., "required": [...]} of parameters beyond the options
    more_parameters: Optional[dict] = None
    # the whole JSON Schema of meta.json's parameters, when the driver records names of
    # its own rather than the options' (then more_parameters is not used)
    parameters_schema: Optional[dict] = None
    # JSON Schema "properties" of meta.json's fields beyond "parameters" the driver writes
    more_meta: Optional[dict] = None
    program: str = ""  # default: the name
    # from_cli(parameters): the command line's parameters as the run function's keywords
    # (e.g. two options that set one parameter); raise InputError on a bad combination
    from_cli: Optional[Callable] = None
    # study(quick, pairs) -> [StudyRun]: what the default study measures (None: nothing);
    # study_order: where among the benchmarks (runs of one phase go in this order)
    study: Optional[Callable] = None
    study_order: int = 50

    def __post_init__(self):
        if not self.program:
            object.__setattr__(self, "program", self.name)

    def option(self, name):
        return next(o for o in self.options if o.name == name)

    def defaults(self):
        """Every parameter's default, as meta.json records it."""
        out = {}
        for o in self.options:
            if not o.output:
                out.update(o.defaults())
        return out

    def check(self, params):
        """Refuse parameters the C program would refuse, before anything is launched."""
        for o in self.options:
            o.check(params)
        if self.rules is not None:
            self.rules(params)

    def native_args(self, params):
        """The C program's options for ``params`` (every native option, spelled out)."""
        return [a for o in self.options if o.native and not o.output for a in o.argv(params)]
