#!/usr/bin/env python
"""Conformance: mpi4py's own test suite, plain and under `commscope profile`.

The profiler must be invisible to a program it counts.  This runs a public MPI
conformance suite nobody here wrote, mpi4py's unit tests (point to point,
collectives, neighbourhood and persistent collectives, partitioned and generalized
requests, one-sided, MPI-IO, sessions, large counts, ...), with each MPI wheel:

1. plainly, with the MPI's mpiexec and the flags commscope's launcher adds
   (commscope.launch.plan_launch), and
2. under ``commscope profile -n N --quiet --runs DIR -- python ...``, same environment,

then checks that every test (on every rank) has the same outcome both ways, and that
the profile's request ledger balances on every rank (from the ``counters`` table,
summed over threads: requests_started == requests_completed + requests_cancelled +
requests_freed + outstanding_requests) and is closed at the end (outstanding_requests
0: the suite completes or frees every request it starts).  It also reports
requests_untracked (0 expected), how many distinct MPI functions were called and how
many calls were made in all.

Both runs get the same launch: commscope's own flags (plan_launch), with what
MPI_Comm_spawn needs on top (see spawnable() and job_env(); --launcher commscope
leaves them out, and test_spawn then fails both ways).

The suite comes from mpi4py's source distribution on PyPI, for the mpi4py version
installed here, fetched with pip at run time into a cache (build/conformance/, or
$COMMSCOPE_CONFORMANCE_CACHE); none of its code is kept in this repository.  mpi4py's
binary wheel carries an extension per MPI ABI (MPI.openmpi.*.so, MPI.mpich.*.so)
and picks one at import from the libmpi it finds: the MPICH runs set
MPI4PY_LIBMPI to the MPICH wheel's libmpi.so.12 (under the profiler the preloaded
library has already loaded that libmpi, which mpi4py finds first).

Each rank runs the suite through this same script (``_rank`` mode: mpi4py's
test/main.py with a result class that writes ``<outdir>/outcomes.<rank>.json``,
test id -> pass/fail/error/skip/xfail/xpass), so outcomes are compared per rank and
per test, not by parsing interleaved output.

    .venv/bin/python scripts/conformance.py                 # full suite, both MPIs, 2 ranks
    .venv/bin/python scripts/conformance.py --quick         # a subset touching every family
    .venv/bin/python scripts/conformance.py --mpi mpich --ranks 1,2 --json
    .venv/bin/python scripts/conformance.py --modules test_rma,test_io --keep   # keep run dirs

Exit status: 0 when every outcome is unchanged and every ledger balances and is
closed; 1 when an outcome differs, a ledger does not balance or leaves requests
outstanding, or a job did not report every rank; 3 when the suite cannot be fetched
(PyPI out of reach).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: --quick: modules touching every family the profiler wraps, about half a minute a run.
QUICK = (
    "test_cco_nb_buf",  # nonblocking collectives
    "test_cco_ngh_buf",  # neighbourhood collectives, blocking and nonblocking
    "test_cco_pr_ngh_buf",  # persistent neighbourhood collectives
    "test_cco_pr_buf",  # persistent collectives
    "test_grequest",  # generalized requests (their error paths too)
    "test_handle",  # handles of every kind (an inactive persistent request freed)
    "test_io",  # MPI-IO: blocking, nonblocking, split collective, shared pointer
    "test_msgzero",  # zero-size and null-buffer messages
    "test_p2p_buf",  # point to point: blocking, nonblocking, persistent, probe, cancel
    "test_p2p_buf_part",  # partitioned (MPI 4)
    "test_request",  # Wait/Test any/some/all, Request_free, cancel
    "test_rma",  # one-sided: fence, PSCW, lock, flush
    "test_rma_nb",  # request-based one-sided
    "test_session",  # sessions
)

#: Tests --quick leaves out (fnmatch patterns, main.py -x): the costliest repeats of what
#: the subset covers anyway (I/O views, RMA on COMM_SELF, the Dup'ed communicators).
QUICK_EXCLUDE = (
    "test_io.TestIOView*",
    "test_rma.TestRMASelf.*",
    "test_rma_nb.TestRMASelf.*",
    "test_p2p_buf.TestP2PBuf*Dup.*",
    "test_cco_*.TestCCO*Dup.*",
)

#: Exit status when the suite cannot be had (a test skips on it; scripts/bench.py says
#: skipped).
UNAVAILABLE = 3

#: Outcome differences the table lists (--json has every one).
MAX_LISTED = 40

OUTCOMES = ("pass", "fail", "error", "skip", "xfail", "xpass")
LEDGER = (
    "requests_started",
    "requests_completed",
    "requests_cancelled",
    "requests_freed",
    "outstanding_requests",
)


class SuiteUnavailable(RuntimeError):
    """mpi4py's sdist could not be fetched (no PyPI, no pip)."""


