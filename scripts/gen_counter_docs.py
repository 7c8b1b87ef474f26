#!/usr/bin/env python3
"""Rewrite the counter table in docs/counters.md from native/profiler/counters.def.

    .venv/bin/python scripts/gen_counter_docs.py [--check | --quick]

--check (and --quick, what `make bench QUICK=1` runs) writes nothing: it prints whether
the table is current and exits 1 when it is not.
"""

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from commscope.profile.catalog import catalog_markdown  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "counters.md"
BEGIN, END = "<!-- counter table: generated -->\n", "<!-- end of generated table -->\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only say whether the table is current")
    ap.add_argument("--quick", action="store_true", help="the same as --check")
    a = ap.parse_args(argv)
    text = DOC.read_text()
    if BEGIN not in text or END not in text:
        print(f"{DOC.relative_to(ROOT)}: no generated-table markers", file=sys.stderr)
        return 1
    new = re.sub(
        re.escape(BEGIN) + ".*?" + re.escape(END),
        lambda m: BEGIN + catalog_markdown() + END,
        text,
        flags=re.S,
    )
    rows = catalog_markdown().count("\n")
    if a.check or a.quick:
        print(
            f"{DOC.relative_to(ROOT)}: {'current' if new == text else 'OUT OF DATE'} ({rows} table lines)"
        )
        return 0 if new == text else 1
    DOC.write_text(new)
    print(
        f"{DOC.relative_to(ROOT)}: {'updated' if new != text else 'already current'} ({rows} table lines)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
