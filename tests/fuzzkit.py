"""Damaged inputs through every reader: the one harness of the mutation tests and of
``scripts/fuzz_runs.py`` (the long pass).

* :func:`make_originals` makes small real runs of every kind once (the benchmark kinds,
  a profile run with ``--trace``, ``--callsites``, snapshots and every counter, a ``profile --ompt`` run of
  an OpenMP program, a ``bench threads --ompt`` run) and fits a machine model; the
  commands that read them (:func:`commands`) include ``diagnose`` (text, ``--json`` and
  ``--what-if balance``) and ``top --callsites``.
* :func:`draw_mutant` copies one of them and damages it: one file of it changed (JSON
  fields changed, removed, renamed, retyped or wrapped; Parquet columns dropped, renamed,
  retyped, rows emptied; CSV headers and rows cut or changed; binary files cut or
  overwritten; any file truncated, emptied, filled with garbage, deleted, renamed,
  replaced by a named pipe, a directory, a link loop, a link to ``/dev/zero`` or to
  another file), or an absurd option value, or an output that already exists.  Choices
  come from a :class:`Draw`: hypothesis' ``data`` in the test, a seeded
  ``random.Random`` in the script, the same mutations either way.
* :class:`Runner` imports commscope and everything its commands use once, then forks a
  child per command: ``cli.main(argv)`` with stdout and stderr in files, killed (its whole
  process group) after a time limit, so a hang is a failed case and one case costs the
  command's own work, not an interpreter start.
* :func:`check` classifies one case (one damaged input through one command): ``exit 0``
  (sane output), ``exit 2 naming`` (one error line naming the damaged file or option),
  ``exit 2 not naming``, ``crash`` (a traceback, another exit status, a signal),
  ``hang``, and the invariant breaches ``insane output`` (a nan/inf token, no output),
  ``input changed`` and ``output overwritten``.
"""

import io
import json
import os
import random
import re
import select
import shutil
import signal
import stat
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from hashlib import sha256
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "tests" / "programs"

#: Values of every JSON type, and numbers out of range for any field.
WRONG_VALUES = [
    "text",
    "",
    True,
    False,
    None,
    0,
    -1,
    1.5,
    1e308,
    -1e308,
    [],
    [1, "a"],
    {},
    {"a": 1},
    "NaN",
    2**63,
]

#: A number shown to a person as if it were one (docs/conventions.md: "-" instead).
NAN_TOKEN = re.compile(r"(?<![\w.])[-+]?(nan|NaN|NAN|inf|Inf|INF|Infinity|infinity)(?![\w])")

#: Outcome classes; the first two are the only good ones.
GOOD = ("exit 0", "exit 2 naming")
CLASSES = (
    "exit 0",
    "exit 2 naming",
    "exit 2 not naming",
    "crash",
    "hang",
    "insane output",
    "silent success",
    "silent changed answer",
    "input changed",
    "output overwritten",
)
FAILURES = (
    "crash",
    "hang",
    "insane output",
    "silent success",
    "silent changed answer",
    "input changed",
    "output overwritten",
)


# ---------------------------------------------------------------------------------------
# the real runs every mutant starts from


