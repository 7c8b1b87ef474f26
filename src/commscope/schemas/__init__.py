"""JSON Schemas of commscope's own files, and the one way to check a document against them.

``run-meta.json`` describes a run directory's ``meta.json`` (with the parameters of
every kind: a native benchmark's come from its descriptor, commscope.benchspec),
``machine-model.json`` a machine model.  The complete schemas are published in
docs/schemas/ (``python -m commscope.schemas --write``; tests/test_schemas.py keeps the
copies equal).  Every reader
calls :func:`validate` first, so a wrong type anywhere is one InputError naming the
file and the field's path instead of a traceback further in.
"""

import functools
import json
from importlib import resources

from ..errors import InputError

SCHEMAS = ("run-meta", "machine-model")


@functools.cache
def schema(name):
    """The parsed schema ``name`` (one of :data:`SCHEMAS`)."""
    doc = json.loads(resources.files(__name__).joinpath(f"{name}.json").read_text())
    if name == "run-meta":
        _add_benchmark_parameters(doc)
    return doc


def _add_benchmark_parameters(doc):
    """Each native benchmark's parameters, as its descriptor declares them."""
    from ..benchspec import BENCHMARKS
    from ..benchspec.schema import parameters_schema

    for bench in BENCHMARKS.values():
        doc["$defs"][bench.name] = parameters_schema(bench)
        doc["allOf"].append(
            {
                "if": {"properties": {"kind": {"const": bench.name}}},
                "then": {
                    "properties": {
                        "parameters": {"$ref": f"#/$defs/{bench.name}"},
                        **(bench.more_meta or {}),
                    }
                },
            }
        )


def write_published(root):
    """Write the complete schemas to ``root``/docs/schemas/ (what the docs publish)."""
    from pathlib import Path

    for name in SCHEMAS:
        path = Path(root) / "docs" / "schemas" / f"{name}.json"
        path.write_text(json.dumps(schema(name), indent=2) + "\n")


@functools.cache
def _validator(name):
    import jsonschema  # not at import: the CLI's start-up stays fast

    return jsonschema.Draft202012Validator(schema(name))


def field_path(parts):
    """``["placement", 0, "host"]`` -> ``"placement[0].host"``."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def validate(document, name, source):
    """Raise InputError(source, field path, what is wrong) unless ``document`` fits ``name``."""
    from jsonschema.exceptions import best_match

    error = best_match(_validator(name).iter_errors(document))
    if error is None:
        return document
    parts = list(error.absolute_path)
    if error.validator == "required":  # name the missing field itself
        parts.append(error.message.split("'")[1])
    where = field_path(parts) or None
    found = error.instance
    shown = json.dumps(found)[:60] if not isinstance(found, (dict, list)) else type(found).__name__
    found = "" if error.validator == "required" else f" (found {shown})"
    raise InputError(source, where, _plain(error) + found)


def _plain(error):
    """jsonschema's message without the repeated value, e.g. "must be of type integer"."""
    if error.validator == "type":
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        return f"must be of type {expected}"
    if error.validator in ("enum", "const"):
        allowed = error.validator_value if error.validator == "enum" else [error.validator_value]
        return "must be one of " + ", ".join(json.dumps(a) for a in allowed)
    if error.validator == "required":
        return "required field is missing"
    if error.validator in ("minimum", "exclusiveMinimum", "maximum"):
        word = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<="}[error.validator]
        return f"must be {word} {error.validator_value}"
    return error.message
