"""Write audit entries. Every app's services call record_change() inside their own transaction, or model_create() and
model_update() to validate, save and audit a record in one step."""

import json
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from django.contrib.contenttypes.models import ContentType
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models, transaction

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


ModelT = TypeVar("ModelT", bound=models.Model)


@transaction.atomic
def model_create(
    *,
    instance: ModelT,
    actor,
    message: str = "",
    team=None,
    audit_fields: Iterable[str] | None = None,
) -> ModelT:
    """Validate a new, unsaved `instance` with full_clean(), save it and write its "create" audit entry.

    `audit_fields` limits what the entry shows (default: every concrete field), as for model_update().
    """
    instance.full_clean()
    instance.save()
    record_change(
        actor=actor,
        instance=instance,
        action=ObjectChange.Action.CREATE,
        after=model_snapshot(instance, audit_fields),
        message=message,
        team=team,
    )
    return instance


@transaction.atomic
def model_update(
    *,
    instance: ModelT,
    actor,
    data: Mapping[str, Any],
    fields: Iterable[str],
    message: str = "",
    team=None,
    action: str = ObjectChange.Action.UPDATE,
    audit_fields: Iterable[str] | None = None,
) -> tuple[ModelT, bool]:
    """Set `data` on `instance`, validate the whole row with full_clean(), save the columns whose value changed (and
    the auto_now ones) and write one audit entry with the before/after snapshots. Returns (instance, changed); when
    no value changed, nothing is saved and no entry is written.

    `fields` are the fields this update may set: any other name in `data` is the caller's mistake (TypeError).
    `audit_fields` limits what the entry shows (default: every concrete field), for rows with secrets or bulky data.
    The calling service keeps its own rules (who, which state) and calls this inside its transaction.
    """
    columns = {field.name for field in instance._meta.concrete_fields}
    unknown = sorted(set(data) - (set(fields) & columns))
    if unknown:
        raise TypeError(f"{type(instance).__name__} update does not change {unknown}")
    audit_fields = list(audit_fields) if audit_fields is not None else None
    before = model_snapshot(instance, audit_fields)
    stored = model_snapshot(instance, data)
    for name, value in data.items():
        setattr(instance, name, value)
    instance.full_clean()  # also turns the values into their field's type, so they compare as they will be stored
    cleaned = model_snapshot(instance, data)
    changed = [column for column, value in cleaned.items() if value != stored[column]]
    if not changed:
        return instance, False
    touched = [field.name for field in instance._meta.concrete_fields if getattr(field, "auto_now", False)]
    instance.save(update_fields=[*changed, *touched])
    record_change(
        actor=actor,
        instance=instance,
        action=action,
        before=before,
        after=model_snapshot(instance, audit_fields),
        message=message,
        team=team,
    )
    return instance, True
