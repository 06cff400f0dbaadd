"""What the apps' models share, declared once: team-owned records, who did what to a row, the link to its history.

Abstract models and field helpers only: nothing here has a table. Fields inherited from them are the columns each app
always had, so using them changes no schema.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from apps.accounts.scoping import TeamScopedQuerySet

# ---------------------------------------------------------------------------------------------------------------
# Records and who made them


class HistoryLinkedModel(models.Model):
    """A model whose changes the audit log records; its pages link to its change history."""

    class Meta:
        abstract = True

    def get_history_url(self) -> str:
        return reverse("audit:object-history", args=[self._meta.app_label, self._meta.model_name, self.pk])


def user_foreign_key(verbose_name, *, on_delete=models.SET_NULL) -> models.ForeignKey:
    """The person who did something to a row (created, entered, answered it…), if known; no reverse accessor.

    SET_NULL keeps the row, as done by nobody, when the account goes; PROTECT where the person must stay known.
    """
    return models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=on_delete,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=verbose_name,
    )


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
