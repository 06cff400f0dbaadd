"""Where a figure comes from: measured by a benchmark job, quoted by a vendor, or estimated by someone who says why.

Pure Python (no Django): the cost model's inputs carry a `Provenance`, and the models' choices and database constraints
(apps/common/models.py, apps/evidence/models.py) read the same kinds and the same rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ProvenanceKind(StrEnum):
    MEASURED = "measured"
    QUOTED = "quoted"
    ESTIMATED = "estimated"


#: The kinds a figure cites by a reference (the benchmark job, the quote's document or price version); an estimated
#: figure names who estimated it and why instead.
REFERENCED_KINDS = (ProvenanceKind.MEASURED, ProvenanceKind.QUOTED)


@dataclass(frozen=True)
class Provenance:
    """Where a figure comes from: measured (benchmark job id), quoted (price version id) or estimated (by, why)."""

    kind: ProvenanceKind
    reference: str = ""
    by: str = ""
    why: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", ProvenanceKind(self.kind))
        if self.kind in REFERENCED_KINDS and not self.reference:
            raise ValueError(f"a {self.kind} figure needs its reference (job id or price version id)")
        if self.kind is ProvenanceKind.ESTIMATED and not (self.by and self.why):
            raise ValueError("an estimated figure needs who estimated it and why")

    @classmethod
    def measured(cls, job_id: str | int) -> Provenance:
        return cls(ProvenanceKind.MEASURED, reference=str(job_id))

    @classmethod
    def quoted(cls, price_version_id: str | int) -> Provenance:
        return cls(ProvenanceKind.QUOTED, reference=str(price_version_id))

    @classmethod
    def estimated(cls, by: str, why: str) -> Provenance:
        return cls(ProvenanceKind.ESTIMATED, by=by, why=why)

    def to_dict(self) -> dict[str, str]:
        return {"kind": str(self.kind), "reference": self.reference, "by": self.by, "why": self.why}