# ---- the suite ------------------------------------------------------------------


def cache_dir():
    return Path(os.environ.get("COMMSCOPE_CONFORMANCE_CACHE") or ROOT / "build" / "conformance")


def mpi4py_version():
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mpi4py")
    except PackageNotFoundError:
        raise SuiteUnavailable(f"mpi4py is not installed in {sys.prefix}") from None


def fetch_suite(version=None, timeout=300):
    """The test/ directory of mpi4py ``version``'s sdist (fetched once with pip, cached)."""
    import fcntl

    version = version or mpi4py_version()
    dest = cache_dir() / f"mpi4py-{version}"
    if (dest / "test" / "main.py").is_file():
        return dest / "test"
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest.parent / ".lock", "w") as lock:  # one fetch at a time (parallel tests)
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (dest / "test" / "main.py").is_file():
            _fetch(version, dest, timeout)
    return dest / "test"


def _fetch(version, dest, timeout):
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".fetch-") as tmp:
        # --no-binary mpi4py, not :all:: the build backend pip installs to read the
        # sdist's metadata then comes as wheels (from source, Cython took minutes).
        # --timeout/--retries: without PyPI this fails in about a minute
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            "mpi4py",
            "--disable-pip-version-check",
            "--timeout",
            "15",
            "--retries",
            "2",
            "-q",
            "-d",
            tmp,
            f"mpi4py=={version}",
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise SuiteUnavailable(
                f"pip download mpi4py=={version} took over {timeout} s (is PyPI reachable?)"
            ) from None
        sdists = sorted(Path(tmp).glob(f"mpi4py-{version}.tar.gz"))
        if proc.returncode != 0 or not sdists:
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
            raise SuiteUnavailable(
                f"pip could not download mpi4py=={version}'s sdist (is PyPI reachable?):\n{tail}"
            )
        top = f"mpi4py-{version}/test/"
        unpacked = Path(tmp) / "unpacked"
        with tarfile.open(sdists[0]) as tar:
            # only test/'s regular files and folders, none outside it
            members = [
                m
                for m in tar.getmembers()
                if m.name.startswith(top)
                and ".." not in Path(m.name).parts
                and (m.isfile() or m.isdir())
            ]
            safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            tar.extractall(unpacked, members=members, **safe)
        if not (unpacked / top / "main.py").is_file():
            raise SuiteUnavailable(f"mpi4py=={version}'s sdist has no test/main.py")
        shutil.rmtree(dest, ignore_errors=True)
        os.replace(unpacked / f"mpi4py-{version}", dest)


def suite_modules(testdir):
    return sorted(p.stem for p in Path(testdir).glob("test_*.py"))


# ---- one rank: run the suite, write outcomes -------------------------------------


