"""Markers that the access middleware reads (everything else needs a signed-in user holding a role)."""

from django.contrib.auth.decorators import login_not_required


def role_not_required(view_func):
    """Signed-in users without any role may use this view (logging out)."""
    view_func.role_not_required = True
    return view_func


__all__ = ["login_not_required", "role_not_required"]
