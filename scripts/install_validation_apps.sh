#!/usr/bin/env bash
# Install the real MPI applications `commscope profile` and `commscope diagnose` are
# validated on (issue 9, item 9; issue 42, item 5): Debian's LAMMPS (`lmp`), HPC Challenge
# (`hpcc`) and GROMACS (`gmx_mpi`; about 320 MB, most of it gromacs-data's force fields
# and docs), with the Open MPI 4.1 they are built against and its mpicc (libopenmpi-dev),
# so `--mpi /usr/bin/mpicc` builds the counter library and the timing shim for that MPI,
# and its mpicxx LLNL's LULESH 2.0 from the sources kept in third_party/lulesh (built by
# scripts/validate_diagnose_apps.py when first used).  Needs root and apt (Debian/Ubuntu); the default test suite does
# not need any of this: tests/test_validation_apps.py skips, naming this script.
set -euo pipefail
PACKAGES=(lammps hpcc gromacs libopenmpi-dev openmpi-bin)
if [ "$(id -u)" -ne 0 ]; then
    echo "install_validation_apps: needs root (apt-get install ${PACKAGES[*]}); commscope itself does not" >&2
    exit 2
fi
if ! command -v apt-get >/dev/null; then
    echo "install_validation_apps: no apt-get here; install LAMMPS, HPCC and GROMACS built with a system MPI by hand" >&2
    exit 2
fi
apt-get update -q
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${PACKAGES[@]}"
echo "install_validation_apps: installed ${PACKAGES[*]}; now: .venv/bin/python -m pytest tests/test_validation_apps.py, scripts/validate_diagnose_apps.py" >&2