def rank_main(outdir, testdir, argv):
    """Run mpi4py's test/main.py on this rank; write outcomes.<rank>.json into outdir."""
    import unittest

    sys.dont_write_bytecode = True
    sys.path.insert(0, str(testdir))
    sys.argv = [str(Path(testdir) / "main.py"), *argv]
    import main as suite  # mpi4py's test/main.py

    records, times, messages = {}, {}, {}
    progress = []  # the file naming the test running now (a rank that dies leaves it)
    worst = {o: i for i, o in enumerate(("skip", "xfail", "pass", "xpass", "fail", "error"))}

    def note(test, outcome, err=None, result=None):
        tid = test.id()
        if tid in records and worst[records[tid]] >= worst[outcome]:
            return
        records[tid] = outcome
        if err is not None and result is not None:
            text = result._exc_info_to_string(err, test)
            messages[tid] = text.strip().splitlines()[-1][:300]

    class Result(unittest.TextTestResult):
        def startTest(self, test):
            if progress:
                progress[0].write_text(test.id())
            self._t0 = time.perf_counter()
            super().startTest(test)

        def stopTest(self, test):
            super().stopTest(test)
            times[test.id()] = round(time.perf_counter() - getattr(self, "_t0", 0.0), 4)

        def addSuccess(self, test):
            super().addSuccess(test)
            note(test, "pass")

        def addFailure(self, test, err):
            super().addFailure(test, err)
            note(test, "fail", err, self)

        def addError(self, test, err):
            super().addError(test, err)
            note(test, "error", err, self)

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            note(test, "skip")
            messages.setdefault(test.id(), str(reason)[:300])

        def addExpectedFailure(self, test, err):
            super().addExpectedFailure(test, err)
            note(test, "xfail")

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            note(test, "xpass")

        def addSubTest(self, test, subtest, err):
            super().addSubTest(test, subtest, err)
            if err is not None:
                note(
                    test,
                    "fail" if issubclass(err[0], test.failureException) else "error",
                    err,
                    self,
                )

    class Runner(unittest.TextTestRunner):
        resultclass = Result

    class Program(suite.TestProgram):
        def runTests(self):
            from mpi4py import MPI

            rank, size = MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
            library = MPI.Get_library_version().splitlines()[0].strip()
            progress.append(Path(outdir) / f"running.{rank}.txt")
            t0 = time.perf_counter()
            try:
                super().runTests()
            finally:
                out = Path(outdir) / f"outcomes.{rank}.json"
                tmp = out.with_suffix(".tmp")
                tmp.write_text(
                    json.dumps(
                        {
                            "rank": rank,
                            "size": size,
                            "library": library,
                            "wall_s": round(time.perf_counter() - t0, 3),
                            "tests": records,
                            "time_s_by_test": times,
                            "messages": messages,
                        },
                        indent=1,
                    )
                )
                os.replace(tmp, out)
                progress[0].unlink(missing_ok=True)

    Program(module=None, testRunner=Runner)


# ---- launching: commscope's flags, made fit for MPI_Comm_spawn ---------------------


def spawnable(plan):
    """``plan`` (from commscope.launch.plan_launch) with its binding kept but given so
    that the MPI can spawn ranks (test_spawn):

    * Open MPI: a job started with ``--bind-to core`` cannot spawn ranks beyond the
      cores ("A request was made to bind that would require binding processes to more
      cpus than are available"): ``core:overload-allowed`` instead;
    * MPICH (Hydra 5.0.2): any ``-bind-to`` on mpiexec's command line makes the proxy
      abort the whole job at the first MPI_Comm_spawn ("HYDU_set_str: duplicate setting:
      binding"): the same binding through HYDRA_BINDING instead.
    """
    argv = list(plan.argv)
    for flag in ("--bind-to", "-bind-to"):
        if flag in argv[:-1]:
            i = argv.index(flag)
            if flag == "--bind-to" and argv[i + 1] == "core":
                argv[i + 1] = "core:overload-allowed"
            elif flag == "-bind-to":
                plan.env["HYDRA_BINDING"] = argv[i + 1]
                del argv[i : i + 2]
    plan.argv = argv
    return plan


def profile_main(argv):
    """``commscope ARGV`` with every launch plan passed through :func:`spawnable`."""
    import functools
    from commscope import launch
    from commscope.cli import main as cli_main

    plan_launch = launch.plan_launch

    @functools.wraps(plan_launch)
    def planned(*args, **kwargs):
        return spawnable(plan_launch(*args, **kwargs))

    launch.plan_launch = planned
    return cli_main(argv)


# ---- the jobs ---------------------------------------------------------------------

#: The libmpi soname of each MPI ABI mpi4py's wheel has an extension for.
LIBMPI = {"mpich": "libmpi.so.12", "openmpi": "libmpi.so.40"}


def libmpi_env(mpi):
    """What mpi4py needs to load this MPI's libmpi (and so its matching extension)."""
    name = LIBMPI.get(mpi.flavor)
    lib = Path(mpi.mpicc).parent.parent / "lib" / name if name else None
    return {"MPI4PY_LIBMPI": str(lib)} if lib and lib.exists() else {}


def mpi_option(mpi):
    """`commscope profile --mpi` naming ``mpi``."""
    return mpi.name if mpi.name in ("openmpi", "mpich") else mpi.mpicc


