"""commscope on a real Slurm: the 4-node testbed of scripts/slurm-testbed.sh.

Every launch path commscope offers under Slurm runs here: the batch script
`commscope slurm` writes (under MpiDefault=none, Debian's default, and pmix),
`commscope bench` inside an salloc allocation (srun) and with each MPI's own
mpiexec there, the contention layout of 004 Fig. 6 on four nodes through fit and
report, singleton ranks, and scancel of a running study.  The four Slurm nodes
share this one host, so the numbers mean nothing; the paths are what is tested.

Skipped, with the reason, when the testbed is not up (it needs root: `make test`
as root starts it; scripts/test.sh sets COMMSCOPE_REQUIRE_SLURM=1 then, and a
missing testbed fails instead of skipping).
"""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from commscope.collect.lifecycle import mpi_info
from commscope.runs import open_run

ROOT = Path(__file__).resolve().parents[1]
TESTBED = ROOT / "scripts" / "slurm-testbed.sh"
CONF = Path(os.environ.get("COMMSCOPE_SLURM_DIR", "/var/tmp/commscope-slurm")) / "slurm.conf"
COMMSCOPE = str(Path(sys.executable).parent / "commscope")

pytestmark = [pytest.mark.mpi, pytest.mark.slurm]


def _testbed_problem():
    if not CONF.exists():
        return (
            f"no Slurm testbed ({CONF} missing): start one as root with "
            "`scripts/slurm-testbed.sh up` (`make test` does when run as root)"
        )
    try:
        proc = subprocess.run(
            ["sinfo", "-h", "-N", "-t", "idle,alloc,mix", "-o", "%N"],
            env=dict(os.environ, SLURM_CONF=str(CONF)),
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"Slurm testbed does not answer (sinfo: {exc})"
    nodes = set(proc.stdout.split())
    if len(nodes) < 4:
        return f"Slurm testbed has {len(nodes)} usable node(s), needs 4 ({proc.stderr.strip()})"
    return None


@pytest.fixture(scope="module")
def slurm_env():
    """The environment for Slurm clients and commscope under the testbed."""
    problem = _testbed_problem()
    if problem:
        if os.environ.get("COMMSCOPE_REQUIRE_SLURM") == "1":
            pytest.fail(problem)
        pytest.skip(problem)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLURM_", "COMMSCOPE_LAUNCHER", "OMPI_MCA_", "PMIX_MCA_"))
    }
    env.update(SLURM_CONF=str(CONF), PATH=f"{Path(sys.executable).parent}:{env['PATH']}")
    return env


@pytest.fixture
def mpi_default(slurm_env):
    """Set the cluster's MpiDefault for one test, Debian's `none` again afterwards."""
    changed = []

    def set_to(kind):
        if os.geteuid() != 0:
            pytest.skip("changing MpiDefault needs root")
        subprocess.run([str(TESTBED), "mpi-default", kind], env=slurm_env, check=True, timeout=60)
        changed.append(kind)

    yield set_to
    if changed:
        set_to("none")


def _run(argv, env, cwd, timeout=300):
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def _single_run(runs):
    found = sorted(p.parent for p in Path(runs).glob("*/meta.json"))
    assert len(found) == 1, found
    return open_run(found[0])


def _sbatch_study(tmp_path, env, nodes, steps):
    """Write the study with `commscope slurm`, sbatch --wait it; (job output, study dir)."""
    argv = [
        COMMSCOPE,
        "slurm",
        "--nodes",
        str(nodes),
        "--ntasks-per-node",
        "1",
        "--time",
        "00:10:00",
        "-o",
        "study.sbatch",
    ]
    for step in steps:
        argv += ["--step", step]
    assert _run(argv, env, tmp_path).returncode == 0
    job = _run(["sbatch", "--parsable", "-o", "job.out", "study.sbatch"], env, tmp_path)
    job_id = job.stdout.strip().split(";")[0]
    state = _wait_for_job(job_id, env)
    out = (tmp_path / "job.out").read_text() if (tmp_path / "job.out").exists() else ""
    assert state == "COMPLETED", f"job {job_id} {state}: {job.stderr}\n{out}"
    return out, tmp_path / f"study-{job_id}"


def _job_state(job_id, env):
    out = subprocess.run(
        ["scontrol", "show", "job", "-o", job_id], env=env, capture_output=True, text=True
    ).stdout
    found = re.search(r"JobState=(\S+)", out)
    return found.group(1) if found else "GONE"