def make_originals(root, mpi, log=print):
    """Small real runs of every kind under ``root`` (about a minute on 2 cores); returns
    {kind: path}.  Kept between calls: an existing ``root/originals.json`` is reused."""
    root = Path(root)
    index = root / "originals.json"
    if index.exists():
        made = {k: Path(v) for k, v in json.loads(index.read_text()).items()}
        if all(p.exists() for p in made.values()):
            return made
    from commscope import cli, mpi as mpimod
    from commscope.bench.bsp import run_bsp
    from commscope.bench.hvpingpong import run_hvpingpong
    from commscope.bench.mtmatch import run_mtmatch
    from commscope.bench.multirate import run_multirate
    from commscope.bench.partitioned import run_partitioned
    from commscope.bench.pingpong import run_pingpong
    from commscope.bench.threads import run_threads
    from commscope.collect import ompt

    runs = root / "runs"
    quiet = dict(echo=False, runs_root=runs)
    made = {}

    def step(kind, make):
        t0 = time.perf_counter()
        made[kind] = Path(make())
        log(f"  {kind:14s} {time.perf_counter() - t0:5.1f} s  {made[kind]}")

    # up to 16 MiB: the machine model then has a capacity regime (past 2 MiB here) to damage
    step(
        "pingpong",
        lambda: (
            run_pingpong(
                min_size=1,
                max_size=16 << 20,
                iters=20,
                warmup=2,
                large_iters=5,
                large_warmup=1,
                **quiet,
            ).path
        ),
    )
    step(
        "hvpingpong",
        lambda: run_hvpingpong(counts=[1, 10, 50], sizes=[8], iters=2, warmup=1, **quiet).path,
    )
    step("mtmatch", lambda: run_mtmatch("27", "2x1x1", None, trials=2, warmup=1, **quiet).path)
    step(
        "multirate",
        lambda: (
            run_multirate(threads=[1, 2], reps=1, iterations=5, warmup=1, window=16, **quiet).path
        ),
    )
    has_ompt = ompt.runtime_library() is not None
    step(
        "threads",
        lambda: (
            run_threads(
                ranks=2,
                threads=2,
                iterations=8,
                trials=1,
                warmup=1,
                work=1e-3,
                compute="sleep",
                ompt=has_ompt,
                **quiet,
            ).path
        ),
    )
    step(
        "partitioned",
        lambda: (
            run_partitioned(
                threads=2,
                compute_s=2e-3,
                variability=0.1,
                sizes=[1 << 16, 1 << 18],
                runs_per_size=2,
                warmup=1,
                **quiet,
            ).path
        ),
    )
    # a calibration: the machine model's partitioned terms, and their fit, to damage
    step(
        "partitioned-calibration",
        lambda: (
            run_partitioned(
                threads=2,
                compute_s=2e-3,
                calibrate=True,
                sizes=[1 << 16, 1 << 18, 1 << 20],
                runs_per_size=2,
                warmup=1,
                run_name="calibration",
                **quiet,
            ).path
        ),
    )
    step(
        "bsp",
        lambda: (
            run_bsp(
                "ftq", ranks=2, intervals=10, warmup=1, mean=1e-3, sd=1e-4, seed=3, **quiet
            ).path
        ),
    )

    def profiled(*argv):
        out, err = io.StringIO(), io.StringIO()
        from contextlib import redirect_stderr, redirect_stdout

        with redirect_stdout(out), redirect_stderr(err):
            status = cli.main(
                ["profile", "-n", "2", "--runs", str(runs / "profiles"), "--quiet", *argv]
            )
        assert status == 0, err.getvalue()
        return out.getvalue().strip().splitlines()[-1]

    exe = root / "exact_threads"
    subprocess.run(
        [mpi.mpicc, "-O2", "-g", "-pthread", str(PROGRAMS / "exact_threads.c"), "-o", str(exe)],
        check=True,
    )
    step(
        "profile",
        lambda: profiled(
            "--trace",
            "--callsites",
            "--counters",
            "all",
            "--snapshot-every",
            "20ms",
            "--",
            str(exe),
            "2",
        ),
    )
    if has_ompt:
        prog = mpimod.binary(mpi, "threads")
        step(
            "profile-ompt",
            lambda: profiled(
                "--ompt",
                "--trace",
                "--counters",
                "all",
                "--threads",
                "2",
                "--",
                str(prog),
                "-i",
                "8",
                "-x",
                "1",
                "--compute-mode",
                "sleep",
            ),
        )
    model = root / "machine-model.json"
    if not model.exists():
        _, _, err = fork_cli(
            ["fit", str(made["pingpong"]), str(made["partitioned-calibration"]), "-o", str(model)],
            root,
        )
        assert model.exists(), err
    made["machine-model"] = model
    index.write_text(json.dumps({k: str(v) for k, v in made.items()}, indent=1))
    return made


# ---------------------------------------------------------------------------------------
# the commands that read each kind

#: Options whose values :func:`draw_mutant` makes absurd, and the values it tries.
ABSURD = [
    "0",
    "-1",
    "-0",
    "nan",
    "inf",
    "-inf",
    "1e308",
    "1e-308",
    "99999999999999999999",
    "abc",
    "",
    "1,,2",
    "0x10",
    "1e9",
]


