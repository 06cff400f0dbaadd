"""Team-owned test records: a note (scoped by its team), a comment (scoped through its note), a global page."""

from django.db import models

from apps.accounts.scoping import TeamScopedQuerySet, scoped_queryset


class Note(models.Model):
    team = models.ForeignKey("accounts.Team", on_delete=models.CASCADE, related_name="+")
    text = models.CharField(max_length=200)

    objects = TeamScopedQuerySet.as_manager()

    def __str__(self) -> str:
        return self.text


class NoteComment(models.Model):
    note = models.ForeignKey(Note, on_delete=models.CASCADE, related_name="comments")
    text = models.CharField(max_length=200)

    objects = scoped_queryset("note__team").as_manager()

    def __str__(self) -> str:
        return self.text


class GlobalPage(models.Model):
    """Shared by every team, like the GPU catalog: its history is readable by any role."""

    title = models.CharField(max_length=200)

    audit_is_global = True

    def __str__(self) -> str:
        return self.title
