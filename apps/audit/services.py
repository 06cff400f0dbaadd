"""Write audit entries. Every app's services call record_change() inside their own transaction."""

import json
from collections.abc import Iterable
from typing import Any

from django.contrib.contenttypes.models import ContentType
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from apps.audit.context import current_request_id
from apps.audit.models import ObjectChange


def model_snapshot(instance: models.Model, fields: Iterable[str] | None = None) -> dict[str, Any]:
    """The concrete field values of an instance as JSON-ready data (foreign keys as ids)."""
    names = set(fields) if fields is not None else None
    data = {}
    for field in instance._meta.concrete_fields:
        if names is not None and field.name not in names:
            continue
        data[field.attname] = field.value_from_object(instance)
    return json.loads(json.dumps(data, cls=DjangoJSONEncoder))


def diff(before: dict | None, after: dict | None) -> dict[str, list]:
    """{field: [old, new]} for every field whose value differs."""
    before, after = before or {}, after or {}
    return {
        key: [before.get(key), after.get(key)]
        for key in sorted(set(before) | set(after))
        if before.get(key) != after.get(key)
    }


def record_change(
    *,
    actor,
    instance: models.Model,
    action: str,
    before: dict | None = None,
    after: dict | None = None,
    message: str = "",
    team=None,
) -> ObjectChange:
    """Append one entry. `before`/`after` are model_snapshot() results (or None for create/delete)."""
    actor_user = actor if getattr(actor, "is_authenticated", False) else None
    entry = ObjectChange(
        actor=actor_user,
        actor_label=(actor_user.get_username() if actor_user else str(actor or "system"))[:150],
        team=team if team is not None else getattr(instance, "team", None),
        content_type=ContentType.objects.get_for_model(type(instance)),
        object_id=str(instance.pk),
        object_repr=str(instance)[:300],
        action=action,
        message=message[:500],
        before=before,
        after=after,
        changes=diff(before, after),
        request_id=current_request_id(),
    )
    entry.save()
    return entry