def commands(kind, target, originals, out):
    """(label, argv, output or None) of every command that reads a run of ``kind``, with
    ``target`` in its place.  ``out``: the directory outputs go to."""
    o = originals
    mm = str(o["machine-model"])
    t = str(target)
    report = ("report", ["report", t, "-o", str(out / "report.html")], out / "report.html")
    if kind == "machine-model":
        return [
            (
                "model p2p",
                [
                    "model",
                    "p2p",
                    "--machine-model",
                    t,
                    "--sizes",
                    "1K,64K",
                    "--locality",
                    "intra-socket",
                    "--json",
                ],
                None,
            ),
            (
                "predict partitioned",
                [
                    "predict",
                    "partitioned",
                    str(o["partitioned"]),
                    "--machine-model",
                    t,
                    "--model",
                    "postal",
                    "--replicas",
                    "50",
                ],
                None,
            ),
            (
                "predict partitioned calibrated",
                [
                    "predict",
                    "partitioned",
                    str(o["partitioned"]),
                    "--machine-model",
                    t,
                    "--replicas",
                    "50",
                    "--json",
                ],
                None,
            ),
            (
                "report",
                [
                    "report",
                    str(o["pingpong"]),
                    "--machine-model",
                    t,
                    "-o",
                    str(out / "report.html"),
                ],
                out / "report.html",
            ),
            *(
                [
                    (
                        "advise",
                        [
                            "advise",
                            str(o["threads"]),
                            "--machine-model",
                            t,
                            "--replicas",
                            "50",
                            "--size",
                            "64K",
                        ],
                        None,
                    )
                ]
                if "profile-ompt" in o
                else []
            ),
        ]
    model = out / "model.json"
    fit = [
        ("fit", ["fit", t, "-o", str(model)], model),
        ("fit --json", ["fit", t, "--json", "-o", str(model)], model),
    ]
    by_kind = {
        "pingpong": fit,
        "hvpingpong": [("fit", ["fit", str(o["pingpong"]), t, "-o", str(model)], model)],
        "mtmatch": [],
        "multirate": [],
        "partitioned-calibration": [
            ("fit", ["fit", str(o["pingpong"]), t, "-o", str(model)], model)
        ],
        "partitioned": [
            (
                "predict partitioned",
                [
                    "predict",
                    "partitioned",
                    t,
                    "--machine-model",
                    mm,
                    "--model",
                    "postal",
                    "--replicas",
                    "50",
                    "--json",
                ],
                None,
            )
        ],
        "bsp": [
            (
                "predict variability",
                [
                    "predict",
                    "variability",
                    t,
                    "--target-ranks",
                    "4",
                    "--replicas",
                    "200",
                    "--seed",
                    "1",
                ],
                None,
            ),
            (
                "stats bootstrap",
                [
                    "stats",
                    "bootstrap",
                    f"{t}/intervals.parquet",
                    "--target-ranks",
                    "4",
                    "--replicas",
                    "200",
                    "--seed",
                    "1",
                    "--json",
                ],
                None,
            ),
            (
                "stats gev",
                ["stats", "gev", f"{t}/maxima.parquet", "--column", "max_interval_s"],
                None,
            ),
        ],
        "threads": [
            ("stats arrivals", ["stats", "arrivals", f"{t}/compute.parquet"], None),
            (
                "stats arrivals --json",
                ["stats", "arrivals", f"{t}/compute.parquet", "--json"],
                None,
            ),
            ("advise", ["advise", t, "--replicas", "50", "--size", "64K"], None),
        ],
        "profile": [
            ("top --once", ["top", t, "--once"], None),
            ("top --json", ["top", t, "--json"], None),
            ("top --replay", ["top", t, "--replay", "--speed", "0", "--json"], None),
            ("top --callsites", ["top", t, "--callsites", "--json"], None),
            ("stats imbalance", ["stats", "imbalance", t], None),
            ("stats imbalance --json", ["stats", "imbalance", t, "--json"], None),
            ("model matching", ["model", "matching", t, "--json", "-t", "2"], None),
            (
                "export perfetto",
                ["export", t, "--format", "perfetto", "-o", str(out / "trace.json")],
                out / "trace.json",
            ),
            (
                "export otf2",
                ["export", t, "--format", "otf2", "-o", str(out / "trace.otf2")],
                out / "trace.otf2",
            ),
            # the diagnosis reads the trace (raw/trace.*.bin), the clock offsets
            # (raw/clocks.*.jsonl), the call sites and the per-function timers
            ("diagnose", ["diagnose", t], None),
            ("diagnose --json", ["diagnose", t, "--json"], None),
            ("diagnose --what-if", ["diagnose", t, "--what-if", "balance", "--json"], None),
        ],
        "profile-ompt": [
            ("top --json", ["top", t, "--json"], None),
            (
                "stats imbalance --by-region",
                ["stats", "imbalance", t, "--by-region", "--json"],
                None,
            ),
            ("stats arrivals", ["stats", "arrivals", f"{t}/threads.parquet", "--json"], None),
            ("advise", ["advise", t, "--replicas", "50", "--json"], None),
            (
                "export perfetto",
                ["export", t, "--format", "perfetto", "-o", str(out / "trace.json")],
                out / "trace.json",
            ),
            ("diagnose", ["diagnose", t], None),
        ],
    }
    # compare: the damaged run as the after side of the original (commscope compare)
    if kind in (
        "pingpong",
        "hvpingpong",
        "mtmatch",
        "multirate",
        "partitioned",
        "bsp",
        "threads",
        "profile",
        "profile-ompt",
    ):
        by_kind[kind] = by_kind[kind] + [
            ("compare", ["compare", str(o[kind]), t, "--json", "--top", "3"], None),
            (
                "compare -o",
                ["compare", str(o[kind]), t, "-o", str(out / "compare.html")],
                out / "compare.html",
            ),
        ]
    return by_kind[kind] + [report]


# ---------------------------------------------------------------------------------------
# choices: hypothesis in the test, random.Random in the script


class Draw:
    """Choices from a seeded ``random.Random``; :class:`HypothesisDraw` has the same API."""

    def __init__(self, seed):
        self.rng = random.Random(seed)

    def choice(self, options, label=None):
        return self.rng.choice(list(options))

    def integer(self, lo, hi, label=None):
        return self.rng.randint(lo, hi)

    def blob(self, lo, hi, label=None):
        return bytes(self.rng.getrandbits(8) for _ in range(self.rng.randint(lo, hi)))


class HypothesisDraw(Draw):
    def __init__(self, data):
        from hypothesis import strategies as st

        self.data, self.st = data, st

    def choice(self, options, label=None):
        return self.data.draw(self.st.sampled_from(list(options)), label=label)

    def integer(self, lo, hi, label=None):
        return self.data.draw(self.st.integers(lo, hi), label=label)

    def blob(self, lo, hi, label=None):
        return self.data.draw(self.st.binary(min_size=lo, max_size=hi), label=label)


# ---------------------------------------------------------------------------------------
# mutants


@dataclass
class Mutant:
    kind: str  # run kind (or "machine-model")
    target: Path  # the damaged copy (run directory or machine model)
    what: str  # what was done, for a person
    damaged: tuple  # names an error may mention (the file, what a link points at)
    commands: list  # (label, argv, output) to run on it
    planted: dict = field(default_factory=dict)  # output path -> bytes already there
    # a damage every reader of the table must refuse (kinds.py declares what it checks),
    # and the table: a command that read it and exited 0 without a word is a silent success
    refuse: str = ""
    table: str = ""
    # a file damaged (not an option, not an output planted): an accepted answer must be
    # the undamaged run's, or said to differ (a warning)
    answers: bool = False