def job_env(mpi, launcher, testdir):
    """Variables both runs of a job get on top of what commscope's launcher adds."""
    env = {
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        **libmpi_env(mpi),
        # the workers test_util_pool's pools start (mpi4py.futures, MPI_Comm_spawn)
        # import the test module by name: "No module named 'test_util_pool'" without
        "PYTHONPATH": os.pathsep.join(filter(None, [str(testdir), os.environ.get("PYTHONPATH")])),
    }
    if launcher != "spawnable":
        return env
    if mpi.flavor == "openmpi" and not any(
        k in os.environ for k in ("OMPI_MCA_pml", "OMPI_MCA_btl")
    ):
        # The launcher's single-node choice is pml ob1 with the self and sm BTLs; sm
        # cannot reach the ranks of another job, so MPI_Comm_spawn (test_spawn) and
        # connect/accept (test_dynproc) fail with "unable to reach each other" and
        # MPI_ERR_UNKNOWN. tcp added for them (set either variable to override).
        env.update(OMPI_MCA_pml="ob1", OMPI_MCA_btl="self,sm,tcp")
    if mpi.flavor == "openmpi":
        # spawned ranks beyond the cores: "All nodes which are allocated for this job
        # are already filled" unless the mapper may oversubscribe (mpi4py's CI sets these)
        env.setdefault("PRTE_MCA_rmaps_default_mapping_policy", ":oversubscribe")
        env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "true")
    return env


def suite_args(modules, exclude=()):
    """mpi4py test/main.py's options that select ``modules`` (all when empty) and leave
    out the tests matching ``exclude``."""
    args = []
    for m in modules:
        args += ["-i", f"^{m}\\.py$"]
    for pattern in exclude:
        args += ["-x", pattern]
    return args


def rank_argv(outdir, testdir, modules, verbose, exclude=()):
    return [
        str(Path(__file__).resolve()),
        "_rank",
        str(outdir),
        str(testdir),
        "--",
        *(["-v"] if verbose else ["-q"]),
        *suite_args(modules, exclude),
    ]


def read_outcomes(outdir, nranks):
    got = {}
    for r in range(nranks):
        p = Path(outdir) / f"outcomes.{r}.json"
        if p.exists():
            got[r] = json.loads(p.read_text())
    return got


def died_in(outdir, nranks):
    """{rank: the test it was running} for ranks that reported no outcomes."""
    out = {}
    for r in range(nranks):
        p = Path(outdir) / f"running.{r}.txt"
        if not (Path(outdir) / f"outcomes.{r}.json").exists():
            out[r] = p.read_text().strip() if p.exists() else "(before the first test)"
    return out


@dataclass
class Job:
    """One comparison: the suite (or ``modules`` of it) on ``nranks`` ranks of ``mpi``."""

    mpi: object  # commscope.mpi.MPIInstall
    nranks: int
    testdir: Path
    workdir: Path
    modules: tuple = ()  # test modules (all when empty)
    exclude: tuple = ()  # fnmatch patterns of tests left out
    timeout: float = 1800.0  # seconds per run
    verbose: bool = False
    launcher: str = "spawnable"  # or "commscope": its flags unchanged

    def argv(self, outdir):
        return rank_argv(outdir, self.testdir, self.modules, self.verbose, self.exclude)


def run_plain(job):
    from commscope import launch

    outdir = Path(job.workdir) / "plain"
    outdir.mkdir(parents=True)
    plan = launch.plan_launch(job.mpi, job.nranks, sys.executable, job.argv(outdir))
    if job.launcher == "spawnable":
        plan = spawnable(plan)
    plan.env.update(job_env(job.mpi, job.launcher, job.testdir))
    res = launch.run_job(plan, echo=False, progress=False, timeout=job.timeout)
    (outdir / "stdout.txt").write_text(res.stdout)
    (outdir / "stderr.txt").write_text(res.stderr)
    return dict(
        returncode=res.returncode,
        wall_s=res.wall_s,
        timed_out=res.timed_out,
        ranks=read_outcomes(outdir, job.nranks),
        died_in=died_in(outdir, job.nranks),
        log=str(outdir / "stderr.txt"),
    )


