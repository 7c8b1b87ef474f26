#!/usr/bin/env bash
# The C sources clang-format keeps (scripts/format.sh, scripts/test.sh): native/ only.
# tests/programs/ is left alone: the docs and tests cite lines of those programs.
cd "$(dirname "$0")/.."
find native -type f \( -name '*.c' -o -name '*.h' \) | sort
