#!/usr/bin/env python3
"""Rewrite the generated tables of the docs: the counters (docs/counters.md, from
native/profiler/counters.def), the settings (docs/profile.md, from settings.def) and
the trace record (docs/profile.md, from layout.def).

    .venv/bin/python scripts/gen_counter_docs.py [--check | --quick]

--check (and --quick, what `make bench QUICK=1` runs) writes nothing: it prints whether
the tables are current and exits 1 when one is not.
"""

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from commscope.profile.catalog import catalog_markdown  # noqa: E402
from commscope.profile.settings import settings_markdown  # noqa: E402
from commscope.collect.native_tables import trace_markdown  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
END = "<!-- end of generated table -->\n"
#: (doc, the marker that starts its table, the table's generator)
TABLES = (
    (ROOT / "docs" / "counters.md", "<!-- counter table: generated -->\n", catalog_markdown),
    (ROOT / "docs" / "profile.md", "<!-- settings table: generated -->\n", settings_markdown),
    (ROOT / "docs" / "profile.md", "<!-- trace record table: generated -->\n", trace_markdown),
)


def regenerate(doc, begin, make):
    """(old text, new text) of ``doc`` with its table made by ``make``; None: no markers."""
    text = doc.read_text()
    if begin not in text or END not in text:
        return None
    table = make()
    new = re.sub(
        re.escape(begin) + ".*?" + re.escape(END), lambda m: begin + table + END, text, flags=re.S
    )
    return text, new


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only say whether the table is current")
    ap.add_argument("--quick", action="store_true", help="the same as --check")
    a = ap.parse_args(argv)
    status = 0
    for doc, begin, make in TABLES:
        name = doc.relative_to(ROOT)
        texts = regenerate(doc, begin, make)
        if texts is None:
            print(f"{name}: no generated-table markers", file=sys.stderr)
            status = 1
            continue
        text, new = texts
        if a.check or a.quick:
            print(f"{name}: {'current' if new == text else 'OUT OF DATE'}")
            status |= new != text
        else:
            doc.write_text(new)
            print(f"{name}: {'updated' if new != text else 'already current'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