def run_profiled(job):
    outdir = Path(job.workdir) / "profiled"
    outdir.mkdir(parents=True)
    runs = Path(job.workdir) / "runs"
    runs.mkdir()
    cli = (
        [sys.executable, "-m", "commscope"]
        if job.launcher == "commscope"
        else [sys.executable, str(Path(__file__).resolve()), "_profile"]
    )
    cmd = [
        *cli,
        "profile",
        "--mpi",
        mpi_option(job.mpi),
        "-n",
        str(job.nranks),
        "--quiet",
        "--runs",
        str(runs),
        "--name",
        "suite",
        "--timeout",
        str(job.timeout),
        "--",
        sys.executable,
        *job.argv(outdir),
    ]
    t0 = time.monotonic()
    try:
        env = dict(os.environ, **job_env(job.mpi, job.launcher, job.testdir))
        proc = subprocess.run(
            cmd, capture_output=True, text=True, env=env, timeout=job.timeout + 600
        )  # + the conversion to Parquet
        returncode, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        returncode, out, err = None, exc.stdout or "", (exc.stderr or "") + "\n(timed out)"
    wall = time.monotonic() - t0
    (outdir / "stdout.txt").write_text(out if isinstance(out, str) else out.decode())
    (outdir / "stderr.txt").write_text(err if isinstance(err, str) else err.decode())
    run_dir = runs / "suite"
    meta, log = {}, outdir / "stderr.txt"
    if (run_dir / "meta.json").exists():
        meta = json.loads((run_dir / "meta.json").read_text())
    if (run_dir / "stderr.txt").exists():
        log = run_dir / "stderr.txt"
    timed_out = returncode is None or "job killed after" in log.read_text(errors="replace")
    return dict(
        returncode=returncode,
        wall_s=meta.get("wall_s") or wall,
        command_wall_s=wall,
        timed_out=timed_out,
        ranks=read_outcomes(outdir, job.nranks),
        died_in=died_in(outdir, job.nranks),
        run=str(run_dir) if run_dir.exists() else None,
        log=str(log),
    )


# ---- checks --------------------------------------------------------------------


def tally(ranks):
    """Outcome counts of rank 0 (every rank runs the same tests)."""
    tests = ranks.get(0, {}).get("tests", {})
    counts = {o: 0 for o in OUTCOMES}
    for o in tests.values():
        counts[o] += 1
    return dict(tests=len(tests), **counts)


def differences(plain, profiled, nranks):
    """[(rank, test id, plain outcome, profiled outcome)] where the two differ."""
    diffs = []
    for r in range(nranks):
        a = plain["ranks"].get(r, {}).get("tests")
        b = profiled["ranks"].get(r, {}).get("tests")
        if a is None or b is None:
            ended = [
                f"{which} ended during {job['died_in'][r]}"
                for which, job in (("plain", plain), ("profiled", profiled))
                if r in job.get("died_in", {})
            ]
            diffs.append(
                (
                    r,
                    f"<no outcomes: {'; '.join(ended) or 'rank did not report'}>",
                    "missing" if a is None else "ran",
                    "missing" if b is None else "ran",
                )
            )
            continue
        for tid in sorted(set(a) | set(b)):
            if a.get(tid) != b.get(tid):
                diffs.append((r, tid, a.get(tid, "not run"), b.get(tid, "not run")))
    return diffs


def ledger(run_dir):
    """Per rank: the ledger's terms, untracked requests, distinct functions, total calls."""
    from commscope.runs import open_run

    run = open_run(run_dir, warn=False)
    c = run.table("counters")
    f = run.table("functions")
    totals = c.groupby(["rank", "counter"])["value"].sum()
    out = {}
    for rank in sorted(c["rank"].unique()):
        got = {k: int(totals.get((rank, k), 0)) for k in (*LEDGER, "requests_untracked")}
        ended = sum(got[k] for k in LEDGER[1:])
        fr = f[(f["rank"] == rank) & (f["calls"] > 0)]
        out[int(rank)] = dict(
            got,
            balanced=got["requests_started"] == ended,
            functions=int(fr["function"].nunique()),
            calls=int(fr["calls"].sum()),
        )
    return out


