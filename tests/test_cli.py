"""Every command has --help; --version; doctor and slurm on this machine."""

import argparse
import json
import shlex
import subprocess

import pytest

from commscope import __version__
from commscope.cli import build_parser, main
from commscope.errors import InputError
from commscope.slurm import batch_script


def _all_commands(parser, prefix=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*prefix, name)
                yield from _all_commands(sub, (*prefix, name))


def test_every_command_has_help(capsys):
    commands = list(_all_commands(build_parser()))
    expected = {
        ("bench", "pingpong"),
        ("fit",),
        ("report",),
        ("doctor",),
        ("study",),
        ("slurm",),
        ("model", "stencil"),
        ("model", "p2p"),
        ("model", "partitioned"),
        ("stats", "gev"),
        ("stats", "bootstrap"),
        ("stats", "arrivals"),
    }
    assert expected <= set(commands)
    for cmd in commands:
        with pytest.raises(SystemExit) as exc:
            main([*cmd, "--help"])
        assert exc.value.code == 0
        assert "usage: commscope" in capsys.readouterr().out


def test_version(capsys):
    with pytest.raises(SystemExit):
        main(["--version"])
    assert __version__ in capsys.readouterr().out


@pytest.mark.mpi
def test_doctor_json_on_this_machine(capsys, default_mpi):
    assert main(["doctor", "--json", "--mpi", "openmpi"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["mpi"]["library_version"].startswith("Open MPI")
    assert d["mpi"]["thread_level_provided"] == "MPI_THREAD_MULTIPLE"
    assert d["mpi"]["partitioned"] is True
    assert d["topology"]["cores"] >= 1 and d["topology"]["sockets"] >= 1
    assert "pml_ob1_posted_recvq_length" in d["mpi_t"]["queue_pvars"]
    assert d["mpi_t"]["eager_cvars"]["btl_sm_eager_limit"] > 0
    assert "btl_sm_max_send_size" not in d["mpi_t"]["eager_cvars"]  # fragmenting, not eager
    assert set(d["ompt"]) >= {"available", "hint"}


def test_slurm_script(tmp_path, capsys):
    text = batch_script(4, 32, time="01:00:00", partition="pbatch")
    assert "#SBATCH --nodes=4" in text and "#SBATCH --partition=pbatch" in text
    assert "--pairs 16 --ranks-per-node 16" in text  # ppn pairs across two nodes
    out = tmp_path / "s.sbatch"
    assert main(["slurm", "-o", str(out)]) == 0 and out.exists()
    assert main(["slurm", "-o", str(out)]) == 2  # never overwritten
    with pytest.raises(InputError):
        batch_script(2, 2, time="soon")


def test_slurm_steps_substitute_only_ppn_and_nodes(tmp_path):
    two = batch_script(2, 8)
    assert "--contention" not in two  # needs 4+ nodes
    assert 'commscope fit "$COMMSCOPE_RUNS"' in two and 'COMMSCOPE_RUNS="$STUDY/runs"' in two
    four = batch_script(4, 8)
    assert "hvpingpong --contention --ranks-per-node 4" in four
    custom = batch_script(
        2, 8, steps=["bench pingpong --pairs {ppn} --name pp{nodes}-{other} --runs ${HOME}/r"]
    )
    assert custom.rstrip().endswith(
        "commscope bench pingpong --pairs 4 --name pp2-{other} --runs ${HOME}/r"
    )
    # Every step is a valid commscope command line, and the script is valid bash.
    for line in four.splitlines():
        if line.startswith("commscope "):
            build_parser().parse_args(shlex.split(line)[1:])
    script = tmp_path / "s.sbatch"
    script.write_text(four)
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0


@pytest.mark.parametrize(
    "step",
    [
        "bench pingpong -m 1:8",
        "commscope bench pingpong -m 1:8",
        "/opt/venv/bin/commscope bench pingpong -m 1:8",
    ],
)
def test_slurm_step_with_or_without_commscope(step):
    assert batch_script(2, 2, steps=[step]).rstrip().endswith("commscope bench pingpong -m 1:8")


@pytest.mark.parametrize(
    "step, says",
    [
        ("echo hi", "'echo' is not one of"),
        ("bench nothere", "'bench nothere' is not one of"),
        ("bench pingpong; rm -rf /tmp/x", "one commscope command per --step"),
        ("bench pingpong && date", "one commscope command per --step"),
        ("commscope", "empty step"),
        ("bench 'pingpong", "No closing quotation"),
    ],
)
def test_slurm_refuses_steps_that_are_not_commscope_commands(step, says, tmp_path, capsys):
    out = tmp_path / "s.sbatch"
    assert main(["slurm", "--step", step, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--step" in err and says in err and not out.exists()


@pytest.mark.parametrize(
    "text, expected",
    [
        ("4096", 4096),
        ("8K", 8192),
        ("8KiB", 8192),
        ("8Ki", 8192),
        ("8KB", 8000),
        ("18MiB", 18 << 20),
        ("18M", 18 << 20),
        ("16MB", 16_000_000),
        ("1G", 1 << 30),
        ("4.5MiB", 4718592),
        ("0", 0),
    ],
)
def test_one_size_grammar_for_every_command(text, expected):
    from commscope.commands.model_partitioned import parse_sizes as partitioned_sizes
    from commscope.units import parse_size, parse_size_list

    assert parse_size(text) == expected
    assert parse_size_list(f"{text},{text}") == [expected, expected]
    if expected:
        assert partitioned_sizes(text) == [expected]


@pytest.mark.parametrize("text", ["lots", "8X", "1.5", "-4K", ""])
def test_bad_sizes_name_the_option(text):
    from commscope.units import parse_size

    with pytest.raises(InputError, match="--size"):
        parse_size(text, "--size")


def test_eager_limits_keep_size_limits_only():
    from commscope.mpi import eager_limits

    cvars = [
        {"name": "btl_sm_eager_limit", "value": 4096},
        {"name": "btl_sm_max_send_size", "value": 32768},
        {"name": "MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE", "value": 131072},
        {"name": "MPIR_CVAR_CH4_OFI_EAGER_THRESHOLD", "value": -1},
        {"name": "MPIR_CVAR_CH4_OFI_RNDV_PROTOCOL", "value": 0},
    ]
    assert eager_limits(cvars) == {
        "btl_sm_eager_limit": 4096,
        "MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE": 131072,
    }
