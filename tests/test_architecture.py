"""The structure stays as docs/architecture.md draws it: layers that import one way, no
circle of Python modules, no circle of the profiler's C files.

A new circle or an upward import fails here, not in a reader's head.
"""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]


def circles(graph):
    """Strongly connected groups of more than one node (Tarjan), each sorted."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def test_circle_finder_finds_a_circle_and_only_circles():
    assert circles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c"]]
    assert circles({"a": ["b"], "b": ["c"], "d": ["a"]}) == []


def test_layers_are_kept():
    """Fails (never skips) without import-linter: the test extra installs it."""
    assert importlib.util.find_spec("importlinter"), (
        "import-linter is not installed: pip install -e '.[test]' (scripts/setup.sh does)"
    )
    lint = Path(sys.executable).parent / "lint-imports"
    res = subprocess.run(
        [str(lint), "--config", str(ROOT / ".importlinter")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stdout[-3000:]


def test_no_circle_of_python_modules():
    import grimp  # import-linter's graph library: installed with it

    g = grimp.build_graph("commscope")
    graph = {m: g.find_modules_directly_imported_by(m) for m in g.modules}
    assert circles(graph) == []


def test_no_circle_of_profiler_c_files():
    """native/profiler: every file's local includes, .c files standing for their .h."""
    prof = ROOT / "native" / "profiler"
    graph = {}
    for p in list(prof.glob("*.c")) + list(prof.glob("*.h")):
        unit = p.stem
        deps = {Path(h).stem for h in re.findall(r'#include "([^"]+)"', p.read_text())}
        deps = {d for d in deps if (prof / f"{d}.h").exists() and d != unit}
        graph.setdefault(unit, set()).update(deps)
    assert circles(graph) == []
    assert graph["cs_prof_state"] == set()  # the state depends on no other profiler file
