#!/usr/bin/env python3
"""Rewrite the counter table in docs/counters.md from native/profiler/counters.def."""

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from commscope.profile.catalog import catalog_markdown  # noqa: E402

DOC = Path(__file__).resolve().parents[1] / "docs" / "counters.md"
BEGIN, END = "<!-- counter table: generated -->\n", "<!-- end of generated table -->\n"

text = DOC.read_text()
new = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda m: BEGIN + catalog_markdown() + END,
             text, flags=re.S)
DOC.write_text(new)
print(f"{DOC}: {'updated' if new != text else 'already current'}")
