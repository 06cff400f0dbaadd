"""Where a figure comes from: measured by a benchmark, quoted by a vendor, or estimated by a person.

Pure Python (no Django): the models build their TextChoices on these values (labels stay there, with gettext), and the
cost model tags every input and every figure it computes with them.
"""

from __future__ import annotations

from enum import StrEnum


class SourceKind(StrEnum):
    MEASURED = "measured"
    QUOTED = "quoted"
    ESTIMATED = "estimated"
