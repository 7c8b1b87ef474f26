#!/usr/bin/env bash
# The whole test suite (what `make test` runs).  As root with apt-get (CI runs so),
# a 4-node Slurm testbed is started first (scripts/slurm-testbed.sh) so the Slurm
# tests run, and stopped afterwards; otherwise they skip and say why.
# COMMSCOPE_SLURM_TESTBED=0 leaves the testbed out.
set -euo pipefail
cd "$(dirname "$0")/.."

started=0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && [ "${COMMSCOPE_SLURM_TESTBED:-1}" != 0 ]; then
    if scripts/slurm-testbed.sh status; then
        export COMMSCOPE_REQUIRE_SLURM=1
    elif scripts/slurm-testbed.sh up; then
        started=1
        export COMMSCOPE_REQUIRE_SLURM=1
    elif [ "${CI:-}" = true ]; then
        echo "test: the Slurm testbed did not start; CI needs it" >&2
        exit 1
    else
        echo "test: the Slurm testbed did not start; its tests will skip" >&2
    fi
fi
if [ "$started" = 1 ]; then
    trap 'scripts/slurm-testbed.sh down' EXIT
fi
.venv/bin/python -m pytest -q "$@" tests
