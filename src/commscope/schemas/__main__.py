"""python -m commscope.schemas --write: publish the complete schemas in docs/schemas/."""

import sys
from pathlib import Path

from . import write_published

if "--write" in sys.argv[1:]:
    write_published(Path(__file__).resolve().parents[3])
else:
    sys.exit("usage: python -m commscope.schemas --write")
