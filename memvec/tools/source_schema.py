"""A custom tool's function schema, read from its Python source without running it.

Letta's clients send a tool as source (`upsert_from_function` sends `inspect.getsource(func)`); the
server owes the model an OpenAI-shaped schema. Running the source to inspect the function would run
whoever's code it is, so this reads the syntax tree instead: the last function defined names the
tool; its annotations give the parameter types; its Google-style docstring gives the description and
each parameter's (`Args:` entries as `name: text` or `name (type): text`). A pydantic model sent as
`args_json_schema` replaces the parameters read from the signature.
"""

from __future__ import annotations

import ast
import re
from typing import Any

_SIMPLE = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "dict": "object", "list": "array"}
_SIMPLE.update({"Dict": "object", "List": "array", "Any": "", "object": ""})
_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Params|Returns?|Raises|Yields|Examples?|Notes?)\s*:\s*$")
_ARG_LINE = re.compile(r"^\s*\*{0,2}(\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")


class ToolSourceError(ValueError):
    """The source defines no function a tool can be made of (the message says why)."""


def function_schema(
    source_code: str, *, args_json_schema: dict[str, Any] | None = None, description: str | None = None
) -> dict[str, Any]:
    """{"name", "description", "parameters"} for the last function `source_code` defines."""
    function = _last_function(source_code)
    docstring = ast.get_docstring(function) or ""
    summary, arg_docs = _parse_docstring(docstring)
    if args_json_schema is not None:
        parameters = _parameters_from_model(args_json_schema)
    else:
        parameters = _parameters_from_signature(function, arg_docs)
    text = description if description is not None else summary
    if not text:
        raise ToolSourceError(f"function {function.name} has no docstring: its first lines tell the model what it does")
    return {"name": function.name, "description": text, "parameters": parameters}


def _last_function(source_code: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
    try:
        tree = ast.parse(source_code)
    except SyntaxError as exc:
        raise ToolSourceError(f"source_code is not valid Python: {exc.msg} (line {exc.lineno})") from None
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    if not functions:
        raise ToolSourceError("source_code defines no function at its top level")
    return functions[-1]


def _parse_docstring(docstring: str) -> tuple[str, dict[str, str]]:
    """(the text before the first section, {argument: its description}). An argument's entry is a
    line at the section's first indentation; a line indented deeper goes on with its text."""
    summary: list[str] = []
    args: dict[str, str] = {}
    section, current, entry_indent = None, None, 0
    for line in docstring.splitlines():
        if heading := _SECTION.match(line):
            section, current = heading.group(1).lower(), None
            continue
        if section is None:
            summary.append(line.strip())
            continue
        if section not in ("args", "arguments", "parameters", "params") or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        entry = _ARG_LINE.match(line)
        if entry and (current is None or indent <= entry_indent):
            current, entry_indent = entry.group(1), indent
            args[current] = entry.group(3).strip()
        elif current is not None:
            args[current] = f"{args[current]} {line.strip()}".strip()
    return " ".join(" ".join(summary).split()), args


def _parameters_from_signature(
    function: ast.FunctionDef | ast.AsyncFunctionDef, docs: dict[str, str]
) -> dict[str, Any]:
    arguments = [*function.args.posonlyargs, *function.args.args]
    defaults = [None] * (len(arguments) - len(function.args.defaults)) + list(function.args.defaults)
    pairs = list(zip(arguments, defaults, strict=True))
    pairs += list(zip(function.args.kwonlyargs, function.args.kw_defaults, strict=True))
    properties: dict[str, Any] = {}
    required: list[str] = []
    for argument, default in pairs:
        if argument.arg in ("self", "agent_state"):  # Letta passes the agent's state itself; a model never does
            continue
        prop = _annotation_schema(argument.annotation)
        if docs.get(argument.arg):
            prop["description"] = docs[argument.arg]
        properties[argument.arg] = prop
        if default is None:
            required.append(argument.arg)
    return {"type": "object", "properties": properties, "required": required}


def _annotation_schema(node: ast.expr | None) -> dict[str, Any]:
    """A JSON schema for an annotation; one it cannot read allows any value."""
    if node is None:
        return {}
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a string annotation
        try:
            return _annotation_schema(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return {}
    if isinstance(node, ast.Name | ast.Attribute):
        kind = _SIMPLE.get(node.id if isinstance(node, ast.Name) else node.attr, "")
        return {"type": kind} if kind else {}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # X | None
        return _optional(node.left, node.right)
    if isinstance(node, ast.Subscript):
        return _subscript_schema(node)
    return {}


def _optional(left: ast.expr, right: ast.expr) -> dict[str, Any]:
    for side, other in ((left, right), (right, left)):
        if isinstance(other, ast.Constant) and other.value is None:
            return _annotation_schema(side)
    return {}


def _subscript_schema(node: ast.Subscript) -> dict[str, Any]:
    outer = node.value.id if isinstance(node.value, ast.Name) else getattr(node.value, "attr", "")
    inner = node.slice
    if outer == "Optional":
        return _annotation_schema(inner)
    if outer in ("list", "List", "Sequence", "tuple", "Tuple", "set", "Set"):
        item = inner.elts[0] if isinstance(inner, ast.Tuple) and inner.elts else inner
        items = _annotation_schema(item)
        return {"type": "array", "items": items} if items else {"type": "array"}
    if outer in ("dict", "Dict", "Mapping"):
        return {"type": "object"}
    if outer == "Literal":
        values = inner.elts if isinstance(inner, ast.Tuple) else [inner]
        constants = [v.value for v in values if isinstance(v, ast.Constant)]
        return {"enum": constants} if constants else {}
    return {}


def _parameters_from_model(schema: dict[str, Any]) -> dict[str, Any]:
    """A pydantic model's JSON schema as the function's parameters (its `$defs` kept for `$ref`s)."""
    if not isinstance(schema.get("properties"), dict):
        raise ToolSourceError("args_json_schema must be an object schema with properties")
    parameters: dict[str, Any] = {"type": "object", "properties": schema["properties"]}
    parameters["required"] = list(schema.get("required") or [])
    if "$defs" in schema:
        parameters["$defs"] = schema["$defs"]
    return parameters
