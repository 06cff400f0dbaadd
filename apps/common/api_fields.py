"""Serializer fields for related records, chosen only among those the requesting user may see, and the hook that
makes some fields read-only once a record exists.

    quote = ScopedPrimaryKeyRelatedField(model=Quote)     # Quote.objects.for_user(request.user)
    team = TeamChoiceField()                              # the user's teams, by slug
    deciders = TeamMemberField(many=True)                 # people who share a team with the user

A serializer declares such a field once; it never re-scopes a queryset in its __init__.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth import get_user_model
from django.db import models
from rest_framework import serializers

from apps.accounts.models import Team
from apps.accounts.selectors import team_members_for_user, teams_for_user


class ScopedRelatedFieldMixin:
    """A related field whose choices are `for_user(request.user)`: by default the related model's own
    `Model.objects.for_user`, else the function given. Without a request (the schema generator) there are none."""

    def __init__(self, *, model: type[models.Model], for_user: Callable | None = None, **kwargs):
        self.model = model
        self.for_user = for_user or model.objects.for_user
        if not kwargs.get("read_only"):
            # Never evaluated: get_queryset() answers instead. It tells the schema which model the field points to.
            kwargs["queryset"] = model._default_manager.none()
        super().__init__(**kwargs)

    def get_queryset(self):
        request = self.context.get("request")
        if request is None:
            return self.model._default_manager.none()
        return self.for_user(request.user)


class ScopedPrimaryKeyRelatedField(ScopedRelatedFieldMixin, serializers.PrimaryKeyRelatedField):
    """A related record by id, among those the requesting user may see."""


class ScopedSlugRelatedField(ScopedRelatedFieldMixin, serializers.SlugRelatedField):
    """A related record by a unique slug, among those the requesting user may see."""


class TeamChoiceField(ScopedSlugRelatedField):
    """The team a new record belongs to, by slug, among the user's teams (optional: the views default to the
    request's active team)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(slug_field="slug", model=Team, for_user=teams_for_user, **kwargs)


class TeamMemberField(ScopedPrimaryKeyRelatedField):
    """A person by id, among those who share a team with the requesting user."""

    def __init__(self, **kwargs):
        super().__init__(model=get_user_model(), for_user=team_members_for_user, **kwargs)


class CreateOnlyFieldsMixin:
    # The fields named in the serializer's `Meta.create_only_fields` are written when a record is created and
    # read-only when one is updated (a figure keeps its candidate and metric, say). A comment, not a docstring: the
    # API schema describes a serializer with the first docstring among its classes, and this says nothing of the data.

    def get_fields(self):
        fields = super().get_fields()
        if isinstance(self.instance, models.Model):
            for name in getattr(getattr(self, "Meta", None), "create_only_fields", ()):
                fields[name].read_only = True
        return fields