def _json_paths(doc, prefix=()):
    """Every field path in a JSON document (containers and leaves)."""
    yield prefix
    items = (
        doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    )
    for key, value in items:
        yield from _json_paths(value, (*prefix, key))


def _mutate_json(doc, path, how, value):
    if not path:
        return value if how == "replace" else [doc]
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    if how == "delete" and isinstance(parent, dict):
        del parent[key]
    elif how == "rename" and isinstance(parent, dict):
        parent[f"{key}_x"] = parent.pop(key)
    elif how == "wrap":
        parent[key] = [parent[key]]
    else:
        parent[key] = value
    return doc


def _damage_json(d, path, raw):
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    fields = sorted(_json_paths(doc), key=repr)
    where = d.choice(fields, "field")
    how = d.choice(["replace", "delete", "wrap", "rename"], "change")
    value = d.choice(WRONG_VALUES, "value") if how == "replace" else None
    path.write_text(json.dumps(_mutate_json(doc, list(where), how, value)))
    return f"{how} field {'/'.join(map(str, where)) or '(top)'}" + (
        f" -> {value!r}" if how == "replace" else ""
    )


def _damage_parquet(d, path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except Exception:
        return None
    if not table.column_names:
        return None
    col = d.choice(table.column_names, "column")
    how = d.choice(
        ["drop", "rename", "to text", "to float", "all null", "no rows", "duplicate rows"], "change"
    )
    i = table.column_names.index(col)
    if how == "drop":
        table = table.drop([col])
    elif how == "rename":
        table = table.rename_columns([c + "_x" if c == col else c for c in table.column_names])
    elif how == "to text":
        table = table.set_column(i, col, pa.array([str(v) for v in table[col].to_pylist()]))
    elif how == "to float":
        try:
            table = table.set_column(i, col, table[col].cast(pa.float64()))
        except Exception:
            table = table.set_column(i, col, pa.array([float("nan")] * len(table)))
    elif how == "all null":
        table = table.set_column(i, col, pa.nulls(len(table), table.schema.field(col).type))
    elif how == "no rows":
        table = table.slice(0, 0)
    else:
        table = pa.concat_tables([table, table])
    pq.write_table(table, path)
    return f"{how} column {col}" if how not in ("no rows", "duplicate rows") else how


def _damage_csv(d, path, raw):
    lines = raw.decode(errors="replace").splitlines(keepends=True)
    if not lines:
        return None
    how = d.choice(
        ["drop header", "rename column", "drop column", "cut rows", "text cell", "empty cell"],
        "change",
    )
    header = lines[0].rstrip("\n").split(",")
    col = d.integer(0, len(header) - 1, "column")
    if how == "drop header":
        lines = lines[1:]
    elif how == "cut rows":
        lines = lines[: d.integer(1, max(1, len(lines) - 1), "rows")]
    elif how in ("rename column", "drop column"):
        lines = [
            ",".join(
                c
                for j, c in enumerate(ln.rstrip("\n").split(","))
                if how == "rename column" or j != col
            )
            + "\n"
            for ln in lines
        ]
        if how == "rename column":
            lines[0] = ",".join(c + "_x" if j == col else c for j, c in enumerate(header)) + "\n"
    elif len(lines) > 1:
        row = d.integer(1, len(lines) - 1, "row")
        cells = lines[row].rstrip("\n").split(",")
        if col < len(cells):
            cells[col] = "x" if how == "text cell" else ""
        lines[row] = ",".join(cells) + "\n"
    path.write_text("".join(lines))
    return f"{how} ({header[col]})" if how != "cut rows" else f"{how} ({len(lines)} lines kept)"


def _damage_file(d, path, run_files):
    """Damage ``path`` in place; what was done."""
    how = d.choice(["content"] * 6 + ["bytes"] * 3 + ["special"] * 2, "how")
    if how == "special":
        kind = d.choice(
            [
                "fifo",
                "directory",
                "empty",
                "deleted",
                "link loop",
                "/dev/zero",
                "link to another",
                "renamed",
                "fifo elsewhere",
            ],
            "special",
        )
        path.unlink()
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "fifo elsewhere":
            os.mkfifo(path.parent / ".pipe")
            path.symlink_to(".pipe")
        elif kind == "directory":
            path.mkdir()
        elif kind == "empty":
            path.write_bytes(b"")
        elif kind == "link loop":
            path.symlink_to(path.name)
        elif kind == "/dev/zero":
            path.symlink_to("/dev/zero")
        elif kind == "link to another":
            other = d.choice([f for f in run_files if f != path] or [path], "other")
            path.symlink_to(os.path.relpath(other, path.parent))
        elif kind == "renamed":
            (path.parent / (path.name + ".old")).write_bytes(b"")
        return kind
    raw = path.read_bytes()
    if how == "content":
        if path.suffix == ".json":
            what = _damage_json(d, path, raw)
        elif path.suffix == ".parquet":
            what = _damage_parquet(d, path)
        elif path.suffix == ".csv":
            what = _damage_csv(d, path, raw)
        else:
            what = None
        if what:
            return what
    change = d.choice(["truncate", "overwrite", "garbage", "zeros", "append"], "change")
    at = d.integer(0, max(len(raw) - 1, 0), "offset")
    if change == "truncate":
        path.write_bytes(raw[:at])
        return f"cut to {at} of {len(raw)} bytes"
    if change == "garbage":
        path.write_bytes(d.blob(1, 256, "bytes"))
        return "garbage"
    if change == "zeros":
        path.write_bytes(bytes(len(raw)))
        return "zeroed"
    if change == "append":
        path.write_bytes(raw + d.blob(1, 64, "bytes"))
        return "bytes appended"
    junk = d.blob(1, 64, "bytes")
    path.write_bytes(raw[:at] + junk + raw[at + len(junk) :])
    return f"{len(junk)} bytes overwritten at {at}"


def _regular_files(top):
    top = Path(top)
    if top.is_file():
        return [top]
    return sorted(p for p in top.rglob("*") if p.is_file() and not p.is_symlink())


def draw_mutant(d, originals, work):
    """Copy one original into ``work/in`` and damage it (or an option, or plant an
    output); the commands to run on it write into ``work/out``."""
    inp, out = Path(work) / "in", Path(work) / "out"
    inp.mkdir(parents=True)
    out.mkdir()
    kind = d.choice(sorted(originals), "kind")
    src = originals[kind]
    target = inp / src.name
    if src.is_dir():
        shutil.copytree(src, target, symlinks=True)
    else:
        shutil.copy(src, target)
    cmds = commands(kind, target, originals, out)
    how = d.choice(["file"] * 8 + ["option", "output"], "mutation")
    if how == "option":
        label, argv, output = d.choice(cmds, "command")
        opts = [
            i
            for i, a in enumerate(argv)
            if a.startswith("-")
            and i + 1 < len(argv)
            and not argv[i + 1].startswith("-")
            and a not in ("-o", "--output", "--format", "--machine-model")
        ]
        extra = {
            "top": ["--interval", "--speed"],
            "stats": ["--threshold", "--bin-width", "--max-laggards", "--replicas", "--confidence"],
            "model": ["--bins", "--guard", "--threads-send", "--points", "--trials"],
            "advise": ["--threshold", "--min-saving", "--min-fraction", "--seed"],
            "compare": ["--top", "--fail-if"],
            "predict": ["--ppn", "--t-wait", "--confidence", "--ranks-per-node"],
        }
        choices = [argv[i] for i in opts] + [
            o for o in extra.get(argv[0], []) if argv[0] != "stats" or o in _STATS_OPTS[argv[1]]
        ]
        if choices:
            opt = d.choice(choices, "option")
            value = d.choice(ABSURD, "value")
            argv = list(argv)
            if opt in argv:
                argv[argv.index(opt) + 1] = value
            else:
                argv += [opt, value]
            names = (opt, value) if len(value) > 1 else (opt,)  # "--column abc" or "abc"
            return Mutant(kind, target, f"{opt} {value!r}", names, [(label, argv, output)])
    if how == "output":
        with_output = [c for c in cmds if c[2] is not None]
        if with_output:
            label, argv, output = d.choice(with_output, "command")
            return Mutant(
                kind,
                target,
                f"{output.name} already there",
                (output.name,),
                [(label, argv, output)],
                {output: b"already here\n"},
            )
    files = _regular_files(target)
    victim = d.choice(files, "file")
    original = src / victim.relative_to(target) if victim != target else src
    what = _damage_file(d, victim, files)
    name = str(victim.relative_to(target)) if victim != target else victim.name
    names = (victim.name, *([os.readlink(victim)] if victim.is_symlink() else []))
    refuse = must_refuse(target, original, victim, what) if victim != target else ""
    return Mutant(
        kind,
        target,
        f"{name}: {what}",
        tuple(Path(n).name for n in names),
        cmds,
        refuse=refuse,
        table=victim.stem if refuse else "",
        answers=True,
    )


def must_refuse(run_dir, original, victim, what):
    """Why every reader of the damaged table must refuse this damage (the rules of
    kinds.py: columns and their kinds, row keys, rows of a complete run), or "" when the
    damage may be harmless (a nullable column emptied, bytes overwritten in a page)."""
    if victim.parent != run_dir or victim.suffix != ".parquet":
        return ""
    from commscope import kinds

    try:
        meta = json.loads((run_dir / "meta.json").read_text())
        import pyarrow.parquet as pq

        rows = pq.ParquetFile(original).metadata.num_rows
    except Exception:
        return ""
    kind, table = meta.get("kind"), victim.stem
    columns = kinds.TABLE_COLUMNS.get((kind, table))
    if columns is None:
        return ""
    later = kinds.LATER_COLUMNS.get((kind, table), {})
    complete = meta.get("status") == "complete"
    derived = kinds.DERIVED_COLUMNS.get((kind, table), {}) if complete else {}
    optional = kinds.OPTIONAL_COLUMNS.get((kind, table), {})
    declared = {**optional, **columns, **derived}
    m = re.match(r"(drop|rename|to text|to float|all null) column (\w+)$", what)
    if m:
        how, col = m.groups()
        k = declared.get(col)
        if k is None or col in later:
            return ""
        if how in ("drop", "rename"):
            return (
                ""
                if col in optional
                else f"a required column ({col}) {'dropped' if how == 'drop' else 'renamed'}"
            )
        if how == "to text" and k in "ipfnb":
            return f"numbers of {col} turned into text"
        if how == "to float" and k in "ipbO":
            return f"{col} ({ {'i': 'integers', 'p': 'integers', 'b': 'true/false', 'O': 'text'}[k] }) turned into floats"
        if how == "all null" and k in "ipfb*" and rows:
            return f"{col}, which is never missing, all null"
        return ""
    if what == "duplicate rows" and rows and (kind, table) in kinds.TABLE_KEYS:
        return "every row twice (the row key repeats)"
    if what == "no rows" and rows and complete:
        points = kinds.POINTS.get(kind)
        counted = ((meta.get("profile") or {}).get("ranks") or {}).get("count")
        if (points and points.table == table) or (
            kind == "profile" and table in kinds.PROFILE_CORE_TABLES and counted
        ):
            return "no rows in a table a complete run has rows in"
    if what in ("garbage", "zeroed", "deleted", "renamed", "empty") or what.startswith("cut to "):
        return f"the file {what}" if what != "empty" else "the file emptied"
    return ""


_STATS_OPTS = {
    "arrivals": ["--threshold", "--bin-width", "--max-laggards"],
    "bootstrap": ["--replicas", "--confidence"],
    "gev": [],
    "imbalance": [],
}


def digest(top):
    """Contents of regular files and targets of links under ``top`` (special files by
    kind only: never opened)."""
    top = Path(top)
    out = {}
    for p in sorted([top, *top.rglob("*")] if top.is_dir() else [top]):
        st = os.lstat(p)
        if stat.S_ISREG(st.st_mode):
            out[str(p)] = sha256(p.read_bytes()).hexdigest()
        elif stat.S_ISLNK(st.st_mode):
            out[str(p)] = "-> " + os.readlink(p)
        else:
            out[str(p)] = stat.filemode(st.st_mode)
    return out


# ---------------------------------------------------------------------------------------
# running a command in a forked child


def warm_up(originals=None, scratch=None):
    """Import what the commands import, once, before forking; with ``originals``, run
    every command once on them here (lazy imports, compiled schemas), stdout discarded.
    The parser is built once and handed to every child (argparse builds it in 0.1 s)."""
    import contextlib
    import importlib
    import pkgutil

    import matplotlib

    matplotlib.use("Agg")
    import commscope
    from commscope import cli

    for mod in pkgutil.walk_packages(commscope.__path__, "commscope."):
        if mod.name.endswith("__main__"):  # would run the CLI
            continue
        with contextlib.suppress(Exception):
            importlib.import_module(mod.name)
    for name in (
        "jsonschema",
        "matplotlib.pyplot",
        "scipy.stats",
        "scipy.optimize",
        "pyarrow.parquet",
        "pyarrow.csv",
    ):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    if originals is not None:
        scratch = Path(scratch)
        for kind in sorted(originals):
            for label, argv, output in commands(kind, originals[kind], originals, scratch):
                if label == "report" and kind != "bsp":  # one report warms matplotlib
                    continue
                with (
                    open(os.devnull, "w") as null,
                    contextlib.redirect_stdout(null),
                    contextlib.redirect_stderr(null),
                ):
                    with contextlib.suppress(BaseException):
                        cli.main(argv)
                for p in scratch.iterdir():
                    shutil.rmtree(p) if p.is_dir() else p.unlink()
    parser = cli.build_parser()
    cli.build_parser = lambda: parser  # a fresh copy in every forked child


@dataclass
class Result:
    status: int | None  # exit status (None: killed as a hang; negative: a signal)
    out: str
    err: str
    seconds: float
    reads: set | None = None  # tables and Parquet files the command read (None: not known)


def _log_reads(path):
    """In a forked child: note every table read through a run (Run.table) and every
    Parquet file read, one name a line in ``path``."""
    import pandas
    from commscope import runs

    def note(name):
        with open(path, "a") as fh:
            fh.write(f"{name}\n")

    table, read_parquet = runs.Run.table, pandas.read_parquet

    def logged_table(self, name, *args, **kwargs):
        note(name)
        return table(self, name, *args, **kwargs)

    def logged_read_parquet(source, *args, **kwargs):
        note(Path(str(source)).stem)
        return read_parquet(source, *args, **kwargs)

    runs.Run.table = logged_table
    pandas.read_parquet = logged_read_parquet


def fork_cli(argv, cwd, limit_s=60.0):
    """``cli.main(argv)`` in a forked child in ``cwd``; (status, stdout, stderr) or a
    :class:`Result` via :func:`run_forked`."""
    r = run_forked(argv, cwd, limit_s)
    return r.status, r.out, r.err


CRASH = 70  # the child's exit status when an exception escaped cli.main


def run_forked(argv, cwd, limit_s=60.0):
    cwd = Path(cwd)
    fout, ferr, freads = cwd / ".stdout", cwd / ".stderr", cwd / ".reads"
    freads.unlink(missing_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        status = CRASH
        try:
            os.setpgid(0, 0)
            os.chdir(cwd)
            for fd, path, flags in (
                (0, os.devnull, os.O_RDONLY),
                (1, fout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                (2, ferr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
            ):
                f = os.open(path, flags, 0o644)
                os.dup2(f, fd)
                os.close(f)
            sys.stdin = open(0, closefd=False)
            sys.stdout = open(1, "w", closefd=False)
            sys.stderr = open(2, "w", closefd=False)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            _log_reads(freads)
            from commscope import cli

            try:
                status = cli.main(list(argv))
            except SystemExit as exc:  # argparse refusing an option
                status = exc.code
            status = 0 if status is None else status if isinstance(status, int) else 1
        except BaseException:
            traceback.print_exc()
            status = CRASH
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(status)
    fd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([fd], [], [], limit_s)
    finally:
        os.close(fd)
    hung = not ready
    if hung:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _, wstatus = os.waitpid(pid, 0)
    try:
        os.killpg(pid, signal.SIGKILL)  # anything it left behind
    except (ProcessLookupError, PermissionError):
        pass
    seconds = time.perf_counter() - t0
    out = fout.read_text(errors="replace") if fout.exists() else ""
    err = ferr.read_text(errors="replace") if ferr.exists() else ""
    reads = set(freads.read_text().split()) if freads.exists() else set()
    fout.unlink(missing_ok=True)
    ferr.unlink(missing_ok=True)
    freads.unlink(missing_ok=True)
    status = None if hung else os.waitstatus_to_exitcode(wstatus)
    return Result(status, out, err, seconds, reads)


def run_subprocess(argv, cwd, limit_s=60.0):
    """The real entry point (``python -m commscope``), for the spot check."""
    t0 = time.perf_counter()
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])),
    )
    p = subprocess.Popen(
        [sys.executable, "-m", "commscope", *argv],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = p.communicate(timeout=limit_s)
        status = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        status = None
    return Result(status, out, err, time.perf_counter() - t0)


# ---------------------------------------------------------------------------------------
# one case


@dataclass
class Case:
    command: str
    mutant: str
    outcome: str
    detail: str = ""  # the error line, or why the case failed
    signature: str = ""  # crash/hang signature: exception and innermost commscope frame
    seconds: float = 0.0


def crash_signature(err):
    """'KeyError: 'x' at commscope/report/sections/counters.py:_heatmaps'."""
    frames = re.findall(r'File "([^"]*)", line \d+, in (\S+)', err)
    ours = [(f, fn) for f, fn in frames if "/commscope/" in f]
    where = ""
    if ours:
        f, fn = ours[-1]
        where = f" at {f[f.rindex('/commscope/') + 1 :]}:{fn}"
    last = [ln for ln in err.strip().splitlines() if ln and not ln.startswith(" ")]
    exc = last[-1] if last else "no message"
    exc = re.sub(r"/\S+", "PATH", exc)[:120]
    return exc + where


def _json_strict(text, machine_model=False):
    """Bare NaN/Infinity refused; a string "nan"/"inf" standing for a number too, except
    in a machine model (``fit --json``), whose format writes an unbounded rate or
    interval end as "inf" (docs/machine-model.md)."""

    def refuse(token):
        raise ValueError(f"{token} in --json output")

    def walk(v, key=None):
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, k)
        elif isinstance(v, list):
            for x in v:
                walk(x, key)
        elif (
            isinstance(v, str)
            and NAN_TOKEN.fullmatch(v.strip())
            and not (machine_model and v == "inf")
        ):
            raise ValueError(f'"{key}": "{v}" in --json output')

    walk(json.loads(text, parse_constant=refuse))


