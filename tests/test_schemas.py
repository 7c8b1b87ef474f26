"""The published JSON Schemas are the ones commscope validates with, and they reject wrong types."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from commscope.errors import InputError
from commscope.models.machine_model import bluewaters_machine_model, machine_model_from_dict
from commscope.runs import Run, validate_meta
from commscope.schemas import SCHEMAS, field_path, schema

DOCS = Path(__file__).resolve().parents[1] / "docs" / "schemas"


@pytest.mark.parametrize("name", SCHEMAS)
def test_docs_publish_the_schemas_in_use(name):
    assert json.loads((DOCS / f"{name}.json").read_text()) == schema(name)


def test_every_run_kind_has_its_parameters_described():
    # a fresh process: tests register tables of made-up kinds in this one
    code = (
        "import commscope.bench, commscope.profile.convert, json; "
        "from commscope.runs import TABLE_COLUMNS as t; print(json.dumps(sorted({k for k, _ in t})))"
    )
    kinds = json.loads(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
    )
    described = {c["if"]["properties"]["kind"]["const"] for c in schema("run-meta")["allOf"]}
    assert kinds and set(kinds) <= described


def _meta(tmp_path, kind="pingpong", **parameters):
    run = Run.create(tmp_path, kind, parameters, argv=["commscope"])
    return json.loads((run.path / "meta.json").read_text())


PINGPONG = dict(
    pairs=1, min_size=1, max_size=64, iters=10, warmup=1, large_iters=10, large_warmup=1
)


@pytest.mark.parametrize(
    "field, value, where",
    [
        (("parameters", "pairs"), "2", "parameters.pairs"),
        (("parameters", "iters"), True, "parameters.iters"),
        (("placement",), {"rank": 0}, "placement"),
        (("mpi",), ["openmpi"], "mpi"),
        (("status",), "lost", "status"),
        (("hosts",), "vm", "hosts"),
    ],
)
def test_wrong_types_name_the_field(tmp_path, field, value, where):
    meta = _meta(tmp_path, **PINGPONG)
    target = meta
    for key in field[:-1]:
        target = target[key]
    target[field[-1]] = value
    with pytest.raises(InputError) as exc:
        validate_meta(meta, "x/meta.json")
    assert exc.value.source == "x/meta.json" and exc.value.field == where


@pytest.mark.parametrize(
    "kind, parameters, missing",
    [
        ("pingpong", PINGPONG, "max_size"),
        ("bsp", dict(workload="ftq", ranks=2, intervals=10, warmup=1), "intervals"),
    ],
)
def test_a_missing_parameter_is_named(tmp_path, kind, parameters, missing):
    meta = _meta(tmp_path, kind, **parameters)
    validate_meta(meta, "x/meta.json")
    del meta["parameters"][missing]
    with pytest.raises(InputError) as exc:
        validate_meta(meta, "x/meta.json")
    assert exc.value.field == f"parameters.{missing}"


def test_newer_writers_may_add_fields_and_the_interrupted_status(tmp_path):
    meta = _meta(tmp_path, **PINGPONG)
    meta.update(status="interrupted", commscope_pid=123, commscope_host="vm")
    validate_meta(meta, "x/meta.json")


@pytest.mark.parametrize(
    "mutate, where",
    [
        (lambda d: d["parameters"][0].update(alpha_s="fast"), "parameters[0].alpha_s"),
        (lambda d: d.update(breakpoints=[1]), "breakpoints"),
        (lambda d: d.update(gamma_s=True), "gamma_s"),
        (lambda d: d.update(parameters={"a": 1}), "parameters"),
    ],
)
def test_machine_model_wrong_types_name_the_field(mutate, where):
    good = json.loads(json.dumps(bluewaters_machine_model().to_dict()))
    machine_model_from_dict(json.loads(json.dumps(good)), "p.json")
    mutate(good)
    with pytest.raises(InputError) as exc:
        machine_model_from_dict(good, "p.json")
    assert exc.value.source == "p.json" and exc.value.field == where


def test_field_path():
    assert field_path(["placement", 0, "host"]) == "placement[0].host"
    assert field_path([]) == ""