def check(job):
    """Run ``job`` plainly and profiled; compare outcomes, read the ledger."""
    job.workdir = Path(job.workdir)
    plain = run_plain(job)
    profiled = run_profiled(job)
    nranks = job.nranks
    diffs = differences(plain, profiled, nranks)
    problems = []
    try:
        led = ledger(profiled["run"]) if profiled["run"] else {}
    except Exception as exc:  # a run whose tables were not written (the conversion failed)
        led = {}
        problems.append(f"counters unreadable: {exc}")
    if diffs:
        problems.append(f"{len(diffs)} outcome difference(s)")
    if profiled["returncode"] != plain["returncode"]:
        problems.append(
            f"exit status {profiled['returncode']} profiled, {plain['returncode']} plain"
        )
    for r in range(nranks):
        e = led.get(r)
        if e is None:
            problems.append(f"rank {r}: no counters")
            continue
        if not e["balanced"]:
            problems.append(f"rank {r}: ledger unbalanced")
        if e["outstanding_requests"]:
            problems.append(
                f"rank {r}: {e['outstanding_requests']} requests outstanding at the "
                "end (the suite completes or frees every request it starts)"
            )
        if e["requests_untracked"]:
            problems.append(f"rank {r}: {e['requests_untracked']} untracked requests")
    return dict(
        mpi=job.mpi.name,
        ranks=nranks,
        launcher=job.launcher,
        modules=list(job.modules),
        exclude=list(job.exclude),
        plain=plain,
        profiled=profiled,
        differences=diffs,
        ledger=led,
        problems=problems,
        ok=not problems,
    )


# ---- output ----------------------------------------------------------------------


def counts_text(ranks):
    t = tally(ranks)
    text = f"{t['pass']}/{t['fail']}/{t['error']}/{t['skip']}"
    extra = [f"{t[k]} {k}" for k in ("xfail", "xpass") if t[k]]
    return text + (f" ({', '.join(extra)})" if extra else "")


def ledger_text(led, nranks):
    parts = []
    for r in range(nranks):
        e = led.get(r)
        if e is None:
            parts.append(f"{r}: none")
            continue
        ok = e["balanced"] and not e["outstanding_requests"]
        parts.append(
            f"{r}: {'yes' if ok else 'NO'} {e['requests_started']}="
            f"{e['requests_completed']}+{e['requests_cancelled']}+"
            f"{e['requests_freed']}+{e['outstanding_requests']}"
        )
    return "; ".join(parts)


def print_report(results):
    from commscope.output import format_table

    rows = []
    for res in results:
        led = res["ledger"]
        rows.append(
            {
                "mpi": res["mpi"],
                "ranks": res["ranks"],
                "tests": tally(res["plain"]["ranks"])["tests"],
                "plain p/f/e/s": counts_text(res["plain"]["ranks"]),
                "profiled p/f/e/s": counts_text(res["profiled"]["ranks"]),
                "diffs": len(res["differences"]),
                "ledger (started=completed+cancelled+freed+outstanding)": ledger_text(
                    led, res["ranks"]
                ),
                "untracked": sum(e["requests_untracked"] for e in led.values()),
                "functions": max((e["functions"] for e in led.values()), default=0),
                "calls": sum(e["calls"] for e in led.values()),
                "plain_s": round(res["plain"]["wall_s"], 1),
                "profiled_s": round(res["profiled"]["wall_s"], 1),
            }
        )
    print(
        format_table(
            rows,
            title="mpi4py test suite, plain vs under commscope profile "
            "(p/f/e/s: passed/failed/errors/skipped on rank 0)",
        )
    )
    for res in results:
        head = f"  {res['mpi']} x{res['ranks']}"
        diffs = res["differences"]
        for r, tid, a, b in diffs[:MAX_LISTED]:
            print(f"{head} rank {r}: {tid}: {a} plain, {b} profiled")
        if len(diffs) > MAX_LISTED:
            print(f"{head}: ... and {len(diffs) - MAX_LISTED} more differences (--json lists all)")
        for which in ("plain", "profiled"):
            job = res[which]
            if job["returncode"] not in (0, 1) or len(job["ranks"]) < res["ranks"]:
                print(
                    f"{head} {which}: exit {job['returncode']}, {len(job['ranks'])}/"
                    f"{res['ranks']} ranks reported; see {job['log']}"
                )
            for r, tid in sorted(job.get("died_in", {}).items()):
                print(f"{head} {which}: rank {r} ended during {tid}")
        if res["problems"]:
            print(f"{head}: " + "; ".join(res["problems"]))


