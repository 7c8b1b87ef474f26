"""The CLI starts fast: heavy libraries are imported only by the commands that use them.

Timing is left to scripts/bench_startup.py; this checks the cause (what gets imported),
which does not depend on how busy the machine is.
"""

import json
import subprocess
import sys

import pytest

HEAVY = ("numpy", "pandas", "scipy", "matplotlib", "pyarrow", "jinja2", "jsonschema")

PROBE = """
import contextlib, io, json, sys
from commscope.cli import main
argv = json.loads(sys.argv[1])
with contextlib.redirect_stdout(io.StringIO()):
    try:
        status = main(argv)
    except SystemExit as exc:  # --help and --version exit through argparse
        status = exc.code
loaded = sorted({m.split(".")[0] for m in sys.modules} & set(json.loads(sys.argv[2])))
print(json.dumps({"status": status, "loaded": loaded}))
"""


def imported_by(argv):
    out = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out.splitlines()[-1])


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["--version"],
        ["bench", "pingpong", "--help"],
        ["model", "partitioned", "--help"],
    ],
)
def test_parsing_the_command_line_imports_no_heavy_library(argv):
    result = imported_by(argv)
    assert result["status"] == 0
    assert result["loaded"] == []


@pytest.mark.parametrize(
    "argv,allowed",
    [
        (["model", "stencil", "--points", "27", "--decomp", "2x2x2"], {"numpy"}),
        (
            [
                "model",
                "p2p",
                "--machine-model",
                "bluewaters",
                "--sizes",
                "1K",
                "--locality",
                "inter-node",
            ],
            {"numpy"},
        ),
    ],
)
def test_analytic_models_run_without_pandas_scipy_matplotlib(argv, allowed):
    result = imported_by(argv)
    assert result["status"] == 0
    assert set(result["loaded"]) <= allowed, result["loaded"]


def test_a_lazy_module_behaves_like_the_module():
    from commscope.lazy import lazy

    m = lazy("json")
    assert m.dumps([1]) == "[1]" and m.loads is json.loads
