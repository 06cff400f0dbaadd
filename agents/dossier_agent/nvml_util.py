"""Small helpers around `pynvml` (the nvidia-ml-py bindings): import it lazily, read a value or None."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any


def import_pynvml() -> tuple[ModuleType | None, str | None]:
    """The pynvml module, or None with the reason (not installed)."""
    try:
        return importlib.import_module("pynvml"), None
    except ImportError as error:
        return None, f"pynvml is not installed ({error}); install nvidia-ml-py"


def to_text(value: Any) -> Any:
    """Older bindings return bytes for strings; newer ones return str."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value


def read(nvml: ModuleType, function_name: str, *args: Any, convert: Callable[[Any], Any] | None = None) -> Any:
    """Call nvml.<function_name>(*args); None when the binding lacks it or the driver does not support it."""
    function = getattr(nvml, function_name, None)
    if function is None:
        return None
    try:
        value = function(*args)
    except nvml.NVMLError:
        return None
    value = to_text(value)
    return convert(value) if convert is not None and value is not None else value


def error_code(nvml: ModuleType, error: Exception) -> int | None:
    return getattr(error, "value", None)


def constant(nvml: ModuleType, name: str, default: int) -> int:
    return getattr(nvml, name, default)
