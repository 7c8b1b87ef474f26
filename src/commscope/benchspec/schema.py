"""The JSON Schema of a benchmark's parameters (meta.json's ``parameters``), from its
descriptor: each option's type and minimum, plus what the descriptor records beyond its
options (``Benchmark.more_parameters``).  commscope.schemas puts it into run-meta.json."""

_ITEM = {
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "size": {"type": "integer"},
    "range": {"type": "integer"},
    "sizes": {"type": "integer"},
    "ints": {"type": "integer"},
    "choice": {"type": "string"},
    "choices": {"type": "string"},
    "flag": {"type": "boolean"},
    "text": {"type": "string"},
}


def _option_schema(opt):
    item = dict(_ITEM[opt.kind])
    if opt.minimum is not None and item["type"] in ("integer", "number"):
        item["minimum"] = opt.minimum if item["type"] == "number" else int(opt.minimum)
    if opt.choices:
        item["enum"] = list(opt.choices)
    if opt.kind in ("sizes", "ints", "choices"):
        item = {"type": "array", "items": item, "minItems": 1}
    if opt.default is None and opt.kind != "flag":
        item = {"anyOf": [item, {"type": "null"}]}
    return item


def parameters_schema(bench):
    """``{"type": "object", "required": [...], "properties": {...}}`` for ``bench``."""
    if bench.parameters_schema is not None:
        return bench.parameters_schema
    properties, required = {}, []
    for opt in (o for o in bench.options if not o.output):  # --json: not a parameter
        for p in opt.params:
            properties[p] = _option_schema(opt)
            if opt.required:
                required.append(p)
    more = bench.more_parameters or {}
    properties.update(more.get("properties", {}))
    required += more.get("required", [])
    return {"type": "object", "required": required, "properties": properties}
