"""`commscope profile`: run any MPI program with the counter library preloaded.

The program is started through the launcher module (mpiexec, or srun inside a
Slurm allocation) as

    <launcher> -n N env LD_PRELOAD=<libs> COMMSCOPE_PROFILE_DIR=<run>/raw ... PROGRAM ARGS

so the preload reaches the ranks only, never the launcher.  Collectors (the
counter library here; OMPT thread timing plugs in the same way) each add
preload libraries, environment variables and a ``finalize(run)`` that turns
their raw files into tables, called even when the program failed.

The steps a benchmark run shares (record what runs, plan the launch with the
collectors, finalise them, record placement) are :mod:`commscope.collect.lifecycle`'s;
what is a profile's own is here: its collectors and how its program's end is judged.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

from .. import launch, mpi as mpimod
from ..collect.lifecycle import (
    Collector,
    finalize_collectors,
    mpi_info,
    native_write_error,
    plan_job,
    record_placement,
    record_start,
)
from ..errors import EnvironmentProblem, InputError, Interrupted
from ..paths import default_runs_root, write_text_atomic
from ..runs import Run, describe_os_error, utc_now
from ..collect.node_files import counter_ranks
from .settings import chosen_sets, default_snapshot_interval, library_env, parse_counter_sets
from .summary import TIMERS_HINT


def parse_interval(text, option="--snapshot-every"):
    """'0.5s', '500ms', '2' (seconds) -> seconds; 0 turns snapshots off."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?\d+)?)\s*(ms|s)?\s*", str(text))
    if not m:
        raise InputError(option, None, f"expected a duration such as 0.5s or 500ms, got {text!r}")
    value = float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)
    if 0 < value < 0.01:
        raise InputError(option, None, f"{text} is below the 10 ms minimum (or 0 for no snapshots)")
    return value


class CounterCollector(Collector):
    def finalize(self, run):
        """Convert the node files; an unreadable node or ranks without counters make the
        profile partial (``self.partial``)."""
        from .convert import convert

        overview = convert(run)
        world = int(run.meta["parameters"]["ranks"])
        present = set(run.table("ranks")["rank"].tolist()) if overview["count"] else set()
        missing = sorted(set(range(world)) - present)
        overview.update(missing=missing[:64], missing_count=len(missing))
        run.meta["profile"]["ranks"] = overview
        self.partial = list(overview["problems"])
        if missing and present:  # none at all: the caller says the program never got there
            shown = ", ".join(map(str, missing[:16])) + (" ..." if len(missing) > 16 else "")
            self.partial.append(
                f"{run.raw_dir}: ranks {shown} ({len(missing)} of {world}) left "
                "no counters: their node file is missing or unreadable, or they "
                "stopped before MPI_Init"
            )


def resolve_program(program):
    """The program's absolute path; a clear error when it is missing or not executable.

    Symlinks are kept: a venv's bin/python is a symlink to the base interpreter, and
    only started by its own name does it run in the venv (likewise any program that
    reads its argv[0]).
    """
    path = Path(program)
    if "/" not in program:
        found = shutil.which(program)
        if not found:
            raise InputError(program, None, "no such program (not a path, not on PATH)")
        path = Path(found)
    if not path.exists():
        raise InputError(path, None, "no such program")
    if not path.is_file() or not os.access(path, os.X_OK):
        raise InputError(path, None, "not an executable file")
    return path.absolute()


def _elf_to_check(program):
    """The ELF file whose libmpi is the program's: the program itself, or a script's
    interpreter when that is an ELF binary (#!/bin/sh, #!/usr/bin/env python3); None
    when there is none (ldd has nothing to read in a script)."""
    head = _head(program)
    if head.startswith(b"\x7fELF"):
        return Path(program)
    if head.startswith(b"#!"):
        words = head[2:].split(b"\n", 1)[0].split()
        interp = os.fsdecode(words[0]) if words else ""
        if _head(interp).startswith(b"\x7fELF"):
            return Path(interp)
    return None


def _head(path, size=256):
    try:
        with open(path, "rb") as f:
            return f.read(size)
    except OSError:
        return b""


def _libmpi_of(binary):
    """The realpath of the libmpi a binary loads (from ldd), or None."""
    try:
        out = subprocess.run(
            ["ldd", str(binary)], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"^\s*libmpi(?:ch)?\.so[.\d]*\s*=>\s*(\S+)", out, re.MULTILINE)
    return os.path.realpath(m.group(1)) if m and m.group(1) != "not" else None


def check_same_mpi(program, library, mpi):
    """Refuse a program linked against another MPI than the selected one (they would mix).

    A script (wrapper, Python) is checked through its interpreter when that is an ELF
    binary; what the script itself starts is not known before it runs.
    """
    elf = _elf_to_check(program)
    theirs, ours = (_libmpi_of(elf) if elf else None), _libmpi_of(library)
    if theirs and ours and theirs != ours:
        what = "is" if elf == Path(program) else f"runs {elf}, which is"
        raise InputError(
            program,
            None,
            f"{what} linked against {theirs}, but the selected MPI "
            f"({mpi.name}: {mpi.mpicc}) uses {ours}; pass --mpi with "
            "the mpicc of the MPI the program was built with",
        )


