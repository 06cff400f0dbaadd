"""The change log: who changed what, when, from what to what, under which request. Append-only."""

from django.contrib.contenttypes.models import ContentType
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.utils.translation import gettext_lazy as _

from apps.accounts.fields import user_foreign_key


class AppendOnlyError(Exception):
    """Raised on any attempt to change or delete an audit entry."""


class ObjectChangeQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise AppendOnlyError("Audit entries cannot be changed.")

    def delete(self):
        raise AppendOnlyError("Audit entries cannot be deleted.")

    def for_object(self, instance):
        return self.filter(
            content_type=ContentType.objects.get_for_model(type(instance)), object_id=str(instance.pk)
        )


class ObjectChange(models.Model):
    class Action(models.TextChoices):
        CREATE = "create", _("created")
        UPDATE = "update", _("updated")
        DELETE = "delete", _("deleted")
        TRANSITION = "transition", _("changed state")

    time = models.DateTimeField(_("time"), auto_now_add=True, db_index=True)
    actor = user_foreign_key(_("who"))
    actor_label = models.CharField(_("who (as recorded)"), max_length=150, blank=True)
    team = models.ForeignKey(
        "accounts.Team", on_delete=models.SET_NULL, null=True, blank=True, related_name="+", verbose_name=_("team")
    )
    content_type = models.ForeignKey(ContentType, on_delete=models.PROTECT, verbose_name=_("object type"))
    object_id = models.CharField(_("object id"), max_length=64)
    object_repr = models.CharField(_("object"), max_length=300)
    action = models.CharField(_("action"), max_length=20, choices=Action.choices)
    message = models.CharField(_("message"), max_length=500, blank=True)
    before = models.JSONField(_("before"), null=True, blank=True, encoder=DjangoJSONEncoder)
    after = models.JSONField(_("after"), null=True, blank=True, encoder=DjangoJSONEncoder)
    changes = models.JSONField(_("changes"), default=dict, blank=True, encoder=DjangoJSONEncoder)
    request_id = models.CharField(_("request id"), max_length=64, blank=True, db_index=True)

    objects = ObjectChangeQuerySet.as_manager()

    class Meta:
        ordering = ["-time", "-pk"]
        verbose_name = _("audit entry")
        verbose_name_plural = _("audit entries")
        indexes = [models.Index(fields=["content_type", "object_id", "time"], name="audit_object_time")]

    def __str__(self) -> str:
        return f"{self.time:%Y-%m-%d %H:%M:%S} {self.actor_label} {self.action} {self.object_repr}"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise AppendOnlyError("Audit entries cannot be changed.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnlyError("Audit entries cannot be deleted.")