def check(mutant, label, argv, output, result, before):
    """The outcome of one case (one command on one mutant)."""
    status, out, err = result.status, result.out, result.err
    case = Case(label, mutant.what, "exit 0", seconds=result.seconds)
    if status is None:
        case.outcome, case.signature = "hang", f"{label} on {mutant.what.split(':')[0]}"
        return case
    if status not in (0, 2) or "Traceback" in err:
        case.outcome = "crash"
        case.signature = (
            crash_signature(err)
            if "Traceback" in err
            else f"exit {status}: {err.strip().splitlines()[-1:] or ''}"
        )
        case.detail = err[-3000:]
        return case
    if digest(mutant.target.parent) != before:
        case.outcome, case.detail = "input changed", f"{label} changed {mutant.target}"
        return case
    for path, content in mutant.planted.items():
        if not path.is_file() or path.read_bytes() != content:
            case.outcome, case.detail = "output overwritten", str(path)
            return case
    if status == 2:
        errors = [
            ln
            for ln in err.splitlines()
            if ln.startswith(("commscope: error", "commscope ", "usage:"))
            and not ln.startswith("commscope: warning")
        ]
        lines = [ln for ln in err.splitlines() if "error" in ln]
        case.detail = lines[-1] if lines else err.strip()[-300:]
        named = len([ln for ln in errors if "error" in ln]) == 1 and any(
            name in case.detail for name in mutant.damaged
        )
        case.outcome = "exit 2 naming" if named else "exit 2 not naming"
        if (
            output is not None
            and output not in mutant.planted
            and any(p.exists() for p in _parts(output))
        ):
            case.outcome, case.detail = "output overwritten", f"failed {label} left {output}"
        return case
    # exit 0: sane output
    produced = output is not None and output.exists() and output not in mutant.planted
    if not out.strip() and not produced:
        case.outcome, case.detail = "insane output", "exit 0 without output"
        return case
    bad = NAN_TOKEN.search(out) if "--json" not in argv else None
    if bad:
        line = out[out.rfind("\n", 0, bad.start()) + 1 : out.find("\n", bad.end())]
        case.outcome, case.detail = "insane output", f"{bad.group()!r} in: {line.strip()[:200]}"
        case.signature = f"{bad.group()} in {label}"
        return case
    if "--json" in argv:
        try:
            _json_strict(out, machine_model=argv[0] == "fit")
        except ValueError as exc:
            case.outcome, case.detail = "insane output", f"--json: {exc}"[:300]
            case.signature = f"{exc} of {label}"[:150]
            return case
    if produced and output.suffix == ".html":
        cell = re.search(
            r"<t[dh][^>]*>\s*[-+]?(nan|NaN|inf|Infinity)\s*</t[dh]>",
            output.read_text(errors="replace"),
        )
        if cell:
            case.outcome, case.detail = "insane output", f"{cell.group()} in the report"
            case.signature = f"{cell.group(1)} in the report"
            return case
    # exit 0 after reading a table damaged in a way every reader must refuse, without a
    # word naming it: a silent success (the lie the checks of kinds.py are there to stop)
    said = any(name in ln for ln in err.splitlines() for name in mutant.damaged)
    if mutant.refuse and result.reads is not None and mutant.table in result.reads and not said:
        case.outcome = "silent success"
        case.detail = f"{mutant.refuse}: read {mutant.table}, exit 0, nothing said"
        case.signature = f"silent: {label} on {mutant.kind} {mutant.table}: {mutant.refuse}"[:150]
    return case


