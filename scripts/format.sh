#!/usr/bin/env bash
# Format the tree: ruff format (Python, config in pyproject.toml) and clang-format -i
# (C in native/, config in .clang-format).  scripts/test.sh checks that nothing would
# change (`make test` and `make check` fail otherwise).  Run it, look at the diff, commit.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff format .
if command -v clang-format >/dev/null; then
    scripts/c_sources.sh | xargs clang-format -i
    echo "format: clang-format applied to $(scripts/c_sources.sh | wc -l) C files in native/" >&2
else
    echo "format: clang-format not installed (Debian: apt-get install clang-format; scripts/setup.sh as root): C left as it is" >&2
    exit 1
fi
