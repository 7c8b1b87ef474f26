"""libcommscope's settings and counter sets, from native/profiler/settings.def.

The same table generates the library's parser (cs_settings.h); from it come here the
--counters choices and default, the defaults `commscope profile` shows, the environment
it gives the ranks (every name checked against the table) and the docs' table.
"""

from dataclasses import dataclass

from ..collect.native_tables import rows
from ..errors import InputError


@dataclass(frozen=True)
class Setting:
    env: str  # COMMSCOPE_<name>
    type: str  # LONG, SECONDS, TEXT or SETS
    default: object
    minimum: int
    description: str


def settings():
    """{COMMSCOPE_NAME: Setting} in table order."""
    return {
        f"COMMSCOPE_{n}": Setting(f"COMMSCOPE_{n}", t, d, m, desc)
        for n, t, d, m, desc in rows("settings", "CS_SETTING")
    }


def default(env):
    """The library's default of setting ``env`` (COMMSCOPE_...)."""
    return settings()[env].default


def counter_sets():
    """[(name, in_default, option, description)] of every set, in bit order."""
    return [(n, bool(d), o, desc) for n, d, o, desc in rows("settings", "CS_COUNTER_SET")]


#: Sets --counters chooses (the others have an option of their own: --trace).
COUNTER_SETS = {n: desc for n, _, opt, desc in counter_sets() if opt == "--counters"}
#: Every --counters set the library's "default" holds: time in MPI is what a first
#: profile is read for.  ``all`` is the same; a comma list leaves sets out.
DEFAULT_SETS = tuple(n for n, d, opt, _ in counter_sets() if d and opt == "--counters")


def parse_counter_sets(text):
    """'default', 'all' or a comma-separated list of set names -> tuple in table order."""
    text = (text or "default").strip()
    if text in ("default", "all"):
        return DEFAULT_SETS
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in COUNTER_SETS]
    if unknown or not names:
        raise InputError(
            "--counters",
            None,
            f"unknown counter set {', '.join(unknown) or repr(text)} "
            f"(default, all, or some of {', '.join(COUNTER_SETS)})",
        )
    return tuple(n for n in COUNTER_SETS if n in names)


def chosen_sets(run_meta):
    """The counter sets a profile run chose, from its one record: meta.json's parameters
    (``counters``, plus ``trace`` when it traced).  Every reader asks here; the node
    files do not repeat it (node.<n>.json up to schema version 4 did)."""
    p = run_meta.get("parameters") or {}
    counters = p.get("counters") or ()
    if isinstance(counters, str):  # hand-made meta: the --counters text
        counters = parse_counter_sets(counters)
    return tuple(counters) + (("trace",) if p.get("trace") else ())


def default_snapshot_interval():
    """The library's snapshot interval, as --snapshot-every takes it ("500ms")."""
    return f"{default('COMMSCOPE_SNAPSHOT_MS')}ms"


def library_env(**values):
    """{COMMSCOPE_NAME: str(value)} for ``NAME=value`` (names as the table spells them);
    a name the table lacks is a programming error, caught here rather than ignored by
    the library."""
    known = settings()
    env = {}
    for name, value in values.items():
        key = f"COMMSCOPE_{name}"
        if key not in known:
            raise KeyError(f"{key} is not in native/profiler/settings.def")
        env[key] = str(value)
    return env


def settings_markdown():
    """The docs' tables: every setting, then every counter set."""
    out = [
        "| variable | value | default | what |",
        "|---|---|---|---|",
    ]
    kinds = {
        "LONG": lambda s: f"whole number >= {s.minimum}",
        "SECONDS": lambda s: "seconds > 0",
        "TEXT": lambda s: "text",
        "SETS": lambda s: "set names, `default`, `all` or `calls`",
    }
    for s in settings().values():
        shown = f"`{s.default}`" if s.default != "" else "(none)"
        out.append(f"| `{s.env}` | {kinds[s.type](s)} | {shown} | {s.description} |")
    out += ["", "| counter set | in `default` | chosen by | what |", "|---|---|---|---|"]
    for name, dflt, option, desc in counter_sets():
        out.append(f"| `{name}` | {'yes' if dflt else 'no'} | `{option}` | {desc} |")
    return "\n".join(out) + "\n"