def _wait_for_job(job_id, env, timeout=600):
    """The job's final state; polled, since `sbatch --wait` backs off to half a minute."""
    deadline = time.monotonic() + timeout
    while (state := _job_state(job_id, env)) in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING"):
        if time.monotonic() > deadline:
            subprocess.run(["scancel", job_id], env=env)
            return f"{state} after {timeout} s (cancelled)"
        time.sleep(0.5)
    return state


# Small steps: on one 2-core host the numbers mean nothing, the path is what is tested.
PINGPONG = "bench pingpong --ranks-per-node 1 -m 1:8K -i 100 -x 10 -I 20 -X 2"
HVPP = "bench hvpingpong --ranks-per-node 1 --messages 1:50 --sizes 8,4K -i 3 -x 1"
MPICH_PINGPONG = (
    "commscope bench pingpong --mpi mpich --ranks-per-node 1 -m 1:64 -i 100 --name pingpong-mpich"
)
FIT_AND_REPORT = [
    'fit "$COMMSCOPE_RUNS" -o "$STUDY/machine-model.json"',
    'commscope report "$COMMSCOPE_RUNS" -o "$STUDY/report.html" '
    '--machine-model "$STUDY/machine-model.json"',
]


def _check_srun_plugins(study):
    """Each MPI got the srun plugin it speaks, with the reason, whatever MpiDefault says."""
    for run in (open_run(p.parent) for p in (study / "runs").glob("*/meta.json")):
        want = "--mpi=pmi2" if run.meta["mpi"]["name"] == "mpich" else "--mpi=pmix"
        assert run.meta["status"] == "complete"
        assert run.meta["launch"]["launcher"] == "srun" and want in run.meta["launch"]["argv"]
        assert any(n.startswith(f"srun {want}: ") for n in run.meta["launch"]["notes"])


def test_generated_study_under_mpi_default_none_with_contention_on_4_nodes(
    slurm_env, mpi_default, tmp_path, default_mpi, mpich_mpi
):
    """Debian's MpiDefault=none: the study, both MPIs, and 004 Fig. 6 from layout to delta."""
    mpi_default("none")
    out, study = _sbatch_study(
        tmp_path,
        slurm_env,
        4,
        [
            PINGPONG,
            MPICH_PINGPONG,
            f"{HVPP} --name hvpp",
            f"{HVPP} --contention --name hvpp-contention",
            *FIT_AND_REPORT,
        ],
    )
    _check_srun_plugins(study)
    contention = open_run(study / "runs" / "hvpp-contention")
    assert {p["node"] for p in contention.meta["placement"]} == {"n1", "n2", "n3", "n4"}
    assert contention.meta["shared_hosts"] == {os.uname().nodename: ["n1", "n2", "n3", "n4"]}
    machine_model = json.loads((study / "machine-model.json").read_text())
    fit = machine_model["machine"]["delta_fit"]
    assert fit["nodes"] == 4 and fit["ppn"] == 1 and fit["hops"] == 2
    assert "delta (contention per byte on a link) = " in out
    shared = f"Slurm nodes n1, n2, n3, n4 share host {os.uname().nodename}"
    assert any(shared in w for w in machine_model["machine"]["warnings"])
    report = (study / "report.html").read_text()
    assert f'<p class="warn">{shared}' in report and "delta" in report
    assert "help file" not in out and "Sorry!" not in out  # the wheel's PMIx noise is gone


def test_generated_study_under_mpi_default_pmix(
    slurm_env, mpi_default, tmp_path, default_mpi, mpich_mpi
):
    """MpiDefault=pmix: MPICH (no PMIx) still gets pmi2, so the same script works."""
    mpi_default("pmix")
    out, study = _sbatch_study(
        tmp_path, slurm_env, 2, [f"commscope {PINGPONG}", MPICH_PINGPONG, *FIT_AND_REPORT]
    )
    _check_srun_plugins(study)
    assert (study / "report.html").exists() and (study / "machine-model.json").exists()


