"""How MPI jobs start: the one place that knows launcher flags.

``plan_launch`` turns "run this program on N ranks" into an argv and environment
for the selected MPI's ``mpiexec`` (one or more hosts) or ``srun`` (inside a Slurm
allocation).  Flags this machine needs are added automatically and listed in
``LaunchPlan.notes`` so every run directory records why they were set:

* running as root (Open MPI refuses without OMPI_ALLOW_RUN_AS_ROOT*);
* oversubscription (more ranks x threads than cores: no binding, yield when idle);
* fast single-node start-up for Open MPI (pml ob1 with the self and sm BTLs);
* OMP_WAIT_POLICY=passive, since spinning OpenMP threads starve MPI progress when
  threads outnumber cores;
* under srun, the ``--mpi`` plugin the MPI needs (see commscope.srun_mpi).
"""

import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import srun_mpi
from .errors import EnvironmentProblem, InputError, Interrupted
from .interrupts import stop_signals_to


def available_cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@functools.lru_cache(maxsize=None)
def shared_memory_btl(mpiexec):
    """Open MPI's shared-memory BTL: "vader" up to 4.x (which has no "sm"), "sm" from 5.0.

    Asked of the ompi_info next to ``mpiexec``; "sm" when there is none to ask.
    """
    try:
        out = subprocess.run(
            [str(Path(mpiexec).parent / "ompi_info"), "--version"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return "sm"
    m = re.search(r"Open MPI v(\d+)\.", out)
    return "vader" if m and int(m.group(1)) < 5 else "sm"


def in_slurm_allocation():
    return "SLURM_JOB_ID" in os.environ


@dataclass
class LaunchPlan:
    argv: list
    env: dict  # variables added to the caller's environment
    launcher: str  # "mpiexec" or "srun"
    nranks: int
    threads_per_rank: int = 1
    hosts: list = field(default_factory=list)
    oversubscribed: bool = False
    bound: bool = False
    notes: list = field(default_factory=list)

    def to_dict(self):
        return asdict(self)


#: A user's own LD_PRELOAD, set aside by the CLI (:func:`set_aside_user_preload`).
USER_PRELOAD = "COMMSCOPE_USER_LD_PRELOAD"


def set_aside_user_preload():
    """Move a user's LD_PRELOAD out of commscope's environment: it is meant for the
    program, so jobs get it back (:func:`run_job`, :func:`wrap_env`) but commscope's own
    tools (cmake, ninja, compilers) do not: a library that ignores SIGCHLD makes their
    waitpid fail ("ninja: fatal: waitpid: No child processes")."""
    value = os.environ.pop("LD_PRELOAD", None)
    if value:
        os.environ[USER_PRELOAD] = value


def user_preload():
    """The user's own LD_PRELOAD ("" without one), set aside or not."""
    return os.environ.get("LD_PRELOAD") or os.environ.get(USER_PRELOAD) or ""


def wrap_env(program, args, preload=(), env=None):
    """``env LD_PRELOAD=... K=V program args`` as (program, args): the preload and the
    variables reach the ranks only, never the launcher.  A user's own LD_PRELOAD is
    kept after ours."""
    preload = [str(p) for p in preload]
    if user_preload():
        preload.append(user_preload())
    words = ([f"LD_PRELOAD={':'.join(preload)}"] if preload else []) + [
        f"{k}={v}" for k, v in (env or {}).items()
    ]
    return shutil.which("env") or "/usr/bin/env", [*words, str(program), *map(str, args)]


def _whole(value, least):
    try:
        return int(value) == value and value >= least
    except (TypeError, ValueError, OverflowError):
        return False


def check_request(nranks, threads=1, bind="auto", launcher="auto", ranks_per_node=None):
    """Refuse a launch that cannot be planned, before anything (a run directory) is made;
    returns the launcher asked for ("auto" resolved from COMMSCOPE_LAUNCHER only)."""
    if not _whole(nranks, 1):
        raise InputError("--ranks", None, f"needs at least one rank, got {nranks}")
    if not _whole(threads, 1):
        raise InputError("--threads", None, f"needs at least one thread, got {threads}")
    if ranks_per_node is not None and ranks_per_node < 1:
        raise InputError("--ranks-per-node", None, f"must be at least 1, got {ranks_per_node}")
    if bind not in ("auto", "core", "none"):
        raise InputError("--bind", None, f"expected auto, core or none, got {bind!r}")
    launcher = launcher if launcher != "auto" else os.environ.get("COMMSCOPE_LAUNCHER", "auto")
    if launcher not in ("auto", "srun", "mpiexec"):
        raise InputError("--launcher", None, f"expected auto, srun or mpiexec, got {launcher!r}")
    return launcher


def plan_launch(
    mpi,
    nranks,
    program,
    args=(),
    *,
    hosts=None,
    ranks_per_node=None,
    threads=1,
    bind="auto",
    launcher="auto",
    omp_wait_policy="passive",
):
    """Build the command line and environment to run ``program`` on ``nranks`` ranks.

    ``hosts``: list of host names for a multi-node mpiexec run (default: this node).
    ``bind``: "auto" binds ranks to cores when ranks x threads fit the cores,
    "core" forces it, "none" never binds.
    ``launcher``: "auto" (or COMMSCOPE_LAUNCHER) uses srun inside a Slurm
    allocation, else mpiexec; "mpiexec" inside an allocation lets the MPI's own
    launcher start its daemons through Slurm.
    """
    launcher = check_request(nranks, threads, bind, launcher)
    if launcher == "auto":
        launcher = "srun" if in_slurm_allocation() else "mpiexec"
    hosts = list(hosts or [])
    env, notes = {}, []
    # the native programs stop at once when their MPI world is not this size (singletons)
    env["COMMSCOPE_NRANKS"] = str(nranks)
    # mpiexec inside an allocation starts its daemons on the allocated nodes through Slurm
    nodes = max(1, len(hosts)) if hosts or launcher == "srun" else _allocated_nodes()
    per_node = ranks_per_node or -(-nranks // nodes)
    oversub = launcher != "srun" and per_node * threads > available_cores()
    want_bind = bind == "core" or (bind == "auto" and not oversub and threads == 1)
    shared = srun_mpi.allocation_shared_hosts() if in_slurm_allocation() else {}
    if shared and bind == "auto" and want_bind:
        # each node's slurmd or MPI daemon binds its ranks to "its" first cores: the same ones
        want_bind = False
        where = "; ".join(f"{', '.join(nodes)} on {host}" for host, nodes in shared.items())
        notes.append(
            f"ranks not bound: Slurm nodes share a host ({where}), and each node "
            "would bind its ranks to the same cores"
        )

    # Always set: an OpenMP runtime left to itself starts one thread per core in every rank.
    env["OMP_NUM_THREADS"] = str(threads)
    if omp_wait_policy and "OMP_WAIT_POLICY" not in os.environ:
        env["OMP_WAIT_POLICY"] = omp_wait_policy
        notes.append(f"OMP_WAIT_POLICY={omp_wait_policy} (spinning threads starve MPI progress)")

    if launcher == "srun":
        mpi_opt, why = srun_mpi.srun_mpi_option(mpi, program)
        argv = [
            "srun",
            "-n",
            str(nranks),
            *mpi_opt,
            f"--cpus-per-task={threads}",
            f"--cpu-bind={'cores' if want_bind else 'none'}",
        ]
        if ranks_per_node:
            argv.append(f"--ntasks-per-node={ranks_per_node}")
        notes.append(
            f"launched with srun inside Slurm allocation {os.environ.get('SLURM_JOB_ID', '?')}"
        )
        notes.append(why)
        wheel_env, wheel_notes = srun_mpi.wheel_pmix_env(mpi)
        env.update(wheel_env)
        notes += wheel_notes
    elif mpi.flavor == "openmpi":
        argv = [mpi.mpiexec, "-n", str(nranks)]
        if os.geteuid() == 0:
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
            notes.append("running as root: OMPI_ALLOW_RUN_AS_ROOT=1")
        if nodes > 1 and in_slurm_allocation():
            notes.append(
                f"mpiexec inside Slurm allocation {os.environ.get('SLURM_JOB_ID')}: "
                f"its daemons start on the {nodes} allocated nodes through srun"
            )
        if nodes == 1 and "OMPI_MCA_pml" not in os.environ and "OMPI_MCA_btl" not in os.environ:
            btl = f"self,{shared_memory_btl(mpi.mpiexec)}"
            env.update(OMPI_MCA_pml="ob1", OMPI_MCA_btl=btl)
            notes.append(f"single node: OMPI_MCA_pml=ob1 OMPI_MCA_btl={btl} (fast start-up)")
        if oversub or per_node > 2:
            argv.append("--oversubscribe")
            if not oversub:
                notes.append(
                    f"--oversubscribe: Open MPI may count fewer slots than the "
                    f"{per_node} ranks per node even when the cores are there"
                )
        if oversub:
            env["OMPI_MCA_mpi_yield_when_idle"] = "1"
        argv += ["--bind-to", "core" if want_bind else "none"]
        if hosts:
            argv += [
                "--host",
                ",".join(f"{h}:{per_node}" for h in hosts),
                "--map-by",
                "node" if ranks_per_node is None else "slot",
            ]
    else:  # MPICH (hydra) and unknown mpiexecs that follow its flags
        argv = [mpi.mpiexec, "-n", str(nranks)]
        if mpi.flavor == "mpich":
            argv += ["-bind-to", "core" if want_bind else "none"]
        if hosts:
            argv += ["-hosts", ",".join(hosts), "-ppn", str(per_node)]
    if oversub:
        notes.append(
            f"oversubscribed: {per_node} ranks x {threads} threads on "
            f"{available_cores()} cores; ranks not bound"
        )
    argv += [str(program), *map(str, args)]
    return LaunchPlan(
        argv=argv,
        env=env,
        launcher=launcher,
        nranks=nranks,
        threads_per_rank=threads,
        hosts=hosts or [os.uname().nodename],
        oversubscribed=oversub,
        bound=want_bind,
        notes=notes,
    )


def _allocated_nodes():
    """Nodes of the Slurm allocation we are in (1 outside one)."""
    try:
        return max(1, int(os.environ.get("SLURM_JOB_NUM_NODES", "1")))
    except ValueError:
        return 1


_PROGRESS = re.compile(r"^@progress (\d+) (\d+) ?(.*)$")


class _ProgressBar:
    """A one-line bar on stderr when it is a terminal; sparse lines otherwise.

    Lines the job prints go through :meth:`echo`, which takes the bar off its line
    first and draws it again below, so a table never runs into the bar.
    """

    def __init__(self, title, enabled):
        self.title, self.enabled = title, enabled
        self.tty = sys.stderr.isatty()
        self.last_line = 0.0
        self.start = time.monotonic()
        self.shown = ""  # the bar as last drawn ("" when none is on screen)
        self.lock = threading.Lock()

    def update(self, done, total, label):
        if not self.enabled or total <= 0:
            return
        frac = done / total
        elapsed = time.monotonic() - self.start
        with self.lock:
            if self.tty:
                bar = "#" * int(30 * frac)
                self.shown = f"{self.title} [{bar:<30}] {done}/{total} {label} {elapsed:5.1f}s"
                sys.stderr.write(f"\r\033[K{self.shown}")
                if done >= total:
                    sys.stderr.write("\n")
                    self.shown = ""
                sys.stderr.flush()
            elif done >= total or time.monotonic() - self.last_line > 10:
                self.last_line = time.monotonic()
                print(f"{self.title}: {done}/{total} {label} ({elapsed:.0f}s)", file=sys.stderr)

    def close(self):
        """End the bar's line if it is still on screen."""
        with self.lock:
            if self.shown:
                sys.stderr.write("\n")
                sys.stderr.flush()
                self.shown = ""

    def echo(self, line, stream):
        """Write one line of the job's output to ``stream`` without breaking the bar."""
        with self.lock:
            if self.shown:
                sys.stderr.write("\r\033[K")
                sys.stderr.flush()
            stream.write(line)
            stream.flush()
            if self.shown:
                sys.stderr.write(self.shown)
                sys.stderr.flush()


#: Bytes of each of a job's streams kept (the last ones): a program that prints for
#: hours cannot fill the memory or the run directory.
KEEP_BYTES = 4 << 20

#: What never reaches a terminal or a file from a job's output: terminal escape
#: sequences and control bytes other than tab and newline (Open MPI 5's prterun ends its
#: MPI_Abort notice with a NUL byte).
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")


def clean_line(line):
    """``line`` without terminal escapes and control bytes (a CR before the newline too)."""
    return _ESCAPES.sub("", line)


class _Tail:
    """The last ``limit`` bytes of a stream, by whole lines, and how much was dropped."""

    def __init__(self, limit=KEEP_BYTES):
        import collections

        self.limit, self.lines, self.size = limit, collections.deque(), 0
        self.dropped_bytes = self.dropped_lines = 0

    def add(self, line):
        self.lines.append(line)
        self.size += len(line)
        while self.size > self.limit and len(self.lines) > 1:
            old = self.lines.popleft()
            self.size -= len(old)
            self.dropped_bytes += len(old)
            self.dropped_lines += 1

    def text(self):
        return "".join(self.lines)


@dataclass
class JobResult:
    returncode: int
    stdout: str  # the last KEEP_BYTES of the job's stdout, cleaned
    stderr: str  # the same of its stderr (progress lines left out)
    wall_s: float
    timed_out: bool = False
    stdout_dropped: tuple = (0, 0)  # (bytes, lines) cut from the start of stdout
    stderr_dropped: tuple = (0, 0)
    own_lines: str = ""  # every stderr line of commscope's native parts, kept whole

    def kept(self, stream):
        """A stream's text as a file of the run keeps it: a note first when it was cut."""
        text = self.stdout if stream == "stdout" else self.stderr
        nbytes, lines = self.stdout_dropped if stream == "stdout" else self.stderr_dropped
        if not nbytes:
            return text
        return (
            f"[commscope: the first {nbytes:,} bytes ({lines:,} lines) of the program's "
            f"{stream} are not kept; the last {len(text.encode()):,} bytes follow]\n" + text
        )


#: Seconds a stopped job gets to end cleanly before its processes are SIGKILLed.
GRACE_S = 3.0


def guarded_argv(argv, grace_s=GRACE_S):
    """``argv`` under :mod:`commscope.jobguard`, which ends every rank with commscope (Linux)."""
    if not sys.platform.startswith("linux"):
        return list(argv)
    return [sys.executable, "-m", "commscope.jobguard", str(os.getpid()), str(grace_s), "--", *argv]


def run_job(
    plan,
    *,
    cwd=None,
    timeout=None,
    title="run",
    echo=True,
    progress=True,
    echo_stderr=False,
    grace_s=GRACE_S,
    keep_bytes=None,
):
    """Run a planned job; stream its stdout (when ``echo``) and show progress.

    ``echo_stderr`` passes the job's own stderr through as well (a profiled
    program's messages); it is kept in the result either way, the last ``keep_bytes``
    of each stream.  Every line, echoed or kept, is cleaned of terminal escapes and
    control bytes (:func:`clean_line`), and decoded as UTF-8 with bad bytes replaced.

    Returns a :class:`JobResult`; a non-zero exit is the caller's to interpret
    (the samples already written stay on disk either way).  SIGINT, SIGTERM or
    SIGHUP to commscope end the whole job (launcher and ranks: SIGTERM, then
    SIGKILL after ``grace_s``) and then raise :class:`~commscope.errors.Interrupted`;
    a SIGKILLed commscope takes the job with it (see :mod:`commscope.jobguard`).
    """
    _refuse_where_jobs_are_forbidden(plan.argv)
    env = dict(os.environ, **plan.env)
    # A user's LD_PRELOAD goes where it was given: to the ranks through `env
    # LD_PRELOAD=...` when the argv carries it (wrap_env), else to the whole job.  Not to
    # a launcher whose ranks get it anyway: MPICH's hydra hangs if it ignores SIGCHLD.
    if user_preload() and not any(str(a).startswith("LD_PRELOAD=") for a in plan.argv):
        env.setdefault("LD_PRELOAD", user_preload())
    # A single-node mpiexec keeps its session files (Open MPI: <TMPDIR>/ompi.<pid>, PMIx
    # sockets) in a directory of this job's own: a killed launcher leaves its directory
    # behind, and a later launcher with the same pid failed to start on it ("The PMIx
    # server's listener thread failed to start").
    session = (
        tempfile.mkdtemp(prefix="commscope-job-")
        if plan.launcher == "mpiexec" and len(plan.hosts) <= 1
        else None
    )
    if session:  # the guard removes it even when commscope is SIGKILLed
        env["TMPDIR"] = env["COMMSCOPE_JOB_TMPDIR"] = session
    try:
        return _run_guarded(
            plan,
            env,
            cwd,
            timeout,
            title,
            echo,
            progress,
            echo_stderr,
            grace_s,
            keep_bytes or KEEP_BYTES,
        )
    finally:
        if session:  # off Linux there is no guard to remove it
            shutil.rmtree(session, ignore_errors=True)


#: The prefixes of commscope's own native parts on a job's stderr (their failed writes
#: and notes are read after the job, wherever they fell in a long output).
_OWN = ("commscope", "[commscope")


def _refuse_where_jobs_are_forbidden(argv):
    """The test suite's guard (tests/conftest.py): a test without the ``mpi`` marker runs
    with COMMSCOPE_TEST_NO_JOBS naming a file; a job it starts, here or in a child
    process, is written there (the test then fails naming itself) and not started."""
    record = os.environ.get("COMMSCOPE_TEST_NO_JOBS")
    if record:
        with open(record, "a") as f:
            f.write(" ".join(map(str, argv)) + "\n")
        raise EnvironmentProblem(
            f"{argv[0]}: no MPI job may start here (a test without "
            "the mpi marker, COMMSCOPE_TEST_NO_JOBS)"
        )


def _run_guarded(
    plan, env, cwd, timeout, title, echo, progress, echo_stderr, grace_s, keep_bytes=KEEP_BYTES
):
    bar = _ProgressBar(title, progress)
    out_lines, err_lines, own = _Tail(keep_bytes), _Tail(keep_bytes), []
    stopped, timed_out = [], False
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            guarded_argv(plan.argv, grace_s),
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            bufsize=1,
            start_new_session=True,
        )
    except OSError as exc:
        raise EnvironmentProblem(f"cannot start {plan.argv[0]}: {exc}") from exc

    def pump_stdout():
        for line in proc.stdout:
            line = clean_line(line)
            out_lines.add(line)
            if echo:
                bar.echo(line, sys.stdout)

    def pump_stderr():
        for line in proc.stderr:
            line = clean_line(line)
            m = _PROGRESS.match(line.rstrip("\n"))
            if m:
                bar.update(int(m.group(1)), int(m.group(2)), m.group(3))
            else:
                err_lines.add(line)
                if line.startswith(_OWN) and len(own) < 1000:
                    own.append(line)
                if echo_stderr:
                    bar.echo(line, sys.stderr)

    def on_signal(signum, frame):
        stopped.append(signum)
        _stop(proc, signum)  # a second signal makes the guard skip the grace period

    pumps = [threading.Thread(target=f, daemon=True) for f in (pump_stdout, pump_stderr)]
    for t in pumps:
        t.start()
    try:
        with stop_signals_to(on_signal):
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _stop(proc, signal.SIGTERM)
                proc.wait()
                timed_out = True
                err_lines.add(f"commscope: job killed after {timeout} s timeout\n")
            except BaseException:
                _stop(proc, signal.SIGTERM)
                proc.wait()
                raise
        for t in pumps:
            t.join(timeout=5)
    finally:
        bar.close()  # a job that stopped short leaves no half bar for the next message
    if stopped:
        raise Interrupted(stopped[0])
    return JobResult(
        proc.returncode,
        out_lines.text(),
        err_lines.text(),
        time.monotonic() - start,
        timed_out,
        (out_lines.dropped_bytes, out_lines.dropped_lines),
        (err_lines.dropped_bytes, err_lines.dropped_lines),
        "".join(own),
    )


def _stop(proc, signum):
    """Ask the guard to end the job (without the guard, end the launcher's group)."""
    try:
        if proc.args[1:3] == ["-m", "commscope.jobguard"]:
            proc.send_signal(signum)
        else:
            os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