class CallsiteCollector(Collector):
    """--callsites: the counter library records return addresses (COMMSCOPE_CALLSITES);
    after the run they are resolved to file:line (collect/callsites.py)."""

    def __init__(self, depth):
        super().__init__(
            "callsites",
            env=library_env(CALLSITES=depth),
            notes=[
                f"call sites: {depth} frame{'s' if depth > 1 else ''} per call"
                + (" (unwound with backtrace())" if depth > 1 else "")
            ],
        )

    def finalize(self, run):
        from ..collect.callsites import callsites_table

        ranks = run.table("ranks") if (run.path / "ranks.parquet").exists() else None
        sets = chosen_sets(run.meta)
        df = callsites_table(run.raw_dir, ranks, sets)
        if df is not None:
            run.write_table("callsites", df)
            unknown = int((df["caller"] == "unknown").sum())
            run.meta["profile"]["callsites"] = {"rows": int(len(df)), "unknown_rows": unknown}


def callsite_collector(depth):
    """The collector of --callsites with ``depth`` frames per call (None: off)."""
    if depth is None:
        return None
    if not isinstance(depth, int) or not 1 <= depth <= 16:
        raise InputError(
            "--callsite-depth", None, f"must be a whole number from 1 to 16, got {depth}"
        )
    return CallsiteCollector(depth)


def counter_collector(lib, sets, snapshot_s, trace, trace_limit):
    env = library_env(
        COUNTERS=",".join(sets + (("trace",) if trace else ())) or "calls",
        SNAPSHOT_MS=int(round(snapshot_s * 1000)),
    )
    if trace_limit is not None:
        env.update(library_env(TRACE_LIMIT=int(trace_limit)))
    notes = [
        f"counters: {', '.join(sets) or 'calls only'}"
        + ("" if "timers" in sets else f" (time in MPI not measured: {TIMERS_HINT})")
    ]
    return CounterCollector("counters", preload=[str(lib)], env=env, notes=notes)


def ending_problem(endings, code):
    """How the ranks that did not end well ended, in one sentence (None: all finalized
    and exited 0): ``rank 1 killed by SIGSEGV (signal 11); rank 0 killed by SIGTERM``."""
    from .endings import sentence

    return sentence(endings) if endings else None


