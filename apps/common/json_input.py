"""The one strict reading of a JSON body that will be stored: every value a database can keep, or a 400 naming it.

Python's json module accepts what PostgreSQL's jsonb (and its text columns) refuse, so a body that parses can still
fail at the INSERT with a 500, every time it is resent: a NUL character (`\\u0000`) in a key or a string, a lone
UTF-16 surrogate (`\\ud800`), `NaN`/`Infinity` (and `1e999`, which Python reads as infinity). Nesting thousands deep
makes the parser itself fail (RecursionError), and an integer past 64 bits fits no integer column. `loads()`
refuses all of them with a JsonInputError that names the value's path (`result.samples[3].value`), once, at the edge.
"""

from __future__ import annotations

import json
import math
from typing import Any

from django.utils.translation import gettext as _

#: The deepest nesting accepted; the top-level object or array is depth 1.
MAX_DEPTH = 64
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


class JsonInputError(ValueError):
    """A body that is not JSON a database can store: `path` names the value ("" for the body as a whole)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path or 'body'}: {message}")
        self.path = path
        self.message = message


class _NonFinite:
    """What parse_constant gives for NaN, Infinity and -Infinity, so that the check can name where it was."""

    def __init__(self, name: str) -> None:
        self.name = name


def _item(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return _("NUL characters (\\u0000) are not accepted.")
    if any("\ud800" <= character <= "\udfff" for character in text):
        return _("A lone UTF-16 surrogate is not valid text.")
    return None


def check(value: Any, *, path: str = "", depth: int = 1, max_depth: int = MAX_DEPTH) -> None:
    """Raise JsonInputError at the first value under `value` that a database cannot store."""
    if isinstance(value, dict | list):
        if depth > max_depth:
            raise JsonInputError(path, _("Nested deeper than %(max)d levels.") % {"max": max_depth})
        if isinstance(value, dict):
            for key, item in value.items():
                problem = _text_problem(key)
                if problem:
                    raise JsonInputError(path, _("A key: %(problem)s") % {"problem": problem})
                check(item, path=_item(path, key), depth=depth + 1, max_depth=max_depth)
        else:
            for index, item in enumerate(value):
                check(item, path=f"{path}[{index}]", depth=depth + 1, max_depth=max_depth)
    elif isinstance(value, str):
        problem = _text_problem(value)
        if problem:
            raise JsonInputError(path, problem)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise JsonInputError(path, _("Integers must lie between -2^63 and 2^63 - 1."))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise JsonInputError(path, _("Numbers must be finite (no NaN, no Infinity, no overflow)."))
    elif isinstance(value, _NonFinite):
        raise JsonInputError(path, _("%(name)s is not a JSON number.") % {"name": value.name})


def loads(body: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """The parsed body, checked by check(); JsonInputError (path "") when it is not JSON at all."""
    try:
        data = json.loads(body, parse_constant=_NonFinite)
    except RecursionError:
        raise JsonInputError("", _("Nested deeper than %(max)d levels.") % {"max": max_depth}) from None
    except (ValueError, UnicodeDecodeError):
        raise JsonInputError("", _("The body is not valid JSON.")) from None
    check(data, max_depth=max_depth)
    return data
