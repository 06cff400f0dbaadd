"""Authorise in the queryset: every team-owned model's manager offers for_user(user).

Usage in another app:

    class Quote(models.Model):
        team = models.ForeignKey("accounts.Team", on_delete=models.PROTECT)
        objects = TeamScopedQuerySet.as_manager()

    Quote.objects.for_user(request.user)   # only the user's teams; nothing for anonymous users
"""

from django.db import models


def team_ids_for(user) -> models.QuerySet:
    from apps.accounts.models import Membership

    return Membership.objects.filter(user_id=user.pk).values("team_id")


class TeamScopedQuerySet(models.QuerySet):
    #: the lookup from this model to its team; a child model sets e.g. "quote__team"
    team_lookup = "team"

    def for_user(self, user):
        if not getattr(user, "is_authenticated", False):
            return self.none()
        if user.is_superuser:
            return self
        return self.filter(**{f"{self.team_lookup}__in": team_ids_for(user)})

    def for_team(self, team):
        return self.filter(**{self.team_lookup: team})


def scoped_queryset(team_lookup: str) -> type[TeamScopedQuerySet]:
    """A TeamScopedQuerySet class for a model whose team is reached through team_lookup (e.g. "quote__team")."""
    return type(f"ScopedBy_{team_lookup}", (TeamScopedQuerySet,), {"team_lookup": team_lookup})
