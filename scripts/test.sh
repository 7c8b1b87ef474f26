#!/usr/bin/env bash
# The test suite.  `scripts/test.sh` (what `make test` runs): the lint and format checks,
# then the whole suite.  `scripts/test.sh --fast` (what `make check` runs): the same
# checks, then the fast tier, every test that launches no MPI job, builds nothing, opens
# no browser and is not marked slow (under a minute; tests/conftest.py fails a test that
# launches a job without the mpi marker).  Further arguments go to pytest.
#
# The checks: `ruff check` and `ruff format --check` (pyproject.toml), `clang-format
# --dry-run --Werror` on native/ (.clang-format); scripts/format.sh applies both formats.
# Without clang-format (it comes with scripts/setup.sh as root) the C check is skipped,
# saying so, except in CI.
#
# As root with apt-get (CI runs so), the whole suite starts a 4-node Slurm testbed first
# (scripts/slurm-testbed.sh) so the Slurm tests run, and stops it afterwards; otherwise they
# skip and say why.  COMMSCOPE_SLURM_TESTBED=0 leaves the testbed out.  In CI (CI=true) as
# root every dependency skip is a failure (COMMSCOPE_REQUIRE_ALL=1, tests/needs.py): setup
# has installed what those tests need.
set -euo pipefail
cd "$(dirname "$0")/.."

fast=0
if [ "${1:-}" = --fast ]; then
    fast=1
    shift
fi
ci_root=0
if [ "${CI:-}" = true ] && [ "$(id -u)" = 0 ]; then
    ci_root=1
    export COMMSCOPE_REQUIRE_ALL=1
fi

failed=()
if ! .venv/bin/ruff check --quiet .; then
    failed+=("ruff check")
fi
if ! out=$(.venv/bin/ruff format --check --output-format concise . 2>&1); then
    echo "$out" | grep -v 'File would be reformatted$' >&2 || true  # errors, if any
    echo "test: ruff format would change $(echo "$out" | grep -c 'File would be reformatted$') files ($(echo "$out" | grep 'File would be reformatted$' | head -3 | cut -d: -f1 | tr '\n' ' ')...); run scripts/format.sh" >&2
    failed+=("ruff format --check")
fi
if command -v clang-format >/dev/null; then
    bad=()
    while read -r f; do
        clang-format --dry-run --Werror "$f" 2>/dev/null || bad+=("$f")
    done < <(scripts/c_sources.sh)
    if [ "${#bad[@]}" -gt 0 ]; then
        echo "test: clang-format would change ${#bad[@]} C files (${bad[*]:0:5} ...); run scripts/format.sh" >&2
        failed+=("clang-format")
    fi
elif [ "$ci_root" = 1 ]; then
    echo "test: clang-format is not installed; CI needs it (scripts/setup.sh installs it as root)" >&2
    failed+=("clang-format (missing)")
else
    echo "test: clang-format not installed (Debian: apt-get install clang-format; scripts/setup.sh as root): the C format check is skipped" >&2
fi

status=0
if [ "$fast" = 1 ]; then
    .venv/bin/python -m pytest -q -m "not mpi and not browser and not slow" "$@" tests || status=$?
else
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
    .venv/bin/python -m pytest -q "$@" tests || status=$?
fi
if [ "${#failed[@]}" -gt 0 ]; then
    echo "test: failed: $(IFS=,; echo "${failed[*]}" | sed 's/,/, /g')" >&2
    [ "$status" != 0 ] || status=1
fi
exit "$status"