#: Commands whose answer (stdout, the run's path left out) is compared with the
#: undamaged run's: the diagnosis, the comparison, the matching replay.
ANSWERS = (
    "diagnose",
    "diagnose --json",
    "diagnose --what-if",
    "compare",
    "model matching",
    "stats imbalance --json",
    "top --json",
)

_REFERENCE = {}  # (kind, label) -> the undamaged run's answer


def answer(text, paths):
    """A command's stdout with the run paths given replaced (the answer itself)."""
    for p in sorted({str(p) for p in paths}, key=len, reverse=True):
        text = text.replace(p, "RUN")
    return text


def reference(mutant, label, originals, runner=None, limit_s=60.0):
    """The answer of command ``label`` on the undamaged original of ``mutant``'s kind
    (run once, kept)."""
    key = (mutant.kind, label)
    if key not in _REFERENCE:
        src = originals[mutant.kind]
        out_dir = mutant.target.parent.parent / "out"
        argv = next(
            a for lbl, a, _ in commands(mutant.kind, src, originals, out_dir) if lbl == label
        )
        result = (runner or run_forked)(argv, out_dir, limit_s)
        _REFERENCE[key] = answer(result.out, [src]) if result.status == 0 and result.out else None
    return _REFERENCE[key]


def changed_answer(mutant, case, result, originals, runner=None, limit_s=60.0):
    """An accepted answer that differs from the undamaged run's, with no warning: the
    case becomes a *silent changed answer*."""
    if (
        not mutant.answers
        or originals is None
        or case.outcome != "exit 0"
        or case.command not in ANSWERS
        or "commscope: warning:" in result.err
    ):
        return case
    want = reference(mutant, case.command, originals, runner, limit_s)
    src = originals[mutant.kind]
    if want is not None and answer(result.out, [mutant.target, src]) != want:
        got = answer(result.out, [mutant.target, src]).splitlines()
        exp = want.splitlines()
        first = next(
            (i for i, (a, b) in enumerate(zip(got, exp)) if a != b), min(len(got), len(exp))
        )
        case.outcome = "silent changed answer"
        line = got[first] if first < len(got) else "(ends)"
        case.detail = f"line {first + 1}: {line.strip()[:200]}"
        case.signature = (
            f"silent changed answer: {case.command} on {mutant.kind} {mutant.what.split(':')[0]}"[
                :150
            ]
        )
    return case