@pytest.mark.parametrize("mpi_name", ["openmpi", "mpich"])
@pytest.mark.parametrize("launcher", ["srun", "mpiexec"])
def test_salloc_then_bench(slurm_env, tmp_path, launcher, mpi_name, default_mpi, mpich_mpi):
    """Inside an allocation: srun with the MPI's plugin, or the MPI's own mpiexec, whose
    daemons Slurm starts on the allocated nodes; ranks record their Slurm node."""
    proc = _run(
        [
            "salloc",
            "-N",
            "2",
            "-n",
            "2",
            COMMSCOPE,
            "bench",
            "pingpong",
            "--mpi",
            mpi_name,
            "--launcher",
            launcher,
            "-m",
            "1:1K",
            "-i",
            "100",
            "--runs",
            "runs",
            "--quiet",
        ],
        slurm_env,
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    run = _single_run(tmp_path / "runs")
    assert run.meta["launch"]["launcher"] == launcher
    places = run.meta["placement"]
    assert [p["rank"] for p in places] == [0, 1]
    assert len({p["node"] for p in places}) == 2 and {p["node"] for p in places} <= {
        "n1",
        "n2",
        "n3",
        "n4",
    }
    assert {p["host"] for p in places} == {os.uname().nodename} and all(p["cpus"] for p in places)
    assert set(run.table("samples")["locality"]) == {"inter-node"}
    assert "share host" in proc.stderr and "help file" not in proc.stderr
    # each node would bind its rank to the host's first core: both ranks on one core
    assert any(
        n.startswith("ranks not bound: Slurm nodes share a host")
        for n in run.meta["launch"]["notes"]
    )


def test_singleton_ranks_stop_with_the_reason(slurm_env, tmp_path, default_mpi):
    """A PMI that does not fit (here forced with SLURM_MPI_TYPE=none): every rank is its
    own 1-rank job; commscope stops at once and says why and what to try."""
    mpi_info(default_mpi)  # cached outside Slurm, so the benchmark itself meets the singletons
    env = dict(slurm_env, SLURM_MPI_TYPE="none")
    start = time.monotonic()
    proc = _run(
        [
            "salloc",
            "-N",
            "2",
            "-n",
            "2",
            COMMSCOPE,
            "bench",
            "pingpong",
            "-m",
            "1:1K",
            "--runs",
            "runs",
        ],
        env,
        tmp_path,
        timeout=120,
    )
    assert proc.returncode == 3, proc.stderr
    assert time.monotonic() - start < 60
    err = proc.stderr
    assert "the 2 ranks started as separate MPI jobs of 1 rank(s) each (singletons)" in err
    assert "srun --mpi=list" in err and "SLURM_MPI_TYPE" in err and "--launcher mpiexec" in err
    assert "even number of ranks" not in err and "malformed JSON" not in err
    assert _single_run(tmp_path / "runs").meta["status"] == "failed"


def _program(mpi):
    from commscope import mpi as mpimod

    return mpimod.binary(mpi, "pingpong")


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _pids_with(text):
    out = subprocess.run(["pgrep", "-f", text], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def test_scancel_ends_every_rank_and_marks_the_run_interrupted(slurm_env, tmp_path, default_mpi):
    step = "bench pingpong --ranks-per-node 1 -m 1:1 -i 100000000 --name endless"
    assert (
        _run(
            [
                COMMSCOPE,
                "slurm",
                "--nodes",
                "2",
                "--ntasks-per-node",
                "1",
                "-o",
                "s.sbatch",
                "--step",
                step,
            ],
            slurm_env,
            tmp_path,
        ).returncode
        == 0
    )
    job = _run(["sbatch", "--parsable", "-o", "job.out", "s.sbatch"], slurm_env, tmp_path)
    job_id = job.stdout.strip().split(";")[0]
    try:
        run_dir = f"study-{job_id}/runs/endless"  # as the ranks' command lines name it
        deadline = time.monotonic() + 120
        while len(_pids_with(f"^{_program(default_mpi)} .*{run_dir}")) < 2:  # both ranks run
            assert time.monotonic() < deadline, (tmp_path / "job.out").read_text()
            time.sleep(0.5)
        while not (tmp_path / run_dir / "raw" / "samples.csv").exists():  # and measure
            assert time.monotonic() < deadline, (tmp_path / "job.out").read_text()
            time.sleep(0.5)
        subprocess.run(["scancel", job_id], env=slurm_env, check=True)
        assert _wait_for_job(job_id, slurm_env, timeout=60) == "CANCELLED"
    finally:
        subprocess.run(["scancel", job_id], env=slurm_env)
    # commscope's own command line names the run only by --name: wait for its pid too
    writer = json.loads((tmp_path / run_dir / "meta.json").read_text())["commscope_pid"]
    gone = time.monotonic() + 15  # Slurm's KillWait (5 s) then SIGKILL
    while (_pids_with(run_dir) or _alive(writer)) and time.monotonic() < gone:
        time.sleep(0.5)
    assert _pids_with(run_dir) == [] and not _alive(writer)  # srun, commscope, both ranks
    run = open_run(tmp_path / run_dir)
    # commscope writes "interrupted" on SIGTERM; when Slurm's SIGKILL (KillWait later)
    # comes first on a loaded machine, meta.json still says "running" and readers see
    # that its writer is gone: either way the run reads as interrupted
    assert run.status == "interrupted", json.dumps(run.meta)[:2000]


@pytest.mark.parametrize("mpi_name", ["openmpi", "mpich"])
def test_profile_on_four_nodes_leaves_one_file_set_per_node(
    slurm_env, tmp_path, mpi_name, default_mpi, mpich_mpi
):
    """8 ranks on the 4 Slurm nodes (srun): the files grow with nodes, not ranks; each
    node's set is keyed by its Slurm name, and every rank's counters are there."""
    from test_profile import compile_program

    exe = compile_program(
        default_mpi if mpi_name == "openmpi" else mpich_mpi, "alltoall_small", tmp_path
    )
    # -O: the testbed nodes have 1 CPU each
    proc = _run(
        [
            "salloc",
            "--immediate=60",
            "-O",
            "-N",
            "4",
            "-n",
            "8",
            COMMSCOPE,
            "profile",
            "--mpi",
            mpi_name,
            "--launcher",
            "srun",
            "-n",
            "8",
            "--runs",
            "runs",
            "--quiet",
            "--summary",
            "--",
            str(exe),
        ],
        slurm_env,
        tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    run = _single_run(tmp_path / "runs")
    raw = sorted(p.name for p in (run.path / "raw").iterdir())
    for node in ("n1", "n2", "n3", "n4"):
        assert {
            f"node.{node}.bin",
            f"node.{node}.json",
            f"node.{node}.snap",
            f"node.{node}.comms.csv",
        } <= set(raw), raw
    assert not [
        f for f in raw if f.startswith("node.") and f.split(".")[1] not in ("n1", "n2", "n3", "n4")
    ], raw
    assert "summary.json" in raw
    ranks = run.table("ranks")
    assert sorted(ranks["rank"]) == list(range(8)) and set(ranks["state"]) == {"finalized"}
    assert ranks.groupby("node")["rank"].count().to_dict() == {
        n: 2 for n in ("n1", "n2", "n3", "n4")
    }
    # alltoall_small: 20 MPI_Alltoall and 10 MPI_Barrier on every rank
    calls = run.table("functions").groupby("function")["calls"].sum()
    assert calls["MPI_Alltoall"] == 8 * 20 and calls["MPI_Barrier"] == 8 * 10


@pytest.mark.parametrize("mpi_name", ["openmpi", "mpich"])
def test_trace_clocks_of_four_nodes_are_aligned(
    slurm_env, tmp_path, mpi_name, default_mpi, mpich_mpi
):
    """`profile --trace` of tests/programs/clock_skew.c on 4 Slurm nodes, a rank each, two
    of them with skewed clocks (COMMSCOPE_TEST_CLOCK_SKEW_NS; the testbed's nodes share
    one host's clock): each node writes its clocks file, each node's offset is measured
    on its own, and aligned, every message is received after it was sent."""
    from test_profile import compile_program, message_gaps
    from commscope.collect.trace import read_trace

    exe = compile_program(
        default_mpi if mpi_name == "openmpi" else mpich_mpi, "clock_skew", tmp_path
    )
    env = dict(slurm_env, COMMSCOPE_TEST_CLOCK_SKEW_NS="1:30000000,3:-20000000")
    proc = _run(
        [
            "salloc",
            "--immediate=60",
            "-O",
            "-N",
            "4",
            "-n",
            "4",
            COMMSCOPE,
            "profile",
            "--mpi",
            mpi_name,
            "--launcher",
            "srun",
            "-n",
            "4",
            "--runs",
            "runs",
            "--quiet",
            "--trace",
            "--",
            str(exe),
        ],
        env,
        tmp_path,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    run = _single_run(tmp_path / "runs")
    assert sorted(p.name for p in run.raw_dir.glob("clocks.*.jsonl")) == [
        f"clocks.{n}.jsonl" for n in ("n1", "n2", "n3", "n4")
    ]
    trace = read_trace(run.raw_dir)
    off = trace.clock_offsets.set_index("rank")
    assert off["node"].nunique() == 4
    for rank, skew_s in ((0, 0), (1, 0.03), (2, 0), (3, -0.02)):
        for when in ("init", "finalize"):
            applied = off.loc[rank, f"{when}_applied_offset_s"]
            assert applied == off.loc[rank, f"{when}_offset_s"]  # one rank per node: its own
            assert abs(applied + skew_s) <= off.loc[rank, f"{when}_rtt_s"] / 2 + 1e-7, off
    unaligned, _ = message_gaps(trace, aligned=False)
    aligned, _ = message_gaps(trace, aligned=True)
    assert (unaligned < 0).any() and (aligned > 0).all()
