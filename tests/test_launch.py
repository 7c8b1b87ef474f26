"""The launcher: flags set for this machine, and real jobs started through it."""

import os

import pytest

from commscope import launch, mpi
from commscope.errors import InputError
from commscope.launch import available_cores, plan_launch
from needs import needs


@pytest.fixture
def ompi():
    return mpi.MPIInstall("openmpi", "/x/mpicc", "/x/mpiexec", "openmpi")


@pytest.fixture
def mpich():
    return mpi.MPIInstall("mpich", "/y/mpicc", "/y/mpiexec", "mpich")


@pytest.fixture
def no_slurm(monkeypatch):
    for var in ("SLURM_JOB_ID", "OMPI_MCA_pml", "OMPI_MCA_btl", "OMP_WAIT_POLICY"):
        monkeypatch.delenv(var, raising=False)


def test_open_mpi_single_node_flags(ompi, no_slurm):
    plan = plan_launch(ompi, 2, "prog", ["-a"])
    assert plan.argv[:3] == ["/x/mpiexec", "-n", "2"] and plan.argv[-2:] == ["prog", "-a"]
    assert plan.env["OMPI_MCA_pml"] == "ob1" and plan.env["OMPI_MCA_btl"] == "self,sm"
    assert plan.env["OMP_WAIT_POLICY"] == "passive"
    if os.geteuid() == 0:
        assert plan.env["OMPI_ALLOW_RUN_AS_ROOT"] == "1"
        assert any("root" in n for n in plan.notes)
    if available_cores() >= 2:
        assert "--bind-to" in plan.argv and plan.argv[plan.argv.index("--bind-to") + 1] == "core"
        assert not plan.oversubscribed


def test_oversubscription_unbinds_and_yields(ompi, no_slurm):
    n = available_cores() + 1
    plan = plan_launch(ompi, n, "prog")
    assert plan.oversubscribed and "--oversubscribe" in plan.argv
    assert plan.argv[plan.argv.index("--bind-to") + 1] == "none"
    assert plan.env["OMPI_MCA_mpi_yield_when_idle"] == "1"
    assert any("oversubscribed" in note for note in plan.notes)


def test_threads_count_towards_oversubscription(ompi, no_slurm):
    plan = plan_launch(ompi, 2, "prog", threads=available_cores())
    assert plan.oversubscribed
    assert plan.env["OMP_NUM_THREADS"] == str(available_cores())


def test_multi_node_hosts(ompi, mpich, no_slurm):
    plan = plan_launch(ompi, 4, "prog", hosts=["a", "b"])
    assert "--host" in plan.argv and "a:2,b:2" in plan.argv
    assert "OMPI_MCA_btl" not in plan.env  # sm alone cannot reach another node
    plan = plan_launch(mpich, 4, "prog", hosts=["a", "b"])
    assert plan.argv[plan.argv.index("-hosts") + 1] == "a,b"