def run_profile(
    program,
    args=(),
    *,
    nranks=2,
    threads=1,
    counters="default",
    snapshot_every=None,
    trace=False,
    trace_limit=None,
    callsites=None,
    collectors=(),
    mpi_spec=None,
    runs_root=None,
    run_name=None,
    hosts=None,
    ranks_per_node=None,
    timeout=None,
    echo=True,
    launcher="auto",
):
    """Profile ``program args`` on ``nranks`` ranks; returns ``(run, exit_status)``.

    ``callsites``: frames recorded per call (1: the immediate caller), None: off.
    ``exit_status`` is the program's (128 + signal when killed); the run
    directory holds every count made up to the end either way.  A write that a
    preloaded library reports as failed (``cannot write PATH: ...``, e.g. a full disk)
    marks the run failed and raises that OSError, whatever the program's exit status.
    """
    sets = parse_counter_sets(counters)
    snapshot_s = parse_interval(
        snapshot_every if snapshot_every is not None else default_snapshot_interval()
    )
    sites = callsite_collector(callsites)
    if timeout is not None and not timeout > 0:
        raise InputError("--timeout", None, f"must be a positive number of seconds, got {timeout}")
    launch.check_request(nranks, threads, launcher=launcher, ranks_per_node=ranks_per_node)
    path = resolve_program(str(program))
    mpi = mpimod.select_mpi(mpi_spec)
    lib = mpimod.build(mpi, target="commscope") / "libcommscope.so"
    if not lib.exists():
        raise EnvironmentProblem(f"libcommscope.so was not built (see {mpimod.build_dir(mpi)})")
    check_same_mpi(path, lib, mpi)
    info = mpi_info(mpi)
    collectors = [
        counter_collector(lib, sets, snapshot_s, trace, trace_limit),
        *([sites] if sites else []),
        *collectors,
    ]
    params = dict(
        program=str(path),
        args=list(map(str, args)),
        ranks=nranks,
        threads=threads,
        counters=list(sets),
        snapshot_every_s=snapshot_s,
        trace=trace,
        callsite_depth=callsites,
    )
    run = Run.create(runs_root or default_runs_root(), "profile", params, name=run_name)
    with run.removed_if_refused():  # a launch refused here leaves no run directory
        os.chmod(run.raw_dir, 0o700)  # counter files can reveal what the program does
        plan = plan_job(
            run,
            mpi,
            nranks,
            path,
            args,
            collectors,
            hosts=hosts,
            ranks_per_node=ranks_per_node,
            threads=threads,
            launcher=launcher,
        )
        record_start(
            run,
            mpi,
            info,
            plan,
            profile={"collectors": [c.name for c in collectors], "ranks": {"count": 0}},
        )
    res, extra = None, {}
    try:
        res = launch.run_job(
            plan, title="profile", timeout=timeout, echo=echo, progress=False, echo_stderr=echo
        )
    except Interrupted as exc:
        extra["interrupted"] = {"signal": exc.signal_name, "time": utc_now()}
        raise
    finally:
        code = res.returncode if res else None
        write_error = native_write_error(res.own_lines + res.stderr) if res else None
        problems = []
        try:  # a full disk here still ends the run, failed, naming the file
            # the program's own output, whatever --quiet kept off the terminal (the launcher's
            # report in stderr.txt also names ranks a signal ended: convert reads it)
            write_text_atomic(run.path / "stdout.txt", res.kept("stdout") if res else "")
            write_text_atomic(run.path / "stderr.txt", res.kept("stderr") if res else "")
            finalize_collectors(run, collectors, keep_going=True, problems=problems)
        except OSError as exc:
            write_error = write_error or exc
        record_placement(run)
        run.meta["profile"]["problems"] = problems
        run.meta["profile"]["tables"] = sorted(p.stem for p in run.path.glob("*.parquet"))
        ending = ending_problem(run.meta["profile"]["ranks"].get("endings") or [], code)
        if ending and code == 0 and not extra.get("interrupted"):
            problems.append(ending)  # every rank exited 0, some without MPI_Finalize
        if write_error is not None:
            extra["failure"] = describe_os_error(write_error)
        elif ending and not extra.get("interrupted"):
            extra["failure"] = ending
        elif res is not None and res.timed_out:
            extra["failure"] = f"timed out after {timeout} s"
        elif code:
            extra["failure"] = f"the program exited with status {code}"
        status = (
            "interrupted"
            if extra.get("interrupted")
            else "complete"
            if code == 0 and not problems and not write_error
            else "failed"
        )
        run.finish(status, exit_status=code, wall_s=round(res.wall_s, 3) if res else None, **extra)
    if write_error is not None:  # a full disk is the user's to fix: exit 2 naming the file
        raise write_error
    # A collector that recorded something (e.g. OMPT threads of an OpenMP program
    # without MPI) makes the run useful even without counters.
    if not counter_ranks(run.raw_dir) and not any(
        getattr(c, "recorded", lambda r: False)(run) for c in collectors
    ):
        # nothing was measured: no run directory is left claiming to be a profile
        shutil.rmtree(run.path, ignore_errors=True)
        raise InputError(
            path,
            None,
            f"wrote no counters (exit status {code}): it never called "
            "MPI_Init or MPI_Session_init through the preloaded library. "
            "It is not an MPI program, is linked statically, or uses "
            f"another MPI than {mpi.name} (pass --mpi with the mpicc it "
            "was built with); no run directory was kept",
        )
    return run, (code if code is not None and code >= 0 else 128 - (code or 0))


def convert_run(path):
    """Convert the raw files of profile run ``path`` into its tables again: a run whose
    commscope was stopped before the conversion (SIGKILL, a power cut), or whose tables
    were deleted.  The run's status stays as it was (a "running" one whose commscope is
    gone becomes "interrupted"); returns the :class:`Run`."""
    from ..runs import open_run
    from ..collect.node_files import node_keys
    from ..collect.ompt import OmptCollector, tool_status

    run = open_run(path, warn=False)
    if run.kind != "profile":
        raise InputError(
            run.path / "meta.json",
            "kind",
            f"is a {run.kind!r} run; --convert converts profile runs",
        )
    if run.status == "running":
        raise InputError(
            run.path / "meta.json",
            "status",
            f"still running (commscope pid {run.meta.get('commscope_pid')} on "
            f"{run.meta.get('commscope_host')}): it converts its files itself",
        )
    if not node_keys(run.raw_dir):
        raise InputError(run.raw_dir, None, "holds no counter files (raw/node.*.json) to convert")
    collectors = [CounterCollector("counters")]
    if run.meta["parameters"].get("callsite_depth") or list(run.raw_dir.glob("callsites.*.jsonl")):
        collectors.append(CallsiteCollector(run.meta["parameters"].get("callsite_depth") or 1))
    if tool_status(run.raw_dir)["event_files"]:
        collectors.append(OmptCollector("", ""))
    run.meta.setdefault("profile", {}).setdefault("ranks", {"count": 0})
    problems = finalize_collectors(run, collectors)
    run.meta["profile"]["problems"] = problems
    run.meta["profile"]["tables"] = sorted(p.stem for p in run.path.glob("*.parquet"))
    run.meta["profile"]["converted"] = utc_now()
    status = run.status  # "interrupted" for a run whose commscope is gone
    if status != run.meta["status"]:
        run.meta["status"] = status
        run.meta.setdefault("end_time", None)
    run.save_meta()
    return run
