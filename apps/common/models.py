"""What the apps' models share, declared once: team-owned records, who entered a row, and figures with their source.

Abstract models only: nothing here has a table. Fields inherited from them are the columns each app always had, so
using them changes no schema; constraint builders keep each app's constraint names.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import reduce
from operator import or_

from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from apps.accounts.fields import user_foreign_key
from apps.accounts.scoping import TeamScopedQuerySet
from apps.common.provenance import REFERENCED_KINDS, ProvenanceKind

# ---------------------------------------------------------------------------------------------------------------
# Records and who made them


class HistoryLinkedModel(models.Model):
    """A model whose changes the audit log records; its pages link to its change history."""

    class Meta:
        abstract = True

    def get_history_url(self) -> str:
        return reverse("audit:object-history", args=[self._meta.app_label, self._meta.model_name, self.pk])


class CreatedByModel(models.Model):
    """Who created the row and when."""

    created_by = user_foreign_key(_("created by"))
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        abstract = True


def team_foreign_key(related_name: str, *, on_delete=models.PROTECT) -> models.ForeignKey:
    """The team that owns a record. Each model names its own reverse accessor (team.quotes, team.workloads…)."""
    return models.ForeignKey("accounts.Team", on_delete=on_delete, related_name=related_name, verbose_name=_("team"))


class TeamOwnedModel(CreatedByModel, HistoryLinkedModel):
    """A record one team owns: only its members see it (`objects.for_user(user)`), and its changes have a history.

    The subclass declares `team = team_foreign_key("<reverse accessor>")`; the scoped manager filters on it. A model
    whose rows were never attributed to a person removes the inherited field with `created_by = None`.
    """

    objects = TeamScopedQuerySet.as_manager()

    class Meta:
        abstract = True


class EnteredByModel(models.Model):
    """Who typed a figure in and when; a figure a benchmark wrote has nobody."""

    entered_by = user_foreign_key(_("entered by"))
    entered_at = models.DateTimeField(_("entered at"), default=timezone.now)

    class Meta:
        abstract = True


# ---------------------------------------------------------------------------------------------------------------
# A figure with its source. The kinds and the rule of a figure with a kind of source live in apps/common/provenance.py.


def source_field(verbose_name) -> models.CharField:
    """The free-text source beside a figure's column: a URL, a document and page, a report, a note."""
    return models.CharField(verbose_name, max_length=500, blank=True)


def sourced_constraint(
    *, figure: str | None = None, sources: Iterable[str], name: str, message
) -> models.CheckConstraint:
    """A figure is cited: one of the `sources` columns is filled in, unless the (nullable) `figure` is empty."""
    cited = reduce(or_, (~Q(**{source: ""}) for source in sources))
    condition = cited if figure is None else Q(**{f"{figure}__isnull": True}) | cited
    return models.CheckConstraint(condition=condition, name=name, violation_error_message=message)


def sourced_pair_constraints(prefix: str, **pairs: tuple[str, str, str]) -> list[models.CheckConstraint]:
    """`<prefix>_<key>_sourced` for each `key=(figure, source, message)`: the figure is empty or its source is given."""
    return [
        sourced_constraint(figure=figure, sources=[source], name=f"{prefix}_{key}_sourced", message=message)
        for key, (figure, source, message) in pairs.items()
    ]


def provenance_constraints(
    prefix: str,
    *,
    kind: str = "source",
    reference: str = "reference",
    estimated_by: str = "estimated_by",
    estimate_reason: str = "estimate_reason",
    referenced_message,
    estimate_message,
) -> list[models.CheckConstraint]:
    """The rule of `Provenance` in the database: `<prefix>_referenced` (a measured or quoted figure names its
    reference) and `<prefix>_estimate_explained` (an estimated one says who estimated it and why)."""
    return [
        models.CheckConstraint(
            condition=~Q(**{f"{kind}__in": [str(item) for item in REFERENCED_KINDS]}) | ~Q(**{reference: ""}),
            name=f"{prefix}_referenced",
            violation_error_message=referenced_message,
        ),
        models.CheckConstraint(
            condition=~Q(**{kind: str(ProvenanceKind.ESTIMATED)})
            | (~Q(**{estimated_by: ""}) & ~Q(**{estimate_reason: ""})),
            name=f"{prefix}_estimate_explained",
            violation_error_message=estimate_message,
        ),
    ]
