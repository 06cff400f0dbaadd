"""Output checks of a request: non-empty, length within bounds, and the dataset line's regex / exact answer / JSON
schema when it gives one. `check_output` returns "ok" or the name of the first check that failed; the latency part
of acceptance (TTFT, per-token, end-to-end limits) is in `dossier_agent.contract.metrics.acceptance`.

The JSON schema support is the subset that answers are checked against in practice: `type` (one or a list),
`properties`, `required`, `additionalProperties` (boolean), `items`, `enum`, `const`, `minimum`, `maximum`,
`minLength`, `maxLength`, `minItems`, `maxItems`, `pattern`, `anyOf`, `oneOf`, `allOf`. A schema keyword outside it
is refused when the dataset is loaded (`unsupported_keywords`), never silently ignored.
"""

from __future__ import annotations

import json
import re
from typing import Any

from dossier_agent.loadgen.prompts import DatasetError, PromptItem

SUPPORTED = {"type", "properties", "required", "additionalProperties", "items", "enum", "const", "minimum", "maximum",
             "minLength", "maxLength", "minItems", "maxItems", "pattern", "anyOf", "oneOf", "allOf", "$schema",
             "title", "description", "default", "examples"}
_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def unsupported_keywords(schema: Any, path: str = "$") -> list[str]:
    found = []
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key not in SUPPORTED:
                found.append(f"{path}.{key}")
            if key == "properties" and isinstance(value, dict):
                for name, sub in value.items():
                    found += unsupported_keywords(sub, f"{path}.properties.{name}")
            elif key == "items":
                found += unsupported_keywords(value, f"{path}.items")
            elif key in ("anyOf", "oneOf", "allOf") and isinstance(value, list):
                for i, sub in enumerate(value):
                    found += unsupported_keywords(sub, f"{path}.{key}[{i}]")
    return found


def _is_type(value: Any, name: str) -> bool:
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    kind = _TYPES.get(name)
    return kind is not None and isinstance(value, kind)


def schema_errors(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """Where `value` breaks `schema` (empty when it conforms)."""
    errors: list[str] = []
    kind = schema.get("type")
    if kind is not None:
        names = kind if isinstance(kind, list) else [kind]
        if not any(_is_type(value, name) for name in names):
            return [f"{path}: not of type {kind}"]
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: not one of the enum")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: below minimum")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: above maximum")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(f"{path}: shorter than minLength")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{path}: longer than maxLength")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(f"{path}: does not match pattern")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                errors.append(f"{path}: missing {name}")
        for name, sub in value.items():
            if name in properties:
                errors += schema_errors(sub, properties[name], f"{path}.{name}")
            elif schema.get("additionalProperties") is False:
                errors.append(f"{path}: unexpected property {name}")
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(f"{path}: fewer than minItems")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: more than maxItems")
        if isinstance(schema.get("items"), dict):
            for i, item in enumerate(value):
                errors += schema_errors(item, schema["items"], f"{path}[{i}]")
    for sub in schema.get("allOf", []):
        errors += schema_errors(value, sub, path)
    if "anyOf" in schema and not any(not schema_errors(value, sub, path) for sub in schema["anyOf"]):
        errors.append(f"{path}: matches none of anyOf")
    if "oneOf" in schema and sum(1 for sub in schema["oneOf"] if not schema_errors(value, sub, path)) != 1:
        errors.append(f"{path}: does not match exactly one of oneOf")
    return errors


_JSON_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def check_items(items: list[PromptItem]) -> None:
    """Refuse dataset lines whose JSON schema uses keywords this checker does not implement."""
    problems = []
    for item in items:
        if item.json_schema is not None:
            bad = unsupported_keywords(item.json_schema)
            if bad:
                problems.append(f"line {item.line}: json_schema keywords not supported: {', '.join(bad[:5])}")
    if problems:
        raise DatasetError(problems)


def check_output(text: str, output_tokens: int | None, item: PromptItem | None,
                 bounds: tuple[int | None, int | None] = (None, None)) -> str:
    """"ok", or the first failed check: `empty`, `too_short`, `too_long`, `exact`, `regex`, `json`, `schema`."""
    if not text or not text.strip():
        return "empty"
    low, high = bounds
    if item is not None:
        low = item.min_output_tokens if item.min_output_tokens is not None else low
        high = item.max_output_tokens if item.max_output_tokens is not None else high
    if output_tokens is not None:
        if low is not None and output_tokens < low:
            return "too_short"
        if high is not None and output_tokens > high:
            return "too_long"
    if item is None:
        return "ok"
    if item.expected is not None and text.strip() != item.expected.strip():
        return "exact"
    if item.regex is not None and not re.search(item.regex, text):
        return "regex"
    if item.json_schema is not None:
        body = text.strip()
        fenced = _JSON_FENCE.match(body)
        try:
            value = json.loads(fenced.group(1) if fenced else body)
        except ValueError:
            return "json"
        if schema_errors(value, item.json_schema):
            return "schema"
    return "ok"


def check_generic(status: int, body: bytes, expect: dict[str, Any]) -> str:
    """Response check of a generic HTTP endpoint: `status` (default 200), `json_path` (dotted keys that must exist),
    `regex` (on the body text), `json_schema`."""
    wanted = expect.get("status", 200)
    if status != wanted:
        return "status"
    text = body.decode("utf-8", "replace")
    if expect.get("regex") and not re.search(expect["regex"], text):
        return "regex"
    if expect.get("json_path") or expect.get("json_schema"):
        try:
            value = json.loads(text)
        except ValueError:
            return "json"
        for key in str(expect.get("json_path") or "").split(".") if expect.get("json_path") else ():
            if isinstance(value, dict) and key in value:
                value = value[key]
            elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
                value = value[int(key)]
            else:
                return "json_path"
        if expect.get("json_schema"):
            document = json.loads(text)
            if schema_errors(document, expect["json_schema"]):
                return "schema"
    return "ok"
