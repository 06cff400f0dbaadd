"""Reads of the change log, scoped to what the user may see."""

from django.apps import apps
from django.contrib.contenttypes.models import ContentType
from django.http import Http404

from apps.audit.models import ObjectChange


def visible_object(user, app_label: str, model_name: str, object_id: str):
    """The object if this user may see it (team-scoped models through for_user), else Http404."""
    try:
        model = apps.get_model(app_label, model_name)
    except LookupError:
        raise Http404 from None
    queryset = model._default_manager.all()
    if hasattr(queryset, "for_user"):
        queryset = queryset.for_user(user)
    elif not getattr(model, "audit_is_global", False):
        # Only team-scoped models and models that declare themselves global (the catalog) have a public log.
        raise Http404
    try:
        return queryset.get(pk=object_id)
    except (model.DoesNotExist, ValueError, TypeError):
        raise Http404 from None


def entries_for(instance):
    return ObjectChange.objects.for_object(instance).select_related("actor")


def content_type_of(instance) -> ContentType:
    return ContentType.objects.get_for_model(type(instance))
