"""A view that changes a note through the audit service, so tests can follow a real request into the log."""

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_POST

from apps.audit.services import model_update
from tests.scoped_app.models import Note


@require_POST
def note_rename(request, pk: int):
    note = get_object_or_404(Note.objects.for_user(request.user), pk=pk)
    model_update(instance=note, actor=request.user, data={"text": request.POST["text"]}, fields=["text"])
    return HttpResponse(status=204)
