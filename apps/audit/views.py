from django.shortcuts import render

from apps.audit.selectors import entries_for, visible_object


def object_history(request, app_label: str, model_name: str, object_id: str):
    instance = visible_object(request.user, app_label, model_name, object_id)
    return render(
        request,
        "audit/object_history.html",
        {"object": instance, "entries": entries_for(instance), "opts": instance._meta},
    )