def load_results(path):
    """The results of a --json output, rank keys as numbers again."""
    results = json.loads(Path(path).read_text())["results"]
    for res in results:
        for which in ("plain", "profiled"):
            for key in ("ranks", "died_in"):
                res[which][key] = {int(k): v for k, v in res[which].get(key, {}).items()}
        res["ledger"] = {int(k): v for k, v in res["ledger"].items()}
        res["differences"] = [tuple(d) for d in res["differences"]]
    return results


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_rank"]:
        outdir, testdir, rest = argv[1], argv[2], argv[3:]
        return rank_main(outdir, testdir, rest[1:] if rest[:1] == ["--"] else rest)
    if argv[:1] == ["_profile"]:
        return profile_main(argv[1:])
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--mpi", default="openmpi,mpich", help="comma list of openmpi, mpich (default: both)"
    )
    ap.add_argument(
        "-n",
        "--ranks",
        default="2",
        help="rank counts, comma-separated (default %(default)s; e.g. 1,2)",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help=f"only {len(QUICK)} modules, one or more of every family",
    )
    ap.add_argument(
        "--modules",
        default=None,
        help="comma list of test modules (test_rma,test_io); overrides --quick",
    )
    ap.add_argument(
        "--launcher",
        choices=("spawnable", "commscope"),
        default="spawnable",
        help="spawnable (default): commscope's launch flags with the binding "
        "given so that MPI_Comm_spawn works (see spawnable()); commscope: "
        "its flags unchanged (test_spawn then errors both ways with Open "
        "MPI on as many cores as ranks, and aborts the MPICH job)",
    )
    ap.add_argument(
        "--exclude",
        action="append",
        metavar="PATTERN",
        help="leave out tests whose id matches (mpi4py main.py -x; repeatable)",
    )
    ap.add_argument(
        "--timeout",
        type=float,
        default=1800,
        help="seconds per job before it is killed (default %(default)s)",
    )
    ap.add_argument(
        "--workdir",
        default=None,
        help="keep outcomes, logs and run directories here (default: a temporary "
        "directory, removed unless --keep)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument(
        "-v", "--verbose", action="store_true", help="unittest -v on every rank (in the logs)"
    )
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument(
        "--report",
        metavar="JSON",
        default=None,
        help="print the table of an earlier --json output and exit (status as then)",
    )
    a = ap.parse_args(argv)
    if a.report:
        results = load_results(a.report)
        print_report(results)
        return 0 if results and all(r["ok"] for r in results) else 1

    from commscope import mpi as mpimod

    try:
        testdir = fetch_suite()
    except SuiteUnavailable as exc:
        print(f"skipped: cannot get mpi4py's test suite: {exc}", file=sys.stderr)
        return UNAVAILABLE
    if a.modules:
        modules = [m.strip().removesuffix(".py") for m in a.modules.split(",") if m.strip()]
    elif a.quick:
        modules = list(QUICK)
    else:
        modules = []  # all
    exclude = list(QUICK_EXCLUDE) if a.quick and not a.modules else []
    exclude += a.exclude or []
    known = set(suite_modules(testdir))
    unknown = [m for m in modules if m not in known]
    if unknown:
        print(
            f"conformance: no such test module(s) in {testdir}: {', '.join(unknown)}",
            file=sys.stderr,
        )
        return 2
    work = Path(a.workdir) if a.workdir else Path(tempfile.mkdtemp(prefix="conformance-"))
    work.mkdir(parents=True, exist_ok=True)
    results = []
    try:
        for name in [m.strip() for m in a.mpi.split(",") if m.strip()]:
            m = mpimod.select_mpi(name)
            mpimod.build(m, target="commscope")
            for n in [int(x) for x in a.ranks.split(",")]:
                sub = Path(tempfile.mkdtemp(prefix=f"{name}-{n}-", dir=work))
                print(
                    f"conformance: {name}, {n} rank(s), {len(modules) or 'all'} module(s) ...",
                    file=sys.stderr,
                    flush=True,
                )
                results.append(
                    check(
                        Job(
                            m,
                            n,
                            testdir,
                            sub,
                            tuple(modules),
                            tuple(exclude),
                            a.timeout,
                            a.verbose,
                            a.launcher,
                        )
                    )
                )
        if a.json:
            from commscope.output import dump_json

            dump_json({"suite": str(testdir), "workdir": str(work), "results": results})
        else:
            print_report(results)
    finally:
        if not a.workdir and not a.keep:
            shutil.rmtree(work, ignore_errors=True)
        elif not a.json:
            print(f"outcomes, logs and runs kept in {work}", file=sys.stderr)
    return 0 if results and all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
