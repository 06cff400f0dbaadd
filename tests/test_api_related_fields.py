"""Every writable related field of the user API chooses among what the requesting user may see: a field that points
to a team-owned record (or a team, or a person) is one of apps/common/api_fields.py's scoped fields, never a
queryset of every row."""

import importlib
import inspect
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from rest_framework import serializers
from rest_framework.test import APIRequestFactory

from apps.accounts.models import Team
from apps.common.api_fields import ScopedRelatedFieldMixin

ROOT = Path(__file__).resolve().parent.parent


def api_serializers() -> list[type[serializers.BaseSerializer]]:
    found = []
    for path in sorted((ROOT / "apps").glob("*/api/*.py")):
        module = importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))
        found += [
            value
            for value in vars(module).values()
            if inspect.isclass(value)
            and issubclass(value, serializers.BaseSerializer)
            and value.__module__ == module.__name__
            and not (issubclass(value, serializers.ModelSerializer) and not hasattr(value, "Meta"))  # a base class
        ]
    return found


def writable_relations(serializer: serializers.BaseSerializer):
    for name, field in serializer.fields.items():
        if field.read_only:
            continue
        if isinstance(field, serializers.ManyRelatedField):
            yield name, field.child_relation
        elif isinstance(field, serializers.RelatedField):
            yield name, field


def is_team_owned(model) -> bool:
    return model in (Team, get_user_model()) or hasattr(model._default_manager, "for_user")


def test_the_api_has_serializers_with_related_fields_to_check():
    assert len(api_serializers()) > 20


@pytest.mark.parametrize("serializer_class", api_serializers(), ids=lambda cls: f"{cls.__module__}.{cls.__name__}")
def test_related_fields_to_team_owned_records_are_scoped(serializer_class, platform_user):
    request = APIRequestFactory().post("/")
    request.user = platform_user
    serializer = serializer_class(context={"request": request})
    for name, field in writable_relations(serializer):
        model = field.get_queryset().model
        if is_team_owned(model):
            assert isinstance(field, ScopedRelatedFieldMixin), (
                f"{serializer_class.__name__}.{name} offers every {model.__name__}: declare it as a scoped field"
            )