def test_srun_inside_slurm(ompi, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    plan = plan_launch(ompi, 8, "prog", ranks_per_node=4)
    assert plan.launcher == "srun" and plan.argv[:3] == ["srun", "-n", "8"]
    assert "--ntasks-per-node=4" in plan.argv


def test_nonsense_parameters(ompi):
    with pytest.raises(InputError):
        plan_launch(ompi, 0, "prog")
    with pytest.raises(InputError):
        plan_launch(ompi, 2, "prog", bind="sideways")


def test_singleton_message_names_the_launcher(mpich, no_slurm):
    """The launcher is an absolute path; the message once named an empty one."""
    from commscope import srun_mpi

    plan = plan_launch(mpich, 2, "/abs/prog", ["-x"])
    problem = srun_mpi.singleton_problem(plan, "@singleton 1 2\n@singleton 1 2\n")
    assert "launched with `/y/mpiexec -n 2 -bind-to" in str(problem)


# ---- --mpi PATH finds its own MPI's launcher ------------------------------------

DEBIAN = {
    flavor: (f"/usr/bin/mpicc.{flavor}", f"/usr/bin/mpiexec.{flavor}")
    for flavor in ("mpich", "openmpi")
}


def _needs_debian(*flavors):
    missing = [p for f in flavors for p in DEBIAN[f] if not os.path.exists(p)]
    return needs(
        not missing,
        f"Debian's MPI is not installed here (no {', '.join(missing)}; "
        "scripts/setup.sh installs it as root)",
    )


@_needs_debian("mpich")
def test_debian_mpicc_mpich_gets_mpiexec_mpich(tmp_path):
    """/usr/bin/mpiexec is an alternatives link that may start the other MPI: an
    mpicc.SUFFIX gets mpiexec.SUFFIX, also when reached through a link of another name."""
    m = mpi.select_mpi("/usr/bin/mpicc.mpich")
    assert (m.mpiexec, m.flavor) == ("/usr/bin/mpiexec.mpich", "mpich")
    (tmp_path / "mpicc").symlink_to("/usr/bin/mpicc.mpich")
    (tmp_path / "mpiexec").symlink_to("/bin/true")
    m = mpi.select_mpi(str(tmp_path / "mpicc"))
    assert (m.mpicc, m.mpiexec, m.flavor) == (
        str(tmp_path / "mpicc"),
        "/usr/bin/mpiexec.mpich",
        "mpich",
    )


@_needs_debian("openmpi")
def test_debian_mpicc_openmpi_gets_mpiexec_openmpi():
    m = mpi.select_mpi("/usr/bin/mpicc.openmpi")
    assert (m.mpiexec, m.flavor) == ("/usr/bin/mpiexec.openmpi", "openmpi")


@_needs_debian("mpich", "openmpi")
def test_a_launcher_of_another_mpi_is_refused_naming_both(tmp_path):
    mpicc = tmp_path / "mpicc"  # a wrapper script: no link name to follow to mpicc.mpich
    mpicc.write_text('#!/bin/sh\nexec /usr/bin/mpicc.mpich "$@"\n')
    mpicc.chmod(0o755)
    (tmp_path / "mpiexec").symlink_to("/usr/bin/mpiexec.openmpi")
    with pytest.raises(InputError) as info:
        mpi.select_mpi(str(mpicc))
    msg = str(info.value)
    assert str(mpicc) in msg and str(tmp_path / "mpiexec") in msg
    assert "is MPICH" in msg and "Open MPI's" in msg and "/usr/bin/mpicc.mpich" in msg


@pytest.mark.mpi
def test_real_job_reports_exit_status_and_output(default_mpi):
    program = mpi.binary(default_mpi, "mpiinfo")
    res = launch.run_job(launch.plan_launch(default_mpi, 2, program), echo=False, timeout=120)
    assert res.returncode == 0
    assert '"thread_level_provided"' in res.stdout


@pytest.mark.mpi
def test_each_job_keeps_the_launcher_s_session_files_in_a_directory_of_its_own(default_mpi):
    """A SIGKILLed launcher leaves <TMPDIR>/ompi.<pid>; a later launcher with that pid could
    not start on it. Each job's directory is its own and is gone when the job is."""
    plan = launch.plan_launch(default_mpi, 2, "/bin/sh", ["-c", 'ls -d "$TMPDIR"/ompi.*'])
    first, second = (
        launch.run_job(plan, echo=False, progress=False, timeout=120) for _ in range(2)
    )
    dirs = [os.path.dirname(r.stdout.split()[0]) for r in (first, second)]
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert dirs[0] != dirs[1] and all(
        os.path.basename(d).startswith("commscope-job-") for d in dirs
    )
    assert not any(os.path.exists(d) for d in dirs)


@pytest.mark.mpi
def test_timeout_kills_the_job(default_mpi):
    program = mpi.binary(default_mpi, "pingpong")
    plan = launch.plan_launch(default_mpi, 2, program, ["-m", "1:1", "-i", "100000000"])
    res = launch.run_job(plan, echo=False, progress=False, timeout=2)
    assert res.returncode != 0
    assert "timeout" in res.stderr


def test_srun_gets_the_plugin_each_mpi_speaks(default_mpi, monkeypatch, mpich_mpi):
    """Open MPI: pmix; the mpich wheel (configured without PMIx, says mpichversion): pmi2."""
    from commscope import srun_mpi

    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.delenv("SLURM_MPI_TYPE", raising=False)
    monkeypatch.setattr(srun_mpi, "srun_plugins", lambda: ("pmix", "none", "pmi2"))
    plan = plan_launch(default_mpi, 2, "prog")
    assert "--mpi=pmix" in plan.argv
    assert "srun --mpi=pmix: Open MPI connects its ranks through PMIx" in plan.notes
    # the wheel's PMIx finds its help files where pip put them, and skips the munge
    # security component it lacks
    prefix = plan.env["PMIX_INSTALL_PREFIX"]
    assert os.path.exists(f"{prefix}/share/pmix/help-pmix-mca-base.txt")
    assert plan.env["PMIX_MCA_psec"] == "native"
    plan = plan_launch(mpich_mpi, 2, "prog")
    assert "--mpi=pmi2" in plan.argv and "PMIX_INSTALL_PREFIX" not in plan.env
    assert any("configured without PMIx" in n for n in plan.notes)
    monkeypatch.setenv("SLURM_MPI_TYPE", "pmix")  # the user's choice wins
    plan = plan_launch(mpich_mpi, 2, "prog")
    assert not any(a.startswith("--mpi") for a in plan.argv)
    assert "srun --mpi from SLURM_MPI_TYPE=pmix (set in the environment)" in plan.notes


def test_srun_without_the_needed_plugin_says_what_to_do(ompi, monkeypatch):
    from commscope import srun_mpi
    from commscope.errors import EnvironmentProblem

    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.delenv("SLURM_MPI_TYPE", raising=False)
    monkeypatch.setattr(srun_mpi, "srun_plugins", lambda: ("none", "pmi2"))
    with pytest.raises(
        EnvironmentProblem,
        match=r"needs srun --mpi=pmix .* offers only none, "
        r"pmi2 .*--launcher mpiexec",
    ):
        plan_launch(ompi, 2, "prog")


@pytest.mark.mpi
@pytest.mark.mpich
def test_singleton_ranks_are_caught(default_mpi, mpich_mpi):
    """Open MPI programs started by MPICH's mpiexec come up as 1-rank jobs: they stop at
    once (exit 3, one @singleton line each) and commscope says why."""
    from commscope import srun_mpi

    program = mpi.binary(default_mpi, "pingpong")
    plan = launch.plan_launch(mpich_mpi, 2, program, ["-m", "1:1", "--out", "/nonexistent"])
    res = launch.run_job(plan, echo=False, progress=False, timeout=120)
    assert res.returncode == 3 and res.stderr.count("@singleton 1 2") == 2
    problem = srun_mpi.singleton_problem(plan, res.stderr)
    assert "the 2 ranks started as separate MPI jobs of 1 rank(s) each" in str(problem)
    assert "mpiexec next to its mpicc" in str(problem)
    assert srun_mpi.singleton_problem(plan, "a normal failure\n") is None


def _in_a_terminal(argv, timeout=120):
    """Everything ``argv`` writes to a pseudo-terminal (stdout and stderr both)."""
    import pty
    import select
    import subprocess

    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    chunks = []
    while select.select([master], [], [], timeout)[0]:
        try:
            data = os.read(master, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=timeout)
    os.close(master)
    return b"".join(chunks).decode()


def _screen(text):
    """The lines a terminal shows for ``text`` (carriage return, erase line, newline)."""
    lines, line, col = [], [], 0
    for token in text.replace("\x1b[K", "\0").replace("\r\n", "\n"):
        if token == "\r":
            col = 0
        elif token == "\0":
            del line[col:]
        elif token == "\n":
            lines.append("".join(line))
            line, col = [], 0
        else:
            line[col : col + 1] = [token]
            col += 1
    return lines + ["".join(line)]


@pytest.mark.mpi
def test_the_progress_bar_never_shares_a_line_with_the_table(default_mpi, tmp_path):
    import sys

    text = _in_a_terminal(
        [
            sys.executable,
            "-m",
            "commscope",
            "bench",
            "pingpong",
            "-m",
            "1:4K",
            "-i",
            "2000",
            "--runs",
            str(tmp_path),
        ]
    )
    screen = _screen(text)
    rows = [line for line in screen if line[:1].isdigit()]
    assert [int(r.split()[0]) for r in rows] == [2**i for i in range(13)], screen
    assert any(line.startswith("pingpong [") for line in screen), screen  # the bar was drawn
    assert all("pingpong [" not in r for r in rows), screen


@pytest.mark.mpi
def test_a_stopped_job_leaves_no_half_bar_before_the_message(default_mpi, tmp_path):
    import sys

    text = _in_a_terminal(
        [
            sys.executable,
            "-m",
            "commscope",
            "bench",
            "pingpong",
            "-m",
            "1:4M",
            "-i",
            "100000",
            "-I",
            "10000",
            "--timeout",
            "2",
            "--runs",
            str(tmp_path),
        ]
    )
    screen = _screen(text)
    error = [line for line in screen if "exited with status" in line]  # the timeout's message
    assert error and all(line.startswith("commscope:") for line in error), screen