def _parts(output):
    """The paths a command writing ``output`` may create (an OTF2 archive is three)."""
    if output is None:
        return set()
    if output.suffix == ".otf2":
        base = output.with_suffix("")
        return {output, base.with_suffix(".def"), base}
    return {output}


def run_mutant(mutant, runner=run_forked, limit_s=30.0, originals=None):
    """Every command on one mutant: a list of :class:`Case`; with ``originals``, an
    accepted answer is compared with the undamaged run's (:func:`changed_answer`)."""
    cases = []
    out_dir = mutant.target.parent.parent / "out"
    before = digest(mutant.target.parent)  # the parent: a deleted file counts too
    for label, argv, output in mutant.commands:
        for path, content in mutant.planted.items():
            path.write_bytes(content)
        result = runner(argv, out_dir, limit_s)
        case = check(mutant, label, argv, output, result, before)
        cases.append(changed_answer(mutant, case, result, originals, runner, limit_s))
        # what a command may leave: its output, nothing else
        left = {p for p in out_dir.iterdir()} - _parts(output) - set(mutant.planted)
        if left and cases[-1].outcome in GOOD:
            cases[-1].outcome = "output overwritten"
            cases[-1].detail = f"{label} wrote {sorted(map(str, left))}"
        for p in out_dir.iterdir():
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
    return cases
