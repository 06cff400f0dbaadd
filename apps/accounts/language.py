"""Each person's interface language, kept on their account: chosen with the language switcher, back at every login,
on every device, and used for the e-mails Dossier sends them.

- `set_language` (the URL `set_language`, /i18n/setlang/) is Django's view, which sets the language cookie; for a
  signed-in user it also stores the choice (`UserLanguage`) and puts it in the session.
- At login (`user_logged_in`) the stored choice is put in the session.
- `UserLanguageMiddleware` activates the session's language for the request, after LocaleMiddleware (which reads
  the cookie), and sets the cookie to it, so the pages after logging out stay in that language.
- `language_of(user)` gives it to code without a request (the notification e-mails written by the worker).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.signals import user_logged_in
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.dispatch import receiver
from django.utils import translation
from django.utils.translation import gettext_lazy as _
from django.views.i18n import set_language as django_set_language

#: The session key holding the signed-in user's language (set at login and by the switcher).
SESSION_KEY = "dossier_language"


class UserLanguage(models.Model):
    """The language a person chose for the interface (no row: they never chose; the browser's language applies)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="dossier_language",
        verbose_name=_("user"),
    )
    language = models.CharField(_("language"), max_length=10)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        app_label = "accounts"
        verbose_name = _("interface language")
        verbose_name_plural = _("interface languages")

    def __str__(self) -> str:
        return f"{self.user} · {self.language}"

    def clean(self) -> None:
        if not is_supported(self.language):
            raise ValidationError({"language": _("Choose one of the languages Dossier is translated into.")})


def is_supported(language: str | None) -> bool:
    return bool(language) and language in dict(settings.LANGUAGES)


def language_of(user) -> str | None:
    """The language the user chose (None when they never chose, or chose one no longer offered)."""
    if user is None or not getattr(user, "pk", None):
        return None
    language = UserLanguage.objects.filter(user_id=user.pk).values_list("language", flat=True).first()
    return language if is_supported(language) else None


@transaction.atomic
def language_set(*, user, language: str) -> UserLanguage:
    """Store the user's language (ValidationError naming `language` when Dossier does not offer it)."""
    row = UserLanguage.objects.filter(user_id=user.pk).first() or UserLanguage(user=user)
    row.language = language
    row.full_clean()
    row.save()
    return row


def set_language(request):
    """Django's set_language, which also keeps the choice of a signed-in user on their account."""
    response = django_set_language(request)
    language = request.POST.get("language") if request.method == "POST" else None
    # Django answers a redirect (or 204 to a fetch) when it accepted the language, and sets the cookie only then.
    accepted = response.status_code in (302, 204) and settings.LANGUAGE_COOKIE_NAME in response.cookies
    if accepted and is_supported(language) and request.user.is_authenticated:
        language_set(user=request.user, language=language)
        request.session[SESSION_KEY] = language
    return response


@receiver(user_logged_in, dispatch_uid="accounts.language_at_login")
def language_at_login(sender, request, user, **kwargs) -> None:
    if request is None or not hasattr(request, "session"):
        return
    language = language_of(user)
    if language:
        request.session[SESSION_KEY] = language
    else:
        request.session.pop(SESSION_KEY, None)


class UserLanguageMiddleware:
    """Serve a signed-in user in the language kept on their account (after LocaleMiddleware and sessions)."""

    def __init__(self, get_response):
        self.get_response = get_response

    @staticmethod
    def _session_language(request) -> str | None:
        if settings.SESSION_COOKIE_NAME not in request.COOKIES and not getattr(request.session, "modified", False):
            return None  # no session: nothing to read (and no session row to load)
        language = request.session.get(SESSION_KEY)
        return language if is_supported(language) else None

    def __call__(self, request):
        language = self._session_language(request)
        if language:
            translation.activate(language)
            request.LANGUAGE_CODE = language
        response = self.get_response(request)
        language = self._session_language(request)  # the switcher or a login may have set it during the view
        cookie_set = settings.LANGUAGE_COOKIE_NAME in response.cookies
        if language and not cookie_set and request.COOKIES.get(settings.LANGUAGE_COOKIE_NAME) != language:
            response.set_cookie(
                settings.LANGUAGE_COOKIE_NAME,
                language,
                max_age=settings.LANGUAGE_COOKIE_AGE,
                path=settings.LANGUAGE_COOKIE_PATH,
                domain=settings.LANGUAGE_COOKIE_DOMAIN,
                secure=settings.LANGUAGE_COOKIE_SECURE,
                httponly=settings.LANGUAGE_COOKIE_HTTPONLY,
                samesite=settings.LANGUAGE_COOKIE_SAMESITE,
            )
        return response
